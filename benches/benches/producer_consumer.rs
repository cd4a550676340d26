//! W2: one thread gets, another reads and releases, through a bounded queue
//! (Netty's `producerConsumer`); the recycler (each configuration of
//! `recyclers()`) against `Box` under the process's global allocator and
//! the peer pools that can release on another thread, and `thingbuf`'s
//! channel, which is its own pool (the producer writes a recycled slot in
//! place, the consumer reads it there). The two threads are pinned to two
//! CPUs where the OS allows. Time per object; throughput in objects per
//! second.
//!
//! The recycler's own allocations (batch vectors, channel blocks) go to the
//! global allocator: run this suite under each with
//! `RECYCLER_BENCHES_ALLOC=system|jemalloc|mimalloc`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{
    Boxed, Dispatch, LockfreeLinear, LockfreeSpinLock, Msg, OPool, ObjectPool, Poolshark,
    ShardedSlab, Source, Thingbuf, bench_group, recyclers, w2_producer_consumer,
};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

fn bench<S: Source<Object = Msg>>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    source: &S,
) {
    c.bench_function(BenchmarkId::new(name, "2 threads"), |b| {
        b.iter_custom(|iters| w2_producer_consumer(source, iters));
    });
}

fn w2(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("w2_producer_consumer"));
    group.throughput(Throughput::Elements(1));
    for (name, recycler) in &recyclers::<Msg>() {
        bench(&mut group, name, recycler);
    }
    bench(&mut group, "box", &Boxed::<Msg>::new());
    bench(&mut group, "sharded_slab", &ShardedSlab::<Msg>::default());
    bench(&mut group, "object_pool", &ObjectPool::<Msg>::default());
    bench(
        &mut group,
        "lockfree_linear",
        &LockfreeLinear::<Msg>::default(),
    );
    bench(
        &mut group,
        "lockfree_spinlock",
        &LockfreeSpinLock::<Msg>::default(),
    );
    bench(&mut group, "opool", &OPool::<Msg>::default());
    bench(&mut group, "poolshark", &Poolshark::default());
    let chan = Thingbuf::<Msg>::default();
    group.bench_function(BenchmarkId::new("thingbuf", "2 threads"), |b| {
        b.iter_custom(|iters| chan.w2(iters));
    });
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = w2
}
criterion_main!(benches);
