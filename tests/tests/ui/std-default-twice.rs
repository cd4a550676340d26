// std's `#[default]` marks the variant `reset` returns to, as
// `#[recycle(default)]` does: a second marked variant is an error, on the
// second; both spellings on one variant are fine; one spelling twice is not.
use recycler_core::Recyclable;

#[derive(Recyclable)]
enum Command {
    #[default]
    Ping,
    #[default]
    Quit,
}

#[derive(Recyclable)]
enum State {
    #[default]
    Idle,
    #[recycle(default)]
    Closed,
}

#[derive(Recyclable)]
enum Mode {
    #[recycle(default)]
    #[default]
    Off,
    #[default]
    #[recycle(default)]
    On,
}

#[derive(Recyclable)]
enum Twice {
    #[default]
    #[default]
    Empty,
    Full(Vec<u8>),
}

fn main() {}
