//! The per-thread index of a pool ([`PoolIndex`], a part of the pool's
//! shared state): for each thread ([`PoolLocal`]), its cache of each bucket,
//! found through a small thread-local table keyed by pool id, so that the
//! owner paths reach a bucket's cache with two loads.
//!
//! An entry of the table exists only while the thread owns the index; an
//! index's cell for a bucket is set only while the thread owns that cache and
//! has no foreign releases pending in it (the slow release removes the cell,
//! the slow acquire, which sends them, puts it back). So the owner paths need
//! no other check. The thread's exit hook (registered when it claims the
//! index) removes the entry, publishes the thread's idle-memory delta and
//! gives the index up for a later thread, as the caches' own hooks give up
//! the caches.

use std::cell::Cell;
use std::ptr;

use super::buf::Buf;
use crate::cache::Local;
use crate::claim::{ClaimList, Claimable};
use crate::gate::GetGate;
use crate::idle::{DeltaCell, IdleAccount};
use crate::loom::{AtomicPtr, AtomicU64, Ordering, Weak, const_thread_local};
use crate::mine::Mine;
use crate::registry::{self, ExitFlush, NOBODY, Token};

/// One thread's index of its caches in one pool: the cache of each bucket
/// (null until the thread uses the bucket), and the thread's delta in the
/// pool's idle-memory account, which each indexed cache's idle cell points
/// to.
///
/// The cells are touched only by the owner, and only through shared
/// references (never `&mut PoolLocal`), so that the pointer to `caches`
/// kept in [`POOL_HOT`] stays valid.
pub(crate) struct PoolLocal {
    owner: AtomicU64,
    /// The caches, by bucket; each one owned by the owner of this index.
    /// Atomics, read and written `Relaxed` by the owner (plain loads and
    /// stores), because a thread taking a cache's contents clears its cell
    /// ([`crate::steal`]).
    caches: Box<[AtomicPtr<()>]>,
    /// The owner's unpublished idle bytes, under `max_idle_memory`.
    pub(crate) delta: DeltaCell,
    /// For each bucket, the bucket its buffers last grew into on the
    /// owner's releases ([`NO_BUCKET`] if none): where the owner's acquires
    /// of the bucket look when it is empty (`serve_larger`). Touched only
    /// by the owner.
    grown_to: Box<[Cell<u32>]>,
}

/// No bucket, in [`PoolLocal`]'s `grown_to`.
const NO_BUCKET: u32 = u32::MAX;

// SAFETY: the raw pointers point into the pool (bucket caches), which
// outlives every `PoolLocal` (they drop with it); the cells pass from one
// owner to the next with the `Release`/`Acquire` pair of the slot list.
unsafe impl Send for PoolLocal {}
// SAFETY: other threads touch only `owner` and `delta`, atomics; the cells
// (`caches`, `grown_to`) are touched only by the thread whose token is in
// `owner`.
unsafe impl Sync for PoolLocal {}

impl Claimable for PoolLocal {
    fn owner(&self) -> &AtomicU64 {
        &self.owner
    }
}

impl PoolLocal {
    fn new(buckets: usize) -> Self {
        Self {
            owner: AtomicU64::new(NOBODY),
            caches: (0..buckets)
                .map(|_| AtomicPtr::new(ptr::null_mut()))
                .collect(),
            delta: DeltaCell::new(),
            grown_to: (0..buckets).map(|_| Cell::new(NO_BUCKET)).collect(),
        }
    }

    /// The bucket that the owner's buffers of bucket `idx` last grew into,
    /// if any. Called by the owner only.
    pub(crate) fn grown_to(&self, idx: usize) -> Option<usize> {
        let to = self.grown_to.get(idx)?.get();
        (to != NO_BUCKET).then_some(to as usize)
    }

    /// Records that a buffer of bucket `from` grew into bucket `to` and was
    /// released by the owner. Called by the owner only.
    pub(crate) fn set_grown_to(&self, from: usize, to: usize) {
        if let Some(cell) = self.grown_to.get(from) {
            cell.set(u32::try_from(to).unwrap_or(NO_BUCKET));
        }
    }

    fn is_owned_by(&self, token: Token) -> bool {
        self.owner.load(Ordering::Relaxed) == token
    }

