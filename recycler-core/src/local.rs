//! `Local<T>`: one thread's cache of idle objects, and [`Home`], the tagged
//! pointer a guard keeps to the cache its object returns to.
//!
//! A cache has an owner: the thread whose token is in `owner`. Only the owner
//! touches the unsynchronized part (`cache`); any thread may send batches to
//! the `inbox` and read `owner`. Ownership changes hands in two ways only:
//!
//! - a thread claims a cache that the `thread_local` crate hands it (a new
//!   cache, or the cache of an exited thread whose id it took over); the
//!   crate's id allocation, behind a mutex, orders the new owner's accesses
//!   after the old owner's last ones;
//! - the owner's exit hook gives the cache up (owner becomes `NOBODY`) after
//!   moving its contents to the depot.

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use crate::inbox::{Batch, Inbox};
use crate::loom::{AtomicU64, Ordering, UnsafeCell};
use crate::recycler::Inner;
use crate::registry::{NOBODY, Token};
use crate::stats::Counters;

/// At most this many homes have releases pending on one thread at a time.
const MAX_PENDING_HOMES: usize = 8;

/// One thread's cache. Aligned to 128 bytes so that caches of different
/// threads, which the `thread_local` crate stores side by side, never share a
/// cache line (nor an adjacent-line prefetch pair).
#[repr(align(128))]
pub(crate) struct Local<T> {
    /// The owning thread's token, or `NOBODY`.
    owner: AtomicU64,
    /// Owner-only state.
    cache: UnsafeCell<Cache<T>>,
    /// Written by the owner only (see `Counters::add_owned`).
    pub(crate) counters: Counters,
    /// Objects released on other threads, on their way here.
    pub(crate) inbox: Inbox<T>,
    /// The recycler this cache belongs to: a guard keeps only its object and
    /// its home, and finds the recycler through the home. Null for a cache
    /// made outside a recycler (none is).
    recycler: *const Inner<T>,
}

/// The part of a [`Local`] that only its owner touches.
pub(crate) struct Cache<T> {
    /// Idle objects; `get` pops and releases push at the back (LIFO, so the
    /// objects used last, warm in cache, go out first); spills take the front.
    pub(crate) batch: VecDeque<Box<T>>,
    /// Objects released here whose home is another cache, gathered per home
    /// and sent a batch at a time.
    pub(crate) pending: Vec<Pending<T>>,
    /// Counts freshly made objects, for `ratio`.
    pub(crate) fresh: usize,
    /// An opaque word the buffer pool keeps with each of its caches (the
    /// owner's idle-memory delta), so that its owner paths need no other
    /// lookup; null for a plain recycler.
    pub(crate) aux: *const (),
}

/// Released objects gathered for one home.
pub(crate) struct Pending<T> {
    pub(crate) home: NonNull<Local<T>>,
    pub(crate) objs: Batch<T>,
}

// Why a `Local` may cross threads. Every `Local<T>` is made by `Local::new`,
// which requires `T: Send`, so the objects it holds may move between threads.
// (The impls carry no `T: Send` bound themselves so that `Recycler<T>` and the
// guards need none in their definitions; no `Local<T>` for a `T: !Send` can
// exist.) A `Local` moves between threads only as a whole: when the
// `thread_local` crate hands a dead thread's slot to the next thread, and
// when the recycler drops. The `NonNull`s in `pending` point to other caches
// of the same recycler, which drop together with it, and are dereferenced
// only for the thread-safe parts (`owner`, `inbox`); `recycler` points to the
// shared state that owns this cache, which is `Sync`.
//
// SAFETY: its objects are `Send` (made only by `Local::new`) and its pointers
// lead only to `Sync` state of its own recycler; see above.
unsafe impl<T> Send for Local<T> {}
// SAFETY: other threads touch only the atomics (`owner`, `counters`) and the
// inbox, which moves `Send` boxes; `cache` is touched only by the thread whose
// token is in `owner` (every `unsafe fn` of `Local` that reaches it says so).
unsafe impl<T> Sync for Local<T> {}

impl<T> Local<T> {
    /// A cache of the recycler at `recycler`, owned by nobody yet.
    pub(crate) fn new(inbox_capacity: usize, recycler: *const Inner<T>) -> Self
    where
        T: Send,
    {
        Self {
            owner: AtomicU64::new(NOBODY),
            cache: UnsafeCell::new(Cache {
                batch: VecDeque::new(),
                pending: Vec::new(),
                fresh: 0,
                aux: ptr::null(),
            }),
            counters: Counters::default(),
            inbox: Inbox::new(inbox_capacity),
            recycler,
        }
    }

    /// The recycler this cache belongs to.
    ///
    /// # Safety
    ///
    /// That recycler is alive for `'a` (it owns this cache, so it is alive
    /// whenever the cache is).
    #[inline(always)]
    pub(crate) unsafe fn recycler<'a>(&self) -> &'a Inner<T> {
        // SAFETY: `recycler` was set by the recycler that made this cache,
        // to its own shared state, which the caller guarantees is alive.
        unsafe { &*self.recycler }
    }

    /// Whether the thread with `token` owns this cache.
    ///
    /// `Relaxed` suffices: only the thread with `token` ever stores `token`
    /// here, so a thread sees its own token only if it stored it, and it
    /// reads its own latest store.
    #[inline(always)]
    pub(crate) fn is_owned_by(&self, token: Token) -> bool {
        self.owner.load(Ordering::Relaxed) == token
    }

