//! [`BufferPool`]: a pool of byte buffers in buckets by capacity, each
//! bucket a [`Recycler`](crate::Recycler) of buffers, under one idle-memory
//! account and one memory ledger. It holds the shared state
//! ([`PoolShared`]) and passes each call to the path that serves it: the
//! owner paths ([`super::owner`]), the slow paths ([`super::slow`]), the
//! limit ([`super::limit`]) and prefill ([`super::prefill`]). The methods
//! that make something other than a borrowed buffer live beside what they
//! make: the builder ([`super::builder`]), owned buffers
//! ([`super::owned`]), scopes ([`super::scope`]), handles
//! ([`super::handle`]) and the waits for memory ([`super::wait`]).

use std::fmt;
use std::ptr::NonNull;

use super::bucket::Bucket;
use super::buf::Buf;
use super::config::PoolConfig;
use super::guard::PooledBuf;
use super::shared::PoolShared;
use super::stats::BufferPoolStats;
use super::units::PoolPtr;
use crate::error::AcquireError;
use crate::home::Home;
use crate::loom::{
    Arc,
    Ordering::{AcqRel, Relaxed},
    Weak,
};

/// A pool of byte buffers in buckets by capacity.
///
/// [`acquire`](Self::acquire) rounds the size up to its bucket (`bucket_step`
/// apart, up to `max_capacity`; 16 buckets of 4 KiB steps by default) and
/// lends a [`PooledBuf`] with `len() == 0`; dropping it returns the
/// buffer to its bucket. Each bucket is a [`Recycler`](crate::Recycler): a
/// cache per thread, an inbox for buffers released on other threads, a
/// shared depot. On the thread that acquired it, acquiring and releasing a
/// buffer touch only that thread's cache: no lock, no atomic
/// read-modify-write.
///
/// Optional: a cap on idle memory ([`max_idle_memory`]) or on the idle
/// buffers of each bucket ([`max_idle_per_bucket`]), a hard limit on all
/// allocated memory ([`memory_limit`]), and an alignment for every buffer.
/// See the [module docs](super) for the whole picture.
///
/// `BufferPool` is `Send + Sync`. Share it by reference, or in an `Arc` to
/// get owned buffers ([`acquire_owned`](Self::acquire_owned)).
///
/// [`max_idle_memory`]: super::BufferPoolBuilder::max_idle_memory
/// [`max_idle_per_bucket`]: super::BufferPoolBuilder::max_idle_per_bucket
/// [`memory_limit`]: super::BufferPoolBuilder::memory_limit
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::new();
/// let mut buf = pool.acquire(1000);
/// assert_eq!((buf.len(), buf.capacity()), (0, 4096));
/// write!(buf, "hello {}", 42)?;
/// assert_eq!(&buf[..], b"hello 42");
/// let ptr = buf.as_ptr();
/// drop(buf);
///
/// let buf = pool.acquire(4000); // the same bucket: the same buffer
/// assert_eq!((buf.as_ptr(), buf.len()), (ptr, 0));
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct BufferPool {
    /// The shared state, which this handle keeps alive by the handles' unit
    /// of its keep-alive count ([`super::units`]).
    shared: NonNull<PoolShared>,
}

// SAFETY: a handle of `PoolShared`, which is `Send + Sync`, kept alive by
// the handles' unit of its count (an atomic count).
unsafe impl Send for BufferPool {}
// SAFETY: as above.
unsafe impl Sync for BufferPool {}

/// How a guard or a wait reaches its pool's shared state: a borrowed one by
/// reference, an owned one through a pointer beside its unit of the pool's
/// keep-alive count ([`PoolPtr`]), a wait for an owned one through the
/// `Arc` of its [`BufferPool`].
pub(crate) trait PoolRef {
    fn pool_shared(&self) -> &PoolShared;

    /// Returns a guard's buffer (and, for an owned one, its unit).
    #[inline(always)]
    fn release_buf(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        self.pool_shared().release_parts(buf, home, origin);
    }

    /// Frees a guard's buffer without pooling it (and, for an owned one,
    /// gives its unit back).
    #[inline(always)]
    fn discard_buf(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        self.pool_shared().discard(buf, home, origin);
    }
}

