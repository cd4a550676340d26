//! `PoolShared`: the state every thread of one buffer pool shares: its
//! buckets (each a [`Recycler`] of buffers), the idle-memory account, the
//! memory ledger and the threads' indexes; how it is made and how its
//! statistics are read.
//!
//! A bucket's recycler is made when the pool first makes a buffer of the
//! bucket (or a thread first takes a cache of it), not when the pool is
//! built: a default pool has 16 buckets, and one with 64 KiB steps up to
//! 4 MiB has 64, of which a program often uses a few; each recycler is
//! 1,792 bytes (its shared state, two placeholder caches among it).
//! Readers (statistics, `trim`, eviction) skip the buckets not made yet,
//! which hold nothing.
//!
//! Its parts live below it: the settings ([`super::config`]), the buckets
//! ([`super::bucket`]), the ledger and its queue of waiters
//! ([`super::ledger`]), the per-thread index ([`super::index`]). The paths
//! live above it, in files of their own, each an `impl PoolShared` block:
//! bucket selection ([`super::sizes`]), the owner paths ([`super::owner`]),
//! eviction ([`super::evict`]), the limit ([`super::limit`]), growth
//! ([`super::grow`]), prefill ([`super::prefill`]), the slow paths
//! ([`super::slow`]) and the waits ([`super::wait`]).

use super::bucket::{Bucket, WaitCounts};
use super::buf::Buf;
use super::config::PoolConfig;
use super::index::PoolIndex;
use super::ledger::Ledger;
use super::stats::{BucketStats, BufferPoolStats};
use crate::cache::Local;
use crate::config::Config;
use crate::idle::{Evict, IdleAccount};
use crate::keep::{Keep, KeepRef};
use crate::loom::{
    Arc, AtomicBool, AtomicUsize, Liveness,
    Ordering::{Relaxed, SeqCst},
    StatCounter, Weak,
};
use crate::recycler::Recycler;
use crate::registry::{ExitFlush, Token};
use crate::shared::Shared;
use crate::stats::Counters;

/// The shared state of a pool.
pub(crate) struct PoolShared {
    config: PoolConfig,
    /// `log2(bucket_step)` when it is a power of two and there is no
    /// `min_capacity`: a shift, and nothing else, on the acquire path (see
    /// `bucket_index`).
    step_shift: Option<u32>,
    buckets: Box<[Bucket]>,
    /// The configuration of every bucket's recycler, kept to make them
    /// when first used.
    bucket_config: Config,
    ledger: Arc<Ledger<Box<Buf>>>,
    idle: Option<Arc<IdleAccount>>,
    /// The account the owner paths count idle buffers in, `None` without a
    /// cap: `max_idle_memory`'s (`idle`), or, under `max_idle_per_bucket`,
    /// the first bucket's, standing for each bucket's own
    /// ([`PoolShared::account_of`]). So the owner paths of a pool without a
    /// cap make one load and one test, as they did before the bucket cap.
    counted: Option<Arc<IdleAccount>>,
    /// Under `max_idle_per_bucket`, each bucket's own account, by bucket
    /// (empty otherwise): a cap of `n × capacity` bytes, every idle buffer
    /// of a bucket weighing its capacity, the account the bucket's recycler
    /// counts in. It is counted in the delta cell of the thread's cache of
    /// the bucket (`max_idle_memory` alone counts in the thread's one cell
    /// in its index, [`PoolLocal`](super::index::PoolLocal)); under
    /// `max_idle_memory` too, that cell's delta counts in the pool's account
    /// as well (its parent).
    bucket_idle: Box<[Arc<IdleAccount>]>,
    /// Each thread's index of its caches.
    index: PoolIndex,
    oversize_acquires: StatCounter,
    oversize_releases: StatCounter,
    /// Waits for oversize buffers (and growths past `max_capacity`).
    oversize_waits: WaitCounts,
    /// The home of buffers above `max_capacity`: a placeholder, never owned,
    /// that their release never looks at (their origin sends them to be
    /// freed).
    oversize_home: Local<Buf>,
    /// What a scope bumps its slices from: the capacity of its buffers (a
    /// bucket's, at most 64 KiB), the alignment of every buffer, and the
    /// bucket step; worked out once, since a scope is often made per
    /// request.
    scope_chunk: (usize, usize, usize),
    /// What keeps this state alive for the owned buffers out: units, one
    /// for the handles together, one per owned buffer, the rest credits in
    /// the caches of the buckets ([`super::units`]). It holds one strong
    /// reference on this state until its count reaches 0.
    keep: Keep,
    /// The handles (`BufferPool`s) of this state alive: the last to drop
    /// orphans the buckets and gives the handles' unit back.
    handles: AtomicUsize,
    /// Set by the last handle as it drops, before it orphans the buckets
    /// made so far: a bucket made afterwards is orphaned as it is made.
    orphaned: AtomicBool,
    /// Loom builds: checks that no use of this state races its drop.
    liveness: Liveness,
    /// Where the buffers in use were taken (feature `track`).
    #[cfg(feature = "track")]
    tracker: crate::track::Tracker,
}

