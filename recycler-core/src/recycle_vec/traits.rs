//! The standard traits of [`RecycleVec`]: what a `Vec` user reaches for
//! (slices, comparisons, hashing, iteration, collecting), and
//! [`Recyclable`], whose `reset` keeps the elements.

use std::borrow::{Borrow, BorrowMut};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::mem::size_of;
use std::ops::{Deref, DerefMut};
use std::{slice, vec};

use super::RecycleVec;
use crate::recyclable::Recyclable;
use crate::shrink::ShrinkTo;

/// An empty vector, as [`RecycleVec::new`].
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let v: RecycleVec<String> = Default::default();
/// assert!(v.is_empty() && v.kept() == 0);
/// ```
impl<T> Default for RecycleVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// The live elements, as a slice: `v[i]`, `v.first()`, `v.contains(..)`.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let v: RecycleVec<u32> = [1, 2, 3].into_iter().collect();
/// assert_eq!((v[0], v.last(), v.contains(&2)), (1, Some(&3), true));
/// ```
impl<T> Deref for RecycleVec<T> {
    type Target = [T];

    #[inline]
    fn deref(&self) -> &[T] {
        self.as_slice()
    }
}

/// The live elements, as a slice to change: `v[i] = ..`, `v.sort()`.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let mut v: RecycleVec<u32> = [3, 1, 2].into_iter().collect();
/// v[0] = 4;
/// v.sort();
/// assert_eq!(v, [1, 2, 4]);
/// ```
impl<T> DerefMut for RecycleVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        self.as_mut_slice()
    }
}

/// The live elements.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// fn total(xs: impl AsRef<[u32]>) -> u32 {
///     xs.as_ref().iter().sum()
/// }
/// let v: RecycleVec<u32> = [1, 2, 3].into_iter().collect();
/// assert_eq!(total(&v), 6);
/// ```
impl<T> AsRef<[T]> for RecycleVec<T> {
    fn as_ref(&self) -> &[T] {
        self
    }
}

/// The live elements, to change.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// fn zero(mut xs: impl AsMut<[u32]>) {
///     xs.as_mut().fill(0);
/// }
/// let mut v: RecycleVec<u32> = [1, 2, 3].into_iter().collect();
/// zero(&mut v);
/// assert_eq!(v, [0, 0, 0]);
/// ```
impl<T> AsMut<[T]> for RecycleVec<T> {
    fn as_mut(&mut self) -> &mut [T] {
        self
    }
}

/// The live elements: comparisons and hashes agree with the slice's, so a
/// `RecycleVec` in a `HashSet` can be looked up by `&[T]`.
///
/// # Examples
///
/// ```
/// use std::collections::HashSet;
/// use recycler_core::RecycleVec;
///
/// let mut set = HashSet::new();
/// set.insert([1u8, 2].into_iter().collect::<RecycleVec<u8>>());
/// assert!(set.contains(&[1u8, 2][..]));
/// ```
impl<T> Borrow<[T]> for RecycleVec<T> {
    fn borrow(&self) -> &[T] {
        self
    }
}

/// The live elements, to change.
///
/// # Examples
///
/// ```
/// use std::borrow::BorrowMut;
/// use recycler_core::RecycleVec;
///
/// let mut v: RecycleVec<u8> = [1, 2].into_iter().collect();
/// let slice: &mut [u8] = v.borrow_mut();
/// slice[0] = 9;
/// assert_eq!(v, [9, 2]);
/// ```
impl<T> BorrowMut<[T]> for RecycleVec<T> {
    fn borrow_mut(&mut self) -> &mut [T] {
        self
    }
}

/// Lists the live elements, as a `Vec` does; the kept ones are not shown.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let mut v: RecycleVec<String> = RecycleVec::new();
/// v.push_reset().push_str("a");
/// v.push_reset().push_str("b");
/// v.truncate(1);
/// assert_eq!(format!("{v:?}"), r#"["a"]"#);
/// ```
impl<T: fmt::Debug> fmt::Debug for RecycleVec<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Clones the live elements into a new vector, which keeps none.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let mut v: RecycleVec<String> = RecycleVec::new();
/// v.push_reset().push_str("a");
/// v.push_reset().push_str("b");
/// v.truncate(1);
/// let c = v.clone();
/// assert_eq!(c, ["a"]);
/// assert_eq!(c.kept(), 0);
/// ```
impl<T: Clone> Clone for RecycleVec<T> {
    fn clone(&self) -> Self {
        let items = self.as_slice().to_vec();
        Self {
            len: items.len(),
            items,
        }
    }
}

