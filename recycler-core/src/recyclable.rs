//! The [`Recyclable`] trait and its implementations for `std` types.

use std::collections::{BTreeMap, BTreeSet, BinaryHeap, HashMap, HashSet, VecDeque};
use std::marker::PhantomData;
use std::mem::size_of;

/// A type whose values can be reset and reused instead of being dropped and
/// made again.
///
/// [`reset`](Recyclable::reset) restores the freshly made state while keeping
/// the value's allocations, so that the next user of a pooled value does not
/// pay for them again. [`retained_bytes`](Recyclable::retained_bytes) tells a
/// memory cap how much heap memory an idle value keeps alive.
///
/// Implemented here for the primitive types (reset to their default), for
/// `String` and the `std` collections (cleared, capacity kept), for
/// `Option<T>` (reset to `None`), for `Box<T>`, for arrays, for tuples of
/// up to twelve recyclable elements, and, with the `bytes` feature, for
/// `bytes::BytesMut` (cleared, capacity kept). With the default `derive` feature,
/// `#[derive(Recyclable)]` implements it for your own types.
///
/// A collection's `reset` keeps the collection's own allocation, not its
/// elements': a `Vec<String>` or a `HashMap<String, String>` drops its
/// strings, and its next user allocates them again. A
/// [`RecycleVec`](crate::RecycleVec) keeps its elements, reset, and hands
/// them out again.
///
/// # Examples
///
/// ```
/// use recycler_core::Recyclable;
///
/// struct Request {
///     path: String,
///     headers: Vec<(String, String)>,
///     retries: u32,
/// }
///
/// impl Recyclable for Request {
///     fn reset(&mut self) {
///         self.path.reset();
///         self.headers.reset();
///         self.retries.reset();
///     }
///
///     fn retained_bytes(&self) -> usize {
///         self.path.retained_bytes() + self.headers.retained_bytes()
///     }
/// }
///
/// let mut req = Request { path: String::with_capacity(64), headers: Vec::new(), retries: 3 };
/// req.path.push_str("/index.html");
/// req.reset();
/// assert!(req.path.is_empty());
/// assert!(req.path.capacity() >= 64); // the allocation is kept for the next user
/// assert_eq!(req.retries, 0);
/// assert_eq!(req.retained_bytes(), req.path.capacity());
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` does not implement `Recyclable`",
    label = "`{Self}` cannot be reset for reuse",
    note = "for a field of this type in a `#[derive(Recyclable)]` struct, add `#[recycle(skip)]` to keep its value, `#[recycle(default)]` to reset it to `Default::default()`, or `#[recycle(with = path::to::fn)]` to reset it with a `fn(&mut {Self})`; in an enum, only `#[recycle(skip)]` applies, which leaves the field out of `retained_bytes`",
    note = "for a type parameter that a `#[derive(Recyclable)]` type bounds by `Recyclable`, `#[recycle(bound = \"..\")]` on that type replaces the bounds it infers",
    note = "for a type of your own, add `#[derive(Recyclable)]` or implement `recycler_core::Recyclable`"
)]
pub trait Recyclable {
    /// Restore the freshly made state, keeping allocations for reuse.
    fn reset(&mut self);

    /// Heap bytes this value keeps alive while idle (for memory caps).
    ///
    /// The default is 0, right for values that own no heap memory. Collections
    /// report `capacity × size_of::<element>()`; the count is an estimate of
    /// what the allocator holds, not an exact figure.
    fn retained_bytes(&self) -> usize {
        0
    }
}

macro_rules! recyclable_by_default {
    ($($ty:ty),* $(,)?) => {$(
        impl Recyclable for $ty {
            #[inline]
            fn reset(&mut self) {
                *self = <$ty>::default();
            }
        }
    )*};
}

recyclable_by_default!(
    (),
    bool,
    char,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64,
);

impl<T: ?Sized> Recyclable for PhantomData<T> {
    #[inline]
    fn reset(&mut self) {}
}

impl Recyclable for String {
    #[inline]
    fn reset(&mut self) {
        self.clear();
    }

    fn retained_bytes(&self) -> usize {
        self.capacity()
    }
}

