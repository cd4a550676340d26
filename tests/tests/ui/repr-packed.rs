use recycler_core::Recyclable;

#[derive(Recyclable)]
#[repr(C, packed)]
struct Header {
    len: u32,
    name: Vec<u8>,
}

#[derive(Recyclable)]
#[repr(packed(2))]
struct Tail(u16, u64);

fn main() {}
