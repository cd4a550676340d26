//! Statistics: counters kept per thread and summed when read.

use std::fmt;

use crate::loom::{Ordering::Relaxed, StatCounter};

/// Event tallies of one cache, or of the shared slow paths.
///
/// A cache's counters are written only by the thread that owns the cache, with
/// a load and a store ([`Counters::add_owned`]): no read-modify-write, no
/// contended line on the hot path. Events on the rare paths that have no
/// owner (trim, releases during thread teardown) use [`Counters::add_shared`].
/// Readers sum `Relaxed` loads, so a snapshot taken while threads run is
/// approximate; once they are quiet it is exact.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Gets served from the pool.
    pub(crate) hits: StatCounter,
    /// Objects made by the factory.
    pub(crate) created: StatCounter,
    /// Guards released on the thread that got them.
    pub(crate) released_local: StatCounter,
    /// Guards released on another thread.
    pub(crate) released_remote: StatCounter,
    /// Objects the recycler dropped instead of pooling.
    pub(crate) dropped: StatCounter,
    /// Objects taken out of the pool for good with `into_inner`.
    pub(crate) detached: StatCounter,
    /// Idle objects freed to make room under an idle-memory cap (also
    /// counted in `dropped`).
    pub(crate) evicted: StatCounter,
    /// Objects in use that joined this recycler from elsewhere (a buffer
    /// that grew into another bucket of a buffer pool).
    pub(crate) adopted: StatCounter,
    /// Objects made by `prefill` (also counted in `created`), which no get
    /// handed out.
    pub(crate) prefilled: StatCounter,
}

impl Counters {
    /// Adds `n` to a counter that only the calling thread writes.
    ///
    /// A load and a store rather than a `fetch_add`: the owner path takes no
    /// atomic read-modify-write. Correct only while one thread at a time
    /// writes `counter` (the cache's owner), which the callers guarantee.
    #[inline(always)]
    pub(crate) fn add_owned(counter: &StatCounter, n: u64) {
        Self::add_owned_then(counter, n);
    }

    /// [`add_owned`](Self::add_owned), returning the new count.
    #[inline(always)]
    pub(crate) fn add_owned_then(counter: &StatCounter, n: u64) -> u64 {
        let now = counter.load(Relaxed).wrapping_add(n);
        counter.store(now, Relaxed);
        now
    }

    /// Adds `n` to a counter that any thread may write.
    #[inline]
    pub(crate) fn add_shared(counter: &StatCounter, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    /// Adds this block's tallies to `sum`.
    pub(crate) fn add_to(&self, sum: &mut Tally) {
        sum.hits = sum.hits.wrapping_add(self.hits.load(Relaxed));
        sum.created = sum.created.wrapping_add(self.created.load(Relaxed));
        sum.released_local = sum
            .released_local
            .wrapping_add(self.released_local.load(Relaxed));
        sum.released_remote = sum
            .released_remote
            .wrapping_add(self.released_remote.load(Relaxed));
        sum.dropped = sum.dropped.wrapping_add(self.dropped.load(Relaxed));
        sum.detached = sum.detached.wrapping_add(self.detached.load(Relaxed));
        sum.evicted = sum.evicted.wrapping_add(self.evicted.load(Relaxed));
        sum.adopted = sum.adopted.wrapping_add(self.adopted.load(Relaxed));
        sum.prefilled = sum.prefilled.wrapping_add(self.prefilled.load(Relaxed));
    }
}

/// Sums of [`Counters`] across threads.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Tally {
    pub(crate) hits: u64,
    pub(crate) created: u64,
    pub(crate) released_local: u64,
    pub(crate) released_remote: u64,
    pub(crate) dropped: u64,
    pub(crate) detached: u64,
    pub(crate) evicted: u64,
    pub(crate) adopted: u64,
    pub(crate) prefilled: u64,
}

impl Tally {
    /// Gets served from the pool or by the factory (the objects `prefill`
    /// made were made by the factory but handed to nobody).
    pub(crate) fn gets(&self) -> u64 {
        self.hits
            .wrapping_add(self.created)
            .wrapping_sub(self.prefilled)
    }

    /// Releases, on the owning thread or another.
    pub(crate) fn released(&self) -> u64 {
        self.released_local.wrapping_add(self.released_remote)
    }

    /// Objects in use: `gets + adopted - released - detached`.
    pub(crate) fn in_use(&self) -> u64 {
        // Snapshots of running threads may be momentarily inconsistent;
        // saturate rather than report a wrapped count.
        self.gets()
            .wrapping_add(self.adopted)
            .saturating_sub(self.released())
            .saturating_sub(self.detached)
    }

    /// Objects idle. Every object made or adopted is in use, idle, dropped
    /// or detached, so `idle = created + adopted - dropped - detached -
    /// in_use`.
    pub(crate) fn idle(&self) -> u64 {
        self.created
            .wrapping_add(self.adopted)
            .saturating_sub(self.dropped)
            .saturating_sub(self.detached)
            .saturating_sub(self.in_use())
    }

    /// The public snapshot; `idle_bytes` comes from the idle-memory account,
    /// if the recycler has one.
    pub(crate) fn into_stats(self, idle_bytes: u64) -> RecyclerStats {
        let gets = self.gets();
        let in_use = self.in_use();
        let idle = self.idle();
        RecyclerStats {
            gets,
            hits: self.hits,
            created: self.created,
            released_local: self.released_local,
            released_remote: self.released_remote,
            dropped: self.dropped,
            idle,
            in_use,
            detached: self.detached,
            evicted: self.evicted,
            prefilled: self.prefilled,
            idle_bytes,
        }
    }
}

