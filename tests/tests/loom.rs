//! Loom models of the recycler's cross-thread paths, run against the real
//! code: built with `RUSTFLAGS="--cfg loom"`, `recycler-core` takes its
//! atomics, locks, cells and thread-locals from loom (see its `loom` module).
//!
//! Run with `.ci/loom.sh`, or:
//!
//! ```text
//! RUSTFLAGS="--cfg loom -C debug-assertions" LOOM_MAX_PREEMPTIONS=2 \
//!     cargo test -p recycler-tests --release --test loom --target-dir target/loom
//! ```
//!
//! Each model checks one race and ends with the same audit: once every thread
//! has exited, every object made is idle or dropped (none lost, none counted
//! twice), and every idle object can be taken by the surviving thread.
//!
//! Loom's `JoinHandle::join` returns before the thread's thread-locals are
//! destroyed, so a spawned thread ends through `loom_support::spawn`, which
//! runs the real exit hooks at that point.

#![cfg(loom)]

mod loom_support;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use loom::sync::Mutex;
use loom::thread;
use loom_support::{Obj, audit, counted, model, spawn};
use recycler_core::{OwnedPooled, Recycler};

/// A tiny recycler: batches of one, so every foreign release is one send.
fn tiny(alive: &Arc<AtomicUsize>) -> Arc<Recycler<Obj>> {
    sized(alive, 4, 1)
}

/// A recycler of `max` objects per thread in batches of `batch`.
fn sized(alive: &Arc<AtomicUsize>, max: usize, batch: usize) -> Arc<Recycler<Obj>> {
    let pool = counted(alive)
        .max_capacity_per_thread(max)
        .batch_size(batch)
        .depot_capacity(8)
        .build()
        .unwrap();
    Arc::new(pool)
}

/// A foreign release sends an object into the owner's inbox while the owner,
/// its cache empty, drains that inbox.
#[test]
fn foreign_release_races_owner_drain() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let away = pool.get_owned();
        let t = spawn(move || drop(away));
        // The cache is empty: this get drains the inbox (if the object has
        // arrived) or makes a new one.
        let a = pool.get_owned();
        drop(a);
        t.join().unwrap();
        audit(&pool, &alive);
    });
}

/// Two threads release objects of the same home at once.
#[test]
fn two_foreign_releasers() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let a = pool.get_owned();
        let b = pool.get_owned();
        let ta = spawn(move || drop(a));
        let tb = spawn(move || drop(b));
        ta.join().unwrap();
        tb.join().unwrap();
        audit(&pool, &alive);
        assert_eq!(pool.stats().created, 2);
    });
}

/// A thread exits, moving its cache into the depot, while another thread
/// with an empty cache refills from the depot.
#[test]
fn exit_flush_races_depot_refill() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let p1 = Arc::clone(&pool);
        let leaver = spawn(move || {
            let g = p1.get_owned();
            drop(g); // into this thread's cache, flushed at exit
        });
        let p2 = Arc::clone(&pool);
        let taker = spawn(move || {
            let g = p2.get_owned(); // from the depot, or made
            drop(g);
        });
        leaver.join().unwrap();
        taker.join().unwrap();
        audit(&pool, &alive);
    });
}

/// A guard is released on another thread while its home thread exits: the
/// object reaches the home's inbox as the home gives it up. Either the
/// exiting thread drains it into the depot, or the releaser sees the home
/// abandoned and does; it is never stranded.
#[test]
fn foreign_release_races_home_exit() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let slot: Arc<Mutex<Option<OwnedPooled<Obj>>>> = Arc::new(Mutex::new(None));
        let (p, s) = (Arc::clone(&pool), Arc::clone(&slot));
        let home = spawn(move || {
            *s.lock().unwrap() = Some(p.get_owned());
            // The thread exits now, racing the release below.
        });
        let s = Arc::clone(&slot);
        let releaser = spawn(move || {
            let g = loop {
                if let Some(g) = s.lock().unwrap().take() {
                    break g;
                }
                thread::yield_now();
            };
            drop(g);
        });
        home.join().unwrap();
        releaser.join().unwrap();
        audit(&pool, &alive);
        assert_eq!(pool.stats().created, 1);
    });
}

/// Two threads claim caches (their first use of the recycler) while a third
/// gives its cache up as it exits: each claim takes a cache nobody owns by
/// compare-and-swap, or pushes a new one onto the list; no two threads ever
/// own one cache (loom checks every access to a cache's owner-only part),
/// and the exiting thread's objects stay reachable.
#[test]
fn two_claims_race_an_exit() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let p = Arc::clone(&pool);
        let leaver = spawn(move || drop(p.get_owned()));
        let p = Arc::clone(&pool);
        let claimer = spawn(move || drop(p.get_owned()));
        drop(pool.get_owned()); // this thread's first use: a claim too
        leaver.join().unwrap();
        claimer.join().unwrap();
        audit(&pool, &alive);
    });
}

