//! Buffers a server can lean on at the memory limit: the methods that
//! cannot fail (`acquire`, `BufMut`, `io::Write`, `Extend`, the `Vec`-like
//! growth, tokio's `read_buf`) never panic there, but are served as counted
//! overdrafts, outside the limit, never pooled; `hard_limit(true)` makes
//! `io::Write` fail and counts the overdrafts as violations;
//! `reserve_async` waits for a growth's memory as `acquire_async` waits for
//! a buffer's; and the statistics show who waits, how often, and how many
//! waits gave up.

#![cfg(not(loom))]

mod common;

use std::future::Future;
use std::io::{self, Write};
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::BufMut;
use common::assert_buffers_counted;
use recycler_core::AcquireError;
use recycler_core::buffer::{BufferPool, BufferPoolStats, PooledBuf};

const KIB: usize = 1024;

fn limited(limit: usize) -> BufferPool {
    BufferPool::builder().memory_limit(limit).build().unwrap()
}

/// The memory of the buffers in use, as far as the books tell: nothing
/// once none is in use.
fn assert_quiet(s: &BufferPoolStats) {
    assert_buffers_counted(s);
    assert_eq!(s.total().in_use, 0, "{s}");
    assert_eq!(s.overdraft_memory, 0, "{s}");
    assert_eq!(s.allocated_memory, s.idle_memory, "{s}");
}

// --- Overdrafts ----------------------------------------------------------------

/// The report's case: fifty writer tasks coalesce responses with
/// `put_slice` into buffers from a pool with a small limit, inside a shared
/// store's lock. Before, every one panicked ("pooled buffer cannot grow"),
/// poisoning the lock; now the growths past the limit are overdrafts.
#[test]
fn fifty_tasks_put_slice_at_a_small_limit_never_panic_and_the_books_balance() {
    const TASKS: usize = 50;
    const LIMIT: usize = 64 * KIB;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let pool = Arc::new(limited(LIMIT));
    let store = Arc::new(Mutex::new(Vec::<usize>::new()));
    rt.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let pool = Arc::clone(&pool);
                let store = Arc::clone(&store);
                tokio::spawn(async move {
                    for round in 0..20 {
                        let mut out = pool.acquire_owned(1000);
                        for part in 0..(4 + (t + round) % 9) {
                            out.put_slice(&[part as u8; 3000]);
                            tokio::task::yield_now().await;
                        }
                        let mut held = store.lock().unwrap();
                        // Coalescing under the lock, as the server did.
                        out.put_slice(b"\r\n");
                        held.push(out.len());
                        drop(held);
                    }
                })
            })
            .collect();
        for task in tasks {
            task.await.expect("no writer panics");
        }
    });
    drop(rt);
    assert!(!store.is_poisoned());
    assert_eq!(store.lock().unwrap().len(), TASKS * 20);
    let s = pool.stats();
    assert!(s.overdrafts > 0, "the limit was reached: {s}");
    assert!(s.allocated_memory <= LIMIT as u64, "{s}");
    assert_eq!(s.limit_violations, 0, "not a hard limit: {s}");
    assert_quiet(&s);
    let total = s.total();
    assert_eq!(total.acquires, total.pooled + total.non_pooled, "{s}");
}

/// Many tasks that grow their buffers with `reserve_async` at a small
/// limit, on two workers: none overdraws, all finish (some after waiting),
/// the limit holds, and the books balance. A timeout on each wait keeps a
/// wait for memory idle in another worker's cache from hanging the test;
/// those that give up count as cancelled.
#[test]
fn many_tasks_reserve_async_at_a_small_limit_never_overdraw() {
    const TASKS: usize = 32;
    const LIMIT: usize = 96 * KIB;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let pool = Arc::new(
        BufferPool::builder()
            .memory_limit(LIMIT)
            .max_idle_per_thread(1)
            .build()
            .unwrap(),
    );
    let done = rt.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move {
                    let mut served = 0;
                    for round in 0..10 {
                        let Ok(Ok(mut buf)) = tokio::time::timeout(
                            Duration::from_millis(200),
                            pool.acquire_owned_async(4 * KIB),
                        )
                        .await
                        else {
                            continue;
                        };
                        let want = 4 * KIB * (1 + (t + round) % 4);
                        let grown = tokio::time::timeout(
                            Duration::from_millis(200),
                            buf.reserve_async(want),
                        )
                        .await;
                        if let Ok(Ok(())) = grown {
                            assert!(buf.capacity() >= want);
                            buf.put_slice(&vec![t as u8; want]); // room: no growth
                            served += 1;
                        }
                        tokio::task::yield_now().await;
                    }
                    served
                })
            })
            .collect();
        let mut done = 0;
        for task in tasks {
            done += task.await.expect("no task panics");
        }
        done
    });
    drop(rt);
    let s = pool.stats();
    assert!(done > 0, "{s}");
    assert_eq!((s.overdrafts, s.overdraft_memory), (0, 0), "{s}");
    assert!(s.allocated_memory <= LIMIT as u64, "{s}");
    let total = s.total();
    assert_eq!(total.waiting, 0, "{s}");
    assert!(
        total.waits > 0,
        "32 tasks of up to 20 KiB each, 96 KiB: some wait: {s}"
    );
    assert_eq!(total.timeouts, 0, "only async waits: {s}");
    assert_quiet(&s);
}

