//! W8: W1 on 1 and 2 threads sharing one pool; with per-thread caches and no
//! shared cache line on the owner path, 2 threads should do at least 1.8x
//! the work of one.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{Boxed, Dispatch, Msg, Take, bench_group, recyclers, w8_scaling};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

fn bench<S: Take<Object = Msg> + Sync>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    source: &S,
) {
    for threads in [1usize, 2] {
        c.throughput(Throughput::Elements(threads as u64));
        c.bench_with_input(BenchmarkId::new(name, threads), &threads, |b, &threads| {
            b.iter_custom(|iters| w8_scaling(source, threads, iters));
        });
    }
}

fn w8(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("w8_scaling"));
    for (name, recycler) in &recyclers::<Msg>() {
        bench(&mut group, name, recycler);
    }
    bench(&mut group, "box", &Boxed::<Msg>::new());
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = w8
}
criterion_main!(benches);
