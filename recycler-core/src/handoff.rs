//! The handoff: how an object released on a thread that does not own its
//! home gets back there.
//!
//! The releasing thread gathers such objects in its own cache, per home
//! ([`Pending`](crate::cache::Pending), at most
//! [`MAX_PENDING_HOMES`](crate::cache::MAX_PENDING_HOMES) homes at a time), in batch
//! vectors it takes from the home's spares (see [`crate::inbox`]), and sends
//! a batch to the home's inbox when it holds `batch_size` objects, when the
//! releasing thread next gets from this recycler, or when it exits. While a
//! thread has objects pending, its hot-index entry for the recycler is
//! removed, so that its next `get` takes the slow path, which sends them;
//! the owner path itself never looks at `pending`.
//!
//! A batch the inbox refuses (full) goes to the shared depot instead. A
//! batch sent to a home whose thread has exited is moved to the depot by the
//! sender, so nothing strands (the store-buffering argument is in
//! [`Shared::send_home`]).
//!
//! With `reset_on_return(false)` the objects travel unreset; [`Shared::settle`]
//! resets them where they leave an inbox for a cache or the depot.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr::{self, NonNull};

use crate::cache::Local;
use crate::home::Home;
use crate::inbox::Batch;
use crate::loom::{Ordering, fence};
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::registry;
use crate::resetting::Resetting;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::unwind;

impl<T: Recyclable> Shared<T> {
    /// Release on a thread that does not own the object's home; the object
    /// is reset already unless `reset_on_return(false)` defers it. For an
    /// owned guard's object, `owed` (set) has the guard's unit of the
    /// keep-alive count counted as a credit of the calling thread's cache
    /// in the same operation that gathers the object there, if the cache is
    /// open ([`crate::keep`]); it is cleared then, before anything that may
    /// panic (the caller gives the unit back if it is still set).
    pub(crate) fn release_foreign(&self, obj: Box<T>, home: Home<T>, owed: Option<&Cell<bool>>) {
        let home_ptr = home.local_ptr();
        let Some(mine) = self.local_for_release() else {
            // The thread is exiting: send the object straight home.
            Counters::add_shared(&self.shared.released_remote, 1);
            return self.send_home(home_ptr, vec![obj], None);
        };
        if ptr::eq(home_ptr.as_ptr(), mine.local()) {
            // This thread has just claimed the object's home (it took over
            // the cache of the thread that got the object): this is the
            // owner.
            let obj = if self.config.reset_on_return {
                obj
            } else {
                Resetting::reset(obj, home)
            };
            return self.release_owned(mine, obj);
        }
        Counters::add_owned(&mine.counters.released_remote, 1);
        let batch_size = self.config.batch_size;
        // SAFETY: every home is a cache of this recycler, which is alive
        // (the guard being released keeps it) and never moves a cache.
        let inbox = unsafe { &home_ptr.as_ref().inbox };
        let credit = owed.is_some_and(Cell::get);
        // SAFETY: the closure runs no user code (`take_spare` is a channel
        // operation).
        let ((full, first, empty), credited) = unsafe {
            mine.with_cache_crediting(credit, |c| {
                let first = c.pending.is_empty();
                let full = c
                    .pending
                    .add(home_ptr, obj, batch_size, || inbox.take_spare());
                let empty = c.pending.is_empty();
                (full, first && !empty, empty)
            })
        };
        if credited && let Some(owed) = owed {
            owed.set(false);
        }
        if first {
            // The next `get` on this thread must take the slow path, which
            // sends them.
            registry::mark_pending(self.hot_key);
            // Their owners may take them once they are old (`crate::steal`).
            mine.pending_since.start();
        } else if empty {
            mine.pending_since.clear();
        }
        if let Some(full) = full {
            self.send_home(full.home, full.objs, Some(mine.local()));
        }
    }

    /// Sends every batch `mine` has pending to its home.
    pub(crate) fn flush_pending(&self, mine: Mine<'_, T>) {
        while let Some(p) = mine.pop_pending() {
            self.send_home(p.home, p.objs, Some(mine.local()));
        }
        mine.pending_since.clear();
    }

    /// Sends `batch` to the inbox of `home` (to the depot if the inbox is
    /// full). If `home` has been given up by its thread, drains that inbox
    /// into the depot, so nothing strands. `mine` is the calling thread's
    /// cache, if it owns one, for counting.
    pub(crate) fn send_home(
        &self,
        home: NonNull<Local<T>>,
        batch: Batch<T>,
        mine: Option<&Local<T>>,
    ) {
        // SAFETY: every home is a cache of this recycler, which is alive
        // (`&self`) and never moves or frees a cache before it drops.
        let home = unsafe { home.as_ref() };
        if let Err(mut refused) = home.inbox.send(batch) {
            self.settle(&mut refused, mine);
            return self.store(refused, mine);
        }
        // Store-load ordering with `flush_on_exit`: the exiting owner stores
        // NOBODY, fences, then drains; we sent, fence, then load the owner.
        // With both fences SeqCst, either the drain sees our batch or this
        // load sees NOBODY (or a later owner, who will drain the inbox).
        fence(Ordering::SeqCst);
        if home.is_abandoned() {
            self.rescue(home, mine);
        }
    }

    /// Drains the inbox of a cache no thread owns into the depot.
    pub(crate) fn rescue(&self, local: &Local<T>, mine: Option<&Local<T>>) {
        while let Some(mut batch) = local.inbox.recv() {
            self.settle(&mut batch, mine);
            self.store(batch, mine);
        }
    }

    /// Puts a batch in the depot, dropping (and counting) what does not fit.
    pub(crate) fn store(&self, batch: Batch<T>, mine: Option<&Local<T>>) {
        if let Some(rejected) = self.depot.put(batch) {
            self.drop_idle(rejected, mine);
        }
    }

    /// Resets the objects of a batch that left an inbox, if their reset was
    /// deferred (`reset_on_return(false)`). An object whose `reset` panics
    /// is dropped and counted (on `mine`'s counters if the calling thread
    /// owns it); the panic, and one of its `Drop`, is caught and swallowed:
    /// the code that released the guard has moved on, and the code running
    /// here (a `get`, a thread exit) has nothing to do with it.
    pub(crate) fn settle(&self, batch: &mut Batch<T>, mine: Option<&Local<T>>) {
        if self.config.reset_on_return {
            return;
        }
        let mut failed = 0;
        let mut i = 0;
        while i < batch.len() {
            match catch_unwind(AssertUnwindSafe(|| batch[i].reset())) {
                Ok(()) => {
                    i += 1;
                    continue;
                }
                Err(panic) => unwind::forget_panic(panic),
            }
            failed += 1;
            let obj = batch.swap_remove(i);
            // Swallowed, payload included (dropped inside `catch_unwind`).
            if let Some(panic) = unwind::drop_each([obj]) {
                unwind::forget_panic(panic);
            }
        }
        if failed > 0 {
            self.count_for(mine, |c| &c.dropped, failed as u64);
        }
    }
}
