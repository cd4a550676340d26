//! W3: acquire a buffer, write every byte, release it; 4 KiB and 64 KiB;
//! the pool against `Vec::with_capacity` + fill and `vec![0; n]` + fill,
//! under the global allocator `RECYCLER_BENCHES_ALLOC` names (jemalloc by
//! default). Targets: at least 2x faster than `vec!` at 64 KiB,
//! and never slower than `Vec::with_capacity`.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::buffers::{w3_fill_pool, w3_fill_vec_with_capacity, w3_fill_vec_zeroed};
use recycler_benches::{Dispatch, bench_group};
use recycler_core::buffer::BufferPool;

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

fn w3(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("w3_fill"));
    let pool = BufferPool::new();
    for size in [4096usize, 65536] {
        group.throughput(Throughput::Bytes(size as u64));
        group.bench_with_input(BenchmarkId::new("pool", size), &size, |b, &size| {
            b.iter_custom(|iters| w3_fill_pool(&pool, size, iters));
        });
        group.bench_with_input(
            BenchmarkId::new("vec_with_capacity", size),
            &size,
            |b, &size| {
                b.iter_custom(|iters| w3_fill_vec_with_capacity(size, iters));
            },
        );
        group.bench_with_input(BenchmarkId::new("vec_zeroed", size), &size, |b, &size| {
            b.iter_custom(|iters| w3_fill_vec_zeroed(size, iters));
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = w3
}
criterion_main!(benches);
