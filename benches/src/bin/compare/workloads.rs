//! The workloads `compare` runs, each a short version of a criterion suite in
//! `benches/`, and the contenders of each.
//!
//! To add a contender, add its line to the workload's `contenders` list
//! below; a recycler configuration goes into
//! [`recycler_benches::recyclers`] instead, and then appears in W1, W2, W6
//! and W9 at once. W2 and W2M live in `pipelines.rs`, and what both files
//! use in `common.rs`. Every target line goes through [`targets`], which
//! marks it MET or MISSED.

use std::sync::Arc;
use std::time::Duration;

use recycler_benches::buffer_peers::{
    W4LinearPools, W4LocalPools, w4_mix_lockfree_linear, w4_mix_opool_local,
};
use recycler_benches::buffers::{
    Touch, W4_ALL_SIZES, W4_FEW_SIZES, w3_fill_pool, w3_fill_vec_with_capacity, w3_fill_vec_zeroed,
    w3_touch_pool, w3_touch_pool_owned, w3_touch_vec_with_capacity, w4_mix, w4_pool,
    w4_striped_pool, w5_acquire, w5_bumpalo, w5_exhausted_pool, w5_pool, w5_scope, w5_vec,
};
use recycler_benches::wakeup::{Waiter, median_p99, wakeup_latencies};
use recycler_benches::{
    Boxed, Buffers, Corpus, FreshVec, GlobalAllocator, LockfreeLinear, LockfreeSpinLock, Message,
    Msg, OPool, OPoolLocal, ObjectPool, RecyclerOwned, ShardedSlab, Source, Take, VecPool,
    recyclers, w1_floor, w1_floor_slot, w1_get_release, w6_migrating, w7_teardown,
    w7_teardown_boxes, w8_scaling, w9_owner, w9_producer_consumer,
};
use recycler_core::buffer::BufferPool;

use crate::common::{BOX_MSG, MsgPeers, closest_peer, faster_or_slower, recycler_note};
use crate::measure::{Bench, Contender, Measured, median};
use crate::pipelines::{w2, w2_summary, w2m, w2m_summary};
use crate::report::{Outcome, Unit, column};
use crate::targets::{self, Check};

/// One workload of `compare`.
pub(crate) struct Workload {
    /// `W1` to `W10`.
    pub(crate) id: &'static str,
    /// Whether it runs once per global allocator, each in its own process:
    /// the workloads whose results depend on the allocator.
    pub(crate) per_allocator: bool,
    /// Measures it; returns one outcome per set of parameters.
    pub(crate) run: fn(&mut Bench<'_>) -> Vec<Outcome>,
    /// Notes about one set of parameters measured under every allocator
    /// (the outcomes of all processes, one per allocator), printed under
    /// its table.
    pub(crate) summary: fn(&[Outcome]) -> Vec<String>,
    /// Whether its table shows the best sample beside the median (the
    /// two-thread workloads, whose samples spread the most).
    pub(crate) best: bool,
}

/// The workloads, in the order they run.
pub(crate) const WORKLOADS: [Workload; 11] = [
    Workload {
        id: "W1",
        per_allocator: true,
        run: w1,
        summary: w1_summary,
        best: false,
    },
    Workload {
        id: "W2",
        per_allocator: true,
        run: w2,
        summary: w2_summary,
        best: true,
    },
    Workload {
        id: "W2M",
        per_allocator: true,
        run: w2m,
        summary: w2m_summary,
        best: true,
    },
    Workload {
        id: "W3",
        per_allocator: false,
        run: w3,
        summary: no_summary,
        best: false,
    },
    Workload {
        id: "W4",
        per_allocator: false,
        run: w4,
        summary: no_summary,
        best: false,
    },
    Workload {
        id: "W5",
        per_allocator: false,
        run: w5,
        summary: no_summary,
        best: false,
    },
    Workload {
        id: "W6",
        per_allocator: false,
        run: w6,
        summary: no_summary,
        best: false,
    },
    Workload {
        id: "W7",
        per_allocator: false,
        run: w7,
        summary: no_summary,
        best: false,
    },
    Workload {
        id: "W8",
        per_allocator: false,
        run: w8,
        summary: no_summary,
        best: false,
    },
    Workload {
        id: "W9",
        per_allocator: true,
        run: w9,
        summary: w9_summary,
        best: false,
    },
    Workload {
        id: "W10",
        per_allocator: false,
        run: w10,
        summary: no_summary,
        best: false,
    },
];

/// The workload `id`.
pub(crate) fn find(id: &str) -> Option<&'static Workload> {
    WORKLOADS.iter().find(|w| w.id == id)
}

