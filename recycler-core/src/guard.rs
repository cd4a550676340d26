//! The guards: [`Pooled`] borrows its recycler, [`OwnedPooled`] holds it in
//! an `Arc`. Both return their object to the pool when dropped.

use std::borrow::{Borrow, BorrowMut};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::ptr::{self, NonNull};

use crate::home::Home;
use crate::loom::Arc;
use crate::recyclable::Recyclable;
use crate::recycler::Recycler;
use crate::shared::Shared;

/// An object on loan from a [`Recycler`]; returns to the pool when dropped.
///
/// Made by [`Recycler::get`] and [`Recycler::try_get`]. Dereferences to `T`,
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

/// An object on loan from a [`Recycler`] in an `Arc`; `'static`, so it can
/// move into threads and tasks. Returns to the pool when dropped.
///
/// Made by [`Recycler::get_owned`] and [`Recycler::try_get_owned`] on an
/// `Arc<Recycler<T>>`, or by a [`RecyclerHandle`](crate::RecyclerHandle)
/// (for a recycler that is a plain field of a shared struct); otherwise the
/// same as [`Pooled`], with the same traits. The guard keeps the recycler
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

/// One item of a pair that a macro writes for both guards of a kind (the
/// borrowed guard and its owned twin), with the docs of the guard at hand:
///
/// ```text
/// guard_docs! {$kind
///     /// The borrowed guard's docs, with the examples.
///     owned:
///     /// The owned guard's: a line that links to them.
///     item:
///     impl ... for $guard { ... }
/// }
/// ```
///
/// `$kind` is `borrowed` or `owned`. Each doc example is written once, on
/// the borrowed guard, and runs once; the tests in `tests/` exercise the
/// owned guard's impls.
macro_rules! guard_docs {
    (borrowed $(#[$docs:meta])* owned: $(#[$link:meta])* item: $($item:tt)*) => {
        $(#[$docs])*
        $($item)*
    };
    (owned $(#[$docs:meta])* owned: $(#[$link:meta])* item: $($item:tt)*) => {
        $(#[$link])*
        $($item)*
    };
}

pub(crate) use guard_docs;

/// The traits that make a guard stand for its object as a `Box<T>` does:
/// views (`AsRef`, `AsMut`, `Borrow`, `BorrowMut`), comparisons and hashing
/// that look through the guard to the object (`PartialEq`, `Eq`,
/// `PartialOrd`, `Ord`, `Hash`, with `Box`'s bounds: a guard compares with
/// another guard of the same type, never with a bare `T`), and
/// `fmt::Pointer`, the object's address. `Borrow<T>` holds to its contract:
/// a guard compares and hashes exactly as its object, so a `HashSet` or a
/// `BTreeSet` of guards can be searched by `&T`.
///
/// `$guard` is the guard type over `T`, and `$kind` says which of the two it
/// is, for `guard_docs!`.
macro_rules! box_like {
    ($kind:ident $guard:ty) => {
        guard_docs! {$kind
            /// The object, as [`Deref`] gives it.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::Recycler;
            ///
            /// fn len_of(s: impl AsRef<String>) -> usize {
            ///     s.as_ref().len()
            /// }
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let mut s = pool.get();
            /// s.push_str("abc");
            /// assert_eq!(len_of(&s), 3);
            /// ```
            owned:
            /// As for [`Pooled`]: the object, as [`Deref`] gives it.
            item:
            impl<T: Recyclable> AsRef<T> for $guard {
                #[inline]
                fn as_ref(&self) -> &T {
                    self
                }
            }
        }

        guard_docs! {$kind
            /// The object, as [`DerefMut`] gives it.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::Recycler;
            ///
            /// fn shout(mut s: impl AsMut<String>) {
            ///     s.as_mut().make_ascii_uppercase();
            /// }
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let mut s = pool.get();
            /// s.push_str("hi");
            /// shout(&mut s);
            /// assert_eq!(*s, "HI");
            /// ```
            owned:
            /// As for [`Pooled`]: the object, as [`DerefMut`] gives it.
            item:
            impl<T: Recyclable> AsMut<T> for $guard {
                #[inline]
                fn as_mut(&mut self) -> &mut T {
                    self
                }
            }
        }

        guard_docs! {$kind
            /// The object. The guard compares, orders and hashes as the object
            /// does, so collections of guards can be searched by `&T`, as
            /// collections of `Box<T>` can. Only by `&T`: a guard of a `String`
            /// does not borrow as a `str` (nor does a `Box<String>`).
            ///
            /// # Examples
            ///
            /// ```
            /// use std::collections::HashSet;
            /// use recycler_core::Recycler;
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let mut a = pool.get();
            /// a.push_str("a");
            /// let set = HashSet::from([a]);
            /// assert!(set.contains(&String::from("a")));
            /// assert!(!set.contains(&String::from("b")));
            /// ```
            ///
            /// Searching by `&str` does not compile:
            ///
            /// ```compile_fail,E0277
            /// use std::collections::HashSet;
            /// use recycler_core::Recycler;
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let set = HashSet::from([pool.get()]);
            /// set.contains("");
            /// ```
            owned:
            /// As for [`Pooled`]: the object; a set of guards is searched by `&T`.
            item:
            impl<T: Recyclable> Borrow<T> for $guard {
                #[inline]
                fn borrow(&self) -> &T {
                    self
                }
            }
        }

        guard_docs! {$kind
            /// The object, mutably.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::borrow::BorrowMut;
            /// use recycler_core::Recycler;
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let mut s = pool.get();
            /// let inner: &mut String = s.borrow_mut();
            /// inner.push('x');
            /// assert_eq!(*s, "x");
            /// ```
            owned:
            /// As for [`Pooled`]: the object, mutably.
            item:
            impl<T: Recyclable> BorrowMut<T> for $guard {
                #[inline]
                fn borrow_mut(&mut self) -> &mut T {
                    self
                }
            }
        }

        guard_docs! {$kind
            /// Two guards are equal when their objects are, as two boxes are.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::Recycler;
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let (mut a, mut b) = (pool.get(), pool.get());
            /// a.push_str("x");
            /// assert_ne!(a, b);
            /// b.push_str("x");
            /// assert_eq!(a, b);
            /// ```
            owned:
            /// As for [`Pooled`]: two guards are equal when their objects are.
            item:
            impl<T: Recyclable + PartialEq> PartialEq for $guard {
                #[inline]
                fn eq(&self, other: &Self) -> bool {
                    PartialEq::eq(&**self, &**other)
                }

                #[inline]
                #[allow(
                    clippy::partialeq_ne_impl,
                    reason = "forwards `T`'s own `ne`, as `Box` does"
                )]
                fn ne(&self, other: &Self) -> bool {
                    PartialEq::ne(&**self, &**other)
                }
            }
        }

        guard_docs! {$kind
            /// Equality is an equivalence when the objects' is.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::Recycler;
            ///
            /// fn same<E: Eq>(a: &E, b: &E) -> bool {
            ///     a == b
            /// }
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let (a, b) = (pool.get(), pool.get());
            /// assert!(same(&a, &b)); // both empty
            /// ```
            owned:
            /// As for [`Pooled`]: equality is an equivalence when the objects' is.
            item:
            impl<T: Recyclable + Eq> Eq for $guard {}
        }

        guard_docs! {$kind
            /// Guards order as their objects do.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::Recycler;
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let (mut a, mut b) = (pool.get(), pool.get());
            /// a.push_str("apple");
            /// b.push_str("banana");
            /// assert!(a < b);
            /// assert_eq!(a.partial_cmp(&b), Some(std::cmp::Ordering::Less));
            /// ```
            owned:
            /// As for [`Pooled`]: guards order as their objects do.
            item:
            impl<T: Recyclable + PartialOrd> PartialOrd for $guard {
                #[inline]
                fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
                    PartialOrd::partial_cmp(&**self, &**other)
                }

                #[inline]
                fn lt(&self, other: &Self) -> bool {
                    PartialOrd::lt(&**self, &**other)
                }

                #[inline]
                fn le(&self, other: &Self) -> bool {
                    PartialOrd::le(&**self, &**other)
                }

                #[inline]
                fn gt(&self, other: &Self) -> bool {
                    PartialOrd::gt(&**self, &**other)
                }

                #[inline]
                fn ge(&self, other: &Self) -> bool {
                    PartialOrd::ge(&**self, &**other)
                }
            }
        }

        guard_docs! {$kind
            /// Guards order as their objects do, so a list of them sorts by
            /// object.
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::Recycler;
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let mut names: Vec<_> = ["carol", "alice", "bob"]
            ///     .into_iter()
            ///     .map(|name| {
            ///         let mut s = pool.get();
            ///         s.push_str(name);
            ///         s
            ///     })
            ///     .collect();
            /// names.sort();
            /// let sorted: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
            /// assert_eq!(sorted, ["alice", "bob", "carol"]);
            /// ```
            owned:
            /// As for [`Pooled`]: guards order as their objects do.
            item:
            impl<T: Recyclable + Ord> Ord for $guard {
                #[inline]
                fn cmp(&self, other: &Self) -> Ordering {
                    Ord::cmp(&**self, &**other)
                }
            }
        }

        guard_docs! {$kind
            /// Hashes the object, exactly as hashing `T` does (as `Box` does),
            /// which [`Borrow<T>`] requires.
            ///
            /// # Examples
            ///
            /// ```
            /// use std::hash::{BuildHasher, RandomState};
            /// use recycler_core::Recycler;
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let mut s = pool.get();
            /// s.push_str("key");
            /// let hasher = RandomState::new();
            /// assert_eq!(hasher.hash_one(&s), hasher.hash_one(String::from("key")));
            /// ```
            owned:
            /// As for [`Pooled`]: hashes the object, exactly as hashing `T` does.
            item:
            impl<T: Recyclable + Hash> Hash for $guard {
                #[inline]
                fn hash<H: Hasher>(&self, state: &mut H) {
                    (**self).hash(state);
                }
            }
        }

        guard_docs! {$kind
            /// The object's address, as `Box` formats it (the object does not
            /// move while the guard holds it).
            ///
            /// # Examples
            ///
            /// ```
            /// use recycler_core::Recycler;
            ///
            /// let pool: Recycler<String> = Recycler::new();
            /// let s = pool.get();
            /// assert_eq!(format!("{s:p}"), format!("{:p}", &*s));
            /// ```
            owned:
            /// As for [`Pooled`]: the object's address.
            item:
            impl<T: Recyclable> fmt::Pointer for $guard {
                fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    let ptr: *const T = &**self;
                    fmt::Pointer::fmt(&ptr, f)
                }
            }
        }
    };
}

