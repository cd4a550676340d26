//! Buffers that fit where a `Vec<u8>` would, and the buffer pool's part of
//! "guards that fit": unwind safety (the books balance after a panic caught
//! around an `acquire`), owned buffers from a pool that is a plain field
//! (`BufferPool::handle`), `try_acquire_owned_pooled`, `min_capacity` (Jetty's
//! `minCapacity`) and `discard` (Jetty's `removeAndRelease`).
#![deny(warnings)]
// tokio, which some tests use, is no dev-dependency under `--cfg loom`.
#![cfg(not(loom))]

mod common;

use std::panic::catch_unwind;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, mpsc};
use std::thread;
use std::time::Duration;

use common::assert_buffers_counted;
use recycler_core::buffer::{
    BufferPool, BufferPoolHandle, BufferPoolStats, OwnedPooledBuf, PooledBuf,
};
use recycler_core::{AcquireError, ConfigError};

const KIB: usize = 1024;

fn is_static_send<T: Send + 'static>(t: T) -> T {
    t
}

#[test]
fn a_panic_inside_catch_unwind_leaves_the_pools_books_balanced() {
    let pool = BufferPool::builder()
        .memory_limit(16 * KIB)
        .build()
        .unwrap();
    let caught = catch_unwind(|| {
        let mut a = pool.acquire(100);
        a.extend_from_slice(&[7; 5000]); // grown into 8 KiB
        let _b = pool.acquire(4 * KIB);
        panic!("user code fails (test)");
    });
    assert!(caught.is_err());
    let s = pool.stats();
    assert_books(&s);
    // Both returned: pooled, or freed (a release that takes the slow path
    // while its thread panics frees the buffer, as a recycler drops such an
    // object); either way counted, and no memory left in use.
    let total = s.total();
    assert_eq!((total.acquires, total.in_use), (2, 0), "{s}");
    assert_eq!(s.allocated_memory, s.idle_memory, "{s}");
    // `acquire` at the limit does not panic: an overdraft, freed when
    // dropped (invariant 8).
    let held = pool.acquire(16 * KIB);
    assert!(catch_unwind(|| drop(pool.acquire(1))).is_ok());
    assert_eq!(pool.stats().overdraft_memory, 0);
    drop(held);
    let s = pool.stats();
    assert_books(&s);
    assert_eq!(s.total().in_use, 0, "{s}");
    let again = pool.try_acquire(4 * KIB).unwrap();
    assert!(again.is_empty(), "usable");
}

/// The identities of a pool's statistics with nothing grown in use:
/// `acquires == pooled + non_pooled`, every buffer made accounted for, all
/// memory allocated idle or in use.
fn assert_books(s: &BufferPoolStats) {
    let total = s.total();
    assert_eq!(total.acquires, total.pooled + total.non_pooled, "{s}");
    assert_buffers_counted(s);
    let in_use_bytes: u64 = s.buckets.iter().map(|b| b.in_use * b.capacity as u64).sum();
    if s.oversize.in_use == 0 {
        assert_eq!(s.allocated_memory, in_use_bytes + s.idle_memory, "{s}");
    }
}

/// A server that keeps its buffer pool as a plain field.
struct Buffers {
    pool: BufferPool,
}

