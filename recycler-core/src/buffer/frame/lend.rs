//! Lending a [`FrameBuf`]'s buffer to one `Bytes` that covers all of it, so
//! that [`split_to`](FrameBuf::split_to) slices every frame of the buffer
//! from it: one allocation per buffer (the shared count `bytes` makes at
//! the first slice), however many reads and frames, where a share of the
//! bytes written so far ([`FrameBuf::share`]) costs one per read that
//! completes frames.
//!
//! A `Bytes` may cover bytes not written yet only if it owns them. One
//! made from an owner (`Bytes::from_owner`) reads its bytes through a
//! `&[u8]` of all of them, and a shared reference's bytes stay frozen while
//! it is in use (Rust's aliasing model): the writes into the tail would
//! invalidate it. So the lending hands the allocation itself to `bytes`,
//! as a `Vec<u8>` of the whole capacity (zeroed first where it was never
//! written; the buffer remembers that across reuse), and the reader writes
//! through the pointer that `bytes` keeps, the provenance every frame's
//! pointer derives from. Only bytes no frame covers are written: the tail,
//! or, once the `Bytes` is unique again (no frame alive), any byte. The
//! `Buf` keeps its pointer and capacity meanwhile but touches neither.
//!
//! The lending ends in one of two ways:
//! - **Reclaimed**, when no frame is alive (the `Bytes` is unique): the
//!   `Vec` is taken back (`Vec::from(Bytes)`, which hands a unique `Bytes`'
//!   own allocation back without copying: checked) and forgotten; the `Buf`
//!   owns its allocation again, and returns to the pool as any buffer does.
//! - **Given away**, when the reader lets the buffer go (a refill into a
//!   fresh buffer, `release_if_empty`, its drop) while frames are alive:
//!   the allocation stays with them, freed by `bytes` as the last drops;
//!   the `Buf` forgets it and leaves the pool (a release and a remove),
//!   its bytes off the ledger from then on.
//!
//! So a buffer is lent only where a `Vec<u8>` can own its allocation and
//! the ledger need not follow it: alignment 1 (the pool's default) and no
//! memory limit. Under a limit, a given-away buffer would leave the books
//! while frames still hold its memory; there the reader shares per read,
//! and every byte stays counted until its frames drop.

use std::mem::{self, ManuallyDrop};
use std::ptr::NonNull;

use ::bytes::{Buf as _, Bytes};

use super::FrameBuf;
use crate::buffer::owned::OwnedPooledBuf;
use crate::loom::Arc;

impl FrameBuf {
    /// Lends the buffer to a `Bytes` of all of it, kept as the share that
    /// `split_to` slices frames from, if it can: no frame of the buffer is
    /// alive, its alignment is 1 and the pool has no memory limit. Returns
    /// whether it did.
    pub(super) fn lend(&mut self) -> bool {
        if self.lent || self.cap == 0 || self.pool.pool().config().memory_limit.is_some() {
            return false;
        }
        let (written, cap) = (self.len.max(self.init), self.cap);
        let Some(buf) = self.exclusive() else {
            return false;
        };
        if buf.alignment() != 1 {
            return false;
        }
        // SAFETY: `base[..len]` and `base[..init]` are initialized (the
        // invariants), and within the capacity.
        unsafe { buf.set_len(written) };
        let first = buf.init_to(cap);
        // SAFETY: `first[..cap]` is the buffer's whole allocation, made by
        // the global allocator with `cap` bytes and alignment 1 (as a
        // `Vec<u8>`'s; `cap > 0`), all of it initialized now; the `Buf`
        // keeps its pointer but neither reads, writes nor frees it until the
        // lending ends (the module docs).
        let whole = unsafe { Vec::from_raw_parts(first, cap, cap) };
        self.root = Bytes::from(whole);
        self.root_start = 0;
        // The pointer `bytes` keeps: the reader writes through it from now on.
        self.base = NonNull::new(self.root.as_ptr().cast_mut()).unwrap_or(self.base);
        self.init = cap;
        self.lent = true;
        true
    }

