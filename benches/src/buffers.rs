//! The buffer-pool workloads, W3 to W5: each takes a contender and an
//! operation count and returns how long the operations took (W4 also the
//! hit ratio of the 4 KiB bucket).
//!
//! - **W3** (fill): acquire a buffer, write every byte, release it; the pool
//!   against `Vec::with_capacity` + fill and `vec![0; n]` + fill.
//! - **W4** (Jetty's `inputFixedCapacityOutputRandomCapacity`): per
//!   operation a 4 KiB input buffer and an output buffer of a random
//!   capacity, both written and released; with all 16 sizes or a fixed few
//!   (`write_diversity`), writing every byte or one byte per 4 KiB page.
//! - **W5** (Panama's): `k` buffers of 1 KiB allocated, written and released
//!   together: a scope, direct acquires, an exhausted pool (nothing pooled:
//!   every buffer allocated and freed), `Vec` (malloc/free) and `bumpalo`.

use std::hint::black_box;
use std::mem::MaybeUninit;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bumpalo::Bump;
use recycler_core::buffer::{BufferPool, PooledBuf};

/// The sizes of W4's output buffers with full write diversity: every bucket
/// of the default pool.
pub const W4_ALL_SIZES: [usize; 16] = [
    4096, 8192, 12288, 16384, 20480, 24576, 28672, 32768, 36864, 40960, 45056, 49152, 53248, 57344,
    61440, 65536,
];

/// W4's output sizes with little write diversity: a fixed few buckets.
pub const W4_FEW_SIZES: [usize; 4] = [8192, 16384, 32768, 65536];

/// The size of W5's buffers.
pub const W5_SIZE: usize = 1024;

/// How a workload writes a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Touch {
    /// Every byte (a `memset`).
    Fill,
    /// One byte per 4 KiB page, so that `memset` does not hide the pool's
    /// own cost.
    Page,
}

/// A small, fast generator (xorshift64): W4's random output sizes.
#[derive(Debug, Clone)]
pub struct XorShift(u64);

impl XorShift {
    /// A generator from a non-zero seed.
    pub fn new(seed: u64) -> Self {
        Self(seed.max(1))
    }

    /// The next number.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`, by multiplying and shifting rather than dividing
    /// (a 64-bit division would cost the harness more than the pool).
    #[inline]
    pub fn below(&mut self, n: usize) -> usize {
        (((self.next_u64() >> 32) * n as u64) >> 32) as usize
    }
}

/// W3 with the pool: acquire `size` bytes, write every byte, release.
pub fn w3_fill_pool(pool: &BufferPool, size: usize, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let mut buf = pool.acquire(size);
        buf.resize(size, i as u8);
        black_box(&mut buf[..]);
    }
    start.elapsed()
}

/// W3's guard rows and comparison of modes: acquire a buffer, write 8
/// bytes, release (the guard's cost, not the memory's).
pub fn w3_touch_pool(pool: &BufferPool, size: usize, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let mut buf = pool.acquire(size);
        buf.extend_from_slice(&i.to_le_bytes());
        black_box(&mut buf[..]);
    }
    start.elapsed()
}

/// [`w3_touch_pool`] with an owned buffer (`acquire_owned`), as tokio code
/// takes one.
pub fn w3_touch_pool_owned(pool: &Arc<BufferPool>, size: usize, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let mut buf = pool.acquire_owned(size);
        buf.extend_from_slice(&i.to_le_bytes());
        black_box(&mut buf[..]);
    }
    start.elapsed()
}

/// [`w3_touch_pool`]'s baseline: `Vec::with_capacity(size)`, 8 bytes
/// written, dropped.
pub fn w3_touch_vec_with_capacity(size: usize, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let mut v: Vec<u8> = Vec::with_capacity(size);
        v.extend_from_slice(&i.to_le_bytes());
        black_box(&mut v[..]);
    }
    start.elapsed()
}

/// W3's first baseline: `Vec::with_capacity(size)`, write every byte, drop.
pub fn w3_fill_vec_with_capacity(size: usize, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let mut v: Vec<u8> = Vec::with_capacity(size);
        v.resize(size, i as u8);
        black_box(&mut v[..]);
    }
    start.elapsed()
}

/// W3's second baseline: `vec![0; size]` (zeroed), write every byte, drop.
/// The zeroed vector goes through `black_box` so that the compiler cannot
/// fold the zeroing into the fill.
pub fn w3_fill_vec_zeroed(size: usize, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let mut v: Vec<u8> = black_box(vec![0; size]);
        v.fill(i as u8);
        black_box(&mut v[..]);
    }
    start.elapsed()
}

/// Writes a buffer as `touch` says, up to its capacity.
#[inline]
fn touch(buf: &mut PooledBuf<'_>, how: Touch, value: u8) {
    match how {
        Touch::Fill => buf.resize(buf.capacity(), value),
        Touch::Page => touch_pages(buf.spare_capacity_mut(), value),
    }
}

/// Writes one byte per 4 KiB page of `spare` ([`Touch::Page`]).
#[inline]
pub(crate) fn touch_pages(spare: &mut [MaybeUninit<u8>], value: u8) {
    for page in spare.chunks_mut(4096) {
        page[0].write(value);
    }
    black_box(spare.as_ptr());
}

