//! Taking what a live thread keeps: the idle objects and pending batches of
//! a cache whose owner is alive but quiet (parked, blocked, busy with other
//! work), without a lock or an atomic read-modify-write on the owner path.
//!
//! # The protocol
//!
//! An asymmetric Dekker handshake. Each thread has a mark ([`Marks`]),
//! set inside every owner access to a cache without its lock (a `get`'s
//! pop, a release's push on the batch, a slow path's access). Each cache
//! has a
//! [`Gate`](crate::gate::Gate): its lock, the marks of its owner, and how the
//! owner's fast paths find it (the hot-index entry or the pool's index
//! cell, [`GetGate`](crate::gate::GetGate)); its owner word carries [`CLOSED`]
//! while the owner path is shut. The owner's side and the gate are in
//! [`gate`](crate::gate), below the caches; the stealer is here, above them.
//!
//! The owner, on its fast paths:
//! 1. sets its mark (a plain store), then a light fence ([`fence::light`]);
//! 2. reads the gate: the owner word, compared with its token, which fails
//!    for a closed cache (a plain recycler's `get` and release; a buffer
//!    pool's acquire reads its index cell, a capped recycler's `get` its
//!    hot-index entry);
//! 3. if open, works on the cache without a lock; else takes the slow path,
//!    which takes the cache's lock;
//! 4. clears its mark (a `Release` store). These operations run no user
//!    code (a release resets its object before it marks itself), so they
//!    never nest.
//!
//! A plain recycler's hot slot is outside the protocol: a cell of its own
//! that only the owner touches, on its owner path without a mark (so W1,
//! which goes through the slot alone, pays nothing); a stealer never takes
//! it. A buffer pool's owner paths mark every access, slot included, and a
//! stealer takes its slots too.
//!
//! A stealer:
//! 1. under each cache's lock: skips caches nobody owns (their contents are
//!    in the depot already), takes its own directly; counts itself in
//!    `stealers`, sets
//!    [`CLOSED`], and clears the hot-index entry or index cell;
//! 2. one heavy fence ([`fence::heavy`]: `membarrier`) for all of them;
//! 3. per cache: waits (boundedly) to see the owner's marks clear, with no
//!    lock held; then, under the lock, takes what it came for; leaves
//!    `stealers`.
//!
//! Why it is sound: the heavy fence orders each owner's mark store before
//! its gate read, against the stealer's gate store before its mark read. So
//! an owner operation that read the gate open set its mark before the
//! stealer read it: the stealer sees the mark until that operation ends
//! (`Release`, paired with the stealer's `Acquire`, so its writes are
//! visible). An operation that starts after the fence reads the gate
//! closed and takes the lock. Marks are per thread, not per cache, and
//! marked operations never nest, so marks seen clear once after the fence
//! mean every operation that could have read this cache's gate open has
//! ended. Only the lock reopens a gate, and not while a stealer is
//! counted; a thread cannot give a cache up ([`Mine::abandon`](crate::mine::Mine::abandon)) while a
//! stealer is counted, so the owner's marks, which live as long as the
//! thread, outlive every read of them.
//!
//! A stealer never waits for an owner while it holds a lock (the owner's slow
//! path may need it), and waits for a busy owner only boundedly: a thread
//! that stays inside an operation (a `reset` that blocks) is skipped, and
//! its cache reopens on its owner's next slow path.
//!
//! # Where it is hooked
//!
//! The protocol's sites outside this file, each named for its part:
//! - the owner's marks and a cache's gate: [`gate`](crate::gate) (and the
//!   fences, [`fence`]); the marked owner operations of
//!   [`Mine`] (`with_cache`, `with_rest_unchecked`, the
//!   credits);
//! - the marked owner paths: `owner.rs` (a release's push on the batch, an
//!   owned guard's return of its credit), `capped.rs`, and the buffer
//!   pool's `buffer/owner.rs` (every pop and push, the hot slot included);
//! - the gates' ways in: the hot index (`registry.rs`) and the buffer
//!   pool's index cells (`buffer/index.rs`), which a stealer clears;
//! - the takers: `trim` (`trim.rs`, [`Shared::steal_quiet`]), an owner's
//!   miss taking a quiet thread's pending batch for it (`slow_get.rs`,
//!   [`Shared::steal_stale_pending`]), a waiter at a buffer pool's memory
//!   limit (`buffer/limit.rs`, `steal_quiet`), and a recycler's last
//!   handle taking the caches' credits back ([`orphan_caches`], from
//!   [`Shared::orphan`]; for a buffer pool, `buffer/units.rs`);
//! - giving a cache up, which waits for no stealer to be counted:
//!   [`Mine::abandon`](crate::mine::Mine::abandon), from a thread's exit
//!   hook (`exit.rs`).

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::ptr;

