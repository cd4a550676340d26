use super::*;
use crate::buffer::BufferPoolBuilder;
use static_assertions::assert_impl_all;

assert_impl_all!(BufferPool: Send, Sync);

fn pool(b: BufferPoolBuilder) -> BufferPool {
    b.build().unwrap()
}

#[test]
fn rounds_up_to_buckets() {
    let p = BufferPool::new();
    for (ask, cap) in [
        (0, 4096),
        (1, 4096),
        (4096, 4096),
        (4097, 8192),
        (65535, 65536),
        (65536, 65536),
    ] {
        let b = p.acquire(ask);
        assert_eq!((b.capacity(), b.len()), (cap, 0), "acquire({ask})");
    }
    let odd = pool(BufferPool::builder().bucket_step(1000).max_capacity(5000));
    assert_eq!(odd.shared.step_shift(), None);
    assert_eq!(odd.acquire(1001).capacity(), 2000);
    assert_eq!(odd.acquire(5000).capacity(), 5000);
    assert_eq!(odd.acquire(5001).capacity(), 5001);
}

#[test]
fn bucket_of_capacity_is_exact() {
    let p = BufferPool::new();
    let inner = p.shared();
    assert_eq!(inner.bucket_of_capacity(4096), Some(0));
    assert_eq!(inner.bucket_of_capacity(65536), Some(15));
    assert_eq!(inner.bucket_of_capacity(65537), None);
    assert_eq!(inner.bucket_of_capacity(5000), None);
    assert_eq!(inner.bucket_of_capacity(0), None);
}

/// Puts `n` idle buffers into each of the given buckets, on this thread.
fn fill(p: &BufferPool, caps: &[usize], n: usize) {
    let held: Vec<_> = caps
        .iter()
        .flat_map(|&c| (0..n).map(move |_| c))
        .map(|c| p.acquire(c))
        .collect();
    drop(held);
}

#[test]
fn eviction_walks_from_start_and_skips() {
    let p = pool(BufferPool::builder().max_capacity(4 * 4096));
    fill(&p, &[4096, 8192, 12288, 16384], 2);
    let inner = p.shared();
    // Want 3 buffers' worth of bucket 1 (8 KiB each): start at 1, skip 2.
    let freed = inner.evict_walk(3 * 8192, Some(2), 1, usize::MAX);
    let s = p.stats();
    assert_eq!(s.buckets[1].evicts, 2, "bucket 1 first: {s}");
    assert_eq!(s.buckets[2].evicts, 0, "bucket 2 skipped: {s}");
    assert_eq!(s.buckets[3].evicts, 1, "then bucket 3, until enough: {s}");
    assert_eq!(s.buckets[0].evicts, 0, "never reached: {s}");
    assert_eq!(freed, 2 * 8192 + 16384);
    // Wrapping around: start at the last bucket.
    let freed = inner.evict_walk(16384 + 4096, None, 3, usize::MAX);
    let s = p.stats();
    assert_eq!((s.buckets[3].evicts, s.buckets[0].evicts), (2, 1), "{s}");
    assert_eq!(freed, 16384 + 4096);
}

#[test]
fn over_the_cap_evicts_other_buckets_first() {
    // Room for 4 KiB + 8 KiB + 12 KiB exactly.
    let p = pool(
        BufferPool::builder()
            .max_capacity(4 * 4096)
            .max_idle_memory(24 * 1024),
    );
    fill(&p, &[4096, 8192, 12288], 1);
    assert_eq!(p.stats().idle_memory, 24 * 1024);
    // Releasing into bucket 0 again goes over by 4 KiB: another bucket
    // gives way, never bucket 0 itself.
    let a = p.acquire(4096);
    let b = p.acquire(4096); // a miss: allocated
    drop(a);
    drop(b);
    let s = p.stats();
    assert_eq!(s.buckets[0].idle, 2, "the releasing bucket keeps both: {s}");
    assert_eq!(s.buckets[0].evicts, 0, "{s}");
    assert_eq!(s.buckets[1].evicts + s.buckets[2].evicts, 1, "{s}");
    assert!(s.idle_memory <= 24 * 1024, "{s}");
}

