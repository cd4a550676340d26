//! Loom models of the idle-memory accounting and of waiting for memory,
//! run against the real code (built with `RUSTFLAGS="--cfg loom"`; see
//! `tests/tests/loom.rs` and `.ci/loom.sh`).
//!
//! The accounting models race a release that must evict against another
//! release or a thread exit, then audit, once every thread has exited: the
//! bytes the accounting counts are exactly the bytes of the idle buffers;
//! idle memory is within its documented bound; the memory allocated is the
//! memory idle (nothing in use); every buffer made is idle, evicted or
//! removed; and every idle buffer is reachable (trimming frees all of it).
//!
//! The waiting models race a free against a task that finds no memory and
//! joins the queue of waiters (also behind a waiter granted but not yet
//! served, which no longer keeps the "someone waits" bit set), and against a
//! waiter that is dropped: no free is lost, and memory reserved for a
//! dropped waiter goes to the next. Two more race a free against a waiter
//! that passes a first one that does not fit, and a first one that may be
//! passed no more (under loom, once) leaving the queue: the waiter behind
//! is served, whichever comes first.

#![cfg(loom)]

mod loom_support;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use loom_support::{assert_buffers_counted, model, spawn};
use recycler_core::buffer::BufferPool;
use recycler_core::{AcquireError, Recycler};

/// Two buckets of 16 and 32 bytes, idle memory capped at `cap`; one idle
/// buffer per thread and per bucket, moved one at a time.
fn tiny_pool(cap: usize) -> Arc<BufferPool> {
    let pool = BufferPool::builder()
        .bucket_step(16)
        .max_capacity(32)
        .max_idle_memory(cap)
        .max_idle_per_thread(1)
        .build()
        .unwrap();
    Arc::new(pool)
}

/// The audit every pool model ends with, on the last thread standing.
/// `threads` is the number of threads that released.
fn audit(pool: &BufferPool, cap: u64, threads: u64) {
    let s = pool.stats();
    assert_eq!(
        s.idle_memory, s.accounted_idle_memory,
        "counted exactly: {s}"
    );
    let bound = cap + (threads - 1) * ((cap / 8).max(2 * 32) + 32);
    assert!(s.idle_memory <= bound, "{s}");
    assert_eq!(s.allocated_memory, s.idle_memory, "nothing in use: {s}");
    assert_buffers_counted(&s);
    pool.trim();
    let s = pool.stats();
    assert_eq!(s.allocated_memory, 0, "every idle buffer reachable: {s}");
    assert_eq!(s.accounted_idle_memory, 0, "{s}");
}

/// A release over the cap evicts a buffer of the other bucket while that
/// buffer is on its way home from another thread, which then exits
/// (publishing its delta).
#[test]
fn release_over_the_cap_races_eviction_of_a_buffer_in_flight() {
    model(|| {
        let pool = tiny_pool(32);
        let small = pool.acquire_owned(16);
        let large = pool.acquire_owned(32);
        let t1 = spawn(move || drop(large)); // sent home to this thread's inbox
        let t2 = spawn(move || drop(small)); // may have to evict `large`
        t1.join().unwrap();
        t2.join().unwrap();
        audit(&pool, 32, 2);
    });
}

/// Two threads release into different buckets at once, where only one
/// buffer fits under the cap; each must see the other's bytes once they are
/// published, or bound the overshoot if not.
#[test]
fn two_releases_into_different_buckets_over_the_cap() {
    model(|| {
        let pool = tiny_pool(32);
        let (p1, p2) = (Arc::clone(&pool), Arc::clone(&pool));
        let t1 = spawn(move || drop(p1.acquire(16)));
        let t2 = spawn(move || drop(p2.acquire(32)));
        t1.join().unwrap();
        t2.join().unwrap();
        audit(&pool, 32, 2);
        let s = pool.stats();
        assert_eq!(s.buckets[0].non_pooled + s.buckets[1].non_pooled, 2, "{s}");
    });
}

