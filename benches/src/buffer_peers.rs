//! W4's peers: the peer pools that can serve Jetty's mix, each as one pool
//! of `Vec<u8>` per output size (the buffer pool's buckets, built by hand),
//! so that a buffer of any size comes back to a pool of its size.
//!
//! - `opool`'s `LocalPool` (`!Send`, no synchronization at all: the
//!   strongest single-thread peer), and
//! - `lockfree-object-pool`'s linear pool (the fastest thread-safe peer in
//!   W1).
//!
//! Each writes the buffers as [`w4_mix`](crate::buffers::w4_mix) does: one
//! byte per 4 KiB page of the capacity, or every byte.

use std::ops::DerefMut;
use std::time::{Duration, Instant};

use lockfree_object_pool::LinearObjectPool;
use opool::{LocalPool, PoolAllocator};

use crate::buffers::{Touch, XorShift, touch_pages};

/// Idle buffers each `LocalPool` keeps (W4 holds at most two at a time).
const LOCAL_CAPACITY: usize = 64;

/// Makes `Vec<u8>`s of one capacity for `opool`, and clears them on return.
#[derive(Debug, Clone, Copy)]
pub struct VecOfCapacity(usize);

impl PoolAllocator<Vec<u8>> for VecOfCapacity {
    #[inline]
    fn reset(&self, obj: &mut Vec<u8>) {
        obj.clear();
    }

    fn allocate(&self) -> Vec<u8> {
        Vec::with_capacity(self.0)
    }
}

/// One `opool::LocalPool` per size of `sizes` (and one for the 4 KiB
/// input).
pub struct W4LocalPools {
    input: LocalPool<VecOfCapacity, Vec<u8>>,
    sizes: Vec<usize>,
    outputs: Vec<LocalPool<VecOfCapacity, Vec<u8>>>,
}

impl W4LocalPools {
    /// The pools for W4 with output sizes `sizes`.
    pub fn new(sizes: &[usize]) -> Self {
        Self {
            input: LocalPool::new(LOCAL_CAPACITY, VecOfCapacity(4096)),
            sizes: sizes.to_vec(),
            outputs: sizes
                .iter()
                .map(|&size| LocalPool::new(LOCAL_CAPACITY, VecOfCapacity(size)))
                .collect(),
        }
    }
}

impl std::fmt::Debug for W4LocalPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("W4LocalPools")
            .field("sizes", &self.sizes)
            .finish_non_exhaustive()
    }
}

/// One `lockfree_object_pool::LinearObjectPool` per size of `sizes` (and
/// one for the 4 KiB input).
pub struct W4LinearPools {
    input: LinearObjectPool<Vec<u8>>,
    sizes: Vec<usize>,
    outputs: Vec<LinearObjectPool<Vec<u8>>>,
}

fn linear(size: usize) -> LinearObjectPool<Vec<u8>> {
    LinearObjectPool::new(move || Vec::with_capacity(size), Vec::clear)
}

impl W4LinearPools {
    /// The pools for W4 with output sizes `sizes`.
    pub fn new(sizes: &[usize]) -> Self {
        Self {
            input: linear(4096),
            sizes: sizes.to_vec(),
            outputs: sizes.iter().map(|&size| linear(size)).collect(),
        }
    }
}

impl std::fmt::Debug for W4LinearPools {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("W4LinearPools")
            .field("sizes", &self.sizes)
            .finish_non_exhaustive()
    }
}

/// Writes `buf` as W4 does (see [`Touch`]).
#[inline]
fn touch(buf: &mut Vec<u8>, how: Touch, value: u8) {
    match how {
        Touch::Fill => buf.resize(buf.capacity(), value),
        Touch::Page => touch_pages(buf.spare_capacity_mut(), value),
    }
}

/// The W4 loop over any per-size pools: `take(None)` gets the 4 KiB input,
/// `take(Some(i))` an output of the `i`th size.
#[inline]
fn mix<G: DerefMut<Target = Vec<u8>>>(
    count: usize,
    how: Touch,
    iters: u64,
    mut take: impl FnMut(Option<usize>) -> G,
) -> Duration {
    let mut rng = XorShift::new(0x9E37_79B9_7F4A_7C15);
    let start = Instant::now();
    for i in 0..iters {
        let mut input = take(None);
        touch(&mut input, how, i as u8);
        let mut output = take(Some(rng.below(count)));
        touch(&mut output, how, i as u8);
        drop(output);
        drop(input);
    }
    start.elapsed()
}

/// W4 through `opool`'s `LocalPool`s.
pub fn w4_mix_opool_local(pools: &W4LocalPools, how: Touch, iters: u64) -> Duration {
    mix(pools.sizes.len(), how, iters, |which| match which {
        None => pools.input.get(),
        Some(i) => pools.outputs[i].get(),
    })
}

/// W4 through `lockfree-object-pool`'s linear pools.
pub fn w4_mix_lockfree_linear(pools: &W4LinearPools, how: Touch, iters: u64) -> Duration {
    mix(pools.sizes.len(), how, iters, |which| match which {
        None => pools.input.pull(),
        Some(i) => pools.outputs[i].pull(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffers::W4_ALL_SIZES;

    #[test]
    fn the_peers_hand_out_cleared_buffers_of_their_size() {
        let local = W4LocalPools::new(&W4_ALL_SIZES);
        w4_mix_opool_local(&local, Touch::Fill, 100);
        // Filled to capacity while out, cleared when back, of its size.
        for (pool, &size) in local.outputs.iter().zip(&W4_ALL_SIZES) {
            let buf = pool.get();
            assert!(buf.is_empty());
            assert_eq!(buf.capacity(), size);
        }
        let linear = W4LinearPools::new(&W4_ALL_SIZES);
        w4_mix_lockfree_linear(&linear, Touch::Page, 100);
        let buf = linear.input.pull();
        assert!(buf.is_empty() && buf.capacity() == 4096);
    }
}
