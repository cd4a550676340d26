//! `FrameBuf` in a decode–handle–drop loop: 20,000 length-prefixed frames
//! of 0 to 6,000 bytes, fed in reads of 4 KiB and 16 KiB (as tokio's
//! `read_buf` fills a buffer), each frame dropped before the next read,
//! 64 KiB buffers; the second half counted, after the first warmed up. A
//! counting global allocator counts the calling thread's allocations;
//! bytes copied come from `bytes_copied`, and, for the `BytesMut` that
//! tokio-util's `FramedRead` would drive the same way, from the unread
//! bytes' moves.

#![cfg(not(feature = "track"))]

use std::sync::Arc;

use bytes::{Buf, BufMut, BytesMut};
use recycler_core::buffer::{BufferPool, FrameBuf};

mod counting;

use counting::allocs;

#[global_allocator]
static GLOBAL: counting::Counting = counting::Counting;

const FRAMES: usize = 20_000;

/// `FRAMES` length-prefixed frames (4-byte big-endian length) of 0 to
/// 6,000 bytes, from a fixed linear congruential sequence.
fn wire() -> Vec<u8> {
    let mut x: u32 = 12345;
    let mut out = Vec::new();
    for i in 0..FRAMES {
        x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let len = (x >> 8) % 6001;
        out.extend_from_slice(&len.to_be_bytes());
        out.extend((0..len).map(|j| (i as u32 + j) as u8));
    }
    out
}

/// A socket read: up to `max` bytes of `src` into what `chunk_mut` offers,
/// as tokio's `read_buf` does.
fn read_into<B: BufMut>(dst: &mut B, src: &mut &[u8], max: usize) {
    let chunk = dst.chunk_mut();
    let n = chunk.len().min(max).min(src.len());
    chunk[..n].copy_from_slice(&src[..n]);
    // SAFETY: `n` bytes of the chunk were just written.
    unsafe { dst.advance_mut(n) };
    *src = &src[n..];
}

/// The counted half of a run.
struct Run {
    frames: usize,
    reads: u64,
    allocs: u64,
    copied: u64,
    /// The read buffer's capacity at the end: what an idle connection
    /// would hold.
    held: usize,
}

/// The loop over a `FrameBuf`; the second half counted (the first warms
/// the pool up).
fn frame_buf_loop(wire: &[u8], read: usize, pooled: bool) -> Run {
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 64 * 1024);
    let mut src = wire;
    let (mut frames, mut reads, mut counted) = (0, 0, None);
    while !src.is_empty() {
        read_into(&mut rx, &mut src, read);
        reads += 1;
        loop {
            if rx.len() < 4 {
                break;
            }
            let n = u32::from_be_bytes(rx[..4].try_into().unwrap()) as usize;
            if rx.len() < 4 + n {
                rx.reserve(4 + n - rx.len());
                break;
            }
            rx.advance(4);
            if pooled {
                let frame = rx.split_to_pooled(n);
                assert_eq!(frame.first().copied(), (n > 0).then_some(frames as u8));
                drop(frame); // handled
            } else {
                let frame = rx.split_to(n);
                assert_eq!(frame.first().copied(), (n > 0).then_some(frames as u8));
                drop(frame); // handled
            }
            frames += 1;
            if frames == FRAMES / 2 {
                counted = Some((allocs(), rx.bytes_copied(), reads));
            }
        }
    }
    let (a, c, r) = counted.unwrap();
    Run {
        frames: frames - FRAMES / 2,
        reads: reads - r,
        allocs: allocs() - a,
        copied: rx.bytes_copied() - c,
        held: rx.capacity(),
    }
}

/// The same loop over a `BytesMut`, as tokio-util's `FramedRead` with a
/// `LengthDelimitedCodec` drives it (8 KiB to start with, `reserve` for
/// the rest of a partial frame); copies are the unread bytes `reserve`
/// moves or carries (measured by the pointer of the unread bytes moving).
fn bytes_mut_loop(wire: &[u8], read: usize) -> Run {
    let mut rx = BytesMut::with_capacity(8 * 1024);
    let mut src = wire;
    let (mut frames, mut reads, mut counted, mut copied) = (0, 0, None, 0u64);
    while !src.is_empty() {
        reads += 1;
        if rx.capacity() == rx.len() {
            let before = rx.as_ptr();
            rx.reserve(1);
            if rx.as_ptr() != before {
                copied += rx.len() as u64;
            }
        }
        read_into(&mut rx, &mut src, read);
        loop {
            if rx.len() < 4 {
                break;
            }
            let n = u32::from_be_bytes(rx[..4].try_into().unwrap()) as usize;
            if rx.len() < 4 + n {
                let before = rx.as_ptr();
                rx.reserve(4 + n - rx.len());
                if rx.as_ptr() != before {
                    copied += rx.len() as u64;
                }
                break;
            }
            rx.advance(4);
            let frame = rx.split_to(n).freeze();
            drop(frame);
            frames += 1;
            if frames == FRAMES / 2 {
                counted = Some((allocs(), copied, reads));
            }
        }
    }
    let (a, c, r) = counted.unwrap();
    Run {
        frames: frames - FRAMES / 2,
        reads: reads - r,
        allocs: allocs() - a,
        copied: copied - c,
        held: rx.capacity(),
    }
}

