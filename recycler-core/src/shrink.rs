//! [`ShrinkTo`]: empty a collection and cap the capacity it keeps, so that
//! one huge value cannot bloat a pool for ever. `#[recycle(shrink_to = N)]`
//! calls it.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

use crate::recyclable::Recyclable;

/// A collection that can be emptied and then shrunk to a bounded capacity.
///
/// [`Recyclable::reset`] keeps a collection's whole allocation, which is what
/// makes reuse cheap, but it also means that one huge message keeps a huge
/// buffer alive in the pool for as long as the pool lives.
/// [`clear_and_shrink_to`](ShrinkTo::clear_and_shrink_to) empties the
/// collection and then frees capacity beyond a limit. A field marked
/// `#[recycle(shrink_to = N)]` in a `#[derive(Recyclable)]` type is reset
/// this way.
///
/// The limit counts elements for the collections and bytes for `String` (and
/// `bytes::BytesMut`, with the `bytes` feature), as their `capacity()` does.
/// Capacity at or under the limit is kept as it is, without reallocating.
/// `BTreeMap` and `BTreeSet` have no capacity: clearing them frees every
/// node, so for them this is `clear`. A [`RecycleVec`](crate::RecycleVec)
/// keeps at most the limit's number of elements, reset, and as many places
/// in its own buffer.
///
/// Implement it for your own collections (it requires [`Recyclable`], whose
/// [`retained_bytes`](Recyclable::retained_bytes) the derive still uses for
/// such a field).
///
/// # Examples
///
/// ```
/// use recycler_core::ShrinkTo;
///
/// let mut small: Vec<u8> = Vec::with_capacity(100);
/// small.extend_from_slice(b"GET / HTTP/1.1");
/// small.clear_and_shrink_to(4096);
/// assert!(small.is_empty());
/// assert_eq!(small.capacity(), 100); // under the limit: kept
///
/// let mut huge: Vec<u8> = vec![0; 1 << 20];
/// huge.clear_and_shrink_to(4096);
/// assert!(huge.is_empty());
/// assert_eq!(huge.capacity(), 4096); // over the limit: shrunk
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be shrunk by `#[recycle(shrink_to = N)]`",
    label = "`{Self}` does not implement `ShrinkTo`",
    note = "`shrink_to` works on `Vec`, `VecDeque`, `String`, `HashMap`, `HashSet`, `BinaryHeap`, `BTreeMap`, `BTreeSet`, `RecycleVec` and, with the `bytes` feature, `BytesMut`; for another type, implement `recycler_core::ShrinkTo` or use `#[recycle(with = path::to::fn)]`"
)]
pub trait ShrinkTo: Recyclable {
    /// Removes every element, then shrinks the capacity to at most
    /// `max_capacity`, keeping it as it is if it is already at most that.
    ///
    /// Collections of zero-sized elements never allocate and report a
    /// capacity of `usize::MAX`, which no shrinking changes.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::ShrinkTo;
    ///
    /// let mut name = String::with_capacity(1024);
    /// name.push_str("orders.eu-west");
    /// name.clear_and_shrink_to(64);
    /// assert!(name.is_empty());
    /// assert_eq!(name.capacity(), 64);
    /// ```
    fn clear_and_shrink_to(&mut self, max_capacity: usize);
}

/// Shrinks an emptied collection until its capacity is at most `max`.
///
/// `shrink_to(n)` keeps at least `n`. Vectors then hold exactly `n`, but hash
/// tables round up to a whole number of buckets, which can exceed `max`; for
/// them the request is halved until the table fits (an empty table shrunk to
/// 0 frees its allocation, so this ends). Empty tables rehash nothing, so the
/// retries cost one small allocation each.
fn shrink_emptied<C: ?Sized>(
    collection: &mut C,
    max: usize,
    capacity: fn(&C) -> usize,
    shrink_to: fn(&mut C, usize),
) {
    if capacity(collection) <= max {
        return;
    }
    let mut request = max;
    shrink_to(collection, request);
    while capacity(collection) > max && request > 0 {
        request /= 2;
        shrink_to(collection, request);
    }
}

/// Clears the vector, then shrinks it to `max_capacity` elements if it holds
/// more.
///
/// # Examples
///
/// ```
/// use recycler_core::ShrinkTo;
///
/// let mut v: Vec<u32> = (0..10_000).collect();
/// v.clear_and_shrink_to(256);
/// assert!(v.is_empty());
/// assert_eq!(v.capacity(), 256);
/// ```
impl<T> ShrinkTo for Vec<T> {
    fn clear_and_shrink_to(&mut self, max_capacity: usize) {
        self.clear();
        shrink_emptied(self, max_capacity, Vec::capacity, Vec::shrink_to);
    }
}

