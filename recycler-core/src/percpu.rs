//! A per-CPU cache of boxed objects whose pop and push are restartable
//! sequences, as tcmalloc's per-CPU caches are: no lock and no atomic
//! read-modify-write on the fast path, and every object reachable from
//! every thread.
//!
//! # Layout
//!
//! One slot per CPU ([`slots`]): a `shut` word, a word that holds the
//! length and the sections' push count, and a fixed array of pointers, in
//! cache lines of its own. Beside them, per slot, a lock and the slot's
//! books ([`locked`]), which only the locked path takes and writes.
//!
//! # The fast path
//!
//! [`PerCpu::pop`] and [`PerCpu::push`] run a critical section
//! ([`section`]) on the slot of the CPU the thread runs on: read `cpu_id`,
//! check the slot's `shut` word, check the length, read or write the item,
//! and commit with one store of the new word (length, and for a push the
//! push count). The kernel restarts the section if anything else ran on
//! that CPU before the commit, so the sections of one CPU are atomic with
//! respect to each other.
//!
//! # The locked path, and stealing
//!
//! Any other access to a slot, from any CPU ([`PerCpu::steal`],
//! [`PerCpu::take_each`], [`PerCpu::drain`], and the fast path when it
//! cannot finish: the slot is shut, the CPU has no slot, a storm of
//! restarts, or a push count about to carry), is a *locked access*:
//!
//! 1. count itself in the slot's `shut` word (an atomic increment): from
//!    now on, no section there commits — sections read `shut` before they
//!    touch the stack and leave when it is non-zero;
//! 2. take the slot's lock;
//! 3. unless the slot is already *fenced*, restart every section in flight
//!    ([`Sections::restart_all`], `membarrier`) and mark it fenced: the
//!    sections that had read `shut` as zero before step 1 either committed
//!    already (and the fence makes their stores visible) or will restart,
//!    read `shut` again and leave;
//! 4. fold the word's push count into the slot's books, then work on the
//!    stack under the lock, with plain loads and stores;
//! 5. uncount itself (`Release`); if that made `shut` zero, the slot is no
//!    longer fenced (the next section may commit); then unlock.
//!
//! "Fenced" is kept under the lock and means: `shut` has stayed non-zero
//! since a fence made by a lock holder. A thread whose section found the
//! slot shut counts itself in before it waits for the lock, so that the
//! stealer hands the slot over still shut and fenced: the waiter works under
//! the lock without a fence of its own. The first locked access of a run
//! pays the fence (about a microsecond), the others only the lock. A thread
//! whose CPU has no slot (or whose sections keep restarting) uses the slot
//! `cpu % slots` this way. A locked access to several slots
//! ([`PerCpu::take_each`], [`PerCpu::drain`]) shuts all of them first and
//! fences once for all: each slot's `shut` stays non-zero from before that
//! fence until the access reopens it, which is what "fenced" asks.
//!
//! Why it is sound: an item or a length is written either by a section that
//! commits on its own CPU, which the kernel makes atomic with respect to
//! the other sections of that CPU, or under the slot's lock while `shut`
//! has been non-zero since a fence, when no section can commit there (a
//! section that commits read `shut` as zero after the last reopening, and
//! either completed before the fence or started after the reopening). The
//! reopening's `Release` and the sections' loads (x86 loads are acquires)
//! order a locked access's writes before the sections that follow it; the
//! fence orders the sections' writes before the locked access.
//!
//! # The fallback
//!
//! Without restartable sequences ([`crate::rseq::sections`]: no `rseq`
//! area, `__rseq_size` 0, no `membarrier` command for them, valgrind,
//! another OS or architecture, or `RECYCLER_NO_RSEQ=1`), every operation is
//! a locked access on its CPU's slot, without `shut` and without fences: a
//! lock per CPU stack, as striped mode's stripes. The guarantees are the
//! same; the cost is a lock per operation.