use crate::cache::{Entry, MAX_PENDING_HOMES};
use crate::cache::{Local, Rest};
use crate::claim::Claimable;
use crate::fence;
use crate::gate::{CLOSED, now_ns, wait_quiet};
use crate::inbox::Batch;
use crate::keep::Credits;
use crate::loom::Ordering;
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::registry::{self, Marks, NOBODY, TOKEN_STEP, Token};
use crate::shared::Shared;
use crate::trim::pass_on;
use crate::unwind::{Panic, first_of};

/// What a stealer takes from each cache.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Loot {
    /// The idle objects and the pending batches.
    All,
    /// The pending batches only.
    Pending,
}

/// What a stealer took from one cache, handed to its sink part by part once
/// it has left every cache of its chunk. Nothing here allocates: a cache holds at most
/// [`MAX_PENDING_HOMES`] pending batches, and its idle objects come in the
/// batch's own vector.
pub(crate) struct Stolen<T> {
    /// Idle objects, from the cache's batch (and slot).
    pub(crate) idle: Batch<T>,
    /// Batches released on that thread for other homes, to send.
    pub(crate) pending: [Option<Entry<T>>; MAX_PENDING_HOMES],
}

impl<T> Stolen<T> {
    fn new() -> Self {
        Self {
            idle: Vec::new(),
            pending: std::array::from_fn(|_| None),
        }
    }

    /// The parts, for the sinks: the idle objects (if any), then each
    /// pending batch.
    fn into_parts(self) -> impl Iterator<Item = Part<T>> {
        let idle = (!self.idle.is_empty()).then_some(Part::Idle(self.idle));
        idle.into_iter()
            .chain(self.pending.into_iter().flatten().map(Part::Pending))
    }
}

/// Takes from `local` what `take` says; its hot slot only if `slots` (a
/// buffer pool's cache), or if the calling thread owns it.
///
/// # Safety
///
/// The calling thread holds `local`'s lock, and the owner of `local` is
/// outside every operation that works on it without that lock (a plain
/// recycler's owner may be using its slot, which is then left alone).
unsafe fn steal_locked<T>(local: &Local<T>, loot: Loot, slots: bool) -> Stolen<T> {
    let mut stolen = Stolen::new();
    let steal_rest = |c: &mut Rest<T>, stolen: &mut Stolen<T>| {
        if loot == Loot::All {
            stolen.idle = c.take_batch();
        }
        for entry in &mut stolen.pending {
            *entry = c.pending.pop();
        }
        debug_assert!(c.pending.is_empty());
    };
    let own = local.is_owned_by(registry::current());
    if loot == Loot::All && (slots || own) {
        // SAFETY: the caller's guarantee; the slot is the calling thread's
        // or reached only under this protocol; the closure runs no user code.
        unsafe {
            local.with_cache_unchecked(|c| {
                steal_rest(c, &mut stolen);
                stolen.idle.extend(c.slot.take());
            });
        }
    } else {
        // SAFETY: the caller's guarantee; the closure runs no user code.
        unsafe { local.with_rest_unchecked(|c| steal_rest(c, &mut stolen)) };
    }
    local.pending_since.clear();
    stolen
}

/// How many caches a stealer visits before one heavy fence (fixed arrays,
/// so that stealing allocates nothing).
const CHUNK: usize = 16;

/// One part of what a stealer took, for its sink: a cache's idle objects,
/// or one batch that was pending in it for another home.
pub(crate) enum Part<T> {
    /// Idle objects, from a cache's batch (and slot).
    Idle(Batch<T>),
    /// A batch released on the cache's thread for another home, to send.
    Pending(Entry<T>),
}

