//! The owner paths of a pool, inlined into the caller: acquire from, and
//! release into, the calling thread's cache of a bucket, found through its
//! index ([`super::index`]). They are the core's owner paths
//! ([`Shared::pop_local`], [`Shared::push_local`]: the hot slot, then the
//! batch) with the pool's own lookups and its idle-memory count; everything
//! else goes to one out-of-line call each way ([`super::slow`]).

use super::buf::Buf;
use super::shared::PoolShared;
use super::sizes::GROWN;
use crate::fence;
use crate::gate;
use crate::home::Home;
use crate::idle::DeltaCell;
use crate::mine::Mine;
use crate::shared::Shared;

impl PoolShared {
    /// The owner path of acquire: take from the calling thread's cache of
    /// bucket `idx`, found through its index.
    #[inline(always)]
    pub(crate) fn pop_fast(&self, idx: usize) -> Option<(Box<Buf>, Home<Buf>)> {
        self.pop_own(idx, self.config().statistics)
    }

    /// [`pop_fast`](Self::pop_fast), counting the hit only if `count` (a
    /// buffer granted to a waiter, whose take counts the hit).
    #[inline(always)]
    pub(crate) fn pop_own(&self, idx: usize, count: bool) -> Option<(Box<Buf>, Home<Buf>)> {
        self.pop_then(idx, count, false)
    }

    /// [`pop_fast`](Self::pop_fast) for an owned buffer: takes a unit of
    /// the pool's keep-alive count for it, as a credit of the cache, inside
    /// the marked operation that found the cache open ([`super::units`]).
    /// The caller holds a handle of the pool or a unit of its count.
    #[inline(always)]
    pub(crate) fn pop_owned(&self, idx: usize) -> Option<(Box<Buf>, Home<Buf>)> {
        self.pop_then(idx, self.config().statistics, true)
    }

    #[inline(always)]
    fn pop_then(&self, idx: usize, count: bool, credit: bool) -> Option<(Box<Buf>, Home<Buf>)> {
        if idx >= self.buckets().len() {
            return None;
        }
        gate::enter();
        let popped = self.index().bound().and_then(|bound| {
            // SAFETY: `idx` is a bucket (checked above).
            let local = unsafe { bound.cache(idx) };
            // SAFETY: a non-null cell is an open cache of this bucket that
            // the index's owner (the calling thread, per `pool_local`) owns,
            // with nothing pending (the index's docs); caches live as long as
            // their recycler.
            let local = unsafe { local.as_ref() }?;
            // SAFETY: owned by the calling thread (above).
            let mine = unsafe { Mine::new(local) };
            // SAFETY: the calling thread found it open inside its marked
            // `get`, and it has nothing pending (above).
            let (buf, cell) = unsafe { Shared::pop_local(mine, count) }?;
            if credit {
                // Inside the marked operation that found the cache open: the
                // pool's last handle, orphaning the bucket, waits for it to
                // leave before it takes the credits back.
                // SAFETY: so the credits are this thread's to take; the
                // caller holds a unit (or a handle): the count is above 0.
                unsafe { mine.take_credit(self.keep()) };
            }
            Some((buf, cell, local))
        });
        gate::leave();
        let (mut buf, cell, local) = popped?;
        Buf::reset(&mut buf);
        if let Some(acct) = self.counted() {
            // Under a cap, `count_in_thread_delta` set every indexed cache's
            // idle cell to its owner's cell of the account the owner paths count
            // the bucket in (the thread's cell in its index under
            // `max_idle_memory`, the cache's own under `max_idle_per_bucket`).
            // SAFETY: that cell lives as long as the pool.
            let cell = unsafe { &*cell };
            self.account_of(acct, idx).sub(cell, buf.capacity() as u64);
        }
        Some((buf, Home::new(local)))
    }

    /// Returns a buffer. The owner path: the buffer kept its capacity (its
    /// origin is not marked [`GROWN`]), the calling thread owns its home
    /// cache and nothing marks the home (one compare: [`Home::mine`]), the
    /// cache has room, the idle cap admits it, and nobody waits for memory.
    #[inline(always)]
    pub(crate) fn release(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        if let Err(buf) = self.push_own(buf, home, origin, false) {
            self.release_off(buf, home, origin);
        }
    }