/// The same writers with `hard_limit(true)`, writing what `remaining_mut`
/// says there is room for, claimed with `try_reserve` (another thread may
/// take it first): no panic, and the limit holds, no overdraft at all.
#[test]
fn a_hard_limit_never_panics_either() {
    let pool = Arc::new(
        BufferPool::builder()
            .memory_limit(16 * KIB)
            .hard_limit(true)
            .build()
            .unwrap(),
    );
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let pool = Arc::clone(&pool);
            std::thread::spawn(move || {
                let mut written = 0;
                for _ in 0..50 {
                    let Ok(mut out) = pool.try_acquire_owned(1) else {
                        continue;
                    };
                    for part in [1, 2] {
                        // What `remaining_mut` reports may be taken by
                        // another thread before the write: claim it.
                        let n = out.remaining_mut().min(10_000);
                        if out.try_reserve(n).is_ok() {
                            out.put_slice(&vec![part; n]);
                            written += n;
                        }
                    }
                }
                written
            })
        })
        .collect();
    let written: usize = writers
        .into_iter()
        .map(|w| w.join().expect("no writer panics"))
        .sum();
    let s = pool.stats();
    assert!(written > 0, "{s}");
    assert_eq!((s.overdrafts, s.limit_violations), (0, 0), "{s}");
    assert_quiet(&s);
}

/// tokio's `read_buf` into a full buffer at the limit goes through
/// `BufMut::chunk_mut`, which grows it: as an overdraft.
#[test]
fn read_buf_into_a_full_buffer_at_the_limit_grows_as_an_overdraft() {
    use tokio::io::AsyncReadExt;
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let pool = Arc::new(limited(8 * KIB));
    let other = pool.acquire_owned(4 * KIB);
    let mut buf = pool.acquire_owned(4 * KIB);
    buf.resize(4 * KIB, 1); // full, and the limit is full too
    let data = vec![2u8; 3000];
    let n = rt.block_on(async {
        let mut src: &[u8] = &data;
        src.read_buf(&mut buf).await.unwrap()
    });
    assert_eq!(n, 3000);
    assert_eq!(buf.len(), 4 * KIB + 3000);
    assert!(buf[4 * KIB..].iter().all(|&b| b == 2));
    let s = pool.stats();
    assert_eq!(
        (s.overdrafts, s.overdraft_memory),
        (1, 4 * KIB as u64),
        "{s}"
    );
    assert_eq!(s.allocated_memory, 8 * KIB as u64, "{s}");
    drop((buf, other));
    let s = pool.stats();
    assert_quiet(&s);
    assert_eq!(s.buckets[0].idle, 1, "the other buffer is pooled: {s}");
    assert_eq!(s.buckets[1].idle, 0, "the overdrawn one is not: {s}");
}

