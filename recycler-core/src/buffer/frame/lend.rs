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
//! - **Given away**, when the reader lets the buffer go for good
//!   (`release_if_empty`, its drop) while frames are alive: the
//!   allocation stays with them, freed by `bytes` as the last drops; the
//!   `Buf` forgets it and leaves the pool (a release and a remove), its
//!   bytes off the ledger from then on.
//!
//! A refill while frames are alive *retires* the lent buffer instead
//! ([`Retired`]): still lent, still in the pool's books, until its frames
//! drop; a later refill then writes into it again, still lent
//! ([`FrameBuf::refill_retired`]: no allocation, no trip through the pool),
//! and returns to the pool any other whose frames are gone, so that a
//! reader whose frames live a while turns over the same few buffers. Past
//! [`RETIRED`] of them the oldest is given away.
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
        // `first[..cap]` is the buffer's whole allocation, made by the global
        // allocator with `cap` bytes and alignment 1 (`cap > 0`), and all of
        // it is initialized now. The `Buf` keeps its pointer but neither
        // reads, writes nor frees it until the lending ends (module docs).
        // SAFETY: so it is a `Vec<u8>`'s allocation, owned by the `Vec` alone.
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
            end_lending(root, sole(buf));
        }
        self.retired.let_go();
    }
}

impl FrameBuf {
    /// Refills into a retired buffer whose frames have all dropped, if
    /// there is one that holds the unread bytes and `additional` more,
    /// rather than into a fresh one from the pool: the unread bytes move
    /// there and the current buffer, whose frames are alive, retires in its
    /// place. No allocation, no trip through the pool: the retired buffer
    /// is still lent, its `Bytes` (and the count `bytes` made for it)
    /// reused. Returns whether it did.
    pub(super) fn refill_retired(&mut self, additional: usize) -> bool {
        if !self.lent {
            return false;
        }
        let unread = self.len();
        let Some(next) = self.retired.take_unique(unread.saturating_add(additional)) else {
            return false;
        };
        let Some(guard) = self.buf.as_mut().and_then(Arc::get_mut) else {
            unreachable!("a lent buffer is the reader's alone");
        };
        let old_buf = mem::replace(guard, next.buf);
        let old_root = mem::replace(&mut self.root, next.root);
        let (old_base, from) = (self.base, self.pos);
        // The pointer `bytes` keeps for the retired buffer, as `lend` took.
        self.base = NonNull::new(self.root.as_ptr().cast_mut()).unwrap_or(self.base);
        self.cap = self.root.len();
        self.init = self.cap;
        self.pos = 0;
        self.root_start = 0;
        // `old_base[from..from + unread]` are the unread bytes of the
        // current buffer, initialized and kept alive by `old_root`;
        // `base[..unread]` lies in the retired one (`cap >= unread`), whose
        // frames have all dropped: the reader's alone.
        // SAFETY: so both ranges are valid, and they do not overlap (two
        // allocations).
        unsafe {
            std::ptr::copy_nonoverlapping(old_base.as_ptr().add(from), self.base.as_ptr(), unread);
        }
        self.len = unread;
        self.copied += unread as u64;
        self.retired.retire(old_root, old_buf);
        true
    }
}

/// Buffers retired at most (see [`Retired`]).
pub(super) const RETIRED: usize = 4;

/// A lent buffer the reader has moved on from: its `Bytes` and its guard.
struct Lent {
    root: Bytes,
    buf: OwnedPooledBuf,
}

/// Lent buffers that a refill moved on from while `split_to` frames still
/// held them, oldest first: still lent and in the pool's books until their
/// frames drop; then a refill writes into one again
/// ([`FrameBuf::refill_retired`]) or [`sweep`](Self::sweep) reclaims them,
/// back to the pool. At most [`RETIRED`]: past that the oldest is given
/// away to its frames.
#[derive(Default)]
pub(super) struct Retired([Option<Lent>; RETIRED]);

impl Retired {
    /// Retires `buf`, lent to `root`: reclaimed now if no frame holds it,
    /// else kept (the oldest given away if all the places are taken).
    pub(super) fn retire(&mut self, root: Bytes, buf: OwnedPooledBuf) {
        let mut lent = Lent { root, buf };
        if unique(&lent.root) {
            take_back(lent.root, &mut lent.buf);
            return;
        }
        self.sweep();
        if let Some(free) = self.0.iter_mut().find(|l| l.is_none()) {
            *free = Some(lent);
            return;
        }
        let oldest = self.0[0].take();
        self.0.rotate_left(1);
        self.0[RETIRED - 1] = Some(lent);
        if let Some(oldest) = oldest {
            end_lending(oldest.root, oldest.buf);
        }
    }

    /// Reclaims every retired buffer whose frames have all dropped: back to
    /// the pool. The rest keep their order.
    pub(super) fn sweep(&mut self) {
        for place in &mut self.0 {
            if place.as_ref().is_some_and(|l| unique(&l.root))
                && let Some(mut lent) = place.take()
            {
                take_back(lent.root, &mut lent.buf);
            }
        }
        // The rest stay oldest first, packed at the front.
        let mut next = 0;
        for i in 0..RETIRED {
            if self.0[i].is_some() {
                self.0.swap(next, i);
                next += 1;
            }
        }
    }

    /// Takes the oldest retired buffer whose frames have all dropped and
    /// that holds `capacity` bytes, if any: the reader's to write into.
    fn take_unique(&mut self, capacity: usize) -> Option<Lent> {
        let place = self.0.iter_mut().find(|l| {
            l.as_ref()
                .is_some_and(|l| l.root.len() >= capacity && unique(&l.root))
        })?;
        let lent = place.take();
        self.sweep();
        lent
    }

    /// Whether a retired buffer is still held by frames.
    pub(super) fn any(&self) -> bool {
        self.0.iter().any(Option::is_some)
    }

    /// Ends every retirement: reclaimed, or given away to the frames.
    fn let_go(&mut self) {
        for lent in self.0.iter_mut().filter_map(Option::take) {
            end_lending(lent.root, lent.buf);
        }
    }
}

impl Drop for Retired {
    fn drop(&mut self) {
        self.let_go();
    }
}

impl std::fmt::Debug for Retired {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Retired")
            .field("held", &self.0.iter().flatten().count())
            .finish()
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
fn end_lending(root: Bytes, mut buf: OwnedPooledBuf) {
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

/// The guard of a lent buffer, which only the reader holds.
fn sole(buf: Option<Arc<OwnedPooledBuf>>) -> OwnedPooledBuf {
    match buf.map(Arc::try_unwrap) {
        Some(Ok(buf)) => buf,
        _ => unreachable!("a lent buffer is the reader's alone"),
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
