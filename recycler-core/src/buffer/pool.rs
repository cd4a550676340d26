//! [`BufferPool`]: the public handle of a pool of byte buffers in buckets by
//! capacity, each bucket a [`Recycler`](crate::Recycler) of buffers, under
//! one idle-memory account and one memory ledger. It holds the shared state
//! ([`PoolInner`]) and hands each call to the path that serves it: the owner
//! paths ([`super::owner`]), the slow paths ([`super::slow`]), eviction
//! ([`super::evict`]), the limit ([`super::limit`]), waiting for memory
//! ([`super::wait`]) and prefill ([`super::prefill`]).

use std::fmt;
use std::future::Future;
use std::time::Duration;

use super::builder::{BufferPoolBuilder, PoolConfig};
use super::guard::{OwnedPooledBuf, PooledBuf};
use super::inner::PoolInner;
use super::scope::Scope;
use super::stats::BufferPoolStats;
use super::wait::{Acquire, AcquireOwned};
use crate::error::AcquireError;
use crate::loom::{Arc, Weak};

/// A pool of byte buffers in buckets by capacity.
///
/// [`acquire`](Self::acquire) rounds the size up to its bucket (`bucket_step`
/// apart, up to `max_capacity`; 16 buckets of 4 KiB steps by default) and
/// hands out a [`PooledBuf`] with `len() == 0`; dropping it returns the
/// buffer to its bucket. Each bucket is a [`Recycler`](crate::Recycler): a
/// cache per thread, an inbox for buffers released on other threads, a
/// shared depot. On the thread that acquired it, acquiring and releasing a
/// buffer touch only that thread's cache: no lock, no atomic
/// read-modify-write.
///
/// Optional: a cap on idle memory ([`max_idle_memory`]), a hard limit on all
/// allocated memory ([`memory_limit`]), and an alignment for every buffer.
/// See the [module docs](super) for the whole picture.
///
/// `BufferPool` is `Send + Sync`. Share it by reference, or in an `Arc` to
/// get owned buffers ([`acquire_owned`](Self::acquire_owned)).
///
/// [`max_idle_memory`]: super::BufferPoolBuilder::max_idle_memory
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
    inner: Arc<PoolInner>,
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

    /// A builder for other settings.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().max_idle_memory(1 << 20).build()?;
    /// # drop(pool);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn builder() -> BufferPoolBuilder {
        BufferPoolBuilder::new()
    }

    pub(crate) fn from_config(config: PoolConfig) -> Self {
        let inner = Arc::new_cyclic(|this: &Weak<PoolInner>| PoolInner::new(config, this));
        Self { inner }
    }

    /// A buffer of at least `capacity` bytes, empty (`len() == 0`).
    ///
    /// `capacity` is rounded up to its bucket; 0 gets the smallest. Above
    /// `max_capacity` the buffer has exactly `capacity` bytes and is freed
    /// when dropped (counted as non-pooled).
    ///
    /// A thread's first acquire from a pool allocates the thread's index of
    /// the pool's buckets, and its first from a bucket that bucket's cache;
    /// after that, acquires and releases served by the pool allocate
    /// nothing but the buffers themselves.
    ///
    /// # Panics
    ///
    /// Where [`try_acquire`](Self::try_acquire) fails: like
    /// `Vec::with_capacity`, for a size no allocation can have (above
    /// `isize::MAX`) or that the allocator refuses; and, with a
    /// `memory_limit`, when even after freeing the idle buffers it can reach
    /// the pool has no room (it does not wait: use
    /// [`acquire_timeout`](Self::acquire_timeout) for that).
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
    /// ```
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire(&self, capacity: usize) -> PooledBuf<'_> {
        let inner = &*self.inner;
        let idx = inner.bucket_index(capacity);
        match inner.pop_fast(idx) {
            Some((buf, home)) => PooledBuf::new(inner, buf, home, idx as u32),
            None => inner.acquire_cold(capacity, idx),
        }
    }

    /// A buffer of at least `capacity` bytes, or why there is none.
    ///
    /// At the `memory_limit`, first frees idle buffers it can reach (this
    /// thread's caches, the depots, the inboxes) and retries.
    ///
    /// The "try" of `Vec::try_reserve`: it allocates if it must, and
    /// returns an error where [`acquire`](Self::acquire) would panic. For
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
        let inner = &*self.inner;
        let idx = inner.bucket_index(capacity);
        match inner.pop_fast(idx) {
            Some((buf, home)) => Ok(PooledBuf::new(inner, buf, home, idx as u32)),
            None => inner.try_acquire_cold(capacity, idx),
        }
    }

    /// A pooled buffer of at least `capacity` bytes, if the pool holds one:
    /// never allocates, never waits. It looks where
    /// [`acquire`](Self::acquire) looks before allocating (this thread's
    /// cache of the bucket, its inbox, the bucket's depot; in striped mode,
    /// the stripes) and returns `None` if that finds nothing, or if
    /// `capacity` is above `max_capacity` (such buffers are not pooled).
    ///
    /// The counterpart of [`Recycler::try_get`](crate::Recycler::try_get).
    /// ([`try_acquire`](Self::try_acquire) is the other kind of "try": it
    /// allocates if it must, and fails with an error at the memory limit
    /// instead of panicking, as `Vec::try_reserve` does.)
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
        let inner = &*self.inner;
        let idx = inner.bucket_index(capacity);
        let (buf, home) = match inner.pop_fast(idx) {
            Some(hit) => hit,
            None => inner.take_pooled(idx)?,
        };
        Some(PooledBuf::new(inner, buf, home, idx as u32))
    }

    /// Like [`try_acquire`](Self::try_acquire), but at the `memory_limit`
    /// waits up to `timeout` for memory to be freed, parked. Waiting threads
    /// and tasks ([`acquire_async`](Self::acquire_async)) share one queue
    /// and are served first come, first served: the free that makes room for
    /// the first of them reserves the memory for it and wakes it. While
    /// anyone waits, buffers released anywhere go to the waiters rather than
    /// to a cache: handed over whole to a waiter of the same bucket, else
    /// freed. [The buffer guide](crate::guide::buffers) has the details.
    ///
    /// # Errors
    ///
    /// At once, as `try_acquire` would: [`AcquireError::TooLarge`] for a
    /// size no allocation can have, [`AcquireError::LimitExceeded`] for a
    /// request larger than the limit itself (its bucket's capacity, or the
    /// size asked above `max_capacity`), [`AcquireError::AllocFailed`] if
    /// the allocator fails. After the wait, `LimitExceeded` with the numbers
    /// as they were when it gave up.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::time::Duration;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().memory_limit(4096).build()?;
    /// let held = pool.acquire(4096);
    /// let waited = pool.acquire_timeout(4096, Duration::from_millis(5));
    /// assert!(waited.is_err()); // nobody released in time
    /// drop(held);
    /// assert!(pool.acquire_timeout(4096, Duration::from_millis(5)).is_ok());
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_timeout(
        &self,
        capacity: usize,
        timeout: Duration,
    ) -> Result<PooledBuf<'_>, AcquireError> {
        let inner = &*self.inner;
        let (buf, home, origin) = inner.acquire_blocking(capacity, timeout)?;
        Ok(PooledBuf::new(inner, buf, home, origin))
    }

    /// Like [`acquire_timeout`](Self::acquire_timeout), for a pool in an
    /// `Arc`: the buffer is `'static` (see
    /// [`acquire_owned`](Self::acquire_owned)).
    ///
    /// # Errors
    ///
    /// As [`acquire_timeout`](Self::acquire_timeout).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::time::Duration;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::builder().memory_limit(100_000).build()?);
    /// // Above `max_capacity` (64 KiB): not pooled, freed when dropped.
    /// let held = pool.acquire_owned(100_000);
    /// assert!(pool.acquire_owned_timeout(4096, Duration::ZERO).is_err());
    /// let releaser = std::thread::spawn(move || {
    ///     std::thread::sleep(Duration::from_millis(10));
    ///     drop(held); // frees its memory: the waiter is woken with 4 KiB of it
    /// });
    /// let buf = pool.acquire_owned_timeout(4096, Duration::from_secs(60))?;
    /// assert_eq!(buf.capacity(), 4096);
    /// # releaser.join().unwrap();
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_owned_timeout(
        self: &Arc<Self>,
        capacity: usize,
        timeout: Duration,
    ) -> Result<OwnedPooledBuf, AcquireError> {
        let (buf, home, origin) = self.inner.acquire_blocking(capacity, timeout)?;
        #[cfg(feature = "track")]
        self.inner.track(&buf, std::panic::Location::caller());
        Ok(OwnedPooledBuf::new(Arc::clone(self), buf, home, origin))
    }

    /// A buffer of at least `capacity` bytes, waiting without blocking at
    /// the `memory_limit` until memory is freed for it.
    ///
    /// The future tries as [`try_acquire`](Self::try_acquire) does when it
    /// is first polled. At the limit it joins the pool's queue of waiters
    /// (tasks, and threads in [`acquire_timeout`](Self::acquire_timeout)),
    /// frees the idle buffers it can reach, and returns `Pending`; a free
    /// that makes room for it (a buffer dropped, or an idle one evicted or
    /// trimmed) reserves the memory for it and wakes it. Waiters are served
    /// first come, first served; one that does not fit yet holds up those
    /// behind it. While anyone waits, buffers released anywhere go to the
    /// waiters rather than to a cache: a waiter for a buffer of the same
    /// bucket gets the buffer itself, and reuses it; else it is freed, so
    /// that the waiters can have its memory.
    /// Without a limit, it never waits. Polled again after it completed, it
    /// acquires another buffer.
    ///
    /// Memory idle in another thread's cache is not free: only that thread
    /// can free it. The section "Waiting for memory" of
    /// [the buffer guide](crate::guide::buffers) has the details, and when
    /// to add a timeout (such as `tokio::time::timeout`).
    ///
    /// # Errors
    ///
    /// At once, as `try_acquire` would, for a request that can never be
    /// served: [`AcquireError::TooLarge`] for a size no allocation can have,
    /// [`AcquireError::LimitExceeded`] for a request larger than the limit
    /// itself (its bucket's capacity, or the size asked above
    /// `max_capacity`); and [`AcquireError::AllocFailed`] if the allocator
    /// fails.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future before it completes takes it out of the queue,
    /// and it has reserved nothing. If memory had been reserved for it but
    /// it had not yet been polled, the memory goes to the next waiter, which
    /// is woken: no waiter is left asleep with memory free for it.
    ///
    /// # Examples
    ///
    /// With a minimal executor (use your runtime's: `.await` in a task):
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Wake, Waker};
    /// use std::thread::{self, Thread};
    /// use recycler_core::AcquireError;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// /// Runs `f` on this thread, parked while it waits.
    /// fn block_on<F: Future>(f: F) -> F::Output {
    ///     struct Unpark(Thread);
    ///     impl Wake for Unpark {
    ///         fn wake(self: Arc<Self>) {
    ///             self.0.unpark();
    ///         }
    ///     }
    ///     let waker = Waker::from(Arc::new(Unpark(thread::current())));
    ///     let mut cx = Context::from_waker(&waker);
    ///     let mut f = pin!(f);
    ///     loop {
    ///         match f.as_mut().poll(&mut cx) {
    ///             Poll::Ready(out) => return out,
    ///             Poll::Pending => thread::park(),
    ///         }
    ///     }
    /// }
    ///
    /// let pool = BufferPool::builder().memory_limit(100_000).build()?;
    /// // The whole limit, above `max_capacity`: not pooled, freed when dropped.
    /// let held = pool.acquire(100_000);
    /// let buf = thread::scope(|s| {
    ///     s.spawn(move || drop(held)); // frees it, before or while we wait
    ///     block_on(pool.acquire_async(4096))
    /// })?;
    /// assert_eq!(buf.capacity(), 4096);
    ///
    /// // Larger than the limit: it would wait forever, so it fails at once.
    /// let err = block_on(pool.acquire_async(200_000)).unwrap_err();
    /// assert!(matches!(err, AcquireError::LimitExceeded { requested: 200_000, .. }));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_async(
        &self,
        capacity: usize,
    ) -> impl Future<Output = Result<PooledBuf<'_>, AcquireError>> {
        Acquire::new(&self.inner, capacity)
    }

    /// Like [`acquire_async`](Self::acquire_async), for a pool in an `Arc`:
    /// the future and the buffer are `Send + 'static`, for spawned tasks.
    ///
    /// # Errors
    ///
    /// As [`acquire_async`](Self::acquire_async).
    ///
    /// # Cancel safety
    ///
    /// As [`acquire_async`](Self::acquire_async): dropped before it
    /// completes, the future leaves the queue having reserved nothing, and
    /// memory reserved for it goes to the next waiter.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Waker};
    /// use recycler_core::buffer::BufferPool;
    ///
    /// # fn block_on<F: std::future::Future>(f: F) -> F::Output {
    /// #     struct Unpark(std::thread::Thread);
    /// #     impl std::task::Wake for Unpark {
    /// #         fn wake(self: std::sync::Arc<Self>) {
    /// #             self.0.unpark();
    /// #         }
    /// #     }
    /// #     let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    /// #     let mut cx = std::task::Context::from_waker(&waker);
    /// #     let mut f = std::pin::pin!(f);
    /// #     loop {
    /// #         match f.as_mut().poll(&mut cx) {
    /// #             std::task::Poll::Ready(out) => return out,
    /// #             std::task::Poll::Pending => std::thread::park(),
    /// #         }
    /// #     }
    /// # }
    /// let pool = Arc::new(BufferPool::builder().memory_limit(8192).build()?);
    /// let held = pool.acquire_owned(8192);
    /// let wait = pool.acquire_owned_async(4096);
    /// fn spawnable<F: Future + Send + 'static>(f: F) -> F { f }
    /// let mut wait = pin!(spawnable(wait));
    ///
    /// // Polled once at the limit, it joins the queue.
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert!(wait.as_mut().poll(&mut cx).is_pending());
    /// std::thread::spawn(move || drop(held)).join().unwrap(); // frees 8 KiB
    /// let buf = block_on(wait)?; // memory was reserved for it
    /// assert_eq!(buf.capacity(), 4096);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_owned_async(
        self: &Arc<Self>,
        capacity: usize,
    ) -> impl Future<Output = Result<OwnedPooledBuf, AcquireError>> + Send + 'static {
        AcquireOwned::new(Arc::clone(self), capacity)
    }

    /// Like [`acquire`](Self::acquire), for a pool in an `Arc`: the buffer
    /// holds a clone of the `Arc`, so it is `'static` and can move into
    /// threads and tasks.
    ///
    /// # Panics
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut buf = pool.acquire_owned(100);
    /// std::thread::spawn(move || buf.extend_from_slice(b"away")).join().unwrap();
    /// assert_eq!(pool.stats().buckets[0].releases, 1);
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_owned(self: &Arc<Self>, capacity: usize) -> OwnedPooledBuf {
        match self.try_acquire_owned(capacity) {
            Ok(buf) => buf,
            Err(err) => acquire_failed(&err),
        }
    }

    /// Like [`try_acquire`](Self::try_acquire), for a pool in an `Arc`; see
    /// [`acquire_owned`](Self::acquire_owned).
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Self::try_acquire).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::builder().memory_limit(4096).build()?);
    /// let a = pool.try_acquire_owned(4096);
    /// assert!(a.is_ok());
    /// assert!(pool.try_acquire_owned(4096).is_err());
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn try_acquire_owned(
        self: &Arc<Self>,
        capacity: usize,
    ) -> Result<OwnedPooledBuf, AcquireError> {
        let buf = self.try_acquire(capacity)?;
        let (buf, home, origin) = buf.into_parts();
        Ok(OwnedPooledBuf::new(Arc::clone(self), buf, home, origin))
    }

    /// A scope that allocates byte slices from this pool and returns all of
    /// them when it drops (Panama's pool-bound allocator).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// {
    ///     let scope = pool.scope();
    ///     let a = scope.alloc_zeroed(100);
    ///     let b = scope.alloc(200);
    ///     a[0] = 1;
    ///     b[0] = 2;
    ///     assert_eq!((a.len(), b.len()), (100, 200));
    /// } // the scope's buffer (one of 4 KiB holds both) back in the pool
    /// assert_eq!(pool.stats().idle_memory, 4096);
    /// ```
    pub fn scope(&self) -> Scope<'_> {
        Scope::new(self)
    }

    /// The capacity of the buffers a scope bump-allocates its slices from
    /// (a bucket's, at most 64 KiB), the alignment of every buffer, and the
    /// bucket step.
    #[inline]
    pub(crate) fn scope_chunk(&self) -> (usize, usize, usize) {
        self.inner.scope_chunk
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
        self.inner.stats()
    }

    /// Frees the idle buffers the calling thread can reach: every bucket's
    /// depot and inboxes, and this thread's own caches. Other threads'
    /// caches are left to their owners.
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
        for bucket in &*self.inner.buckets {
            bucket.recycler.trim();
        }
    }

    /// Makes up to `count` buffers for the bucket that serves `capacity`
    /// and puts them where every thread finds them: the bucket's shared
    /// depot. Returns how many it added.
    ///
    /// For warming a pool at start-up on one thread, before worker threads
    /// (a tokio runtime's, a thread pool's) acquire: a thread's first
    /// acquire from the bucket finds a batch in the depot, a pooled buffer
    /// (counted in [`BucketStats::pooled`](super::BucketStats::pooled)),
    /// not a new allocation.
    ///
    /// It never goes past a limit, and never frees other buffers to make
    /// room: it stops short when the depot is full (it holds four times
    /// `max_idle_per_thread`), when the next buffer would take idle memory
    /// over `max_idle_memory` or all memory over `memory_limit`, or while
    /// anyone waits for memory (that memory is theirs). A capacity above
    /// `max_capacity` has no bucket, and gets `Ok(0)`: such buffers are
    /// never pooled. So do `count` 0 and a pool with
    /// `max_idle_per_thread(0)`.
    ///
    /// # Errors
    ///
    /// Only when not even one buffer could be made:
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
    /// assert_eq!((b.non_pooled, b.pooled, b.idle), (32, 1, 32));
    ///
    /// let tight = BufferPool::builder().memory_limit(8192).build()?;
    /// assert_eq!(tight.prefill(8192, 2)?, 1); // the limit allows one
    /// assert!(matches!(tight.prefill(4096, 1), Err(AcquireError::LimitExceeded { .. })));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn prefill(&self, capacity: usize, count: usize) -> Result<usize, AcquireError> {
        self.inner.prefill(capacity, count)
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
    pub fn leaks(&self) -> crate::Leaks {
        self.inner.tracker.leaks()
    }

    /// The shared state, for guards and scopes.
    pub(crate) fn inner(&self) -> &PoolInner {
        &self.inner
    }
}

