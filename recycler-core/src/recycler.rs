//! [`Recycler<T>`]: the public handle. It holds the shared state
//! ([`Shared`], in [`crate::shared`]) and hands each call to the path that
//! serves it: the owner path for `get` and release on the thread that owns
//! the cache ([`crate::owner`]), then the slow get ([`crate::slow_get`]), the
//! slow release ([`crate::slow_release`]), the handoff of foreign releases
//! ([`crate::handoff`]), the depot ([`crate::depot`]) and thread exit
//! ([`crate::exit`]).

use std::fmt;

use crate::config::{Config, Factory, SharedIdle};
use crate::guard::Pooled;
use crate::keep::KeepRef;
use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::recyclable::Recyclable;
use crate::shared::Shared;
use crate::stats::RecyclerStats;

/// A pool of reusable `T`s with a cache per thread.
///
/// [`get`](Self::get) hands out a [`Pooled`] guard; dropping the guard resets
/// the object ([`Recyclable::reset`]) and returns it to the pool. On the
/// thread that got it, getting and releasing touch only that thread's cache:
/// no lock, no atomic read-modify-write. A guard released on another thread
/// sends its object home, in batches. Objects of threads that exit go to a
/// shared depot, where any thread finds them.
///
/// `Recycler<T>` is `Send + Sync`: share it by reference, in a `static`
/// (`LazyLock`), or in an `Arc` (then [`get_owned`](Self::get_owned) gives
/// guards that are `'static`).
///
/// Dropping the last `Recycler` (or the last owned guard holding it) drops
/// every idle object and never unwinds: a panicking `Drop` of one of them is
/// caught, the rest are dropped all the same, and the panic is swallowed
/// (the panic hook reports it), since the drop may run where a panic would
/// abort the process (a `Recycler` in a `thread_local!`, or the last handle
/// dropped while another thread's exit hook holds the recycler).
///
/// # Examples
///
/// ```
/// use recycler_core::Recycler;
///
/// let pool: Recycler<Vec<u8>> = Recycler::new();
///
/// let mut buf = pool.get();
/// buf.extend_from_slice(b"hello");
/// let ptr = buf.as_ptr();
/// drop(buf); // cleared and pooled
///
/// let buf = pool.get();
/// assert!(buf.is_empty());
/// assert_eq!(buf.as_ptr(), ptr); // the same allocation, reused
/// ```
///
/// A `static` pool, and a guard released on another thread:
///
/// ```
/// use std::sync::LazyLock;
/// use recycler_core::Recycler;
///
/// static STRINGS: LazyLock<Recycler<String>> = LazyLock::new(Recycler::new);
///
/// let mut s = STRINGS.get();
/// s.push_str("sent away");
/// std::thread::spawn(move || assert_eq!(*s, "sent away")).join().unwrap();
/// assert_eq!(STRINGS.stats().released_remote, 1);
/// ```
pub struct Recycler<T> {
    /// The shared state, which this handle keeps alive by the handles'
    /// unit of its keep-alive count ([`crate::keep`]).
    shared: NonNull<Shared<T>>,
    /// Shares a `Shared<T>`, as an `Arc` of it would.
    _marker: PhantomData<Shared<T>>,
}

// SAFETY: a handle shares its state as an `Arc<Shared<T>>` would (the state
// lives while any handle or unit does; the last unit frees it on whichever
// thread gives it back), so it is `Send` and `Sync` exactly when that `Arc`
// would be.
unsafe impl<T> Send for Recycler<T> where Shared<T>: Send + Sync {}
// SAFETY: as above.
unsafe impl<T> Sync for Recycler<T> where Shared<T>: Send + Sync {}

