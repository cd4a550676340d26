//! What the workloads of `compare` share, in `workloads.rs` and
//! `pipelines.rs`: the fresh-`Box` baseline and the peer pools on [`Msg`],
//! and the notes and ratios their outcomes carry.

use recycler_benches::{
    Boxed, LockfreeLinear, LockfreeMutex, LockfreeSpinLock, Msg, OPool, ObjectPool, Poolshark,
    ShardedSlab, affinity,
};

use crate::report::Outcome;

/// `Box::new` + drop of a [`Msg`] under the process's global allocator.
pub(crate) static BOX_MSG: Boxed<Msg> = Boxed::new();

/// The peer pools of W1 and W2, on [`Msg`].
#[derive(Default)]
pub(crate) struct MsgPeers {
    pub(crate) slab: ShardedSlab,
    pub(crate) object_pool: ObjectPool,
    pub(crate) linear: LockfreeLinear,
    pub(crate) spin: LockfreeSpinLock,
    pub(crate) mutex: LockfreeMutex,
    pub(crate) opool: OPool,
    pub(crate) shark: Poolshark,
}

/// `a is 1.23x faster than b` or `a is 1.23x slower than b`, from
/// `x` = b's time / a's time: never a ratio below 1 called faster.
pub(crate) fn faster_or_slower(a: &str, b: &str, x: f64) -> String {
    if x >= 1.0 {
        format!("{a} is {x:.2}x faster than {b}")
    } else {
        format!("{a} is {:.2}x slower than {b}", 1.0 / x)
    }
}

/// The recycler's own line under a workload: its hit ratio and what it
/// made and dropped.
pub(crate) fn recycler_note(s: &recycler_core::RecyclerStats) -> String {
    format!(
        "recycler hit ratio {:.2}% (created {}, dropped {})",
        s.hit_ratio() * 100.0,
        s.created,
        s.dropped
    )
}

/// A note for an outcome of a two-thread workload measured where its
/// threads could not be pinned (see [`affinity`]); `None` when pinned.
pub(crate) fn pinning_note() -> Option<String> {
    let status = affinity::status();
    (!status.starts_with("pinned")).then_some(status)
}

/// The fastest of `peers` in `o`, and how many times faster `ours` is.
pub(crate) fn closest_peer<'p>(o: &Outcome, peers: &[&'p str]) -> Option<(&'p str, f64)> {
    peers
        .iter()
        .filter_map(|p| o.speedup(p).map(|x| (*p, x)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}
