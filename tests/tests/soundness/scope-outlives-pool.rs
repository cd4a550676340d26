// A scope borrows its pool.
use recycler_core::buffer::{BufferPool, Scope};

fn main() {
    let scope: Scope<'_> = {
        let pool = BufferPool::new();
        pool.scope()
    };
    scope.alloc(8).fill(0);
}
