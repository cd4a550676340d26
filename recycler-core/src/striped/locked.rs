//! Striped mode's locked stripes: the fallback where the process cannot run
//! restartable sequences (see [`super`]), and how striped mode worked
//! everywhere before: idle objects in a few stripes chosen by the CPU a
//! thread runs on, each behind a try-lock.
//!
//! Per-thread caches strand objects whenever a thread stops calling into the
//! pool (a tokio worker that goes idle, a pool thread handed other work, a
//! thread parked for ever), and tasks that migrate release their objects on
//! other threads than the ones that got them. Undertow fixed the same
//! problem by striping its queues by processor count instead of by thread
//! (UNDERTOW-2717). Here:
//!
//! - a get or a release picks the stripe of the CPU it runs on
//!   ([`crate::cpu`]) and holds that stripe only for a pop or a push;
//! - a stripe that is locked is skipped for the next one instead of waited
//!   for; only when every stripe worth trying is locked does it wait (for a
//!   push or a pop, nothing longer: no user code runs under a stripe's lock);
//! - a get whose stripe is empty looks at the other stripes before it calls
//!   the factory, and a release into a full stripe tries the others before
//!   it drops its object;
//! - no object ever belongs to a thread: once a release returns, the object
//!   is in a stripe that any thread takes it from. There is no inbox, no
//!   depot traffic and no exit hook.
//!
//! Each stripe keeps its own counters, written under its lock, and is
//! aligned to 128 bytes, so that stripes never share a cache line.

use std::mem;

use crate::loom::{AtomicBool, AtomicUsize, Ordering, UnsafeCell, spin_loop, yield_now};
use crate::stats::{Counters, Tally};

/// The most objects a get that found its own stripe empty moves from
/// another stripe into its own (see [`LockedStripes::take_from`]).
const STEAL: usize = 32;

/// The locked stripes of one recycler.
pub(crate) struct LockedStripes<T> {
    stripes: Box<[Stripe<T>]>,
    /// `stripes.len() - 1`; the count is a power of two.
    mask: usize,
    /// Idle objects one stripe holds at most.
    capacity: usize,
}

/// One stripe: a LIFO stack of idle objects behind a lock of its own.
#[repr(align(128))]
pub(crate) struct Stripe<T> {
    locked: AtomicBool,
    /// Objects in `items`; written under the lock, read without it to skip
    /// empty (or full) stripes.
    len: AtomicUsize,
    items: UnsafeCell<Vec<Box<T>>>,
    /// This stripe's tallies, written only under its lock (so with a load
    /// and a store, as a cache's by its owner).
    pub(crate) counters: Counters,
}

// SAFETY: the stripes own their objects (sent between threads, hence
// `T: Send`); `items` is touched only under the stripe's lock, whose
// `Acquire`/`Release` pair orders one holder's accesses before the next's.
unsafe impl<T: Send> Send for LockedStripes<T> {}
// SAFETY: as above; everything else is atomic.
unsafe impl<T: Send> Sync for LockedStripes<T> {}

/// A stripe's lock, held.
pub(crate) struct Held<'a, T> {
    stripe: &'a Stripe<T>,
}

impl<T> Stripe<T> {
    /// A stripe with room for `reserve` objects before its vector grows.
    fn new(reserve: usize) -> Self {
        Self {
            locked: AtomicBool::new(false),
            len: AtomicUsize::new(0),
            items: UnsafeCell::new(Vec::with_capacity(reserve)),
            counters: Counters::default(),
        }
    }

    /// The lock, if it is free.
    #[inline]
    fn try_lock(&self) -> Option<Held<'_, T>> {
        // Look before writing: a failed exchange still takes the line.
        if self.locked.load(Ordering::Relaxed) {
            return None;
        }
        // Acquire: pairs with the `Release` of the last holder's unlock, so
        // its changes to `items` happen before ours.
        self.locked
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .ok()
            .map(|_| Held { stripe: self })
    }

    /// The lock, waiting for it: holders only push or pop.
    fn lock(&self) -> Held<'_, T> {
        let mut spins = 0u32;
        loop {
            if let Some(held) = self.try_lock() {
                return held;
            }
            spins += 1;
            if spins < 64 {
                spin_loop();
            } else {
                // The holder may have been preempted (more threads than
                // CPUs): let it run.
                yield_now();
            }
        }
    }

    /// Objects held (a snapshot).
    fn len(&self) -> usize {
        self.len.load(Ordering::Relaxed)
    }
}

