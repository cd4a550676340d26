use recycler_core::Recyclable;

#[derive(Recyclable)]
enum Command {
    Ping,
    Get(String),
    Set(String, Vec<u8>),
}

fn main() {}
