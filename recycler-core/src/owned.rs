//! [`OwnedPooled`]: the `'static` guard, which holds its recycler in an
//! `Arc`, and the methods of an `Arc<Recycler<T>>` that make it.

use std::fmt;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr;

use crate::home::Home;
use crate::loom::Arc;
use crate::recyclable::Recyclable;
use crate::recycler::Recycler;
use crate::shared::Shared;

/// An object on loan from a [`Recycler`] in an `Arc`; `'static`, so it can
/// move into threads and tasks. Returns to the pool when dropped.
///
/// Made by [`Recycler::get_owned`] and [`Recycler::try_get_owned`] on an
/// `Arc<Recycler<T>>`, or by a [`RecyclerHandle`](crate::RecyclerHandle)
/// (for a recycler that is a plain field of a shared struct); otherwise the
/// same as [`Pooled`](crate::Pooled), with the same traits. The guard keeps the recycler
/// alive.
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

    /// Takes the object out of the pool for good, as [`Pooled::into_inner`](crate::Pooled::into_inner).
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
        #[cfg(feature = "track")]
        this.recycler.inner().untrack(&**this.obj);
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
        #[cfg(feature = "track")]
        self.recycler.inner().untrack(&**self.obj);
        // Before the object is taken out: see `Shared::release`.
        let pool = !std::thread::panicking();
        // SAFETY: `drop` runs once and `into_inner` forgets the guard, so the
        // object is taken exactly once.
        let obj = unsafe { ManuallyDrop::take(&mut self.obj) };
        // SAFETY: `home` is the object's (never empty: every recycler homes
        // its objects), of the recycler this guard's `Arc` keeps alive.
        unsafe { Shared::release(obj, self.home, pool) };
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

impl<T: Recyclable + Send + 'static> Recycler<T> {
    /// Like [`get`](Self::get), for a recycler in an `Arc`: the guard holds a
    /// clone of the `Arc`, so it is `'static` and can move into tasks and
    /// threads that outlive the borrow.
    ///
    /// # Panics
    ///
    /// As [`get`](Self::get).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::Recycler;
    ///
    /// let pool: Arc<Recycler<Vec<u8>>> = Arc::new(Recycler::new());
    /// let mut buf = pool.get_owned();
    /// std::thread::spawn(move || buf.push(1)).join().unwrap();
    /// assert_eq!(pool.stats().released_remote, 1);
    /// ```
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn get_owned(self: &Arc<Self>) -> OwnedPooled<T> {
        let (obj, home) = match self.inner().pop_owned() {
            Some(hit) => hit,
            None => self.inner().get_miss(),
        };
        #[cfg(feature = "track")]
        self.inner().track(&obj);
        OwnedPooled::new(Arc::clone(self), obj, home)
    }

    /// Like [`try_get`](Self::try_get), for a recycler in an `Arc`: an
    /// owned guard of a pooled object, if the pool has one; never calls the
    /// factory.
    ///
    /// # Panics
    ///
    /// As [`try_get`](Self::try_get).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::Recycler;
    ///
    /// let pool = Arc::new(Recycler::<String>::new());
    /// assert!(pool.try_get_owned().is_none()); // nothing pooled yet
    /// drop(pool.get());
    /// let s = pool.try_get_owned().unwrap();
    /// std::thread::spawn(move || assert!(s.is_empty())).join().unwrap();
    /// assert_eq!(pool.stats().created, 1);
    /// ```
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn try_get_owned(self: &Arc<Self>) -> Option<OwnedPooled<T>> {
        let (obj, home) = match self.inner().pop_owned() {
            Some(hit) => hit,
            None => self.inner().take_pooled()?,
        };
        #[cfg(feature = "track")]
        self.inner().track(&obj);
        Some(OwnedPooled::new(Arc::clone(self), obj, home))
    }
}
