//! [`WaitCounts`]: how many wait for memory at the limit now, and how many
//! waited, gave up or were cancelled; one per bucket and one for the
//! oversize buffers. Touched only on the waiting paths (a wait joining or
//! leaving the queue), never on an acquire or release that does not wait.

use super::shared::PoolShared;
use crate::loom::{Ordering::Relaxed, StatCounter};

/// The waiting counts of one entry of the statistics.
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
}

impl PoolShared {
    /// The entry whose counts a wait for a buffer of `capacity` bytes
    /// (a growth to it, or an acquire of its bucket) goes in: its bucket, or
    /// the oversize one.
    pub(crate) fn wait_entry(&self, capacity: usize) -> usize {
        self.bucket_of_capacity(capacity)
            .unwrap_or(self.buckets.len())
    }

    fn wait_counts(&self, entry: usize) -> &WaitCounts {
        self.buckets
            .get(entry)
            .map_or(&self.oversize_waits, |b| &b.waits)
    }

    /// A wait joined the queue.
    pub(crate) fn waits_joined(&self, entry: usize) {
        let c = self.wait_counts(entry);
        c.waits.fetch_add(1, Relaxed);
        c.waiting.fetch_add(1, Relaxed);
    }

    /// A wait left the queue (served, gave up or cancelled).
    pub(crate) fn waits_left(&self, entry: usize) {
        self.wait_counts(entry).waiting.fetch_sub(1, Relaxed);
    }

    /// A blocking wait gave up at its deadline.
    pub(crate) fn waits_timed_out(&self, entry: usize) {
        self.wait_counts(entry).timeouts.fetch_add(1, Relaxed);
    }

    /// An async wait was dropped while in the queue.
    pub(crate) fn waits_cancelled(&self, entry: usize) {
        self.wait_counts(entry).cancelled.fetch_add(1, Relaxed);
    }
}
