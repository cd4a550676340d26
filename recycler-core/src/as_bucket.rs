//! What a buffer pool's bucket may do with its recycler, beyond what every
//! recycler does: the only calls into the core that the buffer pool
//! ([`crate::buffer`]) makes besides `get`-and-release's own.
//!
//! A bucket is a `Recycler<Buf>` whose buffers the pool allocates itself,
//! under its memory ledger, and reaches through an index of its own. So the
//! bucket:
//!
//! - lends buffers the recycler did not make: a buffer grown into this
//!   bucket ([`Shared::adopt`]), a released buffer granted straight to a
//!   waiter at the memory limit ([`Shared::granted`]);
//! - takes from and puts into the calling thread's cache on its own owner
//!   paths, found through the pool's index rather than the hot index
//!   ([`Shared::pop_local`], [`Shared::push_local`]), counting idle bytes in
//!   the pool's per-thread delta cell ([`Mine::set_idle_cell`](crate::mine::Mine::set_idle_cell));
//! - frees idle buffers for the pool's idle-memory cap ([`Shared::evict`]),
//!   and moves what it took from quiet threads or its own pending batches
//!   to where the pool's reclaim frees it ([`Shared::store_all`],
//!   [`Shared::flush_own_pending`]).

use crate::home::Home;
use crate::idle::{DeltaCell, bytes_of};
use crate::inbox::Batch;
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::shared::Shared;
use crate::stats::Counters;
use crate::trim::pass_on;
use crate::unwind::drop_each;

impl<T: Recyclable> Shared<T> {
    /// Makes `obj`, an object in use that this recycler did not lend (a
    /// buffer that grew into another bucket), one of its objects in use,
    /// homed at the calling thread's cache; the caller releases it next.
    pub(crate) fn adopt(&self, obj: Box<T>) -> (Box<T>, Home<T>) {
        if self.stripes.is_some() {
            Counters::add_shared(&self.shared.adopted, 1);
            return (obj, self.home(None, !self.config.pooling()));
        }
        let local = self.local_for_current().map(Mine::local);
        self.count_for(local, |c| &c.adopted, 1);
        // A recycler that pools nothing homes it where its release drops it.
        (obj, self.home(local, !self.config.pooling()))
    }

    /// Lends `obj`, released and passed straight to the calling thread
    /// (a buffer a release granted to a waiter): a hit, homed at the calling
    /// thread's cache.
    pub(crate) fn granted(&self, obj: Box<T>) -> (Box<T>, Home<T>) {
        if self.stripes.is_some() {
            Counters::add_shared(&self.shared.hits, 1);
            return (obj, self.home(None, !self.config.pooling()));
        }
        let local = self.local_for_current().map(Mine::local);
        self.count_for(local, |c| &c.hits, 1);
        // A recycler that pools nothing homes it where its release drops it.
        (obj, self.home(local, !self.config.pooling()))
    }

    /// Sends the calling thread's pending foreign releases home, if it owns
    /// a cache of this recycler; claims none. For the buffer pool's reclaim
    /// at its memory limit, which frees only what is in a cache it reaches,
    /// the depot or an inbox: not what waits here to be sent.
    pub(crate) fn flush_own_pending(&self) {
        if let Some(mine) = self.registered_local() {
            self.flush_pending(mine);
        }
    }

    /// Puts `objs` in the depot a batch at a time, dropping what it has no
    /// room for.
    pub(crate) fn store_all(&self, mut objs: Batch<T>) {
        while !objs.is_empty() {
            let chunk = objs.split_off(objs.len().saturating_sub(self.config.batch_size));
            self.store(chunk, None);
        }
    }

