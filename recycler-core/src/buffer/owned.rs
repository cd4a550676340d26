//! [`OwnedPooledBuf`]: the buffer a pool in an `Arc` lends, which holds a
//! unit of the pool's keep-alive count ([`super::units`]), so that it is
//! `'static`, for threads and tasks; and the [`BufferPool`] methods that
//! make one (the ones that wait at the memory limit are in
//! [`super::wait`]). The Vec-like API and the trait impls it shares with
//! [`PooledBuf`](super::PooledBuf) are in [`super::vec_like`].

use std::mem::ManuallyDrop;

use super::buf::Buf;
use super::loan::Loan;
use super::pool::BufferPool;
use super::shared::PoolShared;
use super::units::PoolPtr;
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
    pub(super) buf: ManuallyDrop<Loan>,
    pub(super) home: Home<Buf>,
    pub(super) origin: u32,
    /// The pool, kept alive by the unit of its keep-alive count this buffer
    /// holds, given back by its release.
    pub(super) pool: PoolPtr,
}

// SAFETY: as for `PooledBuf`; the pool's state is `Send + Sync`, kept
// alive by the buffer's unit wherever it is released.
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
    /// `PooledBuf` taken apart keeps its record. Takes a unit of the pool's
    /// count for it.
    pub(crate) fn new(pool: &PoolShared, buf: Box<Buf>, home: Home<Buf>, origin: u32) -> Self {
        pool.take_unit();
        // SAFETY: a unit was taken for it, above.
        unsafe { Self::holding_unit(pool, buf, home, origin) }
    }

    /// A guard of `buf`, for which the caller took a unit of the pool's
    /// count (a credit of its cache, on the owner path).
    ///
    /// # Safety
    ///
    /// A unit of `pool`'s count was taken for this guard, which its release
    /// gives back.
    #[inline(always)]
    pub(crate) unsafe fn holding_unit(
        pool: &PoolShared,
        buf: Box<Buf>,
        home: Home<Buf>,
        origin: u32,
    ) -> Self {
        Self {
            buf: ManuallyDrop::new(Loan::new(buf)),
            home,
            origin,
            pool: PoolPtr::new(pool),
        }
    }

    /// The pool the buffer returns to (a `FrameBuf` takes its next buffer
    /// from it), alive while this buffer is.
    #[cfg(feature = "bytes")]
    pub(crate) fn pool(&self) -> &PoolShared {
        // SAFETY: this buffer holds a unit of the pool's count.
        unsafe { self.pool.get() }
    }

    /// The alignment of the buffer's first byte.
    #[cfg(feature = "bytes")]
    pub(crate) fn alignment(&mut self) -> usize {
        self.buf.buf_mut().alignment()
    }

    /// Makes the first `len` bytes initialized (zeroing only what was never
    /// written, as the buffer remembers across reuse) and the length
    /// `len`; returns the first byte. `len <= capacity()`.
    #[cfg(feature = "bytes")]
    pub(crate) fn init_to(&mut self, len: usize) -> *mut u8 {
        self.buf.init_to(len)
    }

    /// Discards the guard ([`discard`](Self::discard): a release and a
    /// remove), its allocation handed to another owner that frees it
    /// ([`Buf::give_up_allocation`]): a `FrameBuf`'s frames, which hold it
    /// as `Bytes`.
    #[cfg(feature = "bytes")]
    pub(crate) fn discard_given_up(mut this: Self) {
        this.buf.with_buf(Buf::give_up_allocation);
        Self::discard(this);
    }
}

impl PoolShared {
    /// The guard of a buffer the owner path popped from bucket `idx`,
    /// tracked (feature `track`) at the caller's caller.
    ///
    /// # Safety
    ///
    /// The pop took a unit for it ([`pop_owned`](Self::pop_owned)).
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    unsafe fn owned_hit(&self, buf: Box<Buf>, home: Home<Buf>, idx: usize) -> OwnedPooledBuf {
        #[cfg(feature = "track")]
        self.track(&buf, std::panic::Location::caller());
        // SAFETY: the caller's guarantee.
        unsafe { OwnedPooledBuf::holding_unit(self, buf, home, idx as u32) }
    }

    /// An owned buffer of at least `capacity` bytes, as `acquire` (the
    /// owner path takes its unit as a credit). The caller holds a handle
    /// of the pool or a unit of its count.
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    pub(crate) fn acquire_owned(&self, capacity: usize) -> OwnedPooledBuf {
        let idx = self.bucket_index(capacity);
        match self.pop_owned(idx) {
            // SAFETY: `pop_owned` took a unit for it.
            Some((buf, home)) => unsafe { self.owned_hit(buf, home, idx) },
            None => {
                let (buf, home, origin) = self.acquire_cold(capacity, idx).into_parts();
                OwnedPooledBuf::new(self, buf, home, origin)
            }
        }
    }

    /// As [`acquire_owned`](Self::acquire_owned), or why there is none (as
    /// `try_acquire`).
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    fn try_acquire_owned(&self, capacity: usize) -> Result<OwnedPooledBuf, AcquireError> {
        let idx = self.bucket_index(capacity);
        match self.pop_owned(idx) {
            // SAFETY: `pop_owned` took a unit for it.
            Some((buf, home)) => Ok(unsafe { self.owned_hit(buf, home, idx) }),
            None => {
                let (buf, home, origin) = self.try_acquire_cold(capacity, idx)?.into_parts();
                Ok(OwnedPooledBuf::new(self, buf, home, origin))
            }
        }
    }

    /// As [`acquire_owned`](Self::acquire_owned), only a pooled buffer.
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    fn try_acquire_owned_pooled(&self, capacity: usize) -> Option<OwnedPooledBuf> {
        let idx = self.bucket_index(capacity);
        match self.pop_owned(idx) {
            // SAFETY: `pop_owned` took a unit for it.
            Some((buf, home)) => Some(unsafe { self.owned_hit(buf, home, idx) }),
            None => {
                let (buf, home, origin) = match self.take_pooled(idx) {
                    Some((buf, home)) => (buf, home, idx as u32),
                    None => self.take_grown(idx)?,
                };
                #[cfg(feature = "track")]
                self.track(&buf, std::panic::Location::caller());
                Some(OwnedPooledBuf::new(self, buf, home, origin))
            }
        }
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
        self.shared().try_acquire_owned_pooled(capacity)
    }

    /// Like [`acquire`](Self::acquire), for a pool in an `Arc`: the buffer
    /// keeps the pool alive, so it is `'static` and can move into threads
    /// and tasks. On the thread's owner path it takes no atomic
    /// read-modify-write either (no clone of the `Arc`: see the design
    /// notes, "Owned guards").
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
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn acquire_owned(self: &Arc<Self>, capacity: usize) -> OwnedPooledBuf {
        self.shared().acquire_owned(capacity)
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
    #[inline(always)]
    pub fn try_acquire_owned(
        self: &Arc<Self>,
        capacity: usize,
    ) -> Result<OwnedPooledBuf, AcquireError> {
        self.shared().try_acquire_owned(capacity)
    }
}
