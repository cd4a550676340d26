//! The owner paths of a recycler under
//! [`max_idle_bytes`](crate::RecyclerBuilder::max_idle_bytes).
//!
//! A capped recycler's caches are found under a marked hot-index key and
//! carry [`ACCOUNTED`] in their owner word, so the inlined owner paths of
//! [`crate::owner`] (one compare each) never take them: a recycler without
//! a cap pays nothing on its owner paths for the cap's existence. Their
//! misses (`get`'s miss branch, [`get_miss`](Shared::get_miss), and the
//! entry of the slow release) test the recycler's flag once and come here,
//! out of line: the common case of a capped recycler, run as the owner
//! paths run theirs, plus the accounting: the object measured with
//! `retained_bytes`, and the thread's own idle delta moved by those bytes
//! (a load and a store; a release admitted against the cap with one shared
//! load, [`IdleAccount::try_add_own`]). Everything else (a cache not
//! indexed, empty or full, a release over the cap as this thread sees it,
//! one from another thread, a panicking thread) goes on to the slow paths
//! as before, with what was done (the reset, the measure) not done again.
//!
//! Instructions per get + release of a `Vec<u8>` under a cap (callgrind,
//! `benches/examples/owner_probe.rs`): 309 through the slow paths, 148
//! here (165 before a release on the owner path went to the hot slot with
//! no mark, [`release_capped_off`](Shared::release_capped_off)), against
//! 44 without a cap. A fast path inlined beside the
//! uncapped one would save the two calls, but costs the uncapped owner
//! path (measured: 38 to 44 to 49 instructions per get + release of W1's
//! object), which no cap is worth.

use std::mem;

use crate::cache::{ACCOUNTED, Rest};
use crate::decay::DECAY_PERIOD;
use crate::gate;
use crate::home::Home;
use crate::idle::{IdleAccount, bytes_of};
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::registry;
use crate::resetting::Resetting;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::unwind::OnUnwind;

impl<T: Recyclable> Shared<T> {
    /// The account of a capped recycler (`max_idle_bytes`): its own,
    /// counted on these owner paths (a buffer pool's buckets count theirs
    /// on the pool's owner paths instead).
    #[inline(always)]
    pub(crate) fn own_account(&self) -> Option<&IdleAccount> {
        if self.owner_flag == ACCOUNTED {
            self.idle.as_deref()
        } else {
            None
        }
    }

    /// `get`'s miss on the inlined owner path, as [`Miss`](crate::shared::Miss) says: under a
    /// cap, the capped owner path; striped mode on sections, its lean get
    /// ([`crate::near`]); else the slow get. Inlined into `get`'s miss
    /// branch, so that the owner path's hits pay nothing for it.
    #[inline(always)]
    pub(crate) fn get_miss(&self) -> (Box<T>, Home<T>) {
        // As cold as the slow get's call was before it became indirect: the
        // owner path's blocks keep their layout.
        std::hint::cold_path();
        // SAFETY: chosen for this state (by `Shared::new`).
        unsafe { (self.on_miss)(self) }
    }

    /// A capped recycler's `get` miss: the capped owner path, else the
    /// slow get.
    #[cold]
    #[inline(never)]
    pub(crate) fn get_capped(&self) -> (Box<T>, Home<T>) {
        if let Some(acct) = self.own_account()
            && let Some(hit) = self.pop_capped(acct)
        {
            return hit;
        }
        self.get_slow()
    }

