//! `FrameBuf`, the pooled read buffer for codecs (feature `bytes`): frames
//! decoded across partial reads, `split_to` parts that outlive the reader
//! (with the buffer lent to them, which leaves the pool with them; under a
//! memory limit, shared per read, the memory returning to the pool only
//! when the last part drops), no copy on the fast path, the copy and
//! compaction costs, bytes' panics, and the books balanced.

#![cfg(not(loom))] // tokio is no dependency under loom

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::thread;

use bytes::{Buf, BufMut, Bytes};
use recycler_core::buffer::{BufferPool, FrameBuf};

/// `payload` with a 4-byte big-endian length before it.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

/// Splits every whole length-prefixed frame off `rx`.
fn decode_all(rx: &mut FrameBuf, out: &mut Vec<Bytes>) {
    while rx.len() >= 4 {
        let n = u32::from_be_bytes(rx[..4].try_into().unwrap()) as usize;
        if rx.len() < 4 + n {
            return;
        }
        rx.advance(4);
        out.push(rx.split_to(n));
    }
}

/// Payloads of many lengths, 0 included.
fn payloads() -> Vec<Vec<u8>> {
    (0..200u32)
        .map(|i| (0..(i * 37) % 700).map(|j| (i + j) as u8).collect())
        .collect()
}

fn in_use(pool: &BufferPool) -> u64 {
    pool.stats().total().in_use
}

/// A default pool, whose buffers `split_to` lends to its frames (`true`),
/// and one under a memory limit, where it shares them per read and the
/// frames keep them in the pool (`false`).
fn pools() -> [(Arc<BufferPool>, bool); 2] {
    let limited = BufferPool::builder().memory_limit(1 << 30).build().unwrap();
    [
        (Arc::new(BufferPool::new()), true),
        (Arc::new(limited), false),
    ]
}

#[test]
fn frames_decode_across_partial_reads() {
    let pool = Arc::new(BufferPool::new());
    let payloads = payloads();
    let wire: Vec<u8> = payloads.iter().flat_map(|p| frame(p)).collect();
    for chunk in [1, 3, 7, 64, 1000, 5000] {
        let mut rx = FrameBuf::with_capacity(&pool, 512);
        let mut out = Vec::new();
        for part in wire.chunks(chunk) {
            rx.put_slice(part); // a socket read of `chunk` bytes
            decode_all(&mut rx, &mut out);
        }
        assert!(rx.is_empty(), "chunk {chunk}: {rx:?}");
        assert_eq!(out.len(), payloads.len(), "chunk {chunk}");
        for (got, want) in out.iter().zip(&payloads) {
            assert_eq!(&got[..], &want[..], "chunk {chunk}");
        }
        // At most the partial frame left when a read ends is copied.
        let longest = payloads.iter().map(|p| p.len() + 4).max().unwrap();
        let reads = wire.len().div_ceil(chunk);
        assert!(
            rx.bytes_copied() <= (reads * longest.min(chunk)) as u64,
            "chunk {chunk}: {}",
            rx.bytes_copied()
        );
        drop((rx, out));
        assert_eq!(in_use(&pool), 0, "chunk {chunk}");
    }
    common::assert_buffers_counted(&pool.stats());
}

#[test]
fn tokio_read_buf_fills_it_in_partial_reads() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pool = Arc::new(BufferPool::new());
    let payloads = payloads();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let out = rt.block_on(async {
        let (mut tx, mut rd) = tokio::io::duplex(61); // reads of 61 bytes at most
        let sent = payloads.clone();
        let writer = tokio::spawn(async move {
            for p in &sent {
                tx.write_all(&frame(p)).await.unwrap();
            }
        });
        let mut rx = FrameBuf::with_capacity(&pool, 256);
        let mut out = Vec::new();
        while rd.read_buf(&mut rx).await.unwrap() > 0 {
            decode_all(&mut rx, &mut out);
        }
        writer.await.unwrap();
        assert!(rx.is_empty());
        out
    });
    assert_eq!(out.len(), payloads.len());
    for (got, want) in out.iter().zip(&payloads) {
        assert_eq!(&got[..], &want[..]);
    }
    drop(out);
    assert_eq!(in_use(&pool), 0);
    common::assert_buffers_counted(&pool.stats());
}

#[test]
fn one_frame_per_read_is_zero_copy() {
    for (pool, lends) in pools() {
        one_frame_per_read_is_zero_copy_in(&pool, lends);
    }
}

