//! Every public function of the buffer pool (`BufferPool`,
//! `BufferPoolBuilder`, `PooledBuf`, `OwnedPooledBuf`, `Scope`,
//! `BufferPoolStats`, `BucketStats`) and of the recycler's builder and handle
//! (`RecyclerBuilder`, `Recycler`), called with the worst inputs: 0, 1,
//! `usize::MAX`, sizes just past a limit, alignments that are not powers of
//! two or are huge, caps smaller than one buffer, limits of 0, empty slices,
//! thousands of buckets.
//!
//! Each test asserts what the caller gets: a typed error with the numbers, a
//! documented panic with its message, or a plain result. None may abort or
//! reach undefined behaviour; the table in `docs/testing.md` ("Bad input")
//! lists the cases.

mod common;

use std::io::{self, Write};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

use bytes::BufMut;
use recycler_core::buffer::{BucketStats, BufferPool, BufferPoolBuilder, BufferPoolStats};
use recycler_core::{AcquireError, ConfigError, OwnedPooled, Pooled, Recycler};

/// The largest capacity a buffer aligned to `align` can have.
fn max_for(align: usize) -> usize {
    isize::MAX as usize - (align - 1)
}

/// Runs `f`, which must panic, and returns its message.
#[track_caller]
fn panic_message(f: impl FnOnce()) -> String {
    let Err(payload) = panic::catch_unwind(AssertUnwindSafe(f)) else {
        panic!("did not panic");
    };
    if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else {
        String::from("<not a string>")
    }
}

fn build_err(b: BufferPoolBuilder) -> ConfigError {
    b.build().unwrap_err()
}

/// Every buffer allocated is in use, idle, evicted or removed.
fn assert_books_balance(s: &BufferPoolStats) {
    common::assert_buffers_counted(s);
}

// --- BufferPoolBuilder -----------------------------------------------------

#[test]
fn builder_bucket_step_extremes() {
    assert_eq!(
        build_err(BufferPool::builder().bucket_step(0)),
        ConfigError::Zero {
            field: "bucket_step"
        }
    );
    // 1 byte steps: 4096 buckets of 1 to 4096 bytes is the most allowed.
    let pool = BufferPool::builder()
        .bucket_step(1)
        .max_capacity(4096)
        .build()
        .unwrap();
    assert_eq!(pool.stats().buckets.len(), 4096);
    // The default max_capacity is below a huge step.
    assert_eq!(
        build_err(BufferPool::builder().bucket_step(usize::MAX)),
        ConfigError::Below {
            field: "max_capacity",
            value: 65536,
            other: "bucket_step",
            other_value: usize::MAX
        }
    );
    // A step of usize::MAX with a matching max_capacity: no buffer of that
    // size can exist.
    assert_eq!(
        build_err(
            BufferPool::builder()
                .bucket_step(usize::MAX)
                .max_capacity(usize::MAX)
        ),
        ConfigError::TooLarge {
            field: "max_capacity",
            value: usize::MAX,
            max: max_for(1)
        }
    );
    // Not a power of two: a division instead of a shift, same rounding.
    let pool = BufferPool::builder()
        .bucket_step(1000)
        .max_capacity(3000)
        .build()
        .unwrap();
    assert_eq!(pool.acquire(1).capacity(), 1000);
    assert_eq!(pool.acquire(1001).capacity(), 2000);
    assert_eq!(pool.acquire(3001).capacity(), 3001);
}

#[test]
fn builder_max_capacity_extremes() {
    assert_eq!(
        build_err(BufferPool::builder().max_capacity(0)),
        ConfigError::Below {
            field: "max_capacity",
            value: 0,
            other: "bucket_step",
            other_value: 4096
        }
    );
    assert_eq!(
        build_err(BufferPool::builder().max_capacity(4097)),
        ConfigError::NotMultiple {
            field: "max_capacity",
            value: 4097,
            of: "bucket_step",
            of_value: 4096
        }
    );
    assert_eq!(
        build_err(BufferPool::builder().max_capacity(usize::MAX)),
        ConfigError::NotMultiple {
            field: "max_capacity",
            value: usize::MAX,
            of: "bucket_step",
            of_value: 4096
        }
    );
    // One bucket past the most allowed.
    assert_eq!(
        build_err(BufferPool::builder().bucket_step(1).max_capacity(4097)),
        ConfigError::TooLarge {
            field: "max_capacity",
            value: 4097,
            max: 4096
        }
    );
    assert_eq!(
        build_err(BufferPool::builder().max_capacity(4096 * 4097)),
        ConfigError::TooLarge {
            field: "max_capacity",
            value: 4096 * 4097,
            max: 4096 * 4096
        }
    );
    // One bucket only.
    let pool = BufferPool::builder().max_capacity(4096).build().unwrap();
    assert_eq!(pool.stats().buckets.len(), 1);
    assert_eq!(pool.acquire(4097).capacity(), 4097, "not pooled");
    // The largest step that fits with an alignment: one huge bucket,
    // which the allocator refuses (a typed error, not an abort).
    let step = 1 << 62;
    let pool = BufferPool::builder()
        .bucket_step(step)
        .max_capacity(step)
        .build()
        .unwrap();
    assert_eq!(
        pool.try_acquire(1).unwrap_err(),
        AcquireError::AllocFailed {
            requested: step,
            alignment: 1
        }
    );
    assert_eq!(pool.stats().allocated_memory, 0, "the reservation undone");
}

