//! [`PooledBuf`]: the buffer a pool lends, which borrows its pool and
//! returns its buffer there when dropped. Its `'static` twin,
//! [`OwnedPooledBuf`](super::OwnedPooledBuf), is in [`super::owned`]; the
//! Vec-like API and the trait impls of both, in [`super::vec_like`].

use std::mem::ManuallyDrop;

use super::buf::Buf;
use super::loan::Loan;
use super::shared::PoolShared;
use crate::home::Home;

/// A byte buffer on loan from a [`BufferPool`]; returns to the pool when
/// dropped.
///
/// Dereferences to the written part, `[u8]`, starting at the buffer's first
/// byte; grows like a `Vec<u8>` ([`push`](Self::push),
/// [`extend_from_slice`](Self::extend_from_slice), [`io::Write`]). Reads
/// from sockets can fill [`spare_capacity_mut`](Self::spare_capacity_mut)
/// and then [`set_len`](Self::set_len); with the `bytes` feature it is a
/// `bytes::BufMut`, which tokio's `read_buf` fills.
///
/// A buffer that grew past its bucket's capacity returns to the bucket of
/// its new capacity, or is freed if it grew past `max_capacity`. The buffer
/// borrows its pool; use [`OwnedPooledBuf`] for one that must be `'static`.
///
/// Like a `Vec<u8>`, it is `AsRef<[u8]>` and `Borrow<[u8]>` (a set of
/// buffers is searched by `&[u8]`), compares, orders and hashes as its
/// bytes, and is `Extend<u8>` and `Extend<&u8>`. It compares equal to
/// `[u8]`, `&[u8]`, `&mut [u8]`, `[u8; N]`, `&[u8; N]`, `Vec<u8>`,
/// `Cow<[u8]>` (each both ways) and to either buffer type holding the same
/// bytes, whatever the capacities. Its `Debug`, unlike `Vec`'s, shows the
/// length and capacity, never the contents.
///
/// # Examples
///
/// ```
/// use std::io::Write;
/// use recycler_core::buffer::{BufferPool, PooledBuf};
///
/// let pool = BufferPool::new();
/// let mut buf: PooledBuf<'_> = pool.acquire(64);
/// buf.extend_from_slice(b"GET / HTTP/1.1\r\n");
/// write!(buf, "Host: {}\r\n\r\n", "example.com")?;
/// assert!(buf.starts_with(b"GET"));
/// assert_eq!(format!("{buf:?}"), "PooledBuf { len: 37, capacity: 4096, .. }");
/// # Ok::<(), std::io::Error>(())
/// ```
///
/// Comparisons, as with a `Vec<u8>`:
///
/// ```
/// use std::borrow::Cow;
/// use std::sync::Arc;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = Arc::new(BufferPool::new());
/// let mut buf = pool.acquire(16);
/// buf.extend_from_slice(b"abc");
/// let mut owned = pool.acquire_owned(10_000); // another capacity
/// owned.extend_from_slice(b"abc");
///
/// assert!(buf == *b"abc" && *b"abc" == buf); // arrays
/// assert!(buf == b"abc" && b"abc" == buf); // references to arrays
/// assert!(buf == b"abc"[..] && b"abc"[..] == buf); // slices
/// assert!(buf == &b"abc"[..] && &b"abc"[..] == buf); // references to slices
/// assert!(buf == b"abc".to_vec() && b"abc".to_vec() == buf); // vectors
/// assert!(buf == Cow::Borrowed(&b"abc"[..]) && Cow::Borrowed(&b"abc"[..]) == buf);
/// assert!(buf == owned && owned == buf); // the other buffer type
/// assert!(buf != *b"ab" && owned != b"abcd".to_vec());
/// ```
///
/// [`BufferPool`]: super::BufferPool
/// [`OwnedPooledBuf`]: super::OwnedPooledBuf
/// [`io::Write`]: std::io::Write
pub struct PooledBuf<'a> {
    pub(super) pool: &'a PoolShared,
    pub(super) buf: ManuallyDrop<Loan>,
    pub(super) home: Home<Buf>,
    /// The bucket the buffer came from, or `OVERSIZE`; marked `GROWN` once
    /// the buffer has grown.
    pub(super) origin: u32,
}