/// Plain `acquire` at the limit: an overdraft, a non-pooled acquire of its
/// bucket, freed (a remove) when released, never in a cache; the owned
/// form too.
#[test]
fn plain_acquire_at_the_limit_is_an_overdraft_freed_when_released() {
    let pool = Arc::new(limited(8 * KIB));
    let held = pool.acquire(8 * KIB);
    assert!(pool.try_acquire(1).is_err(), "the fallible one fails");
    let mut over = pool.acquire(100);
    let owned = pool.acquire_owned(100_000); // oversize
    over.extend_from_slice(b"still a buffer");
    assert_eq!((over.capacity(), owned.capacity()), (4 * KIB, 100_000));
    let s = pool.stats();
    assert_eq!(s.overdrafts, 2, "{s}");
    assert_eq!(s.overdraft_memory, (4 * KIB + 100_000) as u64, "{s}");
    assert_eq!(
        s.allocated_memory,
        8 * KIB as u64,
        "the ledger is untouched: {s}"
    );
    assert_eq!(s.buckets[0].non_pooled, 1, "{s}");
    assert_eq!(s.oversize.non_pooled, 1, "{s}");
    assert!(s.to_string().contains("overdrafts 2"), "{s}");
    drop(over);
    drop(owned);
    let s = pool.stats();
    assert_eq!((s.buckets[0].releases, s.buckets[0].removes), (1, 1), "{s}");
    assert_eq!((s.buckets[0].idle, s.overdraft_memory), (0, 0), "{s}");
    // The next acquire of the bucket finds no 4 KiB buffer: the overdraft
    // was not pooled. (The limit is full of `held`, idle now, so it takes
    // that larger idle buffer, shrunk to 4 KiB, rather than evict it to
    // allocate 4 KiB: `docs/buffers.md`, "Serving from larger buffers at
    // the limit".)
    drop(held);
    let again = pool.acquire(100);
    assert_eq!(again.capacity(), 4 * KIB);
    assert_eq!(pool.stats().buckets[1].pooled, 1, "a hit of its bucket");
    let s = pool.stats();
    assert_eq!(
        (s.buckets[0].pooled, s.buckets[0].non_pooled),
        (0, 1),
        "{s}"
    );
    drop(again);
    assert_quiet(&pool.stats());
}

/// A buffer whose first part is on the ledger and whose growth is an
/// overdraft frees exactly its charged bytes; a later growth with room is
/// charged again.
#[test]
fn a_buffer_partly_on_the_ledger_frees_exactly_its_charged_bytes() {
    let pool = limited(16 * KIB);
    let filler = pool.acquire(12 * KIB);
    let mut buf = pool.acquire(4 * KIB);
    buf.resize(4 * KIB, 7);
    buf.push(8); // 4 KiB to 8 KiB: no room, an overdraft of 4 KiB
    assert_eq!(buf.capacity(), 8 * KIB);
    let s = pool.stats();
    assert_eq!(
        (s.allocated_memory, s.overdraft_memory),
        (16 * KIB as u64, 4 * KIB as u64)
    );
    drop(filler);
    pool.trim();
    assert_eq!(pool.stats().allocated_memory, 4 * KIB as u64);
    buf.resize(9 * KIB, 9); // 8 KiB to 12 KiB (what it needs): 4 KiB more, with room
    assert_eq!(buf.capacity(), 12 * KIB);
    let s = pool.stats();
    assert_eq!(
        (s.allocated_memory, s.overdraft_memory),
        (8 * KIB as u64, 4 * KIB as u64),
        "{s}"
    );
    assert_eq!(s.overdrafts, 1, "{s}");
    assert!(buf[..4 * KIB].iter().all(|&b| b == 7) && buf[4 * KIB] == 8);
    drop(buf);
    let s = pool.stats();
    assert_quiet(&s);
    assert_eq!(s.allocated_memory, 0, "freed exactly what was charged: {s}");
    assert_eq!(s.bucket(12 * KIB).unwrap().idle, 0, "never pooled: {s}");
}

/// Every infallible write grows past the limit without a panic.
#[test]
fn every_infallible_write_grows_at_the_limit() {
    let pool = Arc::new(limited(4 * KIB));
    let mut a = pool.acquire(1);
    a.resize(4 * KIB, 0);
    a.push(1);
    let mut b = pool.acquire_owned(1);
    b.extend_from_slice(&[2; 5000]);
    let mut c = pool.acquire(1);
    c.extend((0..5000).map(|i| i as u8));
    let mut d = pool.acquire(1);
    d.extend(&[4u8; 5000]);
    let mut e = pool.acquire(1);
    e.write_all(&[5; 5000]).unwrap(); // no `hard_limit`: grows
    let mut f = pool.acquire(1);
    f.reserve(5000);
    let mut g = pool.acquire_owned(1);
    g.put_bytes(7, 5000);
    let mut h = pool.acquire(1);
    h.put_u64(8);
    h.put_slice(&[8; 5000]);
    for (buf, len) in [
        (&a, 4097),
        (&c, 5000),
        (&d, 5000),
        (&e, 5000),
        (&f, 0),
        (&h, 5008),
    ] {
        assert_eq!(buf.len(), len);
        assert!(buf.capacity() >= 8 * KIB);
    }
    assert_eq!((b.len(), g.len()), (5000, 5000));
    let s = pool.stats();
    assert!(s.overdrafts >= 8, "{s}");
    assert_eq!(s.allocated_memory, 4 * KIB as u64, "{s}");
    drop((a, b, c, d, e, f, g, h));
    assert_quiet(&pool.stats());
}

