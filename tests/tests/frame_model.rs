//! Model-based tests of `FrameBuf` (feature `bytes`): random scripts of
//! writes, reads, splits (`split_to`'s `Bytes` and `split_to_pooled`'s
//! `PooledBytes`), frames dropped here or on another thread, `reserve`,
//! `clear`, `release_if_empty` and `into_inner`, over a pool that lends its
//! buffers to `split_to` (the default), one under a memory limit (shared
//! per read) and one aligned to 64 bytes, with buffers small enough that
//! refills, retirements and give-aways happen all the time.
//!
//! Every byte written is the function [`byte`] of its offset in the stream,
//! so after every step the reader's unread bytes and every frame alive can
//! be checked: a frame never sees its bytes change, whatever the reader
//! writes, moves or reuses. At the end, with every frame dropped, the
//! pool's books balance and no buffer is in use.

#![cfg(not(loom))]

mod common;

use std::sync::Arc;
use std::thread;

use bytes::{Buf, BufMut, Bytes};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use recycler_core::buffer::{BufferPool, FrameBuf, PooledBytes};

/// The byte at offset `o` of the stream.
fn byte(o: u64) -> u8 {
    (o ^ (o >> 8) ^ (o >> 16)).wrapping_mul(31) as u8
}

/// Whether `bytes` are the stream's from offset `at`.
fn is_stream(bytes: &[u8], at: u64) -> bool {
    bytes
        .iter()
        .enumerate()
        .all(|(i, &b)| b == byte(at + i as u64))
}

#[derive(Debug, Clone, Copy)]
enum Op {
    /// Writes `n` more bytes of the stream.
    Write(usize),
    /// Reads (skips) up to `n` unread bytes.
    Advance(usize),
    /// Splits up to `n` unread bytes off as `Bytes`.
    Split(usize),
    /// Splits up to `n` unread bytes off as `PooledBytes`.
    SplitPooled(usize),
    /// Drops the frame at this index (modulo the frames alive).
    Drop(usize),
    /// Drops the frame at this index on another thread.
    DropElsewhere(usize),
    /// Makes room for `n` more bytes.
    Reserve(usize),
    /// Reads everything.
    Clear,
    /// Lets the buffer go if everything is read.
    ReleaseIfEmpty,
    /// Takes the buffer out (`into_inner`) and makes a reader of it again.
    IntoInner,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (1..3000usize).prop_map(Op::Write),
        2 => (0..2000usize).prop_map(Op::Advance),
        4 => (0..2000usize).prop_map(Op::Split),
        2 => (0..2000usize).prop_map(Op::SplitPooled),
        3 => any::<usize>().prop_map(Op::Drop),
        1 => any::<usize>().prop_map(Op::DropElsewhere),
        1 => (0..5000usize).prop_map(Op::Reserve),
        1 => Just(Op::Clear),
        1 => Just(Op::ReleaseIfEmpty),
        1 => Just(Op::IntoInner),
    ]
}

/// The pool kinds: lending (the default), under a memory limit, aligned.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Lending,
    Limited,
    Aligned,
}

fn pool(kind: Kind) -> Arc<BufferPool> {
    let b = BufferPool::builder()
        .bucket_step(1024)
        .max_capacity(16 * 1024);
    let b = match kind {
        Kind::Lending => b,
        Kind::Limited => b.memory_limit(1 << 30),
        Kind::Aligned => b.alignment(64),
    };
    Arc::new(b.build().expect("a valid pool"))
}

/// A frame alive, and the stream offset of its first byte.
enum Frame {
    Bytes(Bytes, u64),
    Pooled(PooledBytes, u64),
}

impl Frame {
    fn check(&self) -> bool {
        match self {
            Self::Bytes(b, at) => is_stream(b, *at),
            Self::Pooled(b, at) => is_stream(b, *at),
        }
    }
}

struct Run {
    pool: Arc<BufferPool>,
    rx: FrameBuf,
    /// The stream offsets of the first unread byte and of the next written.
    read: u64,
    written: u64,
    frames: Vec<Frame>,
}

