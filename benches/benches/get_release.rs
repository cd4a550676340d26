//! W1: get + release on the owner thread (Netty's `recyclerGetAndRecycle`),
//! 64-byte object, 1 and 16 held at once; against `Box` under jemalloc and
//! the system allocator, and the floor: a bare thread-local `VecDeque`.

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use recycler_benches::{BoxJemalloc, BoxSystem, Jemalloc, Msg, w1_floor, w1_get_release};
use recycler_core::Recycler;

#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

fn w1(c: &mut Criterion) {
    let pool: Recycler<Msg> = Recycler::new();
    let mut group = c.benchmark_group("w1_get_release");
    for held in [1usize, 16] {
        group.bench_with_input(BenchmarkId::new("recycler", held), &held, |b, &held| {
            b.iter_custom(|iters| w1_get_release(&pool, held, iters));
        });
        group.bench_with_input(BenchmarkId::new("box_jemalloc", held), &held, |b, &held| {
            b.iter_custom(|iters| w1_get_release(&BoxJemalloc, held, iters));
        });
        group.bench_with_input(BenchmarkId::new("box_system", held), &held, |b, &held| {
            b.iter_custom(|iters| w1_get_release(&BoxSystem, held, iters));
        });
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