fn one_frame_per_read_is_zero_copy_in(pool: &Arc<BufferPool>, lends: bool) {
    let mut rx = FrameBuf::with_capacity(pool, 100);
    let mut frames = Vec::new();
    let base = rx.as_ptr();
    for i in 0..10u8 {
        rx.put_slice(&frame(&[i; 50]));
        let first = rx.as_ptr();
        rx.advance(4);
        let f = rx.split_to(50);
        assert_eq!(f.as_ptr(), first.wrapping_add(4), "no copy");
        assert_eq!(&f[..], [i; 50]);
        frames.push(f);
    }
    assert_eq!(rx.bytes_copied(), 0);
    // The frames share one buffer, one after the other: the reader went
    // on writing after each.
    for (i, f) in frames.iter().enumerate() {
        assert_eq!(f.as_ptr(), base.wrapping_add(54 * i + 4));
    }
    assert_eq!((in_use(pool), rx.capacity()), (1, 4096));
    drop(rx);
    if lends {
        let s = pool.stats();
        assert_eq!((s.total().in_use, s.buckets[0].removes), (0, 1), "theirs");
        assert_eq!(frames[9][..], [9; 50]);
        drop(frames);
    } else {
        assert_eq!(in_use(pool), 1, "the frames hold it");
        drop(frames);
        let s = pool.stats();
        assert_eq!((s.total().in_use, s.buckets[0].idle), (0, 1));
        assert_eq!(pool.acquire(100).as_ptr(), base, "back in the pool");
    }
    common::assert_buffers_counted(&pool.stats());
}

#[test]
fn parts_outlive_the_reader_and_the_last_returns_the_memory() {
    for (pool, lends) in pools() {
        parts_outlive_the_reader_in(&pool, lends);
    }
}

fn parts_outlive_the_reader_in(pool: &Arc<BufferPool>, lends: bool) {
    let mut rx = FrameBuf::with_capacity(pool, 100);
    rx.put_slice(b"headerbody!");
    let first = rx.as_ptr();
    let head = rx.split_to(6); // the buffer freezes: shared, no copy
    assert_eq!((&head[..], head.as_ptr()), (&b"header"[..], first));
    assert_eq!(rx.as_ptr(), first.wrapping_add(6), "the unread bytes stay");
    let clone = head.slice(1..3);
    let body = rx.split(); // all the unread bytes: no copy either
    assert_eq!(
        (&body[..], body.as_ptr()),
        (&b"body!"[..], first.wrapping_add(6))
    );
    assert_eq!(rx.bytes_copied(), 0);
    drop(rx);
    // Lent, the buffer is the parts' now, out of the pool; else they hold
    // it in the pool.
    let held = u64::from(!lends);
    assert_eq!(in_use(pool), held, "the frames share one buffer");
    drop(head);
    assert_eq!(in_use(pool), held, "parts still hold it");
    assert_eq!(&clone[..], b"ea");
    // The last parts move to another thread and drop there.
    thread::spawn(move || drop(clone)).join().unwrap();
    assert_eq!(in_use(pool), held, "`body` still holds it");
    assert_eq!(&body[..], b"body!");
    drop(body);
    let s = pool.stats();
    assert_eq!((s.total().in_use, s.total().idle), (0, held), "{s}");
    assert_eq!(s.total().removes, 1 - held, "{s}");
    common::assert_buffers_counted(&s);
}

#[test]
fn a_partial_frame_stays_until_the_buffer_is_full() {
    for (pool, lends) in pools() {
        a_partial_frame_stays_in(&pool, lends);
    }
}

