//! `Shared<T>`: the state every thread of one recycler shares, how it is
//! made, how its statistics are summed, and how it drops.
//!
//! The paths an object takes live in files of their own, each an
//! `impl Shared<T>` block: the owner path ([`crate::owner`]), the slow get
//! ([`crate::slow_get`]), the slow release ([`crate::slow_release`]), foreign
//! releases ([`crate::handoff`]), thread exit ([`crate::exit`]), and freeing
//! idle objects ([`crate::trim`]).

use std::ptr::NonNull;

use crate::cache::{ACCOUNTED, Local};
use crate::claim::ClaimList;
use crate::config::{Config, Factory, SharedIdle};
use crate::depot::Depot;
use crate::home::Home;
use crate::idle::{DeltaCell, IdleAccount};
use crate::inbox::Batch;
use crate::keep::{Keep, KeepRef};
use crate::loom::{Arc, AtomicBool, AtomicUsize, Liveness, Weak};
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::registry::{self, ExitFlush};
use crate::stats::{Counters, RecyclerStats, Tally};
use crate::striped::Stripes;
use crate::unwind;

/// Marks the hot-index key of a recycler with an idle-memory cap, so that
/// the inlined owner path (which looks up the plain id) never finds its
/// caches. Recycler ids never reach this bit.
const ACCOUNTED_KEY: u64 = 1 << 63;

static_assertions::const_assert!(ACCOUNTED_KEY != registry::PENDING_KEY);

/// What `get` calls when the hot index has no cache for it.
///
/// # Safety
///
/// Called only on the state it was chosen for (`Shared::new` chooses it
/// from [`Miss`]).
pub(crate) type OnMiss<T> = unsafe fn(&Shared<T>) -> (Box<T>, Home<T>);

/// Where `get` goes when the hot index has no cache for it
/// ([`Shared::get_miss`]): one load and a compare or two, off the owner
/// path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// The slow get ([`crate::slow_get`]).
    Slow,
    /// The capped owner path ([`crate::capped`]): an idle-memory cap of
    /// the recycler's own.
    Capped,
    /// Striped mode's lean get ([`crate::near`]): stripes on restartable
    /// sequences, no idle-memory cap. Then the orphan cache is marked
    /// [`NEAR`](crate::cache::NEAR), for the releases.
    Near,
}

