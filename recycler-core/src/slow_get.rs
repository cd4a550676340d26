//! The slow get: what `get` does when the calling thread's slot and batch
//! are empty, or when its cache is not in the hot index. It sends the
//! thread's pending foreign releases home, takes up to a batch from its
//! inbox, else a batch from the shared depot, and only then calls the
//! factory.

use std::cell::Cell;
use std::mem;

use crate::cache::Local;
use crate::decay::DECAY_PERIOD;
use crate::home::Home;
use crate::idle::bytes_of;
use crate::loom::Ordering;
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::registry;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::striped::{Steal, Stripes};
use crate::unwind::OnUnwind;

impl<T: Recyclable> Shared<T> {
    /// `get` when no owner path served it: pooled, else made. (Striped
    /// mode on sections comes here only when this CPU's cache could not
    /// serve it: [`crate::near`].)
    #[cold]
    #[inline(never)]
    pub(crate) fn get_slow(&self) -> (Box<T>, Home<T>) {
        if let Some(stripes) = &self.stripes {
            return match self.take_striped(stripes, Steal::IfWorth) {
                Some(hit) => hit,
                None => self.make(),
            };
        }

        match self.take_pooled() {
            Some(hit) => hit,
            None => self.make(),
        }
    }

    /// Finds a pooled object: the calling thread's cache, its inbox, the
    /// depot. Sends the thread's pending foreign releases home first.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_pooled(&self) -> Option<(Box<T>, Home<T>)> {
        if let Some(stripes) = &self.stripes {
            return self.take_striped(stripes, Steal::Any);
        }
        let Some(mine) = self.local_for_current() else {
            // The thread is exiting: it may use the depot but own nothing.
            let obj = self.depot.take_one()?;
            let bytes = self.measure_taken(&obj, None);
            if let Some(acct) = &self.idle {
                acct.forget(bytes);
            }
            Counters::add_shared(&self.shared.hits, 1);
            return Some((obj, self.home(None, false)));
        };
        // A cache open and indexed under the plain key has nothing pending
        // (a first pending release marks the key; `open` indexes under the
        // marked key while any is): then there is nothing to send and
        // nothing to open, which takes the gate's lock. So the gets of a
        // recycler with an idle-memory cap, which always come here, skip
        // both.
        if !self.is_open_hot(mine) {
            self.flush_pending(mine);
            // Nothing pending now: the owner path may find the cache again.
            // (`flush_pending` pops until `pending` is empty, so a release
            // that a `Drop` run by the flush adds is sent by the same loop;
            // and a `get` nested in such a `Drop` sets the plain key itself
            // only once its own flush has emptied `pending`.)
            self.open_hot(mine);
        }
        let mut obj = mine.pop();
        if obj.is_none() && self.refill(mine) {
            obj = mine.pop();
        }
        // A miss everywhere: what other threads released of ours may wait
        // in a batch they have gone quiet with.
        if obj.is_none() && self.steal_stale_pending(mine) && self.refill(mine) {
            obj = mine.pop();
        }
        let mut obj = obj?;
        let mut bytes = 0;
        if let Some(acct) = &self.idle {
            bytes = self.measure_taken(&obj, Some(mine.local()));
            acct.sub(self.cell_of(mine), bytes);
        }
        if Counters::add_owned_then(&mine.counters.hits, 1).is_multiple_of(DECAY_PERIOD) {
            // If the pass unwinds, the object goes back, idle again.
            let restore = || {
                if let Some(acct) = &self.idle {
                    acct.restore(self.cell_of(mine), bytes);
                }
            };
            obj = self.decay_after_get(mine, obj, restore);
        }
        Some((obj, self.home(Some(mine.local()), false)))
    }

    /// Striped mode's get from the pool: a stripe's pop (which counts the
    /// hit), then the idle-memory account. `steal` says whether a get that
    /// finds nothing near takes from far (see [`Steal`]).
    #[inline(always)]
    fn take_striped(&self, stripes: &Stripes<T>, steal: Steal) -> Option<(Box<T>, Home<T>)> {
        registry::enroll();
        let obj = stripes.pop(steal)?;
        if let Some(acct) = &self.idle {
            // The hit is counted: if `retained_bytes` panics, the object
            // drops as it unwinds, and is counted as released and dropped.
            let unwinding = OnUnwind(|| {
                Counters::add_shared(&self.shared.released_local, 1);
                Counters::add_shared(&self.shared.dropped, 1);
            });
            let bytes = bytes_of(&obj);
            mem::forget(unwinding);
            acct.forget(bytes);
        }
        Some((obj, self.home(None, false)))
    }

    /// The bytes of `obj`, an idle object just taken out, under a cap (0
    /// without one). If `retained_bytes` panics, the object is counted as
    /// dropped (on `mine`'s counters if the calling thread owns it) before
    /// it is dropped by the unwinding.
    #[allow(clippy::borrowed_box, reason = "measured as `bytes_of` measures")]
    fn measure_taken(&self, obj: &Box<T>, mine: Option<&Local<T>>) -> u64 {
        if self.idle.is_none() {
            return 0;
        }
        let unwinding = OnUnwind(|| self.count_for(mine, |c| &c.dropped, 1));
        let bytes = bytes_of(obj);
        mem::forget(unwinding);
        bytes
    }

    /// Calls the factory. The object is pooled on release unless pooling is
    /// off or `ratio` says this one is to be dropped.
    pub(crate) fn make(&self) -> (Box<T>, Home<T>) {
        // A panicking factory leaves everything as it was: nothing is counted
        // or borrowed yet.
        let obj = Box::new((self.factory)());
        self.made(obj)
    }

    /// Counts `obj`, freshly made by the factory or by the buffer pool, as
    /// made and handed out; applies `ratio`.
    pub(crate) fn made(&self, obj: Box<T>) -> (Box<T>, Home<T>) {
        if self.stripes.is_some() {
            let ratio = self.config.ratio;
            let keep = self.config.pooling()
                && (ratio == 1
                    || self
                        .fresh
                        .fetch_add(1, Ordering::Relaxed)
                        .is_multiple_of(ratio));
            Counters::add_shared(&self.shared.created, 1);
            return (obj, self.home(None, !keep));
        }
        let mine = self.local_for_current();
        let keep = self.config.pooling()
            && match mine {
                // SAFETY: the closure runs no user code.
                Some(mine) => unsafe {
                    mine.with_cache(|c| {
                        let keep = c.fresh == 0;
                        c.fresh = if c.fresh + 1 >= self.config.ratio {
                            0
                        } else {
                            c.fresh + 1
                        };
                        keep
                    })
                },
                None => true,
            };
        match mine {
            Some(mine) => Counters::add_owned(&mine.counters.created, 1),
            None => Counters::add_shared(&self.shared.created, 1),
        }
        (obj, self.home(mine.map(Mine::local), !keep))
    }

    /// Makes up to `n` objects with the factory into the depot, where every
    /// thread finds them; stops early when the depot is full or an object
    /// would take idle memory over its cap (that object is dropped).
    /// Returns how many it added.
    ///
    /// A factory or a `retained_bytes` that panics drops the objects of the
    /// batch being made with the unwinding; they are counted as made and
    /// dropped.
    pub(crate) fn prefill(&self, n: usize) -> usize {
        if !self.config.pooling() {
            return 0;
        }
        let mut added = 0;
        while added < n {
            let room = match &self.stripes {
                Some(stripes) => stripes.room(),
                None => self.depot.room(),
            };
            let room = room.min(n - added);
            if room == 0 {
                break;
            }
            let mut batch = Vec::with_capacity(room.min(self.config.batch_size));
            // Should the factory or `retained_bytes` panic, the objects
            // made for this batch so far drop with the unwinding: counted
            // as made and dropped.
            let in_hand = Cell::new(0u64);
            let unwinding = OnUnwind(|| self.count_made_and_dropped(in_hand.get()));
            let mut over_cap = false;
            while batch.len() < batch.capacity() {
                let obj = Box::new((self.factory)());
                in_hand.set(batch.len() as u64 + 1);
                if let Some(acct) = &self.idle
                    && !acct.admit(None, bytes_of(&obj), self.member)
                {
                    // Made, never idle: counted as made and dropped.
                    self.count_made_and_dropped(1);
                    in_hand.set(batch.len() as u64);
                    drop(obj);
                    over_cap = true;
                    break;
                }
                batch.push(obj);
            }
            mem::forget(unwinding);
            let made = batch.len();
            Counters::add_shared(&self.shared.created, made as u64);
            Counters::add_shared(&self.shared.prefilled, made as u64);
            let rejected = match &self.stripes {
                Some(stripes) => {
                    stripes.fill(&mut batch);
                    Some(batch).filter(|rest| !rest.is_empty())
                }
                None => self.depot.put(batch),
            };
            let rejected = rejected.map_or(0, |rejected| {
                let n = rejected.len();
                self.drop_idle(rejected, None);
                n
            });
            added += made - rejected;
            if over_cap || rejected > 0 {
                break;
            }
        }
        added
    }

    /// Counts `n` objects that `prefill` made and dropped.
    fn count_made_and_dropped(&self, n: u64) {
        Counters::add_shared(&self.shared.created, n);
        Counters::add_shared(&self.shared.prefilled, n);
        Counters::add_shared(&self.shared.dropped, n);
    }

    /// Moves up to a batch from `mine`'s inbox into its cache (resetting
    /// the objects if their reset was deferred), or else one batch from the
    /// depot; the emptied vectors go back where they can be reused. Returns
    /// whether anything came.
    fn refill(&self, mine: Mine<'_, T>) -> bool {
        let mut got = 0;
        while got < self.config.batch_size {
            let Some(mut batch) = mine.inbox.recv() else {
                break;
            };
            self.settle(&mut batch, Some(mine.local()));
            got += batch.len();
            mine.refill(&mut batch);
            mine.inbox.put_spare(batch);
        }
        if got > 0 {
            return true;
        }
        let Some(mut batch) = self.depot.take() else {
            return false;
        };
        mine.refill(&mut batch);
        self.depot.put_spare(batch);
        true
    }
}
