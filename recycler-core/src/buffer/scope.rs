//! [`Scope`]: an allocator bound to a pool (Panama's pool-bound allocator).
//! It bump-allocates slices from buffers it takes from the pool (a slice of
//! more than half a buffer gets a buffer of its own); they all go back to
//! the pool when the scope drops.

use std::cell::Cell;
use std::fmt;
use std::marker::PhantomData;
use std::mem::MaybeUninit;
use std::ptr;
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

/// An allocator of byte slices from a [`BufferPool`]: [`alloc`](Self::alloc)
/// bump-allocates from a buffer the scope took from the pool (the pool's
/// bucket of 64 KiB, or its largest if smaller; the first one a sixteenth
/// of that), taking another when that one is full; a slice of more than
/// half such a buffer, or one for which a whole buffer would not fit under
/// the pool's memory limit, gets a buffer of its own. Every buffer goes
/// back to the pool when the scope drops.
///
/// Like an arena (`bumpalo`), it allocates through `&self`, so several
/// slices from one scope can be alive and mutable at once, and most
/// allocations are a pointer bump; unlike an arena, its memory is reused
/// across scopes, through the pool. Every slice starts at the pool's
/// [`alignment`](super::BufferPoolBuilder::alignment).
///
/// Made by [`BufferPool::scope`]. Not `Sync`: one thread allocates from it at
/// a time (it may move to another thread between uses).
///
/// # Examples
///
/// ```
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::new(); // buckets of 4 KiB to 64 KiB
/// for request in 0..3u8 {
///     let scope = pool.scope();
///     let header = scope.alloc_zeroed(64);
///     let body = scope.alloc(1000);
///     header[0] = request;
///     body.fill(request);
///     assert_eq!(scope.len(), 1); // both slices in one 4 KiB buffer
/// } // the buffer back in the pool, reused by the next request
/// let b = pool.stats().buckets[0];
/// assert_eq!((b.capacity, b.acquires, b.non_pooled, b.idle), (4096, 3, 1, 1));
/// # Ok::<(), recycler_core::ConfigError>(())
/// ```
pub struct Scope<'a> {
    pool: &'a BufferPool,
    /// The capacity of the buffers slices are bumped from, the alignment
    /// of every slice, and the pool's bucket step.
    chunk: usize,
    align: usize,
    step: usize,
    /// The next free byte of the newest chunk, and how many bytes it has
    /// left. Before the first chunk: 0 bytes left at the address `align`
    /// ([`empty`]), never null, so that an empty slice from the bump path is
    /// non-null and aligned too.
    next: Cell<*mut u8>,
    left: Cell<usize>,
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

// SAFETY: `next` points into a buffer that the scope itself holds (in
// `held`, whose guards are `Send`), which moves with it, or is the address
// of no buffer (`empty`); the bytes it points to are reached only through
// the scope, which is not `Sync`, so one thread at a time allocates from it.
unsafe impl Send for Scope<'_> {}

impl BufferPool {
    /// A scope that allocates byte slices from this pool and returns all of
    /// them when it drops (Panama's pool-bound allocator).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::buffer::BufferPool;
    ///
    /// let pool = BufferPool::new();
    /// {
    ///     let scope = pool.scope();
    ///     let a = scope.alloc_zeroed(100);
    ///     let b = scope.alloc(200);
    ///     a[0] = 1;
    ///     b[0] = 2;
    ///     assert_eq!((a.len(), b.len()), (100, 200));
    /// } // the scope's buffer (one of 4 KiB holds both) back in the pool
    /// assert_eq!(pool.stats().idle_memory, 4096);
    /// ```
    pub fn scope(&self) -> Scope<'_> {
        Scope::new(self)
    }

    /// The capacity of the buffers a scope bump-allocates its slices from
    /// (a bucket's, at most 64 KiB), the alignment of every buffer, and the
    /// bucket step.
    #[inline]
    pub(crate) fn scope_chunk(&self) -> (usize, usize, usize) {
        self.shared().scope_chunk()
    }
}

