use recycler_core::Recyclable;

#[derive(Recyclable)]
#[recycle(default)]
enum State {
    Idle,
    Busy(Vec<u8>),
}

fn main() {}
