// A slice borrows its scope, whose buffers return to the pool (and to other
// users) when it drops.
use recycler_core::buffer::BufferPool;

fn main() {
    let pool = BufferPool::new();
    let slice = {
        let scope = pool.scope();
        scope.alloc(8)
    };
    slice[0] = 1;
}