fn no_summary(_: &[Outcome]) -> Vec<String> {
    Vec::new()
}

/// Divides every time by `n`: from per round (or per group of threads) to
/// per item.
fn per_item(results: &mut [Measured], n: usize) {
    for m in results {
        m.samples_ns.iter_mut().for_each(|ns| *ns /= n as f64);
        m.median_ns /= n as f64;
    }
}

/// `Box::new` + drop of a [`Message`], then its strings and vectors.
static BOX_MESSAGE: Boxed<Message> = Boxed::new();

/// How many times faster `ours` is than `other` in the column of `alloc`,
/// as `1.23x` (or `-` if either is missing).
fn ratio_in(group: &[Outcome], alloc: GlobalAllocator, other: &str) -> String {
    speedup_in(group, alloc, other).map_or_else(|| "-".to_string(), |x| format!("{x:.2}x"))
}

/// How many times faster `ours` is than `other` in the column of `alloc`.
fn speedup_in(group: &[Outcome], alloc: GlobalAllocator, other: &str) -> Option<f64> {
    column(group, alloc).and_then(|o| o.speedup(other))
}

/// `ratio_in` for every column: `jemalloc 1.20x, system 2.01x, ...`.
fn ratios(group: &[Outcome], other: &str) -> String {
    group
        .iter()
        .map(|o| format!("{} {}", o.alloc, ratio_in(group, o.alloc, other)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The thread-safe peers that striped mode must beat in W1.
const THREAD_SAFE_PEERS: [&str; 5] = [
    "sharded_slab",
    "object_pool",
    "lockfree_spinlock",
    "lockfree_mutex",
    "opool",
];

fn w1_contender<'a, S: Take<Object = Msg>>(
    name: &'static str,
    source: &'a S,
    held: usize,
) -> Contender<'a> {
    Contender::new(name, move |n| w1_get_release(source, held, n))
}

/// W1: owner-thread get + release, 1 and 16 held. compare's own process
/// measures every contender; the other allocators' processes only those
/// that allocate or that the ratios need (the recycler, `Box`, the floors).
fn w1(b: &mut Bench<'_>) -> Vec<Outcome> {
    let recyclers = recyclers::<Msg>();
    let owned = RecyclerOwned::<Msg>::new();
    let peers = MsgPeers::default();
    let opool_local = OPoolLocal::default();
    [1usize, 16]
        .into_iter()
        .map(|held| {
            let mut contenders: Vec<Contender<'_>> = recyclers
                .iter()
                .map(|(name, r)| w1_contender(name, r, held))
                .collect();
            contenders.push(w1_contender("recycler_owned", &owned, held));
            contenders.push(w1_contender("box", &BOX_MSG, held));
            if b.primary {
                contenders.extend([
                    w1_contender("sharded_slab", &peers.slab, held),
                    w1_contender("object_pool", &peers.object_pool, held),
                    w1_contender("lockfree_linear", &peers.linear, held),
                    w1_contender("lockfree_spinlock", &peers.spin, held),
                    w1_contender("lockfree_mutex", &peers.mutex, held),
                    w1_contender("opool", &peers.opool, held),
                    w1_contender("opool_local", &opool_local, held),
                    w1_contender("poolshark", &peers.shark, held),
                ]);
            }
            contenders.push(Contender::new("floor_tls_vecdeque", move |n| {
                w1_floor(held, n)
            }));
            contenders.push(Contender::new("floor_tls_slot", move |n| {
                w1_floor_slot(held, n)
            }));
            let mut results = b.measure(&format!("W1 held={held}"), &mut contenders);
            per_item(&mut results, held);
            let mut o = Outcome::new(
                "W1",
                format!("get + release on one thread, 64-byte object, {held} held"),
                Unit::NsPerOp,
                recyclers[0].0,
                b.alloc,
                results,
            );
            // The recycler's time as a multiple of a floor's.
            let floor = |o: &Outcome, name| o.speedup(name).map(|x| 1.0 / x);
            let slot_target = if held == 1 { 1.2 } else { 1.3 };
            o.notes.push(targets::ratio(
                &format!("{held} held: recycler's time <= {slot_target}x floor_tls_slot's"),
                Check::AtMost(slot_target),
                floor(&o, "floor_tls_slot"),
            ));
            o.notes.push(targets::ratio(
                &format!("{held} held: recycler's time <= 1.3x floor_tls_vecdeque's"),
                Check::AtMost(1.3),
                floor(&o, "floor_tls_vecdeque"),
            ));
            o.notes.push(targets::ratio(
                &format!("{held} held: recycler_owned's time <= 1.5x recycler's"),
                Check::AtMost(1.5),
                o.speedup("recycler_owned"),
            ));
            if held == 1 {
                // Striped mode on restartable sequences (issue 25), in
                // every allocator's column: as fast as the per-thread
                // mode, give or take half, and twice `Box`.
                o.notes.push(targets::ratio(
                    "1 held: recycler_striped's time <= 1.5x recycler's",
                    Check::AtMost(1.5),
                    o.speedup("recycler_striped"),
                ));
                o.notes.push(targets::ratio(
                    "1 held: recycler_striped >= 2x box",
                    Check::AtLeast(2.0),
                    o.speedup_of("recycler_striped", "box"),
                ));
            }
            if b.primary {
                let striped = o.median("recycler_striped");
                let closest = THREAD_SAFE_PEERS
                    .iter()
                    .filter_map(|p| Some((*p, o.median(p)? / striped?)))
                    .min_by(|a, b| a.1.total_cmp(&b.1));
                if let Some((peer, x)) = closest {
                    o.notes.push(targets::ratio(
                        &format!(
                            "{held} held: recycler_striped faster than every thread-safe \
                             peer (the closest, {peer}, over recycler_striped's time)"
                        ),
                        Check::AtLeast(1.0),
                        Some(x),
                    ));
                    let per_thread = o.median(recyclers[0].0).unwrap_or(f64::NAN);
                    o.notes.push(faster_or_slower(
                        "recycler_striped",
                        "the per-thread recycler",
                        per_thread / striped.unwrap_or(f64::NAN),
                    ));
                }
            }
            o
        })
        .collect()
}

fn w1_summary(group: &[Outcome]) -> Vec<String> {
    vec![
        targets::ratio(
            "recycler >= 2x box under jemalloc",
            Check::AtLeast(2.0),
            speedup_in(group, GlobalAllocator::Jemalloc, "box"),
        ),
        targets::ratio(
            "recycler >= 1.6x box under mimalloc",
            Check::AtLeast(1.6),
            speedup_in(group, GlobalAllocator::Mimalloc, "box"),
        ),
    ]
}

/// The fastest of `peers` in every column, and how `ours` compares.
fn fastest_peer(group: &[Outcome], peers: &[&str]) -> String {
    group
        .iter()
        .filter_map(|o| {
            let (peer, x) = closest_peer(o, peers)?;
            Some(format!("{} {x:.2}x ({peer})", o.alloc))
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// W3: the guards alone (acquire 4 KiB, write 8 bytes, release: borrowed,
/// owned and striped), then acquire a buffer, write every byte, release;
/// 4 KiB and 64 KiB.
fn w3(b: &mut Bench<'_>) -> Vec<Outcome> {
    let pool = Arc::new(
        BufferPool::builder()
            .build()
            .expect("the default configuration is valid"),
    );
    let mut outcomes = vec![w3_guards(b, &pool)];
    outcomes.extend(w3_fill(b, &pool));
    outcomes
}

/// W3's first table: the guards' cost, the fill of the other tables
/// would hide it: a borrowed buffer, an owned one, a striped pool's, and
/// `Vec::with_capacity`.
fn w3_guards(b: &mut Bench<'_>, pool: &Arc<BufferPool>) -> Outcome {
    let striped = w4_striped_pool();
    let size = 4 << 10;
    let mut contenders = vec![
        Contender::new("buffer_pool", |n| w3_touch_pool(pool, size, n)),
        Contender::new("buffer_pool_owned", |n| w3_touch_pool_owned(pool, size, n)),
        Contender::new("buffer_pool_striped", |n| w3_touch_pool(&striped, size, n)),
        Contender::new("vec_with_capacity", move |n| {
            w3_touch_vec_with_capacity(size, n)
        }),
    ];
    let results = b.measure("W3 guards", &mut contenders);
    drop(contenders);
    let mut o = Outcome::new(
        "W3",
        "acquire 4 KiB + write 8 bytes + release: the guards".to_string(),
        Unit::NsPerOp,
        "buffer_pool",
        b.alloc,
        results,
    );
    o.notes.push(targets::ratio(
        "buffer_pool_owned's time <= 1.5x buffer_pool's",
        Check::AtMost(1.5),
        o.speedup("buffer_pool_owned"),
    ));
    o.notes.push(targets::ratio(
        "buffer_pool_striped's time <= 1.5x buffer_pool's",
        Check::AtMost(1.5),
        o.speedup("buffer_pool_striped"),
    ));
    o
}

/// W3's fill tables.
fn w3_fill(b: &mut Bench<'_>, pool: &BufferPool) -> Vec<Outcome> {
    [4usize << 10, 64 << 10]
        .into_iter()
        .map(|size| {
            let mut contenders = vec![
                Contender::new("buffer_pool", |n| w3_fill_pool(pool, size, n)),
                Contender::new("vec_with_capacity", move |n| {
                    w3_fill_vec_with_capacity(size, n)
                }),
                Contender::new("vec_zeroed", move |n| w3_fill_vec_zeroed(size, n)),
            ];
            let label = format!("W3 {} KiB", size >> 10);
            let results = b.measure(&label, &mut contenders);
            let mut o = Outcome::new(
                "W3",
                format!("acquire + fill every byte + release, {} KiB", size >> 10),
                Unit::NsPerOp,
                "buffer_pool",
                b.alloc,
                results,
            );
            o.notes.push(targets::ratio(
                &format!(
                    "buffer_pool never slower than vec_with_capacity at {} KiB",
                    size >> 10
                ),
                Check::AtLeast(1.0),
                o.speedup("vec_with_capacity"),
            ));
            if size == 64 << 10 {
                o.notes.push(targets::ratio(
                    "buffer_pool >= 2x vec_zeroed at 64 KiB",
                    Check::AtLeast(2.0),
                    o.speedup("vec_zeroed"),
                ));
            }
            o
        })
        .collect()
}

/// W4: Jetty's mix, page-touch variant, all 16 sizes and a fixed few.
fn w4(b: &mut Bench<'_>) -> Vec<Outcome> {
    let pools = [
        ("unbounded", w4_pool(None, true)),
        ("cap_1mib", w4_pool(Some(1 << 20), true)),
        ("unbounded_stats_off", w4_pool(None, false)),
        ("striped", w4_striped_pool()),
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
        let local = W4LocalPools::new(sizes);
        let linear = W4LinearPools::new(sizes);
        contenders.push(Contender::new("opool_local", move |n| {
            w4_mix_opool_local(&local, Touch::Page, n)
        }));
        contenders.push(Contender::new("lockfree_linear", move |n| {
            w4_mix_lockfree_linear(&linear, Touch::Page, n)
        }));
        let results = b.measure(&format!("W4 {diversity}"), &mut contenders);
        let mut o = Outcome::new(
            "W4",
            format!("Jetty's mix: 4 KiB in + random 4..64 KiB out, one byte per page, {diversity}"),
            Unit::MopsPerSec,
            "cap_1mib",
            b.alloc,
            results,
        );
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
        let peer = mops("opool_local").max(mops("lockfree_linear"));
        let (sum, count) = hits[1].get();
        let capped_hits = if count > 0 {
            100.0 * sum / count as f64
        } else {
            f64::NAN
        };
        let cap_cost = 100.0 * (1.0 - capped / unbounded);
        let stats_cost = 100.0 * (1.0 - unbounded / stats_off);
        o.notes.extend([
            targets::line(
                &format!("{diversity}: >= 30 Mops/s unbounded"),
                Check::AtLeast(30.0),
                unbounded,
                &format!("{unbounded:.1} Mops/s"),
            ),
            targets::line(
                &format!("{diversity}: the 1 MiB cap costs <= 20%"),
                Check::AtMost(20.0),
                cap_cost,
                &format!("{cap_cost:.1}%"),
            ),
            targets::line(
                &format!("{diversity}: 4 KiB hit ratio >= 99.9% with the cap"),
                Check::AtLeast(99.9),
                capped_hits,
                &format!("{capped_hits:.3}%"),
            ),
            targets::line(
                &format!("{diversity}: statistics cost <= 3%"),
                Check::AtMost(3.0),
                stats_cost,
                &format!("{stats_cost:.1}%"),
            ),
            targets::ratio(
                &format!(
                    "{diversity}: unbounded faster than every peer \
                     (the fastest peer's time over unbounded's)"
                ),
                Check::AtLeast(1.0),
                Some(unbounded / peer),
            ),
        ]);
        o
    })
    .collect()
}

/// W5: Panama's pooled segments: K buffers of 1 KiB, written and released.
fn w5(b: &mut Bench<'_>) -> Vec<Outcome> {
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
            let mut results = b.measure(&format!("W5 K={k}"), &mut contenders);
            // Per buffer, so that the rows for different K read alike.
            per_item(&mut results, k);
            let mut o = Outcome::new(
                "W5",
                format!("{k} buffer(s) of 1 KiB allocated, written, released; per buffer"),
                Unit::NsPerOp,
                "scope",
                b.alloc,
                results,
            );
            // As docs/BENCHMARKS.md states them: 2x at K=1, 1.5x above.
            let within = if k == 1 { 2.0 } else { 1.5 };
            o.notes.push(targets::ratio(
                &format!("K={k}: scope's time <= {within}x bumpalo's"),
                Check::AtMost(within),
                o.speedup("bumpalo").map(|x| 1.0 / x),
            ));
            if k == 200 {
                o.notes.push(targets::ratio(
                    "scope faster than vec at K=200",
                    Check::AtLeast(1.0),
                    o.speedup("vec"),
                ));
            }
            o
        })
        .collect()
}

/// W6: objects released on a random one of two worker threads.
fn w6(b: &mut Bench<'_>) -> Vec<Outcome> {
    let recyclers = recyclers::<Msg>();
    let slab = ShardedSlab::default();
    let mut contenders: Vec<Contender<'_>> = recyclers
        .iter()
        .map(|(name, r)| Contender::new(name, move |n| w6_migrating(r, 2, n)))
        .collect();
    contenders.extend([
        Contender::new("sharded_slab", |n| w6_migrating(&slab, 2, n)),
        Contender::new("box", |n| w6_migrating(&BOX_MSG, 2, n)),
    ]);
    let results = b.measure("W6", &mut contenders);
    drop(contenders);
    let mut o = Outcome::new(
        "W6",
        "migrating release: get on one thread, release on a random one of 2",
        Unit::MopsPerSec,
        recyclers[0].0,
        b.alloc,
        results,
    );
    o.notes.push(recycler_note(&recyclers[0].1.stats()));
    o.notes.push(targets::ratio(
        "recycler_striped >= 4x sharded_slab",
        Check::AtLeast(4.0),
        o.speedup_of("recycler_striped", "sharded_slab"),
    ));
    vec![o]
}

/// W7: teardown of N live objects; time per object for each N.
fn w7(b: &mut Bench<'_>) -> Vec<Outcome> {
    let reps = b.budget.samples.min(7);
    // `--quick` stops at 1 Mi: 4 Mi objects take seconds to make and free.
    let largest = if b.budget.quick { 1 << 20 } else { 4 << 20 };
    let sizes = [16usize << 10, 256 << 10, largest];
    let per_object = |b: &mut Bench<'_>, name: &'static str, n: usize, f: fn(usize) -> Duration| {
        if !b.is_counting() {
            // One untimed run first: the first touch of this much fresh
            // memory costs page faults that would otherwise land on one
            // contender.
            f(n);
        }
        b.samples(&format!("W7 N={n}"), name, reps, || {
            f(n).as_secs_f64() * 1e9 / n as f64
        })
    };
    let mut outcomes: Vec<Outcome> = sizes
        .iter()
        .map(|&n| {
            let results = vec![
                per_object(b, "recycler", n, w7_teardown),
                per_object(b, "boxes", n, w7_teardown_boxes),
            ];
            Outcome::new(
                "W7",
                format!("teardown: {n} live objects released and the pool dropped, per object"),
                Unit::NsPerOp,
                "recycler",
                b.alloc,
                results,
            )
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
        o.notes.push(targets::ratio(
            &format!(
                "time per object flat within 2x from N=16Ki to N=4Mi (here to {}Mi)",
                largest >> 20
            ),
            Check::AtMost(2.0),
            Some(last / first),
        ));
    }
    outcomes
}

/// W8: W1 on 1 and 2 threads at once.
fn w8(b: &mut Bench<'_>) -> Vec<Outcome> {
    let recyclers = recyclers::<Msg>();
    let recycler = &recyclers[0].1;
    let mut contenders = vec![
        Contender::new("recycler_1_thread", |n| w8_scaling(recycler, 1, n)),
        Contender::new("recycler_2_threads", |n| w8_scaling(recycler, 2, n)),
        Contender::new("box_1_thread", |n| w8_scaling(&BOX_MSG, 1, n)),
        Contender::new("box_2_threads", |n| w8_scaling(&BOX_MSG, 2, n)),
    ];
    let mut results = b.measure("W8", &mut contenders);
    // Time per operation of the whole group: the slowest thread's time for
    // `n` operations each, divided by both threads' operations.
    for m in results
        .iter_mut()
        .filter(|m| m.name.ends_with("_2_threads"))
    {
        per_item(std::slice::from_mut(m), 2);
    }
    let mut o = Outcome::new(
        "W8",
        "scaling: W1 (1 held) on 1 and 2 threads sharing one pool, aggregate",
        Unit::MopsPerSec,
        "recycler_2_threads",
        b.alloc,
        results,
    );
    o.notes.push(targets::ratio(
        "2 threads >= 1.8x one thread, aggregate",
        Check::AtLeast(1.8),
        o.speedup("recycler_1_thread"),
    ));
    vec![o]
}

/// A peer pool of W9's messages with a pool of the same kind for the
/// encoding buffers.
type PeerPair<P, Q> = (P, VecPool<Q>);

fn pair<P: Default, Q: Default>() -> PeerPair<P, Q> {
    (P::default(), VecPool(Q::default()))
}

/// The peers of W9: each pools the messages and, in a second pool of the
/// same kind, the `Vec<u8>` they are encoded into.
#[derive(Default)]
struct MessagePeers {
    slab: PeerPair<ShardedSlab<Message>, ShardedSlab<Vec<u8>>>,
    object_pool: PeerPair<ObjectPool<Message>, ObjectPool<Vec<u8>>>,
    linear: PeerPair<LockfreeLinear<Message>, LockfreeLinear<Vec<u8>>>,
    spin: PeerPair<LockfreeSpinLock<Message>, LockfreeSpinLock<Vec<u8>>>,
    opool: PeerPair<OPool<Message>, OPool<Vec<u8>>>,
}

/// The peers of W9, by row name (`opool_local` in the owner shape only).
const MESSAGE_PEERS: [&str; 6] = [
    "sharded_slab",
    "object_pool",
    "lockfree_linear",
    "lockfree_spinlock",
    "opool",
    "opool_local",
];

fn w9_owner_contender<'a, M, B>(
    name: &'static str,
    messages: &'a M,
    buffers: &'a B,
    corpus: &'a Corpus,
) -> Contender<'a>
where
    M: Take<Object = Message>,
    B: Buffers,
{
    Contender::new(name, move |n| w9_owner(messages, buffers, corpus, n))
}

fn w9_pc_contender<'a, M, B>(
    name: &'static str,
    messages: &'a M,
    buffers: &'a B,
    corpus: &'a Corpus,
) -> Contender<'a>
where
    M: Source<Object = Message>,
    B: Buffers + Sync,
{
    Contender::new(name, move |n| {
        w9_producer_consumer(messages, buffers, corpus, n)
    })
}