impl PoolRef for &PoolShared {
    #[inline(always)]
    fn pool_shared(&self) -> &PoolShared {
        self
    }
}

/// An owned buffer's: the pointer is held only beside the buffer's unit of
/// the pool's count, which its release (or discard) gives back.
impl PoolRef for PoolPtr {
    #[inline(always)]
    fn pool_shared(&self) -> &PoolShared {
        // SAFETY: the guard that holds this pointer holds a unit of the
        // pool's count (until its release, which does not call this after).
        unsafe { self.get() }
    }

    #[inline(always)]
    fn release_buf(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        // SAFETY: the guard's unit keeps the pool alive and goes back here;
        // `self` is the guard's field, not the pool's.
        unsafe { PoolShared::release_owned_parts(*self, buf, home, origin) };
    }

    fn discard_buf(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        // SAFETY: as above.
        unsafe { PoolShared::discard_owned(self.as_ptr(), buf, home, origin) };
    }
}

impl PoolRef for Arc<BufferPool> {
    #[inline(always)]
    fn pool_shared(&self) -> &PoolShared {
        self.shared()
    }
}

impl BufferPool {
    /// A pool with the default settings: 16 buckets from 4 KiB to 64 KiB, no
    /// memory cap or limit, no alignment.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// assert_eq!(pool.acquire(65536).capacity(), 65536);
    /// ```
    pub fn new() -> Self {
        Self::from_config(PoolConfig::DEFAULT)
    }

    pub(crate) fn from_config(config: PoolConfig) -> Self {
        let shared = Arc::new_cyclic(|this: &Weak<PoolShared>| PoolShared::new(config, this));
        #[cfg(loom)]
        shared.make_all();
        // The count's strong reference (see `Keep`): the state lives until
        // the count's last unit is given back, wherever that is.
        let shared = Arc::into_raw(shared).cast_mut();
        Self {
            // SAFETY: `Arc::into_raw` gives a non-null pointer.
            shared: unsafe { NonNull::new_unchecked(shared) },
        }
    }

