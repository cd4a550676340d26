//! Workloads shared by the criterion suites in `benches/` and by the
//! `compare` binary, so that both measure exactly the same code.
//!
//! Every benchmark binary of this package runs under `tikv-jemallocator` as
//! its global allocator (see [`Jemalloc`]); the system allocator and
//! mimalloc are measured through [`AllocBox`], which calls them directly, so
//! all three allocators appear in one binary and one run.

mod alloc;
pub mod buffers;
mod payload;
mod peers;
mod source;
mod workloads;

pub use crate::alloc::{AllocBox, DirectAlloc, Jemalloc, MiBox, MiMalloc, SysBox, System};
pub use crate::payload::Msg;
pub use crate::peers::{
    LockfreeLinear, LockfreeSpinLock, MsgAllocator, OPool, OPoolLocal, ObjectPool, Poolshark,
    ShardedSlab, SlabGuard,
};
pub use crate::source::{BoxJemalloc, BoxMimalloc, BoxSystem, Source, Take};
pub use crate::workloads::*;
