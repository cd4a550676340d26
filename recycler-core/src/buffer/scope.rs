//! [`Scope`]: an allocator bound to a pool (Panama's pool-bound allocator).
//! Every slice it hands out is a pooled buffer; they all go back to the pool
//! when the scope drops.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::slice;

use super::guard::PooledBuf;
use super::pool::BufferPool;
use crate::error::AcquireError;
use crate::loom::UnsafeCell;

/// Buffers kept inline before the scope needs a `Vec`: a scope that
/// allocates a few slices allocates nothing else.
const INLINE: usize = 4;

/// Room the `Vec` starts with when the inline slots are full.
const FIRST_SPILL: usize = 28;

/// An allocator of byte slices from a [`BufferPool`]: each
/// [`alloc`](Self::alloc) takes a buffer from the pool and lends out its
/// first bytes; every buffer goes back to the pool when the scope drops.
///
/// Like an arena (`bumpalo`), it allocates through `&self`, so several
/// slices from one scope can be alive and mutable at once; unlike an arena,
/// its memory is reused across scopes, through the pool.
///
/// Made by [`BufferPool::scope`]. Not `Sync`: one thread allocates from it at
/// a time (it may move to another thread between uses).
///
/// # Examples
///
/// ```
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::builder().bucket_step(1024).max_capacity(16 * 1024).build()?;
/// for request in 0..3u8 {
///     let scope = pool.scope();
///     let header = scope.alloc_zeroed(64);
///     let body = scope.alloc(1000);
///     header[0] = request;
///     body.fill(request);
///     assert_eq!(scope.len(), 2);
/// } // both buffers back in the pool, reused by the next request
/// let b = &pool.stats().buckets[0];
/// assert_eq!((b.acquires, b.non_pooled, b.idle), (6, 2, 2));
/// # Ok::<(), recycler_core::ConfigError>(())
/// ```
pub struct Scope<'a> {
    pool: &'a BufferPool,
    /// Touched only inside `Scope`'s methods, none of which re-enters
    /// another or lends a reference to it out (`!Sync` keeps it on one
    /// thread at a time).
    held: UnsafeCell<Held<'a>>,
    /// Not `Sync`: `alloc` through `&self` mutates `held` unsynchronized.
    _not_sync: PhantomData<Cell<()>>,
}

/// The buffers a scope holds: the first `n` slots of `inline` (a scope is
/// made without touching the others), then `more`.
struct Held<'a> {
    inline: [MaybeUninit<PooledBuf<'a>>; INLINE],
    /// Initialized slots of `inline`, from the start.
    n: usize,
    more: Vec<PooledBuf<'a>>,
}

impl<'a> Held<'a> {
    #[inline(always)]
    fn push(&mut self, buf: PooledBuf<'a>) {
        if self.n < INLINE {
            self.inline[self.n].write(buf);
            self.n += 1;
        } else {
            if self.more.capacity() == 0 {
                self.more.reserve(FIRST_SPILL);
            }
            self.more.push(buf);
        }
    }

    fn len(&self) -> usize {
        self.n + self.more.len()
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        for slot in &mut self.inline[..self.n] {
            // SAFETY: the first `n` slots are initialized (`push` writes
            // slot `n` before counting it), and each is dropped once, here.
            unsafe { slot.assume_init_drop() };
        }
    }
}

impl<'a> Scope<'a> {
    pub(crate) fn new(pool: &'a BufferPool) -> Self {
        Self {
            pool,
            held: UnsafeCell::new(Held {
                inline: [const { MaybeUninit::uninit() }; INLINE],
                n: 0,
                more: Vec::new(),
            }),
            _not_sync: PhantomData,
        }
    }

