//! The floors of W1: the least a thread-local pool can do per get and
//! release, with the same object and the same reset as the recycler, and
//! nothing else (no statistics, no cross-thread path, no teardown, no
//! panic handling).
//!
//! - [`w1_floor`] (`floor_tls_vecdeque`): a `RefCell<VecDeque<Box<Msg>>>` in
//!   a `const` `thread_local!`, popped and pushed at the back. Its
//!   thread-local needs a destructor, so every access checks whether the
//!   destructor is registered yet.
//! - [`w1_floor_slot`] (`floor_tls_slot`): a one-object hot slot
//!   (`Cell<Option<Box<Msg>>>`, one word) in front of the same `VecDeque`,
//!   in a `const` `thread_local!` wrapped in `ManuallyDrop`, so that the
//!   thread-local needs no destructor and every access is a plain
//!   thread-pointer-relative address; the `VecDeque` sits in an
//!   `UnsafeCell` (no borrow flag), and only the empty-pool path (a new
//!   object) is out of line. With one object held, a get is a load and a
//!   store of the slot, a release the reset (four 16-byte stores) and a
//!   swap of the slot; the `VecDeque` is touched only with more than one
//!   object out. The price, acceptable for a floor and not for a pool:
//!   what it holds when a thread exits is leaked.
//!
//! Instructions per get + release, W1's loop included (callgrind, the
//! difference between 2·10⁵ and 10⁵ rounds; rustc 1.95, x86-64):
//!
//! | | 1 held | 16 held |
//! | --- | ---: | ---: |
//! | `floor_tls_slot` | 18 | 54.8 |
//! | `floor_tls_vecdeque` | 74 | 64.3 |
//! | `recycler` (for comparison) | 40 | 88 |
//!
//! Getting the slot floor there took three steps, each checked in the
//! generated code: the first version (`RefCell`, the thread-local with a
//! destructor, the closures left to the inliner) cost 38 and 62; `LocalKey::with`
//! had stayed out of line on the release path. Forcing the slot path inline
//! and moving the `VecDeque` out of line gave 18 and 90; bringing the
//! `VecDeque` back inline, 18 and 62; the `UnsafeCell`, 18 and 54.8.

use std::cell::{Cell, RefCell, UnsafeCell};
use std::collections::VecDeque;
use std::hint::black_box;
use std::mem::ManuallyDrop;
use std::time::{Duration, Instant};

use recycler_core::Recyclable;

use crate::payload::Msg;

/// Runs W1's loop (as [`w1_get_release`](crate::w1_get_release) does, `iters`
/// rounds of `held` objects) with `take` and `give` as the pool.
#[inline(always)]
fn rounds(
    held: usize,
    iters: u64,
    take: impl Fn() -> Box<Msg>,
    give: impl Fn(Box<Msg>),
) -> Duration {
    let start = Instant::now();
    if held <= 1 {
        for i in 0..iters {
            let mut g = take();
            g.words[0] = i;
            black_box(&mut *g);
            give(g);
        }
    } else {
        let mut guards: Vec<Box<Msg>> = Vec::with_capacity(held);
        for i in 0..iters {
            for _ in 0..held {
                let mut g = take();
                g.words[0] = i;
                black_box(&mut *g);
                guards.push(g);
            }
            guards.drain(..).for_each(&give);
        }
    }
    start.elapsed()
}

/// `floor_tls_vecdeque`: a bare thread-local `VecDeque` of boxes, popped and
/// pushed at the back, with the same reset as the recycler's; `iters`
/// rounds of `held` objects, like [`w1_get_release`](crate::w1_get_release).
///
/// # Examples
///
/// ```
/// let took = recycler_benches::w1_floor(16, 10);
/// assert!(took.as_secs() < 60);
/// ```
pub fn w1_floor(held: usize, iters: u64) -> Duration {
    thread_local! {
        static STACK: RefCell<VecDeque<Box<Msg>>> = const { RefCell::new(VecDeque::new()) };
    }
    rounds(
        held,
        iters,
        || {
            STACK
                .with_borrow_mut(VecDeque::pop_back)
                .unwrap_or_else(|| Box::new(Msg::default()))
        },
        |mut g| {
            g.reset();
            STACK.with_borrow_mut(|s| s.push_back(g));
        },
    )
}

