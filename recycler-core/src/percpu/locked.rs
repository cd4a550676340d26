//! The per-CPU cache's locked path: every access to a slot that is not its
//! own CPU's critical section (see [`super`] for the protocol), and the
//! slot's books, which only the locked path writes.
//!
//! A locked access counts itself in the slot's `shut` word, takes the
//! slot's lock, fences unless the slot is fenced already, folds the
//! sections' counts into the books ([`Books::fold`]), works on the stack
//! with plain loads and stores ([`Stack`]), records the length it leaves,
//! and uncounts itself. [`PerCpu::locked_each`] does this for several slots
//! with one fence for all of them: it shuts every slot first, fences once,
//! then takes their locks one at a time (never two at once).

use super::PerCpu;
use super::slots::{MAX_SLOTS, Slots, split};
use crate::loom::{AtomicUsize, Mutex, MutexGuard, Ordering, StatCounter};

/// A slot's lock, whether the slot is fenced, and its books; in cache lines
/// of its own, apart from the slot the sections touch.
#[repr(align(128))]
pub(super) struct Gate {
    /// The lock; `true` while the slot is fenced (see [`super`]).
    fenced: Mutex<bool>,
    /// The slot's books.
    pub(super) books: Books,
}

/// What a slot has served, folded from its word by the locked path.
///
/// The sections count their pushes in the slot's word and not their pops
/// (their commit is one store); the pops follow: the length the last locked
/// access left, plus the pushes counted since, less the length now. The
/// locked path adds both to these totals and leaves the word's count at
/// zero. Written under the slot's lock only; read without it (`Relaxed`
/// snapshots, exact once the slot is quiet).
#[derive(Default)]
pub(super) struct Books {
    /// The length the last locked access left.
    base: StatCounter,
    /// Objects popped by [`PerCpu::pop`] (section or locked).
    pops: StatCounter,
    /// Objects pushed by [`PerCpu::push`] (section or locked).
    pushes: StatCounter,
}

impl Books {
    /// Folds the sections' counts in `word` into the books and clears the
    /// word's count; the caller holds the slot's lock and has it shut.
    fn fold(&self, word: &AtomicUsize) {
        let (pushed, len) = split(word.load(Ordering::Relaxed));
        let base = self.base.load(Ordering::Relaxed);
        let popped = (base as usize).wrapping_add(pushed).wrapping_sub(len);
        add(&self.pops, popped as u64);
        add(&self.pushes, pushed as u64);
        if pushed != 0 {
            word.store(len, Ordering::Relaxed);
        }
    }

    /// Records `len`, the length a locked access leaves.
    fn settle(&self, len: usize) {
        self.base.store(len as u64, Ordering::Relaxed);
    }

    /// The pops and pushes this slot has served, as of `word` (a snapshot).
    pub(super) fn served(&self, word: usize) -> (u64, u64) {
        let (pushed, len) = split(word);
        let base = self.base.load(Ordering::Relaxed) as usize;
        let popped = base.wrapping_add(pushed).wrapping_sub(len) as u64;
        (
            self.pops.load(Ordering::Relaxed).wrapping_add(popped),
            self.pushes
                .load(Ordering::Relaxed)
                .wrapping_add(pushed as u64),
        )
    }
}

/// Adds to a counter written under a lock.
fn add(counter: &StatCounter, n: u64) {
    if n != 0 {
        counter.store(
            counter.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }
}

impl Gate {
    pub(super) fn new() -> Self {
        Self {
            fenced: Mutex::new(false),
            books: Books::default(),
        }
    }

    /// The lock. Nothing panics while it is held (no user code runs under
    /// it), so a poisoned lock is taken as it is.
    pub(super) fn lock(&self) -> MutexGuard<'_, bool> {
        self.fenced
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A slot's stack, for a locked access: the caller has it to itself, and
/// the word's push count is zero (folded).
pub(super) struct Stack<'a> {
    slots: &'a Slots,
    slot: usize,
    books: &'a Books,
}

impl Stack<'_> {
    pub(super) fn len(&self) -> usize {
        split(self.slots.word(self.slot).load(Ordering::Relaxed)).1
    }

    fn set_len(&mut self, len: usize) {
        self.slots.word(self.slot).store(len, Ordering::Relaxed);
    }

    /// Pops the top item; counted as a pop if `count`.
    pub(super) fn pop(&mut self, count: bool) -> Option<*mut ()> {
        let len = self.len();
        if len == 0 {
            return None;
        }
        let item = self.slots.read(self.slot, len - 1);
        self.set_len(len - 1);
        if count {
            add(&self.books.pops, 1);
        }
        Some(item)
    }

    /// Pushes `item` if there is room; counted as a push.
    pub(super) fn push(&mut self, item: *mut ()) -> bool {
        let len = self.len();
        if len >= self.slots.capacity() {
            return false;
        }
        self.slots.write(self.slot, len, item);
        self.set_len(len + 1);
        add(&self.books.pushes, 1);
        true
    }

    /// Moves up to `n` items to `sink`, from the top, or from the bottom
    /// (the coldest) if `bottom`; not counted as pops. Returns how many.
    /// `sink` runs under the slot's lock: it must not allocate (the callers
    /// push into a vector with room made beforehand).
    pub(super) fn take(&mut self, n: usize, bottom: bool, mut sink: impl FnMut(*mut ())) -> usize {
        let len = self.len();
        let n = n.min(len);
        if bottom {
            for i in 0..n {
                sink(self.slots.read(self.slot, i));
            }
            for i in n..len {
                let item = self.slots.read(self.slot, i);
                self.slots.write(self.slot, i - n, item);
            }
        } else {
            for i in (len - n..len).rev() {
                sink(self.slots.read(self.slot, i));
            }
        }
        self.set_len(len - n);
        n
    }
}

