// A new user's first try: a field of a foreign type that is not `Recyclable`.
use std::collections::HashMap;
use std::time::Instant;

use recycler_core::Recyclable;

#[derive(Recyclable)]
struct Connection {
    read_buf: Vec<u8>,
    peer: String,
    headers: HashMap<String, String>,
    requests_served: u64,
    opened_at: Instant,
}

fn main() {}