#[test]
fn builder_alignment_extremes() {
    for bad in [0, 3, 48, 4095, usize::MAX] {
        assert_eq!(
            build_err(BufferPool::builder().alignment(bad)),
            ConfigError::NotPowerOfTwo {
                field: "alignment",
                value: bad
            },
            "alignment({bad})"
        );
    }
    for huge in [1 << 31, 1 << 40, 1 << 63] {
        assert_eq!(
            build_err(BufferPool::builder().alignment(huge)),
            ConfigError::TooLarge {
                field: "alignment",
                value: huge,
                max: 1 << 30
            },
            "alignment({huge})"
        );
    }
    // The largest alignment accepted works (or the allocator refuses it,
    // with a typed error).
    let pool = BufferPool::builder().alignment(1 << 30).build().unwrap();
    match pool.try_acquire(1) {
        Ok(buf) => assert_eq!(buf.as_ptr().addr() % (1 << 30), 0),
        Err(err) => assert_eq!(
            err,
            AcquireError::AllocFailed {
                requested: 4096,
                alignment: 1 << 30
            }
        ),
    }
    // Alignment above the step: buffers and growth stay aligned.
    let pool = BufferPool::builder()
        .bucket_step(1000)
        .max_capacity(3000)
        .alignment(1 << 16)
        .build()
        .unwrap();
    let mut buf = pool.acquire(1);
    assert_eq!(buf.as_ptr().addr() % (1 << 16), 0);
    buf.resize(5000, 1);
    assert_eq!(buf.as_ptr().addr() % (1 << 16), 0);
}

#[test]
fn builder_memory_limit_extremes() {
    assert_eq!(
        build_err(BufferPool::builder().memory_limit(0)),
        ConfigError::Zero {
            field: "memory_limit"
        }
    );
    for small in [1, 4095] {
        assert_eq!(
            build_err(BufferPool::builder().memory_limit(small)),
            ConfigError::Below {
                field: "memory_limit",
                value: small,
                other: "bucket_step",
                other_value: 4096
            }
        );
    }
    // A limit smaller than the largest bucket: that bucket can never be
    // filled, and says so with the numbers.
    let pool = BufferPool::builder().memory_limit(4096).build().unwrap();
    assert_eq!(
        pool.try_acquire(65536).unwrap_err(),
        AcquireError::LimitExceeded {
            requested: 65536,
            needed: 65536,
            allocated: 0,
            limit: 4096
        }
    );
    assert_eq!(pool.acquire(1).capacity(), 4096);
    // usize::MAX: no limit in effect.
    let pool = BufferPool::builder()
        .memory_limit(usize::MAX)
        .build()
        .unwrap();
    assert_eq!(pool.stats().memory_limit, Some(u64::MAX));
    assert_eq!(pool.acquire(1).capacity(), 4096);
}

#[test]
fn builder_idle_caps_and_statistics_extremes() {
    // A cap of 0 and of 1 byte, smaller than any buffer: every release is
    // dropped, and counted.
    for cap in [0, 1] {
        let pool = BufferPool::builder().max_idle_memory(cap).build().unwrap();
        drop(pool.acquire(1));
        let s = pool.stats();
        assert_eq!((s.idle_memory, s.allocated_memory), (0, 0), "cap {cap}");
        assert_eq!(s.buckets[0].removes, 1, "cap {cap}: {s}");
        assert_books_balance(&s);
    }
    let pool = BufferPool::builder()
        .max_idle_memory(usize::MAX)
        .build()
        .unwrap();
    drop(pool.acquire(1));
    assert_eq!(pool.stats().idle_memory, 4096);
    // No caching per thread: every buffer is freed.
    let pool = BufferPool::builder()
        .max_idle_per_thread(0)
        .build()
        .unwrap();
    drop(pool.acquire(1));
    assert_eq!(pool.stats().allocated_memory, 0);
    let pool = BufferPool::builder()
        .max_idle_per_thread(usize::MAX)
        .build()
        .unwrap();
    let held: Vec<_> = (0..100).map(|_| pool.acquire(1)).collect();
    drop(held);
    assert_eq!(pool.stats().buckets[0].idle, 100);
    let pool = BufferPool::builder().statistics(false).build().unwrap();
    drop(pool.acquire(1));
    let s = pool.stats();
    assert!(!s.statistics);
    assert_eq!((s.buckets[0].acquires, s.buckets[0].non_pooled), (0, 1));
}

#[test]
fn builder_first_error_wins_and_clones_are_independent() {
    // Several bad settings: the first checked is named.
    let err = build_err(
        BufferPool::builder()
            .bucket_step(0)
            .alignment(3)
            .memory_limit(0),
    );
    assert_eq!(
        err,
        ConfigError::Zero {
            field: "bucket_step"
        }
    );
    let base = BufferPool::builder().bucket_step(1000);
    let bad = base.clone().max_capacity(1500);
    assert!(matches!(
        build_err(bad),
        ConfigError::NotMultiple { value: 1500, .. }
    ));
    let good = base.max_capacity(2000).build().unwrap();
    assert_eq!(good.stats().buckets.len(), 2);
    let default = BufferPoolBuilder::default().build().unwrap();
    assert_eq!(default.stats().buckets.len(), 16);
}

#[test]
fn thousands_of_buckets() {
    let b = || {
        BufferPool::builder()
            .bucket_step(16)
            .max_capacity(16 * 4096)
    };
    let pool = b().build().unwrap();
    let mut held: Vec<_> = (0..4096).map(|i| pool.acquire(i * 16 + 1)).collect();
    for (i, b) in held.iter().enumerate() {
        assert_eq!(b.capacity(), (i + 1) * 16, "acquire({})", i * 16 + 1);
    }
    held.push(pool.acquire(16 * 4096 + 1));
    drop(held);
    let s = pool.stats();
    assert_eq!(s.buckets.len(), 4096);
    assert_eq!(s.idle_memory, 16 * 4096 * 4097 / 2);
    assert_eq!(s.oversize.acquires, 1);
    assert_books_balance(&s);
    // A header, a line per bucket, the oversize line and the totals.
    assert_eq!(s.to_string().lines().count(), 1 + 4096 + 1 + 1);
    pool.trim();
    assert_eq!(pool.stats().allocated_memory, 0);
    // Under a small idle cap, a release over it visits at most 64 other
    // buckets, from a random one on, and skips empty ones on atomic hints
    // (no lock taken), so 4,096 such releases stay cheap (they took 8 s in
    // a debug build when each walked every bucket and locked its depot).
    let pool = b().max_idle_memory(1 << 20).build().unwrap();
    let held: Vec<_> = (0..4096).map(|i| pool.acquire(65536 - i * 16)).collect();
    drop(held);
    let s = pool.stats();
    assert!(s.idle_memory <= 1 << 20, "{}", s.idle_memory);
    assert_eq!(s.allocated_memory, s.idle_memory);
    assert_books_balance(&s);
}

