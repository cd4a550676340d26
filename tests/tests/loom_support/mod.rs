//! What the loom models share: running a model with a preemption bound, and
//! spawning threads that end through the real exit hooks.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use loom::thread;

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
