use recycler_core::Recyclable;

#[derive(Recyclable)]
struct Packet {
    #[recycle(shrink_to = 4096)]
    buf: Option<Vec<u8>>,
}

fn main() {}
