// A guard borrows its recycler, whose caches it returns to.
use recycler_core::Recycler;

fn main() {
    let pool = Recycler::<Vec<u8>>::new();
    let mut guard = pool.get();
    drop(pool);
    guard.push(1);
}
