//! The slow release: every release but the owner's inlined push. Objects
//! marked for dropping (`ratio`, capacity 0) or released by a panicking
//! thread are dropped; under an idle-memory cap the object is measured and
//! admitted or dropped; the owner pushes into a full cache by spilling its
//! coldest batch to the depot; everything released on another thread goes
//! to the handoff ([`crate::handoff`]).

use std::cell::Cell;
use std::mem;
use std::panic::{AssertUnwindSafe, catch_unwind};

use crate::cache::ACCOUNTED;
use crate::home::Home;
use crate::idle::bytes_of;
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::registry;
use crate::resetting::Resetting;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::striped::Stripes;
use crate::unwind::{self, OnUnwind};

impl<T: Recyclable> Shared<T> {
    /// Every release but the owner's push into a cache with room: discards
    /// (`ratio`, capacity 0, a panicking thread), releases under an
    /// idle-memory cap, releases on a thread that does not own the object's
    /// home, a full cache, and striped mode (but for its lean path,
    /// [`crate::near`]). `was_reset` says whether `obj` has been reset.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_slow(&self, obj: Box<T>, home: Home<T>, was_reset: bool) {
        // Striped mode first: no thread has a cache, so nothing of the
        // capped owner path applies.
        if let Some(stripes) = &self.stripes {
            return self.release_striped(stripes, obj, home, was_reset);
        }
        if !was_reset && self.owner_flag == ACCOUNTED {
            return self.release_capped(obj, home);
        }
        self.release_measured(obj, home, was_reset, None, None);
    }

    /// [`release_slow`](Self::release_slow), with the object's bytes if it
    /// was measured already (by the capped owner path). For an owned
    /// guard's object, `owed` (set) lets a foreign release count the
    /// guard's unit of the keep-alive count as a credit of its thread's
    /// cache in the same operation that gathers the object there
    /// ([`crate::keep`]); it clears `owed` as it does (before anything that
    /// may panic), and the caller gives the unit back if it is still set.
    pub(crate) fn release_measured(
        &self,
        obj: Box<T>,
        home: Home<T>,
        was_reset: bool,
        measured: Option<u64>,
        owed: Option<&Cell<bool>>,
    ) {
        if self.is_discard(home) || std::thread::panicking() {
            return self.discard(obj, home);
        }
        if let Some(stripes) = &self.stripes {
            return self.release_striped(stripes, obj, home, was_reset);
        }
        // SAFETY: the recycler outlives the guard being released.
        let owned = Mine::if_owned(unsafe { home.local() });
        let mut obj = obj;
        if !was_reset && (self.config.reset_on_return || owned.is_some()) {
            let Some(reset) = Self::reset_releasing(obj, home) else {
                return;
            };
            obj = reset;
        }
        if let Some(acct) = &self.idle {
            // The object's home, if this thread owns it, is this thread's
            // cache: no lookup.
            let mine = owned.or_else(|| self.local_for_current());
            let bytes = measured.unwrap_or_else(|| {
                let unwinding = OnUnwind(|| {
                    self.count_release(home, 1);
                    self.count_for(owned.map(Mine::local), |c| &c.dropped, 1);
                });
                let bytes = bytes_of(&obj);
                mem::forget(unwinding);
                bytes
            });
            let cell = mine.map(|mine| self.cell_of(mine));
            if !acct.admit(cell, bytes, self.member) {
                return self.discard(obj, home);
            }
        }
        match owned {
            Some(local) => self.release_owned(local, obj),
            None => self.release_foreign(obj, home, owed),
        }
    }

    /// Striped mode's release (but for its lean path, [`crate::near`]):
    /// dropped if marked so (`ratio`,
    /// capacity 0) or released by a panicking thread; else reset (on the
    /// releasing thread: there is no home to defer it to), its bytes
    /// counted under a cap, then pushed into a stripe, or dropped if every
    /// stripe is full.
    fn release_striped(&self, stripes: &Stripes<T>, obj: Box<T>, home: Home<T>, was_reset: bool) {
        if self.is_discard(home) || std::thread::panicking() {
            return self.discard(obj, home);
        }
        // One thread-local read: the token, given if the thread has none
        // yet (so that its exit hooks mark it as exiting).
        let mut token = registry::current();
        if token == registry::UNASSIGNED {
            token = registry::assign();
        }
        let mut obj = obj;
        if !was_reset {
            obj = if token == registry::EXITED {
                let Some(reset) = Self::reset_releasing(obj, home) else {
                    return;
                };
                reset
            } else {
                Resetting::reset(obj, home)
            };
        }
        let mut bytes = 0;
        if let Some(acct) = &self.idle {
            let unwinding = OnUnwind(|| {
                Counters::add_shared(&self.shared.released_local, 1);
                Counters::add_shared(&self.shared.dropped, 1);
            });
            bytes = bytes_of(&obj);
            mem::forget(unwinding);
            if !acct.admit(None, bytes, self.member) {
                return self.discard(obj, home);
            }
        }
        if let Err(full) = stripes.push(obj) {
            Counters::add_shared(&self.shared.released_local, 1);
            Counters::add_shared(&self.shared.dropped, 1);
            if let Some(acct) = &self.idle {
                acct.forget(bytes);
            }
            drop(full);
        }
    }

    /// Resets a released object off the owner path. On a thread whose exit
    /// hooks have started (its token reads `EXITED`), a panicking `reset`
    /// is caught and swallowed, since it would escape a thread-local
    /// destructor and abort the process: the object is counted released
    /// and dropped, as any failed reset is, and `None` returned. Elsewhere
    /// the panic reaches the code that dropped the guard.
    fn reset_releasing(obj: Box<T>, home: Home<T>) -> Option<Box<T>> {
        if registry::current() != registry::EXITED {
            return Some(Resetting::reset(obj, home));
        }
        match catch_unwind(AssertUnwindSafe(|| Resetting::reset(obj, home))) {
            Ok(obj) => Some(obj),
            Err(panic) => {
                unwind::forget_panic(panic);
                None
            }
        }
    }

    /// Puts a released object, reset, into the calling thread's cache;
    /// past `max_capacity_per_thread`, spills first.
    pub(crate) fn release_owned(&self, mine: Mine<'_, T>, obj: Box<T>) {
        // A thread that took the cache's contents shut its owner path; the
        // owner opens it again on its next slow path.
        mine.reopen();
        match mine.push(obj, self.config.max_capacity_per_thread) {
            None => Counters::add_owned(&mine.counters.released_local, 1),
            Some(obj) => self.release_spilling(mine, obj),
        }
    }

    /// Release on the owner thread into a full cache: the coldest batch
    /// moves to the depot to make room.
    fn release_spilling(&self, mine: Mine<'_, T>, obj: Box<T>) {
        let batch_size = self.config.batch_size;
        // SAFETY: the closure runs no user code (the depot moves boxes under
        // its lock).
        let rejected = unsafe {
            mine.with_cache(|c| {
                c.batch.push_back(obj);
                let n = batch_size.min(c.batch.len());
                let rejected = self.depot.put_front(&mut c.batch, n);
                c.low_water = c.low_water.min(c.batch.len());
                rejected
            })
        };
        Counters::add_owned(&mine.counters.released_local, 1);
        if let Some(rejected) = rejected {
            self.drop_idle(rejected, Some(mine.local()));
        }
    }

    /// Drops a released object instead of pooling it.
    ///
    /// An object homed at the discard cache (`ratio`, capacity 0) has no
    /// home that tells which thread got it, and never crosses to another
    /// thread: its release counts as local, wherever it happens, as every
    /// release does in striped mode (whose objects are homed at the orphan
    /// cache). Otherwise the home tells local from remote.
    pub(crate) fn discard(&self, obj: Box<T>, home: Home<T>) {
        if self.is_discard(home) || self.stripes.is_some() {
            Counters::add_shared(&self.shared.released_local, 1);
            Counters::add_shared(&self.shared.dropped, 1);
        } else {
            self.count_release(home, 1);
            // SAFETY: the recycler outlives the guard that is being released.
            let local = unsafe { home.local() };
            self.count_for(Some(local), |c| &c.dropped, 1);
        }
        drop(obj);
    }
}
