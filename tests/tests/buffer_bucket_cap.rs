//! `BufferPoolBuilder::max_idle_per_bucket` (Jetty's `maxBucketSize`): a cap
//! on the buffers idle in one bucket, across all threads. With one releasing
//! thread it holds exactly; with `N` it may be exceeded by at most
//! `(N - 1) × (max(n / 8, 2) + 1)` buffers; other buckets are untouched; the
//! buffers a release over it frees are counted as removes, and the books
//! balance through trim, thread exit, prefill, foreign releases and waits at
//! a memory limit.

mod common;

use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::{Rng, assert_buffers_counted};
use recycler_core::buffer::{BufferPool, BufferPoolStats, OwnedPooledBuf};

const KIB: usize = 1024;

/// The books balance, and with every thread quiet the account agrees with
/// the buckets' idle counts.
fn assert_quiet_books(s: &BufferPoolStats) {
    assert_buffers_counted(s);
    assert_eq!(s.idle_memory, s.accounted_idle_memory, "{s}");
    for b in &s.buckets {
        assert_eq!(b.acquires, b.pooled + b.non_pooled, "{s}");
    }
}

/// The most buffers a bucket capped at `n` keeps idle with `threads`
/// threads releasing into it.
fn bound(n: usize, threads: usize) -> u64 {
    (n + (threads - 1) * ((n / 8).max(2) + 1)) as u64
}

/// Acquires `count` buffers of `capacity` on this thread, then drops them.
fn churn(pool: &BufferPool, capacity: usize, count: usize) {
    let held: Vec<_> = (0..count).map(|_| pool.acquire(capacity)).collect();
    drop(held);
}

#[test]
fn one_thread_keeps_exactly_n_per_bucket_and_other_buckets_are_untouched() {
    let pool = BufferPool::builder()
        .max_idle_per_bucket(5)
        .build()
        .unwrap();
    churn(&pool, 4 * KIB, 40);
    churn(&pool, 8 * KIB, 3);
    churn(&pool, 64 * KIB, 9);
    let s = pool.stats();
    assert_eq!(s.max_idle_per_bucket, Some(5), "{s}");
    assert_eq!((s.buckets[0].idle, s.buckets[0].removes), (5, 35), "{s}");
    assert_eq!((s.buckets[1].idle, s.buckets[1].removes), (3, 0), "{s}");
    assert_eq!((s.buckets[15].idle, s.buckets[15].removes), (5, 4), "{s}");
    assert_eq!(
        s.total().evicts,
        0,
        "the released buffer goes, not others: {s}"
    );
    assert_eq!(s.idle_memory, (5 * 4 + 3 * 8 + 5 * 64) as u64 * KIB as u64);
    assert!(s.to_string().contains("at most 5 idle per bucket"), "{s}");
    assert_quiet_books(&s);
    // Again, mostly hits now: the same 5 at most.
    for _ in 0..50 {
        churn(&pool, 4 * KIB, 7);
    }
    let s = pool.stats();
    assert_eq!(s.buckets[0].idle, 5, "{s}");
    assert_quiet_books(&s);
}

#[test]
fn the_cap_counts_the_depot_and_the_inboxes() {
    // Two buffers per thread's cache: the rest spill to the depot, or go to
    // their owner's inbox when released on another thread.
    let pool = Arc::new(
        BufferPool::builder()
            .max_idle_per_thread(2)
            .max_idle_per_bucket(6)
            .build()
            .unwrap(),
    );
    churn(&pool, 4 * KIB, 20);
    assert_eq!(pool.stats().buckets[0].idle, 6);
    let bufs: Vec<OwnedPooledBuf> = (0..20).map(|_| pool.acquire_owned(4 * KIB)).collect();
    thread::spawn(move || drop(bufs)).join().unwrap();
    let s = pool.stats();
    assert_eq!(s.buckets[0].idle, 6, "released on one other thread: {s}");
    assert_quiet_books(&s);
    churn(&pool, 4 * KIB, 20);
    let s = pool.stats();
    assert_eq!(s.buckets[0].idle, 6, "{s}");
    assert_quiet_books(&s);
}

#[test]
fn zero_keeps_nothing_idle() {
    let pool = BufferPool::builder()
        .max_idle_per_bucket(0)
        .build()
        .unwrap();
    churn(&pool, 4 * KIB, 3);
    churn(&pool, 100, 3);
    let s = pool.stats();
    assert_eq!((s.idle_memory, s.allocated_memory), (0, 0), "{s}");
    assert_eq!(
        (s.buckets[0].removes, s.buckets[0].non_pooled),
        (6, 6),
        "{s}"
    );
    assert_quiet_books(&s);
}

#[test]
fn usize_max_pools_everything() {
    let pool = BufferPool::builder()
        .max_idle_per_thread(1000)
        .max_idle_per_bucket(usize::MAX)
        .build()
        .unwrap();
    churn(&pool, 64 * KIB, 100);
    let s = pool.stats();
    assert_eq!((s.buckets[15].idle, s.buckets[15].removes), (100, 0), "{s}");
    assert_eq!(s.max_idle_per_bucket, Some(usize::MAX as u64), "{s}");
    assert_quiet_books(&s);
}

