//! [`Recycler<T>`]: the shared handle, and the paths an object takes out of
//! the pool and back.
//!
//! - **get**: pop the calling thread's cache (owner path: a thread-local
//!   lookup, a load and compare, a pop). When it is empty: send this thread's
//!   pending foreign releases home, drain the inbox (up to a batch), take a
//!   batch from the depot, and only then call the factory.
//! - **release on the owner thread**: reset, push onto the cache; past
//!   `max_capacity_per_thread`, spill the oldest batch to the depot.
//! - **release on another thread**: reset, gather the object with others of
//!   the same home in the releasing thread's cache, and send the batch to the
//!   home's inbox when it is full (or when the releasing thread next gets, or
//!   exits).
//! - **thread exit**: the exit hook ([`crate::registry`]) moves the cache and
//!   its inbox into the depot and gives the cache up.
//!
//! A recycler with an idle-memory cap ([`crate::idle`]) keeps its caches out
//! of the hot index under their plain id, and marks its homes, so that its
//! gets and releases take the slow paths, which count bytes; the inlined
//! owner paths of other recyclers are unchanged. The buffer pool uses its own
//! inlined paths ([`Inner::pop_local`], [`Inner::push_local`]) on top of the
//! same caches.

use std::fmt;
use std::mem;
use std::ptr::{self, NonNull};

use crate::builder::{Config, Factory, RecyclerBuilder, SharedIdle};
use crate::depot::Depot;
use crate::guard::{OwnedPooled, Pooled};
use crate::idle::IdleAccount;
use crate::inbox::Batch;
use crate::local::{Home, Local};
use crate::loom::{Arc, Ordering, ThreadSlots, Weak, fence};
use crate::recyclable::Recyclable;
use crate::registry::{self, ExitFlush, Token};
use crate::stats::{Counters, RecyclerStats, Tally};

/// What an idle object weighs against an idle-memory cap: its
/// `retained_bytes`, not counting the box the recycler keeps it in.
#[inline]
#[allow(
    clippy::borrowed_box,
    reason = "takes the box so that the box's own `Recyclable` impl, which adds its size, cannot be picked by mistake"
)]
fn bytes_of<T: Recyclable>(obj: &Box<T>) -> u64 {
    T::retained_bytes(obj) as u64
}

/// Marks the hot-index key of a recycler with an idle-memory cap, so that
/// the inlined owner path (which looks up the plain id) never finds its
/// caches. Recycler ids never reach this bit.
const ACCOUNTED_KEY: u64 = 1 << 63;

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
    inner: Arc<Inner<T>>,
}

