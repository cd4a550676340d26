//! W4 (Jetty's `inputFixedCapacityOutputRandomCapacity`): per operation a
//! 4 KiB input buffer and an output buffer of random capacity (all 16
//! buckets, or a fixed few), both written and released; unbounded and with
//! `max_idle_memory` = 1 MiB, with statistics on and off, in striped mode,
//! and the peers that can serve it (`opool`'s `LocalPool` and
//! `lockfree-object-pool`'s linear pool, one pool per size); writing every
//! byte (`w4_fill`) or one byte per 4 KiB page (`w4_page`, so that memset
//! does not hide the pool's own cost). Throughput is in operations; the hit
//! ratio of the 4 KiB bucket is printed after each group.
//!
//! Targets: at least 30 Mops/s on one thread in the page-touch variant, and
//! faster than every peer; the 1 MiB cap costs at most 20 %; a 4 KiB hit
//! ratio of at least 99.9 % with the cap; statistics on and off at most 3 %
//! apart.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::buffer_peers::{
    W4LinearPools, W4LocalPools, w4_mix_lockfree_linear, w4_mix_opool_local,
};
use recycler_benches::buffers::{
    Touch, W4_ALL_SIZES, W4_FEW_SIZES, w4_mix, w4_pool, w4_striped_pool,
};
use recycler_benches::{Dispatch, bench_group};
use recycler_core::buffer::BufferPool;

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

const MIB: usize = 1 << 20;

/// Makes one contender's pool.
type MakePool = fn() -> BufferPool;

fn group(c: &mut Criterion, name: &str, how: Touch) {
    let mut group = c.benchmark_group(bench_group(name));
    group.throughput(Throughput::Elements(1));
    let contenders: [(&str, MakePool); 5] = [
        ("unbounded", || w4_pool(None, true)),
        ("cap_1mib", || w4_pool(Some(MIB), true)),
        ("unbounded_stats_off", || w4_pool(None, false)),
        ("cap_1mib_stats_off", || w4_pool(Some(MIB), false)),
        ("striped", w4_striped_pool),
    ];
    let mut ratios = Vec::new();
    for (impl_name, make) in contenders {
        for (diversity, sizes) in [("all16", &W4_ALL_SIZES[..]), ("few4", &W4_FEW_SIZES[..])] {
            let pool = make();
            let mut hits = (0u64, 0u64);
            group.bench_with_input(
                BenchmarkId::new(impl_name, diversity),
                &sizes,
                |b, sizes| {
                    b.iter_custom(|iters| {
                        let run = w4_mix(&pool, sizes, how, iters);
                        if !run.hit_ratio_4k.is_nan() {
                            hits.0 += (run.hit_ratio_4k * iters as f64).round() as u64;
                            hits.1 += iters;
                        }
                        run.elapsed
                    });
                },
            );
            if hits.1 > 0 {
                ratios.push(format!(
                    "{name}/{impl_name}/{diversity}: 4 KiB hit ratio {:.4} % over {} acquires",
                    100.0 * hits.0 as f64 / hits.1 as f64,
                    hits.1
                ));
            }
        }
    }
    for (diversity, sizes) in [("all16", &W4_ALL_SIZES[..]), ("few4", &W4_FEW_SIZES[..])] {
        let local = W4LocalPools::new(sizes);
        group.bench_function(BenchmarkId::new("opool_local", diversity), |b| {
            b.iter_custom(|iters| w4_mix_opool_local(&local, how, iters));
        });
        let linear = W4LinearPools::new(sizes);
        group.bench_function(BenchmarkId::new("lockfree_linear", diversity), |b| {
            b.iter_custom(|iters| w4_mix_lockfree_linear(&linear, how, iters));
        });
    }
    group.finish();
    for line in ratios {
        println!("{line}");
    }
}

fn w4(c: &mut Criterion) {
    group(c, "w4_page", Touch::Page);
    group(c, "w4_fill", Touch::Fill);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30);
    targets = w4
}
criterion_main!(benches);
