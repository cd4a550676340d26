//! [`RecycleVec`]: a vector whose `clear` keeps its elements, reset, for
//! [`push_reset`](RecycleVec::push_reset) to hand out again with their
//! allocations.

use std::borrow::{Borrow, BorrowMut};
use std::fmt;
use std::hash::{Hash, Hasher};
use std::mem::{self, size_of};
use std::ops::{Deref, DerefMut};
use std::{slice, vec};

use crate::recyclable::Recyclable;
use crate::shrink::ShrinkTo;

/// A vector whose [`clear`](RecycleVec::clear) keeps its elements, reset, for
/// [`push_reset`](RecycleVec::push_reset) to hand out again: a `Vec<String>`
/// that keeps its strings' buffers as well as its own.
///
/// Resetting a `Vec<String>` or a `HashMap<String, String>` keeps the
/// container's allocation but drops every element, so a pooled object with
/// such a field allocates its strings again each time it is used. A
/// `RecycleVec<T>` holds its live elements, which it dereferences to (a
/// `[T]`, so indexing, `iter`, `first`, `sort` and the rest work on them),
/// and after them the elements it keeps, which no method shows.
/// `push_reset` makes the first kept element live and returns it; only when
/// none is kept does it make one with `T::default()`. Once a pooled object
/// has held as many elements as it needs, filling it again allocates
/// nothing, as long as each element's own allocations are large enough.
///
/// # When elements are reset
///
/// When they are let go of: [`clear`](RecycleVec::clear),
/// [`truncate`](RecycleVec::truncate) and
/// [`reset`](Recyclable::reset) reset each element they cut off before
/// they return. What is kept is therefore always reset, `push_reset`
/// only hands out an element (it resets nothing), and in a pooled object
/// all the work of resetting is done where the object's `reset` runs: on
/// the thread that releases it, as [`Recycler`](crate::Recycler) promises.
/// If an element's `reset` panics, the panic reaches the caller and that
/// element stays live (the ones cut off before it are kept, reset), so what
/// is kept is still reset.
///
/// # Bounding what is kept
///
/// A `RecycleVec` keeps as many elements as it has held at once, and each
/// kept element keeps the allocations it grew (a `String` its buffer, at the
/// largest size it reached). [`shrink_kept`](RecycleVec::shrink_kept) drops
/// the kept elements beyond a number; the [`ShrinkTo`] impl (what
/// `#[recycle(shrink_to = N)]` calls) clears it and keeps at most `N`
/// elements. Both bound how many elements are kept, not how large each one
/// is; [`retained_bytes`](Recyclable::retained_bytes) counts the kept
/// elements' allocations, so a recycler's
/// [`max_idle_bytes`](crate::RecyclerBuilder::max_idle_bytes) sees them.
///
/// # Examples
///
/// Headers as name–value pairs, whose strings are reused from one request
/// to the next, with a lookup by name (a linear search, cheap over the
/// handful of headers a request carries):
///
/// ```
/// use recycler_core::{Recyclable, RecycleVec, Recycler};
///
/// #[derive(Default, Recyclable)]
/// struct Request {
///     path: String,
///     headers: RecycleVec<(String, String)>,
/// }
///
/// impl Request {
///     fn add_header(&mut self, name: &str, value: &str) {
///         let (n, v) = self.headers.push_reset(); // a kept pair, or a new one
///         n.push_str(name);
///         v.push_str(value);
///     }
///
///     fn header(&self, name: &str) -> Option<&str> {
///         self.headers
///             .iter()
///             .find(|(n, _)| n.eq_ignore_ascii_case(name))
///             .map(|(_, v)| v.as_str())
///     }
/// }
///
/// let pool: Recycler<Request> = Recycler::new();
/// let mut req = pool.get();
/// req.path.push_str("/index.html");
/// req.add_header("Host", "example.com");
/// req.add_header("Accept", "*/*");
/// assert_eq!(req.header("host"), Some("example.com"));
/// let host = req.headers[0].1.as_ptr();
/// drop(req); // reset: the pairs are cleared and kept
///
/// let mut req = pool.get();
/// assert!(req.headers.is_empty());
/// assert_eq!(req.headers.kept(), 2);
/// req.add_header("Host", "example.org");
/// assert_eq!(req.headers[0].1.as_ptr(), host); // the same string buffer
/// ```
pub struct RecycleVec<T> {
    /// The live elements, `items[..len]`, then the kept ones,
    /// `items[len..]`, every one of which is reset.
    items: Vec<T>,
    /// How many of `items` are live; at most `items.len()`.
    len: usize,
}

impl<T> RecycleVec<T> {
    /// An empty vector that keeps nothing and has not allocated.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// static EMPTY: RecycleVec<String> = RecycleVec::new();
    /// let v: RecycleVec<String> = RecycleVec::new();
    /// assert_eq!((v.len(), v.kept(), v.capacity()), (0, 0, 0));
    /// assert!(EMPTY.is_empty());
    /// ```
    #[must_use]
    pub const fn new() -> Self {
        Self {
            items: Vec::new(),
            len: 0,
        }
    }

