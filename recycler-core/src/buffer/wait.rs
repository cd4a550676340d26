//! Waiting for memory at the limit: the waits ([`Waiting`], and the
//! futures and the blocking loop built on it; [`WaitToGrow`], a growth's),
//! the methods of the pool that wait (tasks in `acquire_async` and
//! `acquire_owned_async`, threads in `acquire_timeout` and
//! `acquire_owned_timeout`, a buffer's `reserve_async`) and their counts in
//! the statistics. The queue they wait in, and the frees that serve it, are
//! in [`super::ledger`]; what the pool frees for them, in [`super::limit`].
//!
//! # Grants, in order
//!
//! A free that finds the ledger's waiting bit set (see [`super::ledger`])
//! serves the queue: in order, each waiter not yet served that fits under
//! the limit, it charges that waiter's bytes to the ledger on the waiter's
//! behalf, marks it granted and wakes it; the waiter then allocates its
//! buffer on the bytes charged for it. So the memory freed goes to the
//! waiters in the order they came, and nothing can take it from them
//! between the free and the wake-up.
//! A waiter that does not fit yet is passed by those behind it that do, at
//! most [`PASSES`](super::ledger::PASSES) times; then it is closed, and
//! holds up those behind it until it is served (so a stream of small
//! requests cannot starve a large one). `docs/buffers.md`, "Who is served
//! first", states the policy and its bounds.
//!
//! A release while anyone waits grants its buffer itself to the first waiter
//! not yet granted, if that waiter wants a bucket's buffer no larger than
//! it, or else, passing it, to the first one behind that it serves, unless
//! its bytes freed would serve the first or the first is closed
//! ([`WaitQueue::grant_buffer`](super::ledger::WaitQueue::grant_buffer)): the
//! buffer's memory, still allocated, is the grant, and the waiter reuses the
//! buffer (a pooled acquire) instead of allocating one. A larger buffer is
//! shrunk to the request first, and the bytes that frees serve the waiters
//! behind, unless they would not serve the next waiter and the buffer can
//! (then it goes whole, and serves that waiter when it comes back: see
//! [`super::limit`]). Otherwise the release frees its buffer, and the free
//! serves the queue as above. A waiter granted a buffer is followed by a
//! serve of the queue: the waiters behind it, held up by it, may fit in
//! the memory free. So under contention at the limit, where most acquires
//! wait, reuse goes on, with several sizes too: without these grants,
//! every acquire that waited allocated afresh.
//!
//! Requests that do not wait (`try_acquire`, `acquire`, a buffer's growth)
//! pass the waiters as a waiter behind them would: they take memory that is
//! free, counted as a pass of each waiter not yet granted, unless one of
//! those is closed (then the limit is full for them:
//! [`Ledger::charge_unqueued`](super::ledger::Ledger::charge_unqueued)).
//! `prefill` takes nothing while anyone waits. A wait starts with such a
//! try only while nobody waits; once someone does, a new wait joins the
//! queue behind them at once, and is served there if it fits.
//!
//! "Someone waits" is the ledger's waiting bit: a waiter *not yet granted*
//! is in the queue. Waiters granted but not yet back for their grant do not
//! count: the memory they wait for is charged for them (or is the buffer
//! granted to them), so releases may pool again and new requests try first.
//! A wait that never comes back (a future leaked with `mem::forget` while
//! in the queue) so costs the pool its grant, once it is granted, and
//! nothing more, as a leaked guard costs its buffer: its entry stays in the
//! queue, granted, holding the bytes or the buffer.
//!
//! # No lost wake-up
//!
//! A wait whose first try found no memory (1) joins the queue, setting the
//! waiting bit with a read-modify-write of the ledger's word if the queue
//! was empty, both under the queue's lock; (2) frees the idle buffers it can
//! reach; (3) serves the queue itself; (4) looks whether it was granted.
//! Call `S` the write that set the bit for this wait: its own in (1) if no
//! waiter in the queue was still to be granted, or else the last such
//! write before, by a wait that then found none, under a lock taken before
//! (1)'s. The
//! queue sets the bit as the count of waiters not yet granted leaves 0 and
//! clears it as the count returns to 0, both under its lock; the count is
//! not 0 from `S` until this wait is granted or leaves, so the bit stays set
//! from `S` on while this wait is not yet granted. Take a free `F` around
//! (1). Its `fetch_sub` and `S` are read-modify-writes of one word, so they
//! are ordered in the word's modification order, and each reads the value
//! just before it.
//!
//! - `F` before `S`: `S` happens before (3) reads the word (program order,
//!   or through the lock), so by coherence (3) reads it as of `S` or later,
//!   which counts `F`'s bytes freed: (3) sees them, with this wait queued.
//! - `F` after `S`, and before the clear that follows this wait's grant (or
//!   its leaving) in the word's order: `F` reads the bit and serves the
//!   queue, taking the lock. If its lock comes after (1)'s, it sees this
//!   wait; if before, `F` happens before (1), hence before (3), which then
//!   sees `F`'s bytes.
//! - `F` after that clear: this wait was granted (or left) before it, under
//!   the lock: nothing is lost for it.
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
//! A wait dropped while in the queue leaves it and has charged nothing. If
//! it had been granted and not yet taken its grant, it frees the grant,
//! which serves the next waiter: its wake-up passes on. If it was the first
//! waiter not yet granted, it serves the queue, since the next one may fit
//! where it did not.
//!
//! # What wakes a waiter
//!
//! A release granting its buffer, and frees: a buffer dropped (released
//! while anyone waits, above `max_capacity`, grown past it, evicted,
//! trimmed, over the idle cap), and a granted waiter that leaves.
//! While anyone waits, releases grant or free their buffer rather than
//! keep it ([`PoolShared::under_pressure`], one relaxed load of the bit), so
//! that memory in use reaches the waiters, and if the waiters want more
//! than is free, idle buffers are freed for them wherever they idle, other
//! threads' caches included ([`PoolShared::reclaim_for_waiters`],
//! [`crate::steal`]). A release that runs just as the first waiter joins
//! may not see the bit yet and keep its buffer in its thread's cache; the
//! waiter's reclaim waits for that release to end (up to a millisecond)
//! and takes it.
//!
//! Waking runs the waiter's waker on the thread that freed or released,
//! outside the queue's lock. A waker that panics is caught there and its
//! panic dropped (the panic hook has reported it): the rest of the queue is
//! served all the same, and the thread that freed, unrelated to the waiter,
//! never sees the panic (it may be dropping a buffer while it unwinds, or
//! in its thread-local teardown, where a panic aborts). The waiter keeps its
//! grant, for its next poll or its drop.
//!
//! # Waiting to grow
//!
//! [`WaitToGrow`], the future of `reserve_async`, is a buffer's growth
//! that waits at the `memory_limit` as `acquire_async` does, in the same
//! queue. It tries first (while nobody waits), as `try_reserve` does; at the
//! limit it joins the pool's queue of waiters for the bytes the growth adds
//! (the growth's target capacity, worked out as `reserve` works it out,
//! less the capacity now), frees the idle buffers it can reach, serves the
//! queue, and waits. A free that makes room for it charges the bytes to
//! the ledger for it and wakes it (the grants, the order and why no wake-up
//! is lost, above, all hold here, since this is one more waiter). Its poll
//! then grows the buffer on the bytes charged: never an overdraft. A
//! released buffer is never granted to it (its grant must be bytes, not a
//! buffer): it joins as a waiter that cannot take one.
//!
//! Cancel safe: dropped while it waits, it leaves the queue having charged
//! nothing, and bytes granted to it but not yet taken are freed, which
//! serves the next waiter; the buffer is unchanged.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::thread;
use std::time::{Duration, Instant};

