//! Loom models of striped mode on restartable sequences: the real
//! `Recycler` in striped mode (its per-CPU caches, their depot, the keep
//! count, trim and drop), with the kernel's side modelled (see
//! `recycler-core/src/rseq.rs`, module `model`, and `tests/tests/loom_percpu.rs`).
//!
//! Each critical section runs as steps (read `shut`, read the word, read or
//! write the item, commit the word), each a restart point: a step that
//! finds its modelled CPU taken by another thread's section (a preemption)
//! or emptied by the modelled `membarrier` (a taker's fence) restarts the
//! section from the top, as the kernel's abort would; the commit is the
//! last step, checked and stored at once. A thread's CPU is its own choice
//! (`set_cpu`), so a model migrates a thread between its operations. The
//! items are loom `UnsafeCell`s: a section and a locked access that touch
//! one without an order between them are reported. Every model ends with
//! the audit: nothing in use, every object made idle or dropped, the
//! objects alive the idle ones, every idle object reachable.
//!
//! Configuration: two modelled CPUs, caches of two objects, batches of one,
//! a depot of four: so that a few operations fill a cache, spill to the
//! depot, refill from it and take from the other CPU's cache.

#![cfg(loom)]

mod loom_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};

use loom::thread;
use loom_support::{Obj, counted, model, spawn};
use recycler_core::__loom_set_cpu as set_cpu;
use recycler_core::Recycler;

/// A striped recycler on sections: two CPUs, caches of two, batches of one.
fn striped(alive: &Arc<AtomicUsize>) -> Arc<Recycler<Obj>> {
    recycler_core::__loom_no_rseq(false);
    let pool = counted(alive)
        .striped(2)
        .max_capacity_per_thread(2)
        .batch_size(1)
        .build()
        .unwrap();
    assert!(format!("{pool:?}").contains("\"rseq\""), "{pool:?}");
    Arc::new(pool)
}

/// The audit of `loom_support`, and the counts exact: every get released
/// once (the sections' pops and pushes are counted by the caches' books,
/// folded by the locked path; spills and refills are not gets or
/// releases).
fn audit(pool: &Recycler<Obj>, alive: &AtomicUsize) {
    let s = pool.stats();
    assert_eq!(s.gets, s.released_local + s.released_remote, "{s}");
    assert_eq!(s.gets, s.hits + s.created - s.prefilled, "{s}");
    loom_support::audit(pool, alive);
}

/// An object made and released on `cpu`, so that it starts idle there.
fn idle_on(pool: &Recycler<Obj>, cpu: usize) {
    set_cpu(cpu);
    drop(pool.get());
}

/// A get and a release on CPU 0 (critical sections) race a trim, which
/// shuts both CPUs' caches, fences once and takes everything: each section
/// either committed before the fence (the trim takes or misses its object,
/// counted either way) or restarts and finds its cache shut (then works
/// under the lock, after the trim).
#[test]
fn sections_race_a_trim() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = striped(&alive);
        idle_on(&pool, 0);
        let p = Arc::clone(&pool);
        let owner = thread::spawn(move || {
            set_cpu(0);
            let g = p.get();
            drop(g);
        });
        pool.trim();
        owner.join().unwrap();
        audit(&pool, &alive);
    });
}

/// An owner releases on CPU 0, migrates to CPU 1, and gets there: its
/// cache and the depot empty, it takes from CPU 0's cache (a fence) while
/// another thread gets and releases on CPU 0.
#[test]
fn a_migrating_owner_takes_from_the_cpu_it_left() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = striped(&alive);
        idle_on(&pool, 0);
        let p = Arc::clone(&pool);
        let owner = thread::spawn(move || {
            set_cpu(0);
            let g = p.get();
            drop(g);
            set_cpu(1);
            let g = p.get();
            drop(g);
        });
        set_cpu(0);
        drop(pool.get());
        owner.join().unwrap();
        audit(&pool, &alive);
        assert!(pool.stats().created <= 2, "{}", pool.stats());
    });
}

/// Two threads on CPU 0 (each preempting the other's sections): one fills
/// the cache and spills a batch to the depot, popping it by sections
/// while it holds the depot's lock; a thread on CPU 1 refills from the
/// depot at the same time.
#[test]
fn a_spill_races_a_refill_and_a_neighbour() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = striped(&alive);
        set_cpu(0);
        let held: Vec<_> = (0..3).map(|_| pool.get_owned()).collect();
        let filler = thread::spawn(move || {
            set_cpu(0);
            drop(held);
        });
        let p2 = Arc::clone(&pool);
        let neighbour = thread::spawn(move || {
            set_cpu(0);
            drop(p2.get());
        });
        set_cpu(1);
        drop(pool.get());
        filler.join().unwrap();
        neighbour.join().unwrap();
        audit(&pool, &alive);
    });
}

/// A thread gets and releases on CPU 1 and exits (its exit hooks run)
/// while the main thread trims: nothing waits with the thread that left.
/// (An object starts idle on CPU 1, so that the trim locks its cache:
/// loom's exploration would not revisit a lone early read of an empty
/// cache's word that the thread's section then reads and stores, see
/// `loom_percpu.rs`; the skip is a snapshot, correct whatever it reads.)
#[test]
fn a_thread_exits_while_a_trim_takes() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = striped(&alive);
        set_cpu(0);
        let g = pool.get_owned();
        idle_on(&pool, 1);
        set_cpu(0);
        let p = Arc::clone(&pool);
        let leaver = spawn(move || {
            set_cpu(1);
            drop(g);
            drop(p.get());
        });
        pool.trim();
        leaver.join().unwrap();
        audit(&pool, &alive);
    });
}

/// The last handle drops while an owned guard is released on another CPU:
/// the guard's unit keeps the state alive until its section committed (or
/// its locked push finished), and the state's drop then takes the object
/// from the per-CPU cache.
#[test]
fn the_last_handle_drops_while_a_guard_is_released() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = striped(&alive);
        set_cpu(0);
        let g = pool.get_owned();
        let releaser = thread::spawn(move || {
            set_cpu(1);
            drop(g);
        });
        drop(pool);
        releaser.join().unwrap();
        assert_eq!(alive.load(SeqCst), 0, "dropped with the state");
    });
}
