//! Where the memory limit binds: what an acquire meets when the ledger
//! ([`super::ledger`]) has no room for a new buffer, in the order it meets
//! them, and what the pool frees for those who wait ([`super::wait`]).
//!
//! An acquire whose bucket has nothing for it (the slow path,
//! [`super::slow`]) meets, where the limit binds:
//!
//! 1. **A larger idle buffer** ([`PoolShared::take_larger`], where
//!    [`PoolShared::limit_binds`]): the smallest larger idle buffer of the
//!    calling thread's caches, shrunk to the request, rather than free,
//!    wait or overdraw ("Serving from a larger buffer", below).
//! 2. **This thread's pending batches** ([`PoolShared::charge_with_reclaim`],
//!    once the ledger refuses the charge): what the thread released for
//!    other threads' caches is idle, but out of the walks' reach until it
//!    is sent home; it is sent.
//! 3. **Freeing idle memory** (`free_idle`): an eviction walk
//!    ([`super::evict`]) frees what the thread reaches: its own caches, the
//!    depots, the inboxes.
//! 4. **Taking from quiet threads**: if that is not enough, what other
//!    threads' caches keep is taken into the depots ([`crate::steal`]: a
//!    thread parked, or busy with other work, need not run again) and freed
//!    from there. Steps 2 to 4 retry the charge, a few times.
//! 5. **Overdraft or wait**: `acquire` and the growths that cannot fail
//!    overdraw ([`PoolShared::acquire_overdraft`],
//!    [`PoolShared::grow_overdraft`]; "Overdrafts", below); `try_acquire`
//!    and `try_reserve` fail. A wait joins the queue after step 1, and the
//!    pool then serves the waiters from idle memory, one at a time: the
//!    calling thread's idle buffers granted whole
//!    ([`PoolShared::grant_idle_to_waiters`]), idle buffers freed for the
//!    first waiter's lack, wherever they idle
//!    ([`PoolShared::reclaim_for_waiters`]).
//!
//! # Serving from a larger buffer
//!
//! An acquire that would otherwise evict, wait or overdraft takes the
//! smallest larger idle buffer the calling thread keeps, and **shrinks it
//! to the request's bucket** ([`PoolShared::shrunk_to_bucket`]): counted
//! as an acquire and a hit of its own bucket, then detached from it and
//! adopted by the request's bucket, where it returns (as a buffer that
//! grows moves to the bucket of its new capacity); the bytes beyond the
//! request go back to the limit. Under a limit, the buffer an acquire's
//! bucket last grew into (`pop_grown`) is served shrunk too, a released
//! buffer granted to a waiter is shrunk to its request, and a waiter is
//! granted the thread's idle buffers of its own bucket only. So under a
//! limit **a request never holds more than its bucket**.
//!
//! It was kept whole (the next request of its size found it), and that
//! let tasks that hold such buffers while they wait for more hold the
//! whole limit between them, no waiter served: issue 24's hold and wait,
//! 8 tasks each acquiring 4 KiB (served 12 to 24 KiB idle buffers) then
//! waiting to grow them, every byte held, none of them served. With each
//! holding at most its bucket, the tasks waiting to grow hold 4 KiB each,
//! and one growth fits whenever the limit holds those and one response.
//!
//! Only where the limit binds: without a limit, or with room under it, an
//! acquire whose bucket is empty allocates a buffer of its own size, as
//! before (serving every empty bucket from any larger idle buffer made a
//! pool of mixed sizes converge on a few large buffers, every acquire a
//! slow one: Jetty's mix, W4, 4.6 Mops/s against 17.7).
//!
//! # Overdrafts
//!
//! What the methods that cannot fail (`acquire`, and the writes that grow
//! a buffer) do when the `memory_limit` has no room, even after freeing
//! the idle buffers the thread can reach. Rather than panic (as
//! they did, poisoning the locks of the code that held the buffer), they
//! allocate outside the limit, as Jetty gives out a buffer it does not pool
//! past its `maxMemory`, and as `Vec` and `BytesMut` always grow.
//!
//! An overdraft is never on the ledger and never pooled:
//!
//! - A buffer allocated as an overdraft has none of its bytes on the
//!   ledger (`Buf::charged` is 0) and is homed at its bucket's discard
//!   cache, so its release frees it (counted as a release and a remove of
//!   its bucket; an oversize one as any oversize buffer). The owner path
//!   never sees it: a discard home is owned by no thread.
//! - A growth served as an overdraft leaves the bytes the buffer had on the
//!   ledger there and holds the rest outside; the buffer remembers how many
//!   of its bytes the ledger holds (`Buf::charged`), and its drop credits
//!   exactly those. A grown buffer's release takes the slow path (its
//!   origin is marked `GROWN`), which frees one with an overdraft rather
//!   than pool it or grant it to a waiter.
//!
//! So the limit bounds the pooled memory and every buffer's charged part
//! exactly; the overdrafts come on top, counted
//! ([`BufferPoolStats::overdrafts`](super::BufferPoolStats::overdrafts))
//! and measured (`overdraft_memory`, the bytes they hold now). Nothing is
//! touched on the owner paths: an overdraft is made only where the old code
//! panicked, and its release is one of the slow path's branches.

