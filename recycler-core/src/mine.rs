//! [`Mine`]: a cache the calling thread owns, as a type.
//!
//! Only a cache's owner may touch its owner-only state (the hot slot, the
//! batch, the pending releases), and only on the owner's own thread. A
//! `Mine` is that proof, made once where it is established, and `!Send`, so
//! that it never leaves the thread it was made on (as tokio's work-stealing
//! queue has a `Local` owner handle beside its shared `Steal` side). It is
//! made in four places, each of which states why the calling thread owns the
//! cache:
//!
//! - the thread's hot index ([`crate::registry::hot`]): an entry exists only
//!   while the thread owns the cache;
//! - a guard's home whose owner word is the thread's token
//!   ([`Home::mine`](crate::home::Home::mine));
//! - a claim ([`crate::owner`]'s `claim_local`), or the thread's registered
//!   cache checked against its token;
//! - the thread's exit hook, which the registry runs with the thread's own
//!   token ([`crate::exit`]), and a buffer pool's index of the thread's caches.
//!
//! Everything that works on the owner-only state then takes a `Mine`: the
//! ownership is no longer restated at each use. What still needs `unsafe` is
//! what ownership alone does not give: a closure that must not run user
//! code (which could re-enter the cache) while it holds the state, and the
//! unlocked accesses of the owner paths, which also need the cache open and
//! the thread inside a marked operation ([`crate::steal`]). The common
//! closures are safe methods here, each written once.
//!
//! A thread owns its caches until its exit hook gives them up
//! ([`Mine::abandon`]), after which it holds no `Mine` of them: the hook is
//! the last code of the thread to touch them.

use std::marker::PhantomData;
use std::ops::Deref;

use crate::cache::{ACCOUNTED, Cache, Entry, Local, Rest};
use crate::claim::Claimable;
use crate::gate::{self, CLOSED, GetGate};
use crate::idle::DeltaCell;
use crate::keep::{Credits, Keep, LetGo};
use crate::registry;

/// A cache the calling thread owns (see the module docs).
pub(crate) struct Mine<'a, T> {
    local: &'a Local<T>,
    /// Not `Send` or `Sync`: the proof holds on the owner's thread only.
    _thread: PhantomData<*const ()>,
}

impl<T> Clone for Mine<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Mine<'_, T> {}

impl<'a, T> Deref for Mine<'a, T> {
    type Target = Local<T>;

    #[inline(always)]
    fn deref(&self) -> &Local<T> {
        self.local
    }
}

impl<'a, T> Mine<'a, T> {
    /// The calling thread's proof of owning `local`.
    ///
    /// # Safety
    ///
    /// The calling thread owns `local` (its token is in the owner word) and
    /// does not give it up while the `Mine` lives (a thread gives its caches
    /// up only in its exit hook, through [`abandon`](Self::abandon)).
    #[inline(always)]
    pub(crate) unsafe fn new(local: &'a Local<T>) -> Self {
        Self {
            local,
            _thread: PhantomData,
        }
    }

    /// `local`, if the calling thread owns it (its token is in the owner
    /// word, flags aside): checked now, and true until the thread's exit
    /// hook gives the cache up, after which the thread's token reads
    /// `EXITED` and this finds nothing.
    #[inline]
    pub(crate) fn if_owned(local: &'a Local<T>) -> Option<Self> {
        // SAFETY: the owner word holds the calling thread's token, which no
        // other thread ever has (see `crate::registry`).
        local
            .is_owned_by(registry::current())
            .then(|| unsafe { Self::new(local) })
    }

