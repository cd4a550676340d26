//! W2M, the message pipeline: one thread fills a realistic message (a
//! `String` topic, a 256 B to 4 KiB payload, 4 to 8 header pairs of short
//! strings, scalars; pseudo-random sizes and contents from a fixed seed,
//! `recycler_benches::Corpus`), another reads every byte of it (a
//! checksum) and releases it, through a bounded queue of 1024 slots, the
//! two threads pinned to two CPUs where the OS allows.
//!
//! Contenders: the recycler with its defaults and with
//! `reset_on_return(false)`; a fresh `Box<Message>` with fresh strings and
//! vectors; `thingbuf::mpsc::blocking::with_recycle`, whose channel is its
//! own pool (the producer fills a recycled slot in place, the consumer
//! reads it there; the recycle policy clears and keeps capacity); and the
//! peer pools that can release on another thread. Every pooled contender
//! but `thingbuf` goes through the same `crossbeam-channel` queue as `Box`.
//! Time per message; run under each global allocator with
//! `RECYCLER_BENCHES_ALLOC=system|jemalloc|mimalloc`.
//!
//! criterion measures one contender after the other; `compare --workload
//! W2M` takes the contenders' samples in turns, which a shared machine's
//! drifts affect less.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{
    Boxed, Corpus, Dispatch, LockfreeLinear, LockfreeMutex, LockfreeSpinLock, Message, OPool,
    ObjectPool, ShardedSlab, Source, Thingbuf, bench_group, w2m_pipeline,
};
use recycler_core::Recycler;

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn bench<S: Source<Object = Message>>(c: &mut Group<'_>, corpus: &Corpus, name: &str, source: &S) {
    c.bench_function(BenchmarkId::new(name, "2 threads"), |b| {
        b.iter_custom(|iters| w2m_pipeline(source, corpus, iters).elapsed);
    });
}

fn w2m(c: &mut Criterion) {
    let corpus = Corpus::new();
    let mut group = c.benchmark_group(bench_group("w2m_pipeline"));
    group.throughput(Throughput::Elements(1));
    let g = &mut group;
    bench(g, &corpus, "recycler", &Recycler::<Message>::new());
    let at_home = Recycler::<Message>::builder()
        .reset_on_return(false)
        .build()
        .expect("a valid configuration");
    bench(g, &corpus, "recycler_reset_at_home", &at_home);
    let chan = Thingbuf::<Message>::default();
    g.bench_function(BenchmarkId::new("thingbuf", "2 threads"), |b| {
        b.iter_custom(|iters| chan.w2m(&corpus, iters).elapsed);
    });
    bench(g, &corpus, "box", &Boxed::<Message>::new());
    bench(
        g,
        &corpus,
        "sharded_slab",
        &ShardedSlab::<Message>::default(),
    );
    bench(g, &corpus, "object_pool", &ObjectPool::<Message>::default());
    bench(
        g,
        &corpus,
        "lockfree_linear",
        &LockfreeLinear::<Message>::default(),
    );
    bench(
        g,
        &corpus,
        "lockfree_spinlock",
        &LockfreeSpinLock::<Message>::default(),
    );
    bench(
        g,
        &corpus,
        "lockfree_mutex",
        &LockfreeMutex::<Message>::default(),
    );
    bench(g, &corpus, "opool", &OPool::<Message>::default());
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = w2m
}
criterion_main!(benches);
