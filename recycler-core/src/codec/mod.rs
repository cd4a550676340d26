//! Feature `codec`: decoding frames from a byte stream into pooled buffers,
//! the way tokio-util's `FramedRead` decodes them into a `BytesMut`, with
//! no runtime dependency.
//!
//! - **[`Decoder`]**: tokio-util's `Decoder`, over a
//!   [`FrameBuf`](crate::buffer::FrameBuf): `decode` a whole frame from the
//!   front of the buffer, or `None` to read more; `decode_eof` at the end.
//! - **[`LengthDelimited`]**: the decoder of tokio-util's
//!   `LengthDelimitedCodec` with its default settings (a 4-byte big-endian
//!   length, then that many bytes), yielding
//!   [`PooledBytes`](crate::buffer::PooledBytes): no copy, no allocation.
//! - **[`FramedRead`]**: a decoder and a source, reading into pooled
//!   buffers. Over a blocking `std::io::Read` it is an `Iterator` of
//!   frames; over a source that implements [`PollRead`] (a few lines for a
//!   tokio `AsyncRead`: see there), it is polled with
//!   [`poll_next_frame`](FramedRead::poll_next_frame) or awaited with
//!   [`next_frame`](FramedRead::next_frame).
//!
//! ```
//! use std::sync::Arc;
//! use recycler_core::buffer::BufferPool;
//! use recycler_core::codec::{FramedRead, LengthDelimited};
//!
//! let pool = Arc::new(BufferPool::new());
//! let wire: &[u8] = b"\0\0\0\x05hello\0\0\0\x03bye"; // a socket, say
//! let frames = FramedRead::with_capacity(wire, LengthDelimited::new(), &pool, 4096);
//! let frames: Vec<_> = frames.collect::<Result<_, _>>()?;
//! assert_eq!((frames[0].as_ref(), frames[1].as_ref()), (&b"hello"[..], &b"bye"[..]));
//! # Ok::<(), std::io::Error>(())
//! ```

mod decoder;
mod framed_read;
mod length_delimited;

pub use self::decoder::Decoder;
pub use self::framed_read::{FramedRead, PollRead};
pub use self::length_delimited::{FrameTooLong, LengthDelimited};

#[cfg(all(test, not(loom)))]
mod tests;