/// Gives back the strong reference of a pool's state that its keep-alive
/// count holds.
///
/// # Safety
///
/// `state` is that reference, given back once (by [`Keep`]).
unsafe fn release_pool(state: *const ()) {
    // SAFETY: the caller's guarantee.
    unsafe { Arc::decrement_strong_count(state.cast::<PoolShared>()) };
}

impl PoolShared {
    pub(crate) fn new(config: PoolConfig, this: &Weak<PoolShared>) -> Self {
        let n_buckets = config.buckets();
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
            reset_on_return: true,
            stripes: config.striped,
            idle_decay: false,
            slots_reachable: true,
        };
        // Under `max_idle_per_bucket`, each bucket gets an account of its
        // own, which nothing evicts for: a release over it frees its buffer
        // (Jetty's `maxBucketSize`). The largest buffer is the bucket's, so
        // that a thread that takes and returns buffers in turn does not
        // publish on every operation. Under `max_idle_memory` too, each
        // counts in the pool's account as well (its parent: the same
        // deltas, published into both), whose evictor makes room there.
        // Made now (the owner paths read them without a check); the
        // buckets' recyclers, when first used.
        let bucket_idle: Box<[Arc<IdleAccount>]> = match config.max_idle_per_bucket {
            Some(n) => (0..n_buckets)
                .map(|i| {
                    let capacity = ((i + 1) * config.bucket_step) as u64;
                    let cap = (n as u64).saturating_mul(capacity);
                    Arc::new(match &idle {
                        Some(pool) => IdleAccount::with_parent(cap, capacity, Arc::clone(pool)),
                        None => IdleAccount::new(cap, capacity, None),
                    })
                })
                .collect(),
            None => Box::new([]),
        };
        let buckets = (0..n_buckets)
            .map(|i| Bucket::new((i + 1) * config.bucket_step))
            .collect();
        let counted = idle.clone().or_else(|| bucket_idle.first().cloned());
        let step = config.bucket_step;
        Self {
            config,
            step_shift: (step.is_power_of_two() && config.min_capacity == 0)
                .then(|| step.trailing_zeros()),
            buckets,
            bucket_config: core,
            ledger: Arc::new(Ledger::new(config.memory_limit.map(|l| l as u64))),
            counted,
            bucket_idle,
            idle,
            index: PoolIndex::new(n_buckets, this.clone()),
            oversize_acquires: StatCounter::new(0),
            oversize_releases: StatCounter::new(0),
            oversize_waits: WaitCounts::default(),
            oversize_home: Local::new(0, 1, std::ptr::null()),
            scope_chunk: {
                let chunk = config.max_capacity.min(64 << 10).div_ceil(step) * step;
                (
                    chunk.min(config.max_capacity),
                    config.alignment.max(1),
                    step,
                )
            },
            // SAFETY: `this` is the `Arc` being made, whose one strong
            // reference the count takes (`BufferPool::from_config`): handles
            // and owned buffers hold units of the count; `release_pool`
            // gives it back.
            keep: unsafe { Keep::new(this.as_ptr().cast(), release_pool) },
            handles: AtomicUsize::new(1),
            orphaned: AtomicBool::new(false),
            liveness: Liveness::new(),
            #[cfg(feature = "track")]
            tracker: crate::track::Tracker::default(),
        }
    }

    /// The count of units that keeps this state alive (see the field).
    #[inline(always)]
    pub(crate) fn keep(&self) -> &Keep {
        &self.keep
    }

    /// The handles alive (see the field).
    #[inline(always)]
    pub(crate) fn handles(&self) -> &AtomicUsize {
        &self.handles
    }

    /// Marks the pool orphaned: its last handle is dropping (see the
    /// field).
    pub(crate) fn set_orphaned(&self) {
        self.orphaned.store(true, SeqCst);
    }

    /// Whether the pool's last handle has dropped (see the field).
    pub(crate) fn is_orphaned(&self) -> bool {
        self.orphaned.load(SeqCst)
    }

    /// Loom builds: the check that a use of this state does not race its
    /// drop.
    #[inline(always)]
    pub(crate) fn liveness(&self) -> &Liveness {
        &self.liveness
    }

    /// The pool's settings.
    #[inline(always)]
    pub(crate) fn config(&self) -> &PoolConfig {
        &self.config
    }

    /// `log2(bucket_step)`, for the acquire path's shift, if it may take
    /// one (see the field).
    #[inline(always)]
    pub(crate) fn step_shift(&self) -> Option<u32> {
        self.step_shift
    }

    /// The buckets, smallest first.
    #[inline(always)]
    pub(crate) fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }

    /// The ledger of every byte the pool has allocated, and its waiters.
    #[inline(always)]
    pub(crate) fn ledger(&self) -> &Arc<Ledger<Box<Buf>>> {
        &self.ledger
    }

    /// The account the owner paths count idle buffers in, if any (see the
    /// field).
    #[inline(always)]
    pub(crate) fn counted(&self) -> Option<&IdleAccount> {
        self.counted.as_deref()
    }

    /// Each thread's index of its caches.
    #[inline(always)]
    pub(crate) fn index(&self) -> &PoolIndex {
        &self.index
    }

    /// The home of buffers above `max_capacity` (see the field).
    pub(crate) fn oversize_home(&self) -> &Local<Buf> {
        &self.oversize_home
    }

    /// Counts an acquire of a buffer no bucket serves.
    pub(crate) fn count_oversize_acquire(&self) {
        Counters::add_shared(&self.oversize_acquires, 1);
    }

    /// Counts a release of a buffer no bucket serves.
    pub(crate) fn count_oversize_release(&self) {
        Counters::add_shared(&self.oversize_releases, 1);
    }

    /// The waiting counts of entry `entry` of the statistics: its bucket, or
    /// the oversize one past the last.
    pub(crate) fn wait_counts(&self, entry: usize) -> &WaitCounts {
        self.buckets
            .get(entry)
            .map_or(&self.oversize_waits, Bucket::waits)
    }

    /// What a scope bumps its slices from (see the field).
    #[inline]
    pub(crate) fn scope_chunk(&self) -> (usize, usize, usize) {
        self.scope_chunk
    }

    /// Whether each bucket counts in an account of its own
    /// (`max_idle_per_bucket`).
    pub(crate) fn per_bucket(&self) -> bool {
        !self.bucket_idle.is_empty()
    }

    /// The account that `counted`, the owner paths' account, stands for in
    /// bucket `idx`: itself, or under `max_idle_per_bucket` the bucket's.
    #[inline(always)]
    pub(crate) fn account_of<'a>(
        &'a self,
        counted: &'a IdleAccount,
        idx: usize,
    ) -> &'a IdleAccount {
        match self.bucket_idle.get(idx) {
            Some(own) => own,
            None => counted,
        }
    }

    /// Makes every bucket's recycler now. Loom cannot model `OnceLock`:
    /// its models make every bucket up front, as the pool did before
    /// buckets were made lazily.
    #[cfg(loom)]
    pub(crate) fn make_all(&self) {
        for idx in 0..self.buckets.len() {
            self.bucket(idx);
        }
    }

    /// The recycler of bucket `idx`, made now if it was not yet: for the
    /// paths that make, take or return a buffer of the bucket (a returned
    /// buffer's bucket is made already). Not for readers, which take
    /// [`Bucket::made`].
    ///
    /// # Panics
    ///
    /// If `idx` is not a bucket.
    pub(crate) fn bucket(&self, idx: usize) -> &Shared<Buf> {
        let mut made = false;
        let inner = self.buckets[idx]
            .made_or(|| {
                made = true;
                // The bucket's own account if it has one (which counts in
                // the pool's too, if there is one), else the pool's.
                let shared = match (self.bucket_idle.get(idx), &self.idle) {
                    (Some(own), _) => Some((Arc::clone(own), idx)),
                    (None, Some(acct)) => Some((Arc::clone(acct), idx)),
                    (None, None) => None,
                };
                // Its caches hold credits of the pool's count.
                let credits_to = Some(KeepRef::new(&self.keep));
                Recycler::from_parts(
                    Box::new(never_called),
                    self.bucket_config,
                    shared,
                    credits_to,
                )
            })
            .inner();
        if made {
            self.orphan_if_late(inner);
        }
        inner
    }

    /// Records `buf`, just taken, as taken at `at` (feature `track`).
    #[cfg(feature = "track")]
    pub(crate) fn track(&self, buf: &Buf, at: &'static std::panic::Location<'static>) {
        self.tracker.taken(std::ptr::from_ref(buf).addr(), at);
    }

    /// Forgets `buf`, returned (feature `track`).
    #[cfg(feature = "track")]
    pub(crate) fn untrack(&self, buf: &Buf) {
        self.tracker.returned(std::ptr::from_ref(buf).addr());
    }

    /// The buffers in use, by the call site that took them (feature
    /// `track`).
    #[cfg(feature = "track")]
    pub(crate) fn leaks(&self) -> crate::track::Leaks {
        self.tracker.leaks()
    }

    /// The idle bytes the account has counted: published, plus every
    /// thread's delta (kept in its index, and in bucket caches the pool has
    /// not indexed).
    ///
    /// Under `max_idle_per_bucket` alone, the sum of the buckets' accounts,
    /// each its published total plus the deltas in its caches. (With
    /// `max_idle_memory` too, the pool's account has every bucket's
    /// publishes, and the deltas are the caches': the first sum.)
    pub(crate) fn accounted_idle(&self) -> u64 {
        let Some(acct) = &self.idle else {
            return self
                .buckets
                .iter()
                .zip(self.bucket_idle.iter())
                .map(|(b, acct)| acct.total(b.made().map_or(0, |r| r.inner().idle_deltas())))
                .sum();
        };
        let indexes = self.index.deltas();
        let caches = self
            .buckets
            .iter()
            .filter_map(Bucket::made)
            .fold(0i64, |sum, r| sum.wrapping_add(r.inner().idle_deltas()));
        acct.total(indexes.wrapping_add(caches))
    }

    pub(crate) fn stats(&self) -> BufferPoolStats {
        let counted = self.config.statistics;
        let mut idle_memory = 0u64;
        let buckets = self
            .buckets
            .iter()
            .map(|bucket| {
                let t = bucket.made().map(|r| r.inner().tally()).unwrap_or_default();
                let outgrown = bucket.outgrown();
                let (served_larger, served_smaller) = bucket.served_otherwise();
                let idle = if counted { t.idle() } else { 0 };
                idle_memory += idle * bucket.capacity() as u64;
                let (waiting, waits, timeouts, cancelled) = bucket.waits().read();
                BucketStats {
                    waiting,
                    waits,
                    timeouts,
                    cancelled,
                    capacity: bucket.capacity(),
                    acquires: if counted { t.gets() } else { 0 },
                    pooled: if counted { t.hits } else { 0 },
                    requested: if counted {
                        t.gets()
                            .saturating_sub(served_smaller)
                            .saturating_add(served_larger)
                    } else {
                        0
                    },
                    served_larger,
                    // Prefilled buffers are made, but not by an acquire.
                    non_pooled: t.created.saturating_sub(t.prefilled),
                    prefilled: t.prefilled,
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
        let accounted = self.accounted_idle();
        let (waiting, waits, timeouts, cancelled) = self.oversize_waits.read();
        BufferPoolStats {
            buckets,
            oversize: BucketStats {
                capacity: usize::MAX,
                acquires,
                pooled: 0,
                requested: acquires,
                served_larger: 0,
                non_pooled: acquires,
                evicts: 0,
                removes: releases,
                releases,
                in_use: acquires.saturating_sub(releases),
                idle: 0,
                prefilled: 0,
                waiting,
                waits,
                timeouts,
                cancelled,
            },
            idle_memory: if counted { idle_memory } else { accounted },
            allocated_memory: self.ledger.allocated(),
            accounted_idle_memory: accounted,
            max_idle_memory: self.config.max_idle_memory.map(|n| n as u64),
            max_idle_per_bucket: self.config.max_idle_per_bucket.map(|n| n as u64),
            memory_limit: self.config.memory_limit.map(|n| n as u64),
            statistics: counted,
            overdrafts: self.ledger.overdrafts(),
            overdraft_memory: self.ledger.overdrawn(),
            limit_violations: self.ledger.violations(),
        }
    }
}

impl ExitFlush for PoolShared {
    /// Forgets the exiting thread's index in this pool
    /// ([`PoolIndex::forget_on_exit`]).
    unsafe fn forget_on_exit(&self, local: *const (), token: Token) {
        // SAFETY: the registry passes the pointer the index's `bind`
        // registered with this hook (the trait's contract).
        unsafe { self.index.forget_on_exit(local, token) };
    }

    /// Publishes the exiting thread's idle-memory delta and gives its index
    /// up ([`PoolIndex::flush_on_exit`]).
    unsafe fn flush_on_exit(&self, local: *const (), token: Token) {
        // SAFETY: as in `forget_on_exit`.
        unsafe { self.index.flush_on_exit(local, token, self.idle.as_deref()) };
    }

    /// Serves the waiters, if any, from what the exiting thread gave up:
    /// a waiter that joined while the thread was moving its buffers to the
    /// depots may have found them neither in its cache nor in a depot, and
    /// sleeps; the light fence pairs with its heavy one (either it saw the
    /// cache given up, and the depot then, or this sees its join).
    fn after_exit(&self) {
        if self.config().memory_limit.is_some() {
            crate::fence::light();
            if self.ledger().under_pressure() {
                self.serve_waiters_now();
            }
        }
    }
}

/// The factory of the buckets' recyclers, which the pool never calls: it
/// allocates buffers itself, under its ledger, and gives them to the
/// recycler with `made`.
fn never_called() -> Buf {
    unreachable!("a buffer pool allocates its buffers itself")
}

impl Drop for PoolShared {
    fn drop(&mut self) {
        self.keep.settle();
        self.liveness.end();
        #[cfg(loom)]
        FREED.with(|n| n.set(n.get() + 1));
    }
}

#[cfg(loom)]
std::thread_local! {
    static FREED: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

/// Loom builds: the pools whose state was freed on this OS thread (a loom
/// model runs all its threads on its test's), so that a model can tell a
/// pool let go from one kept for ever by a unit never given back.
#[cfg(loom)]
#[doc(hidden)]
pub fn __loom_pools_freed() -> usize {
    FREED.with(std::cell::Cell::get)
}