/// The state shared by all threads of one recycler.
pub(crate) struct Inner<T> {
    /// Unique for the life of the process; keys the threads' hot indexes.
    id: u64,
    /// The key of this recycler's entries in the hot index: `id`, or `id`
    /// marked with [`ACCOUNTED_KEY`] under an idle-memory cap.
    hot_key: u64,
    /// The idle-memory account, under a cap.
    idle: Option<Arc<IdleAccount>>,
    /// This recycler's index among the members of its idle account.
    member: usize,
    /// One cache per thread.
    slots: ThreadSlots<Local<T>>,
    depot: Depot<T>,
    factory: Factory<T>,
    config: Config,
    /// Tallies of the paths that have no owning thread.
    shared: Counters,
    /// This recycler as the target of thread-exit hooks.
    exit_hook: Weak<dyn ExitFlush>,
    /// `Local::new`, captured where `T: Send` is known, so that the release
    /// path (bounded by `T: Recyclable` only) can make caches too.
    new_local: fn(usize, *const Inner<T>) -> Local<T>,
    /// The home of the objects a thread gets while it owns no cache (while
    /// it exits): a cache no thread ever owns, so releases to it take the
    /// foreign path and end in the depot. With it, every object this
    /// recycler hands out has a home, through which its guard finds the
    /// recycler.
    orphan: Local<T>,
}

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
        Self::from_parts(Box::new(f), Config::DEFAULT, None)
    }

    /// A builder whose factory is `T::default`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().max_capacity_per_thread(64).build()?;
    /// # drop(pool);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn builder() -> RecyclerBuilder<T>
    where
        T: Default,
    {
        Self::builder_with_factory(T::default)
    }

    /// A builder whose factory is `f`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::builder_with_factory(|| String::with_capacity(64))
    ///     .batch_size(8)
    ///     .build()?;
    /// assert!(pool.get().capacity() >= 64);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn builder_with_factory(f: impl Fn() -> T + Send + Sync + 'static) -> RecyclerBuilder<T> {
        RecyclerBuilder::with_factory(Box::new(f))
    }

    pub(crate) fn from_parts(
        factory: Factory<T>,
        config: Config,
        shared_idle: Option<SharedIdle>,
    ) -> Self {
        let (idle, member) = match (shared_idle, config.max_idle_bytes) {
            (Some((acct, member)), _) => (Some(acct), member),
            (None, Some(cap)) => (Some(Arc::new(IdleAccount::new(cap as u64, 0, None))), 0),
            (None, None) => (None, 0),
        };
        let id = registry::new_recycler_id();
        let hot_key = if idle.is_some() {
            id | ACCOUNTED_KEY
        } else {
            id
        };
        let inner = Arc::new_cyclic(|this: &Weak<Inner<T>>| Inner {
            id,
            hot_key,
            idle,
            member,
            slots: ThreadSlots::new(),
            depot: Depot::new(config.depot_capacity),
            factory,
            config,
            shared: Counters::default(),
            exit_hook: this.clone(),
            new_local: Local::new,
            orphan: Local::new(config.max_capacity_per_thread, this.as_ptr()),
        });
        Self { inner }
    }

    /// Takes an object from the pool, or makes one with the factory if the
    /// pool has none.
    ///
    /// The object is reset (or fresh). It returns to the pool when the guard
    /// drops, wherever that happens.
    ///
    /// # Panics
    ///
    /// If the factory panics; the recycler stays usable.
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
    pub fn get(&self) -> Pooled<'_, T> {
        let (obj, home) = match self.inner.pop_owned() {
            Some(hit) => hit,
            None => self.inner.get_slow(),
        };
        // SAFETY: every home this recycler hands out is one of its caches
        // (possibly the orphan), and the guard borrows the recycler.
        unsafe { Pooled::new(obj, home) }
    }

    /// Takes an object from the pool, if it has one; never calls the factory.
    ///
    /// For code that must not grow the number of objects: it looks in the
    /// calling thread's cache, its inbox and the shared depot.
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
    pub fn try_get(&self) -> Option<Pooled<'_, T>> {
        let (obj, home) = match self.inner.pop_owned() {
            Some(hit) => hit,
            None => self.inner.take_pooled()?,
        };
        // SAFETY: as in `get`.
        Some(unsafe { Pooled::new(obj, home) })
    }

    /// Like [`get`](Self::get), for a recycler in an `Arc`: the guard holds a
    /// clone of the `Arc`, so it is `'static` and can move into tasks and
    /// threads that outlive the borrow.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::Recycler;
    ///
    /// let pool: Arc<Recycler<Vec<u8>>> = Arc::new(Recycler::new());
    /// let mut buf = pool.get_owned();
    /// std::thread::spawn(move || buf.push(1)).join().unwrap();
    /// assert_eq!(pool.stats().released_remote, 1);
    /// ```
    #[inline]
    pub fn get_owned(self: &Arc<Self>) -> OwnedPooled<T> {
        let (obj, home) = match self.inner.pop_owned() {
            Some(hit) => hit,
            None => self.inner.get_slow(),
        };
        OwnedPooled::new(Arc::clone(self), obj, home)
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
        self.inner.stats()
    }

    /// Frees the idle objects in the shared depot, in every thread's inbox,
    /// and in the calling thread's own cache. Other threads' caches are left
    /// alone: only their owners may touch them.
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
        self.inner.trim();
    }
}

impl<T> Recycler<T> {
    /// The shared state, for guards.
    #[inline(always)]
    pub(crate) fn inner(&self) -> &Inner<T> {
        &self.inner
    }
}

