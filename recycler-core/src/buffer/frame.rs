//! Feature `bytes`: [`FrameBuf`], a pooled read buffer for codecs: the read
//! side kept off the guards, whose `Deref` starts at the buffer's first
//! byte. Splits share memory by freezing the buffer into `Bytes`, with no
//! `unsafe`: no `&mut` ever covers memory a `Bytes` can read, since the
//! reader writes only into a fresh pooled buffer after a split
//! (`docs/buffers.md`, "Reading frames").

use std::fmt;
use std::ops::Deref;

use ::bytes::buf::UninitSlice;
use ::bytes::{Buf, BufMut, Bytes};

use super::owned::OwnedPooledBuf;
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
/// [`split_to`](Self::split_to) never copies: the first split freezes the
/// pooled buffer into `Bytes`, which the frame and the reader's unread bytes
/// then share, and later splits share it too. The next write (the next
/// socket read) goes into a fresh buffer from the same pool, with the bytes
/// still unread, if any, copied in front: at most one partial frame per
/// read (counted in [`bytes_copied`](Self::bytes_copied)); nothing when
/// every frame read was split off whole. A pooled buffer returns to the
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
    /// The buffer written into, `buf[pos..]` unread; `None` while frozen:
    /// after a split, until the next write.
    buf: Option<OwnedPooledBuf>,
    /// The unread bytes while frozen (shared with the frames split off);
    /// empty otherwise.
    frozen: Bytes,
    /// The read offset into `buf`, `<= buf.len()`; 0 while frozen.
    pos: usize,
    /// The pool, and the capacity asked of it for the next buffer.
    pool: Arc<BufferPool>,
    capacity: usize,
    /// Bytes copied by thaws and compactions.
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
        Self {
            pool: Arc::clone(buf.pool()),
            capacity: buf.capacity(),
            buf: Some(buf),
            frozen: Bytes::new(),
            pos: 0,
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
        match &self.buf {
            Some(buf) => buf.len() - self.pos,
            None => self.frozen.len(),
        }
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
    /// the bytes already read before them count against it. 0 while the
    /// reader has no buffer of its own: after a split, until it next writes
    /// (its unread bytes are shared with the frames then).
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
        self.buf.as_ref().map_or(0, |buf| buf.capacity())
    }

    /// Bytes copied so far: the unread bytes a write after a split carried
    /// into a fresh buffer, and those moved to the front to make room. The
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
    /// rx.put_slice(b"frame+part");
    /// let frame = rx.split_to(6); // no copy
    /// assert_eq!(rx.bytes_copied(), 0);
    /// rx.put_slice(b"ial"); // "part" moves to a fresh buffer first
    /// assert_eq!(rx.bytes_copied(), 4);
    /// assert_eq!((&frame[..], &rx[..]), (&b"frame+"[..], &b"partial"[..]));
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
        self.writable(bytes.len()).extend_from_slice(bytes);
    }

    /// Makes room for at least `additional` more bytes after the unread
    /// ones: after a split, in a fresh buffer from the pool, the unread
    /// bytes copied in; else by moving the unread bytes to the front (if
    /// any were read before them and that is not enough already), then by
    /// growing the buffer as [`OwnedPooledBuf::reserve`] does.
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
        self.writable(additional);
    }

    /// The buffer to write into, with room for `additional` more bytes
    /// (see [`reserve`](Self::reserve)).
    fn writable(&mut self, additional: usize) -> &mut OwnedPooledBuf {
        let buf = match self.buf.take() {
            Some(buf) => buf,
            None => self.thaw(additional),
        };
        let buf = self.buf.insert(buf);
        if buf.capacity() - buf.len() < additional {
            if self.pos > 0 {
                // Compact: the unread bytes to the front.
                let unread = buf.len() - self.pos;
                buf.copy_within(self.pos.., 0);
                buf.truncate(unread);
                self.copied += unread as u64;
                self.pos = 0;
            }
            buf.reserve(additional);
        }
        buf
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
        if let Some(buf) = &mut self.buf {
            buf.clear();
        }
        self.frozen = Bytes::new();
        self.pos = 0;
    }

    /// The first `at` unread bytes as [`Bytes`], sharing the pooled memory,
    /// without a copy; the reader keeps the bytes after them (shared with
    /// the frame until the reader next writes: see [`FrameBuf`]). What
    /// `BytesMut::split_to` is, and like it:
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
        if at > self.len() {
            return None;
        }
        if at == 0 {
            return Some(Bytes::new());
        }
        if let Some(buf) = self.buf.take() {
            // Freeze: the buffer goes whole to `Bytes`; nothing writes to it
            // again, and it returns to the pool when the last part drops.
            self.frozen = buf.into_bytes().slice(self.pos..);
            self.pos = 0;
        }
        let frame = self.frozen.split_to(at);
        if self.frozen.is_empty() {
            // Hold no share of the frames' memory.
            self.frozen = Bytes::new();
        }
        Some(frame)
    }

    /// All the unread bytes as [`Bytes`], sharing the pooled memory, without
    /// a copy; the reader's next write takes a fresh buffer from the pool.
    /// What `BytesMut::split` is.
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

    /// The pooled buffer, the unread bytes at its front: moved there if some
    /// were read before them, or copied into a fresh buffer after a split.
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
        let (pos, mut buf) = match self.buf.take() {
            Some(buf) => (self.pos, buf),
            None => (0, self.thaw(0)),
        };
        if pos > 0 {
            let unread = buf.len() - pos;
            buf.copy_within(pos.., 0);
            buf.truncate(unread);
        }
        buf
    }

    /// After a split: a fresh buffer from the pool with room for
    /// `additional` more bytes, the bytes still unread copied in. The frozen
    /// buffer stays with the frames that share it.
    fn thaw(&mut self, additional: usize) -> OwnedPooledBuf {
        let unread = std::mem::take(&mut self.frozen);
        let size = unread.len().saturating_add(additional);
        let mut buf = self.pool.acquire_owned(self.capacity.max(size));
        buf.extend_from_slice(&unread);
        self.copied += unread.len() as u64;
        self.pos = 0;
        buf
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
        match &self.buf {
            Some(buf) => &buf[self.pos..],
            None => &self.frozen,
        }
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
        } else if self.buf.is_some() {
            self.pos += cnt;
        } else {
            self.frozen.advance(cnt);
        }
    }

    /// As [`split_to`](FrameBuf::split_to): shares the pooled memory (the
    /// `Buf` default would copy).
    #[track_caller]
    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        self.split_to(len)
    }
}

