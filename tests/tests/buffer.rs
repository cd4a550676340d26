//! The buffer pool through its public API: rounding, non-pooled sizes, the
//! idle-memory cap (eviction order, the skip of the releasing bucket, the
//! overshoot bound), the memory limit and its back-off, alignment, scopes,
//! growth, cross-thread releases, thread exit, and the `bytes` feature.

mod common;

use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Barrier, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes};
use recycler_core::buffer::{BufferPool, BufferPoolStats, PooledBuf};
use recycler_core::{AcquireError, ConfigError};

const KIB: usize = 1024;

/// The publishing threshold of a pool's idle account, as documented.
fn threshold(cap: usize, max_capacity: usize) -> usize {
    (cap / 8).max(2 * max_capacity).max(1)
}

/// Every buffer allocated is in use, idle, evicted or removed, and the
/// memory allocated is the memory in use plus the memory idle.
fn assert_conserved(s: &BufferPoolStats, in_use_bytes: u64) {
    common::assert_buffers_counted(s);
    assert_eq!(
        s.allocated_memory,
        in_use_bytes + s.idle_memory,
        "memory: {s}"
    );
    for b in &s.buckets {
        assert_eq!(b.acquires, b.pooled + b.non_pooled, "{s}");
    }
}

#[test]
fn requests_round_up_to_their_bucket() {
    let pool = BufferPool::new();
    let sizes = [0, 1, 4095, 4096, 4097, 12_000, 65_535, 65_536];
    let caps = [4096, 4096, 4096, 4096, 8192, 12_288, 65_536, 65_536];
    for (&n, &cap) in sizes.iter().zip(&caps) {
        let buf = pool.acquire(n);
        assert_eq!((buf.capacity(), buf.len()), (cap, 0), "acquire({n})");
        assert!(buf.capacity() >= n);
    }
    let s = pool.stats();
    assert_eq!(s.buckets.len(), 16);
    assert_eq!(s.buckets[0].acquires, 4);
    assert_eq!(s.bucket(65_536).unwrap().acquires, 2);
    assert_conserved(&s, 0);
}

#[test]
fn above_max_capacity_is_allocated_and_freed() {
    let pool = BufferPool::new();
    let mut big = pool.acquire(65_537);
    assert_eq!(big.capacity(), 65_537);
    big.extend_from_slice(&[1; 65_537]);
    assert_eq!(pool.stats().allocated_memory, 65_537);
    drop(big);
    let s = pool.stats();
    assert_eq!(
        (
            s.oversize.acquires,
            s.oversize.non_pooled,
            s.oversize.pooled
        ),
        (1, 1, 0)
    );
    assert_eq!((s.oversize.releases, s.oversize.removes), (1, 1));
    assert_eq!((s.allocated_memory, s.idle_memory), (0, 0));
    assert!(s.to_string().contains("oversize: acquires 1"), "{s}");
}

#[test]
fn impossible_sizes_are_typed_errors() {
    let pool = BufferPool::new();
    let err = pool.try_acquire(usize::MAX).unwrap_err();
    assert!(matches!(
        err,
        AcquireError::TooLarge {
            requested: usize::MAX,
            ..
        }
    ));
    assert!(err.to_string().contains("cannot exist"), "{err}");
    let aligned = BufferPool::builder().alignment(4096).build().unwrap();
    assert!(matches!(
        aligned.try_acquire(isize::MAX as usize),
        Err(AcquireError::TooLarge { .. })
    ));
    let limited = BufferPool::builder().memory_limit(1 << 20).build().unwrap();
    assert!(matches!(
        limited.try_acquire(usize::MAX),
        Err(AcquireError::TooLarge { .. })
    ));
    let s = pool.stats();
    assert_eq!((s.allocated_memory, s.oversize.acquires), (0, 0));
}

#[test]
#[should_panic(expected = "BufferPool::acquire: a buffer of")]
fn acquire_panics_like_vec_on_impossible_sizes() {
    let _ = BufferPool::new().acquire(usize::MAX);
}

