//! Striped mode: objects live in per-CPU stripes that every thread reaches,
//! so nothing waits with a thread that went idle, parked or migrated; and the
//! same for prefilled objects in both modes.

mod common;

use std::sync::mpsc;
use std::sync::{Arc, Barrier};
use std::thread;

use common::{Counted, Counts, Rng, assert_conserved, builder, drain_reachable};
use recycler_core::buffer::BufferPool;
use recycler_core::{Recycler, RecyclerBuilder};

fn striped(counts: &Arc<Counts>) -> Recycler<Counted> {
    builder(counts).striped(4).build().unwrap()
}

/// Spawns a thread that takes `n` objects, releases them and then parks for
/// ever (never unparked, never exiting while the test runs; a spurious
/// wake-up parks again); returns once the objects are released.
fn take_release_and_park(pool: &Arc<Recycler<Counted>>, n: usize) -> thread::JoinHandle<()> {
    let (done_tx, done_rx) = mpsc::channel();
    let pool = Arc::clone(pool);
    let parked = thread::spawn(move || {
        let held: Vec<_> = (0..n).map(|_| pool.get_owned()).collect();
        drop(held);
        done_tx.send(()).unwrap();
        loop {
            thread::park();
        }
    });
    done_rx.recv().unwrap();
    parked
}

#[test]
fn a_parked_thread_strands_nothing() {
    let counts = Counts::new();
    let pool = Arc::new(striped(&counts));
    let parked = take_release_and_park(&pool, 10_000);
    let s = pool.stats();
    assert_eq!((s.created, s.idle, s.in_use), (10_000, 10_000, 0), "{s}");
    // Every one of them is reachable from this thread.
    assert_eq!(drain_reachable(&pool), 10_000);
    assert_eq!(counts.made(), 10_000, "nothing made to replace them");
    assert_conserved(&pool, &counts, 0);
    drop(parked); // detached; it stays parked until the process ends
}

#[test]
fn the_same_parked_thread_strands_its_cache_in_per_thread_mode() {
    // What striped mode is for: in the default mode, the parked thread's
    // cache keeps what it holds (up to `max_capacity_per_thread`), and only
    // its spills reach the depot.
    let counts = Counts::new();
    let pool = Arc::new(builder(&counts).build().unwrap());
    let _parked = take_release_and_park(&pool, 10_000);
    let reachable = drain_reachable(&pool);
    assert!(
        reachable <= 10_000 - 4000,
        "the parked thread's cache keeps up to 4096: {reachable} reachable"
    );
}

#[test]
fn conservation_under_migration() {
    const THREADS: usize = 4;
    const OPS: usize = 20_000;
    let counts = Counts::new();
    let pool = striped(&counts);
    let barrier = Barrier::new(THREADS);
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..THREADS).map(|_| mpsc::channel()).unzip();
    thread::scope(|s| {
        let mut handles = Vec::new();
        for (t, rx) in rxs.into_iter().enumerate() {
            let (pool, barrier, txs) = (&pool, &barrier, txs.clone());
            handles.push(s.spawn(move || {
                let mut rng = Rng(0x9E37_79B9 + t as u64);
                let mut held = Vec::new();
                barrier.wait();
                for _ in 0..OPS {
                    match rng.next() % 4 {
                        0 | 1 => held.push(pool.get()),
                        2 => drop(held.pop()),
                        _ => {
                            // Hand a guard to another thread, which drops it.
                            if let Some(g) = held.pop() {
                                let to = (rng.next() as usize) % THREADS;
                                let _ = txs[to].send(g);
                            }
                        }
                    }
                    while let Ok(g) = rx.try_recv() {
                        drop(g);
                    }
                }
                drop(held);
                barrier.wait();
                while let Ok(g) = rx.try_recv() {
                    drop(g);
                }
            }));
        }
        drop(txs);
        handles.into_iter().for_each(|h| h.join().unwrap());
    });
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert_conserved(&pool, &counts, 0);
    assert_eq!(
        drain_reachable(&pool),
        s.idle,
        "every idle object reachable"
    );
}