// --- BufferPool --------------------------------------------------------------

#[test]
fn acquire_extremes() {
    let pool = BufferPool::new();
    assert_eq!(pool.acquire(0).capacity(), 4096);
    assert_eq!(pool.acquire(1).capacity(), 4096);
    let msg = panic_message(|| drop(pool.acquire(usize::MAX)));
    assert_eq!(
        msg,
        format!(
            "BufferPool::acquire: a buffer of {} bytes cannot exist; the largest possible is {} bytes",
            usize::MAX,
            max_for(1)
        )
    );
    let aligned = BufferPool::builder().alignment(4096).build().unwrap();
    let msg = panic_message(|| drop(aligned.acquire(max_for(4096) + 1)));
    assert!(msg.contains(&format!("the largest possible is {}", max_for(4096))));
    let limited = BufferPool::builder().memory_limit(4096).build().unwrap();
    let held = limited.acquire(1);
    // At the limit: no panic, an overdraft (invariant 8), freed when dropped.
    let over = limited.acquire(1);
    assert_eq!(over.capacity(), 4096);
    assert_eq!(limited.stats().overdrafts, 1);
    drop(over);
    assert_eq!(limited.stats().overdraft_memory, 0);
    drop(held);
    for p in [&pool, &aligned, &limited] {
        assert_books_balance(&p.stats());
    }
}

#[test]
fn try_acquire_extremes() {
    let pool = BufferPool::new();
    assert_eq!(pool.try_acquire(0).unwrap().capacity(), 4096);
    for huge in [usize::MAX, isize::MAX as usize + 1] {
        assert_eq!(
            pool.try_acquire(huge).unwrap_err(),
            AcquireError::TooLarge {
                requested: huge,
                max: max_for(1)
            }
        );
    }
    // The largest size possible: the allocator refuses it.
    assert_eq!(
        pool.try_acquire(max_for(1)).unwrap_err(),
        AcquireError::AllocFailed {
            requested: max_for(1),
            alignment: 1
        }
    );
    let aligned = BufferPool::builder().alignment(1 << 20).build().unwrap();
    assert_eq!(
        aligned.try_acquire(max_for(1)).unwrap_err(),
        AcquireError::TooLarge {
            requested: max_for(1),
            max: max_for(1 << 20)
        }
    );
    let limited = BufferPool::builder().memory_limit(8192).build().unwrap();
    assert_eq!(
        limited.try_acquire(8193).unwrap_err(),
        AcquireError::LimitExceeded {
            requested: 8193,
            needed: 12288, // the bucket's capacity
            allocated: 0,
            limit: 8192
        }
    );
    assert_eq!(
        limited.try_acquire(usize::MAX).unwrap_err(),
        AcquireError::TooLarge {
            requested: usize::MAX,
            max: max_for(1)
        },
        "too large before over the limit"
    );
    for p in [&pool, &aligned, &limited] {
        let s = p.stats();
        assert_eq!(
            s.allocated_memory, s.idle_memory,
            "nothing left reserved: {s}"
        );
    }
}

#[test]
fn acquire_timeout_extremes() {
    let pool = BufferPool::builder().memory_limit(4096).build().unwrap();
    // Fails at once, however long the timeout: too large, or larger than
    // the limit itself.
    assert!(matches!(
        pool.acquire_timeout(usize::MAX, Duration::MAX),
        Err(AcquireError::TooLarge { .. })
    ));
    assert_eq!(
        pool.acquire_timeout(4097, Duration::MAX).unwrap_err(),
        AcquireError::LimitExceeded {
            requested: 4097,
            needed: 8192,
            allocated: 0,
            limit: 4096
        }
    );
    let held = pool.acquire_timeout(0, Duration::ZERO).unwrap();
    // A zero timeout at the limit: one more try, then the error.
    assert_eq!(
        pool.acquire_timeout(1, Duration::ZERO).unwrap_err(),
        AcquireError::TimedOut {
            requested: 1,
            needed: 4096,
            allocated: 4096,
            limit: 4096,
            waited: Duration::ZERO,
        }
    );
    drop(held);
    // Duration::MAX does not overflow the deadline.
    assert!(pool.acquire_timeout(1, Duration::MAX).is_ok());
}

#[test]
fn owned_acquires_extremes() {
    let pool = Arc::new(BufferPool::builder().memory_limit(4096).build().unwrap());
    assert_eq!(pool.acquire_owned(0).capacity(), 4096);
    assert!(matches!(
        pool.try_acquire_owned(usize::MAX),
        Err(AcquireError::TooLarge {
            requested: usize::MAX,
            ..
        })
    ));
    let held = pool.try_acquire_owned(1).unwrap();
    assert!(matches!(
        pool.try_acquire_owned(1),
        Err(AcquireError::LimitExceeded { .. })
    ));
    // At the limit: an overdraft, not a panic (invariant 8).
    drop(pool.acquire_owned(1));
    assert_eq!(pool.stats().overdrafts, 1);
    drop(held);
    let s = pool.stats();
    assert_eq!((s.buckets[0].in_use, s.allocated_memory), (0, 4096), "{s}");
}

