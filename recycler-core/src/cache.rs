//! `Local<T>`: one thread's cache of idle objects.
//!
//! A cache has an owner: the thread whose token is in `owner`. Only the owner
//! touches the unsynchronized part (`cache`); any thread may send batches to
//! the `inbox` and read `owner`. Ownership changes hands in two ways only
//! (see [`crate::claim`]):
//!
//! - a thread claims a cache nobody owns (a new one, or one whose thread has
//!   exited), with an `Acquire` exchange from `NOBODY` to its token;
//! - the owner's exit hook gives the cache up (a `Release` store of
//!   `NOBODY`) after moving its contents to the depot.
//!
//! Another thread may also take the cache's contents while its owner lives
//! (for `trim`, or a waiter at a buffer pool's limit): see [`crate::steal`].
//! The owner reaches its cache without the lock only through an open gate,
//! inside an operation it marks; every other access takes the lock.

use std::collections::VecDeque;
use std::ptr::NonNull;

use crate::claim::Claimable;
use crate::gate::{Gate, PendingSince};
use crate::idle::DeltaCell;
use crate::inbox::{Batch, Inbox};
use crate::keep::Credits;
use crate::loom::{AtomicU64, Ordering, UnsafeCell};
use crate::registry::{NOBODY, TOKEN_STEP, Token};
use crate::stats::Counters;

/// In a cache's owner word, next to the owner's token: the recycler counts
/// idle bytes, so releases into this cache take the slow path, which counts
/// them. Below [`TOKEN_STEP`], so the word is never a bare token.
pub(crate) const ACCOUNTED: u64 = 2;

pub(crate) use crate::gate::CLOSED;

/// The owner word of the orphan cache of a recycler in striped mode on
/// restartable sequences without an idle-memory cap, which homes all of
/// its objects there: the release that finds it (one more compare, past
/// the owner path's) pushes onto this CPU's cache ([`crate::near`]). Below
/// [`TOKEN_STEP`] and no flag of a token's, so no thread's token equals it
/// and every path that asks who owns the cache reads nobody.
pub(crate) const NEAR: u64 = 1;

static_assertions::const_assert!(ACCOUNTED < TOKEN_STEP && CLOSED < TOKEN_STEP);
static_assertions::const_assert!(NEAR < TOKEN_STEP && NEAR & (ACCOUNTED | CLOSED) == 0);

/// One thread's cache, in three groups of cache lines, each 128-byte
/// aligned (so that no two groups, of this cache or another, share a line or
/// an adjacent-line prefetch pair):
///
/// 1. what every thread that releases into this cache reads and nobody
///    writes in steady state: the owner word and the recycler;
/// 2. what the owner writes on every operation: the cache itself, the
///    counters, the idle-memory delta;
/// 3. what other threads write: the inbox.
///
/// A foreign release reads the owner word (one compare tells it is not the
/// owner); were the owner's counters on that line, every foreign release
/// would pull the line away from the owner and every `get` of the owner pull
/// it back (measured: a producer/consumer pair ran at half the speed).
#[repr(C, align(128))]
pub(crate) struct Local<T> {
    /// The owning thread's token (with [`ACCOUNTED`] under an idle-memory
    /// cap), or `NOBODY`.
    owner: AtomicU64,
    /// The shared state of the recycler this cache belongs to, its type
    /// erased (the shared state holds the caches, so this file cannot name
    /// it): a guard keeps only its object and its home, and finds the
    /// recycler through the home ([`Shared::of`](crate::shared::Shared::of)).
    recycler: *const (),
    /// Owner-only state: the hot slot, and the rest, in two cells (a thread
    /// taking the cache's contents never touches a plain recycler's slot).
    cache: Lines<Cells<T>>,
    /// Written by the owner only (see `Counters::add_owned`).
    pub(crate) counters: Counters,
    /// The owner's unpublished idle bytes, under `max_idle_bytes`.
    pub(crate) delta: DeltaCell,
    /// When the owner's oldest pending batch was started, for the owners
    /// of its objects ([`crate::steal`]).
    pub(crate) pending_since: PendingSince,
    /// Objects released on other threads, on their way here.
    pub(crate) inbox: Lines<Inbox<T>>,
    /// The lock of every access but the owner path's, and what a thread
    /// taking the cache needs ([`crate::steal`]).
    pub(crate) gate: Gate,
}

