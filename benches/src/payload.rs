//! The object of W1, W2, W6 to W8: 64 bytes, like Netty's benchmark payload,
//! with the reset (or clear) hook of every pool that has one.

use recycler_core::Recyclable;

/// Eight words; reset zeroes them all, so every pool does the same work.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Msg {
    /// The payload.
    pub words: [u64; 8],
}

static_assertions::const_assert_eq!(size_of::<Msg>(), 64);

impl Msg {
    /// Back to the freshly made state.
    #[inline]
    pub fn zero(&mut self) {
        self.words = [0; 8];
    }
}

impl Recyclable for Msg {
    #[inline]
    fn reset(&mut self) {
        self.zero();
    }
}

impl sharded_slab::Clear for Msg {
    #[inline]
    fn clear(&mut self) {
        self.zero();
    }
}

impl poolshark::Poolable for Msg {
    fn empty() -> Self {
        Self::default()
    }

    #[inline]
    fn reset(&mut self) {
        self.zero();
    }

    fn capacity(&self) -> usize {
        1
    }
}
