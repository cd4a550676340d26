//! Feature `bytes`: [`FrameBuf`], a pooled read buffer for codecs. It owns
//! an [`OwnedPooledBuf`] and a read offset: `BufMut` fills it from a socket,
//! `bytes::Buf` consumes from the front without copying, and
//! [`split_to`](FrameBuf::split_to) hands a frame off as `Bytes` that shares
//! the pooled memory.
//!
//! The guards keep their contract (`Deref` over the written part, from the
//! buffer's first byte), so the read offset lives here, on a type of its
//! own. A split shares memory without any `unsafe`: the buffer that holds
//! the frame is frozen whole ([`OwnedPooledBuf::into_bytes`]) and the
//! reader moves on to a fresh pooled buffer, taking the bytes after the
//! frame with it. Whichever side is shorter, the frame or what follows it,
//! is copied: nothing when the frame is the last unread byte (one frame per
//! read), never more than the frame's length, so at most one copy per byte
//! in all.

use std::fmt;
use std::ops::{Deref, DerefMut};

use ::bytes::buf::UninitSlice;
use ::bytes::{Buf, BufMut, Bytes};

use super::guard::OwnedPooledBuf;
use super::pool::BufferPool;
use crate::loom::Arc;

/// Bytes a full buffer makes room for, at least, when `chunk_mut` needs
/// room (as the guards' `BufMut` does).
const GROW_BY: usize = 64;

/// A pooled read buffer for codecs: fill it with `BufMut` (tokio's
/// `read_buf`), decode with `bytes::Buf`, and [`split_to`](Self::split_to)
/// each frame off as `Bytes` that shares the pooled memory. What `BytesMut`
/// is to a decoder, over a buffer of a [`BufferPool`].
///
/// It dereferences to the *unread* bytes (unlike [`OwnedPooledBuf`], whose
/// `Deref` starts at the buffer's first byte). [`advance`](Buf::advance)
/// moves the read offset without copying; when everything is read the
/// buffer starts over from its first byte. The unread bytes move to the
/// front (a `copy_within`) only when a write needs room, as `BytesMut`
/// reclaims space, before the buffer grows.
///
/// A split gives the `Bytes` side the pooled buffer that holds the frame,
/// whole, and the reader a fresh buffer from the same pool with the bytes
/// after the frame: no copy when the frame is all that is unread; otherwise
/// the shorter of the frame and the rest is copied (counted in
/// [`bytes_copied`](Self::bytes_copied)). A pooled buffer returns to the
/// pool when the reader and every `Bytes` that shares it have dropped.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use bytes::{Buf, BufMut};
/// use recycler_core::buffer::{BufferPool, FrameBuf};
///
/// let pool = Arc::new(BufferPool::new());
/// let mut rx = FrameBuf::with_capacity(&pool, 4096);
/// rx.put_slice(b"\x00\x05hello\x00\x03bye"); // as a socket read would
/// let mut frames = Vec::new();
/// while rx.len() >= 2 {
///     let n = usize::from(u16::from_be_bytes([rx[0], rx[1]]));
///     if rx.len() < 2 + n {
///         break; // a partial frame: read more
///     }
///     rx.advance(2);
///     frames.push(rx.split_to(n));
/// }
/// assert_eq!(frames, [&b"hello"[..], &b"bye"[..]]);
/// assert!(rx.is_empty());
/// ```
pub struct FrameBuf {
    /// The bytes written; `buf[pos..]` are unread.
    buf: OwnedPooledBuf,
    /// The read offset, `<= buf.len()`.
    pos: usize,
    /// The capacity asked of the pool for a fresh buffer after a split.
    capacity: usize,
    /// Bytes copied by splits and compactions.
    copied: u64,
}

impl FrameBuf {
    /// A reader over `buf`: its written bytes are the unread ones. After a
    /// split it takes buffers of `buf`'s capacity (at least) from the same
    /// pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::Buf;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut buf = pool.acquire_owned(100);
    /// buf.extend_from_slice(b"abc");
    /// let mut rx = FrameBuf::new(buf);
    /// assert_eq!(rx.get_u8(), b'a');
    /// assert_eq!(&rx[..], b"bc");
    /// ```
    pub fn new(buf: OwnedPooledBuf) -> Self {
        let capacity = buf.capacity();
        Self {
            buf,
            pos: 0,
            capacity,
            copied: 0,
        }
    }

    /// An empty reader over a buffer of at least `capacity` bytes from
    /// `pool` (as [`BufferPool::acquire_owned`]).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let rx = FrameBuf::with_capacity(&pool, 1000);
    /// assert_eq!((rx.len(), rx.capacity()), (0, 4096));
    /// ```
    pub fn with_capacity(pool: &Arc<BufferPool>, capacity: usize) -> Self {
        Self::new(pool.acquire_owned(capacity))
    }

    /// Unread bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::{Buf, BufMut};
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.put_slice(b"abc");
    /// rx.advance(1);
    /// assert_eq!(rx.len(), 2);
    /// ```
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Whether every byte written has been read.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::BufMut;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// assert!(rx.is_empty());
    /// rx.put_u8(1);
    /// assert!(!rx.is_empty());
    /// ```
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The capacity of the buffer it writes into now: the unread bytes and
    /// the bytes already read before them count against it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// assert_eq!(rx.capacity(), 4096);
    /// ```
    #[inline]
    pub fn capacity(&self) -> usize {
        self.buf.capacity()
    }