impl<T: Recyclable + Send + 'static> Recycler<T> {
    /// A recycler whose factory is `T::default`, with default settings.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<String> = Recycler::new();
    /// assert!(pool.get().is_empty());
    /// ```
    pub fn new() -> Self
    where
        T: Default,
    {
        Self::with_factory(T::default)
    }

    /// A recycler that makes objects with `f`, with default settings.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::with_factory(|| Vec::<u64>::with_capacity(512));
    /// assert!(pool.get().capacity() >= 512);
    /// ```
    pub fn with_factory(f: impl Fn() -> T + Send + Sync + 'static) -> Self {
        Self::from_parts(Box::new(f), Config::DEFAULT, None, None)
    }

    /// A recycler of `factory`'s objects with settings `config`; a buffer
    /// pool's bucket counts its idle bytes in `shared_idle` and its caches'
    /// credits in `credits_to` (its pool's keep-alive count,
    /// [`crate::keep`]).
    pub(crate) fn from_parts(
        factory: Factory<T>,
        config: Config,
        shared_idle: Option<SharedIdle>,
        credits_to: Option<KeepRef>,
    ) -> Self {
        Self {
            shared: Shared::new(factory, config, shared_idle, credits_to),
            _marker: PhantomData,
        }
    }

    /// Takes an object from the pool, or makes one with the factory if the
    /// pool has none.
    ///
    /// The object is reset (or fresh). It returns to the pool when the guard
    /// drops, wherever that happens.
    ///
    /// A thread's first call on a recycler allocates that thread's cache
    /// (and its first call on any recycler, the thread's exit hooks);
    /// after that, a get and release in steady state allocate nothing.
    ///
    /// # Panics
    ///
    /// If the factory panics, or, under
    /// [`max_idle_bytes`](crate::RecyclerBuilder::max_idle_bytes), if
    /// [`Recyclable::retained_bytes`]
    /// panics measuring the object taken (which is then counted as dropped,
    /// and dropped). Every 65,536 hits on a thread's cache, a get runs the
    /// idle decay, which may drop objects the shared depot has no room for:
    /// if one's `Drop` panics, the rest are dropped all the same, the object
    /// the get had taken goes back into the cache, and the panic is then
    /// resumed. The recycler stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<Vec<u32>> = Recycler::new();
    /// let mut v = pool.get();
    /// v.push(7);
    /// assert_eq!(v[..], [7]);
    /// ```
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn get(&self) -> Pooled<'_, T> {
        let (obj, home) = match self.inner().pop_owned() {
            Some(hit) => hit,
            None => self.inner().get_miss(),
        };
        #[cfg(feature = "track")]
        self.inner().track(&obj);
        // SAFETY: every home this recycler hands out is one of its caches
        // (possibly the orphan), and the guard borrows the recycler.
        unsafe { Pooled::new(obj, home) }
    }

    /// Takes an object from the pool, if it has one; never calls the factory.
    ///
    /// For code that must not grow the number of objects: it looks in the
    /// calling thread's cache, its inbox and the shared depot (in striped
    /// mode, the stripes). A thread's first call may still allocate the
    /// thread's cache, as [`get`](Self::get) does; it never makes an object.
    ///
    /// Not the same "try" as
    /// [`BufferPool::try_acquire`](crate::buffer::BufferPool::try_acquire),
    /// which makes a buffer if it must and fails only at a limit (as
    /// `Vec::try_reserve`); this one follows `try_recv`: it fails when
    /// nothing is ready. The buffer pool's counterpart is
    /// [`try_acquire_pooled`](crate::buffer::BufferPool::try_acquire_pooled).
    ///
    /// # Panics
    ///
    /// Under [`max_idle_bytes`](crate::RecyclerBuilder::max_idle_bytes), if
    /// [`Recyclable::retained_bytes`]
    /// panics measuring the object taken, as in [`get`](Self::get).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<String> = Recycler::new();
    /// assert!(pool.try_get().is_none());
    /// drop(pool.get());
    /// assert!(pool.try_get().is_some());
    /// ```
    #[inline]
    #[cfg_attr(feature = "track", track_caller)]
    pub fn try_get(&self) -> Option<Pooled<'_, T>> {
        let (obj, home) = match self.inner().pop_owned() {
            Some(hit) => hit,
            None => self.inner().take_pooled()?,
        };
        #[cfg(feature = "track")]
        self.inner().track(&obj);
        // SAFETY: as in `get`.
        Some(unsafe { Pooled::new(obj, home) })
    }

    /// A snapshot of the recycler's counters, summed over all threads.
    ///
    /// Exact once all threads are quiet; see [`RecyclerStats`].
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<String> = Recycler::new();
    /// let a = pool.get();
    /// assert_eq!(pool.stats().in_use, 1);
    /// drop(a);
    /// assert_eq!(pool.stats().idle, 1);
    /// ```
    pub fn stats(&self) -> RecyclerStats {
        self.inner().stats()
    }

    /// Frees the idle objects: in the shared depot, in every thread's inbox,
    /// in the calling thread's own cache, and in other threads' caches, with
    /// the batches they gathered for other threads, whether or not those
    /// threads run again (a parked worker's cache is freed too), all but the
    /// one object in each other thread's hot slot, which only its owner
    /// touches. A thread that is inside a `get` or a release at that moment
    /// keeps its cache for up to a millisecond, and if it is still inside
    /// then, keeps it. The owner path stays free of locks: see "Taking a
    /// live thread's cache" in the design notes. A thread without a cache
    /// of this recycler is not given one by `trim`.
    ///
    /// # Panics
    ///
    /// If an object's `Drop` panics: every other object is dropped all the
    /// same, and the first panic is then resumed.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<Vec<u8>> = Recycler::new();
    /// drop(pool.get());
    /// pool.trim();
    /// assert_eq!(pool.stats().idle, 0);
    /// assert_eq!(pool.stats().dropped, 1);
    /// ```
    pub fn trim(&self) {
        self.inner().trim();
    }

    /// Makes up to `n` objects with the factory and puts them where every
    /// thread finds them: the shared depot. Returns how many it added: fewer
    /// than `n` when the depot is full (its capacity is
    /// [`depot_capacity`](crate::RecyclerBuilder::depot_capacity)) or an object
    /// would take the idle memory over
    /// [`max_idle_bytes`](crate::RecyclerBuilder::max_idle_bytes); 0 when pooling is
    /// off (`max_capacity_per_thread(0)`).
    ///
    /// For warming a pool at start-up on one thread, before worker threads
    /// (a tokio runtime's, a thread pool's) take objects: a thread's first
    /// `get` finds a whole batch in the depot.
    ///
    /// # Panics
    ///
    /// If the factory (or `retained_bytes`) panics; the objects stored
    /// before stay pooled, and the recycler stays usable.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().depot_capacity(100).build()?;
    /// assert_eq!(pool.prefill(64), 64);
    /// assert_eq!(pool.prefill(64), 36); // the depot is full
    /// let s = pool.stats();
    /// assert_eq!((s.created, s.idle), (100, 100));
    /// std::thread::scope(|s| {
    ///     s.spawn(|| assert!(pool.try_get().is_some())); // any thread finds them
    /// });
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn prefill(&self, n: usize) -> usize {
        self.inner().prefill(n)
    }

    /// The objects in use, by the call site that took them (feature
    /// `track`): to find where guards are kept or `mem::forget`-ten. See
    /// [`Leaks`](crate::Leaks).
    ///
    /// With the feature on, `get`, `try_get` and `get_owned` record their
    /// caller and every release forgets it: a lock and a hash per operation,
    /// for tests and staging.
    ///
    /// # Examples
    ///
    /// ```
    /// # #[cfg(feature = "track")] {
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<String> = Recycler::new();
    /// let line = line!() + 1;
    /// std::mem::forget(pool.get()); // never returned
    /// drop(pool.get()); // returned: not reported
    /// let leaks = pool.leaks();
    /// assert_eq!(leaks.in_use(), 1);
    /// let site = leaks.sites()[0];
    /// assert_eq!((site.location.file(), site.location.line()), (file!(), line));
    /// # }
    /// ```
    #[cfg(feature = "track")]
    #[cfg_attr(docsrs, doc(cfg(feature = "track")))]
    pub fn leaks(&self) -> crate::track::Leaks {
        self.inner().tracker.leaks()
    }
}