/// `max_idle_bytes` on a plain recycler: two threads release objects of one
/// home at once, under a cap that fits one; at the end the count is exact.
#[test]
fn recycler_idle_bytes_under_two_foreign_releases() {
    model(|| {
        let pool = Arc::new(
            Recycler::builder_with_factory(|| Vec::<u8>::with_capacity(10))
                .max_capacity_per_thread(4)
                .batch_size(1)
                .depot_capacity(8)
                .max_idle_bytes(10)
                .build()
                .unwrap(),
        );
        let a = pool.get_owned();
        let b = pool.get_owned();
        let ta = spawn(move || drop(a));
        let tb = spawn(move || drop(b));
        ta.join().unwrap();
        tb.join().unwrap();
        let s = pool.stats();
        assert_eq!(s.in_use, 0, "{s}");
        assert_eq!(s.created, s.idle + s.dropped, "{s}");
        // Two releasing threads: at most one unpublished delta over the cap.
        assert!(s.idle_bytes <= 10 + (10 / 8).max(1) + 10, "{s}");
        let mut reachable = Vec::new();
        while let Some(v) = pool.try_get() {
            reachable.push(v);
        }
        let bytes: usize = reachable.iter().map(|v| v.capacity()).sum();
        assert_eq!(reachable.len() as u64, s.idle, "{s}");
        assert_eq!(bytes as u64, s.idle_bytes, "counted exactly: {s}");
    });
}

/// A thread gives its index in the pool up as it exits, while two threads
/// acquire for the first time: each claims an index nobody owns (the one
/// given up, by compare-and-swap) or pushes a new one, and the exited
/// thread's buffer stays reachable.
#[test]
fn two_index_claims_race_an_exit() {
    model(|| {
        let pool = tiny_pool(64);
        let p = Arc::clone(&pool);
        let leaver = spawn(move || drop(p.acquire(16)));
        let p = Arc::clone(&pool);
        let claimer = spawn(move || drop(p.acquire(16)));
        drop(pool.acquire(32)); // this thread's first use: a claim too
        leaver.join().unwrap();
        claimer.join().unwrap();
        audit(&pool, 64, 3);
    });
}

/// At a memory limit of 32 bytes with an idle 16-byte buffer in the depot:
/// one thread asks for 32 bytes (the reclaim must evict the idle buffer),
/// another for 16 (which may take that very buffer). Whoever fails was
/// truly over the limit; the limit is never crossed, and the books balance.
#[test]
fn two_acquires_at_the_memory_limit() {
    model(|| {
        let pool = Arc::new(
            BufferPool::builder()
                .bucket_step(16)
                .max_capacity(32)
                .memory_limit(32)
                .max_idle_per_thread(1)
                .build()
                .unwrap(),
        );
        let p = Arc::clone(&pool);
        spawn(move || drop(p.acquire(16))).join().unwrap(); // idle, in the depot
        let p = Arc::clone(&pool);
        let small = spawn(move || p.try_acquire(16).map(drop).is_ok());
        let large = pool.try_acquire(32);
        let large_ok = large.is_ok();
        if let Err(err) = &large {
            assert!(matches!(err, AcquireError::LimitExceeded { .. }), "{err}");
        }
        drop(large);
        let small_ok = small.join().unwrap();
        assert!(large_ok || small_ok, "one of them fits");
        let s = pool.stats();
        assert!(s.allocated_memory <= 32, "{s}");
        assert_eq!(s.allocated_memory, s.idle_memory, "nothing in use: {s}");
        pool.trim();
        assert_eq!(pool.stats().allocated_memory, 0, "everything reachable");
    });
}

/// A thread waits for memory (`acquire_timeout`, which registers it as a
/// waiter) while another releases: a release seen under pressure frees its
/// buffer instead of caching it, so that the waiter can have the memory.
#[test]
fn a_waiter_at_the_limit_races_a_release() {
    model(|| {
        let pool = Arc::new(
            BufferPool::builder()
                .bucket_step(16)
                .max_capacity(32)
                .memory_limit(32)
                .max_idle_per_thread(1)
                .build()
                .unwrap(),
        );
        let held = pool.acquire_owned(32);
        let releaser = spawn(move || drop(held));
        let got = pool.acquire_timeout(16, Duration::ZERO);
        if let Err(err) = &got {
            assert!(matches!(err, AcquireError::TimedOut { .. }), "{err}");
        }
        drop(got);
        releaser.join().unwrap();
        let s = pool.stats();
        assert!(s.allocated_memory <= 32, "{s}");
        assert_eq!(s.allocated_memory, s.idle_memory, "nothing in use: {s}");
        pool.trim();
        assert_eq!(pool.stats().allocated_memory, 0, "everything reachable");
    });
}

