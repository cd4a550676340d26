//! Workloads shared by the criterion suites in `benches/` and by the
//! `compare` binary, so that both measure exactly the same code.
//!
//! Every benchmark binary of this package runs under [`Dispatch`] as its
//! global allocator, which calls the system allocator, jemalloc or mimalloc
//! as the environment variable `RECYCLER_BENCHES_ALLOC` says (jemalloc when
//! it is unset); see [`global`] for how, why, and what it costs.
//! `compare` runs the workloads that depend on the allocator once per
//! allocator, each in its own process.
//!
//! The pieces:
//!
//! - [`Take`] and [`Source`], the faces every contender shows a workload;
//!   the recycler ([`recyclers()`], [`RecyclerOwned`]), [`Boxed`] and the
//!   peer pools ([`ShardedSlab`] and the rest) implement them; [`Thingbuf`],
//!   a channel that is its own pool, runs W2 and W2M itself;
//! - [`Msg`], the 64-byte object of W1, W2 and W6 to W8, and [`Message`],
//!   the message of W9 with its encoding and its [`Corpus`];
//! - the workloads: `w1_*` to `w9_*` here, W2M (the message pipeline,
//!   [`w2m_pipeline`]), `w3_*` to `w5_*` in [`buffers`], W10's wake-up
//!   latencies in [`wakeup`];
//! - [`affinity`]: the producer/consumer workloads (W2, W2M) pin their two
//!   threads to two CPUs where the OS allows;
//! - [`process`]: the examples that measure memory read their resident set
//!   and run each contender in a process of its own.

pub mod affinity;
mod alloc;
pub mod buffer_peers;
pub mod buffers;
mod encoding;
mod floors;
pub mod global;
mod message;
mod payload;
mod peers;
mod pipeline;
pub mod process;
mod recyclers;
mod source;
mod thingbuf_channel;
pub mod wakeup;
mod workloads;

pub use crate::alloc::{AllocBox, DirectAlloc, JeBox, Jemalloc, MiBox, MiMalloc, SysBox, System};
pub use crate::encoding::{Buffers, FreshVec, VecGuard, VecPool};
pub use crate::floors::{w1_floor, w1_floor_slot};
pub use crate::global::{Dispatch, ENV, GlobalAllocator, bench_group, check_env};
pub use crate::message::{Corpus, EncodeBuf, Headers, MAX_PAYLOAD, MIN_PAYLOAD, Message, glance};
pub use crate::payload::Msg;
pub use crate::peers::{
    LockfreeLinear, LockfreeMutex, LockfreeSpinLock, OPool, OPoolLocal, ObjectPool, Poolshark,
    ResetAllocator, ShardedSlab, SlabGuard, SlabKey,
};
pub use crate::pipeline::{Pipelined, checksum, w2m_pipeline};
pub use crate::recyclers::recyclers;
pub use crate::source::{Boxed, FloorSlot, QueueFloor, RecyclerOwned, Source, Take};
pub use crate::thingbuf_channel::{ResetRecycle, Thingbuf};
pub use crate::workloads::*;