    /// The owner path of an owned buffer's release: as
    /// [`release`](Self::release)'s, which also returns the buffer's unit
    /// of the pool's keep-alive count as a credit of the cache, inside the
    /// same marked push ([`super::units`]). Hands the buffer back if the
    /// owner path cannot take it (then the unit is still out).
    #[inline(always)]
    pub(crate) fn release_crediting(
        &self,
        buf: Box<Buf>,
        home: Home<Buf>,
        origin: u32,
    ) -> Result<(), Box<Buf>> {
        self.push_own(buf, home, origin, true)
    }

    #[inline(always)]
    fn push_own(
        &self,
        buf: Box<Buf>,
        home: Home<Buf>,
        origin: u32,
        credit: bool,
    ) -> Result<(), Box<Buf>> {
        let mut buf = buf;
        let idx = origin as usize;
        if idx < self.buckets().len() && !self.under_pressure() {
            gate::enter();
            // SAFETY: the guard that held the buffer borrowed the pool (or
            // held a unit of its count), which owns the cache.
            if let Some(mine) = unsafe { home.mine() } {
                match self.push_fast(idx, mine, buf) {
                    Ok(()) => {
                        if credit {
                            // SAFETY: inside the marked operation that found
                            // the cache open.
                            unsafe { mine.return_credit_unchecked() };
                        }
                        gate::leave();
                        // Look again, now that the buffer is in the cache:
                        // a waiter that joined since the look above may
                        // have found this thread inside its push for
                        // longer than it waits for an owner, and skipped
                        // this cache ([`crate::steal`]). The light fence
                        // pairs with the waiter's heavy one, as the mark's
                        // does: either the waiter saw the mark cleared
                        // (and took the buffer), or this sees its join.
                        if self.config().memory_limit.is_some() {
                            fence::light();
                            if self.ledger().under_pressure() {
                                self.serve_waiters_now();
                            }
                        }
                        return Ok(());
                    }
                    Err(back) => buf = back,
                }
            }
            gate::leave();
        }
        Err(buf)
    }

    /// [`release`](Self::release) out of line, for the guards' `Drop`: a
    /// drop glue that small is inlined into the code that drops the guard,
    /// and the guard's fields, passed by value, stay in registers up to
    /// there (an out-of-line drop glue takes the guard by address, which
    /// keeps every write through the guard going through memory).
    #[inline(never)]
    pub(crate) fn release_parts(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        self.release(buf, home, origin);
    }

    /// Whether a thread waits for memory, in which case released buffers are
    /// freed rather than cached: one relaxed load, and only with a limit.
    #[inline(always)]
    pub(crate) fn under_pressure(&self) -> bool {
        self.config().memory_limit.is_some() && self.ledger().under_pressure()
    }

    /// Pushes `buf`, of bucket `idx`, onto `mine`, which the calling thread
    /// found open inside its marked operation ([`crate::steal`]). Touches
    /// neither the bucket nor the buffer.
    ///
    /// `mine`'s capacity is at least 1: with 0, every buffer is homed at
    /// the bucket's discard cache, which no thread owns, so the ownership
    /// compare fails (fresh ones by `Shared::made`, granted ones by
    /// `take_granted`; a grown buffer is never adopted but freed, by
    /// `release_slow`).
    #[inline(always)]
    fn push_fast(&self, idx: usize, mine: Mine<'_, Buf>, buf: Box<Buf>) -> Result<(), Box<Buf>> {
        let count = self.config().statistics;
        match self.counted() {
            // SAFETY: `mine` (capacity at least 1, above) is open, and the
            // thread inside its marked operation; the check runs no code
            // that touches the cache.
            None => unsafe { Shared::push_local(mine, buf, count, |_| true) },
            Some(acct) => {
                let acct = self.account_of(acct, idx);
                let bytes = ((idx + 1) * self.config().bucket_step) as u64;
                let admit = |cell: *const DeltaCell| {
                    // Under a cap, an indexed cache's idle cell is its owner's
                    // cell of the account the owner paths count the bucket
                    // in (see `pop_own`); null if the pool has not indexed
                    // this cache (then: the slow path).
                    // SAFETY: that cell lives as long as the pool.
                    match unsafe { cell.as_ref() } {
                        Some(cell) => acct.try_add(cell, bytes),
                        None => false,
                    }
                };
                // SAFETY: as above; `admit` touches only the account.
                unsafe { Shared::push_local(mine, buf, count, admit) }
            }
        }
    }
}

// Marked origins never pass the owner path's bucket check.
static_assertions::const_assert!(GROWN as usize >= super::config::MAX_BUCKETS);
