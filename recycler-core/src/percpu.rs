//! A per-CPU cache of boxed objects whose pop and push are restartable
//! sequences, as tcmalloc's per-CPU caches are: no lock and no atomic
//! read-modify-write on the fast path, and every object reachable from
//! every thread.
//!
//! # Layout
//!
//! One slot per CPU ([`slots`]): a `shut` word, a length and a fixed array
//! of pointers, in cache lines of its own. Beside them, per slot, a lock
//! ([`Gate`]) that only the locked path takes.
//!
//! # The fast path
//!
//! [`PerCpu::pop`] and [`PerCpu::push`] run a critical section
//! ([`section`]) on the slot of the CPU the thread runs on: read `cpu_id`,
//! check the slot's `shut` word, check the length, read or write the item,
//! and commit with one store of the new length. The kernel restarts the
//! section if anything else ran on that CPU before the commit, so the
//! sections of one CPU are atomic with respect to each other.
//!
//! # The locked path, and stealing
//!
//! Any other access to a slot, from any CPU ([`PerCpu::steal`],
//! [`PerCpu::drain`], and the fast path when it cannot finish: the slot is
//! shut, the CPU has no slot, or a storm of restarts), is a *locked
//! access*:
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
//! 4. work on the stack under the lock, with plain loads and stores;
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
//! `cpu % slots` this way.
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

mod section;
mod slots;
#[cfg(all(test, not(loom)))]
mod tests;

use std::fmt;
use std::marker::PhantomData;

use self::section::{Outcome, Status};
use self::slots::Slots;
use crate::loom::{Mutex, MutexGuard, Ordering, StatCounter};
use crate::rseq::{self, Sections};

/// A per-CPU cache of boxed objects (see the module docs).
///
/// Not part of the crate's API: exposed, hidden, for the workspace's tests
/// and benchmarks until striped mode uses it.
pub struct PerCpu<T> {
    slots: Slots,
    /// Per slot, the lock of the locked path.
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

/// A slot's lock, and whether the slot is fenced (see the module docs).
#[repr(align(128))]
struct Gate {
    fenced: Mutex<bool>,
}

impl Gate {
    /// The lock. Nothing panics while it is held (no user code runs under
    /// it), so a poisoned lock is taken as it is.
    fn lock(&self) -> MutexGuard<'_, bool> {
        self.fenced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A slot's stack, for a locked access: the caller has it to itself.
struct Stack<'a> {
    slots: &'a Slots,
    slot: usize,
}

impl Stack<'_> {
    fn len(&self) -> usize {
        self.slots.len(self.slot).load(Ordering::Relaxed)
    }

    fn pop(&mut self) -> Option<*mut ()> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        let item = self.slots.read(self.slot, len - 1);
        self.slots.len(self.slot).store(len - 1, Ordering::Relaxed);
        Some(item)
    }

    fn push(&mut self, item: *mut ()) -> bool {
        let len = self.len();
        if len >= self.slots.capacity() {
            return false;
        }
        self.slots.write(self.slot, len, item);
        self.slots.len(self.slot).store(len + 1, Ordering::Relaxed);
        true
    }
}

impl<T: Send> PerCpu<T> {
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

    /// As [`with_slots`](Self::with_slots), always on the fallback: a lock
    /// per CPU stack.
    pub fn fallback(slots: usize, capacity: usize) -> Self {
        Self::make(Slots::new(slots, capacity), None)
    }