mod locked;
mod section;
mod slots;
#[cfg(all(test, not(loom)))]
mod tests;

use std::fmt;
use std::marker::PhantomData;

use self::locked::Gate;
use self::section::{Outcome, Status};
use self::slots::Slots;
use crate::loom::{Ordering, StatCounter};
use crate::rseq::{self, Sections};

/// A pop or a push that its first section did not finish (or that the
/// fallback runs): what [`PerCpu::finish_pop`] and [`PerCpu::finish_push`]
/// complete. Holds the item of a push (the caller's until a stack takes
/// it) or of a pop that committed after restarts; dropping one unfinished
/// leaks that item, so every one is finished.
#[must_use]
#[derive(Debug)]
pub(crate) struct Unfinished {
    status: Status,
    item: *mut (),
}

impl Unfinished {
    fn fallback(item: *mut ()) -> Self {
        Self {
            status: Status::FALLBACK,
            item,
        }
    }
}

/// A per-CPU cache of boxed objects (see the module docs).
///
/// Not part of the crate's API: exposed, hidden, for the workspace's tests
/// and benchmarks; striped mode's stripes are built on it.
pub struct PerCpu<T> {
    slots: Slots,
    /// Per slot, the lock of the locked path and the slot's books.
    gates: Box<[Gate]>,
    /// Present when the fast path runs critical sections.
    sections: Option<Sections>,
    /// Sections aborted (counted after the fact, off the fast path).
    aborts: StatCounter,
    /// Operations that wanted the fast path and took the locked one.
    slow: StatCounter,
    /// Fences made by locked accesses.
    fences: StatCounter,
    /// The cache owns the objects its stacks point to.
    _owns: PhantomData<Box<T>>,
}

// SAFETY: the cache owns its objects (moved between threads by pops and
// pushes on any thread, hence `T: Send`); its stacks are written only by
// the protocol of the module docs, whose sections are atomic per CPU and
// whose locked accesses hold the slot's lock with the sections shut out.
unsafe impl<T: Send> Send for PerCpu<T> {}
// SAFETY: as above: `&PerCpu` hands out only owned boxes, moved out once.
unsafe impl<T: Send> Sync for PerCpu<T> {}

impl<T> PerCpu<T> {
    /// A cache of `capacity` objects per CPU, with a slot for each CPU the
    /// system has configured (CPUs with larger numbers take the locked
    /// path), on restartable sequences where the process can run them.
    #[cfg(not(loom))]
    pub fn new(capacity: usize) -> Self {
        Self::with_slots(configured_cpus(), capacity)
    }

    /// A cache of `slots` slots (at most 4096) of `capacity` objects each
    /// (at most 2^20), on restartable sequences where the process can run
    /// them.
    pub fn with_slots(slots: usize, capacity: usize) -> Self {
        let slots = Slots::new(slots, capacity);
        let sections = rseq::sections(slots.count());
        Self::make(slots, sections)
    }

    /// As [`with_slots`](Self::with_slots), but only on restartable
    /// sequences: `None` where the process cannot run them.
    pub(crate) fn on_sections(slots: usize, capacity: usize) -> Option<Self> {
        let slots = Slots::new(slots, capacity);
        let sections = rseq::sections(slots.count())?;
        Some(Self::make(slots, Some(sections)))
    }

    /// As [`with_slots`](Self::with_slots), always on the fallback: a lock
    /// per CPU stack.
    pub fn fallback(slots: usize, capacity: usize) -> Self {
        Self::make(Slots::new(slots, capacity), None)
    }

    fn make(slots: Slots, sections: Option<Sections>) -> Self {
        Self {
            gates: (0..slots.count()).map(|_| Gate::new()).collect(),
            slots,
            sections,
            aborts: StatCounter::new(0),
            slow: StatCounter::new(0),
            fences: StatCounter::new(0),
            _owns: PhantomData,
        }
    }