/// Clears the deque, then shrinks it to `max_capacity` elements if it holds
/// more.
///
/// # Examples
///
/// ```
/// use std::collections::VecDeque;
/// use recycler_core::ShrinkTo;
///
/// let mut q: VecDeque<u64> = (0..10_000).collect();
/// q.clear_and_shrink_to(64);
/// assert!(q.is_empty());
/// assert!(q.capacity() <= 64);
/// ```
impl<T> ShrinkTo for VecDeque<T> {
    fn clear_and_shrink_to(&mut self, max_capacity: usize) {
        self.clear();
        shrink_emptied(self, max_capacity, VecDeque::capacity, VecDeque::shrink_to);
    }
}

/// Clears the string, then shrinks it to `max_capacity` bytes if it holds
/// more.
///
/// # Examples
///
/// ```
/// use recycler_core::ShrinkTo;
///
/// let mut s = "x".repeat(1 << 16);
/// s.clear_and_shrink_to(512);
/// assert!(s.is_empty());
/// assert_eq!(s.capacity(), 512);
/// ```
impl ShrinkTo for String {
    fn clear_and_shrink_to(&mut self, max_capacity: usize) {
        self.clear();
        shrink_emptied(self, max_capacity, String::capacity, String::shrink_to);
    }
}

/// Clears the map, then shrinks it so that its capacity is at most
/// `max_capacity` entries.
///
/// The table's capacity comes in steps (a whole number of buckets), so the
/// result can be smaller than `max_capacity`, never larger.
///
/// # Examples
///
/// ```
/// use std::collections::HashMap;
/// use recycler_core::ShrinkTo;
///
/// let mut m: HashMap<u32, u32> = (0..10_000).map(|i| (i, i)).collect();
/// m.clear_and_shrink_to(100);
/// assert!(m.is_empty());
/// assert!(m.capacity() <= 100);
/// ```
impl<K: Eq + Hash, V, S: BuildHasher> ShrinkTo for HashMap<K, V, S> {
    fn clear_and_shrink_to(&mut self, max_capacity: usize) {
        self.clear();
        shrink_emptied(self, max_capacity, HashMap::capacity, HashMap::shrink_to);
    }
}

/// Clears the set, then shrinks it so that its capacity is at most
/// `max_capacity` elements.
///
/// The table's capacity comes in steps (a whole number of buckets), so the
/// result can be smaller than `max_capacity`, never larger.
///
/// # Examples
///
/// ```
/// use std::collections::HashSet;
/// use recycler_core::ShrinkTo;
///
/// let mut s: HashSet<u64> = (0..10_000).collect();
/// s.clear_and_shrink_to(30);
/// assert!(s.is_empty());
/// assert!(s.capacity() <= 30);
/// ```
impl<T: Eq + Hash, S: BuildHasher> ShrinkTo for HashSet<T, S> {
    fn clear_and_shrink_to(&mut self, max_capacity: usize) {
        self.clear();
        shrink_emptied(self, max_capacity, HashSet::capacity, HashSet::shrink_to);
    }
}

/// Clears the heap, then shrinks it to `max_capacity` elements if it holds
/// more.
///
/// # Examples
///
/// ```
/// use std::collections::BinaryHeap;
/// use recycler_core::ShrinkTo;
///
/// let mut h: BinaryHeap<u32> = (0..10_000).collect();
/// h.clear_and_shrink_to(16);
/// assert!(h.is_empty());
/// assert_eq!(h.capacity(), 16);
/// ```
impl<T: Ord> ShrinkTo for BinaryHeap<T> {
    fn clear_and_shrink_to(&mut self, max_capacity: usize) {
        self.clear();
        shrink_emptied(
            self,
            max_capacity,
            BinaryHeap::capacity,
            BinaryHeap::shrink_to,
        );
    }
}

/// Clears the map. A `BTreeMap` has no capacity: clearing frees every node,
/// so any limit is met.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeMap;
/// use recycler_core::ShrinkTo;
///
/// let mut m: BTreeMap<u32, String> = (0..100).map(|i| (i, i.to_string())).collect();
/// m.clear_and_shrink_to(0);
/// assert!(m.is_empty());
/// ```
impl<K, V> ShrinkTo for BTreeMap<K, V> {
    fn clear_and_shrink_to(&mut self, _max_capacity: usize) {
        self.clear();
    }
}