    fn make(slots: Slots, sections: Option<Sections>) -> Self {
        Self {
            gates: (0..slots.count())
                .map(|_| Gate {
                    fenced: Mutex::new(false),
                })
                .collect(),
            slots,
            sections,
            aborts: StatCounter::new(0),
            slow: StatCounter::new(0),
            fences: StatCounter::new(0),
            _owns: PhantomData,
        }
    }

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
        self.slots.len(slot).load(Ordering::Relaxed)
    }

    /// Objects on every stack (a snapshot).
    pub fn idle(&self) -> usize {
        (0..self.slots()).map(|s| self.len(s)).sum()
    }

    /// Sections aborted (by preemption, migration, signals or fences) and
    /// restarted, or given up after [`rseq::MAX_ABORTS`] in a row.
    pub fn aborts(&self) -> u64 {
        self.aborts.load(Ordering::Relaxed)
    }

    /// Pops and pushes that wanted to run as sections and took the locked
    /// path instead (the slot shut, no slot for the CPU, or too many
    /// restarts). Always 0 on the fallback.
    pub fn slow_ops(&self) -> u64 {
        self.slow.load(Ordering::Relaxed)
    }

    /// Fences (`membarrier` calls) made by locked accesses.
    pub fn fences(&self) -> u64 {
        self.fences.load(Ordering::Relaxed)
    }

    /// Pops an object from the stack of the CPU the thread runs on; `None`
    /// if that stack is empty (the other CPUs' stacks are not looked at:
    /// see [`steal`](Self::steal)).
    #[inline]
    pub fn pop(&self) -> Option<Box<T>> {
        let Some(sections) = &self.sections else {
            return self.pop_locked(rseq::current_cpu()).map(Self::boxed);
        };
        // SAFETY: `sections` is this process's, `slots` was laid out by
        // `Slots::new`, and nothing but sections writes a slot whose `shut`
        // word is zero (the locked path writes only with it non-zero).
        let (status, item) = unsafe { section::pop(sections, &self.slots) };
        if status.is_clean() {
            return Some(Self::boxed(item));
        }
        self.pop_after(status, item)
    }

    /// Pushes `obj` onto the stack of the CPU the thread runs on; hands it
    /// back if that stack is full.
    #[inline]
    pub fn push(&self, obj: Box<T>) -> Result<(), Box<T>> {
        let item = Box::into_raw(obj).cast::<()>();
        let Some(sections) = &self.sections else {
            return if self.push_locked(rseq::current_cpu(), item) {
                Ok(())
            } else {
                Err(Self::boxed(item))
            };
        };
        // SAFETY: as in `pop`; the item is a box's, which the stack owns
        // once the section commits.
        let status = unsafe { section::push(sections, &self.slots, item) };
        if status.is_clean() {
            return Ok(());
        }
        self.push_after(status, item)
    }

    /// The box of an item taken off a stack, or of one no stack took.
    #[inline(always)]
    fn boxed(item: *mut ()) -> Box<T> {
        // SAFETY: every item is a `Box<T>`'s, from `Box::into_raw` in
        // `push`, and it is taken off a stack (or not put on one) once.
        unsafe { Box::from_raw(item.cast::<T>()) }
    }

    /// A pop whose section did not commit at the first attempt: the stack
    /// was empty or shut, the CPU has no slot, or the section restarted.
    #[cold]
    #[inline(never)]
    fn pop_after(&self, status: Status, item: *mut ()) -> Option<Box<T>> {
        self.count_aborts(status.aborts());
        let item = match status.outcome() {
            Outcome::Done => item,
            Outcome::Refused => return None,
            Outcome::Shut(slot) => self.pop_slow(slot)?,
            Outcome::Slow => self.pop_slow(rseq::current_cpu())?,
        };
        Some(Self::boxed(item))
    }

    /// A push whose section did not commit at the first attempt: the stack
    /// was full or shut, the CPU has no slot, or the section restarted.
    #[cold]
    #[inline(never)]
    fn push_after(&self, status: Status, item: *mut ()) -> Result<(), Box<T>> {
        self.count_aborts(status.aborts());
        let pushed = match status.outcome() {
            Outcome::Done => true,
            Outcome::Refused => false,
            Outcome::Shut(slot) => self.push_slow(slot, item),
            Outcome::Slow => self.push_slow(rseq::current_cpu(), item),
        };
        if pushed {
            Ok(())
        } else {
            Err(Self::boxed(item))
        }
    }

    fn count_aborts(&self, aborts: usize) {
        if aborts != 0 {
            self.aborts.fetch_add(aborts as u64, Ordering::Relaxed);
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
        self.locked(cpu % self.slots(), |stack| stack.pop())
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
        let room = into.capacity() - into.len();
        self.locked(slot, |stack| take(stack, max.min(room), into))
            .unwrap_or(0)
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
            let before = all.len();
            let room = all.capacity() - all.len();
            self.locked_all(|stack| {
                let left = room - (all.len() - before);
                take(stack, left, &mut all);
            });
            if all.len() == before {
                // The fence failed, or others took everything first.
                return all;
            }
        }
    }

    /// Runs `f` on `slot`'s stack as a locked access (see the module
    /// docs); `None` if the fence failed (then the stack is left alone).
    fn locked<R>(&self, slot: usize, f: impl FnOnce(&mut Stack<'_>) -> R) -> Option<R> {
        let mut stack = Stack {
            slots: &self.slots,
            slot,
        };
        let gate = &self.gates[slot];
        let Some(sections) = &self.sections else {
            let _held = gate.lock();
            return Some(f(&mut stack));
        };
        let shut = self.slots.shut(slot);
        // Relaxed: what orders it before the sections' loads is the fence
        // below, or (if the slot is fenced) a fence since which `shut` has
        // not been zero.
        shut.fetch_add(1, Ordering::Relaxed);
        let mut fenced = gate.lock();
        if !*fenced {
            self.fences.fetch_add(1, Ordering::Relaxed);
            if !sections.restart_all() {
                Self::reopen(shut, &mut fenced);
                return None;
            }
            *fenced = true;
        }
        let r = f(&mut stack);
        Self::reopen(shut, &mut fenced);
        Some(r)
    }

    /// Runs `f` on every stack as one locked access: every slot shut, every
    /// lock taken (in slot order, so that two of these never deadlock; a
    /// single locked access holds one lock only), one fence if any slot
    /// needs it.
    fn locked_all(&self, mut f: impl FnMut(&mut Stack<'_>)) {
        let Some(sections) = &self.sections else {
            for slot in 0..self.slots() {
                let _held = self.gates[slot].lock();
                f(&mut Stack {
                    slots: &self.slots,
                    slot,
                });
            }
            return;
        };
        for slot in 0..self.slots() {
            self.slots.shut(slot).fetch_add(1, Ordering::Relaxed);
        }
        // Allocated before the first lock is taken.
        let mut held: Vec<MutexGuard<'_, bool>> = Vec::with_capacity(self.gates.len());
        for gate in self.gates.iter() {
            held.push(gate.lock());
        }
        let ok = if held.iter().all(|fenced| **fenced) {
            true
        } else {
            self.fences.fetch_add(1, Ordering::Relaxed);
            sections.restart_all()
        };
        for (slot, fenced) in held.iter_mut().enumerate() {
            if ok {
                **fenced = true;
                f(&mut Stack {
                    slots: &self.slots,
                    slot,
                });
            }
            Self::reopen(self.slots.shut(slot), fenced);
        }
    }

    /// Ends a locked access's hold on `shut` (its lock still held):
    /// `Release`, so that the sections that read `shut` as zero next see
    /// what the access wrote; the last one out unfences the slot.
    fn reopen(shut: &crate::loom::AtomicUsize, fenced: &mut bool) {
        if shut.fetch_sub(1, Ordering::Release) == 1 {
            *fenced = false;
        }
    }
}

/// Moves up to `n` items from the top of `stack` into `into` (which has
/// room for them).
fn take<T>(stack: &mut Stack<'_>, n: usize, into: &mut Vec<Box<T>>) -> usize {
    let mut taken = 0;
    while taken < n {
        let Some(item) = stack.pop() else { break };
        // SAFETY: every item on a stack came from `Box::into_raw` of a
        // `Box<T>`, and this pop took it off the stack.
        into.push(unsafe { Box::from_raw(item.cast::<T>()) });
        taken += 1;
    }
    taken
}

impl<T> Drop for PerCpu<T> {
    fn drop(&mut self) {
        // `&mut self`: no section and no locked access runs.
        for slot in 0..self.slots.count() {
            let mut stack = Stack {
                slots: &self.slots,
                slot,
            };
            while let Some(item) = stack.pop() {
                // SAFETY: as in `take`.
                drop(unsafe { Box::from_raw(item.cast::<T>()) });
            }
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
fn configured_cpus() -> usize {
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