#[test]
fn config_errors_name_the_field() {
    let cases: [(recycler_core::buffer::BufferPoolBuilder, &str); 6] = [
        (BufferPool::builder().bucket_step(0), "`bucket_step` is 0"),
        (
            BufferPool::builder().max_capacity(1000),
            "`max_capacity` is 1000, below `bucket_step` (4096)",
        ),
        (
            BufferPool::builder().max_capacity(10_000),
            "multiple of `bucket_step` (4096)",
        ),
        (
            BufferPool::builder().alignment(48),
            "`alignment` is 48; it must be a power of two",
        ),
        (BufferPool::builder().memory_limit(0), "`memory_limit` is 0"),
        (
            BufferPool::builder().memory_limit(100),
            "`memory_limit` is 100, below `bucket_step`",
        ),
    ];
    for (builder, message) in cases {
        let err: ConfigError = builder.build().unwrap_err();
        assert!(err.to_string().contains(message), "{err} vs {message}");
        let _: &dyn std::error::Error = &err;
    }
}

#[test]
fn releasing_bucket_keeps_its_buffers_others_are_evicted() {
    let cap = 64 * KIB;
    let pool = BufferPool::builder()
        .max_capacity(16 * KIB)
        .max_idle_memory(cap)
        .build()
        .unwrap();
    // 4 KiB of bucket 0, then 56 KiB in buckets 1..=3: 60 KiB idle.
    let held: Vec<PooledBuf<'_>> = [4, 8, 8, 12, 12, 16]
        .iter()
        .map(|&k| pool.acquire(k * KIB))
        .collect();
    drop(held);
    let before = pool.stats();
    assert_eq!(before.idle_memory, 60 * KIB as u64, "{before}");
    // Now bucket 0 is the busy one: 11 of its buffers come back, 44 KiB;
    // the other buckets must give up at least 40 KiB.
    let busy: Vec<PooledBuf<'_>> = (0..11).map(|_| pool.acquire(4 * KIB)).collect();
    drop(busy);
    let s = pool.stats();
    assert_eq!(s.buckets[0].idle, 11, "the releasing bucket kept all: {s}");
    assert_eq!((s.buckets[0].evicts, s.buckets[0].removes), (0, 0), "{s}");
    let evicted: u64 = s.buckets[1..].iter().map(|b| b.evicts).sum();
    assert!(evicted >= 3, "others made room: {s}");
    assert!(
        s.idle_memory <= cap as u64,
        "one thread: the cap holds exactly: {s}"
    );
    assert_eq!(s.idle_memory, s.accounted_idle_memory, "{s}");
    assert_conserved(&s, 0);
}

#[test]
fn released_buffer_is_dropped_only_when_nothing_else_can_go() {
    let pool = BufferPool::builder()
        .max_idle_memory(8 * KIB)
        .build()
        .unwrap();
    let bufs: Vec<_> = (0..3).map(|_| pool.acquire(4 * KIB)).collect();
    drop(bufs);
    let s = pool.stats();
    assert_eq!((s.buckets[0].idle, s.buckets[0].removes), (2, 1), "{s}");
    assert_eq!(s.idle_memory, 8 * KIB as u64);
}

#[test]
fn single_thread_never_exceeds_the_cap() {
    let cap = 100 * KIB;
    let pool = BufferPool::builder().max_idle_memory(cap).build().unwrap();
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    let mut held: Vec<PooledBuf<'_>> = Vec::new();
    for _ in 0..3000 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        if rng.is_multiple_of(3) || held.len() > 40 {
            let i = (rng >> 8) as usize % held.len().max(1);
            if i < held.len() {
                drop(held.swap_remove(i));
            }
        } else {
            held.push(pool.acquire((rng >> 16) as usize % (64 * KIB)));
        }
        let s = pool.stats();
        assert!(s.idle_memory <= cap as u64, "{s}");
    }
    let in_use: u64 = held.iter().map(|b| b.capacity() as u64).sum();
    assert_conserved(&pool.stats(), in_use);
}

