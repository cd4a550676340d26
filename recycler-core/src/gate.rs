//! The primitives of taking a live thread's cache (see [`super`] for the
//! protocol): the owner's marks and their windows, a cache's [`Gate`], and
//! when a cache's pending batch started. Below the caches in the import
//! graph: `cache.rs` uses these; the stealer in [`super`] uses the caches.

use std::ptr;

use crate::fence;
#[cfg(not(loom))]
use crate::loom::spin_loop;
use crate::loom::{AtomicPtr, AtomicU64, Mutex, MutexGuard, Ordering, yield_now};
use crate::registry::{self, HotEntry, Marks, NOBODY};

/// In a cache's owner word: the owner path is shut (a claim that has not
/// opened it yet, or a thread taking the cache's contents; see
/// [`crate::steal`]), so the owner takes the slow path and the lock.
pub(crate) const CLOSED: u64 = 4;

/// Enters an owner operation that may work on the calling thread's caches
/// without their locks (a `get`'s pop, a release's push on the batch, a
/// slow path's cache access): marks it and fences. Such operations run no
/// user code, so they never nest.
#[inline(always)]
pub(crate) fn enter() {
    let _ = registry::with_marks(|m| {
        debug_assert_eq!(m.busy.load(Ordering::Relaxed), 0, "nested owner operations");
        m.busy.store(1, Ordering::Relaxed);
    });
    fence::light();
}

/// Leaves the operation [`enter`] began (`Release`: a stealer that sees the
/// mark clear sees the operation's writes).
#[inline(always)]
pub(crate) fn leave() {
    let _ = registry::with_marks(|m| m.busy.store(0, Ordering::Release));
}

/// Whether the thread with `marks` is inside an owner operation.
///
/// # Safety
///
/// `marks` is a live thread's (see the module docs).
pub(crate) unsafe fn busy(marks: *const Marks) -> bool {
    // SAFETY: the caller's guarantee.
    let marks = unsafe { &*marks };
    marks.busy.load(Ordering::Acquire) != 0
}

/// How long a stealer waits for an owner to leave its operation: spins, then
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
pub(crate) unsafe fn wait_quiet(marks: *const Marks) -> bool {
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

/// How the owner's fast `get` finds a cache: what a stealer clears to shut
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

/// A cache's lock and what a stealer needs to shut its owner path.
pub(crate) struct Gate {
    state: Mutex<GateState>,
}

pub(crate) struct GateState {
    /// The owner's marks, while a live thread owns the cache and has opened
    /// it; null otherwise.
    pub(crate) marks: *const Marks,
    /// The owner's fast `get`s' ways in: the hot index's entry, and a
    /// buffer pool's index cell (a bucket's cache has both).
    pub(crate) ways: [GetGate; 2],
    /// Stealers counted between shutting the cache and being done with it.
    pub(crate) stealers: usize,
    /// Shut, and its owner seen outside every operation since: the owner
    /// reaches the cache only under the lock until it reopens it, so a
    /// stealer needs no fence.
    pub(crate) sealed: bool,
    /// The recycler's last handle has dropped and taken this cache's
    /// credits back ([`crate::keep`]): the owner path stays shut for good,
    /// so that every later release gives its unit back directly.
    pub(crate) orphaned: bool,
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
                stealers: 0,
                sealed: false,
                orphaned: false,
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
    pub(crate) unsafe fn close(self) {
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

impl Gate {
    /// Opens the owner path of the cache whose owner word is `owner`, found
    /// by the owner's fast `get` through `get` (recorded beside the other
    /// kind of way in), unless a stealer is at work (or the platform has no
    /// heavy fence): then the owner keeps taking the slow path, which tries
    /// again. `pending` tells, under the lock, whether the cache has
    /// releases pending. Returns whether it opened.
    ///
    /// # Safety
    ///
    /// The calling thread owns the cache; `get` points into its own hot
    /// index or into an index cell of a pool that owns the cache.
    pub(crate) unsafe fn open(
        &self,
        owner: &AtomicU64,
        get: GetGate,
        pending: impl FnOnce() -> bool,
    ) -> bool {
        let mut state = self.lock();
        state.record(get);
        if state.stealers > 0 || state.orphaned || !fence::available() {
            return false;
        }
        state.marks = registry::marks();
        if state.marks.is_null() {
            return false;
        }
        state.sealed = false;
        let pending = pending();
        owner.store(owner.load(Ordering::Relaxed) & !CLOSED, Ordering::Relaxed);
        for way in state.ways {
            // SAFETY: the caller's guarantee, for `get`; the other way in
            // was recorded by this thread too, as the owner (a new owner's
            // claim starts from none: `abandon` forgets them).
            unsafe { way.open(pending) };
        }
        true
    }

    /// Gives the cache up (a `Release` store of `NOBODY` into `owner`, under
    /// the lock, once no stealer is counted: a stealer reads the owner's marks
    /// until then).
    pub(crate) fn abandon(&self, owner: &AtomicU64) {
        loop {
            let mut state = self.lock();
            if state.stealers == 0 {
                state.marks = ptr::null();
                state.ways = [GetGate::None; 2];
                owner.store(NOBODY, Ordering::Release);
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
pub(crate) fn now_ns() -> u64 {
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
    pub(crate) fn is_stale(&self, now: u64) -> bool {
        let since = self.0.load(Ordering::Relaxed);
        since != 0 && now.saturating_sub(since) >= PENDING_AGE_NS
    }
}
