//! Sizes to buckets: which bucket serves a request, and which bucket a
//! buffer of a given capacity belongs to; a buffer's origin (its bucket,
//! [`OVERSIZE`], marked [`GROWN`] once it grew) and [`Parts`], a buffer
//! taken apart for a guard.

use super::buf::Buf;
use super::shared::PoolShared;
use crate::home::Home;

/// The origin of a buffer above `max_capacity`.
pub(crate) const OVERSIZE: u32 = u32::MAX;

/// Marks the origin of a buffer that grew: its release takes the slow path,
/// which finds the bucket of its new capacity. (Buckets are far fewer than
/// this bit.)
pub(crate) const GROWN: u32 = 1 << 31;

/// A buffer taken apart, for a guard to be made of: the buffer, its home,
/// its origin (its bucket, or [`OVERSIZE`]; marked [`GROWN`] once it grew).
pub(crate) type Parts = (Box<Buf>, Home<Buf>, u32);

impl PoolShared {
    /// The bucket for a request of `capacity` bytes; `buckets.len()` or more
    /// for a request that no bucket serves: above `max_capacity`, or below
    /// `min_capacity` (`usize::MAX`).
    ///
    /// The owner path's shift (`step_shift`) is set only for a power-of-two
    /// step and no `min_capacity`, so a pool with the defaults pays nothing
    /// for `min_capacity`; every other pool takes [`bucket_index_checked`].
    ///
    /// [`bucket_index_checked`]: Self::bucket_index_checked
    #[inline(always)]
    pub(crate) fn bucket_index(&self, capacity: usize) -> usize {
        match self.step_shift() {
            Some(shift) => capacity.saturating_sub(1) >> shift,
            None => self.bucket_index_checked(capacity),
        }
    }

    /// [`bucket_index`](Self::bucket_index) for a step that is not a power
    /// of two, or with a `min_capacity`.
    #[inline]
    fn bucket_index_checked(&self, capacity: usize) -> usize {
        if capacity < self.config().min_capacity {
            return usize::MAX;
        }
        let n = capacity.saturating_sub(1);
        let step = self.config().bucket_step;
        if step.is_power_of_two() {
            n >> step.trailing_zeros()
        } else {
            n / step
        }
    }

    /// The bucket whose buffers have exactly `capacity` bytes, if any.
    pub(crate) fn bucket_of_capacity(&self, capacity: usize) -> Option<usize> {
        let step = self.config().bucket_step;
        (capacity.is_multiple_of(step)
            && capacity >= step
            && capacity <= self.config().max_capacity)
            .then(|| capacity / step - 1)
    }
}
