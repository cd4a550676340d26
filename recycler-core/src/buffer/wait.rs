//! Waiting for memory at the limit: the queue of those that wait (tasks in
//! `acquire_async` and `acquire_owned_async`, threads in `acquire_timeout`
//! and `acquire_owned_timeout`), the frees that serve it, and the waits
//! themselves ([`Waiting`], and the futures and the blocking loop built on
//! it).
//!
//! # Grants, in order
//!
//! A free that finds the ledger's waiting bit set (see [`super::limit`])
//! serves the queue: while the first waiter not yet served fits under the
//! limit, it reserves that waiter's bytes on the waiter's behalf, marks it
//! granted and wakes it; the waiter then allocates its buffer on the bytes
//! reserved for it. So the memory freed goes to the waiters in the order they
//! came, and nothing can take it from them between the free and the wake-up.
//! A waiter that does not fit holds up those behind it (strictly first come,
//! first served: a stream of small requests cannot starve a large one).
//!
//! Requests that do not wait (`try_acquire`, `acquire`, a buffer's growth,
//! `prefill`) are not held back by the queue: they take memory that is free,
//! which is memory the first waiter does not fit in. A wait starts with such
//! a try only while nobody waits; once someone does, a new wait joins the
//! queue behind them at once.
//!
//! # No lost wake-up
//!
//! A wait whose first try found no memory (1) joins the queue, setting the
//! waiting bit with a read-modify-write of the ledger's word if the queue
//! was empty, both under the queue's lock; (2) frees the idle buffers it can
//! reach; (3) serves the queue itself; (4) looks whether it was granted.
//! Call `S` the write that set the bit for this wait: its own in (1), or,
//! if the queue was not empty, that of the wait that made it non-empty,
//! under a lock taken before (1)'s; the bit stays set from `S` on while
//! this wait is in the queue. Take a free `F` around (1). Its `fetch_sub`
//! and `S` are read-modify-writes of one word, so they are ordered in the
//! word's modification order, and each reads the value just before it.
//!
//! - `F` before `S`: `S` happens before (3) reads the word (program order,
//!   or through the lock), so by coherence (3) reads it as of `S` or later,
//!   which counts `F`'s bytes freed: (3) sees them, with this wait queued.
//! - `F` after `S`: `F` reads the bit and serves the queue, taking the lock.
//!   If its lock comes after (1)'s, it sees this wait; if before, `F`
//!   happens before (1), hence before (3), which then sees `F`'s bytes.
//!
//! So some serve sees every free together with this wait, and serving
//! grants in order while the first waiter not yet served fits; a waiter
//! that leaves serves the next one in turn (below). No
//! fence is needed, and no ordering stronger than `Relaxed` on the word:
//! the queue's lock orders everything else (grants, wakers, leaving). The
//! loom models in `tests/tests/loom_buffer.rs` run the race.
//!
//! # Cancel safety
//!
//! A wait dropped while in the queue leaves it and has reserved nothing. If
//! it had been granted and not yet taken its grant, it frees the grant,
//! which serves the next waiter: its wake-up passes on. If it was the first
//! waiter not yet granted, it serves the queue, since the next one may fit
//! where it did not.
//!
//! # What wakes a waiter
//!
//! Frees: a buffer dropped (released while anyone waits, above
//! `max_capacity`, grown past it, evicted, trimmed, over the idle cap), and
//! a granted waiter that leaves. Memory idle in a thread's cache is not
//! free, and only that thread can free it. While anyone waits, releases
//! free their buffer rather than keep it ([`PoolInner::under_pressure`], one
//! relaxed load of the bit), so that memory in use reaches the waiters, and
//! if the waiters want more than is free, also the idle buffers their
//! thread can reach ([`PoolInner::reclaim_for_waiters`]). A release that
//! runs just as the first waiter joins may not see the bit yet and keep its
//! buffer in its thread's cache, where that thread's next acquire uses it,
//! or its next release while anyone waits frees it.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::buf::Buf;
use super::guard::{OwnedPooledBuf, PooledBuf};
use super::inner::PoolInner;
use super::limit::Ledger;
use super::pool::BufferPool;
use super::raw::AlignedBuf;
use crate::error::AcquireError;
use crate::home::Home;
use crate::loom::{Arc, Mutex, MutexGuard};

/// A buffer taken apart, for a guard to be made of: the buffer, its home,
/// its origin.
pub(crate) type Parts = (Box<Buf>, Home<Buf>, u32);

