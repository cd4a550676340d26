//! [`OwnedPooled`]: the `'static` guard, which keeps its recycler's state
//! alive by a unit of its keep-alive count ([`crate::keep`]) rather than an
//! `Arc` of its own, and the methods of an `Arc<Recycler<T>>` that make it.

use std::fmt;
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use crate::home::Home;
use crate::loom::Arc;
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::recycler::Recycler;
use crate::shared::Shared;

/// An object on loan from a [`crate::Recycler`] in an `Arc`;
/// `'static`, so it can move into threads and tasks. Returns to the pool
/// when dropped.
///
/// Made by [`Recycler::get_owned`](crate::Recycler::get_owned) and
/// [`Recycler::try_get_owned`](crate::Recycler::try_get_owned) on an
/// `Arc<Recycler<T>>`, or by a [`RecyclerHandle`](crate::RecyclerHandle)
/// (for a recycler that is a plain field of a shared struct); otherwise the
/// same as [`Pooled`](crate::Pooled), with the same traits, and as small
/// (two words).
///
/// The guard keeps the recycler's pool alive (its caches, depot and
/// counters, and the objects they hold), not the `Arc<Recycler<T>>` it was
/// made from: the `Arc` may drop first, and the pool then lives until the
/// last such guard returns its object. It does so without a shared count
/// per guard: a guard made and released on the thread that owns its cache
/// touches no atomic read-modify-write (see the design notes, "Owned
/// guards").
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use recycler_core::{OwnedPooled, Recycler};
///
/// let pool = Arc::new(Recycler::<Vec<u32>>::new());
/// let mut v: OwnedPooled<Vec<u32>> = pool.get_owned();
/// drop(pool); // the guard keeps the recycler's pool alive
/// v.push(3);
/// assert_eq!(v[..], [3]);
/// ```
pub struct OwnedPooled<T: Recyclable> {
    obj: ManuallyDrop<Box<T>>,
    /// The cache the object returns to, of a recycler whose state this
    /// guard's unit keeps alive.
    home: Home<T>,
    /// Owns a `T`.
    _marker: PhantomData<T>,
}

// SAFETY: as for `Pooled`: the guard owns its `T` (hence `T: Send`); the
// state it keeps alive is `Sync` (atomics, locks and channels), and `home`
// is an address the release path uses from any thread (it compares the
// owner before touching the cache).
unsafe impl<T: Recyclable + Send> Send for OwnedPooled<T> {}
// SAFETY: as for `Pooled`: `&OwnedPooled` reaches only `&T`.
unsafe impl<T: Recyclable + Sync> Sync for OwnedPooled<T> {}

