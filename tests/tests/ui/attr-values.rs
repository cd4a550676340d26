use recycler_core::Recyclable;

#[derive(Recyclable)]
#[recycle(crate)]
struct Packet {
    #[recycle(skip = true)]
    seq: u64,
    #[recycle(with)]
    a: Vec<u8>,
    #[recycle(with = 5)]
    b: Vec<u8>,
}

#[derive(Recyclable)]
#[recycle(crate = recycler_core, crate = recycler_core)]
struct Twice {
    a: Vec<u8>,
}

#[derive(Recyclable)]
enum State {
    #[recycle(default = true)]
    Idle,
    Busy(Vec<u8>),
}

fn main() {}
