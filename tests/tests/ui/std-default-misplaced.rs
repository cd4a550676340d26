// `#[default]` is std's marker of a unit variant; the derive, which makes it
// a known attribute, rejects it elsewhere, as std's `Default` derive does.
// Its other forms on fields belong to other derives and are left alone.
use recycler_core::Recyclable;

#[derive(Recyclable)]
#[default]
struct Packet {
    #[default]
    seq: u64,
    #[default = 1]
    ttl: u8,
    body: Vec<u8>,
}

#[derive(Recyclable)]
#[default]
enum Frame {
    #[default = 1]
    Idle,
    Data(#[default] Vec<u8>),
}

#[derive(Recyclable)]
enum Ping {
    #[default(0)]
    Empty,
    Full(Vec<u8>),
}

fn main() {}