/// With two threads releasing, the cap may be exceeded by the unpublished
/// delta of the other thread: really, and never by more than the bound.
#[test]
fn two_threads_overshoot_within_the_documented_bound() {
    let (step, max, cap) = (4 * KIB, 8 * KIB, 64 * KIB);
    let pool = Arc::new(
        BufferPool::builder()
            .bucket_step(step)
            .max_capacity(max)
            .max_idle_memory(cap)
            .build()
            .unwrap(),
    );
    let s_bytes = threshold(cap, max);
    assert_eq!(s_bytes, 16 * KIB);
    let bound = (cap + (s_bytes + max)) as u64;
    let (ready, done) = (Arc::new(Barrier::new(2)), Arc::new(Barrier::new(2)));
    let other = {
        let (pool, ready, done) = (Arc::clone(&pool), Arc::clone(&ready), Arc::clone(&done));
        thread::spawn(move || {
            // 12 KiB, below the threshold: counted in this thread's delta only.
            let bufs: Vec<_> = (0..3).map(|_| pool.acquire(step)).collect();
            drop(bufs);
            ready.wait();
            done.wait();
        })
    };
    ready.wait();
    let bufs: Vec<_> = (0..20).map(|_| pool.acquire(step)).collect();
    drop(bufs);
    let s = pool.stats();
    assert_eq!(
        s.idle_memory,
        76 * KIB as u64,
        "this thread filled the cap; plus 12 KiB: {s}"
    );
    assert!(s.idle_memory > cap as u64 && s.idle_memory <= bound, "{s}");
    done.wait();
    other.join().unwrap();
    // The other thread's delta was published at its exit: now a release
    // sees the whole total, and is not admitted (no other bucket to evict).
    drop(pool.acquire(step));
    let s = pool.stats();
    assert_eq!(s.idle_memory, 72 * KIB as u64, "{s}");
    assert_eq!(s.accounted_idle_memory, s.idle_memory, "{s}");
}

/// At the limit, the reclaim also frees idle buffers released on the
/// calling thread whose home is another thread's cache and which wait there
/// to be sent home (they used to be out of its reach: `LimitExceeded` with
/// an idle buffer on the very thread asking).
#[test]
fn limit_reclaims_buffers_released_here_for_another_home() {
    for home_exits in [true, false] {
        let pool = Arc::new(
            BufferPool::builder()
                .max_capacity(8 * KIB)
                .memory_limit(8 * KIB)
                .build()
                .unwrap(),
        );
        let (away_tx, away_rx) = mpsc::channel();
        let (done_tx, done_rx) = mpsc::channel::<()>();
        let p = Arc::clone(&pool);
        let mut home = Some(thread::spawn(move || {
            away_tx.send(p.acquire_owned(4 * KIB)).unwrap();
            if !home_exits {
                let _ = done_rx.recv();
            }
        }));
        if home_exits {
            home.take().unwrap().join().unwrap();
        }
        drop(away_rx.recv().unwrap()); // released here: pending, idle
        let s = pool.stats();
        assert_eq!((s.idle_memory, s.allocated_memory), (4096, 4096), "{s}");
        let big = pool.try_acquire(8 * KIB);
        assert!(big.is_ok(), "home exits: {home_exits}: {big:?}");
        let s = pool.stats();
        assert_eq!(s.bucket(4 * KIB).unwrap().evicts, 1, "{s}");
        drop((big, done_tx));
        if let Some(home) = home {
            home.join().unwrap();
        }
    }
}

