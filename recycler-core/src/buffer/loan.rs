//! [`Loan`]: a pooled buffer while a guard holds it. The guard keeps the
//! buffer's pointer, length and capacity as fields of its own, copied out of
//! the [`Buf`] when the buffer is lent and written back when it returns.
//!
//! Why: the `Buf` lives on the heap, and so do the bytes a guard writes. To
//! the compiler a write through the buffer's pointer may change the `Buf`'s
//! length, so with the length kept there, every `extend_from_slice` reloaded
//! it and stored it back: a chain of store-to-load forwardings through
//! memory, one per write. An encoder writing twenty small fields into a
//! `PooledBuf` ran 1.1–1.8× slower than into a reused `Vec<u8>` (W9).
//! Fields of the guard, which the writes cannot alias (`&mut self`), stay in
//! registers as a `Vec`'s do.

use std::mem::MaybeUninit;
use std::ptr::{self, NonNull};
use std::slice;

use super::buf::Buf;

/// A buffer lent to a guard, with its pointer, length and capacity at hand.
///
/// Invariants: `ptr` and `cap` are the buffer's allocation's, `len <= cap`,
/// and the bytes `..len` are initialized; the `Buf`'s own length is stale
/// while lent (only [`with_buf`](Self::with_buf) and
/// [`into_buf`](Self::into_buf) bring it up to date).
pub(crate) struct Loan {
    buf: Box<Buf>,
    ptr: NonNull<u8>,
    len: usize,
    cap: usize,
}

impl Loan {
    #[inline(always)]
    pub(crate) fn new(mut buf: Box<Buf>) -> Self {
        // SAFETY: the allocation's pointer is never null (a dangling,
        // aligned one for an empty buffer).
        let ptr = unsafe { NonNull::new_unchecked(buf.as_mut_ptr()) };
        Self {
            ptr,
            len: buf.len(),
            cap: buf.capacity(),
            buf,
        }
    }

    /// The buffer, its length up to date, as it returns to the pool.
    #[inline(always)]
    pub(crate) fn into_buf(self) -> Box<Buf> {
        let Self { mut buf, len, .. } = self;
        // SAFETY: `len <= cap` and `..len` is initialized (the invariants).
        unsafe { buf.set_len(len) };
        buf
    }

    /// The buffer itself, its length stale (see the invariants); for a
    /// growth, which is given the length and then [`refresh`](Self::refresh)es
    /// the loan. Lending only the `Buf` (on the heap), not the loan, keeps the
    /// loan's fields out of the out-of-line call, so they stay in registers.
    #[inline(always)]
    pub(crate) fn buf_mut(&mut self) -> &mut Buf {
        &mut self.buf
    }

    /// Takes the pointer and capacity back from the buffer, after a growth.
    #[inline(always)]
    pub(crate) fn refresh(&mut self) {
        // SAFETY: as in `new`.
        self.ptr = unsafe { NonNull::new_unchecked(self.buf.as_mut_ptr()) };
        self.cap = self.buf.capacity();
    }

    /// Runs `f` on the buffer with its length up to date (growing it, say),
    /// then takes the pointer, length and capacity back from it.
    pub(crate) fn with_buf<R>(&mut self, f: impl FnOnce(&mut Buf) -> R) -> R {
        // SAFETY: as in `into_buf`.
        unsafe { self.buf.set_len(self.len) };
        let r = f(&mut self.buf);
        // SAFETY: as in `new`.
        self.ptr = unsafe { NonNull::new_unchecked(self.buf.as_mut_ptr()) };
        self.len = self.buf.len();
        self.cap = self.buf.capacity();
        r
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.ptr.as_ptr()
    }

    #[inline(always)]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// The written bytes.
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `..len` is initialized and inside the allocation, which
        // the loan owns (through its `Buf`) and lends out only through
        // `&self`/`&mut self`.
        unsafe { slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The written bytes, mutable.
    #[inline(always)]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as in `as_slice`, with a unique borrow of `self`.
        unsafe { slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes after the written part, up to the capacity.
    #[inline(always)]
    pub(crate) fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<u8>] {
        // SAFETY: `len <= cap`, so `len..cap` lies inside the allocation;
        // `MaybeUninit` makes no claim about its contents, and the unique
        // borrow of `self` keeps everything else off it.
        unsafe {
            slice::from_raw_parts_mut(
                self.ptr.as_ptr().add(self.len).cast::<MaybeUninit<u8>>(),
                self.cap - self.len,
            )
        }
    }

    /// Sets the length.
    ///
    /// # Safety
    ///
    /// `new_len <= capacity()`, and the bytes `..new_len` are initialized.
    #[inline(always)]
    pub(crate) unsafe fn set_len(&mut self, new_len: usize) {
        debug_assert!(new_len <= self.cap);
        self.len = new_len;
    }

    /// Shortens the written part to `len` bytes (no-op if already shorter).
    #[inline(always)]
    pub(crate) fn truncate(&mut self, len: usize) {
        if len < self.len {
            self.len = len;
        }
    }

    /// Appends `bytes`; the caller has made room for them.
    #[inline(always)]
    pub(crate) fn append_within_capacity(&mut self, bytes: &[u8]) {
        debug_assert!(bytes.len() <= self.cap - self.len);
        // SAFETY: the caller has checked that `bytes` fits after `len`; a
        // `&[u8]` cannot overlap the allocation, which `&mut self` holds
        // uniquely.
        unsafe {
            ptr::copy_nonoverlapping(bytes.as_ptr(), self.ptr.as_ptr().add(self.len), bytes.len());
        }
        self.len += bytes.len();
    }

    /// Appends `n` copies of `value`; the caller has made room for them.
    #[inline(always)]
    pub(crate) fn fill_within_capacity(&mut self, value: u8, n: usize) {
        debug_assert!(n <= self.cap - self.len);
        // SAFETY: the caller has checked that `n` bytes fit after `len`.
        unsafe { self.ptr.as_ptr().add(self.len).write_bytes(value, n) };
        self.len += n;
    }

    /// [`Buf::init_to`], through the buffer: makes the first `len` bytes
    /// initialized and the length `len`; returns the first byte.
    pub(crate) fn init_to(&mut self, len: usize) -> *mut u8 {
        self.with_buf(|buf| buf.init_to(len));
        self.ptr.as_ptr()
    }
}
