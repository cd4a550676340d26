//! Taking what a live thread keeps: the idle objects and pending batches of
//! a cache whose owner is alive but quiet (parked, blocked, busy with other
//! work), without a lock or an atomic read-modify-write on the owner path.
//!
//! # The protocol
//!
//! An asymmetric Dekker handshake. Each thread has two marks
//! ([`Marks`]): `releasing`, set inside a release or a cache access by the
//! owner, and `getting`, set inside the owner path of a `get`. Each cache has a [`Gate`]: its lock, the marks of its
//! owner, and how the owner's fast paths find it (the hot-index entry or
//! the pool's index cell, [`GetGate`]); its owner word carries [`CLOSED`]
//! while the owner path is shut.
//!
//! The owner, on its fast paths:
//! 1. sets its mark (a plain store), then a light fence ([`fence::light`]);
//! 2. reads the gate: the hot-index entry (a `get`), the owner word (a
//!    release: the one compare with its token, which fails for a closed
//!    cache);
//! 3. if open, works on the cache without a lock; else takes the slow path,
//!    which takes the cache's lock;
//! 4. clears its mark (a `Release` store), or, for an operation nested in
//!    another (a release inside a `reset`), restores the mark it found.
//!
//! A taker:
//! 1. under each cache's lock: skips caches nobody owns (their contents are
//!    in the depot already) and its own; counts itself in `takers`, sets
//!    [`CLOSED`], and clears the hot-index entry or index cell;
//! 2. one heavy fence ([`fence::heavy`]: `membarrier`) for all of them;
//! 3. per cache: waits (boundedly) to see the owner's marks clear, with no
//!    lock held; then, under the lock, takes what it came for; leaves
//!    `takers`.
//!
//! Why it is sound: the heavy fence orders each owner's mark store before
//! its gate read, against the taker's gate store before its mark read. So
//! an owner operation that read the gate open set its mark before the
//! taker read it: the taker sees the mark until that operation ends
//! (`Release`, paired with the taker's `Acquire`, so its writes are
//! visible). An operation that starts after the fence reads the gate
//! closed and takes the lock. Marks are per thread, not per cache: an
//! operation nested inside another (a `get` or a release inside a `reset`)
//! leaves the outer mark set (a release restores the mark it found; a `get`
//! uses its own mark, and never contains user code), so marks seen clear
//! once after the fence mean every operation that could have read this
//! cache's gate open has ended. Only the lock reopens a gate, and not while a taker is
//! counted; a thread cannot give a cache up ([`Local::abandon`]) while a
//! taker is counted, so the owner's marks, which live as long as the
//! thread, outlive every read of them.
//!
//! A taker never waits for an owner while it holds a lock (the owner's slow
//! path may need it), and waits for a busy owner only boundedly: a thread
//! that stays inside an operation (a `reset` that blocks) is skipped, and
//! its cache reopens on its owner's next slow path.

pub(crate) mod fence;

use std::ptr;

use crate::cache::{CLOSED, Cache, Local};
use crate::handoff::Entry;
use crate::inbox::Batch;
use crate::loom::{AtomicPtr, Mutex, MutexGuard, Ordering, spin_loop, yield_now};
use crate::recyclable::Recyclable;
use crate::registry::{self, HotEntry, Marks, NOBODY, TOKEN_STEP, Token};
use crate::shared::Inner;
use crate::slots::Slot;

/// Enters an owner operation that may work on the calling thread's caches
/// without their locks: marks it and fences. Returns the mark as it was
/// (set, for an operation nested in another: a release inside a `reset`),
/// for [`leave`], which restores it, so that a nested operation never
/// clears its outer one's mark.
#[inline(always)]
pub(crate) fn enter() -> u64 {
    let was = registry::with_marks(|m| {
        let was = m.releasing.load(Ordering::Relaxed);
        m.releasing.store(1, Ordering::Relaxed);
        was
    })
    .unwrap_or(1);
    fence::light();
    was
}