#[test]
fn released_buffer_is_dropped_when_nothing_else_can_go() {
    let p = pool(BufferPool::builder().max_idle_memory(8192));
    let bufs: Vec<_> = (0..3).map(|_| p.acquire(4096)).collect();
    drop(bufs);
    let s = p.stats();
    assert_eq!((s.buckets[0].idle, s.buckets[0].removes), (2, 1), "{s}");
    assert_eq!(s.idle_memory, 8192);
    assert_eq!(s.accounted_idle_memory, 8192);
    assert_eq!(s.allocated_memory, 8192);
}

#[test]
fn grown_buffer_moves_to_its_new_bucket() {
    let p = BufferPool::new();
    let mut b = p.acquire(4096);
    b.extend_from_slice(&[7; 5000]); // grows to 8 KiB
    assert_eq!(b.capacity(), 8192);
    assert_eq!(&b[4990..], &[7; 10]);
    drop(b);
    let s = p.stats();
    assert_eq!((s.buckets[0].in_use, s.buckets[0].idle), (0, 0), "{s}");
    assert_eq!((s.buckets[1].releases, s.buckets[1].idle), (1, 1), "{s}");
    assert_eq!(s.allocated_memory, 8192);
    let again = p.acquire(8000);
    assert_eq!(s.buckets[1].pooled, 0);
    assert_eq!(p.stats().buckets[1].pooled, 1, "the grown buffer is reused");
    drop(again);
}

#[test]
fn buffer_grown_past_max_is_freed() {
    let p = BufferPool::new();
    let mut b = p.acquire(60_000);
    b.resize(70_000, 1);
    assert!(b.capacity() >= 70_000);
    drop(b);
    let s = p.stats();
    assert_eq!(s.buckets[14].removes, 1, "{s}");
    assert_eq!(s.idle_memory, 0);
    assert_eq!(s.allocated_memory, 0);
}

#[test]
fn oversize_is_not_pooled() {
    let p = BufferPool::new();
    let b = p.acquire(100_000);
    assert_eq!(b.capacity(), 100_000);
    assert_eq!(p.stats().allocated_memory, 100_000);
    drop(b);
    let s = p.stats();
    assert_eq!(
        (
            s.oversize.acquires,
            s.oversize.non_pooled,
            s.oversize.removes
        ),
        (1, 1, 1)
    );
    assert_eq!(s.oversize.in_use, 0);
    assert_eq!(s.allocated_memory, 0);
}

#[test]
fn limit_reclaims_idle_then_fails_with_numbers() {
    let p = pool(BufferPool::builder().memory_limit(3 * 4096));
    fill(&p, &[4096, 8192], 1); // 12 KiB idle, the whole limit
    let b = p.acquire(12288); // frees both idle buffers to make room
    assert_eq!(p.stats().allocated_memory, 12288);
    let err = p.try_acquire(1).unwrap_err();
    assert_eq!(
        err,
        AcquireError::LimitExceeded {
            requested: 1,
            needed: 4096,
            allocated: 12288,
            limit: 12288
        }
    );
    assert!(
        matches!(
            p.try_acquire(20_000),
            Err(AcquireError::LimitExceeded {
                requested: 20_000,
                needed: 20_480,
                ..
            })
        ),
        "the bucket's capacity is what must be allocated"
    );
    drop(b);
}

#[test]
fn pressure_frees_releases() {
    use std::future::Future;
    use std::task::{Context, Poll, Waker};

    let p = pool(BufferPool::builder().memory_limit(8192));
    let a = p.acquire(4096);
    let b = p.acquire(4096);
    let mut wait = std::pin::pin!(p.acquire_async(8192));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(wait.as_mut().poll(&mut cx).is_pending());
    assert_eq!(p.shared().ledger().waiters().len(), 1);
    drop(a);
    let s = p.stats();
    assert_eq!(s.allocated_memory, 4096, "freed, not cached: {s}");
    assert_eq!(s.buckets[0].idle, 0, "{s}");
    drop(b); // 8 KiB free now: reserved for the waiter
    assert_eq!(p.stats().allocated_memory, 8192);
    let Poll::Ready(Ok(got)) = wait.as_mut().poll(&mut cx) else {
        panic!("granted, so ready");
    };
    assert_eq!(p.shared().ledger().waiters().len(), 0);
    assert!(!p.shared().under_pressure());
    drop(got);
    let s = p.stats();
    assert_eq!(s.buckets[1].idle, 1, "cached again: {s}");
}

