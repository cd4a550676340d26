//! Eviction: freeing idle buffers of other buckets, for the idle-memory cap
//! (a release that would go over it, [`Evict`]) and for the memory limit (an
//! allocation that would cross it, [`PoolInner::reserve`]). A walk visits
//! the buckets from a random start, and in each frees what the calling
//! thread can reach: its own cache (the coldest buffers first), the depot,
//! the inboxes.

use std::ptr;

use super::inner::PoolInner;
use crate::idle::{self, Evict};

impl PoolInner {
    /// Frees idle buffers worth `want` bytes if it can, walking the buckets
    /// from `start` and skipping `skip`: in each, this thread's cache, then
    /// the depot, then the inboxes. Returns the bytes freed.
    pub(crate) fn evict_walk(&self, want: u64, skip: Option<usize>, start: usize) -> u64 {
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
}

impl Evict for PoolInner {
    fn evict_others(&self, want: u64, skip: usize) -> u64 {
        let start = idle::random_below(self.buckets.len(), want);
        self.evict_walk(want, Some(skip), start)
    }
}