/// The share of acquires a buffer pool served from its buckets, in percent.
fn buffer_hit_ratio(pool: &BufferPool) -> f64 {
    let stats = pool.stats();
    let (pooled, acquires) = stats
        .buckets
        .iter()
        .fold((0, 0), |(p, a), b| (p + b.pooled, a + b.acquires));
    if acquires == 0 {
        f64::NAN
    } else {
        100.0 * pooled as f64 / acquires as f64
    }
}

/// W9: a realistic message built, encoded into a buffer and released, on
/// one thread (owner) and across two (producer/consumer); ns per message.
fn w9(b: &mut Bench<'_>) -> Vec<Outcome> {
    let corpus = Corpus::new();
    let default_pool = || {
        BufferPool::builder()
            .build()
            .expect("the default configuration is valid")
    };
    let mut outcomes = Vec::new();

    // Owner: one thread builds, encodes and releases.
    {
        let recyclers = recyclers::<Message>();
        let buffers = default_pool();
        let peers = MessagePeers::default();
        let local: PeerPair<OPoolLocal<Message>, OPoolLocal<Vec<u8>>> = pair();
        let c = &corpus;
        let mut contenders: Vec<Contender<'_>> = recyclers
            .iter()
            .map(|(name, r)| w9_owner_contender(name, r, &buffers, c))
            .collect();
        contenders.extend([
            w9_owner_contender("box", &BOX_MESSAGE, &FreshVec, c),
            w9_owner_contender("sharded_slab", &peers.slab.0, &peers.slab.1, c),
            w9_owner_contender("object_pool", &peers.object_pool.0, &peers.object_pool.1, c),
            w9_owner_contender("lockfree_linear", &peers.linear.0, &peers.linear.1, c),
            w9_owner_contender("lockfree_spinlock", &peers.spin.0, &peers.spin.1, c),
            w9_owner_contender("opool", &peers.opool.0, &peers.opool.1, c),
            w9_owner_contender("opool_local", &local.0, &local.1, c),
        ]);
        let results = b.measure("W9 owner", &mut contenders);
        drop(contenders);
        let mut o = Outcome::new(
            "W9",
            "message: build, encode into a buffer, release; one thread; ns per message",
            Unit::NsPerOp,
            recyclers[0].0,
            b.alloc,
            results,
        );
        o.notes.push(format!(
            "recycler hit ratio {:.2}%, buffer pool hit ratio {:.2}%",
            recyclers[0].1.stats().hit_ratio() * 100.0,
            buffer_hit_ratio(&buffers)
        ));
        outcomes.push(o);
    }

    // Producer/consumer: one thread builds, another encodes and releases.
    {
        let recyclers = recyclers::<Message>();
        let buffers = default_pool();
        let peers = MessagePeers::default();
        let c = &corpus;
        let mut contenders: Vec<Contender<'_>> = recyclers
            .iter()
            .map(|(name, r)| w9_pc_contender(name, r, &buffers, c))
            .collect();
        contenders.extend([
            w9_pc_contender("box", &BOX_MESSAGE, &FreshVec, c),
            w9_pc_contender("sharded_slab", &peers.slab.0, &peers.slab.1, c),
            w9_pc_contender("object_pool", &peers.object_pool.0, &peers.object_pool.1, c),
            w9_pc_contender("lockfree_linear", &peers.linear.0, &peers.linear.1, c),
            w9_pc_contender("lockfree_spinlock", &peers.spin.0, &peers.spin.1, c),
            w9_pc_contender("opool", &peers.opool.0, &peers.opool.1, c),
        ]);
        let results = b.measure("W9 producer/consumer", &mut contenders);
        drop(contenders);
        let mut o = Outcome::new(
            "W9",
            "message: one thread builds, another encodes into a buffer and releases; \
             ns per message",
            Unit::NsPerOp,
            recyclers[0].0,
            b.alloc,
            results,
        );
        o.notes.push(format!(
            "recycler hit ratio {:.2}%, buffer pool hit ratio {:.2}%",
            recyclers[0].1.stats().hit_ratio() * 100.0,
            buffer_hit_ratio(&buffers)
        ));
        outcomes.push(o);
    }
    outcomes
}