#[test]
fn trim_stats_and_debug_of_an_unused_pool() {
    let pool = BufferPool::default();
    pool.trim();
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.idle_memory, s.allocated_memory), (0, 0));
    assert_eq!(s.buckets.len(), 16);
    assert!(format!("{pool:?}").starts_with("BufferPool { bucket_step: 4096"));
    assert_eq!(
        s.to_string(),
        "BufferPool: 16 buckets of 4 KiB to 64 KiB; idle 0 B (max none), allocated 0 B (limit none)\n    \
         total: acquires 0 (hits 0, 100.0%), created 0, released 0, removed 0, idle 0, in use 0, evicted 0"
    );
}

// --- PooledBuf and OwnedPooledBuf -------------------------------------------

/// Runs the bad-input checks of the Vec-like API on one guard type.
macro_rules! vec_like_extremes {
    ($pool:expr, $acquire:ident) => {{
        let pool = $pool;
        let mut b = pool.$acquire(1);
        // Empty input and no-ops.
        b.extend_from_slice(&[]);
        b.truncate(usize::MAX);
        b.truncate(0);
        b.reserve(0);
        b.try_reserve(0).unwrap();
        b.resize(0, 1);
        assert_eq!(b.write(&[]).unwrap(), 0);
        b.flush().unwrap();
        b.clear();
        assert!(b.is_empty());
        assert_eq!(&b[..], b"");
        assert_ne!(std::hint::black_box(b.as_ptr()).addr(), 0);
        assert_ne!(std::hint::black_box(b.as_mut_ptr()).addr(), 0);
        assert_eq!((b.as_ref().len(), b.as_mut().len(), (*b).len()), (0, 0, 0));
        assert_eq!((&mut *b).len(), 0);
        b.extend_from_slice(b"abc");
        // Sizes no buffer can have: typed errors and panics with the numbers.
        for additional in [usize::MAX, usize::MAX - 2, isize::MAX as usize] {
            let err = b.try_reserve(additional).unwrap_err();
            assert!(
                matches!(err, AcquireError::TooLarge { max, .. } if max == max_for(1)),
                "try_reserve({additional}): {err}"
            );
        }
        let msg = panic_message(|| b.reserve(usize::MAX));
        assert_eq!(
            msg,
            format!(
                "pooled buffer cannot grow: a buffer of {} bytes cannot exist; \
                 the largest possible is {} bytes",
                usize::MAX,
                max_for(1)
            )
        );
        let msg = panic_message(|| b.resize(usize::MAX, 0));
        assert!(msg.starts_with("pooled buffer cannot grow: a buffer of"), "{msg}");
        // The largest capacity: the allocator refuses it.
        let msg = panic_message(|| b.resize(max_for(1), 0));
        assert_eq!(
            msg,
            format!(
                "pooled buffer cannot grow: the allocator could not provide {} bytes aligned to 1",
                max_for(1)
            )
        );
        let msg = panic_message(|| {
            // SAFETY: not reached: `set_len` checks the capacity first.
            unsafe { b.set_len(usize::MAX) }
        });
        assert_eq!(
            msg,
            format!("set_len({}) beyond the capacity (4096)", usize::MAX)
        );
        // Unchanged by every failure.
        assert_eq!((&b[..], b.capacity()), (&b"abc"[..], 4096));
        assert_eq!(pool.stats().allocated_memory, 4096, "no reservation leaked");
        // A full buffer: its spare capacity is empty, not dangling.
        b.resize(4096, 0);
        let spare = b.spare_capacity_mut();
        assert_eq!(spare.len(), 0);
        assert_ne!(std::hint::black_box(spare.as_ptr()).addr(), 0);
        // SAFETY: within the capacity, and every byte is written.
        unsafe { b.set_len(0) };
        assert!(b.is_empty());
        drop(b);
        assert_books_balance(&pool.stats());
    }};
}

#[test]
fn pooled_buf_extremes() {
    vec_like_extremes!(BufferPool::new(), acquire);
}

#[test]
fn owned_pooled_buf_extremes() {
    vec_like_extremes!(Arc::new(BufferPool::new()), acquire_owned);
}

#[test]
fn growth_at_the_memory_limit() {
    let pool = Arc::new(BufferPool::builder().memory_limit(8192).build().unwrap());
    let mut b = pool.acquire(1);
    let mut o = pool.acquire_owned(1);
    b.resize(4096, 1);
    o.resize(4096, 2);
    assert_eq!(
        b.try_reserve(1).unwrap_err(),
        AcquireError::LimitExceeded {
            requested: 4097, // the length plus the byte to reserve
            needed: 4096,    // the growth: 4 KiB to 8 KiB
            allocated: 8192,
            limit: 8192
        }
    );
    // The infallible growths are overdrafts at the limit (invariant 8),
    // `io::Write` too (without `hard_limit`).
    b.push(0);
    b.write_all(b"x").unwrap();
    o.push(0);
    o.extend_from_slice(&[0; 10]);
    assert_eq!((b.capacity(), o.capacity()), (8192, 8192));
    let s = pool.stats();
    assert_eq!(
        (s.overdrafts, s.overdraft_memory, s.allocated_memory),
        (2, 8192, 8192)
    );
    b.truncate(4096);
    o.truncate(4096);
    assert_eq!((b.len(), o.len()), (4096, 4096), "the bytes were kept");
    assert!(b.iter().all(|&x| x == 1) && o.iter().all(|&x| x == 2));
    drop(b);
    drop(o);
    assert_eq!(pool.stats().overdraft_memory, 0, "overdrafts are freed");
    // A hard limit: `io::Write` fails instead, and a write that cannot fail
    // panics rather than pass the limit (the buffer unchanged).
    let hard = BufferPool::builder()
        .memory_limit(4096)
        .hard_limit(true)
        .build()
        .unwrap();
    let mut h = hard.acquire(1);
    h.resize(4096, 1);
    let err = h.write(b"x").unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
    assert!(err.to_string().contains("`memory_limit` exceeded"), "{err}");
    let pushed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| h.push(0)));
    assert!(pushed.is_err());
    assert_eq!(h.len(), 4096, "unchanged");
    let s = hard.stats();
    assert_eq!((s.overdrafts, s.limit_violations), (0, 0), "{s}");
    drop(h);
    assert_books_balance(&hard.stats());
    assert_books_balance(&pool.stats());
}

