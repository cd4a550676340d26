//! W6: objects got on one thread are released on a random one of two worker
//! threads. The recycler (each configuration of `recyclers()`) against
//! `sharded-slab` (whose slots belong to no thread) and `Box` under the
//! process's global allocator (`RECYCLER_BENCHES_ALLOC`).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{
    Boxed, Dispatch, Msg, ShardedSlab, Source, bench_group, recyclers, w6_migrating,
};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

const WORKERS: usize = 2;

fn bench<S: Source<Object = Msg>>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    source: &S,
) {
    c.bench_function(BenchmarkId::new(name, WORKERS), |b| {
        b.iter_custom(|iters| w6_migrating(source, WORKERS, iters));
    });
}

fn w6(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("w6_migrating"));
    group.throughput(Throughput::Elements(1));
    for (name, recycler) in &recyclers::<Msg>() {
        bench(&mut group, name, recycler);
    }
    bench(&mut group, "sharded_slab", &ShardedSlab::<Msg>::default());
    bench(&mut group, "box", &Boxed::<Msg>::new());
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(15);
    targets = w6
}
criterion_main!(benches);
