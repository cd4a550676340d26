// The derived `T: Recyclable` bound of a generic enum, unmet at the use.
use std::time::Instant;

use recycler_core::{Recyclable, Recycler};

#[derive(Recyclable)]
enum Slot<T> {
    Full(T),
    #[recycle(default)]
    Vacant,
}

fn main() {
    let pool = Recycler::with_factory(|| Slot::<Instant>::Vacant);
    drop(pool.get());
}