    /// `len` bytes from a pooled buffer, whose contents are unspecified: the
    /// bytes a previous user of the buffer left there (memory never written
    /// is zeroed once, so the slice is always initialized). Use
    /// [`alloc_zeroed`](Self::alloc_zeroed) for zeros.
    ///
    /// # Panics
    ///
    /// Where [`try_alloc`](Self::try_alloc) fails, as
    /// [`BufferPool::acquire`] does.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// let scope = pool.scope();
    /// let a = scope.alloc(10);
    /// let b = scope.alloc(20);
    /// a.copy_from_slice(b"0123456789");
    /// b[..10].copy_from_slice(a); // both alive and mutable at once
    /// assert_eq!(&b[..10], b"0123456789");
    /// ```
    #[inline]
    #[allow(
        clippy::mut_from_ref,
        reason = "an arena's `&self -> &mut` pattern, argued in `try_alloc`"
    )]
    pub fn alloc(&self, len: usize) -> &mut [u8] {
        match self.try_alloc(len) {
            Ok(bytes) => bytes,
            Err(err) => alloc_failed(&err),
        }
    }

    /// `len` zero bytes from a pooled buffer.
    ///
    /// # Panics
    ///
    /// As [`alloc`](Self::alloc).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// {
    ///     let scope = pool.scope();
    ///     scope.alloc(8).fill(0xFF);
    /// }
    /// let scope = pool.scope();
    /// assert_eq!(scope.alloc_zeroed(8), [0; 8]); // the same buffer, zeroed
    /// ```
    #[inline]
    #[allow(
        clippy::mut_from_ref,
        reason = "an arena's `&self -> &mut` pattern, argued in `try_alloc`"
    )]
    pub fn alloc_zeroed(&self, len: usize) -> &mut [u8] {
        let bytes = self.alloc(len);
        bytes.fill(0);
        bytes
    }

    /// `len` bytes from a pooled buffer, as [`alloc`](Self::alloc), or why
    /// the pool has none.
    ///
    /// # Errors
    ///
    /// As [`BufferPool::try_acquire`].
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::builder().memory_limit(8192).build()?;
    /// let scope = pool.scope();
    /// assert!(scope.try_alloc(8192).is_ok());
    /// assert!(scope.try_alloc(1).is_err()); // the scope holds all the memory
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    #[allow(
        clippy::mut_from_ref,
        reason = "an arena's `&self -> &mut` pattern, argued below"
    )]
    pub fn try_alloc(&self, len: usize) -> Result<&mut [u8], AcquireError> {
        let mut buf = self.pool.try_acquire(len)?;
        let ptr = buf.init_to(len);
        self.with_held(|held| held.push(buf));
        // SAFETY: `ptr` is the first byte of the buffer's allocation, whose
        // first `len` bytes (`len <= capacity`) `init_to` made initialized.
        // - Exclusive: the pool hands out each buffer to one holder at a
        //   time, and the scope, which now holds this one, never reads,
        //   writes or lends these bytes again; other slices of the scope lie
        //   in other buffers.
        // - Alive and in place for the borrow: the bytes live in an
        //   allocation apart from the guard, so moving the guard (into
        //   `inline` or `more`, as `more` grows) does not move them; the
        //   guard returns the buffer only when the scope drops, which
        //   requires every borrow of `&self`, and so this slice, to be over.
        Ok(unsafe { slice::from_raw_parts_mut(ptr, len) })
    }

    /// Buffers taken from the pool so far.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// let scope = pool.scope();
    /// assert!(scope.is_empty());
    /// scope.alloc(1);
    /// assert_eq!(scope.len(), 1);
    /// ```
    pub fn len(&self) -> usize {
        self.with_held(|held| held.len())
    }

    /// Runs `f` on the buffers held.
    #[inline(always)]
    fn with_held<R>(&self, f: impl FnOnce(&mut Held<'a>) -> R) -> R {
        self.held.with_mut(|held| {
            // SAFETY: `Scope` is not `Sync`, so only the calling thread can
            // be in here; and no method calls another while it holds this
            // borrow, nor lets a reference to `held` escape (`f` is one of
            // `push` and `len`), so the borrow is unique.
            f(unsafe { &mut *held })
        })
    }

    /// Whether no buffer was taken yet.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// assert!(pool.scope().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `alloc`'s panic, out of line.
#[cold]
#[inline(never)]
#[track_caller]
fn alloc_failed(err: &AcquireError) -> ! {
    panic!("Scope::alloc: {err}")
}

impl fmt::Debug for Scope<'_> {
    /// The number of buffers held; never their contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scope")
            .field("buffers", &self.len())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use static_assertions::{assert_impl_all, assert_not_impl_any};

    assert_impl_all!(Scope<'static>: Send);
    assert_not_impl_any!(Scope<'static>: Sync);

    #[test]
    fn every_buffer_returns_when_the_scope_drops() {
        let pool = BufferPool::new();
        let ptrs: Vec<*const u8> = {
            let scope = pool.scope();
            let slices: Vec<&mut [u8]> = (0..10).map(|i| scope.alloc(100 * (i + 1))).collect();
            for (i, s) in slices.iter().enumerate() {
                assert_eq!(s.len(), 100 * (i + 1));
            }
            assert_eq!(pool.stats().buckets[0].in_use, 10);
            slices.iter().map(|s| s.as_ptr()).collect()
        };
        let s = pool.stats();
        assert_eq!((s.buckets[0].in_use, s.buckets[0].idle), (0, 10));
        // Reused, most recent first.
        let again = pool.acquire(1);
        assert!(ptrs.contains(&again.as_ptr()));
    }

    #[test]
    fn slices_are_disjoint_and_independent() {
        let pool = BufferPool::new();
        let scope = pool.scope();
        let slices: Vec<&mut [u8]> = (0..6u8).map(|_| scope.alloc(4096)).collect();
        for (i, s) in slices.into_iter().enumerate() {
            s.fill(i as u8);
            assert!(s.iter().all(|&b| b == i as u8));
        }
        assert_eq!(format!("{scope:?}"), "Scope { buffers: 6, .. }");
    }

    #[test]
    fn zeroed_and_initialized() {
        let pool = BufferPool::new();
        {
            let scope = pool.scope();
            scope.alloc(4096).fill(7);
        }
        let scope = pool.scope();
        assert!(
            scope.alloc(4096).iter().all(|&b| b == 7),
            "previous contents"
        );
        assert!(
            scope.alloc(4096).iter().all(|&b| b == 0),
            "never written: zeroed"
        );
        assert!(scope.alloc_zeroed(100).iter().all(|&b| b == 0));
    }
}