/// A snapshot of a [`Recycler`](crate::Recycler)'s activity.
///
/// Counts are summed over per-thread counters when read. While other threads
/// work the sum is approximate; once they are quiet it is exact, and every
/// object made is accounted for:
/// `created == in_use + idle + dropped + detached`.
///
/// # Examples
///
/// ```
/// use recycler_core::Recycler;
///
/// let pool: Recycler<Vec<u8>> = Recycler::new();
/// drop(pool.get()); // made by the factory, then pooled
/// drop(pool.get()); // served from the pool
///
/// let stats = pool.stats();
/// assert_eq!((stats.gets, stats.hits, stats.created), (2, 1, 1));
/// assert_eq!(stats.idle, 1);
/// assert_eq!(stats.hit_ratio(), 0.5);
/// println!("{stats}");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RecyclerStats {
    /// Objects handed out by `get`, `try_get` and `get_owned`.
    pub gets: u64,
    /// Gets served from the pool rather than by the factory.
    pub hits: u64,
    /// Objects made by the factory (by gets that found the pool empty, and
    /// by [`prefill`](crate::Recycler::prefill)).
    pub created: u64,
    /// Guards released on the thread that got them. Also every release in
    /// striped mode, and every release of an object that `ratio` or
    /// capacity 0 marked to be dropped (it never travels, and nothing
    /// records which thread got it).
    pub released_local: u64,
    /// Guards released on another thread, whose objects travel home.
    pub released_remote: u64,
    /// Objects the recycler dropped: over capacity, not pooled by `ratio` or
    /// capacity 0, a panicking `reset`, a guard dropped during a panic, over
    /// the idle-memory cap, or freed by `trim`.
    pub dropped: u64,
    /// Objects idle in the pool: in a thread's cache, on their way home, or in
    /// the shared depot.
    pub idle: u64,
    /// Objects held by guards right now.
    pub in_use: u64,
    /// Objects taken out of the pool for good with `into_inner`.
    pub detached: u64,
    /// Idle objects freed to make room under the idle-memory cap (also
    /// counted in `dropped`).
    pub evicted: u64,
    /// Objects made by [`prefill`](crate::Recycler::prefill) (also counted
    /// in `created`, but not in `gets`).
    pub prefilled: u64,
    /// Bytes held by idle objects, by
    /// [`Recyclable::retained_bytes`](crate::Recyclable::retained_bytes),
    /// for a recycler with
    /// [`max_idle_bytes`](crate::RecyclerBuilder::max_idle_bytes); 0
    /// without a cap (not counted).
    pub idle_bytes: u64,
}

impl RecyclerStats {
    /// The share of gets served from the pool, from 0.0 to 1.0 (1.0 when
    /// there were no gets).
    pub fn hit_ratio(&self) -> f64 {
        if self.gets == 0 {
            1.0
        } else {
            self.hits as f64 / self.gets as f64
        }
    }
}

impl fmt::Display for RecyclerStats {
    /// One line, e.g. `gets 1000 (hits 990, 99.0%), created 10, released
    /// 1000 (local 900, remote 100), dropped 2, idle 8, in use 0, detached 0`,
    /// followed by `, prefilled 64` after a `prefill` and `, evicted 3, idle
    /// bytes 4096` under an idle-memory cap.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gets {} (hits {}, {:.1}%), created {}, released {} (local {}, remote {}), \
             dropped {}, idle {}, in use {}, detached {}",
            self.gets,
            self.hits,
            self.hit_ratio() * 100.0,
            self.created,
            self.released_local.wrapping_add(self.released_remote),
            self.released_local,
            self.released_remote,
            self.dropped,
            self.idle,
            self.in_use,
            self.detached,
        )?;
        if self.prefilled != 0 {
            write!(f, ", prefilled {}", self.prefilled)?;
        }
        if self.evicted != 0 || self.idle_bytes != 0 {
            write!(
                f,
                ", evicted {}, idle bytes {}",
                self.evicted, self.idle_bytes
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derives_idle_and_in_use() {
        let tally = Tally {
            hits: 90,
            created: 10,
            released_local: 80,
            released_remote: 15,
            dropped: 3,
            detached: 1,
            ..Tally::default()
        };
        let s = tally.into_stats(0);
        assert_eq!(s.gets, 100);
        assert_eq!(s.in_use, 100 - 95 - 1);
        assert_eq!(s.idle, 10 - 3 - 1 - 4);
        assert_eq!(s.created, s.in_use + s.idle + s.dropped + s.detached);
    }

    #[test]
    fn display_reads_at_a_glance() {
        let s = Tally {
            hits: 990,
            created: 10,
            released_local: 1000,
            ..Tally::default()
        }
        .into_stats(0);
        let text = s.to_string();
        assert!(
            text.starts_with("gets 1000 (hits 990, 99.0%), created 10"),
            "{text}"
        );
        assert!(text.contains("idle 10"), "{text}");
    }

    #[test]
    fn hit_ratio_of_nothing_is_one() {
        assert_eq!(RecyclerStats::default().hit_ratio(), 1.0);
    }
}