impl<T: Recyclable + Send + Default + 'static> Default for Recycler<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Recyclable + Send + 'static> fmt::Debug for Recycler<T> {
    /// Shows the settings and a statistics snapshot; takes no lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recycler")
            .field(
                "max_capacity_per_thread",
                &self.inner.config.max_capacity_per_thread,
            )
            .field("batch_size", &self.inner.config.batch_size)
            .field("ratio", &self.inner.config.ratio)
            .field("depot_capacity", &self.inner.config.depot_capacity)
            .field("max_idle_bytes", &self.inner.config.max_idle_bytes)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<T: Recyclable> Inner<T> {
    /// The owner path of `get`: pop the calling thread's cache, found
    /// through the thread's hot index.
    ///
    /// `None` sends the caller to the slow path: the cache is not in the hot
    /// index (none yet, not claimed), foreign releases are pending in it (the
    /// slow path sends them home), or it is empty.
    /// A recycler with an idle-memory cap indexes its caches under a marked
    /// key, so this lookup (by the plain id) never finds them: its gets take
    /// the slow path, which counts bytes.
    #[inline(always)]
    fn pop_owned(&self) -> Option<(Box<T>, Home<T>)> {
        let local = registry::hot(self.id).cast::<Local<T>>();
        // SAFETY: a hot-index entry under this recycler's plain id points to
        // a cache of this recycler that the calling thread owns (see
        // `hot_local`); null otherwise.
        let local = unsafe { local.as_ref() }?;
        // SAFETY: `local` is a cache the calling thread owns, and the
        // closure runs no user code.
        let obj = unsafe {
            local.with_cache(|c| {
                if c.pending.is_empty() {
                    c.batch.pop_back()
                } else {
                    None
                }
            })
        }?;
        Counters::add_owned(&local.counters.hits, 1);
        Some((obj, Home::new(Some(local), false)))
    }

    /// The calling thread's cache, if the thread's hot index has it: then
    /// the thread owns it.
    #[inline(always)]
    fn hot_local(&self) -> Option<&Local<T>> {
        let local = registry::hot(self.hot_key).cast::<Local<T>>();
        // SAFETY: a hot-index entry for this recycler's key points to a cache
        // of this recycler (alive: `&self`) that the calling thread owns (the
        // contract of `registry::set_hot`); null otherwise.
        unsafe { local.as_ref() }
    }

    /// `get` when the owner path found nothing: pooled, else made.
    #[cold]
    #[inline(never)]
    pub(crate) fn get_slow(&self) -> (Box<T>, Home<T>) {
        match self.take_pooled() {
            Some(hit) => hit,
            None => self.make(),
        }
    }

    /// Finds a pooled object: the calling thread's cache, its inbox, the
    /// depot. Sends the thread's pending foreign releases home first.
    #[cold]
    #[inline(never)]
    pub(crate) fn take_pooled(&self) -> Option<(Box<T>, Home<T>)> {
        let Some(local) = self.local_for_current() else {
            // The thread is exiting: it may use the depot but own nothing.
            let obj = self.depot.take_one()?;
            Counters::add_shared(&self.shared.hits, 1);
            if let Some(acct) = &self.idle {
                acct.forget(bytes_of(&obj));
            }
            return Some((obj, self.home(None, false)));
        };
        self.flush_pending(local);
        // SAFETY: `local_for_current` returns a cache the calling thread
        // owns; the closure runs no user code.
        let mut obj = unsafe { local.with_cache(|c| c.batch.pop_back()) };
        if obj.is_none() && self.refill(local) {
            // SAFETY: as above.
            obj = unsafe { local.with_cache(|c| c.batch.pop_back()) };
        }
        let obj = obj?;
        Counters::add_owned(&local.counters.hits, 1);
        if let Some(acct) = &self.idle {
            acct.sub(acct.cell(), bytes_of(&obj));
        }
        Some((obj, self.home(Some(local), false)))
    }

    /// The home of an object handed out to the owner of `local`, marked if
    /// this recycler counts idle bytes.
    #[inline]
    pub(crate) fn home(&self, local: Option<&Local<T>>, discard: bool) -> Home<T> {
        let home = Home::new(Some(local.unwrap_or(&self.orphan)), discard);
        if self.idle.is_some() {
            home.accounted()
        } else {
            home
        }
    }

    /// Calls the factory. The object is pooled on release unless pooling is
    /// off or `ratio` says this one is to be dropped.
    fn make(&self) -> (Box<T>, Home<T>) {
        // A panicking factory leaves everything as it was: nothing is counted
        // or borrowed yet.
        let obj = Box::new((self.factory)());
        self.made(obj)
    }

    /// Counts `obj`, freshly made by the factory or by the buffer pool, as
    /// made and handed out; applies `ratio`.
    pub(crate) fn made(&self, obj: Box<T>) -> (Box<T>, Home<T>) {
        let local = self.local_for_current();
        let keep = self.config.pooling()
            && match local {
                // SAFETY: `local_for_current` returns a cache the calling
                // thread owns; the closure runs no user code.
                Some(local) => unsafe {
                    local.with_cache(|c| {
                        let keep = c.fresh == 0;
                        c.fresh = if c.fresh + 1 >= self.config.ratio {
                            0
                        } else {
                            c.fresh + 1
                        };
                        keep
                    })
                },
                None => true,
            };
        match local {
            Some(local) => Counters::add_owned(&local.counters.created, 1),
            None => Counters::add_shared(&self.shared.created, 1),
        }
        (obj, self.home(local, !keep))
    }

    /// Makes `obj`, an object in use that this recycler did not hand out (a
    /// buffer that grew into another bucket), one of its objects in use,
    /// homed at the calling thread's cache; the caller releases it next.
    pub(crate) fn adopt(&self, obj: Box<T>) -> (Box<T>, Home<T>) {
        let local = self.local_for_current();
        self.count_for(local, |c| &c.adopted, 1);
        (obj, self.home(local, false))
    }

    /// The calling thread's cache, claimed for it if need be; `None` while
    /// the thread is exiting.
    #[inline]
    pub(crate) fn local_for_current(&self) -> Option<&Local<T>> {
        match self.hot_local() {
            Some(local) => Some(local),
            None => self.claim_local(),
        }
    }

    /// `local_for_current` when the hot index does not have the cache: find
    /// (or make) it in the thread's slot, claim it, and index it.
    #[cold]
    #[inline(never)]
    fn claim_local(&self) -> Option<&Local<T>> {
        let token = registry::assign();
        if !registry::is_live(token) {
            return None;
        }
        let local = self
            .slots
            .get_or(|| (self.new_local)(self.config.max_capacity_per_thread, ptr::from_ref(self)));
        if !local.is_owned_by(token) {
            // SAFETY: `local` is a cache of this recycler, which keeps it (at
            // a fixed address) for as long as the recycler lives.
            let registered =
                unsafe { registry::register(self.exit_hook.clone(), ptr::from_ref(local).cast()) };
            if !registered {
                return None;
            }
            // SAFETY: `local` is the calling thread's own slot.
            unsafe { local.claim(token) };
        }
        // SAFETY: the calling thread owns `local`, a cache of this recycler,
        // until it exits (whose hook clears the index first).
        unsafe { registry::set_hot(self.hot_key, ptr::from_ref(local).cast()) };
        Some(local)
    }

    /// Moves up to a batch from `local`'s inbox into its cache, or else one
    /// batch from the depot. Returns whether anything came.
    fn refill(&self, local: &Local<T>) -> bool {
        let mut got = 0;
        while got < self.config.batch_size {
            let Some(batch) = local.inbox.recv() else {
                break;
            };
            got += batch.len();
            // SAFETY: the caller owns `local`; `extend` moves boxes and runs
            // no user code.
            unsafe { local.with_cache(|c| c.batch.extend(batch)) };
        }
        if got > 0 {
            return true;
        }
        let Some(batch) = self.depot.take() else {
            return false;
        };
        // SAFETY: as above.
        unsafe { local.with_cache(|c| c.batch.extend(batch)) };
        true
    }

    /// Returns a released object to the pool. Runs `reset` first, on the
    /// calling thread; see the module docs for where the object goes.
    ///
    /// The owner path is inlined into the guard's `drop`; every other case
    /// goes through the one out-of-line call at the end, which keeps the
    /// inlined part small enough for the compiler to inline it into the
    /// caller's loop.
    ///
    /// `reset` is [`Inner::resets`] of the home, evaluated by the caller
    /// before it takes the object out of the guard: `panicking()` is a call
    /// that could unwind, and no owned box must be live across it, or the
    /// unwinding cleanup makes this path too large to inline.
    #[inline(always)]
    pub(crate) fn release(&self, obj: Box<T>, home: Home<T>, reset: bool) {
        let mut obj = obj;
        if reset {
            obj = Resetting::reset(self, obj, home);
            // SAFETY: a guard borrows (or holds an `Arc` of) the recycler, so
            // the recycler outlives this call.
            if let Some(local) = unsafe { home.local() } {
                if local.is_owned_by(registry::current()) {
                    let max = self.config.max_capacity_per_thread;
                    // SAFETY: the calling thread owns `local`, a cache of
                    // this recycler, whose capacity is `max`; the admission
                    // check touches nothing. Room in the cache and in its
                    // allocation: the push neither spills nor grows.
                    match unsafe { Self::push_local(local, obj, max, true, |_| true) } {
                        Ok(()) => return,
                        Err(back) => obj = back,
                    }
                }
            }
        }
        self.release_slow(obj, home, reset);
    }

    /// Whether an object released now to `home` is reset and pooled on the
    /// inlined path: not when `ratio` or capacity 0 marked it for dropping,
    /// nor when the releasing thread is panicking (the guard's holder failed;
    /// the object may be inconsistent, and a panicking `reset` would abort),
    /// nor when its recycler counts idle bytes (the slow path resets it).
    #[inline(always)]
    pub(crate) fn resets(home: Home<T>) -> bool {
        !home.takes_slow_path() && !std::thread::panicking()
    }

    /// Every release but the owner's push into a cache with room: discards
    /// (`ratio`, capacity 0, a panicking thread), releases under an
    /// idle-memory cap, releases on a thread that does not own the object's
    /// home, and a full cache. `reset` says whether `obj` has been reset.
    #[cold]
    #[inline(never)]
    pub(crate) fn release_slow(&self, obj: Box<T>, home: Home<T>, reset: bool) {
        let mut obj = obj;
        if !reset {
            if home.is_discard() || std::thread::panicking() {
                self.discard(obj, home);
                return;
            }
            // Sent here by an idle-memory cap: reset now, then count.
            obj = Resetting::reset(self, obj, home);
        }
        if let Some(acct) = &self.idle {
            let bytes = bytes_of(&obj);
            let cell = self.local_for_current().map(|_| acct.cell());
            if !acct.admit(cell, bytes, self.member) {
                self.discard(obj, home);
                return;
            }
        }
        // SAFETY: the recycler outlives the guard being released.
        match unsafe { home.local() } {
            Some(local) if local.is_owned_by(registry::current()) => {
                self.release_owned(local, obj);
            }
            _ => self.release_foreign(obj, home),
        }
    }

    /// Pushes a released object onto the cache of the calling thread, which
    /// owns `local`; past `max_capacity_per_thread`, spills first.
    fn release_owned(&self, local: &Local<T>, obj: Box<T>) {
        let max = self.config.max_capacity_per_thread;
        // SAFETY: the caller owns `local`; the closure runs no user code.
        let full = unsafe {
            local.with_cache(|c| {
                if c.batch.len() < max {
                    c.batch.push_back(obj);
                    None
                } else {
                    Some(obj)
                }
            })
        };
        match full {
            None => Counters::add_owned(&local.counters.released_local, 1),
            Some(obj) => self.release_spilling(local, obj),
        }
    }

    /// Release on the owner thread into a full cache: spill the oldest batch
    /// to the depot to make room.
    fn release_spilling(&self, local: &Local<T>, obj: Box<T>) {
        let batch_size = self.config.batch_size;
        // SAFETY: the caller owns `local`; the closure runs no user code.
        let spilled = unsafe {
            local.with_cache(|c| {
                c.batch.push_back(obj);
                let n = batch_size.min(c.batch.len());
                c.batch.drain(..n).collect::<Batch<T>>()
            })
        };
        Counters::add_owned(&local.counters.released_local, 1);
        self.spill(local, spilled);
    }

    /// Drops a released object instead of pooling it.
    pub(crate) fn discard(&self, obj: Box<T>, home: Home<T>) {
        self.count_release(home, 1);
        // SAFETY: the recycler outlives the guard that is being released.
        let local = unsafe { home.local() };
        self.count_for(local, |c| &c.dropped, 1);
        drop(obj);
    }

    /// Counts a release as local or remote, on the right counters.
    fn count_release(&self, home: Home<T>, n: u64) {
        // SAFETY: the recycler outlives the guard that is being released.
        let local = unsafe { home.local() };
        let token = registry::current();
        match local {
            Some(l) if l.is_owned_by(token) => {
                Counters::add_owned(&l.counters.released_local, n);
            }
            _ => Counters::add_shared(&self.shared.released_remote, n),
        }
    }

    /// Adds to `local`'s counters if the calling thread owns it, else to the
    /// shared ones.
    fn count_for(
        &self,
        local: Option<&Local<T>>,
        field: impl Fn(&Counters) -> &crate::loom::StatCounter,
        n: u64,
    ) {
        match local {
            Some(l) if l.is_owned_by(registry::current()) => {
                Counters::add_owned(field(&l.counters), n)
            }
            _ => Counters::add_shared(field(&self.shared), n),
        }
    }

    /// Detaches an object for good (`into_inner`).
    pub(crate) fn count_detached(&self, home: Home<T>) {
        // SAFETY: the recycler outlives the guard being detached.
        let local = unsafe { home.local() };
        self.count_for(local, |c| &c.detached, 1);
    }

    /// Moves a batch the owner spilled into the depot; drops what does not fit.
    #[cold]
    #[inline(never)]
    fn spill(&self, local: &Local<T>, batch: Batch<T>) {
        if let Some(rejected) = self.depot.put(batch) {
            self.drop_idle(rejected, Some(local));
        }
    }

    /// Drops idle objects the pool has no room for: counts them as dropped
    /// (on `mine`'s counters if the calling thread owns it) and takes their
    /// bytes off the idle account.
    fn drop_idle(&self, objs: Batch<T>, mine: Option<&Local<T>>) {
        self.count_for(mine, |c| &c.dropped, objs.len() as u64);
        self.forget(&objs);
        drop(objs);
    }

    /// Takes the bytes of idle objects about to be dropped off the account.
    fn forget(&self, objs: &[Box<T>]) {
        if let Some(acct) = &self.idle {
            acct.forget(objs.iter().map(bytes_of).sum());
        }
    }

    /// Release on a thread that does not own the object's home.
    fn release_foreign(&self, obj: Box<T>, home: Home<T>) {
        let mine = self.local_for_current();
        let home_ptr = home.local_ptr();
        let Some(mine) = mine else {
            // The thread is exiting: send the object straight home.
            Counters::add_shared(&self.shared.released_remote, 1);
            match home_ptr {
                Some(home_ptr) => self.send_home(home_ptr, vec![obj], None),
                None => self.store(vec![obj], None),
            }
            return;
        };
        let Some(home_ptr) = home_ptr else {
            Counters::add_owned(&mine.counters.released_remote, 1);
            self.store(vec![obj], Some(mine));
            return;
        };
        if ptr::eq(home_ptr.as_ptr(), mine) {
            // This thread has just claimed the object's home (it took over
            // the slot of the thread that got the object): this is the owner.
            self.release_owned(mine, obj);
            return;
        }
        Counters::add_owned(&mine.counters.released_remote, 1);
        let batch_size = self.config.batch_size;
        // SAFETY: `local_for_current` returns a cache the calling thread
        // owns; the closure runs no user code.
        let full = unsafe { mine.with_cache(|c| c.add_pending(home_ptr, obj, batch_size)) };
        if let Some(full) = full {
            self.send_home(full.home, full.objs, Some(mine));
        }
    }

    /// Sends every batch `mine` has pending to its home.
    fn flush_pending(&self, mine: &Local<T>) {
        loop {
            // SAFETY: the caller owns `mine`; the closure runs no user code.
            let Some(p) = (unsafe { mine.with_cache(|c| c.pending.pop()) }) else {
                break;
            };
            self.send_home(p.home, p.objs, Some(mine));
        }
    }

    /// Sends `batch` to the inbox of `home`. If `home` has been given up by
    /// its thread, drains that inbox into the depot, so nothing strands.
    /// `mine` is the calling thread's cache, if it owns one, for counting.
    fn send_home(&self, home: NonNull<Local<T>>, batch: Batch<T>, mine: Option<&Local<T>>) {
        // SAFETY: every home is a cache of this recycler, which is alive
        // (`&self`) and never moves or frees a cache before it drops.
        let home = unsafe { home.as_ref() };
        if let Err(rejected) = home.inbox.send(batch) {
            self.drop_idle(rejected, mine);
            return;
        }
        // Store-load ordering with `flush_on_exit`: the exiting owner stores
        // NOBODY, fences, then drains; we sent, fence, then load the owner.
        // With both fences SeqCst, either the drain sees our batch or this
        // load sees NOBODY (or a later owner, who will drain the inbox).
        fence(Ordering::SeqCst);
        if home.is_abandoned() {
            self.rescue(home);
        }
    }

    /// Drains the inbox of a cache no thread owns into the depot.
    fn rescue(&self, local: &Local<T>) {
        while let Some(batch) = local.inbox.recv() {
            self.store(batch, None);
        }
    }

    /// Puts a batch in the depot, dropping (and counting) what does not fit.
    fn store(&self, batch: Batch<T>, mine: Option<&Local<T>>) {
        if let Some(rejected) = self.depot.put(batch) {
            self.drop_idle(rejected, mine);
        }
    }

    /// Every thread's counters, summed.
    pub(crate) fn tally(&self) -> Tally {
        let mut tally = Tally::default();
        self.shared.add_to(&mut tally);
        for local in self.slots.iter() {
            local.counters.add_to(&mut tally);
        }
        tally
    }

    fn stats(&self) -> RecyclerStats {
        let idle_bytes = self.idle.as_ref().map_or(0, |acct| acct.total());
        self.tally().into_stats(idle_bytes)
    }

    fn trim(&self) {
        let mut freed: Vec<Batch<T>> = Vec::new();
        if let Some(local) = self.local_for_current() {
            self.flush_pending(local);
            // SAFETY: the calling thread owns `local`; the closure runs no
            // user code.
            let own = unsafe { local.with_cache(|c| mem::take(&mut c.batch)) };
            Counters::add_owned(&local.counters.dropped, own.len() as u64);
            let own: Batch<T> = own.into();
            self.forget(&own);
            freed.push(own);
        }
        let mut n = 0;
        for local in self.slots.iter().chain([&self.orphan]) {
            while let Some(batch) = local.inbox.recv() {
                n += batch.len();
                self.forget(&batch);
                freed.push(batch);
            }
        }
        for batch in self.depot.drain() {
            n += batch.len();
            self.forget(&batch);
            freed.push(batch);
        }
        Counters::add_shared(&self.shared.dropped, n as u64);
        // User `Drop`s run last, with nothing borrowed or locked.
        drop(freed);
    }
}

/// The buffer pool's paths: it finds the calling thread's caches through an
/// index of its own (one per pool, covering all its buckets) and counts idle
/// bytes itself on its inlined owner paths.
impl<T: Recyclable> Inner<T> {
    /// Pops an idle object from `local`, counting a hit if `count`; returns
    /// it with the cache's `aux` word.
    ///
    /// # Safety
    ///
    /// The calling thread owns `local`, a cache of a recycler of `T`.
    #[inline(always)]
    pub(crate) unsafe fn pop_local(local: &Local<T>, count: bool) -> Option<(Box<T>, *const ())> {
        // SAFETY: the caller owns `local`; the closure runs no user code.
        let (obj, aux) = unsafe {
            local.with_cache(|c| {
                let obj = if c.pending.is_empty() {
                    c.batch.pop_back()
                } else {
                    None
                };
                (obj, c.aux)
            })
        };
        let obj = obj?;
        if count {
            Counters::add_owned(&local.counters.hits, 1);
        }
        Some((obj, aux))
    }

