use std::time::Instant;

use recycler_core::{Recyclable, Recycler};

#[derive(Recyclable)]
struct Batch<T> {
    items: Vec<T>,
    last: Option<T>,
}

fn main() {
    let pool = Recycler::with_factory(|| Batch::<Instant> { items: Vec::new(), last: None });
    drop(pool.get());
}