/// Compares the live elements; what each keeps does not matter.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let mut a: RecycleVec<String> = RecycleVec::new();
/// a.push_reset().push_str("x");
/// a.push_reset().push_str("y");
/// a.truncate(1);
/// let b: RecycleVec<String> = ["x".to_owned()].into_iter().collect();
/// assert_eq!(a, b);
/// ```
impl<T: PartialEq<U>, U> PartialEq<RecycleVec<U>> for RecycleVec<T> {
    fn eq(&self, other: &RecycleVec<U>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// Equality of the live elements.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let a: RecycleVec<u8> = [1, 2].into_iter().collect();
/// assert!(a == a.clone());
/// ```
impl<T: Eq> Eq for RecycleVec<T> {}

/// Compares the live elements with a slice.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let v: RecycleVec<String> = ["a".to_owned()].into_iter().collect();
/// assert!(v == *["a"].as_slice());
/// ```
impl<T: PartialEq<U>, U> PartialEq<[U]> for RecycleVec<T> {
    fn eq(&self, other: &[U]) -> bool {
        self.as_slice() == other
    }
}

/// Compares the live elements with a slice.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let v: RecycleVec<String> = ["a".to_owned()].into_iter().collect();
/// assert_eq!(v, ["a"].as_slice());
/// ```
impl<T: PartialEq<U>, U> PartialEq<&[U]> for RecycleVec<T> {
    fn eq(&self, other: &&[U]) -> bool {
        self.as_slice() == *other
    }
}

/// Compares the live elements with an array.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let v: RecycleVec<String> = ["a".to_owned(), "b".to_owned()].into_iter().collect();
/// assert_eq!(v, ["a", "b"]);
/// ```
impl<T: PartialEq<U>, U, const N: usize> PartialEq<[U; N]> for RecycleVec<T> {
    fn eq(&self, other: &[U; N]) -> bool {
        self.as_slice() == other
    }
}

/// Compares the live elements with a `Vec`.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let v: RecycleVec<u8> = [1, 2].into_iter().collect();
/// assert_eq!(v, vec![1, 2]);
/// ```
impl<T: PartialEq<U>, U> PartialEq<Vec<U>> for RecycleVec<T> {
    fn eq(&self, other: &Vec<U>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

/// Hashes the live elements as their slice does.
///
/// # Examples
///
/// ```
/// use std::hash::BuildHasher;
/// use std::collections::hash_map::RandomState;
/// use recycler_core::RecycleVec;
///
/// let s = RandomState::new();
/// let mut v: RecycleVec<String> = ["a".to_owned(), "b".to_owned()].into_iter().collect();
/// v.truncate(1);
/// assert_eq!(s.hash_one(&v), s.hash_one(["a".to_owned()].as_slice()));
/// ```
impl<T: Hash> Hash for RecycleVec<T> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

/// Appends each value as [`push`](RecycleVec::push) does: into the places
/// of kept elements first, which are dropped.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let mut v: RecycleVec<u32> = RecycleVec::new();
/// v.extend([1, 2, 3]);
/// v.truncate(1);
/// v.extend([4, 5, 6]);
/// assert_eq!(v, [1, 4, 5, 6]);
/// assert_eq!(v.kept(), 0);
/// ```
impl<T> Extend<T> for RecycleVec<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        let wanted = self.len.saturating_add(iter.size_hint().0);
        self.items.reserve(wanted.saturating_sub(self.items.len()));
        for value in iter {
            self.push(value);
        }
    }
}

/// Appends a clone of each value, cloned into a kept element with
/// `Clone::clone_from` while there is one, so that it reuses what that
/// element's `clone_from` reuses (`String` and `Vec` reuse their buffer
/// when it is large enough; tuples clone anew), and as a new clone after.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let mut tags: RecycleVec<String> = RecycleVec::new();
/// tags.extend(&["urgent".to_owned(), "billing".to_owned()]);
/// let buf = tags[0].as_ptr();
/// tags.clear();
/// tags.extend(&["late".to_owned()]);
/// assert_eq!(tags, ["late"]);
/// assert_eq!(tags[0].as_ptr(), buf); // cloned into the kept string
/// ```
impl<'a, T: Clone + 'a> Extend<&'a T> for RecycleVec<T> {
    fn extend<I: IntoIterator<Item = &'a T>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        let wanted = self.len.saturating_add(iter.size_hint().0);
        self.items.reserve(wanted.saturating_sub(self.items.len()));
        for value in iter {
            if self.len < self.items.len() {
                // Live before it is written, so that a panicking
                // `clone_from` leaves no half-written element kept.
                self.len += 1;
                self.items[self.len - 1].clone_from(value);
            } else {
                self.items.push(value.clone());
                self.len += 1;
            }
        }
    }
}

