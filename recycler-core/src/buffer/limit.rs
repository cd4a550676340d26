//! The memory ledger: every byte a buffer pool has allocated (in use and
//! idle), under an optional hard `memory_limit`, like the JDK's
//! `MaxDirectMemorySize`; whether anyone waits for memory; and reserving
//! with reclaim.
//!
//! The ledger is written only when memory is allocated or freed (a miss, a
//! growth, an eviction, a trim) and when the queue of waiters gets its first
//! waiter not yet granted or loses its last: never on a hit or an ordinary
//! release. An ordinary release under
//! a limit reads it once, for the waiting bit.
//!
//! # One word: the bytes and the waiting bit
//!
//! The bytes allocated and [`WAITING`] (someone waits for memory: the queue
//! of [`super::wait`] holds a waiter not yet granted) share one atomic word. A free is a
//! `fetch_sub`, which returns the word as it was: if the bit was set, the
//! freeing thread serves the queue. A waiter sets the bit with a read-modify-
//! write of the same word before it looks for memory one last time. All of
//! these are read-modify-writes of one location, which are totally ordered
//! (its modification order) and each reads the value just before it, so a
//! free either comes before the bit is set (and the waiter's last look, which
//! reads the word after its own write, sees the freed bytes), or after (and
//! it sees the bit and serves the queue). No free between "no memory" and
//! "registered" is lost, with no fence and no ordering stronger than
//! `Relaxed`; see [`super::wait`] for the rest of the argument, and
//! `tests/tests/loom_buffer.rs` for the loom models.

use std::fmt;

use super::shared::{Bucket, PoolShared};
use super::waiters::WaitQueue;
use crate::error::AcquireError;
use crate::idle;
use crate::loom::{AtomicU64, Ordering::Relaxed, StatCounter};

/// The bit of [`Ledger::state`] that says someone waits for memory.
const WAITING: u64 = 1 << 63;
/// The bits of [`Ledger::state`] that count bytes.
const BYTES: u64 = WAITING - 1;

/// The bytes a pool has allocated, its limit, and the threads and tasks that
/// wait for memory.
pub(crate) struct Ledger {
    /// Bytes allocated (the low 63 bits) and [`WAITING`]: set while the
    /// queue holds a waiter not yet granted, so that frees serve it and
    /// releases hand over or free their buffers instead of keeping them in
    /// their thread's cache, where the waiters could not reach them. Only
    /// the queue, under its lock, sets and clears the bit. (Waiters granted
    /// but not yet served do not keep it set: their memory is theirs, and
    /// one that never comes back for it, a leaked future, must not keep
    /// every release from pooling.)
    state: AtomicU64,
    /// `u64::MAX` for no limit.
    limit: u64,
    /// Those waiting for memory, first come first served.
    pub(crate) waiters: WaitQueue,
    /// Bytes allocated now outside the limit: overdrafts (see
    /// [`super::overdraft`]). Touched only when an overdraft is made or
    /// freed.
    overdraft: StatCounter,
    /// Overdrafts made: acquires and growths served outside the limit.
    pub(crate) overdrafts: StatCounter,
    /// Overdrafts made by a pool with `hard_limit(true)`.
    pub(crate) violations: StatCounter,
}

impl Ledger {
    pub(crate) fn new(limit: Option<u64>) -> Self {
        Self {
            state: AtomicU64::new(0),
            limit: limit.unwrap_or(u64::MAX),
            waiters: WaitQueue::new(),
            overdraft: StatCounter::new(0),
            overdrafts: StatCounter::new(0),
            violations: StatCounter::new(0),
        }
    }

    /// Records `bytes` allocated outside the limit, an overdraft (`hard`:
    /// by a pool with `hard_limit(true)`, a violation of it too).
    pub(crate) fn overdraw(&self, bytes: u64, hard: bool) {
        self.overdraft.fetch_add(bytes, Relaxed);
        self.overdrafts.fetch_add(1, Relaxed);
        if hard {
            self.violations.fetch_add(1, Relaxed);
        }
    }

    /// Records `bytes` of an overdraft freed.
    pub(crate) fn repay(&self, bytes: u64) {
        self.overdraft.fetch_sub(bytes, Relaxed);
    }

    /// Bytes allocated now outside the limit.
    pub(crate) fn overdrawn(&self) -> u64 {
        self.overdraft.load(Relaxed)
    }

    /// The limit, if any.
    pub(crate) fn limit(&self) -> Option<u64> {
        (self.limit != u64::MAX).then_some(self.limit)
    }

