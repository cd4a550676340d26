use recycler_core::Recyclable;

#[derive(Recyclable)]
enum Command {
    #[recycle(default)]
    None,
    Get(#[recycle(shrink_to = 64)] String),
    Set {
        key: String,
        #[recycle(default)]
        value: Vec<u8>,
    },
}

fn main() {}