    /// Pushes `obj`, already reset, onto `local` if it holds fewer than
    /// `max` objects, its allocation has room, and `admit` (the idle-memory
    /// check, given the cache's `aux` word, run only then) agrees; counts the
    /// release if `count`. Otherwise hands `obj` back, for
    /// [`release_slow`](Self::release_slow).
    ///
    /// # Safety
    ///
    /// The calling thread owns `local`, a cache of a recycler of `T` whose
    /// `max_capacity_per_thread` is `max`, and `admit` does not touch the
    /// cache.
    #[inline(always)]
    pub(crate) unsafe fn push_local(
        local: &Local<T>,
        obj: Box<T>,
        max: usize,
        count: bool,
        admit: impl FnOnce(*const ()) -> bool,
    ) -> Result<(), Box<T>> {
        // SAFETY: the caller owns `local`; the closure runs no user code
        // (`admit` is the pool's accounting).
        let rest = unsafe {
            local.with_cache(|c| {
                if c.batch.len() < max && c.batch.len() < c.batch.capacity() && admit(c.aux) {
                    c.batch.push_back(obj);
                    None
                } else {
                    Some(obj)
                }
            })
        };
        match rest {
            None => {
                if count {
                    Counters::add_owned(&local.counters.released_local, 1);
                }
                Ok(())
            }
            Some(obj) => Err(obj),
        }
    }