fn a_partial_frame_stays_in(pool: &Arc<BufferPool>, lends: bool) {
    let mut rx = FrameBuf::with_capacity(pool, 4096);
    rx.put_slice(b"ab");
    rx.put_bytes(b'x', 1000);
    let first = rx.as_ptr();
    let small = rx.split_to(2);
    assert_eq!((&small[..], small.as_ptr()), (&b"ab"[..], first));
    let mid = rx.split_to(500); // from the shared bytes: no copy
    assert_eq!(mid.as_ptr(), first.wrapping_add(2));
    assert_eq!((rx.len(), rx.capacity(), rx.bytes_copied()), (500, 4096, 0));
    rx.put_u8(b'y'); // written after the shared bytes: no copy
    assert_eq!((rx.len(), rx.bytes_copied()), (501, 0));
    assert_eq!(in_use(pool), 1, "one buffer, shared");
    let end = rx.split_to(501); // lent: a slice; else a share of the bytes written since
    assert_eq!(end.as_ptr(), first.wrapping_add(502));
    assert_eq!(&end[498..], b"xxy");
    rx.put_bytes(b'z', 3000); // fills the buffer but for 93 bytes
    rx.advance(2900);
    rx.put_bytes(b'w', 200); // full: the 100 unread move to a fresh buffer
    assert_eq!(
        (rx.len(), rx.capacity(), rx.bytes_copied()),
        (300, 4096, 100)
    );
    assert_eq!(&rx[99..101], b"zw");
    assert_eq!(
        in_use(pool),
        2,
        "the first buffer retired, or held by its frames"
    );
    drop((small, end));
    assert_eq!(in_use(pool), 2, "`mid` holds the first buffer");
    assert!(mid.iter().all(|&b| b == b'x'));
    drop(mid);
    // Lent, the first buffer stays retired until the reader's next refill
    // or its drop reclaims it; else it returned as `mid` dropped.
    assert_eq!(in_use(pool), 1 + u64::from(lends), "the reader's");
    drop(rx);
    let s = pool.stats();
    assert_eq!(
        (s.total().in_use, s.total().idle, s.total().removes),
        (0, 2, 0)
    );
    common::assert_buffers_counted(&s);
}

#[test]
fn into_inner_after_a_split() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 10);
    rx.put_slice(b"abcdef");
    let f = rx.split_to(2);
    rx.advance(1);
    let buf = rx.into_inner(); // "def", copied into a fresh buffer
    assert_eq!((&buf[..], &f[..]), (&b"def"[..], &b"ab"[..]));
    drop((buf, f));
    assert_eq!(in_use(&pool), 0);
    common::assert_buffers_counted(&pool.stats());
}

#[test]
fn compaction_only_when_room_is_needed() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    rx.put_bytes(1, 4000);
    rx.advance(3000);
    rx.put_bytes(2, 96); // fits after the unread bytes: no move
    assert_eq!((rx.bytes_copied(), rx.len()), (0, 1096));
    let unread = rx.as_ptr();
    rx.put_u8(3); // full: the 1096 unread bytes move to the front
    assert_eq!(
        (rx.bytes_copied(), rx.capacity(), rx.len()),
        (1096, 4096, 1097)
    );
    assert_ne!(rx.as_ptr(), unread);
    assert_eq!(&rx[..1000], [1; 1000]);
    assert_eq!(&rx[1000..], [[2; 96].as_slice(), &[3]].concat());
    rx.advance(1097); // all read: starts over, no copy
    rx.put_bytes(4, 4096);
    assert_eq!((rx.bytes_copied(), rx.capacity()), (1096, 4096));
    rx.put_u8(5); // nothing read before the unread bytes: it grows
    assert_eq!(rx.capacity(), 8192);
    let buf = rx.into_inner();
    assert_eq!(buf.len(), 4097);
    drop(buf);
    common::assert_buffers_counted(&pool.stats());
}

/// `f` panics with a message containing `expected`.
fn panics_with(expected: &str, f: impl FnOnce()) {
    let err = catch_unwind(AssertUnwindSafe(f)).unwrap_err();
    let msg = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or_default();
    assert!(msg.contains(expected), "panicked with {msg:?}");
}

#[test]
fn out_of_bounds_as_bytes_mut() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 10);
    rx.put_slice(b"abc");
    rx.advance(1);
    // `try_split_to` says no and changes nothing.
    assert!(rx.try_split_to(3).is_none());
    assert_eq!((&rx[..], rx.bytes_copied()), (&b"bc"[..], 0));
    assert_eq!(rx.try_split_to(0).as_deref(), Some(&[][..]));
    // `split_to` and `advance` panic as `BytesMut`'s do.
    let mut bm = bytes::BytesMut::from(&b"bc"[..]);
    panics_with("split_to out of bounds", || drop(bm.split_to(3)));
    panics_with("split_to out of bounds: 3 <= 2", || drop(rx.split_to(3)));
    panics_with("cannot advance past `remaining`: 3 <= 2", || rx.advance(3));
    panics_with("split_to out of bounds", || drop(rx.copy_to_bytes(3)));
    assert_eq!(&rx[..], b"bc", "unchanged");
    assert_eq!(&rx.copy_to_bytes(2)[..], b"bc");
    drop(rx);
    assert_eq!(in_use(&pool), 0);
    common::assert_buffers_counted(&pool.stats());
}

