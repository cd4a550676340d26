//! What keeps a pool alive for its owned buffers: a count of units
//! ([`crate::keep`]), one for the [`BufferPool`](super::BufferPool)s that
//! share the pool, one per owned buffer (and per [`FrameBuf`]) out, the
//! rest credits in the caches of the pool's buckets. A bucket's caches hold
//! credits of the pool's count, not of the bucket's own: an owned buffer
//! keeps the whole pool alive (its release reaches the ledger, the idle
//! accounts and the index), and a bucket lives as long as its pool.
//!
//! An owned buffer acquired on the owner path takes a credit of its
//! thread's cache of the bucket, inside the marked operation that found
//! the cache open, and one released there returns one, inside the push:
//! no atomic read-modify-write (the owner paths, [`super::owner`]).
//! Elsewhere a unit moves by one on the count, given back after the
//! release is done (the last thing it does with the pool).
//!
//! When the last `BufferPool` drops, it orphans every bucket made so far,
//! so that their caches' credits come back to the count (and, shut for
//! good, their releases give units straight back), then gives the handles'
//! unit back. A bucket made afterwards (by a `FrameBuf` refilling, or a
//! release of an owned buffer) is orphaned as it is made.
//!
//! [`FrameBuf`]: super::FrameBuf

use std::ptr::NonNull;

use super::buf::Buf;
use super::shared::PoolShared;
use super::sizes::GROWN;
use crate::home::Home;
use crate::loom::{Ordering, fence};
use crate::shared::Shared;

/// A pool's shared state as an owned buffer (or a `FrameBuf`) reaches it:
/// a pointer, held only beside a unit of the pool's keep-alive count,
/// which keeps the state alive.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PoolPtr(NonNull<PoolShared>);

// SAFETY: a pointer to `PoolShared`, which is `Send + Sync`, kept alive by
// the unit its holder holds.
unsafe impl Send for PoolPtr {}
// SAFETY: as above.
unsafe impl Sync for PoolPtr {}

impl PoolPtr {
    /// A pointer to `pool`'s state.
    pub(crate) fn new(pool: &PoolShared) -> Self {
        Self(NonNull::from(pool))
    }

    /// The state.
    ///
    /// # Safety
    ///
    /// The caller holds a unit of the pool's count for `'a` (or a handle).
    #[inline(always)]
    pub(crate) unsafe fn get<'a>(self) -> &'a PoolShared {
        // SAFETY: the caller's guarantee.
        unsafe { self.0.as_ref() }
    }

    /// The raw pointer, for the paths that may let the state go.
    #[inline(always)]
    pub(crate) fn as_ptr(self) -> *const PoolShared {
        self.0.as_ptr()
    }
}

/// A unit of a pool's keep-alive count on its own: a `FrameBuf`'s, for the
/// buffers it takes after a split (it may outlive every handle of its
/// pool). Given back when dropped.
#[cfg(feature = "bytes")]
#[derive(Debug)]
pub(crate) struct PoolUnit(PoolPtr);

#[cfg(feature = "bytes")]
impl PoolUnit {
    /// Takes a unit of `pool`'s count; the caller holds a handle of the
    /// pool or a unit of its count.
    pub(crate) fn take(pool: &PoolShared) -> Self {
        pool.take_unit();
        Self(PoolPtr::new(pool))
    }

    /// The pool.
    pub(crate) fn pool(&self) -> &PoolShared {
        // SAFETY: this holds a unit of the pool's count.
        unsafe { self.0.get() }
    }
}

#[cfg(feature = "bytes")]
impl Drop for PoolUnit {
    fn drop(&mut self) {
        // SAFETY: the unit of a live pool, held up to here; `self` is not
        // the pool's.
        unsafe { PoolShared::give_unit(self.0.as_ptr(), None) };
    }
}

impl PoolShared {
    /// Takes a unit of the count, for an owned buffer made off the owner
    /// path (or a `FrameBuf`): `Relaxed`, since the caller holds a handle
    /// or a unit already.
    #[inline]
    pub(crate) fn take_unit(&self) {
        self.keep().take(1);
    }

    /// Gives back the unit of an owned buffer of bucket `idx` (past the
    /// last: none) released, or of a `FrameBuf` dropped: as a credit of the
    /// calling thread's cache of the bucket, if it has one, else to the
    /// count, which may let the pool go. An associated function of a raw
    /// pointer, so that no reference into the pool is a live argument when
    /// it is freed.
    ///
    /// # Safety
    ///
    /// `this` is alive, kept by the unit given back; the caller touches
    /// nothing of it afterwards and holds no reference into it as an
    /// argument of its own or of a caller of its.
    pub(crate) unsafe fn give_unit(this: *const Self, idx: Option<usize>) {
        let let_go = {
            // SAFETY: alive until the unit goes back, below.
            let pool = unsafe { &*this };
            pool.liveness().check();
            let mine = idx
                .and_then(|idx| pool.buckets().get(idx))
                .and_then(|bucket| bucket.made())
                .and_then(|recycler| recycler.inner().registered_local());
            match mine {
                Some(mine) => mine.return_credit(pool.keep()),
                None => pool.keep().give(1),
            }
        };
        if let Some(let_go) = let_go {
            // SAFETY: no reference into the pool is left (the caller's
            // guarantee for its own).
            unsafe { let_go.run() };
        }
    }