/// The pool of [`w1_floor_slot`]: a hot slot in front of a `VecDeque`.
struct SlotPool {
    hot: Cell<Option<Box<Msg>>>,
    /// Reached only through [`SlotPool::rest`].
    rest: UnsafeCell<VecDeque<Box<Msg>>>,
}

impl SlotPool {
    /// Runs `f` on the `VecDeque`.
    ///
    /// An `UnsafeCell` rather than a `RefCell`: no borrow flag to check and
    /// set on each access (4 instructions). Sound because `f` is only ever
    /// a `push_back` or a `pop_back`, which cannot reach this pool again
    /// (the global allocator they may call never touches it), and the
    /// thread-local is never shared with another thread.
    #[inline(always)]
    fn rest<R>(&self, f: impl FnOnce(&mut VecDeque<Box<Msg>>) -> R) -> R {
        // SAFETY: no other reference to the `VecDeque` exists while `f`
        // runs: `rest` is the only way to it, it is not re-entered (see
        // above), and the pool belongs to one thread.
        f(unsafe { &mut *self.rest.get() })
    }
}

thread_local! {
    /// `ManuallyDrop`: no destructor, so no registration check on access
    /// (and a leak at thread exit, see the module docs).
    static SLOT: ManuallyDrop<SlotPool> = const {
        ManuallyDrop::new(SlotPool {
            hot: Cell::new(None),
            rest: UnsafeCell::new(VecDeque::new()),
        })
    };
}

/// `floor_tls_slot`: [`w1_floor`] with a one-object hot slot in front of
/// the `VecDeque`, in a thread-local without a destructor (see the module
/// docs); `iters` rounds of `held` objects.
///
/// # Examples
///
/// ```
/// let took = recycler_benches::w1_floor_slot(16, 10);
/// assert!(took.as_secs() < 60);
/// ```
pub fn w1_floor_slot(held: usize, iters: u64) -> Duration {
    rounds(held, iters, slot_take, slot_give)
}

/// Takes the object in the slot, or one from the `VecDeque`, or a new one.
#[inline(always)]
fn slot_take() -> Box<Msg> {
    match SLOT.with(|p| p.hot.take()) {
        Some(g) => g,
        None => slot_take_from_rest(),
    }
}

#[inline(always)]
fn slot_take_from_rest() -> Box<Msg> {
    match SLOT.with(|p| p.rest(VecDeque::pop_back)) {
        Some(g) => g,
        None => fresh(),
    }
}

/// A new object, when the pool is empty.
#[cold]
#[inline(never)]
fn fresh() -> Box<Msg> {
    Box::default()
}

/// Resets the object and puts it in the slot, moving the one there (if
/// any) to the `VecDeque`.
#[inline(always)]
fn slot_give(mut g: Box<Msg>) {
    g.reset();
    if let Some(older) = SLOT.with(|p| p.hot.replace(Some(g))) {
        slot_give_to_rest(older);
    }
}

#[inline(always)]
fn slot_give_to_rest(g: Box<Msg>) {
    SLOT.with(|p| p.rest(|r| r.push_back(g)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_floor_reuses_its_objects() {
        w1_floor_slot(16, 4);
        w1_floor_slot(1, 4);
        SLOT.with(|p| {
            let hot = p.hot.take();
            assert!(hot.is_some(), "the last release went to the slot");
            p.hot.set(hot);
            assert_eq!(p.rest(|r| r.len()), 15, "16 objects made, one in the slot");
        });
    }
}