    /// Bytes allocated now.
    pub(crate) fn allocated(&self) -> u64 {
        self.state.load(Relaxed) & BYTES
    }

    /// Reserves `bytes`, if the limit allows; otherwise returns the bytes
    /// allocated as seen.
    pub(crate) fn reserve(&self, bytes: u64) -> Result<(), u64> {
        if self.limit == u64::MAX {
            // No limit, so nobody ever waits and the bit means nothing (the
            // pool does not read it). The bytes of live buffers stay far
            // below it; only a request too large for any allocation can
            // carry into it, for the moment before its allocation fails and
            // `free` takes the bytes back out (wrapping, exactly).
            self.state.fetch_add(bytes, Relaxed);
            return Ok(());
        }
        // Relaxed: the count bounds memory; it orders nothing else (see the
        // module docs for why the waiting bit needs nothing stronger). The
        // bit is kept as it is.
        let most = self.limit.min(BYTES);
        self.state
            .fetch_update(Relaxed, Relaxed, |s| {
                (s & BYTES)
                    .checked_add(bytes)
                    .filter(|&after| after <= most)
                    .map(|after| after | (s & WAITING))
            })
            .map(|_| ())
            .map_err(|s| s & BYTES)
    }

    /// Returns `bytes` that were freed, and serves the waiters, if any, in
    /// their order: the free that makes room for the first one hands the
    /// memory to it.
    #[inline]
    pub(crate) fn free(&self, bytes: u64) {
        let before = self.state.fetch_sub(bytes, Relaxed);
        debug_assert!(
            self.limit == u64::MAX || before & BYTES >= bytes,
            "freed more than allocated"
        );
        if before & WAITING != 0 {
            self.waiters.serve(self);
        }
    }

    /// Whether anyone waits for memory (only ever, with a limit): one
    /// relaxed load.
    #[inline(always)]
    pub(crate) fn under_pressure(&self) -> bool {
        self.state.load(Relaxed) & WAITING != 0
    }

    /// Sets or clears [`WAITING`]; only the queue calls this, under its
    /// lock, as it gets its first waiter not yet granted or loses its last
    /// (granted, or gone). A read-modify-write, so that the waiter that sets
    /// it reads every free before it afterwards (see the module docs).
    pub(crate) fn set_waiting(&self, waiting: bool) {
        if waiting {
            self.state.fetch_or(WAITING, Relaxed);
        } else {
            self.state.fetch_and(BYTES, Relaxed);
        }
    }
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger")
            .field("allocated", &self.allocated())
            .field("limit", &self.limit())
            .field("waiting", &self.under_pressure())
            .finish_non_exhaustive()
    }
}

impl PoolShared {
    /// Reserves `bytes` on the ledger; at the limit, frees idle buffers
    /// ([`free_idle`](Self::free_idle)) and retries, a few times.
    pub(crate) fn reserve(&self, bytes: usize) -> Result<(), AcquireError> {
        const RECLAIMS: u32 = 3;
        let want = bytes as u64;
        let mut reclaims = 0;
        loop {
            let Err(allocated) = self.ledger.reserve(want) else {
                return Ok(());
            };
            let limit = self.ledger.limit().unwrap_or(u64::MAX);
            let fail = AcquireError::LimitExceeded {
                requested: bytes,
                needed: bytes,
                allocated,
                limit,
            };
            if want > limit || reclaims == RECLAIMS {
                return Err(fail);
            }
            if reclaims == 0 {
                // What this thread released for other threads' caches is
                // idle, but out of the walk's reach until it is sent home.
                // (A walk over the thread's registrations per bucket, once
                // per failed reservation.)
                for recycler in self.buckets.iter().filter_map(Bucket::made) {
                    recycler.inner().flush_own_pending();
                }
            }
            reclaims += 1;
            let short = allocated.saturating_add(want).saturating_sub(limit).max(1);
            if self.free_idle(short, allocated) == 0 {
                return Err(fail);
            }
        }
    }