/// Clears the set. A `BTreeSet` has no capacity: clearing frees every node,
/// so any limit is met.
///
/// # Examples
///
/// ```
/// use std::collections::BTreeSet;
/// use recycler_core::ShrinkTo;
///
/// let mut s: BTreeSet<u32> = (0..100).collect();
/// s.clear_and_shrink_to(0);
/// assert!(s.is_empty());
/// ```
impl<T> ShrinkTo for BTreeSet<T> {
    fn clear_and_shrink_to(&mut self, _max_capacity: usize) {
        self.clear();
    }
}

/// Feature `bytes`: clears the buffer, then, if it holds more than
/// `max_capacity` bytes, replaces it with a fresh
/// `BytesMut::with_capacity(max_capacity)`.
///
/// `BytesMut` has no `shrink_to`. Replacing it is what shrinking can soundly
/// do: the old handle is dropped, which frees its allocation, or, if other
/// handles split from it (or `Bytes` frozen from them) still share the
/// allocation, leaves it to them. Either way this handle then owns exactly
/// `max_capacity` bytes (none for 0), and what it shared is no longer
/// counted in its [`retained_bytes`](Recyclable::retained_bytes). At or under
/// the limit, the buffer keeps its allocation.
///
/// # Examples
///
/// ```
/// use bytes::BytesMut;
/// use recycler_core::ShrinkTo;
///
/// let mut small = BytesMut::with_capacity(100);
/// small.extend_from_slice(b"ping");
/// let ptr = small.as_ptr();
/// small.clear_and_shrink_to(4096);
/// assert!(small.is_empty());
/// assert_eq!((small.capacity(), small.as_ptr()), (100, ptr)); // kept
///
/// let mut huge = BytesMut::zeroed(1 << 20);
/// huge.clear_and_shrink_to(4096);
/// assert!(huge.is_empty());
/// assert_eq!(huge.capacity(), 4096); // a fresh allocation of the limit
/// ```
#[cfg(feature = "bytes")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
impl ShrinkTo for bytes::BytesMut {
    fn clear_and_shrink_to(&mut self, max_capacity: usize) {
        self.clear();
        if self.capacity() > max_capacity {
            *self = bytes::BytesMut::with_capacity(max_capacity);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn under_the_limit_keeps_the_allocation() {
        let mut v: Vec<u8> = Vec::with_capacity(64);
        v.extend_from_slice(b"abc");
        let ptr = v.as_ptr();
        v.clear_and_shrink_to(64);
        assert!(v.is_empty());
        assert_eq!((v.capacity(), v.as_ptr()), (64, ptr));
    }

    #[test]
    fn hash_tables_end_at_or_under_the_limit() {
        for max in 0..200 {
            let mut m: HashMap<u32, u32> = (0..1000).map(|i| (i, i)).collect();
            m.clear_and_shrink_to(max);
            assert!(m.is_empty());
            assert!(m.capacity() <= max, "max {max}: capacity {}", m.capacity());

            let mut s: HashSet<u32> = (0..1000).collect();
            s.clear_and_shrink_to(max);
            assert!(s.capacity() <= max, "max {max}: capacity {}", s.capacity());
        }
    }

    #[test]
    fn zero_frees_everything() {
        let mut v: Vec<u64> = vec![1; 100];
        v.clear_and_shrink_to(0);
        assert_eq!(v.capacity(), 0);
        let mut q: VecDeque<u64> = (0..100).collect();
        q.clear_and_shrink_to(0);
        assert_eq!(q.capacity(), 0);
        let mut m: HashMap<u8, u8> = (0..100).map(|i| (i, i)).collect();
        m.clear_and_shrink_to(0);
        assert_eq!(m.capacity(), 0);
    }

    #[cfg(feature = "bytes")]
    #[test]
    fn bytes_mut_over_the_limit_is_replaced() {
        use bytes::BytesMut;

        let mut b = BytesMut::zeroed(10_000);
        b.clear_and_shrink_to(0);
        assert_eq!((b.len(), b.capacity()), (0, 0));

        // A part split from a shared allocation: the others keep theirs.
        let mut head = BytesMut::zeroed(10_000);
        let tail = head.split_off(100);
        let frozen = tail.freeze();
        head.clear_and_shrink_to(50);
        assert_eq!((head.len(), head.capacity()), (0, 50));
        assert_eq!(frozen.len(), 9_900);
        assert!(frozen.iter().all(|&x| x == 0));

        // Exactly at the limit: kept.
        let mut exact = BytesMut::with_capacity(64);
        let ptr = exact.as_ptr();
        exact.clear_and_shrink_to(64);
        assert_eq!((exact.capacity(), exact.as_ptr()), (64, ptr));
    }

    #[test]
    fn zero_sized_elements_terminate() {
        let mut v: Vec<()> = vec![(); 10];
        v.clear_and_shrink_to(1000);
        assert!(v.is_empty());
    }
}