    /// The cache, with the lifetime of the proof.
    #[inline(always)]
    pub(crate) fn local(self) -> &'a Local<T> {
        self.local
    }

    /// Runs `f` on the owner-only state: inside a marked operation while
    /// the owner path is open, else under the cache's lock (see
    /// [`crate::steal`]).
    ///
    /// # Safety
    ///
    /// `f` neither runs user code (`reset`, the factory, an object's `Drop`)
    /// nor reaches this cache's owner-only state again, so the unique borrow
    /// is never aliased.
    #[inline(always)]
    pub(crate) unsafe fn with_cache<R>(self, f: impl FnOnce(&mut Cache<'_, T>) -> R) -> R {
        gate::enter();
        if self.owner_word() & !ACCOUNTED == registry::current() {
            // SAFETY: the calling thread owns the cache (a `Mine`), which is
            // open, and it is inside a marked operation (see `crate::steal`);
            // `f` does not re-enter (the caller's guarantee).
            let r = unsafe { self.local.with_cache_unchecked(f) };
            gate::leave();
            return r;
        }
        gate::leave();
        let _lock = self.gate.lock();
        // SAFETY: the calling thread owns the cache and holds its lock; `f`
        // does not re-enter.
        unsafe { self.local.with_cache_unchecked(f) }
    }

    /// [`with_cache`](Self::with_cache), also counting a unit of the
    /// keep-alive count as a credit if `credit` and the cache is open (its
    /// owner path: the credit cannot be stranded there, see
    /// [`crate::keep`]). Returns `f`'s result and whether the credit was
    /// counted.
    ///
    /// # Safety
    ///
    /// As for [`with_cache`](Self::with_cache).
    #[inline(always)]
    pub(crate) unsafe fn with_cache_crediting<R>(
        self,
        credit: bool,
        f: impl FnOnce(&mut Cache<'_, T>) -> R,
    ) -> (R, bool) {
        gate::enter();
        if self.owner_word() & !ACCOUNTED == registry::current() {
            // SAFETY: the calling thread owns the cache (a `Mine`), which is
            // open, and it is inside a marked operation; `f` does not
            // re-enter (the caller's guarantee).
            let r = unsafe { self.local.with_cache_unchecked(f) };
            if credit {
                // SAFETY: as above; the closure runs no user code.
                unsafe { self.local.with_credit_unchecked(Credits::give) };
            }
            gate::leave();
            return (r, credit);
        }
        gate::leave();
        let _lock = self.gate.lock();
        // SAFETY: the calling thread owns the cache and holds its lock; `f`
        // does not re-enter.
        (unsafe { self.local.with_cache_unchecked(f) }, false)
    }

    /// Runs `f` on the owner-only state but the hot slot, with no mark and
    /// no lock: for the owner paths.
    ///
    /// # Safety
    ///
    /// The calling thread is inside a marked operation that found the cache
    /// open ([`crate::steal`]); `f` runs no user code and does not re-enter.
    #[inline(always)]
    pub(crate) unsafe fn with_rest_unchecked<R>(self, f: impl FnOnce(&mut Rest<T>) -> R) -> R {
        // SAFETY: the calling thread owns the cache and is inside a marked
        // operation that found it open: no stealer touches it meanwhile.
        unsafe { self.local.with_rest_unchecked(f) }
    }

    /// Runs `f` on the whole owner-only state, with no mark and no lock:
    /// for a buffer pool's owner paths.
    ///
    /// # Safety
    ///
    /// As for [`with_rest_unchecked`](Self::with_rest_unchecked).
    #[inline(always)]
    pub(crate) unsafe fn with_cache_unchecked<R>(
        self,
        f: impl FnOnce(&mut Cache<'_, T>) -> R,
    ) -> R {
        // SAFETY: as for `with_rest_unchecked`.
        unsafe { self.local.with_cache_unchecked(f) }
    }

    /// Takes the hot slot's object, with no mark and no lock: only its owner
    /// ever touches a plain recycler's slot ([`crate::steal`]).
    ///
    /// # Safety
    ///
    /// The cache is a plain recycler's (not a buffer pool's, whose slots
    /// stealers take).
    #[inline(always)]
    pub(crate) unsafe fn take_slot(self) -> Option<Box<T>> {
        // SAFETY: the calling thread owns the cache, of a plain recycler
        // (the caller's guarantee); `take` runs no user code.
        unsafe { self.local.with_slot_unchecked(Option::take) }
    }

    /// Puts `obj` in the hot slot if it is empty, with no mark and no lock;
    /// hands it back if the slot is full.
    ///
    /// # Safety
    ///
    /// As for [`take_slot`](Self::take_slot).
    #[inline(always)]
    pub(crate) unsafe fn fill_slot(self, obj: Box<T>) -> Option<Box<T>> {
        // SAFETY: as for `take_slot`; the closure stores into an empty slot
        // (dropping nothing) and runs no user code.
        unsafe {
            self.local.with_slot_unchecked(|slot| match slot {
                None => {
                    *slot = Some(obj);
                    None
                }
                Some(_) => Some(obj),
            })
        }
    }

    /// Takes a unit of `keep` for an owned guard the calling thread makes,
    /// from the cache's credits ([`Credits::take`]). No mark and no lock.
    ///
    /// # Safety
    ///
    /// A handle of the recycler (whose keep-alive count is `keep`) is alive,
    /// so that nobody takes the credits back meanwhile (stealers never touch
    /// them).
    #[inline(always)]
    pub(crate) unsafe fn take_credit(self, keep: &Keep) {
        // SAFETY: the calling thread owns the cache and a handle is alive
        // (the caller's guarantee); the closure runs no user code.
        unsafe { self.local.with_credit_unchecked(|c| c.take(keep)) };
    }

    /// Returns the unit of an owned guard released here, as a credit, inside
    /// a marked operation that found the cache open (the owner path of an
    /// owned guard's release).
    ///
    /// # Safety
    ///
    /// The calling thread is inside a marked operation that found the cache
    /// open ([`crate::steal`]).
    #[inline(always)]
    pub(crate) unsafe fn return_credit_unchecked(self) {
        // SAFETY: the caller's guarantee; the closure runs no user code.
        unsafe { self.local.with_credit_unchecked(Credits::give) };
    }

    /// Returns the unit of `keep` that an owned guard held, off the owner
    /// path: as a credit of this cache, unless the recycler's last handle
    /// has taken the cache's credits back (then the unit goes straight back
    /// to the count, which may have been its last: see [`Keep::give`]).
    pub(crate) fn return_credit(self, keep: &Keep) -> Option<LetGo> {
        gate::enter();
        if self.owner_word() & !ACCOUNTED == registry::current() {
            // SAFETY: the calling thread found its cache open inside its
            // marked operation.
            unsafe { self.return_credit_unchecked() };
            gate::leave();
            return None;
        }
        gate::leave();
        let state = self.gate.lock();
        if state.orphaned {
            drop(state);
            return keep.give(1);
        }
        // SAFETY: the calling thread owns the cache and holds its lock; the
        // closure runs no user code.
        unsafe { self.local.with_credit_unchecked(Credits::give) };
        drop(state);
        None
    }

    /// Takes every credit, for the thread's exit (which gives them back).
    pub(crate) fn take_credits(self) -> usize {
        gate::enter();
        if self.owner_word() & !ACCOUNTED == registry::current() {
            // SAFETY: as in `return_credit`.
            let n = unsafe { self.local.with_credit_unchecked(Credits::take_all) };
            gate::leave();
            return n;
        }
        gate::leave();
        let _lock = self.gate.lock();
        // SAFETY: as in `return_credit`.
        unsafe { self.local.with_credit_unchecked(Credits::take_all) }
    }

    /// Takes an idle object: the hot slot's, else the back of the batch.
    #[inline]
    pub(crate) fn pop(self) -> Option<Box<T>> {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| c.pop()) }
    }

    /// Puts `obj` in the hot slot if it is empty, else on the batch if the
    /// cache then holds at most `max` objects; hands it back otherwise.
    #[inline]
    pub(crate) fn push(self, obj: Box<T>, max: usize) -> Option<Box<T>> {
        // SAFETY: the closure drops nothing (it stores into an empty slot or
        // pushes) and runs no user code.
        unsafe {
            self.with_cache(|c| {
                if c.slot.is_none() {
                    *c.slot = Some(obj);
                    None
                } else if c.len() < max {
                    c.batch.push_back(obj);
                    None
                } else {
                    Some(obj)
                }
            })
        }
    }

    /// Idle objects held: the slot and the batch.
    #[inline]
    pub(crate) fn len(self) -> usize {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| c.len()) }
    }

    /// Takes every idle object, the slot's last (it is the warmest).
    #[inline]
    pub(crate) fn take_all(self) -> Vec<Box<T>> {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| c.take_all()) }
    }

    /// Takes the coldest idle object: the front of the batch, else the slot.
    #[inline]
    pub(crate) fn take_coldest(self) -> Option<Box<T>> {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| c.batch.pop_front().or_else(|| c.slot.take())) }
    }

    /// Moves every object of `objs` onto the back of the batch.
    #[inline]
    pub(crate) fn refill(self, objs: &mut Vec<Box<T>>) {
        // SAFETY: the closure moves boxes (allocating perhaps, dropping
        // nothing) and runs no user code.
        unsafe { self.with_cache(|c| c.batch.extend(objs.drain(..))) }
    }

    /// Starts the batch's low-water mark again from what it holds.
    #[inline]
    pub(crate) fn reset_low_water(self) {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| c.low_water = c.batch.len()) }
    }

    /// Whether foreign releases are pending in this cache.
    #[inline]
    pub(crate) fn has_pending(self) -> bool {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| !c.pending.is_empty()) }
    }

    /// Takes one batch of foreign releases to send home.
    #[inline]
    pub(crate) fn pop_pending(self) -> Option<Entry<T>> {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| c.pending.pop()) }
    }

    /// The delta cell the owner counts this cache's idle bytes in, if not
    /// the cache's own (null then).
    #[inline]
    pub(crate) fn idle_cell(self) -> *const DeltaCell {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| c.idle_cell) }
    }

    /// Sets the delta cell the owner counts idle bytes in (null: the cache's
    /// own).
    #[inline]
    pub(crate) fn set_idle_cell(self, cell: *const DeltaCell) {
        // SAFETY: the closure runs no user code.
        unsafe { self.with_cache(|c| c.idle_cell = cell) }
    }

    /// Opens the owner path of this cache, found by the owner's fast `get`
    /// through `get`, unless a thread is stealing its contents (see
    /// [`Gate::open`](crate::gate::Gate::open)). Returns whether it opened.
    ///
    /// # Safety
    ///
    /// `get` points into the calling thread's own hot index or into an index
    /// cell of a pool that owns this cache, alive while the thread owns it.
    pub(crate) unsafe fn open(self, get: GetGate) -> bool {
        // SAFETY: the calling thread owns the cache (a `Mine`) and `get` is
        // its own (the caller's guarantee); the closure runs under the lock
        // and runs no user code.
        unsafe {
            self.gate.open(self.local.owner(), get, || {
                self.local.with_cache_unchecked(|c| !c.pending.is_empty())
            })
        }
    }

    /// Reopens the owner path after a stealer shut it, with the ways in of
    /// the last [`open`](Self::open): for the slow paths of an owner whose
    /// fast paths found the cache shut.
    pub(crate) fn reopen(self) {
        if self.owner_word() & CLOSED == 0 {
            return;
        }
        // SAFETY: no new way in; the recorded ones are the calling thread's
        // (it owns the cache, and only its owner records them).
        unsafe { self.open(GetGate::None) };
    }

    /// Gives the cache up; a releaser that then sees `NOBODY` (after its
    /// fence) drains the inbox itself, and the next thread to claim it
    /// (`Acquire`) sees everything this thread wrote to it (`Release`).
    /// Waits, if need be, for the threads stealing its contents to be done.
    ///
    /// # Safety
    ///
    /// The calling thread uses no `Mine` of this cache afterwards (it makes
    /// one again only if it claims the cache anew).
    pub(crate) unsafe fn abandon(self) {
        self.gate.abandon(self.local.owner());
    }
}
