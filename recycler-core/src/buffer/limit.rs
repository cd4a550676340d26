//! The memory ledger: every byte a buffer pool has allocated (in use and
//! idle), under an optional hard `memory_limit`, like the JDK's
//! `MaxDirectMemorySize`; and the bounded back-off of `acquire_timeout`.
//!
//! The ledger is touched only when memory is allocated or freed (a miss, a
//! growth, an eviction, a trim): never on a hit or an ordinary release.

use std::fmt;
use std::thread;
use std::time::{Duration, Instant};

use super::inner::PoolInner;
use crate::error::AcquireError;
use crate::idle;
use crate::loom::{AtomicU64, AtomicUsize, Ordering::Relaxed};

/// The bytes a pool has allocated and its limit.
pub(crate) struct Ledger {
    allocated: AtomicU64,
    /// `u64::MAX` for no limit.
    limit: u64,
    /// Threads waiting in `acquire_timeout`: while any does, releases free
    /// their buffers instead of keeping them in their thread's cache, where
    /// the waiters could not reach them.
    waiters: AtomicUsize,
}

impl Ledger {
    pub(crate) fn new(limit: Option<u64>) -> Self {
        Self {
            allocated: AtomicU64::new(0),
            limit: limit.unwrap_or(u64::MAX),
            waiters: AtomicUsize::new(0),
        }
    }

    /// The limit, if any.
    pub(crate) fn limit(&self) -> Option<u64> {
        (self.limit != u64::MAX).then_some(self.limit)
    }

    /// Bytes allocated now.
    pub(crate) fn allocated(&self) -> u64 {
        self.allocated.load(Relaxed)
    }

    /// Reserves `bytes`, if the limit allows; otherwise returns the bytes
    /// allocated as seen.
    pub(crate) fn reserve(&self, bytes: u64) -> Result<(), u64> {
        if self.limit == u64::MAX {
            self.allocated.fetch_add(bytes, Relaxed);
            return Ok(());
        }
        // Relaxed: the count bounds memory; it orders nothing else.
        self.allocated
            .fetch_update(Relaxed, Relaxed, |a| {
                a.checked_add(bytes).filter(|&after| after <= self.limit)
            })
            .map(|_| ())
    }

    /// Returns `bytes` that were freed.
    pub(crate) fn free(&self, bytes: u64) {
        self.allocated.fetch_sub(bytes, Relaxed);
    }

    /// Whether a thread waits for memory (only ever, with a limit).
    #[inline(always)]
    pub(crate) fn under_pressure(&self) -> bool {
        self.waiters.load(Relaxed) != 0
    }

    /// Registers the calling thread as waiting for memory until the returned
    /// guard drops.
    pub(crate) fn wait(&self) -> Waiting<'_> {
        self.waiters.fetch_add(1, Relaxed);
        Waiting(self)
    }
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ledger")
            .field("allocated", &self.allocated())
            .field("limit", &self.limit())
            .finish_non_exhaustive()
    }
}

/// A thread waiting for memory; see [`Ledger::wait`].
pub(crate) struct Waiting<'a>(&'a Ledger);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.waiters.fetch_sub(1, Relaxed);
    }
}

/// Bounded back-off for a thread waiting for others to release memory: a few
/// spins, then yields, then sleeps that double from 10 µs up to 1 ms, never
/// past the deadline (`None`: a timeout too long for an `Instant`, never).
#[derive(Debug)]
pub(crate) struct Backoff {
    step: u32,
    deadline: Option<Instant>,
}

/// Spins before yielding; yields before sleeping.
const SPIN_STEPS: u32 = 6;
const YIELD_STEPS: u32 = 10;
/// The first and the longest sleep.
const FIRST_SLEEP: Duration = Duration::from_micros(10);
const MAX_SLEEP: Duration = Duration::from_millis(1);

impl Backoff {
    pub(crate) fn new(deadline: Option<Instant>) -> Self {
        Self { step: 0, deadline }
    }

    /// How long the `step`-th wait sleeps (zero while spinning or yielding).
    fn sleep_for(step: u32) -> Duration {
        match step.checked_sub(SPIN_STEPS + YIELD_STEPS) {
            None => Duration::ZERO,
            Some(n) => FIRST_SLEEP.saturating_mul(1 << n.min(16)).min(MAX_SLEEP),
        }
    }

    /// Waits once; `false` once the deadline has passed.
    pub(crate) fn wait(&mut self) -> bool {
        let now = Instant::now();
        let left = match self.deadline {
            Some(deadline) if now >= deadline => return false,
            Some(deadline) => deadline - now,
            None => Duration::MAX,
        };
        let step = self.step;
        self.step = self.step.saturating_add(1);
        if step < SPIN_STEPS {
            for _ in 0..1u32 << step {
                std::hint::spin_loop();
            }
        } else if step < SPIN_STEPS + YIELD_STEPS {
            thread::yield_now();
        } else {
            thread::sleep(Self::sleep_for(step).min(left));
        }
        true
    }
}

impl PoolInner {
    /// Reserves `bytes` on the ledger; at the limit, frees idle buffers it
    /// can reach and retries, a few times.
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
                for bucket in self.buckets.iter() {
                    bucket.recycler.inner().flush_own_pending();
                }
            }
            reclaims += 1;
            let short = allocated.saturating_add(want).saturating_sub(limit).max(1);
            let start = idle::random_below(self.buckets.len(), allocated);
            if self.evict_walk(short, None, start, usize::MAX) == 0 {
                return Err(fail);
            }
        }
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
    fn waiters_make_pressure() {
        let ledger = Ledger::new(Some(1));
        assert!(!ledger.under_pressure());
        let w = ledger.wait();
        assert!(ledger.under_pressure());
        drop(w);
        assert!(!ledger.under_pressure());
    }

    #[test]
    fn backoff_is_bounded() {
        assert_eq!(Backoff::sleep_for(0), Duration::ZERO);
        assert_eq!(Backoff::sleep_for(SPIN_STEPS + YIELD_STEPS), FIRST_SLEEP);
        assert_eq!(
            Backoff::sleep_for(SPIN_STEPS + YIELD_STEPS + 1),
            FIRST_SLEEP * 2
        );
        assert_eq!(Backoff::sleep_for(u32::MAX), MAX_SLEEP);
        let start = Instant::now();
        let mut b = Backoff::new(Some(start + Duration::from_millis(20)));
        let mut waits = 0;
        while b.wait() {
            waits += 1;
        }
        // No upper bound on the time taken: this machine may be loaded. Each
        // sleep is at most `MAX_SLEEP` and at most the time left (above), and
        // the wait does end, at or after the deadline.
        // (Nor a lower bound on the waits: on a loaded machine a few yields
        // can outlast the deadline.)
        let took = start.elapsed();
        assert!(took >= Duration::from_millis(20), "{took:?}");
        assert!(waits >= 1, "{waits}");
    }
}
