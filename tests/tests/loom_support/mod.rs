//! What the loom models share: running a model with a preemption bound,
//! spawning threads that end through the real exit hooks, and the recyclers'
//! payload and audit.

#![allow(dead_code)] // each model file uses its own subset

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed, Ordering::SeqCst};

use loom::thread;
use recycler_core::{Recyclable, Recycler, RecyclerBuilder};

/// A payload counting how many exist; std atomics, outside the model.
#[derive(Debug)]
pub(crate) struct Obj {
    alive: Arc<AtomicUsize>,
}

impl Drop for Obj {
    fn drop(&mut self) {
        self.alive.fetch_sub(1, SeqCst);
    }
}

impl Recyclable for Obj {
    fn reset(&mut self) {}
}

/// A builder whose factory makes `Obj`s counted in `alive`.
pub(crate) fn counted(alive: &Arc<AtomicUsize>) -> RecyclerBuilder<Obj> {
    let alive = Arc::clone(alive);
    Recycler::builder_with_factory(move || {
        alive.fetch_add(1, SeqCst);
        Obj {
            alive: Arc::clone(&alive),
        }
    })
}

/// The audit every recycler model ends with, on the last thread standing:
/// nothing in use, every object made idle or dropped, the objects alive the
/// idle ones, and every idle object reachable.
pub(crate) fn audit(pool: &Recycler<Obj>, alive: &AtomicUsize) {
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert_eq!(s.created, s.idle + s.dropped, "{s}");
    assert_eq!(
        alive.load(SeqCst) as u64,
        s.idle,
        "objects alive vs idle: {s}"
    );
    let mut reachable = Vec::new();
    while let Some(g) = pool.try_get() {
        reachable.push(g);
    }
    assert_eq!(
        reachable.len() as u64,
        s.idle,
        "every idle object is reachable: {s}"
    );
}

/// Spawns a loom thread that runs `f`, then exits as its exit would: it runs
/// the thread's exit hooks now. Loom's `JoinHandle::join` returns before the
/// thread's thread-locals are destroyed (and destroys them in no fixed
/// order), so the hooks are run explicitly; the code run is the real one.
pub(crate) fn spawn<R: Send + 'static>(
    f: impl FnOnce() -> R + Send + 'static,
) -> thread::JoinHandle<R> {
    thread::spawn(move || {
        let r = f();
        recycler_core::__loom_thread_exit();
        r
    })
}

/// Runs `f` under loom with a preemption bound of 2 unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise, and prints how many executions
/// loom explored (shown with `--nocapture`).
pub(crate) fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    let executions = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&executions);
    builder.check(move || {
        counted.fetch_add(1, Relaxed);
        f();
    });
    println!(
        "{}: {} executions",
        std::thread::current().name().unwrap_or("model"),
        executions.load(Relaxed)
    );
}

/// The buffer pool's books, on the last thread standing: every buffer made
/// (allocated by an acquire or by `prefill`) is in use, idle, evicted or
/// removed.
pub(crate) fn assert_buffers_counted(s: &recycler_core::buffer::BufferPoolStats) {
    let made: u64 = s.buckets.iter().map(|b| b.non_pooled + b.prefilled).sum();
    let gone: u64 = s
        .buckets
        .iter()
        .map(|b| b.in_use + b.idle + b.evicts + b.removes)
        .sum();
    assert_eq!(made, gone, "every buffer made is counted once: {s}");
}
