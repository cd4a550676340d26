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

use std::ptr::NonNull;

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
    /// Takes a unit for an owned guard: from those taken, and whenever they
    /// are used up, [`BATCH`] more: from those returned if the cache holds
    /// as many, else from the count. A thread that makes and releases its
    /// own guards takes nothing from the count after its first batch.
    #[inline(always)]
    pub(crate) fn take(&mut self, keep: &Keep) {
        if self.used == self.granted {
            if self.returned >= BATCH {
                self.returned -= BATCH;
            } else {
                keep.take(BATCH);
            }
            self.granted = self.granted.wrapping_add(BATCH);
        }
        self.used = self.used.wrapping_add(1);
    }

    /// Returns the unit of an owned guard released on its owner path (made
    /// by this cache's owner, with a credit of this cache): no check, since
    /// such returns never outrun this cache's takes, which use them up
    /// again ([`take`](Self::take)).
    #[inline(always)]
    pub(crate) fn give_own(&mut self) {
        self.returned += 1;
    }

    /// Returns the unit of an owned guard released here off its owner path
    /// (made elsewhere, perhaps); gives [`BATCH`]
    /// back to the count once the cache holds twice as many returned (a
    /// thread that releases guards made elsewhere), so that no cache holds
    /// more than `2 × BATCH` returned units and the count stays bounded by
    /// the guards out and the caches.
    #[inline(always)]
    pub(crate) fn give(&mut self, keep: &Keep) {
        self.returned += 1;
        if self.returned >= 2 * BATCH {
            self.returned -= BATCH;
            // Never the count's last units: the cache keeps `BATCH` (were
            // it, the state would leak, not be freed under the cache).
            let let_go = keep.give(BATCH);
            debug_assert!(let_go.is_none(), "the cache keeps units out");
        }
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

    /// For the state's drop: an `Acquire` read of the count (a
    /// read-modify-write, so it reads the 0 its last unit left), so that
    /// every use of the state by a thread that gave a unit back happens
    /// before the drop, whichever thread frees the state (a thread's exit
    /// hook may hold the last strong reference, and free it after the
    /// count's `LetGo` ran elsewhere). `Arc`'s own count orders this too,
    /// but loom models no `std` `Arc`.
    pub(crate) fn settle(&self) {
        let units = self.units.fetch_add(0, Ordering::Acquire);
        debug_assert_eq!(units, 0, "a state dropped with units out");
    }

    /// Units out now (for tests and `Debug`).
    pub(crate) fn units(&self) -> usize {
        self.units.load(Ordering::Relaxed)
    }
}

/// The count a recycler's caches hold credits of when it is not the
/// recycler's own: a buffer pool's buckets' caches hold credits of the
/// pool's count, since an owned buffer keeps the whole pool alive, not one
/// bucket.
///
/// It may dangle once the pool is gone (a bucket's state can outlive its
/// pool, held by a thread's exit hook), but never while a credit of it is
/// out: a credit is a unit of the count, which the count's state outlives.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KeepRef(NonNull<Keep>);

// SAFETY: a pointer to a `Keep`, which is `Send + Sync`; it is read only
// under `get`'s contract.
unsafe impl Send for KeepRef {}
// SAFETY: as above.
unsafe impl Sync for KeepRef {}

impl KeepRef {
    /// A reference to `keep`, to be read while its state lives.
    pub(crate) fn new(keep: &Keep) -> Self {
        Self(NonNull::from(keep))
    }

    /// The count.
    ///
    /// # Safety
    ///
    /// Its state is alive for `'a`: a unit of it is out and stays out for
    /// `'a`, or a handle of its state is alive.
    pub(crate) unsafe fn get<'a>(self) -> &'a Keep {
        // SAFETY: the caller's guarantee.
        unsafe { self.0.as_ref() }
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

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};

    /// A count over an `Arc` whose drop sets `freed`.
    fn count(freed: &Arc<AtomicBool>) -> Keep {
        struct State(Arc<AtomicBool>);
        impl Drop for State {
            fn drop(&mut self) {
                self.0.store(true, SeqCst);
            }
        }
        unsafe fn release(state: *const ()) {
            // SAFETY: the strong reference `count` made, given back once.
            unsafe { Arc::decrement_strong_count(state.cast::<State>()) };
        }
        let state = Arc::into_raw(Arc::new(State(Arc::clone(freed))));
        // SAFETY: a strong reference, which `release` gives back.
        unsafe { Keep::new(state.cast(), release) }
    }

    #[test]
    fn an_owner_that_makes_and_releases_its_own_guards_takes_one_batch() {
        let freed = Arc::new(AtomicBool::new(false));
        let keep = count(&freed);
        let mut credits = Credits::default();
        for _ in 0..10_000 {
            credits.take(&keep);
            credits.give(&keep);
        }
        // The handles' unit and the one batch the cache holds: the returned
        // units are taken again, not piled up (nor more taken).
        assert_eq!(keep.units(), 1 + BATCH);
        let held = credits.take_all();
        assert!(keep.give(held).is_none());
        assert!(keep.give(1).is_some_and(|go| {
            // SAFETY: no reference into the state is an argument here.
            unsafe { go.run() };
            true
        }));
        assert!(freed.load(SeqCst), "the last unit let the state go");
    }

    #[test]
    fn a_cache_that_only_releases_gives_batches_back() {
        let freed = Arc::new(AtomicBool::new(false));
        let keep = count(&freed);
        let (mut maker, mut releaser) = (Credits::default(), Credits::default());
        for n in 1..=10_000 {
            maker.take(&keep);
            releaser.give(&keep);
            // Out: the handles' unit, the maker's batches not used yet (a
            // batch at most), and what the releaser keeps (under two
            // batches).
            assert!(keep.units() < 1 + 3 * BATCH, "round {n}: {}", keep.units());
        }
        let held = maker.take_all() + releaser.take_all();
        assert!(keep.give(held).is_none());
        assert_eq!(keep.units(), 1, "every unit accounted for");
        // SAFETY: no reference into the state is an argument here.
        unsafe { keep.give(1).unwrap().run() };
        assert!(freed.load(SeqCst));
    }
}
