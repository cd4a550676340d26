// A field of a foreign type in an enum variant: in an enum, only `skip` is
// allowed on a field, so that is all the error may suggest.
use std::time::Instant;

use recycler_core::Recyclable;

#[derive(Recyclable)]
enum Connection {
    #[recycle(default)]
    Closed,
    Open { read_buf: Vec<u8>, opened_at: Instant },
}

fn main() {}