/// A value that starts a group of cache lines of its own (see [`Local`]).
#[repr(align(128))]
pub(crate) struct Lines<X>(X);

impl<X> std::ops::Deref for Lines<X> {
    type Target = X;

    #[inline(always)]
    fn deref(&self) -> &X {
        &self.0
    }
}

/// The owner-only state of a [`Local`], in two cells.
struct Cells<T> {
    /// The hot slot. A release fills it when it is empty, a get takes it
    /// first. So a thread that takes and returns one object at a time goes
    /// through the slot alone, with a load and a store and no length to
    /// update (W1 with one object held is bound by store-to-load forwarding
    /// through whatever it updates), and a burst pushes onto and pops off the
    /// batch without moving the slot's object each time.
    ///
    /// A cell of its own: the owner path of a plain recycler reaches it
    /// without marking itself, and no other thread ever touches it; a buffer
    /// pool's (whose idle buffers must all be reachable at its limit) is
    /// reached only as the rest is ([`crate::steal`]).
    slot: UnsafeCell<Option<Box<T>>>,
    rest: UnsafeCell<Rest<T>>,
    /// The owner's credits: units of the recycler's keep-alive count that
    /// it holds for the owned guards it makes and the ones released to it
    /// ([`crate::keep`]). A cell of its own: the owner takes one without a
    /// mark (only while a handle lives, when nobody else touches it) and
    /// returns one inside a marked operation; stealers never touch it; the
    /// last handle takes them all back under the stealers' handshake.
    credit: UnsafeCell<Credits>,
}

/// The owner-only state of a [`Local`] but the hot slot.
pub(crate) struct Rest<T> {
    /// Idle objects behind the slot; `get` pops and releases push at the back
    /// (LIFO, so the objects used last, warm in cache, go out first); spills
    /// take the front, the coldest. The slot and the batch together hold at
    /// most `max_capacity_per_thread` objects.
    pub(crate) batch: VecDeque<Box<T>>,
    /// Objects released here whose home is another cache, gathered per home
    /// and sent a batch at a time.
    pub(crate) pending: Pending<T>,
    /// `max_capacity_per_thread`, kept here so that the owner path finds
    /// it without a look at the recycler.
    pub(crate) max: usize,
    /// Counts freshly made objects, for `ratio`.
    pub(crate) fresh: usize,
    /// The fewest objects the batch held since the last decay pass (see
    /// [`crate::decay`]).
    pub(crate) low_water: usize,
    /// The idle-memory delta cell the owner counts this cache's idle bytes
    /// in when it is not the cache's own `delta`: a buffer pool's per-thread
    /// cell, set with each cache it indexes, so that its owner paths need
    /// no other lookup; null for a plain recycler (and the cache's own).
    pub(crate) idle_cell: *const DeltaCell,
}

/// The owner-only state of a [`Local`], borrowed: the hot slot and the
/// rest (to which it dereferences).
pub(crate) struct Cache<'a, T> {
    /// The hot slot (see [`Cells`]).
    pub(crate) slot: &'a mut Option<Box<T>>,
    rest: &'a mut Rest<T>,
}

impl<T> std::ops::Deref for Cache<'_, T> {
    type Target = Rest<T>;

    #[inline(always)]
    fn deref(&self) -> &Rest<T> {
        self.rest
    }
}

impl<T> std::ops::DerefMut for Cache<'_, T> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Rest<T> {
        self.rest
    }
}

impl<T> Rest<T> {
    /// Pops the back of the batch (the object released last). The
    /// low-water mark is written only when it moves, which in steady state
    /// it does not.
    #[inline(always)]
    pub(crate) fn pop_batch(&mut self) -> Option<Box<T>> {
        let obj = self.batch.pop_back()?;
        let len = self.batch.len();
        if len < self.low_water {
            self.low_water = len;
        }
        Some(obj)
    }