/// How to wake a waiter.
enum Wake {
    /// A task's waker.
    Task(Waker),
    /// A thread parked in a blocking wait.
    Thread(Thread),
}

impl Wake {
    fn wake(self) {
        match self {
            Self::Task(waker) => waker.wake(),
            Self::Thread(thread) => thread.unpark(),
        }
    }
}

/// One waiter in the queue.
struct Entry {
    /// Increasing in queue order, so that a waiter finds its entry by binary
    /// search.
    id: u64,
    /// The bytes its buffer takes on the ledger.
    bytes: u64,
    /// Its bytes are reserved for it: it takes them when it next looks.
    granted: bool,
    /// How to wake it; taken when it is granted.
    wake: Option<Wake>,
}

struct Queue {
    entries: VecDeque<Entry>,
    next_id: u64,
    /// The bytes of the waiters not yet granted.
    wanted: u64,
}

impl Queue {
    fn find(&self, id: u64) -> Option<usize> {
        self.entries.binary_search_by_key(&id, |e| e.id).ok()
    }

    /// Takes entry `i` out, clearing the waiting bit if it was the last. The
    /// caller drops the entry (its waker) after unlocking.
    fn remove(&mut self, i: usize, ledger: &Ledger) -> Option<Entry> {
        let entry = self.entries.remove(i);
        if let Some(e) = entry.as_ref().filter(|e| !e.granted) {
            self.wanted -= e.bytes;
        }
        if self.entries.is_empty() {
            ledger.set_waiting(false);
        }
        entry
    }
}

/// The queue of a pool's waiters, first come first served; kept in the
/// pool's [`Ledger`], whose frees serve it.
///
/// No user code runs under its lock (wakers are cloned, woken and dropped
/// outside it), and nothing frees memory under it, since a free may serve
/// the queue.
pub(crate) struct WaitQueue {
    queue: Mutex<Queue>,
}

/// What a waiter found when it looked.
enum Polled {
    /// Its bytes are reserved: it has left the queue.
    Granted,
    /// Still waiting.
    Waiting,
    /// It is not in the queue (never: only a waiter takes itself out).
    Missing,
}