#[test]
fn a_buffer_pool_in_a_plain_field_gives_static_buffers_through_its_handle() {
    let server = Arc::new(Buffers {
        pool: BufferPool::builder().memory_limit(8 * KIB).build().unwrap(),
    });
    let buffers: BufferPoolHandle = server.pool.handle();
    let held = is_static_send(buffers.acquire_owned(8 * KIB));
    assert!(buffers.try_acquire_owned(1).is_err(), "the field's limit");
    // Every owned acquire works through the handle: a wait on a thread and
    // one in a task, both served when `held` goes back.
    let waiter = {
        let buffers = buffers.clone();
        thread::spawn(move || buffers.acquire_owned_timeout(4 * KIB, Duration::from_secs(10)))
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let task = {
        let buffers = buffers.clone();
        rt.spawn(async move { buffers.acquire_owned_async(4 * KIB).await })
    };
    thread::sleep(Duration::from_millis(20));
    drop(held);
    let (a, b) = (
        waiter.join().unwrap().unwrap(),
        rt.block_on(task).unwrap().unwrap(),
    );
    assert_eq!((a.capacity(), b.capacity()), (4 * KIB, 4 * KIB));
    drop((a, b));
    assert!(buffers.try_acquire_owned_pooled(4 * KIB).is_some());
    let s = server.pool.stats();
    assert_eq!(s.total().in_use, 0, "{s}");
    assert_books(&s);
    // The handle outlives the server.
    drop(server);
    assert_eq!(buffers.acquire_owned(1).capacity(), 4 * KIB);
}

#[test]
fn try_acquire_owned_pooled_never_allocates() {
    let pool = Arc::new(BufferPool::builder().min_capacity(256).build().unwrap());
    assert!(pool.try_acquire_owned_pooled(1000).is_none());
    drop(pool.acquire(1000));
    let allocated = pool.stats().allocated_memory;
    let buf = pool
        .try_acquire_owned_pooled(4 * KIB)
        .expect("the pooled one");
    let buf = thread::spawn(move || buf).join().unwrap();
    assert_eq!(buf.capacity(), 4 * KIB);
    assert!(
        pool.try_acquire_owned_pooled(100).is_none(),
        "below min_capacity"
    );
    assert!(
        pool.try_acquire_owned_pooled(100 * KIB).is_none(),
        "above max_capacity"
    );
    assert!(
        pool.try_acquire_owned_pooled(4 * KIB).is_none(),
        "the one is taken"
    );
    let s = pool.stats();
    assert_eq!(s.allocated_memory, allocated);
    assert_eq!((s.buckets[0].acquires, s.buckets[0].pooled), (2, 1), "{s}");
    drop(buf);
    assert_books(&pool.stats());
}

// ------------------------------------------------------------- min_capacity

#[test]
fn below_min_capacity_buffers_are_exact_and_never_pooled() {
    let pool = BufferPool::builder().min_capacity(1024).build().unwrap();
    for n in [0, 1, 100, 1023] {
        let buf = pool.acquire(n);
        assert_eq!((buf.capacity(), buf.len()), (n, 0));
        assert_eq!(pool.stats().allocated_memory, n as u64);
    }
    let s = pool.stats();
    assert_eq!((s.oversize.acquires, s.oversize.non_pooled), (4, 4), "{s}");
    assert_eq!(
        (s.oversize.releases, s.oversize.removes),
        (4, 4),
        "freed: {s}"
    );
    assert_eq!((s.idle_memory, s.allocated_memory), (0, 0), "{s}");
    assert_eq!(pool.prefill(100, 4), Ok(0), "no bucket to prefill");
    assert!(pool.try_acquire_pooled(100).is_none());
    // From `min_capacity` up: pooled as before.
    let buf = pool.acquire(1024);
    assert_eq!(buf.capacity(), 4 * KIB);
    drop(buf);
    assert_eq!(pool.stats().buckets[0].idle, 1);
    // A small buffer grows as any other, and is freed all the same.
    let mut small = pool.try_acquire(10).unwrap();
    small.extend_from_slice(&[1; 100]);
    assert!(small.capacity() >= 100);
    drop(small);
    let s = pool.stats();
    assert_eq!((s.oversize.removes, s.buckets[0].idle), (5, 1), "{s}");
    assert_eq!(s.allocated_memory, 4 * KIB as u64, "{s}");
    assert_books(&s);
}

#[test]
fn min_capacity_rounds_the_rest_as_before_whatever_the_step() {
    // A power-of-two step, and one that is not: with `min_capacity`, both
    // take the checked index; the buckets are the same as without.
    let pow2 = BufferPool::builder().min_capacity(100).build().unwrap();
    let odd = BufferPool::builder()
        .bucket_step(1000)
        .max_capacity(5000)
        .min_capacity(500)
        .build()
        .unwrap();
    for (pool, ask, cap) in [
        (&pow2, 99, 99),
        (&pow2, 100, 4096),
        (&pow2, 4096, 4096),
        (&pow2, 4097, 8192),
        (&pow2, 65536, 65536),
        (&pow2, 65537, 65537),
        (&odd, 0, 0),
        (&odd, 499, 499),
        (&odd, 500, 1000),
        (&odd, 1001, 2000),
        (&odd, 5000, 5000),
        (&odd, 5001, 5001),
    ] {
        assert_eq!(pool.acquire(ask).capacity(), cap, "acquire({ask})");
    }
    let s = odd.stats();
    assert_eq!(
        (
            s.oversize.acquires,
            s.buckets[0].acquires,
            s.buckets[4].idle
        ),
        (3, 1, 1),
        "{s}"
    );
}

#[test]
fn min_capacity_zero_changes_nothing() {
    let default = BufferPool::new();
    let zero = BufferPool::builder().min_capacity(0).build().unwrap();
    for pool in [&default, &zero] {
        assert_eq!(pool.acquire(0).capacity(), 4 * KIB);
        assert_eq!(pool.acquire(1).capacity(), 4 * KIB);
        let s = pool.stats();
        assert_eq!(
            (
                s.buckets[0].acquires,
                s.buckets[0].pooled,
                s.oversize.acquires
            ),
            (2, 1, 0)
        );
    }
}

#[test]
fn small_buffers_count_against_the_limit_and_wait_at_it() {
    let pool = Arc::new(
        BufferPool::builder()
            .min_capacity(4 * KIB)
            .memory_limit(8 * KIB)
            .build()
            .unwrap(),
    );
    let big = pool.acquire(8 * KIB - 100);
    assert_eq!(big.capacity(), 8 * KIB);
    assert!(matches!(
        pool.try_acquire(1),
        Err(AcquireError::LimitExceeded { needed: 1, .. })
    ));
    let waiter = {
        let pool = Arc::clone(&pool);
        thread::spawn(move || {
            pool.acquire_owned_timeout(200, Duration::from_secs(10))
                .map(|b| b.capacity())
        })
    };
    thread::sleep(Duration::from_millis(20)); // likely queued; either way it is served
    PooledBuf::discard(big); // frees 8 KiB: the waiter's 200 bytes fit
    assert_eq!(waiter.join().unwrap(), Ok(200));
    let s = pool.stats();
    assert_eq!(s.allocated_memory, 0, "{s}");
    assert_books(&s);
}

#[test]
fn min_capacity_above_max_capacity_is_a_typed_error() {
    let err = BufferPool::builder()
        .max_capacity(16 * KIB)
        .min_capacity(16 * KIB + 1)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        ConfigError::Below {
            field: "max_capacity",
            value: 16 * KIB,
            other: "min_capacity",
            other_value: 16 * KIB + 1
        }
    );
    assert_eq!(
        err.to_string(),
        "`max_capacity` is 16384, below `min_capacity` (16385); it must be at least that"
    );
    assert!(
        BufferPool::builder()
            .max_capacity(16 * KIB)
            .min_capacity(16 * KIB)
            .build()
            .is_ok()
    );
    let shown = format!("{:?}", BufferPool::builder().min_capacity(77));
    assert!(shown.contains("min_capacity: 77"), "{shown}");
}