    /// Pops an object from the stack of the CPU the thread runs on; `None`
    /// if that stack is empty (the other CPUs' stacks are not looked at:
    /// see [`take_each`](Self::take_each)).
    #[inline]
    pub fn pop(&self) -> Option<Box<T>> {
        match self.try_pop() {
            Ok(obj) => Some(obj),
            Err(unfinished) => self.finish_pop(unfinished),
        }
    }

    /// Pushes `obj` onto the stack of the CPU the thread runs on; hands it
    /// back if that stack is full.
    #[inline]
    pub fn push(&self, obj: Box<T>) -> Result<(), Box<T>> {
        match self.try_push(obj) {
            Ok(()) => Ok(()),
            Err(unfinished) => self.finish_push(unfinished),
        }
    }

    /// [`pop`](Self::pop)'s section alone: the object if it committed at
    /// the first attempt, else what [`finish_pop`](Self::finish_pop)
    /// completes (a caller that only tail-calls that saves no registers).
    #[inline(always)]
    pub(crate) fn try_pop(&self) -> Result<Box<T>, Unfinished> {
        if self.sections.is_none() {
            return Err(Unfinished::fallback(std::ptr::null_mut()));
        }
        // SAFETY: checked just above.
        unsafe { self.try_pop_on_sections() }
    }

    /// [`try_pop`](Self::try_pop) on a cache known to run sections, without
    /// the check: for striped mode's lean get ([`crate::near`]).
    ///
    /// # Safety
    ///
    /// The cache runs on sections (made by `on_sections`, or
    /// [`uses_rseq`](Self::uses_rseq) is true).
    #[inline(always)]
    pub(crate) unsafe fn try_pop_on_sections(&self) -> Result<Box<T>, Unfinished> {
        // SAFETY: the caller's guarantee.
        let sections = unsafe { self.sections.as_ref().unwrap_unchecked() };
        // SAFETY: `sections` is this process's, `slots` was laid out by
        // `Slots::new`, and nothing but sections writes a slot whose `shut`
        // word is zero (the locked path writes only with it non-zero).
        let (status, item) = unsafe { section::pop(sections, &self.slots) };
        if status.is_clean() {
            return Ok(Self::boxed(item));
        }
        Err(Unfinished { status, item })
    }

    /// [`push`](Self::push)'s section alone, as [`try_pop`](Self::try_pop):
    /// the object is the stack's if it committed at the first attempt, else
    /// [`finish_push`](Self::finish_push) completes the push.
    #[inline(always)]
    pub(crate) fn try_push(&self, obj: Box<T>) -> Result<(), Unfinished> {
        if self.sections.is_none() {
            return Err(Unfinished::fallback(Box::into_raw(obj).cast()));
        }
        // SAFETY: checked just above.
        unsafe { self.try_push_on_sections(obj) }
    }

    /// [`try_push`](Self::try_push) on a cache known to run sections,
    /// without the check, as [`try_pop_on_sections`](Self::try_pop_on_sections).
    ///
    /// # Safety
    ///
    /// The cache runs on sections.
    #[inline(always)]
    pub(crate) unsafe fn try_push_on_sections(&self, obj: Box<T>) -> Result<(), Unfinished> {
        let item = Box::into_raw(obj).cast::<()>();
        // SAFETY: the caller's guarantee.
        let sections = unsafe { self.sections.as_ref().unwrap_unchecked() };
        // SAFETY: as in `try_pop_on_sections`; the item is a box's, which
        // the stack owns once the section commits.
        let status = unsafe { section::push(sections, &self.slots, item) };
        if status.is_clean() {
            return Ok(());
        }
        Err(Unfinished { status, item })
    }

