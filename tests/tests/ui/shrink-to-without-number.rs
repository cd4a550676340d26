use recycler_core::Recyclable;

#[derive(Recyclable)]
struct Message {
    #[recycle(shrink_to)]
    a: Vec<u8>,
    #[recycle(shrink_to = "4k")]
    b: Vec<u8>,
    #[recycle(shrink_to = -1)]
    c: Vec<u8>,
    #[recycle(shrink_to = 4096u16)]
    d: Vec<u8>,
    #[recycle(shrink_to = 0.5)]
    e: Vec<u8>,
}

fn main() {}
