//! Fast, safe object reuse: a thread-local object recycler with cross-thread
//! handoff.
//!
//! Programs that make the same kinds of objects millions of times a second
//! (event loops, protocol codecs, message brokers, storage engines) spend much
//! of that time in the allocator and in re-growing buffers. A [`Recycler<T>`]
//! keeps released objects, resets them, and hands them out again, with their
//! allocations intact.
//!
//! # Getting started
//!
//! ```
//! use recycler_core::{Recyclable, Recycler};
//!
//! #[derive(Default)]
//! struct Message {
//!     topic: String,
//!     payload: Vec<u8>,
//! }
//!
//! impl Recyclable for Message {
//!     fn reset(&mut self) {
//!         self.topic.reset();
//!         self.payload.reset();
//!     }
//! }
//!
//! let pool: Recycler<Message> = Recycler::new();
//! for i in 0..3 {
//!     let mut msg = pool.get(); // from the pool, or made by `Message::default`
//!     msg.topic.push_str("orders");
//!     msg.payload.extend_from_slice(&[i; 512]);
//!     // dropped here: reset, and back into this thread's cache
//! }
//! let stats = pool.stats();
//! assert_eq!((stats.created, stats.hits), (1, 2));
//! ```
//!
//! # Deriving
//!
//! `#[derive(Recyclable)]` (default feature `derive`) writes the impl: `reset`
//! resets every field with its own [`Recyclable::reset`], and
//! `retained_bytes` adds up the fields'. Attributes adjust it field by field:
//!
//! - `#[recycle(skip)]` keeps the field's value (a lifetime counter, an id, a
//!   foreign type);
//! - `#[recycle(default)]` assigns `Default::default()`, for a type that is
//!   `Default` but not `Recyclable`;
//! - `#[recycle(with = path::to::fn)]` resets it with a `fn(&mut FieldType)`;
//! - `#[recycle(shrink_to = N)]` clears a collection and caps its capacity at
//!   `N` ([`ShrinkTo`]), so that one huge value cannot bloat the pool;
//! - on an enum, `#[recycle(default)]` or std's `#[default]` (which
//!   `#[derive(Default)]` reads too) marks the unit variant `reset` returns
//!   to;
//! - `#[recycle(bound = "..")]`, on the type or on a field, replaces the
//!   `T: Recyclable` bounds the derive infers for type parameters with the
//!   predicates given (`""` for none), as serde's `bound` does;
//! - `#[recycle(crate = path)]` points the generated code at a re-export of
//!   this crate.
//!
//! ```
//! use std::time::Instant;
//! use recycler_core::{Recyclable, Recycler};
//!
//! #[derive(Recyclable)]
//! struct Connection {
//!     read_buf: Vec<u8>,
//!     #[recycle(shrink_to = 64 * 1024)]
//!     write_buf: Vec<u8>,
//!     #[recycle(skip)]
//!     requests_served: u64,
//!     #[recycle(skip)]
//!     opened_at: Instant,
//!     state: State,
//! }
//!
//! #[derive(Recyclable)]
//! enum State {
//!     #[default]
//!     Idle,
//!     Reading { expected: usize },
//! }
//!
//! let pool = Recycler::with_factory(|| Connection {
//!     read_buf: Vec::with_capacity(4096),
//!     write_buf: Vec::new(),
//!     requests_served: 0,
//!     opened_at: Instant::now(),
//!     state: State::Idle,
//! });
//!
//! let mut conn = pool.get();
//! conn.read_buf.extend_from_slice(b"GET / HTTP/1.1\r\n");
//! conn.write_buf.resize(1 << 20, 0); // one huge response
//! conn.requests_served += 1;
//! conn.state = State::Reading { expected: 512 };
//! drop(conn);
//!
//! let conn = pool.get(); // the same connection, reset
//! assert!(conn.read_buf.is_empty() && conn.read_buf.capacity() >= 4096);
//! assert_eq!(conn.write_buf.capacity(), 64 * 1024); // capped, not 1 MiB
//! assert_eq!(conn.requests_served, 1); // skipped: survives reuse
//! assert!(conn.opened_at <= Instant::now());
//! assert!(matches!(conn.state, State::Idle));
//! ```
//!
//! A collection's `reset` keeps the collection's allocation but drops its
//! elements, so a `Vec<String>` or `HashMap<String, String>` field allocates
//! its strings again on every use. A [`RecycleVec`] keeps its elements,
//! reset, and [`RecycleVec::push_reset`] hands them out again:
//!
//! ```
//! use recycler_core::{Recyclable, RecycleVec, Recycler};
//!
//! #[derive(Default, Recyclable)]
//! struct Request {
//!     headers: RecycleVec<(String, String)>,
//!     tags: RecycleVec<String>,
//! }
//!
//! let pool: Recycler<Request> = Recycler::new();
//! let mut req = pool.get();
//! req.tags.push_reset().push_str("urgent");
//! let tag = req.tags[0].as_ptr();
//! drop(req);
//!
//! let mut req = pool.get();
//! req.tags.push_reset().push_str("later"); // the kept string, reset
//! assert_eq!(req.tags[0].as_ptr(), tag);
//! ```
//!
//! [The derive guide](guide::derive) has an example of every attribute and
//! shape, the rules for type-parameter bounds and `retained_bytes`, and the
//! compiler's message for each mistake.
//!
//! # Buffers
//!
//! [`buffer::BufferPool`] pools byte buffers in capacity buckets (4 KiB steps
//! up to 64 KiB by default), each bucket a `Recycler` of buffers. It adds
//! what byte buffers need: a cap on the memory held idle, counted when
//! buffers come back and enforced by evicting idle buffers of *other*
//! buckets first (as Jetty does); a hard limit on all the memory its buffers
//! hold (as the JDK's `MaxDirectMemorySize` does); aligned buffers (for
//! `O_DIRECT` and io_uring); scopes that lend `&mut [u8]` slices and return
//! every buffer when they end; and, with the `bytes` feature, `BufMut` and a
//! zero-copy conversion into `bytes::Bytes`.
//!
//! ```
//! use std::io::Write;
//! use recycler_core::AcquireError;
//! use recycler_core::buffer::BufferPool;
//!
//! let pool = BufferPool::builder()
//!     .max_idle_memory(1 << 20) // at most 1 MiB idle, across buckets and threads
//!     .memory_limit(4 << 20) // at most 4 MiB in all, in use and idle
//!     .alignment(4096)
//!     .build()?;
//!
//! let mut buf = pool.acquire(1500); // rounded up: 4096 bytes, empty
//! write!(buf, "HTTP/1.1 200 OK\r\n")?;
//! assert!(buf.starts_with(b"HTTP"));
//! assert_eq!(buf.as_ptr() as usize % 4096, 0);
//! drop(buf); // back into this thread's cache for the 4 KiB bucket
//!
//! // Past the limit: a typed error, not an abort.
//! let big = pool.try_acquire(8 << 20).unwrap_err();
//! assert!(matches!(big, AcquireError::LimitExceeded { .. }));
//!
//! // A scope: several slices alive at once, all returned at the end.
//! {
//!     let scope = pool.scope();
//!     let header = scope.alloc_zeroed(64);
//!     let body = scope.alloc(1000);
//!     header[0] = 1;
//!     body[0] = 2;
//! }
//! let stats = pool.stats();
//! assert_eq!(stats.buckets[0].in_use, 0);
//! println!("{stats}"); // one line per bucket in use, with its hit ratio
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The same idle-memory accounting caps any recycler in bytes:
//! [`RecyclerBuilder::max_idle_bytes`] measures each idle object with
//! [`Recyclable::retained_bytes`]. [The buffer guide](guide::buffers)
//! explains the buckets, the cap and its overshoot bound, the eviction order,
//! the limit and waiting for memory, alignment, scopes and `bytes`.
//!
//! # How it works
//!
//! Each thread has its own cache of idle objects. [`Recycler::get`] pops it,
//! and dropping the guard on the same thread pushes onto it: a thread-local
//! lookup, a pop and a push, with no lock and no atomic read-modify-write. A
//! guard dropped on another thread sends its object home through the owner's
//! inbox, gathered in batches so that one channel operation moves many
//! objects. A cache that grows past
//! [`max_capacity_per_thread`](RecyclerBuilder::max_capacity_per_thread)
//! spills a batch to a shared depot; a thread with nothing cached refills from
//! its inbox, then from the depot, and only then calls the factory. When a
//! thread exits, its cache and inbox go to the depot, so no object is stranded
//! with a dead thread.
//!
//! [`RecyclerBuilder::striped`] replaces the per-thread caches with a cache
//! per CPU, for work-stealing runtimes whose tasks migrate and whose workers
//! idle: no object ever waits with a thread. On Linux x86-64 the CPUs'
//! caches are worked on in restartable sequences (no lock, no atomic
//! read-modify-write); elsewhere they are lock-guarded stripes. [The user's guide](guide::usage) says which mode to
//! choose, with the measured costs.
//!
//! The guard, [`Pooled`], returns the object when dropped. Rust's ownership
//! makes a double release impossible, and [`Recyclable::reset`] runs on
//! release, on the releasing thread (with
//! [`reset_on_return(false)`](RecyclerBuilder::reset_on_return), when the
//! home thread takes the object back). See [the design notes](guide::design)
//! for the design and its invariants.
//!
//! # Safety and correctness
//!
//! The unsafe code is confined to the per-thread cache (an `UnsafeCell` that
//! only the owning thread touches), the guards (which move the object out
//! exactly once), the thread-exit hook, the per-CPU cache's critical
//! sections (two `asm!` blocks, each with the registers and memory it
//! touches in its `SAFETY` comment, and a loom model of the kernel's side),
//! and, in the buffer pool, the aligned
//! allocation (one file, `buffer/raw.rs`), the buffer's byte views and the
//! scope's `&self -> &mut [u8]`. Every `unsafe` block states the invariant
//! it relies on in a `SAFETY` comment. All synchronization goes through one
//! facade module, so the 44 loom models in the `recycler-tests` package
//! check the real code, and every atomic, lock and channel operation of the
//! crate is reached by at least one: among them a foreign release racing the
//! owner's drain, a thread exit racing a refill from the depot, a waiter at
//! the memory limit racing a release, and a striped get moving objects
//! between stripes. Stress tests, model-based tests and a soak count every
//! object: made = in use + idle + dropped + detached.
//!
//! # Feature flags
//!
//! - **`derive`** (on by default): the `#[derive(Recyclable)]` macro,
//!   re-exported as `recycler_core::Recyclable` beside the trait of the same
//!   name, so that one import brings both. The `recycler-derive` crate is a
//!   dependency either way (the buffer pool's own buffer type derives the
//!   trait); turning the feature off only removes the re-export.
//! - **`bytes`**: interoperation with the [`bytes`](https://docs.rs/bytes)
//!   crate: `bytes::BufMut` for [`buffer::PooledBuf`] and
//!   [`buffer::OwnedPooledBuf`] (so that tokio's `read_buf` fills them);
//!   `OwnedPooledBuf::into_bytes` and `From<OwnedPooledBuf> for Bytes`, a
//!   zero-copy conversion whose last clone returns the memory to the pool;
//!   `FrameBuf`, a pooled read buffer for codecs, whose frames
//!   (`PooledBytes`, or `Bytes`) share its buffer without a copy;
//!   and [`Recyclable`] and [`ShrinkTo`] for `bytes::BytesMut`.
//! - **`codec`** (implies `bytes`): `recycler_core::codec`, a `Decoder` trait over
//!   `FrameBuf`, a length-delimited decoder, and `FramedRead`, which reads
//!   frames into pooled buffers from a blocking `io::Read` or, with no
//!   runtime dependency, from any source that can be polled (a tokio
//!   `AsyncRead` in a few lines).
//! - **`track`**: leak tracking by call site. The methods that hand out
//!   guards and buffers are `#[track_caller]`, each live one remembers where
//!   it was taken, and `Recycler::leaks` and `BufferPool::leaks` return a
//!   `Leaks` report of what is in use, grouped by call site. A lock and a
//!   hash per get and per release: for tests and staging, not production.
//!   Off, none of it is compiled.
//!
//! Items that need a feature say so on their page.
//!
//! # Examples
//!
//! The crate's `examples/` directory has programs that print what they show:
//!
//! - `quickstart`: a local recycler, a `static` one, and a guard released on
//!   another thread;
//! - `event_loop`: one thread serving requests with pooled messages and
//!   buffers, every get and release on the owner's fast path;
//! - `pipeline`: three stages on three threads handing guards along
//!   channels, each object released on the last stage and sent home;
//! - `tcp_echo`: an echo server on loopback within a small memory limit, and
//!   what the limit does to the hit ratio;
//! - `tokio_echo`: the same on tokio, sixteen connections sharing four
//!   buffers' worth of memory through `acquire_owned_async` (feature
//!   `bytes`, for tokio's `read_buf`);
//! - `framed_codec`: a length-prefixed server reading through
//!   `codec::FramedRead`, tokio-util's `LengthDelimitedCodec` clients
//!   (feature `codec`).
//!
//! Run one with `cargo run --release -p recycler-core --example NAME`
//! (`--features bytes` for `tokio_echo`, `--features codec` for
//! `framed_codec`).
#![doc(test(no_crate_inject, attr(deny(warnings))))]
// The feature badges of docs.rs, which builds the docs with nightly and
// `--cfg docsrs`; stable builds never see the attribute.
#![cfg_attr(docsrs, feature(doc_cfg))]

