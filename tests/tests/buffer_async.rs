//! Waiting for memory: `acquire_async`, `acquire_owned_async`,
//! `acquire_timeout` and `acquire_owned_timeout` at the memory limit, and
//! `prefill`.
//!
//! The order and cancel-safety tests poll futures by hand with wakers that
//! record their wake-ups, so that every step is deterministic; the stress
//! test runs many tokio tasks on a multi-thread runtime against a small
//! limit and checks the pool's books at the end.

#![cfg(not(loom))]

mod common;

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::SeqCst};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use common::{Rng, assert_buffers_counted};
use recycler_core::AcquireError;
use recycler_core::buffer::{BufferPool, BufferPoolStats, OwnedPooledBuf};

const KIB: usize = 1024;

/// Records, in `log`, the name of each waker woken, in the order woken.
struct Named {
    name: usize,
    log: Arc<Mutex<Vec<usize>>>,
}

impl Wake for Named {
    fn wake(self: Arc<Self>) {
        self.log.lock().unwrap().push(self.name);
    }
}

fn named(name: usize, log: &Arc<Mutex<Vec<usize>>>) -> Waker {
    Waker::from(Arc::new(Named {
        name,
        log: Arc::clone(log),
    }))
}

fn poll<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// Runs `f` on this thread, parked while it waits.
fn block_on<F: Future>(f: F) -> F::Output {
    struct Unpark(thread::Thread);
    impl Wake for Unpark {
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

fn limited(limit: usize) -> Arc<BufferPool> {
    Arc::new(BufferPool::builder().memory_limit(limit).build().unwrap())
}

/// The future type is `Send + 'static`: checked when this compiles.
#[test]
fn acquire_owned_async_is_send_and_static() {
    fn spawnable<F: Future + Send + 'static>(f: F) -> F {
        f
    }
    let pool = Arc::new(BufferPool::new());
    let wait = spawnable(pool.acquire_owned_async(100));
    drop(pool); // the future holds its own `Arc`
    let buf = block_on(wait).unwrap();
    assert_eq!(buf.capacity(), 4 * KIB);
}

#[test]
fn without_a_limit_it_never_waits() {
    let pool = BufferPool::new();
    let log = Arc::new(Mutex::new(Vec::new()));
    let mut wait = pool.acquire_async(100_000);
    match poll(&mut wait, &named(0, &log)) {
        Poll::Ready(Ok(buf)) => assert_eq!(buf.capacity(), 100_000),
        other => panic!("ready at once: {other:?}"),
    }
    // Polled again after it completed: another buffer.
    let Poll::Ready(Ok(again)) = poll(&mut wait, &named(0, &log)) else {
        panic!("a second buffer");
    };
    assert_eq!(again.capacity(), 100_000);
    assert_eq!(pool.stats().oversize.acquires, 2);
}

#[test]
fn waiters_are_served_first_come_first_served() {
    let pool = limited(4 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let held = pool.acquire_owned(4 * KIB);
    let mut waits: Vec<_> = (0..4).map(|_| pool.acquire_owned_async(4 * KIB)).collect();
    let wakers: Vec<Waker> = (0..4).map(|i| named(i, &log)).collect();
    for (wait, waker) in waits.iter_mut().zip(&wakers) {
        assert!(poll(wait, waker).is_pending(), "at the limit");
    }
    let mut release = held;
    for i in 0..4 {
        drop(release); // frees 4 KiB (someone waits), reserved for waiter `i`
        assert_eq!(*log.lock().unwrap(), (0..=i).collect::<Vec<_>>());
        for (j, wait) in waits.iter_mut().enumerate().skip(i + 1) {
            assert!(poll(wait, &wakers[j]).is_pending(), "{j} waits behind {i}");
        }
        release = match poll(&mut waits[i], &wakers[i]) {
            Poll::Ready(got) => got.unwrap(),
            Poll::Pending => panic!("{i} was woken, so its memory is reserved"),
        };
        assert!(pool.stats().allocated_memory <= 4 * KIB as u64);
    }
    drop(release);
    let s = pool.stats();
    assert_eq!((s.allocated_memory, s.idle_memory), (4096, 4096), "{s}");
}

/// A waiter that fits the memory free is served past a first one that
/// does not (it used to wait behind it, with its memory free); the first
/// is served once its memory is freed.
#[test]
fn a_small_waiter_passes_a_big_one_that_does_not_fit() {
    let pool = limited(16 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = pool.acquire(8 * KIB);
    let b = pool.acquire(8 * KIB);
    let mut big = pool.acquire_async(16 * KIB);
    let mut small = pool.acquire_async(4 * KIB);
    assert!(poll(&mut big, &named(0, &log)).is_pending());
    assert!(poll(&mut small, &named(1, &log)).is_pending());
    drop(a); // 8 KiB free: enough for the small one, not for the big one
    assert_eq!(*log.lock().unwrap(), [1]);
    let Poll::Ready(Ok(small_buf)) = poll(&mut small, &named(1, &log)) else {
        panic!("the small one passed the big one");
    };
    assert_eq!(pool.stats().allocated_memory, 12 * KIB as u64);
    drop(b);
    assert_eq!(*log.lock().unwrap(), [1], "12 KiB free: not yet 16");
    drop(small_buf);
    assert_eq!(*log.lock().unwrap(), [1, 0]);
    assert!(poll(&mut big, &named(0, &log)).is_ready());
}

#[test]
fn a_dropped_pending_waiter_leaves_the_queue_and_reserves_nothing() {
    let pool = limited(8 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let held = pool.acquire(8 * KIB);
    let mut first = pool.acquire_async(8 * KIB);
    let mut second = pool.acquire_async(8 * KIB);
    assert!(poll(&mut first, &named(0, &log)).is_pending());
    assert!(poll(&mut second, &named(1, &log)).is_pending());
    drop(first);
    drop(held); // the memory goes to the next waiter
    assert_eq!(*log.lock().unwrap(), [1]);
    assert_eq!(pool.stats().allocated_memory, 8 * KIB as u64);
    let Poll::Ready(Ok(buf)) = poll(&mut second, &named(1, &log)) else {
        panic!("granted");
    };
    drop(buf); // nobody waits now: cached
    let s = pool.stats();
    assert_eq!((s.allocated_memory, s.idle_memory), (8192, 8192), "{s}");

    // Dropped with nobody behind it: nothing reserved, nobody waits.
    let held = pool.acquire(8 * KIB);
    let mut lone = pool.acquire_async(4 * KIB);
    assert!(poll(&mut lone, &named(2, &log)).is_pending());
    drop(lone);
    assert_eq!(pool.stats().allocated_memory, 8 * KIB as u64);
    drop(held);
    let s = pool.stats();
    assert_eq!(s.buckets[1].idle, 1, "cached, not freed: nobody waits: {s}");
    assert_eq!(*log.lock().unwrap(), [1], "never woken");
}

#[test]
fn a_dropped_woken_waiter_passes_its_wake_up_on() {
    let pool = limited(8 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let held = pool.acquire(8 * KIB);
    let mut first = pool.acquire_async(8 * KIB);
    let mut second = pool.acquire_async(8 * KIB);
    let mut third = pool.acquire_async(8 * KIB);
    assert!(poll(&mut first, &named(0, &log)).is_pending());
    assert!(poll(&mut second, &named(1, &log)).is_pending());
    assert!(poll(&mut third, &named(2, &log)).is_pending());
    drop(held);
    assert_eq!(*log.lock().unwrap(), [0], "the first is woken");
    drop(first); // woken, never polled: its memory goes to the second
    assert_eq!(*log.lock().unwrap(), [0, 1]);
    assert_eq!(pool.stats().allocated_memory, 8 * KIB as u64);
    drop(second); // likewise, to the third
    assert_eq!(*log.lock().unwrap(), [0, 1, 2]);
    let Poll::Ready(Ok(buf)) = poll(&mut third, &named(2, &log)) else {
        panic!("granted");
    };
    assert_eq!(pool.stats().allocated_memory, 8 * KIB as u64);
    drop(buf);
    let s = pool.stats();
    check(&s, 0, 8 * KIB as u64);
}

#[test]
fn a_request_that_can_never_fit_fails_at_once() {
    let pool = limited(8 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let held = pool.acquire(8 * KIB);
    // One waiting already: the impossible ones do not queue behind it.
    let mut waiting = pool.acquire_async(4 * KIB);
    assert!(poll(&mut waiting, &named(0, &log)).is_pending());
    for ask in [8 * KIB + 1, 64 * KIB, 100_000, usize::MAX] {
        let expected = pool.try_acquire(ask).unwrap_err();
        let mut wait = pool.acquire_async(ask);
        match poll(&mut wait, &named(1, &log)) {
            Poll::Ready(Err(err)) => assert_eq!(err, expected, "acquire_async({ask})"),
            other => panic!("acquire_async({ask}) at once: {other:?}"),
        }
        let err = pool
            .acquire_timeout(ask, Duration::from_secs(3600))
            .unwrap_err();
        assert_eq!(err, expected, "acquire_timeout({ask})");
    }
    assert!(matches!(
        pool.try_acquire(8 * KIB + 1),
        Err(AcquireError::LimitExceeded {
            requested: 8193,
            needed: 12_288,
            ..
        })
    ));
    assert!(matches!(
        pool.try_acquire(usize::MAX),
        Err(AcquireError::TooLarge { .. })
    ));
    assert!(log.lock().unwrap().is_empty());
    drop(held);
    assert_eq!(*log.lock().unwrap(), [0]);
}

#[test]
fn while_anyone_waits_releases_free_their_buffers() {
    let pool = limited(16 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let small: Vec<_> = (0..4).map(|_| pool.acquire(4 * KIB)).collect();
    let mut wait = pool.acquire_async(16 * KIB);
    assert!(poll(&mut wait, &named(0, &log)).is_pending());
    let mut freed = 0;
    for buf in small {
        drop(buf);
        freed += 4 * KIB as u64;
        let s = pool.stats();
        if freed < 16 * KIB as u64 {
            assert_eq!(s.allocated_memory, 16 * KIB as u64 - freed, "freed: {s}");
            assert_eq!(s.idle_memory, 0, "not cached: {s}");
        }
    }
    assert_eq!(*log.lock().unwrap(), [0]);
    assert!(poll(&mut wait, &named(0, &log)).is_ready());
}

/// A release while someone waits for a buffer of its bucket hands that
/// waiter the buffer itself: reused, not freed and allocated again. A
/// waiter for another bucket gets the memory instead, and allocates.
#[test]
fn a_release_hands_its_buffer_to_a_waiter_of_its_bucket() {
    let pool = limited(8 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = pool.acquire(4 * KIB);
    let b = pool.acquire(4 * KIB);
    let a_ptr = a.as_ptr();
    let mut same = pool.acquire_async(4 * KIB);
    let mut other = pool.acquire_async(8 * KIB);
    assert!(poll(&mut same, &named(0, &log)).is_pending());
    assert!(poll(&mut other, &named(1, &log)).is_pending());
    drop(a); // to the first waiter, whose bucket it is
    assert_eq!(*log.lock().unwrap(), [0]);
    let got = match poll(&mut same, &named(0, &log)) {
        Poll::Ready(got) => got.unwrap(),
        Poll::Pending => panic!("woken, so handed its buffer"),
    };
    assert_eq!(got.as_ptr(), a_ptr, "the very buffer");
    let s = pool.stats();
    assert_eq!(
        (s.buckets[0].non_pooled, s.buckets[0].pooled),
        (2, 1),
        "{s}"
    );
    assert_eq!(s.allocated_memory, 8 * KIB as u64, "nothing freed: {s}");
    // The next waiter wants 8 KiB: these 4 KiB buffers are freed for it.
    drop(got);
    drop(b);
    assert_eq!(*log.lock().unwrap(), [0, 1]);
    let big = match poll(&mut other, &named(1, &log)) {
        Poll::Ready(got) => got.unwrap(),
        Poll::Pending => panic!("woken, so granted"),
    };
    let s = pool.stats();
    assert_eq!(s.buckets[1].non_pooled, 1, "{s}");
    assert_eq!(s.buckets[0].removes, 2, "both freed: {s}");
    assert_eq!(s.allocated_memory, 8 * KIB as u64, "{s}");
    drop(big);
    let s = pool.stats();
    let t = s.total();
    assert_eq!(t.in_use, 0, "{s}");
    assert_eq!(t.non_pooled, t.idle + t.removes + t.evicts, "{s}");
}

#[test]
fn the_wait_frees_idle_buffers_it_can_reach() {
    let pool = limited(16 * KIB);
    drop([pool.acquire(8 * KIB), pool.acquire(8 * KIB)]); // 16 KiB idle here
    let buf = block_on(pool.acquire_async(12 * KIB)).unwrap();
    assert_eq!(buf.capacity(), 12 * KIB);
    let s = pool.stats();
    assert_eq!(s.buckets[1].evicts, 2, "{s}");
    assert_eq!(s.allocated_memory, 12 * KIB as u64, "{s}");
}

/// Above `max_capacity` (64 KiB), never pooled: dropping it always frees
/// its memory, on whatever thread and whenever that happens. The tests that
/// release on one thread while another starts to wait hold one of these, so
/// that they do not depend on which comes first (a pooled buffer released
/// just before anyone waits is cached by the releasing thread, where only
/// that thread can free it).
const BIG: usize = 70_000;

#[test]
fn acquire_owned_timeout_waits_for_another_thread_then_gives_up() {
    let pool = limited(BIG);
    let held = pool.acquire_owned(BIG);
    let err = pool
        .acquire_owned_timeout(4 * KIB, Duration::ZERO)
        .unwrap_err();
    assert_eq!(
        err,
        AcquireError::TimedOut {
            requested: 4096,
            needed: 4096,
            allocated: BIG as u64,
            limit: BIG as u64,
            waited: Duration::ZERO,
        }
    );
    let releaser = thread::spawn(move || {
        thread::sleep(Duration::from_millis(20));
        drop(held);
    });
    let buf = pool
        .acquire_owned_timeout(4 * KIB, Duration::MAX)
        .expect("the other thread releases");
    releaser.join().unwrap();
    assert_eq!(buf.capacity(), 4 * KIB);
    drop(buf);
    let s = pool.stats();
    assert!(s.allocated_memory <= BIG as u64, "{s}");
    assert_eq!(s.buckets.iter().map(|b| b.in_use).sum::<u64>(), 0, "{s}");
}

#[test]
fn blocking_and_async_waiters_share_one_queue() {
    let pool = limited(BIG);
    let log = Arc::new(Mutex::new(Vec::new()));
    let held = pool.acquire_owned(BIG);
    let mut task = pool.acquire_owned_async(BIG);
    assert!(poll(&mut task, &named(0, &log)).is_pending());
    // A thread that waits behind the task: it gets the memory only after
    // the task has had its turn.
    let thread_pool = Arc::clone(&pool);
    let blocked = thread::spawn(move || {
        thread_pool
            .acquire_owned_timeout(BIG, Duration::MAX)
            .map(|buf| buf.capacity())
    });
    drop(held);
    assert_eq!(*log.lock().unwrap(), [0], "the task was first");
    let Poll::Ready(Ok(buf)) = poll(&mut task, &named(0, &log)) else {
        panic!("granted");
    };
    assert!(pool.try_acquire(1).is_err(), "the task holds all of it");
    drop(buf); // now the thread's turn, whenever it joined
    assert_eq!(blocked.join().unwrap(), Ok(BIG));
}

#[test]
fn a_release_while_anyone_waits_frees_its_threads_idle_buffers() {
    let pool = limited(16 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let (tx, rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let other_pool = Arc::clone(&pool);
    // Another thread keeps 8 KiB idle in its cache, and holds 4 KiB.
    let other = thread::spawn(move || {
        drop(other_pool.acquire(8 * KIB));
        let held = other_pool.acquire(4 * KIB);
        tx.send(()).unwrap();
        go_rx.recv().unwrap();
        drop(held); // someone waits: frees it, and the idle 8 KiB with it
        other_pool.stats()
    });
    rx.recv().unwrap();
    let mine = pool.acquire(4 * KIB);
    // 16 KiB allocated, 8 KiB of it idle where only the other thread can
    // free it.
    let mut wait = pool.acquire_async(12 * KIB);
    assert!(poll(&mut wait, &named(0, &log)).is_pending());
    go_tx.send(()).unwrap();
    let s = other.join().unwrap();
    assert_eq!(s.buckets[1].evicts, 1, "{s}");
    assert_eq!(*log.lock().unwrap(), [0]);
    assert!(poll(&mut wait, &named(0, &log)).is_ready());
    drop(mine);
}

/// Every buffer made is in use, idle, evicted or removed; the memory
/// allocated is what is held plus what idles, within the limit.
fn check(s: &BufferPoolStats, held: u64, limit: u64) {
    assert_buffers_counted(s);
    assert_eq!(s.allocated_memory, held + s.idle_memory, "memory: {s}");
    assert!(s.allocated_memory <= limit, "{s}");
}

/// Counts the polls of a future that returned `Pending`.
struct CountPending<F> {
    inner: Pin<Box<F>>,
    pending: Arc<AtomicU64>,
}

impl<F: Future> Future for CountPending<F> {
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let out = self.inner.as_mut().poll(cx);
        if out.is_pending() {
            self.pending.fetch_add(1, SeqCst);
        }
        out
    }
}

const TASKS: usize = 48;
const ROUNDS: usize = 40;
const LIMIT: usize = 256 * KIB;

/// Many tasks on a multi-thread runtime contend for a limit that holds a
/// fraction of what they ask for at once; some give up waiting after a
/// short timeout (their futures are dropped while queued, or after being
/// granted). All of them finish, the limit is never crossed, and once the
/// runtime is gone the books balance and every byte is reachable.
///
/// The per-thread caches are kept to one buffer per bucket, as they were
/// when memory idle in a worker's cache was out of the waiters' reach; it
/// no longer is (`steal.rs` has the case without that setting).
#[test]
fn many_tasks_on_a_multi_thread_runtime_all_finish_and_the_books_balance() {
    let pool = Arc::new(
        BufferPool::builder()
            .memory_limit(LIMIT)
            .max_idle_memory(64 * KIB)
            .max_idle_per_thread(1)
            .build()
            .unwrap(),
    );
    let held = Arc::new(AtomicU64::new(0));
    let over = Arc::new(AtomicUsize::new(0));
    let pending = Arc::new(AtomicU64::new(0));
    let timed_out = Arc::new(AtomicU64::new(0));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let done = runtime.block_on(async {
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let (pool, held, over) = (Arc::clone(&pool), Arc::clone(&held), Arc::clone(&over));
                let (pending, timed_out) = (Arc::clone(&pending), Arc::clone(&timed_out));
                tokio::spawn(async move {
                    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (t as u64 + 1) << 24);
                    let mut served = 0;
                    for _ in 0..ROUNDS {
                        let r = rng.next();
                        let size = match r % 16 {
                            0 => 70 * KIB, // oversize: never pooled
                            1..=7 => 8 * KIB,
                            _ => 1 + (r >> 8) as usize % (4 * KIB),
                        };
                        let wait = CountPending {
                            inner: Box::pin(pool.acquire_owned_async(size)),
                            pending: Arc::clone(&pending),
                        };
                        let buf: OwnedPooledBuf = if r.is_multiple_of(5) {
                            // Give up soon: the future is dropped wherever
                            // it stands in the queue.
                            match tokio::time::timeout(Duration::from_micros(50), wait).await {
                                Ok(got) => got.unwrap(),
                                Err(_) => {
                                    timed_out.fetch_add(1, SeqCst);
                                    continue;
                                }
                            }
                        } else {
                            wait.await.unwrap()
                        };
                        let cap = buf.capacity() as u64;
                        if held.fetch_add(cap, SeqCst) + cap > LIMIT as u64 {
                            over.fetch_add(1, SeqCst);
                        }
                        let mut buf = buf;
                        buf.resize(size, t as u8);
                        tokio::task::yield_now().await;
                        assert!(buf.iter().all(|&b| b == t as u8));
                        held.fetch_sub(cap, SeqCst);
                        drop(buf);
                        served += 1;
                    }
                    served
                })
            })
            .collect();
        let all = async {
            let mut served = 0;
            for task in tasks {
                served += task.await.unwrap();
            }
            served
        };
        // Bounded: a lost wake-up fails the test instead of hanging it.
        tokio::time::timeout(Duration::from_secs(120), all).await
    });
    let served = done.expect("every task finished");
    drop(runtime); // the workers exit: their caches go to the depots
    assert_eq!(held.load(SeqCst), 0);
    assert_eq!(over.load(SeqCst), 0, "the limit held");
    assert!(
        pending.load(SeqCst) > 0,
        "tasks did wait (served {served}, timed out {})",
        timed_out.load(SeqCst)
    );
    assert_eq!(
        served + timed_out.load(SeqCst) as usize,
        TASKS * ROUNDS,
        "every round served or given up"
    );
    let s = pool.stats();
    check(&s, 0, LIMIT as u64);
    assert_eq!(s.buckets.iter().map(|b| b.in_use).sum::<u64>(), 0, "{s}");
    assert_eq!(s.oversize.in_use, 0, "{s}");
    assert_eq!(s.idle_memory, s.accounted_idle_memory, "{s}");
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.idle_memory, s.allocated_memory), (0, 0), "{s}");
    // Nobody waits: a release is cached again.
    drop(pool.acquire(1));
    assert_eq!(pool.stats().idle_memory, 4 * KIB as u64);
}

/// tokio's current-thread runtime runs spawned tasks in order: they join
/// the queue in that order and are served in it.
#[test]
fn tokio_tasks_are_served_in_the_order_they_waited() {
    let pool = limited(4 * KIB);
    let order = Arc::new(Mutex::new(Vec::new()));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    runtime.block_on(async {
        let held = pool.acquire_owned(4 * KIB);
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let (pool, order) = (Arc::clone(&pool), Arc::clone(&order));
                tokio::spawn(async move {
                    let buf = pool.acquire_owned_async(1).await.unwrap();
                    order.lock().unwrap().push(i);
                    tokio::task::yield_now().await;
                    drop(buf);
                })
            })
            .collect();
        // Every task runs once, and waits.
        tokio::task::yield_now().await;
        assert!(order.lock().unwrap().is_empty());
        drop(held);
        for task in tasks {
            task.await.unwrap();
        }
    });
    assert_eq!(*order.lock().unwrap(), (0..8).collect::<Vec<_>>());
}

#[test]
fn prefilled_buffers_are_found_by_another_thread() {
    let pool = Arc::new(
        BufferPool::builder()
            .max_idle_per_thread(16)
            .build()
            .unwrap(),
    );
    assert_eq!(pool.prefill(5000, 20).unwrap(), 20);
    let s = pool.stats();
    let b = s.buckets[1];
    assert_eq!(
        (b.capacity, b.prefilled, b.idle, b.acquires, b.non_pooled),
        (8192, 20, 20, 0, 0),
        "made, but not by an acquire: {s}"
    );
    assert!(
        s.to_string()
            .contains("idle 20, in use 0, evicted 0, prefilled 20"),
        "{s}"
    );
    assert_eq!((s.allocated_memory, s.idle_memory), (20 * 8192, 20 * 8192));
    let other = Arc::clone(&pool);
    let ptr = thread::spawn(move || {
        let buf = other.try_acquire(8000).unwrap();
        buf.as_ptr() as usize
    })
    .join()
    .unwrap();
    assert_ne!(ptr, 0);
    let s = pool.stats();
    let b = s.buckets[1];
    assert_eq!(
        (b.acquires, b.pooled, b.non_pooled, b.prefilled),
        (1, 1, 0, 20),
        "a hit: {s}"
    );
    assert_eq!(b.idle, 20, "{s}");
    // `acquires == pooled + non_pooled` in every entry and in the total.
    for e in s.buckets.iter().chain([&s.oversize, &s.total()]) {
        assert_eq!(e.acquires, e.pooled + e.non_pooled, "{s}");
    }
    assert_eq!(s.total().prefilled, 20, "{s}");
    check(&s, 0, u64::MAX);
}

#[test]
fn prefill_stays_within_every_limit() {
    // The depot: four times `max_idle_per_thread`.
    let pool = BufferPool::builder()
        .max_idle_per_thread(2)
        .build()
        .unwrap();
    assert_eq!(pool.prefill(1, 100).unwrap(), 8);
    assert_eq!(pool.prefill(1, 1).unwrap(), 0, "full");
    assert_eq!(pool.prefill(4096, 0).unwrap(), 0);
    // Above `max_capacity`: no bucket, nothing pooled.
    assert_eq!(pool.prefill(65_537, 4).unwrap(), 0);
    // A size no buffer can have: a typed error.
    assert!(matches!(
        pool.prefill(usize::MAX, 4),
        Err(AcquireError::TooLarge { .. })
    ));
    assert_eq!(pool.stats().oversize.acquires, 0);

    // The idle cap: never evicts other buckets to make room.
    let capped = BufferPool::builder()
        .max_idle_memory(40 * KIB)
        .build()
        .unwrap();
    drop(capped.acquire(16 * KIB)); // 16 KiB idle in another bucket
    assert_eq!(capped.prefill(8 * KIB, 10).unwrap(), 3, "24 KiB more");
    let s = capped.stats();
    assert_eq!(s.buckets[3].evicts, 0, "{s}");
    assert_eq!(s.idle_memory, 40 * KIB as u64, "{s}");
    assert_eq!(s.accounted_idle_memory, 40 * KIB as u64, "{s}");
    assert_eq!(capped.prefill(4 * KIB, 1).unwrap(), 0, "the cap is full");

    // The memory limit: a short count, then a typed error; never reclaims.
    let limited = BufferPool::builder()
        .memory_limit(20 * KIB)
        .build()
        .unwrap();
    drop(limited.acquire(4 * KIB)); // 4 KiB idle, not reclaimed for prefill
    assert_eq!(limited.prefill(8 * KIB, 5).unwrap(), 2);
    assert_eq!(
        limited.prefill(8 * KIB, 5).unwrap_err(),
        AcquireError::LimitExceeded {
            requested: 8192,
            needed: 8192,
            allocated: 20 * KIB as u64,
            limit: 20 * KIB as u64
        }
    );
    let s = limited.stats();
    assert_eq!(s.buckets[0].evicts, 0, "{s}");
    check(&s, 0, 20 * KIB as u64);
}

#[test]
fn prefill_leaves_the_memory_to_waiters() {
    let pool = limited(16 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let held = pool.acquire(12 * KIB);
    let mut wait = pool.acquire_async(8 * KIB);
    assert!(poll(&mut wait, &named(0, &log)).is_pending());
    assert_eq!(pool.prefill(4 * KIB, 1).unwrap(), 0, "someone waits");
    // Handed to the waiter, shrunk to its 8 KiB: the other 4 KiB are freed.
    drop(held);
    let Poll::Ready(Ok(got)) = poll(&mut wait, &named(0, &log)) else {
        panic!("handed the buffer");
    };
    assert_eq!(got.capacity(), 8 * KIB);
    assert_eq!(pool.stats().buckets[1].pooled, 1, "a hit");
    assert_eq!(pool.prefill(4 * KIB, 4).unwrap(), 2, "8 KiB left");
}

/// A pool that keeps nothing (`max_idle_per_thread(0)`) frees a buffer a
/// release handed to a waiter when the waiter drops it, as it frees every
/// other, and as it frees one that grew after: nothing is ever idle, and
/// the books balance.
#[test]
fn a_pool_that_keeps_nothing_keeps_no_handed_buffer() {
    let pool = Arc::new(
        BufferPool::builder()
            .max_idle_per_thread(0)
            .memory_limit(12 * KIB)
            .build()
            .unwrap(),
    );
    let log = Arc::new(Mutex::new(Vec::new()));
    for round in 0..3 {
        let a = pool.acquire(4 * KIB);
        let b = pool.acquire(8 * KIB);
        let mut wait = pool.acquire_async(4 * KIB);
        assert!(poll(&mut wait, &named(0, &log)).is_pending());
        drop(a); // handed to the waiter
        let Poll::Ready(Ok(mut got)) = poll(&mut wait, &named(0, &log)) else {
            panic!("handed its buffer");
        };
        drop(b); // freed
        if round == 2 {
            got.extend_from_slice(&[7; 5000]); // grows into the 8 KiB bucket
        }
        drop(got);
        let s = pool.stats();
        assert_eq!(
            (s.allocated_memory, s.idle_memory),
            (0, 0),
            "round {round}: {s}"
        );
        check(&s, 0, 12 * KIB as u64);
    }
    let s = pool.stats();
    assert_eq!(s.buckets[0].pooled, 3, "each handed buffer a hit: {s}");
}

/// A waker that panics when woken (a broken runtime's).
struct Panicky;

impl Wake for Panicky {
    fn wake(self: Arc<Self>) {
        panic!("waker failure (test)");
    }
}

/// A free that grants a waiter whose waker panics returns normally, and
/// serves the waiters behind it all the same; the waiter keeps its grant.
/// The same for a release that hands a waiter its buffer.
#[test]
fn a_waker_that_panics_neither_reaches_the_freeing_thread_nor_strands_the_next() {
    let panicky = Waker::from(Arc::new(Panicky));
    let pool = limited(8 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let held = pool.acquire(8 * KIB);
    let mut first = pool.acquire_async(4 * KIB);
    let mut second = pool.acquire_async(4 * KIB);
    assert!(poll(&mut first, &panicky).is_pending());
    assert!(poll(&mut second, &named(1, &log)).is_pending());
    // Discarded, not released: a release would hand the whole 8 KiB buffer
    // to the first waiter; a free serves both.
    let freed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        recycler_core::buffer::PooledBuf::discard(held);
    }));
    assert!(freed.is_ok(), "the waker's panic reached the free");
    assert_eq!(*log.lock().unwrap(), [1], "the next waiter is served");
    let Poll::Ready(Ok(b)) = poll(&mut second, &named(1, &log)) else {
        panic!("granted");
    };
    let Poll::Ready(Ok(a)) = poll(&mut first, &named(0, &log)) else {
        panic!("the first kept its grant");
    };
    assert_eq!(pool.stats().allocated_memory, 8 * KIB as u64);

    // A release that hands its buffer to a waiter whose waker panics.
    let mut third = pool.acquire_async(4 * KIB);
    assert!(poll(&mut third, &panicky).is_pending());
    let ptr = a.as_ptr();
    let released = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drop(a)));
    assert!(released.is_ok(), "the waker's panic reached the release");
    let Poll::Ready(Ok(c)) = poll(&mut third, &named(2, &log)) else {
        panic!("handed the buffer");
    };
    assert_eq!(c.as_ptr(), ptr, "the very buffer");
    drop((b, c));
    let s = pool.stats();
    check(&s, 0, 8 * KIB as u64);
    assert_eq!(s.buckets[0].in_use, 0, "{s}");
}