impl<T> Recycler<T> {
    /// Another `Recycler` of the same pool (its caches, depot, counters and
    /// settings): what a [`RecyclerHandle`](crate::RecyclerHandle) holds.
    pub(crate) fn sharing(&self) -> Self {
        // `Relaxed`: made from a handle alive, so the count is above 0.
        self.inner()
            .handles
            .fetch_add(1, crate::loom::Ordering::Relaxed);
        Self {
            shared: self.shared,
            _marker: PhantomData,
        }
    }

    /// The shared state, for guards.
    #[inline(always)]
    pub(crate) fn inner(&self) -> &Shared<T> {
        // SAFETY: the state lives while this handle does (it holds the
        // handles' unit, given back only when the last handle drops).
        unsafe { self.shared.as_ref() }
    }
}

impl<T> Drop for Recycler<T> {
    /// The last handle takes the caches' credits back and gives the
    /// handles' unit of the keep-alive count back (see the design notes,
    /// "Owned guards"): the
    /// recycler's state lives on only while owned guards are out. Runs no
    /// user code unless it lets the state go (then `Shared`'s drop, which
    /// never unwinds, drops what is idle).
    fn drop(&mut self) {
        // `AcqRel`: the last handle sees every other handle's uses.
        if self
            .inner()
            .handles
            .fetch_sub(1, crate::loom::Ordering::AcqRel)
            == 1
        {
            self.inner().orphan();
            if let Some(let_go) = self.inner().keep.give(1) {
                // SAFETY: `drop` borrows the handle, not the state.
                unsafe { let_go.run() };
            }
        }
    }
}

impl<T: Recyclable + Send + Default + 'static> Default for Recycler<T> {
    fn default() -> Self {
        Self::new()
    }
}

// Unwind safety: a recycler is `UnwindSafe` and `RefUnwindSafe` whatever
// `T` is, as a `Mutex<T>` is (there by poisoning). The argument is invariant
// 4 of DESIGN.md: a panic in user code leaves the recycler consistent. User
// code runs in `reset`, the factory, `retained_bytes`, an object's `Drop`,
// and whatever holds a guard; the recycler runs none of it inside a
// critical section of its own (a cache is changed only in closures that run
// no user code; idle objects are counted, then dropped one by one, so that a
// panicking `Drop` stops neither the others nor the books: `reclaim.rs`),
// and counts the object concerned before the call can unwind, so its
// books balance after the panic (`tests/tests/guard_fit.rs` checks them
// after a panic caught around a `get`). Nor can a panic leave a broken `T`
// in the pool for someone else to see through `&Recycler`: a guard dropped
// while its thread panics drops its object instead of pooling it, an object
// whose `reset` or `retained_bytes` panics is dropped, and a factory that
// panics leaves nothing. The idle objects a recycler holds are ones whose
// `reset` completed, and only a guard, with `Box`'s bounds (see
// `guard/forward.rs`), hands one out.

