//! Feature `bytes`: [`PooledBytes`], bytes of a pooled buffer shared by
//! reference counting: the frames a [`FrameBuf`](super::FrameBuf) splits
//! off, without the allocation a `Bytes` owner costs; and the owner of the
//! `Bytes` it shares (`into_bytes`).
//!
//! # The aliasing argument
//!
//! A reader's buffer is an `Arc<OwnedPooledBuf>`: the reader holds one
//! reference, each `PooledBytes` split off it one more (and each `Bytes`
//! shared off it, through its owner, a `PooledBytes`). Its bytes are in two
//! parts: the *head* `base[..len]`, written, and the *tail*
//! `base[len..cap]`, not yet.
//!
//! - The reader writes only the tail, through its raw pointer `base` (whose
//!   provenance is the allocation's own, copied out of the buffer's
//!   `NonNull`, never derived from a reference), and only through `&mut
//!   FrameBuf`; a write moves `len` forward over what it wrote.
//! - A `PooledBytes` covers head bytes only, written before it was made,
//!   and reads them through a pointer derived from `base` (raw, never from
//!   a reference). So does each `&[u8]` made of one (`Deref`, and the
//!   `AsRef` that `Bytes::from_owner` calls once, from which that `Bytes`
//!   and its slices take their pointer).
//! - The reader writes the head again (moves the unread bytes to the front,
//!   grows the buffer, starts over from its first byte) only while its
//!   reference is the only one (`Arc::get_mut`): no `PooledBytes`, hence no
//!   `Bytes` and no `&[u8]` derived from one, is left to read it, and
//!   `get_mut`'s `Acquire` orders their reads, on any thread, before those
//!   writes (each dropped reference's `Release`).
//!
//! So no reference that can still be used covers a byte when it is
//! written: the reader's `&mut UninitSlice` of the tail (`chunk_mut`)
//! overlaps no `&[u8]`, and a `&[u8]` over the head is never followed by a
//! write to its bytes while it, or anything derived from it, can be used.
//! A frame sent to another thread reads bytes written, on the reader's
//! thread, before the frame was made; the send orders that write before
//! the read: no data race either.
//!
//! The `Bytes` a reader's `split_to` returns cost one allocation per share
//! (`from_owner`'s header) because `from_owner` takes the whole range its
//! `Bytes` can ever read from one `&[u8]`, made at once: a share made
//! before bytes are written cannot cover them, so each read that completes
//! frames needs a share of its own. A `PooledBytes` is its own header (the
//! buffer's `Arc`, shared): splitting one off costs a reference count.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::{Bound, Deref, RangeBounds};
use std::ptr::NonNull;
use std::slice;

use ::bytes::{Buf, Bytes};

use super::owned::OwnedPooledBuf;
use crate::loom::Arc;

/// Bytes of a pooled buffer, shared with the [`FrameBuf`](super::FrameBuf)
/// they were split off and with the other frames of the same buffer: an
/// immutable, cheaply cloned and sliced view, as `bytes::Bytes` is, whose
/// buffer returns to the pool when the reader has moved on and the last
/// view of it drops.
///
/// Made by [`FrameBuf::split_to_pooled`](super::FrameBuf::split_to_pooled)
/// without any allocation (a reference count), keeping its buffer in the
/// pool until the last view drops, where
/// [`FrameBuf::split_to`](super::FrameBuf::split_to)'s `Bytes` cost one
/// allocation per buffer (and, outliving the reader's hold on it, take it
/// out of the pool; one allocation per read under a memory limit). Turn one into `Bytes`
/// with [`into_bytes`](Self::into_bytes) (one allocation, no copy) where an
/// API wants them.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use bytes::{Buf, BufMut};
/// use recycler_core::buffer::{BufferPool, FrameBuf, PooledBytes};
///
/// let pool = Arc::new(BufferPool::new());
/// let mut rx = FrameBuf::with_capacity(&pool, 4096);
/// rx.put_slice(b"\x00\x05hello");
/// rx.advance(2);
/// let frame: PooledBytes = rx.split_to_pooled(5);
/// assert_eq!(&frame[..], b"hello");
/// let ell = frame.slice(1..4);
/// drop((frame, rx));
/// assert_eq!(pool.stats().buckets[0].in_use, 1); // `ell` holds the buffer
/// assert_eq!(ell, b"ell"[..]);
/// drop(ell);
/// assert_eq!(pool.stats().buckets[0].in_use, 0);
/// ```
#[derive(Clone)]
pub struct PooledBytes {
    /// The first byte; dangling when empty without a buffer.
    ptr: NonNull<u8>,
    len: usize,
    /// The buffer `ptr[..len]` lies in, which holds it; `None` only when
    /// empty.
    buf: Option<Arc<OwnedPooledBuf>>,
}

// SAFETY: a `PooledBytes` only reads `ptr[..len]`, which nothing writes
// while any `PooledBytes` of the buffer is alive (see the module docs), and
// the `Arc` it holds, which keeps the memory, is `Send + Sync` (an owned
// buffer is).
unsafe impl Send for PooledBytes {}
// SAFETY: as above: `&PooledBytes` gives only reads of bytes nobody writes.
unsafe impl Sync for PooledBytes {}

impl PooledBytes {
    /// An empty view, of no buffer.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::PooledBytes;
    ///
    /// assert!(PooledBytes::new().is_empty());
    /// ```
    pub const fn new() -> Self {
        Self {
            ptr: NonNull::dangling(),
            len: 0,
            buf: None,
        }
    }