/// `try_reserve` keeps the limit hard: an error, and the buffer unchanged.
#[test]
fn try_reserve_fails_at_the_limit_and_leaves_the_buffer_unchanged() {
    let pool = limited(4 * KIB);
    let mut buf = pool.acquire(1);
    buf.extend_from_slice(b"abc");
    assert_eq!(
        buf.try_reserve(5000).unwrap_err(),
        AcquireError::LimitExceeded {
            requested: 5003,
            needed: 4 * KIB,
            allocated: 4 * KIB as u64,
            limit: 4 * KIB as u64
        }
    );
    assert_eq!((&buf[..], buf.capacity()), (&b"abc"[..], 4 * KIB));
    assert_eq!(pool.stats().overdrafts, 0);
}

/// `hard_limit(true)`: `io::Write` fails at the limit, the Vec-like
/// methods that cannot fail panic (issue 24: they overdrew), and an
/// acquire's overdraft is a violation.
#[test]
fn a_hard_limit_fails_io_write_and_counts_violations() {
    let pool = BufferPool::builder()
        .memory_limit(4 * KIB)
        .hard_limit(true)
        .build()
        .unwrap();
    let mut buf = pool.acquire(4 * KIB);
    buf.resize(4 * KIB, 1);
    let err = buf.write(b"x").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
    assert!(err.to_string().contains("`memory_limit` exceeded"), "{err}");
    assert_eq!(buf.len(), 4 * KIB, "unchanged");
    let pushed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| buf.push(2)));
    assert!(
        pushed.is_err(),
        "a write that cannot fail panics rather than pass the limit"
    );
    assert_eq!(buf.len(), 4 * KIB, "unchanged");
    // An acquire is no write: an overdraft, counted as a violation.
    let other = pool.acquire(1);
    let s = pool.stats();
    assert_eq!((s.overdrafts, s.limit_violations), (1, 1), "{s}");
    assert!(s.to_string().contains("limit violations 1"), "{s}");
    drop((buf, other));
    assert_quiet(&pool.stats());
}

/// A released overdraft frees no memory on the ledger, so it never serves
/// a waiter (nor is handed to one): the waiter waits for the real memory.
#[test]
fn a_released_overdraft_is_not_handed_to_a_waiter() {
    let pool = limited(4 * KIB);
    let held = pool.acquire(4 * KIB);
    let over = pool.acquire(4 * KIB);
    let mut cx = Context::from_waker(Waker::noop());
    let mut wait = pin!(pool.acquire_async(4 * KIB));
    assert!(wait.as_mut().poll(&mut cx).is_pending());
    drop(over);
    assert!(
        wait.as_mut().poll(&mut cx).is_pending(),
        "an overdraft is no grant"
    );
    let ptr = held.as_ptr();
    drop(held);
    let Poll::Ready(Ok(got)) = wait.as_mut().poll(&mut cx) else {
        panic!("served once the limit's memory is released");
    };
    assert_eq!(got.as_ptr(), ptr, "handed the pooled buffer itself");
    drop(got);
    assert_quiet(&pool.stats());
}

/// Without a limit nothing is ever an overdraft.
#[test]
fn no_limit_no_overdraft() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(1);
    buf.extend_from_slice(&[0; 100_000]);
    drop(buf);
    let s = pool.stats();
    assert_eq!(
        (s.overdrafts, s.overdraft_memory, s.limit_violations),
        (0, 0, 0)
    );
    assert!(!s.to_string().contains("overdraft"), "{s}");
}

// --- reserve_async ---------------------------------------------------------------