use super::bucket::Bucket;
use super::buf::Buf;
use super::raw::AlignedBuf;
use super::shared::PoolShared;
use super::sizes::{OVERSIZE, Parts};
use crate::error::AcquireError;
use crate::home::Home;
use crate::idle;
use crate::loom::Arc;

impl PoolShared {
    /// Whether the limit binds for a new buffer of `bytes`: a limit is set
    /// and has no room for them now (one relaxed load), or someone waits.
    /// Without a limit, never.
    pub(crate) fn limit_binds(&self, bytes: usize) -> bool {
        let Some(limit) = self.ledger().limit() else {
            return false;
        };
        self.ledger().under_pressure()
            || self.ledger().allocated().saturating_add(bytes as u64) > limit
    }

    /// The smallest idle buffer larger than bucket `idx`'s that the
    /// calling thread's own caches keep, shrunk to bucket `idx`'s capacity
    /// (the allocator's `realloc`, in place with the usual allocators):
    /// what an acquire at the limit takes before it evicts, waits or
    /// overdraws (see the module docs). Counted as an acquire and a hit of
    /// the bucket it came from (the owner path's pop), then as detached
    /// from it and adopted by bucket `idx`, where it returns, as a buffer
    /// that grows leaves its bucket for another; if the allocator cannot
    /// shrink it, it is served whole, its own bucket its origin. `None`
    /// with `serve_larger(false)`, in striped mode (no thread keeps a
    /// cache), or if nothing larger idles there.
    pub(crate) fn take_larger(&self, idx: usize) -> Option<(Box<Buf>, Home<Buf>, u32)> {
        if !self.config().serve_larger || self.config().striped.is_some() {
            return None;
        }
        let (buf, home, b) = (idx + 1..self.buckets().len())
            .find_map(|b| self.pop_fast(b).map(|(buf, home)| (buf, home, b)))?;
        self.count_served_larger(idx, b);
        Some(self.shrunk_to_bucket(idx, buf, home, b))
    }

    /// Counts an acquire of bucket `asked`'s size served by a buffer of the
    /// larger bucket `served` (statistics: `requested`, `served_larger`).
    pub(crate) fn count_served_larger(&self, asked: usize, served: usize) {
        if self.config().statistics {
            self.buckets()[asked].count_served_larger();
            self.buckets()[served].count_served_smaller();
        }
    }

    /// `buf`, an idle buffer of bucket `b` just taken (counted as an
    /// acquire and a hit of `b`) for a request of the smaller bucket
    /// `idx`, shrunk to bucket `idx`'s capacity: detached from `b` and
    /// adopted by `idx`, where it returns, as a buffer that grows leaves
    /// its bucket for another; the bytes beyond the request go back to the
    /// limit. If the allocator cannot shrink it, it is served whole, `b`
    /// its origin. Under a memory limit every larger buffer that serves a
    /// smaller request is served so (see the module docs).
    pub(crate) fn shrunk_to_bucket(
        &self,
        idx: usize,
        mut buf: Box<Buf>,
        home: Home<Buf>,
        b: usize,
    ) -> (Box<Buf>, Home<Buf>, u32) {
        let freed = buf.shrink_to(self.buckets()[idx].capacity());
        if freed == 0 {
            return (buf, home, b as u32);
        }
        self.bucket(b).count_detached(home);
        self.count_in_thread_delta(idx);
        let (buf, home) = self.bucket(idx).adopt(buf);
        // The bytes beyond the request go back to the limit (and serve the
        // waiters, if any).
        self.ledger().free(freed as u64);
        (buf, home, idx as u32)
    }

