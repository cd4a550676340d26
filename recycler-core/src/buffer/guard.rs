//! The buffers a pool hands out: [`PooledBuf`] borrows its pool,
//! [`OwnedPooledBuf`] holds it in an `Arc`. Both return their buffer to the
//! pool when dropped, and share one Vec-like API, written once by
//! `buf_api!`.

use std::borrow::{Borrow, BorrowMut, Cow};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::io;
use std::mem::{ManuallyDrop, MaybeUninit};
use std::ops::{Deref, DerefMut};

use super::buckets::GROWN;
use super::buf::Buf;
use super::inner::PoolInner;
use super::loan::Loan;
use super::pool::BufferPool;
use super::raw::AlignedBuf;
use crate::error::AcquireError;
use crate::home::Home;
use crate::loom::Arc;

/// How a buffer reaches its pool.
trait PoolRef {
    fn pool_inner(&self) -> &PoolInner;
}

impl PoolRef for &PoolInner {
    #[inline(always)]
    fn pool_inner(&self) -> &PoolInner {
        self
    }
}

impl PoolRef for Arc<BufferPool> {
    #[inline(always)]
    fn pool_inner(&self) -> &PoolInner {
        self.inner()
    }
}

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
pub struct PooledBuf<'a> {
    pool: &'a PoolInner,
    buf: ManuallyDrop<Loan>,
    home: Home<Buf>,
    /// The bucket the buffer came from, or `OVERSIZE`; marked `GROWN` once
    /// the buffer has grown.
    origin: u32,
}

/// A byte buffer on loan from a [`BufferPool`] in an `Arc`: `'static`, so it
/// can move into threads and tasks. Returns to the pool when dropped.
///
/// Made by [`BufferPool::acquire_owned`]; otherwise the same as
/// [`PooledBuf`], with the same traits and comparisons. The buffer keeps the
/// pool alive. With the `bytes` feature,
/// `into_bytes` turns it into a `bytes::Bytes` without copying, whose last
/// clone returns the memory to the pool.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use recycler_core::buffer::{BufferPool, OwnedPooledBuf};
///
/// let pool = Arc::new(BufferPool::new());
/// let mut buf: OwnedPooledBuf = pool.acquire_owned(100);
/// let task = std::thread::spawn(move || {
///     buf.extend_from_slice(b"moved");
///     buf.len()
/// });
/// assert_eq!(task.join().unwrap(), 5);
/// ```
pub struct OwnedPooledBuf {
    pool: Arc<BufferPool>,
    buf: ManuallyDrop<Loan>,
    home: Home<Buf>,
    origin: u32,
}

// SAFETY: the guard owns its buffer (`Buf: Send`); `&PoolInner` is shared
// state that is `Sync` (atomics, locks, channels, and caches touched only by
// their owner thread); `home` is an address the release path uses from any
// thread (it checks the owner before touching the cache).
unsafe impl Send for PooledBuf<'_> {}
// SAFETY: through `&PooledBuf` only `&[u8]` and lengths are reachable;
// release needs `&mut` (drop).
unsafe impl Sync for PooledBuf<'_> {}
// SAFETY: as for `PooledBuf`; `Arc<BufferPool>` is `Send + Sync`.
unsafe impl Send for OwnedPooledBuf {}
// SAFETY: as for `PooledBuf`.
unsafe impl Sync for OwnedPooledBuf {}

impl<'a> PooledBuf<'a> {
    /// A guard of `buf`, just taken from `pool` (recorded with the caller of
    /// the `#[track_caller]` acquire that took it, with feature `track`).
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn new(pool: &'a PoolInner, buf: Box<Buf>, home: Home<Buf>, origin: u32) -> Self {
        #[cfg(feature = "track")]
        pool.track(&buf, std::panic::Location::caller());
        Self::untracked(pool, buf, home, origin)
    }

