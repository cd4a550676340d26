//! Striped mode on restartable sequences: a small cache per CPU whose pop
//! and push are critical sections ([`PerCpu`]), in front of a locked depot
//! of batches that every CPU spills into and refills from.
//!
//! - **get**: pop this CPU's cache (a section: no lock, no atomic
//!   read-modify-write). Empty: take a batch from the depot (one lock),
//!   keep one object and push the rest into this CPU's cache. The depot
//!   empty too: take what the other CPUs' caches hold, every one of them
//!   shut and restarted with one `membarrier` ([`PerCpu::take_each`]) — for
//!   a `get`, only when they hold at least [`CpuStripes::steal_min`] between
//!   them, since a fence costs a microsecond or so where a made object
//!   costs tens of nanoseconds; `try_get`, which never makes one, takes
//!   whatever there is.
//! - **release**: push onto this CPU's cache (a section). Full: spill a
//!   batch of it into the depot (the batch popped by sections while the
//!   depot's lock is held, so that the depot has room for all of it), then
//!   push; the depot full too, the object goes back to the caller, which
//!   drops it.
//! - **trim, eviction, drop**: every cache with one fence, and the depot.
//!
//! So a thread that stays on a CPU gets and releases on sections alone, a
//! stream of objects from one CPU to another (a producer and a consumer, a
//! task that migrates) moves through the depot a batch per lock, and the
//! fences are left to the rare takes from other CPUs' caches.
//!
//! Idle objects: at most `stripes × max_capacity_per_thread` in the depot
//! (today's bound for the locked stripes), plus each CPU's cache, which
//! holds `2 × batch_size` at most (and never more than
//! `max_capacity_per_thread`, nor [`MAX_FRONT`]).
//!
//! The counts: a section's pop is a hit and its push a release, which the
//! cache's books count ([`PerCpu::served`]) without a store of their own;
//! the pops that spill and the pushes that refill are subtracted
//! ([`CpuStripes::spilled`], [`CpuStripes::refilled`], once per batch), and
//! what the locked paths serve is counted in shared counters.

use crate::depot::Depot;
use crate::inbox::Batch;
use crate::loom::{Ordering, StatCounter};
use crate::percpu::PerCpu;
use crate::stats::{Counters, Tally};

use super::Steal;

/// The most objects a CPU's cache holds.
pub(crate) const MAX_FRONT: usize = 256;

/// Striped mode's per-CPU caches and their depot (see the module docs).
pub(crate) struct CpuStripes<T> {
    /// One cache per CPU.
    fronts: PerCpu<T>,
    /// What the caches spill, and where they refill from.
    back: Depot<T>,
    /// Objects a spill moves.
    batch: usize,
    /// A `get` takes from other CPUs' caches only when they hold at least
    /// this many between them.
    steal_min: usize,
    /// What the paths off the sections served (shared counters: a
    /// read-modify-write each, on a miss or once per batch).
    counters: Counters,
    /// Objects popped from a CPU's cache by sections to spill them: the
    /// cache's books count them as pops, which are not hits.
    spilled: StatCounter,
    /// Objects pushed into a CPU's cache by sections as a refill: the
    /// cache's books count them as pushes, which are not releases.
    refilled: StatCounter,
}

impl<T> CpuStripes<T> {
    /// Striped mode on sections, for `stripes` stripes of `capacity`
    /// objects and batches of `batch`; `None` where the process cannot run
    /// sections. Under loom, `stripes` modelled CPUs; else one cache per CPU
    /// the system has configured.
    pub(crate) fn new(stripes: usize, capacity: usize, batch: usize) -> Option<Self> {
        let front = capacity.min(batch.saturating_mul(2)).clamp(1, MAX_FRONT);
        #[cfg(loom)]
        let cpus = stripes;
        #[cfg(not(loom))]
        let cpus = crate::percpu::configured_cpus();
        let fronts = PerCpu::on_sections(cpus, front)?;
        Some(Self {
            fronts,
            back: Depot::new(stripes.saturating_mul(capacity)),
            batch: batch.clamp(1, front),
            steal_min: (front / 4).max(1),
            counters: Counters::default(),
            spilled: StatCounter::new(0),
            refilled: StatCounter::new(0),
        })
    }

    /// Pops an object: this CPU's cache, else the depot, else (as `steal`
    /// says) the other CPUs' caches. Counts a hit.
    #[inline]
    pub(crate) fn pop(&self, steal: Steal) -> Option<Box<T>> {
        match self.fronts.pop() {
            Some(obj) => Some(obj),
            None => self.pop_slow(steal),
        }
    }

    /// [`pop`](Self::pop) when this CPU's cache was empty.
    #[cold]
    #[inline(never)]
    fn pop_slow(&self, steal: Steal) -> Option<Box<T>> {
        let obj = match self.back.take() {
            Some(mut batch) => {
                let obj = batch.pop();
                self.refill(batch);
                obj
            }
            None => self.take_others(steal),
        }?;
        Counters::add_shared(&self.counters.hits, 1);
        Some(obj)
    }

