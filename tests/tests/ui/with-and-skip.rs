use recycler_core::Recyclable;

fn clear_half(v: &mut Vec<u8>) {
    v.truncate(v.len() / 2);
}

#[derive(Recyclable)]
struct Buffer {
    #[recycle(with = clear_half, skip)]
    data: Vec<u8>,
}

fn main() {}