    /// A guard of `buf`, which the caller has tracked (feature `track`).
    #[inline(always)]
    pub(crate) fn untracked(
        pool: &'a PoolInner,
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

impl OwnedPooledBuf {
    /// A guard of `buf`, which the caller has tracked (feature `track`): a
    /// `PooledBuf` taken apart keeps its record.
    pub(crate) fn new(pool: Arc<BufferPool>, buf: Box<Buf>, home: Home<Buf>, origin: u32) -> Self {
        Self {
            pool,
            buf: ManuallyDrop::new(Loan::new(buf)),
            home,
            origin,
        }
    }
}

/// Makes room for `additional` more bytes, or says why not. `origin` is the
/// guard's, marked [`GROWN`] if the buffer grows.
#[inline]
fn try_reserve(
    pool: &PoolInner,
    loan: &mut Loan,
    origin: &mut u32,
    additional: usize,
) -> Result<(), AcquireError> {
    if loan.capacity() - loan.len() >= additional {
        return Ok(());
    }
    let len = loan.len();
    let grown = grow(pool, loan.buf_mut(), len, *origin, additional);
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
fn grow(
    pool: &PoolInner,
    buf: &mut Buf,
    len: usize,
    origin: u32,
    additional: usize,
) -> Result<u32, AcquireError> {
    // `len + additional` overflowing is one more size no buffer can have:
    // the same error, with `requested` saturated.
    let needed = len.checked_add(additional).ok_or(AcquireError::TooLarge {
        requested: usize::MAX,
        max: AlignedBuf::max_capacity(buf.alignment()),
    })?;
    // SAFETY: `len` is the loan's length: within the capacity, initialized.
    unsafe { buf.set_len(len) };
    pool.grow(buf, needed)?;
    // The release sees at once that the buffer left its bucket's capacity.
    Ok(origin | GROWN)
}

/// Makes room for `additional` more bytes, or panics as `Vec` does.
#[inline]
fn reserve(pool: &PoolInner, loan: &mut Loan, origin: &mut u32, additional: usize) {
    if loan.capacity() - loan.len() < additional {
        let len = loan.len();
        *origin = grow_or_panic(pool, loan.buf_mut(), len, *origin, additional);
        loan.refresh();
    }
}

#[cold]
#[inline(never)]
#[track_caller]
fn grow_or_panic(
    pool: &PoolInner,
    buf: &mut Buf,
    len: usize,
    origin: u32,
    additional: usize,
) -> u32 {
    match grow(pool, buf, len, origin, additional) {
        Ok(origin) => origin,
        Err(err) => panic!("pooled buffer cannot grow: {err}"),
    }
}

/// The Vec-like API and the trait impls, for both guards. `$head` is the
/// doc examples' setup and `$acquire` the expression that gets a buffer.
macro_rules! buf_api {
    ($ty:ty, $name:literal, $head:literal, $acquire:literal) => {
        impl $ty {
            /// Bytes written.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend_from_slice(b\"abc\");\nassert_eq!(buf.len(), 3);\n```")]
            #[inline]
            pub fn len(&self) -> usize {
                self.buf.len()
            }

            /// Whether nothing is written.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nassert!(buf.is_empty());\nbuf.push(1);\nassert!(!buf.is_empty());\n```")]
            #[inline]
            pub fn is_empty(&self) -> bool {
                self.buf.len() == 0
            }

            /// Bytes the buffer holds without growing: at least what was
            /// asked for, rounded up to the bucket.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nassert_eq!(buf.capacity(), 4096);\nbuf.extend_from_slice(&[0; 5000]);\nassert_eq!(buf.capacity(), 8192);\n```")]
            #[inline]
            pub fn capacity(&self) -> usize {
                self.buf.capacity()
            }

            /// The first byte (aligned to the pool's `alignment`).
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.push(9);\n// SAFETY: one byte is written.\nassert_eq!(unsafe { *buf.as_ptr() }, 9);\n```")]
            #[inline]
            pub fn as_ptr(&self) -> *const u8 {
                self.buf.as_ptr()
            }

            /// The first byte, for writing (for example by a system call
            /// that fills the buffer; then [`set_len`](Self::set_len)).
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nlet p = buf.as_mut_ptr();\n// SAFETY: the capacity is at least 2; both bytes are written before\n// the length covers them.\nunsafe {\n    p.write(1);\n    p.add(1).write(2);\n    buf.set_len(2);\n}\nassert_eq!(&buf[..], [1, 2]);\n```")]
            #[inline]
            pub fn as_mut_ptr(&mut self) -> *mut u8 {
                self.buf.as_mut_ptr()
            }

            /// Forgets what was written; keeps the capacity.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend_from_slice(b\"abc\");\nbuf.clear();\nassert!(buf.is_empty());\nassert_eq!(buf.capacity(), 4096);\n```")]
            #[inline]
            pub fn clear(&mut self) {
                self.buf.truncate(0);
            }

            /// Keeps the first `len` bytes written; does nothing if fewer are.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend_from_slice(b\"abcdef\");\nbuf.truncate(2);\nassert_eq!(&buf[..], b\"ab\");\nbuf.truncate(10);\nassert_eq!(&buf[..], b\"ab\");\n```")]
            #[inline]
            pub fn truncate(&mut self, len: usize) {
                self.buf.truncate(len);
            }

            /// Appends a byte, growing the buffer like a `Vec` if it is full.
            ///
            /// # Panics
            ///
            /// If the buffer must grow and cannot: at the pool's
            /// `memory_limit`, if the allocator fails, or past the largest
            /// capacity possible (`isize::MAX` bytes less the alignment, as
            /// `Vec` panics on a capacity overflow); the message is
            /// [`try_reserve`](Self::try_reserve)'s error, with the numbers
            /// (use `try_reserve` first to handle it). The buffer is
            /// unchanged then.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.push(b'x');\nassert_eq!(&buf[..], b\"x\");\n```")]
            #[inline]
            pub fn push(&mut self, byte: u8) {
                reserve(self.pool.pool_inner(), &mut self.buf, &mut self.origin, 1);
                self.buf.fill_within_capacity(byte, 1);
            }

            /// Appends `bytes`, growing the buffer like a `Vec` if need be.
            ///
            /// # Panics
            ///
            /// As [`push`](Self::push).
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend_from_slice(b\"hello, \");\nbuf.extend_from_slice(b\"world\");\nassert_eq!(&buf[..], b\"hello, world\");\n```")]
            #[inline]
            pub fn extend_from_slice(&mut self, bytes: &[u8]) {
                reserve(self.pool.pool_inner(), &mut self.buf, &mut self.origin, bytes.len());
                self.buf.append_within_capacity(bytes);
            }

            /// Sets the written length to `new_len`: fills the new bytes with
            /// `value`, or truncates.
            ///
            /// # Panics
            ///
            /// As [`push`](Self::push).
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.resize(3, 0xAB);\nassert_eq!(&buf[..], [0xAB; 3]);\nbuf.resize(1, 0);\nassert_eq!(&buf[..], [0xAB]);\n```")]
            #[inline]
            pub fn resize(&mut self, new_len: usize, value: u8) {
                let len = self.buf.len();
                if new_len <= len {
                    self.buf.truncate(new_len);
                } else {
                    reserve(self.pool.pool_inner(), &mut self.buf, &mut self.origin, new_len - len);
                    self.buf.fill_within_capacity(value, new_len - len);
                }
            }

            /// Makes room for at least `additional` more bytes.
            ///
            /// # Panics
            ///
            /// As [`push`](Self::push).
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.reserve(10_000);\nassert!(buf.capacity() >= 10_000);\n```")]
            #[inline]
            pub fn reserve(&mut self, additional: usize) {
                reserve(self.pool.pool_inner(), &mut self.buf, &mut self.origin, additional);
            }

            /// Makes room for at least `additional` more bytes, or says why it
            /// cannot; the buffer is unchanged then. Growth doubles the
            /// capacity (at least), rounded up to a bucket while it fits in
            /// `max_capacity`, and counts against the pool's `memory_limit`.
            ///
            /// # Errors
            ///
            /// [`AcquireError::LimitExceeded`] at the memory limit,
            /// [`AcquireError::TooLarge`] if `len() + additional` passes the
            /// largest capacity possible (`isize::MAX` bytes less the
            /// alignment; `requested` is that sum, or `usize::MAX` if it
            /// overflows), [`AcquireError::AllocFailed`] if the allocator
            /// fails.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nassert!(buf.try_reserve(100).is_ok());\nassert!(buf.try_reserve(usize::MAX).is_err());\n```")]
            pub fn try_reserve(&mut self, additional: usize) -> Result<(), AcquireError> {
                try_reserve(self.pool.pool_inner(), &mut self.buf, &mut self.origin, additional)
            }

            /// The bytes after the written part, up to the capacity, to be
            /// filled (by a read from a socket, say) before
            /// [`set_len`](Self::set_len) makes them part of the buffer.
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nlet received = b\"from a socket\";\nlet spare = buf.spare_capacity_mut();\nfor (dst, &src) in spare.iter_mut().zip(received) {\n    dst.write(src);\n}\n// SAFETY: the first `received.len()` spare bytes were just written.\nunsafe { buf.set_len(received.len()) };\nassert_eq!(&buf[..], b\"from a socket\");\n```")]
            #[inline]
            pub fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<u8>] {
                self.buf.spare_capacity_mut()
            }

            /// Sets the written length without writing anything.
            ///
            /// # Safety
            ///
            /// `new_len <= capacity()`, and the first `new_len` bytes are
            /// initialized: already written, or written through
            /// [`spare_capacity_mut`](Self::spare_capacity_mut) or
            /// [`as_mut_ptr`](Self::as_mut_ptr).
            ///
            /// # Examples
            ///
            #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.spare_capacity_mut()[0].write(42);\n// SAFETY: within the capacity, and the first byte was just written.\nunsafe { buf.set_len(1) };\nassert_eq!(&buf[..], [42]);\n```")]
            #[inline]
            pub unsafe fn set_len(&mut self, new_len: usize) {
                assert!(
                    new_len <= self.buf.capacity(),
                    "set_len({new_len}) beyond the capacity ({})",
                    self.buf.capacity()
                );
                // SAFETY: within the capacity (checked), and the caller
                // guarantees the bytes are initialized.
                unsafe { self.buf.set_len(new_len) };
            }
        }

