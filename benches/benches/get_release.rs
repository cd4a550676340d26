//! W1: get + release on the owner thread (Netty's `recyclerGetAndRecycle`),
//! 64-byte object, 1 and 16 held at once; against `Box` under three
//! allocators, the peer pools, and the floor (a bare thread-local
//! `VecDeque`).

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{
    BoxJemalloc, BoxMimalloc, BoxSystem, Jemalloc, LockfreeLinear, LockfreeSpinLock, Msg, OPool,
    OPoolLocal, ObjectPool, Poolshark, ShardedSlab, Take, w1_floor, w1_get_release,
};
use recycler_core::Recycler;

#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

fn bench<S: Take>(
    c: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    source: &S,
) {
    for held in [1usize, 16] {
        // One iteration is a round of `held` gets and releases.
        c.throughput(Throughput::Elements(held as u64));
        c.bench_with_input(BenchmarkId::new(name, held), &held, |b, &held| {
            b.iter_custom(|iters| w1_get_release(source, held, iters));
        });
    }
}

fn w1(c: &mut Criterion) {
    let mut group = c.benchmark_group("w1_get_release");
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
    bench(&mut group, "opool_local", &OPoolLocal::default());
    bench(&mut group, "poolshark", &Poolshark::default());
    for held in [1usize, 16] {
        group.bench_with_input(
            BenchmarkId::new("floor_tls_vecdeque", held),
            &held,
            |b, &held| {
                b.iter_custom(|iters| w1_floor(held, iters));
            },
        );
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = w1
}
criterion_main!(benches);
