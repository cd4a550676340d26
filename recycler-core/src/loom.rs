//! The one switch between `std` and [`loom`](https://docs.rs/loom) types.
//!
//! Every atomic, lock, `UnsafeCell`, thread-local and per-thread slot the
//! library uses comes from here, so that building with `RUSTFLAGS="--cfg loom"`
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

#[cfg(not(loom))]
pub(crate) use self::std_impl::*;

#[cfg(loom)]
pub(crate) use self::loom_impl::*;

#[cfg(not(loom))]
mod std_impl {
    pub(crate) use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
    pub(crate) use std::sync::{Mutex, MutexGuard};

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

    /// Makes the `thread_local` crate give the calling thread its id now,
    /// which registers the crate's own thread-exit guard. Called before the
    /// exit hooks are registered, so that (thread-local destructors running in
    /// reverse order of registration) the hooks run before the crate frees
    /// the thread's id and hands its slots to another thread.
    pub(crate) fn register_thread_id() {
        static PROBE: thread_local::ThreadLocal<()> = thread_local::ThreadLocal::new();
        PROBE.get_or(|| ());
    }

    /// One value per thread, kept until the whole set drops: the
    /// `thread_local` crate, which hands a dead thread's value to the next
    /// thread that reuses its id.
    pub(crate) struct ThreadSlots<T: Send>(thread_local::ThreadLocal<T>);

    impl<T: Send> ThreadSlots<T> {
        pub(crate) fn new() -> Self {
            Self(thread_local::ThreadLocal::new())
        }

        /// The calling thread's value, made by `create` if it has none.
        pub(crate) fn get_or(&self, create: impl FnOnce() -> T) -> &T {
            self.0.get_or(create)
        }

        /// Every thread's value.
        pub(crate) fn iter(&self) -> impl Iterator<Item = &T>
        where
            T: Sync,
        {
            self.0.iter()
        }
    }
}

#[cfg(loom)]
mod loom_impl {
    pub(crate) use loom::cell::UnsafeCell;
    pub(crate) use loom::sync::atomic::{AtomicU64, AtomicUsize, Ordering, fence};
    pub(crate) use loom::sync::{Mutex, MutexGuard};

    use std::cell::Cell;
    use std::sync::atomic::{AtomicUsize as StdAtomicUsize, Ordering as StdOrdering};

    /// Identity of a loom thread for [`ThreadSlots`]; loom runs its threads
    /// on one OS thread, so the `thread_local` crate cannot tell them apart.
    static NEXT_KEY: StdAtomicUsize = StdAtomicUsize::new(1);

    loom::thread_local! {
        static KEY: Cell<usize> = Cell::new(0);
    }

    fn key() -> Option<usize> {
        KEY.try_with(|key| {
            if key.get() == 0 {
                key.set(NEXT_KEY.fetch_add(1, StdOrdering::Relaxed));
            }
            key.get()
        })
        .ok()
    }

    /// Loom threads get their slot keys on demand; nothing to order.
    pub(crate) fn register_thread_id() {}

    /// Most loom threads that may take a value from one [`ThreadSlots`].
    const MAX_SLOTS: usize = 8;

    /// One value per loom thread. The lookup itself is not modelled (a `std`
    /// mutex that is never held across a loom yield point); the values are,
    /// and so is their publication to `iter`: like the `thread_local` crate's
    /// `present` flags, a flag per entry is set (`Release`) once the entry is
    /// stored and read (`Acquire`) by `iter`, so that a thread iterating sees
    /// each value's creation happen before its reads (loom reports a
    /// causality violation otherwise). The flags are made with the set, by a
    /// thread that happens before every user of the set.
    pub(crate) struct ThreadSlots<T> {
        slots: std::sync::Mutex<Vec<(usize, Box<T>)>>,
        present: [loom::sync::atomic::AtomicBool; MAX_SLOTS],
    }

    impl<T> ThreadSlots<T> {
        pub(crate) fn new() -> Self {
            Self {
                slots: std::sync::Mutex::new(Vec::new()),
                present: std::array::from_fn(|_| loom::sync::atomic::AtomicBool::new(false)),
            }
        }

        fn lookup(&self, key: usize) -> Option<&T> {
            let slots = self.slots.lock().unwrap();
            let found = slots.iter().find(|(k, _)| *k == key)?;
            let ptr: *const T = &*found.1;
            // SAFETY: entries are boxed and never removed or replaced while
            // `self` lives (removal needs `&mut self`), so the box's target
            // outlives the returned borrow of `self`.
            Some(unsafe { &*ptr })
        }

        pub(crate) fn get_or(&self, create: impl FnOnce() -> T) -> &T {
            let key = key().expect("loom thread-local slots used during thread teardown");
            if let Some(value) = self.lookup(key) {
                return value;
            }
            let boxed = Box::new(create());
            let ptr: *const T = &*boxed;
            let index = {
                let mut slots = self.slots.lock().unwrap();
                slots.push((key, boxed));
                slots.len() - 1
            };
            assert!(index < MAX_SLOTS, "more than {MAX_SLOTS} loom threads");
            self.present[index].store(true, Ordering::Release);
            // SAFETY: as in `lookup`: the box was just stored and is never
            // removed while `self` lives.
            unsafe { &*ptr }
        }

        pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
            let slots = self.slots.lock().unwrap();
            let ptrs: Vec<*const T> = slots.iter().map(|(_, b)| &**b as *const T).collect();
            drop(slots);
            ptrs.into_iter()
                .enumerate()
                .filter(|(i, _)| self.present[*i].load(Ordering::Acquire))
                // SAFETY: as in `lookup`: every box outlives the borrow of
                // `self`.
                .map(|(_, p)| unsafe { &*p })
        }
    }
}
