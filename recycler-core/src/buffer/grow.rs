//! How a buffer grows: to twice its capacity, or what is needed if that is
//! more, rounded up to a bucket, and under a memory limit to the smallest
//! bucket that holds what is needed ([`PoolShared::growth_target`]),
//! charged to the ledger, and past the limit as an overdraft or not ([`super::limit`]);
//! and the growth of a lent buffer that the guards' Vec-like API and
//! `reserve_async` call ([`try_reserve`], [`reserve`]).

use super::buf::Buf;
use super::loan::Loan;
use super::raw::AlignedBuf;
use super::shared::PoolShared;
use super::sizes::GROWN;
use crate::error::AcquireError;

impl PoolShared {
    /// Grows `buf` to hold at least `needed` bytes: to the capacity
    /// [`growth_target`](Self::growth_target) works out, charging the
    /// ledger; past the limit, as an overdraft if `overdraft` (see
    /// [`super::limit`]).
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
    ///
    /// Without a memory limit, amortized as `Vec`'s: twice the capacity, or
    /// `needed` if more, rounded up to a bucket. Under a limit, only what
    /// it needs: the smallest bucket that holds `needed` (past
    /// `max_capacity`, exactly `needed`). Doubling there charged the limit
    /// up to twice what the write needed, and a growth that waits holds
    /// its buffer while it waits for that charge (issue 24: a 24 KiB
    /// buffer asked to hold 28,000 bytes waited for 48 KiB).
    pub(crate) fn growth_target(&self, buf: &Buf, needed: usize) -> Result<usize, AcquireError> {
        let cap = buf.capacity();
        if needed <= cap {
            return Ok(cap);
        }
        let step = self.config().bucket_step;
        let max = self.config().max_capacity;
        let wanted = if self.ledger().limit().is_some() {
            needed
        } else {
            cap.saturating_mul(2).max(needed)
        };
        let target = if needed <= max {
            wanted.min(max).div_ceil(step) * step
        } else {
            wanted
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
                self.ledger().free(extra as u64);
                Err(err)
            }
        }
    }
}

/// Makes room for `additional` more bytes, or says why not; past the memory
/// limit as an overdraft if `overdraft` (see [`super::limit`]), else
/// the limit's error. `origin` is the guard's, marked [`GROWN`] if the
/// buffer grows.
#[inline]
pub(crate) fn try_reserve(
    pool: &PoolShared,
    loan: &mut Loan,
    origin: &mut u32,
    additional: usize,
    overdraft: bool,
) -> Result<(), AcquireError> {
    if loan.capacity() - loan.len() >= additional {
        return Ok(());
    }
    let len = loan.len();
    let grown = grow_lent(pool, loan.buf_mut(), len, *origin, additional, overdraft);
    loan.refresh();
    *origin = grown?;
    Ok(())
}

/// Grows `buf`, whose length is `len` (the loan's), to hold `additional`
/// more bytes; returns the guard's `origin`, marked [`GROWN`]. Out of line,
/// and given the buffer and values rather than the guard's fields by
/// address, so that the guard's fields stay in registers on the paths that
/// do not grow.
#[cold]
#[inline(never)]
fn grow_lent(
    pool: &PoolShared,
    buf: &mut Buf,
    len: usize,
    origin: u32,
    additional: usize,
    overdraft: bool,
) -> Result<u32, AcquireError> {
    // `len + additional` overflowing is one more size no buffer can have:
    // the same error, with `requested` saturated.
    let needed = len.checked_add(additional).ok_or(AcquireError::TooLarge {
        requested: usize::MAX,
        max: AlignedBuf::max_capacity(buf.alignment()),
    })?;
    // SAFETY: `len` is the loan's length: within the capacity, initialized.
    unsafe { buf.set_len(len) };
    pool.grow(buf, needed, overdraft)?;
    // The release sees at once that the buffer left its bucket's capacity.
    Ok(origin | GROWN)
}

/// Makes room for `additional` more bytes: past the memory limit as an
/// overdraft, unless the pool's limit is hard (`hard_limit(true)`), where
/// it panics rather than pass the limit; panics, as `Vec` does, for a size
/// no buffer can have or when the allocator fails.
#[inline]
#[track_caller]
pub(crate) fn reserve(pool: &PoolShared, loan: &mut Loan, origin: &mut u32, additional: usize) {
    if loan.capacity() - loan.len() < additional {
        let len = loan.len();
        let overdraft = !pool.config().hard_limit;
        *origin = grow_or_panic(pool, loan.buf_mut(), len, *origin, additional, overdraft);
        loan.refresh();
    }
}

/// [`reserve`], past the limit as an overdraft even where the limit is
/// hard (counted in `limit_violations`): for a `BufMut` write that
/// `remaining_mut` promised room for, and another thread took that room
/// first.
#[inline]
#[cfg(feature = "bytes")]
pub(crate) fn reserve_overdrawing(
    pool: &PoolShared,
    loan: &mut Loan,
    origin: &mut u32,
    additional: usize,
) {
    if loan.capacity() - loan.len() < additional {
        let len = loan.len();
        *origin = grow_or_panic(pool, loan.buf_mut(), len, *origin, additional, true);
        loan.refresh();
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn grow_or_panic(
    pool: &PoolShared,
    buf: &mut Buf,
    len: usize,
    origin: u32,
    additional: usize,
    overdraft: bool,
) -> u32 {
    match grow_lent(pool, buf, len, origin, additional, overdraft) {
        Ok(origin) => origin,
        Err(err @ AcquireError::LimitExceeded { .. }) => {
            panic!("pooled buffer cannot grow past the pool's `hard_limit`: {err}")
        }
        Err(err) => panic!("pooled buffer cannot grow: {err}"),
    }
}

/// Under a hard memory limit (`hard_limit(true)`), the largest capacity a
/// buffer of capacity `cap` can grow to now without passing it: the
/// growths a write makes there (the smallest bucket that holds what it
/// needs, past `max_capacity` exactly that) that the memory free covers.
/// `None` if the limit is not hard: a write grows as far as it needs.
#[cfg(feature = "bytes")]
pub(crate) fn hard_reach(pool: &PoolShared, cap: usize) -> Option<usize> {
    let config = pool.config();
    let alignment = config.alignment.max(1);
    let limit = config.memory_limit.filter(|_| config.hard_limit)?;
    let free = (limit as u64).saturating_sub(pool.ledger().allocated());
    let most = cap
        .saturating_add(usize::try_from(free).unwrap_or(usize::MAX))
        .min(AlignedBuf::max_capacity(alignment));
    let reach = if most > config.max_capacity {
        most
    } else {
        most / config.bucket_step * config.bucket_step
    };
    Some(reach.max(cap))
}