    /// Sets `local`'s `aux` word.
    ///
    /// # Safety
    ///
    /// The calling thread owns `local`.
    pub(crate) unsafe fn set_aux(local: &Local<T>, aux: *const ()) {
        // SAFETY: the caller owns `local`; the closure runs no user code.
        unsafe { local.with_cache(|c| c.aux = aux) };
    }

    /// Frees idle objects worth at least `want` bytes if it can: from `own`
    /// (oldest first), then from the depot, then from the inboxes. Counts
    /// them as evicted and dropped, takes their bytes off the idle account,
    /// and returns the bytes freed.
    ///
    /// # Safety
    ///
    /// `own`, if given, is a cache of this recycler that the calling thread
    /// owns.
    pub(crate) unsafe fn evict(&self, want: u64, own: Option<&Local<T>>) -> u64 {
        let mut victims: Batch<T> = Vec::new();
        let mut freed = 0u64;
        if let Some(local) = own {
            while freed < want {
                // SAFETY: the caller owns `local`; the closure runs no user
                // code.
                let Some(obj) = (unsafe { local.with_cache(|c| c.batch.pop_front()) }) else {
                    break;
                };
                freed += bytes_of(&obj);
                victims.push(obj);
            }
        }
        while freed < want {
            let Some(obj) = self.depot.take_one() else {
                break;
            };
            freed += bytes_of(&obj);
            victims.push(obj);
        }
        if freed < want {
            'inboxes: for local in self.slots.iter().chain([&self.orphan]) {
                while let Some(mut batch) = local.inbox.recv() {
                    while freed < want {
                        let Some(obj) = batch.pop() else { break };
                        freed += bytes_of(&obj);
                        victims.push(obj);
                    }
                    if !batch.is_empty() {
                        self.store(batch, None);
                    }
                    if freed >= want {
                        break 'inboxes;
                    }
                }
            }
        }
        let n = victims.len() as u64;
        Counters::add_shared(&self.shared.evicted, n);
        Counters::add_shared(&self.shared.dropped, n);
        if let Some(acct) = &self.idle {
            acct.forget(freed);
        }
        drop(victims);
        freed
    }
}