/// Leaves the operation [`enter`] began: restores the mark it found
/// (`Release`: a taker that sees it clear sees the operation's writes).
#[inline(always)]
pub(crate) fn leave(was: u64) {
    let _ = registry::with_marks(|m| m.releasing.store(was, Ordering::Release));
}

/// Enters the owner path of a `get` (see the module docs). A `get` runs no
/// user code inside, so it never nests in itself or holds a nested
/// operation.
#[inline(always)]
pub(crate) fn enter_get() {
    let _ = registry::with_marks(|m| m.getting.store(1, Ordering::Relaxed));
    fence::light();
}

/// Leaves the owner path of a `get` (`Release`, as [`leave`]).
#[inline(always)]
pub(crate) fn leave_get() {
    let _ = registry::with_marks(|m| m.getting.store(0, Ordering::Release));
}

/// Whether the thread with `marks` is inside an owner operation.
///
/// # Safety
///
/// `marks` is a live thread's (see the module docs).
unsafe fn busy(marks: *const Marks) -> bool {
    // SAFETY: the caller's guarantee.
    let marks = unsafe { &*marks };
    marks.releasing.load(Ordering::Acquire) != 0 || marks.getting.load(Ordering::Acquire) != 0
}

/// How long a taker waits for an owner to leave its operation: spins, then
/// yields up to a millisecond. Owner operations last tens of nanoseconds
/// (the buffer pool's run no user code); one that has not ended after this
/// is in user code (a `reset` that blocks) or its thread was descheduled
/// inside it for that long.
#[cfg(not(loom))]
const WAIT_SPINS: usize = 128;
#[cfg(not(loom))]
const WAIT_YIELDING: std::time::Duration = std::time::Duration::from_millis(1);

/// Waits boundedly for the thread with `marks` to be outside an operation.
///
/// # Safety
///
/// As for [`busy`].
unsafe fn wait_quiet(marks: *const Marks) -> bool {
    #[cfg(not(loom))]
    {
        for _ in 0..WAIT_SPINS {
            // SAFETY: the caller's guarantee.
            if !unsafe { busy(marks) } {
                return true;
            }
            spin_loop();
        }
        let start = std::time::Instant::now();
        while start.elapsed() < WAIT_YIELDING {
            yield_now();
            // SAFETY: as above.
            if !unsafe { busy(marks) } {
                return true;
            }
        }
        false
    }
    #[cfg(loom)]
    {
        // Loom explores the interleavings: one look, one yield, one look.
        // SAFETY: as above.
        if !unsafe { busy(marks) } {
            return true;
        }
        yield_now();
        // SAFETY: as above.
        !unsafe { busy(marks) }
    }
}

/// How the owner's fast `get` finds a cache: what a taker clears to shut
/// it, and what reopening restores.
#[derive(Clone, Copy)]
pub(crate) enum GetGate {
    /// No fast path finds the cache.
    None,
    /// The owner's hot-index entry for the recycler's key.
    Hot {
        entry: *const HotEntry,
        key: u64,
        local: *const (),
    },
    /// The owner's cell in a buffer pool's index.
    Cell {
        cell: *const AtomicPtr<()>,
        local: *const (),
    },
}

/// A cache's lock and what a taker needs to shut its owner path.
pub(crate) struct Gate {
    state: Mutex<GateState>,
}

pub(crate) struct GateState {
    /// The owner's marks, while a live thread owns the cache and has opened
    /// it; null otherwise.
    marks: *const Marks,
    /// The owner's fast `get`s' ways in: the hot index's entry, and a
    /// buffer pool's index cell (a bucket's cache has both).
    ways: [GetGate; 2],
    /// Takers counted between shutting the cache and being done with it.
    takers: usize,
    /// Shut, and its owner seen outside every operation since: the owner
    /// reaches the cache only under the lock until it reopens it, so a
    /// taker needs no fence.
    sealed: bool,
}