/// `acquire`'s panic, out of line.
#[cold]
#[inline(never)]
pub(crate) fn acquire_failed(err: &AcquireError) -> ! {
    panic!("BufferPool::acquire: {err}")
}

impl Default for BufferPool {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Debug for BufferPool {
    /// The settings and the memory totals; takes no lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.inner.config;
        f.debug_struct("BufferPool")
            .field("bucket_step", &c.bucket_step)
            .field("max_capacity", &c.max_capacity)
            .field("max_idle_memory", &c.max_idle_memory)
            .field("memory_limit", &c.memory_limit)
            .field("alignment", &c.alignment)
            .field("allocated_memory", &self.inner.ledger.allocated())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use static_assertions::assert_impl_all;

    assert_impl_all!(BufferPool: Send, Sync);

    fn pool(b: BufferPoolBuilder) -> BufferPool {
        b.build().unwrap()
    }

    #[test]
    fn rounds_up_to_buckets() {
        let p = BufferPool::new();
        for (ask, cap) in [
            (0, 4096),
            (1, 4096),
            (4096, 4096),
            (4097, 8192),
            (65535, 65536),
            (65536, 65536),
        ] {
            let b = p.acquire(ask);
            assert_eq!((b.capacity(), b.len()), (cap, 0), "acquire({ask})");
        }
        let odd = pool(BufferPool::builder().bucket_step(1000).max_capacity(5000));
        assert_eq!(odd.inner.step_shift, None);
        assert_eq!(odd.acquire(1001).capacity(), 2000);
        assert_eq!(odd.acquire(5000).capacity(), 5000);
        assert_eq!(odd.acquire(5001).capacity(), 5001);
    }

