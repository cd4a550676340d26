//! Eviction: freeing idle buffers of other buckets, for the idle-memory cap
//! (a release that would go over it, [`Evict`]) and for the memory limit
//! (an allocation that would cross it,
//! [`PoolShared::charge_with_reclaim`]). A walk visits the buckets from a
//! random start, and in each frees what the calling thread can reach: its
//! own cache (the coldest buffers first), the depot, the inboxes.
//!
//! A walk for the idle cap, which runs on every release over the cap, is
//! bounded: it visits at most [`MAX_WALK`] buckets (all of them in a pool
//! of the default 16). A walk for the memory limit, which runs only when an
//! allocation would cross the limit, visits every bucket. Both skip, in a
//! few loads each, a bucket whose hints say it holds nothing reachable. In
//! a pool of thousands of buckets under a small cap, a release over the cap
//! whose 64 buckets hold too little drops its own buffer instead (the
//! random start spreads the walks over the buckets); before the bound,
//! every such release walked every bucket and took each one's depot lock,
//! and 4,096 of them took 8 s in a debug build.

/// The most buckets one eviction walk visits.
pub(crate) const MAX_WALK: usize = 64;

use std::ptr;

use super::shared::PoolShared;
use crate::idle::{self, Evict};
use crate::mine::Mine;

impl PoolShared {
    /// Frees idle buffers worth `want` bytes if it can, walking the buckets
    /// from `start` and skipping `skip`: in each, this thread's cache, then
    /// the depot, then the inboxes. Returns the bytes freed.
    /// At most `visits` buckets are visited.
    pub(crate) fn evict_walk(
        &self,
        want: u64,
        skip: Option<usize>,
        start: usize,
        visits: usize,
    ) -> u64 {
        let n = self.buckets().len();
        let bound = self.index().bound();
        let mut freed = 0;
        for i in 0..n.min(visits) {
            let b = (start + i) % n;
            if skip == Some(b) {
                continue;
            }
            // SAFETY: `b < n`, a bucket.
            let own = bound.map_or(ptr::null(), |bound| unsafe { bound.cache(b) });
            // SAFETY: a non-null entry of an owned index is a cache of this
            // bucket (alive with the pool) that the calling thread owns.
            let own = unsafe { own.as_ref() }.map(|local| unsafe { Mine::new(local) });
            // A bucket not made holds nothing.
            let Some(recycler) = self.buckets()[b].made() else {
                continue;
            };
            freed += recycler.inner().evict(want - freed, own);
            if freed >= want {
                break;
            }
        }
        freed
    }
}

impl Evict for PoolShared {
    fn evict_others(&self, want: u64, skip: usize) -> u64 {
        let start = idle::random_below(self.buckets().len(), want);
        self.evict_walk(want, Some(skip), start, MAX_WALK)
    }
}