/// Takes from each of `caches` owned by a live thread what `loot` says
/// (see the module docs), from `me`'s own caches directly under their
/// locks, and hands what it took to `sink`, part by part. Returns how many
/// caches it skipped, their owner staying inside an operation, and the
/// first panic of a sink.
///
/// The sinks run user code (sending a batch home may reset objects or drop
/// what has no room), so they run only once the stealer has left every
/// cache of the chunk: no lock held, counted in no cache's `stealers`, so
/// that an owner giving its cache up never waits on them (a sink that
/// joins a thread whose exit gives a cache up cannot deadlock with it).
/// Each part's sink runs under `catch_unwind`: a panic there stops neither
/// the other parts (each is still handed over, and so counted) nor another
/// thread's exit; the first is returned, for the caller to pass on once it
/// has counted what it took. One heavy fence per [`CHUNK`] caches shut;
/// nothing allocated.
pub(crate) fn steal_from<'a, T: 'a>(
    caches: impl Iterator<Item = &'a Local<T>>,
    me: Token,
    loot: Loot,
    slots: bool,
    mut sink: impl FnMut(Part<T>),
) -> (usize, Option<Panic>) {
    let mut skipped = 0;
    let mut first = None;
    let mut caches = caches.peekable();
    while caches.peek().is_some() {
        let mut shut: [Option<(&Local<T>, *const Marks)>; CHUNK] = [None; CHUNK];
        let mut stolen: [Option<Stolen<T>>; CHUNK] = std::array::from_fn(|_| None);
        // Caches taken directly (`d`) and shut (`n`): `d + n <= CHUNK`, the
        // first `d` slots of `stolen` for the former, the next for the
        // latter.
        let (mut d, mut n) = (0, 0);
        while d + n < CHUNK {
            let Some(local) = caches.next() else { break };
            let mut state = local.gate.lock();
            let owner = Claimable::owner(local);
            let word = owner.load(Ordering::Relaxed);
            let token = word & !(TOKEN_STEP - 1);
            if token == NOBODY {
                continue;
            }
            if token == me || state.marks.is_null() || state.sealed {
                // The calling thread's own cache (it is not inside an
                // operation on it: no owner path calls a stealer), one never
                // opened since it was claimed, or one shut and its owner
                // seen quiet since: its owner takes this lock for every
                // other access.
                // SAFETY: as below, the lock held.
                stolen[d] = Some(unsafe { steal_locked(local, loot, slots) });
                d += 1;
                continue;
            }
            state.stealers += 1;
            owner.store(word | CLOSED, Ordering::Relaxed);
            for way in state.ways {
                // SAFETY: the owner is alive (it has not given the cache up:
                // that takes this lock), and so are its hot index and the
                // pool.
                unsafe { way.close() };
            }
            shut[n] = Some((local, state.marks));
            n += 1;
        }
        let fenced = n > 0 && fence::heavy();
        for (i, (local, marks)) in shut.into_iter().flatten().enumerate() {
            // SAFETY: counted in `stealers`, so the owner cannot give the
            // cache up, and its thread (whose marks these are) is alive.
            let quiet = fenced && unsafe { wait_quiet(marks) };
            let mut state = local.gate.lock();
            if quiet {
                state.sealed = true;
                // SAFETY: the owner is outside every operation that could
                // have found the cache open, and every later one finds it
                // closed and takes this lock, which the calling thread holds.
                stolen[d + i] = Some(unsafe { steal_locked(local, loot, slots) });
            } else {
                skipped += 1;
            }
            state.stealers -= 1;
        }
        // Out of every cache of the chunk: now the user code.
        for part in stolen.into_iter().flatten().flat_map(Stolen::into_parts) {
            if let Err(panic) = catch_unwind(AssertUnwindSafe(|| sink(part))) {
                first = first_of(first, Some(panic));
            }
        }
    }
    (skipped, first)
}

/// Takes back the credits of every cache in `caches` ([`crate::keep`]), for
/// the last handle of their recycler, and shuts each for good (its owner
/// paths go through the lock from now on, where releases find the cache
/// orphaned and give their units straight back). Under the stealers'
/// handshake, as [`steal_from`], except that an owner still inside an
/// operation is waited for until it leaves (an owner operation is a few
/// instructions; nothing here runs user code). Returns the credits taken.
pub(crate) fn orphan_caches<'a, T: 'a>(
    caches: impl Iterator<Item = &'a Local<T>>,
    me: Token,
) -> usize {
    let mut credits = 0;
    // Called with the cache's lock held and its owner outside every marked
    // operation, or the calling thread the owner (not inside one).
    let take = |local: &Local<T>| {
        // SAFETY: as said above, nobody else touches the credits; `take`
        // runs no user code.
        unsafe { local.with_credit_unchecked(Credits::take_all) }
    };
    let mut caches = caches.peekable();
    while caches.peek().is_some() {
        let mut shut: [Option<(&Local<T>, *const Marks)>; CHUNK] = [None; CHUNK];
        let mut n = 0;
        while n < CHUNK {
            let Some(local) = caches.next() else { break };
            let mut state = local.gate.lock();
            state.orphaned = true;
            let owner = Claimable::owner(local);
            let word = owner.load(Ordering::Relaxed);
            let token = word & !(TOKEN_STEP - 1);
            if token == NOBODY {
                // Its thread exited and gave its credits back.
                continue;
            }
            owner.store(word | CLOSED, Ordering::Relaxed);
            for way in state.ways {
                // SAFETY: the owner is alive (it has not given the cache up:
                // that takes this lock), and so are its hot index and the
                // pool.
                unsafe { way.close() };
            }
            if token == me || state.marks.is_null() || state.sealed {
                // As in `steal_from`: its owner reaches it only under this
                // lock now.
                credits += take(local);
                continue;
            }
            state.stealers += 1;
            shut[n] = Some((local, state.marks));
            n += 1;
        }
        let fenced = n > 0 && fence::heavy();
        for (local, marks) in shut.into_iter().flatten() {
            // SAFETY: counted in `stealers`, so the owner cannot give the
            // cache up, and its thread (whose marks these are) is alive.
            while fenced && !unsafe { wait_quiet(marks) } {}
            let mut state = local.gate.lock();
            state.sealed = true;
            credits += take(local);
            state.stealers -= 1;
        }
    }
    credits
}

