use recycler_core::Recyclable;

#[derive(Recyclable)]
union Bits {
    int: u32,
    float: f32,
}

fn main() {}