impl GateState {
    /// Records `get` as a way in, beside the other kind.
    fn record(&mut self, get: GetGate) {
        match get {
            GetGate::None => {}
            GetGate::Hot { .. } => self.ways[0] = get,
            GetGate::Cell { .. } => self.ways[1] = get,
        }
    }
}

impl Gate {
    pub(crate) fn new() -> Self {
        Self {
            state: Mutex::new(GateState {
                marks: ptr::null(),
                ways: [GetGate::None; 2],
                takers: 0,
                sealed: false,
            }),
        }
    }

    /// Takes the cache's lock. Nothing panics while it is held (no user
    /// code runs under it), so a poisoned lock is taken as it is.
    pub(crate) fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl GetGate {
    /// Shuts the owner's fast `get` out (from any thread).
    ///
    /// # Safety
    ///
    /// The pointers are alive: the owner's thread is (its hot index), or the
    /// pool is (its index cell).
    unsafe fn close(self) {
        match self {
            GetGate::None => {}
            // SAFETY: the caller's guarantee.
            GetGate::Hot { entry, .. } => unsafe { &*entry }.close(),
            GetGate::Cell { cell, .. } => {
                // SAFETY: the caller's guarantee.
                unsafe { &*cell }.store(ptr::null_mut(), Ordering::Relaxed);
            }
        }
    }

    /// Lets the owner's fast `get` in again (on the owner's thread).
    ///
    /// # Safety
    ///
    /// As for [`close`](Self::close); the calling thread owns the cache, and
    /// it has no releases pending (a cache with some is found only under a
    /// marked key, [`registry::PENDING_KEY`]).
    unsafe fn open(self, pending: bool) {
        match self {
            GetGate::None => {}
            GetGate::Hot { entry, key, local } => {
                let key = if pending {
                    key | registry::PENDING_KEY
                } else {
                    key
                };
                // SAFETY: the caller's guarantee.
                unsafe { &*entry }.set(key, local);
            }
            GetGate::Cell { cell, local } => {
                if !pending {
                    // SAFETY: the caller's guarantee.
                    unsafe { &*cell }.store(local.cast_mut(), Ordering::Relaxed);
                }
            }
        }
    }
}

impl<T> Local<T> {
    /// Opens the owner path of this cache, found by the owner's fast `get`
    /// through `get`, unless a taker is at work (or the platform has no
    /// heavy fence): then the owner keeps taking the slow path, which
    /// tries again. Returns whether it opened.
    ///
    /// # Safety
    ///
    /// The calling thread owns this cache; `get` points into its own hot
    /// index or into an index cell of a pool that owns this cache.
    pub(crate) unsafe fn open(&self, get: GetGate) -> bool {
        let mut state = self.gate.lock();
        state.record(get);
        if state.takers > 0 || !fence::available() {
            return false;
        }
        state.marks = registry::marks();
        if state.marks.is_null() {
            return false;
        }
        state.sealed = false;
        // SAFETY: the calling thread owns the cache and holds its lock; no
        // closure here runs user code.
        let pending = unsafe { self.with_cache_unchecked(|c| !c.pending.is_empty()) };
        let owner = Slot::owner(self);
        owner.store(owner.load(Ordering::Relaxed) & !CLOSED, Ordering::Relaxed);
        for way in state.ways {
            // SAFETY: the caller's guarantee, for `get`; the other way in
            // was recorded by this thread too, as the owner (a new owner's
            // claim starts from none: `abandon` forgets them).
            unsafe { way.open(pending) };
        }
        true
    }

    /// Reopens the owner path after a taker closed it, with the way in the
    /// last [`open`](Self::open) recorded: for the slow paths of an owner
    /// whose fast paths found the cache closed.
    ///
    /// # Safety
    ///
    /// The calling thread owns this cache.
    pub(crate) unsafe fn reopen(&self) {
        if Slot::owner(self).load(Ordering::Relaxed) & CLOSED == 0 {
            return;
        }
        // SAFETY: the recorded ways in are the calling thread's (it owns the
        // cache, and only its owner records them).
        unsafe { self.open(GetGate::None) };
    }

