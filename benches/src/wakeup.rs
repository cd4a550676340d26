//! W10: the wake-up latency of a wait for memory. One thread waits at the
//! pool's memory limit; another, holding all of the memory, frees it; the
//! latency is the time from just before the free to the waiter holding its
//! buffer. The two threads take turns (ping-pong), each waiting in one round
//! and freeing in the next, so that every round measures a waiter that is
//! really asleep: the freeing thread starts only once the waiter has joined
//! the queue.
//!
//! Baselines, measured the same way: a `Mutex` + `Condvar` handoff, and a
//! bare `Thread::unpark` (the operating system's floor).

use std::future::Future;
use std::hint::spin_loop;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use recycler_core::buffer::{BufferPool, OwnedPooledBuf};

/// How the waiter waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiter {
    /// `BufferPool::acquire_owned_async`, polled by a minimal executor that
    /// parks its thread: the pool's queue, grant and waker.
    PoolAsync,
    /// A `Mutex<Option<token>>` and a `Condvar`: the waiter waits while it
    /// is empty, the releaser fills it and notifies.
    Condvar,
    /// A flag and `Thread::unpark`: no queue, no lock.
    Unpark,
}

impl Waiter {
    /// The three, in the order reports list them.
    pub const ALL: [Waiter; 3] = [Waiter::PoolAsync, Waiter::Condvar, Waiter::Unpark];

    /// The name of its row.
    pub fn name(self) -> &'static str {
        match self {
            Waiter::PoolAsync => "pool_async",
            Waiter::Condvar => "condvar",
            Waiter::Unpark => "unpark",
        }
    }
}

/// The size of the buffer waited for: the whole limit.
const SIZE: usize = 4096;

/// What the two threads share.
struct Turns {
    /// `r + 1` once the waiter of round `r` is asleep (or about to be, in a
    /// way that cannot miss the wake-up).
    waiting: AtomicUsize,
    /// When the free of the current round began, in ns since `base`.
    stamp: AtomicU64,
    base: Instant,
}

impl Turns {
    fn new() -> Self {
        Self {
            waiting: AtomicUsize::new(0),
            stamp: AtomicU64::new(0),
            base: Instant::now(),
        }
    }

    fn now(&self) -> u64 {
        self.base.elapsed().as_nanos() as u64
    }

    /// The releaser of round `r`: waits until the waiter is asleep, then
    /// stamps the time.
    fn start_release(&self, r: usize) {
        let mut spins = 0u32;
        while self.waiting.load(Ordering::Acquire) != r + 1 {
            spins += 1;
            if spins.is_multiple_of(64) {
                thread::yield_now(); // two threads may share one core
            } else {
                spin_loop();
            }
        }
        self.stamp.store(self.now(), Ordering::Release);
    }

    /// The waiter of round `r`, woken: the latency since the stamp.
    fn latency(&self) -> Duration {
        let now = self.now();
        Duration::from_nanos(now.saturating_sub(self.stamp.load(Ordering::Acquire)))
    }
}

/// Unparks a thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }

    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// `rounds` wake-ups of a waiter of kind `waiter`; returns each one's
/// latency, in round order.
pub fn wakeup_latencies(waiter: Waiter, rounds: usize) -> Vec<Duration> {
    let turns = Arc::new(Turns::new());
    let run = |me: usize, turns: Arc<Turns>, side: Side| {
        thread::spawn(move || side.run(me, rounds, &turns))
    };
    let (a, b) = Side::pair(waiter);
    let ta = run(0, Arc::clone(&turns), a);
    let tb = run(1, Arc::clone(&turns), b);
    let mut by_round: Vec<(usize, Duration)> = ta.join().expect("side 0");
    by_round.extend(tb.join().expect("side 1"));
    by_round.sort_by_key(|&(r, _)| r);
    by_round.into_iter().map(|(_, d)| d).collect()
}

/// One of the two threads, with what its kind of waiting needs.
enum Side {
    /// The pool, and the buffer this side holds at first (side 1: all the
    /// memory).
    Pool(Arc<BufferPool>, Option<OwnedPooledBuf>),
    /// The round whose release filled the slot last, and its condvar.
    Condvar(Arc<(Mutex<Option<usize>>, Condvar)>),
    Unpark(Arc<UnparkShared>),
}

/// The flags (one per side, set by the other) and the two threads of
/// [`Waiter::Unpark`].
struct UnparkShared {
    ready: [AtomicBool; 2],
    threads: Mutex<[Option<Thread>; 2]>,
}