/// The slack of `max_idle_memory` under the bucket cap too, for `threads`
/// releasing threads: each one's unpublished deltas, one per bucket below
/// `max(n × capacity / 8, 2 × capacity)`, which the pool's account does not
/// see (`docs/buffers.md`, "The per-bucket cap"), and a buffer in flight
/// per other thread.
fn both_caps_slack(n: usize, capacities: &[usize], threads: usize) -> u64 {
    let deltas: usize = capacities.iter().map(|&c| (n * c / 8).max(2 * c)).sum();
    (threads * deltas + (threads - 1) * capacities.iter().max().unwrap()) as u64
}

/// Both caps at once: each bucket keeps at most `n` (exact on one thread),
/// all of them at most `max_idle_memory` and the slack above; a release
/// over the memory cap evicts other buckets' buffers, one over a bucket's
/// cap is freed; the books balance.
#[test]
fn with_max_idle_memory_both_caps_hold() {
    const N: usize = 4;
    const CAP: usize = 48 * KIB;
    let sizes = [4 * KIB, 8 * KIB, 12 * KIB, 16 * KIB];
    let pool = BufferPool::builder()
        .max_idle_memory(CAP)
        .max_idle_per_bucket(N)
        .build()
        .unwrap();
    for round in 0..3 {
        for &size in &sizes {
            churn(&pool, size, 10);
            let s = pool.stats();
            for b in &s.buckets {
                assert!(b.idle <= N as u64, "round {round}: {s}");
            }
            let bound = CAP as u64 + both_caps_slack(N, &sizes, 1);
            assert!(s.idle_memory <= bound, "{} > {bound}: {s}", s.idle_memory);
            assert_quiet_books(&s);
        }
    }
    let s = pool.stats();
    let t = s.total();
    assert!(t.evicts > 0, "the memory cap evicted: {s}");
    assert!(t.removes > 0, "the bucket cap freed releases: {s}");
    // Each size in turn evicted the others (the memory cap is a third of
    // the buckets' caps together); one size again and again is served.
    churn(&pool, 16 * KIB, 3);
    let before = pool.stats().buckets[3].pooled;
    churn(&pool, 16 * KIB, 3);
    let s = pool.stats();
    assert_eq!(s.buckets[3].pooled, before + 3, "{s}");
    assert_eq!(
        (s.max_idle_per_bucket, s.max_idle_memory),
        (Some(N as u64), Some(CAP as u64))
    );
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.idle_memory, s.accounted_idle_memory), (0, 0), "{s}");
}

/// Both caps, four threads releasing into four buckets at once.
#[test]
fn with_max_idle_memory_several_threads_stay_within_the_bounds() {
    const THREADS: usize = 4;
    const N: usize = 6;
    const CAP: usize = 64 * KIB;
    let sizes = [4 * KIB, 8 * KIB, 12 * KIB, 16 * KIB];
    let pool = Arc::new(
        BufferPool::builder()
            .max_idle_memory(CAP)
            .max_idle_per_bucket(N)
            .build()
            .unwrap(),
    );
    let start = Arc::new(Barrier::new(THREADS));
    let done = Arc::new(Barrier::new(THREADS + 1));
    let leave = Arc::new(Barrier::new(THREADS + 1));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (pool, start, done, leave) = (
                Arc::clone(&pool),
                Arc::clone(&start),
                Arc::clone(&done),
                Arc::clone(&leave),
            );
            thread::spawn(move || {
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1));
                start.wait();
                for _ in 0..300 {
                    let size = sizes[(rng.next() % sizes.len() as u64) as usize];
                    churn(&pool, size, 1 + (rng.next() % 8) as usize);
                }
                // Alive while the main thread reads: their deltas count.
                done.wait();
                leave.wait();
            })
        })
        .collect();
    done.wait();
    let s = pool.stats();
    for b in &s.buckets {
        assert!(b.idle <= bound(N, THREADS), "{s}");
    }
    let cap = CAP as u64 + both_caps_slack(N, &sizes, THREADS);
    assert!(s.idle_memory <= cap, "{} > {cap}: {s}", s.idle_memory);
    assert_quiet_books(&s);
    leave.wait();
    for h in handles {
        h.join().unwrap();
    }
    assert_quiet_books(&pool.stats());
}

