// A guard's `DerefMut` lends the object once at a time.
use recycler_core::Recycler;

fn main() {
    let pool = Recycler::<Vec<u8>>::new();
    let mut guard = pool.get();
    let first: &mut Vec<u8> = &mut guard;
    let second: &mut Vec<u8> = &mut guard;
    first.push(1);
    second.push(2);
}
