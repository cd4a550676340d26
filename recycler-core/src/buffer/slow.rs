//! The slow paths of a pool: an acquire the owner path could not serve
//! (bind the thread's index, take a pooled buffer the core's way, else
//! charge memory and allocate), and every release but the owner's push
//! (foreign threads, full caches, the idle cap, grown and oversize buffers,
//! releases while a thread waits for memory).

use super::buf::Buf;
use super::guard::PooledBuf;
use super::index::PoolLocal;
use super::raw::AlignedBuf;
use super::shared::PoolShared;
use super::sizes::{GROWN, OVERSIZE};
use crate::error::AcquireError;
use crate::home::Home;
use crate::idle::DeltaCell;
use crate::loom::Arc;

impl PoolShared {
    /// `acquire` when the owner path found nothing, past a striped pool's
    /// lean pop ([`super::near`]): at the memory limit, an overdraft
    /// ([`super::limit`]); panics, as `Vec::with_capacity` does, only for
    /// a size no allocation can have or when the allocator fails. Out of
    /// line, so that the inlined owner path stays small and returns its
    /// buffer in registers.
    #[cold]
    #[inline(never)]
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn acquire_slower(&self, capacity: usize, idx: usize) -> PooledBuf<'_> {
        let got = match self.acquire_slow(capacity, idx) {
            Err(AcquireError::LimitExceeded { .. }) => self
                .acquire_overdraft(capacity, idx)
                .map_err(|err| err.requested_as(capacity)),
            other => other,
        };
        match got {
            Ok((buf, home, origin)) => PooledBuf::new(self, buf, home, origin),
            Err(err) => acquire_failed(&err),
        }
    }

    /// `try_acquire` when the owner path found nothing.
    #[cold]
    #[inline(never)]
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn try_acquire_cold(
        &self,
        capacity: usize,
        idx: usize,
    ) -> Result<PooledBuf<'_>, AcquireError> {
        let (buf, home, origin) = self.acquire_slow(capacity, idx)?;
        Ok(PooledBuf::new(self, buf, home, origin))
    }

    /// Finds or makes a buffer for bucket `idx` (oversize past the last).
    pub(crate) fn acquire_slow(
        &self,
        capacity: usize,
        idx: usize,
    ) -> Result<(Box<Buf>, Home<Buf>, u32), AcquireError> {
        self.acquire_slow_with(capacity, idx, |capacity| self.allocate(capacity))
            .map_err(|err| err.requested_as(capacity))
    }

    /// Finds a pooled buffer for bucket `idx`, else makes one with `alloc`
    /// (given the capacity to allocate; oversize past the last bucket).
    pub(crate) fn acquire_slow_with(
        &self,
        capacity: usize,
        idx: usize,
        alloc: impl FnOnce(usize) -> Result<Box<Buf>, AcquireError>,
    ) -> Result<(Box<Buf>, Home<Buf>, u32), AcquireError> {
        let Some(bucket) = self.buckets().get(idx) else {
            let buf = alloc(capacity)?;
            self.count_oversize_acquire();
            return Ok((buf, Home::new(self.oversize_home()), OVERSIZE));
        };
        let inner = self.bucket(idx);
        let pl = self.count_in_thread_delta(idx);
        let pooled = inner.take_pooled();
        // `take_pooled` sent this thread's pending releases of the bucket:
        // its cache may be indexed now.
        if let Some(pl) = pl
            && let Some(mine) = inner.local_for_current()
        {
            // SAFETY: as above; nothing is pending in `mine`.
            unsafe { pl.index(idx, mine) };
        }
        if let Some((mut buf, home)) = pooled {
            Buf::reset(&mut buf);
            return Ok((buf, home, idx as u32));
        }
        if let Some(larger) = self.pop_grown(idx, pl) {
            return Ok(larger);
        }
        // At the limit, a larger idle buffer, shrunk to the request, rather
        // than evict, wait or overdraw (`super::limit`); with room, a
        // buffer of its own size.
        if self.limit_binds(bucket.capacity())
            && let Some(larger) = self.take_larger(idx)
        {
            return Ok(larger);
        }
        let (buf, home) = inner.made(alloc(bucket.capacity())?);
        Ok((buf, home, idx as u32))
    }

    /// An idle buffer, in the calling thread's own cache, of the bucket
    /// that this thread's buffers of bucket `idx` last grew into (`pl`, the
    /// thread's index, records it on the release of a grown buffer), with
    /// that bucket as its origin: what an acquire whose bucket has nothing
    /// for it takes before it allocates (`serve_larger`). A buffer that
    /// grew goes, on release, to the bucket of its new capacity; this is
    /// where the acquires that made it grow find it again (see
    /// `docs/buffers.md`, "Buffers that grow"). If that bucket's cache is
    /// empty, the bucket its own buffers grew into is tried, and so on
    /// (each a larger bucket). Owner paths only (a few loads per bucket, no
    /// lock, no read-modify-write). Counted as an acquire, and a hit, of
    /// the bucket the buffer came from, which its release returns it to.
    ///
    /// Only buckets whose buffers grew are looked at: serving every empty
    /// bucket from any larger one made a pool of mixed sizes converge on a
    /// few large buffers, every acquire a slow one (Jetty's mix, W4: 4.6
    /// Mops/s against 17.7).
    pub(crate) fn pop_grown(
        &self,
        idx: usize,
        pl: Option<&PoolLocal>,
    ) -> Option<(Box<Buf>, Home<Buf>, u32)> {
        if !self.config().serve_larger {
            return None;
        }
        let pl = pl?;
        let mut from = idx;
        while let Some(to) = pl.grown_to(from).filter(|&to| to > from) {
            if let Some((buf, home)) = self.pop_fast(to) {
                self.count_served_larger(idx, to);
                if self.ledger().limit().is_some() {
                    // Under a limit, a request holds no more than its
                    // bucket (`super::limit`): the allocation is reused,
                    // shrunk, and grows again if the request does.
                    return Some(self.shrunk_to_bucket(idx, buf, home, to));
                }
                return Some((buf, home, to as u32));
            }
            from = to;
        }
        None
    }

    /// [`pop_grown`](Self::pop_grown) for `try_acquire_pooled`, binding the
    /// calling thread's index (none in striped mode).
    pub(crate) fn take_grown(&self, idx: usize) -> Option<(Box<Buf>, Home<Buf>, u32)> {
        if self.config().striped.is_some() || !self.config().serve_larger {
            return None;
        }
        self.pop_grown(idx, self.index().bind())
    }

    /// A pooled buffer of bucket `idx` that the owner path did not find, if
    /// the calling thread can reach one; `None` past the last bucket.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_pooled(&self, idx: usize) -> Option<(Box<Buf>, Home<Buf>)> {
        // A bucket not made holds nothing.
        let inner = self.buckets().get(idx)?.made()?.inner();
        let pl = self.count_in_thread_delta(idx);
        let (mut buf, home) = inner.take_pooled()?;
        Buf::reset(&mut buf);
        if let Some(pl) = pl
            && let Some(mine) = inner.local_for_current()
        {
            // SAFETY: `count_in_thread_delta` bound the calling thread's
            // index, and `take_pooled` sent what was pending in its cache.
            unsafe { pl.index(idx, mine) };
        }
        Some((buf, home))
    }

    /// A fresh buffer for bucket `idx` (oversize past the last) whose bytes
    /// the ledger has charged for the caller: a waiter's grant. Never a
    /// pooled one: the grant is what it allocates. The charge is freed if
    /// the allocation fails.
    pub(crate) fn allocate_granted(
        &self,
        capacity: usize,
        idx: usize,
    ) -> Result<(Box<Buf>, Home<Buf>, u32), AcquireError> {
        let Some(bucket) = self.buckets().get(idx) else {
            let buf = self.allocate_charged(capacity)?;
            self.count_oversize_acquire();
            return Ok((buf, Home::new(self.oversize_home()), OVERSIZE));
        };
        let buf = self.allocate_charged(bucket.capacity())?;
        self.count_in_thread_delta(idx);
        let (buf, home) = self.bucket(idx).made(buf);
        Ok((buf, home, idx as u32))
    }

    /// Allocates a buffer of `capacity` bytes, charged to the ledger.
    pub(crate) fn allocate(&self, capacity: usize) -> Result<Box<Buf>, AcquireError> {
        let align = self.config().alignment;
        if capacity > AlignedBuf::max_capacity(align) {
            return Err(AcquireError::TooLarge {
                requested: capacity,
                max: AlignedBuf::max_capacity(align),
            });
        }
        self.charge_with_reclaim(capacity)?;
        self.allocate_charged(capacity)
    }

    /// A buffer that a release granted to a waiter for bucket `idx` (see
    /// [`WaitQueue::grant_buffer`](super::ledger::WaitQueue::grant_buffer)),
    /// reset and counted as a pooled acquire by the calling thread, the
    /// waiter's, in the bucket of its capacity: `idx`, the waiter's, unless
    /// the release could not shrink a larger buffer to it (see
    /// [`release_to_waiters`](Self::release_to_waiters)).
    ///
    /// Homed at the calling thread's cache, as `Shared::granted` homes it;
    /// but a pool that keeps nothing (`max_idle_per_thread(0)`: caches of
    /// capacity 0) homes it at the bucket's discard cache, as `Shared::made`
    /// homes every fresh buffer there: a capacity-0 cache never holds a
    /// buffer, which the owner path's push relies on (see
    /// [`Shared::push_local`](crate::shared::Shared::push_local)), and the
    /// buffer is freed when released.
    pub(crate) fn take_granted(&self, idx: usize, mut buf: Box<Buf>) -> (Box<Buf>, Home<Buf>, u32) {
        // A buffer the release could not shrink to the request counts in
        // its own bucket, where the release put it.
        let served = self.bucket_of_capacity(buf.capacity()).unwrap_or(idx);
        if served > idx {
            self.count_served_larger(idx, served);
        }
        let idx = served;
        Buf::reset(&mut buf);
        self.count_in_thread_delta(idx);
        let inner = self.bucket(idx);
        // A bucket that keeps nothing homes it at its discard cache.
        let (buf, home) = inner.granted(buf);
        (buf, home, idx as u32)
    }

    /// Allocates a buffer of `capacity` bytes (at most
    /// `AlignedBuf::max_capacity`), which the caller has charged to the
    /// ledger; frees the charge if the allocator fails.
    pub(crate) fn allocate_charged(&self, capacity: usize) -> Result<Box<Buf>, AcquireError> {
        match AlignedBuf::try_new(capacity, self.config().alignment) {
            Ok(raw) => Ok(Box::new(Buf::new(raw, Arc::clone(self.ledger())))),
            Err(err) => {
                self.ledger().free(capacity as u64);
                Err(err)
            }
        }
    }

    /// Frees a buffer its holder gives back without pooling it
    /// (`discard`): counted as a release and a remove of the bucket it came
    /// from (as a pool that keeps nothing counts every release), or of the
    /// oversize entry; its memory goes back to the limit, which serves the
    /// waiters, if any, in their order, and idle buffers are freed for them
    /// if that is not enough (as after any release while they wait).
    #[cold]
    #[inline(never)]
    pub(crate) fn discard(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        let idx = (origin & !GROWN) as usize;
        match self.buckets().get(idx) {
            Some(_) => self.bucket(idx).discard(buf, home),
            None => {
                self.count_oversize_release();
                drop(buf);
            }
        }
        if self.under_pressure() {
            self.reclaim_for_waiters();
        }
    }

    /// Every other release (past a striped pool's lean push,
    /// [`super::near`]).
    #[cold]
    #[inline(never)]
    pub(crate) fn release_slow(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        let idx = (origin & !GROWN) as usize;
        let Some(bucket) = self.buckets().get(idx) else {
            self.count_oversize_release();
            drop(buf);
            if self.under_pressure() {
                self.reclaim_for_waiters();
            }
            return;
        };
        let inner = self.bucket(idx);
        if buf.overdrawn() {
            // An overdraft is never pooled nor granted: freed, counted
            // as a release and a remove of the bucket it came from.
            inner.discard(buf, home);
            if self.under_pressure() {
                self.reclaim_for_waiters();
            }
            return;
        }
        if self.under_pressure() {
            self.release_to_waiters((origin & !GROWN) as usize, buf, home);
            return;
        }
        // A pool that keeps nothing frees every buffer it gets back, grown
        // ones included (adopted, they would go into a cache of capacity 0).
        if inner.is_discard(home) || !inner.config.pooling() {
            inner.discard(buf, home);
            return;
        }
        let (dest, pl) = if buf.capacity() == bucket.capacity() {
            let pl = self.count_in_thread_delta((origin & !GROWN) as usize);
            inner.release_slow(buf, home, true);
            ((origin & !GROWN) as usize, pl)
        } else {
            // It grew: it leaves its bucket for the one of its new capacity,
            // where this thread's acquires of its old bucket look for it.
            inner.count_detached(home);
            let Some(dest) = self.bucket_of_capacity(buf.capacity()) else {
                bucket.count_outgrown();
                drop(buf);
                return;
            };
            let pl = self.count_in_thread_delta(dest);
            if let Some(pl) = pl {
                pl.set_grown_to((origin & !GROWN) as usize, dest);
            }
            let inner = self.bucket(dest);
            let (buf, home) = inner.adopt(buf);
            inner.release_slow(buf, home, true);
            (dest, pl)
        };
        self.index_unless_pending(dest, pl);
    }

    /// A release while anyone waits for memory, of a buffer acquired from
    /// bucket `origin`: the buffer itself goes to the first waiter not yet
    /// granted that it serves, in the queue's order (a waiter for a
    /// bucket's buffer no larger than it; see
    /// [`WaitQueue::grant_buffer`](super::ledger::WaitQueue::grant_buffer)),
    /// else it is freed for the waiters; then the idle buffers this thread
    /// reaches are freed for them too.
    ///
    /// A buffer larger than the waiter's request is shrunk to it first (the
    /// allocator's `realloc`), and those bytes go back to the limit once
    /// the buffer is granted, where they serve the waiters behind. Granted
    /// whole, they would be held by a request that did not ask for them:
    /// the waiters behind would wait for the first to give them back, and
    /// tasks that hold such buffers while they wait for more could hold the
    /// whole limit between them, none of them served (it did that: issue
    /// 24). The waiter then counts a hit, in its own bucket.
    ///
    /// The books: a buffer that leaves its bucket (grown, or shrunk here)
    /// is detached from the bucket it came from and adopted and released by
    /// the bucket of its capacity, as a grown buffer is when it is cached;
    /// the waiter's take counts the hit there.
    fn release_to_waiters(&self, origin: usize, buf: Box<Buf>, home: Home<Buf>) {
        let inner = self.bucket(origin);
        // The request of the waiter this buffer may serve.
        let first = self
            .bucket_of_capacity(buf.capacity())
            .and_then(|_| {
                self.ledger()
                    .waiters()
                    .target_for_buffer(self.ledger(), buf.capacity() as u64)
            })
            .and_then(|want| usize::try_from(want).ok())
            .filter(|&want| want <= buf.capacity());
        let Some(want) = first else {
            // Nobody it can serve: freed for the waiters.
            inner.discard(buf, home);
            self.grant_idle_to_waiters();
            self.reclaim_for_waiters();
            return;
        };
        let mut buf = buf;
        let mut freed = 0;
        if want < buf.capacity() && self.bucket_of_capacity(want).is_some() {
            freed = buf.shrink_to(want);
        }
        let bytes = buf.capacity() as u64;
        match self.bucket_of_capacity(buf.capacity()) {
            Some(dest) if dest != origin => {
                // It grew, or shrank here: it leaves its bucket for the one
                // of its capacity, as a grown buffer does when it is cached.
                inner.count_detached(home);
                let to = self.bucket(dest);
                let (buf, home) = to.adopt(buf);
                match self
                    .ledger()
                    .waiters()
                    .grant_buffer(self.ledger(), bytes, buf)
                {
                    Ok(()) => to.count_release(home, 1),
                    Err(buf) => to.discard(buf, home),
                }
            }
            _ => match self
                .ledger()
                .waiters()
                .grant_buffer(self.ledger(), bytes, buf)
            {
                Ok(()) => inner.count_release(home, 1),
                Err(buf) => inner.discard(buf, home),
            },
        }
        if freed != 0 {
            // After the grant: freed before, these bytes could grant the
            // first waiter, which the buffer is for.
            self.ledger().free(freed as u64);
        } else {
            // The waiter behind the one served, held up by it, may fit in
            // the memory free now.
            self.ledger().waiters().serve(self.ledger());
        }
        self.grant_idle_to_waiters();
        self.reclaim_for_waiters();
    }

    /// Indexes the calling thread's cache of bucket `b` in `pl`, its index,
    /// unless a release left objects pending in it; then takes it out of the
    /// index, so that the next acquire takes the slow path, which sends them
    /// (see [`super::index`]). Indexed, a cache this release claimed (the
    /// home of a buffer whose thread has exited, say) is one the owner paths
    /// and the eviction walks find.
    fn index_unless_pending(&self, b: usize, pl: Option<&PoolLocal>) {
        let (Some(pl), Some(bound)) = (pl, self.index().bound()) else {
            return;
        };
        let Some(mine) = self.bucket(b).local_for_current() else {
            return;
        };
        if !mine.has_pending() {
            // SAFETY: `bind` (in `count_in_thread_delta`) made the calling
            // thread the owner of `pl`; `mine` is its cache of bucket `b`,
            // with nothing pending, whose idle cell names the thread's delta
            // cell (`count_in_thread_delta`).
            unsafe { pl.index(b, mine) };
        } else {
            // SAFETY: `b` is a bucket.
            unsafe { bound.unset(b) };
        }
    }

    /// Binds the calling thread's index and makes its cache of bucket `b`
    /// count idle bytes where the owner paths count them (its idle cell):
    /// under `max_idle_memory`, in the thread's one delta cell of the pool's
    /// account, so that the bucket's slow paths, which count there, add to
    /// the same delta as the owner paths (one delta per thread, as the
    /// overshoot bound of the idle cap assumes); under
    /// `max_idle_per_bucket`, in the cache's own cell of the bucket's
    /// account (one delta per thread and bucket). Returns the index, if the
    /// thread is not exiting.
    pub(crate) fn count_in_thread_delta(&self, b: usize) -> Option<&PoolLocal> {
        if self.config().striped.is_some() {
            // No thread has a cache or an index: the stripes count.
            return None;
        }
        let pl = self.index().bind()?;
        if let Some(mine) = self.bucket(b).local_for_current() {
            let cell: *const DeltaCell = if self.counted().is_none() {
                std::ptr::null()
            } else if self.per_bucket() {
                &mine.local().delta
            } else {
                &pl.delta
            };
            mine.set_idle_cell(cell);
        }
        Some(pl)
    }
}

/// `acquire`'s panic (a size no allocation can have, the allocator
/// failing), out of line.
#[cold]
#[inline(never)]
fn acquire_failed(err: &AcquireError) -> ! {
    panic!("BufferPool::acquire: {err}")
}