#[test]
fn several_threads_keep_at_most_the_bound() {
    const THREADS: usize = 4;
    const N: usize = 12;
    let pool = Arc::new(
        BufferPool::builder()
            .max_capacity(16 * KIB)
            .max_idle_per_bucket(N)
            .build()
            .unwrap(),
    );
    let start = Arc::new(Barrier::new(THREADS + 1));
    let done = Arc::new(Barrier::new(THREADS + 1));
    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let (pool, start, done) = (Arc::clone(&pool), Arc::clone(&start), Arc::clone(&done));
            thread::spawn(move || {
                let mut rng = Rng(0x5EED + t as u64);
                for _ in 0..4 {
                    start.wait();
                    for _ in 0..300 {
                        let k = 1 + (rng.next() % 24) as usize;
                        let cap = 4 * KIB * (1 + (rng.next() % 4) as usize);
                        churn(&pool, cap, k);
                    }
                    done.wait(); // quiet: the main thread checks
                }
            })
        })
        .collect();
    for _ in 0..4 {
        start.wait();
        done.wait();
        let s = pool.stats();
        assert_buffers_counted(&s);
        for b in &s.buckets {
            assert!(
                b.idle <= bound(N, THREADS),
                "{} above {}: {s}",
                b.idle,
                bound(N, THREADS)
            );
        }
    }
    for w in workers {
        w.join().unwrap();
    }
    // Every thread has exited (its delta published): the account is exact.
    let s = pool.stats();
    assert_quiet_books(&s);
    for b in &s.buckets {
        assert!(b.idle <= bound(N, THREADS), "{s}");
        assert!(b.removes > 0, "each bucket went over its cap: {s}");
    }
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.allocated_memory, s.accounted_idle_memory), (0, 0), "{s}");
    assert_quiet_books(&s);
}

#[test]
fn trim_thread_exit_and_prefill_balance() {
    let pool = Arc::new(
        BufferPool::builder()
            .max_idle_per_bucket(4)
            .build()
            .unwrap(),
    );
    // A thread leaves 3 idle and exits (its exit publishes its delta).
    let p = Arc::clone(&pool);
    thread::spawn(move || churn(&p, 4 * KIB, 3)).join().unwrap();
    let s = pool.stats();
    assert_eq!(
        (s.buckets[0].idle, s.accounted_idle_memory),
        (3, 12 * KIB as u64),
        "{s}"
    );
    // Room for one more, counted with what the exited thread left.
    assert_eq!(pool.prefill(4 * KIB, 10), Ok(1));
    churn(&pool, 4 * KIB, 10);
    let s = pool.stats();
    assert_eq!((s.buckets[0].idle, s.buckets[0].prefilled), (4, 1), "{s}");
    assert_quiet_books(&s);
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.idle_memory, s.accounted_idle_memory), (0, 0), "{s}");
    // After the trim the whole cap is free again.
    assert_eq!(pool.prefill(4 * KIB, 10), Ok(4));
    let s = pool.stats();
    assert_eq!(s.buckets[0].idle, 4, "{s}");
    assert_quiet_books(&s);
}

/// Two threads release into the 4 KiB bucket here: the test's, which gives
/// back the four buffers that filled the limit, and the waiter's, which
/// gives back the one it was granted. The cap is exact with one releasing
/// thread and within `bound(1, 2)` with two ("The per-bucket cap"), so the
/// waiter gives its buffer back only once the test's releases are done:
/// the release of those that went over the cap published the test
/// thread's delta, and the waiter's release sees it. (The test used to let
/// the two race: when the waiter's release came before the test's second,
/// each thread saw only its own unpublished delta and both kept one, two
/// idle against a cap of one, within the documented bound but not the
/// exact figure asserted; about 1 run in 60.)
#[test]
fn waiters_at_a_memory_limit_balance_with_the_cap_on() {
    let pool = Arc::new(
        BufferPool::builder()
            .memory_limit(16 * KIB)
            .max_idle_per_bucket(1)
            .build()
            .unwrap(),
    );
    let held: Vec<OwnedPooledBuf> = (0..4).map(|_| pool.acquire_owned(4 * KIB)).collect();
    let p = Arc::clone(&pool);
    let (released_tx, released_rx) = std::sync::mpsc::channel::<()>();
    let waiter = thread::spawn(move || {
        // Waits until a buffer comes back; served by a hand-over or by the
        // memory its release frees.
        let b = p.acquire_timeout(4 * KIB, Duration::from_secs(10)).unwrap();
        released_rx.recv().unwrap();
        drop(b);
        let b = p.acquire_timeout(8 * KIB, Duration::from_secs(10)).unwrap();
        drop(b);
    });
    thread::sleep(Duration::from_millis(20));
    drop(held);
    released_tx.send(()).unwrap();
    waiter.join().unwrap();
    let s = pool.stats();
    assert!(s.allocated_memory <= 16 * KIB as u64, "{s}");
    assert!(s.buckets[0].idle <= 1 && s.buckets[1].idle <= 1, "{s}");
    assert_quiet_books(&s);
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.allocated_memory, s.accounted_idle_memory), (0, 0), "{s}");
    assert_quiet_books(&s);
}

#[test]
fn striped_mode_holds_the_cap() {
    let pool = Arc::new(
        BufferPool::builder()
            .striped(4)
            .max_idle_per_bucket(3)
            .build()
            .unwrap(),
    );
    churn(&pool, 4 * KIB, 10);
    let p = Arc::clone(&pool);
    thread::spawn(move || churn(&p, 4 * KIB, 10))
        .join()
        .unwrap();
    let s = pool.stats();
    // Striped releases publish at once: exact with any number of threads.
    assert_eq!(s.buckets[0].idle, 3, "{s}");
    assert_quiet_books(&s);
}
