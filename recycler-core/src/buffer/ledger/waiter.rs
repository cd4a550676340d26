//! One waiter of the queue: how to wake it, its entry, and how many times
//! it may be passed.

use std::panic::{self, AssertUnwindSafe};
use std::task::Waker;
use std::thread::Thread;

/// How to wake a waiter.
pub(crate) enum Wake {
    /// A task's waker.
    Task(Waker),
    /// A thread parked in a blocking wait.
    Thread(Thread),
}

impl Wake {
    /// Wakes the waiter. A waker that panics is caught here, and its panic
    /// dropped (the panic hook has reported it): it must not reach the
    /// thread that freed the memory, nor stop it serving the next waiter
    /// (see the module docs).
    pub(super) fn wake(self) {
        match self {
            Self::Task(waker) => {
                // Unwind safe: the queue's lock is not held, and the waker
                // is consumed whether it returns or panics.
                if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| waker.wake())) {
                    // The payload's own `Drop` is user code too.
                    crate::unwind::forget_panic(payload);
                }
            }
            Self::Thread(thread) => thread.unpark(),
        }
    }
}

/// One waiter in the queue.
pub(super) struct Entry<B> {
    /// Increasing in queue order, so that a waiter finds its entry by binary
    /// search.
    pub(super) id: u64,
    /// The bytes its buffer takes on the ledger.
    pub(super) bytes: u64,
    /// Whether a released buffer may be its grant: a wait for a buffer, not
    /// for a growth (`reserve_async`), whose grant must be bytes.
    pub(super) takes_buffer: bool,
    /// Its bytes are charged for it: it takes them when it next looks.
    pub(super) granted: bool,
    /// How many requests behind it or outside the queue were served while
    /// it was not yet granted (see [`PASSES`]).
    pub(super) passed: u32,
    /// The buffer a release granted it, if its grant is one (its bytes are
    /// that buffer's, still allocated).
    pub(super) buffer: Option<B>,
    /// How to wake it; taken when it is granted.
    pub(super) wake: Option<Wake>,
}

/// How many times a waiter not yet granted may be passed: by a waiter behind
/// it granted first, or by a request that does not wait (`try_acquire`,
/// `acquire`, a growth, `prefill`) taking memory while it waits. A waiter
/// passed this many times is *closed*: nothing is served before it any
/// more, and the waiters behind it wait for its grant, first come, first
/// served, as every waiter did before bypassing (see [`crate::buffer::wait`]).
/// Under loom, 1: the models reach a closed waiter in a few steps.
#[cfg(not(loom))]
pub(crate) const PASSES: u32 = 16;
#[cfg(loom)]
pub(crate) const PASSES: u32 = 1;