impl<T> Held<'_, T> {
    /// Runs `f` on the stripe's objects, and publishes their number.
    #[inline]
    fn with_items<R>(&mut self, f: impl FnOnce(&mut Vec<Box<T>>) -> R) -> R {
        self.stripe.items.with_mut(|items| {
            // SAFETY: the lock is held, so no other thread touches `items`,
            // and `f` (which runs no user code) is the only borrow.
            let items = unsafe { &mut *items };
            let r = f(items);
            self.stripe.len.store(items.len(), Ordering::Relaxed);
            r
        })
    }

    pub(crate) fn counters(&self) -> &Counters {
        &self.stripe.counters
    }
}

impl<T> Drop for Held<'_, T> {
    #[inline]
    fn drop(&mut self) {
        // Release: our changes to `items` happen before the next holder's
        // `Acquire`.
        self.stripe.locked.store(false, Ordering::Release);
    }
}

impl<T> LockedStripes<T> {
    /// `count` stripes (rounded up to a power of two), each holding up to
    /// `capacity` objects.
    pub(crate) fn new(count: usize, capacity: usize) -> Self {
        let count = count.clamp(1, super::MAX_STRIPES).next_power_of_two();
        Self {
            // Room for a few batches each from the start (512 bytes a
            // stripe), so that neither the first pushes on a CPU nor a
            // steal into its stripe allocate.
            stripes: (0..count)
                .map(|_| Stripe::new(capacity.min(2 * STEAL)))
                .collect(),
            mask: count - 1,
            capacity,
        }
    }

