//! Feature `bytes`: [`bytes::BufMut`] for pooled buffers (so that tokio's
//! `read_buf` fills them), and [`OwnedPooledBuf::into_bytes`], a zero-copy
//! conversion into [`bytes::Bytes`] whose last clone returns the memory to
//! the pool.

use ::bytes::buf::UninitSlice;
use ::bytes::{BufMut, Bytes};

use super::grow::{hard_reach, reserve_overdrawing, try_reserve};
use super::guard::PooledBuf;
use super::owned::OwnedPooledBuf;
use super::pool::PoolRef;

/// Bytes a full buffer grows by, at least, when `chunk_mut` needs room (as
/// `Vec<u8>` and `BytesMut` do).
const GROW_BY: usize = 64;

macro_rules! buf_mut {
    ($ty:ty) => {
        #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
        // SAFETY: `chunk_mut` returns the spare capacity, which lies inside
        // the allocation, after the written part; `advance_mut` moves the
        // length forward over bytes the caller has initialized, and never
        // past the capacity (checked).
        unsafe impl BufMut for $ty {
            /// As much as a `Vec<u8>` could hold: the buffer grows when
            /// full. Under a hard memory limit (`hard_limit(true)`), the
            /// room under the limit, as a `&mut [u8]` reports its room: the
            /// spare capacity and the growth the memory free covers now.
            /// tokio's `read_buf` then reads nothing (`Ok(0)`) into a buffer
            /// with no room left; check
            /// [`has_remaining_mut`](BufMut::has_remaining_mut) first, or
            /// make room with `reserve_async`.
            #[inline]
            fn remaining_mut(&self) -> usize {
                match hard_reach(self.pool.pool_shared(), self.capacity()) {
                    Some(reach) => reach - self.len(),
                    None => isize::MAX as usize - self.len(),
                }
            }

            #[inline]
            unsafe fn advance_mut(&mut self, cnt: usize) {
                let new_len = self
                    .len()
                    .checked_add(cnt)
                    .filter(|&n| n <= self.capacity());
                let Some(new_len) = new_len else {
                    panic!(
                        "advance_mut({cnt}) past the capacity ({} of {} written)",
                        self.len(),
                        self.capacity()
                    );
                };
                // SAFETY: within the capacity (checked); the caller of
                // `advance_mut` has initialized the bytes it advances over.
                unsafe { self.set_len(new_len) };
            }

            /// The spare capacity; a full buffer first grows (by at least
            /// 64 bytes, rounded up to a bucket): at the pool's
            /// `memory_limit`, as an overdraft, as
            /// [`push`](Self::push) grows, so tokio's `read_buf` never
            /// panics there. Under a hard limit, only as far as the limit
            /// allows: empty when [`remaining_mut`](BufMut::remaining_mut)
            /// is 0.
            ///
            /// # Panics
            ///
            /// If a full buffer cannot grow because the allocator fails.
            #[inline]
            fn chunk_mut(&mut self) -> &mut UninitSlice {
                if self.len() == self.capacity() && self.remaining_mut() > 0 {
                    self.make_room(GROW_BY);
                }
                UninitSlice::uninit(self.spare_capacity_mut())
            }

            /// Appends `src`, growing the buffer if need be: at the pool's
            /// `memory_limit` as an overdraft, as
            /// [`extend_from_slice`](Self::extend_from_slice) grows.
            ///
            /// # Panics
            ///
            /// If `src` is longer than
            /// [`remaining_mut`](BufMut::remaining_mut), as `BufMut`
            /// requires; under a hard memory limit, if it does not fit
            /// under the limit when written (another thread may take the
            /// room `remaining_mut` reported: claim it with `try_reserve`
            /// first), as the Vec-like methods that cannot fail; and as
            /// [`push`](Self::push). The buffer is unchanged then.
            #[inline]
            fn put_slice(&mut self, src: &[u8]) {
                if self.capacity() - self.len() < src.len() {
                    let remaining = self.remaining_mut();
                    if src.len() > remaining {
                        panic!(
                            "put_slice({}) past the remaining capacity ({remaining})",
                            src.len()
                        );
                    }
                }
                self.extend_from_slice(src);
            }

            /// Appends `cnt` copies of `val`, growing the buffer if need be.
            ///
            /// # Panics
            ///
            /// As `BufMut` requires, if `cnt` is more than
            /// [`remaining_mut`](BufMut::remaining_mut) (so `len() + cnt`
            /// never overflows); and as
            /// [`put_slice`](BufMut::put_slice). The buffer is unchanged
            /// then.
            #[inline]
            fn put_bytes(&mut self, val: u8, cnt: usize) {
                let remaining = self.remaining_mut();
                if cnt > remaining {
                    panic!("put_bytes({cnt}) past the remaining capacity ({remaining})");
                }
                // No overflow: `len + remaining <= isize::MAX`.
                let len = self.len();
                self.resize(len + cnt, val);
            }
        }

        impl $ty {
            /// Room for `additional` more bytes for `chunk_mut`: within a
            /// hard limit if the memory is free; if another thread took
            /// what `remaining_mut` reported meanwhile and none is left,
            /// nothing (`chunk_mut` is then empty, and `remaining_mut` 0);
            /// else as an overdraft, counted in `limit_violations`.
            fn make_room(&mut self, additional: usize) {
                let pool = self.pool.pool_shared();
                if try_reserve(pool, &mut self.buf, &mut self.origin, additional, false).is_err()
                    && self.remaining_mut() > 0
                {
                    reserve_overdrawing(pool, &mut self.buf, &mut self.origin, additional);
                }
            }
        }
    };
}

