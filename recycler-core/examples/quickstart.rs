//! A first program: a recycler made with `Recycler::new()`, a `static`
//! recycler in a `LazyLock`, and a guard sent to another thread.
//!
//! Run with `cargo run -p recycler-core --example quickstart`.

use std::sync::LazyLock;
use std::thread;

use recycler_core::{Recyclable, Recycler};

/// A message a broker might pass around millions of times a second.
#[derive(Debug, Default, Recyclable)]
struct Message {
    topic: String,
    payload: Vec<u8>,
}

/// One pool for the whole program.
static MESSAGES: LazyLock<Recycler<Message>> = LazyLock::new(Recycler::new);

fn main() {
    // A local pool: get, use, drop; the second get reuses the first object.
    let lines: Recycler<String> = Recycler::new();
    for word in ["hello", "recycled", "world"] {
        let mut line = lines.get();
        line.push_str(word);
        println!("{line}");
    }
    println!("lines: {}", lines.stats());

    // The static pool, and a guard that moves to another thread: it is
    // released there and travels home to this thread's cache.
    let mut msg = MESSAGES.get();
    msg.topic.push_str("orders");
    msg.payload.extend_from_slice(b"{\"id\": 1}");
    let handle = thread::spawn(move || {
        println!("{} bytes on {}", msg.payload.len(), msg.topic);
        // `msg` is dropped here: reset, then sent home.
    });
    handle.join().expect("the consumer thread panicked");

    let again = MESSAGES.get();
    assert!(again.topic.is_empty() && again.payload.is_empty());
    drop(again);
    println!("messages: {}", MESSAGES.stats());
}