    /// Indexes `mine`, the calling thread's cache of bucket `idx`, in this
    /// index (whose delta cell the cache's idle cell already names, under a
    /// cap).
    ///
    /// # Safety
    ///
    /// The calling thread owns this index; `mine` is its cache of bucket
    /// `idx`, with no foreign releases pending.
    pub(crate) unsafe fn index(&self, idx: usize, mine: Mine<'_, Buf>) {
        debug_assert!(!mine.has_pending());
        let get = GetGate::Cell {
            cell: &self.caches[idx],
            local: ptr::from_ref(mine.local()).cast(),
        };
        // SAFETY: the cell is the calling thread's own index's (it owns
        // `self`), in this pool, which owns the cache.
        unsafe { mine.open(get) };
    }
}

/// The `caches` of the calling thread's index in one pool, as found in
/// [`POOL_HOT`] (one load less on the owner path than through the index).
#[derive(Clone, Copy)]
pub(crate) struct Bound {
    caches: *const AtomicPtr<()>,
}

impl Bound {
    /// The owner's cache of bucket `idx`, or null.
    ///
    /// # Safety
    ///
    /// `idx` is below the pool's number of buckets.
    #[inline(always)]
    pub(crate) unsafe fn cache(self, idx: usize) -> *const Local<Buf> {
        // SAFETY: `caches` points to the index's `caches`, one cell per
        // bucket (the caller's `idx` is in range), which live as long as the
        // index and never move (the box is never replaced).
        unsafe { (*self.caches.add(idx)).load(Ordering::Relaxed) }
            .cast_const()
            .cast()
    }

    /// Forgets the owner's cache of bucket `idx` until the slow acquire
    /// indexes it again.
    ///
    /// # Safety
    ///
    /// As for [`cache`](Self::cache).
    pub(crate) unsafe fn unset(self, idx: usize) {
        // SAFETY: as in `cache`.
        unsafe { (*self.caches.add(idx)).store(ptr::null_mut(), Ordering::Relaxed) }
    }
}

/// (pool id, the `caches` of the thread's `PoolLocal` in that pool).
type HotEntry = (u64, *const AtomicPtr<()>);

/// Entries of [`POOL_HOT`] (a power of two).
const POOL_HOT_SLOTS: usize = 4;

#[allow(
    clippy::declare_interior_mutable_const,
    reason = "only copied into the array"
)]
const EMPTY_HOT: Cell<HotEntry> = Cell::new((0, ptr::null()));

// The calling thread's pool indexes, direct-mapped by pool id. Pool ids are
// never reused, so an entry of a dropped pool never matches.
const_thread_local! {
    static POOL_HOT: [Cell<HotEntry>; POOL_HOT_SLOTS] = [EMPTY_HOT; POOL_HOT_SLOTS];
}

/// The pool's per-thread index: every thread's [`PoolLocal`], claimed from
/// a list the pool keeps and given up when the thread exits, found by the
/// thread through [`POOL_HOT`], keyed by the pool's id. A component of the
/// pool's shared state, which holds one.
pub(crate) struct PoolIndex {
    /// Unique for the life of the process; keys the threads' pool indexes.
    id: u64,
    /// The pool's buckets: each index has a cell for each.
    buckets: usize,
    /// Each thread's index of its caches.
    locals: ClaimList<PoolLocal>,
    /// The pool, as the target of thread-exit hooks.
    exit_hook: Weak<dyn ExitFlush>,
}

impl PoolIndex {
    /// The index of a pool of `buckets` buckets, whose threads' exit hooks
    /// run on `exit_hook`.
    pub(crate) fn new(buckets: usize, exit_hook: Weak<dyn ExitFlush>) -> Self {
        Self {
            id: registry::new_key(),
            buckets,
            locals: ClaimList::new(),
            exit_hook,
        }
    }

    /// The calling thread's index, if it is bound and the thread owns it.
    ///
    /// An entry exists only while the thread owns the index (see the module
    /// docs), so no ownership check is needed here.
    #[inline(always)]
    pub(crate) fn bound(&self) -> Option<Bound> {
        let (id, caches) = POOL_HOT
            .try_with(|hot| hot[self.id as usize & (POOL_HOT_SLOTS - 1)].get())
            .unwrap_or((0, ptr::null()));
        (id == self.id).then_some(Bound { caches })
    }

