//! The cross-thread handoff that the allocation tests count (`alloc.rs`,
//! `zero_alloc.rs`): a producer gets owned guards and fills them, hands
//! them over a channel to a consumer, which checks and drops them (a
//! foreign release: `reset` runs there, and the object goes home). Each
//! thread counts its own allocations in the run's second half, with the
//! counting allocator of the test binary (`counting`).
//!
//! In striped mode both threads are pinned to one CPU, whose cache they
//! share (`pin`'s docs say why).

use std::sync::{Arc, Barrier};
use std::thread;

use recycler_core::{OwnedPooled, Recyclable, Recycler};

use crate::counting::allocs;
use crate::pin::{affinity, first_cpu_of, set_affinity};

/// Rounds of a run; the second half is counted.
pub(crate) const ROUNDS: usize = 200;
/// Objects handed over per round.
pub(crate) const PER_ROUND: usize = 256;
/// Objects in the counted half of a run.
#[allow(
    dead_code,
    reason = "not every test binary that shares this module reads it"
)]
pub(crate) const COUNTED: u64 = (ROUNDS / 2 * PER_ROUND) as u64;

/// Calls `f` until it returns something, yielding in between.
pub(crate) fn spin<R>(mut f: impl FnMut() -> Option<R>) -> R {
    loop {
        if let Some(r) = f() {
            return r;
        }
        thread::yield_now();
    }
}

/// Runs the handoff once on `pool` (striped or not, as `striped` says):
/// the producer fills the `n`th guard with `fill(guard, n)`, the consumer
/// runs `check` on each before it drops it. Returns the allocations of the
/// producer and of the consumer in the run's second half, and the pool's
/// statistics after it (whose hit ratio must be above 99 %).
pub(crate) fn second_half<T>(
    pool: &Arc<Recycler<T>>,
    striped: bool,
    fill: impl Fn(&mut T, usize),
    check: impl Fn(&T) + Send + 'static,
) -> (u64, u64, String)
where
    T: Recyclable + Send + 'static,
{
    let own = affinity();
    let one = striped.then(|| first_cpu_of(&own));
    if let Some(one) = &one {
        set_affinity(one);
    }
    // A bounded channel allocates its slots once, here; its sends and
    // receives allocate nothing. Neither thread ever blocks on one (each
    // spins on `try_`): a thread's first block on a channel registers it in
    // the channel's waiter list, which allocates, and were that to fall in
    // the second half it would be counted against the pool. The consumer
    // sends one token per round back, so that the producer's next round
    // starts when the last one's objects have been released.
    let (tx, rx) = crossbeam_channel::bounded::<OwnedPooled<T>>(PER_ROUND);
    let (back_tx, back_rx) = crossbeam_channel::bounded::<()>(1);
    let barrier = Arc::new(Barrier::new(2));
    let consumer = {
        let barrier = Arc::clone(&barrier);
        thread::spawn(move || {
            if let Some(one) = &one {
                set_affinity(one);
            }
            let mut counted = None;
            for round in 0..ROUNDS {
                if round == ROUNDS / 2 {
                    counted = Some(allocs());
                }
                for _ in 0..PER_ROUND {
                    let guard = spin(|| rx.try_recv().ok());
                    check(&guard);
                    drop(guard); // a foreign release
                }
                spin(|| back_tx.try_send(()).ok());
            }
            barrier.wait();
            allocs() - counted.unwrap()
        })
    };
    let mut counted = None;
    for round in 0..ROUNDS {
        if round == ROUNDS / 2 {
            counted = Some(allocs());
        }
        for i in 0..PER_ROUND {
            let mut guard = pool.get_owned();
            fill(&mut guard, round * PER_ROUND + i);
            let mut guard = Some(guard);
            spin(|| match tx.try_send(guard.take()?) {
                Ok(()) => Some(()),
                Err(e) => {
                    guard = Some(e.into_inner());
                    None
                }
            });
        }
        spin(|| back_rx.try_recv().ok());
    }
    let producer = allocs() - counted.unwrap();
    barrier.wait();
    let consumer = consumer.join().unwrap();
    set_affinity(&own);
    let stats = pool.stats();
    assert!(stats.hit_ratio() > 0.99, "{stats}");
    (producer, consumer, stats.to_string())
}
