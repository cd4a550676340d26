// Dropping the scope ends every slice it handed out.
use recycler_core::buffer::BufferPool;

fn main() {
    let pool = BufferPool::new();
    let scope = pool.scope();
    let slice = scope.alloc(8);
    drop(scope);
    slice[0] = 1;
}
