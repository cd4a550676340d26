// With std's `Default` derive too, std reports its own rules on `#[default]`
// as well; each message says a unit variant is needed.
use recycler_core::Recyclable;

#[derive(Recyclable, Default)]
enum Slot {
    #[default]
    Empty(Vec<u8>),
    Full { data: Vec<u8> },
}

fn main() {}
