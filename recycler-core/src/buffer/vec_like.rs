//! The Vec-like API of both guards, written once by `buf_api!`; their
//! trait impls (`Drop`, `Deref`, `AsRef`, `Borrow`, `Extend`, `io::Write`,
//! comparisons, `Debug`) are in [`traits`].

use std::mem::{ManuallyDrop, MaybeUninit};

use super::grow::{reserve, try_reserve};
use super::guard::PooledBuf;
use super::owned::OwnedPooledBuf;
use super::pool::PoolRef;
use super::wait::WaitToGrow;
use crate::error::AcquireError;
use crate::guard_docs::guard_docs;

/// The Vec-like API and the trait impls, for both guards. `$ty` is the
/// guard, `$name` its name, and `$kind` says which of the two it is, for
/// `guard_docs!`.
macro_rules! buf_api {
    ($kind:ident $ty:ty, $name:literal) => {
        impl $ty {
            guard_docs! {$kind
                /// Bytes written.
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.extend_from_slice(b"abc");
                /// assert_eq!(buf.len(), 3);
                /// ```
                owned:
                /// As for [`PooledBuf::len`]: bytes written.
                item:
                #[inline]
                pub fn len(&self) -> usize {
                    self.buf.len()
                }
            }

            guard_docs! {$kind
                /// Whether nothing is written.
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// assert!(buf.is_empty());
                /// buf.push(1);
                /// assert!(!buf.is_empty());
                /// ```
                owned:
                /// As for [`PooledBuf::is_empty`]: whether nothing is written.
                item:
                #[inline]
                pub fn is_empty(&self) -> bool {
                    self.buf.len() == 0
                }
            }

            guard_docs! {$kind
                /// Bytes the buffer holds without growing: at least what was
                /// asked for, rounded up to the bucket.
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// assert_eq!(buf.capacity(), 4096);
                /// buf.extend_from_slice(&[0; 5000]);
                /// assert_eq!(buf.capacity(), 8192);
                /// ```
                owned:
                /// As for [`PooledBuf::capacity`]: bytes the buffer holds
                /// without growing.
                item:
                #[inline]
                pub fn capacity(&self) -> usize {
                    self.buf.capacity()
                }
            }

            guard_docs! {$kind
                /// The first byte (aligned to the pool's `alignment`).
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.push(9);
                /// // SAFETY: one byte is written.
                /// assert_eq!(unsafe { *buf.as_ptr() }, 9);
                /// ```
                owned:
                /// As for [`PooledBuf::as_ptr`]: the first byte.
                item:
                #[inline]
                pub fn as_ptr(&self) -> *const u8 {
                    self.buf.as_ptr()
                }
            }

            guard_docs! {$kind
                /// The first byte, for writing (for example by a system call
                /// that fills the buffer; then [`set_len`](Self::set_len)).
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// let p = buf.as_mut_ptr();
                /// // SAFETY: the capacity is at least 2; both bytes are written before
                /// // the length covers them.
                /// unsafe {
                ///     p.write(1);
                ///     p.add(1).write(2);
                ///     buf.set_len(2);
                /// }
                /// assert_eq!(&buf[..], [1, 2]);
                /// ```
                owned:
                /// As for [`PooledBuf::as_mut_ptr`]: the first byte, for
                /// writing.
                item:
                #[inline]
                pub fn as_mut_ptr(&mut self) -> *mut u8 {
                    self.buf.as_mut_ptr()
                }
            }

            guard_docs! {$kind
                /// Forgets what was written; keeps the capacity.
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.extend_from_slice(b"abc");
                /// buf.clear();
                /// assert!(buf.is_empty());
                /// assert_eq!(buf.capacity(), 4096);
                /// ```
                owned:
                /// As for [`PooledBuf::clear`]: forgets what was written; keeps
                /// the capacity.
                item:
                #[inline]
                pub fn clear(&mut self) {
                    self.buf.truncate(0);
                }
            }

            guard_docs! {$kind
                /// Keeps the first `len` bytes written; does nothing if fewer are.
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.extend_from_slice(b"abcdef");
                /// buf.truncate(2);
                /// assert_eq!(&buf[..], b"ab");
                /// buf.truncate(10);
                /// assert_eq!(&buf[..], b"ab");
                /// ```
                owned:
                /// As for [`PooledBuf::truncate`]: keeps the first `len` bytes
                /// written.
                item:
                #[inline]
                pub fn truncate(&mut self, len: usize) {
                    self.buf.truncate(len);
                }
            }

            guard_docs! {$kind
                /// Appends a byte, growing the buffer like a `Vec` if it is full.
                ///
                /// Never panics at the pool's `memory_limit`: a growth the limit
                /// has no room for, even after freeing the idle buffers this
                /// thread can reach, is served outside it, as an overdraft
                /// (counted in
                /// [`BufferPoolStats::overdrafts`](crate::buffer::BufferPoolStats::overdrafts);
                /// the buffer is then freed, not pooled, when released). Use
                /// [`try_reserve`](Self::try_reserve) or
                /// [`reserve_async`](Self::reserve_async) first to fail or wait
                /// at the limit instead.
                ///
                /// # Panics
                ///
                /// As `Vec` does, only if the buffer must grow and cannot
                /// exist: if the allocator fails, or past the largest capacity
                /// possible (`isize::MAX` bytes less the alignment); the message
                /// is [`try_reserve`](Self::try_reserve)'s error, with the
                /// numbers. The buffer is unchanged then.
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.push(b'x');
                /// assert_eq!(&buf[..], b"x");
                /// ```
                owned:
                /// As for [`PooledBuf::push`]: appends a byte, growing the
                /// buffer like a `Vec` if it is full.
                item:
                #[inline]
                pub fn push(&mut self, byte: u8) {
                    reserve(self.pool.pool_shared(), &mut self.buf, &mut self.origin, 1);
                    self.buf.fill_within_capacity(byte, 1);
                }
            }

            guard_docs! {$kind
                /// Appends `bytes`, growing the buffer like a `Vec` if need be.
                ///
                /// # Panics
                ///
                /// As [`push`](Self::push).
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.extend_from_slice(b"hello, ");
                /// buf.extend_from_slice(b"world");
                /// assert_eq!(&buf[..], b"hello, world");
                /// ```
                owned:
                /// As for [`PooledBuf::extend_from_slice`]: appends `bytes`,
                /// growing the buffer like a `Vec` if need be.
                item:
                #[inline]
                pub fn extend_from_slice(&mut self, bytes: &[u8]) {
                    reserve(self.pool.pool_shared(), &mut self.buf, &mut self.origin, bytes.len());
                    self.buf.append_within_capacity(bytes);
                }
            }

            guard_docs! {$kind
                /// Sets the written length to `new_len`: fills the new bytes with
                /// `value`, or truncates.
                ///
                /// # Panics
                ///
                /// As [`push`](Self::push).
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.resize(3, 0xAB);
                /// assert_eq!(&buf[..], [0xAB; 3]);
                /// buf.resize(1, 0);
                /// assert_eq!(&buf[..], [0xAB]);
                /// ```
                owned:
                /// As for [`PooledBuf::resize`]: sets the written length to
                /// `new_len`, filling the new bytes with `value`, or truncates.
                item:
                #[inline]
                pub fn resize(&mut self, new_len: usize, value: u8) {
                    let len = self.buf.len();
                    if new_len <= len {
                        self.buf.truncate(new_len);
                    } else {
                        reserve(
                            self.pool.pool_shared(),
                            &mut self.buf,
                            &mut self.origin,
                            new_len - len,
                        );
                        self.buf.fill_within_capacity(value, new_len - len);
                    }
                }
            }

            guard_docs! {$kind
                /// Makes room for at least `additional` more bytes.
                ///
                /// # Panics
                ///
                /// As [`push`](Self::push).
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.reserve(10_000);
                /// assert!(buf.capacity() >= 10_000);
                /// ```
                owned:
                /// As for [`PooledBuf::reserve`]: makes room for at least
                /// `additional` more bytes.
                item:
                #[inline]
                pub fn reserve(&mut self, additional: usize) {
                    reserve(self.pool.pool_shared(), &mut self.buf, &mut self.origin, additional);
                }
            }

            guard_docs! {$kind
                /// Makes room for at least `additional` more bytes, or says why it
                /// cannot; the buffer is unchanged then. Growth doubles the
                /// capacity (at least), rounded up to a bucket while it fits in
                /// `max_capacity`, and counts against the pool's `memory_limit`,
                /// which is hard here: never an overdraft, unlike
                /// [`reserve`](Self::reserve).
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
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// assert!(buf.try_reserve(100).is_ok());
                /// assert!(buf.try_reserve(usize::MAX).is_err());
                /// ```
                owned:
                /// As for [`PooledBuf::try_reserve`]: makes room for at least
                /// `additional` more bytes, or says why it cannot.
                item:
                pub fn try_reserve(&mut self, additional: usize) -> Result<(), AcquireError> {
                    try_reserve(
                        self.pool.pool_shared(),
                        &mut self.buf,
                        &mut self.origin,
                        additional,
                        false,
                    )
                }
            }

            guard_docs! {$kind
                /// Makes room for at least `additional` more bytes, waiting
                /// without blocking at the pool's `memory_limit` until memory
                /// is freed for the growth: what
                /// [`acquire_async`](crate::buffer::BufferPool::acquire_async)
                /// is to an acquire. Never an overdraft.
                ///
                /// It tries as [`try_reserve`](Self::try_reserve) does first
                /// (while nobody waits); at the limit it joins the pool's queue
                /// of waiters (in order, each as soon as it fits, with the
                /// acquires that wait) for the bytes the growth adds, frees the idle buffers
                /// it can reach, and returns `Pending` until a free makes room.
                /// Without a limit it never waits. The wait is counted in the
                /// [statistics](crate::buffer::BucketStats::waits) of the bucket
                /// of the capacity it grows to.
                ///
                /// # Errors
                ///
                /// At once: [`AcquireError::TooLarge`] for a size no buffer can
                /// have, [`AcquireError::LimitExceeded`] if the capacity the
                /// buffer would grow to is larger than the limit (no wait could
                /// end: the buffer keeps its own bytes while it waits; `needed`
                /// is then that capacity);
                /// [`AcquireError::AllocFailed`] if the allocator fails.
                ///
                /// # Cancel safety
                ///
                /// Dropped before it completes, the future leaves the queue,
                /// the buffer unchanged; memory granted to it goes to the
                /// next waiter. Safe in `tokio::time::timeout` and `select!`.
                ///
                /// The buffer stays held while it waits: if the limit is full
                /// of buffers whose holders all wait to grow them, none is
                /// served. Give such waits a timeout, or acquire the whole size
                /// up front.
                ///
                /// # Examples
                ///
                /// ```
                /// use std::future::Future;
                /// use std::pin::pin;
                /// use std::sync::Arc;
                /// use std::task::{Context, Poll, Waker};
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = Arc::new(BufferPool::builder().memory_limit(16 * 1024).build()?);
                /// let mut buf = pool.acquire(4096);
                /// let held = pool.acquire_owned(12 * 1024); // the rest of the limit
                /// let mut cx = Context::from_waker(Waker::noop());
                /// {
                ///     let mut grow = pin!(buf.reserve_async(5000)); // to 8 KiB: 4 KiB more
                ///     assert!(grow.as_mut().poll(&mut cx).is_pending()); // it waits
                ///     assert_eq!(pool.stats().buckets[1].waiting, 1);
                ///     std::thread::spawn(move || drop(held)).join().unwrap();
                ///     assert!(matches!(grow.as_mut().poll(&mut cx), Poll::Ready(Ok(()))));
                /// }
                /// assert_eq!(buf.capacity(), 8192);
                /// let s = pool.stats();
                /// assert_eq!((s.buckets[1].waits, s.overdrafts), (1, 0)); // waited, no overdraft
                /// # Ok::<(), recycler_core::ConfigError>(())
                /// ```
                owned:
                /// As for [`PooledBuf::reserve_async`]: makes room for at least
                /// `additional` more bytes, waiting without blocking at the pool's
                /// `memory_limit` until memory is freed for the growth.
                item:
                pub fn reserve_async(
                    &mut self,
                    additional: usize,
                ) -> impl std::future::Future<Output = Result<(), AcquireError>> + Send + '_ {
                    let pool = self.pool.pool_shared();
                    WaitToGrow::new(
                        pool,
                        &mut self.buf,
                        &mut self.origin,
                        additional,
                    )
                }
            }

            guard_docs! {$kind
                /// The bytes after the written part, up to the capacity, to be
                /// filled (by a read from a socket, say) before
                /// [`set_len`](Self::set_len) makes them part of the buffer.
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// let received = b"from a socket";
                /// let spare = buf.spare_capacity_mut();
                /// for (dst, &src) in spare.iter_mut().zip(received) {
                ///     dst.write(src);
                /// }
                /// // SAFETY: the first `received.len()` spare bytes were just written.
                /// unsafe { buf.set_len(received.len()) };
                /// assert_eq!(&buf[..], b"from a socket");
                /// ```
                owned:
                /// As for [`PooledBuf::spare_capacity_mut`]: the bytes after
                /// the written part, up to the capacity.
                item:
                #[inline]
                pub fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<u8>] {
                    self.buf.spare_capacity_mut()
                }
            }

            guard_docs! {$kind
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
                /// ```
                /// use recycler_core::buffer::BufferPool;
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.spare_capacity_mut()[0].write(42);
                /// // SAFETY: within the capacity, and the first byte was just written.
                /// unsafe { buf.set_len(1) };
                /// assert_eq!(&buf[..], [42]);
                /// ```
                owned:
                /// As for [`PooledBuf::set_len`]: sets the written length
                /// without writing anything.
                ///
                /// # Safety
                ///
                /// `new_len <= capacity()`, and the first `new_len` bytes are
                /// initialized: already written, or written through
                /// [`spare_capacity_mut`](Self::spare_capacity_mut) or
                /// [`as_mut_ptr`](Self::as_mut_ptr).
                item:
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
        }

        impl $ty {
            guard_docs! {$kind
                /// Gives the buffer back without pooling it: it is freed now,
                /// and its memory returned to the pool's `memory_limit` (where
                /// it may serve a thread or task waiting for memory). Jetty's
                /// `removeAndRelease`: for a buffer that must not be reused (one
                /// the kernel or a TLS engine may still read after an I/O error,
                /// say, or one that held secrets).
                ///
                /// Counted as a release and a remove
                /// ([`BucketStats::removes`](crate::buffer::BucketStats::removes))
                /// of the bucket it was acquired from (the oversize entry for a
                /// buffer no bucket serves), as a release the pool does not keep
                /// is counted, so the identities of the statistics hold.
                ///
                /// An associated function, as `Box::into_inner` is, so that it
                /// does not shadow a method of the bytes.
                ///
                /// # Examples
                ///
                /// ```
                /// use recycler_core::buffer::{BufferPool, PooledBuf};
                ///
                /// let pool = BufferPool::new();
                /// let mut buf = pool.acquire(16);
                /// buf.extend_from_slice(b"secret");
                /// PooledBuf::discard(buf);
                /// let s = pool.stats();
                /// let b = s.buckets[0];
                /// assert_eq!((b.releases, b.removes, b.idle), (1, 1, 0)); // freed, not pooled
                /// assert_eq!(s.allocated_memory, 0);
                /// ```
                owned:
                /// As for [`PooledBuf::discard`]: gives the buffer back without
                /// pooling it.
                item:
                pub fn discard(this: Self) {
                    let mut this = ManuallyDrop::new(this);
                    // SAFETY: `this` is never dropped, so the buffer is taken
                    // exactly once, here.
                    let buf = unsafe { ManuallyDrop::take(&mut this.buf) }.into_buf();
                    #[cfg(feature = "track")]
                    this.pool.pool_shared().untrack(&buf);
                    this.pool.discard_buf(buf, this.home, this.origin);
                }
            }
        }
    };
}

buf_api!(borrowed PooledBuf<'_>, "PooledBuf");
buf_api!(owned OwnedPooledBuf, "OwnedPooledBuf");

mod traits;

#[cfg(all(test, not(loom)))]
mod tests;
