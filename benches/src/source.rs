//! The two faces a contender shows the workloads: [`Take`], a pool used on
//! one thread (W1, W8, W9's owner shape), and [`Source`], a pool whose
//! objects another thread releases (W2, W6, W9's producer/consumer shape).
//! Both hand out guards that give the object back when dropped.

use std::fmt;
use std::marker::PhantomData;
use std::ops::DerefMut;
use std::sync::Arc;

use recycler_core::{OwnedPooled, Pooled, Recyclable, Recycler};

use crate::payload::Msg;

/// Something to get objects from; dropping the guard gives them back.
pub trait Take {
    /// What the pool holds.
    type Object;

    /// What the pool hands out.
    type Guard<'a>: DerefMut<Target = Self::Object>
    where
        Self: 'a;

    /// Takes an object.
    fn take(&self) -> Self::Guard<'_>;
}

/// A [`Take`] shared between threads, whose guards may be released on
/// another thread.
pub trait Source: Sync {
    /// What the pool holds.
    type Object;

    /// What the pool hands out.
    type Guard<'a>: DerefMut<Target = Self::Object> + Send
    where
        Self: 'a;

    /// Takes an object.
    fn take(&self) -> Self::Guard<'_>;
}

/// Implements [`Take`] and [`Source`] for a contender whose guard is `Send`:
/// `take_and_source!(impl[generics] Type, Object, Guard<'a>, |this| take)`.
macro_rules! take_and_source {
    (impl[$($gen:tt)*] $ty:ty, $object:ty, $guard:ty, |$this:ident| $take:expr) => {
        impl<$($gen)*> $crate::source::Take for $ty {
            type Object = $object;
            type Guard<'a>
                = $guard
            where
                Self: 'a;

            #[inline]
            fn take(&self) -> Self::Guard<'_> {
                let $this = self;
                $take
            }
        }

        impl<$($gen)*> $crate::source::Source for $ty {
            type Object = $object;
            type Guard<'a>
                = $guard
            where
                Self: 'a;

            #[inline]
            fn take(&self) -> Self::Guard<'_> {
                let $this = self;
                $take
            }
        }
    };
}

pub(crate) use take_and_source;

take_and_source!(
    impl[T: Recyclable + Send + Sync + 'static] Recycler<T>,
    T,
    Pooled<'a, T>,
    |pool| pool.get()
);

/// A recycler used through [`Recycler::get_owned`]: guards that hold an
/// `Arc` of the recycler instead of borrowing it.
pub struct RecyclerOwned<T: Recyclable>(pub Arc<Recycler<T>>);

impl<T: Recyclable + Send + 'static> RecyclerOwned<T> {
    /// A recycler made with `T::default`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::{Msg, RecyclerOwned, Take};
    ///
    /// let pool = RecyclerOwned::<Msg>::new();
    /// let g = Take::take(&pool);
    /// assert_eq!(g.words, [0; 8]);
    /// ```
    pub fn new() -> Self
    where
        T: Default,
    {
        Self(Arc::new(Recycler::new()))
    }
}

impl<T: Recyclable + Send + Default + 'static> Default for RecyclerOwned<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Recyclable> fmt::Debug for RecyclerOwned<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecyclerOwned").finish_non_exhaustive()
    }
}

take_and_source!(
    impl[T: Recyclable + Send + Sync + 'static] RecyclerOwned<T>,
    T,
    OwnedPooled<T>,
    |this| this.0.get_owned()
);

/// `Box::new(T::default())` + drop under the process's global allocator:
/// nothing pooled.
pub struct Boxed<T = Msg>(PhantomData<fn() -> T>);

impl<T> Boxed<T> {
    /// The contender.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::{Boxed, Msg, Take};
    ///
    /// let g = Take::take(&Boxed::<Msg>::new());
    /// assert_eq!(g.words, [0; 8]);
    /// ```
    pub const fn new() -> Self {
        Self(PhantomData)
    }
}

impl<T> Default for Boxed<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> fmt::Debug for Boxed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Boxed")
    }
}

take_and_source!(
    impl[T: Default + Send] Boxed<T>,
    T,
    Box<T>,
    |_this| Box::new(T::default())
);

/// W2's floor: the queue alone. Objects are slots of a fixed ring that is
/// never freed; `take` zeroes the next slot (as `Box::new(Msg::default())`
/// writes its object) and the guard's drop does nothing. No allocation, no
/// pooling: what W2 costs with a pool that costs nothing, so that the other
/// rows can be read against the harness's own cost.
///
/// One producer takes from it at a time (W2's shape); the ring is larger
/// than what the queue and the consumer can hold at once, so a slot is
/// never reused while a guard of it lives.
pub struct QueueFloor {
    ring: Box<[std::cell::UnsafeCell<Msg>]>,
    next: std::sync::atomic::AtomicUsize,
}

/// A slot of [`QueueFloor`]'s ring.
pub struct FloorSlot<'a>(&'a std::cell::UnsafeCell<Msg>);

impl fmt::Debug for FloorSlot<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}

/// Slots in [`QueueFloor`]'s ring: more than W2's queue (1024) can hold.
const FLOOR_SLOTS: usize = 8192;

impl Default for QueueFloor {
    fn default() -> Self {
        Self {
            ring: (0..FLOOR_SLOTS)
                .map(|_| std::cell::UnsafeCell::new(Msg::default()))
                .collect(),
            next: std::sync::atomic::AtomicUsize::new(0),
        }
    }
}

impl fmt::Debug for QueueFloor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("QueueFloor").finish_non_exhaustive()
    }
}

// SAFETY: a slot is handed to one guard at a time (the ring is larger than
// what W2 keeps in flight, see above), and a guard moves between threads as
// a `&mut` would.
unsafe impl Sync for QueueFloor {}
// SAFETY: as above.
unsafe impl Send for FloorSlot<'_> {}

impl std::ops::Deref for FloorSlot<'_> {
    type Target = Msg;

    fn deref(&self) -> &Msg {
        // SAFETY: the guard is the slot's only user while it lives.
        unsafe { &*self.0.get() }
    }
}

impl std::ops::DerefMut for FloorSlot<'_> {
    fn deref_mut(&mut self) -> &mut Msg {
        // SAFETY: as above.
        unsafe { &mut *self.0.get() }
    }
}

take_and_source!(impl[] QueueFloor, Msg, FloorSlot<'a>, |this| {
    let i = this.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % FLOOR_SLOTS;
    let mut slot = FloorSlot(&this.ring[i]);
    *slot = Msg::default();
    slot
});
