//! The example's global allocator: [`Dispatch`] (the system allocator,
//! jemalloc or mimalloc, as `RECYCLER_BENCHES_ALLOC` says), with every
//! allocation counted.
//!
//! Each thread counts into a slot of its own (a cache-line-sized atomic
//! that only it writes, with a plain load and store, no read-modify-write),
//! so counting adds no contention between the server's workers and does not
//! tax the modes that allocate more. [`allocations`] sums the slots. Threads
//! beyond the [`SLOTS`]th share the last slot, counted with `fetch_add`.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use recycler_benches::Dispatch;

/// Slots for this many threads; the rest share the last one.
const SLOTS: usize = 128;

/// One thread's count, alone on its cache lines.
#[repr(align(128))]
struct Slot(AtomicU64);

/// The counts, one slot per thread.
static COUNTS: [Slot; SLOTS] = [const { Slot(AtomicU64::new(0)) }; SLOTS];

/// The next slot to hand out.
static NEXT: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// This thread's slot, or `usize::MAX` before its first allocation.
    /// A `const` `Cell` needs no destructor: reading it never allocates
    /// and works while the thread exits.
    static MINE: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Counts one allocation on this thread.
#[inline]
fn count() {
    let slot = MINE
        .try_with(|mine| {
            let mut slot = mine.get();
            if slot == usize::MAX {
                slot = NEXT.fetch_add(1, Relaxed).min(SLOTS - 1);
                mine.set(slot);
            }
            slot
        })
        .unwrap_or(SLOTS - 1);
    let n = &COUNTS[slot].0;
    if slot == SLOTS - 1 {
        n.fetch_add(1, Relaxed);
    } else {
        // Only this thread writes its slot.
        n.store(n.load(Relaxed) + 1, Relaxed);
    }
}

/// Allocations made so far by every thread of the process (`alloc`,
/// `alloc_zeroed` and `realloc` calls).
pub(crate) fn allocations() -> u64 {
    COUNTS.iter().map(|s| s.0.load(Relaxed)).sum()
}

/// [`Dispatch`], counting.
#[derive(Debug)]
pub(crate) struct Counting;

// SAFETY: every method forwards its arguments unchanged to `Dispatch`,
// which upholds the `GlobalAlloc` contract; counting touches only atomics
// and a destructor-free thread-local, and never allocates.
unsafe impl GlobalAlloc for Counting {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's guarantees, passed on.
        unsafe { Dispatch.alloc(layout) }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count();
        // SAFETY: the caller's guarantees, passed on.
        unsafe { Dispatch.alloc_zeroed(layout) }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `Dispatch` (through this wrapper)
        // with `layout`, as the caller guarantees.
        unsafe { Dispatch.dealloc(ptr, layout) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count();
        // SAFETY: as in `dealloc`, and `new_size` is valid, as the caller
        // guarantees.
        unsafe { Dispatch.realloc(ptr, layout, new_size) }
    }
}