box_like!(borrowed Pooled<'_, T>);
box_like!(owned OwnedPooled<T>);

mod forward;

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

    // As `Box<T>`: the views and comparisons of `T`, with `T`'s bounds.
    assert_impl_all!(
        Pooled<'static, String>: AsRef<String>, AsMut<String>, Borrow<String>,
        BorrowMut<String>, Eq, Ord, Hash, fmt::Display, fmt::Pointer
    );
    assert_impl_all!(
        OwnedPooled<String>: AsRef<String>, AsMut<String>, Borrow<String>,
        BorrowMut<String>, Eq, Ord, Hash, fmt::Display, fmt::Pointer
    );
    // Only `T` itself: a guard does not borrow as what `T` borrows as, and
    // compares with guards, not with bare objects (as `Box<String>`).
    assert_not_impl_any!(Pooled<'static, String>: Borrow<str>, AsRef<str>, PartialEq<String>);
    assert_not_impl_any!(OwnedPooled<String>: Borrow<str>, PartialEq<String>);
    assert_not_impl_any!(Box<String>: Borrow<str>, PartialEq<String>);
    // `f64` is `PartialEq` and `PartialOrd` only, and so are its guards.
    assert_impl_all!(Pooled<'static, Vec<f64>>: PartialEq, PartialOrd);
    assert_not_impl_any!(Pooled<'static, Vec<f64>>: Eq, Ord, Hash);
    assert_not_impl_any!(OwnedPooled<Vec<f64>>: Eq, Ord, Hash);
    // `Local` has no comparisons: neither have its guards.
    assert_not_impl_any!(Pooled<'static, Local>: PartialEq, PartialOrd, fmt::Display);
}
