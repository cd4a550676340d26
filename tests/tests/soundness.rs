//! Soundness of the safe API.
//!
//! At compile time: each `tests/soundness/*.rs` must fail to compile with
//! exactly the messages in its `.stderr`. Together they show that safe code
//! cannot send a guard of a `!Send` object to another thread (`Pooled`,
//! `OwnedPooled`) nor share a guard of a `!Sync` one or a `Scope`, cannot
//! keep a `Pooled`, `PooledBuf`, `Scope` or scope slice past what it
//! borrows, and cannot hold two `&mut` to one buffer or object.
//!
//! At run time: the slices of one scope, which are alive and mutable at
//! once, never overlap, are aligned, and keep what was written to them.
//!
//! The messages depend on the compiler version; refresh them with
//! `TRYBUILD=overwrite cargo test -p recycler-tests --test soundness` after
//! a toolchain upgrade and read the diff: each must still be the error the
//! file's comment names. `scope-not-sync.stderr` lists every field of
//! `Scope` that is not `Sync`, so it changes with those fields too.

use proptest::prelude::*;
use recycler_core::buffer::BufferPool;

#[test]
#[cfg_attr(miri, ignore)]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/soundness/*.rs");
}

/// The address of `s`, through `black_box` so that an optimized build
/// cannot assume facts about it (a slice's pointer is never null).
fn addr(s: &[u8]) -> usize {
    std::hint::black_box(s.as_ptr()).addr()
}

/// Allocates one slice of each size from one scope of a pool with `step`,
/// `align` and, if any, `limit`, then checks that all are alive at once:
/// non-null, aligned, disjoint, each holding what was written to it.
fn check_scope(step: usize, align: usize, limit: Option<usize>, sizes: &[usize]) {
    let mut builder = BufferPool::builder()
        .bucket_step(step)
        .max_capacity(step * 16)
        .alignment(align);
    if let Some(limit) = limit {
        builder = builder.memory_limit(limit);
    }
    let pool = builder.build().unwrap();
    {
        let scope = pool.scope();
        // At the memory limit some sizes fail; those that succeed must hold.
        let slices: Vec<&mut [u8]> = sizes
            .iter()
            .filter_map(|&n| scope.try_alloc(n).ok())
            .collect();
        for (i, s) in slices.iter().enumerate() {
            assert_ne!(addr(s), 0, "slice {i} of {} bytes is null", s.len());
            assert_eq!(addr(s) % align, 0, "slice {i} not aligned to {align}");
        }
        let mut ranges: Vec<(usize, usize, usize)> = slices
            .iter()
            .enumerate()
            .map(|(i, s)| (addr(s), addr(s) + s.len(), i))
            .collect();
        ranges.sort_unstable();
        for w in ranges.windows(2) {
            assert!(
                w[0].1 <= w[1].0,
                "slices {} and {} overlap: {w:?}",
                w[0].2,
                w[1].2
            );
        }
        // Written through all of them at once, each keeps its own bytes.
        let mut slices = slices;
        for (i, s) in slices.iter_mut().enumerate() {
            s.fill(i as u8);
        }
        for (i, s) in slices.iter().enumerate() {
            assert!(s.iter().all(|&b| b == i as u8), "slice {i} was overwritten");
        }
    }
    let s = pool.stats();
    assert_eq!(s.buckets.iter().map(|b| b.in_use).sum::<u64>(), 0, "{s}");
    assert_eq!(s.oversize.in_use, 0, "{s}");
}

#[test]
fn two_scope_slices_never_overlap() {
    let pool = BufferPool::new();
    let scope = pool.scope();
    // The first slice takes a buffer, the next two are bumped from it, the
    // last one gets a buffer of its own: any two of them are disjoint.
    let mut slices = [
        scope.alloc(1),
        scope.alloc(100),
        scope.alloc(100),
        scope.alloc(40_000),
    ];
    for (i, s) in slices.iter_mut().enumerate() {
        s.fill(i as u8 + 1);
    }
    for (i, a) in slices.iter().enumerate() {
        assert!(a.iter().all(|&x| x == i as u8 + 1), "slice {i} overwritten");
        for (j, b) in slices.iter().enumerate().skip(i + 1) {
            let disjoint = addr(a) + a.len() <= addr(b) || addr(b) + b.len() <= addr(a);
            assert!(disjoint, "slices {i} and {j} overlap");
        }
    }
}

#[test]
fn scope_slices_never_overlap_at_the_edges() {
    // Empty slices, a chunk filled exactly, slices of just over half a chunk
    // (their own buffers), and slices past max_capacity.
    let sizes = [
        0, 4096, 0, 1, 0, 32_768, 32_769, 0, 65_536, 70_000, 1, 4095, 0,
    ];
    for align in [1, 8, 4096] {
        check_scope(4096, align, None, &sizes);
        check_scope(1000, align, None, &sizes);
        check_scope(4096, align, Some(64 * 1024), &sizes);
    }
}

/// Sizes that reach every path of `Scope::try_alloc`: empty, small bumps,
/// around half a chunk, a whole chunk, and past the largest bucket.
fn size() -> impl Strategy<Value = usize> {
    prop_oneof![
        Just(0),
        1..64usize,
        64..5000usize,
        30_000..34_000usize,
        60_000..70_000usize,
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn scope_slices_never_overlap(
        step in prop_oneof![Just(1000usize), Just(4096)],
        align in prop_oneof![Just(1usize), Just(64), Just(4096)],
        limit in proptest::option::of(Just(256 * 1024usize)),
        sizes in proptest::collection::vec(size(), 1..24),
    ) {
        check_scope(step, align, limit, &sizes);
    }
}
