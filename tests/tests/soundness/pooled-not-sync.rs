// A guard of an object that is `Send` but not `Sync` (a `Cell`) moves to
// another thread, but cannot be shared with one.
use std::cell::Cell;

use recycler_core::{Recyclable, Recycler};

#[derive(Default)]
struct Counter(Cell<u64>);

impl Recyclable for Counter {
    fn reset(&mut self) {
        self.0.set(0);
    }
}

fn main() {
    let pool = Recycler::<Counter>::new();
    let guard = pool.get();
    std::thread::scope(|s| {
        s.spawn(|| guard.0.set(1));
        guard.0.set(2);
    });
}
