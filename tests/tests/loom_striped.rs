//! Loom models of striped mode's locked stripes (the fallback where the
//! process cannot run restartable sequences; each model turns them off
//! first), run against the real code (see `tests/tests/loom.rs` for how).
//! Striped mode on sections has its models in `loom_striped_rseq.rs`.
//!
//! A stripe is a try-lock (a compare-and-swap) in front of a stack, whose
//! length other threads read without the lock to skip empty and full
//! stripes. The models race gets and releases on few, small stripes, so that
//! a thread finds its stripe busy, full or empty and moves to the next; each
//! ends with the audit: nothing lost, nothing counted twice, every idle
//! object reachable.

#![cfg(loom)]

mod loom_support;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use loom_support::{Obj, audit, counted, model, spawn};
use recycler_core::Recycler;

/// Two stripes of one object each.
fn tiny(alive: &Arc<AtomicUsize>) -> Arc<Recycler<Obj>> {
    recycler_core::__loom_no_rseq(true);
    let pool = counted(alive)
        .striped(2)
        .max_capacity_per_thread(1)
        .build()
        .unwrap();
    Arc::new(pool)
}

/// Two threads release at once into stripes of one object each: one may
/// find its stripe busy or full and move on; neither object is lost.
#[test]
fn two_releases_share_two_stripes() {
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
        assert_eq!(pool.stats().dropped, 0, "two stripes hold both");
    });
}

/// A get races a release: the get either finds the released object (in
/// whichever stripe it landed) or makes a new one; the books balance.
#[test]
fn get_races_release() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = tiny(&alive);
        let away = pool.get_owned();
        let t = spawn(move || drop(away));
        let p = Arc::clone(&pool);
        let g = spawn(move || drop(p.get_owned()));
        t.join().unwrap();
        g.join().unwrap();
        audit(&pool, &alive);
        assert!(pool.stats().created <= 2);
    });
}

/// A get on a CPU whose stripe is empty takes an object from another
/// stripe and moves half of the rest into its own (holding one lock and
/// trying the other), while that other stripe's thread gets and releases:
/// nothing lost, nothing counted twice, every idle object reachable.
#[test]
fn a_get_moving_objects_races_the_other_stripes_thread() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        recycler_core::__loom_no_rseq(true);
        let pool = Arc::new(
            counted(&alive)
                .striped(2)
                .max_capacity_per_thread(4)
                .build()
                .unwrap(),
        );
        // Three idle objects in this thread's stripe.
        drop([pool.get(), pool.get(), pool.get()]);
        let p = Arc::clone(&pool);
        let taker = spawn(move || {
            let g = p.get(); // its own stripe is empty: from ours, and moves one
            drop(g); // into its own stripe
        });
        let mine = pool.get();
        drop(mine);
        taker.join().unwrap();
        audit(&pool, &alive);
        assert_eq!(pool.stats().created, 3, "every get found an object");
    });
}
