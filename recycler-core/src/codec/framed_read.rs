//! [`FramedRead`]: a [`Decoder`] over a source, reading into pooled
//! buffers: an `Iterator` over a blocking `std::io::Read`, and a poll (or
//! an `async fn`) over a [`PollRead`], which a tokio `AsyncRead` implements
//! in a few lines.

use std::fmt;
use std::future::poll_fn;
use std::io;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::Decoder;
use crate::buffer::{BufferPool, FrameBuf};

/// Room made before each read, at least: a full buffer's last few bytes
/// are not worth a read of their own.
const MIN_READ: usize = 1024;

/// A source that reads into a [`FrameBuf`] without blocking: what
/// [`FramedRead`] polls. A tokio `AsyncRead` implements it through a
/// wrapper of your own, with tokio-util's `poll_read_buf` (a `FrameBuf` is
/// a `bytes::BufMut`):
///
/// ```
/// use std::io;
/// use std::pin::Pin;
/// use std::task::{Context, Poll};
/// use recycler_core::buffer::FrameBuf;
/// use recycler_core::codec::PollRead;
///
/// /// A tokio reader, for `FramedRead`.
/// struct Tokio<R>(R);
///
/// impl<R: tokio::io::AsyncRead + Unpin> PollRead for Tokio<R> {
///     fn poll_read_into(&mut self, cx: &mut Context<'_>, buf: &mut FrameBuf) -> Poll<io::Result<usize>> {
///         tokio_util::io::poll_read_buf(Pin::new(&mut self.0), cx, buf)
///     }
/// }
///
/// // Then, in a task:
/// async fn serve(socket: tokio::net::TcpStream, pool: std::sync::Arc<recycler_core::buffer::BufferPool>) {
///     use recycler_core::codec::{FramedRead, LengthDelimited};
///     let mut frames = FramedRead::with_capacity(Tokio(socket), LengthDelimited::new(), &pool, 16 * 1024);
///     while let Some(Ok(frame)) = frames.next_frame().await {
///         println!("{} bytes", frame.len());
///     }
/// }
/// # let _ = serve;
/// ```
///
/// (The `framed_codec` example runs this over a TCP socket; this crate
/// depends on neither tokio nor tokio-util: they are dependencies of that
/// example and of this doc test only.)
///
/// # Examples
///
/// A source that has everything at once:
///
/// ```
/// use std::io;
/// use std::sync::Arc;
/// use std::task::{Context, Poll, Waker};
/// use recycler_core::buffer::{BufferPool, FrameBuf};
/// use recycler_core::codec::PollRead;
///
/// struct Ready<'a>(&'a [u8]);
///
/// impl PollRead for Ready<'_> {
///     fn poll_read_into(&mut self, _: &mut Context<'_>, buf: &mut FrameBuf) -> Poll<io::Result<usize>> {
///         Poll::Ready(buf.read_from(&mut self.0))
///     }
/// }
///
/// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 4096);
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(matches!(Ready(b"abc").poll_read_into(&mut cx, &mut rx), Poll::Ready(Ok(3))));
/// ```
pub trait PollRead {
    /// Reads into `buf`'s room after its unread bytes (its
    /// `bytes::BufMut::chunk_mut`, or [`FrameBuf::read_from`]) and returns
    /// how many bytes it read, 0 at the end of the stream; or `Pending`,
    /// having arranged for `cx`'s waker to be woken when it can read.
    ///
    /// # Errors
    ///
    /// The source's.
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut FrameBuf,
    ) -> Poll<io::Result<usize>>;
}

impl<P: PollRead + ?Sized> PollRead for &mut P {
    fn poll_read_into(
        &mut self,
        cx: &mut Context<'_>,
        buf: &mut FrameBuf,
    ) -> Poll<io::Result<usize>> {
        (**self).poll_read_into(cx, buf)
    }
}

