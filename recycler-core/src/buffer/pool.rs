//! [`BufferPool`]: buckets of byte buffers by capacity, each a
//! [`Recycler`] of [`Buf`]s, under one idle-memory account and one memory
//! ledger.
//!
//! # Paths
//!
//! - **acquire, owner path** (inlined): round the size to its bucket, find the
//!   calling thread's cache of that bucket through the pool's per-thread
//!   index ([`PoolLocal`], itself found through a small thread-local table
//!   keyed by pool id), pop it; under an idle cap, subtract the buffer from
//!   the thread's delta.
//! - **acquire, slow path**: bind the thread's index, take a pooled buffer
//!   the core's way (inbox, depot), else reserve the bytes on the ledger
//!   (freeing reachable idle buffers and retrying at the limit) and allocate.
//! - **release, owner path** (inlined): reset the buffer, and if it kept its
//!   capacity and the thread owns its home cache, push it there, if the cache
//!   has room and the idle cap admits it.
//! - **release, slow path**: foreign threads, full caches, the idle cap's
//!   eviction, buffers that grew (they move to the bucket of their new
//!   capacity, or are freed past `max_capacity`), oversize buffers, and
//!   releases while some thread waits for memory (freed at once).

use std::cell::Cell;
use std::fmt;
use std::ptr;
use std::time::{Duration, Instant};

use super::buf::Buf;
use super::builder::{BufferPoolBuilder, PoolConfig};
use super::guard::{OwnedPooledBuf, PooledBuf};
use super::limit::{Backoff, Ledger};
use super::raw::AlignedBuf;
use super::scope::Scope;
use super::stats::{BucketStats, BufferPoolStats};
use crate::builder::Config;
use crate::error::AcquireError;
use crate::idle::{self, DeltaCell, Evict, IdleAccount};
use crate::local::{Home, Local};
use crate::loom::{
    Arc, AtomicU64, Ordering::Relaxed, StatCounter, ThreadSlots, Weak, const_thread_local,
};
use crate::recycler::{Inner, Recycler};
use crate::registry::{self, ExitFlush, Token};
use crate::stats::Counters;

/// The origin of a buffer above `max_capacity`.
pub(crate) const OVERSIZE: u32 = u32::MAX;

/// Marks the origin of a buffer that grew: its release takes the slow path,
/// which finds the bucket of its new capacity. (Buckets are far fewer than
/// this bit.)
pub(crate) const GROWN: u32 = 1 << 31;

/// A pool of byte buffers in buckets by capacity.
///
/// [`acquire`](Self::acquire) rounds the size up to its bucket (`bucket_step`
/// apart, up to `max_capacity`; 16 buckets of 4 KiB steps by default) and
/// hands out a [`PooledBuf`] with `len() == 0`; dropping it returns the
/// buffer to its bucket. Each bucket is a [`Recycler`]: a cache per thread, an
/// inbox for buffers released on other threads, a shared depot. On the
/// thread that acquired it, acquiring and releasing a buffer touch only that
/// thread's cache: no lock, no atomic read-modify-write.
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

/// The shared state of a pool.
pub(crate) struct PoolInner {
    /// Unique for the life of the process; keys the threads' [`POOL_HOT`].
    id: u64,
    config: PoolConfig,
    /// `log2(bucket_step)` when it is a power of two: a shift instead of a
    /// division on the acquire path.
    step_shift: Option<u32>,
    buckets: Box<[Bucket]>,
    ledger: Arc<Ledger>,
    idle: Option<Arc<IdleAccount>>,
    /// Each thread's index of its caches.
    locals: ThreadSlots<PoolLocal>,
    /// This pool, as the target of thread-exit hooks.
    exit_hook: Weak<dyn ExitFlush>,
    oversize_acquires: StatCounter,
    oversize_releases: StatCounter,
}