    /// A buffer of at least `capacity` bytes, empty (`len() == 0`).
    ///
    /// `capacity` is rounded up to its bucket; 0 gets the smallest. Above
    /// `max_capacity`, or below
    /// [`min_capacity`](super::BufferPoolBuilder::min_capacity), the buffer
    /// has exactly `capacity` bytes and is freed when dropped (counted as
    /// non-pooled).
    ///
    /// A thread's first acquire from a pool allocates the thread's index of
    /// the pool's buckets, and its first from a bucket that bucket's cache
    /// (and, the first time any thread uses the bucket, the bucket's
    /// recycler); after that, acquires and releases served by the pool
    /// allocate nothing but the buffers themselves.
    ///
    /// Never panics at the `memory_limit`, and never waits there: when even
    /// after freeing the idle buffers it can reach the pool has no room, the
    /// buffer is an **overdraft**, allocated outside the limit, freed (not
    /// pooled) when dropped, and counted in
    /// [`BufferPoolStats::overdrafts`](super::BufferPoolStats::overdrafts)
    /// (see [`memory_limit`](super::BufferPoolBuilder::memory_limit)). To
    /// fail or wait at the limit instead, use
    /// [`try_acquire`](Self::try_acquire),
    /// [`acquire_timeout`](Self::acquire_timeout) or
    /// [`acquire_async`](Self::acquire_async).
    ///
    /// # Panics
    ///
    /// Like `Vec::with_capacity`, only for a size no allocation can have
    /// (above `isize::MAX`) or that the allocator refuses.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// let buf = pool.acquire(5000);
    /// assert!(buf.is_empty());
    /// assert_eq!(buf.capacity(), 8192);
    /// assert_eq!(pool.acquire(0).capacity(), 4096);
    ///
    /// let limited = BufferPool::builder().memory_limit(4096).build()?;
    /// let held = limited.acquire(4096);
    /// let over = limited.acquire(4096); // no room: an overdraft, no panic
    /// assert_eq!(limited.stats().overdrafts, 1);
    /// # drop((held, over));
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire(&self, capacity: usize) -> PooledBuf<'_> {
        let shared = self.shared();
        let idx = shared.bucket_index(capacity);
        match shared.pop_fast(idx) {
            Some((buf, home)) => PooledBuf::new(shared, buf, home, idx as u32),
            None => shared.acquire_cold(capacity, idx),
        }
    }

    /// A buffer of at least `capacity` bytes, or why there is none.
    ///
    /// At the `memory_limit`, first takes the smallest larger idle buffer
    /// of this thread's caches, shrunk to the request, if its own bucket
    /// has none (see
    /// `docs/buffers.md`, "Serving from larger buffers at the limit"); else
    /// frees idle buffers it can reach (this thread's caches, the depots,
    /// the inboxes) and retries.
    ///
    /// The "try" of `Vec::try_reserve`: it allocates if it must, and
    /// returns an error where [`acquire`](Self::acquire) would panic (a
    /// size no allocation can have, the allocator failing) or make an
    /// overdraft (the memory limit). For
    /// the "try" of [`Recycler::try_get`](crate::Recycler::try_get) (only a
    /// pooled buffer, never an allocation), see
    /// [`try_acquire_pooled`](Self::try_acquire_pooled).
    ///
    /// # Errors
    ///
    /// [`AcquireError::TooLarge`] for a size no allocation can have,
    /// [`AcquireError::LimitExceeded`] at the memory limit,
    /// [`AcquireError::AllocFailed`] if the allocator fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::AcquireError;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// assert!(matches!(pool.try_acquire(usize::MAX), Err(AcquireError::TooLarge { .. })));
    /// assert_eq!(pool.try_acquire(10)?.capacity(), 4096);
    /// # Ok::<(), AcquireError>(())
    /// ```
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn try_acquire(&self, capacity: usize) -> Result<PooledBuf<'_>, AcquireError> {
        let shared = self.shared();
        let idx = shared.bucket_index(capacity);
        match shared.pop_fast(idx) {
            Some((buf, home)) => Ok(PooledBuf::new(shared, buf, home, idx as u32)),
            None => shared.try_acquire_cold(capacity, idx),
        }
    }

    /// A pooled buffer of at least `capacity` bytes, if the pool holds one:
    /// never allocates, never waits. It looks where
    /// [`acquire`](Self::acquire) looks before allocating (this thread's
    /// cache of the bucket, its inbox, the bucket's depot, then this
    /// thread's cache of the bucket its buffers grew into, `serve_larger`;
    /// in striped mode, the stripes) and returns `None` if that finds nothing, or if
    /// `capacity` is above `max_capacity` or below `min_capacity` (such
    /// buffers are not pooled).
    ///
    /// The counterpart of [`Recycler::try_get`](crate::Recycler::try_get).
    /// ([`try_acquire`](Self::try_acquire) is the other kind of "try": it
    /// allocates if it must, and fails with an error at the memory limit
    /// where `acquire` makes an overdraft.)
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// assert!(pool.try_acquire_pooled(100).is_none()); // nothing pooled yet
    /// drop(pool.acquire(100));
    /// let buf = pool.try_acquire_pooled(4096).unwrap(); // the same bucket
    /// assert_eq!(buf.capacity(), 4096);
    /// assert!(pool.try_acquire_pooled(100_000).is_none()); // never pooled
    /// assert_eq!(pool.stats().allocated_memory, 4096);
    /// ```
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn try_acquire_pooled(&self, capacity: usize) -> Option<PooledBuf<'_>> {
        let shared = self.shared();
        let idx = shared.bucket_index(capacity);
        let (buf, home, origin) = match shared.pop_fast(idx) {
            Some((buf, home)) => (buf, home, idx as u32),
            None => match shared.take_pooled(idx) {
                Some((buf, home)) => (buf, home, idx as u32),
                None => shared.take_grown(idx)?,
            },
        };
        Some(PooledBuf::new(shared, buf, home, origin))
    }

    /// A snapshot of the pool's counters, summed over all threads: exact once
    /// all threads are quiet. See [`BufferPoolStats`].
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// let buf = pool.acquire(100);
    /// assert_eq!(pool.stats().buckets[0].in_use, 1);
    /// drop(buf);
    /// assert_eq!(pool.stats().idle_memory, 4096);
    /// ```
    pub fn stats(&self) -> BufferPoolStats {
        self.shared().stats()
    }

    /// Frees every idle buffer: every bucket's depot and inboxes, this
    /// thread's caches, and other threads' caches, whether or not those
    /// threads run again (a parked worker's buffers are freed too). A thread
    /// inside an acquire or a release at that moment keeps its cache for up
    /// to a millisecond, and if it is still inside then, keeps it.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// drop(pool.acquire(100));
    /// pool.trim();
    /// let stats = pool.stats();
    /// assert_eq!((stats.idle_memory, stats.allocated_memory), (0, 0));
    /// ```
    pub fn trim(&self) {
        for recycler in self.shared().buckets().iter().filter_map(Bucket::made) {
            recycler.trim();
        }
    }

    /// Makes up to `count` buffers for the bucket that serves `capacity`
    /// and puts them where every thread finds them: the bucket's shared
    /// depot, or in [striped](super::BufferPoolBuilder::striped) mode its
    /// stripes. Returns how many it added.
    ///
    /// For warming a pool at start-up on one thread, before worker threads
    /// (a tokio runtime's, a thread pool's) acquire: a thread's first
    /// acquire from the bucket finds a batch in the depot, a pooled buffer
    /// (counted in [`BucketStats::pooled`](super::BucketStats::pooled)),
    /// not a new allocation. The buffers made are counted in
    /// [`BucketStats::prefilled`](super::BucketStats::prefilled), not as
    /// acquires.
    ///
    /// It never goes past a limit, and never frees other buffers to make
    /// room: it stops short when the depot is full (it holds four times
    /// `max_idle_per_thread`; in striped mode, when every stripe holds
    /// `max_idle_per_thread`), when the next buffer would take idle memory
    /// over `max_idle_memory` or all memory over `memory_limit`, or while
    /// anyone waits for memory (that memory is theirs). A capacity above
    /// `max_capacity` or below `min_capacity` has no bucket, and gets
    /// `Ok(0)`: such buffers are never pooled. So do `count` 0 and a pool with
    /// `max_idle_per_thread(0)`.
    ///
    /// # Errors
    ///
    /// [`AcquireError::TooLarge`] for a size no buffer can have (as
    /// `try_acquire`: above `isize::MAX` less the alignment). Otherwise only
    /// when not even one buffer could be made:
    /// [`AcquireError::LimitExceeded`] when the memory limit has no room
    /// for one (nothing idle is freed to make room), and
    /// [`AcquireError::AllocFailed`] if the allocator fails. Once one buffer
    /// is made, a later stop is a short count.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::AcquireError;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().max_idle_per_thread(8).memory_limit(1 << 20).build()?;
    /// assert_eq!(pool.prefill(4096, 10)?, 10);
    /// assert_eq!(pool.prefill(4096, 100)?, 22); // the depot holds 4 × 8
    /// assert_eq!(pool.prefill(100_000, 1)?, 0); // above `max_capacity`: not pooled
    /// std::thread::scope(|s| {
    ///     s.spawn(|| drop(pool.acquire(4096))); // another thread finds one
    /// });
    /// let b = pool.stats().buckets[0];
    /// assert_eq!((b.prefilled, b.acquires, b.pooled, b.non_pooled), (32, 1, 1, 0));
    /// assert_eq!(b.idle, 32);
    ///
    /// let tight = BufferPool::builder().memory_limit(8192).build()?;
    /// assert_eq!(tight.prefill(8192, 2)?, 1); // the limit allows one
    /// assert!(matches!(tight.prefill(4096, 1), Err(AcquireError::LimitExceeded { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefill(&self, capacity: usize, count: usize) -> Result<usize, AcquireError> {
        self.shared().prefill(capacity, count)
    }

    /// The buffers in use, grouped by the call site that acquired them, with
    /// how many and for how long the oldest has been out (feature `track`):
    /// to find where buffers are kept or `mem::forget`-ten. A scope's
    /// buffers are reported where the scope's `alloc` that took each was
    /// called; a buffer turned into `Bytes` is in use until the last `Bytes`
    /// of it drops. See [`Leaks`](crate::Leaks).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "track")] {
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// std::mem::forget(pool.acquire(100)); // a leak
    /// let leaks = pool.leaks();
    /// assert_eq!(leaks.in_use(), 1);
    /// assert_eq!(leaks.sites()[0].location.line(), line!() - 3);
    /// # }
    /// ```
    #[cfg(feature = "track")]
    #[cfg_attr(docsrs, doc(cfg(feature = "track")))]
    pub fn leaks(&self) -> crate::track::Leaks {
        self.shared().leaks()
    }

    /// The shared state, for guards and scopes.
    #[inline(always)]
    pub(crate) fn shared(&self) -> &PoolShared {
        // SAFETY: the state lives while this handle does (it holds the
        // handles' unit, given back only when the last handle drops).
        unsafe { self.shared.as_ref() }
    }

    /// Another `BufferPool` of the same pool (its buckets, limits and
    /// counters): what a [`BufferPoolHandle`](super::BufferPoolHandle) holds.
    pub(crate) fn sharing(&self) -> Self {
        // `Relaxed`: a new handle is made from a live one.
        self.shared().handles().fetch_add(1, Relaxed);
        Self {
            shared: self.shared,
        }
    }
}