use super::grow::try_reserve;
use super::guard::PooledBuf;
use super::ledger::{Polled, Wake};
use super::loan::Loan;
use super::owned::OwnedPooledBuf;
use super::pool::{BufferPool, PoolRef};
use super::raw::AlignedBuf;
use super::shared::PoolShared;
use super::sizes::{GROWN, Parts};
use crate::error::AcquireError;
use crate::loom::Arc;

/// One acquire that may wait for memory; leaves the queue when dropped
/// (see the module docs).
pub(crate) struct Waiting<P: PoolRef> {
    pool: P,
    capacity: usize,
    /// In the queue: the waiter's id and the bytes of its request.
    queued: Option<(u64, u64)>,
    /// Where the wait began, which the buffer is tracked as taken at
    /// (feature `track`).
    #[cfg(feature = "track")]
    at: &'static std::panic::Location<'static>,
}

impl<P: PoolRef> Waiting<P> {
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn new(pool: P, capacity: usize) -> Self {
        Self {
            pool,
            capacity,
            queued: None,
            #[cfg(feature = "track")]
            at: std::panic::Location::caller(),
        }
    }

    /// Records the buffer the wait got (feature `track`).
    #[cfg(feature = "track")]
    fn track(&self, parts: &Parts) {
        self.pool.pool_shared().track(&parts.0, self.at);
    }

