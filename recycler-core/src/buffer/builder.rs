//! [`BufferPoolBuilder`]: the knobs of a [`BufferPool`], checked in one place.

use std::fmt;

use super::config::PoolConfig;
use super::pool::BufferPool;
use crate::error::ConfigError;

/// Builds a [`BufferPool`] with settings other than the defaults.
///
/// Made by [`BufferPool::builder`]. Setters take and return the builder;
/// [`build`](Self::build) checks every setting at once.
///
/// | setting | default | meaning |
/// | --- | --- | --- |
/// | [`bucket_step`](Self::bucket_step) | 4096 | capacity of the smallest bucket, and the step between buckets |
/// | [`min_capacity`](Self::min_capacity) | 0 | smaller requests get an exact-size buffer that is not pooled |
/// | [`max_capacity`](Self::max_capacity) | 65536 | capacity of the largest bucket; larger buffers are not pooled |
/// | [`max_idle_memory`](Self::max_idle_memory) | none | cap on the bytes idle across all buckets and threads |
/// | [`max_idle_per_bucket`](Self::max_idle_per_bucket) | none | cap on the buffers idle in one bucket across all threads |
/// | [`memory_limit`](Self::memory_limit) | none | hard cap on all buffer memory allocated, in use and idle |
/// | [`alignment`](Self::alignment) | 1 | alignment of every buffer's first byte |
/// | [`max_idle_per_thread`](Self::max_idle_per_thread) | 64 | idle buffers one thread keeps per bucket |
/// | [`statistics`](Self::statistics) | on | per-bucket counts of the hot path |
///
/// # Examples
///
/// ```
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::builder()
///     .bucket_step(1024)
///     .max_capacity(16 * 1024)
///     .max_idle_memory(1 << 20)
///     .memory_limit(64 << 20)
///     .alignment(4096)
///     .build()?;
/// assert_eq!(pool.stats().buckets.len(), 16);
/// # Ok::<(), recycler_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct BufferPoolBuilder {
    config: PoolConfig,
}

impl fmt::Debug for BufferPoolBuilder {
    /// Every setting, by the name of its setter, as set so far (checked only
    /// by [`build`](Self::build)).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let builder = BufferPool::builder().max_idle_memory(1 << 20);
    /// assert_eq!(
    ///     format!("{builder:?}"),
    ///     "BufferPoolBuilder { bucket_step: 4096, min_capacity: 0, max_capacity: 65536, \
    ///      max_idle_memory: Some(1048576), max_idle_per_bucket: None, memory_limit: None, \
    ///      alignment: 1, \
    ///      max_idle_per_thread: 64, statistics: true, striped: None, hard_limit: false, \
    ///      serve_larger: true }"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        f.debug_struct("BufferPoolBuilder")
            .field("bucket_step", &c.bucket_step)
            .field("min_capacity", &c.min_capacity)
            .field("max_capacity", &c.max_capacity)
            .field("max_idle_memory", &c.max_idle_memory)
            .field("max_idle_per_bucket", &c.max_idle_per_bucket)
            .field("memory_limit", &c.memory_limit)
            .field("alignment", &c.alignment)
            .field("max_idle_per_thread", &c.max_idle_per_thread)
            .field("statistics", &c.statistics)
            .field("striped", &c.striped)
            .field("hard_limit", &c.hard_limit)
            .field("serve_larger", &c.serve_larger)
            .finish()
    }
}

impl BufferPoolBuilder {
    pub(crate) fn new() -> Self {
        Self {
            config: PoolConfig::DEFAULT,
        }
    }

