//! [`BufferPoolStats`] and [`BucketStats`]: a snapshot of a pool, summed
//! from per-thread counters when read, and its Jetty-style dump.

use std::fmt;

/// A snapshot of one bucket of a [`BufferPool`](super::BufferPool), of the
/// buffers too large for any bucket ([`BufferPoolStats::oversize`]), or of
/// the whole pool ([`BufferPoolStats::total`]).
///
/// Counts are summed over per-thread counters when read: approximate while
/// threads work, exact once they are quiet.
///
/// # Identities
///
/// Once threads are quiet, these hold exactly:
///
/// - In every entry, `acquires == pooled + non_pooled` (buffers made by
///   [`prefill`](super::BufferPool::prefill) are no acquires: they are
///   counted in `prefilled`, and their acquires in `pooled`).
/// - In every entry, `acquires + grown_in == releases + in_use + grown_out`,
///   where `grown_in` counts the buffers that grew into this bucket's
///   capacity and were released into it, and `grown_out` the buffers
///   acquired here that grew and were released after: into the bucket of
///   their new capacity, or freed past `max_capacity`. A buffer that grows
///   stays `in_use` in the bucket it came from until it is released. Neither
///   count is reported, so **`acquires == releases + in_use` holds only for
///   a bucket no released buffer grew into or out of** (a grown buffer
///   released while the pool is short of memory and freed, or released by
///   a pool that keeps nothing, is counted as a release of the bucket it
///   came from, so it leaves the identity intact). A buffer a release
///   grants a waiter of a smaller bucket, shrunk to it, moves the same
///   way: out of its bucket, into the waiter's, released there and
///   acquired (a hit). An acquire served by a larger bucket's buffer
///   (`serve_larger`) is counted in that bucket, which the buffer never
///   leaves.
/// - Over the whole pool ([`BufferPoolStats::total`]) the moves between
///   buckets cancel out: `acquires == releases + in_use + outgrown`, where
///   `outgrown` is the number of buffers that grew past `max_capacity` and
///   were freed when released, which are counted in the `removes` of the
///   bucket they came from and never as a release. With no such buffer,
///   `acquires == releases + in_use`.
/// - Every buffer allocated is accounted for, over the whole pool:
///   `non_pooled + prefilled == in_use + idle + evicts + removes` (in one
///   bucket only if no buffer grew into or out of it: a grown buffer is
///   allocated in one bucket and idle in another).
///
/// # Examples
///
/// ```
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::new();
/// drop(pool.acquire(100)); // allocated, then pooled
/// drop(pool.acquire(4096)); // the same buffer again
/// let b = &pool.stats().buckets[0];
/// assert_eq!((b.capacity, b.acquires, b.pooled, b.non_pooled), (4096, 2, 1, 1));
/// assert_eq!((b.releases, b.in_use, b.idle), (2, 0, 1));
/// assert_eq!(b.hit_ratio(), 0.5);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct BucketStats {
    /// The capacity of the bucket's buffers, in bytes; `usize::MAX` for the
    /// oversize entry (any size above `max_capacity`), 0 for the
    /// [`total`](BufferPoolStats::total).
    pub capacity: usize,
    /// Buffers acquired from this bucket: `acquires == pooled +
    /// non_pooled`.
    pub acquires: u64,
    /// Acquires served by an idle buffer (hits), prefilled ones included.
    pub pooled: u64,
    /// Acquires that asked for this bucket's size, whichever buffer served
    /// them: `acquires`, less those of this bucket's buffers that served a
    /// smaller request, plus [`served_larger`](Self::served_larger). What
    /// to size buckets from: `acquires` counts the buffer served.
    pub requested: u64,
    /// Acquires of this bucket's size served by a larger idle buffer (at
    /// the memory limit, or the buffer a bucket's acquires grew into;
    /// `docs/buffers.md`, "Serving from a larger buffer"), counted as
    /// acquires of the bucket that served them (whole), or, shrunk to this
    /// bucket's capacity, as acquires and hits of that bucket and then
    /// moved here.
    pub served_larger: u64,
    /// Acquires that allocated a new buffer (misses). Every oversize acquire
    /// is non-pooled. Buffers [`prefill`](super::BufferPool::prefill) made
    /// are not acquires, and are counted in [`prefilled`](Self::prefilled)
    /// instead.
    pub non_pooled: u64,
    /// Buffers [`prefill`](super::BufferPool::prefill) allocated for this
    /// bucket, idle until acquired (the acquire is then `pooled`); 0 for the
    /// oversize entry. With `non_pooled`, every buffer the bucket allocated.
    pub prefilled: u64,
    /// Idle buffers freed to keep idle memory under `max_idle_memory`,
    /// evicted to make room for a release into another bucket (or for an
    /// acquire at the `memory_limit`).
    pub evicts: u64,
    /// Buffers freed rather than kept, other than by eviction: no room in the
    /// thread's cache and the depot, over the idle-memory cap with nothing to
    /// evict, over `max_idle_per_bucket` (the released buffer), released while the pool was short of memory, grown past
    /// `max_capacity`, freed by `trim`, given back with `discard` (Jetty's
    /// `removeAndRelease`), and every oversize buffer.
    pub removes: u64,
    /// Buffers released into this bucket (a buffer that grew is released
    /// into the bucket of its new capacity).
    pub releases: u64,
    /// Buffers of this bucket in use now.
    pub in_use: u64,
    /// Buffers of this bucket idle now.
    pub idle: u64,
    /// Waits for memory at the `memory_limit` in the queue now: acquires
    /// ([`acquire_async`](super::BufferPool::acquire_async),
    /// [`acquire_timeout`](super::BufferPool::acquire_timeout)) of this
    /// bucket, and growths
    /// ([`reserve_async`](super::PooledBuf::reserve_async)) to its
    /// capacity. Counted only on the waiting paths.
    pub waiting: u64,
    /// Waits that joined the queue, ever (served, given up or cancelled
    /// since, or `waiting` still).
    pub waits: u64,
    /// Blocking waits ([`acquire_timeout`](super::BufferPool::acquire_timeout))
    /// that gave up at their deadline.
    pub timeouts: u64,
    /// Async waits ([`acquire_async`](super::BufferPool::acquire_async),
    /// [`reserve_async`](super::PooledBuf::reserve_async)) dropped while in
    /// the queue, before they were served: a `tokio::time::timeout` that
    /// fired, a `select!` that took another branch.
    pub cancelled: u64,
}