/// Frames decoded from a source, read into a pooled [`FrameBuf`]: what
/// tokio-util's `FramedRead` is, over pooled buffers instead of a
/// `BytesMut`, and with no runtime dependency.
///
/// - Over a blocking `std::io::Read` (a `TcpStream`, a file, a `&[u8]`) it
///   is an [`Iterator`] of `Result<D::Item, D::Error>`.
/// - Over a [`PollRead`] (tokio's `AsyncRead`, through a few lines of
///   yours), [`poll_next_frame`](Self::poll_next_frame) polls for the next
///   frame and [`next_frame`](Self::next_frame) awaits it.
///
/// Either way it decodes what is buffered first and reads only when the
/// decoder finds no whole frame; at the end of the stream it asks
/// [`Decoder::decode_eof`] for what is left. After an error, or the end, it
/// yields nothing more.
///
/// Its reads make room as [`FrameBuf::reserve`] does (at least 1 KiB), so
/// at the pool's `memory_limit` a fresh buffer is an overdraft; call
/// [`FrameBuf::try_reserve`] or [`FrameBuf::reserve_async`] on
/// [`read_buffer_mut`](Self::read_buffer_mut) before polling to fail or
/// wait there instead.
///
/// # Examples
///
/// ```
/// use std::net::{TcpListener, TcpStream};
/// use std::io::Write;
/// use std::sync::Arc;
/// use recycler_core::buffer::BufferPool;
/// use recycler_core::codec::{FramedRead, LengthDelimited};
///
/// let listener = TcpListener::bind("127.0.0.1:0")?;
/// let mut client = TcpStream::connect(listener.local_addr()?)?;
/// let (server, _) = listener.accept()?;
/// client.write_all(b"\0\0\0\x02hi\0\0\0\x00")?;
/// drop(client);
///
/// let pool = Arc::new(BufferPool::new());
/// let mut frames = FramedRead::with_capacity(server, LengthDelimited::new(), &pool, 16 * 1024);
/// assert_eq!(frames.next().unwrap()?, b"hi"[..]);
/// assert!(frames.next().unwrap()?.is_empty());
/// assert!(frames.next().is_none()); // the client closed
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct FramedRead<R, D> {
    io: R,
    decoder: D,
    buf: FrameBuf,
    state: State,
    /// Lets the buffer go while the source has nothing to read and nothing
    /// is unread.
    release_when_idle: bool,
}

/// Where the reader is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Reading,
    /// The source has ended: `decode_eof` until it returns `None`.
    Eof,
    /// Ended, or failed: nothing more.
    Done,
}

impl<R, D> FramedRead<R, D> {
    /// Frames that `decoder` decodes from `io`, read into `buf`.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let buf = FrameBuf::with_capacity(&pool, 16 * 1024);
    /// let frames = FramedRead::new(&b"\0\0\0\x01!"[..], LengthDelimited::new(), buf);
    /// assert_eq!(frames.count(), 1);
    /// ```
    pub fn new(io: R, decoder: D, buf: FrameBuf) -> Self {
        Self {
            io,
            decoder,
            buf,
            state: State::Reading,
            release_when_idle: false,
        }
    }

    /// As [`new`](Self::new), over a `FrameBuf` of at least `capacity`
    /// bytes from `pool`.
    ///
    /// # Panics
    ///
    /// As [`BufferPool::acquire`].
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let frames = FramedRead::with_capacity(&b""[..], LengthDelimited::new(), &pool, 64 * 1024);
    /// assert_eq!(frames.read_buffer().capacity(), 64 * 1024);
    /// ```
    pub fn with_capacity(io: R, decoder: D, pool: &Arc<BufferPool>, capacity: usize) -> Self {
        Self::new(io, decoder, FrameBuf::with_capacity(pool, capacity))
    }

    /// With `yes`, [`poll_next_frame`](Self::poll_next_frame) lets the read
    /// buffer go (back to the pool, once its frames have dropped) whenever
    /// the source has nothing to read and nothing is left unread, and takes
    /// a fresh one when it can read again: an idle connection then holds
    /// no buffer, for the price of a pooled acquire and a small allocation
    /// (the buffer's shared count) each time it wakes. Off by default.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let frames = FramedRead::with_capacity(&b""[..], LengthDelimited::new(), &pool, 4096)
    ///     .release_when_idle(true);
    /// # drop(frames);
    /// ```
    pub fn release_when_idle(mut self, yes: bool) -> Self {
        self.release_when_idle = yes;
        self
    }

    /// The source.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let frames = FramedRead::with_capacity(&b"abc"[..], LengthDelimited::new(), &pool, 10);
    /// assert_eq!(frames.get_ref().len(), 3);
    /// ```
    pub fn get_ref(&self) -> &R {
        &self.io
    }

    /// The source, to write to or configure. (Reading from it directly
    /// skips the decoder.)
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut frames = FramedRead::with_capacity(&b"abc"[..], LengthDelimited::new(), &pool, 10);
    /// *frames.get_mut() = &b""[..];
    /// assert!(frames.next().is_none());
    /// ```
    pub fn get_mut(&mut self) -> &mut R {
        &mut self.io
    }

    /// The decoder.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let frames = FramedRead::with_capacity(&b""[..], LengthDelimited::new(), &pool, 10);
    /// assert_eq!(frames.decoder().max_frame_length(), 8 << 20);
    /// ```
    pub fn decoder(&self) -> &D {
        &self.decoder
    }