/// What a W4 run measured.
#[derive(Debug, Clone, Copy)]
pub struct W4Run {
    /// Time for all the operations.
    pub elapsed: Duration,
    /// The share of the 4 KiB bucket's acquires served by an idle buffer
    /// during the run (NaN when the pool keeps no statistics).
    pub hit_ratio_4k: f64,
}

/// The pool of W4: the default buckets (4 KiB to 64 KiB), with an idle
/// memory cap or not, counting statistics or not.
pub fn w4_pool(max_idle_memory: Option<usize>, statistics: bool) -> BufferPool {
    let builder = BufferPool::builder().statistics(statistics);
    let builder = match max_idle_memory {
        Some(cap) => builder.max_idle_memory(cap),
        None => builder,
    };
    builder.build().expect("valid W4 pool")
}

/// W4's pool in striped mode (one stripe per CPU), unbounded, with
/// statistics: beside the per-thread pool, what the stripes' locks cost.
pub fn w4_striped_pool() -> BufferPool {
    BufferPool::builder()
        .striped(0)
        .build()
        .expect("valid W4 striped pool")
}

/// W4: per operation, a 4 KiB input buffer and an output buffer of a
/// capacity drawn from `sizes`; both are written as `how` says and released
/// (output first). Returns the time and the 4 KiB bucket's hit ratio.
pub fn w4_mix(pool: &BufferPool, sizes: &[usize], how: Touch, iters: u64) -> W4Run {
    let before = pool.stats().buckets[0];
    let mut rng = XorShift::new(0x9E37_79B9_7F4A_7C15);
    let start = Instant::now();
    for i in 0..iters {
        let mut input = pool.acquire(4096);
        touch(&mut input, how, i as u8);
        let size = sizes[rng.below(sizes.len())];
        let mut output = pool.acquire(size);
        touch(&mut output, how, i as u8);
        drop(output);
        drop(input);
    }
    let elapsed = start.elapsed();
    let after = pool.stats().buckets[0];
    let acquires = after.acquires - before.acquires;
    let hit_ratio_4k = if pool.stats().statistics && acquires > 0 {
        (after.pooled - before.pooled) as f64 / acquires as f64
    } else {
        f64::NAN
    };
    W4Run {
        elapsed,
        hit_ratio_4k,
    }
}

/// The pool of W5: buckets of 1 KiB steps, room for 256 idle buffers per
/// thread and bucket (W5 holds up to 200 at once).
pub fn w5_pool() -> BufferPool {
    BufferPool::builder()
        .bucket_step(W5_SIZE)
        .max_capacity(64 * 1024)
        .max_idle_per_thread(256)
        .build()
        .expect("valid W5 pool")
}

/// W5's exhausted pool: the same buckets, but nothing is kept, so every
/// acquire allocates and every release frees (Panama's pool with no free
/// segments, falling back to malloc).
pub fn w5_exhausted_pool() -> BufferPool {
    BufferPool::builder()
        .bucket_step(W5_SIZE)
        .max_capacity(64 * 1024)
        .max_idle_per_thread(0)
        .build()
        .expect("valid W5 pool")
}

/// W5 with a scope: `k` slices of 1 KiB from one scope, each written in
/// full; all returned when the scope drops. Returns the time per round.
pub fn w5_scope(pool: &BufferPool, k: usize, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        let scope = pool.scope();
        for _ in 0..k {
            let bytes = scope.alloc(W5_SIZE);
            bytes.fill(i as u8);
            black_box(bytes);
        }
    }
    start.elapsed()
}

/// W5 with direct acquires: `k` buffers of 1 KiB held at once, each written
/// in full, then all released.
pub fn w5_acquire(pool: &BufferPool, k: usize, iters: u64) -> Duration {
    let mut held = Vec::with_capacity(k);
    let start = Instant::now();
    for i in 0..iters {
        for _ in 0..k {
            let mut buf = pool.acquire(W5_SIZE);
            buf.resize(W5_SIZE, i as u8);
            black_box(&mut buf[..]);
            held.push(buf);
        }
        held.clear();
    }
    start.elapsed()
}

/// W5 with `Vec` (malloc/free): `k` vectors of 1 KiB, each written in
/// full, then all dropped.
pub fn w5_vec(k: usize, iters: u64) -> Duration {
    let mut held: Vec<Vec<u8>> = Vec::with_capacity(k);
    let start = Instant::now();
    for i in 0..iters {
        for _ in 0..k {
            let mut v = Vec::with_capacity(W5_SIZE);
            v.resize(W5_SIZE, i as u8);
            black_box(&mut v[..]);
            held.push(v);
        }
        held.clear();
    }
    start.elapsed()
}

/// W5 with `bumpalo` as the arena: `k` slices of 1 KiB, each written in
/// full, then the arena is reset (its memory kept for the next round).
pub fn w5_bumpalo(bump: &mut Bump, k: usize, iters: u64) -> Duration {
    let start = Instant::now();
    for i in 0..iters {
        for _ in 0..k {
            let bytes = bump.alloc_slice_fill_copy(W5_SIZE, i as u8);
            black_box(bytes);
        }
        bump.reset();
    }
    start.elapsed()
}
