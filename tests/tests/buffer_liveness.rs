//! Nothing waits for ever at the memory limit: a waiter that fits the
//! memory free is served past one that does not, a large waiter still gets
//! its turn while smaller ones stream past it, and tasks that hold one
//! buffer while they wait for more (hold and wait) all finish whenever the
//! memory allows. The policy and its bounds: `docs/buffers.md`, "Who is
//! served first".
//!
//! Real threads and a real tokio runtime; each test that could hang runs
//! in a child process with a time limit, so a regression fails instead.
//! The time bounds are generous (the machines are shared and noisy) and
//! far from what the old behaviour gave.

#![cfg(not(loom))]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use common::{assert_buffers_counted, in_child_process_within};
use recycler_core::AcquireError;
use recycler_core::buffer::{BufferPool, OwnedPooledBuf};

const KIB: usize = 1024;

/// A wait polled by hand.
type Wait = Pin<Box<dyn Future<Output = Result<OwnedPooledBuf, AcquireError>> + Send>>;

fn poll<F: Future + Unpin>(f: &mut F) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(Waker::noop()))
}

fn limited(limit: usize) -> Arc<BufferPool> {
    Arc::new(BufferPool::builder().memory_limit(limit).build().unwrap())
}

/// Waits until `n` waits are in the pool's queue.
fn until_waiting(pool: &BufferPool, n: u64) {
    let start = Instant::now();
    while pool.stats().total().waiting < n {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "never {n} waiting: {}",
            pool.stats()
        );
        thread::sleep(Duration::from_millis(1));
    }
}

/// Head of line: 48 KiB of a 64 KiB limit held, a 32 KiB waiter queued
/// first, a 4 KiB waiter behind it. The 4 KiB fit in the 16 KiB free: it
/// is served at once, past the first (the issue asks for 100 ms; 2 s is
/// asserted, for loaded machines). Strictly first come, first served, it
/// waited until the 48 KiB came back, 5 s later here.
#[test]
fn a_small_waiter_is_not_held_up_by_a_large_one_that_does_not_fit() {
    let pool = limited(64 * KIB);
    let held: Vec<_> = (0..3).map(|_| pool.acquire_owned(16 * KIB)).collect();
    let large = {
        let pool = Arc::clone(&pool);
        thread::spawn(move || {
            let buf = pool.acquire_timeout(32 * KIB, Duration::from_secs(60));
            buf.map(|b| b.capacity())
        })
    };
    until_waiting(&pool, 1);
    let small = {
        let pool = Arc::clone(&pool);
        thread::spawn(move || {
            let start = Instant::now();
            let buf = pool.acquire_timeout(4 * KIB, Duration::from_secs(60));
            (buf.map(|b| b.capacity()), start.elapsed())
        })
    };
    let start = Instant::now();
    while !small.is_finished() && start.elapsed() < Duration::from_secs(5) {
        thread::sleep(Duration::from_millis(1));
    }
    drop(held);
    let (got, waited) = small.join().unwrap();
    assert_eq!(got, Ok(4 * KIB));
    assert!(
        waited < Duration::from_secs(2),
        "the 4 KiB waiter waited {waited:?} behind the 32 KiB one"
    );
    assert_eq!(large.join().unwrap(), Ok(32 * KIB));
    let s = pool.stats();
    assert_eq!(s.total().waiting, 0, "{s}");
    assert_buffers_counted(&s);
}

/// A 40 KiB waiter under a 64 KiB limit while six churners, polled in
/// turn on this thread, acquire 8 KiB buffers, hold each eight turns, give
/// it back and wait for the next at once: all six hold one, 48 KiB, but
/// while one of them waits, and never more than 24 KiB is free. They pass the waiter at most `PASSES` (16) times,
/// then wait behind it, and it is served once their buffers come back.
/// Deterministic: with passing unbounded, it is never served (checked
/// with the bound taken out).
#[test]
fn a_large_waiter_gets_its_turn_while_small_ones_pass_it() {
    enum Churn {
        /// (A placeholder while a churner moves on.)
        Idle,
        Waiting(Wait),
        Holding(OwnedPooledBuf, u32),
    }
    let pool = limited(64 * KIB);
    let mut churners: Vec<Churn> = (0..6)
        .map(|t| Churn::Holding(pool.acquire_owned(8 * KIB), t))
        .collect();
    let mut large: Wait = Box::pin(pool.acquire_owned_async(40 * KIB));
    assert!(poll(&mut large).is_pending());
    let mut served_at = None;
    let mut passes = 0;
    for turn in 0..1000 {
        for c in &mut churners {
            // A churner gives its buffer back and at once waits for the
            // next: it holds one all the time but while it waits.
            if let Churn::Holding(_, 0) = c {
                *c = Churn::Waiting(Box::pin(pool.acquire_owned_async(8 * KIB)));
            }
            *c = match std::mem::replace(c, Churn::Idle) {
                Churn::Idle => unreachable!(),
                Churn::Waiting(mut w) => match poll(&mut w) {
                    Poll::Ready(got) => {
                        passes += 1;
                        Churn::Holding(got.unwrap(), 8)
                    }
                    Poll::Pending => Churn::Waiting(w),
                },
                Churn::Holding(buf, n) => Churn::Holding(buf, n - 1),
            };
        }
        if served_at.is_none()
            && let Poll::Ready(got) = poll(&mut large)
        {
            assert_eq!(got.unwrap().capacity(), 40 * KIB);
            served_at = Some((turn, passes));
        }
        assert!(pool.stats().allocated_memory <= 64 * KIB as u64);
    }
    let Some((turn, passes)) = served_at else {
        panic!("the 40 KiB waiter was never served: {}", pool.stats());
    };
    assert!(turn < 100, "served at turn {turn}, after {passes} acquires");
    drop(churners);
    let s = pool.stats();
    assert_eq!(s.total().waiting, 0, "{s}");
    assert_buffers_counted(&s);
}

