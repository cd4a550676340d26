//! [`WaitToGrow`]: the future of `reserve_async`, a buffer's growth that waits
//! at the `memory_limit` as `acquire_async` does, in the same queue.
//!
//! It tries first (while nobody waits), as `try_reserve` does; at the
//! limit it joins the pool's queue of waiters for the bytes the growth adds
//! (the growth's target capacity, worked out as `reserve` works it out,
//! less the capacity now), frees the idle buffers it can reach, serves the
//! queue, and waits. A free that makes room for it charges the bytes to
//! the ledger for it and wakes it ([`super::wait`] has the grants, the order and
//! why no wake-up is lost: all of it holds here, since this is one more
//! waiter). Its poll then grows the buffer on the bytes charged: never an
//! overdraft. A released buffer is never granted to it (its grant must be
//! bytes, not a buffer): it joins as a waiter that cannot take one.
//!
//! Cancel safe: dropped while it waits, it leaves the queue having charged
//! nothing, and bytes granted to it but not yet taken are freed, which
//! serves the next waiter; the buffer is unchanged.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use super::buckets::GROWN;
use super::ledger::{Polled, Wake};
use super::loan::Loan;
use super::raw::AlignedBuf;
use super::shared::PoolShared;
use crate::error::AcquireError;

/// The future of `reserve_async`: room for `additional` more bytes in the
/// buffer it borrows, now or once memory is freed for it.
pub(crate) struct WaitToGrow<'g> {
    pool: &'g PoolShared,
    loan: &'g mut Loan,
    origin: &'g mut u32,
    additional: usize,
    /// In the queue: the waiter's id, the bytes it waits for, the capacity
    /// it grows to, and the entry of the statistics it counts in.
    queued: Option<(u64, u64, usize, usize)>,
}

// SAFETY: the future holds a unique borrow of a guard's buffer and origin,
// and a shared borrow of the pool: a guard is `Send` (it owns its buffer),
// and the pool's shared state is `Sync`; the waker it clones into the
// queue is `Send + Sync`.
unsafe impl Send for WaitToGrow<'_> {}

impl<'g> WaitToGrow<'g> {
    pub(crate) fn new(
        pool: &'g PoolShared,
        loan: &'g mut Loan,
        origin: &'g mut u32,
        additional: usize,
    ) -> Self {
        Self {
            pool,
            loan,
            origin,
            additional,
            queued: None,
        }
    }

    /// The growth's target capacity and the bytes it adds, or why it can
    /// never be had: a size no buffer can have, or more than the limit.
    fn plan(&mut self) -> Result<(usize, u64), AcquireError> {
        let pool = self.pool;
        let len = self.loan.len();
        let buf = self.loan.buf_mut();
        let needed = len
            .checked_add(self.additional)
            .ok_or(AcquireError::TooLarge {
                requested: usize::MAX,
                max: AlignedBuf::max_capacity(buf.alignment()),
            })?;
        let target = pool.growth_target(buf, needed)?;
        let extra = (target - buf.capacity()) as u64;
        match pool.ledger.limit() {
            Some(limit) if extra > limit => Err(AcquireError::LimitExceeded {
                requested: needed,
                needed: extra as usize,
                allocated: pool.ledger.allocated(),
                limit,
            }),
            _ => Ok((target, extra)),
        }
    }
}

impl Future for WaitToGrow<'_> {
    type Output = Result<(), AcquireError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        let pool = this.pool;
        let ledger = &pool.ledger;
        loop {
            let Some((id, _, target, entry)) = this.queued else {
                if this.loan.capacity() - this.loan.len() >= this.additional {
                    return Poll::Ready(Ok(()));
                }
                let (target, extra) = this.plan()?;
                if !pool.under_pressure() {
                    match super::grow::try_reserve(
                        pool,
                        this.loan,
                        this.origin,
                        this.additional,
                        false,
                    ) {
                        Err(AcquireError::LimitExceeded { .. }) => {}
                        other => return Poll::Ready(other),
                    }
                }
                let wake = Wake::Task(cx.waker().clone());
                let (id, want) = ledger.waiters.join_for(ledger, extra, wake, false);
                let entry = pool.wait_entry(target);
                pool.waits_joined(entry);
                this.queued = Some((id, extra, target, entry));
                pool.reclaim_for(want);
                ledger.waiters.serve(ledger);
                continue;
            };
            return match ledger.waiters.poll(ledger, id, Some(cx.waker())) {
                Polled::Waiting => Poll::Pending,
                Polled::Granted(buffer) => {
                    this.queued = None;
                    pool.waits_left(entry);
                    // Never granted a buffer (it joined as a waiter that
                    // cannot take one); should one come, freeing it returns
                    // its memory, which is the same grant.
                    drop(buffer);
                    let len = this.loan.len();
                    let buf = this.loan.buf_mut();
                    // SAFETY: `len` is the loan's length: within the
                    // capacity, initialized.
                    unsafe { buf.set_len(len) };
                    let grown = pool.grow_charged(buf, target);
                    this.loan.refresh();
                    if grown.is_ok() {
                        *this.origin |= GROWN;
                    }
                    Poll::Ready(grown)
                }
                Polled::Missing => {
                    this.queued = None;
                    pool.waits_left(entry);
                    continue;
                }
            };
        }
    }
}

impl Drop for WaitToGrow<'_> {
    fn drop(&mut self) {
        if let Some((id, _, _, entry)) = self.queued.take() {
            let ledger = &self.pool.ledger;
            self.pool.waits_left(entry);
            self.pool.waits_cancelled(entry);
            match ledger.waiters.leave(ledger, id) {
                // Passes the wake-up on: the free serves the next waiter.
                Some((granted, None)) => ledger.free(granted),
                Some((_, Some(buf))) => drop(buf),
                None => {}
            }
        }
    }
}
