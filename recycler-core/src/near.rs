//! Striped mode's lean paths: `get` and release of a recycler whose stripes
//! run on restartable sequences ([`crate::striped`]'s per-CPU caches) and
//! that has no idle-memory cap. Each is one out-of-line call from the
//! inlined owner paths, placed where the per-thread path has already
//! missed, and each runs one critical section and little else.
//!
//! - **get**: a striped recycler never has a hot-index entry, so `get`'s
//!   lookup misses; its miss branch reads [`Miss`] once and calls
//!   [`get_near`](Shared::get_near), which pops this CPU's cache (a
//!   section; the hit counted by the cache's books) and homes the object
//!   at the orphan cache. No second lookup, no slow-path frame.
//! - **release**: such a recycler's orphan cache carries [`NEAR`] in its
//!   owner word. The owner path's compare of that word with the thread's
//!   token fails, and the release leaves through its one out-of-line call
//!   with the word it read ([`release_off`](Shared::release_off)), which
//!   compares it with `NEAR` and runs
//!   [`release_near`](Shared::release_near), inlined there: reset, and a
//!   push onto this CPU's cache (a section). The guard has already asked
//!   whether the thread panics (it does not pool then); `release_near`
//!   asks only whether the thread has a token and is not exiting (one
//!   thread-local read), since the slow release gives a thread its token
//!   (for its exit hooks) and catches a `reset` that panics during its
//!   exit.
//! - **owned guards** ([`release_owned_near`](Shared::release_owned_near)):
//!   the same push, then the guard's unit of the keep-alive count given
//!   back ([`crate::keep`]), after the section committed: the last touch
//!   of the recycler.
//!
//! Everything else (a section that did not commit at the first attempt, an
//! empty or full cache, a thread without a token or exiting, a discarded
//! object, a panicking thread) goes on to the slow paths as before, with
//! what was done (the reset) not done again.
//!
//! [`NEAR`]: crate::cache::NEAR

use crate::home::Home;
use crate::owner::UnitBack;
use crate::percpu::Unfinished;
use crate::recyclable::Recyclable;
use crate::registry;
use crate::resetting::Resetting;
use crate::shared::{Miss, Shared};
use crate::striped::{CpuStripes, Stripes};

impl<T: Recyclable> Shared<T> {
    /// The per-CPU caches of a recycler whose misses go to [`Miss::Near`].
    ///
    /// # Safety
    ///
    /// `self.miss` is [`Miss::Near`]: set once, when the state is made,
    /// only with stripes on sections (so the orphan cache is marked
    /// [`NEAR`](crate::cache::NEAR) exactly then too).
    #[inline(always)]
    unsafe fn near_stripes(&self) -> &CpuStripes<T> {
        debug_assert_eq!(self.miss, Miss::Near);
        match &self.stripes {
            Some(Stripes::Cpus(cpus)) => cpus,
            // SAFETY: `Miss::Near` is set only with `Stripes::Cpus`, and
            // neither field changes (the caller's guarantee).
            _ => unsafe { std::hint::unreachable_unchecked() },
        }
    }

    /// `get`'s miss for [`Miss::Near`]: this CPU's cache (a section, the
    /// hit counted by its books), else the slow get.
    ///
    /// # Safety
    ///
    /// `self.miss` is [`Miss::Near`].
    #[inline(never)]
    pub(crate) unsafe fn get_near(&self) -> (Box<T>, Home<T>) {
        // SAFETY: the caller's guarantee.
        let cpus = unsafe { self.near_stripes() };
        // SAFETY: stripes on sections: their caches run sections.
        match unsafe { cpus.fronts().try_pop_on_sections() } {
            Ok(obj) => (obj, Home::new(&self.orphan)),
            Err(unfinished) => self.get_unfinished(cpus, unfinished),
        }
    }

    /// [`get_near`](Self::get_near) when the section did not commit at the
    /// first attempt.
    #[cold]
    #[inline(never)]
    fn get_unfinished(&self, cpus: &CpuStripes<T>, unfinished: Unfinished) -> (Box<T>, Home<T>) {
        match cpus.fronts().finish_pop(unfinished) {
            Some(obj) => (obj, Home::new(&self.orphan)),
            None => self.get_slow(),
        }
    }

