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
    let pool = Arc::new(BufferPool::builder().memory_limit(1 << 20).build().unwrap());
    let mut rx = FrameBuf::with_capacity(&pool, 10);
    rx.put_slice(b"ab");
    let a = rx.split_to(1);
    assert!(!rx.lent, "under a limit, shared per read");
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

/// Fills `rx` with `n` bytes of `b`.
fn fill(rx: &mut FrameBuf, b: u8, n: usize) {
    rx.put_bytes(b, n);
}

#[test]
fn a_lent_buffer_is_reused_in_place_once_its_frames_drop() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    let base = rx.as_ptr();
    for round in 0..3u8 {
        fill(&mut rx, round, 4000);
        let frames: Vec<_> = (0..40).map(|_| rx.split_to(100)).collect();
        assert!(rx.lent, "the first split lends the buffer");
        assert!(frames.iter().all(|f| f[..] == [round; 100][..]));
        drop(frames);
        assert!(rx.is_empty());
        rx.clear(); // no frame alive: starts over from the first byte
        assert_eq!(rx.as_ptr(), base, "started over in place, round {round}");
    }
    fill(&mut rx, 9, 4090);
    rx.advance(4000);
    rx.reserve(100); // no frame alive: the 90 unread bytes move to the front
    assert_eq!((rx.as_ptr(), rx.len(), rx.bytes_copied()), (base, 90, 90));
    assert!(rx.lent, "still lent: nothing to make again");
    let b = pool.stats().buckets[0];
    assert_eq!(
        (b.acquires, b.removes, b.in_use),
        (1, 0, 1),
        "one buffer, kept"
    );
    drop(rx);
    let b = pool.stats().buckets[0];
    assert_eq!(
        (b.in_use, b.idle, b.removes),
        (0, 1, 0),
        "reclaimed, pooled"
    );
    let again = FrameBuf::with_capacity(&pool, 4096);
    assert_eq!(again.as_ptr(), base, "the same allocation, pooled again");
}

#[test]
fn a_lent_buffer_whose_frames_outlive_the_reader_leaves_the_pool() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    fill(&mut rx, 1, 4096);
    let head = rx.split_to(4000);
    rx.reserve(200); // `head` is alive: the 96 unread bytes move to a fresh buffer
    assert!(!rx.lent, "a fresh buffer, not split yet");
    assert_eq!((rx.len(), rx.bytes_copied()), (96, 96));
    let b = pool.stats().buckets[0];
    assert_eq!(
        (b.acquires, b.removes, b.in_use),
        (2, 0, 2),
        "the old one retired"
    );
    fill(&mut rx, 2, 4000);
    let tail = rx.split_to(4096);
    assert_eq!(&tail[..96], &[1; 96][..]);
    assert_eq!(&tail[96..], &[2; 4000][..]);
    drop(rx); // `head` and `tail` keep their buffers: both leave the pool
    assert!(
        head.iter().all(|&b| b == 1),
        "the first allocation is `head`'s"
    );
    let b = pool.stats().buckets[0];
    assert_eq!((b.in_use, b.idle, b.removes), (0, 0, 2));
    assert_eq!(pool.stats().allocated_memory, 0);
    drop((head, tail));
}

#[test]
fn release_if_empty_gives_a_lent_buffer_to_its_frames() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 10);
    rx.put_slice(b"ab");
    let a = rx.split_to(2);
    assert!(rx.release_if_empty());
    assert_eq!(rx.capacity(), 0);
    let b = pool.stats().buckets[0];
    assert_eq!((b.in_use, b.removes), (0, 1));
    assert_eq!(&a[..], b"ab");
    rx.put_slice(b"c"); // a fresh buffer
    assert_eq!(&rx.split_to(1)[..], b"c");
    drop(rx);
    assert_eq!(pool.stats().buckets[0].idle, 1, "the second, reclaimed");
    drop(a);
}