        impl Drop for $ty {
            #[inline]
            fn drop(&mut self) {
                // SAFETY: `drop` runs once, and the guards' `into_parts`
                // forgets the guard, so the buffer is taken exactly once.
                let buf = unsafe { ManuallyDrop::take(&mut self.buf) };
                let buf = buf.into_buf();
                #[cfg(feature = "track")]
                self.pool.pool_inner().untrack(&buf);
                self.pool.pool_inner().release_parts(buf, self.home, self.origin);
            }
        }

        impl Deref for $ty {
            type Target = [u8];

            #[inline]
            fn deref(&self) -> &[u8] {
                self.buf.as_slice()
            }
        }

        impl DerefMut for $ty {
            #[inline]
            fn deref_mut(&mut self) -> &mut [u8] {
                self.buf.as_mut_slice()
            }
        }

        impl AsRef<[u8]> for $ty {
            #[inline]
            fn as_ref(&self) -> &[u8] {
                self.buf.as_slice()
            }
        }

        impl AsMut<[u8]> for $ty {
            #[inline]
            fn as_mut(&mut self) -> &mut [u8] {
                self.buf.as_mut_slice()
            }
        }

        /// The bytes written. The buffer compares, orders and hashes as
        /// them, as a `Vec<u8>` does, so a set or map of buffers is searched
        /// by `&[u8]`.
        ///
        /// # Examples
        ///
        #[doc = concat!("```\nuse std::collections::HashSet;\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend_from_slice(b\"key\");\nlet set = HashSet::from([buf]);\nassert!(set.contains(&b\"key\"[..]));\nassert!(!set.contains(&b\"other\"[..]));\n```")]
        impl Borrow<[u8]> for $ty {
            #[inline]
            fn borrow(&self) -> &[u8] {
                self.buf.as_slice()
            }
        }