impl<T> Shared<T> {
    /// For the last handle of this recycler, as it drops: from now on, no
    /// thread claims a cache of it, every cache is shut for good, and their
    /// credits go back to the keep-alive count (which the handles' own unit
    /// still holds above 0). See [`crate::keep`].
    pub(crate) fn orphan(&self) {
        self.liveness.check();
        self.orphaned.store(true, Ordering::SeqCst);
        // Pairs with the fence of a thread claiming a cache: either it sees
        // the flag (and gives the cache up), or the walk below sees the
        // cache it claimed.
        crate::loom::fence(Ordering::SeqCst);
        let credits = orphan_caches(self.all_caches(), registry::current());
        if credits > 0 {
            // A bucket's credits are units of its pool's count, which the
            // pool's last handle orphans its buckets into, before the
            // pool's handles' unit goes back; when a bucket's own handle
            // drops with its pool, its caches hold none.
            let keep = match self.credits_to {
                // SAFETY: `credits` units of it are out, given back here.
                Some(pool) => unsafe { pool.get() },
                None => &self.keep,
            };
            // Never the last units: the handles' own is still out.
            let let_go = keep.give(credits);
            debug_assert!(let_go.is_none(), "the handles' unit is out");
        }
    }
}

impl<T: Recyclable> Shared<T> {
    /// Takes the idle objects and pending batches out of every cache of
    /// this recycler that another live thread owns and is not using (see
    /// the module docs): sends the batches home (to inboxes, or the depot
    /// for a home given up) and returns the idle objects. Striped mode has
    /// no caches to take from.
    ///
    /// A panic of the user code that sending runs (a `reset` deferred by
    /// `reset_on_return(false)`, a `Drop` of what has no room) is returned
    /// with the idle objects, all of which are taken all the same: the
    /// caller counts them, then passes the panic on.
    pub(crate) fn steal_quiet(&self) -> (Batch<T>, Option<Panic>) {
        let mut idle = Vec::new();
        if self.stripes.is_some() {
            return (idle, None);
        }
        let slots = self.config.slots_reachable;
        let (_, panic) = steal_from(
            self.all_caches(),
            registry::current(),
            Loot::All,
            slots,
            |part| match part {
                Part::Idle(objs) => idle.extend(objs),
                Part::Pending(entry) => self.send_home(entry.home, entry.objs, None),
            },
        );
        (idle, panic)
    }
}

impl<T: Recyclable> Shared<T> {
    /// For an owner about to make a fresh object: takes the batches of
    /// foreign releases that have waited [`PENDING_AGE_NS`](crate::gate::PENDING_AGE_NS) in threads not
    /// inside an operation, whoever's objects they hold, and sends them
    /// home. Returns whether one came to `mine`, the calling thread's cache
    /// (its inbox then has it). Allocates nothing (a miss of a steady
    /// stream may come here). A panic of what sending runs (see
    /// [`steal_quiet`](Self::steal_quiet)) is passed on once every batch
    /// taken has been sent.
    pub(crate) fn steal_stale_pending(&self, mine: Mine<'_, T>) -> bool {
        let mine = mine.local();
        if self.stripes.is_some() {
            return false;
        }
        let now = now_ns();
        let stale = |l: &&Local<T>| !ptr::eq(*l, mine) && l.pending_since.is_stale(now);
        if !self.all_caches().any(|l| stale(&l)) {
            return false;
        }
        let slots = self.config.slots_reachable;
        let mut came = false;
        let caches = self.all_caches().filter(stale);
        let (_, panic) = steal_from(caches, registry::current(), Loot::Pending, slots, |part| {
            if let Part::Pending(entry) = part {
                came |= ptr::eq(entry.home.as_ptr(), mine);
                self.send_home(entry.home, entry.objs, Some(mine));
            }
        });
        pass_on(panic);
        came
    }
}
