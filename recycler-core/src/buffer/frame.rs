//! Feature `bytes`: [`FrameBuf`], a pooled read buffer for codecs: the read
//! side kept off the guards, whose `Deref` starts at the buffer's first
//! byte. This file holds the type and its reading side (`Deref`, `Buf`);
//! writing (`BufMut`) is in [`mod@write`], splitting frames off in
//! [`split`], lending the buffer to `split_to`'s `Bytes` in [`lend`],
//! making room (`reserve`, `try_reserve`, `reserve_async`, the refill into
//! a fresh buffer) in [`room`]. The aliasing argument for writing a buffer
//! whose head frames share is in [`super::pooled_bytes`] and, for a lent
//! buffer, in [`lend`] (`docs/buffers.md`, "Reading frames").

use std::fmt;
use std::ops::Deref;
use std::ptr::{self, NonNull};
use std::slice;

use ::bytes::{Buf, Bytes};

use super::owned::OwnedPooledBuf;
use super::pool::BufferPool;
use super::units::PoolUnit;
use crate::loom::Arc;

mod lend;
mod read;
mod room;
mod split;
mod write;

/// Bytes a full buffer makes room for, at least, when `chunk_mut` needs
/// room (as the guards' `BufMut` does).
const GROW_BY: usize = 64;

/// A pooled read buffer for codecs: fill it with `BufMut` (tokio's
/// `read_buf`), decode with `bytes::Buf`, and split each frame off as
/// [`PooledBytes`](super::PooledBytes) ([`split_to_pooled`](Self::split_to_pooled)) or `Bytes`
/// ([`split_to`](Self::split_to)) that share the pooled memory. What
/// `BytesMut` is to a decoder, over a buffer of a [`BufferPool`].
///
/// It dereferences to the *unread* bytes (unlike [`OwnedPooledBuf`], whose
/// `Deref` starts at the buffer's first byte). [`advance`](Buf::advance)
/// moves the read offset without copying.
///
/// **Splits never copy.** A frame split off shares the buffer, and the
/// reader goes on writing the rest of the same buffer after it (no frame
/// ever sees those bytes). A [`PooledBytes`](super::PooledBytes) costs a reference count; a
/// `Bytes` too, once the buffer is lent to the one `Bytes` all its frames
/// are sliced from (one allocation per buffer; per read under a memory
/// limit: see [`split_to`](Self::split_to)).
///
/// **When the buffer is full**, and no frame split off it is still alive,
/// the unread bytes move to its front (if anything was read before them),
/// as `BytesMut` reclaims space, and it grows only if that is not enough.
/// While frames still hold it, the unread bytes (a partial frame) move to
/// a fresh buffer from the same pool instead, and the frames keep the old
/// one, which returns to the pool when the last of them drops (or, lent to
/// `split_to`'s `Bytes`, leaves the pool with them). Both copies are
/// counted in [`bytes_copied`](Self::bytes_copied).
///
/// At the pool's `memory_limit`, the writes and [`reserve`](Self::reserve)
/// take their fresh buffer (or growth) as an overdraft, as the guards'
/// writes do; [`try_reserve`](Self::try_reserve) fails instead, and
/// [`reserve_async`](Self::reserve_async) waits for memory.
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
///     frames.push(rx.split_to_pooled(n));
/// }
/// assert_eq!(frames[0], b"hello"[..]);
/// assert_eq!(frames[1], b"bye"[..]);
/// assert!(rx.is_empty());
/// ```
pub struct FrameBuf {
    /// The first byte of the buffer written into; dangling without one.
    ///
    /// Invariants: `pos <= len <= cap`; `base[..cap]` is the allocation of
    /// `buf` (none if `cap` is 0); `base[..len]` is initialized. The
    /// reader writes only `base[len..cap]`, the *tail*, and only through
    /// `&mut self`; it writes `base[..len]` again (moves, growth, starting
    /// over) only while its reference to `buf` is the only one. See
    /// [`super::pooled_bytes`] for why that is sound.
    base: NonNull<u8>,
    /// The read offset: `base[pos..len]` are the unread bytes.
    pos: usize,
    /// The bytes written.
    len: usize,
    /// The buffer's capacity.
    cap: usize,
    /// Bytes of the buffer known initialized from its first byte, besides
    /// `..len` (so `base[..init.max(len)]` is), for reads into an
    /// initialized tail ([`read_from`](Self::read_from)).
    init: usize,
    /// The last share, for `split_to`: `base[root_start..root_start +
    /// root.len()]` as `Bytes` (empty, at 0, if none). Frames that end in
    /// it are sliced from it.
    root: Bytes,
    root_start: usize,
    /// Whether `root` covers the whole buffer and owns its allocation
    /// ([`lend`]): `root_start` is 0, `base` is `root`'s pointer, `buf` is
    /// the reader's alone, and its `Buf` touches its allocation only once
    /// the lending ends.
    lent: bool,
    /// Lent buffers a refill moved on from while frames held them
    /// ([`lend::Retired`]).
    retired: lend::Retired,
    /// The buffer written into, shared with the frames split off it; its
    /// length is stale (the reader's is the truth). `None`: no buffer.
    buf: Option<Arc<OwnedPooledBuf>>,
    /// Bytes copied by moves to the front and refills.
    copied: u64,
    /// The capacity asked of the pool for a fresh buffer (at least).
    refill_capacity: usize,
    /// The pool fresh buffers come from.
    pool: PoolUnit,
}