#[test]
fn bytes_buf_mut_extremes() {
    let pool = Arc::new(BufferPool::new());
    let mut b = pool.acquire(1);
    b.put_slice(b"abcdef");
    assert_eq!(b.remaining_mut(), isize::MAX as usize - 6);
    b.put_slice(&[]);
    b.put_bytes(0, 0);
    // SAFETY: advancing by 0 initializes nothing new.
    unsafe { b.advance_mut(0) };
    for cnt in [usize::MAX, usize::MAX - 2, isize::MAX as usize - 5] {
        let msg = panic_message(|| b.put_bytes(b'z', cnt));
        assert_eq!(
            msg,
            format!(
                "put_bytes({cnt}) past the remaining capacity ({})",
                isize::MAX as usize - 6
            )
        );
    }
    for cnt in [usize::MAX, 4091] {
        let msg = panic_message(|| {
            // SAFETY: not reached: `advance_mut` checks the capacity first.
            unsafe { b.advance_mut(cnt) }
        });
        assert_eq!(
            msg,
            format!("advance_mut({cnt}) past the capacity (6 of 4096 written)")
        );
    }
    assert_eq!(&b[..], b"abcdef", "unchanged");
    // A full buffer at the memory limit: chunk_mut cannot make room.
    let limited = Arc::new(BufferPool::builder().memory_limit(4096).build().unwrap());
    let mut full = limited.acquire_owned(1);
    full.resize(4096, 0);
    // It grows all the same: an overdraft (invariant 8).
    assert_eq!(full.chunk_mut().len(), 4096);
    assert_eq!(limited.stats().overdrafts, 1);
    // An empty buffer into `Bytes`: empty, and the memory still returns.
    drop(full);
    let empty = limited.acquire_owned(0);
    let bytes = empty.into_bytes();
    assert!(bytes.is_empty());
    drop(bytes);
    assert_eq!(limited.stats().buckets[0].idle, 1);
    assert_eq!(limited.stats().overdraft_memory, 0);
}

// --- Scope -------------------------------------------------------------------

#[test]
fn scope_extremes() {
    let pool = BufferPool::new();
    let scope = pool.scope();
    // Empty slices: non-null, no buffer taken.
    for s in [
        scope.alloc(0),
        scope.alloc_zeroed(0),
        scope.try_alloc(0).unwrap(),
    ] {
        assert!(s.is_empty());
        assert_ne!(std::hint::black_box(s.as_ptr()).addr(), 0);
    }
    assert!(scope.is_empty());
    for huge in [usize::MAX, isize::MAX as usize + 1] {
        assert_eq!(
            scope.try_alloc(huge).unwrap_err(),
            AcquireError::TooLarge {
                requested: huge,
                max: max_for(1)
            }
        );
    }
    assert_eq!(
        scope.try_alloc(max_for(1)).unwrap_err(),
        AcquireError::AllocFailed {
            requested: max_for(1),
            alignment: 1
        }
    );
    let msg = panic_message(|| {
        let _ = scope.alloc(usize::MAX);
    });
    assert_eq!(
        msg,
        format!(
            "Scope::alloc: a buffer of {} bytes cannot exist; the largest possible is {} bytes",
            usize::MAX,
            max_for(1)
        )
    );
    let msg = panic_message(|| {
        let _ = scope.alloc_zeroed(usize::MAX);
    });
    assert!(msg.starts_with("Scope::alloc: a buffer of"), "{msg}");
    assert!(scope.is_empty(), "failures take nothing");
    // One byte, then a slice just over half a chunk (its own buffer).
    assert_eq!(scope.alloc(1).len(), 1);
    assert_eq!(scope.alloc(32 * 1024 + 1).len(), 32 * 1024 + 1);
    assert_eq!(format!("{scope:?}"), "Scope { buffers: 2, .. }");
    drop(scope);
    assert_eq!(
        pool.stats().buckets.iter().map(|b| b.in_use).sum::<u64>(),
        0
    );
    assert_eq!(pool.stats().allocated_memory, pool.stats().idle_memory);
}

#[test]
fn scope_at_the_memory_limit() {
    let pool = BufferPool::builder()
        .memory_limit(8192)
        .max_capacity(8192)
        .build()
        .unwrap();
    let scope = pool.scope();
    assert_eq!(scope.alloc(8192).len(), 8192);
    assert_eq!(
        scope.try_alloc(1).unwrap_err(),
        AcquireError::LimitExceeded {
            requested: 1,
            needed: 4096,
            allocated: 8192,
            limit: 8192
        }
    );
    // `alloc` does not panic there: a buffer of its own, an overdraft.
    let over = scope.alloc(1);
    over[0] = 9;
    assert_eq!((over.len(), pool.stats().overdrafts), (1, 1));
    assert_eq!(scope.alloc(0).len(), 0, "no memory needed");
    drop(scope);
    assert_eq!(pool.stats().overdraft_memory, 0, "freed with the scope");
    // A pool whose buckets are 1 byte: every slice gets its own buffer or
    // a one-byte chunk.
    let tiny = BufferPool::builder()
        .bucket_step(1)
        .max_capacity(1)
        .build()
        .unwrap();
    let scope = tiny.scope();
    let a = scope.alloc(1);
    let b = scope.alloc(2);
    a[0] = 1;
    b.fill(2);
    assert_eq!((a.len(), b.len(), scope.len()), (1, 2, 2));
}

// --- BufferPoolStats and BucketStats -----------------------------------------