    /// Whether a live thread owns this cache, for a releaser deciding if the
    /// inbox will be drained. Preceded by a `SeqCst` fence in the caller.
    pub(crate) fn is_abandoned(&self) -> bool {
        self.owner.load(Ordering::Relaxed) == NOBODY
    }

    /// Makes the calling thread, with `token`, the owner.
    ///
    /// # Safety
    ///
    /// The caller got this cache from the `thread_local` crate's slot for the
    /// calling thread, so no other live thread can own it.
    pub(crate) unsafe fn claim(&self, token: Token) {
        self.owner.store(token, Ordering::Relaxed);
    }

    /// Gives the cache up; a releaser that then sees `NOBODY` (after its
    /// fence) drains the inbox itself.
    ///
    /// # Safety
    ///
    /// The calling thread owns the cache and will not touch `cache` again
    /// unless it claims the cache anew.
    pub(crate) unsafe fn abandon(&self) {
        self.owner.store(NOBODY, Ordering::Relaxed);
    }

    /// Runs `f` on the owner-only state.
    ///
    /// # Safety
    ///
    /// The calling thread owns the cache, and `f` neither runs user code
    /// (`reset`, the factory, an object's `Drop`) nor calls `with_cache` on
    /// this cache again, so the unique borrow is never aliased.
    #[inline(always)]
    pub(crate) unsafe fn with_cache<R>(&self, f: impl FnOnce(&mut Cache<T>) -> R) -> R {
        self.cache.with_mut(|cache| {
            // SAFETY: the caller owns the cache, so no other thread touches
            // it, and `f` does not re-enter, so this is the only borrow.
            f(unsafe { &mut *cache })
        })
    }
}

impl<T> Cache<T> {
    /// Adds `obj` to the pending batch for `home`. Returns a batch to send
    /// when one is full, or when a home must make room for another.
    pub(crate) fn add_pending(
        &mut self,
        home: NonNull<Local<T>>,
        obj: Box<T>,
        batch_size: usize,
    ) -> Option<Pending<T>> {
        // Consecutive releases usually share a home: try the newest entry
        // first.
        let found = match self.pending.last() {
            Some(p) if p.home == home => Some(self.pending.len() - 1),
            _ => self.pending.iter().position(|p| p.home == home),
        };
        if let Some(i) = found {
            self.pending[i].objs.push(obj);
            if self.pending[i].objs.len() >= batch_size {
                return Some(self.pending.swap_remove(i));
            }
            return None;
        }
        let evicted =
            (self.pending.len() >= MAX_PENDING_HOMES).then(|| self.pending.swap_remove(0));
        let mut objs = Vec::with_capacity(batch_size);
        objs.push(obj);
        let entry = Pending { home, objs };
        if batch_size == 1 {
            debug_assert!(evicted.is_none());
            return Some(entry);
        }
        self.pending.push(entry);
        evicted
    }
}

/// Where a guard's object goes when released: the cache of the thread that
/// got it, or nowhere in particular (the depot), whether it is to be dropped
/// instead (`ratio`, capacity 0), and whether its recycler counts idle bytes
/// (`max_idle_bytes`), which sends its release down the slow path.
///
/// A pointer to the cache with the two flags in its low bits (caches are
/// 128-byte aligned); null for no cache.
pub(crate) struct Home<T> {
    ptr: *const Local<T>,
    _marker: PhantomData<*const T>,
}

const DISCARD: usize = 1;
const ACCOUNTED: usize = 2;
/// Either flag: the release cannot take the owner's inlined path.
const TAGS: usize = DISCARD | ACCOUNTED;

impl<T> Home<T> {
    #[inline(always)]
    pub(crate) fn new(local: Option<&Local<T>>, discard: bool) -> Self {
        let ptr = local.map_or(ptr::null(), ptr::from_ref);
        let ptr = if discard {
            ptr.map_addr(|a| a | DISCARD)
        } else {
            ptr
        };
        Self {
            ptr,
            _marker: PhantomData,
        }
    }

    /// The same home, marked as belonging to a recycler that counts idle
    /// bytes.
    #[inline(always)]
    pub(crate) fn accounted(self) -> Self {
        Self {
            ptr: self.ptr.map_addr(|a| a | ACCOUNTED),
            _marker: PhantomData,
        }
    }

    /// Whether the object is to be dropped on release.
    #[inline(always)]
    pub(crate) fn is_discard(&self) -> bool {
        self.ptr.addr() & DISCARD != 0
    }

    /// Whether the release must take the slow path: the object is to be
    /// dropped, or its recycler counts idle bytes. One test, like
    /// [`is_discard`](Self::is_discard) alone.
    #[inline(always)]
    pub(crate) fn takes_slow_path(&self) -> bool {
        self.ptr.addr() & TAGS != 0
    }

    /// The home cache's address, if any.
    #[inline(always)]
    pub(crate) fn local_ptr(&self) -> Option<NonNull<Local<T>>> {
        NonNull::new(self.ptr.map_addr(|a| a & !TAGS).cast_mut())
    }

    /// The home cache, if any.
    ///
    /// # Safety
    ///
    /// The recycler that made this home is alive for `'a`; it owns every cache
    /// until it drops.
    #[inline(always)]
    pub(crate) unsafe fn local<'a>(&self) -> Option<&'a Local<T>> {
        // SAFETY: a home's pointer is null or points to a cache of a live
        // recycler (the caller's guarantee); caches never move, since the
        // `thread_local` crate never moves its entries.
        self.local_ptr().map(|p| unsafe { p.as_ref() })
    }
}

impl<T> Clone for Home<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Home<T> {}
