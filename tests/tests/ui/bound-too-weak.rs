// `bound = ""` drops the inferred `T: Recyclable`, which `last` does need.
use recycler_core::Recyclable;

#[derive(Recyclable)]
#[recycle(bound = "")]
struct Batch<T> {
    items: Vec<T>,
    last: T,
}

fn main() {}