impl WaitQueue {
    pub(crate) fn new() -> Self {
        Self {
            queue: Mutex::new(Queue {
                entries: VecDeque::new(),
                next_id: 0,
                wanted: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Queue> {
        // Nothing panics while the lock is held; stay usable even so.
        self.queue
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Joins the queue, at its end, for `bytes`, woken by `wake`; sets the
    /// ledger's waiting bit if the queue was empty. Returns the waiter's id
    /// and the bytes the waiters not yet granted want, up to and including
    /// this one. The caller then serves the queue (see the module docs).
    fn join(&self, ledger: &Ledger, bytes: u64, wake: Wake) -> (u64, u64) {
        let mut q = self.lock();
        let id = q.next_id;
        q.next_id += 1;
        if q.entries.is_empty() {
            ledger.set_waiting(true);
        }
        q.entries.push_back(Entry {
            id,
            bytes,
            granted: false,
            wake: Some(wake),
        });
        // At most the limit each, and a waiter per thread or task: no
        // overflow.
        q.wanted += bytes;
        (id, q.wanted)
    }

    /// The bytes the waiters not yet granted want.
    pub(crate) fn wanted(&self) -> u64 {
        self.lock().wanted
    }

    /// Grants the waiters their bytes, in order, while the first one not yet
    /// granted fits under the limit, and wakes each one granted.
    #[cold]
    #[inline(never)]
    pub(crate) fn serve(&self, ledger: &Ledger) {
        loop {
            let wake = {
                let mut q = self.lock();
                let Some(first) = q.entries.iter_mut().find(|e| !e.granted) else {
                    return;
                };
                if ledger.reserve(first.bytes).is_err() {
                    return;
                }
                first.granted = true;
                let (bytes, wake) = (first.bytes, first.wake.take());
                q.wanted -= bytes;
                wake
            };
            // Outside the lock: a waker is user code.
            if let Some(wake) = wake {
                wake.wake();
            }
        }
    }

    /// Looks whether waiter `id` was granted (then it leaves the queue);
    /// else keeps `waker` as how to wake it (`None`: the thread that joined).
    fn poll(&self, ledger: &Ledger, id: u64, waker: Option<&Waker>) -> Polled {
        let mut fresh: Option<Wake> = None;
        loop {
            let mut q = self.lock();
            let Some(i) = q.find(id) else {
                return Polled::Missing;
            };
            if q.entries[i].granted {
                let entry = q.remove(i, ledger);
                drop(q);
                drop(entry);
                return Polled::Granted;
            }
            let Some(waker) = waker else {
                return Polled::Waiting;
            };
            let entry = &mut q.entries[i];
            if matches!(&entry.wake, Some(Wake::Task(w)) if w.will_wake(waker)) {
                return Polled::Waiting;
            }
            if let Some(new) = fresh.take() {
                let old = entry.wake.replace(new);
                drop(q);
                drop(old);
                return Polled::Waiting;
            }
            // Cloning a waker is user code: not under the lock.
            drop(q);
            fresh = Some(Wake::Task(waker.clone()));
        }
    }

    /// Takes waiter `id` out of the queue. Returns the bytes of its grant if
    /// it had one, which the caller takes or frees; else, if it was the
    /// first waiter not yet granted, serves the queue for the next.
    fn leave(&self, ledger: &Ledger, id: u64) -> Option<u64> {
        let mut q = self.lock();
        let i = q.find(id)?;
        let first = q.entries.iter().take(i).all(|e| e.granted);
        let entry = q.remove(i, ledger)?;
        drop(q);
        if entry.granted {
            return Some(entry.bytes);
        }
        drop(entry);
        if first {
            self.serve(ledger);
        }
        None
    }

    /// Waiters in the queue (granted or not), for tests.
    #[cfg(all(test, not(loom)))]
    pub(crate) fn len(&self) -> usize {
        self.lock().entries.len()
    }
}

/// How a wait reaches its pool: by reference, or through the `Arc` of an
/// owned wait.
pub(crate) trait PoolHandle {
    fn pool(&self) -> &PoolInner;
}

impl PoolHandle for &PoolInner {
    fn pool(&self) -> &PoolInner {
        self
    }
}

impl PoolHandle for Arc<BufferPool> {
    fn pool(&self) -> &PoolInner {
        self.inner()
    }
}

/// One acquire that may wait for memory; leaves the queue when dropped
/// (see the module docs).
pub(crate) struct Waiting<P: PoolHandle> {
    pool: P,
    capacity: usize,
    /// In the queue: the waiter's id and the bytes of its request.
    queued: Option<(u64, u64)>,
}

impl<P: PoolHandle> Waiting<P> {
    pub(crate) fn new(pool: P, capacity: usize) -> Self {
        Self {
            pool,
            capacity,
            queued: None,
        }
    }

    /// Moves the wait on: the buffer, once there is one; the error, if there
    /// can never be one; else `Pending`, and `waker` is woken when it is
    /// worth polling again (`None`: the calling thread is unparked).
    pub(crate) fn poll(&mut self, waker: Option<&Waker>) -> Poll<Result<Parts, AcquireError>> {
        let pool = self.pool.pool();
        let idx = pool.bucket_index(self.capacity);
        loop {
            let Some((id, _)) = self.queued else {
                let bytes = match pool.wait_bytes(self.capacity, idx) {
                    Ok(bytes) => bytes,
                    Err(err) => return Poll::Ready(Err(err)),
                };
                // While others wait, join the queue behind them.
                if !pool.under_pressure() {
                    match pool.try_parts(self.capacity, idx) {
                        Err(AcquireError::LimitExceeded { .. }) => {}
                        other => return Poll::Ready(other),
                    }
                }
                // No memory: join the queue at once. (The try did not
                // reclaim, to keep short the time in which a release on
                // another thread, not seeing anyone wait yet, keeps its
                // buffer in its own cache; the reclaim comes next.)
                let wake = match waker {
                    Some(waker) => Wake::Task(waker.clone()),
                    None => Wake::Thread(thread::current()),
                };
                let waiters = &pool.ledger.waiters;
                let (id, want) = waiters.join(&pool.ledger, bytes, wake);
                self.queued = Some((id, bytes));
                // Free what this thread can reach, then serve the queue
                // itself: a free since the try would otherwise be lost (see
                // the module docs).
                pool.reclaim_for(want);
                waiters.serve(&pool.ledger);
                continue;
            };
            return match pool.ledger.waiters.poll(&pool.ledger, id, waker) {
                Polled::Waiting => Poll::Pending,
                Polled::Granted => {
                    self.queued = None;
                    Poll::Ready(pool.acquire_reserved(self.capacity, idx))
                }
                Polled::Missing => {
                    self.queued = None;
                    continue;
                }
            };
        }
    }

    /// Gives up waiting (a blocking wait's deadline): the buffer if it was
    /// granted meanwhile, else `LimitExceeded` with the numbers as they are.
    fn give_up(&mut self) -> Result<Parts, AcquireError> {
        let pool = self.pool.pool();
        let idx = pool.bucket_index(self.capacity);
        let bytes = match self.queued.take() {
            Some((id, bytes)) => {
                if pool.ledger.waiters.leave(&pool.ledger, id).is_some() {
                    return pool.acquire_reserved(self.capacity, idx);
                }
                bytes
            }
            None => pool.wait_bytes(self.capacity, idx)?,
        };
        Err(AcquireError::LimitExceeded {
            requested: bytes as usize,
            allocated: pool.ledger.allocated(),
            limit: pool.ledger.limit().unwrap_or(u64::MAX),
        })
    }
}

impl<P: PoolHandle> Drop for Waiting<P> {
    fn drop(&mut self) {
        if let Some((id, _)) = self.queued.take() {
            let ledger = &self.pool.pool().ledger;
            if let Some(granted) = ledger.waiters.leave(ledger, id) {
                // Passes the wake-up on: the free serves the next waiter.
                ledger.free(granted);
            }
        }
    }
}

/// The future of [`BufferPool::acquire_async`].
pub(crate) struct Acquire<'a>(Waiting<&'a PoolInner>);

impl<'a> Acquire<'a> {
    pub(crate) fn new(pool: &'a PoolInner, capacity: usize) -> Self {
        Self(Waiting::new(pool, capacity))
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<PooledBuf<'a>, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let pool: &'a PoolInner = this.0.pool;
        this.0
            .poll(Some(cx.waker()))
            .map(|got| got.map(|(buf, home, origin)| PooledBuf::new(pool, buf, home, origin)))
    }
}

/// The future of [`BufferPool::acquire_owned_async`].
pub(crate) struct AcquireOwned(Waiting<Arc<BufferPool>>);

impl AcquireOwned {
    pub(crate) fn new(pool: Arc<BufferPool>, capacity: usize) -> Self {
        Self(Waiting::new(pool, capacity))
    }
}

impl Future for AcquireOwned {
    type Output = Result<OwnedPooledBuf, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        this.0.poll(Some(cx.waker())).map(|got| {
            got.map(|(buf, home, origin)| {
                OwnedPooledBuf::new(Arc::clone(&this.0.pool), buf, home, origin)
            })
        })
    }
}

impl PoolInner {
    /// The bytes a buffer for `capacity` (of bucket `idx`, oversize past
    /// the last) takes on the ledger: its bucket's capacity, or exactly
    /// `capacity`. Or the error `try_acquire` reports for a request that can
    /// never be served: a size no buffer can have, more than the limit.
    fn wait_bytes(&self, capacity: usize, idx: usize) -> Result<u64, AcquireError> {
        let bytes = match self.buckets.get(idx) {
            Some(bucket) => bucket.capacity,
            None => {
                let max = AlignedBuf::max_capacity(self.config.alignment);
                if capacity > max {
                    return Err(AcquireError::TooLarge {
                        requested: capacity,
                        max,
                    });
                }
                capacity
            }
        };
        match self.ledger.limit() {
            Some(limit) if bytes as u64 > limit => Err(AcquireError::LimitExceeded {
                requested: bytes,
                allocated: self.ledger.allocated(),
                limit,
            }),
            _ => Ok(bytes as u64),
        }
    }

    /// A buffer now, in parts: as `try_acquire` finds one, but without
    /// freeing idle buffers at the limit (a wait does that once in the
    /// queue).
    #[inline]
    fn try_parts(&self, capacity: usize, idx: usize) -> Result<Parts, AcquireError> {
        if let Some((buf, home)) = self.pop_fast(idx) {
            return Ok((buf, home, idx as u32));
        }
        self.acquire_slow_with(capacity, idx, |capacity| {
            // `wait_bytes` has checked the size.
            if let Err(allocated) = self.ledger.reserve(capacity as u64) {
                return Err(AcquireError::LimitExceeded {
                    requested: capacity,
                    allocated,
                    limit: self.ledger.limit().unwrap_or(u64::MAX),
                });
            }
            self.allocate_reserved(capacity)
        })
    }

    /// `acquire_timeout`: a buffer now, or once memory is freed for it, until
    /// `timeout` has passed; the calling thread parks meanwhile.
    pub(crate) fn acquire_blocking(
        &self,
        capacity: usize,
        timeout: Duration,
    ) -> Result<Parts, AcquireError> {
        let deadline = Instant::now().checked_add(timeout);
        let mut wait = Waiting::new(self, capacity);
        loop {
            if let Poll::Ready(got) = wait.poll(None) {
                return got;
            }
            match deadline {
                None => thread::park(),
                Some(deadline) => {
                    let now = Instant::now();
                    if now >= deadline {
                        return wait.give_up();
                    }
                    thread::park_timeout(deadline - now);
                }
            }
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

    /// Counts its wake-ups.
    #[derive(Default)]
    struct Count(AtomicUsize);

    impl std::task::Wake for Count {
        fn wake(self: std::sync::Arc<Self>) {
            self.wake_by_ref();
        }

        fn wake_by_ref(self: &std::sync::Arc<Self>) {
            self.0.fetch_add(1, SeqCst);
        }
    }

    fn waker() -> (std::sync::Arc<Count>, Waker) {
        let count = std::sync::Arc::new(Count::default());
        (std::sync::Arc::clone(&count), Waker::from(count))
    }

    #[test]
    fn grants_in_order_and_only_what_fits() {
        let ledger = Ledger::new(Some(100));
        ledger.reserve(100).unwrap();
        let q = &ledger.waiters;
        let (a, wa) = waker();
        let (b, wb) = waker();
        let (c, wc) = waker();
        assert_eq!(q.join(&ledger, 60, Wake::Task(wa)), (0, 60));
        assert_eq!(q.join(&ledger, 30, Wake::Task(wb)), (1, 90));
        assert_eq!(q.join(&ledger, 10, Wake::Task(wc)), (2, 100));
        assert!(ledger.under_pressure());
        ledger.free(50); // 50 free: the first (60) does not fit, and holds up the rest
        assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (0, 0));
        ledger.free(10); // 60 free: the first fits, then nothing is left
        assert_eq!((a.0.load(SeqCst), b.0.load(SeqCst)), (1, 0));
        assert_eq!(ledger.allocated(), 100, "the grant is reserved");
        ledger.free(40); // 40: the second (30) and the third (10)
        assert_eq!((b.0.load(SeqCst), c.0.load(SeqCst)), (1, 1));
        assert_eq!(ledger.allocated(), 100);
        assert!(matches!(q.poll(&ledger, 1, None), Polled::Granted));
        assert!(ledger.under_pressure(), "two still in the queue");
        assert_eq!(q.leave(&ledger, 0), Some(60), "granted, not yet taken");
        assert_eq!(q.leave(&ledger, 2), Some(10));
        assert_eq!(q.len(), 0);
        assert!(!ledger.under_pressure(), "the last one out clears the bit");
        assert!(matches!(q.poll(&ledger, 2, None), Polled::Missing));
    }

    #[test]
    fn the_first_leaving_serves_the_next() {
        let ledger = Ledger::new(Some(100));
        ledger.reserve(90).unwrap();
        let q = &ledger.waiters;
        let (_, wa) = waker();
        let (b, wb) = waker();
        q.join(&ledger, 50, Wake::Task(wa));
        q.join(&ledger, 10, Wake::Task(wb));
        q.serve(&ledger);
        assert_eq!(b.0.load(SeqCst), 0, "behind the first, which does not fit");
        assert_eq!(q.leave(&ledger, 0), None);
        assert_eq!(b.0.load(SeqCst), 1, "served when the first left");
        assert_eq!(ledger.allocated(), 100);
    }

    #[test]
    fn a_new_waker_replaces_the_old_outside_the_lock() {
        let ledger = Ledger::new(Some(10));
        ledger.reserve(10).unwrap();
        let q = &ledger.waiters;
        let (a, wa) = waker();
        let (b, wb) = waker();
        q.join(&ledger, 10, Wake::Task(wa.clone()));
        assert!(matches!(q.poll(&ledger, 0, Some(&wa)), Polled::Waiting));
        assert!(matches!(q.poll(&ledger, 0, Some(&wb)), Polled::Waiting));
        ledger.free(10);
        assert_eq!(
            (a.0.load(SeqCst), b.0.load(SeqCst)),
            (0, 1),
            "the latest waker"
        );
    }
}
