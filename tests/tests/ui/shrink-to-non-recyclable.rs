// `shrink_to` on a type that is not even `Recyclable`: one error, about
// `ShrinkTo`, and not a second whose notes would offer attributes that
// cannot join `shrink_to`.
use std::time::Instant;

use recycler_core::Recyclable;

#[derive(Recyclable)]
struct Connection {
    #[recycle(shrink_to = 4096)]
    opened_at: Instant,
}

fn main() {}