    #[test]
    fn bucket_of_capacity_is_exact() {
        let p = BufferPool::new();
        let inner = p.inner();
        assert_eq!(inner.bucket_of_capacity(4096), Some(0));
        assert_eq!(inner.bucket_of_capacity(65536), Some(15));
        assert_eq!(inner.bucket_of_capacity(65537), None);
        assert_eq!(inner.bucket_of_capacity(5000), None);
        assert_eq!(inner.bucket_of_capacity(0), None);
    }

    /// Puts `n` idle buffers into each of the given buckets, on this thread.
    fn fill(p: &BufferPool, caps: &[usize], n: usize) {
        let held: Vec<_> = caps
            .iter()
            .flat_map(|&c| (0..n).map(move |_| c))
            .map(|c| p.acquire(c))
            .collect();
        drop(held);
    }

    #[test]
    fn eviction_walks_from_start_and_skips() {
        let p = pool(BufferPool::builder().max_capacity(4 * 4096));
        fill(&p, &[4096, 8192, 12288, 16384], 2);
        let inner = p.inner();
        // Want 3 buffers' worth of bucket 1 (8 KiB each): start at 1, skip 2.
        let freed = inner.evict_walk(3 * 8192, Some(2), 1, usize::MAX);
        let s = p.stats();
        assert_eq!(s.buckets[1].evicts, 2, "bucket 1 first: {s}");
        assert_eq!(s.buckets[2].evicts, 0, "bucket 2 skipped: {s}");
        assert_eq!(s.buckets[3].evicts, 1, "then bucket 3, until enough: {s}");
        assert_eq!(s.buckets[0].evicts, 0, "never reached: {s}");
        assert_eq!(freed, 2 * 8192 + 16384);
        // Wrapping around: start at the last bucket.
        let freed = inner.evict_walk(16384 + 4096, None, 3, usize::MAX);
        let s = p.stats();
        assert_eq!((s.buckets[3].evicts, s.buckets[0].evicts), (2, 1), "{s}");
        assert_eq!(freed, 16384 + 4096);
    }