/// Counts its wake-ups. (A `std` atomic: it is read only after the thread
/// that may wake it has been joined, which orders it.)
#[derive(Default)]
struct Wakes(AtomicUsize);

impl Wake for Wakes {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, SeqCst);
    }
}

fn counting_waker() -> (Arc<Wakes>, Waker) {
    let wakes = Arc::new(Wakes::default());
    (Arc::clone(&wakes), Waker::from(wakes))
}

fn poll<F: Future + Unpin>(f: &mut F, waker: &Waker) -> Poll<F::Output> {
    Pin::new(f).poll(&mut Context::from_waker(waker))
}

/// What a wait got: at its first poll (`first`), or else at its second,
/// after exactly one wake (`woke` says whose), which means it was served.
fn ready_or_woken<F, B, E>(
    first: Poll<Result<B, E>>,
    wait: &mut F,
    waker: &Waker,
    wakes: &Wakes,
    woke: &str,
) -> B
where
    F: Future<Output = Result<B, E>> + Unpin,
    E: std::fmt::Debug,
{
    match first {
        Poll::Ready(got) => got.unwrap(),
        Poll::Pending => {
            assert_eq!(wakes.0.load(SeqCst), 1, "{woke}");
            match poll(wait, waker) {
                Poll::Ready(got) => got.unwrap(),
                Poll::Pending => panic!("woken, so it was served: {woke}"),
            }
        }
    }
}

/// One bucket of 16 bytes under a limit of `limit` bytes. Buffers above 16
/// bytes are oversize: never pooled, so dropping one always frees its
/// memory, whoever drops it (the race modelled is the free's, not the
/// release path's choice between keeping a buffer and freeing it).
fn limited_pool(limit: usize) -> Arc<BufferPool> {
    let pool = BufferPool::builder()
        .bucket_step(16)
        .max_capacity(16)
        .memory_limit(limit)
        .max_idle_per_thread(1)
        .build()
        .unwrap();
    Arc::new(pool)
}

/// The audit of the waiting models: nothing in use, nobody waiting (a
/// release is cached again), and every byte reachable.
fn audit_limited(pool: &BufferPool, limit: u64) {
    let s = pool.stats();
    assert!(s.allocated_memory <= limit, "{s}");
    assert_eq!(s.allocated_memory, s.idle_memory, "nothing in use: {s}");
    pool.trim();
    let s = pool.stats();
    assert_eq!(s.allocated_memory, 0, "{s}");
}

/// A free on another thread races a task that finds no memory and joins
/// the queue: either the task's first poll gets the memory, or the task is
/// woken, and then its next poll does. The free between "no memory" and
/// "in the queue" must not be lost.
#[test]
fn a_free_races_a_waiter_joining_the_queue() {
    model(|| {
        let pool = limited_pool(32);
        let held = pool.acquire_owned(32); // oversize: the whole limit
        let t = spawn(move || drop(held));
        let (wakes, waker) = counting_waker();
        let mut wait = pool.acquire_owned_async(16);
        let first = poll(&mut wait, &waker);
        t.join().unwrap();
        let buf = ready_or_woken(first, &mut wait, &waker, &wakes, "the free woke the waiter");
        assert_eq!(buf.capacity(), 16);
        drop(buf);
        drop(wait);
        audit_limited(&pool, 32);
    });
}

/// As above, but behind a waiter that was granted and has not come back for
/// its grant: the "someone waits" bit was cleared when that grant was made
/// (it means a waiter not yet granted), so the joining task sets it again
/// itself, with the queue not empty. The free between "no memory" and "in
/// the queue" must not be lost either.
#[test]
fn a_free_races_a_waiter_joining_behind_a_granted_one() {
    model(|| {
        let pool = limited_pool(48);
        let held = pool.acquire_owned(48); // oversize: the whole limit
        let (_, waker_a) = counting_waker();
        let mut a = pool.acquire_owned_async(16);
        assert!(poll(&mut a, &waker_a).is_pending());
        drop(held); // grants `a` its 16 bytes; nobody else waits
        let other = pool.acquire_owned(32); // the rest of the limit
        let t = spawn(move || drop(other));
        let (wakes, waker) = counting_waker();
        let mut b = pool.acquire_owned_async(32);
        let first = poll(&mut b, &waker);
        t.join().unwrap();
        let buf = ready_or_woken(first, &mut b, &waker, &wakes, "the free woke the waiter");
        assert_eq!(buf.capacity(), 32);
        drop(a); // gives its grant up
        drop(buf);
        drop(b);
        audit_limited(&pool, 48);
    });
}

