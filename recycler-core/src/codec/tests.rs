//! Unit tests of the decoder adapter: the reader's states, errors, and a
//! source that misbehaves.

use std::io::{self, Read};
use std::task::{Context, Poll, Waker};

use super::{Decoder, FrameTooLong, FramedRead, LengthDelimited, PollRead};
use crate::buffer::{BufferPool, FrameBuf};
use crate::loom::Arc;

/// `payload` after a 4-byte big-endian length.
fn frame(payload: &[u8]) -> Vec<u8> {
    let mut v = (payload.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(payload);
    v
}

/// A reader that returns at most `max` bytes a read, an `Interrupted`
/// error before each.
struct Chunks<'a> {
    data: &'a [u8],
    max: usize,
    interrupt: bool,
}

impl Read for Chunks<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.interrupt = !self.interrupt;
        if self.interrupt {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let n = self.data.len().min(self.max).min(buf.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

#[test]
fn frames_across_reads_of_every_size() {
    let pool = Arc::new(BufferPool::new());
    let payloads: Vec<Vec<u8>> = (0..300u32)
        .map(|i| (0..(i * 131) % 9000).map(|j| (i ^ j) as u8).collect())
        .collect();
    for max in [1, 7, 1000, 4096, 70_000] {
        // Byte by byte, fewer frames: a debug build takes its time.
        let count = if max < 10 { 30 } else { payloads.len() };
        let payloads = &payloads[..count];
        let wire: Vec<u8> = payloads.iter().flat_map(|p| frame(p)).collect();
        let io = Chunks {
            data: &wire,
            max,
            interrupt: false,
        };
        let frames = FramedRead::with_capacity(io, LengthDelimited::new(), &pool, 16 * 1024);
        let got: Vec<_> = frames.collect::<io::Result<_>>().unwrap();
        assert_eq!(got.len(), payloads.len(), "reads of {max}");
        for (g, p) in got.iter().zip(payloads) {
            assert_eq!(g[..], p[..], "reads of {max}");
        }
        drop(got);
        assert_eq!(pool.stats().total().in_use, 0, "reads of {max}");
    }
}

#[test]
fn a_frame_too_long_is_an_error_and_the_end() {
    let pool = Arc::new(BufferPool::new());
    let mut wire = frame(b"ok");
    wire.extend_from_slice(&frame(&[0; 101]));
    wire.extend_from_slice(&frame(b"never"));
    let codec = LengthDelimited::new().with_max_frame_length(100);
    let mut frames = FramedRead::with_capacity(&wire[..], codec, &pool, 4096);
    assert_eq!(frames.next().unwrap().unwrap(), b"ok"[..]);
    let err = frames.next().unwrap().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    let inner = err.get_ref().unwrap().downcast_ref::<FrameTooLong>();
    assert_eq!(
        inner,
        Some(&FrameTooLong {
            length: 101,
            max: 100
        })
    );
    assert!(frames.next().is_none(), "nothing after an error");
    assert!(frames.next().is_none());
}

#[test]
fn a_reserve_past_the_limit_fails_quietly() {
    let pool = Arc::new(BufferPool::builder().memory_limit(1 << 20).build().unwrap());
    let codec = LengthDelimited::new().with_max_frame_length(usize::MAX);
    let wire = [0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3];
    let mut frames = FramedRead::with_capacity(&wire[..], codec, &pool, 4096);
    // 4 GiB announced: the decoder's reserve for it fails at the limit,
    // quietly (no overdraft), and the stream ends inside the frame.
    let err = frames.next().unwrap().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    assert_eq!(frames.read_buffer().len(), 7);
    assert_eq!(pool.stats().overdrafts, 0);
}

#[test]
fn decode_eof_yields_what_is_left_then_ends() {
    /// Lines, and at the end the last line without its '\n'.
    struct Lines;
    impl Decoder for Lines {
        type Item = Vec<u8>;
        type Error = io::Error;
        fn decode(&mut self, src: &mut FrameBuf) -> io::Result<Option<Vec<u8>>> {
            let Some(end) = src.iter().position(|&b| b == b'\n') else {
                return Ok(None);
            };
            let line = src[..end].to_vec();
            bytes::Buf::advance(src, end + 1);
            Ok(Some(line))
        }
        fn decode_eof(&mut self, src: &mut FrameBuf) -> io::Result<Option<Vec<u8>>> {
            if let Some(line) = self.decode(src)? {
                return Ok(Some(line));
            }
            Ok((!src.is_empty()).then(|| {
                let rest = src.to_vec();
                src.clear();
                rest
            }))
        }
    }
    let pool = Arc::new(BufferPool::new());
    let lines = FramedRead::with_capacity(&b"a\nbc\nlast"[..], Lines, &pool, 4096);
    let got: Vec<_> = lines.collect::<io::Result<_>>().unwrap();
    assert_eq!(got, [&b"a"[..], b"bc", b"last"]);
}

#[test]
fn a_read_that_claims_too_much_is_an_error() {
    struct Liar;
    impl Read for Liar {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            Ok(buf.len() + 1)
        }
    }
    let pool = Arc::new(BufferPool::new());
    let mut frames = FramedRead::with_capacity(Liar, LengthDelimited::new(), &pool, 4096);
    let err = frames.next().unwrap().unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidData);
    assert!(frames.read_buffer().is_empty(), "nothing taken");
    assert!(frames.next().is_none());
}

/// A source that is `Pending` every other poll, then gives `step` bytes.
struct Trickle {
    data: Vec<u8>,
    step: usize,
    ready: bool,
}

impl PollRead for Trickle {
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut FrameBuf,
    ) -> Poll<io::Result<usize>> {
        self.ready = !self.ready;
        if !self.ready {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let n = self.data.len().min(self.step);
        buf.extend_from_slice(&self.data[..n]);
        self.data.drain(..n);
        Poll::Ready(Ok(n))
    }
}

#[test]
fn polled_frames_and_an_idle_reader_that_holds_no_buffer() {
    let pool = Arc::new(BufferPool::new());
    let mut data = frame(b"first");
    data.extend_from_slice(&frame(&[7; 3000]));
    let io = Trickle {
        data,
        step: 1000,
        ready: true,
    };
    let mut frames =
        FramedRead::with_capacity(io, LengthDelimited::new(), &pool, 4096).release_when_idle(true);
    let mut cx = Context::from_waker(Waker::noop());
    let mut got = Vec::new();
    let mut idle_without_buffer = 0;
    for _ in 0..100 {
        match frames.poll_next_frame(&mut cx) {
            Poll::Ready(Some(frame)) => got.push(frame.unwrap().to_vec()),
            Poll::Ready(None) => break,
            Poll::Pending => {
                if frames.read_buffer().capacity() == 0 {
                    idle_without_buffer += 1;
                    assert_eq!(pool.stats().total().in_use, 0, "all back in the pool");
                }
            }
        }
    }
    assert_eq!(got, [b"first".to_vec(), vec![7; 3000]]);
    assert!(idle_without_buffer > 0, "it let the buffer go while idle");
}
