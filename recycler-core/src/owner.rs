//! The owner path: `get` and release on the thread that owns the cache,
//! inlined into the caller, and how a thread finds (or claims) its cache.
//!
//! - **get**: look the recycler up in the thread's hot index (an entry means
//!   the thread owns the cache and has no foreign releases pending), pop the
//!   batch, else take the hot slot (the bottom of the stack); count a hit.
//! - **release**: one compare tells that the calling thread owns the home
//!   and that no flag sends the object elsewhere ([`Home::mine`]); then,
//!   unless the thread is panicking, reset the object and put it in the
//!   slot if it is empty, or push it on the batch if that neither spills nor
//!   grows it; count a release.
//!
//! Counts are a load and a store each (only the owner writes them).
//!
//! Everything else goes through one out-of-line call each way: the slow get
//! ([`crate::slow_get`]) and the slow release ([`crate::slow_release`]). One call
//! site per direction keeps the inlined part small enough to inline into the
//! caller's loop. No atomic read-modify-write and no lock on either path.

use std::cell::Cell;
use std::ptr;

use crate::cache::{ACCOUNTED, CLOSED, Local, NEAR, Rest};
use crate::decay::DECAY_PERIOD;
use crate::gate::{self, GetGate};
use crate::home::Home;
use crate::loom::{Ordering, fence};
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::registry::{self, NOBODY, Token};
use crate::resetting::Resetting;
use crate::shared::Shared;
use crate::stats::Counters;

impl<T: Recyclable> Shared<T> {
    /// The owner path of `get`: take the calling thread's hot slot, or pop
    /// its batch, found through the thread's hot index.
    ///
    /// `None` sends the caller to the slow path: the cache is not in the hot
    /// index (none yet, not claimed, releases pending, an idle-memory cap),
    /// or it is empty. A recycler with an idle-memory cap indexes its caches
    /// under a marked key, so this lookup (by the plain id) never finds
    /// them: its gets take the slow path, which counts bytes.
    #[inline(always)]
    pub(crate) fn pop_owned(&self) -> Option<(Box<T>, Home<T>)> {
        self.pop_owned_then(|_| ())
    }

