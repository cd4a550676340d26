// The spare capacity is borrowed from the buffer: it cannot be written while
// the length moves over it.
use recycler_core::buffer::BufferPool;

fn main() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(16);
    let spare = buf.spare_capacity_mut();
    // SAFETY: rejected by the borrow checker before it could matter.
    unsafe { buf.set_len(1) };
    spare[0].write(1);
}