impl BucketStats {
    /// The share of acquires served by an idle buffer, from 0.0 to 1.0 (1.0
    /// with no acquires).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BucketStats;
    ///
    /// assert_eq!(BucketStats::default().hit_ratio(), 1.0);
    /// ```
    pub fn hit_ratio(&self) -> f64 {
        if self.acquires == 0 {
            1.0
        } else {
            self.pooled as f64 / self.acquires as f64
        }
    }

    /// Whether nothing ever happened here.
    fn is_empty(&self) -> bool {
        self.acquires == 0
            && self.releases == 0
            && self.idle == 0
            && self.in_use == 0
            && self.prefilled == 0
            && self.waits == 0
    }

    /// Adds `other`'s counts to these (saturating); the capacity is kept.
    fn add_counts(&mut self, other: &BucketStats) {
        self.acquires = self.acquires.saturating_add(other.acquires);
        self.pooled = self.pooled.saturating_add(other.pooled);
        self.requested = self.requested.saturating_add(other.requested);
        self.served_larger = self.served_larger.saturating_add(other.served_larger);
        self.non_pooled = self.non_pooled.saturating_add(other.non_pooled);
        self.prefilled = self.prefilled.saturating_add(other.prefilled);
        self.evicts = self.evicts.saturating_add(other.evicts);
        self.removes = self.removes.saturating_add(other.removes);
        self.releases = self.releases.saturating_add(other.releases);
        self.in_use = self.in_use.saturating_add(other.in_use);
        self.idle = self.idle.saturating_add(other.idle);
        self.waiting = self.waiting.saturating_add(other.waiting);
        self.waits = self.waits.saturating_add(other.waits);
        self.timeouts = self.timeouts.saturating_add(other.timeouts);
        self.cancelled = self.cancelled.saturating_add(other.cancelled);
    }

    /// The counts, in the words of [`RecyclerStats`](crate::RecyclerStats)'s
    /// dump where the concepts are the same: hits (`pooled`), created
    /// (`non_pooled`, made by an acquire), released, idle, in use, evicted,
    /// and prefilled when not 0; and acquires, as the operation is called
    /// here, and removed, which unlike a recycler's `dropped` leaves
    /// evictions out.
    fn write_counts(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "acquires {} (hits {}, {:.1}%), created {}, released {}, removed {}, \
             idle {}, in use {}, evicted {}",
            self.acquires,
            self.pooled,
            self.hit_ratio() * 100.0,
            self.non_pooled,
            self.releases,
            self.removes,
            self.idle,
            self.in_use,
            self.evicts,
        )?;
        if self.requested != self.acquires || self.served_larger != 0 {
            write!(
                f,
                ", requested {} (served larger {})",
                self.requested, self.served_larger
            )?;
        }
        if self.prefilled != 0 {
            write!(f, ", prefilled {}", self.prefilled)?;
        }
        if self.waits != 0 {
            write!(
                f,
                ", waits {} (waiting {}, timed out {}, cancelled {})",
                self.waits, self.waiting, self.timeouts, self.cancelled
            )?;
        }
        Ok(())
    }
}