/// One bucket: a recycler of buffers of one capacity.
struct Bucket {
    capacity: usize,
    recycler: Recycler<Buf>,
    /// Buffers of this bucket freed because they grew past `max_capacity`.
    outgrown: StatCounter,
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
    pub fn try_acquire(&self, capacity: usize) -> Result<PooledBuf<'_>, AcquireError> {
        let inner = &*self.inner;
        let idx = inner.bucket_index(capacity);
        match inner.pop_fast(idx) {
            Some((buf, home)) => Ok(PooledBuf::new(inner, buf, home, idx as u32)),
            None => inner.try_acquire_cold(capacity, idx),
        }
    }

    /// Like [`try_acquire`](Self::try_acquire), but at the `memory_limit`
    /// waits up to `timeout` for other threads to release memory, with
    /// bounded back-off (spins, yields, then sleeps from 10 µs doubling to
    /// 1 ms). While a thread waits, buffers released anywhere are freed
    /// rather than cached, so that it can have their memory.
    ///
    /// # Errors
    ///
    /// As `try_acquire`, after the wait: [`AcquireError::LimitExceeded`]
    /// with the numbers as they were at the last try. A request larger than
    /// the limit itself fails at once.
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
    pub fn acquire_timeout(
        &self,
        capacity: usize,
        timeout: Duration,
    ) -> Result<PooledBuf<'_>, AcquireError> {
        let first = match self.try_acquire(capacity) {
            Err(AcquireError::LimitExceeded {
                requested, limit, ..
            }) if requested as u64 <= limit => None,
            other => Some(other),
        };
        if let Some(result) = first {
            return result;
        }
        let mut backoff = Backoff::new(Instant::now().checked_add(timeout));
        let _waiting = self.inner.ledger.wait();
        loop {
            let result = self.try_acquire(capacity);
            match result {
                Err(AcquireError::LimitExceeded { .. }) if backoff.wait() => continue,
                other => return other,
            }
        }
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
    pub(crate) fn scope_chunk(&self) -> (usize, usize, usize) {
        let c = &self.inner.config;
        let chunk = c.max_capacity.min(64 << 10).div_ceil(c.bucket_step) * c.bucket_step;
        (chunk.min(c.max_capacity), c.alignment.max(1), c.bucket_step)
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

    /// The shared state, for guards and scopes.
    pub(crate) fn inner(&self) -> &PoolInner {
        &self.inner
    }
}

/// `acquire`'s panic, out of line.
#[cold]
#[inline(never)]
fn acquire_failed(err: &AcquireError) -> ! {
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

/// One thread's index of its caches in one pool: the cache of each bucket
/// (null until the thread first uses the bucket). Each cache's `aux` word
/// points to the owner's delta in the idle account (under a cap).
///
/// Found through [`POOL_HOT`], which holds an entry only while the thread
/// owns the index: the thread's exit hook (registered when it takes the
/// index) removes the entry and gives the index up, as the caches' own hooks
/// give up the caches; a later thread that inherits this slot takes it over
/// afresh.
///
/// The cells are touched only by the owner, and only through shared
/// references (never `&mut PoolLocal`), so that the pointer to `caches`
/// kept in [`POOL_HOT`] stays valid.
struct PoolLocal {
    owner: AtomicU64,
    /// The caches, by bucket; each one owned by the owner of this index.
    caches: Box<[Cell<*const Local<Buf>>]>,
}

// SAFETY: the raw pointers point into the pool (bucket caches, the idle
// account's cells), which outlives every `PoolLocal` (they drop with it);
// the index moves between threads only as a whole, when the `thread_local`
// crate hands a dead thread's slot to another.
unsafe impl Send for PoolLocal {}
// SAFETY: other threads touch only `owner`, an atomic; the cells are touched
// only by the thread whose token is in `owner`.
unsafe impl Sync for PoolLocal {}

impl PoolLocal {
    fn new(buckets: usize) -> Self {
        Self {
            owner: AtomicU64::new(registry::NOBODY),
            caches: (0..buckets).map(|_| Cell::new(ptr::null())).collect(),
        }
    }

    #[inline(always)]
    fn is_owned_by(&self, token: Token) -> bool {
        self.owner.load(Relaxed) == token
    }
}

/// The `caches` of the calling thread's index in one pool, as found in
/// [`POOL_HOT`] (one load less on the owner path than through the index).
#[derive(Clone, Copy)]
struct Bound {
    caches: *const Cell<*const Local<Buf>>,
}

impl Bound {
    /// The owner's cache of bucket `idx`, or null.
    ///
    /// # Safety
    ///
    /// `idx` is below the pool's number of buckets.
    #[inline(always)]
    unsafe fn cache(self, idx: usize) -> *const Local<Buf> {
        // SAFETY: `caches` points to the index's `caches`, one cell per
        // bucket (the caller's `idx` is in range), which live as long as the
        // index and never move (the box is never replaced).
        unsafe { (*self.caches.add(idx)).get() }
    }
}

/// (pool id, the `caches` of the thread's `PoolLocal` in that pool).
type HotEntry = (u64, *const Cell<*const Local<Buf>>);

/// Entries of [`POOL_HOT`] (a power of two).
const POOL_HOT_SLOTS: usize = 4;

#[allow(
    clippy::declare_interior_mutable_const,
    reason = "only copied into the array"
)]
const EMPTY_HOT: Cell<HotEntry> = Cell::new((0, ptr::null()));

