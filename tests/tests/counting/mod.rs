//! A counting global allocator for the tests that check that a path
//! allocates nothing: the system allocator, counting the calling thread's
//! allocations. A test file that uses it declares `mod counting;` and
//! installs it as its global allocator (`#[global_allocator] static GLOBAL:
//! counting::Counting = counting::Counting;`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

/// The system allocator, counting the calling thread's allocations.
pub(crate) struct Counting;

thread_local! {
    static ALLOCS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call to the system allocator unchanged; counting
// touches only a `const` thread-local without a destructor, which neither
// allocates nor can be gone while the thread runs.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let _ = ALLOCS.try_with(|n| n.set(n.get() + 1));
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The calling thread's allocations so far.
pub(crate) fn allocs() -> u64 {
    ALLOCS.with(Cell::get)
}
