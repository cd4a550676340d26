// Once shared as `Bytes`, the buffer cannot be written again.
use std::sync::Arc;

use recycler_core::buffer::BufferPool;

fn main() {
    let pool = Arc::new(BufferPool::new());
    let mut buf = pool.acquire_owned(16);
    buf.push(0);
    let shared = buf.into_bytes();
    buf.push(1);
    drop(shared);
}