// The calling thread's pool indexes, direct-mapped by pool id. Pool ids are
// never reused, so an entry of a dropped pool never matches.
const_thread_local! {
    static POOL_HOT: [Cell<HotEntry>; POOL_HOT_SLOTS] = [EMPTY_HOT; POOL_HOT_SLOTS];
}

impl PoolInner {
    fn new(config: PoolConfig, this: &Weak<PoolInner>) -> Self {
        let n = config.buckets();
        let idle = config.max_idle_memory.map(|cap| {
            let evictor: Weak<dyn Evict> = this.clone();
            Arc::new(IdleAccount::new(
                cap as u64,
                config.max_capacity as u64,
                Some(evictor),
            ))
        });
        let per_thread = config.max_idle_per_thread;
        let core = Config {
            max_capacity_per_thread: per_thread,
            batch_size: per_thread.clamp(1, 16),
            ratio: 1,
            depot_capacity: per_thread.saturating_mul(4),
            max_idle_bytes: config.max_idle_memory,
        };
        let buckets = (0..n)
            .map(|i| {
                let capacity = (i + 1) * config.bucket_step;
                let shared = idle.as_ref().map(|acct| (Arc::clone(acct), i));
                Bucket {
                    capacity,
                    recycler: Recycler::from_parts(Box::new(never_called), core, shared),
                    outgrown: StatCounter::new(0),
                }
            })
            .collect();
        let step = config.bucket_step;
        Self {
            id: registry::new_recycler_id(),
            config,
            step_shift: step.is_power_of_two().then(|| step.trailing_zeros()),
            buckets,
            ledger: Arc::new(Ledger::new(config.memory_limit.map(|l| l as u64))),
            idle,
            locals: ThreadSlots::new(),
            exit_hook: this.clone(),
            oversize_acquires: StatCounter::new(0),
            oversize_releases: StatCounter::new(0),
        }
    }

    /// The bucket for a request of `capacity` bytes; `buckets.len()` or more
    /// for oversize.
    #[inline(always)]
    fn bucket_index(&self, capacity: usize) -> usize {
        let n = capacity.saturating_sub(1);
        match self.step_shift {
            Some(shift) => n >> shift,
            None => n / self.config.bucket_step,
        }
    }

    /// The bucket whose buffers have exactly `capacity` bytes, if any.
    fn bucket_of_capacity(&self, capacity: usize) -> Option<usize> {
        let step = self.config.bucket_step;
        (capacity % step == 0 && capacity >= step && capacity <= self.config.max_capacity)
            .then(|| capacity / step - 1)
    }

    /// The calling thread's index, if it is bound and the thread owns it.
    ///
    /// An entry exists only while the thread owns the index (see
    /// [`PoolLocal`]), so no ownership check is needed here.
    #[inline(always)]
    fn pool_local(&self) -> Option<Bound> {
        let (id, caches) = POOL_HOT
            .try_with(|hot| hot[self.id as usize & (POOL_HOT_SLOTS - 1)].get())
            .unwrap_or((0, ptr::null()));
        (id == self.id).then_some(Bound { caches })
    }