    /// Completes a pop whose section did not commit at the first attempt:
    /// the stack was empty or shut, the CPU has no slot, the section
    /// restarted, or the cache is on the fallback.
    #[cold]
    #[inline(never)]
    pub(crate) fn finish_pop(&self, unfinished: Unfinished) -> Option<Box<T>> {
        let Unfinished { status, item } = unfinished;
        self.count_aborts(status.aborts());
        let item = match status.outcome() {
            Outcome::Done => item,
            Outcome::Refused => return None,
            Outcome::Shut | Outcome::Slow => self.pop_slow(rseq::current_cpu())?,
            Outcome::Fallback => self.pop_locked(rseq::current_cpu())?,
        };
        Some(Self::boxed(item))
    }

    /// Completes a push, as [`finish_pop`](Self::finish_pop) a pop: hands
    /// the object back if the stack was full.
    #[cold]
    #[inline(never)]
    pub(crate) fn finish_push(&self, unfinished: Unfinished) -> Result<(), Box<T>> {
        let Unfinished { status, item } = unfinished;
        self.count_aborts(status.aborts());
        let pushed = match status.outcome() {
            Outcome::Done => true,
            Outcome::Refused => false,
            Outcome::Shut | Outcome::Slow => self.push_slow(rseq::current_cpu(), item),
            Outcome::Fallback => self.push_locked(rseq::current_cpu(), item),
        };
        if pushed {
            Ok(())
        } else {
            Err(Self::boxed(item))
        }
    }

    fn pop_slow(&self, cpu: usize) -> Option<*mut ()> {
        self.slow.fetch_add(1, Ordering::Relaxed);
        self.pop_locked(cpu)
    }

    fn push_slow(&self, cpu: usize, item: *mut ()) -> bool {
        self.slow.fetch_add(1, Ordering::Relaxed);
        self.push_locked(cpu, item)
    }

    fn pop_locked(&self, cpu: usize) -> Option<*mut ()> {
        self.locked(cpu % self.slots(), |stack| stack.pop(true))
            .flatten()
    }

    fn push_locked(&self, cpu: usize, item: *mut ()) -> bool {
        self.locked(cpu % self.slots(), |stack| stack.push(item))
            .unwrap_or(false)
    }

    /// Moves up to `max` objects from the top of `slot`'s stack into
    /// `into`, no more than `into` has room for without growing (so that
    /// nothing allocates under the lock); returns how many. Skips an empty
    /// stack without locking it.
    pub fn steal(&self, slot: usize, max: usize, into: &mut Vec<Box<T>>) -> usize {
        if self.len(slot) == 0 {
            return 0;
        }
        let want = (into.capacity() - into.len()).min(max);
        let start = into.len();
        // `into` has room for `want` more: nothing allocates under the
        // lock, and nothing allocates at all (a steal in steady state, as
        // a pipeline's, allocates nothing: invariant 7).
        self.locked(slot, |stack| {
            stack.take(want, false, |item| into.push(Self::boxed(item)))
        });
        into.len() - start
    }

    /// Moves up to `max` objects into `into`, no more than it has room for
    /// without growing, from every stack in turn (from the top, or from the
    /// bottom, the coldest, if `coldest`), with one fence for all of them;
    /// skips the stacks that look empty without shutting them. Returns how
    /// many.
    pub fn take_each(&self, max: usize, coldest: bool, into: &mut Vec<Box<T>>) -> usize {
        let room = (into.capacity() - into.len()).min(max);
        if room == 0 {
            return 0;
        }
        let start = into.len();
        // As in `steal`: `into` has room for `room` more.
        self.locked_each(
            |slot| self.len(slot) > 0,
            |stack| {
                let left = room - (into.len() - start);
                stack.take(left, coldest, |item| into.push(Self::boxed(item)));
            },
        );
        into.len() - start
    }

    /// Takes every object from every stack, with one fence for all of them.
    pub fn drain(&self) -> Vec<Box<T>> {
        let mut all = Vec::new();
        loop {
            let idle = self.idle();
            if idle == 0 {
                return all;
            }
            all.reserve(idle);
            if self.take_each(idle, false, &mut all) == 0 {
                // The fence failed, or others took everything first.
                return all;
            }
        }
    }