impl<T: Recyclable + Send> ExitFlush for Inner<T> {
    unsafe fn flush_on_exit(&self, local: *const (), token: Token) {
        // SAFETY: the caller passes the pointer registered for this recycler
        // in `local_for_current`: a `Local<T>` it keeps alive.
        let local = unsafe { &*local.cast::<Local<T>>() };
        if !local.is_owned_by(token) {
            return;
        }
        self.flush_pending(local);
        // SAFETY: the exiting thread still owns `local`; the closure runs no
        // user code.
        let cached = unsafe {
            local.with_cache(|c| {
                c.fresh = 0;
                mem::take(&mut c.batch)
            })
        };
        let mut rest: Batch<T> = cached.into();
        while !rest.is_empty() {
            let chunk = rest.split_off(rest.len().saturating_sub(self.config.batch_size));
            if let Some(rejected) = self.depot.put(chunk) {
                self.drop_idle(rejected, Some(local));
            }
        }
        // The thread's unpublished idle bytes become everyone's: its objects
        // stay idle, in the depot.
        if let Some(acct) = &self.idle {
            acct.flush(acct.cell());
        }
        // SAFETY: the calling thread owns `local` and touches only its inbox
        // from here on.
        unsafe { local.abandon() };
        // Pairs with the fence in `send_home`.
        fence(Ordering::SeqCst);
        self.rescue(local);
    }
}