// Lets the derive's output, which names `::recycler_core`, work in this crate.
extern crate self as recycler_core;

mod as_bucket;
mod box_like;
pub mod buffer;
mod builder;
mod cache;
mod capped;
mod claim;
#[cfg(feature = "codec")]
#[cfg_attr(docsrs, doc(cfg(feature = "codec")))]
pub mod codec;
mod config;
mod cpu;
mod decay;
mod depot;
mod error;
mod exit;
mod fence;
mod forward;
mod gate;
mod guard;
mod guard_docs;
pub mod guide;
mod handle;
mod handoff;
mod home;
mod idle;
mod inbox;
mod keep;
mod loom;
mod mine;
mod near;
mod owned;
mod owner;
mod percpu;
mod recyclable;
mod recycle_vec;
mod recycler;
mod registry;
mod resetting;
mod rseq;
mod shared;
mod shrink;
mod slow_get;
mod slow_release;
mod stats;
mod steal;
mod striped;
#[cfg(feature = "track")]
mod track;
mod trim;
mod unwind;

pub use crate::builder::RecyclerBuilder;
pub use crate::error::{AcquireError, ConfigError};
pub use crate::guard::Pooled;
pub use crate::handle::RecyclerHandle;
pub use crate::owned::OwnedPooled;
pub use crate::recyclable::Recyclable;
pub use crate::recycle_vec::RecycleVec;
pub use crate::recycler::Recycler;
pub use crate::shrink::ShrinkTo;
pub use crate::stats::RecyclerStats;
#[cfg(feature = "track")]
#[cfg_attr(docsrs, doc(cfg(feature = "track")))]
pub use crate::track::{LeakSite, Leaks};

#[cfg(feature = "derive")]
#[cfg_attr(docsrs, doc(cfg(feature = "derive")))]
pub use recycler_derive::Recyclable;

/// Not part of the API: the per-CPU cache on restartable sequences that
/// striped mode is built on, for the workspace's tests and benchmarks.
#[doc(hidden)]
pub use crate::percpu::PerCpu as __PerCpu;

/// Loom builds only: moves the calling thread to a modelled CPU, for the
/// per-CPU cache's models (see `tests/tests/loom_percpu.rs`).
#[cfg(loom)]
#[doc(hidden)]
pub use crate::rseq::set_cpu as __loom_set_cpu;

/// Loom builds only: makes the calling thread's next recyclers and per-CPU
/// caches run without restartable sequences (`true`), as
/// `RECYCLER_NO_RSEQ=1` does for a process (see `tests/tests/loom_striped.rs`).
#[cfg(loom)]
#[doc(hidden)]
pub use crate::rseq::set_off as __loom_no_rseq;

/// Loom builds only: runs the calling thread's exit hooks now (see
/// `tests/tests/loom.rs`).
#[cfg(loom)]
#[doc(hidden)]
pub use crate::registry::run_exit_hooks_now as __loom_thread_exit;