        /// The bytes written, mutably.
        ///
        /// # Examples
        ///
        #[doc = concat!("```\nuse std::borrow::BorrowMut;\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend_from_slice(b\"abc\");\nlet bytes: &mut [u8] = buf.borrow_mut();\nbytes.make_ascii_uppercase();\nassert_eq!(buf, *b\"ABC\");\n```")]
        impl BorrowMut<[u8]> for $ty {
            #[inline]
            fn borrow_mut(&mut self) -> &mut [u8] {
                self.buf.as_mut_slice()
            }
        }

        /// Byte equality is an equivalence; capacity plays no part.
        ///
        /// # Examples
        ///
        #[doc = concat!("```\n", $head, "\nfn same<E: Eq>(a: &E, b: &E) -> bool {\n    a == b\n}\n\nlet (mut a, mut b) = (", $acquire, ", ", $acquire, ");\na.push(1);\nb.reserve(10_000);\nb.push(1);\nassert!(same(&a, &b));\n```")]
        impl Eq for $ty {}

        /// Buffers order as their bytes do (lexicographically), as `Vec<u8>`.
        ///
        /// # Examples
        ///
        #[doc = concat!("```\n", $head, "\nlet (mut a, mut b) = (", $acquire, ", ", $acquire, ");\na.extend_from_slice(b\"ab\");\nb.extend_from_slice(b\"b\");\nassert!(a < b);\n```")]
        impl PartialOrd for $ty {
            #[inline]
            fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                Some(Ord::cmp(self, other))
            }
        }

        /// Buffers order as their bytes do (lexicographically), as `Vec<u8>`.
        ///
        /// # Examples
        ///
        #[doc = concat!("```\n", $head, "\nlet (mut a, mut b) = (", $acquire, ", ", $acquire, ");\na.extend_from_slice(b\"ab\");\nb.extend_from_slice(b\"b\");\nassert_eq!(a.cmp(&b), std::cmp::Ordering::Less);\n```")]
        impl Ord for $ty {
            #[inline]
            fn cmp(&self, other: &Self) -> Ordering {
                Ord::cmp(self.buf.as_slice(), other.buf.as_slice())
            }
        }

        /// Hashes the bytes written exactly as hashing the `[u8]` (or a
        /// `Vec<u8>` of them) does, which [`Borrow<[u8]>`](Borrow) requires.
        ///
        /// # Examples
        ///
        #[doc = concat!("```\nuse std::hash::{BuildHasher, RandomState};\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend_from_slice(b\"abc\");\nlet hasher = RandomState::new();\nassert_eq!(hasher.hash_one(&buf), hasher.hash_one(&b\"abc\"[..]));\nassert_eq!(hasher.hash_one(&buf), hasher.hash_one(b\"abc\".to_vec()));\n```")]
        impl Hash for $ty {
            #[inline]
            fn hash<H: Hasher>(&self, state: &mut H) {
                Hash::hash(self.buf.as_slice(), state);
            }
        }

        /// Appends the bytes, growing the buffer as
        /// [`extend_from_slice`](Self::extend_from_slice) does: by the
        /// iterator's lower size bound at once, then as it needs.
        ///
        /// # Panics
        ///
        /// As [`push`](Self::push), if the buffer must grow and cannot.
        ///
        /// # Examples
        ///
        #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend(b'a'..=b'e');\nbuf.extend(\"xyz\".bytes().rev());\nassert_eq!(buf, *b\"abcdezyx\");\n```")]
        impl Extend<u8> for $ty {
            #[inline]
            fn extend<I: IntoIterator<Item = u8>>(&mut self, iter: I) {
                let iter = iter.into_iter();
                self.reserve(iter.size_hint().0);
                for byte in iter {
                    self.push(byte);
                }
            }
        }

        /// Appends copies of the bytes, as `Extend<u8>`.
        ///
        /// # Panics
        ///
        /// As [`push`](Self::push), if the buffer must grow and cannot.
        ///
        /// # Examples
        ///
        #[doc = concat!("```\n", $head, "\nlet mut buf = ", $acquire, ";\nbuf.extend(b\"hello\");\nbuf.extend(&[b'!'; 2]);\nassert_eq!(buf, b\"hello!!\");\n```")]
        impl<'b> Extend<&'b u8> for $ty {
            #[inline]
            fn extend<I: IntoIterator<Item = &'b u8>>(&mut self, iter: I) {
                Extend::<u8>::extend(self, iter.into_iter().copied());
            }
        }

        impl io::Write for $ty {
            /// Appends all of `bytes`, growing the buffer if need be; an
            /// error of kind `OutOfMemory` if it cannot grow.
            #[inline]
            fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
                try_reserve(self.pool.pool_inner(), &mut self.buf, &mut self.origin, bytes.len())
                    .map_err(|err| io::Error::new(io::ErrorKind::OutOfMemory, err))?;
                self.buf.append_within_capacity(bytes);
                Ok(bytes.len())
            }

            #[inline]
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }

        impl fmt::Debug for $ty {
            /// Length and capacity; never the contents.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct($name)
                    .field("len", &self.buf.len())
                    .field("capacity", &self.buf.capacity())
                    .finish_non_exhaustive()
            }
        }
    };
}

