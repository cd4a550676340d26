//! W2: one thread gets, another reads and releases, through a bounded queue
//! (Netty's `producerConsumer`); against `Box` under three allocators and
//! the peer pools that can release on another thread. Time per object;
//! throughput in objects per second.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{
    BoxJemalloc, BoxMimalloc, BoxSystem, Jemalloc, LockfreeLinear, LockfreeSpinLock, Msg, OPool,
    ObjectPool, Poolshark, ShardedSlab, Source, w2_producer_consumer,
};
use recycler_core::Recycler;

#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

fn bench<S: Source>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    source: &S,
) {
    c.bench_function(BenchmarkId::new(name, "2 threads"), |b| {
        b.iter_custom(|iters| w2_producer_consumer(source, iters));
    });
}

fn w2(c: &mut Criterion) {
    let mut group = c.benchmark_group("w2_producer_consumer");
    group.throughput(Throughput::Elements(1));
    bench(&mut group, "recycler", &Recycler::<Msg>::new());
    bench(&mut group, "box_jemalloc", &BoxJemalloc);
    bench(&mut group, "box_mimalloc", &BoxMimalloc);
    bench(&mut group, "box_system", &BoxSystem);
    bench(&mut group, "sharded_slab", &ShardedSlab::default());
    bench(&mut group, "object_pool", &ObjectPool::default());
    bench(&mut group, "lockfree_linear", &LockfreeLinear::default());
    bench(
        &mut group,
        "lockfree_spinlock",
        &LockfreeSpinLock::default(),
    );
    bench(&mut group, "opool", &OPool::default());
    bench(&mut group, "poolshark", &Poolshark::default());
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = w2
}
criterion_main!(benches);
