//! [`Resetting`]: an object being reset on release, which counts itself
//! released and dropped, and drops, if `reset` panics; an owned guard's
//! object also gives the guard's unit of the keep-alive count back then
//! ([`crate::keep`]).

use std::mem;

use crate::home::Home;
use crate::recyclable::Recyclable;
use crate::shared::Shared;

/// An object being reset. If `reset` panics, unwinding drops this, which
/// counts the object as released and dropped and drops it (out of line, so
/// that the inlined release path carries a single cleanup call).
pub(crate) struct Resetting<T: Recyclable> {
    /// The object's home, of a live recycler.
    home: Home<T>,
    obj: mem::ManuallyDrop<Box<T>>,
    /// The object is an owned guard's, whose unit goes back if `reset`
    /// panics.
    unit: bool,
}

impl<T: Recyclable> Resetting<T> {
    /// Runs `obj.reset()`; returns the object unless `reset` panics.
    /// `home` is `obj`'s, of a recycler the caller keeps alive.
    #[inline(always)]
    pub(crate) fn reset(obj: Box<T>, home: Home<T>) -> Box<T> {
        Self::reset_with(obj, home, false)
    }

    /// [`reset`](Self::reset), for the object of an owned guard if `unit`:
    /// should `reset` panic, the guard's unit goes back too.
    #[inline(always)]
    pub(crate) fn reset_with(obj: Box<T>, home: Home<T>, unit: bool) -> Box<T> {
        let mut this = Self {
            home,
            obj: mem::ManuallyDrop::new(obj),
            unit,
        };
        this.obj.reset();
        let mut this = mem::ManuallyDrop::new(this);
        // SAFETY: `this` is never dropped, so the object is taken once, here.
        unsafe { mem::ManuallyDrop::take(&mut this.obj) }
    }
}

impl<T: Recyclable> Drop for Resetting<T> {
    #[cold]
    #[inline(never)]
    fn drop(&mut self) {
        // SAFETY: the recycler outlives the guard being released (the
        // contract of `reset`).
        let local = unsafe { self.home.local() };
        // SAFETY: as above.
        let inner = unsafe { Shared::of(local) };
        inner.count_release(self.home, 1);
        inner.count_for(Some(local), |c| &c.dropped, 1);
        // SAFETY: dropped once: this guard runs only when `reset` unwinds,
        // and `Resetting::reset` takes the object only when it returns.
        drop(unsafe { mem::ManuallyDrop::take(&mut self.obj) });
        if self.unit {
            // Last: the unit may let the recycler go.
            // SAFETY: `inner` is not used after, nor an argument here (this
            // guard lives on the releasing thread's stack).
            unsafe { Shared::give_unit(inner) };
        }
    }
}
