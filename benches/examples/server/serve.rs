//! The server side: the protocol, and one connection handler per way of
//! getting buffers.
//!
//! A request is a frame: a 4-byte little-endian length, then that many
//! bytes, whose first four are the size of the response frame wanted
//! (little-endian, its header included; the rest is padding). The server
//! reads the frame into a buffer, takes the size, builds a response frame
//! of that size into a buffer (its header, then a 4 KiB pattern copied
//! over and over) and writes it. The modes differ only in where the two
//! buffers come from.

use std::io;

use bytes::{BufMut, BytesMut};
use recycler_core::buffer::{BufferPool, PooledBuf};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The largest frame either side accepts.
pub(crate) const MAX_FRAME: usize = 16 << 20;

/// What a response's payload repeats.
pub(crate) static PATTERN: [u8; 4096] = pattern();

/// Bytes 0, 1, .., 250, 0, 1, .. (a prime period, so that a shifted copy
/// shows).
const fn pattern() -> [u8; 4096] {
    let mut p = [0; 4096];
    let mut i = 0;
    while i < p.len() {
        p[i] = (i % 251) as u8;
        i += 1;
    }
    p
}

/// The byte at `offset` in a response's payload.
pub(crate) fn payload_byte(offset: usize) -> u8 {
    PATTERN[offset % PATTERN.len()]
}

/// A request frame of `len` bytes in all asking for a response frame of
/// `response` bytes in all.
pub(crate) fn request(len: usize, response: usize) -> Vec<u8> {
    assert!((8..=MAX_FRAME).contains(&len) && (4..=MAX_FRAME).contains(&response));
    let mut frame = Vec::with_capacity(len);
    frame.extend_from_slice(&(len as u32 - 4).to_le_bytes());
    frame.extend_from_slice(&(response as u32).to_le_bytes());
    frame.resize(len, 0xAB);
    frame
}

/// How the server gets its buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// A new `Vec` for each request and each response.
    Fresh,
    /// One `BytesMut` per connection for requests and one for responses,
    /// cleared and reused.
    BytesMut,
    /// `BufferPool::new()` (per-thread caches), a buffer acquired for each
    /// request and each response.
    Pooled,
    /// The same with `BufferPool::builder().striped(0)`.
    Striped,
}

impl Mode {
    /// Every mode, in the order of the tables.
    pub(crate) const ALL: [Mode; 4] = [Mode::Fresh, Mode::BytesMut, Mode::Pooled, Mode::Striped];

    /// Its name on the command line and in the tables.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Mode::Fresh => "fresh",
            Mode::BytesMut => "bytesmut",
            Mode::Pooled => "pooled",
            Mode::Striped => "striped",
        }
    }

    /// The mode named `name`.
    pub(crate) fn from_name(name: &str) -> Option<Mode> {
        Mode::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A connection handler's source of buffers.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Buffers {
    /// [`Mode::Fresh`].
    Fresh,
    /// [`Mode::BytesMut`].
    BytesMut,
    /// [`Mode::Pooled`] or [`Mode::Striped`]: the process's pool.
    Pool(&'static BufferPool),
}

impl Buffers {
    /// The buffers of `mode`, with a pool made now (and kept for the rest of
    /// the process) if it needs one.
    pub(crate) fn new(mode: Mode) -> Buffers {
        let pool = match mode {
            Mode::Fresh => return Buffers::Fresh,
            Mode::BytesMut => return Buffers::BytesMut,
            Mode::Pooled => BufferPool::new(),
            Mode::Striped => BufferPool::builder()
                .striped(0)
                .build()
                .expect("striped(0) is a valid setting"),
        };
        Buffers::Pool(Box::leak(Box::new(pool)))
    }
}

/// Where a response is built.
trait Out {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);
}

impl Out for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Out for BytesMut {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.put_slice(bytes);
    }
}

impl Out for PooledBuf<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

/// Appends a response frame of `size` bytes in all to `out`.
fn build(out: &mut impl Out, size: usize) {
    out.put(&(size as u32 - 4).to_le_bytes());
    let mut left = size - 4;
    while left > 0 {
        let n = left.min(PATTERN.len());
        out.put(&PATTERN[..n]);
        left -= n;
    }
}

/// The size of the response frame a request's body asks for.
fn response_size(body: &[u8]) -> io::Result<usize> {
    let size = body
        .first_chunk::<4>()
        .map(|b| u32::from_le_bytes(*b) as usize)
        .ok_or_else(|| io::Error::other("a request shorter than its 4-byte size"))?;
    if !(4..=MAX_FRAME).contains(&size) {
        return Err(io::Error::other(format!(
            "a response of {size} bytes asked"
        )));
    }
    Ok(size)
}

/// The length of the next request's body, or `None` once the client has
/// closed the connection.
async fn next_len(stream: &mut TcpStream) -> io::Result<Option<usize>> {
    let mut header = [0; 4];
    match stream.read_exact(&mut header).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes(header) as usize;
    if !(4..=MAX_FRAME).contains(&len) {
        return Err(io::Error::other(format!("a request of {len} bytes")));
    }
    Ok(Some(len))
}

/// Serves `stream` until the client closes it.
pub(crate) async fn serve(buffers: Buffers, mut stream: TcpStream) -> io::Result<()> {
    stream.set_nodelay(true)?;
    match buffers {
        Buffers::Fresh => fresh(&mut stream).await,
        Buffers::BytesMut => bytes_mut(&mut stream).await,
        Buffers::Pool(pool) => pooled(pool, &mut stream).await,
    }
}

/// [`Mode::Fresh`].
async fn fresh(stream: &mut TcpStream) -> io::Result<()> {
    while let Some(len) = next_len(stream).await? {
        let mut request = vec![0; len];
        stream.read_exact(&mut request).await?;
        let size = response_size(&request)?;
        drop(request);
        let mut response = Vec::with_capacity(size);
        build(&mut response, size);
        stream.write_all(&response).await?;
    }
    Ok(())
}

/// [`Mode::BytesMut`].
async fn bytes_mut(stream: &mut TcpStream) -> io::Result<()> {
    let mut request = BytesMut::new();
    let mut response = BytesMut::new();
    while let Some(len) = next_len(stream).await? {
        request.clear();
        request.resize(len, 0);
        stream.read_exact(&mut request).await?;
        let size = response_size(&request)?;
        response.clear();
        response.reserve(size);
        build(&mut response, size);
        stream.write_all(&response).await?;
    }
    Ok(())
}

/// [`Mode::Pooled`] and [`Mode::Striped`].
async fn pooled(pool: &'static BufferPool, stream: &mut TcpStream) -> io::Result<()> {
    while let Some(len) = next_len(stream).await? {
        let mut request = pool.acquire(len);
        request.resize(len, 0);
        stream.read_exact(&mut request).await?;
        let size = response_size(&request)?;
        drop(request);
        let mut response = pool.acquire(size);
        build(&mut response, size);
        stream.write_all(&response).await?;
    }
    Ok(())
}