/// The state shared by all threads of one recycler.
pub(crate) struct Shared<T> {
    /// Unique for the life of the process; keys the threads' hot indexes
    /// and their exit hooks.
    pub(crate) id: u64,
    /// The key of this recycler's entries in the hot index: `id`, or `id`
    /// marked with [`ACCOUNTED_KEY`] under an idle-memory cap.
    pub(crate) hot_key: u64,
    /// Where the entry goes (`registry::hot_position` of `id`, which the
    /// marked key shares).
    pub(crate) hot_position: usize,
    /// The idle-memory account, under a cap.
    pub(crate) idle: Option<Arc<IdleAccount>>,
    /// This recycler's index among the members of its idle account.
    pub(crate) member: usize,
    /// One cache per thread that uses the recycler, reused by later threads.
    pub(crate) caches: ClaimList<Local<T>>,
    pub(crate) depot: Depot<T>,
    pub(crate) factory: Factory<T>,
    pub(crate) config: Config,
    /// Tallies of the paths that have no owning thread.
    pub(crate) shared: Counters,
    /// This recycler as the target of thread-exit hooks.
    pub(crate) exit_hook: Weak<dyn ExitFlush>,
    /// `Local::new`, captured where `T: Send` is known, so that the paths
    /// bounded by `T: Recyclable` only can make caches too.
    pub(crate) new_local: fn(usize, usize, *const ()) -> Local<T>,
    /// The home of the objects a thread gets while it owns no cache (while
    /// it exits): a cache no thread ever owns, so releases to it take the
    /// foreign path and end in the depot. With it, every object this
    /// recycler hands out has a home, through which its guard finds the
    /// recycler.
    pub(crate) orphan: Local<T>,
    /// The home of the objects to drop when released (`ratio`, pooling
    /// off): a cache no thread ever owns, which nothing is ever put in.
    pub(crate) discard: Local<T>,
    /// What this recycler's caches carry in their owner word besides the
    /// owner's token: [`ACCOUNTED`] for a recycler with an idle-memory cap
    /// of its own (a buffer pool's buckets count idle bytes on the pool's
    /// owner paths instead), so that its releases take the slow path.
    pub(crate) owner_flag: u64,
    /// Where `get` goes when the hot index has no cache for it; set once,
    /// with the stripes: [`Miss::Near`] only if they are
    /// [`Stripes::Cpus`] and there is no idle-memory account.
    pub(crate) miss: Miss,
    /// The function `miss` names ([`Shared::get_miss`] calls it): one
    /// indirect call on `get`'s miss branch, which keeps that branch, and
    /// so the inlined `get`, as small as a single call would.
    pub(crate) on_miss: OnMiss<T>,
    /// Striped mode's stripes ([`crate::striped`]); `None` in per-thread
    /// mode. In striped mode no thread claims a cache: every object is homed
    /// at the orphan cache, whose releases take the slow path, which hands
    /// them to the stripes.
    pub(crate) stripes: Option<Stripes<T>>,
    /// Striped mode's count of freshly made objects, for `ratio`.
    pub(crate) fresh: AtomicUsize,
    /// What keeps this state alive for the owned guards out: units, one
    /// for the handles together, one per guard, the rest credits in the
    /// caches ([`crate::keep`]). It holds one strong reference on this
    /// state until its count reaches 0.
    pub(crate) keep: Keep,
    /// The count this recycler's caches hold credits of if not `keep`: a
    /// buffer pool's, for its buckets ([`KeepRef`]). Such a recycler makes
    /// no owned guards of its own (its pool does).
    pub(crate) credits_to: Option<KeepRef>,
    /// The handles (`Recycler`s) of this state alive: the last to drop
    /// takes the caches' credits back and gives the handles' unit back.
    pub(crate) handles: AtomicUsize,
    /// Set by the last handle as it drops, before it takes the caches'
    /// credits back: a thread that claims a cache afterwards gives it up at
    /// once ([`crate::keep`]).
    pub(crate) orphaned: AtomicBool,
    /// Loom builds: checks that no use of this state races its drop.
    pub(crate) liveness: Liveness,
    /// Where the live objects were taken (feature `track`).
    #[cfg(feature = "track")]
    pub(crate) tracker: crate::track::Tracker,
}