// SAFETY: the reader's raw parts (`base`, the offsets) are a unique owner's,
// as a `Vec<u8>`'s are: it writes its buffer only through `&mut self`, and
// the bytes it shares only while no `PooledBytes` reads them (see
// `pooled_bytes`). Its other fields are `Send + Sync`.
unsafe impl Send for FrameBuf {}
// SAFETY: `&FrameBuf` only reads initialized bytes (`Deref`, the offsets);
// nothing is written through it.
unsafe impl Sync for FrameBuf {}

impl FrameBuf {
    /// A reader over `buf`: its written bytes are the unread ones. Fresh
    /// buffers come from the same pool, with `buf`'s capacity (at least).
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
        let mut this = Self {
            base: NonNull::dangling(),
            pos: 0,
            len: 0,
            cap: 0,
            init: 0,
            root: Bytes::new(),
            root_start: 0,
            lent: false,
            retired: lend::Retired::default(),
            buf: None,
            copied: 0,
            refill_capacity: buf.capacity(),
            pool: PoolUnit::take(buf.pool()),
        };
        this.install(buf);
        this
    }

    /// An empty reader over a buffer of at least `capacity` bytes from
    /// `pool` (as [`BufferPool::acquire_owned`]).
    ///
    /// # Panics
    ///
    /// As [`BufferPool::acquire`].
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

    /// Makes `buf` the buffer written into, its written bytes the unread
    /// ones; lets the previous one go (it returns to the pool when the
    /// frames split off it have dropped).
    fn install(&mut self, buf: OwnedPooledBuf) {
        self.buf = Some(Arc::new(buf));
        self.installed();
    }

    /// Makes the buffer just put in `buf` (the reader's alone) the one
    /// written into, as [`install`](Self::install).
    fn installed(&mut self) {
        debug_assert!(!self.lent, "a lent buffer is let go first");
        let Some(buf) = self.buf.as_mut().and_then(Arc::get_mut) else {
            unreachable!("a buffer just installed is the reader's alone");
        };
        self.base = NonNull::new(buf.as_mut_ptr()).unwrap_or(NonNull::dangling());
        self.pos = 0;
        self.len = buf.len();
        self.cap = buf.capacity();
        self.init = 0;
        self.root = Bytes::new();
        self.root_start = 0;
    }

    /// The buffer, if the reader's reference is the only one: no frame
    /// split off it is alive. The reader's own share (`root`) is let go
    /// first (a lent buffer reclaimed); a later `split_to` makes another.
    fn exclusive(&mut self) -> Option<&mut OwnedPooledBuf> {
        if !self.reclaim() {
            return None;
        }
        self.root = Bytes::new();
        self.root_start = 0;
        self.buf.as_mut().and_then(Arc::get_mut)
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
        self.len - self.pos
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
        self.len == self.pos
    }

    /// The capacity of the buffer it writes into now: the unread bytes, the
    /// bytes read (or split off) before them, and the room after them. 0
    /// while it has no buffer (after
    /// [`release_if_empty`](Self::release_if_empty)).
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
        self.cap
    }

    /// Bytes copied so far: the unread bytes moved to the front of a full
    /// buffer, and those carried into a fresh buffer when frames still
    /// held the full one. To watch in a benchmark.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::{Buf, BufMut};
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.put_bytes(b'x', 4000);
    /// let frame = rx.split_to_pooled(3990); // no copy: shares the buffer
    /// rx.put_slice(&[b'y'; 90]); // written after the frame: no copy
    /// assert_eq!(rx.bytes_copied(), 0);
    /// rx.put_slice(&[b'z'; 10]); // full, `frame` holds it: the 100 unread
    /// assert_eq!((rx.len(), rx.bytes_copied()), (110, 100)); // move to a fresh one
    /// drop(frame);
    /// rx.put_bytes(b'w', 3986); // full again, held by nobody else
    /// rx.advance(4090);
    /// rx.put_slice(b"!"); // the 6 unread move to the front
    /// assert_eq!((rx.len(), rx.bytes_copied()), (7, 106));
    /// ```
    #[inline]
    pub fn bytes_copied(&self) -> u64 {
        self.copied
    }

    /// Appends `bytes`, making room as [`reserve`](Self::reserve) does.
    ///
    /// # Panics
    ///
    /// As [`reserve`](Self::reserve).
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
    #[inline]
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        // SAFETY: `reserve` made room for `bytes.len()` bytes in the tail,
        // `base[len..cap]`, which only `&mut self` writes and no `&[u8]` or
        // frame covers (they cover bytes before `len`); so `bytes` does not
        // overlap it (it may be a frame of this buffer: before `len`).
        unsafe {
            let tail = self.base.as_ptr().add(self.len);
            ptr::copy_nonoverlapping(bytes.as_ptr(), tail, bytes.len());
        }
        self.len += bytes.len();
    }

    /// Forgets the unread bytes; keeps the buffer (from its first byte
    /// again, if no frame split off it is alive).
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
        self.pos = self.len;
        self.start_over();
    }

    /// With nothing unread: starts over from the buffer's first byte if no
    /// frame split off it is alive; else goes on after them.
    #[cold]
    fn start_over(&mut self) {
        if self.alone() {
            self.pos = 0;
            self.len = 0;
        }
    }

    /// If every byte written has been read, lets the buffer go (back to the
    /// pool, once the frames split off it have dropped; a buffer lent to
    /// `split_to`'s frames leaves the pool with them if they are alive) and
    /// returns `true`;
    /// the next write takes a fresh buffer from the pool. For a connection
    /// about to idle: it then holds no buffer at all.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::BufMut;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut rx = FrameBuf::with_capacity(&pool, 10);
    /// rx.put_u8(1);
    /// assert!(!rx.release_if_empty()); // one byte unread: kept
    /// rx.clear();
    /// assert!(rx.release_if_empty());
    /// assert_eq!((rx.capacity(), pool.stats().buckets[0].in_use), (0, 0));
    /// rx.put_u8(2); // a fresh buffer
    /// assert_eq!(rx.capacity(), 4096);
    /// ```
    pub fn release_if_empty(&mut self) -> bool {
        if !self.is_empty() {
            return false;
        }
        self.let_go();
        self.base = NonNull::dangling();
        (self.pos, self.len, self.cap, self.init) = (0, 0, 0, 0);
        true
    }

    /// The pooled buffer, the unread bytes at its front: moved there if some
    /// were read before them, or copied into a fresh buffer if frames split
    /// off the one written into are still alive.
    ///
    /// # Panics
    ///
    /// As [`BufferPool::acquire`], if it needs a fresh buffer.
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
        if self.move_to_front()
            && self.reclaim()
            && let Some(shared) = self.buf.take()
        {
            match Arc::try_unwrap(shared) {
                Ok(mut buf) => {
                    // SAFETY: after the move `base[..len]` are the unread
                    // bytes, initialized, within `buf`'s capacity.
                    unsafe { buf.set_len(self.len) };
                    return buf;
                }
                Err(shared) => self.buf = Some(shared),
            }
        }
        let mut fresh = self
            .pool
            .pool()
            .acquire_owned(self.refill_capacity.max(self.len()));
        fresh.extend_from_slice(&self); // `self.buf` keeps them until the end
        fresh
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
        // SAFETY: `base[pos..len]` is inside the allocation and initialized
        // (the invariants); nothing writes it while `&self` lives (the
        // reader writes through `&mut self` only, and only after `len`).
        unsafe { slice::from_raw_parts(self.base.as_ptr().add(self.pos), self.len - self.pos) }
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
    /// starts over from its first byte, if no frame split off it is alive.
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
        self.pos += cnt;
        if self.pos == self.len {
            self.start_over();
        }
    }

    /// As [`split_to`](FrameBuf::split_to): shares the pooled memory (the
    /// `Buf` default would copy).
    #[track_caller]
    fn copy_to_bytes(&mut self, len: usize) -> Bytes {
        self.split_to(len)
    }
}

impl fmt::Debug for FrameBuf {
    /// Unread bytes, read offset and capacity, and whether frames (or
    /// shares) of the buffer are alive; never the contents.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// assert_eq!(format!("{rx:?}"), "FrameBuf { len: 0, pos: 0, capacity: 4096, shared: false, .. }");
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FrameBuf")
            .field("len", &self.len())
            .field("pos", &self.pos)
            .field("capacity", &self.cap)
            .field(
                "shared",
                &(self.buf.as_ref().is_some_and(|b| Arc::strong_count(b) > 1)
                    || (self.lent && !self.root.is_unique())
                    || self.retired.any()),
            )
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
