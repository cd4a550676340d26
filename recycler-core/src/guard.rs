//! [`Pooled`]: the guard that borrows its recycler and returns its object
//! to the pool when dropped. Its `'static` twin, [`OwnedPooled`](crate::OwnedPooled), is in
//! [`crate::owned`]; the traits both forward to their object, in
//! [`crate::box_like`] and [`crate::forward`].

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

use crate::home::Home;
use crate::recyclable::Recyclable;
use crate::shared::Shared;

/// An object on loan from a [`Recycler`](crate::Recycler); returns to the pool when dropped.
///
/// Made by [`Recycler::get`](crate::Recycler::get) and [`Recycler::try_get`](crate::Recycler::try_get). Dereferences to `T`,
/// and stands for it as a `Box<T>` does: `AsRef`, `Borrow` (so a set of
/// guards is searched by `&T`), comparisons, ordering and hashing of the
/// object, `Debug` and `Display` of the object, and `{:p}` its address; and,
/// where the object has them, `io::Read`, `io::BufRead`, `io::Write`,
/// `io::Seek`, `Iterator` (with `DoubleEndedIterator`, `ExactSizeIterator`,
/// `FusedIterator`) and, for an `Unpin` object, `Future`, each call reaching
/// the object's own method. It is `UnwindSafe` and `RefUnwindSafe` when the
/// object is.
/// On drop, the object is reset ([`Recyclable::reset`]) on the dropping
/// thread and pooled: straight into this thread's cache if this thread got it,
/// otherwise sent home. A panic in `reset` reaches the code that dropped the
/// guard, and the object is dropped, not pooled; a guard dropped while its
/// thread panics drops its object without calling `reset`.
///
/// The guard borrows the recycler, so the recycler cannot drop first; use
/// [`OwnedPooled`](crate::OwnedPooled) for a guard that must be `'static`. It is two words large
/// (the object and its home; the recycler is found through the home), so it
/// moves like a pair of pointers, and it is `Send` when `T` is.
///
/// # Examples
///
/// ```
/// use recycler_core::{Pooled, Recycler};
///
/// let pool: Recycler<String> = Recycler::new();
/// let mut s: Pooled<'_, String> = pool.get();
/// s.push_str("hi");
/// assert_eq!(s.len(), 2);
/// assert_eq!(format!("{s:?}"), "\"hi\"");
/// ```
pub struct Pooled<'a, T: Recyclable> {
    /// The object, owned by the guard: a `Box<T>` taken apart.
    obj: NonNull<T>,
    /// The cache the object returns to; never empty (a recycler homes the
    /// objects of a thread without a cache at its orphan cache), so it leads
    /// to the recycler.
    home: Home<T>,
    /// Borrows the recycler; owns a `T`.
    _marker: PhantomData<(&'a Shared<T>, T)>,
}

// SAFETY: the guard owns its `T` (sent along with it, hence `T: Send`); the
// recycler it borrows is shared state that is `Sync` (all cross-thread parts
// are atomics, locks and channels); `home` is an address the release path
// uses from any thread (it compares the owner before touching the cache).
unsafe impl<T: Recyclable + Send> Send for Pooled<'_, T> {}
// SAFETY: through `&Pooled` only `&T` is reachable, which is `Sync` for
// `T: Sync`; release needs `&mut` (drop), so it cannot run concurrently.
unsafe impl<T: Recyclable + Sync> Sync for Pooled<'_, T> {}

impl<'a, T: Recyclable> Pooled<'a, T> {
    /// A guard for `obj`, handed out by the recycler that `home` belongs to.
    ///
    /// # Safety
    ///
    /// `home` is a cache (not empty) of a recycler that is borrowed for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn new(obj: Box<T>, home: Home<T>) -> Self {
        Self {
            obj: NonNull::from(Box::leak(obj)),
            home,
            _marker: PhantomData,
        }
    }

    /// The recycler the object belongs to.
    #[inline(always)]
    fn recycler(&self) -> &'a Shared<T> {
        // SAFETY: `home` is a cache of a recycler borrowed for `'a` (the
        // contract of `new`), which owns the cache.
        let home = unsafe { self.home.local() };
        // SAFETY: the recycler is borrowed for `'a`.
        unsafe { Shared::of(home) }
    }

    /// Takes the object back as the `Box` it came in.
    ///
    /// # Safety
    ///
    /// Once per guard: from `drop` or from `into_inner`, which forgets it.
    #[inline(always)]
    unsafe fn take_box(&mut self) -> Box<T> {
        // SAFETY: `obj` came from `Box::leak` in `new` and, by the caller's
        // guarantee, is turned back into a box only once.
        unsafe { Box::from_raw(self.obj.as_ptr()) }
    }

    /// Takes the object out of the pool for good: it is not reset and will
    /// never return. Counted in [`RecyclerStats::detached`](crate::RecyclerStats::detached).
    ///
    /// An associated function, as with `Box::into_inner`, so that it does not
    /// shadow a method of `T`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::{Pooled, Recycler};
    ///
    /// let pool: Recycler<Vec<u8>> = Recycler::new();
    /// let mut v = pool.get();
    /// v.push(1);
    /// let v: Vec<u8> = Pooled::into_inner(v);
    /// assert_eq!(v, [1]);
    /// assert_eq!(pool.stats().detached, 1);
    /// ```
    pub fn into_inner(this: Self) -> T {
        let mut this = ManuallyDrop::new(this);
        #[cfg(feature = "track")]
        this.recycler().untrack(this.obj.as_ptr());
        this.recycler().count_detached(this.home);
        // SAFETY: `this` is never dropped (`ManuallyDrop`), so the object is
        // taken exactly once, here.
        *unsafe { this.take_box() }
    }
}

impl<T: Recyclable> Drop for Pooled<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(feature = "track")]
        self.recycler().untrack(self.obj.as_ptr());
        // Before the object is taken out: see `Shared::release`.
        let pool = !std::thread::panicking();
        // SAFETY: `drop` runs once and `into_inner` forgets the guard, so the
        // object is taken exactly once.
        let obj = unsafe { self.take_box() };
        // SAFETY: `home` is the object's, not empty, of a recycler borrowed
        // for `'a` (the contract of `new`).
        unsafe { Shared::release(obj, self.home, pool) };
    }
}

impl<T: Recyclable> Deref for Pooled<'_, T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        // SAFETY: the guard owns the object (a leaked box) until it drops.
        unsafe { self.obj.as_ref() }
    }
}

impl<T: Recyclable> DerefMut for Pooled<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: the guard owns the object uniquely until it drops.
        unsafe { self.obj.as_mut() }
    }
}

impl<T: Recyclable + fmt::Debug> fmt::Debug for Pooled<'_, T> {
    /// Formats the object, as if the guard were not there.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: Recyclable + fmt::Display> fmt::Display for Pooled<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}
