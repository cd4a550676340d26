//! Idle-memory accounting: a cap on the bytes that idle objects keep alive.
//!
//! One [`IdleAccount`] serves a [`Recycler`](crate::Recycler) built with
//! [`max_idle_bytes`](crate::RecyclerBuilder::max_idle_bytes), measuring each
//! idle object with [`Recyclable::retained_bytes`](crate::Recyclable), and all
//! the buckets of a [`BufferPool`](crate::buffer::BufferPool) built with
//! [`max_idle_memory`](crate::buffer::BufferPoolBuilder::max_idle_memory),
//! where each idle buffer weighs its capacity. Under
//! [`max_idle_per_bucket`](crate::buffer::BufferPoolBuilder::max_idle_per_bucket)
//! each bucket of a pool has one of its own, capping `n × capacity` bytes
//! (`n` buffers), with `largest` the bucket's capacity; its overshoot bound
//! below is then, in buffers, `n + (N - 1) * (max(n / 8, 2) + 1)`.
//!
//! # Accounting on release
//!
//! As in Jetty's `ArrayByteBufferPool` after its issue 11371, bytes are counted
//! when an object becomes idle (released into the pool) and uncounted when it
//! stops being idle (taken from the pool, evicted, or dropped by the pool).
//! An object that is never returned was never counted, so leaks cannot skew
//! the figure.
//!
//! # Cheap: per-thread deltas
//!
//! There is no shared counter updated on every get and release. Each thread
//! keeps a delta of its own ([`DeltaCell`], written only by that thread with a
//! load and a store) and adds it to the shared `published` total with one
//! atomic `fetch_add` only when it reaches `±threshold`. The true idle total is
//! `published + Σ deltas`. A release is admitted when
//! `published + own delta + bytes <= cap`: one shared *load*, no shared write.
//!
//! When a release would go over the cap, the thread publishes its delta, and
//! asks the evictor (the buffer pool) to free idle objects of *other* members
//! (buckets) worth the excess; only if that cannot free enough is the released
//! object itself dropped.
//!
//! # The overshoot bound
//!
//! A thread sees every byte but the unpublished deltas of other threads and
//! their releases in flight, each below `threshold` and one object
//! respectively. So, with `N` threads releasing, objects of at most `B` bytes
//! and the threshold `S`:
//!
//! ```text
//! idle bytes <= cap + (N - 1) * (S + B)
//! ```
//!
//! With a single releasing thread the cap holds exactly. The threshold is
//! [`threshold`]`(cap, largest)`: `max(cap / 8, 2 * largest, 1)`, where
//! `largest` is the biggest buffer of a pool (0 for a recycler). Twice the
//! largest buffer keeps a thread that takes and returns buffers in turn from
//! publishing on every operation.

use std::cell::Cell;
use std::fmt;

use crate::loom::{Arc, AtomicU64, Ordering::Relaxed, Weak, const_thread_local};
use crate::recyclable::Recyclable;

/// What an idle object weighs against an idle-memory cap: its
/// `retained_bytes`, not counting the box the recycler keeps it in.
#[inline]
#[allow(
    clippy::borrowed_box,
    reason = "takes the box so that the box's own `Recyclable` impl, which adds its size, cannot be picked by mistake"
)]
pub(crate) fn bytes_of<T: Recyclable>(obj: &Box<T>) -> u64 {
    T::retained_bytes(obj) as u64
}

/// Frees idle objects for an [`IdleAccount`]: the buffer pool, which walks
/// its buckets.
pub(crate) trait Evict: Send + Sync {
    /// Frees idle objects worth at least `want` bytes if it can, from every
    /// member but `skip`; returns the bytes freed, which the members have
    /// already taken off the account with [`IdleAccount::forget`].
    fn evict_others(&self, want: u64, skip: usize) -> u64;
}

/// The publishing threshold for a cap of `cap` bytes whose largest object is
/// `largest` bytes (0 if unknown): `max(cap / 8, 2 * largest, 1)`.
pub(crate) const fn threshold(cap: u64, largest: u64) -> u64 {
    let a = cap / 8;
    let b = largest.saturating_mul(2);
    let s = if a > b { a } else { b };
    if s == 0 { 1 } else { s }
}

