//! `codec::FramedRead` over real 127.0.0.1 TCP sockets: blocking (an
//! iterator over `std::net::TcpStream`) and polled (over a tokio
//! `TcpStream`, through the few lines of `PollRead` its docs show), the
//! frames written by tokio-util's `LengthDelimitedCodec`; every loop is
//! bounded, every socket has a timeout.

#![cfg(not(loom))] // tokio is no dependency under loom

mod common;

use std::io::{self, Write};
use std::net::{TcpListener, TcpStream};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::thread;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use recycler_core::buffer::{BufferPool, FrameBuf};
use recycler_core::codec::{FramedRead, LengthDelimited, PollRead};
use tokio_util::codec::{Encoder, LengthDelimitedCodec};

const FRAMES: usize = 400;

/// Frame `i`'s payload: 0 to 6,000 bytes.
fn payload(i: usize) -> Bytes {
    let len = (i * 977) % 6001;
    (0..len).map(|j| (i + j) as u8).collect()
}

/// Every frame, encoded by tokio-util's codec.
fn wire() -> Vec<u8> {
    let mut codec = LengthDelimitedCodec::new();
    let mut out = BytesMut::new();
    for i in 0..FRAMES {
        codec.encode(payload(i), &mut out).unwrap();
    }
    out.to_vec()
}

#[test]
fn blocking_over_a_tcp_socket() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let writer = thread::spawn(move || {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_nodelay(true).unwrap();
        // Cut anywhere: writes of 1 to 9,999 bytes.
        let wire = wire();
        let mut rest = &wire[..];
        let mut i = 0;
        while !rest.is_empty() {
            let n = rest.len().min(1 + (i * 7919) % 9999);
            stream.write_all(&rest[..n]).unwrap();
            rest = &rest[n..];
            i += 1;
        }
    });
    let (stream, _) = listener.accept().unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let pool = Arc::new(BufferPool::new());
    let frames = FramedRead::with_capacity(stream, LengthDelimited::new(), &pool, 64 * 1024);
    let mut n = 0;
    for frame in frames {
        let frame = frame.unwrap();
        assert_eq!(frame, payload(n), "frame {n}");
        n += 1;
    }
    writer.join().unwrap();
    assert_eq!(n, FRAMES);
    let s = pool.stats();
    assert_eq!(s.total().in_use, 0, "{s}");
    common::assert_buffers_counted(&s);
}

/// A tokio reader, for `FramedRead`: the shim of `PollRead`'s docs.
struct Tokio<R>(R);

impl<R: tokio::io::AsyncRead + Unpin> PollRead for Tokio<R> {
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut FrameBuf,
    ) -> Poll<io::Result<usize>> {
        tokio_util::io::poll_read_buf(Pin::new(&mut self.0), cx, buf)
    }
}

#[test]
fn polled_over_a_tokio_socket_idle_without_a_buffer() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let pool = Arc::new(BufferPool::new());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .enable_time()
        .build()
        .unwrap();
    rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        // The client sends the frames in bursts of 40 and waits for the
        // server's one-byte acknowledgement after each.
        let client = tokio::spawn(async move {
            let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
            let wire = wire();
            let mut codec_ends = Vec::new();
            let mut at = 0;
            for i in 0..FRAMES {
                at += 4 + payload(i).len();
                codec_ends.push(at);
            }
            let mut from = 0;
            for burst in codec_ends.chunks(40) {
                let to = *burst.last().unwrap();
                stream.write_all(&wire[from..to]).await.unwrap();
                from = to;
                let mut ack = [0];
                stream.read_exact(&mut ack).await.unwrap();
            }
        });
        let (stream, _) = listener.accept().await.unwrap();
        let (rd, mut wr) = stream.into_split();
        let mut frames =
            FramedRead::with_capacity(Tokio(rd), LengthDelimited::new(), &pool, 16 * 1024)
                .release_when_idle(true);
        let mut n = 0;
        let mut idle_checks = 0;
        while n < FRAMES {
            let frame = tokio::time::timeout(Duration::from_secs(30), frames.next_frame())
                .await
                .expect("a frame within 30 s")
                .expect("not the end")
                .unwrap();
            assert_eq!(frame, payload(n), "frame {n}");
            drop(frame);
            n += 1;
            if n % 40 == 0 {
                // The burst is read and handled: polled now, the reader
                // finds the client waiting, and holds no buffer.
                let pending =
                    std::future::poll_fn(|cx| Poll::Ready(frames.poll_next_frame(cx).is_pending()))
                        .await;
                if pending {
                    idle_checks += 1;
                    assert_eq!(frames.read_buffer().capacity(), 0);
                    assert_eq!(pool.stats().total().in_use, 0);
                }
                wr.write_all(&[1]).await.unwrap();
            }
        }
        client.await.unwrap();
        assert!(frames.next_frame().await.is_none(), "the client closed");
        assert_eq!(idle_checks, FRAMES / 40);
    });
    drop(rt);
    let s = pool.stats();
    assert_eq!(s.total().in_use, 0, "{s}");
    common::assert_buffers_counted(&s);
}
