//! What the loom models share: running a model with a preemption bound, and
//! spawning threads that end through the real exit hooks.

use loom::thread;

/// Spawns a loom thread that runs `f`, then exits as its exit would: it runs
/// the thread's exit hooks now. Loom's `JoinHandle::join` returns before the
/// thread's thread-locals are destroyed (and destroys them in no fixed
/// order), so the hooks are run explicitly; the code run is the real one.
pub(crate) fn spawn(f: impl FnOnce() + Send + 'static) -> thread::JoinHandle<()> {
    thread::spawn(move || {
        f();
        recycler_core::__loom_thread_exit();
    })
}

/// Runs `f` under loom with a preemption bound of 2 unless
/// `LOOM_MAX_PREEMPTIONS` says otherwise.
pub(crate) fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    if builder.preemption_bound.is_none() {
        builder.preemption_bound = Some(2);
    }
    builder.check(f);
}
