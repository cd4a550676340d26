//! A length-prefixed protocol whose server reads and writes through pooled
//! buffers, and whose client is tokio-util's own `LengthDelimitedCodec`.
//!
//! The server reads with [`codec::FramedRead`](recycler_core::codec) and
//! its [`LengthDelimited`] decoder (tokio-util's default wire format): each
//! frame is a [`PooledBytes`] sharing the pooled read buffer, no copy, no
//! allocation. The crate has no runtime dependency, so the server bridges
//! tokio's `AsyncRead` to [`PollRead`] in the few lines of `Tokio` below
//! (`tokio_util::io::poll_read_buf`: a `FrameBuf` is a `bytes::BufMut`).
//! The write side encodes every reply to one read into one pooled buffer
//! (a `BufMut` too) and writes it at once.
//!
//! The clients speak through tokio-util's codec (`Encoder` and `Decoder` of
//! `LengthDelimitedCodec`), pipelining their messages: the server sees
//! frames cut anywhere by TCP, and some larger than its 4 KiB reply
//! buffers. Each reply is the message reversed; the clients check every
//! one. At the end the example checks that every pooled buffer came back,
//! and prints how many bytes the server's readers copied (partial frames
//! moved when a buffer filled) against the bytes received.
//!
//! ```text
//! cargo run -p recycler-core --features codec --example framed_codec
//! ```

use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::task::{Context, Poll};

use bytes::{BufMut, Bytes, BytesMut};
use recycler_core::buffer::{BufferPool, FrameBuf, PooledBytes};
use recycler_core::codec::{FramedRead, LengthDelimited, PollRead};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

const CLIENTS: usize = 4;
const MESSAGES: usize = 300;
/// The reply buffers.
const BUF: usize = 4096;
/// The read buffers.
const READ_BUF: usize = 16 * 1024;
/// The largest frame the server accepts (`LengthDelimitedCodec`'s default
/// is 8 MiB).
const MAX_FRAME: usize = 64 * 1024;

/// Bytes the servers' readers copied, and bytes they received.
static COPIED: AtomicU64 = AtomicU64::new(0);
static RECEIVED: AtomicU64 = AtomicU64::new(0);

/// A tokio reader, for `FramedRead` (counting what it reads).
struct Tokio<R>(R);

impl<R: AsyncRead + Unpin> PollRead for Tokio<R> {
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut FrameBuf,
    ) -> Poll<io::Result<usize>> {
        let read = tokio_util::io::poll_read_buf(Pin::new(&mut self.0), cx, buf);
        if let Poll::Ready(Ok(n)) = read {
            RECEIVED.fetch_add(n as u64, Relaxed);
        }
        read
    }
}

/// Replies to every frame with its bytes reversed, until the client closes.
async fn serve(pool: Arc<BufferPool>, stream: TcpStream) -> io::Result<usize> {
    let (rd, mut wr) = stream.into_split();
    let decoder = LengthDelimited::new().with_max_frame_length(MAX_FRAME);
    let mut frames = FramedRead::with_capacity(Tokio(rd), decoder, &pool, READ_BUF);
    let mut count = 0;
    while let Some(first) = frames.next_frame().await {
        // Every frame this read completed, answered with one write.
        let mut out = pool.acquire_owned(BUF);
        let mut next: Option<io::Result<PooledBytes>> = Some(first);
        while let Some(frame) = next {
            let frame = frame?;
            out.put_u32(frame.len() as u32);
            out.extend(frame.iter().rev());
            count += 1;
            next = frames.try_next_frame();
        }
        wr.write_all(&out).await?;
    } // each reply buffer, and each frame's share of a read buffer, back here
    COPIED.fetch_add(frames.read_buffer().bytes_copied(), Relaxed);
    Ok(count)
}

/// Sends `MESSAGES` frames through tokio-util's codec, pipelined, and
/// checks every reply.
async fn client(addr: std::net::SocketAddr, id: usize) -> io::Result<usize> {
    let stream = TcpStream::connect(addr).await?;
    stream.set_nodelay(true)?;
    let (mut rd, mut wr) = stream.into_split();
    let message = move |i: usize| -> Bytes {
        let len = (id * 131 + i * 977) % 6000; // 0 to 6 KB: some span reads
        (0..len).map(|j| (id + i * 7 + j) as u8).collect()
    };
    let writer = tokio::spawn(async move {
        let mut codec = LengthDelimitedCodec::new();
        let mut out = BytesMut::new();
        for i in 0..MESSAGES {
            codec.encode(message(i), &mut out)?;
            if out.len() > 16 * 1024 || i + 1 == MESSAGES {
                wr.write_all(&out).await?;
                out.clear();
            }
        }
        wr.shutdown().await
    });
    let mut codec = LengthDelimitedCodec::new();
    let mut input = BytesMut::new();
    let mut i = 0;
    while i < MESSAGES {
        while let Some(reply) = codec.decode(&mut input)? {
            let mut want = message(i).to_vec();
            want.reverse();
            assert_eq!(reply[..], want[..], "client {id}, reply {i}");
            i += 1;
        }
        if i < MESSAGES && rd.read_buf(&mut input).await? == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
    }
    writer.await??;
    Ok(i)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .build()?;
    let pool = Arc::new(BufferPool::new());
    runtime.block_on(async {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn({
            let pool = Arc::clone(&pool);
            async move {
                let mut handlers = Vec::new();
                for _ in 0..CLIENTS {
                    let (stream, _) = listener.accept().await?;
                    stream.set_nodelay(true)?;
                    handlers.push(tokio::spawn(serve(Arc::clone(&pool), stream)));
                }
                let mut frames = 0;
                for handler in handlers {
                    frames += handler.await??;
                }
                Ok::<_, io::Error>(frames)
            }
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|id| tokio::spawn(client(addr, id)))
            .collect();
        let mut replies = 0;
        for c in clients {
            replies += c.await??;
        }
        let frames = server.await??;
        assert_eq!((frames, replies), (CLIENTS * MESSAGES, CLIENTS * MESSAGES));
        Ok::<_, Box<dyn std::error::Error>>(())
    })?;
    drop(runtime);

    let stats = pool.stats();
    let total = stats.total();
    assert_eq!(total.in_use, 0, "every pooled buffer came back: {stats}");
    let (copied, received) = (COPIED.load(Relaxed), RECEIVED.load(Relaxed));
    assert!(copied <= received, "at most one copy per byte received");
    println!(
        "{} frames; the server received {received} bytes and copied {copied} ({:.1} %); \
         {} pooled acquires, {} buffers made",
        CLIENTS * MESSAGES,
        100.0 * copied as f64 / received.max(1) as f64,
        total.acquires,
        total.non_pooled + total.prefilled,
    );
    Ok(())
}