/// A thread's unpublished change to the idle total, in bytes (an `i64` kept
/// in a `u64`). Written only by its thread, with a load and a store; read by
/// anyone for [`IdleAccount::total`]. It lives with the thread's cache (a
/// recycler's) or index (a buffer pool's), which is handed to a later thread
/// only after its delta is published ([`IdleAccount::flush`]).
#[derive(Debug)]
pub(crate) struct DeltaCell(AtomicU64);

impl DeltaCell {
    pub(crate) fn new() -> Self {
        Self(AtomicU64::new(0))
    }

    #[inline(always)]
    pub(crate) fn get(&self) -> i64 {
        self.0.load(Relaxed) as i64
    }

    #[inline(always)]
    fn set(&self, delta: i64) {
        self.0.store(delta as u64, Relaxed);
    }
}

/// The published total on a cache line of its own: read on every release,
/// written only when a thread publishes.
#[repr(align(128))]
struct Published(AtomicU64);

/// The idle-memory account of one recycler or one buffer pool.
pub(crate) struct IdleAccount {
    /// Idle bytes published by all threads (an `i64` kept in a `u64`; it may
    /// dip below 0 while the releasing thread has not published yet).
    published: Published,
    cap: i64,
    threshold: i64,
    /// Frees idle objects of other members when a release would go over.
    evictor: Option<Weak<dyn Evict>>,
    /// The account that this one's objects count in too, with the same
    /// deltas: a buffer pool's idle-memory account above each bucket's own
    /// account, when both caps are set (see [`IdleAccount::with_parent`]).
    parent: Option<Arc<IdleAccount>>,
}

/// The largest byte count the account tells apart (64 PiB): caps and object
/// sizes above it count as this much. It keeps every sum the account forms
/// (a few of these, times a few threads) far from `i64` overflow, so the
/// owner paths can use plain wrapping arithmetic.
const MAX_BYTES: u64 = 1 << 56;

/// Clamps a byte count into the account's arithmetic.
#[inline(always)]
fn signed(bytes: u64) -> i64 {
    bytes.min(MAX_BYTES) as i64
}

impl IdleAccount {
    /// An account capping idle memory at `cap` bytes, whose largest object
    /// weighs `largest` bytes (0 if unknown).
    pub(crate) fn new(cap: u64, largest: u64, evictor: Option<Weak<dyn Evict>>) -> Self {
        Self {
            published: Published(AtomicU64::new(0)),
            cap: signed(cap),
            threshold: signed(threshold(cap, largest)),
            evictor,
            parent: None,
        }
    }

    /// An account capping its objects at `cap` bytes, whose largest weighs
    /// `largest` bytes, whose objects all count in `parent` as well: a
    /// buffer pool's bucket under `max_idle_per_bucket`, in a pool under
    /// `max_idle_memory` too. The two share this account's deltas: a thread
    /// publishes its delta into both, and a release is admitted when both
    /// caps admit it (the parent's evictor making room in the parent, never
    /// in this one: a release over this cap is dropped). The parent sees a
    /// thread's delta for this member but not its deltas for the others, so
    /// its bound loosens by those (see `docs/buffers.md`, "The per-bucket
    /// cap").
    pub(crate) fn with_parent(cap: u64, largest: u64, parent: Arc<IdleAccount>) -> Self {
        Self {
            parent: Some(parent),
            ..Self::new(cap, largest, None)
        }
    }

    #[inline(always)]
    fn published(&self) -> i64 {
        self.published.0.load(Relaxed) as i64
    }

    /// Adds `delta` to the published total (and to the parent's); returns
    /// this account's new total.
    #[inline]
    fn publish(&self, delta: i64) -> i64 {
        if let Some(parent) = &self.parent {
            parent.publish(delta);
        }
        (self.published.0.fetch_add(delta as u64, Relaxed) as i64).wrapping_add(delta)
    }

    /// Adds `delta` to `cell`, publishing it if it reaches the threshold.
    #[inline(always)]
    fn add(&self, cell: &DeltaCell, delta: i64) {
        let d = cell.get().wrapping_add(delta);
        if d.unsigned_abs() >= self.threshold as u64 {
            cell.set(0);
            self.publish(d);
        } else {
            cell.set(d);
        }
    }