    /// The decoder, to change its settings.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut frames = FramedRead::with_capacity(&b""[..], LengthDelimited::new(), &pool, 10);
    /// *frames.decoder_mut() = LengthDelimited::new().with_max_frame_length(100);
    /// ```
    pub fn decoder_mut(&mut self) -> &mut D {
        &mut self.decoder
    }

    /// The read buffer: the bytes read and not yet decoded.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut frames = FramedRead::with_capacity(&b"\0\0\0\x09partial"[..], LengthDelimited::new(), &pool, 4096);
    /// assert!(frames.next().unwrap().is_err()); // the stream ended inside a frame
    /// assert_eq!(frames.read_buffer().len(), 11);
    /// ```
    pub fn read_buffer(&self) -> &FrameBuf {
        &self.buf
    }

    /// The read buffer, to make room in it ahead of a read (say with
    /// [`FrameBuf::reserve_async`], to wait at the memory limit).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::builder().memory_limit(64 * 1024).build()?);
    /// let mut frames = FramedRead::with_capacity(&b""[..], LengthDelimited::new(), &pool, 4096);
    /// frames.read_buffer_mut().try_reserve(4096)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn read_buffer_mut(&mut self) -> &mut FrameBuf {
        &mut self.buf
    }

    /// The source, the decoder and the read buffer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let frames = FramedRead::with_capacity(&b"xyz"[..], LengthDelimited::new(), &pool, 10);
    /// let (io, _decoder, buf) = frames.into_parts();
    /// assert_eq!((io, buf.len()), (&b"xyz"[..], 0));
    /// ```
    pub fn into_parts(self) -> (R, D, FrameBuf) {
        (self.io, self.decoder, self.buf)
    }
}

/// What the reader does next.
enum Step<T, E> {
    /// Yields this.
    Yield(Result<T, E>),
    /// Reads more.
    Read,
    /// Yields nothing more.
    End,
}

impl<R, D: Decoder> FramedRead<R, D> {
    /// Decodes what is buffered.
    fn step(&mut self) -> Step<D::Item, D::Error> {
        let decoded = match self.state {
            State::Reading => self.decoder.decode(&mut self.buf),
            State::Eof => self.decoder.decode_eof(&mut self.buf),
            State::Done => return Step::End,
        };
        match decoded {
            Ok(Some(frame)) => Step::Yield(Ok(frame)),
            Ok(None) if self.state == State::Reading => Step::Read,
            Ok(None) => {
                self.state = State::Done;
                Step::End
            }
            Err(err) => {
                self.state = State::Done;
                Step::Yield(Err(err))
            }
        }
    }

    /// Takes a read's outcome: the end of the stream, or its error (to
    /// yield, and nothing after); `Interrupted` is retried.
    fn read_done(&mut self, read: io::Result<usize>) -> Option<D::Error> {
        match read {
            Ok(0) => self.state = State::Eof,
            Ok(_) => {}
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => {
                self.state = State::Done;
                return Some(err.into());
            }
        }
        None
    }
}

impl<R, D: Decoder> FramedRead<R, D> {
    /// A frame already buffered, decoded without reading: to answer every
    /// frame a read brought in one reply, say. `None` if the buffer holds
    /// no whole frame (or the reader is done).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let wire: &[u8] = b"\0\0\0\x01a\0\0\0\x01b";
    /// let mut frames = FramedRead::with_capacity(wire, LengthDelimited::new(), &pool, 4096);
    /// assert!(frames.try_next_frame().is_none()); // nothing read yet
    /// assert_eq!(frames.next().unwrap()?, b"a"[..]); // reads both
    /// assert_eq!(frames.try_next_frame().unwrap()?, b"b"[..]);
    /// assert!(frames.try_next_frame().is_none());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn try_next_frame(&mut self) -> Option<Result<D::Item, D::Error>> {
        match self.step() {
            Step::Yield(frame) => Some(frame),
            Step::Read | Step::End => None,
        }
    }
}

impl<R: io::Read, D: Decoder> Iterator for FramedRead<R, D> {
    type Item = Result<D::Item, D::Error>;

    /// The next frame: decoded from what is buffered, else after reading
    /// (blocking) until the decoder finds one; `None` at the end.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            match self.step() {
                Step::Yield(frame) => return Some(frame),
                Step::End => return None,
                Step::Read => {}
            }
            self.buf.reserve(MIN_READ);
            let read = self.buf.read_from(&mut self.io);
            if let Some(err) = self.read_done(read) {
                return Some(Err(err));
            }
        }
    }
}