impl<T> PerCpu<T> {
    /// Runs `f` on `slot`'s stack as a locked access (see the module docs);
    /// `None` if the fence failed (then the stack is left alone).
    pub(super) fn locked<R>(&self, slot: usize, f: impl FnOnce(&mut Stack<'_>) -> R) -> Option<R> {
        let gate = &self.gates[slot];
        let Some(sections) = &self.sections else {
            let _held = gate.lock();
            return Some(self.work(slot, f));
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
                reopen(shut, &mut fenced);
                return None;
            }
            *fenced = true;
        }
        let r = self.work(slot, f);
        reopen(shut, &mut fenced);
        Some(r)
    }

    /// Runs `f` on the stack of every slot `want` picks (in slot order), as
    /// locked accesses that share one fence: every picked slot is shut
    /// first, then one fence restarts the sections in flight on all of
    /// them, then each is locked in turn (one lock at a time), worked on,
    /// and reopened. `false` if the fence failed (then no stack was
    /// touched). `want` may read the slot's length: a snapshot, to skip a
    /// slot that looks empty without shutting it.
    pub(super) fn locked_each(
        &self,
        want: impl Fn(usize) -> bool,
        mut f: impl FnMut(&mut Stack<'_>),
    ) -> bool {
        let Some(sections) = &self.sections else {
            for slot in (0..self.slots.count()).filter(|&s| want(s)) {
                let _held = self.gates[slot].lock();
                self.work(slot, &mut f);
            }
            return true;
        };
        // Which slots were shut: a bit each, on the stack (no allocation).
        let mut picked = [0u64; MAX_SLOTS / 64];
        let bit = |slot: usize| (slot / 64, 1u64 << (slot % 64));
        let mut any = false;
        for slot in 0..self.slots.count() {
            if want(slot) {
                self.slots.shut(slot).fetch_add(1, Ordering::Relaxed);
                let (w, b) = bit(slot);
                picked[w] |= b;
                any = true;
            }
        }
        if !any {
            return true;
        }
        // Each picked slot's `shut` stays non-zero from before this fence
        // until it is reopened below: the fence serves every one of them
        // (each is marked fenced under its lock).
        self.fences.fetch_add(1, Ordering::Relaxed);
        let ok = sections.restart_all();
        for slot in 0..self.slots.count() {
            let (w, b) = bit(slot);
            if picked[w] & b == 0 {
                continue;
            }
            let shut = self.slots.shut(slot);
            let mut fenced = self.gates[slot].lock();
            if ok {
                *fenced = true;
                self.work(slot, &mut f);
            }
            reopen(shut, &mut fenced);
        }
        ok
    }

    /// The body of a locked access to `slot`, whose lock the caller holds
    /// with the sections shut out: folds the books, runs `f`, records the
    /// length left.
    fn work<R>(&self, slot: usize, f: impl FnOnce(&mut Stack<'_>) -> R) -> R {
        let books = &self.gates[slot].books;
        books.fold(self.slots.word(slot));
        let mut stack = Stack {
            slots: &self.slots,
            slot,
            books,
        };
        let r = f(&mut stack);
        books.settle(stack.len());
        r
    }
}

/// Ends a locked access's hold on `shut` (its lock still held): `Release`,
/// so that the sections that read `shut` as zero next see what the access
/// wrote; the last one out unfences the slot.
fn reopen(shut: &AtomicUsize, fenced: &mut bool) {
    if shut.fetch_sub(1, Ordering::Release) == 1 {
        *fenced = false;
    }
}