/// A recycler stays consistent across a panic in user code; see the
/// comment above this impl in the source.
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use recycler_core::Recycler;
///
/// let pool: Recycler<Vec<u8>> = Recycler::new();
/// let caught = catch_unwind(|| {
///     let mut v = pool.get(); // `&pool` is captured: no `AssertUnwindSafe`
///     v.push(1);
///     panic!("in user code");
/// });
/// assert!(caught.is_err());
/// let s = pool.stats();
/// assert_eq!((s.created, s.in_use, s.idle, s.dropped), (1, 0, 0, 1)); // not pooled
/// ```
impl<T> std::panic::RefUnwindSafe for Recycler<T> {}

/// As [`RefUnwindSafe`](std::panic::RefUnwindSafe): a recycler moved into
/// `catch_unwind` is consistent after the panic.
///
/// # Examples
///
/// ```
/// use std::panic::catch_unwind;
/// use recycler_core::Recycler;
///
/// let pool: Recycler<String> = Recycler::new();
/// let pool = catch_unwind(move || {
///     drop(pool.get());
///     pool
/// })
/// .unwrap();
/// assert_eq!(pool.stats().idle, 1);
/// ```
impl<T> std::panic::UnwindSafe for Recycler<T> {}

impl<T: Recyclable + Send + 'static> fmt::Debug for Recycler<T> {
    /// Shows the settings and a statistics snapshot; takes no lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recycler")
            .field(
                "max_capacity_per_thread",
                &self.inner().config.max_capacity_per_thread,
            )
            .field("batch_size", &self.inner().config.batch_size)
            .field("ratio", &self.inner().config.ratio)
            .field("depot_capacity", &self.inner().config.depot_capacity)
            .field("max_idle_bytes", &self.inner().config.max_idle_bytes)
            .field("reset_on_return", &self.inner().config.reset_on_return)
            .field("striped", &self.inner().config.stripes)
            .field(
                "stripes_on",
                &self.inner().stripes.as_ref().map(
                    |s| {
                        if s.on_sections() { "rseq" } else { "locks" }
                    },
                ),
            )
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use static_assertions::{assert_impl_all, assert_not_impl_any};
    use std::marker::PhantomData;

    /// Neither `Send` nor `Sync`.
    struct NotSend(PhantomData<*const u8>);

    impl Recyclable for NotSend {
        fn reset(&mut self) {}
    }

    assert_impl_all!(Recycler<Vec<u8>>: Send, Sync);
    assert_not_impl_any!(Recycler<NotSend>: Send, Sync);

    #[test]
    fn owner_path_reuses_the_same_object() {
        let pool: Recycler<Vec<u8>> = Recycler::new();
        let mut a = pool.get();
        a.reserve(100);
        let ptr = a.as_ptr();
        drop(a);
        let b = pool.get();
        assert_eq!(b.as_ptr(), ptr);
        assert!(b.is_empty());
        let s = pool.stats();
        assert_eq!((s.gets, s.hits, s.created, s.released_local), (2, 1, 1, 1));
    }

    #[test]
    fn trim_claims_no_cache_for_a_thread_without_one() {
        let pool: Recycler<Vec<u8>> = Recycler::new();
        // This thread's cache: one object in the hot slot, two on the batch.
        drop((pool.get(), pool.get(), pool.get()));
        let caches = || pool.inner().all_caches().count();
        let before = caches();
        std::thread::scope(|s| s.spawn(|| pool.trim()).join().unwrap());
        assert_eq!(caches(), before, "a cache claimed only to be trimmed");
        // The batch trimmed; the slot, which only its owner touches, kept.
        let s = pool.stats();
        assert_eq!((s.idle, s.dropped), (1, 2), "{s}");
    }

    #[test]
    fn spill_moves_oldest_batch_to_depot() {
        let pool = Recycler::<u32>::builder()
            .max_capacity_per_thread(4)
            .batch_size(2)
            .build()
            .unwrap();
        let guards: Vec<_> = (0..5).map(|_| pool.get()).collect();
        drop(guards);
        assert_eq!(pool.inner().depot.len(), 2);
        let s = pool.stats();
        assert_eq!(s.idle, 5);
        assert_eq!(s.dropped, 0);
    }
}
