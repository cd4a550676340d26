//! W2: one thread gets, another reads and releases, through a bounded queue
//! (Netty's `producerConsumer`); against `Box` under jemalloc and the system
//! allocator. Time per object; throughput in objects per second.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{BoxJemalloc, BoxSystem, Jemalloc, Msg, w2_producer_consumer};
use recycler_core::Recycler;

#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

fn w2(c: &mut Criterion) {
    let pool: Recycler<Msg> = Recycler::new();
    let mut group = c.benchmark_group("w2_producer_consumer");
    group.throughput(Throughput::Elements(1));
    group.bench_function(BenchmarkId::new("recycler", "2 threads"), |b| {
        b.iter_custom(|iters| w2_producer_consumer(&pool, iters));
    });
    group.bench_function(BenchmarkId::new("box_jemalloc", "2 threads"), |b| {
        b.iter_custom(|iters| w2_producer_consumer(&BoxJemalloc, iters));
    });
    group.bench_function(BenchmarkId::new("box_system", "2 threads"), |b| {
        b.iter_custom(|iters| w2_producer_consumer(&BoxSystem, iters));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = w2
}
criterion_main!(benches);