/// Implements `Recyclable` for a collection whose `clear` keeps its capacity.
macro_rules! recyclable_with_capacity {
    ($(impl<$($p:ident),*> for $ty:ty, element = $elem:ty;)*) => {$(
        impl<$($p),*> Recyclable for $ty {
            #[inline]
            fn reset(&mut self) {
                self.clear();
            }

            fn retained_bytes(&self) -> usize {
                self.capacity().saturating_mul(size_of::<$elem>())
            }
        }
    )*};
}

recyclable_with_capacity! {
    impl<T> for Vec<T>, element = T;
    impl<T> for VecDeque<T>, element = T;
    impl<T> for BinaryHeap<T>, element = T;
    impl<K, V, S> for HashMap<K, V, S>, element = (K, V);
    impl<T, S> for HashSet<T, S>, element = T;
}

/// `BTreeMap` frees its nodes when cleared, so an idle one retains nothing.
impl<K, V> Recyclable for BTreeMap<K, V> {
    #[inline]
    fn reset(&mut self) {
        self.clear();
    }
}

/// `BTreeSet` frees its nodes when cleared, so an idle one retains nothing.
impl<T> Recyclable for BTreeSet<T> {
    #[inline]
    fn reset(&mut self) {
        self.clear();
    }
}

/// Resets to `None`; whatever the option held is dropped.
impl<T> Recyclable for Option<T> {
    #[inline]
    fn reset(&mut self) {
        *self = None;
    }
}

/// Resets the boxed value in place, keeping the box's allocation.
impl<T: Recyclable + ?Sized> Recyclable for Box<T> {
    #[inline]
    fn reset(&mut self) {
        (**self).reset();
    }

    fn retained_bytes(&self) -> usize {
        size_of_val::<T>(self).saturating_add((**self).retained_bytes())
    }
}

/// Feature `bytes`: clears the buffer and keeps its capacity, as `Vec<u8>`
/// does; an idle one retains its capacity in bytes.
///
/// `BytesMut::clear` keeps the whole allocation this handle owns. A
/// `BytesMut` that was split shares its allocation with the other parts:
/// its `capacity` counts only its own part, and that is what it reports.
///
/// # Examples
///
/// ```
/// use bytes::{BufMut, BytesMut};
/// use recycler_core::Recyclable;
///
/// let mut buf = BytesMut::with_capacity(1024);
/// buf.put_slice(b"frame");
/// buf.reset();
/// assert!(buf.is_empty());
/// assert_eq!(buf.capacity(), 1024);
/// assert_eq!(buf.retained_bytes(), 1024);
/// ```
#[cfg(feature = "bytes")]
#[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
impl Recyclable for bytes::BytesMut {
    #[inline]
    fn reset(&mut self) {
        self.clear();
    }

    fn retained_bytes(&self) -> usize {
        self.capacity()
    }
}

impl<T: Recyclable, const N: usize> Recyclable for [T; N] {
    #[inline]
    fn reset(&mut self) {
        self.iter_mut().for_each(T::reset);
    }

    fn retained_bytes(&self) -> usize {
        self.iter()
            .map(T::retained_bytes)
            .fold(0, usize::saturating_add)
    }
}

macro_rules! recyclable_tuple {
    ($(($($name:ident . $idx:tt),+))*) => {$(
        impl<$($name: Recyclable),+> Recyclable for ($($name,)+) {
            #[inline]
            fn reset(&mut self) {
                $(self.$idx.reset();)+
            }

            fn retained_bytes(&self) -> usize {
                0usize $(.saturating_add(self.$idx.retained_bytes()))+
            }
        }
    )*};
}