    /// The box of an item taken off a stack, or of one no stack took.
    #[inline(always)]
    fn boxed(item: *mut ()) -> Box<T> {
        // SAFETY: every item is a `Box<T>`'s, from `Box::into_raw` in
        // `push`, and it is taken off a stack (or not put on one) once.
        unsafe { Box::from_raw(item.cast::<T>()) }
    }
}

impl<T> PerCpu<T> {
    /// Whether pops and pushes run as restartable sequences (else every
    /// operation takes its slot's lock).
    pub fn uses_rseq(&self) -> bool {
        self.sections.is_some()
    }

    /// How many slots there are.
    pub fn slots(&self) -> usize {
        self.slots.count()
    }

    /// Objects a slot holds at most.
    pub fn capacity(&self) -> usize {
        self.slots.capacity()
    }

    /// Objects on `slot`'s stack (a snapshot; 0 for a slot out of range).
    pub fn len(&self, slot: usize) -> usize {
        if slot >= self.slots() {
            return 0;
        }
        slots::split(self.slots.word(slot).load(Ordering::Relaxed)).1
    }

    /// Objects on every stack (a snapshot).
    pub fn idle(&self) -> usize {
        (0..self.slots()).map(|s| self.len(s)).sum()
    }

    /// Objects [`pop`](Self::pop) has returned and [`push`](Self::push)
    /// has taken, over every slot, sections and locked path alike (what
    /// [`steal`](Self::steal), [`take_each`](Self::take_each) and
    /// [`drain`](Self::drain) move is not counted). A snapshot, exact once
    /// the cache is quiet.
    pub fn served(&self) -> (u64, u64) {
        (0..self.slots()).fold((0, 0), |(pops, pushes), slot| {
            let word = self.slots.word(slot).load(Ordering::Relaxed);
            let (p, q) = self.gates[slot].books.served(word);
            (pops.wrapping_add(p), pushes.wrapping_add(q))
        })
    }

    /// Sections aborted (by preemption, migration, signals or fences) and
    /// restarted, or given up after 8 of them in a row.
    pub fn aborts(&self) -> u64 {
        self.aborts.load(Ordering::Relaxed)
    }

    /// Pops and pushes that wanted to run as sections and took the locked
    /// path instead (the slot shut, no slot for the CPU, too many restarts,
    /// a push count about to carry). Always 0 on the fallback.
    pub fn slow_ops(&self) -> u64 {
        self.slow.load(Ordering::Relaxed)
    }

    /// Fences (`membarrier` calls) made by locked accesses.
    pub fn fences(&self) -> u64 {
        self.fences.load(Ordering::Relaxed)
    }

    fn count_aborts(&self, aborts: usize) {
        if aborts != 0 {
            self.aborts.fetch_add(aborts as u64, Ordering::Relaxed);
        }
    }
}

impl<T> Drop for PerCpu<T> {
    fn drop(&mut self) {
        // `&mut self`: no section and no locked access runs.
        for slot in 0..self.slots.count() {
            let len = self.len(slot);
            for i in 0..len {
                let item = self.slots.read(slot, i);
                // SAFETY: every item below a stack's length came from
                // `Box::into_raw` of a `Box<T>` and is owned by the stack.
                drop(unsafe { Box::from_raw(item.cast::<T>()) });
            }
            self.slots.word(slot).store(0, Ordering::Relaxed);
        }
    }
}

impl<T> fmt::Debug for PerCpu<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PerCpu")
            .field("slots", &self.slots.count())
            .field("capacity", &self.slots.capacity())
            .field("rseq", &self.sections.is_some())
            .finish_non_exhaustive()
    }
}

/// The CPUs the system has configured (at least 1).
#[cfg(not(loom))]
pub(crate) fn configured_cpus() -> usize {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `sysconf` has no preconditions.
        let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) };
        if n > 0 {
            return n as usize;
        }
    }
    std::thread::available_parallelism().map_or(1, usize::from)
}
