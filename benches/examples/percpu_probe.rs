//! The per-CPU cache on restartable sequences (`recycler_core::__PerCpu`,
//! not yet part of the API) against its locked fallback and against the
//! allocator, in wall time: valgrind cannot count a critical section's
//! instructions (it has no `rseq`, and the cache takes the fallback under
//! it). One thread, pinned to the first CPU it may run on, runs `n` rounds
//! of one operation, `runs` times; the median, the smallest and the largest
//! nanoseconds per round are printed.
//!
//! ```sh
//! cargo build --release -p recycler-benches --example percpu_probe
//! target/release/examples/percpu_probe all 10000000 11
//! RECYCLER_BENCHES_ALLOC=system target/release/examples/percpu_probe box 10000000 11
//! ```
//!
//! The operations (`KIND`; `all` runs each in turn):
//!
//! - `rseq`: a push and a pop of a boxed 64-byte object, as critical
//!   sections (the cache refuses to run if the process cannot: no `rseq`
//!   area, or `RECYCLER_NO_RSEQ` set);
//! - `fallback`: the same on the fallback, a lock per CPU stack;
//! - `box`: `Box::new` of the object and its drop, under the global
//!   allocator `RECYCLER_BENCHES_ALLOC` names (jemalloc by default);
//! - `striped`: today's striped mode, `get` and drop on a `striped(2)`
//!   recycler (a try-lock per stripe);
//! - `get`: the per-thread owner path, `get` and drop;
//! - `steal`: a steal of one object from the thread's own CPU's stack and
//!   a push of it back: the locked path's cost, a `membarrier` each time
//!   with sections (`n / 100` rounds a run).
//!
//! The loops are `#[inline(never)]` functions named `*_rounds`, so that
//! their instructions can be read from the binary (`objdump -d`): in
//! `percpu_rounds`, a push is 24 instructions and a pop 24 (16 each from
//! arming `rseq_cs` to the commit; the rest checks that sections are on,
//! loads the `rseq` offset, zeroes the status and the abort count, and
//! tests the status), and the loop adds 5.
//!
//! Measured on the 2-core development VM under a load average of 2 to 3.4
//! (three invocations of `all 10000000 11`; medians of each, and the range
//! over all 33 runs), nanoseconds per round: `rseq` 3.16, 2.05, 2.01 (1.99
//! to 3.43); `fallback` 28.7, 29.2, 27.5 (27.0 to 31.8); `box` with
//! jemalloc 4.73, 4.58, 4.42 (4.22 to 8.25), with the system allocator 6.45
//! (6.21 to 6.79, one invocation), with mimalloc 4.26 (4.21 to 4.29);
//! `striped` 16.0, 15.3, 14.5 (14.3 to 17.7); `get` 2.16, 1.56, 1.55 (1.53
//! to 2.23); `steal` 309, 301, 287 (286 to 331), against 29 with
//! `RECYCLER_NO_RSEQ=1`. `rseq` and `fallback` are the bare structure;
//! `striped` and `get` are whole recycler operations (guard, reset,
//! counters).

use std::hint::black_box;
use std::time::Instant;

use recycler_benches::affinity::{Pin, Side};
use recycler_benches::{Dispatch, Msg};
use recycler_core::{__PerCpu as PerCpu, Recycler};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

/// A push and a pop of one object per round (the pop finds it on top of
/// this CPU's stack: the thread is pinned).
#[inline(never)]
fn percpu_rounds(cache: &PerCpu<Msg>, n: u64) {
    let mut m = Box::new(Msg::default());
    for i in 0..n {
        m.words[0] = i;
        m = match cache.push(m) {
            Ok(()) => cache.pop().unwrap_or_default(),
            Err(back) => back,
        };
        black_box(&*m);
    }
}