fn w9_summary(group: &[Outcome]) -> Vec<String> {
    vec![
        format!(
            "messages: topic, 256 B..4 KiB payload, 4..8 headers, scalars; encoding {:.0} bytes \
             on average",
            Corpus::new().mean_encoded_len()
        ),
        format!(
            "recycler vs box (all built fresh): {}",
            ratios(group, "box")
        ),
        format!(
            "recycler vs the fastest peer: {}",
            fastest_peer(group, &MESSAGE_PEERS)
        ),
    ]
}

/// W10: the wake-up latency of a wait for memory at the limit, against a
/// `Condvar` handoff and a bare unpark. Each sample is the median of a run
/// of wake-ups, the contenders taking turns sample by sample (this
/// machine's wake-ups drift by a factor of ten as its load changes); the
/// note gives the median and the 99th percentile of every single wake-up.
fn w10(b: &mut Bench<'_>) -> Vec<Outcome> {
    const ROUNDS: usize = 400;
    let reps = b.budget.samples.min(if b.budget.quick { 5 } else { 11 });
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); Waiter::ALL.len()];
    let mut every: Vec<Vec<Duration>> = vec![Vec::new(); Waiter::ALL.len()];
    for _ in 0..reps {
        for (i, waiter) in Waiter::ALL.into_iter().enumerate() {
            let m = b.samples("W10", waiter.name(), 1, || {
                let lat = wakeup_latencies(waiter, ROUNDS);
                let (median, _) = median_p99(&lat);
                every[i].extend(lat);
                median.as_secs_f64() * 1e9
            });
            samples[i].extend(m.samples_ns);
        }
    }
    let results = Waiter::ALL
        .into_iter()
        .zip(samples)
        .map(|(waiter, samples_ns)| Measured {
            name: waiter.name().to_string(),
            median_ns: median(&samples_ns),
            samples_ns,
        })
        .collect();
    let mut o = Outcome::new(
        "W10",
        "wake-up latency: a waiter at the memory limit woken by a free on another thread",
        Unit::NsPerOp,
        "pool_async",
        b.alloc,
        results,
    );
    if !b.is_counting() {
        let line = Waiter::ALL
            .iter()
            .zip(&every)
            .map(|(waiter, lat)| {
                let (median, p99) = median_p99(lat);
                format!(
                    "{} {:.1}/{:.1}",
                    waiter.name(),
                    median.as_secs_f64() * 1e6,
                    p99.as_secs_f64() * 1e6
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        o.notes
            .push(format!("median/p99 of single wake-ups, µs: {line}"));
    }
    vec![o]
}