/// A guard whose home thread has exited is released on a thread that
/// never used the recycler, while a third thread's first `get` claims a
/// cache: both may race for the abandoned home. The releaser that wins it
/// releases as its owner; one that loses sends the object to an inbox that
/// its new owner drains. Nothing is lost either way.
#[test]
fn release_races_a_claim_of_the_abandoned_home() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let p = Arc::clone(&pool);
        let away: OwnedPooled<Obj> = spawn(move || p.get_owned()).join().unwrap();
        // Its home is abandoned now.
        let releaser = spawn(move || drop(away));
        drop(pool.get_owned()); // claims the abandoned home, or a new cache
        releaser.join().unwrap();
        audit(&pool, &alive);
        assert!(pool.stats().created <= 2);
    });
}

/// Batches of two: a foreign release stays pending on the releasing
/// thread, which marks its hot-index entry (`registry::mark_pending`) so
/// that its next `get` takes the slow path and sends the batch home, racing
/// the owner's own `get`, which drains its inbox.
#[test]
fn pending_release_sent_by_the_releasers_next_get() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = sized(&alive, 4, 2);
        let away = pool.get_owned();
        let p = Arc::clone(&pool);
        let releaser = spawn(move || {
            drop(p.get_owned()); // a cache of its own, indexed
            drop(away); // pending here: the entry is marked
            drop(p.get_owned()); // the slow path sends it home
        });
        drop(pool.get_owned()); // drains the inbox, or makes one
        releaser.join().unwrap();
        audit(&pool, &alive);
    });
}

/// The empty vectors of batches travel back: the owner, draining its
/// inbox, keeps each drained vector among the inbox's spares while the
/// releasing thread takes a spare to start its next batch for that home.
#[test]
fn spare_vectors_travel_back_while_the_owner_drains() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let (a, b) = (pool.get_owned(), pool.get_owned());
        let releaser = spawn(move || {
            drop(a); // sent home in a new vector
            drop(b); // sent home in a spare one, if it came back in time
        });
        drop(pool.get_owned()); // drains: the vector goes back as a spare
        drop(pool.get_owned());
        releaser.join().unwrap();
        audit(&pool, &alive);
        assert!(pool.stats().created <= 4);
    });
}

/// A full cache spills its coldest batch into the depot (in a spare vector
/// the depot keeps) while another thread refills from the depot (whose
/// emptied vector becomes a spare).
#[test]
fn spill_races_a_refill_from_the_depot() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = sized(&alive, 2, 1);
        let p = Arc::clone(&pool);
        let spiller = spawn(move || {
            let held: Vec<_> = (0..3).map(|_| p.get_owned()).collect();
            drop(held); // the third release spills one object
        });
        drop(pool.get_owned()); // from the depot, or made
        spiller.join().unwrap();
        audit(&pool, &alive);
    });
}

/// `trim` frees what idles in the inboxes and the depot while another
/// thread sends an object home: the object is freed by the trim or found
/// idle afterwards, never lost nor freed twice.
#[test]
fn trim_races_a_foreign_release() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let away = pool.get_owned();
        let releaser = spawn(move || drop(away));
        pool.trim();
        releaser.join().unwrap();
        audit(&pool, &alive);
        assert_eq!(pool.stats().created, 1);
    });
}

/// `prefill` fills the depot (checking its room first) while another
/// thread's `get` refills from it.
#[test]
fn prefill_races_a_get() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let p = Arc::clone(&pool);
        let getter = spawn(move || drop(p.get_owned()));
        assert_eq!(pool.prefill(2), 2);
        getter.join().unwrap();
        audit(&pool, &alive);
        assert!(pool.stats().created <= 3);
    });
}

/// A thread whose exit hooks have run (as in a thread-local destructor)
/// owns nothing: its `get` takes one object from the depot (or makes one,
/// homed at the orphan cache) and its release sends it through the orphan's
/// inbox into the depot, racing another thread's refill from the depot.
#[test]
fn get_after_the_exit_hooks_races_a_refill() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let p = Arc::clone(&pool);
        let late = thread::spawn(move || {
            drop(p.get_owned()); // a cache, given up at the exit below
            recycler_core::__loom_thread_exit();
            drop(p.get_owned()); // owns nothing now
        });
        drop(pool.get_owned());
        late.join().unwrap();
        audit(&pool, &alive);
    });
}