/// At most 0.05 allocations per frame with `split_to_pooled` and with
/// `split_to` (none, once warm: a reference count per frame, and the
/// buffer reused in place once its frames have dropped; `split_to`'s
/// `Bytes` are sliced from one `Bytes` the buffer is lent to, whose one
/// allocation is made once), and no more bytes copied than a `BytesMut`.
#[test]
fn decode_handle_drop_allocates_at_most_once_per_buffer() {
    let wire = wire();
    for read in [4096, 16 * 1024] {
        let pooled = frame_buf_loop(&wire, read, true);
        let bytes = frame_buf_loop(&wire, read, false);
        let baseline = bytes_mut_loop(&wire, read);
        let per_frame = pooled.allocs as f64 / pooled.frames as f64;
        let bytes_per_frame = bytes.allocs as f64 / bytes.frames as f64;
        let figures = format!(
            "reads of {read}: split_to_pooled {per_frame:.4} allocations a frame, {} bytes copied; \
             split_to {:.4} a frame, {} copied, {} reads; BytesMut {:.4}, {} copied; \
             held at the end: FrameBuf {}, BytesMut {}",
            pooled.copied,
            bytes_per_frame,
            bytes.copied,
            bytes.reads,
            baseline.allocs as f64 / baseline.frames as f64,
            baseline.copied,
            pooled.held,
            baseline.held,
        );
        println!("{figures}");
        assert!(per_frame <= 0.05, "{figures}");
        assert!(pooled.copied <= baseline.copied, "{figures}");
        assert!(bytes.copied <= baseline.copied, "{figures}");
        assert!(bytes_per_frame <= 0.05, "{figures}");
    }
}

/// The loop over a `FrameBuf` splitting with `split`, each frame held until 32
/// more have been decoded (a broker that queues frames for a while), so a
/// refill finds the buffer's frames alive and retires it: allocations a
/// frame, the second half counted.
fn held_frames_loop<F: AsRef<[u8]>>(
    wire: &[u8],
    read: usize,
    split: impl Fn(&mut FrameBuf, usize) -> F,
) -> (usize, u64) {
    const HELD: usize = 32;
    let pool = Arc::new(BufferPool::new());
    let mut rx = FrameBuf::with_capacity(&pool, 64 * 1024);
    let mut held = std::collections::VecDeque::with_capacity(HELD + 1);
    let mut src = wire;
    let (mut frames, mut counted) = (0, None);
    while !src.is_empty() {
        read_into(&mut rx, &mut src, read);
        while rx.len() >= 4 {
            let n = u32::from_be_bytes(rx[..4].try_into().unwrap()) as usize;
            if rx.len() < 4 + n {
                rx.reserve(4 + n - rx.len());
                break;
            }
            rx.advance(4);
            held.push_back(split(&mut rx, n));
            if held.len() > HELD {
                let oldest = held.pop_front().unwrap();
                let oldest = oldest.as_ref();
                let i = frames - HELD;
                assert_eq!(
                    oldest.first().copied(),
                    (!oldest.is_empty()).then_some(i as u8)
                );
            }
            frames += 1;
            if frames == FRAMES / 2 {
                counted = Some(allocs());
            }
        }
    }
    (frames - FRAMES / 2, allocs() - counted.unwrap())
}

/// With frames held across refills, `split_to` retires each buffer and a
/// later refill writes into it again once its frames have dropped, still
/// lent: at most 0.05 allocations a frame (none once warm; 0.095 when each
/// refill took a fresh buffer from the pool and wrapped it in an `Arc`,
/// and a 64 KiB buffer from the allocator per fill had the buffers been
/// given away). `split_to_pooled` pays an `Arc` for each fresh buffer a
/// refill takes (its frames share the old one's): 0.047 a frame here.
#[test]
fn held_frames_reuse_their_buffers() {
    let wire = wire();
    for read in [4096, 16 * 1024] {
        let (frames, allocs) = held_frames_loop(&wire, read, FrameBuf::split_to);
        let per_frame = allocs as f64 / frames as f64;
        let (pooled_frames, pooled_allocs) =
            held_frames_loop(&wire, read, FrameBuf::split_to_pooled);
        let pooled = pooled_allocs as f64 / pooled_frames as f64;
        let figures = format!(
            "reads of {read}, 32 frames held: split_to {per_frame:.4} allocations a frame, \
             split_to_pooled {pooled:.4}"
        );
        println!("{figures}");
        assert!(per_frame <= 0.05, "{figures}");
        assert!(pooled <= 0.05, "{figures}");
    }
}