    /// Counts a release of `bytes` on the owner path, if it fits under the
    /// cap as this thread sees it; `false` sends the caller to
    /// [`admit`](Self::admit). No shared write unless the delta is published.
    #[inline(always)]
    pub(crate) fn try_add(&self, cell: &DeltaCell, bytes: u64) -> bool {
        let bytes = signed(bytes);
        let delta = cell.get();
        let fits = |acct: &IdleAccount| {
            acct.published().wrapping_add(delta).wrapping_add(bytes) <= acct.cap
        };
        if !fits(self) || self.parent.as_deref().is_some_and(|p| !fits(p)) {
            return false;
        }
        self.add(cell, bytes);
        true
    }

    /// [`try_add`](Self::try_add) for an account with no parent (a
    /// recycler's own): one shared load and one compare.
    #[inline(always)]
    pub(crate) fn try_add_own(&self, cell: &DeltaCell, bytes: u64) -> bool {
        debug_assert!(self.parent.is_none());
        let bytes = signed(bytes);
        if self
            .published()
            .wrapping_add(cell.get())
            .wrapping_add(bytes)
            > self.cap
        {
            return false;
        }
        self.add(cell, bytes);
        true
    }

    /// Counts again an idle object of `bytes` that the thread of `cell` took
    /// ([`sub`](Self::sub)) and put back at once, unused: the account is as
    /// it was before the take, which the cap admitted.
    pub(crate) fn restore(&self, cell: &DeltaCell, bytes: u64) {
        self.add(cell, signed(bytes));
    }

    /// Counts an idle object of `bytes` taken from the pool by the thread of
    /// `cell`.
    #[inline(always)]
    pub(crate) fn sub(&self, cell: &DeltaCell, bytes: u64) {
        self.add(cell, signed(bytes).wrapping_neg());
    }

    /// Counts a release of `bytes` into the member `member`, making room by
    /// eviction if it would go over the cap. Returns `false` if there is no
    /// room: the caller drops the object. `cell` is the releasing thread's
    /// delta, `None` for a thread in its thread-local teardown.
    #[cold]
    #[inline(never)]
    pub(crate) fn admit(&self, cell: Option<&DeltaCell>, bytes: u64, member: usize) -> bool {
        if let Some(cell) = cell
            && self.try_add(cell, bytes)
        {
            return true;
        }
        // Over the cap as far as this thread can see: make its own delta
        // visible to the others, then look again.
        let own = cell.map_or(0, |c| {
            let d = c.get();
            c.set(0);
            d
        });
        let seen = if own == 0 {
            self.published()
        } else {
            self.publish(own)
        };
        let bytes = signed(bytes);
        let room = match &self.parent {
            None => self.make_room(seen, bytes, member),
            // Over this account's own cap: nothing is evicted for it (a
            // bucket's cap drops the release, as Jetty's bucket does);
            // else the parent makes room among the other members.
            Some(parent) => {
                seen.wrapping_add(bytes) <= self.cap
                    && parent.make_room(parent.published(), bytes, member)
            }
        };
        if !room {
            return false;
        }
        match cell {
            Some(cell) => self.add(cell, bytes),
            None => {
                self.publish(bytes);
            }
        }
        true
    }

    /// Counts `bytes` of idle objects straight into the published total if
    /// every cap admits them as published, evicting nothing: for an object
    /// made idle where no thread's delta can count it (a stripe's prefill).
    pub(crate) fn try_publish(&self, bytes: u64) -> bool {
        let bytes = signed(bytes);
        let fits = |acct: &IdleAccount| acct.published().wrapping_add(bytes) <= acct.cap;
        if !fits(self) || self.parent.as_deref().is_some_and(|p| !fits(p)) {
            return false;
        }
        self.publish(bytes);
        true
    }

    /// Whether `bytes` more fit under the cap with `seen` bytes published,
    /// after evicting idle objects of members other than `member` worth the
    /// excess, if there is one.
    fn make_room(&self, seen: i64, bytes: i64, member: usize) -> bool {
        let excess = seen.wrapping_add(bytes).wrapping_sub(self.cap);
        if excess <= 0 {
            return true;
        }
        let freed = match self.evictor.as_ref().and_then(Weak::upgrade) {
            Some(evictor) => evictor.evict_others(excess as u64, member),
            None => 0,
        };
        signed(freed) >= excess
    }