recyclable_tuple! {
    (A.0)
    (A.0, B.1)
    (A.0, B.1, C.2)
    (A.0, B.1, C.2, D.3)
    (A.0, B.1, C.2, D.3, E.4)
    (A.0, B.1, C.2, D.3, E.4, F.5)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10)
    (A.0, B.1, C.2, D.3, E.4, F.5, G.6, H.7, I.8, J.9, K.10, L.11)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn primitives_reset_to_default() {
        let mut a = 7u64;
        let mut b = true;
        let mut c = 'x';
        let mut d = -3.5f64;
        a.reset();
        b.reset();
        c.reset();
        d.reset();
        assert_eq!((a, b, c, d), (0, false, '\0', 0.0));
        assert_eq!(a.retained_bytes(), 0);
    }

    #[test]
    fn collections_clear_and_keep_capacity() {
        let mut v: Vec<u32> = (0..100).collect();
        let cap = v.capacity();
        v.reset();
        assert!(v.is_empty());
        assert_eq!(v.capacity(), cap);
        assert_eq!(v.retained_bytes(), cap * 4);

        let mut s = String::from("hello, world");
        let cap = s.capacity();
        s.reset();
        assert!(s.is_empty());
        assert_eq!(s.retained_bytes(), cap);

        let mut q: VecDeque<u16> = (0..10).collect();
        let cap = q.capacity();
        q.reset();
        assert!(q.is_empty());
        assert_eq!(q.retained_bytes(), cap * 2);

        let mut m: HashMap<u64, u64> = (0..50).map(|i| (i, i)).collect();
        let cap = m.capacity();
        m.reset();
        assert!(m.is_empty());
        assert_eq!(m.capacity(), cap);
        assert_eq!(m.retained_bytes(), cap * 16);

        let mut hs: HashSet<u8> = (0..20).collect();
        hs.reset();
        assert!(hs.is_empty());
        assert!(hs.retained_bytes() >= 20);

        let mut h: BinaryHeap<u32> = (0..10).collect();
        h.reset();
        assert!(h.is_empty());
        assert!(h.retained_bytes() >= 40);

        let mut bm: BTreeMap<u8, u8> = (0..10).map(|i| (i, i)).collect();
        bm.reset();
        assert!(bm.is_empty());
        assert_eq!(bm.retained_bytes(), 0);

        let mut bs: BTreeSet<u8> = (0..10).collect();
        bs.reset();
        assert!(bs.is_empty());
    }

    #[test]
    fn option_box_array_tuple() {
        let mut o = Some(vec![1, 2, 3]);
        o.reset();
        assert!(o.is_none());

        let mut b = Box::new(Vec::<u64>::with_capacity(8));
        b.push(1);
        b.reset();
        assert!(b.is_empty());
        assert_eq!(b.retained_bytes(), size_of::<Vec<u64>>() + b.capacity() * 8);

        let mut a = [String::from("a"), String::from("bb")];
        a.reset();
        assert!(a.iter().all(String::is_empty));
        assert_eq!(a.retained_bytes(), a[0].capacity() + a[1].capacity());

        let mut t = (5u8, String::from("x"), vec![1u32]);
        t.reset();
        assert_eq!(t.0, 0);
        assert!(t.1.is_empty() && t.2.is_empty());
        assert_eq!(t.retained_bytes(), t.1.capacity() + t.2.capacity() * 4);
    }

    #[cfg(feature = "bytes")]
    #[test]
    fn bytes_mut_clears_and_keeps_capacity() {
        let mut b = bytes::BytesMut::with_capacity(100);
        b.extend_from_slice(&[1; 60]);
        let ptr = b.as_ptr();
        b.reset();
        assert!(b.is_empty());
        assert_eq!(
            (b.capacity(), b.as_ptr()),
            (100, ptr),
            "the same allocation"
        );
        assert_eq!(b.retained_bytes(), 100);
        // A split-off part reports its own part of the shared allocation.
        let mut head = bytes::BytesMut::with_capacity(100);
        let tail = head.split_off(30);
        assert_eq!((head.retained_bytes(), tail.retained_bytes()), (30, 70));
    }

    #[test]
    fn retained_bytes_saturates() {
        struct Huge;
        impl Recyclable for Huge {
            fn reset(&mut self) {}
            fn retained_bytes(&self) -> usize {
                usize::MAX
            }
        }
        assert_eq!((Huge, Huge).retained_bytes(), usize::MAX);
        assert_eq!([Huge, Huge].retained_bytes(), usize::MAX);
    }
}
