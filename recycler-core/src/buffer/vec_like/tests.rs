use super::*;
use crate::buffer::BufferPool;
use static_assertions::{assert_impl_all, const_assert};
use std::io::{self, Write};
use std::mem::size_of;

assert_impl_all!(PooledBuf<'static>: Send, Sync);
assert_impl_all!(OwnedPooledBuf: Send, Sync);
assert_impl_all!(
    PooledBuf<'static>: std::panic::UnwindSafe, std::panic::RefUnwindSafe
);
assert_impl_all!(OwnedPooledBuf: std::panic::UnwindSafe, std::panic::RefUnwindSafe);
assert_impl_all!(BufferPool: std::panic::UnwindSafe, std::panic::RefUnwindSafe);
// The pool, the buffer's box, its pointer, length and capacity (the
// loan), its home and its origin: seven words, moved like a `Vec` and a
// little more.
const_assert!(size_of::<PooledBuf<'static>>() <= 7 * size_of::<usize>());

#[test]
fn vec_like() {
    let pool = BufferPool::new();
    let mut b = pool.acquire(4);
    b.push(1);
    b.extend_from_slice(&[2, 3, 4]);
    b.resize(6, 9);
    assert_eq!(&b[..], [1, 2, 3, 4, 9, 9]);
    b[0] = 0;
    b.truncate(2);
    assert_eq!(&b[..], [0, 2]);
    b.write_all(b"xyz").unwrap();
    assert_eq!(&b[..], b"\0\x02xyz");
    assert_eq!(b.spare_capacity_mut().len(), 4096 - 5);
    b.clear();
    assert!(b.is_empty());
}

#[test]
fn writing_past_capacity_grows_like_a_vec() {
    let pool = BufferPool::new();
    let mut b = pool.acquire(4096);
    let data: Vec<u8> = (0..20_000u32).map(|i| i as u8).collect();
    for chunk in data.chunks(3000) {
        b.extend_from_slice(chunk);
    }
    assert_eq!(&b[..], &data[..]);
    assert_eq!(b.capacity(), 32768, "4 KiB doubled three times");
}

#[test]
fn limit_stops_growth_with_a_typed_error() {
    let pool = BufferPool::builder().memory_limit(8192).build().unwrap();
    let mut b = pool.acquire(4096);
    b.resize(4096, 1);
    assert!(b.try_reserve(4096).is_ok());
    assert_eq!(b.capacity(), 8192);
    b.resize(8192, 2);
    let err = b.try_reserve(1).unwrap_err();
    assert!(matches!(err, AcquireError::LimitExceeded { .. }), "{err}");
    assert_eq!(b.len(), 8192, "unchanged");
    assert!(b[..4096].iter().all(|&x| x == 1));
    // `io::Write` fails only with a hard limit.
    let hard = BufferPool::builder()
        .memory_limit(4096)
        .hard_limit(true)
        .build()
        .unwrap();
    let mut h = hard.acquire(4096);
    h.resize(4096, 1);
    let io_err = h.write(b"x").unwrap_err();
    assert_eq!(io_err.kind(), io::ErrorKind::OutOfMemory);
    assert_eq!(h.len(), 4096, "unchanged");
}

#[test]
fn push_past_the_limit_is_an_overdraft_never_pooled() {
    let pool = BufferPool::builder().memory_limit(4096).build().unwrap();
    let mut b = pool.acquire(4096);
    b.resize(4096, 0);
    b.push(1);
    assert_eq!(b.capacity(), 8192);
    assert_eq!(
        pool.shared().ledger().allocated(),
        4096,
        "the growth is outside"
    );
    assert_eq!(pool.shared().ledger().overdrawn(), 4096);
    drop(b);
    assert_eq!(pool.shared().ledger().allocated(), 0, "freed, not pooled");
    assert_eq!(pool.shared().ledger().overdrawn(), 0);
}

#[test]
fn overflowing_reserves_are_typed_errors_with_the_numbers() {
    for align in [1, 4096] {
        let pool = BufferPool::builder().alignment(align).build().unwrap();
        let max = isize::MAX as usize - (align - 1);
        for len in [0, 1, 4096] {
            let mut b = pool.acquire(1);
            b.resize(len, 7);
            // `len + additional` is `usize::MAX` or overflows (then
            // `requested` saturates).
            for additional in [usize::MAX, (usize::MAX - len).saturating_add(1)] {
                assert_eq!(
                    b.try_reserve(additional),
                    Err(AcquireError::TooLarge {
                        requested: usize::MAX,
                        max
                    }),
                    "align {align}, len {len}, additional {additional}"
                );
            }
            // No overflow, past the largest capacity.
            assert_eq!(
                b.try_reserve(max - len + 1),
                Err(AcquireError::TooLarge {
                    requested: max + 1,
                    max
                }),
                "align {align}, len {len}"
            );
            assert_eq!((b.len(), b.capacity()), (len, 4096), "unchanged");
            assert!(b.iter().all(|&x| x == 7));
        }
    }
}

#[test]
#[should_panic(expected = "set_len(4097) beyond the capacity (4096)")]
fn set_len_checks_the_capacity() {
    let pool = BufferPool::new();
    let mut b = pool.acquire(1);
    // SAFETY: not reached: `set_len` panics first.
    unsafe { b.set_len(4097) };
}