    /// Takes `bytes` of idle objects that the pool dropped (evicted, trimmed,
    /// over capacity) off the total.
    pub(crate) fn forget(&self, bytes: u64) {
        if bytes != 0 {
            self.publish(signed(bytes).wrapping_neg());
        }
    }

    /// Publishes the calling thread's delta, as it exits.
    pub(crate) fn flush(&self, cell: &DeltaCell) {
        let d = cell.get();
        if d != 0 {
            cell.set(0);
            self.publish(d);
        }
    }

    /// The idle bytes counted: published plus `deltas`, the sum of every
    /// thread's delta (the owner of the cells adds them up). Exact once all
    /// threads are quiet.
    pub(crate) fn total(&self, deltas: i64) -> u64 {
        self.published().wrapping_add(deltas).max(0) as u64
    }
}

impl fmt::Debug for IdleAccount {
    /// Shows the cap, the threshold and the published total; no lock.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdleAccount")
            .field("cap", &self.cap)
            .field("threshold", &self.threshold)
            .field("published", &self.published())
            .finish_non_exhaustive()
    }
}

// The calling thread's xorshift state for `random_below`.
const_thread_local! {
    static RANDOM: Cell<u64> = Cell::new(0x9E37_79B9_7F4A_7C15);
}

/// A pseudo-random number below `n` (`n > 0`), from a per-thread xorshift
/// sequence mixed with `salt`: where eviction starts its walk. Deterministic
/// per thread, which keeps loom models reproducible.
pub(crate) fn random_below(n: usize, salt: u64) -> usize {
    let x = RANDOM
        .try_with(|r| {
            let mut x = r.get();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            r.set(x);
            x
        })
        .unwrap_or(0x2545_F491_4F6C_DD1D);
    let mixed = (x ^ salt.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0x2545_F491_4F6C_DD1D);
    ((mixed >> 32) % n as u64) as usize
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::Mutex as StdMutex;

    #[test]
    fn threshold_formula() {
        assert_eq!(threshold(1 << 20, 65536), 131072);
        assert_eq!(threshold(1 << 20, 0), 131072);
        assert_eq!(threshold(8 << 20, 65536), 1 << 20);
        assert_eq!(threshold(0, 0), 1);
        assert_eq!(threshold(7, 0), 1);
    }

    #[test]
    fn single_thread_is_exact() {
        let acct = IdleAccount::new(100, 0, None);
        let cell = &DeltaCell::new();
        assert!(acct.try_add(cell, 60));
        assert!(!acct.try_add(cell, 41), "60 + 41 > 100");
        assert!(acct.try_add(cell, 40));
        assert_eq!(acct.total(cell.get()), 100);
        assert!(
            !acct.admit(Some(cell), 1, 0),
            "no evictor: the release is refused"
        );
        acct.sub(cell, 30);
        assert_eq!(acct.total(cell.get()), 70);
        assert!(acct.admit(Some(cell), 30, 0));
        assert_eq!(acct.total(cell.get()), 100);
        acct.forget(100);
        assert_eq!(acct.total(cell.get()), 0);
    }

    #[test]
    fn deltas_publish_only_past_the_threshold() {
        let acct = IdleAccount::new(800, 0, None); // threshold 100
        let cell = &DeltaCell::new();
        assert!(acct.try_add(cell, 99));
        assert_eq!(acct.published(), 0, "below the threshold: not published");
        assert!(acct.try_add(cell, 1));
        assert_eq!((acct.published(), cell.get()), (100, 0));
        acct.sub(cell, 99);
        assert_eq!(acct.published(), 100);
        acct.sub(cell, 1);
        assert_eq!((acct.published(), cell.get()), (0, 0));
    }

    /// An evictor that records what it was asked and frees a fixed amount.
    struct Fake {
        acct: StdMutex<Option<Arc<IdleAccount>>>,
        frees: u64,
        asked: StdMutex<Vec<(u64, usize)>>,
    }

    impl Evict for Fake {
        fn evict_others(&self, want: u64, skip: usize) -> u64 {
            self.asked.lock().unwrap().push((want, skip));
            let freed = self.frees.min(want + 7);
            if let Some(acct) = &*self.acct.lock().unwrap() {
                acct.forget(freed);
            }
            freed
        }
    }

    #[test]
    fn over_the_cap_evicts_others_then_drops() {
        for (frees, admitted) in [(1000, true), (5, false)] {
            let fake = Arc::new(Fake {
                acct: StdMutex::new(None),
                frees,
                asked: StdMutex::new(Vec::new()),
            });
            let weak: Weak<dyn Evict> = Arc::downgrade(&fake) as Weak<dyn Evict>;
            let acct = Arc::new(IdleAccount::new(100, 0, Some(weak)));
            *fake.acct.lock().unwrap() = Some(Arc::clone(&acct));
            let cell = &DeltaCell::new();
            assert!(acct.try_add(cell, 90));
            assert_eq!(acct.admit(Some(cell), 30, 3), admitted);
            assert_eq!(
                *fake.asked.lock().unwrap(),
                [(20, 3)],
                "excess 20, skip member 3"
            );
            let expected = if admitted { 90 - 27 + 30 } else { 90 - 5 };
            assert_eq!(acct.total(cell.get()), expected);
            assert!(acct.total(cell.get()) <= 100);
        }
    }

    /// Two members' accounts under a parent: each cap holds, the parent's
    /// too; a member over its own cap is refused without eviction; over the
    /// parent's, the parent's evictor frees others'; publishes, forgets and
    /// striped publishes reach the parent.
    #[test]
    fn a_parent_counts_its_members_deltas_and_caps_them_together() {
        let fake = Arc::new(Fake {
            acct: StdMutex::new(None),
            frees: 1000,
            asked: StdMutex::new(Vec::new()),
        });
        let weak: Weak<dyn Evict> = Arc::downgrade(&fake) as Weak<dyn Evict>;
        let pool = Arc::new(IdleAccount::new(100, 0, Some(weak)));
        let a = IdleAccount::with_parent(60, 10, Arc::clone(&pool)); // threshold 20
        let b = Arc::new(IdleAccount::with_parent(60, 10, Arc::clone(&pool)));
        *fake.acct.lock().unwrap() = Some(Arc::clone(&b));
        let (ca, cb) = (&DeltaCell::new(), &DeltaCell::new());
        for _ in 0..6 {
            assert!(a.try_add(ca, 10));
        }
        assert!(!a.try_add(ca, 10), "a's own cap, 60");
        assert!(!a.admit(Some(ca), 10, 0), "no eviction for a member's cap");
        assert!(fake.asked.lock().unwrap().is_empty());
        assert_eq!(a.total(ca.get()), 60);
        assert_eq!(pool.total(ca.get()), 60, "the parent has a's bytes");
        for _ in 0..4 {
            assert!(b.try_add(cb, 10));
        }
        assert_eq!(pool.total(ca.get() + cb.get()), 100);
        assert!(!b.try_add(cb, 10), "the parent's cap, 100");
        // Over the parent's cap: its evictor frees (here: from b, the
        // fake's member) worth the excess, skipping the member `1`.
        assert!(b.admit(Some(cb), 10, 1));
        assert_eq!(*fake.asked.lock().unwrap(), [(10, 1)]);
        assert!(pool.total(ca.get() + cb.get()) <= 100);
        assert_eq!(
            pool.total(ca.get() + cb.get()),
            a.total(ca.get()) + b.total(cb.get()),
            "the parent is the sum of its members"
        );
        // Taken, forgotten and published straight: the parent follows.
        a.sub(ca, 60);
        assert_eq!(a.total(ca.get()), 0);
        assert!(a.try_publish(30));
        assert!(!a.try_publish(40), "a's cap");
        a.forget(30);
        assert_eq!(
            pool.total(ca.get() + cb.get()),
            a.total(ca.get()) + b.total(cb.get())
        );
        a.flush(ca);
        b.flush(cb);
        assert_eq!((ca.get(), cb.get()), (0, 0));
        assert_eq!(pool.total(0), a.total(0) + b.total(0));
    }

    #[test]
    fn random_below_stays_in_range_and_varies() {
        let picks: Vec<usize> = (0..64).map(|i| random_below(16, i)).collect();
        assert!(picks.iter().all(|&p| p < 16));
        let distinct = picks.iter().collect::<std::collections::HashSet<_>>().len();
        assert!(distinct > 4, "{picks:?}");
    }
}