    /// The owner path of acquire: pop the calling thread's cache of bucket
    /// `idx`, found through its index.
    #[inline(always)]
    fn pop_fast(&self, idx: usize) -> Option<(Box<Buf>, Home<Buf>)> {
        if idx >= self.buckets.len() {
            return None;
        }
        let bound = self.pool_local()?;
        // SAFETY: `idx` is a bucket (`get` above).
        let local = unsafe { bound.cache(idx) };
        // SAFETY: a non-null entry is a cache of this bucket that the owner
        // of the index (the calling thread, checked by `pool_local`) claimed
        // and owns until it exits, when its token, and so its ownership of
        // the index, ends; caches live as long as their recycler.
        let local = unsafe { local.as_ref() }?;
        // SAFETY: the calling thread owns `local` (above).
        let (mut buf, aux) = unsafe { Inner::pop_local(local, self.config.statistics) }?;
        Buf::reset(&mut buf);
        if let Some(acct) = &self.idle {
            // SAFETY: under a cap, `bind_cache` set every indexed cache's
            // `aux` to its owner's cell of the account, which lives as long
            // as the pool.
            let cell = unsafe { &*aux.cast::<DeltaCell>() };
            acct.sub(cell, buf.capacity() as u64);
        }
        Some((buf, Home::new(Some(local), false)))
    }

    /// Binds the calling thread's index (making it if need be) and puts it
    /// in [`POOL_HOT`]. `None` while the thread exits.
    fn bind(&self) -> Option<&PoolLocal> {
        let token = registry::assign();
        if !registry::is_live(token) {
            return None;
        }
        let pl = self.locals.get_or(|| PoolLocal::new(self.buckets.len()));
        if !pl.is_owned_by(token) {
            // SAFETY: `pl` lives in this pool's `locals`, at a fixed address,
            // as long as the pool, which the hook's `Weak` keeps alive while
            // it runs.
            let registered =
                unsafe { registry::register(self.exit_hook.clone(), ptr::from_ref(pl).cast()) };
            if !registered {
                return None;
            }
            // `pl` is the calling thread's slot: no live thread owns it (a
            // thread that had it has exited), so the calling thread takes it
            // over, forgetting the old owner's caches.
            pl.caches.iter().for_each(|c| c.set(ptr::null()));
            pl.owner.store(token, Relaxed);
        }
        let entry = (self.id, pl.caches.as_ptr());
        let _ = POOL_HOT.try_with(|hot| hot[self.id as usize & (POOL_HOT_SLOTS - 1)].set(entry));
        Some(pl)
    }