/// A guard dropped while its thread unwinds frees memory for a waiter whose
/// waker panics: the waker's panic must not escape that drop, where it
/// would abort the process (a panic while panicking). In a child process,
/// so that an abort fails this test alone.
#[test]
fn a_waker_that_panics_while_the_freeing_thread_unwinds_does_not_abort() {
    common::in_child_process(
        "a_waker_that_panics_while_the_freeing_thread_unwinds_does_not_abort",
        || {
            let pool = limited(BIG);
            let held = pool.acquire_owned(BIG); // oversize: freed when dropped
            let mut wait = pool.acquire_owned_async(4 * KIB);
            assert!(poll(&mut wait, &Waker::from(Arc::new(Panicky))).is_pending());
            let unwound = thread::spawn(move || {
                let _held = held; // dropped as the panic unwinds
                panic!("user code failure (test)");
            })
            .join();
            assert!(unwound.is_err(), "the thread's own panic, and only it");
            let log = Arc::new(Mutex::new(Vec::new()));
            let Poll::Ready(Ok(buf)) = poll(&mut wait, &named(0, &log)) else {
                panic!("granted");
            };
            assert_eq!(buf.capacity(), 4 * KIB);
        },
    );
}

/// A future leaked while it waits (`mem::forget`) costs the pool what is
/// granted to it, and nothing more: the buffer the next release hands it
/// is out of reach for good, but releases pool again after that (they are
/// not all freed for a waiter that never comes back), and a trim frees
/// everything else.
#[test]
fn a_leaked_waiting_future_strands_at_most_its_grant() {
    let pool = limited(8 * KIB);
    let log = Arc::new(Mutex::new(Vec::new()));
    let a = pool.acquire(4 * KIB);
    let b = pool.acquire(4 * KIB);
    let mut ghost = pool.acquire_async(4 * KIB);
    assert!(poll(&mut ghost, &named(0, &log)).is_pending());
    std::mem::forget(ghost);
    drop(a); // handed to the ghost: stranded
    assert_eq!(*log.lock().unwrap(), [0]);
    drop(b); // nobody left to serve: pooled
    for _ in 0..100 {
        drop(pool.acquire(4 * KIB));
    }
    let s = pool.stats();
    let bucket = s.buckets[0];
    assert_eq!((bucket.acquires, bucket.non_pooled), (102, 2), "{s}");
    assert!(bucket.hit_ratio() > 0.95, "releases pool again: {s}");
    assert_eq!(s.allocated_memory, 8 * KIB as u64, "{s}");
    // A waiter behind the ghost is served as if it were not there.
    let held = pool.acquire(4 * KIB);
    let mut next = pool.acquire_async(4 * KIB);
    assert!(poll(&mut next, &named(1, &log)).is_pending());
    drop(held);
    let Poll::Ready(Ok(got)) = poll(&mut next, &named(1, &log)) else {
        panic!("handed the buffer");
    };
    drop(got);
    pool.trim();
    let s = pool.stats();
    assert_eq!(
        (s.allocated_memory, s.buckets[0].idle),
        (4 * KIB as u64, 1),
        "only the ghost's buffer is left: {s}"
    );
    assert_buffers_counted(&s);
}
