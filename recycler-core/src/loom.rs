//! The one switch between `std` and [`loom`](https://docs.rs/loom) types.
//!
//! Every atomic, lock, `UnsafeCell` and thread-local the library uses comes
//! from here, so that building with `RUSTFLAGS="--cfg loom"`
//! runs the loom models against the real code rather than a copy of it.
//!
//! Two kinds of state are deliberately *not* switched:
//! - `Arc`/`Weak` stay `std` in both builds: loom's `Arc` has no `Weak`, which
//!   the thread-exit hooks need, and the reference count is not what the
//!   models check.
//! - statistics counters ([`StatCounter`]) stay `std` atomics: they are
//!   `Relaxed` tallies read for reporting only, and modelling every one of
//!   them would multiply loom's search space without checking anything.

pub(crate) use std::sync::{Arc, Weak};

/// A statistics counter (see the module docs for why it is never a loom type).
pub(crate) type StatCounter = std::sync::atomic::AtomicU64;

/// Process-wide counters that hand out identities; loom need not model them.
pub(crate) mod process {
    pub(crate) use std::sync::atomic::AtomicU64;
}

/// `thread_local!` for values with a `const` initializer: `const { .. }`
/// (no lazy-init check on access) with `std`, a plain initializer with loom,
/// whose macro does not accept `const` blocks.
#[cfg(not(loom))]
macro_rules! const_thread_local {
    ($($vis:vis static $name:ident: $t:ty = $init:expr;)*) => {
        std::thread_local! { $($vis static $name: $t = const { $init };)* }
    };
}

#[cfg(loom)]
macro_rules! const_thread_local {
    ($($vis:vis static $name:ident: $t:ty = $init:expr;)*) => {
        loom::thread_local! { $($vis static $name: $t = $init;)* }
    };
}

pub(crate) use const_thread_local;

/// A `const fn` with `std`, a plain `fn` with loom, whose atomics' `new` is
/// not `const`: for the thread-locals' initializers.
#[cfg(not(loom))]
macro_rules! maybe_const_fn {
    ($vis:vis fn $name:ident() -> $ret:ty $body:block) => {
        $vis const fn $name() -> $ret $body
    };
}

#[cfg(loom)]
macro_rules! maybe_const_fn {
    ($vis:vis fn $name:ident() -> $ret:ty $body:block) => {
        $vis fn $name() -> $ret $body
    };
}

pub(crate) use maybe_const_fn;

/// Under loom, a cell that the drop of a recycler's state writes and the
/// paths that may run around that drop read (an owned guard's release, the
/// giving back of its unit, the last handle's drop), so that loom reports
/// any such use not ordered before the drop: a state let go too early.
/// Nothing at all with `std`.
#[cfg(loom)]
pub(crate) struct Liveness(loom::cell::UnsafeCell<()>);

// SAFETY: the cell holds nothing; it only tells loom when the state's drop
// and its uses happen, which is what the model checks.
#[cfg(loom)]
unsafe impl Sync for Liveness {}

#[cfg(loom)]
impl Liveness {
    pub(crate) fn new() -> Self {
        Self(loom::cell::UnsafeCell::new(()))
    }

    /// A use of the state, which must happen before its drop.
    pub(crate) fn check(&self) {
        self.0.with(|_| ());
    }

    /// The state's drop.
    pub(crate) fn end(&mut self) {
        self.0.with_mut(|_| ());
    }
}

/// See the loom build's `Liveness`: nothing here.
#[cfg(not(loom))]
pub(crate) struct Liveness;

#[cfg(not(loom))]
impl Liveness {
    pub(crate) fn new() -> Self {
        Self
    }

    #[inline(always)]
    pub(crate) fn check(&self) {}

    #[inline(always)]
    pub(crate) fn end(&mut self) {}
}

#[cfg(not(loom))]
pub(crate) use self::std_impl::*;

#[cfg(loom)]
pub(crate) use self::loom_impl::*;

#[cfg(not(loom))]
mod std_impl {
    pub(crate) use std::hint::spin_loop;
    pub(crate) use std::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence,
    };
    pub(crate) use std::sync::{Mutex, MutexGuard};
    pub(crate) use std::thread::yield_now;

    /// `std::cell::UnsafeCell` with loom's closure-based API (the part we use).
    #[derive(Debug)]
    pub(crate) struct UnsafeCell<T>(std::cell::UnsafeCell<T>);

    impl<T> UnsafeCell<T> {
        pub(crate) fn new(value: T) -> Self {
            Self(std::cell::UnsafeCell::new(value))
        }

        /// Runs `f` with a unique pointer to the value.
        #[inline(always)]
        pub(crate) fn with_mut<R>(&self, f: impl FnOnce(*mut T) -> R) -> R {
            f(self.0.get())
        }
    }
}

#[cfg(loom)]
mod loom_impl {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{
        AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering, fence,
    };
    pub(crate) use loom::sync::{Mutex, MutexGuard};

    /// A spin-wait iteration: under loom, a yield, so that the model lets
    /// the thread being waited for run.
    pub(crate) fn spin_loop() {
        loom::thread::yield_now();
    }

    pub(crate) use loom::thread::yield_now;

    /// The calling thread's number in the model's execution: the same
    /// thread gets the same number in every execution (unlike a token from
    /// a process-wide counter), so that what depends on it (striped mode's
    /// stand-in CPU) does not change the model from one execution to the
    /// next.
    pub(crate) fn thread_number() -> usize {
        // `ThreadId`'s `Debug` is its only view: `ThreadId(n)`.
        let id = format!("{:?}", loom::thread::current().id());
        id.bytes()
            .filter(u8::is_ascii_digit)
            .fold(0, |n, d| n * 10 + usize::from(d - b'0'))
    }
}