#[test]
fn alignment_by_pointer_arithmetic() {
    for align in [64, 512, 4096] {
        let p = pool(BufferPool::builder().alignment(align));
        for cap in [0, 1, 4096, 40_000, 100_000] {
            let mut b = p.acquire(cap);
            assert_eq!(b.as_ptr().addr() % align, 0, "align {align} cap {cap}");
            b.resize(b.capacity() + 1, 0); // grown: still aligned
            assert_eq!(b.as_ptr().addr() % align, 0, "grown, align {align}");
        }
    }
}

#[test]
fn statistics_off_keeps_memory_totals() {
    let p = pool(
        BufferPool::builder()
            .statistics(false)
            .max_idle_memory(1 << 20),
    );
    drop(p.acquire(1));
    drop(p.acquire(1));
    let s = p.stats();
    assert!(!s.statistics);
    assert_eq!(s.buckets[0].acquires, 0);
    assert_eq!(s.buckets[0].non_pooled, 1);
    assert_eq!((s.idle_memory, s.allocated_memory), (4096, 4096));
}

/// A pool of 4 buckets capped at `n` idle buffers per bucket.
fn bucket_capped(n: usize) -> BufferPool {
    pool(
        BufferPool::builder()
            .max_capacity(4 * 4096)
            .max_idle_per_bucket(n),
    )
}

/// The books of every bucket balance, and the account agrees with the
/// buckets' idle counts.
fn assert_balanced(p: &BufferPool) {
    let s = p.stats();
    for b in &s.buckets {
        assert_eq!(b.acquires, b.pooled + b.non_pooled, "{s}");
        assert_eq!(
            b.non_pooled + b.prefilled,
            b.in_use + b.idle + b.removes + b.evicts,
            "{s}"
        );
    }
    assert_eq!(s.accounted_idle_memory, s.idle_memory, "{s}");
}

#[test]
fn bucket_cap_holds_exactly_on_one_thread() {
    let p = bucket_capped(3);
    fill(&p, &[4096], 10);
    fill(&p, &[8192], 2);
    let s = p.stats();
    assert_eq!(s.max_idle_per_bucket, Some(3));
    assert_eq!((s.buckets[0].idle, s.buckets[0].removes), (3, 7), "{s}");
    assert_eq!((s.buckets[1].idle, s.buckets[1].removes), (2, 0), "{s}");
    assert_eq!(s.buckets[0].evicts + s.buckets[1].evicts, 0, "{s}");
    assert_eq!(s.accounted_idle_memory, 3 * 4096 + 2 * 8192, "{s}");
    assert_balanced(&p);
    // Taken and given back on the owner paths: still 3.
    for _ in 0..100 {
        fill(&p, &[4096], 5);
    }
    let s = p.stats();
    assert_eq!(
        (s.buckets[0].idle, s.buckets[0].removes),
        (3, 7 + 200),
        "{s}"
    );
    assert_balanced(&p);
}

#[test]
fn bucket_cap_counts_the_depot_too() {
    // Two buffers in the thread's cache, the rest spilled to the depot.
    let p = pool(
        BufferPool::builder()
            .max_idle_per_thread(2)
            .max_idle_per_bucket(5),
    );
    fill(&p, &[4096], 12);
    let s = p.stats();
    assert_eq!((s.buckets[0].idle, s.buckets[0].removes), (5, 7), "{s}");
    assert_balanced(&p);
    fill(&p, &[4096], 12);
    let s = p.stats();
    assert_eq!((s.buckets[0].pooled, s.buckets[0].idle), (5, 5), "{s}");
    assert_balanced(&p);
}

#[test]
fn bucket_cap_zero_keeps_nothing() {
    let p = bucket_capped(0);
    fill(&p, &[4096, 16384], 4);
    let s = p.stats();
    assert_eq!((s.idle_memory, s.allocated_memory), (0, 0), "{s}");
    assert_eq!((s.buckets[0].removes, s.buckets[3].removes), (4, 4), "{s}");
    assert_balanced(&p);
}