    /// Whether a push on the batch would neither spill nor grow it: with the
    /// slot full, the cache then holds at most `max` objects, and the batch
    /// has room in its allocation.
    #[inline(always)]
    pub(crate) fn has_room(&self) -> bool {
        let len = self.batch.len();
        len + 1 < self.max && len < self.batch.capacity()
    }

    /// Takes the batch.
    pub(crate) fn take_batch(&mut self) -> Vec<Box<T>> {
        self.low_water = 0;
        std::mem::take(&mut self.batch).into()
    }
}

impl<T> Cache<'_, T> {
    /// Takes an idle object: the slot's if it holds one, else the back of
    /// the batch.
    #[inline(always)]
    pub(crate) fn pop(&mut self) -> Option<Box<T>> {
        if self.slot.is_some() {
            return self.slot.take();
        }
        self.rest.pop_batch()
    }

    /// Idle objects held: the slot and the batch.
    pub(crate) fn len(&self) -> usize {
        self.batch.len() + usize::from(self.slot.is_some())
    }

    /// Takes every idle object, the slot's last (it is the warmest).
    pub(crate) fn take_all(&mut self) -> Vec<Box<T>> {
        let mut all = self.rest.take_batch();
        all.extend(self.slot.take());
        all
    }
}

/// At most this many homes have releases pending on one thread at a time.
pub(crate) const MAX_PENDING_HOMES: usize = 8;

/// Objects released on this thread, gathered per home.
pub(crate) struct Pending<T> {
    entries: Vec<Entry<T>>,
}

/// Released objects gathered for one home.
pub(crate) struct Entry<T> {
    pub(crate) home: NonNull<Local<T>>,
    pub(crate) objs: Batch<T>,
}

