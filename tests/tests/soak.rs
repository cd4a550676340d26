//! The soak: every feature at once, on all cores, for a bounded time.
//! Ignored by default; run it with
//!
//! ```text
//! RECYCLER_SOAK_SECS=600 cargo test -p recycler-tests --release --test soak -- --ignored --nocapture
//! ```
//!
//! (30 seconds without the variable). Worker threads (twice the cores) live
//! short lives and are replaced (thread churn); each gets, grows, holds,
//! detaches and releases objects of four recyclers (default settings; an
//! idle-byte cap with small caches; `reset_on_return(false)` with `ratio`
//! and a small depot; striped, with an idle-byte cap), acquires (now and
//! then waiting at the limit), writes, grows and releases buffers of a
//! pool with an idle cap, a memory limit and alignment, allocates from
//! scopes, passes guards and buffers to each other through a channel (so
//! that many are released on a thread other than their home's, often after
//! their home has exited), trims and prefills. A monitor samples the pool's
//! ledger throughout: the memory limit is hard.
//!
//! At the end, with every worker gone: for each recycler, made = in use +
//! idle + dropped + detached, the objects alive are the idle ones, every
//! idle object is reachable, and idle bytes are within the bound and exact;
//! for the pool, every buffer counted once, nothing in use, idle memory
//! within its bound and exact, and everything freed by a trim. The counts
//! are printed.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use common::{Counted, Counts, Rng, assert_buffers_counted, assert_conserved, builder};
use recycler_core::buffer::{BufferPool, OwnedPooledBuf};
use recycler_core::{AcquireError, OwnedPooled, Recycler};

const MAX_CAPACITY: usize = 64 * 1024;
const IDLE_MEMORY: usize = 1 << 20;
const MEMORY_LIMIT: usize = 8 << 20;
const IDLE_BYTES: usize = 256 * 1024;
/// The most `u64`s a payload holds: 4096, so at most 32 KiB retained.
const MAX_LEN: usize = 4096;

/// Something a worker holds, and may hand to another.
enum Item {
    Plain(OwnedPooled<Counted>),
    Capped(OwnedPooled<Counted>),
    Deferred(OwnedPooled<Counted>),
    Striped(OwnedPooled<Counted>),
    Buf(OwnedPooledBuf),
}

struct Shared {
    plain: Arc<Recycler<Counted>>,
    capped: Arc<Recycler<Counted>>,
    deferred: Arc<Recycler<Counted>>,
    striped: Arc<Recycler<Counted>>,
    pool: Arc<BufferPool>,
    counts: [Arc<Counts>; 4],
    tx: crossbeam_channel::Sender<Item>,
    rx: crossbeam_channel::Receiver<Item>,
    deadline: Instant,
    tally: Tally,
}

/// What the workers did, for the report.
#[derive(Default)]
struct Tally {
    lives: AtomicU64,
    ops: AtomicU64,
    passed: AtomicU64,
    detached: AtomicU64,
    limit_refusals: AtomicU64,
    waits: AtomicU64,
    scopes: AtomicU64,
    grown: AtomicU64,
    trims: AtomicU64,
    prefills: AtomicU64,
}

fn get(shared: &Shared, which: u64) -> Item {
    match which % 4 {
        0 => Item::Plain(shared.plain.get_owned()),
        1 => Item::Capped(shared.capped.get_owned()),
        2 => Item::Deferred(shared.deferred.get_owned()),
        _ => Item::Striped(shared.striped.get_owned()),
    }
}