    /// The release of a borrowed guard's object homed at a [`NEAR`] cache,
    /// on a thread that does not panic: reset, and pushed onto this CPU's
    /// cache (a section, the release counted by its books).
    ///
    /// # Safety
    ///
    /// `home` is `obj`'s, a cache whose owner word is [`NEAR`]; its
    /// recycler is alive (the guard being released keeps it).
    ///
    /// [`NEAR`]: crate::cache::NEAR
    #[inline(always)]
    pub(crate) unsafe fn release_near(obj: Box<T>, home: Home<T>) {
        if registry::current() >= registry::EXITED {
            // No token yet, or exiting: see the module docs.
            // SAFETY: alive (the caller's guarantee).
            return unsafe { Shared::of(home.local()) }.release_slow(obj, home, false);
        }
        // A panic in `reset` reaches the code that dropped the guard (the
        // thread is not exiting), the object counted released and dropped.
        let obj = Resetting::reset(obj, home);
        // SAFETY: alive (the caller's guarantee).
        let this = unsafe { Shared::of(home.local()) };
        // SAFETY: a `NEAR` home is the orphan of a recycler whose misses
        // go to `Miss::Near` (see `near_stripes`).
        let cpus = unsafe { this.near_stripes() };
        // SAFETY: stripes on sections.
        if let Err(unfinished) = unsafe { cpus.fronts().try_push_on_sections(obj) } {
            // Only `home` lives across the section (the state is found
            // again from it): no register to save on the way.
            // SAFETY: as above.
            unsafe { Self::release_near_unfinished(unfinished, home) };
        }
    }

    /// [`release_near`](Self::release_near) when the push did not commit
    /// at the first attempt.
    ///
    /// # Safety
    ///
    /// As for `release_near`.
    #[cold]
    #[inline(never)]
    unsafe fn release_near_unfinished(unfinished: Unfinished, home: Home<T>) {
        // SAFETY: alive (the caller's guarantee).
        let this = unsafe { Shared::of(home.local()) };
        // SAFETY: as in `release_near`.
        let cpus = unsafe { this.near_stripes() };
        this.release_unfinished(cpus, unfinished, home);
    }

    /// The push of a reset object onto this CPU's cache that did not
    /// commit at the first attempt: finished on the locked path; a full
    /// cache spills to the depot; else the slow release.
    #[cold]
    #[inline(never)]
    fn release_unfinished(&self, cpus: &CpuStripes<T>, unfinished: Unfinished, home: Home<T>) {
        let Err(obj) = cpus.fronts().finish_push(unfinished) else {
            return;
        };
        if let Err(obj) = cpus.push(obj) {
            self.release_slow(obj, home, true);
        }
    }

    /// [`release_near`](Self::release_near) for an owned guard's object:
    /// the same push, then the guard's unit of the keep-alive count given
    /// back, the last touch of the recycler (should `reset` panic, the unit
    /// goes back as it unwinds).
    ///
    /// # Safety
    ///
    /// As for `release_near`, the recycler kept alive by the guard's unit.
    #[inline(never)]
    pub(crate) unsafe fn release_owned_near(obj: Box<T>, home: Home<T>) {
        // SAFETY: alive (the caller's guarantee).
        let this: *const Shared<T> = unsafe { Shared::of(home.local()) };
        if registry::current() >= registry::EXITED {
            // SAFETY: as above; no reference into the state is an argument.
            return unsafe { Self::release_owned_slow(obj, home, false) };
        }
        let obj = Resetting::reset_with(obj, home, true);
        // SAFETY: alive while the unit is out.
        let shared = unsafe { &*this };
        // SAFETY: as in `release_near`.
        let cpus = unsafe { shared.near_stripes() };
        // SAFETY: stripes on sections.
        if let Err(unfinished) = unsafe { cpus.fronts().try_push_on_sections(obj) } {
            // SAFETY: as above.
            return unsafe { Self::release_owned_unfinished(this, unfinished, home) };
        }
        // SAFETY: the object is the cache's; nothing of the state is used
        // after, nor an argument here.
        unsafe { Shared::give_unit(this) };
    }