#[test]
fn split_to_pooled_after_split_to() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    rx.put_slice(b"onetwothree");
    let one = rx.split_to(3);
    assert!(rx.lent);
    // `one` is alive: the unread bytes move to a fresh buffer.
    let two = rx.split_to_pooled(3);
    assert!(!rx.lent);
    assert_eq!(
        (&one[..], &two[..], &rx[..]),
        (&b"one"[..], &b"two"[..], &b"three"[..])
    );
    assert_eq!(rx.bytes_copied(), 8);
    drop((one, two));
    // No frame alive: reclaimed in place, no copy.
    let three = rx.split_to(5);
    assert!(rx.lent);
    drop(three);
    rx.put_slice(b"four");
    let base = rx.as_ptr();
    let four = rx.split_to_pooled(4);
    assert!(!rx.lent);
    assert_eq!(
        (&four[..], four.as_ptr(), rx.bytes_copied()),
        (&b"four"[..], base, 8)
    );
}

#[test]
fn into_inner_and_growth_reclaim_a_lent_buffer() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    rx.put_slice(b"abcdef");
    drop(rx.split_to(2));
    assert!(rx.lent);
    rx.reserve(8000); // no frame alive: reclaimed, then grown
    assert!(!rx.lent);
    assert_eq!((&rx[..], rx.capacity() >= 8004), (&b"cdef"[..], true));
    drop(rx.split_to(1));
    assert!(rx.lent, "lent again");
    let buf = rx.into_inner();
    assert_eq!(&buf[..], b"def");
    drop(buf);
    assert_eq!(pool.stats().allocated_memory, pool.stats().idle_memory);
}

#[test]
fn aligned_buffers_are_shared_per_read() {
    let pool = Arc::new(BufferPool::builder().alignment(64).build().unwrap());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    rx.put_slice(b"ab");
    let a = rx.split_to(1);
    assert!(!rx.lent);
    drop(rx);
    assert_eq!(
        pool.stats().buckets[0].in_use,
        1,
        "`a` holds it, in the books"
    );
    drop(a);
    assert_eq!(pool.stats().buckets[0].idle, 1);
}

#[test]
fn a_retired_buffer_is_reused_once_its_frames_drop() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    let first = rx.as_ptr();
    fill(&mut rx, 1, 4096);
    let head = rx.split_to(4000);
    rx.reserve(200); // `head` is alive: the first buffer retires
    let second = rx.as_ptr();
    fill(&mut rx, 2, 4000);
    let tail = rx.split_to(4096);
    drop(head); // the first buffer's frames are gone; the second's are not
    assert_eq!(
        pool.stats().buckets[0].in_use,
        2,
        "retired: still in the books"
    );
    rx.reserve(1); // full: the second retires; the first, its frames gone, is reused
    assert_eq!(rx.capacity(), 4096);
    rx.put_u8(3);
    assert_eq!(rx.as_ptr(), first, "the same allocation, still lent");
    let b = pool.stats().buckets[0];
    assert_eq!(
        (b.acquires, b.removes, b.in_use),
        (2, 0, 2),
        "no trip through the pool"
    );
    assert_eq!(pool.stats().allocated_memory, 8192, "no third buffer made");
    drop(tail);
    drop(rx); // the second, its frames gone: reclaimed into the pool
    let s = pool.stats();
    assert_eq!(
        (s.buckets[0].in_use, s.buckets[0].idle, s.buckets[0].removes),
        (0, 2, 0)
    );
    assert_ne!(second, first);
}

#[test]
fn past_four_retired_buffers_the_oldest_is_given_away() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    let mut held = Vec::new();
    for round in 0..6u8 {
        let room = rx.capacity() - rx.len();
        fill(&mut rx, round, room);
        held.push(rx.split_to(rx.len() - 10)); // keeps its buffer lent
        rx.reserve(100); // full: a refill, the buffer retired
    }
    let b = pool.stats().buckets[0];
    // Six buffers left behind: four retired, in the books; two given away.
    assert_eq!((b.acquires, b.removes, b.in_use), (7, 2, 5));
    for (round, frame) in held.iter().enumerate() {
        assert_eq!(frame[frame.len() - 1], round as u8);
    }
    drop(held);
    drop(rx);
    let s = pool.stats();
    assert_eq!((s.buckets[0].in_use, s.buckets[0].idle), (0, 5));
}
