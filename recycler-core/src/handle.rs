//! [`RecyclerHandle`]: a cheap, cloneable handle to a recycler that gives
//! owned guards, for a recycler that is a plain field of a shared struct.

use std::fmt;
use std::ops::Deref;

use crate::loom::Arc;
use crate::owned::OwnedPooled;
use crate::recyclable::Recyclable;
use crate::recycler::Recycler;

/// A cloneable handle to a [`Recycler`]'s pool that gives owned (`'static`)
/// guards, made by [`Recycler::handle`].
///
/// [`Recycler::get_owned`] needs the recycler in an `Arc` of its own. A
/// recycler that is a plain field of a larger shared struct (an
/// `Arc<Server>`) has none; its handle is one: an `Arc` of a recycler that
/// shares the field's pool (its caches, depot, counters and settings), so
/// [`get_owned`](Self::get_owned) and
/// [`try_get_owned`](Self::try_get_owned) cost exactly what they cost on an
/// `Arc<Recycler<T>>`, and the guards keep the pool alive as they do there.
/// Cloning the handle is one atomic increment.
///
/// It dereferences to the `Arc<Recycler<T>>` it is, so every method of the
/// recycler (`get`, `try_get`, `stats`, `trim`, `prefill`) works on the
/// handle too, and `Arc::clone(&handle)` gives the `Arc` itself, for code
/// that wants one.
///
/// Why a handle rather than `get_owned` on `&Recycler`: the public contract
/// fixes `get_owned` on `self: &Arc<Self>` and `OwnedPooled` as a holder of
/// an `Arc<Recycler<T>>` (code counts on `Arc::strong_count` of its pool), so
/// the owned guards of a plain field need an `Arc<Recycler<T>>` to hold: the
/// handle is that `Arc`, made once, not once per guard.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use recycler_core::{OwnedPooled, Recycler, RecyclerHandle};
///
/// #[derive(Default)]
/// struct Server {
///     strings: Recycler<String>,
/// }
///
/// let server = Arc::new(Server::default());
/// let strings: RecyclerHandle<String> = server.strings.handle();
/// let tasks: Vec<_> = (0..4)
///     .map(|i| {
///         let strings = strings.clone(); // one atomic increment
///         std::thread::spawn(move || {
///             let mut s: OwnedPooled<String> = strings.get_owned();
///             s.push_str(&i.to_string());
///             s // 'static: returned from the thread
///         })
///     })
///     .collect();
/// let outs: Vec<OwnedPooled<String>> = tasks.into_iter().map(|t| t.join().unwrap()).collect();
/// assert_eq!(outs.iter().map(|s| s.len()).sum::<usize>(), 4);
/// drop(outs);
/// assert_eq!(server.strings.stats().idle, 4); // the field's pool: the same one
/// ```
pub struct RecyclerHandle<T> {
    recycler: Arc<Recycler<T>>,
}

impl<T: Recyclable + Send + 'static> RecyclerHandle<T> {
    pub(crate) fn new(recycler: Arc<Recycler<T>>) -> Self {
        Self { recycler }
    }

    /// An owned guard, as [`Recycler::get_owned`]: `'static`, so it can
    /// move into threads and tasks; it keeps the pool alive.
    ///
    /// # Panics
    ///
    /// As [`Recycler::get`].
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<Vec<u8>> = Recycler::new();
    /// let handle = pool.handle();
    /// let mut v = handle.get_owned();
    /// drop((pool, handle)); // the guard keeps the pool alive
    /// v.push(1);
    /// assert_eq!(v[..], [1]);
    /// ```
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn get_owned(&self) -> OwnedPooled<T> {
        self.recycler.get_owned()
    }

    /// An owned guard of a pooled object, if the pool has one, as
    /// [`Recycler::try_get_owned`]; never calls the factory.
    ///
    /// # Panics
    ///
    /// As [`Recycler::try_get`].
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<String> = Recycler::new();
    /// let handle = pool.handle();
    /// assert!(handle.try_get_owned().is_none());
    /// drop(pool.get()); // pooled through the field ...
    /// assert!(handle.try_get_owned().is_some()); // ... found through the handle
    /// ```
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn try_get_owned(&self) -> Option<OwnedPooled<T>> {
        self.recycler.try_get_owned()
    }
}