buf_api!(
    PooledBuf<'_>,
    "PooledBuf",
    "use recycler_core::buffer::BufferPool;\n\nlet pool = BufferPool::new();",
    "pool.acquire(16)"
);

buf_api!(
    OwnedPooledBuf,
    "OwnedPooledBuf",
    "use std::sync::Arc;\nuse recycler_core::buffer::BufferPool;\n\nlet pool = Arc::new(BufferPool::new());",
    "pool.acquire_owned(16)"
);

/// `PartialEq` between a buffer and the byte containers `Vec<u8>` compares
/// with (both ways), and between the two buffer types: the bytes written
/// are compared, never the capacity (see the example on [`PooledBuf`]).
/// `[$($gen)*] $lhs, $rhs` writes `impl<$($gen)*> PartialEq<$rhs> for $lhs`.
macro_rules! buf_eq {
    ($([$($gen:tt)*] $lhs:ty, $rhs:ty;)*) => {$(
        /// Compares the bytes written, as `Vec<u8>` does; capacity plays no
        /// part.
        impl<$($gen)*> PartialEq<$rhs> for $lhs {
            #[inline]
            fn eq(&self, other: &$rhs) -> bool {
                self[..] == other[..]
            }
        }
    )*};
}

/// Each buffer type against the byte containers, both ways.
macro_rules! buf_eq_bytes {
    ($($ty:ty),*) => {$(
        buf_eq! {
            [] $ty, [u8];
            [] [u8], $ty;
            [] $ty, &[u8];
            [] &[u8], $ty;
            [] $ty, &mut [u8];
            [] &mut [u8], $ty;
            [const N: usize] $ty, [u8; N];
            [const N: usize] [u8; N], $ty;
            [const N: usize] $ty, &[u8; N];
            [const N: usize] &[u8; N], $ty;
            [] $ty, Vec<u8>;
            [] Vec<u8>, $ty;
            [] $ty, Cow<'_, [u8]>;
            [] Cow<'_, [u8]>, $ty;
        }
    )*};
}

