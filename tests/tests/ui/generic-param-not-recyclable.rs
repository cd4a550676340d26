use std::time::Instant;

use recycler_core::{Recyclable, Recycler};

#[derive(Recyclable, Default)]
struct Batch<T> {
    items: Vec<T>,
    last: Option<T>,
}

fn main() {
    let pool: Recycler<Batch<Instant>> = Recycler::new();
    drop(pool.get());
}