    /// Moves the wait on: the buffer, once there is one; the error, if there
    /// can never be one; else `Pending`, and `waker` is woken when it is
    /// worth polling again (`None`: the calling thread is unparked).
    pub(crate) fn poll(&mut self, waker: Option<&Waker>) -> Poll<Result<Parts, AcquireError>> {
        let pool = self.pool.pool_shared();
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
                        other => {
                            return Poll::Ready(other.map_err(|e| e.requested_as(self.capacity)));
                        }
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
                let waiters = pool.ledger().waiters();
                // A released buffer may serve a request a bucket serves;
                // an exact-size one (oversize, or below `min_capacity`)
                // allocates its own.
                let takes_buffer = idx < pool.buckets().len();
                let id = waiters.join_for(pool.ledger(), bytes, wake, takes_buffer);
                self.queued = Some((id, bytes));
                pool.waits_joined(idx.min(pool.buckets().len()));
                // Free what this thread can reach, then serve the queue
                // itself: a free since the try would otherwise be lost (see
                // the module docs).
                pool.serve_waiters_now();
                continue;
            };
            return match pool.ledger().waiters().poll(pool.ledger(), id, waker) {
                Polled::Waiting => Poll::Pending,
                Polled::Granted(buffer) => {
                    self.queued = None;
                    pool.waits_left(idx.min(pool.buckets().len()));
                    Poll::Ready(match buffer {
                        Some(buf) => Ok(pool.take_granted(idx, buf)),
                        None => pool.allocate_granted(self.capacity, idx),
                    })
                }
                Polled::Missing => {
                    self.queued = None;
                    pool.waits_left(idx.min(pool.buckets().len()));
                    continue;
                }
            };
        }
    }

    /// Gives up waiting (a blocking wait's deadline, after `waited`): the
    /// buffer if it was granted meanwhile, else `TimedOut` with the numbers
    /// as they are.
    fn give_up(&mut self, waited: Duration) -> Result<Parts, AcquireError> {
        let pool = self.pool.pool_shared();
        let idx = pool.bucket_index(self.capacity);
        let bytes = match self.queued.take() {
            Some((id, bytes)) => {
                let entry = idx.min(pool.buckets().len());
                pool.waits_left(entry);
                match pool.ledger().waiters().leave(pool.ledger(), id) {
                    Some((_, Some(buf))) => return Ok(pool.take_granted(idx, buf)),
                    Some((_, None)) => return pool.allocate_granted(self.capacity, idx),
                    None => {}
                }
                pool.waits_timed_out(entry);
                bytes
            }
            None => pool.wait_bytes(self.capacity, idx)?,
        };
        Err(AcquireError::TimedOut {
            requested: self.capacity,
            needed: bytes as usize,
            allocated: pool.ledger().allocated(),
            limit: pool.ledger().limit().unwrap_or(u64::MAX),
            waited,
        })
    }
}

impl<P: PoolRef> Drop for Waiting<P> {
    fn drop(&mut self) {
        if let Some((id, _)) = self.queued.take() {
            let pool = self.pool.pool_shared();
            let ledger = pool.ledger();
            let entry = pool.bucket_index(self.capacity).min(pool.buckets().len());
            pool.waits_left(entry);
            pool.waits_cancelled(entry);
            match ledger.waiters().leave(ledger, id) {
                // Passes the wake-up on: the free serves the next waiter.
                Some((granted, None)) => ledger.free(granted),
                // Released again, as if the guard it was about to become
                // dropped: granted to the next waiter, or freed.
                Some((_, Some(buf))) => {
                    let idx = pool.bucket_index(self.capacity);
                    let (buf, home, origin) = pool.take_granted(idx, buf);
                    pool.release_parts(buf, home, origin);
                }
                None => {}
            }
        }
    }
}

/// The future of [`BufferPool::acquire_async`].
pub(crate) struct Acquire<'a>(Waiting<&'a PoolShared>);

