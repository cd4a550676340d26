// A field of a foreign type in an enum variant: the notes must say that only
// `skip` applies there, not `default` or `with`, which an enum rejects.
use std::time::Instant;

use recycler_core::Recyclable;

#[derive(Recyclable)]
enum Connection {
    #[recycle(default)]
    Closed,
    Open { read_buf: Vec<u8>, opened_at: Instant },
}

fn main() {}
