//! Reading into a [`FrameBuf`] from a blocking source: `std::io::Read`
//! wants initialized bytes, so the tail is zeroed once per buffer (the
//! reader keeps a watermark of the bytes known initialized) and read into
//! whole.

use std::io;
use std::ptr;
use std::slice;

use super::{FrameBuf, GROW_BY};

/// The most a read takes at once, so that a large buffer's room is zeroed
/// a step at a time, as it is read into.
const READ_MAX: usize = 64 * 1024;

impl FrameBuf {
    /// Reads once from `reader` into the room after the unread bytes, and
    /// returns how many bytes it read (0 at the end of the stream). A full
    /// buffer first makes room for at least 64 bytes, as
    /// [`reserve`](Self::reserve) does; call `reserve` first for more.
    /// `io::Read` wants initialized memory: the room is zeroed the first
    /// time it is read into, once per buffer, and a read takes at most 64
    /// KiB.
    ///
    /// # Errors
    ///
    /// The reader's error; and [`io::ErrorKind::InvalidData`] if it says it
    /// read more bytes than it was given room for (the bytes are then not
    /// taken).
    ///
    /// # Panics
    ///
    /// As [`reserve`](Self::reserve).
    ///
    /// # Examples
    ///
    /// ```
    /// use std::sync::Arc;
    /// use recycler_core::buffer::{BufferPool, FrameBuf};
    ///
    /// let mut rx = FrameBuf::with_capacity(&Arc::new(BufferPool::new()), 10);
    /// let mut src: &[u8] = b"from a socket";
    /// assert_eq!(rx.read_from(&mut src)?, 13);
    /// assert_eq!(&rx[..], b"from a socket");
    /// assert_eq!(rx.read_from(&mut src)?, 0); // the end
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn read_from<R: io::Read + ?Sized>(&mut self, reader: &mut R) -> io::Result<usize> {
        if self.len == self.cap {
            self.reserve(GROW_BY);
        }
        let room = (self.cap - self.len).min(READ_MAX);
        let end = self.len + room;
        let init = self.init.max(self.len);
        if init < end {
            // SAFETY: `base[init..end]` lies in the buffer's tail (`init >=
            // len`, `end <= cap`), the reader's alone: no `&[u8]` or frame
            // covers it.
            unsafe { ptr::write_bytes(self.base.as_ptr().add(init), 0, end - init) };
            self.init = end;
        }
        // SAFETY: `base[len..end]`, in the tail, is initialized (just now,
        // or before: `init`), inside the allocation, and the reader's
        // alone; the slice lives only for the `read` below, under `&mut
        // self`.
        let tail = unsafe { slice::from_raw_parts_mut(self.base.as_ptr().add(self.len), room) };
        let n = reader.read(tail)?;
        if n > room {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("a read reported {n} bytes into room for {room}"),
            ));
        }
        self.len += n;
        Ok(n)
    }
}
