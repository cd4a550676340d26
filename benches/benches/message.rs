//! W9: a realistic message (a topic, a payload of 256 B to 4 KiB, 4 to 8
//! header pairs, scalars) built, encoded into a buffer and released, per
//! message: on one thread (`w9_owner`) and with one thread building and
//! another encoding and releasing (`w9_producer_consumer`).
//!
//! The recycler (each configuration of `recyclers()`) pools the message and
//! encodes into a `BufferPool` buffer; `box` builds a fresh `Box<Message>`
//! with fresh strings and vectors and encodes into a fresh `Vec<u8>`; each
//! peer pools the message and, in a second pool of its own kind, the
//! `Vec<u8>`. Every pool resets the message with its derived `reset`. Run it
//! under each global allocator with `RECYCLER_BENCHES_ALLOC`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{
    Boxed, Buffers, Corpus, Dispatch, FreshVec, LockfreeLinear, LockfreeSpinLock, Message, OPool,
    OPoolLocal, ObjectPool, ShardedSlab, Source, Take, VecPool, bench_group, recyclers, w9_owner,
    w9_producer_consumer,
};
use recycler_core::buffer::BufferPool;

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn owner<M: Take<Object = Message>, B: Buffers>(
    c: &mut Group<'_>,
    corpus: &Corpus,
    name: &str,
    messages: &M,
    buffers: &B,
) {
    c.bench_function(BenchmarkId::new(name, "1 thread"), |b| {
        b.iter_custom(|iters| w9_owner(messages, buffers, corpus, iters));
    });
}

fn producer_consumer<M: Source<Object = Message>, B: Buffers + Sync>(
    c: &mut Group<'_>,
    corpus: &Corpus,
    name: &str,
    messages: &M,
    buffers: &B,
) {
    c.bench_function(BenchmarkId::new(name, "2 threads"), |b| {
        b.iter_custom(|iters| w9_producer_consumer(messages, buffers, corpus, iters));
    });
}

/// A peer pool of messages and one of the same kind for the buffers.
fn peer<P: Default, Q: Default>() -> (P, VecPool<Q>) {
    (P::default(), VecPool(Q::default()))
}

fn buffer_pool() -> BufferPool {
    BufferPool::builder()
        .build()
        .expect("the default configuration is valid")
}

fn w9_owner_group(c: &mut Criterion) {
    let corpus = Corpus::new();
    let mut group = c.benchmark_group(bench_group("w9_owner"));
    group.throughput(Throughput::Elements(1));
    let g = &mut group;
    let buffers = buffer_pool();
    for (name, recycler) in &recyclers::<Message>() {
        owner(g, &corpus, name, recycler, &buffers);
    }
    owner(g, &corpus, "box", &Boxed::<Message>::new(), &FreshVec);
    let (m, b) = peer::<ShardedSlab<Message>, ShardedSlab<Vec<u8>>>();
    owner(g, &corpus, "sharded_slab", &m, &b);
    let (m, b) = peer::<ObjectPool<Message>, ObjectPool<Vec<u8>>>();
    owner(g, &corpus, "object_pool", &m, &b);
    let (m, b) = peer::<LockfreeLinear<Message>, LockfreeLinear<Vec<u8>>>();
    owner(g, &corpus, "lockfree_linear", &m, &b);
    let (m, b) = peer::<LockfreeSpinLock<Message>, LockfreeSpinLock<Vec<u8>>>();
    owner(g, &corpus, "lockfree_spinlock", &m, &b);
    let (m, b) = peer::<OPool<Message>, OPool<Vec<u8>>>();
    owner(g, &corpus, "opool", &m, &b);
    let (m, b) = peer::<OPoolLocal<Message>, OPoolLocal<Vec<u8>>>();
    owner(g, &corpus, "opool_local", &m, &b);
    group.finish();
}

fn w9_producer_consumer_group(c: &mut Criterion) {
    let corpus = Corpus::new();
    let mut group = c.benchmark_group(bench_group("w9_producer_consumer"));
    group.throughput(Throughput::Elements(1));
    let g = &mut group;
    let buffers = buffer_pool();
    for (name, recycler) in &recyclers::<Message>() {
        producer_consumer(g, &corpus, name, recycler, &buffers);
    }
    producer_consumer(g, &corpus, "box", &Boxed::<Message>::new(), &FreshVec);
    let (m, b) = peer::<ShardedSlab<Message>, ShardedSlab<Vec<u8>>>();
    producer_consumer(g, &corpus, "sharded_slab", &m, &b);
    let (m, b) = peer::<ObjectPool<Message>, ObjectPool<Vec<u8>>>();
    producer_consumer(g, &corpus, "object_pool", &m, &b);
    let (m, b) = peer::<LockfreeLinear<Message>, LockfreeLinear<Vec<u8>>>();
    producer_consumer(g, &corpus, "lockfree_linear", &m, &b);
    let (m, b) = peer::<LockfreeSpinLock<Message>, LockfreeSpinLock<Vec<u8>>>();
    producer_consumer(g, &corpus, "lockfree_spinlock", &m, &b);
    let (m, b) = peer::<OPool<Message>, OPool<Vec<u8>>>();
    producer_consumer(g, &corpus, "opool", &m, &b);
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = w9_owner_group, w9_producer_consumer_group
}
criterion_main!(benches);