impl<'a> Acquire<'a> {
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn new(pool: &'a PoolShared, capacity: usize) -> Self {
        Self(Waiting::new(pool, capacity))
    }
}

impl<'a> Future for Acquire<'a> {
    type Output = Result<PooledBuf<'a>, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let pool: &'a PoolShared = this.0.pool;
        let got = std::task::ready!(this.0.poll(Some(cx.waker())));
        #[cfg(feature = "track")]
        if let Ok(parts) = &got {
            this.0.track(parts);
        }
        Poll::Ready(got.map(|(buf, home, origin)| PooledBuf::untracked(pool, buf, home, origin)))
    }
}

/// The future of [`BufferPool::acquire_owned_async`].
pub(crate) struct AcquireOwned(Waiting<Arc<BufferPool>>);

impl AcquireOwned {
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn new(pool: Arc<BufferPool>, capacity: usize) -> Self {
        Self(Waiting::new(pool, capacity))
    }
}

impl Future for AcquireOwned {
    type Output = Result<OwnedPooledBuf, AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let got = std::task::ready!(this.0.poll(Some(cx.waker())));
        #[cfg(feature = "track")]
        if let Ok(parts) = &got {
            this.0.track(parts);
        }
        Poll::Ready(got.map(|(buf, home, origin)| {
            OwnedPooledBuf::new(this.0.pool.shared(), buf, home, origin)
        }))
    }
}

/// The future of `reserve_async`: room for `additional` more bytes in the
/// buffer it borrows, now or once memory is freed for it.
pub(crate) struct WaitToGrow<'g> {
    pool: &'g PoolShared,
    loan: &'g mut Loan,
    origin: &'g mut u32,
    additional: usize,
    /// In the queue: the waiter's id, the bytes it waits for, the capacity
    /// it grows to, and the entry of the statistics it counts in.
    queued: Option<(u64, u64, usize, usize)>,
}

// SAFETY: the future holds a unique borrow of a guard's buffer and origin,
// and a shared borrow of the pool: a guard is `Send` (it owns its buffer),
// and the pool's shared state is `Sync`; the waker it clones into the
// queue is `Send + Sync`.
unsafe impl Send for WaitToGrow<'_> {}

impl<'g> WaitToGrow<'g> {
    pub(crate) fn new(
        pool: &'g PoolShared,
        loan: &'g mut Loan,
        origin: &'g mut u32,
        additional: usize,
    ) -> Self {
        Self {
            pool,
            loan,
            origin,
            additional,
            queued: None,
        }
    }

    /// The growth's target capacity and the bytes it adds, or why it can
    /// never be had: a size no buffer can have, or a capacity (the bytes
    /// the buffer has and those it adds) larger than the limit.
    fn plan(&mut self) -> Result<(usize, u64), AcquireError> {
        let pool = self.pool;
        let len = self.loan.len();
        let buf = self.loan.buf_mut();
        let needed = len
            .checked_add(self.additional)
            .ok_or(AcquireError::TooLarge {
                requested: usize::MAX,
                max: AlignedBuf::max_capacity(buf.alignment()),
            })?;
        let target = pool.growth_target(buf, needed)?;
        let extra = (target - buf.capacity()) as u64;
        match pool.ledger().limit() {
            // The buffer's bytes and the growth's together: the buffer
            // keeps its own while it waits, so past the limit no release
            // can ever make room (it waited for ever, at the head of the
            // queue, with 12 KiB of a 16 KiB limit free). `needed` is the
            // whole capacity, past the limit, so the error says so.
            Some(limit) if target as u64 > limit => Err(AcquireError::LimitExceeded {
                requested: needed,
                needed: target,
                allocated: pool.ledger().allocated(),
                limit,
            }),
            _ => Ok((target, extra)),
        }
    }
}