/// Many tokio tasks take an object, yield (and may move to another worker),
/// and release it wherever they are; afterwards the books balance, and in
/// striped mode every idle object is reachable from any worker.
fn tokio_tasks(configure: fn(RecyclerBuilder<Counted>) -> RecyclerBuilder<Counted>, striped: bool) {
    let counts = Counts::new();
    let pool = Arc::new(configure(builder(&counts)).build().unwrap());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(4)
        .build()
        .unwrap();
    rt.block_on(async {
        let tasks: Vec<_> = (0..200)
            .map(|i| {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move {
                    for _ in 0..50 {
                        let mut g = pool.get_owned();
                        g.data.push(i);
                        tokio::task::yield_now().await;
                        drop(g);
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.unwrap();
        }
    });
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert_conserved(&pool, &counts, 0);
    if striped {
        // From a worker thread: every idle object, and nothing new.
        let made = counts.made();
        let pool2 = Arc::clone(&pool);
        let reachable = rt
            .block_on(rt.spawn(async move { drain_reachable(&pool2) }))
            .unwrap();
        assert_eq!(reachable, s.idle, "{s}");
        assert_eq!(counts.made(), made);
    }
    drop(rt);
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn tokio_tasks_per_thread_mode() {
    tokio_tasks(|b| b, false);
}

#[test]
fn tokio_tasks_striped_mode() {
    tokio_tasks(|b| b.striped(0), true);
}

#[test]
fn prefill_is_reachable_from_tokio_workers_in_both_modes() {
    for striped in [false, true] {
        let counts = Counts::new();
        let mut b = builder(&counts).depot_capacity(4096);
        if striped {
            b = b.striped(0).max_capacity_per_thread(4096);
        }
        let pool = Arc::new(b.build().unwrap());
        assert_eq!(pool.prefill(2000), 2000);
        let s = pool.stats();
        assert_eq!((s.created, s.idle, s.gets), (2000, 2000, 0), "{s}");
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .build()
            .unwrap();
        let found = rt.block_on(async {
            let mut found = 0;
            for _ in 0..4 {
                let pool = Arc::clone(&pool);
                found += tokio::spawn(async move {
                    let mut held = Vec::new();
                    while held.len() < 500 {
                        match pool.try_get() {
                            Some(g) => held.push(g),
                            None => break,
                        }
                    }
                    held.len()
                })
                .await
                .unwrap();
            }
            found
        });
        assert_eq!(found, 2000, "striped {striped}: {}", pool.stats());
        assert_eq!(counts.made(), 2000);
        drop(rt);
        assert_conserved(&pool, &counts, 0);
    }
}

#[test]
fn prefill_stops_at_the_limits() {
    let counts = Counts::new();
    let pool = builder(&counts).depot_capacity(10).build().unwrap();
    assert_eq!(pool.prefill(25), 10);
    assert_eq!(pool.prefill(1), 0);
    let striped = builder(&counts)
        .striped(2)
        .max_capacity_per_thread(3)
        .build()
        .unwrap();
    assert_eq!(striped.prefill(25), 6, "two stripes of three");
    let capped_counts = Counts::new();
    let capped = builder(&capped_counts).max_idle_bytes(0).build().unwrap();
    // `Counted` retains 32 bytes (4 words of capacity): none fits a 0 cap;
    // the one made to find out is counted as made and dropped.
    assert_eq!(capped.prefill(5), 0);
    let s = capped.stats();
    assert_eq!((s.created, s.dropped, s.idle), (1, 1, 0), "{s}");
    assert_conserved(&capped, &capped_counts, 0);
    let off = builder(&counts).max_capacity_per_thread(0).build().unwrap();
    assert_eq!(off.prefill(5), 0);
}

#[test]
fn striped_buffer_pool_reaches_buffers_released_anywhere() {
    let pool = BufferPool::builder().striped(2).build().unwrap();
    let bufs: Vec<_> = (0..40).map(|_| pool.acquire(5000)).collect();
    thread::scope(|s| {
        s.spawn(move || drop(bufs));
    });
    let again: Vec<_> = (0..40).map(|_| pool.try_acquire(8192).unwrap()).collect();
    let s = pool.stats();
    assert_eq!(s.buckets[1].non_pooled, 40, "{s}");
    assert_eq!(s.buckets[1].pooled, 40, "every one found again: {s}");
    assert_eq!(s.allocated_memory, 40 * 8192);
    drop(again);
}

/// A striped pool's prefill fills the stripes, which its acquires take
/// from (they never look at the bucket's depot): another thread's acquires
/// are pooled hits, and `trim` frees what is left. Under an idle cap too,
/// with the count exact.
#[test]
fn striped_buffer_pool_prefill_is_found_by_other_threads() {
    for cap in [None, Some(1 << 20)] {
        let mut b = BufferPool::builder().striped(2).max_idle_per_thread(8);
        if let Some(cap) = cap {
            b = b.max_idle_memory(cap);
        }
        let pool = b.build().unwrap();
        assert_eq!(pool.prefill(5000, 100).unwrap(), 16, "two stripes of 8");
        let s = pool.stats();
        assert_eq!(
            (s.buckets[1].idle, s.allocated_memory),
            (16, 16 * 8192),
            "{s}"
        );
        let held = thread::scope(|s| {
            s.spawn(|| {
                (0..10)
                    .map(|_| pool.try_acquire_pooled(8192))
                    .collect::<Vec<_>>()
            })
            .join()
            .unwrap()
        });
        assert!(held.iter().all(Option::is_some), "{}", pool.stats());
        let s = pool.stats();
        let b = s.buckets[1];
        assert_eq!(
            (b.acquires, b.pooled, b.in_use, b.idle),
            (10, 10, 10, 6),
            "{s}"
        );
        assert_eq!(b.hit_ratio(), 1.0, "{s}");
        if cap.is_some() {
            assert_eq!(s.accounted_idle_memory, 6 * 8192, "{s}");
        }
        common::assert_buffers_counted(&s);
        pool.trim();
        let s = pool.stats();
        assert_eq!(
            (s.buckets[1].idle, s.allocated_memory),
            (0, 10 * 8192),
            "{s}"
        );
        drop(held);
        pool.trim();
        let s = pool.stats();
        assert_eq!(s.allocated_memory, 0, "every buffer reachable: {s}");
        assert_eq!(s.accounted_idle_memory, 0, "{s}");
        common::assert_buffers_counted(&s);
    }
}
