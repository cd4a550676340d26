//! Quick comparison (placeholder while the real command is built).
use recycler_benches::*;
use recycler_core::Recycler;

#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

fn main() {
    let pool: Recycler<Msg> = Recycler::new();
    for held in [1usize, 16] {
        let iters = 20_000_000 / held as u64;
        for _ in 0..3 {
            let r = w1_get_release(&pool, held, iters);
            let j = w1_get_release(&BoxJemalloc, held, iters);
            let s = w1_get_release(&BoxSystem, held, iters);
            let f = w1_floor(held, iters);
            println!(
                "W1 held={held}: recycler {:.2} ns, jemalloc {:.2} ns, system {:.2} ns, floor {:.2} ns",
                r.as_secs_f64() * 1e9 / iters as f64,
                j.as_secs_f64() * 1e9 / iters as f64,
                s.as_secs_f64() * 1e9 / iters as f64,
                f.as_secs_f64() * 1e9 / iters as f64
            );
        }
    }
    let n = 5_000_000;
    for _ in 0..3 {
        let r = w2_producer_consumer(&pool, n);
        let j = w2_producer_consumer(&BoxJemalloc, n);
        let s = w2_producer_consumer(&BoxSystem, n);
        println!(
            "W2: recycler {:.1} Mops/s, jemalloc {:.1}, system {:.1}",
            n as f64 / r.as_secs_f64() / 1e6,
            n as f64 / j.as_secs_f64() / 1e6,
            n as f64 / s.as_secs_f64() / 1e6
        );
    }
    println!("{}", pool.stats());
}