/// A growth waits for memory, is served by a release in another task, and
/// is counted as a wait in the bucket it grows to.
#[test]
fn reserve_async_waits_for_memory_and_is_served() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let pool = Arc::new(limited(16 * KIB));
    let held = pool.acquire_owned(12 * KIB);
    let mut buf = pool.acquire_owned(4 * KIB);
    buf.extend_from_slice(&[1; 4 * KIB]);
    rt.block_on(async {
        let grow = async {
            buf.reserve_async(100).await.unwrap();
            buf.extend_from_slice(&[2; 100]);
        };
        let release = async {
            tokio::time::sleep(Duration::from_millis(20)).await;
            assert_eq!(pool.stats().bucket(8 * KIB).unwrap().waiting, 1);
            drop(held);
        };
        tokio::join!(grow, release);
    });
    assert_eq!((buf.len(), buf.capacity()), (4 * KIB + 100, 8 * KIB));
    let s = pool.stats();
    let b = s.bucket(8 * KIB).unwrap();
    assert_eq!(
        (b.waits, b.waiting, b.timeouts, b.cancelled),
        (1, 0, 0, 0),
        "{s}"
    );
    assert_eq!(s.overdrafts, 0, "{s}");
    assert!(s.allocated_memory <= 16 * KIB as u64);
    drop(buf);
    let s = pool.stats();
    assert_buffers_counted(&s);
    assert_eq!(s.total().in_use, 0);
}

/// Dropped while it waits, a growth leaves the queue: the buffer is
/// unchanged, the waiter behind it is served, and it is counted cancelled.
#[test]
fn reserve_async_is_cancel_safe() {
    let pool = limited(12 * KIB);
    let held = pool.acquire(8 * KIB);
    let mut buf = pool.acquire(4 * KIB);
    buf.resize(4 * KIB, 3);
    let mut cx = Context::from_waker(Waker::noop());
    let mut other = pin!(pool.acquire_async(4 * KIB));
    {
        let mut grow = pin!(buf.reserve_async(1));
        assert!(grow.as_mut().poll(&mut cx).is_pending());
        assert!(
            other.as_mut().poll(&mut cx).is_pending(),
            "behind the growth"
        );
        let s = pool.stats();
        assert_eq!((s.buckets[0].waiting, s.buckets[1].waiting), (1, 1), "{s}");
        assert!(s.to_string().contains("waits 1 (waiting 1,"), "{s}");
    }
    assert_eq!((buf.len(), buf.capacity()), (4 * KIB, 4 * KIB), "unchanged");
    drop(held); // 8 KiB free: the acquire behind is served
    let Poll::Ready(Ok(got)) = other.as_mut().poll(&mut cx) else {
        panic!("served");
    };
    let s = pool.stats();
    let b = s.buckets[1];
    assert_eq!((b.waits, b.waiting, b.cancelled), (1, 0, 1), "{s}");
    drop((got, buf));
    assert_buffers_counted(&pool.stats());
}

/// Granted but dropped before it took its grant: the bytes go to the next
/// waiter.
#[test]
fn a_granted_growth_dropped_passes_its_memory_on() {
    let pool = limited(8 * KIB);
    let held = pool.acquire(4 * KIB);
    let mut buf = pool.acquire(4 * KIB);
    buf.resize(4 * KIB, 0);
    let mut cx = Context::from_waker(Waker::noop());
    let mut grow = Box::pin(buf.reserve_async(1));
    assert!(grow.as_mut().poll(&mut cx).is_pending());
    drop(held); // 4 KiB freed: granted to the growth
    assert_eq!(
        pool.stats().allocated_memory,
        8 * KIB as u64,
        "reserved for it"
    );
    drop(grow);
    assert_eq!(pool.stats().allocated_memory, 4 * KIB as u64, "given back");
    assert_eq!(buf.capacity(), 4 * KIB);
    drop(buf);
    assert_buffers_counted(&pool.stats());
}

/// A growth that could never fit fails at once; one with room is served
/// at once; without a limit it never waits.
#[test]
fn reserve_async_fails_at_once_when_it_can_never_fit() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let pool = limited(16 * KIB);
    let mut buf = pool.acquire(1);
    rt.block_on(async {
        let err = buf.reserve_async(40 * KIB).await.unwrap_err();
        assert!(matches!(err, AcquireError::LimitExceeded { .. }), "{err}");
        let err = buf.reserve_async(usize::MAX).await.unwrap_err();
        assert!(matches!(err, AcquireError::TooLarge { .. }), "{err}");
        buf.reserve_async(5000).await.unwrap();
        assert_eq!(buf.capacity(), 8 * KIB);
        buf.reserve_async(10).await.unwrap(); // room already
    });
    assert_eq!(pool.stats().total().waits, 0);
    let free = BufferPool::new();
    let mut big = free.acquire(1);
    rt.block_on(big.reserve_async(1 << 20)).unwrap();
    assert!(big.capacity() >= 1 << 20);
}

