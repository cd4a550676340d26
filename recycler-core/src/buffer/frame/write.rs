//! Writing into a [`FrameBuf`] with `bytes::BufMut` (tokio's `read_buf`
//! fills it so): always into the tail, after every unread byte and every
//! frame, making room first when it is full.

use std::ptr;

use ::bytes::BufMut;
use ::bytes::buf::UninitSlice;

use super::{FrameBuf, GROW_BY};

#[cfg_attr(docsrs, doc(cfg(feature = "bytes")))]
// SAFETY: `chunk_mut` is the tail, `base[len..cap]`: inside the allocation,
// covered by no `&[u8]` or frame (they cover bytes before `len`);
// `advance_mut` moves `len` over bytes the caller has initialized there,
// never past `cap` (checked).
unsafe impl BufMut for FrameBuf {
    /// As much as a `Vec<u8>` could hold: the reader makes room when full.
    /// Under a hard memory limit (`hard_limit(true)`), the room after the
    /// unread bytes and the memory free under the limit: at most what a
    /// write can get there (a growth takes a bucket's worth, and another
    /// thread may take the memory first: [`FrameBuf::try_reserve`] claims
    /// it).
    #[inline]
    fn remaining_mut(&self) -> usize {
        match self.free_under_hard_limit() {
            Some(free) => (self.cap - self.len)
                .saturating_add(free)
                .min(isize::MAX as usize - self.len()),
            None => isize::MAX as usize - self.len(),
        }
    }

    #[inline]
    #[track_caller]
    unsafe fn advance_mut(&mut self, cnt: usize) {
        if cnt > self.cap - self.len {
            panic!(
                "advance_mut({cnt}) past the capacity ({} of {} written)",
                self.len, self.cap
            );
        }
        self.len += cnt;
    }

    /// The room after the unread bytes. When full, room for at least 64
    /// more bytes is made first, as [`FrameBuf::reserve`] makes it; under a
    /// hard memory limit only if the limit has it (else the slice is
    /// empty, and tokio's `read_buf` reads nothing: `Ok(0)`).
    #[inline]
    fn chunk_mut(&mut self) -> &mut UninitSlice {
        if self.len == self.cap {
            if self.hard_limit() {
                // Nothing past the limit: no room, an empty slice.
                let _ = self.try_reserve(GROW_BY);
            } else {
                self.reserve(GROW_BY);
            }
        }
        // SAFETY: the tail, `base[len..cap]`, is inside the allocation and
        // the reader's alone (see the `unsafe impl`); `&mut self` is held
        // as long as the slice.
        unsafe {
            UninitSlice::from_raw_parts_mut(self.base.as_ptr().add(self.len), self.cap - self.len)
        }
    }

    #[inline]
    fn put_slice(&mut self, src: &[u8]) {
        self.extend_from_slice(src);
    }

    /// Appends `cnt` copies of `val`, making room for all of them first (as
    /// [`FrameBuf::reserve`]).
    ///
    /// # Panics
    ///
    /// As `BufMut` requires, if `cnt` is more than
    /// [`remaining_mut`](BufMut::remaining_mut); and as
    /// [`FrameBuf::reserve`]. The reader is unchanged then.
    #[inline]
    fn put_bytes(&mut self, val: u8, cnt: usize) {
        let remaining = self.remaining_mut();
        if cnt > remaining {
            panic!("put_bytes({cnt}) past the remaining capacity ({remaining})");
        }
        self.reserve(cnt);
        // SAFETY: `reserve` made room for `cnt` bytes in the tail, which is
        // the reader's alone (see the `unsafe impl`).
        unsafe { ptr::write_bytes(self.base.as_ptr().add(self.len), val, cnt) };
        self.len += cnt;
    }
}
