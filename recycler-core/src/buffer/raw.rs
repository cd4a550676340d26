//! [`AlignedBuf`]: an owned allocation of bytes at a chosen alignment. The
//! only code of the buffer pool that calls the allocator.

use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::{self, NonNull};

use crate::error::AcquireError;
use crate::recyclable::Recyclable;

/// `capacity` bytes at an address that is a multiple of `align`, owned.
/// Uninitialized when made; the owner tracks what it has written.
///
/// A capacity of 0 allocates nothing (the pointer is `align` itself, as a
/// dangling, aligned address).
pub(crate) struct AlignedBuf {
    ptr: NonNull<u8>,
    cap: usize,
    align: usize,
}

// SAFETY: an `AlignedBuf` owns its bytes as a `Vec<u8>` does; nothing else
// points to them, so moving it to another thread moves sole ownership.
unsafe impl Send for AlignedBuf {}
// SAFETY: `&AlignedBuf` gives no access to the bytes at all (only the
// pointer value), so sharing it between threads is sound.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// The largest capacity a buffer aligned to `align` may have: its size,
    /// rounded up to the alignment, must fit in an `isize`.
    pub(crate) fn max_capacity(align: usize) -> usize {
        isize::MAX as usize - (align - 1)
    }

    /// The layout of `cap` bytes aligned to `align`.
    fn layout(cap: usize, align: usize) -> Result<Layout, AcquireError> {
        Layout::from_size_align(cap, align).map_err(|_| AcquireError::TooLarge {
            requested: cap,
            max: Self::max_capacity(align),
        })
    }

    /// The dangling, aligned pointer of a buffer that holds nothing.
    fn dangling(align: usize) -> NonNull<u8> {
        // An address, not a pointer to anything: no provenance needed.
        NonNull::new(ptr::without_provenance_mut(align)).unwrap_or(NonNull::dangling())
    }

    /// Allocates `cap` bytes aligned to `align` (a power of two).
    ///
    /// # Errors
    ///
    /// [`AcquireError::TooLarge`] if no such allocation can exist,
    /// [`AcquireError::AllocFailed`] if the allocator has no memory.
    pub(crate) fn try_new(cap: usize, align: usize) -> Result<Self, AcquireError> {
        let layout = Self::layout(cap, align)?;
        if cap == 0 {
            return Ok(Self {
                ptr: Self::dangling(align),
                cap,
                align,
            });
        }
        // SAFETY: `layout` has a non-zero size (`cap > 0`).
        let ptr = unsafe { alloc::alloc(layout) };
        match NonNull::new(ptr) {
            Some(ptr) => Ok(Self { ptr, cap, align }),
            None => Err(AcquireError::AllocFailed {
                requested: cap,
                alignment: align,
            }),
        }
    }

    /// Grows the allocation to `new_cap` bytes (more than now), keeping its
    /// contents and alignment. On error the buffer is unchanged.
    ///
    /// # Errors
    ///
    /// As [`try_new`](Self::try_new).
    pub(crate) fn try_grow(&mut self, new_cap: usize) -> Result<(), AcquireError> {
        debug_assert!(new_cap > self.cap);
        let new_layout = Self::layout(new_cap, self.align)?;
        let ptr = if self.cap == 0 {
            // SAFETY: `new_layout` has a non-zero size (`new_cap > cap >= 0`).
            unsafe { alloc::alloc(new_layout) }
        } else {
            let old = Self::layout(self.cap, self.align)?;
            // SAFETY: `self.ptr` was allocated by the global allocator with
            // `old` (by `try_new` or an earlier `try_grow`); `new_cap` is
            // non-zero, and rounded up to the alignment it fits in an `isize`
            // (checked by `Layout::from_size_align` above).
            unsafe { alloc::realloc(self.ptr.as_ptr(), old, new_cap) }
        };
        self.adopt(ptr, new_cap)
    }

    /// Takes `ptr`, the allocation of `new_cap` bytes an (re)allocation
    /// returned, as the buffer's; a null `ptr` is the allocator's failure,
    /// and leaves the buffer as it was.
    fn adopt(&mut self, ptr: *mut u8, new_cap: usize) -> Result<(), AcquireError> {
        let ptr = NonNull::new(ptr).ok_or(AcquireError::AllocFailed {
            requested: new_cap,
            alignment: self.align,
        })?;
        self.ptr = ptr;
        self.cap = new_cap;
        Ok(())
    }

    /// Shrinks the allocation to `new_cap` bytes (at least 1, less than the
    /// capacity), keeping the first `new_cap` bytes and the alignment; on
    /// failure the allocation is unchanged.
    pub(crate) fn try_shrink(&mut self, new_cap: usize) -> Result<(), AcquireError> {
        debug_assert!(new_cap > 0 && new_cap < self.cap);
        let old = Self::layout(self.cap, self.align)?;
        // SAFETY: `ptr` was allocated by the global allocator with `old`
        // (`cap > new_cap > 0`, so not the dangling pointer of an empty
        // buffer); `new_cap` is not zero and, below `cap`, fits `isize`
        // once rounded up to `align`, as `old` did.
        let ptr = unsafe { alloc::realloc(self.ptr.as_ptr(), old, new_cap) };
        self.adopt(ptr, new_cap)
    }

    /// Hands the allocation to another owner, which frees it (a
    /// `Vec<u8>`, through `bytes`: a [`FrameBuf`](super::FrameBuf)'s
    /// frames): the buffer holds nothing from then on (capacity 0, the
    /// dangling pointer) and frees nothing.
    #[cfg(feature = "bytes")]
    pub(crate) fn give_up(&mut self) {
        self.ptr = Self::dangling(self.align);
        self.cap = 0;
    }

    /// The first byte.
    #[cfg(test)]
    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    /// The first byte, for writing.
    #[inline(always)]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Bytes allocated.
    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// The alignment of the first byte.
    #[inline(always)]
    pub(crate) fn alignment(&self) -> usize {
        self.align
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.cap == 0 {
            return;
        }
        // SAFETY: the size and alignment were accepted by `Layout` when the
        // buffer was allocated (or grown) to this capacity.
        let layout = unsafe { Layout::from_size_align_unchecked(self.cap, self.align) };
        // SAFETY: `self.ptr` was allocated by the global allocator with
        // `layout` and is freed once, here.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), layout) };
    }
}