impl<T: Recyclable + Send + 'static> Recycler<T> {
    /// A cheap, cloneable handle to this recycler that gives owned
    /// (`'static`) guards: for a recycler kept as a plain field of a larger
    /// shared struct (an `Arc<Server>`), not in an `Arc` of its own.
    ///
    /// The handle shares this recycler's pool (its caches, depot, counters
    /// and settings): objects got through either are the same objects. It
    /// is made with one allocation; cloning it is one atomic increment. Make
    /// it once (when the server starts, say), keep it next to the recycler
    /// or in place of it, and clone it where needed. See [`RecyclerHandle`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::{Recycler, RecyclerHandle};
    ///
    /// struct Server {
    ///     requests: Recycler<Vec<u8>>, // a plain field
    ///     owned: RecyclerHandle<Vec<u8>>,
    /// }
    ///
    /// let requests = Recycler::new();
    /// let owned = requests.handle();
    /// let server = Arc::new(Server { requests, owned });
    ///
    /// let mut req = server.owned.get_owned(); // 'static: it may outlive `server`
    /// req.extend_from_slice(b"GET /");
    /// std::thread::spawn(move || assert_eq!(req[..], *b"GET /")).join().unwrap();
    /// let s = server.requests.stats(); // one pool behind both
    /// assert_eq!((s.created, s.released_remote), (1, 1));
    /// ```
    pub fn handle(&self) -> RecyclerHandle<T> {
        RecyclerHandle::new(Arc::new(self.sharing()))
    }
}

impl<T> Clone for RecyclerHandle<T> {
    /// Another handle to the same pool: one atomic increment.
    fn clone(&self) -> Self {
        Self {
            recycler: Arc::clone(&self.recycler),
        }
    }
}

impl<T> Deref for RecyclerHandle<T> {
    type Target = Arc<Recycler<T>>;

    /// The recycler, in its `Arc`, for its other methods.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<u64> = Recycler::new();
    /// let handle = pool.handle();
    /// drop(handle.get()); // a borrowed guard, through the handle
    /// assert_eq!(handle.stats().idle, 1);
    /// assert_eq!(pool.stats().idle, 1);
    /// let arc: std::sync::Arc<Recycler<u64>> = std::sync::Arc::clone(&handle);
    /// assert!(arc.try_get_owned().is_some());
    /// ```
    #[inline]
    fn deref(&self) -> &Arc<Recycler<T>> {
        &self.recycler
    }
}

impl<T: Recyclable + Send + 'static> fmt::Debug for RecyclerHandle<T> {
    /// As the recycler's `Debug`; takes no lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RecyclerHandle")
            .field(&*self.recycler)
            .finish()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use static_assertions::{assert_impl_all, assert_not_impl_any};
    use std::panic::{RefUnwindSafe, UnwindSafe};

    /// Neither `Send` nor `Sync`.
    struct NotSend(std::marker::PhantomData<*const u8>);

    impl Recyclable for NotSend {
        fn reset(&mut self) {}
    }

    assert_impl_all!(
        RecyclerHandle<Vec<u8>>: Send, Sync, Clone, fmt::Debug, UnwindSafe, RefUnwindSafe
    );
    assert_not_impl_any!(RecyclerHandle<NotSend>: Send, Sync);

    #[test]
    fn the_handle_and_the_recycler_share_one_pool() {
        let pool: Recycler<Vec<u8>> = Recycler::new();
        let handle = pool.handle();
        let mut v = handle.get_owned();
        v.reserve(64);
        let ptr = v.as_ptr();
        drop(v);
        assert_eq!(
            pool.get().as_ptr(),
            ptr,
            "pooled by the handle, got by the field"
        );
        let other = handle.clone();
        drop(handle);
        assert_eq!(other.get_owned().as_ptr(), ptr);
        let s = pool.stats();
        assert_eq!((s.created, s.hits, s.idle), (1, 2, 1));
        assert!(format!("{other:?}").starts_with("RecyclerHandle(Recycler {"));
    }
}