// SAFETY: the guard owns its buffer (`Buf: Send`); `&PoolShared` is shared
// state that is `Sync` (atomics, locks, channels, and caches touched only by
// their owner thread); `home` is an address the release path uses from any
// thread (it checks the owner before touching the cache).
unsafe impl Send for PooledBuf<'_> {}
// SAFETY: through `&PooledBuf` only `&[u8]` and lengths are reachable;
// release needs `&mut` (drop).
unsafe impl Sync for PooledBuf<'_> {}
impl<'a> PooledBuf<'a> {
    /// A guard of `buf`, just taken from `pool` (recorded with the caller of
    /// the `#[track_caller]` acquire that took it, with feature `track`).
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn new(pool: &'a PoolShared, buf: Box<Buf>, home: Home<Buf>, origin: u32) -> Self {
        #[cfg(feature = "track")]
        pool.track(&buf, std::panic::Location::caller());
        Self::untracked(pool, buf, home, origin)
    }

    /// A guard of `buf`, which the caller has tracked (feature `track`).
    #[inline(always)]
    pub(crate) fn untracked(
        pool: &'a PoolShared,
        buf: Box<Buf>,
        home: Home<Buf>,
        origin: u32,
    ) -> Self {
        Self {
            pool,
            buf: ManuallyDrop::new(Loan::new(buf)),
            home,
            origin,
        }
    }

    /// Takes the buffer apart without returning it, for an owned guard.
    pub(crate) fn into_parts(self) -> (Box<Buf>, Home<Buf>, u32) {
        let mut this = ManuallyDrop::new(self);
        // SAFETY: `this` is never dropped, so the buffer is taken once, here.
        let buf = unsafe { ManuallyDrop::take(&mut this.buf) };
        (buf.into_buf(), this.home, this.origin)
    }

    /// Makes the first `len` bytes initialized (zeroing what was never
    /// written) and the length `len`, and returns the first byte, for a
    /// scope. `len <= capacity()`.
    pub(crate) fn init_to(&mut self, len: usize) -> *mut u8 {
        self.buf.init_to(len)
    }
}

// Unwind safety: a buffer is bytes, as a `Vec<u8>` is, and its pool runs no
// user code at all (the bytes need no `reset`; the only foreign code a pool
// calls is a waiting task's waker, and that runs outside every lock, after
// the grant it wakes for is booked: `ledger.rs`). Every change to the pool's
// state is complete or not begun when a panic can happen: in the caller's
// code while a buffer is held (the buffer is returned, or freed, by its
// `Drop` during the unwinding, the books counting it either way), or in
// `acquire`'s own panic for a size no buffer can have or when the
// allocator fails (nothing was taken). So a pool,
// and a buffer, seen after a caught panic, is consistent. (A buffer's bytes
// may be half-written then, as a `Vec<u8>`'s may; a `Vec<u8>` is unwind
// safe all the same.)

/// Consistent across a panic; see the comment above this impl in the source.
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::new();
/// let mut buf = pool.acquire(10);
/// let len = catch_unwind(move || {
///     buf.push(1);
///     buf.len()
/// });
/// assert_eq!(len.unwrap(), 1);
/// ```
impl std::panic::UnwindSafe for PooledBuf<'_> {}

/// Consistent across a panic; see the comment above the `UnwindSafe` impl
/// in the source.
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::new();
/// let buf = pool.acquire(10);
/// assert_eq!(catch_unwind(|| buf.capacity()).unwrap(), 4096);
/// ```
impl std::panic::RefUnwindSafe for PooledBuf<'_> {}
