// A buffer borrows its pool.
use recycler_core::buffer::BufferPool;

fn main() {
    let mut buf = {
        let pool = BufferPool::new();
        pool.acquire(16)
    };
    buf.push(1);
}