impl<T: Recyclable + Send + 'static> Shared<T> {
    /// The shared state of a new recycler.
    pub(crate) fn new(
        factory: Factory<T>,
        config: Config,
        shared_idle: Option<SharedIdle>,
        credits_to: Option<KeepRef>,
    ) -> NonNull<Self> {
        let shared = shared_idle.is_some();
        let (idle, member) = match (shared_idle, config.max_idle_bytes) {
            (Some((acct, member)), _) => (Some(acct), member),
            (None, Some(cap)) => (Some(Arc::new(IdleAccount::new(cap as u64, 0, None))), 0),
            (None, None) => (None, 0),
        };
        let id = registry::new_key();
        let hot_key = if idle.is_some() {
            id | ACCOUNTED_KEY
        } else {
            id
        };
        let owner_flag = if !shared && config.max_idle_bytes.is_some() {
            ACCOUNTED
        } else {
            0
        };
        let stripes = config
            .stripes
            .map(|n| Stripes::new(n, config.max_capacity_per_thread, config.batch_size));
        let miss = if owner_flag == ACCOUNTED {
            Miss::Capped
        } else if idle.is_none() && stripes.as_ref().is_some_and(Stripes::on_sections) {
            Miss::Near
        } else {
            Miss::Slow
        };
        let on_miss: OnMiss<T> = match miss {
            Miss::Capped => |s| s.get_capped(),
            // SAFETY (of the call): chosen for `Miss::Near`.
            Miss::Near => Self::get_near,
            Miss::Slow => |s| s.get_slow(),
        };
        let shared = Arc::new_cyclic(|this: &Weak<Shared<T>>| Shared {
            id,
            hot_key,
            hot_position: registry::hot_position(id),
            idle,
            member,
            caches: ClaimList::new(),
            depot: Depot::new(config.depot_capacity),
            factory,
            config,
            shared: Counters::default(),
            exit_hook: this.clone(),
            new_local: Local::new,
            orphan: {
                let orphan = Local::new(
                    config.max_capacity_per_thread,
                    config.batch_size,
                    this.as_ptr().cast(),
                );
                if miss == Miss::Near {
                    orphan.mark_near();
                }
                orphan
            },
            discard: Local::new(0, 1, this.as_ptr().cast()),
            owner_flag,
            miss,
            on_miss,
            stripes,
            fresh: AtomicUsize::new(0),
            // SAFETY: `this` is the `Arc` being made, whose one strong
            // reference the count takes below (the only one: handles and
            // guards hold units of the count); `release_shared` gives it
            // back.
            keep: unsafe { Keep::new(this.as_ptr().cast(), release_shared::<T>) },
            credits_to,
            handles: AtomicUsize::new(1),
            orphaned: AtomicBool::new(false),
            liveness: Liveness::new(),
            #[cfg(feature = "track")]
            tracker: crate::track::Tracker::default(),
        });
        // The count's strong reference (see `Keep`): the state lives until
        // the count's last unit is given back, wherever that is, and the
        // thread that gives it frees the state (or, while a thread's exit
        // hook holds it, that hook does).
        // SAFETY: `Arc::into_raw` gives a non-null pointer.
        unsafe { NonNull::new_unchecked(Arc::into_raw(shared).cast_mut()) }
    }
}

impl<T> Shared<T> {
    /// The shared state of the recycler `local` belongs to.
    ///
    /// # Safety
    ///
    /// That recycler is alive for `'a` (it owns the cache, so it is alive
    /// whenever the cache is).
    #[inline(always)]
    pub(crate) unsafe fn of<'a>(local: &Local<T>) -> &'a Shared<T> {
        // SAFETY: every cache is made by its recycler (`Shared::new`,
        // `claim_local`) with a pointer to that recycler's own shared state,
        // which the caller guarantees is alive.
        unsafe { &*local.recycler_ptr().cast::<Shared<T>>() }
    }

    /// Every cache, the orphan's included.
    pub(crate) fn all_caches(&self) -> impl Iterator<Item = &Local<T>> {
        self.caches.iter().chain([&self.orphan])
    }