    /// An empty vector with room for at least `capacity` elements, live and
    /// kept together, before its own buffer grows. It makes no elements.
    ///
    /// # Panics
    ///
    /// As `Vec::with_capacity`: if the capacity exceeds `isize::MAX` bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let v: RecycleVec<String> = RecycleVec::with_capacity(8);
    /// assert!(v.capacity() >= 8);
    /// assert_eq!((v.len(), v.kept()), (0, 0));
    /// ```
    #[must_use]
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            items: Vec::with_capacity(capacity),
            len: 0,
        }
    }

    /// How many elements are live.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<String> = RecycleVec::new();
    /// v.push_reset().push_str("a");
    /// v.push_reset().push_str("b");
    /// assert_eq!(v.len(), 2);
    /// v.clear();
    /// assert_eq!(v.len(), 0);
    /// ```
    #[inline]
    #[must_use]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no element is live (some may be kept).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<String> = RecycleVec::new();
    /// assert!(v.is_empty());
    /// v.push_reset();
    /// assert!(!v.is_empty());
    /// v.clear();
    /// assert!(v.is_empty() && v.kept() == 1);
    /// ```
    #[inline]
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many elements are kept, reset, for `push_reset` to hand out
    /// before it makes a new one.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<String> = RecycleVec::new();
    /// for _ in 0..3 {
    ///     v.push_reset();
    /// }
    /// assert_eq!(v.kept(), 0);
    /// v.truncate(1);
    /// assert_eq!((v.len(), v.kept()), (1, 2));
    /// v.push_reset();
    /// assert_eq!((v.len(), v.kept()), (2, 1));
    /// ```
    #[inline]
    #[must_use]
    pub fn kept(&self) -> usize {
        self.items.len() - self.len
    }

    /// How many elements, live and kept together, the vector's own buffer
    /// holds before it grows (as `Vec::capacity`).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<u64> = RecycleVec::with_capacity(4);
    /// v.push_reset();
    /// v.clear();
    /// assert!(v.capacity() >= 4);
    /// assert!(v.capacity() >= v.len() + v.kept());
    /// ```
    #[inline]
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.items.capacity()
    }

    /// The live elements.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let v: RecycleVec<u32> = [1, 2, 3].into_iter().collect();
    /// assert_eq!(v.as_slice(), [1, 2, 3]);
    /// ```
    #[inline]
    #[must_use]
    pub fn as_slice(&self) -> &[T] {
        &self.items[..self.len]
    }

    /// The live elements, to change.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<u32> = [3, 1, 2].into_iter().collect();
    /// v.as_mut_slice().sort();
    /// assert_eq!(v, [1, 2, 3]);
    /// ```
    #[inline]
    #[must_use]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.items[..self.len]
    }

    /// An iterator over the live elements.
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
    /// assert_eq!(v.iter().collect::<Vec<_>>(), ["a"]); // the kept one is not shown
    /// ```
    #[inline]
    pub fn iter(&self) -> slice::Iter<'_, T> {
        self.as_slice().iter()
    }

    /// An iterator over the live elements that lets you change them.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<String> = RecycleVec::new();
    /// v.push_reset().push_str("a");
    /// v.push_reset().push_str("b");
    /// for s in v.iter_mut() {
    ///     s.push('!');
    /// }
    /// assert_eq!(v, ["a!", "b!"]);
    /// ```
    #[inline]
    pub fn iter_mut(&mut self) -> slice::IterMut<'_, T> {
        self.as_mut_slice().iter_mut()
    }

    /// Appends `value` as a live element.
    ///
    /// `value` takes the place of the first kept element, if there is one,
    /// which is dropped (with its allocations), so that pushing values
    /// never makes the vector keep more elements than it has held at once.
    /// To reuse a kept element's allocations, fill the one
    /// [`push_reset`](RecycleVec::push_reset) returns instead.
    ///
    /// # Panics
    ///
    /// As `Vec::push`, when nothing is kept: if the new capacity exceeds
    /// `isize::MAX` bytes. A panic in the dropped element's `Drop` reaches
    /// the caller after `value` is in place.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<String> = RecycleVec::new();
    /// v.push("a".to_owned());
    /// v.push("b".to_owned());
    /// v.clear();
    /// assert_eq!(v.kept(), 2);
    /// v.push("c".to_owned()); // takes a kept element's place
    /// assert_eq!((v.len(), v.kept()), (1, 1));
    /// assert_eq!(v, ["c"]);
    /// ```
    pub fn push(&mut self, value: T) {
        if let Some(slot) = self.items.get_mut(self.len) {
            let old = mem::replace(slot, value);
            self.len += 1;
            drop(old);
        } else {
            self.items.push(value);
            self.len += 1;
        }
    }

    /// Removes the last live element and returns it, or `None` if none is
    /// live. The element leaves the vector with its allocations, as from
    /// `Vec::pop`; the kept elements stay. To drop the last element and
    /// keep it for reuse instead, call
    /// [`truncate(len - 1)`](RecycleVec::truncate).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<String> = RecycleVec::new();
    /// v.push_reset().push_str("a");
    /// v.push_reset().push_str("b");
    /// v.push_reset().push_str("c");
    /// v.truncate(2); // "c" is kept, reset
    /// assert_eq!(v.pop().as_deref(), Some("b")); // "b" is the caller's now
    /// assert_eq!((v.len(), v.kept()), (1, 1));
    /// assert_eq!(v.pop().as_deref(), Some("a"));
    /// assert_eq!(v.pop(), None);
    /// assert_eq!(v.kept(), 1);
    /// ```
    pub fn pop(&mut self) -> Option<T> {
        self.len = self.len.checked_sub(1)?;
        // The last kept element, if any, moves into the popped one's place,
        // which is now the first kept place.
        Some(self.items.swap_remove(self.len))
    }

    /// Drops kept elements, with their allocations, until at most
    /// `max_kept` are kept. The live elements and the vector's own buffer
    /// are left as they are.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<String> = RecycleVec::new();
    /// for _ in 0..100 {
    ///     v.push_reset().push_str("a burst");
    /// }
    /// v.clear();
    /// assert_eq!(v.kept(), 100);
    /// v.shrink_kept(8);
    /// assert_eq!(v.kept(), 8);
    /// v.shrink_kept(16); // already fewer: nothing changes
    /// assert_eq!(v.kept(), 8);
    /// ```
    pub fn shrink_kept(&mut self, max_kept: usize) {
        self.items.truncate(self.len.saturating_add(max_kept));
    }
}