/// A snapshot of a [`BufferPool`](super::BufferPool): one [`BucketStats`]
/// per bucket, the oversize buffers, and the memory totals.
///
/// Its `Display` is a dump in the spirit of Jetty's: a header with the
/// memory totals, then one line per bucket that has seen any use, with its
/// hit ratio as a percentage.
///
/// # Examples
///
/// ```
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::builder().max_idle_memory(1 << 20).build()?;
/// let a = pool.acquire(4096);
/// drop(pool.acquire(60_000));
/// let stats = pool.stats();
/// assert_eq!(stats.idle_memory, 61_440);
/// assert_eq!(stats.allocated_memory, 61_440 + 4096);
/// println!("{stats}");
/// # drop(a);
/// # Ok::<(), recycler_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BufferPoolStats {
    /// One entry per bucket, smallest capacity first.
    pub buckets: Vec<BucketStats>,
    /// Buffers above `max_capacity`, or below `min_capacity`: allocated
    /// for the request and freed when dropped.
    pub oversize: BucketStats,
    /// Bytes held by idle buffers: each bucket's `idle × capacity` (the
    /// accounted figure when statistics are off).
    pub idle_memory: u64,
    /// Bytes allocated by the pool's buffers, in use and idle, pooled or not:
    /// what `memory_limit` caps. Always exact.
    pub allocated_memory: u64,
    /// Idle bytes as the `max_idle_memory` accounting sees them: published
    /// totals plus every thread's unpublished delta (0 without a cap).
    pub accounted_idle_memory: u64,
    /// The pool's `max_idle_memory`, if set.
    pub max_idle_memory: Option<u64>,
    /// The pool's `max_idle_per_bucket`, if set: the idle buffers each
    /// bucket keeps at most (the buffers a release over it freed are
    /// counted in the bucket's `removes`).
    pub max_idle_per_bucket: Option<u64>,
    /// The pool's `memory_limit`, if set.
    pub memory_limit: Option<u64>,
    /// Overdrafts made: acquires and growths that the `memory_limit` had no
    /// room for, served outside it by the methods that cannot fail
    /// (`acquire`, `push`, `extend_from_slice`, `reserve`, `bytes::BufMut`,
    /// `io::Write` without `hard_limit`). An overdraft buffer is freed, not
    /// pooled, when released. See
    /// [`BufferPoolBuilder::memory_limit`](super::BufferPoolBuilder::memory_limit).
    pub overdrafts: u64,
    /// Bytes the overdrafts hold now, outside the limit: not in
    /// `allocated_memory`. All the memory of the pool's buffers is
    /// `allocated_memory + overdraft_memory`.
    pub overdraft_memory: u64,
    /// Overdrafts made by a pool built with
    /// [`hard_limit(true)`](super::BufferPoolBuilder::hard_limit): the times
    /// the limit did not hold. 0 otherwise.
    pub limit_violations: u64,
    /// Whether the owner path's counts were kept (see
    /// [`BufferPoolBuilder::statistics`](super::BufferPoolBuilder::statistics));
    /// when not, `acquires`, `pooled`, `releases`, `in_use` and `idle` are 0.
    pub statistics: bool,
}

impl BufferPoolStats {
    /// The stats of the bucket for buffers of `capacity` bytes, if there is
    /// such a bucket.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// drop(pool.acquire(8000));
    /// assert_eq!(pool.stats().bucket(8192).map(|b| b.idle), Some(1));
    /// assert!(pool.stats().bucket(8000).is_none());
    /// ```
    pub fn bucket(&self, capacity: usize) -> Option<&BucketStats> {
        self.buckets.iter().find(|b| b.capacity == capacity)
    }