    /// What the other CPUs' caches hold, if worth a fence (see
    /// [`Steal`]): one object for the caller, the rest into this CPU's
    /// cache (and the depot, for what does not fit).
    fn take_others(&self, steal: Steal) -> Option<Box<T>> {
        let idle = self.fronts.idle();
        let worth = match steal {
            Steal::Any => idle > 0,
            Steal::IfWorth => idle >= self.steal_min,
        };
        if !worth {
            return None;
        }
        // Room for a cache's worth and the caller's, made before any lock
        // is taken (a spare vector of the depot's, once it has some).
        let want = self.fronts.capacity() + 1;
        let mut taken = self.back.spare();
        taken.reserve(want);
        self.fronts.take_each(want, false, &mut taken);
        let obj = taken.pop();
        self.refill(taken);
        obj
    }

    /// Pushes `batch` into this CPU's cache, the oldest first (so that the
    /// newest ends on top), counting them as refilled; what does not fit
    /// goes (back) to the depot.
    fn refill(&self, mut batch: Batch<T>) {
        batch.reverse();
        let mut pushed = 0u64;
        while let Some(obj) = batch.pop() {
            if let Err(obj) = self.fronts.push(obj) {
                batch.push(obj);
                break;
            }
            pushed += 1;
        }
        if pushed > 0 {
            Counters::add_shared(&self.refilled, pushed);
        }
        // Taken from the depot or from the caches a moment ago: it may
        // overfill the depot by that much, not lose them.
        batch.reverse();
        self.back.put_back(batch);
    }

    /// Pushes `obj`, reset, onto this CPU's cache; full, spills a batch of
    /// it to the depot first. Counts the release; hands `obj` back if there
    /// is no room anywhere.
    #[inline]
    pub(crate) fn push(&self, obj: Box<T>) -> Result<(), Box<T>> {
        match self.fronts.push(obj) {
            Ok(()) => Ok(()),
            Err(obj) => self.push_slow(obj),
        }
    }

    /// [`push`](Self::push) into a full cache.
    #[cold]
    #[inline(never)]
    fn push_slow(&self, obj: Box<T>) -> Result<(), Box<T>> {
        let spilled = self.back.put_from(self.batch, |n, into| {
            while into.len() < n {
                match self.fronts.pop() {
                    Some(obj) => into.push(obj),
                    None => break,
                }
            }
        });
        if spilled > 0 {
            Counters::add_shared(&self.spilled, spilled as u64);
        }
        let obj = match self.fronts.push(obj) {
            Ok(()) => return Ok(()),
            Err(obj) => obj,
        };
        // The depot had no room, or this thread moved to a full cache.
        self.back.put_one(obj)?;
        Counters::add_shared(&self.counters.released_local, 1);
        Ok(())
    }

    /// Moves objects that `prefill` made from the back of `objs` into the
    /// depot, a batch at a time; leaves in `objs` those that do not fit.
    pub(crate) fn fill(&self, objs: &mut Vec<Box<T>>) {
        while !objs.is_empty() {
            let at = objs.len().saturating_sub(self.batch);
            let chunk = objs.split_off(at);
            if let Some(rejected) = self.back.put(chunk) {
                objs.extend(rejected);
                return;
            }
        }
    }

    /// Takes up to `n` idle objects (for eviction): the depot's, then the
    /// coldest of the CPUs' caches, with one fence for all of them.
    pub(crate) fn take(&self, n: usize) -> Vec<Box<T>> {
        let mut taken = Vec::new();
        while taken.len() < n {
            match self.back.take_one() {
                Some(obj) => taken.push(obj),
                None => break,
            }
        }
        let left = n - taken.len();
        if left > 0 && self.fronts.idle() > 0 {
            taken.reserve(left.min(self.fronts.idle()));
            self.fronts.take_each(left, true, &mut taken);
        }
        taken
    }

    /// Takes every idle object, for the caller to drop outside the locks.
    pub(crate) fn drain(&self) -> Vec<Box<T>> {
        let mut all = self.fronts.drain();
        for batch in self.back.drain() {
            all.extend(batch);
        }
        all
    }

    /// Room in the depot for this many more objects (a snapshot), where
    /// `prefill` puts what it makes.
    pub(crate) fn room(&self) -> usize {
        self.back.room()
    }

    /// Idle objects now, in the caches and the depot (a snapshot).
    pub(crate) fn idle(&self) -> usize {
        self.fronts.idle() + self.back.len_hint()
    }

    /// Adds what the caches and the depot served to `tally`.
    pub(crate) fn add_to(&self, tally: &mut Tally) {
        self.counters.add_to(tally);
        let (pops, pushes) = self.fronts.served();
        let hits = pops.wrapping_sub(self.spilled.load(Ordering::Relaxed));
        let released = pushes.wrapping_sub(self.refilled.load(Ordering::Relaxed));
        tally.hits = tally.hits.wrapping_add(hits);
        tally.released_local = tally.released_local.wrapping_add(released);
    }

    /// The per-CPU caches: the fast paths run their sections directly
    /// (a pop a hit and a push a release, counted by the caches' books).
    #[inline(always)]
    pub(crate) fn fronts(&self) -> &PerCpu<T> {
        &self.fronts
    }
}