    /// Gives the cache up (a `Release` store of `NOBODY`, under the lock,
    /// once no taker is counted).
    ///
    /// # Safety
    ///
    /// The calling thread owns the cache and will not touch its owner-only
    /// state again unless it claims the cache anew.
    pub(crate) unsafe fn abandon(&self) {
        loop {
            let mut state = self.gate.lock();
            if state.takers == 0 {
                state.marks = ptr::null();
                state.ways = [GetGate::None; 2];
                Slot::owner(self).store(NOBODY, Ordering::Release);
                return;
            }
            drop(state);
            yield_now();
        }
    }
}

/// How long a batch of foreign releases may wait in a releasing thread
/// before the owners of its objects take it: an owner about to make a fresh
/// object takes the batches at least this old from threads not inside an
/// operation. A steady stream fills its batches well within it, and moves
/// a batch at a time as before.
#[cfg(not(loom))]
pub(crate) const PENDING_AGE_NS: u64 = 1_000_000;
#[cfg(loom)]
pub(crate) const PENDING_AGE_NS: u64 = 0;

/// Nanoseconds since a process-wide start, never 0 (under loom, which has no
/// clock, always 1).
fn now_ns() -> u64 {
    #[cfg(not(loom))]
    {
        static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
        let start = *START.get_or_init(std::time::Instant::now);
        u64::try_from(start.elapsed().as_nanos())
            .unwrap_or(u64::MAX)
            .max(1)
    }
    #[cfg(loom)]
    {
        1
    }
}

/// When a cache's oldest pending batch was started (0: none pending). The
/// owner of the cache writes it (`Relaxed`; it is a hint, checked again
/// under the steal protocol), owners of the pending objects read it.
pub(crate) struct PendingSince(crate::loom::AtomicU64);

impl PendingSince {
    pub(crate) fn new() -> Self {
        Self(crate::loom::AtomicU64::new(0))
    }

    /// The first batch of an empty `pending` was started now.
    pub(crate) fn start(&self) {
        self.0.store(now_ns(), Ordering::Relaxed);
    }

    /// `pending` is empty.
    pub(crate) fn clear(&self) {
        self.0.store(0, Ordering::Relaxed);
    }

    /// Whether a batch has waited [`PENDING_AGE_NS`] by `now`.
    fn is_stale(&self, now: u64) -> bool {
        let since = self.0.load(Ordering::Relaxed);
        since != 0 && now.saturating_sub(since) >= PENDING_AGE_NS
    }
}

/// What a taker takes from each cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Take {
    /// The idle objects and the pending batches.
    All,
    /// The pending batches only.
    Pending,
}

/// What a taker took.
pub(crate) struct Taken<T> {
    /// Idle objects, from the caches' slots and batches.
    pub(crate) idle: Batch<T>,
    /// Batches released on the quiet threads for other homes, to send.
    pub(crate) pending: Vec<Entry<T>>,
    /// Caches whose owner stayed inside an operation, left as they were.
    pub(crate) skipped: usize,
}

/// Takes from `local` what `take` says, into `taken`.
///
/// # Safety
///
/// The calling thread holds `local`'s lock, and the owner of `local` is
/// outside every operation that works on it without that lock.
unsafe fn take_locked<T>(local: &Local<T>, take: Take, taken: &mut Taken<T>) {
    // SAFETY: the caller's guarantee; the closure runs no user code.
    unsafe {
        local.with_cache_unchecked(|c: &mut Cache<T>| {
            if take == Take::All {
                taken.idle.append(&mut c.take_all());
            }
            while let Some(entry) = c.pending.pop() {
                taken.pending.push(entry);
            }
        });
    }
    local.pending_since.clear();
}