/// The future of `reserve_async` is `Send`, for spawned tasks.
#[test]
fn reserve_async_is_send() {
    fn send<F: Future + Send>(f: F) -> F {
        f
    }
    let pool = Arc::new(BufferPool::new());
    let mut buf = pool.acquire_owned(1);
    drop(send(buf.reserve_async(1)));
    let mut b: PooledBuf<'_> = pool.acquire(1);
    drop(send(b.reserve_async(1)));
}

// --- Waiting statistics ------------------------------------------------------------

/// Waiters now, waits, timeouts and cancellations, per bucket and in all.
#[test]
fn stats_show_waiting_timeouts_and_cancellations() {
    let pool = limited(8 * KIB);
    let held = pool.acquire(8 * KIB);
    // A blocking wait that gives up.
    assert!(
        pool.acquire_timeout(4 * KIB, Duration::from_millis(5))
            .is_err()
    );
    let s = pool.stats();
    let b = s.buckets[0];
    assert_eq!(
        (b.waits, b.waiting, b.timeouts, b.cancelled),
        (1, 0, 1, 0),
        "{s}"
    );
    // Async waits: one in the queue now, one cancelled, one oversize.
    let mut cx = Context::from_waker(Waker::noop());
    let mut a = pin!(pool.acquire_async(8 * KIB));
    assert!(a.as_mut().poll(&mut cx).is_pending());
    let mut gone = Box::pin(pool.acquire_async(4 * KIB));
    assert!(gone.as_mut().poll(&mut cx).is_pending());
    drop(gone);
    let s = pool.stats();
    assert_eq!((s.buckets[1].waiting, s.buckets[1].waits), (1, 1), "{s}");
    assert_eq!((s.buckets[0].waits, s.buckets[0].cancelled), (2, 1), "{s}");
    let total = s.total();
    assert_eq!(
        (total.waits, total.waiting, total.timeouts, total.cancelled),
        (3, 1, 1, 1),
        "{s}"
    );
    let text = s.to_string();
    assert!(
        text.contains("    4 KiB: ")
            && text.contains("waits 2 (waiting 0, timed out 1, cancelled 1)"),
        "{text}"
    );
    assert!(
        text.contains("waits 3 (waiting 1, timed out 1, cancelled 1)"),
        "{text}"
    );
    drop(held);
    let Poll::Ready(Ok(got)) = a.as_mut().poll(&mut cx) else {
        panic!("served");
    };
    let s = pool.stats();
    assert_eq!((s.buckets[1].waiting, s.total().waiting), (0, 0), "{s}");
    drop(got);
    assert_buffers_counted(&pool.stats());
    // Nothing shown where nothing waited.
    let quiet = BufferPool::new();
    drop(quiet.acquire(1));
    assert!(!quiet.stats().to_string().contains("waits"));
}

/// Waits for buffers above `max_capacity` count in the oversize entry.
#[test]
fn oversize_waits_count_in_the_oversize_entry() {
    let pool = limited(200 * KIB);
    let held = pool.acquire(200 * KIB);
    assert!(pool.acquire_timeout(100 * KIB, Duration::ZERO).is_err());
    let s = pool.stats();
    assert_eq!((s.oversize.waits, s.oversize.timeouts), (1, 1), "{s}");
    drop(held);
    assert_buffers_counted(&pool.stats());
}

// --- Growth under a limit, and waits that can never end --------------------------