    /// Whether no frame split off the buffer is alive (and there is a
    /// buffer): the reader may write any byte of it. A lent buffer stays
    /// lent.
    pub(super) fn alone(&mut self) -> bool {
        if self.lent {
            return unique(&self.root);
        }
        self.exclusive().is_some()
    }

    /// Ends the lending if no frame is alive, the buffer kept: its
    /// allocation is the `Buf`'s again. `false` if frames hold it (still
    /// lent); `true` if it is not lent (any more).
    pub(super) fn reclaim(&mut self) -> bool {
        if !self.lent {
            return true;
        }
        if !unique(&self.root) {
            return false;
        }
        let Some(buf) = self.buf.as_mut().and_then(Arc::get_mut) else {
            unreachable!("a lent buffer is the reader's alone");
        };
        take_back(mem::take(&mut self.root), buf);
        // The `Buf`'s pointer again: the same address, the provenance of
        // the allocation itself.
        self.base = NonNull::new(buf.as_mut_ptr()).unwrap_or(self.base);
        self.root_start = 0;
        self.lent = false;
        true
    }

    /// Lets the buffer go: back to the pool, once the frames split off it
    /// drop (a lent one: reclaimed now if none is alive, else given away to
    /// them). The reader has no buffer after.
    pub(super) fn let_go(&mut self) {
        let root = mem::take(&mut self.root);
        self.root_start = 0;
        let buf = self.buf.take();
        if mem::replace(&mut self.lent, false) {
            end_lending(root, buf);
        }
    }
}

impl Drop for FrameBuf {
    /// Lets the buffer go: back to the pool once the frames split off it
    /// drop (a lent buffer's allocation reclaimed, or left to them).
    fn drop(&mut self) {
        if self.lent {
            self.let_go();
        }
    }
}

/// Ends the lending of `buf`'s allocation to `root`, whose frames may still
/// be alive: reclaimed into `buf` if `root` is unique (`buf` then returns
/// to the pool as it drops), else given away to the frames (`buf`
/// discarded, the allocation theirs).
pub(super) fn end_lending(root: Bytes, buf: Option<Arc<OwnedPooledBuf>>) {
    let Some(buf) = buf else {
        debug_assert!(false, "a lent buffer is the reader's");
        return;
    };
    let Ok(mut buf) = Arc::try_unwrap(buf) else {
        unreachable!("a lent buffer is the reader's alone");
    };
    if unique(&root) {
        take_back(root, &mut buf);
        drop(buf);
    } else {
        // The `Buf` forgets the allocation first: should the frames drop
        // meanwhile, `root` is the last `Bytes` and frees it.
        OwnedPooledBuf::discard_given_up(buf);
        drop(root);
    }
}

/// Whether `root` is the only `Bytes` of its allocation: no frame is alive.
/// If so, every use of the frames that were happens before the caller's
/// writes: `bytes` reads its count `Relaxed` here, so an `Acquire` fence
/// pairs with the `Release` decrement of each frame's drop, as
/// `Arc::get_mut`'s load does. (The count is `bytes`' own `std` atomic, not
/// one of the loom facade's.)
fn unique(root: &Bytes) -> bool {
    let unique = root.is_unique();
    if unique {
        std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
    }
    unique
}

/// Takes the allocation back from `root`, the only `Bytes` of it: the `Buf`
/// of `buf`, which kept its pointer and capacity, owns it again.
fn take_back(mut root: Bytes, buf: &mut OwnedPooledBuf) {
    debug_assert!(root.is_unique(), "no frame is alive");
    let cap = root.len();
    // Nothing to copy back to the front: the `Vec` comes back empty.
    root.advance(cap);
    // `bytes` hands a unique `Bytes`' own allocation back, whole; forgotten,
    // since the `Buf` owns it.
    let whole = ManuallyDrop::new(Vec::from(root));
    if whole.as_ptr() != buf.as_mut_ptr().cast_const() || whole.capacity() != buf.capacity() {
        // Not the allocation lent (a `bytes` that copied): neither it nor
        // the `Buf` could free theirs soundly. No `bytes` release does this.
        std::process::abort();
    }
}
