//! [`Keep`]: what keeps a recycler's memory (or a buffer pool's) alive for
//! its owned guards, without a shared count per guard.
//!
//! An owned guard (`OwnedPooled`, a handle's guard, `OwnedPooledBuf`) is
//! `'static`: it may outlive every handle of its recycler, and the
//! recycler's memory must outlive it. Holding an `Arc` per guard did that at
//! the cost of two atomic read-modify-writes per guard on one counter every
//! guard of the recycler shares. Here the recycler's memory is kept by a
//! count of *units* instead:
//!
//! - one unit for the handles together (the `Recycler`s or `BufferPool`s
//!   that share the state), given back when the last of them drops;
//! - one unit for each owned guard out, taken when it is made and given
//!   back when it is released (or detached);
//! - the rest as *credits*, units a cache's owner holds in plain counters
//!   of its own ([`Credits`]): a guard made on the owner path takes a
//!   credit, one released there (or by the owner of another cache of the
//!   same recycler: units are all alike) returns one, and the shared count
//!   moves only by [`BATCH`] units at a time, as a cache's guards use up
//!   what it took. The credits taken and returned are two counters, not
//!   one: a thread that takes and releases one guard at a time then updates
//!   each once per round, rather than one counter twice (each update a
//!   load and a store that the next must wait for).
//!
//! The count itself holds one strong reference on the state that owns it
//! (taken when the count is made, given back when the count reaches 0), so
//! the state lives as long as any unit is out. When the last handle drops,
//! it takes every cache's credits back (under the same handshake as a
//! stealer's, so that no owner is in the middle of counting one) and marks
//! the caches orphaned, so that from then on every release gives its unit
//! back to the count directly; then it gives the handles' unit back. The
//! last unit given back, by the last handle or by the last guard wherever
//! it is released, lets the state go.
//!
//! Giving a unit back is the last thing a release does with the recycler:
//! once the count may reach 0, nothing of the state may be touched. The
//! count's last unit returns a [`LetGo`] rather than freeing the state
//! itself, to be run by a caller that holds no reference into the state as
//! a function argument (a reference argument must stay valid for the whole
//! call, as `Arc`'s drop takes care of too).

use crate::loom::{AtomicUsize, Ordering};

/// Credits a cache takes from the count at a time; it gives [`BATCH`] back
/// once it holds twice as many.
pub(crate) const BATCH: usize = 64;

/// A cache's credits: units of its recycler's [`Keep`] that its owner
/// holds, written only by the owner (or under the cache's lock while the
/// owner is outside every marked operation), in plain counters.
#[derive(Debug, Default)]
pub(crate) struct Credits {
    /// Units taken from the count, [`BATCH`] at a time.
    granted: usize,
    /// Units handed to the owned guards this cache's owner made.
    used: usize,
    /// Units given back to this cache by owned guards released here.
    returned: usize,
}

impl Credits {
    /// Takes a unit for an owned guard: from the count, [`BATCH`] at a
    /// time, whenever those taken are used up (those returned are kept
    /// apart, until the cache is given up or orphaned).
    #[inline(always)]
    pub(crate) fn take(&mut self, keep: &Keep) {
        if self.used == self.granted {
            keep.take(BATCH);
            self.granted = self.granted.wrapping_add(BATCH);
        }
        self.used = self.used.wrapping_add(1);
    }

    /// Returns the unit of an owned guard released here.
    #[inline(always)]
    pub(crate) fn give(&mut self) {
        self.returned = self.returned.wrapping_add(1);
    }

    /// Takes every unit the cache holds (for its count, as its thread exits
    /// or its recycler's last handle drops).
    pub(crate) fn take_all(&mut self) -> usize {
        let held = self
            .granted
            .wrapping_sub(self.used)
            .wrapping_add(self.returned);
        *self = Self::default();
        held
    }
}

/// The count of units that keeps a recycler's state (or a buffer pool's)
/// alive (see the module docs).
pub(crate) struct Keep {
    units: AtomicUsize,
    /// The state this count keeps alive: one strong reference of its `Arc`,
    /// given back by `release` when the count reaches 0.
    state: *const (),
    /// Gives back the strong reference on `state`.
    release: unsafe fn(*const ()),
}

// SAFETY: `state` is a strong reference of an `Arc` of `Send + Sync` state
// (a recycler's or a buffer pool's shared state), given back once, by the
// thread that takes the count to 0; the count is atomic.
unsafe impl Send for Keep {}
// SAFETY: as above: `&Keep` reaches only the atomic count, and `release`
// runs once.
unsafe impl Sync for Keep {}

impl Keep {
    /// A count holding the handles' unit, which keeps `state` alive through
    /// the strong reference the caller hands it.
    ///
    /// # Safety
    ///
    /// `state` is a strong reference of an `Arc` that `release` gives back,
    /// and `release` may run on any thread.
    pub(crate) unsafe fn new(state: *const (), release: unsafe fn(*const ())) -> Self {
        Self {
            units: AtomicUsize::new(1),
            state,
            release,
        }
    }

    /// Takes `n` units (a guard's, or a cache's credits).
    ///
    /// `Relaxed`: a unit is taken by a thread that holds one already (a
    /// handle's, or a credit), so the count cannot reach 0 meanwhile.
    #[inline]
    pub(crate) fn take(&self, n: usize) {
        self.units.fetch_add(n, Ordering::Relaxed);
    }

    /// Gives `n` units back. If that takes the count to 0, returns what
    /// lets the state go, for the caller to [`run`](LetGo::run) once it
    /// holds no reference into the state (it may free the state, this count
    /// with it).
    ///
    /// `Release`, and `Acquire` before letting go: every use of the state
    /// by a thread that gave a unit back happens before it is freed (as in
    /// `Arc`'s drop).
    #[inline]
    #[must_use = "the state goes only when `LetGo::run` runs"]
    pub(crate) fn give(&self, n: usize) -> Option<LetGo> {
        if n == 0 {
            // Nothing given back, but a release all the same, so that what
            // the caller did (a thread's exit hook emptying its cache)
            // happens before the state's drop, wherever that runs.
            self.units.fetch_add(0, Ordering::Release);
            return None;
        }
        if self.units.fetch_sub(n, Ordering::Release) != n {
            return None;
        }
        crate::loom::fence(Ordering::Acquire);
        Some(LetGo {
            state: self.state,
            release: self.release,
        })
    }

    /// Units out now (for tests and `Debug`).
    pub(crate) fn units(&self) -> usize {
        self.units.load(Ordering::Relaxed)
    }
}

/// The last unit of a [`Keep`] given back: gives its strong reference on the
/// state back when run.
#[must_use = "the state goes only when `run` runs"]
pub(crate) struct LetGo {
    state: *const (),
    release: unsafe fn(*const ()),
}

impl LetGo {
    /// Gives the count's strong reference on the state back, freeing the
    /// state unless a thread's exit hook holds it (then that hook does).
    ///
    /// # Safety
    ///
    /// The calling frame, and every frame it was called from, holds no
    /// reference into the state as an argument: the state may be freed
    /// here. (Once, which `Keep::give` ensures.)
    pub(crate) unsafe fn run(self) {
        // SAFETY: the count reached 0 once, so this runs once; the caller's
        // guarantee for what may be freed.
        unsafe { (self.release)(self.state) };
    }
}

impl std::fmt::Debug for LetGo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LetGo").finish_non_exhaustive()
    }
}

impl std::fmt::Debug for Keep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Keep")
            .field("units", &self.units())
            .finish_non_exhaustive()
    }
}