/// A waiter dropped while a free on another thread grants it its memory:
/// whether it leaves before the grant or after, the next waiter gets the
/// memory and is woken.
#[test]
fn a_dropped_waiter_passes_its_wake_up_on() {
    model(|| {
        let pool = limited_pool(48);
        let held = pool.acquire_owned(48);
        let (_, waker_a) = counting_waker();
        let (wakes_b, waker_b) = counting_waker();
        // Both want 32 bytes: the 48 freed fit only one of them.
        let mut a = pool.acquire_owned_async(32);
        let mut b = pool.acquire_owned_async(32);
        assert!(poll(&mut a, &waker_a).is_pending());
        assert!(poll(&mut b, &waker_b).is_pending());
        let t = spawn(move || drop(held));
        drop(a);
        t.join().unwrap();
        assert_eq!(wakes_b.0.load(SeqCst), 1, "the memory went to the next");
        match poll(&mut b, &waker_b) {
            Poll::Ready(got) => assert_eq!(got.unwrap().capacity(), 32),
            Poll::Pending => panic!("woken, so its memory was reserved"),
        }
        drop(b);
        audit_limited(&pool, 48);
    });
}

/// A release of a pooled buffer races a task that finds no memory and joins
/// the queue for a buffer of the same bucket. Seeing the task wait, the
/// release hands it the buffer itself, and the task's next poll gets that
/// very buffer as a pooled acquire. Not seeing it yet, the release keeps
/// the buffer idle (sent home, or in the depot as the releasing thread
/// exits), out of the waiter's reach: a trim frees it, and the free serves
/// the waiter. Either way the books balance and the limit holds.
#[test]
fn a_release_hands_its_buffer_to_a_waiter() {
    model(|| {
        let pool = limited_pool(16);
        let held = pool.acquire_owned(16); // pooled, the whole limit
        let ptr = held.as_ptr() as usize;
        let t = spawn(move || drop(held));
        let (wakes, waker) = counting_waker();
        let mut wait = pool.acquire_owned_async(16);
        let first = poll(&mut wait, &waker);
        t.join().unwrap();
        let buf = match first {
            Poll::Ready(got) => got.unwrap(), // the release came first
            Poll::Pending => {
                if wakes.0.load(SeqCst) == 0 {
                    // Missed: idle where only a trim or its thread frees it.
                    pool.trim();
                }
                assert_eq!(wakes.0.load(SeqCst), 1, "woken once");
                match poll(&mut wait, &waker) {
                    Poll::Ready(got) => got.unwrap(),
                    Poll::Pending => panic!("woken, so it was granted"),
                }
            }
        };
        let b = pool.stats().buckets[0];
        if b.pooled == 1 {
            assert_eq!(buf.as_ptr() as usize, ptr, "the very buffer");
            assert_eq!(b.non_pooled, 1, "nothing allocated for the waiter");
        } else {
            assert_eq!(b.non_pooled, 2, "allocated on the memory freed: {b:?}");
        }
        drop(buf);
        drop(wait);
        audit_limited(&pool, 16);
    });
}