#[test]
fn stats_extremes() {
    let pool = BufferPool::new();
    let s = pool.stats();
    for absent in [0, 1, 4095, 4097, usize::MAX] {
        assert!(s.bucket(absent).is_none(), "bucket({absent})");
    }
    assert_eq!(s.bucket(4096).map(|b| b.capacity), Some(4096));
    assert_eq!(s.bucket(65536).map(|b| b.capacity), Some(65536));
    let zero = BucketStats::default();
    assert_eq!(zero.hit_ratio(), 1.0, "no acquires");
    // Capacity 0 is how `BufferPoolStats::total` marks the totals.
    assert!(
        zero.to_string()
            .trim_start()
            .starts_with("total: acquires 0"),
        "{zero}"
    );
    let mut huge = s.oversize;
    assert_eq!(huge.capacity, usize::MAX);
    huge.acquires = u64::MAX;
    huge.pooled = u64::MAX;
    assert_eq!(huge.hit_ratio(), 1.0);
    assert!(
        huge.to_string()
            .trim_start()
            .starts_with("oversize: acquires 18446744073709551615")
    );
    // A snapshot with no buckets at all formats too.
    let mut empty = s.clone();
    empty.buckets.clear();
    assert!(
        empty
            .to_string()
            .starts_with("BufferPool: 0 buckets of 0 B to 0 B")
    );
}

// --- RecyclerBuilder and Recycler ----------------------------------------------

#[test]
fn recycler_builder_extremes() {
    let b = Recycler::<Vec<u8>>::builder;
    assert_eq!(
        b().batch_size(0).build().unwrap_err(),
        ConfigError::Zero {
            field: "batch_size"
        }
    );
    for big in [65537, usize::MAX] {
        assert_eq!(
            b().batch_size(big).build().unwrap_err(),
            ConfigError::TooLarge {
                field: "batch_size",
                value: big,
                max: 65536
            }
        );
    }
    assert_eq!(
        b().ratio(0).build().unwrap_err(),
        ConfigError::Zero { field: "ratio" }
    );
    // Accepted extremes, each still hands out and takes back objects.
    let builders = [
        b().batch_size(1),
        b().batch_size(65536).max_capacity_per_thread(65536),
        b().batch_size(65536).max_capacity_per_thread(0),
        b().max_capacity_per_thread(0),
        b().max_capacity_per_thread(1),
        b().max_capacity_per_thread(usize::MAX),
        b().ratio(1),
        b().ratio(usize::MAX),
        b().depot_capacity(0),
        b().depot_capacity(usize::MAX),
        b().max_idle_bytes(0),
        b().max_idle_bytes(1),
        b().max_idle_bytes(usize::MAX),
        b().factory(|| Vec::with_capacity(10)),
    ];
    for (i, builder) in builders.into_iter().enumerate() {
        let debug = format!("{builder:?}");
        let pool = builder.build().unwrap_or_else(|e| panic!("{debug}: {e}"));
        let held: Vec<_> = (0..100).map(|_| pool.get()).collect();
        drop(held);
        let s = pool.stats();
        assert_eq!(s.gets, 100, "case {i}: {debug}");
        assert_eq!(s.created, 100, "case {i}");
        assert_eq!(
            s.idle + s.dropped,
            100,
            "case {i}: every object accounted: {s:?}"
        );
        pool.trim();
        assert_eq!(pool.stats().idle, 0, "case {i}: trimmed");
    }
}

#[test]
fn recycler_caps_smaller_than_one_object() {
    // No pooling at all: try_get never finds anything.
    let none = Recycler::<Vec<u8>>::builder()
        .max_capacity_per_thread(0)
        .build()
        .unwrap();
    drop(none.get());
    assert!(none.try_get().is_none());
    assert_eq!(none.stats().dropped, 1);
    // An idle-bytes cap below one object's bytes: it is dropped; an empty
    // object (0 bytes) fits under any cap.
    let capped = Recycler::builder_with_factory(|| Vec::<u8>::with_capacity(64))
        .max_idle_bytes(1)
        .build()
        .unwrap();
    drop(capped.get());
    let s = capped.stats();
    assert_eq!((s.idle, s.dropped, s.idle_bytes), (0, 1, 0), "{s:?}");
    let zero = Recycler::<Vec<u8>>::builder()
        .max_idle_bytes(0)
        .build()
        .unwrap();
    drop(zero.get());
    assert_eq!(zero.stats().idle, 1, "0 bytes retained fit a cap of 0");
}

#[test]
fn recycler_get_try_get_trim_stats_on_empty_and_after_a_panic() {
    let fail = Arc::new(AtomicBool::new(false));
    let f = Arc::clone(&fail);
    let pool = Recycler::with_factory(move || {
        assert!(!f.load(SeqCst), "factory failed");
        Vec::<u8>::new()
    });
    assert!(pool.try_get().is_none(), "never calls the factory");
    pool.trim();
    assert_eq!(pool.stats().gets, 0);
    assert_eq!(pool.stats().hit_ratio(), 1.0);
    fail.store(true, SeqCst);
    let msg = panic_message(|| drop(pool.get()));
    assert_eq!(msg, "factory failed");
    fail.store(false, SeqCst);
    drop(pool.get());
    let s = pool.stats();
    assert_eq!((s.created, s.idle, s.in_use), (1, 1, 0), "{s}");
    assert!(pool.try_get().is_some());
    // The owned guard and `into_inner`, on a recycler from `new`.
    let pool = Arc::new(Recycler::<Vec<u8>>::new());
    assert!(pool.try_get().is_none());
    let mut owned = pool.get_owned();
    owned.push(1);
    assert_eq!(OwnedPooled::into_inner(owned), [1]);
    assert_eq!(Pooled::into_inner(pool.get()), Vec::<u8>::new());
    let s = pool.stats();
    assert_eq!((s.detached, s.idle, s.in_use), (2, 0, 0), "{s}");
    assert_eq!(Arc::strong_count(&pool), 1);
}

