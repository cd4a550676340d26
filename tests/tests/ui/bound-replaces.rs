// The impl asks what `bound` says, instead of the inferred bounds.
use recycler_core::Recyclable;

#[derive(Recyclable)]
#[recycle(bound = "T: Clone")]
struct Snapshots<T> {
    history: Vec<T>,
}

struct NotClone;

fn assert_recyclable<T: Recyclable>() {}

fn main() {
    assert_recyclable::<Snapshots<NotClone>>();
}
