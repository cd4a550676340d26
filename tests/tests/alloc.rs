//! Invariant 7: in steady state a get, a release and a cross-thread handoff
//! allocate nothing. A counting global allocator counts each thread's
//! allocations; after a warm-up, the counts must not move. (Not with the
//! `track` feature, whose leak tracker records every guard in a map.)

#![cfg(not(feature = "track"))]

use std::sync::Arc;

use recycler_core::Recycler;

mod counting;
mod handoff_run;
mod pin;

use counting::allocs;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

fn pool(striped: bool) -> Arc<Recycler<Vec<u8>>> {
    let mut b = Recycler::builder_with_factory(|| Vec::with_capacity(64));
    if striped {
        b = b.striped(2);
    }
    Arc::new(b.build().unwrap())
}

#[test]
fn owner_path_allocates_nothing() {
    for striped in [false, true] {
        let pool = pool(striped);
        let round = |n: usize| {
            for i in 0..n {
                let mut held: Vec<_> = Vec::with_capacity(16);
                for _ in 0..16 {
                    let mut g = pool.get();
                    g.push(i as u8);
                    held.push(g);
                }
                drop(held);
                let mut one = pool.get();
                one.push(1);
            }
        };
        round(100); // warm up: objects made, caches grown
        let before = allocs();
        round(10_000);
        // Each round allocates its own `held` vector: 10,000 of them.
        assert_eq!(allocs() - before, 10_000, "striped {striped}");
    }
}

/// Runs the handoff once on a fresh pool and returns the allocations of
/// the producer and of the consumer in its second half, and the stats.
fn handoff_second_half(striped: bool) -> ((u64, u64), String) {
    let (producer, consumer, stats) =
        handoff_run::second_half(&pool(striped), striped, |g, i| g.push(i as u8), |_| ());
    ((producer, consumer), stats)
}

/// In steady state the handoff allocates nothing. A schedule can make a
/// run's second half allocate a little (a stripe or a cache found empty
/// while its objects are in flight: a miss calls the factory), so each
/// mode gets three runs, and one must allocate nothing: an allocation per
/// object, or per batch, would show in every run (25,600 objects a half).
#[test]
fn cross_thread_handoff_allocates_nothing() {
    for striped in [false, true] {
        let mut runs = Vec::new();
        for _ in 0..3 {
            let (counts, stats) = handoff_second_half(striped);
            if counts == (0, 0) {
                break;
            }
            runs.push((counts, stats));
        }
        assert!(
            runs.len() < 3,
            "striped {striped}: (producer, consumer) allocations in every run's second half: {runs:?}"
        );
    }
}
