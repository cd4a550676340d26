use recycler_core::{Recyclable, Recycler};

#[derive(Recyclable)]
enum Command {
    Ping,
    Get(String),
    Set(String, Vec<u8>),
}

// Only the derive's error is reported, not also these uses: on an error, the
// derive still emits an impl.
fn main() {
    let pool = Recycler::with_factory(|| Command::Ping);
    let mut command = pool.get();
    command.reset();
    let _ = (Command::Get(String::new()), Command::Set(String::new(), Vec::new()));
}