    /// Bytes copied so far by splits (the shorter side of a split) and by
    /// compactions (the unread bytes moved to the front to make room): the
    /// price of sharing without `unsafe`, to watch in a benchmark.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::BufMut;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.put_slice(b"frame+partial");
    /// let frame = rx.split_to(6); // "partial" is longer: the frame is copied
    /// assert_eq!(rx.bytes_copied(), 6);
    /// let rest = rx.split_to(7); // the last unread bytes: no copy
    /// assert_eq!(rx.bytes_copied(), 6);
    /// assert_eq!((&frame[..], &rest[..]), (&b"frame+"[..], &b"partial"[..]));
    /// ```
    #[inline]
    pub fn bytes_copied(&self) -> u64 {
        self.copied
    }

    /// Appends `bytes`, making room as [`reserve`](Self::reserve) does.
    ///
    /// # Panics
    ///
    /// As [`OwnedPooledBuf::push`]: only if the buffer must grow and cannot
    /// exist (the allocator fails, or the size is past the largest
    /// possible); never at the pool's memory limit.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.extend_from_slice(b"abc");
    /// assert_eq!(&rx[..], b"abc");
    /// ```
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.buf.extend_from_slice(bytes);
    }

    /// Makes room for at least `additional` more bytes after the unread
    /// ones: first by moving the unread bytes to the front (if any were
    /// read before them and that is not enough already), then by growing the
    /// buffer as [`OwnedPooledBuf::reserve`] does.
    ///
    /// # Panics
    ///
    /// As [`extend_from_slice`](Self::extend_from_slice).
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
    pub fn reserve(&mut self, additional: usize) {
        if self.buf.capacity() - self.buf.len() >= additional {
            return;
        }
        self.compact();
        self.buf.reserve(additional);
    }

    /// Forgets the unread bytes; keeps the buffer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.extend_from_slice(b"abc");
    /// rx.clear();
    /// assert!(rx.is_empty());
    /// ```
    pub fn clear(&mut self) {
        self.buf.clear();
        self.pos = 0;
    }

    /// The first `at` unread bytes as [`Bytes`], sharing the pooled memory;
    /// the reader keeps the bytes after them. Zero-copy when they are all
    /// the unread bytes; otherwise the shorter side is copied (see
    /// [`FrameBuf`]). What `BytesMut::split_to` is, and like it:
    ///
    /// # Panics
    ///
    /// If `at > self.len()`, as `BytesMut::split_to` does;
    /// [`try_split_to`](Self::try_split_to) returns `None` instead.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::BufMut;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut rx = FrameBuf::with_capacity(&pool, 100);
    /// rx.put_slice(b"hello");
    /// let first = rx.as_ptr();
    /// let frame = rx.split_to(5);
    /// assert_eq!((&frame[..], frame.as_ptr()), (&b"hello"[..], first)); // no copy
    /// drop(rx);
    /// assert_eq!(pool.stats().buckets[0].in_use, 1); // `frame` holds its buffer
    /// drop(frame);
    /// assert_eq!(pool.stats().buckets[0].in_use, 0);
    /// ```
    #[track_caller]
    pub fn split_to(&mut self, at: usize) -> Bytes {
        match self.try_split_to(at) {
            Some(bytes) => bytes,
            None => panic!("split_to out of bounds: {at:?} <= {:?}", self.len()),
        }
    }

    /// As [`split_to`](Self::split_to), or `None` (the reader unchanged) if
    /// fewer than `at` bytes are unread.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.extend_from_slice(b"abc");
    /// assert!(rx.try_split_to(4).is_none());
    /// assert_eq!(rx.try_split_to(3).as_deref(), Some(&b"abc"[..]));
    /// ```
    pub fn try_split_to(&mut self, at: usize) -> Option<Bytes> {
        let unread = self.len();
        if at > unread {
            return None;
        }
        if at == 0 {
            return Some(Bytes::new());
        }
        let (start, rest) = (self.pos, unread - at);
        if rest > at {
            // The frame is the shorter side: copy it into a buffer of its own.
            let mut frame = self.buf.pool().acquire_owned(at);
            frame.extend_from_slice(&self.buf[start..start + at]);
            self.copied += at as u64;
            self.advance(at);
            return Some(frame.into_bytes());
        }
        // Move what follows the frame (`rest <= at` bytes) to a fresh buffer;
        // the old one, now immutable, goes whole to the `Bytes`.
        let mut fresh = self.buf.pool().acquire_owned(self.capacity.max(rest));
        fresh.extend_from_slice(&self.buf[start + at..]);
        self.copied += rest as u64;
        self.pos = 0;
        let old = std::mem::replace(&mut self.buf, fresh);
        Some(old.into_bytes().slice(start..start + at))
    }

    /// All the unread bytes as [`Bytes`], sharing the pooled memory, without
    /// a copy; the reader goes on with a fresh buffer from the pool. What
    /// `BytesMut::split` is.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.extend_from_slice(b"abc");
    /// assert_eq!(&rx.split()[..], b"abc");
    /// assert!(rx.is_empty());
    /// assert_eq!(rx.bytes_copied(), 0);
    /// ```
    pub fn split(&mut self) -> Bytes {
        self.split_to(self.len())
    }

    /// The pooled buffer, the unread bytes moved to its front (a copy, if
    /// some were read before them).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::Buf;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.extend_from_slice(b"abc");
    /// rx.advance(1);
    /// assert_eq!(&rx.into_inner()[..], b"bc");
    /// ```
    pub fn into_inner(mut self) -> OwnedPooledBuf {
        self.compact();
        self.buf
    }

    /// Moves the unread bytes to the buffer's first byte.
    fn compact(&mut self) {
        if self.pos == 0 {
            return;
        }
        let unread = self.len();
        self.buf.copy_within(self.pos.., 0);
        self.buf.truncate(unread);
        self.copied += unread as u64;
        self.pos = 0;
    }
}