impl Future for WaitToGrow<'_> {
    type Output = Result<(), AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let pool = this.pool;
        let ledger = pool.ledger();
        loop {
            let Some((id, _, target, entry)) = this.queued else {
                if this.loan.capacity() - this.loan.len() >= this.additional {
                    return Poll::Ready(Ok(()));
                }
                let (target, extra) = this.plan()?;
                if !pool.under_pressure() {
                    match try_reserve(pool, this.loan, this.origin, this.additional, false) {
                        Err(AcquireError::LimitExceeded { .. }) => {}
                        other => return Poll::Ready(other),
                    }
                }
                let wake = Wake::Task(cx.waker().clone());
                let id = ledger.waiters().join_for(ledger, extra, wake, false);
                let entry = pool.wait_entry(target);
                pool.waits_joined(entry);
                this.queued = Some((id, extra, target, entry));
                pool.serve_waiters_now();
                continue;
            };
            return match ledger.waiters().poll(ledger, id, Some(cx.waker())) {
                Polled::Waiting => Poll::Pending,
                Polled::Granted(buffer) => {
                    this.queued = None;
                    pool.waits_left(entry);
                    // Never granted a buffer (it joined as a waiter that
                    // cannot take one); should one come, freeing it returns
                    // its memory, which is the same grant.
                    drop(buffer);
                    let len = this.loan.len();
                    let buf = this.loan.buf_mut();
                    // SAFETY: `len` is the loan's length: within the
                    // capacity, initialized.
                    unsafe { buf.set_len(len) };
                    let grown = pool.grow_charged(buf, target);
                    this.loan.refresh();
                    if grown.is_ok() {
                        *this.origin |= GROWN;
                    }
                    Poll::Ready(grown)
                }
                Polled::Missing => {
                    this.queued = None;
                    pool.waits_left(entry);
                    continue;
                }
            };
        }
    }
}

impl Drop for WaitToGrow<'_> {
    fn drop(&mut self) {
        if let Some((id, _, _, entry)) = self.queued.take() {
            let ledger = self.pool.ledger();
            self.pool.waits_left(entry);
            self.pool.waits_cancelled(entry);
            match ledger.waiters().leave(ledger, id) {
                // Passes the wake-up on: the free serves the next waiter.
                Some((granted, None)) => ledger.free(granted),
                Some((_, Some(buf))) => drop(buf),
                None => {}
            }
        }
    }
}

impl PoolShared {
    /// The bytes a buffer for `capacity` (of bucket `idx`, oversize past
    /// the last) takes on the ledger: its bucket's capacity, or exactly
    /// `capacity`. Or the error `try_acquire` reports for a request that can
    /// never be served: a size no buffer can have, more than the limit.
    fn wait_bytes(&self, capacity: usize, idx: usize) -> Result<u64, AcquireError> {
        let bytes = match self.buckets().get(idx) {
            Some(bucket) => bucket.capacity(),
            None => {
                let max = AlignedBuf::max_capacity(self.config().alignment);
                if capacity > max {
                    return Err(AcquireError::TooLarge {
                        requested: capacity,
                        max,
                    });
                }
                capacity
            }
        };
        match self.ledger().limit() {
            Some(limit) if bytes as u64 > limit => Err(AcquireError::LimitExceeded {
                requested: capacity,
                needed: bytes,
                allocated: self.ledger().allocated(),
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
            if let Err(allocated) = self.ledger().charge_unqueued(capacity as u64) {
                return Err(AcquireError::LimitExceeded {
                    requested: capacity,
                    needed: capacity,
                    allocated,
                    limit: self.ledger().limit().unwrap_or(u64::MAX),
                });
            }
            self.allocate_charged(capacity)
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
                        return wait.give_up(timeout);
                    }
                    thread::park_timeout(deadline - now);
                }
            }
        }
    }

    /// The entry whose counts a wait for a buffer of `capacity` bytes
    /// (a growth to it, or an acquire of its bucket) goes in: its bucket, or
    /// the oversize one.
    pub(crate) fn wait_entry(&self, capacity: usize) -> usize {
        self.bucket_of_capacity(capacity)
            .unwrap_or(self.buckets().len())
    }

    /// A wait joined the queue.
    pub(crate) fn waits_joined(&self, entry: usize) {
        self.wait_counts(entry).joined();
    }

    /// A wait left the queue (served, gave up or cancelled).
    pub(crate) fn waits_left(&self, entry: usize) {
        self.wait_counts(entry).left();
    }

    /// A blocking wait gave up at its deadline.
    pub(crate) fn waits_timed_out(&self, entry: usize) {
        self.wait_counts(entry).timed_out();
    }

    /// An async wait was dropped while in the queue.
    pub(crate) fn waits_cancelled(&self, entry: usize) {
        self.wait_counts(entry).cancelled();
    }
}

mod api;