    /// A release while anyone waits, after handing over or freeing its own
    /// buffer, and a wait as it joins the queue: frees idle buffers for the
    /// waiters ([`free_idle`](Self::free_idle): wherever they idle, other
    /// threads' caches included), one waiter at a time, in their order:
    /// as much as the first waiter not yet granted lacks; once that grants
    /// it, the calling thread's idle buffers are handed to the waiters now
    /// first ([`hand_idle_to_waiters`](Self::hand_idle_to_waiters)), and
    /// then the next one's lack is freed, and so on. Stops at a waiter
    /// that the idle memory it reaches cannot serve.
    ///
    /// Freeing for all the waiters at once (their bytes summed), as it
    /// did, freed idle buffers that the waiters behind the first could have
    /// been handed once the first was served, and that the next acquires
    /// then allocated again.
    #[cold]
    #[inline(never)]
    pub(crate) fn reclaim_for_waiters(&self) {
        let Some(limit) = self.ledger.limit() else {
            return;
        };
        // Each turn grants the first waiter not yet granted, or stops.
        while let Some((id, bytes)) = self.ledger.waiters.first() {
            let allocated = self.ledger.allocated();
            let short = allocated.saturating_add(bytes).saturating_sub(limit);
            if short == 0 {
                self.ledger.waiters.serve(&self.ledger);
            } else if self.free_idle(short, allocated) < short {
                // What it freed serves the queue; nothing more to free.
                return;
            }
            if self
                .ledger
                .waiters
                .first()
                .is_some_and(|(first, _)| first == id)
            {
                // Still not granted (another thread took the memory, or a
                // waiter ahead came back): nothing more to do here.
                return;
            }
            self.hand_idle_to_waiters();
        }
    }

    /// Frees idle buffers it can reach worth what `want` more bytes would
    /// take past the limit, for the waiters (`want`: the bytes of those not
    /// yet granted, up to the one that asks). The frees serve the queue
    /// themselves.
    pub(crate) fn reclaim_for(&self, want: u64) {
        let Some(limit) = self.ledger.limit() else {
            return;
        };
        let allocated = self.ledger.allocated();
        let short = allocated.saturating_add(want).saturating_sub(limit);
        if short > 0 {
            self.free_idle(short, allocated);
        }
    }

    /// Frees idle buffers worth `short` bytes if it can, wherever they idle:
    /// first what the calling thread reaches directly (its own caches, the
    /// depots, the inboxes); then, if that is not enough, what other
    /// threads' caches keep, taken into the depots ([`crate::steal`]: a
    /// thread parked, or busy with other work, need not run again) and
    /// freed from there. Returns the bytes freed. `salt` spreads the walks'
    /// starts.
    fn free_idle(&self, short: u64, salt: u64) -> u64 {
        let start = idle::random_below(self.buckets.len(), salt);
        let freed = self.evict_walk(short, None, start, usize::MAX);
        if freed >= short {
            return freed;
        }
        for recycler in self.buckets.iter().filter_map(Bucket::made) {
            let inner = recycler.inner();
            inner.store_all(inner.steal_quiet());
        }
        freed + self.evict_walk(short - freed, None, start, usize::MAX)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn limit_is_hard() {
        let ledger = Ledger::new(Some(100));
        assert_eq!(ledger.reserve(60), Ok(()));
        assert_eq!(ledger.reserve(41), Err(60));
        assert_eq!(ledger.reserve(40), Ok(()));
        ledger.free(100);
        assert_eq!(ledger.allocated(), 0);
        assert_eq!(ledger.reserve(u64::MAX), Err(0), "no overflow");
        let unlimited = Ledger::new(None);
        assert_eq!(unlimited.reserve(u64::MAX / 2), Ok(()));
        assert_eq!(unlimited.limit(), None);
    }

    #[test]
    fn the_waiting_bit_is_not_counted() {
        let ledger = Ledger::new(Some(100));
        assert!(!ledger.under_pressure());
        ledger.set_waiting(true);
        assert!(ledger.under_pressure());
        assert_eq!(ledger.allocated(), 0);
        assert_eq!(ledger.reserve(100), Ok(()));
        assert_eq!(ledger.reserve(1), Err(100), "the bit is not bytes");
        assert!(ledger.under_pressure(), "reserving keeps the bit");
        ledger.free(40);
        assert_eq!(ledger.allocated(), 60);
        assert!(ledger.under_pressure(), "freeing keeps the bit");
        ledger.set_waiting(false);
        assert!(!ledger.under_pressure());
        assert_eq!(ledger.allocated(), 60);
    }

    #[test]
    fn a_limit_above_the_bit_is_clamped_below_it() {
        let ledger = Ledger::new(Some(u64::MAX - 1));
        assert_eq!(ledger.reserve(BYTES), Ok(()));
        assert_eq!(ledger.reserve(1), Err(BYTES));
        assert!(!ledger.under_pressure());
    }
}
