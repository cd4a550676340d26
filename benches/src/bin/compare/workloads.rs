//! The workloads `compare` runs, each a short version of a criterion suite in
//! `benches/`, and the contenders of each.

use std::time::Duration;

use recycler_benches::buffers::{
    Touch, W4_ALL_SIZES, W4_FEW_SIZES, w3_fill_pool, w3_fill_vec_with_capacity, w3_fill_vec_zeroed,
    w4_mix, w4_pool, w5_acquire, w5_bumpalo, w5_exhausted_pool, w5_pool, w5_scope, w5_vec,
};
use recycler_benches::{
    BoxJemalloc, BoxMimalloc, BoxSystem, LockfreeLinear, LockfreeSpinLock, Msg, OPool, OPoolLocal,
    ObjectPool, Poolshark, ShardedSlab, Source, Take, w1_floor, w1_get_release,
    w2_producer_consumer, w6_migrating, w7_teardown, w7_teardown_boxes, w8_scaling,
};
use recycler_core::Recycler;
use recycler_core::buffer::BufferPool;

use crate::measure::{Budget, Contender, Measured, measure, median};
use crate::report::{Outcome, Unit};

/// The workloads, in order, with how many contenders each measures (for the
/// progress bar).
/// W7 takes at most 7 samples per contender (see [`w7`]); the progress bar
/// counts `samples` for it anyway, so it may end a little early.
pub(crate) const WORKLOADS: [(&str, usize); 8] = [
    ("W1", 2 * 12),
    ("W2", 10),
    ("W3", 2 * 3),
    ("W4", 2 * 3),
    ("W5", 3 * 5),
    ("W6", 3),
    ("W7", 3 * 2),
    ("W8", 4),
];

/// Runs workload `id`; `step` is called after every sample.
pub(crate) fn run(id: &str, budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    match id {
        "W1" => w1(budget, step),
        "W2" => w2(budget, step),
        "W3" => w3(budget, step),
        "W4" => w4(budget, step),
        "W5" => w5(budget, step),
        "W6" => w6(budget, step),
        "W7" => w7(budget, step),
        "W8" => w8(budget, step),
        _ => Vec::new(),
    }
}

/// Divides every time by `n`: from per round (or per group of threads) to
/// per item.
fn per_item(results: &mut [Measured], n: usize) {
    for m in results {
        m.samples_ns.iter_mut().for_each(|ns| *ns /= n as f64);
        m.median_ns /= n as f64;
    }
}

fn w1_contender<'a, S: Take>(name: &'static str, source: &'a S, held: usize) -> Contender<'a> {
    Contender::new(name, move |n| w1_get_release(source, held, n))
}

fn w2_contender<'a, S: Source>(name: &'static str, source: &'a S) -> Contender<'a> {
    Contender::new(name, move |n| w2_producer_consumer(source, n))
}

/// W1: owner-thread get + release, 1 and 16 held.
fn w1(budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    let recycler: Recycler<Msg> = Recycler::new();
    let (slab, object_pool) = (ShardedSlab::default(), ObjectPool::default());
    let (linear, spin) = (LockfreeLinear::default(), LockfreeSpinLock::default());
    let (opool, opool_local, shark) = (
        OPool::default(),
        OPoolLocal::default(),
        Poolshark::default(),
    );
    [1usize, 16]
        .into_iter()
        .map(|held| {
            let mut contenders = vec![
                w1_contender("recycler", &recycler, held),
                w1_contender("box_jemalloc", &BoxJemalloc, held),
                w1_contender("box_mimalloc", &BoxMimalloc, held),
                w1_contender("box_system", &BoxSystem, held),
                w1_contender("sharded_slab", &slab, held),
                w1_contender("object_pool", &object_pool, held),
                w1_contender("lockfree_linear", &linear, held),
                w1_contender("lockfree_spinlock", &spin, held),
                w1_contender("opool", &opool, held),
                w1_contender("opool_local", &opool_local, held),
                w1_contender("poolshark", &shark, held),
                Contender::new("floor_tls_vecdeque", move |n| w1_floor(held, n)),
            ];
            let mut results = measure(&mut contenders, budget, |c| {
                step(&format!("W1 held={held} {c}"))
            });
            per_item(&mut results, held);
            let mut o = Outcome {
                id: "W1",
                title: format!("get + release on one thread, 64-byte object, {held} held"),
                unit: Unit::NsPerOp,
                ours: "recycler",
                results,
                notes: Vec::new(),
            };
            let j = o.speedup("box_jemalloc").unwrap_or(f64::NAN);
            let m = o.speedup("box_mimalloc").unwrap_or(f64::NAN);
            let f = o.speedup("floor_tls_vecdeque").unwrap_or(f64::NAN);
            o.notes.push(format!(
                "targets: >= 2x box_jemalloc (now {j:.2}x), >= 1.6x box_mimalloc (now {m:.2}x), \
                 within 1.3x of the floor (now {:.2}x)",
                1.0 / f
            ));
            o
        })
        .collect()
}

