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

// --- Hold and wait --------------------------------------------------------------

/// The limit of the hold-and-wait tests, their tasks, and the responses
/// each task writes.
const HW_LIMIT: usize = 64 * KIB;
const HW_TASKS: usize = 8;
const HW_RESPONSES: usize = 50;
/// Rounds of each hold-and-wait test per run: each a fresh pool, so that
/// a stall in any interleaving has several chances to show.
const HW_ROUNDS: usize = 20;

/// The size of response `i` of task `t` in round `round`: 9 to 30 KB.
fn response_size(round: usize, t: usize, i: usize) -> usize {
    let mut rng =
        common::Rng(0x9E37_79B9_7F4A_7C15 ^ ((round * 64 + t) as u64 + 1) << 20 ^ i as u64);
    for _ in 0..3 {
        rng.next();
    }
    9_000 + (rng.next() % 21_001) as usize
}

/// The guide's `respond` as its first version wrote it, with the pause a
/// server has between the two (the body comes from a database or a file):
/// acquire 4 KiB, pause, then `reserve_async` the response's size, write
/// it, drop it. It holds the 4 KiB (or the larger idle buffer it was
/// served) while it waits to grow: hold and wait.
async fn respond_holding(pool: &Arc<BufferPool>, size: usize, fill: u8) -> usize {
    let mut out = pool.acquire_owned_async(4096).await.unwrap();
    tokio::time::sleep(Duration::from_micros(200)).await;
    out.reserve_async(size).await.unwrap();
    out.resize(size, fill);
    assert!(out.iter().all(|&b| b == fill));
    out.len()
}

/// Prints the pool's statistics every 10 s until `done`: what a stalled
/// round shows in the child's output when it is killed.
fn watchdog(pool: &Arc<BufferPool>, done: &Arc<AtomicBool>) -> thread::JoinHandle<()> {
    let (pool, done) = (Arc::clone(pool), Arc::clone(done));
    thread::spawn(move || {
        let mut waited = Duration::ZERO;
        while !done.load(SeqCst) {
            thread::sleep(Duration::from_millis(10));
            waited += Duration::from_millis(10);
            if waited.as_millis().is_multiple_of(10_000) {
                println!("after {waited:?}:\n{}", pool.stats());
            }
        }
    })
}

/// The pool's books after a hold-and-wait round: the limit held, nothing
/// in use, nobody waiting, no overdraft.
fn assert_hold_and_wait_books(pool: &BufferPool) {
    let s = pool.stats();
    assert!(s.allocated_memory <= HW_LIMIT as u64, "{s}");
    assert_eq!(s.total().in_use, 0, "{s}");
    assert_eq!(s.total().waiting, 0, "{s}");
    assert_eq!(s.overdrafts, 0, "reserve_async never overdraws: {s}");
    assert_buffers_counted(&s);
}

/// Hold and wait on tokio: 8 tasks on 2 workers, a 64 KiB limit, 50
/// responses of 9 to 30 KB each, written as the guide's first `respond`
/// did (acquire 4 KiB, pause, `reserve_async` the rest). Every round
/// completes all 400. (Issue 24: with strict first come, first served,
/// doubling growth and larger idle buffers kept whole at the limit, 8
/// tasks stalled in 3 of 3 runs.) Bounded: a stall is killed after 120 s
/// and fails the test.
#[test]
fn hold_and_wait_on_tokio_completes_every_response() {
    in_child_process_within(
        "hold_and_wait_on_tokio_completes_every_response",
        Duration::from_secs(240),
        || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_time()
                .build()
                .unwrap();
            for round in 0..HW_ROUNDS {
                let pool = limited(HW_LIMIT);
                let began = Instant::now();
                let done = Arc::new(AtomicBool::new(false));
                let dog = watchdog(&pool, &done);
                let written: usize = runtime.block_on(async {
                    let tasks: Vec<_> = (0..HW_TASKS)
                        .map(|t| {
                            let pool = Arc::clone(&pool);
                            tokio::spawn(async move {
                                let mut n = 0;
                                for i in 0..HW_RESPONSES {
                                    let size = response_size(round, t, i);
                                    assert_eq!(respond_holding(&pool, size, t as u8).await, size);
                                    n += 1;
                                }
                                n
                            })
                        })
                        .collect();
                    let mut n = 0;
                    for task in tasks {
                        n += task.await.unwrap();
                    }
                    n
                });
                done.store(true, SeqCst);
                dog.join().unwrap();
                assert_eq!(written, HW_TASKS * HW_RESPONSES);
                println!(
                    "round {round}: {written} responses in {:?}",
                    began.elapsed()
                );
                assert_hold_and_wait_books(&pool);
            }
        },
    );
}

/// Runs `f` on this thread, parked while it waits.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl std::task::Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut f = std::pin::pin!(f);
    loop {
        match f.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(out) => return out,
            Poll::Pending => thread::park(),
        }
    }
}

/// The same with 8 plain threads: each acquires its 4 KiB with
/// `acquire_owned_timeout`, pauses, and waits to grow with `reserve_async`
/// run to completion on the thread (parked while it waits).
#[test]
fn hold_and_wait_on_threads_completes_every_response() {
    in_child_process_within(
        "hold_and_wait_on_threads_completes_every_response",
        Duration::from_secs(240),
        || {
            for round in 0..HW_ROUNDS {
                let pool = limited(HW_LIMIT);
                let began = Instant::now();
                let done = Arc::new(AtomicBool::new(false));
                let dog = watchdog(&pool, &done);
                let threads: Vec<_> = (0..HW_TASKS)
                    .map(|t| {
                        let pool = Arc::clone(&pool);
                        thread::spawn(move || {
                            for i in 0..HW_RESPONSES {
                                let size = response_size(round, t, i);
                                let mut out = pool
                                    .acquire_owned_timeout(4096, Duration::from_secs(600))
                                    .unwrap();
                                thread::sleep(Duration::from_micros(200));
                                block_on(out.reserve_async(size)).unwrap();
                                out.resize(size, t as u8);
                                assert!(out.iter().all(|&b| b == t as u8));
                            }
                            HW_RESPONSES
                        })
                    })
                    .collect();
                let written: usize = threads.into_iter().map(|t| t.join().unwrap()).sum();
                done.store(true, SeqCst);
                dog.join().unwrap();
                assert_eq!(written, HW_TASKS * HW_RESPONSES);
                println!(
                    "round {round}: {written} responses in {:?}",
                    began.elapsed()
                );
                assert_hold_and_wait_books(&pool);
            }
        },
    );
}
