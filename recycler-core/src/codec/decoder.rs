//! [`Decoder`]: frames out of a [`FrameBuf`].

use std::io;

use crate::buffer::FrameBuf;

/// Decodes frames from the front of a [`FrameBuf`]: tokio-util's
/// `Decoder`, over a pooled read buffer instead of a `BytesMut`.
///
/// [`FramedRead`](super::FramedRead) calls [`decode`](Self::decode) after
/// every read until it returns `None`, then reads again; at the end of the
/// stream it calls [`decode_eof`](Self::decode_eof) until that returns
/// `None`. A decoder takes the bytes of each frame it returns out of the
/// buffer ([`split_to_pooled`](FrameBuf::split_to_pooled),
/// [`split_to`](FrameBuf::split_to), `bytes::Buf::advance`...), and may
/// [`reserve`](FrameBuf::reserve) room for the rest of a partial frame.
///
/// # Examples
///
/// A decoder of lines:
///
/// ```
/// use std::io;
/// use std::sync::Arc;
/// use bytes::Buf;
/// use recycler_core::buffer::{BufferPool, FrameBuf, PooledBytes};
/// use recycler_core::codec::{Decoder, FramedRead};
///
/// struct Lines;
///
/// impl Decoder for Lines {
///     type Item = PooledBytes;
///     type Error = io::Error;
///
///     fn decode(&mut self, src: &mut FrameBuf) -> io::Result<Option<PooledBytes>> {
///         let Some(end) = src.iter().position(|&b| b == b'\n') else {
///             return Ok(None);
///         };
///         let line = src.split_to_pooled(end);
///         src.advance(1); // the '\n'
///         Ok(Some(line))
///     }
/// }
///
/// let pool = Arc::new(BufferPool::new());
/// let lines = FramedRead::with_capacity(&b"one\ntwo\n"[..], Lines, &pool, 4096);
/// let lines: Vec<_> = lines.collect::<io::Result<_>>()?;
/// assert_eq!(lines, [&b"one"[..], &b"two"[..]]);
/// # Ok::<(), io::Error>(())
/// ```
pub trait Decoder {
    /// A decoded frame.
    type Item;
    /// Why decoding failed; the reader's I/O errors convert into it.
    type Error: From<io::Error>;

    /// A whole frame from the front of `src`, its bytes taken out of it, or
    /// `None` if `src` holds no whole frame yet (read more).
    ///
    /// # Errors
    ///
    /// The decoder's, for bytes that are no frame; the reader stops.
    fn decode(&mut self, src: &mut FrameBuf) -> Result<Option<Self::Item>, Self::Error>;

    /// At the end of the stream: a frame from what is left, or `None` when
    /// nothing is. By default [`decode`](Self::decode), and an
    /// [`io::ErrorKind::UnexpectedEof`] error if it finds no frame in bytes
    /// that are left (a frame cut off), as tokio-util's.
    ///
    /// # Errors
    ///
    /// As [`decode`](Self::decode); and the end of the stream inside a
    /// frame.
    ///
    /// # Examples
    ///
    /// ```
    /// use std::io;
    /// use std::sync::Arc;
    /// use recycler_core::buffer::BufferPool;
    /// use recycler_core::codec::{FramedRead, LengthDelimited};
    ///
    /// let pool = Arc::new(BufferPool::new());
    /// let cut: &[u8] = b"\0\0\0\x05hel"; // the stream ends inside a frame
    /// let mut frames = FramedRead::with_capacity(cut, LengthDelimited::new(), &pool, 4096);
    /// let err = frames.next().unwrap().unwrap_err();
    /// assert_eq!(err.kind(), io::ErrorKind::UnexpectedEof);
    /// assert!(frames.next().is_none());
    /// ```
    fn decode_eof(&mut self, src: &mut FrameBuf) -> Result<Option<Self::Item>, Self::Error> {
        match self.decode(src)? {
            Some(frame) => Ok(Some(frame)),
            None if src.is_empty() => Ok(None),
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("the stream ended inside a frame ({} bytes left)", src.len()),
            )
            .into()),
        }
    }
}

impl<D: Decoder + ?Sized> Decoder for &mut D {
    type Item = D::Item;
    type Error = D::Error;

    fn decode(&mut self, src: &mut FrameBuf) -> Result<Option<Self::Item>, Self::Error> {
        (**self).decode(src)
    }

    fn decode_eof(&mut self, src: &mut FrameBuf) -> Result<Option<Self::Item>, Self::Error> {
        (**self).decode_eof(src)
    }
}