impl OwnedPooledBuf {
    /// A [`FrameBuf`] over this buffer: its written bytes become the unread
    /// ones. As [`FrameBuf::new`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::Buf;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut buf = pool.acquire_owned(10);
    /// buf.extend_from_slice(&7u32.to_be_bytes());
    /// assert_eq!(buf.into_frame_buf().get_u32(), 7);
    /// ```
    #[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
    pub fn into_frame_buf(self) -> FrameBuf {
        FrameBuf::new(self)
    }
}

impl From<OwnedPooledBuf> for FrameBuf {
    /// As [`FrameBuf::new`].
    fn from(buf: OwnedPooledBuf) -> Self {
        Self::new(buf)
    }
}

impl Deref for FrameBuf {
    type Target = [u8];

    /// The unread bytes.
    #[inline]
    fn deref(&self) -> &[u8] {
        &self.buf[self.pos..]
    }
}

impl DerefMut for FrameBuf {
    /// The unread bytes. No `Bytes` ever shares the buffer a reader writes
    /// into (a split gives the `Bytes` side another buffer), so they are
    /// the reader's alone.
    #[inline]
    fn deref_mut(&mut self) -> &mut [u8] {
        let pos = self.pos;
        &mut self.buf[pos..]
    }
}

impl AsRef<[u8]> for FrameBuf {
    #[inline]
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl Buf for FrameBuf {
    #[inline]
    fn remaining(&self) -> usize {
        self.len()
    }

    #[inline]
    fn chunk(&self) -> &[u8] {
        self
    }

    /// Moves the read offset: no copy. When everything is read, the buffer
    /// starts over from its first byte.
    ///
    /// # Panics
    ///
    /// If `cnt > self.remaining()`, as `BytesMut::advance` does.
    #[inline]
    #[track_caller]
    fn advance(&mut self, cnt: usize) {
        let unread = self.len();
        if cnt > unread {
            panic!("cannot advance past `remaining`: {cnt:?} <= {unread:?}");
        }
        if cnt == unread {
            self.clear();
        } else {
            self.pos += cnt;
        }
    }

    /// As [`split_to`](FrameBuf::split_to): shares the pooled memory (the
    /// `Buf` default would copy).
    #[track_caller]
    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        self.split_to(len)
    }
}

#[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
// SAFETY: every method delegates to the buffer's own `BufMut` (sound by its
// impl in `bytes.rs`), after at most moving the unread bytes to the front,
// which changes no length the delegation relies on: `chunk_mut` is the
// spare capacity after the written part, `advance_mut` covers bytes the
// caller initialized there.
unsafe impl BufMut for FrameBuf {
    #[inline]
    fn remaining_mut(&self) -> usize {
        self.buf.remaining_mut()
    }

    #[inline]
    #[track_caller]
    unsafe fn advance_mut(&mut self, cnt: usize) {
        // SAFETY: the caller initialized `cnt` bytes of `chunk_mut`, which is
        // the buffer's own `chunk_mut`, so the buffer's contract holds.
        unsafe { self.buf.advance_mut(cnt) };
    }

    /// The spare capacity after the unread bytes; when there is none, the
    /// unread bytes first move to the front, and if that frees nothing the
    /// buffer grows (by at least 64 bytes), as [`FrameBuf::reserve`].
    #[inline]
    fn chunk_mut(&mut self) -> &mut UninitSlice {
        if self.buf.len() == self.buf.capacity() {
            self.reserve(GROW_BY);
        }
        self.buf.chunk_mut()
    }

    #[inline]
    fn put_slice(&mut self, src: &[u8]) {
        self.extend_from_slice(src);
    }
}

impl fmt::Debug for FrameBuf {
    /// Unread bytes, read offset and capacity; never the contents.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// assert_eq!(format!("{rx:?}"), "FrameBuf { len: 0, pos: 0, capacity: 4096, .. }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameBuf")
            .field("len", &self.len())
            .field("pos", &self.pos)
            .field("capacity", &self.buf.capacity())
            .finish_non_exhaustive()
    }
}