/// One worker's life: a few thousand operations, then it exits.
fn live(shared: &Shared, seed: u64) {
    let mut rng = Rng(seed | 1);
    let ops = 500 + rng.next() % 4000;
    let mut held: Vec<Item> = Vec::new();
    let t = &shared.tally;
    for _ in 0..ops {
        let r = rng.next();
        match r % 16 {
            0..=4 => {
                let mut item = get(shared, r >> 8);
                if let Item::Plain(g) | Item::Capped(g) | Item::Deferred(g) | Item::Striped(g) =
                    &mut item
                {
                    assert!(g.data.is_empty(), "handed out unreset");
                    let n = ((r >> 16) as usize % 64).min(MAX_LEN - g.data.len());
                    g.data.extend(0..n as u64);
                    if r.is_multiple_of(97) {
                        // Now and then one grows large.
                        let n = MAX_LEN - g.data.len();
                        g.data.extend(0..n as u64);
                    }
                }
                held.push(item);
            }
            5..=7 => {
                let size = match (r >> 8) % 8 {
                    0 => (r >> 12) as usize % (2 * MAX_CAPACITY), // some oversize
                    _ => (r >> 12) as usize % MAX_CAPACITY,
                };
                let got = if (r >> 8) % 8 == 1 {
                    // Now and then one may wait for memory, briefly.
                    t.waits.fetch_add(1, Relaxed);
                    shared
                        .pool
                        .acquire_owned_timeout(size, Duration::from_millis(1))
                } else {
                    shared.pool.try_acquire_owned(size)
                };
                match got {
                    Ok(mut b) => {
                        b.extend_from_slice(&[7; 64][..size.min(64)]);
                        held.push(Item::Buf(b));
                    }
                    Err(AcquireError::LimitExceeded { .. } | AcquireError::TimedOut { .. }) => {
                        t.limit_refusals.fetch_add(1, Relaxed);
                    }
                    Err(err) => panic!("{err}"),
                }
            }
            8 => {
                // Grow a buffer, maybe into another bucket or past the last.
                if let Some(Item::Buf(b)) =
                    held.iter_mut().rev().find(|i| matches!(i, Item::Buf(_)))
                {
                    let more = (r >> 8) as usize % MAX_CAPACITY;
                    match b.try_reserve(more) {
                        Ok(()) => {
                            b.extend_from_slice(&vec![1; more]);
                            t.grown.fetch_add(1, Relaxed);
                        }
                        Err(AcquireError::LimitExceeded { .. }) => {
                            t.limit_refusals.fetch_add(1, Relaxed);
                        }
                        Err(err) => panic!("{err}"),
                    }
                }
            }
            9 => {
                let scope = shared.pool.scope();
                for k in 0..(r >> 8) % 6 {
                    match scope.try_alloc(((r >> (12 + k)) % 20_000) as usize) {
                        Ok(s) => s.fill(3),
                        Err(AcquireError::LimitExceeded { .. }) => {
                            t.limit_refusals.fetch_add(1, Relaxed);
                        }
                        Err(err) => panic!("{err}"),
                    }
                }
                t.scopes.fetch_add(1, Relaxed);
            }
            10 | 11 => {
                // Hand one to whoever takes it.
                if !held.is_empty() {
                    let item = held.swap_remove((r >> 8) as usize % held.len());
                    match shared.tx.try_send(item) {
                        Ok(()) => {
                            t.passed.fetch_add(1, Relaxed);
                        }
                        Err(e) => drop(e.into_inner()),
                    }
                }
            }
            12 | 13 => {
                if let Ok(item) = shared.rx.try_recv() {
                    if r.is_multiple_of(3) {
                        drop(item)
                    } else {
                        held.push(item)
                    }
                }
            }
            14 => {
                if !held.is_empty() {
                    let item = held.swap_remove((r >> 8) as usize % held.len());
                    if r.is_multiple_of(50)
                        && let Item::Plain(g)
                        | Item::Capped(g)
                        | Item::Deferred(g)
                        | Item::Striped(g) = item
                    {
                        drop(OwnedPooled::into_inner(g));
                        t.detached.fetch_add(1, Relaxed);
                    }
                }
            }
            _ => match (r >> 8) % 64 {
                0 => {
                    shared.plain.trim();
                    shared.capped.trim();
                    shared.striped.trim();
                    shared.pool.trim();
                    t.trims.fetch_add(1, Relaxed);
                }
                1 => {
                    shared.deferred.prefill(8);
                    shared.capped.prefill(4);
                    shared.striped.prefill(4);
                    t.prefills.fetch_add(1, Relaxed);
                }
                _ => {
                    if held.len() > 8 {
                        held.truncate(held.len() / 2);
                    }
                }
            },
        }
        if held.len() > 48 {
            held.drain(..24);
        }
        t.ops.fetch_add(1, Relaxed);
        if Instant::now() >= shared.deadline {
            break;
        }
    }
    // Some of what it holds outlives it, on the channel.
    for item in held.drain(..).rev().take(4) {
        let _ = shared.tx.try_send(item);
    }
}

