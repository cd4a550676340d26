//! Bucket selection and growth: which bucket serves a request, which bucket
//! a buffer of a given capacity belongs to, and how a buffer grows (to the
//! next bucket, or past the largest), charged to the ledger.

use super::buf::Buf;
use super::raw::AlignedBuf;
use super::shared::PoolShared;
use crate::error::AcquireError;
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
        match self.step_shift {
            Some(shift) => capacity.saturating_sub(1) >> shift,
            None => self.bucket_index_checked(capacity),
        }
    }

    /// [`bucket_index`](Self::bucket_index) for a step that is not a power
    /// of two, or with a `min_capacity`.
    #[inline]
    fn bucket_index_checked(&self, capacity: usize) -> usize {
        if capacity < self.config.min_capacity {
            return usize::MAX;
        }
        let n = capacity.saturating_sub(1);
        let step = self.config.bucket_step;
        if step.is_power_of_two() {
            n >> step.trailing_zeros()
        } else {
            n / step
        }
    }

    /// The bucket whose buffers have exactly `capacity` bytes, if any.
    pub(crate) fn bucket_of_capacity(&self, capacity: usize) -> Option<usize> {
        let step = self.config.bucket_step;
        (capacity.is_multiple_of(step) && capacity >= step && capacity <= self.config.max_capacity)
            .then(|| capacity / step - 1)
    }

    /// Grows `buf` to hold at least `needed` bytes: to twice its capacity or
    /// `needed` if more, rounded up to a bucket (not past `max_capacity`
    /// unless `needed` is), charging the ledger; past the limit, as an
    /// overdraft if `overdraft` (see [`super::limit`]).
    pub(crate) fn grow(
        &self,
        buf: &mut Buf,
        needed: usize,
        overdraft: bool,
    ) -> Result<(), AcquireError> {
        let target = self.growth_target(buf, needed)?;
        if target <= buf.capacity() {
            return Ok(());
        }
        self.grow_exact(buf, target, overdraft)
            .map_err(|err| err.requested_as(needed))
    }

    /// The capacity a growth of `buf` to hold `needed` bytes allocates (see
    /// [`grow`](Self::grow)); its capacity if it holds them already.
    pub(crate) fn growth_target(&self, buf: &Buf, needed: usize) -> Result<usize, AcquireError> {
        let cap = buf.capacity();
        if needed <= cap {
            return Ok(cap);
        }
        let step = self.config.bucket_step;
        let max = self.config.max_capacity;
        let doubled = cap.saturating_mul(2).max(needed);
        let target = if needed <= max {
            doubled.min(max).div_ceil(step) * step
        } else {
            doubled
        };
        let align = buf.alignment();
        if target > AlignedBuf::max_capacity(align) {
            if needed > AlignedBuf::max_capacity(align) {
                return Err(AcquireError::TooLarge {
                    requested: needed,
                    max: AlignedBuf::max_capacity(align),
                });
            }
            return Ok(needed);
        }
        Ok(target)
    }

    /// Grows `buf` to `target` bytes, charged to the ledger; past the
    /// limit, as an overdraft if `overdraft`.
    fn grow_exact(
        &self,
        buf: &mut Buf,
        target: usize,
        overdraft: bool,
    ) -> Result<(), AcquireError> {
        let extra = target - buf.capacity();
        match self.charge_with_reclaim(extra) {
            Ok(()) => self.grow_charged(buf, target),
            Err(AcquireError::LimitExceeded { .. }) if overdraft => {
                self.grow_overdraft(buf, target)
            }
            Err(err) => Err(err),
        }
    }

    /// Grows `buf` to `target` bytes, whose growth the caller charged to
    /// the ledger; frees the charge if the allocator fails.
    pub(crate) fn grow_charged(&self, buf: &mut Buf, target: usize) -> Result<(), AcquireError> {
        let extra = target - buf.capacity();
        match buf.raw_mut().try_grow(target) {
            Ok(()) => {
                buf.charge(extra);
                Ok(())
            }
            Err(err) => {
                self.ledger.free(extra as u64);
                Err(err)
            }
        }
    }
}