    /// Every stripe, for reading counters.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &Stripe<T>> {
        self.stripes.iter()
    }

    /// Adds every stripe's tallies to `tally`.
    pub(crate) fn add_to(&self, tally: &mut Tally) {
        for stripe in self.iter() {
            stripe.counters.add_to(tally);
        }
    }

    /// The stripes from `cpu`'s own, in order.
    fn from(&self, cpu: usize) -> impl Iterator<Item = &Stripe<T>> {
        (0..self.stripes.len()).map(move |i| &self.stripes[(cpu + i) & self.mask])
    }

    /// `cpu`'s own stripe.
    #[inline(always)]
    fn own(&self, cpu: usize) -> &Stripe<T> {
        // SAFETY: `mask` is `stripes.len() - 1` (a power of two), so the
        // index is in range.
        unsafe { self.stripes.get_unchecked(cpu & self.mask) }
    }

    /// Pops an idle object, starting at `cpu`'s stripe and counting the hit
    /// there; `None` if every stripe is empty.
    #[inline]
    pub(crate) fn pop(&self, cpu: usize) -> Option<Box<T>> {
        let own = self.own(cpu);
        if own.len() != 0
            && let Some(mut held) = own.try_lock()
            && let Some(obj) = held.with_items(Vec::pop)
        {
            Counters::add_owned(&held.counters().hits, 1);
            return Some(obj);
        }
        self.pop_elsewhere(cpu)
    }

    /// [`pop`](Self::pop) when `cpu`'s stripe was empty or busy.
    #[cold]
    #[inline(never)]
    fn pop_elsewhere(&self, cpu: usize) -> Option<Box<T>> {
        // First the stripes that are free, then, if some non-empty stripe
        // was busy, wait for one of those.
        let mut busy = false;
        for stripe in self.from(cpu) {
            if stripe.len() == 0 {
                continue;
            }
            match stripe.try_lock() {
                Some(held) => {
                    if let Some(obj) = self.take_from(cpu, held) {
                        return Some(obj);
                    }
                }
                None => busy = true,
            }
        }
        if !busy {
            return None;
        }
        for stripe in self.from(cpu) {
            if stripe.len() == 0 {
                continue;
            }
            if let Some(obj) = self.take_from(cpu, stripe.lock()) {
                return Some(obj);
            }
        }
        None
    }

    /// Pops an object from `held`, counting the hit there; if `held` is not
    /// `cpu`'s own stripe, also moves up to half of what is left there (at
    /// most [`STEAL`]) into the own stripe when its lock is free, so that
    /// the next gets on this CPU find objects there. Where objects are
    /// released on one CPU and got on another (a producer and a consumer, a
    /// task that migrates), one trip to the other stripe's cache lines then
    /// serves a batch of gets instead of one.
    ///
    /// Two locks at once, deadlock-free: the second is only tried, never
    /// waited for.
    fn take_from(&self, cpu: usize, mut held: Held<'_, T>) -> Option<Box<T>> {
        let obj = held.with_items(Vec::pop)?;
        Counters::add_owned(&held.counters().hits, 1);
        let own = self.own(cpu);
        let left = held.stripe.len();
        if left > 1
            && !std::ptr::eq(own, held.stripe)
            && own.len() < self.capacity
            && let Some(mut mine) = own.try_lock()
        {
            let capacity = self.capacity;
            held.with_items(|theirs| {
                mine.with_items(|ours| {
                    let n = (theirs.len() / 2)
                        .min(STEAL)
                        .min(capacity.saturating_sub(ours.len()));
                    let at = theirs.len() - n;
                    ours.extend(theirs.drain(at..));
                });
            });
        }
        Some(obj)
    }

    /// Pushes `obj`, reset, starting at `cpu`'s stripe and counting the
    /// release there; hands it back if every stripe is full.
    #[inline]
    pub(crate) fn push(&self, cpu: usize, obj: Box<T>) -> Result<(), Box<T>> {
        let own = self.own(cpu);
        let mut obj = obj;
        if own.len() < self.capacity
            && let Some(mut held) = own.try_lock()
        {
            match self.push_held(&mut held, obj) {
                Ok(()) => return Ok(()),
                Err(back) => obj = back,
            }
        }
        self.push_elsewhere(cpu, obj)
    }

    /// [`push`](Self::push) when `cpu`'s stripe was full or busy.
    #[cold]
    #[inline(never)]
    fn push_elsewhere(&self, cpu: usize, obj: Box<T>) -> Result<(), Box<T>> {
        let mut obj = obj;
        let mut busy = false;
        for stripe in self.from(cpu) {
            if stripe.len() >= self.capacity {
                continue;
            }
            match stripe.try_lock() {
                Some(mut held) => match self.push_held(&mut held, obj) {
                    Ok(()) => return Ok(()),
                    Err(back) => obj = back,
                },
                None => busy = true,
            }
        }
        if !busy {
            return Err(obj);
        }
        for stripe in self.from(cpu) {
            if stripe.len() >= self.capacity {
                continue;
            }
            let mut held = stripe.lock();
            match self.push_held(&mut held, obj) {
                Ok(()) => return Ok(()),
                Err(back) => obj = back,
            }
        }
        Err(obj)
    }

    #[inline(always)]
    fn push_held(&self, held: &mut Held<'_, T>, obj: Box<T>) -> Result<(), Box<T>> {
        let capacity = self.capacity;
        let pushed = held.with_items(|items| {
            if items.len() < capacity {
                items.push(obj);
                None
            } else {
                Some(obj)
            }
        });
        match pushed {
            None => {
                Counters::add_owned(&held.counters().released_local, 1);
                Ok(())
            }
            Some(obj) => Err(obj),
        }
    }

    /// Moves objects that `prefill` made from the back of `objs` into the
    /// stripes, filling one stripe after another; leaves in `objs` those
    /// that do not fit.
    pub(crate) fn fill(&self, objs: &mut Vec<Box<T>>) {
        for stripe in self.stripes.iter() {
            if objs.is_empty() {
                return;
            }
            let capacity = self.capacity;
            stripe.lock().with_items(|items| {
                let room = capacity.saturating_sub(items.len()).min(objs.len());
                items.extend(objs.drain(objs.len() - room..));
            });
        }
    }

    /// Takes up to `n` idle objects (for eviction), the coldest first.
    pub(crate) fn take(&self, n: usize) -> Vec<Box<T>> {
        let mut taken = Vec::new();
        for stripe in self.stripes.iter() {
            if taken.len() >= n {
                break;
            }
            if stripe.len() == 0 {
                continue;
            }
            stripe.lock().with_items(|items| {
                let k = (n - taken.len()).min(items.len());
                taken.extend(items.drain(..k));
            });
        }
        taken
    }

    /// Takes every idle object, for the caller to drop outside the locks.
    pub(crate) fn drain(&self) -> Vec<Box<T>> {
        let mut all = Vec::new();
        for stripe in self.stripes.iter() {
            stripe
                .lock()
                .with_items(|items| all.append(&mut mem::take(items)));
        }
        all
    }

    /// Room for this many more objects, across stripes (a snapshot);
    /// saturates at `usize::MAX` (a stripe's capacity may be `usize::MAX`
    /// itself: `max_capacity_per_thread(usize::MAX)`).
    pub(crate) fn room(&self) -> usize {
        self.stripes.iter().fold(0, |room, s| {
            room.saturating_add(self.capacity.saturating_sub(s.len()))
        })
    }

    /// Idle objects now, across stripes (a snapshot).
    pub(crate) fn idle(&self) -> usize {
        self.stripes.iter().map(Stripe::len).sum()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn rounds_up_and_spreads() {
        let s: LockedStripes<u32> = LockedStripes::new(3, 2);
        assert_eq!(s.stripes.len(), 4);
        // Full stripes pass their objects on to the next ones.
        for i in 0..8 {
            assert!(s.push(1, Box::new(i)).is_ok(), "push {i}");
        }
        assert_eq!(s.push(1, Box::new(8)).map_err(|b| *b), Err(8), "all full");
        assert_eq!(s.idle(), 8);
        // Empty stripes are skipped: everything comes back from any CPU.
        let mut got: Vec<u32> = (0..8).map(|_| *s.pop(3).unwrap()).collect();
        assert!(s.pop(0).is_none());
        got.sort();
        assert_eq!(got, (0..8).collect::<Vec<_>>());
    }

    #[test]
    fn counts_under_the_lock() {
        let s: LockedStripes<u32> = LockedStripes::new(2, 4);
        s.push(0, Box::new(1)).unwrap();
        assert!(s.pop(1).is_some(), "taken from the other stripe");
        let hits: u64 = s
            .iter()
            .map(|st| st.counters.hits.load(Ordering::Relaxed))
            .sum();
        let released: u64 = s
            .iter()
            .map(|st| st.counters.released_local.load(Ordering::Relaxed))
            .sum();
        assert_eq!((hits, released), (1, 1));
    }

    #[test]
    fn a_get_from_another_stripe_moves_half_of_the_rest_to_its_own() {
        let s: LockedStripes<u32> = LockedStripes::new(2, 64);
        for i in 0..11 {
            s.push(0, Box::new(i)).unwrap();
        }
        let before = s.stripes[1].stripes_items_ptr();
        assert_eq!(*s.pop(1).unwrap(), 10, "the warmest object");
        assert_eq!((s.stripes[0].len(), s.stripes[1].len()), (5, 5));
        assert_eq!(s.stripes[1].stripes_items_ptr(), before, "no allocation");
        // The next gets on CPU 1 find their own stripe full.
        let got: Vec<u32> = (0..5).map(|_| *s.pop(1).unwrap()).collect();
        assert_eq!(got, [9, 8, 7, 6, 5]);
        assert_eq!(s.stripes[0].len(), 5, "untouched");
        // Nothing left to move: one object is just taken.
        assert_eq!(s.pop(1).map(|b| *b), Some(4));
        assert_eq!((s.stripes[0].len(), s.stripes[1].len()), (2, 2));
        let hits: u64 = s
            .iter()
            .map(|st| st.counters.hits.load(Ordering::Relaxed))
            .sum();
        assert_eq!(hits, 7);
        // A stripe at capacity takes nothing more.
        let t: LockedStripes<u32> = LockedStripes::new(2, 2);
        for i in 0..2 {
            t.push(1, Box::new(i)).unwrap();
        }
        for i in 0..2 {
            t.push(0, Box::new(i)).unwrap();
        }
        t.pop(0).unwrap(); // own stripe: nothing moves
        assert_eq!((t.stripes[0].len(), t.stripes[1].len()), (1, 2));
    }

    impl<T> Stripe<T> {
        /// The address of the stripe's vector's buffer (moves if it grows).
        fn stripes_items_ptr(&self) -> *const Box<T> {
            // SAFETY: single-threaded test: nothing else touches `items`.
            self.items.with_mut(|items| unsafe { (*items).as_ptr() })
        }
    }

    #[test]
    fn room_saturates_for_unbounded_stripes() {
        let s: LockedStripes<u32> = LockedStripes::new(4, usize::MAX);
        assert_eq!(s.room(), usize::MAX);
        s.push(0, Box::new(1)).unwrap();
        assert_eq!(s.room(), usize::MAX, "still more than can be counted");
    }

    #[test]
    fn fill_take_drain() {
        let s: LockedStripes<u32> = LockedStripes::new(2, 3);
        let mut objs: Vec<Box<u32>> = (0..10).map(Box::new).collect();
        s.fill(&mut objs);
        assert_eq!((objs.len(), s.idle()), (4, 6), "two stripes of three");
        assert_eq!(s.take(4).len(), 4);
        assert_eq!(s.drain().len(), 2);
        assert_eq!(s.idle(), 0);
    }
}