#[test]
fn bucket_cap_trim_and_prefill_balance() {
    let p = bucket_capped(4);
    fill(&p, &[4096], 6);
    p.trim();
    let s = p.stats();
    assert_eq!((s.buckets[0].idle, s.accounted_idle_memory), (0, 0), "{s}");
    // Trimmed, the bucket has room for 4 again: prefill stops there.
    assert_eq!(p.prefill(4096, 10), Ok(4));
    assert_eq!(p.prefill(4096, 10), Ok(0));
    let s = p.stats();
    assert_eq!((s.buckets[0].idle, s.buckets[0].prefilled), (4, 4), "{s}");
    assert_balanced(&p);
    fill(&p, &[4096], 6);
    let s = p.stats();
    assert_eq!((s.buckets[0].idle, s.buckets[0].pooled), (4, 4), "{s}");
    assert_balanced(&p);
}

#[test]
fn bucket_cap_counts_what_an_exited_thread_left() {
    let p = bucket_capped(4);
    // Two releases reach the threshold (2 buffers of the bucket): the
    // thread's delta is published before its exit hooks run (a scope's end
    // does not wait for them), and they move its buffers to the depot.
    std::thread::scope(|s| {
        s.spawn(|| fill(&p, &[4096], 2));
    });
    let s = p.stats();
    assert_eq!(
        (s.buckets[0].idle, s.accounted_idle_memory),
        (2, 2 * 4096),
        "{s}"
    );
    // Two more fit, wherever the thread's buffers are now (hits if its
    // hooks have moved them), no more.
    fill(&p, &[4096], 8);
    let s = p.stats();
    let b = &s.buckets[0];
    assert_eq!((b.idle, b.removes), (4, b.non_pooled - 4), "{s}");
    assert_balanced(&p);
}

#[test]
fn bucket_cap_holds_in_striped_mode() {
    let p = pool(
        BufferPool::builder()
            .max_capacity(4 * 4096)
            .striped(2)
            .max_idle_per_bucket(3),
    );
    fill(&p, &[4096], 8);
    assert_eq!(p.prefill(8192, 10), Ok(3));
    let s = p.stats();
    assert_eq!((s.buckets[0].idle, s.buckets[1].idle), (3, 3), "{s}");
    assert_balanced(&p);
}

/// The buckets whose recyclers have been made.
fn made(p: &BufferPool) -> Vec<usize> {
    (0..p.shared.buckets().len())
        .filter(|&i| p.shared.buckets()[i].made().is_some())
        .collect()
}

#[test]
fn buckets_are_made_when_first_used() {
    let p = BufferPool::new();
    assert_eq!(made(&p), [] as [usize; 0], "none when built");
    // Readers make nothing, and see empty buckets.
    p.trim();
    let s = p.stats();
    assert_eq!(s.buckets.len(), 16);
    assert!(s.buckets.iter().all(|b| b.acquires == 0 && b.idle == 0));
    assert!(p.try_acquire_pooled(8192).is_none());
    assert_eq!(made(&p), [] as [usize; 0], "readers make none");

    // An acquire makes its bucket; a buffer that grew, the bucket it grew
    // into, on its release.
    let mut buf = p.acquire(4096);
    assert_eq!(made(&p), [0]);
    buf.extend_from_slice(&[1; 20_000]);
    drop(buf);
    assert_eq!(made(&p), [0, 4]);
    let s = p.stats();
    assert_eq!(
        (s.bucket(20 * 1024).unwrap().idle, s.idle_memory),
        (1, 20 * 1024)
    );
    drop(p.acquire(4096)); // served by the grown one
    assert_eq!(p.stats().total().pooled, 1);

    // Prefilling makes its bucket too; trim empties the made ones.
    assert_eq!(p.prefill(65536, 1), Ok(1));
    assert_eq!(made(&p), [0, 4, 15]);
    p.trim();
    assert_eq!(p.stats().allocated_memory, 0);
    assert_eq!(made(&p), [0, 4, 15], "made buckets stay made");
}