#[test]
fn striped_extremes() {
    for big in [1025, usize::MAX] {
        let expected = ConfigError::TooLarge {
            field: "striped",
            value: big,
            max: 1024,
        };
        let err = Recycler::<Vec<u8>>::builder()
            .striped(big)
            .build()
            .unwrap_err();
        assert_eq!(err, expected);
        assert_eq!(build_err(BufferPool::builder().striped(big)), expected);
    }
    assert_eq!(
        Recycler::<Vec<u8>>::builder()
            .reset_on_return(false)
            .striped(4)
            .build()
            .unwrap_err(),
        ConfigError::Conflict {
            field: "reset_on_return(false)",
            other: "striped"
        }
    );
    // 0 (one per CPU), 1, a count that is not a power of two, the largest,
    // and a stripe that holds nothing: each works and keeps its books.
    for n in [0, 1, 3, 1024] {
        for capacity in [0, 1, 4096] {
            let pool = Recycler::<Vec<u8>>::builder()
                .striped(n)
                .max_capacity_per_thread(capacity)
                .build()
                .unwrap();
            let held: Vec<_> = (0..100).map(|_| pool.get()).collect();
            drop(held);
            let s = pool.stats();
            assert_eq!((s.created, s.in_use), (100, 0), "{s}");
            assert_eq!(s.created, s.idle + s.dropped, "{s}");
            if capacity == 0 {
                assert!(pool.try_get().is_none(), "{s}");
            }
            pool.trim();
            assert_eq!(pool.stats().idle, 0);
        }
        let bufs = BufferPool::builder().striped(n).build().unwrap();
        drop(bufs.acquire(0));
        assert_eq!(bufs.try_acquire_pooled(1).unwrap().capacity(), 4096);
        common::assert_buffers_counted(&bufs.stats());
    }
}

#[test]
fn prefill_extremes() {
    // A recycler: 0 makes nothing; `usize::MAX` stops at the depot's
    // capacity (per-thread mode) or the stripes' (striped mode).
    let pool = Recycler::<Vec<u8>>::builder()
        .depot_capacity(8)
        .build()
        .unwrap();
    assert_eq!(pool.prefill(0), 0);
    assert_eq!(pool.prefill(usize::MAX), 8);
    assert_eq!(pool.prefill(usize::MAX), 0, "the depot is full");
    assert_eq!(pool.stats().idle, 8);
    let none = Recycler::<Vec<u8>>::builder()
        .depot_capacity(0)
        .build()
        .unwrap();
    assert_eq!(none.prefill(usize::MAX), 0);
    let striped = Recycler::<Vec<u8>>::builder()
        .striped(2)
        .max_capacity_per_thread(4)
        .build()
        .unwrap();
    assert_eq!(striped.prefill(usize::MAX), 8);
    let s = striped.stats();
    assert_eq!((s.created, s.idle, s.prefilled), (8, 8, 8), "{s}");

    // A buffer pool: sizes above `max_capacity` are never pooled (0), a
    // count of 0 makes nothing, `usize::MAX` stops at the depot, and the
    // memory limit is never crossed.
    let bufs = BufferPool::builder()
        .max_idle_per_thread(2)
        .memory_limit(64 * 1024)
        .build()
        .unwrap();
    // A size no buffer can have: the typed error (it was `Ok(0)`).
    assert_eq!(
        bufs.prefill(usize::MAX, usize::MAX),
        Err(AcquireError::TooLarge {
            requested: usize::MAX,
            max: isize::MAX as usize,
        })
    );
    assert_eq!(bufs.prefill(100_000, 1), Ok(0), "oversize: never pooled");
    assert_eq!(bufs.prefill(0, 0), Ok(0));
    assert_eq!(bufs.prefill(0, usize::MAX), Ok(8), "the depot holds 4 × 2");
    // 32 KiB are allocated: no room for one 64 KiB buffer, a typed error.
    assert_eq!(
        bufs.prefill(65536, usize::MAX),
        Err(AcquireError::LimitExceeded {
            requested: 65536,
            needed: 65536,
            allocated: 32768,
            limit: 65536
        })
    );
    assert_eq!(
        bufs.prefill(32768, usize::MAX),
        Ok(1),
        "room for one, then the limit"
    );
    let s = bufs.stats();
    assert!(s.allocated_memory <= 64 * 1024, "{s}");
    common::assert_buffers_counted(&s);
    // The whole limit in use: a typed error, nothing freed or made.
    let full = BufferPool::builder().memory_limit(4096).build().unwrap();
    let held = full.acquire(1);
    assert_eq!(
        full.prefill(0, 1),
        Err(AcquireError::LimitExceeded {
            requested: 0, // what the caller asked for
            needed: 4096,
            allocated: 4096,
            limit: 4096
        })
    );
    drop(held);
    assert_eq!(full.stats().buckets[0].non_pooled, 1);
}

/// Stripes of unbounded capacity (`usize::MAX` per thread, which `build`
/// accepts): prefill sums their room without overflowing, and stops at what
/// it was asked for, or at the memory limit.
#[test]
fn prefill_into_stripes_of_unbounded_capacity() {
    let pool = Recycler::<Vec<u8>>::builder()
        .striped(2)
        .max_capacity_per_thread(usize::MAX)
        .build()
        .unwrap();
    assert_eq!(pool.prefill(10), 10);
    let s = pool.stats();
    assert_eq!((s.created, s.idle, s.prefilled), (10, 10, 10), "{s}");
    let mut held = Vec::new();
    while let Some(v) = pool.try_get() {
        held.push(v);
    }
    assert_eq!(held.len(), 10, "every one reachable");

    let bufs = BufferPool::builder()
        .striped(2)
        .max_idle_per_thread(usize::MAX)
        .memory_limit(64 * 1024)
        .build()
        .unwrap();
    assert_eq!(bufs.prefill(4096, 3), Ok(3));
    assert_eq!(bufs.prefill(4096, usize::MAX), Ok(13), "up to the limit");
    let s = bufs.stats();
    assert_eq!(
        (s.allocated_memory, s.buckets[0].idle),
        (64 * 1024, 16),
        "{s}"
    );
    common::assert_buffers_counted(&s);
    bufs.trim();
    assert_eq!(bufs.stats().allocated_memory, 0);
}

