//! [`Buf`]: the owned byte buffer that the pool keeps and lends: an
//! aligned allocation, the length written, and the ledger its bytes are
//! charged to. It derives [`Recyclable`] like any user type would: resetting
//! it forgets what was written and keeps the allocation.

use std::fmt;

use recycler_derive::Recyclable;

use super::ledger::Ledger;
use super::raw::AlignedBuf;
use crate::loom::Arc;

/// An aligned byte buffer with a length, charged to a pool's [`Ledger`].
///
/// Invariants: `len <= raw.capacity()`, `init <= raw.capacity()`, and the
/// bytes `..max(len, init)` are initialized.
#[derive(Recyclable)]
pub(crate) struct Buf {
    /// The allocation; reset keeps it, and it weighs its capacity.
    raw: AlignedBuf,
    /// Bytes written; reset to 0.
    len: usize,
    /// Bytes known to be initialized from the start, kept across reuse so
    /// that a scope need not zero the same memory twice. Only scopes raise
    /// it (the owner path does not pay for it); it never shrinks.
    #[recycle(skip)]
    init: usize,
    /// The bytes of the capacity that are on the ledger; credited back when
    /// the buffer drops. The capacity, except for an overdraft: a buffer
    /// allocated, or grown, past the `memory_limit` (see
    /// [`super::limit`]) holds the rest outside the ledger, and is
    /// never pooled.
    #[recycle(skip)]
    charged: usize,
    /// Where the capacity is charged; credited back when the buffer drops.
    #[recycle(skip)]
    ledger: Arc<Ledger<Box<Buf>>>,
}

impl Buf {
    /// Wraps `raw`, whose capacity the caller has charged to `ledger`.
    pub(crate) fn new(raw: AlignedBuf, ledger: Arc<Ledger<Box<Buf>>>) -> Self {
        Self {
            charged: raw.capacity(),
            raw,
            len: 0,
            init: 0,
            ledger,
        }
    }

    /// Wraps `raw`, an overdraft: none of its bytes are on `ledger`, which
    /// the caller has told of them ([`Ledger::overdraw`]).
    pub(crate) fn overdraft(raw: AlignedBuf, ledger: Arc<Ledger<Box<Buf>>>) -> Self {
        Self {
            charged: 0,
            raw,
            len: 0,
            init: 0,
            ledger,
        }
    }

    /// Whether some of its bytes are outside the ledger: an overdraft,
    /// never pooled.
    #[inline(always)]
    pub(crate) fn overdrawn(&self) -> bool {
        self.charged != self.raw.capacity()
    }

    /// Records `bytes` more of the capacity as on the ledger, after a growth
    /// the caller charged them for.
    pub(crate) fn charge(&mut self, bytes: usize) {
        self.charged += bytes;
        debug_assert!(self.charged <= self.raw.capacity());
    }

    #[inline(always)]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline(always)]
    pub(crate) fn capacity(&self) -> usize {
        self.raw.capacity()
    }

    #[inline(always)]
    pub(crate) fn alignment(&self) -> usize {
        self.raw.alignment()
    }