impl Drop for BufferPool {
    /// The last handle orphans the buckets (their caches' credits back in
    /// the pool's keep-alive count) and gives the handles' unit back: the
    /// pool lives on only while owned buffers (or `FrameBuf`s) are out (see
    /// the design notes, "Owned guards").
    fn drop(&mut self) {
        // `AcqRel`: the last handle sees every other handle's uses.
        if self.shared().handles().fetch_sub(1, AcqRel) == 1 {
            self.shared().orphan();
            if let Some(let_go) = self.shared().keep().give(1) {
                // SAFETY: `drop` borrows the handle, not the state.
                unsafe { let_go.run() };
            }
        }
    }
}

// Unwind safety: a buffer pool runs no user code inside its own critical
// sections (its buffers need no `reset`, and the one foreign call it makes,
// a waiting task's `Waker::wake`, runs outside every lock, after the grant
// it wakes for is booked: `ledger.rs`), so a panic anywhere leaves it as
// consistent as it was before (DESIGN.md, invariant 4): a buffer held by the
// code that panics is returned or freed by its `Drop` during the unwinding,
// and counted either way. `tests/tests/buffer_fit.rs` checks the books after
// a panic caught around an `acquire`.

/// A pool stays consistent across a panic; see the comment above this impl
/// in the source.
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::new();
/// let caught = catch_unwind(|| {
///     let mut buf = pool.acquire(100); // `&pool` captured: no `AssertUnwindSafe`
///     buf.extend_from_slice(b"half a frame");
///     panic!("in user code");
/// });
/// assert!(caught.is_err());
/// let b = pool.stats().buckets[0];
/// assert_eq!((b.acquires, b.releases, b.in_use), (1, 1, 0)); // returned
/// ```
impl std::panic::RefUnwindSafe for BufferPool {}

/// As [`RefUnwindSafe`](std::panic::RefUnwindSafe).
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::new();
/// let pool = catch_unwind(move || {
///     drop(pool.acquire(1));
///     pool
/// })
/// .unwrap();
/// assert_eq!(pool.stats().idle_memory, 4096);
/// ```
impl std::panic::UnwindSafe for BufferPool {}

impl Default for BufferPool {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for BufferPool {
    /// The settings and the memory totals; takes no lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = self.shared().config();
        f.debug_struct("BufferPool")
            .field("bucket_step", &c.bucket_step)
            .field("min_capacity", &c.min_capacity)
            .field("max_capacity", &c.max_capacity)
            .field("max_idle_memory", &c.max_idle_memory)
            .field("max_idle_per_bucket", &c.max_idle_per_bucket)
            .field("memory_limit", &c.memory_limit)
            .field("alignment", &c.alignment)
            .field("allocated_memory", &self.shared().ledger().allocated())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