    /// The whole pool: every count summed over the buckets **and the
    /// oversize entry**, with `capacity` 0 (the total has no one capacity).
    ///
    /// Oversize buffers are included because the total is the pool's: every
    /// acquire the pool served, pooled or not, every buffer it holds in use,
    /// as the last line of the dump sums the lines above it. Its
    /// [`hit_ratio`](BucketStats::hit_ratio) is the share of all acquires
    /// served from the pool, oversize ones counting as misses (which they
    /// are: each allocates). For the buckets alone, subtract
    /// [`oversize`](Self::oversize), whose `pooled`, `evicts` and `idle` are
    /// always 0. Summed this way, moves between buckets cancel out (see the
    /// [identities](BucketStats#identities)). With
    /// [`statistics`](Self::statistics) off, the buckets' owner-path counts
    /// are 0, so the total's `acquires`, `pooled`, `releases`, `in_use` and
    /// `idle` are the oversize entry's alone.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// drop(pool.acquire(100)); // bucket of 4 KiB: a miss
    /// drop(pool.acquire(100)); // a hit
    /// let held = pool.acquire(10_000); // bucket of 12 KiB: a miss
    /// drop(pool.acquire(1 << 20)); // oversize: a miss, freed
    ///
    /// let total = pool.stats().total();
    /// assert_eq!((total.acquires, total.pooled, total.non_pooled), (4, 1, 3));
    /// assert_eq!((total.releases, total.in_use, total.idle), (3, 1, 1));
    /// assert_eq!(total.removes, 1);
    /// assert_eq!(total.hit_ratio(), 0.25);
    /// assert_eq!(total.acquires, total.releases + total.in_use);
    /// # drop(held);
    /// ```
    pub fn total(&self) -> BucketStats {
        let mut total = BucketStats::default();
        for entry in self.buckets.iter().chain([&self.oversize]) {
            total.add_counts(entry);
        }
        total
    }
}

/// Formats a byte count in KiB or MiB when it is a whole number of them.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
            write!(f, "{} MiB", n >> 20)
        } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
            write!(f, "{} KiB", n >> 10)
        } else {
            write!(f, "{n} B")
        }
    }
}

/// `Some(n)` as bytes, `None` as "none".
struct Cap(Option<u64>);

impl fmt::Display for Cap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(n) => Bytes(n).fmt(f),
            None => f.write_str("none"),
        }
    }
}

impl fmt::Display for BucketStats {
    /// One line: the capacity (`oversize` for the oversize entry, `total` for
    /// the total), acquires with hits and the hit ratio, then the rest, in
    /// the words and with the precision of
    /// [`RecyclerStats`](crate::RecyclerStats)'s dump (`created` is
    /// `non_pooled`; `prefilled` is shown when not 0, `requested` and
    /// `served larger` when a larger buffer served this size or this
    /// bucket's buffers served a smaller one):
    ///
    /// ```text
    ///     4 KiB: acquires 1000 (hits 999, 99.9%), created 1, released 1000, removed 0, idle 1, in use 0, evicted 0
    ///     8 KiB: acquires 10 (hits 10, 100.0%), created 0, released 10, removed 0, idle 32, in use 0, evicted 0, prefilled 32
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let label = match self.capacity {
            usize::MAX => "oversize".to_owned(),
            0 => "total".to_owned(),
            capacity => Bytes(capacity as u64).to_string(),
        };
        write!(f, "{label:>9}: ")?;
        self.write_counts(f)
    }
}

impl fmt::Display for BufferPoolStats {
    /// A header with the memory totals, then one line per bucket that has
    /// seen use, the oversize buffers if any, and last the
    /// [`total`](Self::total) of all of them:
    ///
    /// ```text
    /// BufferPool: 16 buckets of 4 KiB to 64 KiB; idle 548 KiB (max 1 MiB), allocated 612 KiB (limit none)
    ///     4 KiB: acquires 1000 (hits 999, 99.9%), created 1, released 1000, removed 0, idle 1, in use 0, evicted 0
    ///  oversize: acquires 2 (hits 0, 0.0%), created 2, released 2, removed 2, idle 0, in use 0, evicted 0
    ///     total: acquires 1002 (hits 999, 99.7%), created 3, released 1002, removed 2, idle 1, in use 0, evicted 0
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (first, last) = match (self.buckets.first(), self.buckets.last()) {
            (Some(a), Some(b)) => (a.capacity as u64, b.capacity as u64),
            _ => (0, 0),
        };
        write!(
            f,
            "BufferPool: {} buckets of {} to {}; idle {} (max {}), allocated {} (limit {})",
            self.buckets.len(),
            Bytes(first),
            Bytes(last),
            Bytes(self.idle_memory),
            Cap(self.max_idle_memory),
            Bytes(self.allocated_memory),
            Cap(self.memory_limit),
        )?;
        if let Some(n) = self.max_idle_per_bucket {
            write!(f, "; at most {n} idle per bucket")?;
        }
        if self.overdrafts != 0 {
            write!(
                f,
                "; overdrafts {} ({} now)",
                self.overdrafts,
                Bytes(self.overdraft_memory)
            )?;
        }
        if self.limit_violations != 0 {
            write!(f, "; limit violations {}", self.limit_violations)?;
        }
        if !self.statistics {
            f.write_str("; statistics off")?;
        }
        for bucket in self.buckets.iter().filter(|b| !b.is_empty()) {
            write!(f, "\n{bucket}")?;
        }
        if !self.oversize.is_empty() {
            write!(f, "\n{}", self.oversize)?;
        }
        write!(f, "\n{}", self.total())
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