    /// Frees idle objects worth at least `want` bytes if it can: from `own`
    /// (the coldest first, the slot last), then from the depot, then from the
    /// inboxes. Counts them as evicted and dropped, takes their bytes off the
    /// idle account, and returns the bytes freed.
    ///
    /// `own`, if given, is the calling thread's cache of this recycler.
    pub(crate) fn evict(&self, want: u64, own: Option<Mine<'_, T>>) -> u64 {
        if !self.may_hold_idle(own) {
            return 0;
        }
        let mut victims: Batch<T> = Vec::new();
        let mut freed = 0u64;
        if let Some(mine) = own {
            while freed < want {
                let Some(obj) = mine.take_coldest() else {
                    break;
                };
                freed += bytes_of(&obj);
                victims.push(obj);
            }
        }
        while freed < want {
            let Some(obj) = self.depot.take_one() else {
                break;
            };
            freed += bytes_of(&obj);
            victims.push(obj);
        }
        if let Some(stripes) = &self.stripes {
            // A take from the per-CPU caches costs a fence: one object
            // first, to learn the size (a bucket's buffers are alike), then
            // enough for the rest at once.
            let mut n = 1;
            while freed < want {
                let taken = stripes.take(n);
                if taken.is_empty() {
                    break;
                }
                for obj in taken {
                    freed += bytes_of(&obj);
                    victims.push(obj);
                }
                let each = (freed / victims.len() as u64).max(1);
                n = usize::try_from((want.saturating_sub(freed)).div_ceil(each))
                    .unwrap_or(usize::MAX);
            }
        }
        if freed < want {
            'inboxes: for local in self.all_caches() {
                while let Some(mut batch) = local.inbox.recv() {
                    self.settle(&mut batch, None);
                    while freed < want {
                        let Some(obj) = batch.pop() else { break };
                        freed += bytes_of(&obj);
                        victims.push(obj);
                    }
                    if !batch.is_empty() {
                        self.store(batch, None);
                    }
                    if freed >= want {
                        break 'inboxes;
                    }
                }
            }
        }
        let n = victims.len() as u64;
        Counters::add_shared(&self.shared.evicted, n);
        Counters::add_shared(&self.shared.dropped, n);
        if let Some(acct) = &self.idle {
            acct.forget(freed);
        }
        pass_on(drop_each(victims));
        freed
    }

    /// Whether anything `evict` reaches may hold idle objects: `own`, the
    /// depot, an inbox, a stripe. Atomic hints, no lock: so that a walk over
    /// thousands of buckets (a buffer pool's, under a small idle cap) skips
    /// the empty ones for a few loads each, instead of taking every
    /// depot's lock. A hint may be stale; the walk then frees less, and the
    /// release that asked drops its own object instead.
    fn may_hold_idle(&self, own: Option<Mine<'_, T>>) -> bool {
        own.is_some_and(|mine| mine.len() > 0)
            || !self.depot.looks_empty()
            || self.stripes.as_ref().is_some_and(|s| s.idle() > 0)
            || self.all_caches().any(|l| !l.inbox.looks_empty())
    }

    /// Puts `obj`, already reset, in `mine`'s slot if it is empty, or on the
    /// back of its batch if the cache then holds at most
    /// `max_capacity_per_thread` objects and the batch has room in its
    /// allocation, if `admit` (the idle-memory check, given the cache's
    /// idle cell) agrees; counts the release if `count`.
    /// Otherwise gives `obj` back, for [`release_slow`](Self::release_slow).
    ///
    /// # Safety
    ///
    /// The calling thread found `mine` open inside a marked operation
    /// ([`crate::steal`]); `mine`'s `max_capacity_per_thread` is at least 1
    /// (a recycler that pools nothing homes its objects at its discard
    /// cache); `admit` does not touch the cache.
    #[inline(always)]
    pub(crate) unsafe fn push_local(
        mine: Mine<'_, T>,
        obj: Box<T>,
        count: bool,
        admit: impl FnOnce(*const DeltaCell) -> bool,
    ) -> Result<(), Box<T>> {
        // SAFETY: the caller's guarantee; the closure runs no user code
        // (`admit` is the pool's accounting).
        let rest = unsafe {
            mine.with_cache_unchecked(|c| {
                if c.slot.is_none() {
                    if admit(c.idle_cell) {
                        *c.slot = Some(obj);
                        return None;
                    }
                    return Some(obj);
                }
                debug_assert!(c.max >= 1);
                // `admit` last: it counts the bytes it admits.
                if c.has_room() && admit(c.idle_cell) {
                    c.batch.push_back(obj);
                    None
                } else {
                    Some(obj)
                }
            })
        };
        Self::pushed(mine.local(), rest, count)
    }

    /// Takes an idle object from `mine` (its slot, else its batch),
    /// counting a hit if `count`; returns it with the cache's idle cell.
    ///
    /// # Safety
    ///
    /// The calling thread found `mine` open inside its marked `get`
    /// ([`crate::steal`]), and has no foreign releases pending in it (the
    /// buffer pool removes a cache from its index while it has).
    #[inline(always)]
    pub(crate) unsafe fn pop_local(
        mine: Mine<'_, T>,
        count: bool,
    ) -> Option<(Box<T>, *const DeltaCell)> {
        // SAFETY: the caller's guarantee; the closure runs no user code.
        let (obj, cell) = unsafe { mine.with_cache_unchecked(|c| (c.pop(), c.idle_cell)) };
        let obj = obj?;
        if count {
            Counters::add_owned(&mine.counters.hits, 1);
        }
        Some((obj, cell))
    }
}