#[test]
fn limit_trims_idle_memory_then_fails_with_the_numbers() {
    // `serve_larger(false)`: with it on, the idle 16 KiB buffer below would
    // serve the 4 KiB request instead of being freed for it (see
    // `at_the_limit_an_acquire_takes_a_larger_idle_buffer` in
    // `buffer_reuse.rs`).
    let pool = BufferPool::builder()
        .memory_limit(32 * KIB)
        .serve_larger(false)
        .build()
        .unwrap();
    drop(pool.acquire(16 * KIB)); // idle, in this thread's cache
    let a = pool.acquire(16 * KIB); // reuses it
    let b = pool.acquire(16 * KIB); // allocates: 32 KiB, the limit
    let err = pool.try_acquire(1).unwrap_err();
    assert_eq!(
        err,
        AcquireError::LimitExceeded {
            requested: 1,
            needed: 4096,
            allocated: 32 * KIB as u64,
            limit: 32 * KIB as u64
        }
    );
    // What the caller asked for, and what it takes: the same for every
    // acquire.
    let owned = Arc::new(
        BufferPool::builder()
            .memory_limit(32 * KIB)
            .build()
            .unwrap(),
    );
    let _full = owned.acquire_owned(32 * KIB);
    assert_eq!(owned.try_acquire_owned(1).unwrap_err(), err);
    // A wait that gave up: the same numbers, as `TimedOut`.
    assert_eq!(
        owned.acquire_owned_timeout(1, Duration::ZERO).unwrap_err(),
        AcquireError::TimedOut {
            requested: 1,
            needed: 4096,
            allocated: 32 * KIB as u64,
            limit: 32 * KIB as u64,
            waited: Duration::ZERO,
        }
    );
    assert_eq!(
        err.to_string(),
        "`memory_limit` exceeded: 1 byte requested (4096 to allocate), \
         32768 of 32768 bytes already allocated"
    );
    drop(a);
    // The idle 16 KiB buffer is freed to make room for a 4 KiB one.
    let c = pool.try_acquire(1).expect("reclaimed idle memory");
    let s = pool.stats();
    assert_eq!(s.allocated_memory, 20 * KIB as u64, "{s}");
    assert_eq!(s.bucket(16 * KIB).unwrap().evicts, 1, "{s}");
    assert!(s.allocated_memory <= 32 * KIB as u64);
    drop((b, c));
    // Larger than the limit itself: fails at once, even with a timeout.
    let start = Instant::now();
    let err = pool
        .acquire_timeout(64 * KIB, Duration::from_secs(5))
        .unwrap_err();
    assert!(
        matches!(
            err,
            AcquireError::LimitExceeded {
                requested: 65_536,
                ..
            }
        ),
        "{err}"
    );
    assert!(start.elapsed() < Duration::from_secs(1));
}

