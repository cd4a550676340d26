//! Charging with reclaim at the memory limit, and freeing idle buffers
//! for the waiters: what the pool does when its [`Ledger`](super::ledger::Ledger)
//! has no room.

use super::shared::{Bucket, PoolShared};
use crate::error::AcquireError;
use crate::idle;

impl PoolShared {
    /// Charges `bytes` to the ledger; at the limit, frees idle buffers
    /// ([`free_idle`](Self::free_idle)) and retries, a few times.
    pub(crate) fn charge_with_reclaim(&self, bytes: usize) -> Result<(), AcquireError> {
        const RECLAIMS: u32 = 3;
        let want = bytes as u64;
        let mut reclaims = 0;
        loop {
            let Err(allocated) = self.ledger.charge(want) else {
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
                // per failed charge.)
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

    /// A release while anyone waits, after granting or freeing its own
    /// buffer, and a wait as it joins the queue: frees idle buffers for the
    /// waiters ([`free_idle`](Self::free_idle): wherever they idle, other
    /// threads' caches included), one waiter at a time, in their order:
    /// as much as the first waiter not yet granted lacks; once that grants
    /// it, the calling thread's idle buffers are granted to the waiters now
    /// first ([`grant_idle_to_waiters`](Self::grant_idle_to_waiters)), and
    /// then the next one's lack is freed, and so on. Stops at a waiter
    /// that the idle memory it reaches cannot serve.
    ///
    /// Freeing for all the waiters at once (their bytes summed), as it
    /// did, freed idle buffers that the waiters behind the first could have
    /// been granted once the first was served, and that the next acquires
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
            self.grant_idle_to_waiters();
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
