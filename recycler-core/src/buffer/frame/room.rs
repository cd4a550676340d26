//! Making room in a [`FrameBuf`]: in place while no frame split off its
//! buffer is alive (the unread bytes moved to the front, then growth), or
//! in a fresh buffer from the pool while frames hold it (the refill), with
//! each of the pool's three behaviours at the memory limit: an overdraft
//! ([`FrameBuf::reserve`]), an error ([`FrameBuf::try_reserve`]) or a wait
//! ([`FrameBuf::reserve_async`]).
//!
//! Each makes its fresh buffer (or grows) *before* it moves anything out of
//! the old one: a panic or an error there leaves the unread bytes where
//! they were.

use std::mem;
use std::ptr::{self, NonNull};

use super::FrameBuf;
use crate::buffer::guard::PooledBuf;
use crate::buffer::owned::OwnedPooledBuf;
use crate::buffer::shared::PoolShared;
use crate::buffer::wait::Acquire;
use crate::error::AcquireError;
use crate::loom::Arc;

impl FrameBuf {
    /// Makes room for at least `additional` more bytes after the unread
    /// ones, as `BytesMut::reserve` does. If no frame split off the buffer
    /// is alive: by moving the unread bytes to its front (if any were read
    /// before them), then, if that is not enough, by growing it as
    /// [`OwnedPooledBuf::reserve`] does. Else the unread bytes move to a
    /// fresh buffer from the pool, of the reader's capacity or more, and
    /// the frames keep the old one.
    ///
    /// At the pool's `memory_limit` the fresh buffer, or the growth, is an
    /// overdraft (counted in
    /// [`BufferPoolStats::overdrafts`](crate::buffer::BufferPoolStats::overdrafts));
    /// [`try_reserve`](Self::try_reserve) fails there, and
    /// [`reserve_async`](Self::reserve_async) waits.
    ///
    /// # Panics
    ///
    /// As `Vec` and `BytesMut` do, only for a size no buffer can have (the
    /// unread bytes plus `additional` past `isize::MAX`) or if the
    /// allocator fails; and under a hard memory limit
    /// ([`hard_limit(true)`](crate::buffer::BufferPoolBuilder::hard_limit)),
    /// if the room does not fit under the limit, as the buffers' Vec-like
    /// methods. The unread bytes stay where they were then.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::{Buf, BufMut};
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 4096);
    /// rx.put_bytes(7, 4000);
    /// rx.advance(3990); // 10 unread, 96 bytes free after them
    /// rx.reserve(1000); // the 10 bytes move to the front: no growth
    /// assert_eq!((rx.len(), rx.capacity(), rx.bytes_copied()), (10, 4096, 10));
    /// ```
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        if self.cap - self.len < additional {
            self.reserve_slow(additional);
        }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn reserve_slow(&mut self, additional: usize) {
        if self.hard_limit() {
            // Under a hard limit, no overdraft: as the buffers' Vec-like
            // methods, a panic rather than pass the limit.
            if let Err(err) = self.try_reserve(additional) {
                panic!("FrameBuf cannot make room under the pool's `hard_limit`: {err}");
            }
            return;
        }
        if self.move_to_front() {
            if let Some(buf) = self.own_to_grow(additional) {
                buf.reserve(additional);
                self.grown();
            }
        } else if !self.refill_retired(additional) {
            // Buffers retired by earlier refills whose frames have dropped
            // go back to the pool first, for this acquire to take.
            self.retired.sweep();
            let fresh = self.pool.pool().acquire_owned(self.refill_size(additional));
            self.refill(fresh);
        }
    }

    /// Whether the pool's memory limit holds for writes too
    /// (`hard_limit(true)`).
    pub(super) fn hard_limit(&self) -> bool {
        let config = self.pool.pool().config();
        config.hard_limit && config.memory_limit.is_some()
    }

    /// Under a hard memory limit, the memory free under it (what a growth
    /// or a fresh buffer could take at most); `None` otherwise.
    pub(super) fn free_under_hard_limit(&self) -> Option<usize> {
        let pool = self.pool.pool();
        let limit = pool
            .config()
            .memory_limit
            .filter(|_| pool.config().hard_limit)?;
        let free = (limit as u64).saturating_sub(pool.ledger().allocated());
        Some(usize::try_from(free).unwrap_or(usize::MAX))
    }

    /// Makes room for at least `additional` more bytes, as
    /// [`reserve`](Self::reserve) does, or says why it cannot: the limit is
    /// hard here, never an overdraft. On an error the unread bytes are the
    /// same, where they were or moved to the front of the buffer.
    ///
    /// # Errors
    ///
    /// As [`OwnedPooledBuf::try_reserve`]: [`AcquireError::LimitExceeded`]
    /// at the pool's memory limit, [`AcquireError::TooLarge`] if the unread
    /// bytes plus `additional` pass the largest capacity possible
    /// (`requested` is that sum, or `usize::MAX` if it overflows),
    /// [`AcquireError::AllocFailed`] if the allocator fails.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::BufMut;
    /// use recycler_core::AcquireError;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let pool = Arc::new(BufferPool::builder().memory_limit(8192).build()?);
    /// let mut rx = FrameBuf::with_capacity(&pool, 4096);
    /// rx.put_bytes(1, 4096);
    /// let frame = rx.split_to_pooled(4000); // holds the buffer
    /// let held = pool.acquire(4096); // the rest of the limit
    /// let err = rx.try_reserve(100).unwrap_err(); // no fresh buffer to move to
    /// assert!(matches!(err, AcquireError::LimitExceeded { .. }));
    /// assert_eq!((rx.len(), pool.stats().overdrafts), (96, 0)); // unchanged
    /// drop(held);
    /// rx.try_reserve(100)?; // now there is one
    /// assert_eq!((rx.len(), rx.capacity()), (96, 4096));
    /// # drop(frame);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn try_reserve(&mut self, additional: usize) -> Result<(), AcquireError> {
        if self.cap - self.len >= additional {
            return Ok(());
        }
        if self.move_to_front() {
            if let Some(buf) = self.own_to_grow(additional) {
                let grown = buf.try_reserve(additional);
                self.grown();
                grown?;
            }
        } else {
            let fresh = try_acquire_owned(self.pool.pool(), self.refill_size(additional))?;
            self.refill(fresh);
        }
        Ok(())
    }

    /// Makes room for at least `additional` more bytes, as
    /// [`reserve`](Self::reserve) does, waiting without blocking at the
    /// pool's `memory_limit` until memory is freed for it: never an
    /// overdraft. What [`OwnedPooledBuf::reserve_async`] is to the growth
    /// and [`BufferPool::acquire_async`](crate::buffer::BufferPool::acquire_async)
    /// to the fresh buffer, in the same queue of waiters (first come, first
    /// served) and counted the same way. Without a limit it never waits.
    ///
    /// # Errors
    ///
    /// At once: [`AcquireError::TooLarge`] for a size no buffer can have,
    /// [`AcquireError::LimitExceeded`] if the memory needed is more than the
    /// limit (no wait could end); [`AcquireError::AllocFailed`] if the
    /// allocator fails.
    ///
    /// # Cancel safety
    ///
    /// Dropped before it completes, the future leaves the queue, and the
    /// unread bytes are the same (where they were, or moved to the front).
    /// The reader stays borrowed while it waits; the frames split off it
    /// do not, and dropping them frees what they hold. The future is
    /// `Send`, for a multi-threaded runtime.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::Future;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Waker};
    /// use bytes::BufMut;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let pool = Arc::new(BufferPool::builder().memory_limit(8192).build()?);
    /// let mut rx = FrameBuf::with_capacity(&pool, 4096);
    /// rx.put_bytes(1, 4096);
    /// let frame = rx.split_to_pooled(4000); // holds the buffer
    /// let held = pool.acquire_owned(4096); // the rest of the limit
    /// let mut cx = Context::from_waker(Waker::noop());
    /// {
    ///     let mut room = pin!(rx.reserve_async(100));
    ///     assert!(room.as_mut().poll(&mut cx).is_pending()); // it waits
    ///     std::thread::spawn(move || drop(held)).join().unwrap();
    ///     assert!(matches!(room.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
    /// }
    /// assert_eq!((rx.len(), rx.capacity()), (96, 4096)); // in a fresh buffer
    /// assert_eq!(pool.stats().overdrafts, 0);
    /// # drop(frame);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub async fn reserve_async(&mut self, additional: usize) -> Result<(), AcquireError> {
        if self.cap - self.len >= additional {
            return Ok(());
        }
        if self.move_to_front() {
            if let Some(buf) = self.own_to_grow(additional) {
                let grown = buf.reserve_async(additional).await;
                self.grown();
                grown?;
            }
            return Ok(());
        }
        let size = self.refill_size(additional);
        let pool = self.pool.pool();
        let (buf, home, origin) = Acquire::new(pool, size).await?.into_parts();
        let fresh = OwnedPooledBuf::new(pool, buf, home, origin);
        self.refill(fresh);
        Ok(())
    }

    /// The capacity of a fresh buffer for the unread bytes and `additional`
    /// more: the reader's capacity, or more (saturated: a size no buffer
    /// can have stays one).
    fn refill_size(&self, additional: usize) -> usize {
        self.len()
            .saturating_add(additional)
            .max(self.refill_capacity)
    }

    /// Moves the unread bytes into `fresh` and writes into it from now on;
    /// the buffer left returns to the pool when the frames that hold it
    /// drop (a lent one: reclaimed now if none is alive, else theirs).
    pub(super) fn refill(&mut self, fresh: OwnedPooledBuf) {
        let (from, unread) = (self.pos, self.len());
        debug_assert!(fresh.is_empty() && fresh.capacity() >= unread);
        let old_base = self.base;
        // A lent buffer's share owns its allocation: kept until the copy
        // is done, then the buffer retires.
        let old_root = mem::take(&mut self.root);
        let lent = mem::replace(&mut self.lent, false);
        let old = match self.buf.as_mut().and_then(Arc::get_mut) {
            // A lent buffer's guard is the reader's alone: the fresh one
            // takes its place in the same `Arc`, which costs no allocation.
            Some(arc) if lent => {
                let old = mem::replace(arc, fresh);
                self.installed();
                Err(old)
            }
            _ => {
                let old = self.buf.take();
                self.install(fresh);
                Ok(old)
            }
        };
        // `old_base[from..from + unread]` are the unread bytes of the old
        // buffer, initialized, and kept alive by `old` until the end of this
        // function; `base[..unread]` is the new buffer's (empty, `capacity
        // >= unread`), the reader's alone.
        // SAFETY: so both ranges are valid, and they do not overlap (two
        // allocations).
        unsafe {
            ptr::copy_nonoverlapping(old_base.as_ptr().add(from), self.base.as_ptr(), unread);
        }
        self.len = unread;
        self.copied += unread as u64;
        match old {
            Err(lent) => self.retired.retire(old_root, lent),
            Ok(shared) => drop(shared),
        }
    }

    /// If no frame split off the buffer is alive (and there is a buffer):
    /// moves the unread bytes to its front, if any were read before them
    /// (`BytesMut`'s reclaim), and returns `true`.
    pub(super) fn move_to_front(&mut self) -> bool {
        if !self.alone() {
            return false;
        }
        if self.pos > 0 {
            let unread = self.len();
            // SAFETY: no frame of the buffer is alive (`alone`), so no
            // `&[u8]` or `PooledBytes` reads it and its bytes may move;
            // `base[pos..len]` and `base[..unread]` lie in it (`ptr::copy`
            // allows the overlap).
            unsafe { ptr::copy(self.base.as_ptr().add(self.pos), self.base.as_ptr(), unread) };
            self.pos = 0;
            self.len = unread;
            self.copied += unread as u64;
        }
        true
    }

    /// The buffer, its length brought up to the reader's, if it must grow
    /// to hold `additional` more bytes and no frame of it is alive.
    fn own_to_grow(&mut self, additional: usize) -> Option<&mut OwnedPooledBuf> {
        if self.cap - self.len >= additional {
            return None;
        }
        let len = self.len;
        let buf = self.exclusive()?;
        // SAFETY: `len <= cap` and `base[..len]` is initialized (the
        // invariants); `buf` is the buffer at `base`.
        unsafe { buf.set_len(len) };
        Some(buf)
    }

    /// After a growth (or its failure, which leaves the buffer as it was):
    /// the buffer's pointer and capacity, which may have changed.
    fn grown(&mut self) {
        if let Some(buf) = self.exclusive() {
            let base = NonNull::new(buf.as_mut_ptr());
            let cap = buf.capacity();
            self.base = base.unwrap_or(self.base);
            self.cap = cap;
            self.init = 0;
        }
    }
}

/// As [`BufferPool::try_acquire_owned`](crate::buffer::BufferPool::try_acquire_owned),
/// from a pool the caller holds a unit of.
fn try_acquire_owned(pool: &PoolShared, capacity: usize) -> Result<OwnedPooledBuf, AcquireError> {
    let idx = pool.bucket_index(capacity);
    let guard = match pool.pop_fast(idx) {
        Some((buf, home)) => PooledBuf::new(pool, buf, home, idx as u32),
        None => pool.try_acquire_cold(capacity, idx)?,
    };
    let (buf, home, origin) = guard.into_parts();
    Ok(OwnedPooledBuf::new(pool, buf, home, origin))
}