    /// [`pop_owned`](Self::pop_owned), running `hit` on the calling
    /// thread's cache when it serves the get (an owned guard takes a credit
    /// there).
    #[inline(always)]
    pub(crate) fn pop_owned_then(
        &self,
        hit: impl FnOnce(Mine<'_, T>),
    ) -> Option<(Box<T>, Home<T>)> {
        let mine = self.hot(self.id)?;
        // The hot slot first, with no mark: only its owner ever touches a
        // plain recycler's slot (see `crate::steal`).
        // SAFETY: a plain recycler's cache (a buffer pool never gets from
        // its buckets' recyclers through here: its owner paths are
        // `buffer::owner`, which mark the slot too).
        let popped = match unsafe { mine.take_slot() } {
            Some(obj) => Some(obj),
            None => {
                // The batch, which another thread may be stealing: marked,
                // and the gate read inside the mark: the owner word, which
                // a stealer closes (`CLOSED`) before its fence, as it
                // clears the hot-index entry found above (one load and a
                // compare with the token, where the entry took two loads,
                // an index and a compare: 4.7 instructions fewer per get
                // from the batch, measured).
                gate::enter();
                let popped = if mine.local().owner_word() == registry::current() {
                    // SAFETY: the calling thread found its cache open inside
                    // its marked `get`; `pop_batch` runs no user code.
                    unsafe { mine.with_rest_unchecked(Rest::pop_batch) }
                } else {
                    None
                };
                gate::leave();
                popped
            }
        };
        let mut obj = popped?;
        if Counters::add_owned_then(&mine.counters.hits, 1).is_multiple_of(DECAY_PERIOD) {
            obj = self.decay_after_get(mine, obj, || ());
        }
        // After the decay pass, whose panic would leave nothing taken.
        hit(mine);
        Some((obj, Home::new(mine.local())))
    }

    /// Returns a released object to the pool. `pool` says whether it may be
    /// pooled at all: not while the releasing thread panics (the guard's
    /// holder failed; the object may be inconsistent, and a panicking `reset`
    /// would abort); the guard evaluates it before it takes the object out,
    /// because `panicking()` may call out, and a live box across a call that
    /// may unwind adds a cleanup that makes this path too large to inline.
    ///
    /// On the owner thread the object is reset here and put in the slot or
    /// on the batch; every other case goes through one out-of-line call.
    ///
    /// An associated function of the home rather than a method of the
    /// recycler: the owner path never needs the recycler, so it is found (a
    /// load through the home) only on the slow path.
    ///
    /// # Safety
    ///
    /// `home` is the home of `obj`, handed out by a recycler that is alive
    /// (the guard being released keeps it).
    #[inline(always)]
    pub(crate) unsafe fn release(obj: Box<T>, home: Home<T>, pool: bool) {
        let mut word = NOBODY;
        if pool {
            // SAFETY: alive (the caller's guarantee).
            match unsafe { home.owner() } {
                Ok(mine) => {
                    let obj = Resetting::reset(obj, home);
                    // The hot slot, with no mark: only its owner ever
                    // touches a plain recycler's slot (see `crate::steal`).
                    // SAFETY: a plain recycler's cache (a buffer pool's
                    // buffers are released by the pool).
                    let Some(obj) = (unsafe { mine.fill_slot(obj) }) else {
                        Counters::add_owned(&mine.counters.released_local, 1);
                        return;
                    };
                    // SAFETY: the caller's guarantee.
                    return unsafe { Self::release_batch(mine, obj, home) };
                }
                Err(owner) => word = owner,
            }
        }
        // SAFETY: as above.
        unsafe { Self::release_off(obj, home, word) };
    }

    /// [`release`](Self::release) off the owner path: striped mode's lean
    /// release if the home's owner word, `word` (read by the owner path's
    /// compare; `NOBODY` when the thread panics), says so
    /// ([`crate::near`]), a capped recycler's owner path if it carries
    /// [`ACCOUNTED`] ([`crate::capped`]), else the slow release. One call
    /// site for all three,
    /// and only tail calls here: the inlined release keeps the size and the
    /// layout it has without striped mode (a compare of its own there cost
    /// the owner path a `jmp`, measured; `#[cold]` as the slow release is,
    /// for the same reason).
    ///
    /// # Safety
    ///
    /// As for [`release`](Self::release).
    #[cold]
    #[inline(never)]
    unsafe fn release_off(obj: Box<T>, home: Home<T>, word: Token) {
        if word == NEAR {
            // Inlined here: one call from the owner path to the section.
            // SAFETY: the caller's guarantee; the home is near.
            return unsafe { Self::release_near(obj, home) };
        }
        // SAFETY: a cache of a live recycler (the caller's guarantee).
        let inner = unsafe { Shared::of(home.local()) };
        if word & ACCOUNTED != 0 {
            // A capped recycler's cache (only those carry the flag; never
            // striped): its owner path, straight, as the slow release's
            // entry would choose it (one call and its tests fewer).
            return inner.release_capped_off(obj, home, word);
        }
        inner.release_slow(obj, home, false);
    }

    /// The release of an owned guard's object: as [`release`](Self::release),
    /// then the guard's unit of the keep-alive count given back
    /// ([`crate::keep`]): on the owner path, as a credit of the cache,
    /// inside the operation that pushes the object (so that the last
    /// handle, taking credits back, sees both or neither); else after the
    /// slow release, by [`give_unit`](Shared::give_unit). Giving the unit
    /// back is the last touch of the recycler.
    ///
    /// # Safety
    ///
    /// As for [`release`](Self::release), the recycler kept alive by the
    /// guard's unit.
    #[inline(always)]
    pub(crate) unsafe fn release_owned_guard(obj: Box<T>, home: Home<T>, pool: bool) {
        let mut word = NOBODY;
        if pool {
            // SAFETY: alive.
            match unsafe { home.owner() } {
                Err(owner) => word = owner,
                Ok(mine) => {
                    // Should `reset` panic, the guard's unit goes back too.
                    let obj = Resetting::reset_with(obj, home, true);
                    // The slot, inside a mark (for the credit, which the last
                    // handle may be taking back), the gate read inside it.
                    gate::enter();
                    // SAFETY: alive.
                    let back = match unsafe { home.mine() } {
                        // SAFETY: a plain recycler's cache (a buffer pool's
                        // buffers are released by the pool).
                        Some(_) => match unsafe { mine.fill_slot(obj) } {
                            None => {
                                // SAFETY: the calling thread found its cache
                                // open inside its marked operation.
                                unsafe { mine.return_credit_unchecked() };
                                None
                            }
                            full => full,
                        },
                        None => Some(obj),
                    };
                    gate::leave();
                    let Some(obj) = back else {
                        Counters::add_owned(&mine.counters.released_local, 1);
                        return;
                    };
                    // SAFETY: alive (the caller's guarantee), and nothing of the
                    // state is an argument of this frame; the object is reset.
                    return unsafe { Self::release_owned_batch(mine, obj, home) };
                }
            }
        }
        // SAFETY: as above.
        unsafe { Self::release_owned_off(obj, home, word) };
    }

    /// The release of an owned guard's object, reset on its owner path,
    /// whose cache's slot is full (or whose gate was shut): a push on the
    /// batch and the guard's unit counted as a credit, in one marked
    /// operation that reads the gate again; else the release off the owner
    /// path. Out of line, as [`release_batch`](Self::release_batch) is for
    /// the borrowed guards: the inlined release, the slot alone, stays
    /// small enough that a caller's loop inlines the guard's drop.
    ///
    /// # Safety
    ///
    /// As for [`release_owned_slow`](Self::release_owned_slow); `mine` is
    /// `obj`'s home, and `obj` is reset.
    #[inline(never)]
    unsafe fn release_owned_batch(mine: Mine<'_, T>, obj: Box<T>, home: Home<T>) {
        gate::enter();
        // SAFETY: alive (the caller's guarantee).
        let back = match unsafe { home.mine() } {
            Some(_) => {
                // SAFETY: the calling thread found its cache open inside its
                // marked operation.
                let back = unsafe { Self::push_if_room(mine, obj) };
                if back.is_none() {
                    // SAFETY: as above.
                    unsafe { mine.return_credit_unchecked() };
                }
                back
            }
            None => Some(obj),
        };
        gate::leave();
        let Some(obj) = back else {
            Counters::add_owned(&mine.counters.released_local, 1);
            return;
        };
        // SAFETY: the caller's guarantee; the calling thread's token as the
        // word: the object is reset.
        unsafe { Self::release_owned_off(obj, home, registry::current()) };
    }

    /// [`release_owned_guard`](Self::release_owned_guard) off the owner
    /// path, as [`release_off`](Self::release_off) is `release`'s: striped
    /// mode's lean release if `word` says so, else the slow one. `word` is
    /// the home's owner word as the owner path read it (`NOBODY` when the
    /// thread panics), so it is the calling thread's token exactly when the
    /// owner path reset the object and could not keep it (one call site
    /// for every way off the owner path: the inlined release keeps its
    /// layout, measured).
    ///
    /// # Safety
    ///
    /// As for [`release_owned_slow`](Self::release_owned_slow).
    #[cold]
    #[inline(never)]
    unsafe fn release_owned_off(obj: Box<T>, home: Home<T>, word: Token) {
        if word == NEAR {
            // SAFETY: the caller's guarantee; the home is near.
            return unsafe { Self::release_owned_near(obj, home) };
        }
        let was_reset = word == registry::current();
        // SAFETY: the caller's guarantee.
        unsafe { Self::release_owned_slow(obj, home, was_reset) };
    }

    /// An owned guard's release off its owner path: the slow release, then
    /// the guard's unit given back (the last touch), whatever happens in
    /// between: a `reset` or a `Drop` that panics there unwinds through the
    /// guard that gives it.
    ///
    /// # Safety
    ///
    /// `home`'s recycler is alive, kept by the guard's unit, and the caller
    /// holds no reference into its state as an argument.
    #[inline(never)]
    pub(crate) unsafe fn release_owned_slow(obj: Box<T>, home: Home<T>, was_reset: bool) {
        // SAFETY: alive (the caller's guarantee).
        let this: *const Shared<T> = unsafe { Shared::of(home.local()) };
        let unit = UnitBack::owed(this);
        // SAFETY: alive while the unit is out (`unit` gives it back).
        let shared = unsafe { &*this };
        shared.liveness.check();
        shared.release_measured(obj, home, was_reset, None, Some(&unit.owed));
        // `unit` drops here (or as a panic unwinds through here): the unit
        // goes back unless the release counted it as a credit.
    }

    /// The release of an object the owner path has reset, whose cache's
    /// slot is full: a push on the batch, which another thread may be
    /// stealing, so marked, and the gate (the owner word) read again inside
    /// the mark; else the slow release. Out of line, so that the inlined
    /// release stays small enough to inline into the caller's loop (with
    /// the batch inlined too, a `Pooled`'s drop glue was not inlined any
    /// more: +12 instructions per get + release with one object held).
    ///
    /// # Safety
    ///
    /// As for [`release`](Self::release); `mine` is `obj`'s home.
    #[inline(never)]
    unsafe fn release_batch(mine: Mine<'_, T>, obj: Box<T>, home: Home<T>) {
        gate::enter();
        // SAFETY: alive (the caller's guarantee).
        let pushed = match unsafe { home.mine() } {
            // SAFETY: the calling thread found its cache open inside its
            // marked operation.
            Some(_) => unsafe { Self::push_batch(mine, obj) },
            None => Err(obj),
        };
        gate::leave();
        if let Err(back) = pushed {
            // SAFETY: as above: a cache of a live recycler.
            let inner = unsafe { Shared::of(home.local()) };
            inner.release_slow(back, home, true);
        }
    }

    /// Pushes `obj`, already reset, on the back of the batch if the cache
    /// then holds at most `max_capacity_per_thread` objects and the batch
    /// has room in its allocation; counts the release. Otherwise hands `obj`
    /// back, for the slow path.
    ///
    /// # Safety
    ///
    /// The calling thread found `mine` open inside a marked operation
    /// ([`crate::steal`]), and its slot is full.
    #[inline(always)]
    unsafe fn push_batch(mine: Mine<'_, T>, obj: Box<T>) -> Result<(), Box<T>> {
        // SAFETY: the caller's guarantee.
        let rest = unsafe { Self::push_if_room(mine, obj) };
        Self::pushed(mine.local(), rest, true)
    }

    /// Pushes `obj` on the back of the batch if that neither spills nor
    /// grows it ([`has_room`](crate::cache::Rest::has_room)); hands it back
    /// otherwise.
    ///
    /// # Safety
    ///
    /// The calling thread found `mine` open inside a marked operation
    /// ([`crate::steal`]).
    #[inline(always)]
    unsafe fn push_if_room(mine: Mine<'_, T>, obj: Box<T>) -> Option<Box<T>> {
        // SAFETY: the caller's guarantee; the closure drops nothing and runs
        // no user code.
        unsafe {
            mine.with_rest_unchecked(|c| {
                if c.has_room() {
                    c.batch.push_back(obj);
                    None
                } else {
                    Some(obj)
                }
            })
        }
    }

    /// The end of a push: `Ok` and the release counted (if `count`) when
    /// `rest` is `None`, else `rest` handed back.
    #[inline(always)]
    pub(crate) fn pushed(
        local: &Local<T>,
        rest: Option<Box<T>>,
        count: bool,
    ) -> Result<(), Box<T>> {
        match rest {
            None => {
                if count {
                    Counters::add_owned(&local.counters.released_local, 1);
                }
                Ok(())
            }
            Some(obj) => Err(obj),
        }
    }

    /// The calling thread's cache, if its hot index has it under `key` (this
    /// recycler's key, marked or not).
    #[inline(always)]
    pub(crate) fn hot(&self, key: u64) -> Option<Mine<'_, T>> {
        let local = registry::hot(key, self.hot_position)?.cast::<Local<T>>();
        // SAFETY: a hot-index entry under this recycler's key (marked or
        // not) points to a cache of this recycler (alive: `&self`, and it
        // never moves a cache) that the calling thread owns: only the owner
        // sets its entry (`Mine::open`), and its exit hook clears the index
        // before it gives the cache up.
        Some(unsafe { Mine::new(local.as_ref()) })
    }