/// The same with six threads churning 8 KiB buffers, each holding one a
/// moment and giving it back: the 40 KiB waiter is served within seconds.
/// (Threads do not hold their buffers in step: even with passing
/// unbounded, the waiter usually finds 40 KiB free soon; the test above
/// is the one that fails without the bound.)
#[test]
fn a_large_waiter_gets_its_turn_while_small_ones_stream_past() {
    in_child_process_within(
        "a_large_waiter_gets_its_turn_while_small_ones_stream_past",
        Duration::from_secs(180),
        || {
            let pool = limited(64 * KIB);
            let stop = Arc::new(AtomicBool::new(false));
            let rounds = Arc::new(AtomicU64::new(0));
            let start = Arc::new(Barrier::new(7));
            let churners: Vec<_> = (0..6)
                .map(|t| {
                    let (pool, stop) = (Arc::clone(&pool), Arc::clone(&stop));
                    let (rounds, start) = (Arc::clone(&rounds), Arc::clone(&start));
                    thread::spawn(move || {
                        start.wait();
                        while !stop.load(SeqCst) {
                            let mut buf = pool
                                .acquire_timeout(8 * KIB, Duration::from_secs(60))
                                .expect("a churner is served");
                            buf.resize(8 * KIB, t);
                            thread::sleep(Duration::from_micros(200));
                            drop(buf);
                            rounds.fetch_add(1, SeqCst);
                        }
                    })
                })
                .collect();
            start.wait();
            // Let the churn run, then queue the large waiter in it.
            while rounds.load(SeqCst) < 1000 {
                thread::sleep(Duration::from_millis(1));
            }
            let began = Instant::now();
            let got = pool.acquire_timeout(40 * KIB, Duration::from_secs(60));
            let waited = began.elapsed();
            let during = rounds.load(SeqCst);
            stop.store(true, SeqCst);
            let cap = got.map(|b| b.capacity());
            for c in churners {
                c.join().unwrap();
            }
            println!("served after {waited:?}; {during} rounds of churn before");
            assert_eq!(cap, Ok(40 * KIB), "{}", pool.stats());
            assert!(waited < Duration::from_secs(10), "waited {waited:?}");
            let s = pool.stats();
            assert_eq!(s.total().waiting, 0, "{s}");
            assert!(s.allocated_memory <= 64 * KIB as u64, "{s}");
            assert_buffers_counted(&s);
        },
    );
}

/// `try_acquire` (and every request that does not wait) passes the waiters
/// as a waiter that fits does, within the same bound: with a 32 KiB waiter
/// that does not fit, sixteen `try_acquire(4 KiB)` take the 16 KiB free in
/// turn, and the seventeenth fails though 16 KiB are free: they are kept
/// for the waiter, which is served when the 48 KiB held come back.
#[test]
fn try_acquire_passes_a_waiter_within_the_same_bound() {
    let pool = limited(64 * KIB);
    let held: Vec<_> = (0..3).map(|_| pool.acquire_owned(16 * KIB)).collect();
    let mut large: Wait = Box::pin(pool.acquire_owned_async(32 * KIB));
    assert!(poll(&mut large).is_pending());
    for n in 0..16 {
        let buf = pool.try_acquire(4 * KIB);
        assert!(buf.is_ok(), "pass {n}: {buf:?}");
    }
    let s = pool.stats();
    assert_eq!(s.allocated_memory, 48 * KIB as u64, "{s}");
    assert!(
        matches!(
            pool.try_acquire(4 * KIB),
            Err(AcquireError::LimitExceeded { allocated, .. }) if allocated == 48 * KIB as u64
        ),
        "the waiter has been passed 16 times: {}",
        pool.stats()
    );
    assert!(poll(&mut large).is_pending());
    drop(held);
    let Poll::Ready(Ok(buf)) = poll(&mut large) else {
        panic!("its turn: {}", pool.stats());
    };
    assert_eq!(buf.capacity(), 32 * KIB);
    drop(buf);
    assert!(pool.try_acquire(4 * KIB).is_ok(), "nobody waits");
    assert_buffers_counted(&pool.stats());
}
