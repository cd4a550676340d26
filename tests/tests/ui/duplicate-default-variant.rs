use recycler_core::Recyclable;

#[derive(Recyclable)]
enum Command {
    #[recycle(default)]
    Ping,
    #[recycle(default)]
    Quit,
    Get(String),
}

fn main() {}