#[test]
fn acquire_timeout_waits_for_another_thread_to_release() {
    // Ordered by a flag, not timed: the machine may pause either thread for
    // any time (valgrind, a loaded CI runner), but the wait can only end
    // after the release, and the release only after the flag is set.
    let pool = Arc::new(BufferPool::builder().memory_limit(8 * KIB).build().unwrap());
    let held = pool.acquire_owned(8 * KIB);
    let releasing = Arc::new(AtomicBool::new(false));
    let (tx, rx) = mpsc::channel();
    let releaser = thread::spawn({
        let releasing = Arc::clone(&releasing);
        move || {
            let _ = rx.recv();
            thread::sleep(Duration::from_millis(30));
            releasing.store(true, SeqCst);
            drop(held); // released on this thread: freed, since a waiter is short
        }
    });
    tx.send(()).unwrap();
    let start = Instant::now();
    // A timeout too long for an `Instant` means no deadline.
    let buf = pool
        .acquire_timeout(8 * KIB, Duration::MAX)
        .expect("the other thread releases");
    assert!(
        releasing.load(SeqCst),
        "served before the only buffer was released"
    );
    let waited = start.elapsed();
    assert!(waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(buf.capacity(), 8 * KIB);
    releaser.join().unwrap();
    assert!(pool.stats().allocated_memory <= 8 * KIB as u64);
}

#[test]
fn acquire_timeout_gives_up_after_the_timeout() {
    let pool = BufferPool::builder().memory_limit(4 * KIB).build().unwrap();
    let _held = pool.acquire(1);
    let start = Instant::now();
    let err = pool
        .acquire_timeout(1, Duration::from_millis(50))
        .unwrap_err();
    let waited = start.elapsed();
    assert!(matches!(err, AcquireError::TimedOut { .. }), "{err}");
    assert!(waited >= Duration::from_millis(50), "{waited:?}");
    assert!(
        waited < Duration::from_millis(1000),
        "bounded back-off: {waited:?}"
    );
}

#[test]
fn buffers_are_aligned() {
    for align in [1, 16, 512, 4096, 2 << 20] {
        let pool = BufferPool::builder().alignment(align).build().unwrap();
        let mut bufs = Vec::new();
        for n in [0, 1, 100, 4096, 30_000, 65_536, 100_000] {
            let buf = pool.acquire(n);
            assert_eq!(buf.as_ptr() as usize % align, 0, "align {align}, n {n}");
            bufs.push(buf);
        }
        let scope = pool.scope();
        assert_eq!(scope.alloc(10).as_ptr() as usize % align, 0);
    }
}

#[test]
fn scope_returns_every_buffer() {
    let pool = BufferPool::builder()
        .bucket_step(KIB)
        .max_capacity(16 * KIB)
        .build()
        .unwrap();
    let held;
    {
        let scope = pool.scope();
        // 21 000 bytes in slices of 100 to 2 000: bumped from a first 1 KiB
        // buffer, then from 16 KiB ones.
        let slices: Vec<&mut [u8]> = (1..=20).map(|k| scope.alloc(k * 100)).collect();
        let total: usize = slices.iter().map(|s| s.len()).sum();
        assert_eq!(total, 100 * 210);
        // Past half a buffer: 9 KiB still fits in the last buffer's room;
        // 12 KiB does not, and gets a buffer of its own.
        let big = (scope.alloc(9 * KIB).len(), scope.alloc(12 * KIB).len());
        assert_eq!(big, (9 * KIB, 12 * KIB));
        held = scope.len() as u64;
        assert_eq!(
            held, 4,
            "1 KiB and two 16 KiB buffers bumped, one of its own"
        );
        let in_use: u64 = pool.stats().buckets.iter().map(|b| b.in_use).sum();
        assert_eq!(in_use, held);
    }
    let s = pool.stats();
    assert_eq!(s.buckets.iter().map(|b| b.in_use).sum::<u64>(), 0, "{s}");
    assert_eq!(s.buckets.iter().map(|b| b.idle).sum::<u64>(), held, "{s}");
    assert_conserved(&s, 0);
}

#[test]
fn grow_then_release_goes_to_the_new_bucket() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(4 * KIB);
    let data: Vec<u8> = (0..10_000).map(|i| (i % 251) as u8).collect();
    buf.extend_from_slice(&data);
    assert_eq!(
        buf.capacity(),
        12 * KIB,
        "like a Vec: max(twice 4 KiB, 10 000), rounded up to a bucket"
    );
    assert_eq!(&buf[..], &data[..]);
    drop(buf);
    let s = pool.stats();
    assert_eq!(s.bucket(4 * KIB).unwrap().idle, 0, "{s}");
    assert_eq!(s.bucket(12 * KIB).unwrap().idle, 1, "{s}");
    assert_conserved(&s, 0);
    // Growing past max_capacity: freed when released.
    let mut big = pool.acquire(60 * KIB);
    big.resize(70 * KIB, 0);
    drop(big);
    let s = pool.stats();
    assert_eq!(s.bucket(60 * KIB).unwrap().removes, 1, "{s}");
    assert_conserved(&s, 0);
}

/// The Vec-like API of the owned buffer (its doc examples are on
/// `PooledBuf`'s methods).
#[test]
fn an_owned_buffer_has_the_vec_like_api() {
    let pool = Arc::new(BufferPool::new());
    let mut buf = pool.acquire_owned(16);
    assert!(buf.is_empty());
    assert_eq!((buf.len(), buf.capacity()), (0, 4 * KIB));
    buf.push(b'x');
    buf.extend_from_slice(b"abcdef");
    assert!(!buf.is_empty());
    assert_eq!((buf.len(), &buf[..]), (7, &b"xabcdef"[..]));
    let first = buf[..].as_ptr();
    assert_eq!(buf.as_ptr(), first);
    assert_eq!(buf.as_mut_ptr().cast_const(), first);
    buf.truncate(3);
    assert_eq!(buf, *b"xab");
    buf.truncate(10);
    assert_eq!(buf, *b"xab");
    buf.resize(5, 0xAB);
    assert_eq!(buf, [b'x', b'a', b'b', 0xAB, 0xAB]);
    buf.resize(1, 0);
    assert_eq!(buf, *b"x");
    let spare = buf.spare_capacity_mut();
    assert_eq!(
        (spare.len(), spare.as_ptr().cast::<u8>()),
        (4 * KIB - 1, first.wrapping_add(1))
    );
    buf.clear();
    assert!(buf.is_empty());
    assert_eq!(buf.capacity(), 4 * KIB, "the capacity is kept");
    buf.extend_from_slice(&[0; 5000]);
    assert_eq!(buf.capacity(), 8 * KIB);
    buf.reserve(10_000);
    assert!(buf.capacity() >= 15_000);
    assert!(buf.try_reserve(100).is_ok());
    assert!(matches!(
        buf.try_reserve(usize::MAX),
        Err(AcquireError::TooLarge { .. })
    ));
    assert_eq!(buf.len(), 5000, "unchanged by the failure");
}

