use recycler_core::Recyclable;

#[derive(Recyclable)]
#[recycle(skip)]
struct Frame {
    #[recycle(skp)]
    header: Vec<u8>,
    #[recycle(reset_with = clear_body)]
    body: Vec<u8>,
}

#[derive(Recyclable)]
enum State {
    #[recycle(default)]
    Idle,
    #[recycle(skip)]
    Busy,
}

fn main() {}