/// W2: producer/consumer across two threads.
fn w2(budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    let recycler: Recycler<Msg> = Recycler::new();
    let (slab, object_pool) = (ShardedSlab::default(), ObjectPool::default());
    let (linear, spin) = (LockfreeLinear::default(), LockfreeSpinLock::default());
    let (opool, shark) = (OPool::default(), Poolshark::default());
    let peers = [
        "sharded_slab",
        "object_pool",
        "lockfree_linear",
        "lockfree_spinlock",
        "opool",
        "poolshark",
    ];
    let mut contenders = vec![
        w2_contender("recycler", &recycler),
        w2_contender("box_jemalloc", &BoxJemalloc),
        w2_contender("box_mimalloc", &BoxMimalloc),
        w2_contender("box_system", &BoxSystem),
        w2_contender("sharded_slab", &slab),
        w2_contender("object_pool", &object_pool),
        w2_contender("lockfree_linear", &linear),
        w2_contender("lockfree_spinlock", &spin),
        w2_contender("opool", &opool),
        w2_contender("poolshark", &shark),
    ];
    let results = measure(&mut contenders, budget, |c| step(&format!("W2 {c}")));
    let mut o = Outcome {
        id: "W2",
        title: "producer/consumer: one thread gets, another reads and releases".into(),
        unit: Unit::MopsPerSec,
        ours: "recycler",
        results,
        notes: Vec::new(),
    };
    let j = o.speedup("box_jemalloc").unwrap_or(f64::NAN);
    let best_peer = peers
        .iter()
        .filter_map(|p| o.speedup(p).map(|x| (*p, x)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    if let Some((peer, x)) = best_peer {
        o.notes.push(format!(
            "targets: >= box_jemalloc (now {j:.2}x); >= 2x the fastest peer, {peer} (now {x:.2}x)"
        ));
    }
    o.notes.push(format!(
        "recycler hit ratio {:.2}%",
        recycler.stats().hit_ratio() * 100.0
    ));
    vec![o]
}

/// W3: acquire a buffer, write every byte, release; 4 KiB and 64 KiB.
fn w3(budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    let pool = BufferPool::builder()
        .build()
        .expect("the default configuration is valid");
    [4usize << 10, 64 << 10]
        .into_iter()
        .map(|size| {
            let mut contenders = vec![
                Contender::new("buffer_pool", |n| w3_fill_pool(&pool, size, n)),
                Contender::new("vec_with_capacity", move |n| {
                    w3_fill_vec_with_capacity(size, n)
                }),
                Contender::new("vec_zeroed", move |n| w3_fill_vec_zeroed(size, n)),
            ];
            let label = format!("W3 {} KiB", size >> 10);
            let results = measure(&mut contenders, budget, |c| step(&format!("{label} {c}")));
            let mut o = Outcome {
                id: "W3",
                title: format!("acquire + fill every byte + release, {} KiB", size >> 10),
                unit: Unit::NsPerOp,
                ours: "buffer_pool",
                results,
                notes: Vec::new(),
            };
            let w = o.speedup("vec_with_capacity").unwrap_or(f64::NAN);
            o.notes.push(format!(
                "target: never slower than vec_with_capacity (now {w:.2}x)"
            ));
            if size == 64 << 10 {
                let z = o.speedup("vec_zeroed").unwrap_or(f64::NAN);
                o.notes
                    .push(format!("target: >= 2x vec_zeroed at 64 KiB (now {z:.2}x)"));
            }
            o
        })
        .collect()
}

/// W4: Jetty's mix, page-touch variant, all 16 sizes and a fixed few.
fn w4(budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    let pools = [
        ("unbounded", w4_pool(None, true)),
        ("cap_1mib", w4_pool(Some(1 << 20), true)),
        ("unbounded_stats_off", w4_pool(None, false)),
    ];
    [
        ("all 16 sizes", &W4_ALL_SIZES[..]),
        ("a fixed few sizes", &W4_FEW_SIZES[..]),
    ]
    .into_iter()
    .map(|(diversity, sizes)| {
        let hits: Vec<std::cell::Cell<(f64, u64)>> = pools
            .iter()
            .map(|_| std::cell::Cell::new((0.0, 0)))
            .collect();
        let mut contenders: Vec<Contender<'_>> = pools
            .iter()
            .zip(&hits)
            .map(|((name, pool), hits)| {
                Contender::new(name, move |n| {
                    let run = w4_mix(pool, sizes, Touch::Page, n);
                    if !run.hit_ratio_4k.is_nan() {
                        let (sum, count) = hits.get();
                        hits.set((sum + run.hit_ratio_4k * n as f64, count + n));
                    }
                    run.elapsed
                })
            })
            .collect();
        let results = measure(&mut contenders, budget, |c| {
            step(&format!("W4 {diversity} {c}"))
        });
        let mut o = Outcome {
            id: "W4",
            title: format!(
                "Jetty's mix: 4 KiB in + random 4..64 KiB out, one byte per page, {diversity}"
            ),
            unit: Unit::MopsPerSec,
            ours: "cap_1mib",
            results,
            notes: Vec::new(),
        };
        let mops = |name: &str| {
            o.results
                .iter()
                .find(|m| m.name == name)
                .map_or(f64::NAN, |m| 1e3 / m.median_ns)
        };
        let (unbounded, capped, stats_off) = (
            mops("unbounded"),
            mops("cap_1mib"),
            mops("unbounded_stats_off"),
        );
        let (sum, count) = hits[1].get();
        let capped_hits = if count > 0 {
            100.0 * sum / count as f64
        } else {
            f64::NAN
        };
        o.notes.push(format!(
            "targets: >= 30 Mops/s unbounded (now {unbounded:.1}); the 1 MiB cap costs <= 20% \
                 (now {:.1}%); 4 KiB hit ratio >= 99.9% with the cap (now {capped_hits:.3}%); \
                 statistics cost <= 3% (now {:.1}%)",
            100.0 * (1.0 - capped / unbounded),
            100.0 * (1.0 - unbounded / stats_off),
        ));
        o
    })
    .collect()
}

/// W5: Panama's pooled segments: K buffers of 1 KiB, written and released.
fn w5(budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    let pool = w5_pool();
    let exhausted = w5_exhausted_pool();
    [1usize, 16, 200]
        .into_iter()
        .map(|k| {
            let mut bump = bumpalo::Bump::new();
            let mut contenders = vec![
                Contender::new("scope", |n| w5_scope(&pool, k, n)),
                Contender::new("direct_acquire", |n| w5_acquire(&pool, k, n)),
                Contender::new("exhausted_pool", |n| w5_acquire(&exhausted, k, n)),
                Contender::new("vec", move |n| w5_vec(k, n)),
                Contender::new("bumpalo", move |n| w5_bumpalo(&mut bump, k, n)),
            ];
            let mut results = measure(&mut contenders, budget, |c| step(&format!("W5 K={k} {c}")));
            // Per buffer, so that the rows for different K read alike.
            per_item(&mut results, k);
            let mut o = Outcome {
                id: "W5",
                title: format!("{k} buffer(s) of 1 KiB allocated, written, released; per buffer"),
                unit: Unit::NsPerOp,
                ours: "scope",
                results,
                notes: Vec::new(),
            };
            let b = o.speedup("bumpalo").unwrap_or(f64::NAN);
            o.notes.push(format!(
                "target: scope within 1.5x of bumpalo (now {:.2}x)",
                1.0 / b
            ));
            if k == 200 {
                let v = o.speedup("vec").unwrap_or(f64::NAN);
                o.notes.push(format!(
                    "target: scope faster than vec at K=200 (now {v:.2}x)"
                ));
            }
            o
        })
        .collect()
}

/// W6: objects released on a random one of two worker threads.
fn w6(budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    let recycler: Recycler<Msg> = Recycler::new();
    let slab = ShardedSlab::default();
    let mut contenders = vec![
        Contender::new("recycler", |n| w6_migrating(&recycler, 2, n)),
        Contender::new("sharded_slab", |n| w6_migrating(&slab, 2, n)),
        Contender::new("box_jemalloc", |n| w6_migrating(&BoxJemalloc, 2, n)),
    ];
    let results = measure(&mut contenders, budget, |c| step(&format!("W6 {c}")));
    let mut o = Outcome {
        id: "W6",
        title: "migrating release: get on one thread, release on a random one of 2".into(),
        unit: Unit::MopsPerSec,
        ours: "recycler",
        results,
        notes: vec![
            "striped mode (per-CPU stripes) does not exist yet; per-thread caches only".into(),
        ],
    };
    o.notes.push(format!(
        "recycler hit ratio {:.2}%",
        recycler.stats().hit_ratio() * 100.0
    ));
    vec![o]
}

/// W7: teardown of N live objects; time per object for each N.
fn w7(budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    let reps = budget.samples.min(7);
    let sizes = [16usize << 10, 256 << 10, 4 << 20];
    let mut per_object = |name: &'static str, n: usize, f: fn(usize) -> Duration| {
        // One untimed run first: the first touch of this much fresh memory
        // costs page faults that would otherwise land on one contender.
        f(n);
        let samples: Vec<f64> = (0..reps)
            .map(|_| {
                let ns = f(n).as_secs_f64() * 1e9 / n as f64;
                step(&format!("W7 N={n} {name}"));
                ns
            })
            .collect();
        Measured {
            name,
            median_ns: median(&samples),
            samples_ns: samples,
        }
    };
    let mut outcomes: Vec<Outcome> = sizes
        .iter()
        .map(|&n| Outcome {
            id: "W7",
            title: format!("teardown: {n} live objects released and the pool dropped, per object"),
            unit: Unit::NsPerOp,
            ours: "recycler",
            results: vec![
                per_object("recycler", n, w7_teardown),
                per_object("boxes_jemalloc", n, w7_teardown_boxes),
            ],
            notes: Vec::new(),
        })
        .collect();
    let first = outcomes
        .first()
        .and_then(|o| o.results.first())
        .map(|m| m.median_ns);
    let last = outcomes
        .last()
        .and_then(|o| o.results.first())
        .map(|m| m.median_ns);
    if let (Some(first), Some(last), Some(o)) = (first, last, outcomes.last_mut()) {
        o.notes.push(format!(
            "target: flat within 2x from N=16Ki to N=4Mi (now {:.2}x)",
            last / first
        ));
    }
    outcomes
}

/// W8: W1 on 1 and 2 threads at once.
fn w8(budget: Budget, step: &mut dyn FnMut(&str)) -> Vec<Outcome> {
    let recycler: Recycler<Msg> = Recycler::new();
    let mut contenders = vec![
        Contender::new("recycler_1_thread", |n| w8_scaling(&recycler, 1, n)),
        Contender::new("recycler_2_threads", |n| w8_scaling(&recycler, 2, n)),
        Contender::new("box_jemalloc_1_thread", |n| w8_scaling(&BoxJemalloc, 1, n)),
        Contender::new("box_jemalloc_2_threads", |n| w8_scaling(&BoxJemalloc, 2, n)),
    ];
    let mut results = measure(&mut contenders, budget, |c| step(&format!("W8 {c}")));
    // Time per operation of the whole group: the slowest thread's time for
    // `n` operations each, divided by both threads' operations.
    for m in results
        .iter_mut()
        .filter(|m| m.name.ends_with("_2_threads"))
    {
        per_item(std::slice::from_mut(m), 2);
    }
    let mut o = Outcome {
        id: "W8",
        title: "scaling: W1 (1 held) on 1 and 2 threads sharing one pool, aggregate".into(),
        unit: Unit::MopsPerSec,
        ours: "recycler_2_threads",
        results,
        notes: Vec::new(),
    };
    if let Some(x) = o.speedup("recycler_1_thread") {
        o.notes.push(format!(
            "target: 2 threads >= 1.8x one thread (now {x:.2}x)"
        ));
    }
    vec![o]
}