    /// The capacity of the smallest bucket and the step between buckets
    /// (Jetty's `factor`, default 4096): bucket `i` holds buffers of
    /// `(i + 1) × bucket_step` bytes, and a request is rounded up to the
    /// next bucket. At least 1.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().bucket_step(1000).max_capacity(3000).build()?;
    /// assert_eq!(pool.acquire(1001).capacity(), 2000);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn bucket_step(mut self, n: usize) -> Self {
        self.config.bucket_step = n;
        self
    }

    /// The smallest request that is pooled (Jetty's `minCapacity`; default
    /// 0: every request up to `max_capacity` is). A request for fewer bytes
    /// gets a buffer of exactly its size that is never pooled: allocated for
    /// the request and freed when dropped, as a request above
    /// `max_capacity` is, and counted with those, in
    /// [`BufferPoolStats::oversize`](super::BufferPoolStats::oversize)
    /// (`non_pooled` on acquire, `removes` on release). For pools whose
    /// small requests are rare or short-lived, and not worth a bucket's
    /// `bucket_step` bytes each. At most `max_capacity`.
    ///
    /// Small buffers count against the `memory_limit` as any other, wait at
    /// it as any other, and grow as any other (they are freed all the same).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().min_capacity(512).build()?;
    /// let small = pool.acquire(100);
    /// assert_eq!(small.capacity(), 100); // exactly what was asked
    /// drop(small); // freed, not pooled
    /// assert_eq!(pool.acquire(512).capacity(), 4096); // pooled from here up
    /// let s = pool.stats();
    /// assert_eq!((s.oversize.non_pooled, s.oversize.removes), (1, 1));
    /// assert_eq!((s.idle_memory, s.allocated_memory), (4096, 4096));
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn min_capacity(mut self, n: usize) -> Self {
        self.config.min_capacity = n;
        self
    }

    /// The capacity of the largest bucket (default 65536): a multiple of
    /// `bucket_step`, at most 4096 buckets. A request above it gets a buffer
    /// of exactly its size that is not pooled (freed when dropped).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().max_capacity(8192).build()?;
    /// assert_eq!(pool.stats().buckets.len(), 2);
    /// assert_eq!(pool.acquire(10_000).capacity(), 10_000); // not pooled
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn max_capacity(mut self, n: usize) -> Self {
        self.config.max_capacity = n;
        self
    }

    /// Caps the bytes held by idle buffers, across all buckets and threads
    /// (Jetty's `maxMemory`; default: no cap).
    ///
    /// Counted on release, never on acquire: a buffer that is never returned
    /// is never counted. A release that would go over the cap first evicts
    /// idle buffers from *other* buckets, starting at a random one; only if
    /// that cannot free enough is the released buffer itself dropped, so the
    /// bucket in active use keeps its buffers. Threads count in deltas of
    /// their own, so the cap costs no shared write per operation, and it may
    /// be exceeded by at most `(N - 1) × (S + max_capacity)` bytes with `N`
    /// threads releasing, where `S = max(max_idle_memory / 8, 2 ×
    /// max_capacity)`. With one releasing thread it holds exactly.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().max_idle_memory(8192).build()?;
    /// let bufs: Vec<_> = (0..3).map(|_| pool.acquire(4096)).collect();
    /// drop(bufs);
    /// assert_eq!(pool.stats().idle_memory, 8192); // the third one was dropped
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn max_idle_memory(mut self, bytes: usize) -> Self {
        self.config.max_idle_memory = Some(bytes);
        self
    }

    /// Caps the buffers idle in each bucket, across all threads (Jetty's
    /// `maxBucketSize`; default: no cap). [`max_idle_per_thread`](Self::max_idle_per_thread)
    /// still bounds each thread's cache; this bounds a bucket's caches, its
    /// inboxes and its depot together.
    ///
    /// Counted on release, as [`max_idle_memory`](Self::max_idle_memory) is:
    /// a release that would leave more than `n` buffers of its bucket idle
    /// frees the released buffer (as Jetty does), counted in the bucket's
    /// `removes`. Threads count in per-bucket deltas of their own, so the
    /// cap costs no shared write per operation, and it may be exceeded by
    /// at most `(N - 1) × (max(n / 8, 2) + 1)` buffers with `N` threads
    /// releasing into the bucket. With one releasing thread it holds
    /// exactly. 0 keeps nothing idle: every buffer is freed when dropped.
    ///
    /// With [`max_idle_memory`](Self::max_idle_memory) too, both hold: a
    /// release past the bucket's cap is freed, one past the memory cap
    /// evicts other buckets' idle buffers first, as without the bucket cap.
    /// The threads' deltas are then kept per bucket, and the memory cap's
    /// bound loosens by each releasing thread's unpublished deltas, below
    /// `max(n × capacity / 8, 2 × capacity)` per bucket (see the buffer
    /// guide, "The per-bucket cap").
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().max_idle_per_bucket(2).build()?;
    /// let bufs: Vec<_> = (0..3).map(|_| pool.acquire(4096)).collect();
    /// drop(bufs);
    /// let s = pool.stats();
    /// assert_eq!(s.max_idle_per_bucket, Some(2));
    /// assert_eq!((s.buckets[0].idle, s.buckets[0].removes), (2, 1)); // the third one was freed
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn max_idle_per_bucket(mut self, n: usize) -> Self {
        self.config.max_idle_per_bucket = Some(n);
        self
    }

    /// A cap on the memory the pool's buffers hold, in use and idle, pooled
    /// or not (like the JDK's `MaxDirectMemorySize`; default: none). At
    /// least `bucket_step`.
    ///
    /// **The methods that can fail, fail or wait.**
    /// [`BufferPool::try_acquire`], [`PooledBuf::try_reserve`](super::PooledBuf::try_reserve),
    /// [`BufferPool::prefill`] and [`Scope::try_alloc`](super::Scope::try_alloc)
    /// that would cross it first free the idle buffers they can reach and
    /// retry, then fail with
    /// [`AcquireError::LimitExceeded`](crate::AcquireError::LimitExceeded);
    /// [`BufferPool::acquire_timeout`], [`BufferPool::acquire_async`] and
    /// [`PooledBuf::reserve_async`](super::PooledBuf::reserve_async) wait
    /// for memory to be freed. For them the limit is hard.
    ///
    /// **The methods that cannot fail never panic at it.**
    /// [`BufferPool::acquire`] and the writes that grow a buffer (`push`,
    /// `extend_from_slice`, `reserve`, `resize`, `Extend`, `bytes::BufMut`,
    /// and `io::Write` unless [`hard_limit`](Self::hard_limit) is set) are
    /// served past it, when even after freeing the idle buffers they can
    /// reach the limit has no room, as an **overdraft**: a buffer (or the
    /// part of a growth) allocated for the request outside the limit, never
    /// pooled, freed when released. Overdrafts are counted in
    /// [`BufferPoolStats::overdrafts`](super::BufferPoolStats::overdrafts),
    /// and the bytes they hold now in
    /// [`overdraft_memory`](super::BufferPoolStats::overdraft_memory). So the
    /// limit bounds the pooled memory exactly, and all memory up to the
    /// overdrafts, which the statistics show. A program that must never pass
    /// it uses the fallible methods only, and can set
    /// [`hard_limit`](Self::hard_limit) to have any overdraft counted as a
    /// violation.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().memory_limit(16 * 1024).build()?;
    /// let mut a = pool.acquire(16 * 1024);
    /// assert!(pool.try_acquire(1).is_err()); // fallible: fails
    /// assert!(a.try_reserve(64 * 1024).is_err());
    /// a.extend_from_slice(&[0; 20_000]); // infallible: grown as an overdraft
    /// let b = pool.acquire(1); // an overdraft too
    /// let s = pool.stats();
    /// assert_eq!((s.overdrafts, s.allocated_memory), (2, 16 * 1024));
    /// assert_eq!(s.overdraft_memory, 4096 + 4096); // a grew by 4 KiB (to 20 KiB), b is 4 KiB
    /// drop((a, b)); // overdrafts are freed, never pooled
    /// let s = pool.stats();
    /// assert_eq!((s.overdraft_memory, s.allocated_memory, s.idle_memory), (0, 0, 0));
    /// assert!(pool.try_acquire(1).is_ok());
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn memory_limit(mut self, bytes: usize) -> Self {
        self.config.memory_limit = Some(bytes);
        self
    }

    /// Whether the `memory_limit` holds for writes too (default: false).
    ///
    /// With `false`, a buffer that must grow past the limit to take a write
    /// (`push`, `extend_from_slice`, `reserve`, `io::Write`, `Extend`,
    /// `bytes::BufMut`, tokio's `read_buf`) grows as an *overdraft*, as
    /// `Vec` and `BytesMut` always grow, freed when released, counted in
    /// [`BufferPoolStats::overdrafts`](super::BufferPoolStats::overdrafts).
    /// With `true`, no write passes the limit:
    ///
    /// - `io::Write` returns an error of kind `OutOfMemory`;
    /// - `bytes::BufMut` reports the room under the limit as its
    ///   `remaining_mut` (the spare capacity and the growth the memory free
    ///   covers), as a `&mut [u8]` reports its room: `chunk_mut` is empty
    ///   when there is none, so tokio's `read_buf` reads nothing (`Ok(0)`;
    ///   check `has_remaining_mut()` first, or `reserve_async`), and
    ///   `put_slice` past it panics, as `BufMut` requires;
    /// - the Vec-like methods that cannot fail (`push`,
    ///   `extend_from_slice`, `resize`, `reserve`, `Extend`...) panic rather
    ///   than pass the limit, as `Vec` panics when it cannot grow: use
    ///   `try_reserve` or `reserve_async` first.
    ///
    /// Acquires are not writes: `acquire` at the limit still makes an
    /// overdraft (use `try_acquire`, `acquire_timeout` or `acquire_async`
    /// to stay under it), counted in
    /// [`BufferPoolStats::limit_violations`](super::BufferPoolStats::limit_violations)
    /// as well; so is a `BufMut` write that `remaining_mut` promised room
    /// for when another thread took that room first. 0 there means the
    /// limit held.
    ///
    /// `build()` refuses it without a `memory_limit`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io::Write;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().memory_limit(16 * 1024).hard_limit(true).build()?;
    /// let mut buf = pool.acquire(4096);
    /// let err = buf.write_all(&[0; 20_000]).unwrap_err();
    /// assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory);
    /// # #[cfg(feature = "bytes")] {
    /// use bytes::BufMut;
    /// assert_eq!(buf.remaining_mut(), 16 * 1024); // the room under the limit
    /// buf.put_slice(&[1; 10_000]); // fits: grown to 12 KiB, under the limit
    /// # }
    /// # #[cfg(not(feature = "bytes"))]
    /// # buf.extend_from_slice(&[1; 10_000]);
    /// assert!(buf.try_reserve(8192).is_err()); // would pass it
    /// let s = pool.stats();
    /// assert_eq!((s.allocated_memory, s.overdrafts, s.limit_violations), (12 * 1024, 0, 0));
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn hard_limit(mut self, hard: bool) -> Self {
        self.config.hard_limit = hard;
        self
    }

    /// The alignment of every buffer's first byte, a power of two up to
    /// 1 GiB (default 1: whatever the allocator gives). For example 4096 for
    /// `O_DIRECT` or io_uring registered buffers.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().alignment(4096).build()?;
    /// assert_eq!(pool.acquire(100).as_ptr() as usize % 4096, 0);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn alignment(mut self, align: usize) -> Self {
        self.config.alignment = align;
        self
    }

    /// Idle buffers one thread's cache keeps per bucket (default 64); past
    /// it, batches spill to the bucket's shared depot, which holds four times
    /// as many. 0 disables pooling: every buffer is freed when dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().max_idle_per_thread(0).build()?;
    /// drop(pool.acquire(10));
    /// assert_eq!(pool.stats().idle_memory, 0);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn max_idle_per_thread(mut self, n: usize) -> Self {
        self.config.max_idle_per_thread = n;
        self
    }

    /// Whether the owner path counts acquires, hits and releases (default
    /// on). The counts are per thread, a load and a store each, and cost
    /// little; turned off, [`BufferPool::stats`] reports only what the slow
    /// paths count (allocations, evictions, removals) and the memory totals.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().statistics(false).build()?;
    /// assert!(!pool.stats().statistics);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn statistics(mut self, on: bool) -> Self {
        self.config.statistics = on;
        self
    }

    /// Whether buffers that grew serve the acquires that made them grow
    /// (default on). A buffer acquired at 4 KiB and grown to 20 KiB goes,
    /// on release, to the 20 KiB bucket, and the releasing thread notes
    /// that its 4 KiB buffers grow into that bucket; its next
    /// `acquire(4096)` that finds the 4 KiB bucket empty takes the grown
    /// buffer from its own 20 KiB cache before allocating (counted as an
    /// acquire and a hit of the 20 KiB bucket, to which it returns). Only
    /// buckets whose buffers grew are redirected, only to the bucket they
    /// grew into, and only within the thread's own caches; except where
    /// the `memory_limit` binds (a new buffer would not fit under it, or
    /// someone waits), where an acquire whose bucket has nothing idle takes
    /// the smallest larger idle buffer of the thread's caches, shrunk to
    /// its request, rather than evict it to allocate, wait or overdraw.
    /// Under a `memory_limit` every larger buffer that serves a smaller
    /// request is shrunk to it (a grown buffer too), so that no request
    /// holds more than it asked for. Off, every acquire gets a buffer of
    /// its own bucket, and grown buffers serve only requests of their new
    /// size. Striped pools, which have no per-thread caches, never
    /// do it. See `docs/buffers.md`, "Buffers that grow" and "Serving from
    /// larger buffers at the limit".
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// let mut buf = pool.acquire(4096);
    /// buf.extend_from_slice(&[1; 20_000]); // grows to 20 KiB
    /// drop(buf); // into the 20 KiB bucket
    /// let again = pool.acquire(4096); // the grown buffer, not a new one
    /// assert_eq!(again.capacity(), 20 * 1024);
    /// assert_eq!(pool.stats().total().non_pooled, 1);
    ///
    /// let strict = BufferPool::builder().serve_larger(false).build()?;
    /// let mut buf = strict.acquire(4096);
    /// buf.extend_from_slice(&[1; 20_000]);
    /// drop(buf);
    /// assert_eq!(strict.acquire(4096).capacity(), 4096); // allocated
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn serve_larger(mut self, on: bool) -> Self {
        self.config.serve_larger = on;
        self
    }

    /// Striped mode for every bucket: `stripes` stripes of idle buffers per
    /// bucket, chosen by the CPU a thread runs on, instead of a cache per
    /// thread per bucket; `0` means one per available CPU; rounded up to a
    /// power of two, at most 1024. See
    /// [`RecyclerBuilder::striped`](crate::RecyclerBuilder::striped) for what
    /// it changes: no buffer ever waits in the cache of a thread that went
    /// idle, and a buffer released on another thread is at once reachable
    /// from every thread, at the cost of a stripe's lock per acquire and per
    /// release. Each stripe holds
    /// [`max_idle_per_thread`](Self::max_idle_per_thread) buffers; the idle
    /// cap, the memory limit and eviction work as in the default mode.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().striped(0).build()?;
    /// let buf = pool.acquire(100);
    /// std::thread::scope(|s| {
    ///     s.spawn(move || drop(buf)); // released on another thread...
    /// });
    /// assert!(pool.try_acquire(100).is_ok()); // ...and found here
    /// assert_eq!(pool.stats().buckets[0].pooled, 1);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn striped(mut self, stripes: usize) -> Self {
        self.config.striped = Some(stripes);
        self
    }

    /// Checks the settings and makes the pool.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting out of range: `bucket_step`
    /// of 0; `max_capacity` below `bucket_step`, not a multiple of it, or
    /// more than 4096 buckets, or below `min_capacity`; `alignment` not a power of two or above
    /// 1 GiB; `memory_limit` of 0 or below `bucket_step`; `striped` above
    /// 1024; `max_idle_per_bucket` together with `max_idle_memory`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let err = BufferPool::builder().alignment(3000).build().unwrap_err();
    /// assert_eq!(err.to_string(), "`alignment` is 3000; it must be a power of two");
    /// let err = BufferPool::builder().max_capacity(5000).build().unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     "`max_capacity` is 5000; it must be a multiple of `bucket_step` (4096)"
    /// );
    /// ```
    pub fn build(self) -> Result<BufferPool, ConfigError> {
        let config = self.validate()?;
        Ok(BufferPool::from_config(config))
    }
}

impl BufferPool {
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
}

impl Default for BufferPoolBuilder {
    fn default() -> Self {
        Self::new()
    }
}

mod validate;

#[cfg(all(test, not(loom)))]
mod tests;