    /// Binds the calling thread's index (claiming it if need be) and puts it
    /// in [`POOL_HOT`]. `None` while the thread exits.
    pub(crate) fn bind(&self) -> Option<&PoolLocal> {
        let token = registry::assign();
        if !registry::is_live(token) {
            return None;
        }
        let registered = registry::registered(self.id).cast::<PoolLocal>();
        // SAFETY: a registered index of this pool's id is one of its
        // indexes (alive: `&self`).
        let pl = match unsafe { registered.as_ref() } {
            Some(pl) if pl.is_owned_by(token) => pl,
            _ => {
                let pl = self.locals.claim(token, || PoolLocal::new(self.buckets));
                // A reused index: forget the caches of its last owner, who
                // gave them up.
                pl.caches
                    .iter()
                    .for_each(|c| c.store(ptr::null_mut(), Ordering::Relaxed));
                pl.grown_to.iter().for_each(|c| c.set(NO_BUCKET));
                // SAFETY: `pl` lives in this pool's `locals`, at a fixed
                // address, as long as the pool, and the calling thread owns
                // it.
                let registered = unsafe {
                    registry::register(self.id, self.exit_hook.clone(), ptr::from_ref(pl).cast())
                };
                if !registered {
                    pl.owner.store(NOBODY, Ordering::Release);
                    return None;
                }
                pl
            }
        };
        let entry = (self.id, pl.caches.as_ptr());
        let _ = POOL_HOT.try_with(|hot| hot[self.id as usize & (POOL_HOT_SLOTS - 1)].set(entry));
        Some(pl)
    }

    /// The unpublished idle bytes of every thread's index (under
    /// `max_idle_memory`), summed.
    pub(crate) fn deltas(&self) -> i64 {
        self.locals
            .iter()
            .fold(0i64, |sum, pl| sum.wrapping_add(pl.delta.get()))
    }

    /// Forgets the calling thread's index in this pool: its entry in
    /// [`POOL_HOT`] and, if the thread owns `pl`, every cell of it.
    fn forget(&self, pl: &PoolLocal, token: Token) {
        let _ = POOL_HOT.try_with(|hot| {
            let slot = &hot[self.id as usize & (POOL_HOT_SLOTS - 1)];
            if slot.get().0 == self.id {
                slot.set((0, ptr::null()));
            }
        });
        if pl.is_owned_by(token) {
            pl.caches
                .iter()
                .for_each(|c| c.store(ptr::null_mut(), Ordering::Relaxed));
        }
    }

    /// Phase one of the thread's exit ([`ExitFlush::forget_on_exit`]):
    /// before any of its bucket caches is given up (their hooks may have
    /// registered before this one: a thread whose first call was `trim`),
    /// the thread's index in this pool is dead, so that no code running
    /// during the exit (an object's `Drop`, run by another recycler's hook,
    /// that acquires from this pool) reaches a cache through it.
    ///
    /// # Safety
    ///
    /// `local` is the pointer [`bind`](Self::bind) registered: this pool's
    /// `PoolLocal` of the calling thread.
    pub(crate) unsafe fn forget_on_exit(&self, local: *const (), token: Token) {
        // SAFETY: the pointer registered by `bind` (the caller's contract),
        // alive as long as the pool (`&self`).
        let pl = unsafe { &*local.cast::<PoolLocal>() };
        self.forget(pl, token);
    }

    /// Phase two ([`ExitFlush::flush_on_exit`]): the calling thread
    /// publishes its idle-memory delta into `idle`, the pool's account, and
    /// gives the index up.
    ///
    /// # Safety
    ///
    /// As for [`forget_on_exit`](Self::forget_on_exit).
    pub(crate) unsafe fn flush_on_exit(
        &self,
        local: *const (),
        token: Token,
        idle: Option<&IdleAccount>,
    ) {
        // SAFETY: as in `forget_on_exit`.
        let pl = unsafe { &*local.cast::<PoolLocal>() };
        self.forget(pl, token);
        if pl.is_owned_by(token) {
            if let Some(acct) = idle {
                acct.flush(&pl.delta);
            }
            pl.caches
                .iter()
                .for_each(|c| c.store(ptr::null_mut(), Ordering::Relaxed));
            pl.owner.store(NOBODY, Ordering::Release);
        }
    }
}