    /// [`release_owned_near`](Self::release_owned_near) when the push did
    /// not commit at the first attempt: finished as `release_unfinished`
    /// finishes it, the unit given back after, whatever happens.
    ///
    /// # Safety
    ///
    /// `this` is alive, kept by the guard's unit; `this.miss` is
    /// [`Miss::Near`].
    #[cold]
    #[inline(never)]
    unsafe fn release_owned_unfinished(
        this: *const Shared<T>,
        unfinished: Unfinished,
        home: Home<T>,
    ) {
        // Gives the unit back as it drops, panic or not.
        let _unit = UnitBack::owed(this);
        // SAFETY: alive while the unit is out.
        let shared = unsafe { &*this };
        // SAFETY: the caller's guarantee.
        let cpus = unsafe { shared.near_stripes() };
        shared.release_unfinished(cpus, unfinished, home);
    }

    /// Whether the recycler's misses go to [`Miss::Near`]: for a buffer
    /// pool's bucket, whose striped acquire and release then take the
    /// lean paths ([`crate::buffer`]'s `near.rs`).
    #[inline(always)]
    pub(crate) fn is_near(&self) -> bool {
        self.miss == Miss::Near
    }

    /// Striped mode's lean pop for a buffer pool's bucket: this CPU's
    /// cache's section alone (the hit counted by its books), and the home
    /// of what it pops; else what [`finish_pop_near`](Self::finish_pop_near)
    /// completes.
    ///
    /// # Safety
    ///
    /// [`is_near`](Self::is_near).
    #[inline(always)]
    pub(crate) unsafe fn try_pop_near(&self) -> Result<(Box<T>, Home<T>), Unfinished> {
        // SAFETY: the caller's guarantee.
        let cpus = unsafe { self.near_stripes() };
        // SAFETY: stripes on sections.
        let obj = unsafe { cpus.fronts().try_pop_on_sections() }?;
        Ok((obj, Home::new(&self.orphan)))
    }

    /// Completes a [`try_pop_near`](Self::try_pop_near) whose section did
    /// not commit at the first attempt: `None` if this CPU's cache had
    /// nothing (the caller's slow path looks further).
    ///
    /// # Safety
    ///
    /// [`is_near`](Self::is_near).
    pub(crate) unsafe fn finish_pop_near(
        &self,
        unfinished: Unfinished,
    ) -> Option<(Box<T>, Home<T>)> {
        // SAFETY: the caller's guarantee.
        let cpus = unsafe { self.near_stripes() };
        let obj = cpus.fronts().finish_pop(unfinished)?;
        Some((obj, Home::new(&self.orphan)))
    }

    /// Striped mode's lean push for a buffer pool's bucket: `obj`, reset
    /// already (a buffer is reset as it is handed out), onto this CPU's
    /// cache, counted by its books; the rest of the way as
    /// [`release_near`](Self::release_near) goes it. The caller has checked
    /// what the pool's own slow release would (the bucket, the capacity,
    /// no overdraft, nobody waiting for memory, the thread not panicking).
    ///
    /// # Safety
    ///
    /// As for `release_near`.
    #[inline(always)]
    pub(crate) unsafe fn push_near(obj: Box<T>, home: Home<T>) {
        // SAFETY: alive (the caller's guarantee).
        let this = unsafe { Shared::of(home.local()) };
        if registry::current() >= registry::EXITED {
            return this.release_slow(obj, home, true);
        }
        // SAFETY: as in `release_near`.
        let cpus = unsafe { this.near_stripes() };
        // SAFETY: stripes on sections.
        if let Err(unfinished) = unsafe { cpus.fronts().try_push_on_sections(obj) } {
            // SAFETY: as above.
            unsafe { Self::release_near_unfinished(unfinished, home) };
        }
    }
}
