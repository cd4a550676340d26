//! The traits that make a guard stand for its object as a `Box<T>` does,
//! written once for both guards ([`Pooled`] and [`OwnedPooled`]).

use std::borrow::{Borrow, BorrowMut};
use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::guard::Pooled;
use crate::guard_docs::guard_docs;
use crate::owned::OwnedPooled;
use crate::recyclable::Recyclable;

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
            /// The object, as [`Deref`](std::ops::Deref) gives it.
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
            /// As for [`Pooled`]: the object, as [`Deref`](std::ops::Deref) gives it.
            item:
            impl<T: Recyclable> AsRef<T> for $guard {
                #[inline]
                fn as_ref(&self) -> &T {
                    self
                }
            }
        }

        guard_docs! {$kind
            /// The object, as [`DerefMut`](std::ops::DerefMut) gives it.
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
            /// As for [`Pooled`]: the object, as [`DerefMut`](std::ops::DerefMut) gives it.
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