// ------------------------------------------------------------------ discard

#[test]
fn discard_frees_the_buffer_and_counts_a_remove() {
    let striped = BufferPool::builder().striped(0).build().unwrap();
    for bufs in [Arc::new(BufferPool::new()), Arc::new(striped)] {
        let a = bufs.acquire(100);
        let b = bufs.acquire_owned(5000);
        let mut grown = bufs.acquire(100);
        grown.extend_from_slice(&[0; 5000]); // 4 KiB -> 8 KiB
        let oversize = bufs.acquire(100 * KIB);
        PooledBuf::discard(a);
        OwnedPooledBuf::discard(b);
        PooledBuf::discard(grown);
        PooledBuf::discard(oversize);
        let s = bufs.stats();
        let (b4, b8) = (s.buckets[0], s.buckets[1]);
        assert_eq!(
            (b4.acquires, b4.releases, b4.removes, b4.idle),
            (2, 2, 2, 0),
            "{s}"
        );
        assert_eq!(
            (b8.acquires, b8.releases, b8.removes, b8.idle),
            (1, 1, 1, 0),
            "{s}"
        );
        assert_eq!((s.oversize.releases, s.oversize.removes), (1, 1), "{s}");
        assert_eq!((s.idle_memory, s.allocated_memory), (0, 0), "{s}");
        let total = s.total();
        assert_eq!(
            total.acquires,
            total.releases + total.in_use,
            "the grown one too: {s}"
        );
        assert_books(&s);
    }
}