    /// The idle-memory delta the owner of `mine` counts in: the buffer
    /// pool's per-thread cell if the pool set one as the cache's idle cell,
    /// the cache's own otherwise.
    pub(crate) fn cell_of<'a>(&self, mine: Mine<'a, T>) -> &'a DeltaCell {
        // SAFETY: a non-null idle cell is set by the buffer pool to its
        // thread's cell, which lives as long as the pool, which owns this
        // recycler.
        unsafe { mine.idle_cell().as_ref() }.unwrap_or(&mine.local().delta)
    }

    /// The unpublished idle bytes of every cache.
    pub(crate) fn idle_deltas(&self) -> i64 {
        self.all_caches()
            .fold(0i64, |sum, l| sum.wrapping_add(l.delta.get()))
    }

    /// Every thread's counters, summed.
    pub(crate) fn tally(&self) -> Tally {
        let mut tally = Tally::default();
        self.shared.add_to(&mut tally);
        for local in self.all_caches() {
            local.counters.add_to(&mut tally);
        }
        if let Some(stripes) = &self.stripes {
            stripes.add_to(&mut tally);
        }
        tally
    }

    pub(crate) fn stats(&self) -> RecyclerStats {
        let idle_bytes = self
            .idle
            .as_ref()
            .map_or(0, |acct| acct.total(self.idle_deltas()));
        self.tally().into_stats(idle_bytes)
    }

    /// The home of an object handed out to the owner of `local` (or, with
    /// `None`, to a thread that owns no cache), or of one to drop on
    /// release.
    #[inline]
    pub(crate) fn home(&self, local: Option<&Local<T>>, discard: bool) -> Home<T> {
        if discard {
            return Home::new(&self.discard);
        }
        Home::new(local.unwrap_or(&self.orphan))
    }

    /// Whether the object of `home` is to be dropped on release.
    #[inline]
    pub(crate) fn is_discard(&self, home: Home<T>) -> bool {
        std::ptr::eq(home.local_ptr().as_ptr(), &self.discard)
    }

    /// Records `obj`, just taken, with the caller of the `#[track_caller]`
    /// method that took it (feature `track`).
    #[cfg(feature = "track")]
    #[track_caller]
    pub(crate) fn track(&self, obj: &T) {
        self.tracker.taken(
            std::ptr::from_ref(obj).addr(),
            std::panic::Location::caller(),
        );
    }

    /// Forgets `obj`, returned or detached (feature `track`).
    #[cfg(feature = "track")]
    pub(crate) fn untrack(&self, obj: *const T) {
        self.tracker.returned(obj.addr());
    }

    /// Adds to `local`'s counters if the calling thread owns it, else to the
    /// shared ones.
    pub(crate) fn count_for(
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

    /// Counts a release as local or remote, on the right counters.
    pub(crate) fn count_release(&self, home: Home<T>, n: u64) {
        // SAFETY: the recycler outlives the guard that is being released.
        let local = unsafe { home.local() };
        if local.is_owned_by(registry::current()) {
            Counters::add_owned(&local.counters.released_local, n);
        } else {
            Counters::add_shared(&self.shared.released_remote, n);
        }
    }

    /// Detaches an object for good (`into_inner`).
    pub(crate) fn count_detached(&self, home: Home<T>) {
        // SAFETY: the recycler outlives the guard being detached.
        let local = unsafe { home.local() };
        self.count_for(Some(local), |c| &c.detached, 1);
    }
}

/// Gives back the strong reference a [`Keep`] holds on a recycler's state.
///
/// # Safety
///
/// `state` is a strong reference of an `Arc<Shared<T>>`, given back once.
unsafe fn release_shared<T>(state: *const ()) {
    // SAFETY: the caller's guarantee.
    unsafe { Arc::decrement_strong_count(state.cast::<Shared<T>>()) };
}

impl<T> Drop for Shared<T> {
    /// Drops every object the recycler holds, even if some of their `Drop`s
    /// panic: the others are dropped all the same, each panic is caught, and
    /// none is passed on (the panic hook has reported each).
    ///
    /// A recycler's last handle can drop where no panic may escape, and
    /// nothing tells such a place apart: in a thread-local destructor (a
    /// `Recycler` kept in a `thread_local!`, or the last handle dropped
    /// while another thread's exit hook holds the recycler), where an escaping
    /// panic aborts the process, or while the thread unwinds. So the drop of
    /// a recycler never unwinds.
    fn drop(&mut self) {
        self.keep.settle();
        self.liveness.end();
        let mut held: Vec<Batch<T>> = Vec::new();
        for local in self.caches.iter().chain([&self.orphan]) {
            // The recycler is dropping (`&mut self`): no guard and no thread
            // uses it any more (threads that still own a cache only keep
            // stale hot-index entries, which no live recycler's key matches,
            // and hooks whose targets are gone).
            // SAFETY: so nobody else touches any cache; the closure runs no
            // user code.
            unsafe {
                local.with_cache_unchecked(|c| {
                    held.push(c.take_all());
                    held.extend(c.pending.drain());
                });
            }
            while let Some(batch) = local.inbox.recv() {
                held.push(batch);
            }
        }
        held.extend(self.depot.drain());
        held.extend(self.stripes.as_ref().map(Stripes::drain));
        if let Some(panic) = unwind::drop_each(held.into_iter().flatten()) {
            unwind::forget_panic(panic);
        }
    }
}