impl Side {
    fn pair(waiter: Waiter) -> (Side, Side) {
        match waiter {
            Waiter::PoolAsync => {
                let pool = BufferPool::builder()
                    .memory_limit(SIZE)
                    .build()
                    .expect("valid W10 pool");
                let pool = Arc::new(pool);
                let held = pool.acquire_owned(SIZE);
                (
                    Side::Pool(Arc::clone(&pool), None),
                    Side::Pool(pool, Some(held)),
                )
            }
            Waiter::Condvar => {
                let cv = Arc::new((Mutex::new(None), Condvar::new()));
                (Side::Condvar(Arc::clone(&cv)), Side::Condvar(cv))
            }
            Waiter::Unpark => {
                let shared = Arc::new(UnparkShared {
                    ready: [AtomicBool::new(false), AtomicBool::new(false)],
                    threads: Mutex::new([None, None]),
                });
                (Side::Unpark(Arc::clone(&shared)), Side::Unpark(shared))
            }
        }
    }

    /// Side `me` of `rounds` rounds: it waits in rounds `r % 2 == me` and
    /// releases in the others (side 1 holds the memory at first). Returns
    /// the latencies of its waits, by round.
    fn run(self, me: usize, rounds: usize, turns: &Turns) -> Vec<(usize, Duration)> {
        let mut out = Vec::with_capacity(rounds / 2 + 1);
        match self {
            Side::Pool(pool, mut held) => {
                let waker = Waker::from(Arc::new(Unpark(thread::current())));
                for r in 0..rounds {
                    if r % 2 == me {
                        let mut wait = pin!(pool.acquire_owned_async(SIZE));
                        let mut cx = Context::from_waker(&waker);
                        let mut polled = wait.as_mut().poll(&mut cx);
                        // In the queue now: a free from here on wakes it.
                        turns.waiting.store(r + 1, Ordering::Release);
                        let buf = loop {
                            if let Poll::Ready(got) = polled {
                                break got.expect("memory is freed for it");
                            }
                            thread::park();
                            polled = wait.as_mut().poll(&mut cx);
                        };
                        out.push((r, turns.latency()));
                        held = Some(buf);
                    } else {
                        turns.start_release(r);
                        drop(held.take()); // someone waits: freed, granted
                    }
                }
            }
            Side::Condvar(cv) => {
                // The waiter of round `r` waits for the release of round
                // `r`: a release cannot be taken by the next round's waiter.
                let (lock, cond) = &*cv;
                for r in 0..rounds {
                    if r % 2 == me {
                        let mut slot = lock.lock().unwrap();
                        // Set under the lock, which the releaser takes to
                        // fill the slot: it cannot miss the wait below.
                        turns.waiting.store(r + 1, Ordering::Release);
                        while *slot != Some(r) {
                            slot = cond.wait(slot).unwrap();
                        }
                        drop(slot);
                        out.push((r, turns.latency()));
                    } else {
                        turns.start_release(r);
                        *lock.lock().unwrap() = Some(r);
                        cond.notify_one();
                    }
                }
            }
            Side::Unpark(shared) => {
                shared.threads.lock().unwrap()[me] = Some(thread::current());
                let other = loop {
                    if let Some(t) = shared.threads.lock().unwrap()[1 - me].clone() {
                        break t;
                    }
                    thread::yield_now();
                };
                for r in 0..rounds {
                    if r % 2 == me {
                        turns.waiting.store(r + 1, Ordering::Release);
                        while !shared.ready[me].swap(false, Ordering::Acquire) {
                            thread::park();
                        }
                        out.push((r, turns.latency()));
                    } else {
                        turns.start_release(r);
                        shared.ready[1 - me].store(true, Ordering::Release);
                        other.unpark();
                    }
                }
            }
        }
        out
    }
}

/// The median and the 99th percentile of `latencies` (nearest rank).
pub fn median_p99(latencies: &[Duration]) -> (Duration, Duration) {
    if latencies.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    let mut v = latencies.to_vec();
    v.sort();
    let rank = |p: f64| v[((p * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1];
    (rank(0.5), rank(0.99))
}

/// Polls `f` on this thread until it is ready, parked in between: the
/// minimal executor of the examples.
pub fn block_on<F: Future>(f: F) -> F::Output {
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut f = pin!(f);
    loop {
        match f.as_mut().poll(&mut cx) {
            Poll::Ready(out) => return out,
            Poll::Pending => thread::park(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_measures_every_round() {
        for waiter in Waiter::ALL {
            let lat = wakeup_latencies(waiter, 20);
            assert_eq!(lat.len(), 20, "{}", waiter.name());
        }
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let ms = |n| Duration::from_millis(n);
        let v: Vec<Duration> = (1..=100).map(ms).collect();
        assert_eq!(median_p99(&v), (ms(50), ms(99)));
        assert_eq!(median_p99(&[ms(3)]), (ms(3), ms(3)));
        assert_eq!(median_p99(&[]), (Duration::ZERO, Duration::ZERO));
    }

    #[test]
    fn block_on_runs_a_wait_to_its_end() {
        let pool = Arc::new(BufferPool::builder().memory_limit(SIZE).build().unwrap());
        let held = pool.acquire_owned(SIZE);
        let t = thread::spawn(move || drop(held));
        t.join().unwrap();
        assert_eq!(
            block_on(pool.acquire_owned_async(SIZE)).unwrap().capacity(),
            SIZE
        );
    }
}
