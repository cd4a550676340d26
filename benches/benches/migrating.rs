//! W6: objects got on one thread are released on a random one of two worker
//! threads. The per-thread recycler against `sharded-slab` (whose slots
//! belong to no thread) and `Box` under jemalloc. Striped mode, which the
//! design describes for this case, does not exist yet.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{BoxJemalloc, Jemalloc, Msg, ShardedSlab, Source, w6_migrating};
use recycler_core::Recycler;

#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

const WORKERS: usize = 2;

fn bench<S: Source>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    source: &S,
) {
    c.bench_function(BenchmarkId::new(name, WORKERS), |b| {
        b.iter_custom(|iters| w6_migrating(source, WORKERS, iters));
    });
}

fn w6(c: &mut Criterion) {
    let mut group = c.benchmark_group("w6_migrating");
    group.throughput(Throughput::Elements(1));
    bench(&mut group, "recycler", &Recycler::<Msg>::new());
    bench(&mut group, "sharded_slab", &ShardedSlab::default());
    bench(&mut group, "box_jemalloc", &BoxJemalloc);
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(15);
    targets = w6
}
criterion_main!(benches);