impl<T: Recyclable> OwnedPooled<T> {
    /// A guard for `obj`, homed at `home`.
    ///
    /// # Safety
    ///
    /// The caller took a unit of the keep-alive count of `home`'s recycler
    /// for this guard, which gives it back when it drops.
    #[inline(always)]
    unsafe fn new(obj: Box<T>, home: Home<T>) -> Self {
        Self {
            obj: ManuallyDrop::new(obj),
            home,
            _marker: PhantomData,
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
        // SAFETY: the state lives while this guard holds its unit.
        let shared = unsafe { Shared::of(this.home.local()) };
        #[cfg(feature = "track")]
        shared.untrack(&**this.obj);
        shared.count_detached(this.home);
        // SAFETY: `this` is never dropped, so the object is moved out once.
        let obj = unsafe { ManuallyDrop::take(&mut this.obj) };
        // The guard's unit, last: it may let the state go.
        // SAFETY: `shared` is not used after, nor an argument here.
        unsafe { Shared::give_unit(shared) };
        *obj
    }
}

impl<T: Recyclable> Drop for OwnedPooled<T> {
    #[inline(always)]
    fn drop(&mut self) {
        // SAFETY: the state lives while this guard holds its unit.
        #[cfg(feature = "track")]
        unsafe { Shared::of(self.home.local()) }.untrack(&**self.obj);
        // Before the object is taken out: see `Shared::release`.
        let pool = !std::thread::panicking();
        // SAFETY: `drop` runs once and `into_inner` forgets the guard, so the
        // object is taken exactly once.
        let obj = unsafe { ManuallyDrop::take(&mut self.obj) };
        // SAFETY: `home` is the object's (never empty: every recycler homes
        // its objects), of a recycler this guard's unit keeps alive, which
        // the release gives back.
        unsafe { Shared::release_owned_guard(obj, self.home, pool) };
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
    #[inline(always)]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn get_owned(self: &Arc<Self>) -> OwnedPooled<T> {
        let shared = self.inner();
        // SAFETY: `self` is a handle, alive.
        let hit = shared.pop_owned_then(|mine| unsafe { mine.take_credit(&shared.keep) });
        let (obj, home) = match hit {
            Some(hit) => hit,
            // SAFETY: as above.
            None => unsafe { shared.get_owned_miss() },
        };
        #[cfg(feature = "track")]
        shared.track(&obj);
        // SAFETY: a unit was taken for the guard, above.
        unsafe { OwnedPooled::new(obj, home) }
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
        let shared = self.inner();
        // SAFETY: `self` is a handle, alive.
        let hit = shared.pop_owned_then(|mine| unsafe { mine.take_credit(&shared.keep) });
        let (obj, home) = match hit {
            Some(hit) => hit,
            None => {
                let (obj, home) = shared.take_pooled()?;
                // SAFETY: as above.
                unsafe { shared.take_unit(home) };
                (obj, home)
            }
        };
        #[cfg(feature = "track")]
        shared.track(&obj);
        // SAFETY: a unit was taken for the guard, above.
        Some(unsafe { OwnedPooled::new(obj, home) })
    }
}

impl<T: Recyclable> Shared<T> {
    /// `get_owned`'s miss: the miss of `get`, then the guard's unit taken
    /// ([`take_unit`](Self::take_unit)). Out of line, as `get`'s miss is,
    /// so that the owner path of `get_owned` inlines into its caller.
    ///
    /// # Safety
    ///
    /// A handle of this recycler is alive.
    #[cold]
    #[inline(never)]
    pub(crate) unsafe fn get_owned_miss(&self) -> (Box<T>, Home<T>) {
        let (obj, home) = self.get_miss();
        // SAFETY: the caller's guarantee.
        unsafe { self.take_unit(home) };
        (obj, home)
    }

    /// Takes a unit of the keep-alive count for an owned guard homed at
    /// `home`: a credit of the calling thread's cache if it is `home`, else
    /// (a thread that owns no cache, striped mode, an object to drop on
    /// release) a unit of the count itself.
    ///
    /// # Safety
    ///
    /// A handle of this recycler is alive.
    pub(crate) unsafe fn take_unit(&self, home: Home<T>) {
        // SAFETY: the recycler is alive (a handle).
        let local = unsafe { home.local() };
        match Mine::if_owned(local) {
            // SAFETY: a handle is alive (the caller's guarantee).
            Some(mine) if self.stripes.is_none() => unsafe { mine.take_credit(&self.keep) },
            _ => self.keep.take(1),
        }
    }

    /// Gives an owned guard's unit of the keep-alive count back: as a
    /// credit of the calling thread's cache (claimed if need be), else
    /// straight to the count, which may let the state go: an associated
    /// function of a raw pointer, so that no reference to the state is a
    /// live argument when it is freed.
    ///
    /// # Safety
    ///
    /// `this` is a live recycler's state, kept alive by the unit given back;
    /// the caller touches nothing of it afterwards, and holds no reference
    /// into it as an argument of its own or of a caller of its.
    pub(crate) unsafe fn give_unit(this: *const Self) {
        let let_go = {
            // SAFETY: alive until the unit goes back, below.
            let shared = unsafe { &*this };
            shared.liveness.check();
            if shared.stripes.is_some() {
                shared.keep.give(1)
            } else {
                match shared.local_for_release() {
                    Some(mine) => mine.return_credit(&shared.keep),
                    None => shared.keep.give(1),
                }
            }
        };
        if let Some(let_go) = let_go {
            // SAFETY: no reference into the state is left (the caller's
            // guarantee for its own).
            unsafe { let_go.run() };
        }
    }
}