    /// The calling thread's cache, if the thread's hot index has it (under
    /// the key, or under the key marked for pending releases).
    #[inline(always)]
    fn hot_local(&self) -> Option<Mine<'_, T>> {
        self.hot(self.hot_key)
            .or_else(|| self.hot(self.hot_key | registry::PENDING_KEY))
    }

    /// The calling thread's cache for a foreign release: as
    /// [`local_for_current`](Self::local_for_current), looking first under
    /// the key marked for pending releases, which a thread that releases
    /// foreign objects usually has.
    #[inline]
    pub(crate) fn local_for_release(&self) -> Option<Mine<'_, T>> {
        let marked = self.hot(self.hot_key | registry::PENDING_KEY);
        match marked.or_else(|| self.hot(self.hot_key)) {
            Some(mine) => Some(mine),
            None => self.claim_local(),
        }
    }

    /// The calling thread's cache, claimed for it if need be; `None` while
    /// the thread is exiting.
    #[inline]
    pub(crate) fn local_for_current(&self) -> Option<Mine<'_, T>> {
        match self.hot_local() {
            Some(mine) => Some(mine),
            None => self.claim_local(),
        }
    }

    /// The calling thread's cache if it has one, in its hot index or
    /// registered, never claimed: for `trim`, which has nothing to free in
    /// a cache the thread does not have (claiming one would give the thread
    /// a cache and an exit hook for nothing).
    pub(crate) fn local_if_any(&self) -> Option<Mine<'_, T>> {
        self.hot_local().or_else(|| self.registered_local())
    }

    /// The calling thread's cache if it has one, found without claiming:
    /// the cache it registered for this recycler, if it still owns it.
    pub(crate) fn registered_local(&self) -> Option<Mine<'_, T>> {
        let token = registry::current();
        if !registry::is_live(token) {
            return None;
        }
        let registered = registry::registered(self.id).cast::<Local<T>>();
        // SAFETY: a registered cache of this recycler's id is one of its
        // caches (alive: `&self`).
        let local = unsafe { registered.as_ref() }?;
        // SAFETY: its owner word holds the calling thread's token, which no
        // other thread has: the calling thread owns it.
        local
            .is_owned_by(token)
            .then(|| unsafe { Mine::new(local) })
    }

    /// `local_for_current` when the hot index does not have the cache: find
    /// it among the thread's registered caches, or claim one (a cache given
    /// up by an exited thread, or a new one), and index it unless it has
    /// releases pending.
    #[cold]
    #[inline(never)]
    fn claim_local(&self) -> Option<Mine<'_, T>> {
        let token = registry::assign();
        if !registry::is_live(token) {
            return None;
        }
        let mine = match self.registered_local() {
            Some(mine) => mine,
            None => {
                let (max, batch) = (self.config.max_capacity_per_thread, self.config.batch_size);
                // Claimed shut: the owner path opens below, once the gate
                // knows the thread (see `crate::steal`).
                let local = self.caches.claim(token | self.owner_flag | CLOSED, || {
                    (self.new_local)(max, batch, ptr::from_ref(self).cast())
                });
                // SAFETY: the claim stored the calling thread's token in
                // the owner word.
                let mine = unsafe { Mine::new(local) };
                // Pairs with the fence of the recycler's last handle as it
                // drops (`Shared::orphan`): either this sees it orphaned, or
                // its walk over the caches sees this claim.
                fence(Ordering::SeqCst);
                if self.orphaned.load(Ordering::SeqCst) {
                    // No handle is left: only owned guards are out, and a
                    // release of theirs gives its unit back directly rather
                    // than as a credit of a cache nobody takes back.
                    // SAFETY: the thread has not touched the cache, and
                    // keeps no `Mine` of it.
                    unsafe { mine.abandon() };
                    return None;
                }
                // SAFETY: `local` is a cache of this recycler, which keeps it
                // (at a fixed address) for as long as the recycler lives, and
                // the calling thread owns it.
                let registered = unsafe {
                    registry::register(self.id, self.exit_hook.clone(), ptr::from_ref(local).cast())
                };
                if !registered {
                    // SAFETY: the thread has not touched the cache, and
                    // keeps no `Mine` of it.
                    unsafe { mine.abandon() };
                    return None;
                }
                mine.reset_low_water();
                mine
            }
        };
        self.open_hot(mine);
        Some(mine)
    }

    /// Whether `mine` is open to the owner paths and indexed under this
    /// recycler's plain key (no releases pending): what
    /// [`open_hot`](Self::open_hot) would leave, so it need not run. A
    /// stealer shuts the cache by setting `CLOSED` and clearing the entry,
    /// so either shows here; one shutting it after this read is met by the
    /// owner's marked access, as on the fast path.
    #[inline]
    pub(crate) fn is_open_hot(&self, mine: Mine<'_, T>) -> bool {
        mine.owner_word() & CLOSED == 0
            && registry::hot(self.hot_key, self.hot_position).is_some_and(|p| {
                ptr::eq(p.as_ptr().cast_const(), ptr::from_ref(mine.local()).cast())
            })
    }

    /// Opens `mine` to the owner paths, its fast `get` finding it through
    /// the calling thread's hot-index entry (under the marked key while
    /// releases are pending), unless a thread is stealing its contents.
    /// `mine` is a cache of this recycler.
    pub(crate) fn open_hot(&self, mine: Mine<'_, T>) {
        let entry = registry::hot_entry(self.hot_key);
        if entry.is_null() {
            return;
        }
        let get = GetGate::Hot {
            entry,
            key: self.hot_key,
            local: ptr::from_ref(mine.local()).cast(),
        };
        // SAFETY: `entry` is the calling thread's own hot-index entry for
        // this recycler, alive while the thread is (its exit hook clears it
        // before the thread gives its caches up).
        unsafe { mine.open(get) };
    }
}

/// Gives an owned guard's unit of the keep-alive count back when dropped
/// (see [`Shared::give_unit`]): at the end of a slow release, or as a panic
/// of user code unwinds through it. Forgotten where the unit went back
/// otherwise.
pub(crate) struct UnitBack<T: Recyclable> {
    shared: *const Shared<T>,
    /// Cleared by the release that counts the unit as a credit.
    owed: Cell<bool>,
}

impl<T: Recyclable> UnitBack<T> {
    /// The unit of an owned guard of `shared`, owed: given back when this
    /// drops unless a release clears `owed`.
    pub(crate) fn owed(shared: *const Shared<T>) -> Self {
        Self {
            shared,
            owed: Cell::new(true),
        }
    }
}

impl<T: Recyclable> Drop for UnitBack<T> {
    fn drop(&mut self) {
        if self.owed.get() {
            // SAFETY: the state lives while the unit is out, and no
            // reference into it is an argument here (this guard is on the
            // stack).
            unsafe { Shared::give_unit(self.shared) };
        }
    }
}