/// Takes from each of `caches` owned by a live thread what `take` says
/// (see the module docs); from `me`'s own caches directly, under their
/// locks.
pub(crate) fn take_from<'a, T: 'a>(
    caches: impl Iterator<Item = &'a Local<T>>,
    me: Token,
    take: Take,
) -> Taken<T> {
    let mut taken = Taken {
        idle: Vec::new(),
        pending: Vec::new(),
        skipped: 0,
    };
    let mut shut: Vec<(&Local<T>, *const Marks)> = Vec::new();
    for local in caches {
        let mut state = local.gate.lock();
        let owner = Slot::owner(local);
        let word = owner.load(Ordering::Relaxed);
        let token = word & !(TOKEN_STEP - 1);
        if token == NOBODY {
            continue;
        }
        if token == me || state.marks.is_null() || state.sealed {
            // The calling thread's own cache (it is not inside an operation
            // on it: no owner path calls a taker), one never opened since it
            // was claimed, or one shut and its owner seen quiet since: its
            // owner takes this lock for every other access.
            // SAFETY: as below, the lock held.
            unsafe { take_locked(local, take, &mut taken) };
            continue;
        }
        state.takers += 1;
        owner.store(word | CLOSED, Ordering::Relaxed);
        for way in state.ways {
            // SAFETY: the owner is alive (it has not given the cache up:
            // that takes this lock), and so are its hot index and the pool.
            unsafe { way.close() };
        }
        shut.push((local, state.marks));
    }
    if shut.is_empty() {
        return taken;
    }
    let fenced = fence::heavy();
    for (local, marks) in shut {
        // SAFETY: counted in `takers`, so the owner cannot give the cache
        // up, and its thread (whose marks these are) is alive.
        let quiet = fenced && unsafe { wait_quiet(marks) };
        let mut state = local.gate.lock();
        if quiet {
            // SAFETY: the owner is outside every operation that could have
            // found the cache open, and every later one finds it closed and
            // takes this lock, which the calling thread holds.
            unsafe { take_locked(local, take, &mut taken) };
            state.sealed = true;
        } else {
            taken.skipped += 1;
        }
        state.takers -= 1;
    }
    taken
}

impl<T: Recyclable> Inner<T> {
    /// Takes the idle objects and pending batches out of every cache of
    /// this recycler that another live thread owns and is not using (see
    /// the module docs): sends the batches home (to inboxes, or the depot
    /// for a home given up) and returns the idle objects. Striped mode has
    /// no caches to take from.
    pub(crate) fn take_quiet(&self) -> Batch<T> {
        if self.stripes.is_some() {
            return Vec::new();
        }
        let taken = take_from(self.all_caches(), registry::current(), Take::All);
        for entry in taken.pending {
            self.send_home(entry.home, entry.objs, None);
        }
        taken.idle
    }
}

impl<T: Recyclable> Inner<T> {
    /// For an owner about to make a fresh object: takes the batches of
    /// foreign releases that have waited [`PENDING_AGE_NS`] in threads not
    /// inside an operation, whoever's objects they hold, and sends them
    /// home. Returns whether one came to `mine`, the calling thread's cache
    /// (its inbox then has it).
    pub(crate) fn take_stale_pending(&self, mine: &Local<T>) -> bool {
        if self.stripes.is_some() {
            return false;
        }
        let now = now_ns();
        let stale = |l: &&Local<T>| !ptr::eq(*l, mine) && l.pending_since.is_stale(now);
        if !self.all_caches().any(|l| stale(&l)) {
            return false;
        }
        let taken = take_from(
            self.all_caches().filter(stale),
            registry::current(),
            Take::Pending,
        );
        let mut came = false;
        for entry in taken.pending {
            came |= ptr::eq(entry.home.as_ptr(), mine);
            self.send_home(entry.home, entry.objs, Some(mine));
        }
        came
    }
}
