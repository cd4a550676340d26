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
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use loom::sync::Mutex;
use loom::thread;
use loom_support::{model, spawn};
use recycler_core::{OwnedPooled, Recyclable, Recycler};

/// A payload counting how many exist; std atomics, outside the model.
#[derive(Debug)]
struct Obj {
    alive: Arc<AtomicUsize>,
}

impl Drop for Obj {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, SeqCst);
    }
}

impl Recyclable for Obj {
    fn reset(&mut self) {}
}

/// A tiny recycler: batches of one, so every foreign release is one send.
fn tiny(alive: &Arc<AtomicUsize>) -> Arc<Recycler<Obj>> {
    let alive = Arc::clone(alive);
    let pool = Recycler::builder_with_factory(move || {
        alive.fetch_add(1, SeqCst);
        Obj {
            alive: Arc::clone(&alive),
        }
    })
    .max_capacity_per_thread(4)
    .batch_size(1)
    .depot_capacity(8)
    .build()
    .unwrap();
    Arc::new(pool)
}

/// The audit every model ends with, on the last thread standing.
fn audit(pool: &Recycler<Obj>, alive: &AtomicUsize) {
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert_eq!(s.created, s.idle + s.dropped, "{s}");
    assert_eq!(
        alive.load(SeqCst) as u64,
        s.idle,
        "objects alive vs idle: {s}"
    );
    let mut reachable = Vec::new();
    while let Some(g) = pool.try_get() {
        reachable.push(g);
    }
    assert_eq!(
        reachable.len() as u64,
        s.idle,
        "every idle object is reachable: {s}"
    );
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