    #[cfg(test)]
    #[inline(always)]
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.raw.as_ptr()
    }

    #[inline(always)]
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.raw.as_mut_ptr()
    }

    /// The written bytes.
    #[cfg(test)]
    #[inline(always)]
    pub(crate) fn as_slice(&self) -> &[u8] {
        // SAFETY: `..len` is initialized and inside the allocation, which
        // `self` owns and nothing else writes while it is borrowed.
        unsafe { std::slice::from_raw_parts(self.raw.as_ptr(), self.len) }
    }

    /// The written bytes, mutable.
    #[cfg(test)]
    #[inline(always)]
    pub(crate) fn as_mut_slice(&mut self) -> &mut [u8] {
        let len = self.len;
        // SAFETY: as in `as_slice`, with a unique borrow of `self`.
        unsafe { std::slice::from_raw_parts_mut(self.raw.as_mut_ptr(), len) }
    }

    /// Sets the length.
    ///
    /// # Safety
    ///
    /// `new_len <= capacity()`, and the bytes `..new_len` are initialized.
    #[inline(always)]
    pub(crate) unsafe fn set_len(&mut self, new_len: usize) {
        debug_assert!(new_len <= self.capacity());
        self.len = new_len;
    }

    /// Appends `bytes`; the caller has made room for them.
    #[cfg(test)]
    #[inline(always)]
    pub(crate) fn append_within_capacity(&mut self, bytes: &[u8]) {
        debug_assert!(bytes.len() <= self.capacity() - self.len);
        // SAFETY: the caller has checked that `bytes` fits after `len`; a
        // `&[u8]` cannot overlap the unique allocation of `self`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                bytes.as_ptr(),
                self.raw.as_mut_ptr().add(self.len),
                bytes.len(),
            );
        }
        self.len += bytes.len();
    }

    /// Makes the first `len` bytes (within the capacity) initialized, zeroing
    /// only what was never written, and sets the length to `len`: the
    /// contents are whatever the buffer held before.
    pub(crate) fn init_to(&mut self, len: usize) {
        debug_assert!(len <= self.capacity());
        self.init = self.init.max(self.len);
        if self.init < len {
            let from = self.init;
            // SAFETY: `from..len` is inside the allocation (`len <= cap`).
            unsafe { self.raw.as_mut_ptr().add(from).write_bytes(0, len - from) };
            self.init = len;
        }
        self.len = len;
    }

    /// Prepares the buffer for its next user: the derived
    /// [`Recyclable::reset`](crate::Recyclable::reset), which sets the
    /// length to 0 and keeps the allocation. The pool calls it when it lends
    /// a pooled buffer out rather than when it takes one back, so that its
    /// release path never touches the buffer's header right after the user
    /// wrote the buffer (a store-heavy `memset` makes those loads slow).
    #[inline(always)]
    pub(crate) fn reset(&mut self) {
        crate::Recyclable::reset(self);
    }

    /// Shrinks the allocation to `capacity` bytes (less than it has, at
    /// least 1), emptying the buffer. Returns the bytes that leave the
    /// ledger's charge, which the caller frees on the ledger; 0 if the
    /// allocator failed (the buffer is then as it was, emptied).
    pub(crate) fn shrink_to(&mut self, capacity: usize) -> usize {
        debug_assert!(!self.overdrawn());
        self.len = 0;
        let before = self.raw.capacity();
        if self.raw.try_shrink(capacity).is_err() {
            return 0;
        }
        self.init = self.init.min(capacity);
        self.charged = capacity;
        before - capacity
    }

    /// Hands the allocation to another owner, which frees it
    /// ([`AlignedBuf::give_up`]): its bytes leave the ledger now, as if the
    /// buffer had dropped, and the buffer is left empty (capacity 0,
    /// nothing charged), for its guard to discard.
    #[cfg(feature = "bytes")]
    pub(crate) fn give_up_allocation(&mut self) {
        let over = self.raw.capacity() - self.charged;
        if over != 0 {
            self.ledger.repay(over as u64);
        }
        if self.charged != 0 {
            self.ledger.free(self.charged as u64);
        }
        self.charged = 0;
        self.len = 0;
        self.init = 0;
        self.raw.give_up();
    }

    /// The allocation, for growing it. The caller keeps the ledger in step.
    pub(crate) fn raw_mut(&mut self) -> &mut AlignedBuf {
        &mut self.raw
    }
}

impl Drop for Buf {
    fn drop(&mut self) {
        let over = self.raw.capacity() - self.charged;
        if over != 0 {
            self.ledger.repay(over as u64);
        }
        if self.charged != 0 {
            self.ledger.free(self.charged as u64);
        }
    }
}

impl fmt::Debug for Buf {
    /// Length, capacity and alignment; never the contents.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buf")
            .field("len", &self.len)
            .field("capacity", &self.capacity())
            .field("alignment", &self.alignment())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::Recyclable;

    fn buf(cap: usize) -> Buf {
        let ledger = Arc::new(Ledger::new(None));
        ledger.charge(cap as u64).unwrap();
        Buf::new(AlignedBuf::try_new(cap, 8).unwrap(), ledger)
    }

    #[test]
    fn derived_reset_keeps_the_allocation() {
        let mut b = buf(64);
        b.append_within_capacity(b"hello");
        let ptr = b.as_ptr();
        assert_eq!(b.retained_bytes(), 64, "derived: the allocation's capacity");
        b.reset();
        assert_eq!((b.len(), b.capacity(), b.as_ptr()), (0, 64, ptr));
    }

    #[test]
    fn init_to_zeroes_only_fresh_bytes() {
        let mut b = buf(16);
        b.init_to(4);
        assert_eq!(b.as_slice(), b"\0\0\0\0");
        b.as_mut_slice().copy_from_slice(b"abcd");
        b.reset();
        b.init_to(8);
        assert_eq!(b.as_slice(), b"abcd\0\0\0\0", "kept what was initialized");
        assert_eq!(b.init, 8);
    }

    #[test]
    fn drop_credits_the_ledger() {
        let ledger = Arc::new(Ledger::new(Some(100)));
        ledger.charge(64).unwrap();
        let b = Buf::new(AlignedBuf::try_new(64, 1).unwrap(), Arc::clone(&ledger));
        assert_eq!(ledger.allocated(), 64);
        drop(b);
        assert_eq!(ledger.allocated(), 0);
    }
}