buf_mut!(PooledBuf<'_>);
buf_mut!(OwnedPooledBuf);

impl OwnedPooledBuf {
    /// The written bytes as a [`Bytes`], without copying: the `Bytes` owns
    /// the buffer, and when its last clone drops, the buffer returns to the
    /// pool. What `BytesMut::freeze` is to a `BytesMut`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::Bytes;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut buf = pool.acquire_owned(100);
    /// buf.extend_from_slice(b"hello");
    /// let ptr = buf.as_ptr();
    /// let bytes: Bytes = buf.into_bytes();
    /// assert_eq!((&bytes[..], bytes.as_ptr()), (&b"hello"[..], ptr)); // no copy
    /// let clone = bytes.slice(1..);
    /// drop(bytes);
    /// assert_eq!(pool.stats().buckets[0].in_use, 1); // a clone still holds it
    /// drop(clone);
    /// assert_eq!(pool.stats().buckets[0].idle, 1); // back in the pool
    /// assert_eq!(pool.acquire(100).as_ptr(), ptr);
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
    #[doc(alias = "freeze")]
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
impl From<OwnedPooledBuf> for Bytes {
    /// As [`OwnedPooledBuf::into_bytes`].
    fn from(buf: OwnedPooledBuf) -> Self {
        buf.into_bytes()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::buffer::BufferPool;
    use crate::loom::Arc;

    #[test]
    fn buf_mut_fills_and_grows() {
        let pool = BufferPool::new();
        let mut b = pool.acquire(1);
        b.put_u32(0xDEAD_BEEF);
        b.put_slice(b"xy");
        b.put_bytes(b'z', 2);
        assert_eq!(&b[..], b"\xDE\xAD\xBE\xEFxyzz");
        b.resize(4096, 0);
        assert_eq!(b.chunk_mut().len(), 4096, "a full buffer doubles");
        assert_eq!(b.capacity(), 8192);
        assert_eq!(b.remaining_mut(), isize::MAX as usize - 4096);
    }

    #[test]
    #[should_panic(expected = "advance_mut(5000) past the capacity")]
    fn advance_past_capacity_panics() {
        let pool = BufferPool::new();
        let mut b = pool.acquire(1);
        // SAFETY: not reached: `advance_mut` panics first.
        unsafe { b.advance_mut(5000) };
    }

    /// `f` panics with a message containing `expected`.
    fn panics_with(expected: &str, f: impl FnOnce()) {
        let err = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_err();
        let msg = err
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| err.downcast_ref::<&str>().copied())
            .unwrap_or_default();
        assert!(msg.contains(expected), "panicked with {msg:?}");
    }

    #[test]
    fn put_bytes_past_the_remaining_capacity_panics() {
        let pool = Arc::new(BufferPool::new());
        let mut b = pool.acquire(6);
        b.put_slice(b"abcdef");
        // `len + cnt` overflows `usize`: wrapped, it would truncate to 3.
        let expected = format!(
            "put_bytes({}) past the remaining capacity ({})",
            usize::MAX - 2,
            isize::MAX as usize - 6
        );
        panics_with(&expected, || b.put_bytes(b'z', usize::MAX - 2));
        assert_eq!(&b[..], b"abcdef", "unchanged");
        // One past the remaining capacity: no overflow, still a panic.
        let past = b.remaining_mut() + 1;
        panics_with("put_bytes(", || b.put_bytes(0, past));
        assert_eq!(&b[..], b"abcdef", "unchanged");
        let mut owned = pool.acquire_owned(6);
        owned.put_slice(b"abcdef");
        panics_with(&expected, || owned.put_bytes(b'z', usize::MAX - 2));
        assert_eq!(&owned[..], b"abcdef", "unchanged");
        // Within it but too large to allocate: the growth's panic.
        panics_with("pooled buffer cannot grow", || {
            b.put_bytes(0, isize::MAX as usize - 6);
        });
        assert_eq!(&b[..], b"abcdef", "unchanged");
    }

    #[test]
    fn last_clone_returns_the_memory() {
        let pool = Arc::new(BufferPool::new());
        let mut buf = pool.acquire_owned(10);
        buf.put_slice(b"abc");
        let ptr = buf.as_ptr();
        let bytes = Bytes::from(buf);
        let clones: Vec<Bytes> = (0..3).map(|_| bytes.clone()).collect();
        drop(bytes);
        for c in &clones {
            assert_eq!(c.as_ptr(), ptr);
        }
        assert_eq!(pool.stats().buckets[0].in_use, 1);
        drop(clones);
        let s = pool.stats();
        assert_eq!((s.buckets[0].in_use, s.buckets[0].idle), (0, 1));
        assert_eq!(pool.acquire(1).as_ptr(), ptr, "the memory came back");
    }
}
