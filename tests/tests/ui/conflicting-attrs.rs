use recycler_core::Recyclable;

#[derive(Recyclable)]
struct Message {
    #[recycle(skip, skip)]
    id: u64,
    #[recycle(default)]
    #[recycle(shrink_to = 1024)]
    body: Vec<u8>,
}

fn main() {}
