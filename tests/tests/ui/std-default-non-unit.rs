use recycler_core::Recyclable;

#[derive(Recyclable)]
enum Slot {
    #[default]
    Empty(Vec<u8>),
    Full { data: Vec<u8> },
}

fn main() {}
