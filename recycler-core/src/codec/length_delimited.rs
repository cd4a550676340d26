//! [`LengthDelimited`]: tokio-util's `LengthDelimitedCodec` with its
//! default settings, as a [`Decoder`] of pooled frames.

use std::fmt;
use std::io;

use bytes::Buf;

use super::Decoder;
use crate::buffer::{FrameBuf, PooledBytes};

/// Frames of a 4-byte big-endian length, then that many bytes: the wire
/// format of tokio-util's `LengthDelimitedCodec` with its default settings
/// (and of many protocols). Each frame is [`PooledBytes`] sharing the
/// reader's pooled buffer: no copy, no allocation.
///
/// A frame longer than [`max_frame_length`](Self::max_frame_length) (8 MiB
/// by default, as tokio-util's) is an error, [`FrameTooLong`] inside an
/// [`io::ErrorKind::InvalidData`] error, before anything is buffered for
/// it. For the rest of a partial frame it reserves room at once (as
/// tokio-util's does), so that a frame never spans two buffers; at the
/// pool's memory limit it does not overdraw for that (`try_reserve`), and
/// the reader makes room as it reads.
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use bytes::BufMut;
/// use recycler_core::buffer::{BufferPool, FrameBuf};
/// use recycler_core::codec::{Decoder, LengthDelimited};
///
/// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 4096);
/// let mut codec = LengthDelimited::new();
/// rx.put_slice(b"\0\0\0\x05hel");
/// assert!(codec.decode(&mut rx)?.is_none()); // partial: read more
/// rx.put_slice(b"lo");
/// assert_eq!(codec.decode(&mut rx)?.unwrap(), b"hello"[..]);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct LengthDelimited {
    max_frame_length: usize,
}

/// The length header's size, in bytes.
const HEADER: usize = 4;

impl LengthDelimited {
    /// A decoder of frames up to 8 MiB.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::codec::LengthDelimited;
    ///
    /// assert_eq!(LengthDelimited::new().max_frame_length(), 8 * 1024 * 1024);
    /// ```
    pub const fn new() -> Self {
        Self {
            max_frame_length: 8 * 1024 * 1024,
        }
    }

    /// The same decoder, for frames up to `max` bytes.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::codec::LengthDelimited;
    ///
    /// assert_eq!(LengthDelimited::new().with_max_frame_length(100).max_frame_length(), 100);
    /// ```
    pub const fn with_max_frame_length(self, max: usize) -> Self {
        Self {
            max_frame_length: max,
        }
    }

    /// The longest frame accepted, in bytes (not counting the header).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::codec::LengthDelimited;
    ///
    /// assert_eq!(LengthDelimited::default().max_frame_length(), 8 << 20);
    /// ```
    pub const fn max_frame_length(&self) -> usize {
        self.max_frame_length
    }
}

impl Default for LengthDelimited {
    /// As [`LengthDelimited::new`].
    fn default() -> Self {
        Self::new()
    }
}

impl Decoder for LengthDelimited {
    type Item = PooledBytes;
    type Error = io::Error;

    #[inline]
    fn decode(&mut self, src: &mut FrameBuf) -> io::Result<Option<PooledBytes>> {
        let Some(header) = src.get(..HEADER) else {
            return Ok(None);
        };
        let length = u32::from_be_bytes([header[0], header[1], header[2], header[3]]);
        let frame = match usize::try_from(length) {
            Ok(n) if n <= self.max_frame_length => n,
            _ => {
                let err = FrameTooLong {
                    length: u64::from(length),
                    max: self.max_frame_length,
                };
                return Err(io::Error::new(io::ErrorKind::InvalidData, err));
            }
        };
        let unread = src.len();
        if unread - HEADER < frame {
            // Room for the rest, so the frame ends in this buffer. Not an
            // overdraft: at the limit the reader makes room as it reads.
            let _ = src.try_reserve(frame.saturating_add(HEADER) - unread);
            return Ok(None);
        }
        src.advance(HEADER);
        Ok(Some(src.split_to_pooled(frame)))
    }
}

/// A frame's length header says more than the decoder accepts: the error
/// inside the [`io::ErrorKind::InvalidData`] error that
/// [`LengthDelimited`] returns (find it with `get_ref` and `downcast_ref`).
///
/// # Examples
///
/// ```
/// use std::sync::Arc;
/// use recycler_core::buffer::BufferPool;
/// use recycler_core::codec::{FrameTooLong, FramedRead, LengthDelimited};
///
/// let pool = Arc::new(BufferPool::new());
/// let codec = LengthDelimited::new().with_max_frame_length(10);
/// let wire: &[u8] = b"\0\0\0\x0bhello world";
/// let err = FramedRead::with_capacity(wire, codec, &pool, 4096).next().unwrap().unwrap_err();
/// let too_long = err.get_ref().unwrap().downcast_ref::<FrameTooLong>().unwrap();
/// assert_eq!((too_long.length, too_long.max), (11, 10));
/// assert_eq!(err.to_string(), "a frame of 11 bytes; the longest accepted is 10 bytes");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameTooLong {
    /// The length the header gave.
    pub length: u64,
    /// The longest frame accepted.
    pub max: usize,
}

impl fmt::Display for FrameTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "a frame of {} bytes; the longest accepted is {} bytes",
            self.length, self.max
        )
    }
}

impl std::error::Error for FrameTooLong {}
