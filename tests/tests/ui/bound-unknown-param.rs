// The predicates of `bound` are checked by the compiler, on the string.
use recycler_core::Recyclable;

#[derive(Recyclable)]
#[recycle(bound = "U: Recyclable")]
struct Batch<T> {
    items: Vec<T>,
}

fn main() {}