// Making room before a write (a thaw, or moving the unread bytes to the
// front) changes nothing the delegation below relies on: `chunk_mut` is the
// writable buffer's spare capacity after its written part, `advance_mut`
// covers bytes the caller initialized there.
#[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
// SAFETY: `chunk_mut` and `advance_mut` delegate to the writable buffer's
// own `BufMut` (sound by its impl in `bytes.rs`); the frozen bytes, shared
// with `Bytes`, are never written.
unsafe impl BufMut for FrameBuf {
    /// As much as a `Vec<u8>` could hold, as the guards'.
    #[inline]
    fn remaining_mut(&self) -> usize {
        match &self.buf {
            Some(buf) => buf.remaining_mut(),
            None => isize::MAX as usize - self.frozen.len(),
        }
    }

    #[inline]
    #[track_caller]
    unsafe fn advance_mut(&mut self, cnt: usize) {
        if cnt == 0 {
            return;
        }
        let buf = self.writable(0);
        // SAFETY: the caller initialized `cnt` bytes of the last
        // `chunk_mut`, which was this buffer's own `chunk_mut` (`writable`
        // takes no new buffer once one is there), so its contract holds.
        unsafe { buf.advance_mut(cnt) };
    }

    /// The spare capacity after the unread bytes. After a split, a fresh
    /// buffer from the pool first, the unread bytes copied in; when full,
    /// the unread bytes first move to the front, and if that frees nothing
    /// the buffer grows (by at least 64 bytes), as [`FrameBuf::reserve`].
    #[inline]
    fn chunk_mut(&mut self) -> &mut UninitSlice {
        let room = match &self.buf {
            Some(buf) if buf.len() < buf.capacity() => 0,
            _ => GROW_BY,
        };
        self.writable(room).chunk_mut()
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
    /// assert_eq!(format!("{rx:?}"), "FrameBuf { len: 0, pos: 0, capacity: 4096, frozen: false, .. }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameBuf")
            .field("len", &self.len())
            .field("pos", &self.pos)
            .field("capacity", &self.capacity())
            .field("frozen", &self.buf.is_none())
            .finish_non_exhaustive()
    }
}