    /// `ptr[..len]`, in `buf`.
    ///
    /// # Safety
    ///
    /// `ptr[..len]` lies in `buf`'s allocation, is initialized, and is
    /// never written again while any reference to `buf` but the reader's
    /// is alive (the module docs).
    pub(super) unsafe fn shared(ptr: NonNull<u8>, len: usize, buf: Arc<OwnedPooledBuf>) -> Self {
        Self {
            ptr,
            len,
            buf: Some(buf),
        }
    }

    /// The number of bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::PooledBytes;
    ///
    /// assert_eq!(PooledBytes::new().len(), 0);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether it holds no bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::PooledBytes;
    ///
    /// assert!(PooledBytes::new().is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The bytes in `range` as a view of the same buffer: no copy, a
    /// reference count (none if the range is empty).
    ///
    /// # Panics
    ///
    /// If the range is decreasing or ends past [`len`](Self::len), as
    /// `Bytes::slice` does.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.extend_from_slice(b"hello");
    /// let frame = rx.split_to_pooled(5);
    /// assert_eq!(&frame.slice(1..=2)[..], b"el");
    /// assert_eq!(frame.slice(2..).as_ptr(), frame[2..].as_ptr());
    /// ```
    #[track_caller]
    pub fn slice(&self, range: impl RangeBounds<usize>) -> Self {
        let begin = match range.start_bound() {
            Bound::Included(&n) => n,
            Bound::Excluded(&n) => n.checked_add(1).expect("range start overflows"),
            Bound::Unbounded => 0,
        };
        let end = match range.end_bound() {
            Bound::Included(&n) => n.checked_add(1).expect("range end overflows"),
            Bound::Excluded(&n) => n,
            Bound::Unbounded => self.len,
        };
        assert!(
            begin <= end && end <= self.len,
            "range {begin}..{end} out of bounds: {}",
            self.len
        );
        if begin == end {
            return Self::new();
        }
        Self {
            // SAFETY: `begin < end <= len`: inside this view.
            ptr: unsafe { self.ptr.add(begin) },
            len: end - begin,
            buf: self.buf.clone(),
        }
    }

    /// These bytes as [`Bytes`], without a copy: the `Bytes` owns this view
    /// (one allocation, its owner), and the buffer returns to the pool when
    /// the last of them drops.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::Bytes;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.extend_from_slice(b"abc");
    /// let frame = rx.split_to_pooled(3);
    /// let ptr = frame.as_ptr();
    /// let bytes: Bytes = frame.into_bytes();
    /// assert_eq!((&bytes[..], bytes.as_ptr()), (&b"abc"[..], ptr));
    /// ```
    pub fn into_bytes(self) -> Bytes {
        if self.is_empty() {
            return Bytes::new();
        }
        // `from_owner` calls `as_ref` once: `ptr[..len]`, bytes nobody
        // writes while this view (now the `Bytes`' owner) lives.
        Bytes::from_owner(self)
    }
}

impl Default for PooledBytes {
    /// As [`PooledBytes::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl Deref for PooledBytes {
    type Target = [u8];

    #[inline]
    fn deref(&self) -> &[u8] {
        // SAFETY: `ptr[..len]` is initialized, inside the buffer `buf`
        // keeps alive (or empty and dangling), and nobody writes it while
        // this view lives (the module docs).
        unsafe { slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl AsRef<[u8]> for PooledBytes {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl std::borrow::Borrow<[u8]> for PooledBytes {
    fn borrow(&self) -> &[u8] {
        self
    }
}

impl From<PooledBytes> for Bytes {
    /// As [`PooledBytes::into_bytes`].
    fn from(bytes: PooledBytes) -> Self {
        bytes.into_bytes()
    }
}

impl Buf for PooledBytes {
    #[inline]
    fn remaining(&self) -> usize {
        self.len
    }

    #[inline]
    fn chunk(&self) -> &[u8] {
        self
    }

    /// Moves the start forward: no copy.
    ///
    /// # Panics
    ///
    /// If `cnt > self.remaining()`, as `Bytes::advance` does.
    #[inline]
    #[track_caller]
    fn advance(&mut self, cnt: usize) {
        assert!(
            cnt <= self.len,
            "cannot advance past `remaining`: {cnt:?} <= {:?}",
            self.len
        );
        // SAFETY: `cnt <= len`: at most one past the end of this view.
        self.ptr = unsafe { self.ptr.add(cnt) };
        self.len -= cnt;
    }
}

impl PartialEq for PooledBytes {
    fn eq(&self, other: &Self) -> bool {
        self[..] == other[..]
    }
}

impl Eq for PooledBytes {}

impl PartialEq<[u8]> for PooledBytes {
    fn eq(&self, other: &[u8]) -> bool {
        self[..] == *other
    }
}

impl PartialEq<&[u8]> for PooledBytes {
    fn eq(&self, other: &&[u8]) -> bool {
        self[..] == **other
    }
}

impl PartialEq<PooledBytes> for [u8] {
    fn eq(&self, other: &PooledBytes) -> bool {
        *self == other[..]
    }
}

impl PartialEq<Bytes> for PooledBytes {
    fn eq(&self, other: &Bytes) -> bool {
        self[..] == other[..]
    }
}

impl Hash for PooledBytes {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self[..].hash(state);
    }
}

impl fmt::Debug for PooledBytes {
    /// The length; never the contents (as the pool's guards).
    ///
    /// ```
    /// use recycler_core::buffer::PooledBytes;
    ///
    /// assert_eq!(format!("{:?}", PooledBytes::new()), "PooledBytes { len: 0, .. }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PooledBytes")
            .field("len", &self.len)
            .finish_non_exhaustive()
    }
}
