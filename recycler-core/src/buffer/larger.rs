//! Serving a request from a larger idle buffer where the memory limit
//! binds: an acquire that would otherwise evict, wait or overdraft takes
//! the smallest larger idle buffer the calling thread keeps
//! ([`PoolShared::take_larger`]), and a waiter is granted one before idle
//! memory is freed for it ([`PoolShared::grant_idle_to_waiters`]).
//!
//! The buffer keeps its capacity: it counts as an acquire and a hit of its
//! own bucket and returns there, so the books need nothing new. Shrinking
//! it to the request would make the next request of its own size allocate
//! again (a `realloc` down, then a fresh buffer up), which is what the
//! limit makes expensive: at the limit, memory for a new buffer has to be
//! freed first, and the waiters behind wait for it.
//!
//! Only where the limit binds: without a limit, or with room under it, an
//! acquire whose bucket is empty allocates a buffer of its own size, as
//! before (serving every empty bucket from any larger idle buffer made a
//! pool of mixed sizes converge on a few large buffers, every acquire a
//! slow one: Jetty's mix, W4, 4.6 Mops/s against 17.7). At the limit the
//! memory is bounded whatever the buffers' sizes, so a pool that converges
//! on larger buffers holds no more memory, and reuses them.
//!
//! First come, first served is kept: a larger idle buffer goes only to the
//! first waiter not yet granted ([`WaitQueue::grant_buffer`] checks it under
//! the queue's lock); a later waiter gets one only once every waiter ahead
//! of it is granted.
//!
//! [`WaitQueue::grant_buffer`]: super::ledger::WaitQueue::grant_buffer

use super::buf::Buf;
use super::shared::PoolShared;
use crate::home::Home;

impl PoolShared {
    /// Whether the limit binds for a new buffer of `bytes`: a limit is set
    /// and has no room for them now (one relaxed load), or someone waits.
    /// Without a limit, never.
    pub(crate) fn limit_binds(&self, bytes: usize) -> bool {
        let Some(limit) = self.ledger.limit() else {
            return false;
        };
        self.ledger.under_pressure() || self.ledger.allocated().saturating_add(bytes as u64) > limit
    }

    /// The smallest idle buffer larger than bucket `idx`'s that the
    /// calling thread's own caches keep, with its bucket as its origin:
    /// what an acquire at the limit takes before it evicts, waits or
    /// overdraws (see the module docs). Counted as an acquire and a hit of
    /// that bucket (the owner path's pop). `None` with `serve_larger(false)`,
    /// in striped mode (no thread keeps a cache), or if nothing larger
    /// idles there.
    pub(crate) fn take_larger(&self, idx: usize) -> Option<(Box<Buf>, Home<Buf>, u32)> {
        if !self.config.serve_larger || self.config.striped.is_some() {
            return None;
        }
        (idx + 1..self.buckets.len())
            .find_map(|b| self.pop_fast(b).map(|(buf, home)| (buf, home, b as u32)))
    }

    /// Grants the calling thread's own idle buffers to the waiters, first
    /// come first served, while the first waiter not yet granted wants a
    /// buffer that one of them covers: of its own bucket first, else (with
    /// `serve_larger`, the default) the smallest larger one, kept at its
    /// capacity. The waiter reuses it (a hit of the buffer's bucket,
    /// counted by its take) where the eviction that follows
    /// (`reclaim_for_waiters`) would free it and the waiter would allocate
    /// on the bytes. Runs where that eviction runs: a release while anyone
    /// waits, and a wait as it joins the queue. Owner paths only (the
    /// thread's own caches); a buffer that a race leaves with no waiter to
    /// take it is freed, counted as evicted, as the eviction would have.
    ///
    /// Every caller then runs [`reclaim_for_waiters`](Self::reclaim_for_waiters)
    /// (or is its loop), which serves the waiter behind one granted a
    /// buffer if it fits in the memory free now.
    pub(crate) fn grant_idle_to_waiters(&self) {
        while let Some((want, _)) = self.ledger.waiters.first_for_buffer() {
            let Some(idx) = usize::try_from(want)
                .ok()
                .and_then(|w| self.bucket_of_capacity(w))
            else {
                return;
            };
            let top = if self.config.serve_larger {
                self.buckets.len()
            } else {
                idx + 1
            };
            // Not counted here: the waiter's take counts the hit.
            let Some((b, buf, home)) =
                (idx..top).find_map(|b| self.pop_own(b, false).map(|(buf, home)| (b, buf, home)))
            else {
                return;
            };
            let bytes = buf.capacity() as u64;
            if let Err(buf) = self.ledger.waiters.grant_buffer(&self.ledger, bytes, buf) {
                // Someone else is first now: freed, as an eviction.
                let inner = self.bucket(b);
                // SAFETY: the pool, which owns the cache, outlives this call.
                let local = unsafe { home.local() };
                inner.count_for(Some(local), |c| &c.evicted, 1);
                inner.count_for(Some(local), |c| &c.dropped, 1);
                drop(buf);
                return;
            }
        }
    }
}