    /// `acquire` when the owner path found nothing; panics where
    /// `try_acquire` fails. Out of line, so that the inlined owner path
    /// stays small and returns its buffer in registers.
    #[cold]
    #[inline(never)]
    fn acquire_cold(&self, capacity: usize, idx: usize) -> PooledBuf<'_> {
        match self.acquire_slow(capacity, idx) {
            Ok((buf, home, origin)) => PooledBuf::new(self, buf, home, origin),
            Err(err) => acquire_failed(&err),
        }
    }

    /// `try_acquire` when the owner path found nothing.
    #[cold]
    #[inline(never)]
    fn try_acquire_cold(&self, capacity: usize, idx: usize) -> Result<PooledBuf<'_>, AcquireError> {
        let (buf, home, origin) = self.acquire_slow(capacity, idx)?;
        Ok(PooledBuf::new(self, buf, home, origin))
    }

    /// Finds or makes a buffer for bucket `idx` (oversize past the last).
    fn acquire_slow(
        &self,
        capacity: usize,
        idx: usize,
    ) -> Result<(Box<Buf>, Home<Buf>, u32), AcquireError> {
        let Some(bucket) = self.buckets.get(idx) else {
            let buf = self.allocate(capacity)?;
            Counters::add_shared(&self.oversize_acquires, 1);
            return Ok((buf, Home::new(None, false), OVERSIZE));
        };
        let inner = bucket.recycler.inner();
        if let (Some(pl), Some(local)) = (self.bind(), inner.local_for_current()) {
            // `bind` made the calling thread the owner of `pl`, and
            // `local_for_current` returns a cache it owns.
            let cell = self
                .idle
                .as_ref()
                .map_or(ptr::null(), |a| ptr::from_ref(a.cell()));
            // SAFETY: the calling thread owns `local`.
            unsafe { Inner::set_aux(local, cell.cast()) };
            pl.caches[idx].set(ptr::from_ref(local));
        }
        if let Some((mut buf, home)) = inner.take_pooled() {
            Buf::reset(&mut buf);
            return Ok((buf, home, idx as u32));
        }
        let buf = self.allocate(bucket.capacity)?;
        let (buf, home) = inner.made(buf);
        Ok((buf, home, idx as u32))
    }

    /// Allocates a buffer of `capacity` bytes, reserved on the ledger.
    fn allocate(&self, capacity: usize) -> Result<Box<Buf>, AcquireError> {
        let align = self.config.alignment;
        if capacity > AlignedBuf::max_capacity(align) {
            return Err(AcquireError::TooLarge {
                requested: capacity,
                max: AlignedBuf::max_capacity(align),
            });
        }
        self.reserve(capacity)?;
        match AlignedBuf::try_new(capacity, align) {
            Ok(raw) => Ok(Box::new(Buf::new(raw, Arc::clone(&self.ledger)))),
            Err(err) => {
                self.ledger.free(capacity as u64);
                Err(err)
            }
        }
    }

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
            reclaims += 1;
            let short = allocated.saturating_add(want).saturating_sub(limit).max(1);
            let start = idle::random_below(self.buckets.len(), allocated);
            if self.evict_walk(short, None, start) == 0 {
                return Err(fail);
            }
        }
    }

    /// Grows `buf` to hold at least `needed` bytes: to twice its capacity or
    /// `needed` if more, rounded up to a bucket (not past `max_capacity`
    /// unless `needed` is), charging the ledger.
    pub(crate) fn grow(&self, buf: &mut Buf, needed: usize) -> Result<(), AcquireError> {
        let cap = buf.capacity();
        if needed <= cap {
            return Ok(());
        }
        let step = self.config.bucket_step;
        let max = self.config.max_capacity;
        let doubled = cap.saturating_mul(2).max(needed);
        let target = if needed <= max {
            doubled.min(max).div_ceil(step) * step
        } else {
            doubled
        };
        let align = buf.alignment();
        if target > AlignedBuf::max_capacity(align) {
            if needed > AlignedBuf::max_capacity(align) {
                return Err(AcquireError::TooLarge {
                    requested: needed,
                    max: AlignedBuf::max_capacity(align),
                });
            }
            return self.grow_exact(buf, needed);
        }
        self.grow_exact(buf, target)
    }

    fn grow_exact(&self, buf: &mut Buf, target: usize) -> Result<(), AcquireError> {
        let extra = target - buf.capacity();
        self.reserve(extra)?;
        match buf.raw_mut().try_grow(target) {
            Ok(()) => Ok(()),
            Err(err) => {
                self.ledger.free(extra as u64);
                Err(err)
            }
        }
    }

    /// Returns a buffer. The owner path: the buffer kept its capacity (its
    /// origin is not marked [`GROWN`]), the calling thread owns its home
    /// cache, the cache has room, the idle cap admits it, and nobody waits
    /// for memory.
    #[inline(always)]
    pub(crate) fn release(&self, mut buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        let idx = origin as usize;
        if idx < self.buckets.len() {
            let waiting = self.config.memory_limit.is_some() && self.ledger.under_pressure();
            if !waiting {
                // SAFETY: the guard that held `home` borrowed (or held an
                // `Arc` of) the pool, which owns the cache.
                if let Some(local) = unsafe { home.local() } {
                    if local.is_owned_by(registry::current()) {
                        match self.push_fast(idx, local, buf) {
                            Ok(()) => return,
                            Err(back) => buf = back,
                        }
                    }
                }
            }
        }
        self.release_slow(buf, home, origin);
    }

    /// Pushes `buf`, of bucket `idx`, onto `local`, owned by the calling
    /// thread. Touches neither the bucket nor the buffer.
    #[inline(always)]
    fn push_fast(&self, idx: usize, local: &Local<Buf>, buf: Box<Buf>) -> Result<(), Box<Buf>> {
        let (max, count) = (self.config.max_idle_per_thread, self.config.statistics);
        match &self.idle {
            // SAFETY: the caller checked that the calling thread owns
            // `local`, a cache of bucket `idx`, whose recycler has
            // `max_idle_per_thread` as its capacity; the check runs no code
            // that touches the cache.
            None => unsafe { Inner::push_local(local, buf, max, count, |_| true) },
            Some(acct) => {
                let bytes = ((idx + 1) * self.config.bucket_step) as u64;
                let admit = |aux: *const ()| {
                    // SAFETY: under a cap, an indexed cache's `aux` is its
                    // owner's cell of the account, which lives as long as
                    // the pool; null if the pool has not indexed this cache
                    // (then: the slow path).
                    match unsafe { aux.cast::<DeltaCell>().as_ref() } {
                        Some(cell) => acct.try_add(cell, bytes),
                        None => false,
                    }
                };
                // SAFETY: as above; `admit` touches only the account.
                unsafe { Inner::push_local(local, buf, max, count, admit) }
            }
        }
    }

    /// Every other release.
    #[cold]
    #[inline(never)]
    fn release_slow(&self, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        let Some(bucket) = self.buckets.get((origin & !GROWN) as usize) else {
            Counters::add_shared(&self.oversize_releases, 1);
            drop(buf);
            return;
        };
        let inner = bucket.recycler.inner();
        let waiting = self.config.memory_limit.is_some() && self.ledger.under_pressure();
        if home.is_discard() || waiting {
            inner.discard(buf, home);
            return;
        }
        if buf.capacity() == bucket.capacity {
            inner.release_slow(buf, home, true);
            return;
        }
        // It grew: it leaves its bucket for the one of its new capacity.
        inner.count_detached(home);
        match self.bucket_of_capacity(buf.capacity()) {
            Some(dest) => {
                let dest = self.buckets[dest].recycler.inner();
                let (buf, home) = dest.adopt(buf);
                dest.release_slow(buf, home, true);
            }
            None => {
                Counters::add_shared(&bucket.outgrown, 1);
                drop(buf);
            }
        }
    }

    /// Frees idle buffers worth `want` bytes if it can, walking the buckets
    /// from `start` and skipping `skip`: in each, this thread's cache, then
    /// the depot, then the inboxes. Returns the bytes freed.
    fn evict_walk(&self, want: u64, skip: Option<usize>, start: usize) -> u64 {
        let n = self.buckets.len();
        let bound = self.pool_local();
        let mut freed = 0;
        for i in 0..n {
            let b = (start + i) % n;
            if skip == Some(b) {
                continue;
            }
            // SAFETY: `b < n`, a bucket.
            let own = bound.map_or(ptr::null(), |bound| unsafe { bound.cache(b) });
            // SAFETY: a non-null entry of an owned index is a cache of this
            // bucket that the calling thread owns.
            let own = unsafe { own.as_ref() };
            // SAFETY: `own` is owned by the calling thread (above).
            freed += unsafe { self.buckets[b].recycler.inner().evict(want - freed, own) };
            if freed >= want {
                break;
            }
        }
        freed
    }

    fn stats(&self) -> BufferPoolStats {
        let counted = self.config.statistics;
        let mut idle_memory = 0u64;
        let buckets = self
            .buckets
            .iter()
            .map(|bucket| {
                let t = bucket.recycler.inner().tally();
                let outgrown = bucket.outgrown.load(Relaxed);
                let idle = if counted { t.idle() } else { 0 };
                idle_memory += idle * bucket.capacity as u64;
                BucketStats {
                    capacity: bucket.capacity,
                    acquires: if counted { t.gets() } else { 0 },
                    pooled: if counted { t.hits } else { 0 },
                    non_pooled: t.created,
                    evicts: t.evicted,
                    removes: t.dropped.saturating_sub(t.evicted).wrapping_add(outgrown),
                    releases: if counted { t.released() } else { 0 },
                    in_use: if counted { t.in_use() } else { 0 },
                    idle,
                }
            })
            .collect();
        let acquires = self.oversize_acquires.load(Relaxed);
        let releases = self.oversize_releases.load(Relaxed);
        let accounted = self.idle.as_ref().map_or(0, |acct| acct.total());
        BufferPoolStats {
            buckets,
            oversize: BucketStats {
                capacity: usize::MAX,
                acquires,
                pooled: 0,
                non_pooled: acquires,
                evicts: 0,
                removes: releases,
                releases,
                in_use: acquires.saturating_sub(releases),
                idle: 0,
            },
            idle_memory: if counted { idle_memory } else { accounted },
            allocated_memory: self.ledger.allocated(),
            accounted_idle_memory: accounted,
            max_idle_memory: self.config.max_idle_memory.map(|n| n as u64),
            memory_limit: self.config.memory_limit.map(|n| n as u64),
            statistics: counted,
        }
    }
}