    #[test]
    fn over_the_cap_evicts_other_buckets_first() {
        // Room for 4 KiB + 8 KiB + 12 KiB exactly.
        let p = pool(
            BufferPool::builder()
                .max_capacity(4 * 4096)
                .max_idle_memory(24 * 1024),
        );
        fill(&p, &[4096, 8192, 12288], 1);
        assert_eq!(p.stats().idle_memory, 24 * 1024);
        // Releasing into bucket 0 again goes over by 4 KiB: another bucket
        // gives way, never bucket 0 itself.
        let a = p.acquire(4096);
        let b = p.acquire(4096); // a miss: allocated
        drop(a);
        drop(b);
        let s = p.stats();
        assert_eq!(s.buckets[0].idle, 2, "the releasing bucket keeps both: {s}");
        assert_eq!(s.buckets[0].evicts, 0, "{s}");
        assert_eq!(s.buckets[1].evicts + s.buckets[2].evicts, 1, "{s}");
        assert!(s.idle_memory <= 24 * 1024, "{s}");
    }

    #[test]
    fn released_buffer_is_dropped_when_nothing_else_can_go() {
        let p = pool(BufferPool::builder().max_idle_memory(8192));
        let bufs: Vec<_> = (0..3).map(|_| p.acquire(4096)).collect();
        drop(bufs);
        let s = p.stats();
        assert_eq!((s.buckets[0].idle, s.buckets[0].removes), (2, 1), "{s}");
        assert_eq!(s.idle_memory, 8192);
        assert_eq!(s.accounted_idle_memory, 8192);
        assert_eq!(s.allocated_memory, 8192);
    }

