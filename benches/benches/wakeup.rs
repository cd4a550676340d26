//! W10: the wake-up latency of a wait for memory at the pool's limit: a
//! waiter in `acquire_owned_async` (polled by an executor that parks its
//! thread) woken by a free on another thread, against a `Mutex` + `Condvar`
//! handoff and a bare `Thread::unpark`, measured the same way (see
//! `recycler_benches::wakeup`). Criterion's estimate is the mean latency of
//! one wake-up; the median and the 99th percentile of single wake-ups are
//! printed after the group.

use std::time::Duration;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use recycler_benches::wakeup::{Waiter, median_p99, wakeup_latencies};
use recycler_benches::{Dispatch, bench_group};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

fn wakeup(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("w10_wakeup"));
    for waiter in Waiter::ALL {
        group.bench_function(BenchmarkId::new(waiter.name(), "latency"), |b| {
            b.iter_custom(|iters| {
                wakeup_latencies(waiter, iters as usize)
                    .into_iter()
                    .sum::<Duration>()
            });
        });
    }
    group.finish();
    for waiter in Waiter::ALL {
        let lat = wakeup_latencies(waiter, 20_000);
        let (median, p99) = median_p99(&lat);
        eprintln!(
            "w10_wakeup/{}: median {:.1} µs, p99 {:.1} µs over {} wake-ups",
            waiter.name(),
            median.as_secs_f64() * 1e6,
            p99.as_secs_f64() * 1e6,
            lat.len()
        );
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = wakeup
}
criterion_main!(benches);
