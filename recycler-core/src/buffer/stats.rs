//! [`BufferPoolStats`] and [`BucketStats`]: a snapshot of a pool, summed
//! from per-thread counters when read, and its Jetty-style dump.

use std::fmt;

/// A snapshot of one bucket of a [`BufferPool`](super::BufferPool), or of
/// the buffers too large for any bucket ([`BufferPoolStats::oversize`]).
///
/// Counts are summed over per-thread counters when read: approximate while
/// threads work, exact once they are quiet. Then every buffer allocated is
/// accounted for: over all buckets, `non_pooled` (allocations) equals
/// `in_use + idle + evicts + removes`.
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
    /// oversize entry (any size above `max_capacity`).
    pub capacity: usize,
    /// Buffers handed out from this bucket.
    pub acquires: u64,
    /// Acquires served by an idle buffer (hits).
    pub pooled: u64,
    /// Acquires that allocated a new buffer (misses): `acquires == pooled +
    /// non_pooled`. Every oversize acquire is non-pooled.
    pub non_pooled: u64,
    /// Idle buffers freed to keep idle memory under `max_idle_memory`,
    /// evicted to make room for a release into another bucket (or for an
    /// acquire at the `memory_limit`).
    pub evicts: u64,
    /// Buffers freed rather than kept, other than by eviction: no room in the
    /// thread's cache and the depot, over the idle-memory cap with nothing to
    /// evict, released while the pool was short of memory, grown past
    /// `max_capacity`, freed by `trim`, and every oversize buffer.
    pub removes: u64,
    /// Buffers released into this bucket (a buffer that grew is released
    /// into the bucket of its new capacity).
    pub releases: u64,
    /// Buffers of this bucket in use now.
    pub in_use: u64,
    /// Buffers of this bucket idle now.
    pub idle: u64,
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
        self.acquires == 0 && self.releases == 0 && self.idle == 0 && self.in_use == 0
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
    /// Buffers above `max_capacity`: allocated for the request and freed
    /// when dropped.
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
    /// The pool's `memory_limit`, if set.
    pub memory_limit: Option<u64>,
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
}

/// Formats a byte count in KiB or MiB when it is a whole number of them.
struct Bytes(u64);

impl fmt::Display for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n >= 1 << 20 && n % (1 << 20) == 0 {
            write!(f, "{} MiB", n >> 20)
        } else if n >= 1 << 10 && n % (1 << 10) == 0 {
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
    /// One line: capacity, acquires with hits and the hit ratio, then the
    /// rest.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.capacity == usize::MAX {
            f.write_str("oversize")?;
        } else {
            write!(f, "{:>9}", Bytes(self.capacity as u64).to_string())?;
        }
        write!(
            f,
            ": acquires {}, pooled {} ({:.3}%), non-pooled {}, in use {}, idle {}, \
             releases {}, evicts {}, removes {}",
            self.acquires,
            self.pooled,
            self.hit_ratio() * 100.0,
            self.non_pooled,
            self.in_use,
            self.idle,
            self.releases,
            self.evicts,
            self.removes,
        )
    }
}

impl fmt::Display for BufferPoolStats {
    /// A header with the memory totals, then one line per bucket that has
    /// seen use, and the oversize buffers if any:
    ///
    /// ```text
    /// BufferPool: 16 buckets of 4 KiB to 64 KiB; idle 548 KiB (max 1 MiB), allocated 612 KiB (limit none)
    ///     4 KiB: acquires 1000, pooled 999 (99.900%), non-pooled 1, in use 0, idle 1, releases 1000, evicts 0, removes 0
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
        if !self.statistics {
            f.write_str("; statistics off")?;
        }
        for bucket in self.buckets.iter().filter(|b| !b.is_empty()) {
            write!(f, "\n{bucket}")?;
        }
        if !self.oversize.is_empty() {
            write!(f, "\n{}", self.oversize)?;
        }
        Ok(())
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn bucket(capacity: usize, acquires: u64, pooled: u64) -> BucketStats {
        BucketStats {
            capacity,
            acquires,
            pooled,
            non_pooled: acquires - pooled,
            releases: acquires,
            idle: 1,
            ..BucketStats::default()
        }
    }

    #[test]
    fn dump_has_one_line_per_used_bucket() {
        let stats = BufferPoolStats {
            buckets: vec![
                bucket(4096, 1000, 999),
                BucketStats {
                    capacity: 8192,
                    ..BucketStats::default()
                },
                bucket(12288, 4, 3),
            ],
            oversize: BucketStats {
                capacity: usize::MAX,
                ..BucketStats::default()
            },
            idle_memory: 16384,
            allocated_memory: 16384,
            accounted_idle_memory: 0,
            max_idle_memory: Some(1 << 20),
            memory_limit: None,
            statistics: true,
        };
        let text = stats.to_string();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "{text}");
        assert_eq!(
            lines[0],
            "BufferPool: 3 buckets of 4 KiB to 12 KiB; idle 16 KiB (max 1 MiB), \
             allocated 16 KiB (limit none)"
        );
        assert!(
            lines[1].starts_with("    4 KiB: acquires 1000, pooled 999 (99.900%)"),
            "{text}"
        );
        assert!(
            lines[2].starts_with("   12 KiB: acquires 4, pooled 3 (75.000%)"),
            "{text}"
        );
    }

    #[test]
    fn byte_units() {
        assert_eq!(Bytes(1 << 20).to_string(), "1 MiB");
        assert_eq!(Bytes(61440).to_string(), "60 KiB");
        assert_eq!(Bytes(1000).to_string(), "1000 B");
        assert_eq!(Cap(None).to_string(), "none");
    }
}