impl<T: Recyclable> RecycleVec<T> {
    /// Keeps the first `len` live elements and lets go of the rest: each is
    /// reset and kept for [`push_reset`](RecycleVec::push_reset). Nothing
    /// happens if `len` is at least [`len()`](RecycleVec::len).
    ///
    /// # Panics
    ///
    /// Only if an element's `reset` panics; that element stays live, and
    /// the ones after it are kept, reset.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<String> = RecycleVec::new();
    /// v.push_reset().push_str("a");
    /// v.push_reset().push_str("b");
    /// v.push_reset().push_str("c");
    /// v.truncate(1);
    /// assert_eq!(v, ["a"]);
    /// assert_eq!(v.kept(), 2);
    /// assert!(v.push_reset().is_empty()); // "c"'s string, reset
    /// v.truncate(10); // longer than it is: nothing happens
    /// assert_eq!(v.len(), 2);
    /// ```
    pub fn truncate(&mut self, len: usize) {
        // From the end, one at a time, so that a panicking `reset` leaves
        // every element beyond `self.len` reset.
        while self.len > len {
            self.items[self.len - 1].reset();
            self.len -= 1;
        }
    }

    /// Lets go of every live element: each is reset and kept for
    /// [`push_reset`](RecycleVec::push_reset). The same as
    /// [`truncate(0)`](RecycleVec::truncate) and as
    /// [`Recyclable::reset`].
    ///
    /// # Panics
    ///
    /// Only if an element's `reset` panics, as for `truncate`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut v: RecycleVec<Vec<u8>> = RecycleVec::new();
    /// v.push_reset().extend_from_slice(&[0; 1024]);
    /// v.clear();
    /// assert!(v.is_empty());
    /// assert_eq!(v.kept(), 1);
    /// let buf = v.push_reset();
    /// assert!(buf.is_empty() && buf.capacity() >= 1024); // kept, reset
    /// ```
    pub fn clear(&mut self) {
        self.truncate(0);
    }
}

impl<T: Recyclable + Default> RecycleVec<T> {
    /// Appends an element and returns it to fill: the first kept element
    /// (reset, with the allocations it kept), or, if none is kept, a new
    /// `T::default()`.
    ///
    /// # Panics
    ///
    /// As `Vec::push`, when nothing is kept: if the new capacity exceeds
    /// `isize::MAX` bytes. A panic in `T::default` reaches the caller and
    /// changes nothing.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::RecycleVec;
    ///
    /// let mut tags: RecycleVec<String> = RecycleVec::new();
    /// tags.push_reset().push_str("urgent"); // a new String
    /// let buf = tags[0].as_ptr();
    /// tags.clear();
    ///
    /// let tag = tags.push_reset(); // the kept one, reset
    /// assert!(tag.is_empty());
    /// tag.push_str("later");
    /// assert_eq!(tags[0].as_ptr(), buf); // its buffer, reused
    /// ```
    pub fn push_reset(&mut self) -> &mut T {
        if self.len == self.items.len() {
            self.items.push(T::default());
        }
        self.len += 1;
        &mut self.items[self.len - 1]
    }
}

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

#[cfg(test)]
mod tests;