    #[test]
    fn grown_buffer_moves_to_its_new_bucket() {
        let p = BufferPool::new();
        let mut b = p.acquire(4096);
        b.extend_from_slice(&[7; 5000]); // grows to 8 KiB
        assert_eq!(b.capacity(), 8192);
        assert_eq!(&b[4990..], &[7; 10]);
        drop(b);
        let s = p.stats();
        assert_eq!((s.buckets[0].in_use, s.buckets[0].idle), (0, 0), "{s}");
        assert_eq!((s.buckets[1].releases, s.buckets[1].idle), (1, 1), "{s}");
        assert_eq!(s.allocated_memory, 8192);
        let again = p.acquire(8000);
        assert_eq!(s.buckets[1].pooled, 0);
        assert_eq!(p.stats().buckets[1].pooled, 1, "the grown buffer is reused");
        drop(again);
    }

    #[test]
    fn buffer_grown_past_max_is_freed() {
        let p = BufferPool::new();
        let mut b = p.acquire(60_000);
        b.resize(70_000, 1);
        assert!(b.capacity() >= 70_000);
        drop(b);
        let s = p.stats();
        assert_eq!(s.buckets[14].removes, 1, "{s}");
        assert_eq!(s.idle_memory, 0);
        assert_eq!(s.allocated_memory, 0);
    }

