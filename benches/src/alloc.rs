//! A `Box` whose memory comes from an allocator called directly, not
//! through the global allocator: what `examples/alloc_dispatch.rs` compares
//! `Box` under [`Dispatch`](crate::Dispatch) with, to count what the
//! dispatch costs.

use std::alloc::{GlobalAlloc, Layout};
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

pub use mimalloc::MiMalloc;
pub use std::alloc::System;
pub use tikv_jemallocator::Jemalloc;

/// An allocator called directly, not as the global allocator.
pub trait DirectAlloc: GlobalAlloc + 'static {
    /// The allocator.
    fn get() -> &'static Self;
}

impl DirectAlloc for System {
    #[inline]
    fn get() -> &'static Self {
        &System
    }
}

impl DirectAlloc for Jemalloc {
    #[inline]
    fn get() -> &'static Self {
        static JE: Jemalloc = Jemalloc;
        &JE
    }
}

impl DirectAlloc for MiMalloc {
    #[inline]
    fn get() -> &'static Self {
        static MI: MiMalloc = MiMalloc;
        &MI
    }
}

/// A `Box` whose memory comes from the allocator `A`, whatever the global
/// allocator is.
pub struct AllocBox<T, A: DirectAlloc> {
    ptr: NonNull<T>,
    _alloc: PhantomData<A>,
}

/// A `Box` from the system allocator.
pub type SysBox<T> = AllocBox<T, System>;

/// A `Box` from mimalloc.
pub type MiBox<T> = AllocBox<T, MiMalloc>;

/// A `Box` from jemalloc.
pub type JeBox<T> = AllocBox<T, Jemalloc>;

impl<T, A: DirectAlloc> AllocBox<T, A> {
    /// Allocates with `A` and moves `value` in.
    ///
    /// # Panics
    ///
    /// If `T` is zero-sized; aborts like `Box::new` if memory runs out.
    #[inline]
    pub fn new(value: T) -> Self {
        let layout = Layout::new::<T>();
        assert!(
            layout.size() > 0,
            "AllocBox does not support zero-sized types"
        );
        // SAFETY: `layout` has a non-zero size (checked above).
        let raw = unsafe { A::get().alloc(layout) }.cast::<T>();
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: `ptr` is freshly allocated for one `T`, properly aligned.
        unsafe { ptr.as_ptr().write(value) };
        Self {
            ptr,
            _alloc: PhantomData,
        }
    }
}

impl<T, A: DirectAlloc> Deref for AllocBox<T, A> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        // SAFETY: `ptr` holds an initialized `T` owned by this box.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T, A: DirectAlloc> DerefMut for AllocBox<T, A> {
    #[inline]
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: `ptr` holds an initialized `T` owned uniquely by this box.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T, A: DirectAlloc> Drop for AllocBox<T, A> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: `ptr` holds an initialized `T` that is dropped once, here.
        unsafe { self.ptr.as_ptr().drop_in_place() };
        // SAFETY: allocated by `A` with this same layout in `new`.
        unsafe { A::get().dealloc(self.ptr.as_ptr().cast(), Layout::new::<T>()) };
    }
}

// SAFETY: `AllocBox<T, A>` owns its `T` like `Box<T>` does, and the
// allocators used here are global allocators, callable from any thread.
unsafe impl<T: Send, A: DirectAlloc> Send for AllocBox<T, A> {}

impl<T: fmt::Debug, A: DirectAlloc> fmt::Debug for AllocBox<T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&**self, f)
    }
}
