//! [`RecycleVec`]: a vector whose `clear` keeps its elements, reset, for
//! [`push_reset`](RecycleVec::push_reset) to hand out again with their
//! allocations.

use std::{mem, slice};

use crate::recyclable::Recyclable;

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
/// the kept elements beyond a number; the [`ShrinkTo`](crate::ShrinkTo) impl (what
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

mod traits;

#[cfg(test)]
mod tests;