impl<T> Pending<T> {
    pub(crate) fn new() -> Self {
        Self {
            entries: Vec::new(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Adds `obj` to the batch gathered for `home`, starting one in a vector
    /// from `spare` (or a new one) if there is none. Returns a batch to send
    /// when one is full, or when a home must make room for another.
    ///
    /// Consecutive releases usually share a home, and its batch is the
    /// newest entry: that case is a compare and a push, inlined; the rest is
    /// out of line.
    #[inline(always)]
    pub(crate) fn add(
        &mut self,
        home: NonNull<Local<T>>,
        obj: Box<T>,
        batch_size: usize,
        spare: impl FnOnce() -> Option<Batch<T>>,
    ) -> Option<Entry<T>> {
        if let Some(last) = self.entries.last_mut()
            && last.home == home
        {
            let objs = &mut last.objs;
            // An entry's vector has room for `batch_size` objects (see
            // `add_elsewhere`) and is sent once it holds that many.
            debug_assert!(objs.len() < batch_size && objs.capacity() >= batch_size);
            // SAFETY: `len < batch_size <= capacity`, so the write is in
            // the allocation, past the initialized part, and the new
            // length covers initialized elements only.
            unsafe {
                objs.as_mut_ptr().add(objs.len()).write(obj);
                objs.set_len(objs.len() + 1);
            }
            if objs.len() < batch_size {
                return None;
            }
            return self.entries.pop();
        }
        self.add_elsewhere(home, obj, batch_size, spare())
    }

    /// [`add`](Self::add) for a home that is not the newest entry's.
    #[cold]
    #[inline(never)]
    fn add_elsewhere(
        &mut self,
        home: NonNull<Local<T>>,
        obj: Box<T>,
        batch_size: usize,
        spare: Option<Batch<T>>,
    ) -> Option<Entry<T>> {
        if let Some(i) = self.entries.iter().position(|p| p.home == home) {
            // Make it the newest entry, for the next release.
            let last = self.entries.len() - 1;
            self.entries.swap(i, last);
            let mut entry = self.entries.pop()?;
            entry.objs.push(obj);
            if entry.objs.len() >= batch_size {
                return Some(entry);
            }
            self.entries.push(entry);
            return None;
        }
        let evicted = (self.entries.len() >= MAX_PENDING_HOMES).then(|| self.entries.remove(0));
        let mut objs = spare.unwrap_or_default();
        objs.reserve(batch_size);
        objs.push(obj);
        let entry = Entry { home, objs };
        if batch_size == 1 {
            debug_assert!(evicted.is_none());
            return Some(entry);
        }
        self.entries.push(entry);
        evicted
    }

    /// Takes one batch to send.
    pub(crate) fn pop(&mut self) -> Option<Entry<T>> {
        self.entries.pop()
    }

    /// Takes every batch, for a recycler that drops.
    pub(crate) fn drain(&mut self) -> impl Iterator<Item = Batch<T>> + '_ {
        self.entries.drain(..).map(|e| e.objs)
    }
}

// Why a `Local` may cross threads. Every `Local<T>` is made by `Local::new`,
// which requires `T: Send`, so the objects it holds may move between threads.
// (The impls carry no `T: Send` bound themselves so that `Recycler<T>` and the
// guards need none in their definitions; no `Local<T>` for a `T: !Send` can
// exist.) A `Local` is touched by other threads only through its atomics and
// its inbox, and its owner-only part passes from one owner to the next with
// the `Release`/`Acquire` pair described in the module docs. The pointers in
// `pending` lead to other caches of the same recycler, which drop together
// with it, and are dereferenced only for their thread-safe parts (`owner`,
// `inbox`); `recycler` points to the shared state that owns this cache,
// which is `Sync`.
//
// SAFETY: its objects are `Send` (made only by `Local::new`) and its pointers
// lead only to `Sync` state of its own recycler; see above.
unsafe impl<T> Send for Local<T> {}
// SAFETY: other threads touch only the atomics (`owner`, `counters`, `delta`)
// and the inbox, which moves `Send` boxes; `cache` is touched only by the
// thread whose token is in `owner` (every `unsafe fn` of `Local` that reaches
// it says so).
unsafe impl<T> Sync for Local<T> {}

impl<T> Claimable for Local<T> {
    fn owner(&self) -> &AtomicU64 {
        &self.owner
    }
}

impl<T> Local<T> {
    /// A cache of the recycler at `recycler`, owned by nobody yet.
    pub(crate) fn new(inbox_capacity: usize, batch_size: usize, recycler: *const ()) -> Self
    where
        T: Send,
    {
        Self {
            owner: AtomicU64::new(NOBODY),
            cache: Lines(Cells {
                slot: UnsafeCell::new(None),
                rest: UnsafeCell::new(Rest {
                    batch: VecDeque::new(),
                    pending: Pending::new(),
                    max: inbox_capacity,
                    fresh: 0,
                    low_water: 0,
                    idle_cell: std::ptr::null(),
                }),
                credit: UnsafeCell::new(Credits::default()),
            }),
            counters: Counters::default(),
            delta: DeltaCell::new(),
            pending_since: PendingSince::new(),
            inbox: Lines(Inbox::new(inbox_capacity, batch_size)),
            gate: Gate::new(),
            recycler,
        }
    }

    /// The shared state of the recycler this cache belongs to, erased.
    #[inline(always)]
    pub(crate) fn recycler_ptr(&self) -> *const () {
        self.recycler
    }

    /// The owner word: the owner's token, with [`ACCOUNTED`] if the
    /// recycler counts idle bytes; `NOBODY` if no thread owns the cache. It
    /// equals the calling thread's token exactly when that thread owns the
    /// cache and releases into it may take the owner path
    /// ([`Home::mine`](crate::home::Home::mine)).
    ///
    /// `Relaxed` suffices: only the thread with a given token ever stores
    /// that token here, so a thread sees its own token only if it stored it,
    /// and it reads its own latest store.
    #[inline(always)]
    pub(crate) fn owner_word(&self) -> Token {
        self.owner.load(Ordering::Relaxed)
    }

    /// Whether the thread with `token` owns this cache (see
    /// [`owner_word`](Self::owner_word)).
    #[inline(always)]
    pub(crate) fn is_owned_by(&self, token: Token) -> bool {
        self.owner_word() & !(TOKEN_STEP - 1) == token
    }

    /// Makes this cache, owned by nobody, the home of a recycler whose
    /// releases take striped mode's lean path ([`NEAR`]). Before the
    /// recycler is shared.
    pub(crate) fn mark_near(&self) {
        debug_assert_eq!(self.owner_word(), NOBODY);
        self.owner.store(NEAR, Ordering::Relaxed);
    }

    /// Whether no live thread owns this cache, for a releaser deciding if the
    /// inbox will be drained. Preceded by a `SeqCst` fence in the caller.
    pub(crate) fn is_abandoned(&self) -> bool {
        self.owner_word() == NOBODY
    }

    /// Runs `f` on the owner-only state, with no check.
    ///
    /// # Safety
    ///
    /// No other thread touches the cache meanwhile: the calling thread owns
    /// it and is inside a marked operation that found it open, or holds its
    /// lock while its owner is outside every such operation (see
    /// [`crate::steal`]), and, for a recycler whose slots another thread
    /// never takes, is the owner; `f` runs no user code and does not
    /// re-enter.
    #[inline(always)]
    pub(crate) unsafe fn with_cache_unchecked<R>(
        &self,
        f: impl FnOnce(&mut Cache<'_, T>) -> R,
    ) -> R {
        self.cache.slot.with_mut(|slot| {
            self.cache.rest.with_mut(|rest| {
                // SAFETY: the caller's guarantee: these are the only borrows.
                let mut cache = unsafe {
                    Cache {
                        slot: &mut *slot,
                        rest: &mut *rest,
                    }
                };
                f(&mut cache)
            })
        })
    }

    /// Runs `f` on the owner-only state but the hot slot.
    ///
    /// # Safety
    ///
    /// As for [`with_cache_unchecked`](Self::with_cache_unchecked), without
    /// the slot: a thread taking the contents of a plain recycler's cache
    /// uses this, while the owner may be using its slot.
    #[inline(always)]
    pub(crate) unsafe fn with_rest_unchecked<R>(&self, f: impl FnOnce(&mut Rest<T>) -> R) -> R {
        self.cache.rest.with_mut(|rest| {
            // SAFETY: the caller's guarantee: the only borrow.
            f(unsafe { &mut *rest })
        })
    }

    /// Runs `f` on the owner's credits ([`crate::keep`]).
    ///
    /// # Safety
    ///
    /// No other thread touches them meanwhile: the calling thread owns the
    /// cache and either a handle of the recycler is alive (nobody but the
    /// owner touches them then) or it is inside a marked operation that
    /// found the cache open; or the calling thread holds the cache's lock
    /// and its owner is outside every marked operation (see
    /// [`crate::steal`]). `f` runs no user code and does not re-enter.
    #[inline(always)]
    pub(crate) unsafe fn with_credit_unchecked<R>(&self, f: impl FnOnce(&mut Credits) -> R) -> R {
        self.cache.credit.with_mut(|credit| {
            // SAFETY: the caller's guarantee: the only borrow.
            f(unsafe { &mut *credit })
        })
    }

    /// Runs `f` on the hot slot, as the owner of a plain recycler's cache,
    /// with no mark and no lock: no other thread touches it.
    ///
    /// # Safety
    ///
    /// The calling thread owns the cache, of a recycler whose slots no other
    /// thread takes (not a buffer pool's), and `f` runs no user code and does
    /// not re-enter.
    #[inline(always)]
    pub(crate) unsafe fn with_slot_unchecked<R>(
        &self,
        f: impl FnOnce(&mut Option<Box<T>>) -> R,
    ) -> R {
        self.cache.slot.with_mut(|slot| {
            // SAFETY: the caller's guarantee: the only borrow.
            f(unsafe { &mut *slot })
        })
    }
}