#[test]
fn released_on_another_thread_comes_home() {
    let pool = BufferPool::new();
    let pool = Arc::new(pool);
    let mut bufs: Vec<_> = (0..40).map(|_| pool.acquire_owned(100)).collect();
    for (i, b) in bufs.iter_mut().enumerate() {
        b.push(i as u8);
    }
    // Joined (not scoped): the thread's exit sends its last partial batch.
    thread::spawn(move || drop(bufs)).join().unwrap();
    // Gathered in batches and sent home; the misses here drain them.
    let again: Vec<PooledBuf<'_>> = (0..40).map(|_| pool.acquire(100)).collect();
    let s = pool.stats();
    assert_eq!(s.buckets[0].non_pooled, 40, "every one reused: {s}");
    assert!(again.iter().all(|b| b.is_empty()));
    drop(again);
    assert_conserved(&pool.stats(), 0);
}

#[test]
fn buffers_of_an_exited_thread_are_reachable() {
    let pool = Arc::new(BufferPool::new());
    let p = Arc::clone(&pool);
    thread::spawn(move || {
        let bufs: Vec<_> = (0..10).map(|_| p.acquire(100)).collect();
        drop(bufs); // into this thread's cache, flushed to the depot at exit
    })
    .join()
    .unwrap();
    let bufs: Vec<_> = (0..10).map(|_| pool.acquire(100)).collect();
    assert_eq!(pool.stats().buckets[0].pooled, 10);
    drop(bufs);
}

#[test]
fn a_panic_while_holding_a_buffer_returns_it() {
    let pool = BufferPool::new();
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut buf = pool.acquire(10);
        buf.extend_from_slice(b"half-written");
        panic!("user code fails");
    }));
    assert!(result.is_err());
    let s = pool.stats();
    assert_eq!((s.buckets[0].in_use, s.buckets[0].idle), (0, 1), "{s}");
    assert!(pool.acquire(10).is_empty());
}

#[test]
fn debug_never_shows_contents() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(10);
    buf.extend_from_slice(b"secret");
    let text = format!("{buf:?} {pool:?}");
    assert!(!text.contains("secret") && !text.contains("115"), "{text}");
    assert!(text.contains("len: 6"), "{text}");
}

#[test]
fn stats_dump_reads_like_jettys() {
    let pool = BufferPool::builder()
        .max_idle_memory(1 << 20)
        .build()
        .unwrap();
    for _ in 0..999 {
        drop(pool.acquire(4096));
    }
    drop(pool.acquire(40_000));
    let text = pool.stats().to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "header, two used buckets, total:\n{text}");
    assert!(lines[0].contains("idle 44 KiB (max 1 MiB)"), "{text}");
    assert!(
        lines[1].contains("4 KiB: acquires 999 (hits 998, 99.9%)"),
        "{text}"
    );
    assert!(
        lines[2].contains("40 KiB: acquires 1 (hits 0, 0.0%)"),
        "{text}"
    );
    assert!(
        lines[3].contains("total: acquires 1000 (hits 998, 99.8%), created 2"),
        "{text}"
    );
}

#[test]
fn bytes_buf_mut_fills_a_pooled_buffer() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(8);
    // What tokio's `read_buf` does: write into `chunk_mut`, then advance.
    let src = b"bytes from a reader";
    let chunk = buf.chunk_mut();
    assert!(chunk.len() >= src.len());
    chunk[..src.len()].copy_from_slice(src);
    // SAFETY: `src.len()` bytes of the chunk were just written.
    unsafe { buf.advance_mut(src.len()) };
    buf.put_u16(0x0A0B);
    assert_eq!(&buf[..src.len()], src);
    assert_eq!(&buf[src.len()..], [0x0A, 0x0B]);
}