/// Under a memory limit a growth reserves what it needs: the smallest
/// bucket that holds the request, not `Vec`'s doubling (a 24 KiB buffer
/// asked to hold 28,000 bytes grew to 48 KiB); past `max_capacity`, the
/// exact size. Without a limit, growth is amortized as before.
#[test]
fn growth_under_a_limit_takes_the_smallest_bucket_that_holds_it() {
    let pool = limited(256 * KIB);
    let mut buf = pool.acquire(24 * KIB);
    buf.extend_from_slice(&[1; 28_000]);
    assert_eq!(buf.capacity(), 28 * KIB);
    buf.try_reserve(1000).unwrap(); // 29,000 bytes: 32 KiB
    assert_eq!(buf.capacity(), 32 * KIB);
    buf.reserve(40_000); // 68,000 bytes, past max_capacity: exactly
    assert_eq!(buf.capacity(), 68_000);
    drop(buf);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut buf = pool.acquire(4 * KIB);
    rt.block_on(buf.reserve_async(9000)).unwrap();
    assert_eq!(buf.capacity(), 12 * KIB, "reserve_async too");
    drop(buf);
    let s = pool.stats();
    assert_eq!(s.overdrafts, 0, "{s}");
    let unlimited = BufferPool::new();
    let mut buf = unlimited.acquire(24 * KIB);
    buf.extend_from_slice(&[1; 28_000]);
    assert_eq!(buf.capacity(), 48 * KIB, "amortized: doubled");
}

/// A growth whose whole capacity can never fit the limit (a 4 KiB buffer
/// growing to 20 KiB under a 16 KiB limit: the 16 KiB it adds fit, but
/// the buffer keeps its own 4 KiB while it waits) fails at once, its
/// total in the error; it used to wait for ever at the head of the queue,
/// every later waiter timing out with 12 KiB free and pooling off.
#[test]
fn a_growth_whose_total_can_never_fit_fails_at_once() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let pool = limited(16 * KIB);
    let mut buf = pool.acquire(4 * KIB);
    let err = rt
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(10), buf.reserve_async(20 * KIB)).await
        })
        .expect("fails at once, not a wait");
    assert_eq!(
        err,
        Err(AcquireError::LimitExceeded {
            requested: 20 * KIB,
            needed: 20 * KIB,
            allocated: 4 * KIB as u64,
            limit: 16 * KIB as u64,
        })
    );
    assert_eq!(buf.capacity(), 4 * KIB, "unchanged");
    let s = pool.stats();
    assert_eq!((s.total().waits, s.total().waiting), (0, 0), "{s}");
    let other = pool.acquire_timeout(8 * KIB, Duration::from_secs(10));
    assert!(other.is_ok(), "nothing holds up the queue");
}

/// Three huge requests wait under the largest limit: the queue sums
/// nothing, so nothing overflows (it summed the bytes wanted, and three
/// of `isize::MAX` carried past `u64::MAX`, then underflowed as they left:
/// an abort in debug builds). Each is granted in turn, and fails to
/// allocate, with nothing left reserved.
#[test]
fn three_huge_waiters_under_the_largest_limit() {
    let pool = Arc::new(
        BufferPool::builder()
            .memory_limit(isize::MAX as usize)
            .build()
            .unwrap(),
    );
    let held = pool.acquire(4 * KIB);
    let mut cx = Context::from_waker(Waker::noop());
    let mut waits: Vec<_> = (0..3)
        .map(|_| Box::pin(pool.acquire_owned_async(isize::MAX as usize)))
        .collect();
    for w in &mut waits {
        assert!(w.as_mut().poll(&mut cx).is_pending(), "4 KiB held: no room");
    }
    assert_eq!(pool.stats().oversize.waiting, 3);
    drop(held);
    for w in &mut waits {
        let Poll::Ready(got) = w.as_mut().poll(&mut cx) else {
            panic!("granted in turn: {}", pool.stats());
        };
        assert!(
            matches!(got, Err(AcquireError::AllocFailed { .. })),
            "{got:?}"
        );
    }
    let s = pool.stats();
    // The 4 KiB were freed, not cached: someone waited.
    assert_eq!((s.oversize.waiting, s.allocated_memory), (0, 0), "{s}");
}