#[test]
fn async_timeout_and_pooled_only_extremes() {
    use std::future::Future;
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};

    let pool = Arc::new(BufferPool::builder().memory_limit(4096).build().unwrap());
    let mut cx = Context::from_waker(Waker::noop());
    // Requests that can never fit fail at the first poll, without waiting.
    match pin!(pool.acquire_async(usize::MAX)).as_mut().poll(&mut cx) {
        Poll::Ready(Err(AcquireError::TooLarge { .. })) => {}
        other => panic!("{:?}", other.map(|r| r.map(|b| b.capacity()))),
    }
    match pin!(pool.acquire_owned_async(4097)).as_mut().poll(&mut cx) {
        Poll::Ready(Err(err)) => assert_eq!(
            err,
            AcquireError::LimitExceeded {
                requested: 4097,
                needed: 8192,
                allocated: 0,
                limit: 4096
            }
        ),
        other => panic!("{:?}", other.map(|r| r.map(|b| b.capacity()))),
    }
    assert!(matches!(
        pool.acquire_owned_timeout(usize::MAX, Duration::MAX),
        Err(AcquireError::TooLarge { .. })
    ));
    assert!(matches!(
        pool.acquire_owned_timeout(4097, Duration::MAX),
        Err(AcquireError::LimitExceeded { .. })
    ));
    // Pooled-only: nothing idle, or a size never pooled, is `None`; it
    // never allocates.
    assert!(pool.try_acquire_pooled(0).is_none());
    assert!(pool.try_acquire_pooled(usize::MAX).is_none());
    assert_eq!(pool.stats().allocated_memory, 0);
    // A future dropped before its first poll reserves nothing.
    drop(pool.acquire_owned_async(4096));
    assert_eq!(
        pool.acquire_owned_timeout(0, Duration::ZERO)
            .unwrap()
            .capacity(),
        4096
    );
    common::assert_buffers_counted(&pool.stats());
}

/// Settings that contradict one another are refused by `build()`, each
/// error naming the setting the user set (they were accepted silently, or
/// blamed another setting).
#[test]
fn contradicting_settings_name_the_one_set() {
    let err = BufferPool::builder().bucket_step(3000).build().unwrap_err();
    assert_eq!(
        err,
        ConfigError::NotDivisor {
            field: "bucket_step",
            value: 3000,
            of: "max_capacity",
            of_value: 65536,
        }
    );
    assert_eq!(
        err.to_string(),
        "`bucket_step` is 3000; it must divide `max_capacity` (65536)"
    );
    // Both set: the one that does not divide the other is still named.
    assert!(matches!(
        BufferPool::builder()
            .bucket_step(3000)
            .max_capacity(10_000)
            .build(),
        Err(ConfigError::NotMultiple {
            field: "max_capacity",
            ..
        })
    ));
    let err = BufferPool::builder().hard_limit(true).build().unwrap_err();
    assert_eq!(
        err,
        ConfigError::Requires {
            field: "hard_limit(true)",
            needs: "memory_limit",
        }
    );
    assert_eq!(
        err.to_string(),
        "`hard_limit(true)` needs `memory_limit`, which is not set"
    );
    assert!(BufferPool::builder().hard_limit(false).build().is_ok());
    let err = BufferPool::builder()
        .memory_limit(1 << 20)
        .max_idle_memory(2 << 20)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        ConfigError::Above {
            field: "max_idle_memory",
            value: 2 << 20,
            other: "memory_limit",
            other_value: 1 << 20,
        }
    );
    assert_eq!(
        err.to_string(),
        "`max_idle_memory` is 2097152, above `memory_limit` (1048576); it must be at most that"
    );
    assert!(
        BufferPool::builder()
            .memory_limit(1 << 20)
            .max_idle_memory(1 << 20)
            .build()
            .is_ok()
    );
    let err = Recycler::<Vec<u8>>::builder()
        .batch_size(64)
        .max_capacity_per_thread(16)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        ConfigError::Above {
            field: "batch_size",
            value: 64,
            other: "max_capacity_per_thread",
            other_value: 16,
        }
    );
    // The default batch (32) is capped at a smaller capacity, as before.
    assert!(
        Recycler::<Vec<u8>>::builder()
            .max_capacity_per_thread(16)
            .build()
            .is_ok()
    );
}

/// `?` turns an acquire's error into an `io::Error` of the kind
/// `io::Write` reports: the limit and the allocator `OutOfMemory`, a size
/// no buffer can have `InvalidInput`; the error is kept as the source.
#[test]
fn acquire_errors_are_io_errors() {
    fn acquire(pool: &BufferPool, n: usize) -> std::io::Result<usize> {
        Ok(pool.try_acquire(n)?.capacity())
    }
    let pool = BufferPool::builder().memory_limit(4096).build().unwrap();
    let err = acquire(&pool, 8192).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory);
    let inner = err.get_ref().and_then(|e| e.downcast_ref::<AcquireError>());
    assert!(matches!(
        inner,
        Some(AcquireError::LimitExceeded {
            requested: 8192,
            ..
        })
    ));
    let err = acquire(&pool, usize::MAX).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput);
    let err: std::io::Error = AcquireError::AllocFailed {
        requested: 1,
        alignment: 1,
    }
    .into();
    assert_eq!(err.kind(), std::io::ErrorKind::OutOfMemory);
    let timed_out = pool.acquire(4096);
    let err = std::io::Error::from(
        pool.acquire_timeout(4096, std::time::Duration::from_millis(1))
            .unwrap_err(),
    );
    assert_eq!(
        err.kind(),
        std::io::ErrorKind::TimedOut,
        "a wait that gave up"
    );
    assert!(err.to_string().contains("after waiting 1ms"), "{err}");
    drop(timed_out);
    assert_eq!(acquire(&pool, 1).unwrap(), 4096);
}
