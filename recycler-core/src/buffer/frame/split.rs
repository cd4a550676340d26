//! Splitting frames off a [`FrameBuf`]: as [`PooledBytes`] (a reference
//! count each) or as `Bytes` (sliced from a share, one `Bytes` owner per
//! share, which covers every unread byte written so far). Both leave the
//! buffer to the reader, which goes on writing after them.

use ::bytes::Bytes;

use super::FrameBuf;
use crate::buffer::pooled_bytes::PooledBytes;

impl FrameBuf {
    /// The first `at` unread bytes as [`PooledBytes`], sharing the pooled
    /// memory: no copy, no allocation (a reference count). The reader keeps
    /// the bytes after them and goes on writing after them.
    ///
    /// # Panics
    ///
    /// If `at > self.len()`, as `BytesMut::split_to` does;
    /// [`try_split_to_pooled`](Self::try_split_to_pooled) returns `None`
    /// instead.
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
    /// let frame = rx.split_to_pooled(5);
    /// assert_eq!((&frame[..], frame.as_ptr()), (&b"hello"[..], first)); // no copy
    /// drop(rx);
    /// assert_eq!(pool.stats().buckets[0].in_use, 1); // `frame` holds its buffer
    /// drop(frame);
    /// assert_eq!(pool.stats().buckets[0].in_use, 0);
    /// ```
    #[inline]
    #[track_caller]
    pub fn split_to_pooled(&mut self, at: usize) -> PooledBytes {
        match self.try_split_to_pooled(at) {
            Some(bytes) => bytes,
            None => panic!("split_to out of bounds: {at:?} <= {:?}", self.len()),
        }
    }

    /// As [`split_to_pooled`](Self::split_to_pooled), or `None` (the
    /// reader unchanged) if fewer than `at` bytes are unread.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// rx.extend_from_slice(b"abc");
    /// assert!(rx.try_split_to_pooled(4).is_none());
    /// assert_eq!(rx.try_split_to_pooled(3).as_deref(), Some(&b"abc"[..]));
    /// ```
    #[inline]
    pub fn try_split_to_pooled(&mut self, at: usize) -> Option<PooledBytes> {
        if at > self.len() {
            return None;
        }
        if at == 0 {
            return Some(PooledBytes::new());
        }
        if self.lent {
            self.unlend();
        }
        let buf = self.buf.clone()?;
        // SAFETY: `base[pos..pos + at]` is unread, so written (initialized)
        // and inside `buf`'s allocation; the reader writes it again only
        // once its reference to `buf` is the only one, which this view's
        // is not while it lives (see `pooled_bytes`).
        let frame = unsafe { PooledBytes::shared(self.base.add(self.pos), at, buf) };
        self.pos += at;
        Some(frame)
    }

    /// The first `at` unread bytes as [`Bytes`], sharing the pooled memory,
    /// without a copy; the reader keeps the bytes after them. What
    /// `BytesMut::split_to` is, and like it:
    ///
    /// The first split off a buffer *lends* the whole buffer to one `Bytes`
    /// (no copy), and every frame of the buffer is sliced from it by
    /// reference counting: one allocation per buffer (the `Bytes`' shared
    /// count), however many reads and frames; none at all while the reader
    /// reuses the buffer in place once its frames have dropped. A refill
    /// into a fresh buffer while frames are alive retires the lent one: it
    /// stays in the pool's books until they drop, and a later refill writes
    /// into it again (at most four retired; past that the oldest is let go
    /// as below). A frame still alive when the reader lets go for
    /// good ([`release_if_empty`](Self::release_if_empty), the reader's
    /// drop) keeps the allocation, which then leaves the pool (counted as a
    /// remove of its bucket) and is freed as the last such frame drops.
    ///
    /// Under a `memory_limit`, or for buffers aligned to more than a byte,
    /// nothing leaves the pool: the first split after a write shares the
    /// unread bytes written so far as one `Bytes` (one allocation per read
    /// that completes frames), and the buffer returns to the pool when its
    /// last frame drops. [`split_to_pooled`](Self::split_to_pooled) pays no
    /// allocation and keeps every buffer in the pool, always; the first one
    /// after `split_to` frames of a buffer that are still alive moves the
    /// unread bytes to a fresh buffer (a copy, counted in
    /// [`bytes_copied`](Self::bytes_copied)).
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
    /// rx.put_slice(b"world");
    /// assert_eq!(&rx.split_to(5)[..], b"world"); // the same buffer, sliced
    /// drop(rx); // `frame` keeps the buffer, which leaves the pool
    /// assert_eq!((pool.stats().buckets[0].in_use, pool.stats().buckets[0].removes), (0, 1));
    /// assert_eq!(&frame[..], b"hello");
    /// ```
    ///
    /// Under a memory limit the buffer stays in the pool's books until its
    /// last frame drops:
    ///
    /// ```
    /// use std::sync::Arc;
    /// use bytes::BufMut;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let pool = Arc::new(BufferPool::builder().memory_limit(1 << 20).build()?);
    /// let mut rx = FrameBuf::with_capacity(&pool, 100);
    /// rx.put_slice(b"hello");
    /// let frame = rx.split_to(5);
    /// drop(rx);
    /// assert_eq!(pool.stats().buckets[0].in_use, 1); // `frame` holds its buffer
    /// drop(frame);
    /// assert_eq!(pool.stats().buckets[0].in_use, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[inline]
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
    #[inline]
    pub fn try_split_to(&mut self, at: usize) -> Option<Bytes> {
        if at > self.len() {
            return None;
        }
        if at == 0 {
            return Some(Bytes::new());
        }
        let end = self.pos + at;
        if end > self.root_start + self.root.len() {
            self.share();
        }
        let frame = self
            .root
            .slice(self.pos - self.root_start..end - self.root_start);
        self.pos = end;
        Some(frame)
    }

    /// Shares the unread bytes written so far, `base[pos..len]`, as the
    /// `Bytes` that `split_to` slices frames from.
    #[cold]
    #[inline(never)]
    fn share(&mut self) {
        if self.lend() {
            return;
        }
        let unread = self.len();
        self.root = self.split_to_pooled(unread).into_bytes();
        // The reader keeps the bytes: only the share moved on.
        self.pos -= unread;
        self.root_start = self.pos;
    }

    /// Ends a lending before a [`PooledBytes`] shares the buffer (its
    /// `Buf` must own its allocation): reclaimed if no frame is alive, else
    /// the unread bytes move to a fresh buffer (a refill, counted in
    /// [`bytes_copied`](Self::bytes_copied)) and the frames keep the old
    /// allocation.
    #[cold]
    #[inline(never)]
    fn unlend(&mut self) {
        if !self.reclaim() {
            self.retired.sweep();
            let fresh = self
                .pool
                .pool()
                .acquire_owned(self.refill_capacity.max(self.len()));
            self.refill(fresh);
        }
    }

    /// All the unread bytes as [`Bytes`], sharing the pooled memory, without
    /// a copy. What `BytesMut::split` is.
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
}