/// Collects the values as live elements; nothing is kept.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let v: RecycleVec<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
/// assert_eq!((v.len(), v.kept()), (2, 0));
/// ```
impl<T> FromIterator<T> for RecycleVec<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let items: Vec<T> = iter.into_iter().collect();
        Self {
            len: items.len(),
            items,
        }
    }
}

/// Iterates over the live elements.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let v: RecycleVec<u32> = [1, 2, 3].into_iter().collect();
/// let mut sum = 0;
/// for x in &v {
///     sum += x;
/// }
/// assert_eq!(sum, 6);
/// ```
impl<'a, T> IntoIterator for &'a RecycleVec<T> {
    type Item = &'a T;
    type IntoIter = slice::Iter<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Iterates over the live elements, to change them.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let mut v: RecycleVec<u32> = [1, 2, 3].into_iter().collect();
/// for x in &mut v {
///     *x *= 10;
/// }
/// assert_eq!(v, [10, 20, 30]);
/// ```
impl<'a, T> IntoIterator for &'a mut RecycleVec<T> {
    type Item = &'a mut T;
    type IntoIter = slice::IterMut<'a, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter_mut()
    }
}

/// Moves the live elements out, in order; the kept ones are dropped.
///
/// # Examples
///
/// ```
/// use recycler_core::RecycleVec;
///
/// let mut v: RecycleVec<String> = RecycleVec::new();
/// v.push_reset().push_str("a");
/// v.push_reset().push_str("b");
/// v.truncate(1);
/// let owned: Vec<String> = v.into_iter().collect();
/// assert_eq!(owned, ["a"]);
/// ```
impl<T> IntoIterator for RecycleVec<T> {
    type Item = T;
    type IntoIter = vec::IntoIter<T>;

    fn into_iter(mut self) -> Self::IntoIter {
        self.items.truncate(self.len);
        self.items.into_iter()
    }
}

/// Resets and keeps every element ([`clear`](RecycleVec::clear)).
/// `retained_bytes` counts the vector's own buffer (`capacity() ×
/// size_of::<T>()`) and the `retained_bytes` of every element, the kept
/// ones included.
///
/// # Examples
///
/// ```
/// use std::mem::size_of;
/// use recycler_core::{Recyclable, RecycleVec};
///
/// let mut v: RecycleVec<String> = RecycleVec::with_capacity(4);
/// v.push_reset().push_str(&"x".repeat(100));
/// v.reset();
/// assert_eq!((v.len(), v.kept()), (0, 1));
/// assert_eq!(v.retained_bytes(), v.capacity() * size_of::<String>() + 100);
/// ```
impl<T: Recyclable> Recyclable for RecycleVec<T> {
    #[inline]
    fn reset(&mut self) {
        self.clear();
    }

    fn retained_bytes(&self) -> usize {
        self.items.iter().map(T::retained_bytes).fold(
            self.items.capacity().saturating_mul(size_of::<T>()),
            usize::saturating_add,
        )
    }
}

/// Resets and keeps every element, then drops kept elements until at most
/// `max_capacity` are kept and shrinks the vector's own buffer to at most
/// `max_capacity` elements: what `#[recycle(shrink_to = N)]` on a
/// `RecycleVec` field does. The kept elements keep their own allocations.
///
/// # Examples
///
/// ```
/// use recycler_core::{RecycleVec, ShrinkTo};
///
/// let mut v: RecycleVec<String> = RecycleVec::new();
/// for _ in 0..1000 {
///     v.push_reset().push_str("a burst");
/// }
/// v.clear_and_shrink_to(16);
/// assert!(v.is_empty());
/// assert_eq!(v.kept(), 16);
/// assert_eq!(v.capacity(), 16);
/// ```
impl<T: Recyclable> ShrinkTo for RecycleVec<T> {
    fn clear_and_shrink_to(&mut self, max_capacity: usize) {
        self.clear();
        self.items.truncate(max_capacity);
        self.items.shrink_to(max_capacity);
    }
}