    #[test]
    fn oversize_is_not_pooled() {
        let p = BufferPool::new();
        let b = p.acquire(100_000);
        assert_eq!(b.capacity(), 100_000);
        assert_eq!(p.stats().allocated_memory, 100_000);
        drop(b);
        let s = p.stats();
        assert_eq!(
            (
                s.oversize.acquires,
                s.oversize.non_pooled,
                s.oversize.removes
            ),
            (1, 1, 1)
        );
        assert_eq!(s.oversize.in_use, 0);
        assert_eq!(s.allocated_memory, 0);
    }

    #[test]
    fn limit_reclaims_idle_then_fails_with_numbers() {
        let p = pool(BufferPool::builder().memory_limit(3 * 4096));
        fill(&p, &[4096, 8192], 1); // 12 KiB idle, the whole limit
        let b = p.acquire(12288); // frees both idle buffers to make room
        assert_eq!(p.stats().allocated_memory, 12288);
        let err = p.try_acquire(1).unwrap_err();
        assert_eq!(
            err,
            AcquireError::LimitExceeded {
                requested: 1,
                needed: 4096,
                allocated: 12288,
                limit: 12288
            }
        );
        assert!(
            matches!(
                p.try_acquire(20_000),
                Err(AcquireError::LimitExceeded {
                    requested: 20_000,
                    needed: 20_480,
                    ..
                })
            ),
            "the bucket's capacity is what must be allocated"
        );
        drop(b);
    }