/// An allocation keeps its bytes across reuse; what matters to a memory cap
/// is its capacity.
impl Recyclable for AlignedBuf {
    #[inline]
    fn reset(&mut self) {}

    #[inline]
    fn retained_bytes(&self) -> usize {
        self.cap
    }
}

impl fmt::Debug for AlignedBuf {
    /// The address, capacity and alignment; never the contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("ptr", &self.ptr)
            .field("capacity", &self.cap)
            .field("alignment", &self.align)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn aligned_as_asked() {
        for align in [1, 8, 64, 4096, 1 << 16] {
            for cap in [0, 1, 100, 4096, 10_000] {
                let buf = AlignedBuf::try_new(cap, align).unwrap();
                assert_eq!(buf.as_ptr().addr() % align, 0, "cap {cap} align {align}");
                assert_eq!(buf.capacity(), cap);
                assert_eq!(buf.retained_bytes(), cap);
            }
        }
    }

    #[test]
    fn shrink_keeps_the_head_and_the_alignment() {
        let mut buf = AlignedBuf::try_new(100_000, 4096).unwrap();
        // SAFETY: 8 bytes fit in the allocation; a literal does not overlap it.
        unsafe { buf.as_mut_ptr().copy_from(b"abcdefgh".as_ptr(), 8) };
        buf.try_shrink(4096).unwrap();
        assert_eq!((buf.capacity(), buf.as_ptr().addr() % 4096), (4096, 0));
        // SAFETY: the first 8 bytes were written and kept.
        let head = unsafe { std::slice::from_raw_parts(buf.as_ptr(), 8) };
        assert_eq!(head, b"abcdefgh");
    }

    #[test]
    fn grow_keeps_contents_and_alignment() {
        let mut buf = AlignedBuf::try_new(8, 4096).unwrap();
        // SAFETY: 8 bytes are allocated.
        unsafe { buf.as_mut_ptr().copy_from(b"abcdefgh".as_ptr(), 8) };
        buf.try_grow(100_000).unwrap();
        assert_eq!(buf.as_ptr().addr() % 4096, 0);
        // SAFETY: the first 8 bytes were written and kept by the growth.
        let head = unsafe { std::slice::from_raw_parts(buf.as_ptr(), 8) };
        assert_eq!(head, b"abcdefgh");
        let mut empty = AlignedBuf::try_new(0, 64).unwrap();
        empty.try_grow(10).unwrap();
        assert_eq!(empty.as_ptr().addr() % 64, 0);
    }

    #[test]
    fn impossible_sizes_are_errors() {
        let err = AlignedBuf::try_new(usize::MAX, 64).unwrap_err();
        assert_eq!(
            err,
            AcquireError::TooLarge {
                requested: usize::MAX,
                max: isize::MAX as usize - 63
            }
        );
        let mut buf = AlignedBuf::try_new(1, 1).unwrap();
        assert!(buf.try_grow(usize::MAX).is_err());
        assert_eq!(buf.capacity(), 1, "unchanged on error");
    }
}