    /// Returns an owned buffer: the owner path, which returns the buffer's
    /// unit as a credit in the same marked push, else the slow release,
    /// then the unit given back.
    ///
    /// # Safety
    ///
    /// `this` is the buffer's pool, kept alive by the buffer's unit, which
    /// this gives back; the caller holds no reference into the pool as an
    /// argument.
    #[inline(always)]
    pub(crate) unsafe fn release_owned(this: PoolPtr, buf: Box<Buf>, home: Home<Buf>, origin: u32) {
        // SAFETY: alive (the caller's guarantee) until the unit goes back.
        let pool = unsafe { this.get() };
        let Err(buf) = pool.release_crediting(buf, home, origin) else {
            return;
        };
        // SAFETY: the caller's guarantee; `pool` is a local, not used
        // after.
        unsafe { Self::release_owned_slow(this.as_ptr(), buf, home, origin) };
    }

    /// [`release_owned`](Self::release_owned) out of line, for the guard's
    /// `Drop` (as [`release_parts`](Self::release_parts) for a borrowed
    /// one).
    ///
    /// # Safety
    ///
    /// As for [`release_owned`](Self::release_owned).
    #[inline(never)]
    pub(crate) unsafe fn release_owned_parts(
        this: PoolPtr,
        buf: Box<Buf>,
        home: Home<Buf>,
        origin: u32,
    ) {
        // SAFETY: the caller's guarantee.
        unsafe { Self::release_owned(this, buf, home, origin) };
    }

    /// [`release_owned`](Self::release_owned) off the owner path: the slow
    /// release, then the unit given back (the last touch), whatever
    /// happens in between.
    ///
    /// # Safety
    ///
    /// As for [`release_owned`](Self::release_owned).
    #[inline(never)]
    pub(crate) unsafe fn release_owned_slow(
        this: *const Self,
        buf: Box<Buf>,
        home: Home<Buf>,
        origin: u32,
    ) {
        let unit = UnitBack::of(this, origin);
        // SAFETY: alive while the unit is out (`unit` gives it back).
        let pool = unsafe { &*unit.pool };
        pool.release_off(buf, home, origin);
        // `unit` drops here (or as a panic unwinds through here).
    }

    /// Frees an owned buffer without pooling it, then gives its unit back.
    ///
    /// # Safety
    ///
    /// As for [`release_owned`](Self::release_owned).
    pub(crate) unsafe fn discard_owned(
        this: *const Self,
        buf: Box<Buf>,
        home: Home<Buf>,
        origin: u32,
    ) {
        let unit = UnitBack::of(this, origin);
        // SAFETY: alive while the unit is out (`unit` gives it back).
        let pool = unsafe { &*unit.pool };
        pool.discard(buf, home, origin);
    }

    /// For the last handle, as it drops: every bucket made so far is
    /// orphaned, its caches' credits back in the count (which the
    /// handles' unit still holds above 0), and a bucket made from now on
    /// is orphaned as it is made ([`orphan_if_late`](Self::orphan_if_late)).
    pub(crate) fn orphan(&self) {
        self.liveness().check();
        self.set_orphaned();
        // Pairs with the fence in `orphan_if_late`: either the maker of a
        // bucket sees the flag, or the walk below sees the bucket.
        fence(Ordering::SeqCst);
        for bucket in self.buckets() {
            if let Some(recycler) = bucket.made() {
                recycler.inner().orphan();
            }
        }
    }

    /// For the thread that has just made bucket `inner`: orphans it if the
    /// pool's last handle has dropped (whose walk may have missed it).
    pub(crate) fn orphan_if_late(&self, inner: &Shared<Buf>) {
        // Pairs with the fence in `orphan`.
        fence(Ordering::SeqCst);
        if self.is_orphaned() {
            inner.orphan();
        }
    }
}

/// Gives an owned buffer's unit back as it drops: after the release, or as
/// a panic unwinds through it.
struct UnitBack {
    pool: *const PoolShared,
    /// The bucket the buffer came from (past the last: none).
    idx: Option<usize>,
}

impl UnitBack {
    /// The unit of an owned buffer of `this` pool, of origin `origin`.
    fn of(this: *const PoolShared, origin: u32) -> Self {
        Self {
            pool: this,
            idx: Some((origin & !GROWN) as usize),
        }
    }
}

impl Drop for UnitBack {
    fn drop(&mut self) {
        // SAFETY: the unit of a live pool, held up to here; the frame that
        // made this guard holds no reference into the pool as an argument
        // (`release_owned_slow`'s and `discard_owned`'s contract).
        unsafe { PoolShared::give_unit(self.pool, self.idx) };
    }
}

#[cfg(all(test, not(loom)))]
mod tests;
