//! Where W9's contenders get the buffer they encode a message into:
//! [`Buffers`], with a fresh `Vec<u8>` per message ([`FreshVec`]), the
//! recycler's [`BufferPool`], or a peer pool of `Vec<u8>` ([`VecPool`]).

use std::fmt;
use std::ops::DerefMut;

use recycler_core::buffer::{BufferPool, PooledBuf};

use crate::message::EncodeBuf;
use crate::source::Take;

/// A source of encoding buffers; dropping a buffer gives it back.
pub trait Buffers {
    /// What it hands out: empty, with room for at least the capacity asked.
    type Buf<'a>: EncodeBuf
    where
        Self: 'a;

    /// An empty buffer with room for `capacity` bytes.
    fn buffer(&self, capacity: usize) -> Self::Buf<'_>;
}

/// `Vec::with_capacity` for every message: nothing pooled.
///
/// # Examples
///
/// ```
/// use recycler_benches::{Buffers, EncodeBuf, FreshVec};
///
/// let mut b = FreshVec.buffer(16);
/// b.put(b"abc");
/// assert_eq!(b.written(), b"abc");
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct FreshVec;

impl Buffers for FreshVec {
    type Buf<'a> = Vec<u8>;

    #[inline]
    fn buffer(&self, capacity: usize) -> Vec<u8> {
        Vec::with_capacity(capacity)
    }
}

impl Buffers for BufferPool {
    type Buf<'a> = PooledBuf<'a>;

    #[inline]
    fn buffer(&self, capacity: usize) -> PooledBuf<'_> {
        self.acquire(capacity)
    }
}

/// Encoding buffers from a pool of `Vec<u8>` (a peer pool), which resets a
/// vector by clearing it and keeps its capacity.
///
/// # Examples
///
/// ```
/// use recycler_benches::{Buffers, EncodeBuf, LockfreeLinear, VecPool};
///
/// let pool = VecPool(LockfreeLinear::<Vec<u8>>::default());
/// let mut b = pool.buffer(16);
/// b.put(b"abc");
/// assert_eq!(b.written(), b"abc");
/// ```
#[derive(Debug, Default)]
pub struct VecPool<P>(pub P);

impl<P: Take<Object = Vec<u8>>> Buffers for VecPool<P> {
    type Buf<'a>
        = VecGuard<P::Guard<'a>>
    where
        Self: 'a;

    #[inline]
    fn buffer(&self, capacity: usize) -> Self::Buf<'_> {
        let mut g = self.0.take();
        g.reserve(capacity);
        VecGuard(g)
    }
}

/// A pooled `Vec<u8>` guard, written as an [`EncodeBuf`].
pub struct VecGuard<G>(G);

impl<G: DerefMut<Target = Vec<u8>>> EncodeBuf for VecGuard<G> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.0.extend_from_slice(bytes);
    }

    #[inline]
    fn written(&self) -> &[u8] {
        &self.0
    }
}

impl<G: DerefMut<Target = Vec<u8>>> fmt::Debug for VecGuard<G> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("VecGuard")
            .field("len", &self.0.len())
            .finish_non_exhaustive()
    }
}