impl ExitFlush for PoolInner {
    /// The calling thread exits: it forgets its index in this pool (the
    /// entry in [`POOL_HOT`]) and gives the index up.
    unsafe fn flush_on_exit(&self, local: *const (), token: Token) {
        // SAFETY: the pointer registered by `bind`: this pool's `PoolLocal`
        // of the calling thread, alive as long as the pool (`&self`).
        let pl = unsafe { &*local.cast::<PoolLocal>() };
        let _ = POOL_HOT.try_with(|hot| {
            let slot = &hot[self.id as usize & (POOL_HOT_SLOTS - 1)];
            if slot.get().0 == self.id {
                slot.set((0, ptr::null()));
            }
        });
        if pl.is_owned_by(token) {
            pl.owner.store(registry::NOBODY, Relaxed);
        }
    }
}

impl Evict for PoolInner {
    fn evict_others(&self, want: u64, skip: usize) -> u64 {
        let start = idle::random_below(self.buckets.len(), want);
        self.evict_walk(want, Some(skip), start)
    }
}

/// The factory of the buckets' recyclers, which the pool never calls: it
/// allocates buffers itself, under its ledger, and hands them to the
/// recycler with `made`.
fn never_called() -> Buf {
    unreachable!("a buffer pool allocates its buffers itself")
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
        let freed = inner.evict_walk(3 * 8192, Some(2), 1);
        let s = p.stats();
        assert_eq!(s.buckets[1].evicts, 2, "bucket 1 first: {s}");
        assert_eq!(s.buckets[2].evicts, 0, "bucket 2 skipped: {s}");
        assert_eq!(s.buckets[3].evicts, 1, "then bucket 3, until enough: {s}");
        assert_eq!(s.buckets[0].evicts, 0, "never reached: {s}");
        assert_eq!(freed, 2 * 8192 + 16384);
        // Wrapping around: start at the last bucket.
        let freed = inner.evict_walk(16384 + 4096, None, 3);
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
                requested: 4096,
                allocated: 12288,
                limit: 12288
            }
        );
        assert!(
            matches!(
                p.try_acquire(20_000),
                Err(AcquireError::LimitExceeded {
                    requested: 20_480,
                    ..
                })
            ),
            "the bucket's capacity is what must be allocated"
        );
        drop(b);
    }

    #[test]
    fn pressure_frees_releases() {
        let p = pool(BufferPool::builder().memory_limit(4096));
        let b = p.acquire(1);
        let w = p.inner().ledger.wait();
        drop(b);
        assert_eq!(p.stats().allocated_memory, 0, "freed, not cached");
        drop(w);
        drop(p.acquire(1));
        assert_eq!(p.stats().allocated_memory, 4096, "cached again");
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
