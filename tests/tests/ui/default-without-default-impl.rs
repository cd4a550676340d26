use std::time::Instant;

use recycler_core::Recyclable;

#[derive(Recyclable)]
struct Connection {
    read_buf: Vec<u8>,
    #[recycle(default)]
    opened_at: Instant,
}

fn main() {}
