//! A pool of byte buffers in capacity buckets: the Rust answer to Jetty's
//! `ArrayByteBufferPool`, the JDK's direct-memory limit and Panama's pooled
//! segments.
//!
//! - **Buckets.** [`BufferPool::acquire`]`(n)` rounds `n` up to a multiple of
//!   `bucket_step` (4 KiB by default) up to `max_capacity` (64 KiB): 16
//!   buckets, each a [`Recycler`](crate::Recycler) of buffers, with its
//!   thread-local caches, inboxes and depot. Larger requests get a buffer of
//!   their exact size that is freed when dropped.
//! - **[`PooledBuf`].** Dereferences to the bytes written; `Vec`-like
//!   (`push`, `extend_from_slice`, `io::Write`, `spare_capacity_mut` and
//!   `set_len` for reads); grows like a `Vec` when written past its
//!   capacity, and then returns to the bucket of its new capacity.
//!   [`OwnedPooledBuf`] is `'static`, for tasks.
//! - **Idle-memory cap** ([`max_idle_memory`](BufferPoolBuilder::max_idle_memory)).
//!   Counted on release; a release that would go over evicts idle buffers
//!   of other buckets, from a random one on; only if that is not enough is
//!   the released buffer dropped. Counted in per-thread deltas: no shared
//!   write per operation, and a documented overshoot bound.
//! - **Per-bucket cap** ([`max_idle_per_bucket`](BufferPoolBuilder::max_idle_per_bucket)).
//!   Jetty's `maxBucketSize`: at most `n` idle buffers in each bucket, all
//!   threads together; counted the same way, in an account per bucket; a
//!   release over it frees its buffer.
//! - **Memory limit** ([`memory_limit`](BufferPoolBuilder::memory_limit)).
//!   A cap on all buffer memory: charge it, else free idle buffers and
//!   retry, else fail with [`AcquireError::LimitExceeded`](crate::AcquireError::LimitExceeded);
//!   [`BufferPool::acquire_async`] (a task), [`PooledBuf::reserve_async`]
//!   (a growth) and [`BufferPool::acquire_timeout`] (a thread) wait for
//!   memory to be freed, in one queue, in order, each as soon as it fits
//!   (a large waiter passed at most 16 times);
//!   [`BufferPool::prefill`] warms a bucket within the limits. The methods
//!   that cannot fail (`acquire`, `push`, `BufMut`, `io::Write`...) never
//!   panic there: they are served as counted **overdrafts**, outside the
//!   limit and never pooled ([`hard_limit`](BufferPoolBuilder::hard_limit)
//!   counts them as violations, and makes `io::Write` fail).
//! - **Alignment** ([`alignment`](BufferPoolBuilder::alignment)), e.g. 4096
//!   for `O_DIRECT` or io_uring registered buffers.
//! - **Scopes.** [`BufferPool::scope`] lends `&mut [u8]` slices from pooled
//!   buffers and returns them all when it drops.
//! - **Statistics.** [`BufferPool::stats`]: per bucket acquires, hits,
//!   evictions and the rest, from per-thread counters, and the waits at the
//!   limit (waiting now, waits, timeouts, cancellations); the overdrafts;
//!   its `Display` is a Jetty-style dump.
//! - **`bytes`** (feature). `bytes::BufMut` for the buffers, and
//!   [`OwnedPooledBuf`] into `bytes::Bytes` without a copy; `FrameBuf`, a
//!   pooled read buffer for codecs (`BufMut` to fill, `bytes::Buf` to
//!   decode, `split_to_pooled` a frame off as `PooledBytes`, or `split_to`
//!   as `Bytes`, sharing the pooled memory, while the reader writes on
//!   after it).
//!
//! [The buffer guide](crate::guide::buffers) explains each of these, with
//! the reasoning and the numbers.
//!
//! # Examples
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use recycler_core::buffer::BufferPool;
//!
//! let pool = Arc::new(
//!     BufferPool::builder()
//!         .max_idle_memory(1 << 20) // 1 MiB idle at most
//!         .memory_limit(16 << 20) // 16 MiB in all
//!         .build()?,
//! );
//!
//! let mut input = pool.acquire(4096);
//! input.extend_from_slice(b"request");
//! let mut output = pool.acquire_timeout(20_000, Duration::from_millis(10))?;
//! output.extend_from_slice(&input);
//! let reply = pool.acquire_owned(100);
//! std::thread::spawn(move || drop(reply)).join().unwrap(); // released elsewhere
//! drop((input, output));
//!
//! let stats = pool.stats();
//! assert_eq!(stats.buckets[0].acquires, 2);
//! println!("{stats}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod bucket;
mod buf;
mod builder;
#[cfg(feature = "bytes")]
mod bytes;
mod config;
mod evict;
#[cfg(feature = "bytes")]
mod frame;
mod grow;
mod guard;
mod handle;
mod index;
mod ledger;
mod limit;
mod loan;
mod near;
mod owned;
mod owner;
mod pool;
#[cfg(feature = "bytes")]
mod pooled_bytes;
mod prefill;
mod raw;
mod scope;
mod shared;
mod sizes;
mod slow;
mod stats;
mod units;
mod vec_like;
mod wait;

pub use self::builder::BufferPoolBuilder;
#[cfg(feature = "bytes")]
pub use self::frame::FrameBuf;
pub use self::guard::PooledBuf;
pub use self::handle::BufferPoolHandle;
pub use self::owned::OwnedPooledBuf;
pub use self::pool::BufferPool;
#[cfg(feature = "bytes")]
pub use self::pooled_bytes::PooledBytes;
pub use self::scope::Scope;
#[cfg(loom)]
#[doc(hidden)]
pub use self::shared::__loom_pools_freed;
pub use self::stats::{BucketStats, BufferPoolStats};
