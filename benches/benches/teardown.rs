//! W7: N live pooled objects released and the recycler dropped, for N from
//! 16 Ki to 4 Mi; the time per object must stay flat (linear cost). The
//! baseline frees N live boxes.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{Dispatch, bench_group, w7_teardown, w7_teardown_boxes};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

fn w7(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("w7_teardown"));
    for n in [16usize << 10, 256 << 10, 4 << 20] {
        group.throughput(Throughput::Elements(n as u64));
        group.bench_with_input(BenchmarkId::new("recycler", n), &n, |b, &n| {
            b.iter_custom(|iters| (0..iters).map(|_| w7_teardown(n)).sum());
        });
        group.bench_with_input(BenchmarkId::new("boxes", n), &n, |b, &n| {
            b.iter_custom(|iters| (0..iters).map(|_| w7_teardown_boxes(n)).sum());
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10);
    targets = w7
}
criterion_main!(benches);