#[test]
#[ignore = "a soak of 30 s (RECYCLER_SOAK_SECS); run with --ignored"]
fn soak() {
    let secs: u64 = std::env::var("RECYCLER_SOAK_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(30);
    let cores = thread::available_parallelism().map_or(2, |n| n.get());
    let workers = 2 * cores;
    let counts = [Counts::new(), Counts::new(), Counts::new(), Counts::new()];
    let (tx, rx) = crossbeam_channel::bounded(256);
    let shared = Arc::new(Shared {
        plain: Arc::new(builder(&counts[0]).build().unwrap()),
        capped: Arc::new(
            builder(&counts[1])
                .max_idle_bytes(IDLE_BYTES)
                .max_capacity_per_thread(64)
                .batch_size(8)
                .build()
                .unwrap(),
        ),
        deferred: Arc::new(
            builder(&counts[2])
                .reset_on_return(false)
                .ratio(2)
                .max_capacity_per_thread(128)
                .batch_size(16)
                .depot_capacity(64)
                .build()
                .unwrap(),
        ),
        striped: Arc::new(
            builder(&counts[3])
                .striped(0)
                .max_idle_bytes(IDLE_BYTES)
                .max_capacity_per_thread(256)
                .build()
                .unwrap(),
        ),
        pool: Arc::new(
            BufferPool::builder()
                .max_capacity(MAX_CAPACITY)
                .max_idle_memory(IDLE_MEMORY)
                .memory_limit(MEMORY_LIMIT)
                .alignment(64)
                .max_idle_per_thread(16)
                .build()
                .unwrap(),
        ),
        counts: counts.clone(),
        tx,
        rx,
        deadline: Instant::now() + Duration::from_secs(secs),
        tally: Tally::default(),
    });

    // The monitor: the memory limit holds at every moment.
    let done = Arc::new(AtomicBool::new(false));
    let monitor = {
        let (shared, done) = (Arc::clone(&shared), Arc::clone(&done));
        thread::spawn(move || {
            let mut peak = 0;
            while !done.load(Relaxed) {
                let s = shared.pool.stats();
                assert!(s.allocated_memory <= MEMORY_LIMIT as u64, "{s}");
                peak = peak.max(s.allocated_memory);
                thread::sleep(Duration::from_millis(20));
            }
            peak
        })
    };

    let started = Instant::now();
    let handles: Vec<_> = (0..workers as u64)
        .map(|w| {
            let shared = Arc::clone(&shared);
            thread::spawn(move || {
                let mut life = 0u64;
                while Instant::now() < shared.deadline {
                    let shared2 = Arc::clone(&shared);
                    let seed = (w << 40) ^ life.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                    // Each life is a thread of its own; `join` waits for its
                    // exit hooks.
                    thread::spawn(move || live(&shared2, seed)).join().unwrap();
                    shared.tally.lives.fetch_add(1, Relaxed);
                    life += 1;
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    done.store(true, Relaxed);
    let peak = monitor.join().unwrap();
    while let Ok(item) = shared.rx.try_recv() {
        drop(item);
    }
    let elapsed = started.elapsed();

    // Every worker is gone: the books must balance exactly.
    let recyclers = [
        ("plain", &shared.plain),
        ("capped", &shared.capped),
        ("deferred", &shared.deferred),
        ("striped", &shared.striped),
    ];
    let t = &shared.tally;
    println!(
        "soak: {:.0} s, {workers} workers on {cores} cores, {} thread lives, {} operations, \
         {} passed between threads, {} detached, {} grown, {} scopes, {} trims, {} prefills, \
         {} limit refusals, {} acquires that may wait 1 ms at the limit, peak allocated {} KiB of {} KiB",
        elapsed.as_secs_f64(),
        t.lives.load(Relaxed),
        t.ops.load(Relaxed),
        t.passed.load(Relaxed),
        t.detached.load(Relaxed),
        t.grown.load(Relaxed),
        t.scopes.load(Relaxed),
        t.trims.load(Relaxed),
        t.prefills.load(Relaxed),
        t.limit_refusals.load(Relaxed),
        t.waits.load(Relaxed),
        peak >> 10,
        MEMORY_LIMIT >> 10,
    );
    for ((name, pool), counts) in recyclers.iter().zip(&shared.counts) {
        let s = pool.stats();
        println!("{name}: {s}");
        assert_eq!(s.in_use, 0, "{name}: {s}");
        assert_conserved(pool, counts, 0);
        let mut reachable = Vec::new();
        while let Some(g) = pool.try_get() {
            reachable.push(g);
        }
        let after = pool.stats();
        assert_eq!(
            after.idle, 0,
            "{name}: every idle object reachable: {after}"
        );
        assert_eq!(counts.alive(), reachable.len() as u64, "{name}: {after}");
        if matches!(*name, "capped" | "striped") {
            let threshold = (IDLE_BYTES / 8).max(1);
            let bound = (IDLE_BYTES + (workers - 1) * (threshold + MAX_LEN * 8)) as u64;
            assert!(
                s.idle_bytes <= bound,
                "{name}: {} > {bound}: {s}",
                s.idle_bytes
            );
            let bytes: u64 = reachable.iter().map(|g| g.data.capacity() as u64 * 8).sum();
            assert!(bytes <= s.idle_bytes, "{name}: {bytes} bytes: {s}");
            assert_eq!(after.idle_bytes, 0, "{name}: {after}");
        }
    }
    let s = shared.pool.stats();
    println!("pool: {s}");
    assert_buffers_counted(&s);
    assert_eq!(s.total().in_use, 0, "{s}");
    assert_eq!(s.allocated_memory, s.idle_memory, "{s}");
    assert_eq!(s.idle_memory, s.accounted_idle_memory, "{s}");
    let threshold = (IDLE_MEMORY / 8).max(2 * MAX_CAPACITY);
    let bound = (IDLE_MEMORY + (workers - 1) * (threshold + MAX_CAPACITY)) as u64;
    assert!(s.idle_memory <= bound, "{} > {bound}: {s}", s.idle_memory);
    shared.pool.trim();
    assert_eq!(
        shared.pool.stats().allocated_memory,
        0,
        "every buffer reachable"
    );
}