#[test]
fn discard_on_another_thread_or_striped_counts_the_same() {
    for striped in [false, true] {
        let mut b = BufferPool::builder();
        if striped {
            b = b.striped(2);
        }
        let pool = Arc::new(b.build().unwrap());
        drop(pool.acquire(100)); // one idle
        let buf = pool.acquire_owned(100); // the idle one: a hit
        let plain = pool.acquire(100); // made
        thread::scope(|s| {
            s.spawn(move || OwnedPooledBuf::discard(buf));
            s.spawn(move || PooledBuf::discard(plain));
        });
        let s = pool.stats();
        let b = s.buckets[0];
        assert_eq!(
            (b.acquires, b.pooled, b.non_pooled),
            (3, 1, 2),
            "striped {striped}: {s}"
        );
        assert_eq!(
            (b.releases, b.removes, b.in_use, b.idle),
            (3, 2, 0, 0),
            "striped {striped}: {s}"
        );
        assert_books(&s);
    }
}

#[test]
fn discard_serves_a_waiter() {
    let pool = Arc::new(BufferPool::builder().memory_limit(8 * KIB).build().unwrap());
    let held = pool.acquire_owned(8 * KIB);
    let served = Arc::new(AtomicUsize::new(0));
    let (queued_tx, queued_rx) = mpsc::channel();
    let waiter = {
        let (pool, served) = (Arc::clone(&pool), Arc::clone(&served));
        thread::spawn(move || {
            queued_tx.send(()).unwrap();
            let buf = pool.acquire_timeout(4 * KIB, Duration::from_secs(10));
            served.store(buf.as_ref().map_or(0, |b| b.capacity()), SeqCst);
            buf.is_ok()
        })
    };
    queued_rx.recv().unwrap();
    thread::sleep(Duration::from_millis(20)); // likely queued; either way it is served
    OwnedPooledBuf::discard(held);
    assert!(waiter.join().unwrap());
    assert_eq!(served.load(SeqCst), 4 * KIB);
    let s = pool.stats();
    let b = s.buckets[1];
    assert_eq!(
        (b.removes, b.idle),
        (1, 0),
        "discarded, not handed over: {s}"
    );
    assert_books(&s);
}

#[test]
fn the_worst_inputs_get_typed_answers() {
    // `min_capacity` past any `max_capacity`: named, with the numbers.
    assert_eq!(
        BufferPool::builder()
            .min_capacity(usize::MAX)
            .build()
            .unwrap_err(),
        ConfigError::Below {
            field: "max_capacity",
            value: 64 * KIB,
            other: "min_capacity",
            other_value: usize::MAX
        }
    );
    let pool = Arc::new(BufferPool::builder().min_capacity(1).build().unwrap());
    // Nothing pooled, and never: `None`, nothing allocated.
    assert!(pool.try_acquire_owned_pooled(usize::MAX).is_none());
    assert!(
        pool.try_acquire_owned_pooled(0).is_none(),
        "0 is below min_capacity 1"
    );
    // A request of 0 below `min_capacity`: an empty buffer, which grows.
    let mut empty = pool.acquire_owned(0);
    assert_eq!(empty.capacity(), 0);
    empty.push(1);
    assert!(empty.capacity() >= 1);
    OwnedPooledBuf::discard(empty);
    PooledBuf::discard(pool.acquire(0));
    // Too large: the same typed error below `min_capacity` as above `max_capacity`.
    let small = BufferPool::builder().min_capacity(4 * KIB).build().unwrap();
    assert!(matches!(
        small.try_acquire(usize::MAX),
        Err(AcquireError::TooLarge { .. })
    ));
    let s = pool.stats();
    assert_eq!((s.oversize.acquires, s.oversize.removes), (2, 2), "{s}");
    assert_eq!(s.allocated_memory, 0, "{s}");
    assert_books(&s);
}
