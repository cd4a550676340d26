// `&mut [u8]` from `DerefMut` is the only way in while it lives: growing the
// buffer (which may move its bytes) must wait.
use recycler_core::buffer::BufferPool;

fn main() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(16);
    buf.push(0);
    let bytes: &mut [u8] = &mut buf;
    buf.extend_from_slice(&[0; 5000]);
    bytes[0] = 1;
}
