use recycler_core::Recyclable;

fn zero(buf: Vec<u8>) -> Vec<u8> {
    let _ = buf;
    Vec::new()
}

#[derive(Recyclable)]
struct Packet {
    #[recycle(with = zero)]
    buf: Vec<u8>,
}

fn main() {}