/// A steal of one object from this CPU's own stack (a locked access: the
/// slot shut, a `membarrier`, the lock) and a push of it back.
#[inline(never)]
fn steal_rounds(cache: &PerCpu<Msg>, n: u64) {
    let cpu = cache_cpu(cache);
    let mut into = Vec::with_capacity(1);
    for _ in 0..n {
        if cache.steal(cpu, 1, &mut into) == 0 {
            into.push(Box::default());
        }
        if let Err(m) = cache.push(into.pop().unwrap()) {
            drop(m);
        }
    }
}

/// The slot this (pinned) thread's pushes land in.
fn cache_cpu(cache: &PerCpu<Msg>) -> usize {
    cache.push(Box::default()).unwrap();
    let cpu = (0..cache.slots()).find(|&s| cache.len(s) > 0).unwrap();
    drop(cache.pop());
    cpu
}

#[inline(never)]
fn box_rounds(n: u64) {
    for i in 0..n {
        let mut m = Box::new(Msg::default());
        m.words[0] = i;
        black_box(&*m);
    }
}

#[inline(never)]
fn recycler_rounds(pool: &Recycler<Msg>, n: u64) {
    for i in 0..n {
        let mut m = pool.get();
        m.words[0] = i;
        black_box(&*m);
    }
}

/// Times `runs` runs of `f(n)`: nanoseconds per round, sorted.
fn time(runs: usize, n: u64, mut f: impl FnMut(u64)) -> Vec<f64> {
    f(n / 10); // warm up
    let mut ns: Vec<f64> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f(n);
            start.elapsed().as_nanos() as f64 / n as f64
        })
        .collect();
    ns.sort_by(f64::total_cmp);
    ns
}

fn report(kind: &str, ns: &[f64]) {
    println!(
        "{kind:<9} median {:6.2} ns per round (range {:.2} to {:.2}, {} runs)",
        ns[ns.len() / 2],
        ns[0],
        ns[ns.len() - 1],
        ns.len()
    );
}

fn run(kind: &str, n: u64, runs: usize) {
    match kind {
        "rseq" => {
            let cache = PerCpu::new(64);
            assert!(cache.uses_rseq(), "restartable sequences unavailable");
            report(kind, &time(runs, n, |n| percpu_rounds(&cache, n)));
            assert_eq!(cache.slow_ops(), 0, "every round ran as sections");
            println!("          aborts {} in all runs", cache.aborts());
        }
        "fallback" => {
            let cache = PerCpu::fallback(PerCpu::<Msg>::new(1).slots(), 64);
            report(kind, &time(runs, n, |n| percpu_rounds(&cache, n)));
        }
        "steal" => {
            let cache = PerCpu::new(64);
            report(kind, &time(runs, n / 100, |n| steal_rounds(&cache, n)));
            println!("          fences {}", cache.fences());
        }
        "box" => report(kind, &time(runs, n, box_rounds)),
        "striped" => {
            let pool = Recycler::builder().striped(2).build().unwrap();
            report(kind, &time(runs, n, |n| recycler_rounds(&pool, n)));
        }
        "get" => {
            let pool = Recycler::new();
            report(kind, &time(runs, n, |n| recycler_rounds(&pool, n)));
        }
        other => panic!("unknown kind {other}: rseq, fallback, box, striped, get, steal or all"),
    }
}

fn main() {
    let alloc = recycler_benches::global::check_env().unwrap_or_else(|e| panic!("{e}"));
    let args: Vec<String> = std::env::args().collect();
    let kind = args.get(1).map_or("all", String::as_str);
    let n: u64 = args.get(2).map_or(10_000_000, |s| s.parse().unwrap());
    let runs: usize = args.get(3).map_or(11, |s| s.parse().unwrap());
    let pin = Pin::new(Side::Producer);
    println!(
        "{} rounds a run; allocator {alloc:?}; {}",
        n,
        if pin.is_pinned() {
            "pinned to one CPU"
        } else {
            "not pinned"
        }
    );
    if kind == "all" {
        for kind in ["rseq", "fallback", "box", "striped", "get", "steal"] {
            run(kind, n, runs);
        }
    } else {
        run(kind, n, runs);
    }
}
