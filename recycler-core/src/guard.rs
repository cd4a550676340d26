//! The guards: [`Pooled`] borrows its recycler, [`OwnedPooled`] holds it in
//! an `Arc`. Both return their object to the pool when dropped.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};

use crate::home::Home;
use crate::loom::Arc;
use crate::recyclable::Recyclable;
use crate::recycler::Recycler;
use crate::shared::Inner;

/// An object on loan from a [`Recycler`]; returns to the pool when dropped.
///
/// Made by [`Recycler::get`] and [`Recycler::try_get`]. Dereferences to `T`.
/// On drop, the object is reset ([`Recyclable::reset`]) on the dropping
/// thread and pooled: straight into this thread's cache if this thread got it,
/// otherwise sent home. A panic in `reset` reaches the code that dropped the
/// guard, and the object is dropped, not pooled; a guard dropped while its
/// thread panics drops its object without calling `reset`.
///
/// The guard borrows the recycler, so the recycler cannot drop first; use
/// [`OwnedPooled`] for a guard that must be `'static`. It is two words large
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
    _marker: PhantomData<(&'a Inner<T>, T)>,
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
    fn recycler(&self) -> &'a Inner<T> {
        // SAFETY: `home` is a cache of a recycler borrowed for `'a` (the
        // contract of `new`), which owns the cache.
        let home = unsafe { self.home.local() };
        // SAFETY: `home` is never empty (the contract of `new`).
        let home = unsafe { home.unwrap_unchecked() };
        // SAFETY: the recycler is borrowed for `'a`.
        unsafe { home.recycler() }
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
        this.recycler().count_detached(this.home);
        // SAFETY: `this` is never dropped (`ManuallyDrop`), so the object is
        // taken exactly once, here.
        *unsafe { this.take_box() }
    }
}

impl<T: Recyclable> Drop for Pooled<'_, T> {
    #[inline(always)]
    fn drop(&mut self) {
        // Before the object is taken out: see `Inner::release`.
        let pool = !std::thread::panicking();
        let recycler = self.recycler();
        // SAFETY: `drop` runs once and `into_inner` forgets the guard, so the
        // object is taken exactly once.
        let obj = unsafe { self.take_box() };
        recycler.release(obj, self.home, pool);
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

/// An object on loan from a [`Recycler`] in an `Arc`; `'static`, so it can
/// move into threads and tasks. Returns to the pool when dropped.
///
/// Made by [`Recycler::get_owned`]; otherwise the same as [`Pooled`]. The guard
/// keeps the recycler alive.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use recycler_core::{OwnedPooled, Recycler};
///
/// let pool = Arc::new(Recycler::<Vec<u32>>::new());
/// let mut v: OwnedPooled<Vec<u32>> = pool.get_owned();
/// drop(pool); // the guard keeps the recycler alive
/// v.push(3);
/// assert_eq!(v[..], [3]);
/// ```
pub struct OwnedPooled<T: Recyclable> {
    recycler: Arc<Recycler<T>>,
    obj: ManuallyDrop<Box<T>>,
    home: Home<T>,
}

// SAFETY: as for `Pooled`: the guard owns its `T`; the `Arc<Recycler<T>>` is
// `Send` because the recycler is `Sync` and `Send` for `T: Send`.
unsafe impl<T: Recyclable + Send> Send for OwnedPooled<T> {}
// SAFETY: as for `Pooled`: `&OwnedPooled` reaches only `&T` and `&Recycler`.
unsafe impl<T: Recyclable + Sync> Sync for OwnedPooled<T> {}

impl<T: Recyclable> OwnedPooled<T> {
    #[inline(always)]
    pub(crate) fn new(recycler: Arc<Recycler<T>>, obj: Box<T>, home: Home<T>) -> Self {
        Self {
            recycler,
            obj: ManuallyDrop::new(obj),
            home,
        }
    }

    /// Takes the object out of the pool for good, as [`Pooled::into_inner`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::{OwnedPooled, Recycler};
    ///
    /// let pool = Arc::new(Recycler::<String>::new());
    /// let mut s = pool.get_owned();
    /// s.push('x');
    /// assert_eq!(OwnedPooled::into_inner(s), "x");
    /// ```
    pub fn into_inner(this: Self) -> T {
        let mut this = ManuallyDrop::new(this);
        this.recycler.inner().count_detached(this.home);
        // SAFETY: `this` is never dropped, so each field is moved out once:
        // the object here, the `Arc` below.
        let obj = unsafe { ManuallyDrop::take(&mut this.obj) };
        // SAFETY: as above; `recycler` is read once and never used again.
        drop(unsafe { ptr::read(&this.recycler) });
        *obj
    }
}

impl<T: Recyclable> Drop for OwnedPooled<T> {
    #[inline(always)]
    fn drop(&mut self) {
        // Before the object is taken out: see `Inner::release`.
        let pool = !std::thread::panicking();
        // SAFETY: `drop` runs once and `into_inner` forgets the guard, so the
        // object is taken exactly once.
        let obj = unsafe { ManuallyDrop::take(&mut self.obj) };
        self.recycler.inner().release(obj, self.home, pool);
    }
}

impl<T: Recyclable> Deref for OwnedPooled<T> {
    type Target = T;

    #[inline(always)]
    fn deref(&self) -> &T {
        &self.obj
    }
}

impl<T: Recyclable> DerefMut for OwnedPooled<T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut T {
        &mut self.obj
    }
}

impl<T: Recyclable + fmt::Debug> fmt::Debug for OwnedPooled<T> {
    /// Formats the object, as if the guard were not there.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

impl<T: Recyclable + fmt::Display> fmt::Display for OwnedPooled<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&**self, f)
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use static_assertions::{assert_impl_all, assert_not_impl_any, const_assert};
    use std::cell::Cell;
    use std::marker::PhantomData;
    use std::mem::size_of;

    /// Neither `Send` nor `Sync`.
    struct Local(PhantomData<*const u8>);

    impl Recyclable for Local {
        fn reset(&mut self) {}
    }

    impl Recyclable for Cell<u8> {
        fn reset(&mut self) {
            self.set(0);
        }
    }

    assert_impl_all!(Pooled<'static, Vec<u8>>: Send, Sync);
    assert_impl_all!(OwnedPooled<Vec<u8>>: Send, Sync);
    assert_impl_all!(Pooled<'static, Cell<u8>>: Send);
    assert_not_impl_any!(Pooled<'static, Cell<u8>>: Sync);
    assert_not_impl_any!(Pooled<'static, Local>: Send, Sync);
    assert_not_impl_any!(OwnedPooled<Local>: Send, Sync);
    const_assert!(size_of::<Pooled<'static, [u64; 8]>>() <= 2 * size_of::<usize>());
    const_assert!(size_of::<OwnedPooled<[u64; 8]>>() <= 3 * size_of::<usize>());
}
