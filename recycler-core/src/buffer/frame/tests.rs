//! Unit tests of the reader's states: its own buffer, shared, none.

use ::bytes::{Buf, BufMut};

use super::FrameBuf;
use crate::buffer::BufferPool;
use crate::loom::Arc;

#[test]
fn shares_and_writes_after_the_frames() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    rx.put_slice(b"onetwo");
    let base = rx.as_ptr();
    let one = rx.split_to(3);
    assert_eq!((&one[..], one.as_ptr()), (&b"one"[..], base));
    rx.put_slice(b"three"); // after the shared bytes, same buffer
    let two = rx.split_to(3);
    let three = rx.split_to(5);
    assert_eq!(three.as_ptr(), base.wrapping_add(6), "no copy");
    assert_eq!((&two[..], &three[..]), (&b"two"[..], &b"three"[..]));
    assert_eq!((rx.bytes_copied(), rx.capacity()), (0, 4096));
    assert_eq!(pool.stats().buckets[0].in_use, 1, "one buffer");
    drop((one, two, three, rx));
    assert_eq!(pool.stats().buckets[0].in_use, 0);
}

#[test]
fn advance_to_the_end_starts_over_only_if_not_shared() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 10);
    rx.put_slice(b"abc");
    rx.advance(3);
    rx.put_u8(b'd');
    assert_eq!((rx.pos, rx.len), (0, 1), "started over");
    let d = rx.split_to(1);
    rx.put_u8(b'e');
    assert_eq!((rx.pos, rx.len), (1, 2), "after the frame");
    rx.advance(1);
    assert_eq!((rx.pos, rx.len), (2, 2), "a frame is alive: no start over");
    assert_eq!(&d[..], b"d");
    drop(d);
    rx.put_u8(b'f');
    rx.advance(1);
    assert_eq!((rx.pos, rx.len), (0, 0), "no frame alive: started over");
}

#[test]
fn release_if_empty_then_write() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 10);
    rx.put_slice(b"ab");
    let a = rx.split_to(1);
    assert!(!rx.release_if_empty());
    rx.advance(1);
    assert!(rx.release_if_empty());
    assert_eq!(pool.stats().buckets[0].in_use, 1, "`a` holds it");
    drop(a);
    assert_eq!(pool.stats().buckets[0].in_use, 0);
    assert_eq!(&rx[..], b"");
    assert!(rx.try_split_to(1).is_none());
    rx.put_slice(b"xyz");
    assert_eq!(&rx.split_to(3)[..], b"xyz");
}

#[test]
fn reserve_async_is_send() {
    fn send<T: Send>(_: &T) {}
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 10);
    send(&rx.reserve_async(10));
}