impl Run {
    fn step(&mut self, op: Op) {
        let unread = self.rx.len();
        match op {
            Op::Write(n) => {
                let bytes: Vec<u8> = (self.written..self.written + n as u64).map(byte).collect();
                self.rx.put_slice(&bytes);
                self.written += n as u64;
            }
            Op::Advance(n) => {
                let n = n.min(unread);
                self.rx.advance(n);
                self.read += n as u64;
            }
            Op::Split(n) => {
                let n = n.min(unread);
                self.frames
                    .push(Frame::Bytes(self.rx.split_to(n), self.read));
                self.read += n as u64;
            }
            Op::SplitPooled(n) => {
                let n = n.min(unread);
                let frame = self.rx.split_to_pooled(n);
                self.frames.push(Frame::Pooled(frame, self.read));
                self.read += n as u64;
            }
            Op::Drop(i) | Op::DropElsewhere(i) if !self.frames.is_empty() => {
                let frame = self.frames.swap_remove(i % self.frames.len());
                if matches!(op, Op::DropElsewhere(_)) {
                    thread::spawn(move || drop(frame)).join().expect("dropped");
                }
            }
            Op::Drop(_) | Op::DropElsewhere(_) => {}
            Op::Reserve(n) => {
                self.rx.reserve(n);
                assert!(self.rx.capacity() - self.rx.len() >= n || self.rx.remaining_mut() >= n);
            }
            Op::Clear => {
                self.rx.clear();
                self.read = self.written;
            }
            Op::ReleaseIfEmpty => {
                let released = self.rx.release_if_empty();
                assert_eq!(released, unread == 0);
            }
            Op::IntoInner => {
                let rx = std::mem::replace(&mut self.rx, FrameBuf::with_capacity(&self.pool, 0));
                let buf = rx.into_inner();
                assert!(
                    is_stream(&buf, self.read),
                    "into_inner kept the unread bytes"
                );
                self.rx = buf.into_frame_buf();
            }
        }
    }

    fn check(&self, step: usize) -> Result<(), TestCaseError> {
        prop_assert_eq!(
            self.rx.len() as u64,
            self.written - self.read,
            "step {}",
            step
        );
        prop_assert!(
            is_stream(&self.rx, self.read),
            "the unread bytes, step {}",
            step
        );
        for (i, f) in self.frames.iter().enumerate() {
            prop_assert!(f.check(), "frame {} changed at step {}", i, step);
        }
        Ok(())
    }
}

fn run(kind: Kind, capacity: usize, ops: Vec<Op>) -> Result<(), TestCaseError> {
    let pool = pool(kind);
    let rx = FrameBuf::with_capacity(&pool, capacity);
    let mut run = Run {
        pool: Arc::clone(&pool),
        rx,
        read: 0,
        written: 0,
        frames: Vec::new(),
    };
    for (i, op) in ops.into_iter().enumerate() {
        run.step(op);
        run.check(i)?;
    }
    let Run { rx, frames, .. } = run;
    drop(rx);
    for f in &frames {
        prop_assert!(f.check(), "a frame changed as the reader dropped");
    }
    drop(frames);
    let s = pool.stats();
    prop_assert_eq!(s.total().in_use, 0, "{}", s);
    common::assert_buffers_counted(&s);
    Ok(())
}

/// The same scripts on every run; `PROPTEST_CASES` and `PROPTEST_RNG_SEED`
/// override the count and the seed.
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 256;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x6672_616d_6562_7566);
    }
    config.failure_persistence = None;
    config
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        3 => Just(Kind::Lending),
        1 => Just(Kind::Limited),
        1 => Just(Kind::Aligned),
    ]
}

proptest! {
    #![proptest_config(config())]

    /// Frames never change and the books balance, whatever the script.
    #[test]
    fn frames_never_change(
        kind in kind(),
        capacity in 1..8192usize,
        ops in vec(op(), 1..60),
    ) {
        run(kind, capacity, ops)?;
    }
}