/// `hard_limit(true)` holds for every write path (issue 24: `put_slice` and
/// `read_buf` went 160 KiB past it, 7 `limit_violations`): `BufMut` reports
/// the room under the limit and stops there, a `put_slice` past it and the
/// Vec-like methods that cannot fail panic with the buffer unchanged, and
/// nothing is overdrawn.
#[test]
fn a_hard_limit_holds_for_every_write_path() {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    let pool = BufferPool::builder()
        .memory_limit(64 * KIB)
        .hard_limit(true)
        .build()
        .unwrap();
    // `BufMut` as tokio's `read_buf` drives it: while there is room, write
    // into `chunk_mut` and advance.
    let mut a = pool.acquire(4 * KIB);
    let mut fed = 0;
    while a.has_remaining_mut() && fed < 200 * KIB {
        let chunk = a.chunk_mut();
        let n = chunk.len().min(1000);
        for i in 0..n {
            chunk.write_byte(i, 7);
        }
        // SAFETY: the first `n` bytes of the chunk were written above.
        unsafe { a.advance_mut(n) };
        fed += n;
    }
    assert_eq!((fed, a.len()), (64 * KIB, 64 * KIB), "filled to the limit");
    assert_eq!(a.chunk_mut().len(), 0, "no room: what read_buf reads is 0");
    let over = catch_unwind(AssertUnwindSafe(|| a.put_slice(&[1])));
    assert!(over.is_err(), "put_slice past remaining_mut panics");
    assert_eq!(a.len(), 64 * KIB, "unchanged");
    drop(a);
    // The Vec-like methods that cannot fail.
    let mut b = pool.acquire(60 * KIB);
    b.extend_from_slice(&[1; 60 * KIB]);
    let over = catch_unwind(AssertUnwindSafe(|| b.extend_from_slice(&[0; 10 * KIB])));
    assert!(over.is_err(), "extend_from_slice past the limit panics");
    let over = catch_unwind(AssertUnwindSafe(|| b.extend([2u8; 10 * KIB])));
    assert!(over.is_err(), "Extend past the limit panics");
    let over = catch_unwind(AssertUnwindSafe(|| b.reserve(10 * KIB)));
    assert!(over.is_err(), "reserve past the limit panics");
    assert_eq!(b.len(), 60 * KIB, "unchanged");
    b.extend_from_slice(&[3; 4 * KIB]); // under the limit: grows
    let s = pool.stats();
    assert!(s.allocated_memory <= 64 * KIB as u64, "{s}");
    assert_eq!((s.overdrafts, s.limit_violations), (0, 0), "{s}");
    drop(b);
    assert_buffers_counted(&pool.stats());
}

/// Without `hard_limit`, the same writes grow as overdrafts, as before.
#[test]
fn a_soft_limit_lets_writes_overdraw() {
    let pool = BufferPool::builder()
        .memory_limit(16 * KIB)
        .build()
        .unwrap();
    let mut a = pool.acquire(4 * KIB);
    assert!(a.remaining_mut() > 1 << 40, "as a Vec: the buffer grows");
    a.put_slice(&[1; 40 * KIB]);
    let s = pool.stats();
    assert_eq!((s.overdrafts, s.limit_violations), (1, 0), "{s}");
}

/// A `FrameBuf` under a hard limit: reading as tokio's `read_buf` does (while
/// there is room, into `chunk_mut`) stops at the limit with nothing
/// overdrawn; a write past it panics, the unread bytes unchanged.
#[test]
fn a_frame_buf_stays_under_a_hard_limit() {
    use recycler_core::buffer::FrameBuf;
    use std::panic::{AssertUnwindSafe, catch_unwind};

    let pool = Arc::new(
        BufferPool::builder()
            .memory_limit(32 * KIB)
            .hard_limit(true)
            .build()
            .unwrap(),
    );
    let mut rx = FrameBuf::with_capacity(&pool, 4 * KIB);
    let mut fed = 0;
    while rx.has_remaining_mut() && fed < 100 * KIB {
        let chunk = rx.chunk_mut();
        if chunk.len() == 0 {
            break; // what read_buf reads then: 0
        }
        let n = chunk.len().min(1000);
        for i in 0..n {
            chunk.write_byte(i, 9);
        }
        // SAFETY: the first `n` bytes of the chunk were written above.
        unsafe { rx.advance_mut(n) };
        fed += n;
    }
    assert!(
        (16 * KIB..=32 * KIB).contains(&fed),
        "read up to the limit: {fed}"
    );
    let len = rx.len();
    let over = catch_unwind(AssertUnwindSafe(|| rx.put_slice(&[0; 40 * KIB])));
    assert!(over.is_err(), "a write past the limit panics");
    assert_eq!(rx.len(), len, "unchanged");
    let s = pool.stats();
    assert!(s.allocated_memory <= 32 * KIB as u64, "{s}");
    assert_eq!((s.overdrafts, s.limit_violations), (0, 0), "{s}");
}