buf_eq_bytes!(PooledBuf<'_>, OwnedPooledBuf);

buf_eq! {
    [] PooledBuf<'_>, PooledBuf<'_>;
    [] OwnedPooledBuf, OwnedPooledBuf;
    [] PooledBuf<'_>, OwnedPooledBuf;
    [] OwnedPooledBuf, PooledBuf<'_>;
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use static_assertions::{assert_impl_all, const_assert};
    use std::io::Write;
    use std::mem::size_of;

    assert_impl_all!(PooledBuf<'static>: Send, Sync);
    assert_impl_all!(OwnedPooledBuf: Send, Sync);
    // The pool, the buffer's box, its pointer, length and capacity (the
    // loan), its home and its origin: seven words, moved like a `Vec` and a
    // little more.
    const_assert!(size_of::<PooledBuf<'static>>() <= 7 * size_of::<usize>());

    #[test]
    fn vec_like() {
        let pool = BufferPool::new();
        let mut b = pool.acquire(4);
        b.push(1);
        b.extend_from_slice(&[2, 3, 4]);
        b.resize(6, 9);
        assert_eq!(&b[..], [1, 2, 3, 4, 9, 9]);
        b[0] = 0;
        b.truncate(2);
        assert_eq!(&b[..], [0, 2]);
        b.write_all(b"xyz").unwrap();
        assert_eq!(&b[..], b"\0\x02xyz");
        assert_eq!(b.spare_capacity_mut().len(), 4096 - 5);
        b.clear();
        assert!(b.is_empty());
    }

    #[test]
    fn writing_past_capacity_grows_like_a_vec() {
        let pool = BufferPool::new();
        let mut b = pool.acquire(4096);
        let data: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
        for chunk in data.chunks(3000) {
            b.extend_from_slice(chunk);
        }
        assert_eq!(&b[..], &data[..]);
        assert_eq!(b.capacity(), 32768, "4 KiB doubled three times");
    }

    #[test]
    fn limit_stops_growth_with_a_typed_error() {
        let pool = BufferPool::builder().memory_limit(8192).build().unwrap();
        let mut b = pool.acquire(4096);
        b.resize(4096, 1);
        assert!(b.try_reserve(4096).is_ok());
        assert_eq!(b.capacity(), 8192);
        b.resize(8192, 2);
        let err = b.try_reserve(1).unwrap_err();
        assert!(matches!(err, AcquireError::LimitExceeded { .. }), "{err}");
        let io_err = b.write(b"x").unwrap_err();
        assert_eq!(io_err.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(b.len(), 8192, "unchanged");
        assert!(b[..4096].iter().all(|&x| x == 1));
    }

    #[test]
    #[should_panic(expected = "pooled buffer cannot grow: `memory_limit` exceeded")]
    fn push_past_the_limit_panics_like_vec() {
        let pool = BufferPool::builder().memory_limit(4096).build().unwrap();
        let mut b = pool.acquire(4096);
        b.resize(4096, 0);
        b.push(1);
    }

    #[test]
    fn overflowing_reserves_are_typed_errors_with_the_numbers() {
        for align in [1, 4096] {
            let pool = BufferPool::builder().alignment(align).build().unwrap();
            let max = isize::MAX as usize - (align - 1);
            for len in [0, 1, 4096] {
                let mut b = pool.acquire(1);
                b.resize(len, 7);
                // `len + additional` is `usize::MAX` or overflows (then
                // `requested` saturates).
                for additional in [usize::MAX, (usize::MAX - len).saturating_add(1)] {
                    assert_eq!(
                        b.try_reserve(additional),
                        Err(AcquireError::TooLarge {
                            requested: usize::MAX,
                            max
                        }),
                        "align {align}, len {len}, additional {additional}"
                    );
                }
                // No overflow, past the largest capacity.
                assert_eq!(
                    b.try_reserve(max - len + 1),
                    Err(AcquireError::TooLarge {
                        requested: max + 1,
                        max
                    }),
                    "align {align}, len {len}"
                );
                assert_eq!((b.len(), b.capacity()), (len, 4096), "unchanged");
                assert!(b.iter().all(|&x| x == 7));
            }
        }
    }

    #[test]
    #[should_panic(expected = "set_len(4097) beyond the capacity (4096)")]
    fn set_len_checks_the_capacity() {
        let pool = BufferPool::new();
        let mut b = pool.acquire(1);
        // SAFETY: not reached: `set_len` panics first.
        unsafe { b.set_len(4097) };
    }
}
