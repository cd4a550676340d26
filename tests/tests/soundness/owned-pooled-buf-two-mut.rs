// As for `PooledBuf`: one `&mut` at a time, through `AsMut` as well.
use std::sync::Arc;

use recycler_core::buffer::BufferPool;

fn main() {
    let pool = Arc::new(BufferPool::new());
    let mut buf = pool.acquire_owned(16);
    buf.push(0);
    let bytes: &mut [u8] = buf.as_mut();
    buf.truncate(0);
    bytes[0] = 1;
}