/// An object being reset. If `reset` panics, unwinding drops this, which
/// counts the object as released and dropped and drops it (out of line, so
/// that the inlined release path carries a single cleanup call).
struct Resetting<'a, T: Recyclable> {
    inner: &'a Inner<T>,
    home: Home<T>,
    obj: mem::ManuallyDrop<Box<T>>,
}

impl<'a, T: Recyclable> Resetting<'a, T> {
    /// Runs `obj.reset()`; returns the object unless `reset` panics.
    #[inline(always)]
    fn reset(inner: &'a Inner<T>, obj: Box<T>, home: Home<T>) -> Box<T> {
        let mut this = Self {
            inner,
            home,
            obj: mem::ManuallyDrop::new(obj),
        };
        this.obj.reset();
        let mut this = mem::ManuallyDrop::new(this);
        // SAFETY: `this` is never dropped, so the object is taken once, here.
        unsafe { mem::ManuallyDrop::take(&mut this.obj) }
    }
}

impl<T: Recyclable> Drop for Resetting<'_, T> {
    #[cold]
    #[inline(never)]
    fn drop(&mut self) {
        self.inner.count_release(self.home, 1);
        // SAFETY: the recycler outlives the guard being released.
        let local = unsafe { self.home.local() };
        self.inner.count_for(local, |c| &c.dropped, 1);
        // SAFETY: dropped once: this guard runs only when `reset` unwinds,
        // and `Resetting::reset` takes the object only when it returns.
        drop(unsafe { mem::ManuallyDrop::take(&mut self.obj) });
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
    fn spill_moves_oldest_batch_to_depot() {
        let pool = Recycler::<u32>::builder()
            .max_capacity_per_thread(4)
            .batch_size(2)
            .build()
            .unwrap();
        let guards: Vec<_> = (0..5).map(|_| pool.get()).collect();
        drop(guards);
        assert_eq!(pool.inner.depot.len(), 2);
        let s = pool.stats();
        assert_eq!(s.idle, 5);
        assert_eq!(s.dropped, 0);
    }
}
