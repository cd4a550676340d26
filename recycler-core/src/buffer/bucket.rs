//! [`Bucket`]: one bucket of a pool, a recycler of buffers of one capacity
//! made when first used, with the counts that are the bucket's own
//! ([`WaitCounts`] among them: how many wait at the memory limit for its
//! buffers). A part of the pool's shared state ([`super::shared`]), which
//! holds one per bucket and one [`WaitCounts`] for the buffers no bucket
//! serves.

use std::sync::OnceLock;

use super::buf::Buf;
use crate::loom::{Ordering::Relaxed, StatCounter};
use crate::recycler::Recycler;
use crate::stats::Counters;

/// One bucket: a recycler of buffers of one capacity, made when first used
/// ([`PoolShared::bucket`](super::shared::PoolShared::bucket)).
pub(crate) struct Bucket {
    capacity: usize,
    /// Made by [`PoolShared::bucket`](super::shared::PoolShared::bucket);
    /// never unset once made.
    recycler: OnceLock<Recycler<Buf>>,
    /// Buffers of this bucket freed because they grew past `max_capacity`.
    outgrown: StatCounter,
    /// Acquires of this bucket's size served by a larger buffer (counted,
    /// as acquires, in the bucket that served them).
    served_larger: StatCounter,
    /// Acquires counted in this bucket that served a smaller request.
    served_smaller: StatCounter,
    /// Waits at the memory limit for buffers of this bucket (or growths to
    /// its capacity).
    waits: WaitCounts,
}

/// The waiting counts of one entry of the statistics (a bucket, or the
/// oversize buffers): how many wait for memory at the limit now, and how
/// many waited, gave up or were cancelled. Touched only on the waiting paths
/// (a wait joining or leaving the queue, [`super::wait`]), never on an
/// acquire or release that does not wait.
#[derive(Debug, Default)]
pub(crate) struct WaitCounts {
    /// In the queue now.
    waiting: StatCounter,
    /// Joined the queue, ever.
    waits: StatCounter,
    /// Blocking waits that gave up at their deadline.
    timeouts: StatCounter,
    /// Async waits dropped while in the queue.
    cancelled: StatCounter,
}

impl WaitCounts {
    /// `(waiting, waits, timeouts, cancelled)`, as read now.
    pub(crate) fn read(&self) -> (u64, u64, u64, u64) {
        (
            self.waiting.load(Relaxed),
            self.waits.load(Relaxed),
            self.timeouts.load(Relaxed),
            self.cancelled.load(Relaxed),
        )
    }

    /// A wait joined the queue.
    pub(crate) fn joined(&self) {
        self.waits.fetch_add(1, Relaxed);
        self.waiting.fetch_add(1, Relaxed);
    }

    /// A wait left the queue (served, gave up or cancelled).
    pub(crate) fn left(&self) {
        self.waiting.fetch_sub(1, Relaxed);
    }

    /// A blocking wait gave up at its deadline.
    pub(crate) fn timed_out(&self) {
        self.timeouts.fetch_add(1, Relaxed);
    }

    /// An async wait was dropped while in the queue.
    pub(crate) fn cancelled(&self) {
        self.cancelled.fetch_add(1, Relaxed);
    }
}

impl Bucket {
    /// A bucket of buffers of `capacity` bytes, its recycler not made yet.
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            capacity,
            recycler: OnceLock::new(),
            outgrown: StatCounter::new(0),
            served_larger: StatCounter::new(0),
            served_smaller: StatCounter::new(0),
            waits: WaitCounts::default(),
        }
    }

    /// The capacity of the bucket's buffers.
    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }

    /// Counts a buffer of this bucket freed because it grew past
    /// `max_capacity`.
    pub(crate) fn count_outgrown(&self) {
        Counters::add_shared(&self.outgrown, 1);
    }

    /// The bucket's recycler, if it has been made (by
    /// [`PoolShared::bucket`]); a bucket not made holds no buffer and has
    /// counted nothing.
    ///
    /// [`PoolShared::bucket`]: super::shared::PoolShared::bucket
    pub(crate) fn made(&self) -> Option<&Recycler<Buf>> {
        self.recycler.get()
    }

    /// The bucket's recycler, made by `make` if it was not yet (only
    /// [`PoolShared::bucket`] makes it); never unset once made.
    ///
    /// [`PoolShared::bucket`]: super::shared::PoolShared::bucket
    pub(crate) fn made_or(&self, make: impl FnOnce() -> Recycler<Buf>) -> &Recycler<Buf> {
        self.recycler.get_or_init(make)
    }

    /// Buffers of this bucket freed because they grew past `max_capacity`.
    pub(crate) fn outgrown(&self) -> u64 {
        self.outgrown.load(Relaxed)
    }

    /// Counts an acquire of this bucket's size served by a larger buffer.
    pub(crate) fn count_served_larger(&self) {
        Counters::add_shared(&self.served_larger, 1);
    }

    /// Counts an acquire of this bucket's buffers that served a smaller
    /// request.
    pub(crate) fn count_served_smaller(&self) {
        Counters::add_shared(&self.served_smaller, 1);
    }

    /// The acquires of this bucket's size served by a larger buffer, and
    /// those of this bucket's buffers that served a smaller request.
    pub(crate) fn served_otherwise(&self) -> (u64, u64) {
        (
            self.served_larger.load(Relaxed),
            self.served_smaller.load(Relaxed),
        )
    }

    /// Waits at the memory limit for buffers of this bucket.
    pub(crate) fn waits(&self) -> &WaitCounts {
        &self.waits
    }
}
