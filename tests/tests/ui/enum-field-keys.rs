// Misspelt and misplaced keys on the fields of enum variants: the messages
// may only offer what an enum's field allows.
use recycler_core::Recyclable;

#[derive(Recyclable)]
enum Command {
    #[recycle(default)]
    None,
    Get(#[recycle(skp)] String),
    Put(#[recycle(defalt)] Vec<u8>),
    Set {
        #[recycle(with)]
        key: String,
        #[recycle(default = 1)]
        value: Vec<u8>,
        #[recycle(shrink_to)]
        extra: Vec<u8>,
    },
}

fn main() {}
