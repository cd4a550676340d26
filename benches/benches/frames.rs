//! Decoding length-prefixed frames (a 4-byte big-endian length, tokio-util's
//! `LengthDelimitedCodec` default format) of 100 and 6,000 bytes from an
//! in-memory stream fed in reads of 16 KiB, each frame handled (its length
//! read) and dropped before the next: `FrameBuf` with the crate's
//! `LengthDelimited` decoder (`PooledBytes` frames), `FrameBuf` with
//! `split_to` (`Bytes` frames), `codec::FramedRead` over an `io::Read`, and
//! tokio-util's `LengthDelimitedCodec` over a `BytesMut` driven as its
//! `FramedRead` drives it (`reserve(1)`, then a read into `chunk_mut`),
//! under the global allocator `RECYCLER_BENCHES_ALLOC` names. Throughput
//! in bytes of the stream. Target: each `FrameBuf` row at least the
//! `BytesMut` row's throughput.
//!
//! ```text
//! for a in system jemalloc mimalloc; do
//!     RECYCLER_BENCHES_ALLOC=$a cargo bench -p recycler-benches --bench frames
//! done
//! ```

use std::hint::black_box;
use std::io::{self, Read};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BufMut, BytesMut};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use recycler_benches::{Dispatch, bench_group};
use recycler_core::buffer::{BufferPool, FrameBuf};
use recycler_core::codec::{Decoder as _, FramedRead, LengthDelimited};
use tokio_util::codec::{Decoder as _, LengthDelimitedCodec};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

/// The reads' size.
const READ: usize = 16 * 1024;
/// The stream: about 4 MiB of frames.
const STREAM: usize = 4 << 20;

/// Frames of `size` bytes, length-prefixed, about `STREAM` bytes in all.
fn wire(size: usize) -> Vec<u8> {
    let frames = STREAM / (size + 4);
    let mut out = Vec::with_capacity(frames * (size + 4));
    for i in 0..frames {
        out.extend_from_slice(&(size as u32).to_be_bytes());
        out.extend((0..size).map(|j| (i + j) as u8));
    }
    out
}

/// A socket read: up to `READ` bytes of `src` into what `chunk_mut` offers.
fn read_into<B: BufMut>(dst: &mut B, src: &mut &[u8]) -> usize {
    let chunk = dst.chunk_mut();
    let n = chunk.len().min(READ).min(src.len());
    chunk[..n].copy_from_slice(&src[..n]);
    // SAFETY: `n` bytes of the chunk were just written.
    unsafe { dst.advance_mut(n) };
    *src = &src[n..];
    n
}

/// `iters` passes over `wire` with `pass`, timed.
fn timed(iters: u64, wire: &[u8], mut pass: impl FnMut(&[u8]) -> usize) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(pass(black_box(wire)));
    }
    start.elapsed()
}

/// `FrameBuf` and `LengthDelimited`: `PooledBytes` frames.
fn frame_buf_pooled(rx: &mut FrameBuf, mut src: &[u8]) -> usize {
    let mut codec = LengthDelimited::new();
    let mut handled = 0;
    while !src.is_empty() {
        read_into(rx, &mut src);
        while let Some(frame) = codec.decode(rx).unwrap() {
            handled += black_box(frame.len());
        }
    }
    handled
}

/// `FrameBuf` and `split_to`: `Bytes` frames.
fn frame_buf_bytes(rx: &mut FrameBuf, mut src: &[u8]) -> usize {
    let mut handled = 0;
    while !src.is_empty() {
        read_into(rx, &mut src);
        while rx.len() >= 4 {
            let n = u32::from_be_bytes([rx[0], rx[1], rx[2], rx[3]]) as usize;
            if rx.len() < 4 + n {
                rx.reserve(4 + n - rx.len());
                break;
            }
            rx.advance(4);
            handled += black_box(rx.split_to(n).len());
        }
    }
    handled
}

/// An in-memory stream, `READ` bytes a read at most.
struct Stream<'a>(&'a [u8]);

impl Read for Stream<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(READ).min(self.0.len());
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

/// `codec::FramedRead` over an `io::Read`, the buffer taken from `pool`.
fn framed_read(pool: &Arc<BufferPool>, src: &[u8]) -> usize {
    let frames = FramedRead::with_capacity(Stream(src), LengthDelimited::new(), pool, 64 * 1024);
    frames.map(|frame| black_box(frame.unwrap().len())).sum()
}

/// tokio-util's `LengthDelimitedCodec` over a `BytesMut`, as its
/// `FramedRead` drives it; frames frozen into `Bytes`.
fn bytes_mut_ldc(rx: &mut BytesMut, mut src: &[u8]) -> usize {
    let mut codec = LengthDelimitedCodec::new();
    let mut handled = 0;
    while !src.is_empty() {
        rx.reserve(1);
        read_into(rx, &mut src);
        while let Some(frame) = codec.decode(rx).unwrap() {
            handled += black_box(frame.freeze().len());
        }
    }
    handled
}

fn frames(c: &mut Criterion) {
    let mut group = c.benchmark_group(bench_group("frames"));
    let pool = Arc::new(BufferPool::new());
    for size in [100usize, 6000] {
        let wire = wire(size);
        group.throughput(Throughput::Bytes(wire.len() as u64));
        group.bench_with_input(BenchmarkId::new("frame_buf_pooled", size), &wire, |b, w| {
            let mut rx = FrameBuf::with_capacity(&pool, 64 * 1024);
            b.iter_custom(|iters| timed(iters, w, |w| frame_buf_pooled(&mut rx, w)));
        });
        group.bench_with_input(BenchmarkId::new("frame_buf_bytes", size), &wire, |b, w| {
            let mut rx = FrameBuf::with_capacity(&pool, 64 * 1024);
            b.iter_custom(|iters| timed(iters, w, |w| frame_buf_bytes(&mut rx, w)));
        });
        group.bench_with_input(BenchmarkId::new("framed_read", size), &wire, |b, w| {
            b.iter_custom(|iters| timed(iters, w, |w| framed_read(&pool, w)));
        });
        group.bench_with_input(BenchmarkId::new("bytes_mut_ldc", size), &wire, |b, w| {
            let mut rx = BytesMut::with_capacity(8 * 1024);
            b.iter_custom(|iters| timed(iters, w, |w| bytes_mut_ldc(&mut rx, w)));
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20).measurement_time(Duration::from_secs(3));
    targets = frames
}
criterion_main!(benches);
