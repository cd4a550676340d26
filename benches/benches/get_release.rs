//! W1: get + release on the owner thread (Netty's `recyclerGetAndRecycle`),
//! 64-byte object, 1 and 16 held at once; the recycler (each configuration
//! of `recyclers()`, and `get_owned`) against `Box` under the process's
//! global allocator, the peer pools, and the two floors (a bare
//! thread-local `VecDeque`, and a one-object slot in front of one).
//!
//! Run it under another global allocator with
//! `RECYCLER_BENCHES_ALLOC=mimalloc cargo bench -p recycler-benches --bench get_release`
//! (or `system`); the group name carries the allocator.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{
    Boxed, Dispatch, LockfreeLinear, LockfreeSpinLock, Msg, OPool, OPoolLocal, ObjectPool,
    Poolshark, RecyclerOwned, ShardedSlab, Take, bench_group, recyclers, w1_floor, w1_floor_slot,
    w1_get_release,
};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

type Group<'a> = criterion::BenchmarkGroup<'a, criterion::measurement::WallTime>;

fn bench<S: Take<Object = Msg>>(c: &mut Group<'_>, name: &str, source: &S) {
    for held in [1usize, 16] {
        // One iteration is a round of `held` gets and releases.
        c.throughput(Throughput::Elements(held as u64));
        c.bench_with_input(BenchmarkId::new(name, held), &held, |b, &held| {
            b.iter_custom(|iters| w1_get_release(source, held, iters));
        });
    }
}

fn floor(c: &mut Group<'_>, name: &str, f: fn(usize, u64) -> std::time::Duration) {
    for held in [1usize, 16] {
        c.throughput(Throughput::Elements(held as u64));
        c.bench_with_input(BenchmarkId::new(name, held), &held, |b, &held| {
            b.iter_custom(|iters| f(held, iters));
        });
    }
}

fn w1(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("w1_get_release"));
    for (name, recycler) in &recyclers::<Msg>() {
        bench(&mut group, name, recycler);
    }
    bench(&mut group, "recycler_owned", &RecyclerOwned::<Msg>::new());
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
    bench(&mut group, "opool_local", &OPoolLocal::<Msg>::default());
    bench(&mut group, "poolshark", &Poolshark::default());
    floor(&mut group, "floor_tls_vecdeque", w1_floor);
    floor(&mut group, "floor_tls_slot", w1_floor_slot);
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = w1
}
criterion_main!(benches);
