//! Loom models of what keeps a recycler alive for its owned guards (the
//! keep-alive count of `recycler-core/src/keep.rs`), run against the real
//! code (built with `RUSTFLAGS="--cfg loom"`; see `.ci/loom.sh`).
//!
//! An owned guard holds a unit of the count instead of an `Arc`: a credit
//! of the cache that made it, returned (to the releasing thread's cache, or
//! to the count) when it is released. The last handle takes every cache's
//! credits back under the stealers' handshake and gives the handles' unit
//! back; the last unit let go frees the state. In loom builds the state's
//! drop writes a cell that each release and each giving back reads, so a
//! state freed while any of them can still run is a causality violation;
//! a unit lost (never given back) shows as objects never dropped.

#![cfg(loom)]

mod loom_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use loom::sync::mpsc;
use loom_support::{counted, model, spawn};

/// The last owned guard, released on another thread, races the recycler's
/// last handle as it drops: whichever comes last frees the state, once,
/// after the other.
#[test]
fn the_last_guard_released_elsewhere_races_the_last_handle() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = Arc::new(counted(&alive).build().unwrap());
        let guard = pool.get_owned();
        let t = spawn(move || drop(guard));
        drop(pool);
        t.join().unwrap();
        assert_eq!(alive.load(SeqCst), 0, "the state and its objects are gone");
    });
}

/// A guard released on the main thread while its home thread exits (its
/// exit hook gives its cache up and its credits back), then the last
/// handle: nothing is let go before the last of them.
#[test]
fn a_guard_released_while_its_home_thread_exits() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = Arc::new(counted(&alive).build().unwrap());
        let (tx, rx) = mpsc::channel();
        let p = Arc::clone(&pool);
        let t = spawn(move || {
            // Made here: a credit of this thread's cache.
            tx.send(p.get_owned()).unwrap();
            drop(p);
        });
        let guard = rx.recv().unwrap();
        drop(guard); // races the home thread's exit
        t.join().unwrap();
        drop(pool);
        assert_eq!(alive.load(SeqCst), 0, "the state and its objects are gone");
    });
}

/// The owner releases an owned guard on its owner path (returning the
/// guard's unit as a credit of its cache) while the last handle drops on
/// another thread and takes the credits back under the stealers'
/// handshake: the credit is counted once, either way, and the state goes
/// once the owner's own handle and guard are gone.
#[test]
fn an_owner_path_release_races_the_last_handle_taking_credits_back() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = Arc::new(counted(&alive).build().unwrap());
        let (tx, rx) = mpsc::channel::<()>();
        let p = Arc::clone(&pool);
        let t = spawn(move || {
            let guard = p.get_owned();
            drop(p); // this thread keeps only its guard
            tx.send(()).unwrap();
            drop(guard); // its owner path, as the other handle drops
        });
        rx.recv().unwrap();
        drop(pool);
        t.join().unwrap();
        assert_eq!(alive.load(SeqCst), 0, "the state and its objects are gone");
    });
}

/// An owned guard released on its owner path while a `trim` on another
/// thread takes the cache's contents (the stealers' handshake): the
/// credit is never taken by the stealer, and the state goes when the last
/// handle and guard do.
#[test]
fn an_owner_path_release_races_a_trim() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = Arc::new(counted(&alive).build().unwrap());
        let (tx, rx) = mpsc::channel::<()>();
        let p = Arc::clone(&pool);
        let t = spawn(move || {
            let guard = p.get_owned();
            tx.send(()).unwrap();
            drop(guard);
            drop(p);
        });
        rx.recv().unwrap();
        pool.trim();
        t.join().unwrap();
        drop(pool);
        assert_eq!(alive.load(SeqCst), 0, "the state and its objects are gone");
    });
}
