//! [`OwnedPooledBuf`]: the buffer a pool in an `Arc` lends, which holds
//! the `Arc`, so that it is `'static`, for threads and tasks; and the
//! [`BufferPool`] methods that make one (the ones that wait at the memory
//! limit are in [`super::wait`]). The Vec-like API and the trait impls it
//! shares with [`PooledBuf`](super::PooledBuf) are in [`super::vec_like`].

use std::mem::ManuallyDrop;

use super::buf::Buf;
use super::loan::Loan;
use super::pool::BufferPool;
use crate::error::AcquireError;
use crate::home::Home;
use crate::loom::Arc;

/// A byte buffer on loan from a [`BufferPool`] in an `Arc`: `'static`, so it
/// can move into threads and tasks. Returns to the pool when dropped.
///
/// Made by [`BufferPool::acquire_owned`]; otherwise the same as
/// [`PooledBuf`](super::PooledBuf), with the same traits and comparisons.
/// The buffer keeps the pool alive. With the `bytes` feature, `into_bytes`
/// turns it into a `bytes::Bytes` without copying, whose last clone returns
/// the memory to the pool.
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
    pub(super) pool: Arc<BufferPool>,
    pub(super) buf: ManuallyDrop<Loan>,
    pub(super) home: Home<Buf>,
    pub(super) origin: u32,
}

// SAFETY: as for `PooledBuf`; `Arc<BufferPool>` is `Send + Sync`.
unsafe impl Send for OwnedPooledBuf {}
// SAFETY: as for `PooledBuf`.
unsafe impl Sync for OwnedPooledBuf {}

/// As for [`PooledBuf`](super::PooledBuf).
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use std::sync::Arc;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = Arc::new(BufferPool::new());
/// let mut buf = pool.acquire_owned(10);
/// assert!(catch_unwind(move || buf.push(1)).is_ok());
/// ```
impl std::panic::UnwindSafe for OwnedPooledBuf {}

/// As for [`PooledBuf`](super::PooledBuf).
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use std::sync::Arc;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = Arc::new(BufferPool::new());
/// let buf = pool.acquire_owned(10);
/// assert!(catch_unwind(|| buf.is_empty()).unwrap());
/// ```
impl std::panic::RefUnwindSafe for OwnedPooledBuf {}

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

    /// The pool the buffer returns to (a `FrameBuf` takes its next buffer
    /// from it).
    #[cfg(feature = "bytes")]
    pub(crate) fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }
}

impl BufferPool {
    /// Like [`try_acquire_pooled`](Self::try_acquire_pooled), for a pool in
    /// an `Arc`: an owned, `'static` buffer, if the pool holds one; never
    /// allocates, never waits. The counterpart of
    /// [`Recycler::try_get_owned`](crate::Recycler::try_get_owned).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// assert!(pool.try_acquire_owned_pooled(100).is_none()); // nothing pooled yet
    /// drop(pool.acquire(100));
    /// let buf = pool.try_acquire_owned_pooled(100).unwrap();
    /// std::thread::spawn(move || assert_eq!(buf.capacity(), 4096)).join().unwrap();
    /// assert_eq!(pool.stats().buckets[0].pooled, 1);
    /// ```
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    #[doc(alias = "try_acquire_pooled_owned")]
    pub fn try_acquire_owned_pooled(self: &Arc<Self>, capacity: usize) -> Option<OwnedPooledBuf> {
        let (buf, home, origin) = self.try_acquire_pooled(capacity)?.into_parts();
        Some(OwnedPooledBuf::new(Arc::clone(self), buf, home, origin))
    }

    /// Like [`acquire`](Self::acquire), for a pool in an `Arc`: the buffer
    /// holds a clone of the `Arc`, so it is `'static` and can move into
    /// threads and tasks.
    ///
    /// # Panics
    ///
    /// As [`acquire`](Self::acquire).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut buf = pool.acquire_owned(100);
    /// std::thread::spawn(move || buf.extend_from_slice(b"away")).join().unwrap();
    /// assert_eq!(pool.stats().buckets[0].releases, 1);
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_owned(self: &Arc<Self>, capacity: usize) -> OwnedPooledBuf {
        let (buf, home, origin) = self.acquire(capacity).into_parts();
        OwnedPooledBuf::new(Arc::clone(self), buf, home, origin)
    }

    /// Like [`try_acquire`](Self::try_acquire), for a pool in an `Arc`; see
    /// [`acquire_owned`](Self::acquire_owned).
    ///
    /// # Errors
    ///
    /// As [`try_acquire`](Self::try_acquire).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = Arc::new(BufferPool::builder().memory_limit(4096).build()?);
    /// let a = pool.try_acquire_owned(4096);
    /// assert!(a.is_ok());
    /// assert!(pool.try_acquire_owned(4096).is_err());
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    #[cfg_attr(feature = "track", track_caller)]
    pub fn try_acquire_owned(
        self: &Arc<Self>,
        capacity: usize,
    ) -> Result<OwnedPooledBuf, AcquireError> {
        let buf = self.try_acquire(capacity)?;
        let (buf, home, origin) = buf.into_parts();
        Ok(OwnedPooledBuf::new(Arc::clone(self), buf, home, origin))
    }
}