#[test]
fn books_balance_under_many_frames_and_threads() {
    let pool = Arc::new(
        BufferPool::builder()
            .max_idle_memory(64 * 1024)
            .build()
            .unwrap(),
    );
    let payloads = payloads();
    let wire: Vec<u8> = payloads.iter().flat_map(|p| frame(p)).collect();
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let pool = Arc::clone(&pool);
            let wire = wire.clone();
            thread::spawn(move || {
                let mut rx = FrameBuf::with_capacity(&pool, 1024);
                let mut out = Vec::new();
                for part in wire.chunks(100 + t * 77) {
                    rx.put_slice(part);
                    decode_all(&mut rx, &mut out);
                }
                out // the frames outlive the reader and its thread
            })
        })
        .collect();
    let all: Vec<Vec<Bytes>> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for out in &all {
        assert_eq!(out.len(), payloads.len());
        for (got, want) in out.iter().zip(&payloads) {
            assert_eq!(&got[..], &want[..]);
        }
    }
    drop(all);
    let s = pool.stats();
    assert_eq!(s.total().in_use, 0, "{s}");
    common::assert_buffers_counted(&s);
}

/// The example of `docs/buffers.md`, "Reading frames", with `Bytes`.
#[test]
fn the_guide_example() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    rx.put_slice(b"\x00\x00\x00\x05hello\x00\x00\x00\x03by"); // a frame and a half
    let mut frames: Vec<Bytes> = Vec::new();
    decode_all(&mut rx, &mut frames);
    rx.put_slice(b"e"); // the next read: written after the partial frame
    assert_eq!(rx.bytes_copied(), 0);
    assert_eq!(&frames[0][..], b"hello");
    decode_all(&mut rx, &mut frames);
    assert_eq!(&frames[1][..], b"bye");
    drop(rx); // the frames keep the buffer lent to them, out of the pool
    let b = pool.stats().buckets[0];
    assert_eq!((b.in_use, b.removes), (0, 1), "the frames share the buffer");
    assert_eq!(&frames[0][..], b"hello");
    drop(frames);
    common::assert_buffers_counted(&pool.stats());
}

/// A refill that panics (a size no buffer can have) leaves the unread
/// bytes where they were, as `reserve` documents: the fresh buffer is
/// acquired before anything moves. (Before the fix, the unread bytes were
/// taken out first, and the panic left the reader empty.)
#[test]
fn a_refill_that_panics_leaves_the_unread_bytes() {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    rx.put_slice(b"frame+partial");
    let frame = rx.split_to(6); // shares the buffer
    for additional in [usize::MAX, isize::MAX as usize] {
        panics_with("cannot exist", || rx.reserve(additional));
        assert_eq!(&rx[..], b"partial", "reserve({additional})");
    }
    panics_with("BufferPool::acquire", || {
        rx.put_bytes(0, isize::MAX as usize - 7)
    });
    assert_eq!(&rx[..], b"partial");
    panics_with("past the remaining capacity", || {
        rx.put_bytes(0, usize::MAX)
    });
    assert_eq!(&rx[..], b"partial");
    rx.put_slice(b"!");
    assert_eq!((&frame[..], &rx[..]), (&b"frame+"[..], &b"partial!"[..]));
    drop((frame, rx));
    assert_eq!(in_use(&pool), 0);
    common::assert_buffers_counted(&pool.stats());
}

/// `frames` length-prefixed frames of 0 to 6,000 bytes, frame `i` all
/// bytes `i`.
fn length_prefixed_wire(frames: usize) -> Vec<u8> {
    (0..frames)
        .flat_map(|i| frame(&vec![i as u8; (i * 997) % 6000]))
        .collect()
}

