//! A length-prefixed protocol whose server reads and writes through pooled
//! buffers, and whose client is tokio-util's own `LengthDelimitedCodec`.
//!
//! The server's read side is a [`FrameBuf`]: tokio's `read_buf` fills it (it
//! is a `bytes::BufMut`), a small decoder reads the 4-byte big-endian length
//! with `bytes::Buf` and splits each frame off as `Bytes` that shares the
//! pooled memory ([`FrameBuf::split_to`], no copy). Only a partial frame
//! left at the end of a read is copied, into the next pooled read buffer. tokio-util's `FramedRead` keeps
//! its read buffer in a `BytesMut` of its own, so the server drives the
//! same loop itself in `PooledFramedRead` (its `next_frame` is what
//! `FramedRead::next` does). The write side encodes every reply to one read
//! into one pooled buffer (a `BufMut` too) and writes it at once.
//!
//! The clients speak through tokio-util's codec (`Encoder` and `Decoder` of
//! `LengthDelimitedCodec`, whose default wire format is this one),
//! pipelining their messages: the server sees frames cut anywhere by TCP,
//! and some larger than its 4 KiB reply buffers. Each reply is the message
//! reversed; the clients check every one. At the end the example checks
//! that every pooled buffer came back, and prints how many bytes the
//! server's `FrameBuf`s copied (the shorter side of a split, and the moves
//! to the front) against the bytes received.
//!
//! ```text
//! cargo run -p recycler-core --features bytes --example framed_codec
//! ```

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use bytes::{Buf, BufMut, Bytes, BytesMut};
use recycler_core::buffer::{BufferPool, FrameBuf};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::codec::{Decoder, Encoder, LengthDelimitedCodec};

const CLIENTS: usize = 4;
const MESSAGES: usize = 300;
/// The reply buffers.
const BUF: usize = 4096;
/// The read buffers: a read leaves at most one partial frame to copy.
const READ_BUF: usize = 16 * 1024;
/// The largest frame the server accepts (`LengthDelimitedCodec`'s default
/// is 8 MiB).
const MAX_FRAME: usize = 64 * 1024;

/// Bytes the servers' `FrameBuf`s copied, and bytes they received.
static COPIED: AtomicU64 = AtomicU64::new(0);
static RECEIVED: AtomicU64 = AtomicU64::new(0);

/// A decoder over a pooled read buffer: `tokio_util::codec::Decoder`, but
/// over a [`FrameBuf`] instead of a `BytesMut`.
trait PooledDecoder {
    type Item;
    /// A whole frame from the front of `src`, or `None` to read more.
    fn decode(&mut self, src: &mut FrameBuf) -> io::Result<Option<Self::Item>>;
}

/// 4-byte big-endian length, then that many bytes.
struct LengthPrefixed;

impl PooledDecoder for LengthPrefixed {
    type Item = Bytes;

    fn decode(&mut self, src: &mut FrameBuf) -> io::Result<Option<Bytes>> {
        if src.len() < 4 {
            return Ok(None);
        }
        let len = u32::from_be_bytes([src[0], src[1], src[2], src[3]]) as usize;
        if len > MAX_FRAME {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "frame too long"));
        }
        if src.len() < 4 + len {
            src.reserve(4 + len - src.len()); // room for the rest of the frame
            return Ok(None);
        }
        src.advance(4);
        Ok(Some(src.split_to(len))) // shares the pooled memory
    }
}

/// `FramedRead` over a pooled read buffer.
struct PooledFramedRead<R, D> {
    io: R,
    buf: FrameBuf,
    decoder: D,
}

impl<R: AsyncRead + Unpin, D: PooledDecoder> PooledFramedRead<R, D> {
    /// The next frame, `None` at a clean end of stream.
    async fn next_frame(&mut self) -> io::Result<Option<D::Item>> {
        loop {
            if let Some(frame) = self.decoder.decode(&mut self.buf)? {
                return Ok(Some(frame));
            }
            let n = self.io.read_buf(&mut self.buf).await?;
            RECEIVED.fetch_add(n as u64, Relaxed);
            if n == 0 {
                return match self.buf.is_empty() {
                    true => Ok(None),
                    false => Err(io::ErrorKind::UnexpectedEof.into()),
                };
            }
        }
    }

    /// A frame already in the buffer, without reading.
    fn try_frame(&mut self) -> io::Result<Option<D::Item>> {
        self.decoder.decode(&mut self.buf)
    }
}

impl<R, D> Drop for PooledFramedRead<R, D> {
    fn drop(&mut self) {
        COPIED.fetch_add(self.buf.bytes_copied(), Relaxed);
    }
}

/// Replies to every frame with its bytes reversed, until the client closes.
async fn serve(pool: Arc<BufferPool>, stream: TcpStream) -> io::Result<usize> {
    let (rd, mut wr) = stream.into_split();
    let mut framed = PooledFramedRead {
        io: rd,
        buf: FrameBuf::with_capacity(&pool, READ_BUF),
        decoder: LengthPrefixed,
    };
    let mut frames = 0;
    while let Some(first) = framed.next_frame().await? {
        // Every frame this read completed, answered with one write.
        let mut out = pool.acquire_owned(BUF);
        let mut next = Some(first);
        while let Some(frame) = next {
            out.put_u32(frame.len() as u32);
            out.extend(frame.iter().rev());
            frames += 1;
            next = framed.try_frame()?;
        }
        wr.write_all(&out).await?;
    } // each reply buffer, and each frame's share of a read buffer, back here
    Ok(frames)
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
