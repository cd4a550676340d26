//! Idle decay: a thread whose load dropped hands what its cache left unused
//! to the depot, where other threads find it; with decay off it keeps it.

mod common;

use std::thread;

use common::{Counts, assert_conserved, builder};

/// A burst of 1,000 objects released into this thread's cache, then
/// `gets` gets one object at a time; returns how many objects another
/// thread then finds without the factory.
fn found_elsewhere(decay: bool, gets: usize) -> u64 {
    let counts = Counts::new();
    let pool = builder(&counts).idle_decay(decay).build().unwrap();
    let burst: Vec<_> = (0..1000).map(|_| pool.get()).collect();
    drop(burst);
    for _ in 0..gets {
        drop(pool.get());
    }
    let found = thread::scope(|s| {
        s.spawn(|| {
            let mut held = Vec::new();
            while let Some(g) = pool.try_get() {
                held.push(g);
            }
            held.len() as u64
        })
        .join()
        .unwrap()
    });
    assert_conserved(&pool, &counts, 0);
    assert_eq!(counts.made(), 1000, "nothing made after the burst");
    found
}

#[test]
fn decay_hands_unused_objects_to_other_threads() {
    // Before the first pass (65,536 gets), nothing has moved.
    assert_eq!(found_elsewhere(true, 1000), 0);
    // After two passes: the first sets the low-water mark (999 in the batch,
    // unused), the second hands three quarters of it over.
    let after_two = found_elsewhere(true, 2 * 65_536 + 10);
    assert!((740..=760).contains(&after_two), "{after_two}");
    // More passes keep taking three quarters of what stays unused.
    let after_six = found_elsewhere(true, 6 * 65_536 + 10);
    assert!(after_six > 990, "{after_six}");
}

#[test]
fn without_decay_the_cache_keeps_them() {
    assert_eq!(found_elsewhere(false, 6 * 65_536 + 10), 0);
}
