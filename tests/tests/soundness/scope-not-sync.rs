// `Scope::alloc` hands out `&mut [u8]` through `&self`; two threads sharing a
// scope could race on its bump pointer, so it is not `Sync`.
use recycler_core::buffer::BufferPool;

fn main() {
    let pool = BufferPool::new();
    let scope = pool.scope();
    std::thread::scope(|s| {
        s.spawn(|| scope.alloc(8).fill(1));
        scope.alloc(8).fill(2);
    });
}