impl<'a> Scope<'a> {
    pub(crate) fn new(pool: &'a BufferPool) -> Self {
        let (chunk, align, step) = pool.scope_chunk();
        Self {
            pool,
            chunk,
            align,
            step,
            next: Cell::new(empty(align)),
            left: Cell::new(0),
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
    /// Most calls bump a pointer in the scope's current buffer; see
    /// [`Scope`]. An empty slice (`len == 0`) takes no memory and never
    /// fails; like every slice, it starts at a non-null address aligned to
    /// the pool's alignment.
    ///
    /// At the pool's `memory_limit`, where [`try_alloc`](Self::try_alloc)
    /// fails, it does not panic: the slice gets a buffer of its own, taken
    /// as [`BufferPool::acquire`] takes one there, an overdraft (see
    /// [`memory_limit`](super::BufferPoolBuilder::memory_limit)).
    ///
    /// # Panics
    ///
    /// Where [`BufferPool::acquire`] does: for a size no allocation can
    /// have, or if the allocator fails.
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
    #[cfg_attr(feature = "track", track_caller)]
    pub fn alloc(&self, len: usize) -> &mut [u8] {
        match self.try_alloc(len) {
            Ok(bytes) => bytes,
            Err(AcquireError::LimitExceeded { .. }) => self.alloc_overdraft(len),
            Err(err) => alloc_failed(&err),
        }
    }

    /// `alloc` at the memory limit: a buffer of its own for the slice, as
    /// `acquire` takes one (an overdraft).
    #[cold]
    #[inline(never)]
    #[allow(
        clippy::mut_from_ref,
        reason = "an arena's `&self -> &mut` pattern, argued in `try_alloc`"
    )]
    #[cfg_attr(feature = "track", track_caller)]
    fn alloc_overdraft(&self, len: usize) -> &mut [u8] {
        let mut buf = self.pool.acquire(len);
        let ptr = buf.init_to(len);
        self.with_held(|held| held.push(buf));
        // SAFETY: as for `take`'s result (the same steps, with `acquire`):
        // the buffer's first `len` bytes, initialized, held by the scope
        // until it drops, lent out once, here.
        unsafe { slice::from_raw_parts_mut(ptr, len) }
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
    #[cfg_attr(feature = "track", track_caller)]
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
    /// As [`BufferPool::try_acquire`] (never for `len == 0`).
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
    /// assert!(scope.try_alloc(0).is_ok()); // an empty slice needs none
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    #[allow(
        clippy::mut_from_ref,
        reason = "an arena's `&self -> &mut` pattern, argued below"
    )]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn try_alloc(&self, len: usize) -> Result<&mut [u8], AcquireError> {
        // The newest chunk, if the slice fits after aligning its start.
        let next = self.next.get();
        let pad = next.addr().wrapping_neg() & (self.align - 1);
        if let Some(need) = pad.checked_add(len)
            && need <= self.left.get()
        {
            // SAFETY: `next` points into the newest chunk with
            // `left >= pad + len` bytes after it, all in the chunk; or,
            // before the first chunk, `left == 0`, so `pad == 0` and this
            // is a zero offset, sound on any pointer.
            let ptr = unsafe { next.add(pad) };
            // SAFETY: as above: `ptr + len` is at most the chunk's end
            // (a zero offset before the first chunk).
            self.next.set(unsafe { ptr.add(len) });
            self.left.set(self.left.get() - need);
            // The slice lies past every slice lent before from
            // this chunk (the bump only moves forward); `take` says why
            // its bytes stay exclusive, alive and in place.
            // SAFETY: `[ptr, ptr + len)` is initialized bytes of a chunk
            // the scope holds, lent out once (see above); before the
            // first chunk, `len == 0` and `ptr` is `empty(align)`,
            // non-null and aligned, which is all 0 bytes need.
            return Ok(unsafe { slice::from_raw_parts_mut(ptr, len) });
        }
        if len == 0 {
            // The current chunk has no aligned byte left: an empty slice
            // needs no memory, and gets none from the pool.
            // SAFETY: an address that is non-null and aligned, for 0 bytes.
            return Ok(unsafe { slice::from_raw_parts_mut(empty(self.align), 0) });
        }
        if len > self.chunk / 2 {
            // A buffer of its own; the current chunk keeps its room.
            let ptr = self.take(len, len)?;
            // SAFETY: as for `take`'s result, `len` bytes of it.
            return Ok(unsafe { slice::from_raw_parts_mut(ptr, len) });
        }
        // The first buffer is a sixteenth of a full one (at least a bucket,
        // and room for this slice): a scope that makes one small slice holds
        // a small buffer. The next ones are full.
        let size = if self.is_empty() {
            (self.chunk / 16).max(len).div_ceil(self.step) * self.step
        } else {
            self.chunk
        };
        let size = size.min(self.chunk);
        let ptr = match self.take(size, size) {
            Ok(ptr) => ptr,
            // A whole chunk does not fit under the memory limit: a buffer
            // for this slice alone may.
            Err(_) => {
                let ptr = self.take(len, len)?;
                // SAFETY: as for `take`'s result, `len` bytes of it.
                return Ok(unsafe { slice::from_raw_parts_mut(ptr, len) });
            }
        };
        // SAFETY: `len <= size` (the first buffer is at least `len`, a full
        // one at least twice `len`), so `ptr + len` is within the buffer.
        self.next.set(unsafe { ptr.add(len) });
        self.left.set(size - len);
        // SAFETY: the chunk's first `len` bytes, as for `take`'s result.
        Ok(unsafe { slice::from_raw_parts_mut(ptr, len) })
    }

    /// Takes a buffer of at least `capacity` bytes from the pool, makes its
    /// first `init` bytes initialized, keeps it until the scope drops, and
    /// returns its first byte.
    ///
    /// The scope lends the buffer's bytes out as slices, each at most once:
    /// - Exclusive: the pool lends each buffer to one holder at a time;
    ///   the scope, which now holds this one, never reads, writes or lends a
    ///   byte of it again except through the bump pointer, which only moves
    ///   forward, so no two slices overlap.
    /// - Alive and in place for the borrow: the bytes live in an allocation
    ///   apart from the guard, so moving the guard (into `inline` or `more`,
    ///   as `more` grows) does not move them; the guard returns the buffer
    ///   only when the scope drops, which requires every borrow of `&self`,
    ///   and so every slice, to be over.
    #[cfg_attr(feature = "track", track_caller)]
    fn take(&self, capacity: usize, init: usize) -> Result<*mut u8, AcquireError> {
        let mut buf = self.pool.try_acquire(capacity)?;
        let ptr = buf.init_to(init);
        self.with_held(|held| held.push(buf));
        Ok(ptr)
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

/// The address of the empty slices that no chunk holds: `align` itself,
/// non-null and aligned, pointing to nothing (valid for 0 bytes only).
fn empty(align: usize) -> *mut u8 {
    ptr::without_provenance_mut(align)
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
            // 5 500 bytes: 3 600 bumped from a first, 4 KiB buffer, the rest
            // from a full, 64 KiB one.
            assert_eq!(scope.len(), 2);
            let s = pool.stats();
            assert_eq!(s.buckets.iter().map(|b| b.in_use).sum::<u64>(), 2);
            slices.iter().map(|s| s.as_ptr()).collect()
        };
        let s = pool.stats();
        assert_eq!(s.buckets.iter().map(|b| b.in_use).sum::<u64>(), 0);
        assert_eq!(s.idle_memory, (4 + 64) * 1024);
        // The buffers are reused: the first slice started at the first
        // buffer's first byte.
        let again = pool.acquire(1);
        assert_eq!(again.as_ptr(), ptrs[0]);
    }

    #[test]
    fn slices_are_disjoint_and_independent() {
        let pool = BufferPool::new();
        let scope = pool.scope();
        let sizes = [4096, 1, 0, 33, 30_000, 4096, 40_000, 7, 31_000];
        let slices: Vec<&mut [u8]> = sizes.iter().map(|&n| scope.alloc(n)).collect();
        let mut ranges: Vec<(usize, usize)> = slices
            .iter()
            .map(|s| (s.as_ptr() as usize, s.len()))
            .collect();
        for (i, s) in slices.into_iter().enumerate() {
            s.fill(i as u8);
            assert!(s.iter().all(|&b| b == i as u8));
        }
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "overlap: {w:?}");
        }
        // A first buffer of 4 KiB, filled by the first slice; a full one of
        // 64 KiB for the next ones; 40 000 bytes, over half a full buffer
        // and more than the room left, in a buffer of its own; 31 000 still
        // fits in the room left.
        assert_eq!(format!("{scope:?}"), "Scope { buffers: 3, .. }");
    }

    /// The address of every slice is non-null and a multiple of `align`.
    /// (`black_box`: an optimized build would otherwise assume a slice's
    /// pointer non-null and drop the check.)
    fn assert_aligned(s: &[u8], align: usize, what: &str) {
        let addr = std::hint::black_box(s.as_ptr()).addr();
        assert_ne!(addr, 0, "{what}: null");
        assert_eq!(addr % align, 0, "{what}: {addr:#x} not aligned to {align}");
    }

    #[test]
    fn empty_slices_are_non_null_and_aligned() {
        // A fresh scope: no chunk yet.
        let pool = BufferPool::new();
        let scope = pool.scope();
        assert_aligned(scope.alloc(0), 1, "fresh alloc(0)");
        assert_aligned(scope.alloc_zeroed(0), 1, "fresh alloc_zeroed(0)");
        assert_aligned(scope.try_alloc(0).unwrap(), 1, "fresh try_alloc(0)");
        assert!(scope.is_empty(), "an empty slice takes no buffer");
        drop(scope);
        // A scope whose only buffer is one of its own (over half a chunk).
        let scope = pool.scope();
        assert_eq!(scope.alloc(40_000).len(), 40_000);
        assert_aligned(scope.alloc(0), 1, "alloc(0) after an own buffer");
        assert_eq!(scope.len(), 1);
        drop(scope);
        // Aligned pools, with chunks whose ends are not aligned.
        for align in [2, 64, 4096, 1 << 16] {
            let pool = BufferPool::builder()
                .bucket_step(1000)
                .max_capacity(64_000)
                .alignment(align)
                .build()
                .unwrap();
            let scope = pool.scope();
            assert_aligned(scope.alloc(0), align, "fresh");
            assert_aligned(scope.alloc(40_000), align, "own buffer");
            assert_aligned(scope.alloc(0), align, "after an own buffer");
            assert_aligned(scope.alloc(999), align, "first chunk");
            assert_aligned(scope.alloc(0), align, "in the first chunk");
            assert_aligned(scope.alloc(1), align, "after an empty one");
            let held = scope.len();
            for _ in 0..20 {
                assert_aligned(scope.alloc(0), align, "repeated");
            }
            assert_eq!(scope.len(), held, "empty slices take no buffer");
        }
    }

    #[test]
    fn empty_slices_need_no_memory() {
        // Every byte under the limit held, and the bump pointer at the end
        // of a chunk that is not aligned (1000 bytes, aligned to 64): an
        // empty slice still succeeds, without taking a buffer.
        let pool = BufferPool::builder()
            .bucket_step(1000)
            .max_capacity(2000)
            .alignment(64)
            .memory_limit(1000)
            .build()
            .unwrap();
        let scope = pool.scope();
        assert_eq!(scope.alloc(1000).len(), 1000);
        assert!(scope.try_alloc(1).is_err());
        assert_aligned(scope.try_alloc(0).unwrap(), 64, "at the limit");
        assert_eq!(scope.len(), 1);
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