#[test]
fn bytes_last_clone_returns_the_memory() {
    let pool = Arc::new(BufferPool::new());
    let mut buf = pool.acquire_owned(1000);
    buf.extend_from_slice(b"shared without a copy");
    let ptr = buf.as_ptr();
    let bytes: Bytes = buf.into_bytes();
    let parts: Vec<Bytes> = (0..4).map(|i| bytes.slice(i..i + 5)).collect();
    drop(bytes);
    let handle = {
        let last = parts[3].clone();
        thread::spawn(move || last.len())
    };
    assert_eq!(handle.join().unwrap(), 5);
    assert_eq!(pool.stats().buckets[0].in_use, 1, "clones still hold it");
    drop(parts);
    let s = pool.stats();
    assert_eq!((s.buckets[0].in_use, s.buckets[0].idle), (0, 1), "{s}");
    let again = pool.acquire(1);
    assert_eq!(again.as_ptr(), ptr, "the same memory, reused");
}

#[cfg(not(loom))]
#[test]
fn tokio_read_buf_fills_a_pooled_buffer() {
    use tokio::io::AsyncReadExt;

    let pool = Arc::new(BufferPool::new());
    let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let buf = rt.block_on(async {
        let mut reader: &[u8] = &data;
        let mut buf = pool.acquire_owned(100);
        let mut reads = 0;
        while reader.read_buf(&mut buf).await.unwrap() > 0 {
            reads += 1;
        }
        assert!(reads >= 2, "the 4 KiB buffer filled up and grew");
        buf
    });
    assert_eq!(&buf[..], &data[..]);
    assert_eq!(
        buf.capacity(),
        16 * KIB,
        "4 KiB, full: doubled to 8, then 16"
    );
}

/// Per-bucket statistics count the size asked as well as the buffer served
/// (issue 24: uniform requests over 4-36 KiB at a limit showed no 4 KiB
/// bucket at all, every acquire counted in the larger bucket that served
/// it).
#[test]
fn statistics_count_the_size_asked_and_the_buffer_served() {
    let pool = BufferPool::new();
    let mut grown = pool.acquire(100);
    grown.resize(20_000, 0); // grows into the 20 KiB bucket, released there
    drop(grown);
    let served = pool.acquire(100); // this thread's 4 KiB acquires grew: served larger
    assert_eq!(served.capacity(), 20 * KIB);
    drop(served);
    let s = pool.stats();
    let (small, large) = (s.bucket(4 * KIB).unwrap(), s.bucket(20 * KIB).unwrap());
    assert_eq!(
        (small.acquires, small.requested, small.served_larger),
        (1, 2, 1),
        "{s}"
    );
    assert_eq!(
        (large.acquires, large.requested, large.served_larger),
        (1, 0, 0),
        "{s}"
    );
    assert_eq!(s.total().requested, s.total().acquires, "{s}");
    let dump = s.to_string();
    assert!(
        dump.contains("4 KiB: acquires 1 (hits 0, 0.0%)")
            && dump.contains("requested 2 (served larger 1)"),
        "{dump}"
    );
}

/// At the memory limit a smaller request served by a larger idle buffer,
/// shrunk to its bucket, counts as requested of its own bucket.
#[test]
fn statistics_count_a_request_served_shrunk_at_the_limit() {
    let pool = BufferPool::builder()
        .memory_limit(24 * KIB)
        .build()
        .unwrap();
    drop(pool.acquire(20 * KIB)); // idle: 20 KiB of the 24
    let first = pool.acquire(4 * KIB); // room: allocated, 24 KiB
    let second = pool.acquire(4 * KIB); // the limit binds: the 20 KiB one, shrunk
    assert_eq!((first.capacity(), second.capacity()), (4 * KIB, 4 * KIB));
    let s = pool.stats();
    let (small, large) = (s.bucket(4 * KIB).unwrap(), s.bucket(20 * KIB).unwrap());
    assert_eq!((small.requested, small.served_larger), (2, 1), "{s}");
    assert_eq!((large.acquires, large.requested), (2, 1), "{s}");
    assert_eq!(
        s.allocated_memory,
        8 * KIB as u64,
        "the rest went back: {s}"
    );
    drop((first, second));
}
