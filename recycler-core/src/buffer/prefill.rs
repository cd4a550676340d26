//! Prefill: buffers made ahead of need into the storage of a bucket that
//! every thread takes from (its depot, or in striped mode its stripes),
//! within the memory limit and the idle-memory cap.
//!
//! The core's `prefill` calls a recycler's factory; a pool allocates its
//! buffers itself, on its ledger, so it has its own: charge the ledger
//! (never past the limit, never reclaiming), count the bytes idle in the
//! calling thread's delta (never past the cap as that thread sees it, the
//! check a release makes, but never evicting), allocate, and store a batch
//! at a time where acquires take from: the depot, or the stripes in striped
//! mode (whose acquires never look at the depot), as the core's `prefill`
//! does. Counted as made and prefilled on the bucket's shared counters.

use super::raw::AlignedBuf;
use super::shared::PoolShared;
use crate::error::AcquireError;
use crate::idle::{DeltaCell, IdleAccount};
use crate::stats::Counters;

/// Why a prefill stopped short.
enum Stop {
    /// The depot (or the stripes) is full, the idle cap has no room, or
    /// others wait for memory.
    Full,
    /// The memory limit has no room, or the allocator failed.
    Failed(AcquireError),
}

impl PoolShared {
    /// See [`BufferPool::prefill`](super::BufferPool::prefill).
    pub(crate) fn prefill(&self, capacity: usize, count: usize) -> Result<usize, AcquireError> {
        let idx = self.bucket_index(capacity);
        let Some(bucket) = self.buckets().get(idx) else {
            let max = AlignedBuf::max_capacity(self.config().alignment);
            if capacity > max {
                // A size no buffer can have: the error `try_acquire` gives
                // (it was `Ok(0)`, as for a size merely never pooled).
                return Err(AcquireError::TooLarge {
                    requested: capacity,
                    max,
                });
            }
            return Ok(0); // oversize: never pooled
        };
        let inner = self.bucket(idx);
        let bytes = bucket.capacity();
        let mut added = 0;
        let mut stop = None;
        while added < count && stop.is_none() {
            let room = match &inner.stripes {
                Some(stripes) => stripes.room(),
                None => inner.depot.room(),
            };
            let room = room.min(count - added);
            if room == 0 {
                break;
            }
            let want = room.min(inner.config.batch_size);
            let mut batch = Vec::with_capacity(want);
            while batch.len() < want {
                match self.prefill_one(idx, bytes) {
                    Ok(buf) => batch.push(buf),
                    Err(why) => {
                        stop = Some(why);
                        break;
                    }
                }
            }
            let made = batch.len();
            Counters::add_shared(&inner.shared.created, made as u64);
            Counters::add_shared(&inner.shared.prefilled, made as u64);
            // Filled meanwhile by others: the rest are dropped, counted.
            let rejected = match &inner.stripes {
                Some(stripes) => {
                    stripes.fill(&mut batch);
                    Some(batch).filter(|rest| !rest.is_empty())
                }
                None => inner.depot.put(batch),
            };
            let rejected = rejected.map_or(0, |rejected| {
                let n = rejected.len();
                inner.drop_idle(rejected, None);
                n
            });
            added += made - rejected;
            if rejected > 0 {
                break;
            }
        }
        match stop {
            Some(Stop::Failed(err)) if added == 0 => Err(err.requested_as(capacity)),
            _ => Ok(added),
        }
    }

    /// One buffer of `bytes` for the depot of bucket `idx`, charged to the
    /// ledger and counted idle; or why not.
    fn prefill_one(&self, idx: usize, bytes: usize) -> Result<Box<super::buf::Buf>, Stop> {
        // The memory that waiters wait for is theirs.
        if self.under_pressure() {
            return Err(Stop::Full);
        }
        if let Err(allocated) = self.ledger().charge(bytes as u64) {
            return Err(Stop::Failed(AcquireError::LimitExceeded {
                requested: bytes,
                needed: bytes,
                allocated,
                limit: self.ledger().limit().unwrap_or(u64::MAX),
            }));
        }
        let Some(counted) = self.count_prefilled(idx, bytes as u64) else {
            self.ledger().free(bytes as u64);
            return Err(Stop::Full);
        };
        self.allocate_charged(bytes).map_err(|err| {
            match counted {
                Counted::No => {}
                Counted::In(acct, cell) => acct.sub(cell, bytes as u64),
                Counted::Published(acct) => acct.forget(bytes as u64),
            }
            Stop::Failed(err)
        })
    }

    /// Counts a prefilled buffer of `bytes` of bucket `idx` idle, as a
    /// release on this thread counts it: in the calling thread's delta
    /// (never past the cap as that thread sees it, the check a release
    /// makes, but never evicting), so that the total stays exact wherever
    /// the buffer goes. `None` if the cap has no room, or the thread is
    /// exiting and has no delta to count in.
    fn count_prefilled(&self, idx: usize, bytes: u64) -> Option<Counted<'_>> {
        let Some(counted) = self.counted() else {
            return Some(Counted::No);
        };
        if !self.per_bucket() {
            let pl = self.index().bind()?;
            return counted
                .try_add(&pl.delta, bytes)
                .then_some(Counted::In(counted, &pl.delta));
        }
        let acct = self.account_of(counted, idx);
        let inner = self.bucket(idx);
        if inner.stripes.is_some() {
            // No thread has a cache: the stripes' paths publish at once,
            // and so does this.
            return acct.try_publish(bytes).then_some(Counted::Published(acct));
        }
        // The cache's own cell, where the owner paths count the bucket's
        // buffers (`count_in_thread_delta`).
        let local = inner.local_for_current()?.local();
        acct.try_add(&local.delta, bytes)
            .then_some(Counted::In(acct, &local.delta))
    }
}

/// Where a prefilled buffer was counted idle.
enum Counted<'a> {
    /// Nowhere: no cap.
    No,
    /// In a thread's delta cell of an account.
    In(&'a IdleAccount, &'a DeltaCell),
    /// Published at once (striped mode, under `max_idle_per_bucket`).
    Published(&'a IdleAccount),
}
