//! Loom models of the per-CPU cache on restartable sequences
//! (`recycler-core/src/percpu.rs`), run against the real locked path and
//! the modelled critical sections (see `.ci/loom.sh`).
//!
//! Under loom, a critical section is the real one's steps (read `shut`,
//! read the length, read or write the item, commit the length), each a
//! restart point: a modelled CPU runs one thread's section at a time, and a
//! step that finds its section preempted (another thread started one on
//! that CPU) or fenced (the modelled `membarrier` emptied every CPU)
//! restarts it from the top, as the kernel's abort would; the commit is the
//! last step, checked and stored at once. The stack's items are loom
//! `UnsafeCell`s, so a section and a locked access that touch one without
//! an order between them are reported; the audit at the end of each model
//! checks that every object is in exactly one place.
//!
//! Each model starts with an object on the stacks a stealer takes from:
//! a stealer skips a stack it reads as empty without locking it, and loom's
//! exploration, which remembers only the last access to an atomic, would
//! not revisit a lone early read of the length that a later section's own
//! read and store of it follow (the skip itself is a snapshot, correct
//! whatever it reads).

#![cfg(loom)]

mod loom_support;

use std::sync::Arc;

use loom::thread;
use loom_support::model;
use recycler_core::__PerCpu as PerCpu;
use recycler_core::__loom_set_cpu as set_cpu;

/// Every object `0..made` once, from wherever they ended up.
fn audit(cache: &PerCpu<u32>, made: u32, places: Vec<Vec<Box<u32>>>) {
    let mut ids: Vec<u32> = places.into_iter().flatten().map(|b| *b).collect();
    ids.extend(cache.drain().into_iter().map(|b| *b));
    ids.sort_unstable();
    assert_eq!(ids, (0..made).collect::<Vec<_>>(), "{cache:?}");
    assert_eq!(cache.idle(), 0);
}

/// Pushes `obj`; keeps it in `hand` if the stack is full.
fn push(cache: &PerCpu<u32>, obj: Box<u32>, hand: &mut Vec<Box<u32>>) {
    if let Err(obj) = cache.push(obj) {
        hand.push(obj);
    }
}

/// An owner on CPU 0 pushes two objects and pops one while a stealer takes
/// from CPU 0's stack: the stealer shuts it, fences and takes while the
/// owner's sections run, restart or find it shut (then the owner works under
/// the lock, handed over by the stealer).
#[test]
fn a_push_and_a_pop_race_a_steal() {
    model(|| {
        let cache = Arc::new(PerCpu::<u32>::with_slots(2, 3));
        assert!(cache.uses_rseq());
        set_cpu(0);
        cache.push(Box::new(2)).unwrap();
        let c = Arc::clone(&cache);
        let owner = thread::spawn(move || {
            set_cpu(0);
            let mut hand = Vec::new();
            push(&c, Box::new(0), &mut hand);
            push(&c, Box::new(1), &mut hand);
            hand.extend(c.pop());
            hand
        });
        let mut stolen = Vec::with_capacity(2);
        assert!(cache.steal(0, 2, &mut stolen) > 0);
        let hand = owner.join().unwrap();
        audit(&cache, 3, vec![hand, stolen]);
    });
}

/// An owner that migrates between CPU 0 and CPU 1 between its operations,
/// while a stealer drains both stacks with one fence.
#[test]
fn a_migrating_owner_races_a_drain() {
    model(|| {
        let cache = Arc::new(PerCpu::<u32>::with_slots(2, 2));
        set_cpu(1);
        cache.push(Box::new(2)).unwrap();
        let c = Arc::clone(&cache);
        let owner = thread::spawn(move || {
            let mut hand = Vec::new();
            set_cpu(0);
            push(&c, Box::new(0), &mut hand);
            set_cpu(1);
            push(&c, Box::new(1), &mut hand);
            hand.extend(c.pop());
            set_cpu(0);
            hand.extend(c.pop());
            hand
        });
        let drained = cache.drain();
        assert!(!drained.is_empty());
        let hand = owner.join().unwrap();
        audit(&cache, 3, vec![hand, drained]);
    });
}

/// Two threads on one CPU (each preempts the other's sections) while a
/// stealer takes from that CPU's stack.
#[test]
fn two_threads_on_one_cpu_race_a_steal() {
    model(|| {
        let cache = Arc::new(PerCpu::<u32>::with_slots(1, 3));
        set_cpu(0);
        cache.push(Box::new(2)).unwrap();
        let threads: Vec<_> = (0..2)
            .map(|i| {
                let c = Arc::clone(&cache);
                thread::spawn(move || {
                    set_cpu(0);
                    let mut hand = Vec::new();
                    push(&c, Box::new(i), &mut hand);
                    hand.extend(c.pop());
                    hand
                })
            })
            .collect();
        let mut stolen = Vec::with_capacity(1);
        assert_eq!(cache.steal(0, 1, &mut stolen), 1);
        let mut places: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
        places.push(stolen);
        audit(&cache, 3, places);
    });
}

/// A thread whose CPU has no slot (CPU 1 of a one-slot cache) takes the
/// locked path, with shut and fence, while an owner on CPU 0 runs sections
/// on the same stack.
#[test]
fn a_cpu_without_a_slot_races_the_owner() {
    model(|| {
        let cache = Arc::new(PerCpu::<u32>::with_slots(1, 2));
        let c = Arc::clone(&cache);
        let outsider = thread::spawn(move || {
            set_cpu(1);
            let mut hand = Vec::new();
            push(&c, Box::new(0), &mut hand);
            hand.extend(c.pop());
            hand
        });
        set_cpu(0);
        let mut hand = Vec::new();
        push(&cache, Box::new(1), &mut hand);
        hand.extend(cache.pop());
        let theirs = outsider.join().unwrap();
        assert!(cache.slow_ops() >= 2, "{cache:?}");
        audit(&cache, 2, vec![hand, theirs]);
    });
}

/// The fallback (a lock per CPU stack): a migrating owner and a stealer.
#[test]
fn the_fallback_races_a_steal() {
    model(|| {
        let cache = Arc::new(PerCpu::<u32>::fallback(2, 2));
        assert!(!cache.uses_rseq());
        set_cpu(0);
        cache.push(Box::new(2)).unwrap();
        let c = Arc::clone(&cache);
        let owner = thread::spawn(move || {
            let mut hand = Vec::new();
            set_cpu(0);
            push(&c, Box::new(0), &mut hand);
            set_cpu(1);
            push(&c, Box::new(1), &mut hand);
            hand.extend(c.pop());
            hand
        });
        let mut stolen = Vec::with_capacity(2);
        assert!(cache.steal(0, 2, &mut stolen) > 0);
        let hand = owner.join().unwrap();
        audit(&cache, 3, vec![hand, stolen]);
    });
}