    /// Charges `bytes` to the ledger; at the limit, frees idle buffers
    /// ([`free_idle`](Self::free_idle)) and retries, a few times. A request
    /// that does not wait passes the waiters (the ledger's
    /// [`charge_unqueued`](super::ledger::Ledger::charge_unqueued)): while
    /// one of them is closed (passed as often as it may be), the memory free
    /// is kept for it, and this fails at once, as at the limit.
    pub(crate) fn charge_with_reclaim(&self, bytes: usize) -> Result<(), AcquireError> {
        const RECLAIMS: u32 = 3;
        let want = bytes as u64;
        let mut reclaims = 0;
        loop {
            let Err(allocated) = self.ledger().charge_unqueued(want) else {
                return Ok(());
            };
            let limit = self.ledger().limit().unwrap_or(u64::MAX);
            let fail = AcquireError::LimitExceeded {
                requested: bytes,
                needed: bytes,
                allocated,
                limit,
            };
            let short = allocated.saturating_add(want).saturating_sub(limit);
            // `short` 0: room, but kept for a closed waiter.
            if want > limit || short == 0 || reclaims == RECLAIMS {
                return Err(fail);
            }
            if reclaims == 0 {
                // What this thread released for other threads' caches is
                // idle, but out of the walk's reach until it is sent home.
                // (A walk over the thread's registrations per bucket, once
                // per failed charge.)
                for recycler in self.buckets().iter().filter_map(Bucket::made) {
                    recycler.inner().flush_own_pending();
                }
            }
            reclaims += 1;
            if self.free_idle(short, allocated) == 0 {
                return Err(fail);
            }
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
        let start = idle::random_below(self.buckets().len(), salt);
        let freed = self.evict_walk(short, None, start, usize::MAX);
        if freed >= short {
            return freed;
        }
        for recycler in self.buckets().iter().filter_map(Bucket::made) {
            let inner = recycler.inner();
            let (idle, panic) = inner.steal_quiet();
            inner.store_all(idle);
            crate::trim::pass_on(panic);
        }
        freed + self.evict_walk(short - freed, None, start, usize::MAX)
    }

    /// A fresh buffer for bucket `idx` (oversize past the last) allocated
    /// outside the limit: an overdraft, freed when released. Counted as a
    /// non-pooled acquire of its bucket (of the oversize entry past the
    /// last).
    #[cold]
    #[inline(never)]
    pub(crate) fn acquire_overdraft(
        &self,
        capacity: usize,
        idx: usize,
    ) -> Result<Parts, AcquireError> {
        let bytes = self.buckets().get(idx).map_or(capacity, |b| b.capacity());
        let raw = AlignedBuf::try_new(bytes, self.config().alignment)?;
        self.ledger()
            .overdraw(bytes as u64, self.config().hard_limit);
        let buf = Box::new(Buf::overdraft(raw, Arc::clone(self.ledger())));
        if idx >= self.buckets().len() {
            self.count_oversize_acquire();
            return Ok((buf, Home::new(self.oversize_home()), OVERSIZE));
        }
        let inner = self.bucket(idx);
        let (buf, _) = inner.made(buf);
        // Homed where its release frees it, whichever thread releases it.
        Ok((buf, inner.home(None, true), idx as u32))
    }

    /// Grows `buf` to `target` bytes outside the limit: the bytes it had on
    /// the ledger stay there, the growth is an overdraft.
    #[cold]
    #[inline(never)]
    pub(crate) fn grow_overdraft(&self, buf: &mut Buf, target: usize) -> Result<(), AcquireError> {
        let extra = target - buf.capacity();
        buf.raw_mut().try_grow(target)?;
        self.ledger()
            .overdraw(extra as u64, self.config().hard_limit);
        Ok(())
    }

    /// Grants the calling thread's own idle buffers to the waiters, in
    /// order, while the first waiter not yet granted wants a buffer of a
    /// bucket of which the thread keeps one idle (a larger one is not
    /// granted: it would be held by a request that did not ask for it; the
    /// eviction that follows frees it for the waiter). The waiter reuses it (a hit of the buffer's bucket,
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
        while let Some(want) = self.ledger().waiters().first_for_buffer() {
            let Some(idx) = usize::try_from(want)
                .ok()
                .and_then(|w| self.bucket_of_capacity(w))
            else {
                return;
            };
            // Its own bucket's only: a larger one, granted whole, would be
            // held by a request that did not ask for it (see the module
            // docs); the eviction that follows frees it for the waiter.
            // Not counted here: the waiter's take counts the hit.
            let Some((buf, home)) = self.pop_own(idx, false) else {
                return;
            };
            let b = idx;
            let bytes = buf.capacity() as u64;
            if let Err(buf) = self
                .ledger()
                .waiters()
                .grant_buffer(self.ledger(), bytes, buf)
            {
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

    /// Serves the waiters as their joining does (the thread's idle buffers
    /// granted, idle memory freed for them, the queue served), for the two
    /// events that can make memory a waiter's reclaim did not reach: an
    /// owner path's push that finds, looking again after it, that someone
    /// waits (the reclaim of a waiter that joined during the push skipped
    /// this thread's cache if the push outlasted its bounded wait for the
    /// owner, [`crate::steal`]), and a thread's exit, once its buffers are
    /// in the depots (a waiter that joined meanwhile found them neither in
    /// its cache nor in a depot). Without this, a releaser that then leaves
    /// the pool alone (its thread exits, or a runtime's worker idles) left
    /// that waiter asleep with the buffer idle.
    #[cold]
    #[inline(never)]
    pub(crate) fn serve_waiters_now(&self) {
        self.grant_idle_to_waiters();
        self.reclaim_for_waiters();
        self.ledger().waiters().serve(self.ledger());
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
        let Some(limit) = self.ledger().limit() else {
            return;
        };
        // Each turn grants the first waiter not yet granted, or stops.
        while let Some((id, bytes)) = self.ledger().waiters().first() {
            let allocated = self.ledger().allocated();
            let short = allocated.saturating_add(bytes).saturating_sub(limit);
            if short == 0 {
                self.ledger().waiters().serve(self.ledger());
            } else if self.free_idle(short, allocated) < short {
                // What it freed serves the queue; nothing more to free.
                return;
            }
            if self
                .ledger()
                .waiters()
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
}