/// A free races a waiter that joins behind one that does not fit (48 bytes
/// wanted, 32 held): the small one passes it, on its first poll or woken by
/// the free (a release of a 16-byte buffer, granted to it whole or freed),
/// and the large one is served once everything is back.
#[test]
fn a_free_serves_a_waiter_behind_one_that_does_not_fit() {
    model(|| {
        let pool = limited_pool(48);
        let held = pool.acquire_owned(32); // oversize
        let other = pool.acquire_owned(16);
        let (big_wakes, big_waker) = counting_waker();
        let mut big = pool.acquire_owned_async(48);
        assert!(poll(&mut big, &big_waker).is_pending());
        let t = spawn(move || drop(other));
        let (wakes, waker) = counting_waker();
        let mut small = pool.acquire_owned_async(16);
        let first = poll(&mut small, &waker);
        t.join().unwrap();
        let buf = ready_or_woken(
            first,
            &mut small,
            &waker,
            &wakes,
            "the free woke the small waiter",
        );
        assert_eq!(buf.capacity(), 16);
        assert_eq!(big_wakes.0.load(SeqCst), 0, "32 bytes held: not yet");
        drop(buf);
        drop(held);
        let Poll::Ready(Ok(got)) = poll(&mut big, &big_waker) else {
            panic!("everything back: the large waiter's turn");
        };
        drop(got);
        drop((big, small));
        audit_limited(&pool, 48);
    });
}

/// A closed waiter (passed as often as it may be: once, under loom) leaves
/// the queue while a free runs: the waiter behind it, which the free could
/// not serve past it, is served by the leave, or by the free if the leave
/// came first.
#[test]
fn a_closed_waiter_leaving_races_a_free() {
    model(|| {
        let pool = limited_pool(48);
        let held = pool.acquire_owned(32); // oversize
        let (_, big_waker) = counting_waker();
        let mut big = pool.acquire_owned_async(48);
        assert!(poll(&mut big, &big_waker).is_pending());
        let (_, waker1) = counting_waker();
        let mut small1 = pool.acquire_owned_async(16);
        let Poll::Ready(Ok(buf1)) = poll(&mut small1, &waker1) else {
            panic!("16 bytes free: it passes the large waiter, which closes");
        };
        let (wakes, waker2) = counting_waker();
        let mut small2 = pool.acquire_owned_async(16);
        assert!(
            poll(&mut small2, &waker2).is_pending(),
            "behind the closed one"
        );
        let t = spawn(move || drop(big));
        drop(buf1);
        t.join().unwrap();
        assert_eq!(wakes.0.load(SeqCst), 1, "the leave or the free served it");
        let Poll::Ready(Ok(buf2)) = poll(&mut small2, &waker2) else {
            panic!("woken, so its memory was granted");
        };
        drop(buf2);
        drop(held);
        drop((small1, small2));
        audit_limited(&pool, 48);
    });
}

/// A thread releases a buffer on its owner path (pooled in its own cache)
/// and exits, racing a task that finds no memory and joins the queue. The
/// task's reclaim takes the buffer from that cache or from the depot its
/// exit moves it to, unless it looks while the exiting thread holds it
/// between the two (taken out of the cache, not yet in the depot; or, on a
/// machine, while the releaser is inside its push past the reclaim's
/// bounded wait for it). So the release, having pushed, and the exit,
/// having moved its buffers, must look for waiters again and serve them.
/// Before, neither did: the task slept with the buffer idle in the depot
/// (the threads' hold-and-wait test stalled so, rarely, on a loaded CI
/// machine: 6 threads asleep, 28 KiB idle, 2 threads exited).
#[test]
fn a_release_then_an_exit_race_a_waiter_joining() {
    use loom::sync::atomic::AtomicBool;
    model(|| {
        let pool = Arc::new(
            BufferPool::builder()
                .bucket_step(16)
                .max_capacity(16)
                .memory_limit(16)
                .max_idle_per_thread(1)
                .build()
                .unwrap(),
        );
        let held = Arc::new(AtomicBool::new(false));
        let t = spawn({
            let pool = Arc::clone(&pool);
            let held = Arc::clone(&held);
            move || {
                // Acquired here: homed in this thread's cache, where its
                // release on this thread pushes it; then the thread exits.
                let buf = pool.acquire(16);
                held.store(true, SeqCst);
                drop(buf);
            }
        });
        while !held.load(SeqCst) {
            loom::thread::yield_now();
        }
        let (wakes, waker) = counting_waker();
        let mut wait = pool.acquire_owned_async(16);
        let first = poll(&mut wait, &waker);
        t.join().unwrap();
        let buf = ready_or_woken(
            first,
            &mut wait,
            &waker,
            &wakes,
            "the release woke the waiter",
        );
        assert_eq!(buf.capacity(), 16);
        drop(buf);
        drop(wait);
        audit_limited(&pool, 16);
    });
}
