use recycler_benches::*;
use recycler_core::Recycler;
#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;
fn main() {
    let which = std::env::args().nth(1).unwrap();
    let held: usize = std::env::args().nth(2).unwrap().parse().unwrap();
    let iters: u64 = std::env::args().nth(3).unwrap().parse().unwrap();
    let pool: Recycler<Msg> = Recycler::new();
    let d = match which.as_str() {
        "r" => w1_get_release(&pool, held, iters),
        "j" => w1_get_release(&BoxJemalloc, held, iters),
        "s" => w1_get_release(&BoxSystem, held, iters),
        "f" => w1_floor(held, iters),
        _ => panic!(),
    };
    println!("{which} {:.2} ns/op", d.as_secs_f64() * 1e9 / iters as f64);
}