    /// A capped recycler's release off the inlined owner path, whose
    /// compare read `word` (with [`ACCOUNTED`]) as the home's owner word:
    /// on the thread that owns the home, its hot slot if it is empty and
    /// the cap admits the object's bytes, with no mark (only the owner
    /// touches a plain recycler's slot, and only it writes its delta);
    /// else [`release_capped`](Self::release_capped). The thread does not
    /// panic: the owner path reads the word only for a guard that pools.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_capped_off(&self, obj: Box<T>, home: Home<T>, word: u64) {
        if word == registry::current() | ACCOUNTED
            && let Some(acct) = self.own_account()
        {
            let obj = Resetting::reset(obj, home);
            // SAFETY: the recycler outlives the guard being released.
            let local = unsafe { home.local() };
            // SAFETY: its owner word was the calling thread's token, which
            // no other thread has, and only this thread changes it.
            let mine = unsafe { Mine::new(local) };
            let bytes = Self::measure_release(mine, &obj);
            let cell = &local.delta;
            // SAFETY: a plain recycler's cache (a capped recycler is no
            // buffer pool's bucket), owned by the calling thread; the
            // closure stores into an empty slot and runs no user code (the
            // account is the recycler's).
            let back = unsafe {
                local.with_slot_unchecked(|slot| {
                    if slot.is_none() && acct.try_add_own(cell, bytes) {
                        *slot = Some(obj);
                        None
                    } else {
                        Some(obj)
                    }
                })
            };
            let Some(obj) = back else {
                Counters::add_owned(&mine.counters.released_local, 1);
                return;
            };
            return match self.push_capped_measured(acct, obj, home, mine, bytes) {
                Ok(()) => {}
                Err(obj) => self.release_measured(obj, home, true, Some(bytes), None),
            };
        }
        self.release_capped(obj, home);
    }

    /// A capped recycler's release off the inlined owner path (the slow
    /// release's entry comes here for one that was not reset yet).
    #[cold]
    #[inline(never)]
    pub(crate) fn release_capped(&self, obj: Box<T>, home: Home<T>) {
        if std::thread::panicking() {
            self.release_measured(obj, home, false, None, None);
            return;
        }
        let Some(acct) = self.own_account() else {
            self.release_measured(obj, home, false, None, None);
            return;
        };
        if let Err((obj, was_reset, measured)) = self.push_capped(acct, obj, home) {
            self.release_measured(obj, home, was_reset, measured, None);
        }
    }

    /// The owner path of a capped `get`: the hot slot, else the batch, of
    /// the calling thread's cache, found open in its hot index with nothing
    /// pending; the object's bytes taken off the thread's idle delta.
    #[inline(always)]
    pub(crate) fn pop_capped(&self, acct: &IdleAccount) -> Option<(Box<T>, Home<T>)> {
        let mine = self.hot(self.hot_key)?;
        // SAFETY: a plain recycler's cache (a capped recycler is no buffer
        // pool's bucket: those count on the pool's owner paths).
        let obj = match unsafe { mine.take_slot() } {
            Some(obj) => obj,
            None => {
                gate::enter();
                let popped = registry::hot(self.hot_key, self.hot_position).and_then(|_| {
                    // SAFETY: the calling thread found its cache open inside
                    // its marked `get`; `pop_batch` runs no user code.
                    unsafe { mine.with_rest_unchecked(Rest::pop_batch) }
                });
                gate::leave();
                popped?
            }
        };
        let bytes = {
            // If `retained_bytes` panics, the object, taken, is dropped by
            // the unwinding: counted as dropped.
            let unwinding = OnUnwind(|| Counters::add_owned(&mine.counters.dropped, 1));
            let bytes = bytes_of(&obj);
            mem::forget(unwinding);
            bytes
        };
        // A capped recycler's caches count in their own delta (no pool
        // sets an idle cell for them).
        let cell = &mine.local().delta;
        acct.sub(cell, bytes);
        let mut obj = obj;
        if Counters::add_owned_then(&mine.counters.hits, 1).is_multiple_of(DECAY_PERIOD) {
            // If the pass unwinds, the object goes back, idle again.
            obj = self.decay_after_get(mine, obj, || acct.restore(cell, bytes));
        }
        Some((obj, Home::new(mine.local())))
    }

    /// The owner path of a capped release, on the thread that owns `obj`'s
    /// home, open, unless the thread panics: reset, measured, and put in
    /// the hot slot or on the batch if the cap admits its bytes as this
    /// thread sees it. Hands it back otherwise, for the slow release, with
    /// whether it was reset and its bytes, if it was measured (the slow
    /// release makes room, drops it, or spills). The caller checked that
    /// the thread does not panic.
    #[inline(always)]
    pub(crate) fn push_capped(
        &self,
        acct: &IdleAccount,
        obj: Box<T>,
        home: Home<T>,
    ) -> Result<(), (Box<T>, bool, Option<u64>)> {
        // Reset here whoever owns the home: a capped recycler resets every
        // release on the releasing thread (it cannot be built with
        // `reset_on_return(false)`), the slow release too.
        let obj = Resetting::reset(obj, home);
        // SAFETY: the recycler outlives the guard being released.
        let local = unsafe { home.local() };
        let Some(mine) = Mine::if_owned(local) else {
            return Err((obj, true, None));
        };
        let bytes = Self::measure_release(mine, &obj);
        self.push_capped_measured(acct, obj, home, mine, bytes)
            .map_err(|obj| (obj, true, Some(bytes)))
    }

    /// Measures a released object, reset, on its owner path: if
    /// `retained_bytes` panics, the object, taken, is dropped by the
    /// unwinding, counted as released and dropped.
    #[inline(always)]
    #[allow(
        clippy::borrowed_box,
        reason = "measured as `bytes_of` measures: the box's own `Recyclable` impl, which adds its size, cannot be picked by mistake"
    )]
    fn measure_release(mine: Mine<'_, T>, obj: &Box<T>) -> u64 {
        let unwinding = OnUnwind(|| {
            Counters::add_owned(&mine.counters.released_local, 1);
            Counters::add_owned(&mine.counters.dropped, 1);
        });
        let bytes = bytes_of(obj);
        mem::forget(unwinding);
        bytes
    }

    /// The rest of [`push_capped`](Self::push_capped) once `obj`, reset, is
    /// measured at `bytes`: in the hot slot or on the batch, inside a marked
    /// operation that reads the gate, if the cap admits it; handed back
    /// otherwise (reset and measured).
    #[inline(always)]
    fn push_capped_measured(
        &self,
        acct: &IdleAccount,
        obj: Box<T>,
        home: Home<T>,
        mine: Mine<'_, T>,
        bytes: u64,
    ) -> Result<(), Box<T>> {
        // SAFETY: the recycler outlives the guard being released.
        let local = unsafe { home.local() };
        let cell = &local.delta;
        gate::enter();
        let pushed = if local.owner_word() == registry::current() | ACCOUNTED {
            // SAFETY: the calling thread found its cache open (the owner
            // word without `CLOSED`) inside its marked operation; a capped
            // recycler pools (its capacity is at least 1); the check touches
            // only the account and the thread's delta, not the cache.
            unsafe { Self::push_local(mine, obj, true, |_| acct.try_add_own(cell, bytes)) }
        } else {
            Err(obj)
        };
        gate::leave();
        pushed
    }
}