    #[test]
    fn pressure_frees_releases() {
        use std::future::Future;
        use std::task::{Context, Poll, Waker};

        let p = pool(BufferPool::builder().memory_limit(8192));
        let a = p.acquire(4096);
        let b = p.acquire(4096);
        let mut wait = std::pin::pin!(p.acquire_async(8192));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(wait.as_mut().poll(&mut cx).is_pending());
        assert_eq!(p.inner().ledger.waiters.len(), 1);
        drop(a);
        let s = p.stats();
        assert_eq!(s.allocated_memory, 4096, "freed, not cached: {s}");
        assert_eq!(s.buckets[0].idle, 0, "{s}");
        drop(b); // 8 KiB free now: reserved for the waiter
        assert_eq!(p.stats().allocated_memory, 8192);
        let Poll::Ready(Ok(got)) = wait.as_mut().poll(&mut cx) else {
            panic!("granted, so ready");
        };
        assert_eq!(p.inner().ledger.waiters.len(), 0);
        assert!(!p.inner().under_pressure());
        drop(got);
        let s = p.stats();
        assert_eq!(s.buckets[1].idle, 1, "cached again: {s}");
    }

    #[test]
    fn alignment_by_pointer_arithmetic() {
        for align in [64, 512, 4096] {
            let p = pool(BufferPool::builder().alignment(align));
            for cap in [0, 1, 4096, 40_000, 100_000] {
                let mut b = p.acquire(cap);
                assert_eq!(b.as_ptr().addr() % align, 0, "align {align} cap {cap}");
                b.resize(b.capacity() + 1, 0); // grown: still aligned
                assert_eq!(b.as_ptr().addr() % align, 0, "grown, align {align}");
            }
        }
    }

    #[test]
    fn statistics_off_keeps_memory_totals() {
        let p = pool(
            BufferPool::builder()
                .statistics(false)
                .max_idle_memory(1 << 20),
        );
        drop(p.acquire(1));
        drop(p.acquire(1));
        let s = p.stats();
        assert!(!s.statistics);
        assert_eq!(s.buckets[0].acquires, 0);
        assert_eq!(s.buckets[0].non_pooled, 1);
        assert_eq!((s.idle_memory, s.allocated_memory), (4096, 4096));
    }
}
