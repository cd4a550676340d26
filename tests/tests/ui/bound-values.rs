use recycler_core::Recyclable;

#[derive(Recyclable)]
#[recycle(bound)]
struct NoValue<T> {
    items: Vec<T>,
}

#[derive(Recyclable)]
#[recycle(bound = T)]
struct NotAString<T> {
    items: Vec<T>,
}

#[derive(Recyclable)]
#[recycle(bound = "T Recyclable")]
struct NoColon<T> {
    items: Vec<T>,
}

#[derive(Recyclable)]
#[recycle(bound = "T: Clone,, U: Clone")]
struct TwoCommas<T, U> {
    items: Vec<(T, U)>,
}

#[derive(Recyclable)]
#[recycle(bound = "", bound = "T: Clone")]
struct Twice<T> {
    #[recycle(bound = "", bound = "")]
    items: Vec<T>,
}

#[derive(Recyclable)]
enum Slot<T> {
    #[recycle(default)]
    Empty,
    #[recycle(bound = "")]
    Full(Vec<T>),
}

fn main() {}
