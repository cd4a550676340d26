//! W5 (Panama's pooled segments): `k` = 1, 16 and 200 buffers of 1 KiB
//! allocated, written in full and released together, by a scope, direct
//! acquires, an exhausted pool (every buffer allocated and freed), `Vec`
//! (malloc/free) and `bumpalo` as the arena (reset each round). Throughput
//! is in buffers. Targets: the scope within 1.5x of `bumpalo`, and faster
//! than `Vec` at k = 200.

use bumpalo::Bump;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::buffers::{
    w5_acquire, w5_bumpalo, w5_exhausted_pool, w5_pool, w5_scope, w5_vec,
};
use recycler_benches::{Dispatch, bench_group};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

fn w5(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("w5_alloc_1k"));
    let pool = w5_pool();
    let exhausted = w5_exhausted_pool();
    let mut bump = Bump::new();
    for k in [1usize, 16, 200] {
        group.throughput(Throughput::Elements(k as u64));
        group.bench_with_input(BenchmarkId::new("scope", k), &k, |b, &k| {
            b.iter_custom(|iters| w5_scope(&pool, k, iters));
        });
        group.bench_with_input(BenchmarkId::new("acquire", k), &k, |b, &k| {
            b.iter_custom(|iters| w5_acquire(&pool, k, iters));
        });
        group.bench_with_input(BenchmarkId::new("exhausted_pool", k), &k, |b, &k| {
            b.iter_custom(|iters| w5_acquire(&exhausted, k, iters));
        });
        group.bench_with_input(BenchmarkId::new("vec", k), &k, |b, &k| {
            b.iter_custom(|iters| w5_vec(k, iters));
        });
        group.bench_with_input(BenchmarkId::new("bumpalo", k), &k, |b, &k| {
            b.iter_custom(|iters| w5_bumpalo(&mut bump, k, iters));
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = w5
}
criterion_main!(benches);