/// Under a memory limit, frames held for a while: `reserve` can only
/// overdraw when frames hold every buffer the limit allows; `try_reserve`
/// says so instead, and the reader, having dropped its oldest frames,
/// goes on without a single overdraft.
#[test]
fn under_a_limit_try_reserve_fails_where_reserve_overdraws() {
    use std::collections::VecDeque;
    let wire = length_prefixed_wire(2000);
    let run = |hard: bool| {
        let pool = Arc::new(
            BufferPool::builder()
                .memory_limit(64 * 1024)
                .build()
                .unwrap(),
        );
        let mut rx = FrameBuf::with_capacity(&pool, 16 * 1024);
        let mut held = VecDeque::new();
        let (mut frames, mut refused) = (0, 0);
        for read in wire.chunks(4096) {
            if hard {
                while let Err(err) = rx.try_reserve(read.len()) {
                    assert!(
                        matches!(err, recycler_core::AcquireError::LimitExceeded { .. }),
                        "{err}"
                    );
                    refused += 1;
                    held.pop_front().expect("frames hold the memory");
                }
            }
            rx.put_slice(read);
            while rx.len() >= 4 {
                let n = u32::from_be_bytes(rx[..4].try_into().unwrap()) as usize;
                if rx.len() < 4 + n {
                    break;
                }
                rx.advance(4);
                held.push_back(rx.split_to_pooled(n));
                frames += 1;
                if held.len() > 24 {
                    held.pop_front(); // handled, a while later
                }
            }
        }
        assert_eq!(frames, 2000);
        drop((held, rx));
        let s = pool.stats();
        assert_eq!(s.total().in_use, 0, "{s}");
        common::assert_buffers_counted(&s);
        (s.overdrafts, refused)
    };
    let (overdrafts, _) = run(false);
    assert!(overdrafts > 0, "the plain loop overdraws: {overdrafts}");
    let (overdrafts, refused) = run(true);
    assert_eq!(overdrafts, 0);
    assert!(refused > 0, "the limit was met");
}

/// `reserve_async` waits at the limit until the frames a consumer task
/// holds drop: no overdraft, the same frames.
#[test]
fn reserve_async_waits_for_the_frames_to_drop() {
    let wire = length_prefixed_wire(500);
    let pool = Arc::new(
        BufferPool::builder()
            .memory_limit(32 * 1024)
            .build()
            .unwrap(),
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let got = rt.block_on(async {
        let (tx, mut frames) = tokio::sync::mpsc::unbounded_channel();
        let consumer = tokio::spawn(async move {
            let mut sum = 0usize;
            while let Some(frame) = frames.recv().await {
                let frame: recycler_core::buffer::PooledBytes = frame;
                sum += frame.len();
                tokio::task::yield_now().await; // holds it a while
            }
            sum
        });
        let mut rx = FrameBuf::with_capacity(&pool, 16 * 1024);
        for read in wire.chunks(4096) {
            rx.reserve_async(read.len()).await.unwrap();
            rx.put_slice(read);
            while rx.len() >= 4 {
                let n = u32::from_be_bytes(rx[..4].try_into().unwrap()) as usize;
                if rx.len() < 4 + n {
                    break;
                }
                rx.advance(4);
                tx.send(rx.split_to_pooled(n)).unwrap();
            }
            tokio::task::yield_now().await;
        }
        drop((tx, rx));
        consumer.await.unwrap()
    });
    let want: usize = (0..500).map(|i| (i * 997) % 6000).sum();
    assert_eq!(got, want);
    let s = pool.stats();
    assert_eq!((s.overdrafts, s.total().in_use), (0, 0), "{s}");
    common::assert_buffers_counted(&s);
}

/// `split_to` frames of a lent buffer handed to another thread, which
/// checks each and drops it, while the reader goes on filling: the reader
/// reuses the buffer in place only once the other thread has dropped every
/// frame of it (else it refills into a fresh one), so no frame ever sees
/// its bytes change, and the books balance at the end.
#[test]
fn lent_frames_dropped_on_another_thread_never_change() {
    let pool = Arc::new(BufferPool::new());
    let (tx, rx_frames) = std::sync::mpsc::sync_channel::<(u32, Bytes)>(64);
    let checker = thread::spawn(move || {
        let mut n = 0u32;
        for (i, frame) in rx_frames {
            let fill = i as u8;
            assert!(frame.iter().all(|&b| b == fill), "frame {i} changed");
            n += 1;
        }
        n
    });
    let mut rx = FrameBuf::with_capacity(&pool, 4096);
    for i in 0..20_000u32 {
        let len = 1 + (i as usize * 131) % 700;
        rx.put_bytes(i as u8, len); // a refill or a move to the front when full
        let frame = rx.split_to(len);
        tx.send((i, frame)).unwrap();
        if i % 7 == 0 {
            rx.clear(); // starts over in place if no frame is alive
        }
    }
    drop(tx);
    assert_eq!(checker.join().unwrap(), 20_000);
    drop(rx);
    let s = pool.stats();
    assert_eq!(s.total().in_use, 0, "{s}");
    common::assert_buffers_counted(&s);
}