impl<R: PollRead, D: Decoder> FramedRead<R, D> {
    /// Polls for the next frame: decoded from what is buffered, else after
    /// reading until the decoder finds one; `Ready(None)` at the end, and
    /// `Pending` (the source has arranged a wake-up) while the source has
    /// nothing to read. What `Stream::poll_next` is: a `Stream` of your own
    /// is a one-line impl over it.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Waker};
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    /// use recycler_core::codec::{FramedRead, LengthDelimited, PollRead};
    ///
    /// /// Two bytes a poll, `Pending` in between.
    /// struct Trickle(&'static [u8], bool);
    ///
    /// impl PollRead for Trickle {
    ///     fn poll_read_into(&mut self, cx: &mut Context<'_>, buf: &mut FrameBuf) -> Poll<io::Result<usize>> {
    ///         self.1 = !self.1;
    ///         if self.1 {
    ///             cx.waker().wake_by_ref();
    ///             return Poll::Pending;
    ///         }
    ///         let n = self.0.len().min(2);
    ///         buf.extend_from_slice(&self.0[..n]);
    ///         self.0 = &self.0[n..];
    ///         Poll::Ready(Ok(n))
    ///     }
    /// }
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let io = Trickle(b"\0\0\0\x03abc", false);
    /// let mut frames = FramedRead::with_capacity(io, LengthDelimited::new(), &pool, 4096);
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let mut polls = 0;
    /// let frame = loop {
    ///     polls += 1;
    ///     if let Poll::Ready(frame) = frames.poll_next_frame(&mut cx) {
    ///         break frame;
    ///     }
    /// };
    /// assert_eq!(frame.unwrap()?, b"abc"[..]);
    /// assert_eq!(polls, 5);
    /// # Ok::<(), io::Error>(())
    /// ```
    pub fn poll_next_frame(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<D::Item, D::Error>>> {
        loop {
            match self.step() {
                Step::Yield(frame) => return Poll::Ready(Some(frame)),
                Step::End => return Poll::Ready(None),
                Step::Read => {}
            }
            self.buf.reserve(MIN_READ);
            let read = match self.io.poll_read_into(cx, &mut self.buf) {
                Poll::Ready(read) => read,
                Poll::Pending => {
                    if self.release_when_idle {
                        self.buf.release_if_empty();
                    }
                    return Poll::Pending;
                }
            };
            if let Some(err) = self.read_done(read) {
                return Poll::Ready(Some(Err(err)));
            }
        }
    }

    /// The next frame, awaited: [`poll_next_frame`](Self::poll_next_frame)
    /// as a future. Cancel safe: a frame is decoded only in the poll that
    /// returns it, and bytes read stay in the buffer.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::future::Future;
    /// use std::io;
    /// use std::pin::pin;
    /// use std::sync::Arc;
    /// use std::task::{Context, Poll, Waker};
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    /// use recycler_core::codec::{FramedRead, LengthDelimited, PollRead};
    ///
    /// struct Ready<'a>(&'a [u8]);
    ///
    /// impl PollRead for Ready<'_> {
    ///     fn poll_read_into(&mut self, _: &mut Context<'_>, buf: &mut FrameBuf) -> Poll<io::Result<usize>> {
    ///         Poll::Ready(buf.read_from(&mut self.0))
    ///     }
    /// }
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let mut frames = FramedRead::with_capacity(Ready(b"\0\0\0\x02hi"), LengthDelimited::new(), &pool, 4096);
    /// let mut cx = Context::from_waker(Waker::noop());
    /// let Poll::Ready(Some(Ok(frame))) = pin!(frames.next_frame()).poll(&mut cx) else { panic!() };
    /// assert_eq!(frame, b"hi"[..]);
    /// ```
    pub async fn next_frame(&mut self) -> Option<Result<D::Item, D::Error>> {
        poll_fn(|cx| self.poll_next_frame(cx)).await
    }
}

impl<R, D> fmt::Debug for FramedRead<R, D> {
    /// The read buffer and where the reader is; not the source or the
    /// decoder.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let frames = FramedRead::with_capacity(&b""[..], LengthDelimited::new(), &pool, 10);
    /// assert_eq!(
    ///     format!("{frames:?}"),
    ///     "FramedRead { buf: FrameBuf { len: 0, pos: 0, capacity: 4096, shared: false, .. }, state: Reading, .. }"
    /// );
    /// ```
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FramedRead")
            .field("buf", &self.buf)
            .field("state", &self.state)
            .finish_non_exhaustive()
    }
}
