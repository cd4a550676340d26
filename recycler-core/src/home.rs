//! [`Home`]: the tagged pointer a guard keeps to the cache its object
//! returns to.

use std::marker::PhantomData;
use std::ptr::{self, NonNull};

use crate::cache::Local;
use crate::registry::{self, TOKEN_STEP};

/// Where a guard's object goes when released: the cache of the thread that
/// got it (or the recycler's orphan cache), whether it is to be dropped
/// instead (`ratio`, capacity 0), and whether its recycler counts idle bytes
/// (`max_idle_bytes`), which sends its release down the slow path.
///
/// A pointer to the cache with the two flags in its low bits (caches are
/// 128-byte aligned); null for no cache (only a buffer above the pool's
/// largest bucket has none).
pub(crate) struct Home<T> {
    ptr: *const Local<T>,
    _marker: PhantomData<*const T>,
}

const DISCARD: usize = 1;
const ACCOUNTED: usize = 2;
/// Either flag: the release cannot take the owner's inlined path.
const TAGS: usize = DISCARD | ACCOUNTED;

// The flags fit below the token step, so that `token | flags` is a live
// token only when the flags are clear (see `Home::owned`).
static_assertions::const_assert!((TAGS as u64) < TOKEN_STEP);

impl<T> Home<T> {
    #[inline(always)]
    pub(crate) fn new(local: Option<&Local<T>>, discard: bool) -> Self {
        let ptr = local.map_or(ptr::null(), ptr::from_ref);
        let ptr = if discard {
            ptr.map_addr(|a| a | DISCARD)
        } else {
            ptr
        };
        Self {
            ptr,
            _marker: PhantomData,
        }
    }

    /// The same home, marked as belonging to a recycler that counts idle
    /// bytes.
    #[inline(always)]
    pub(crate) fn accounted(self) -> Self {
        Self {
            ptr: self.ptr.map_addr(|a| a | ACCOUNTED),
            _marker: PhantomData,
        }
    }

    /// Whether the object is to be dropped on release.
    #[inline(always)]
    pub(crate) fn is_discard(&self) -> bool {
        self.ptr.addr() & DISCARD != 0
    }

    /// The home cache's address, if any.
    #[inline(always)]
    pub(crate) fn local_ptr(&self) -> Option<NonNull<Local<T>>> {
        NonNull::new(self.ptr.map_addr(|a| a & !TAGS).cast_mut())
    }

    /// The home cache, if any.
    ///
    /// # Safety
    ///
    /// The recycler that made this home is alive for `'a`; it owns every
    /// cache until it drops.
    #[inline(always)]
    pub(crate) unsafe fn local<'a>(&self) -> Option<&'a Local<T>> {
        // SAFETY: a home's pointer is null or points to a cache of a live
        // recycler (the caller's guarantee); caches never move.
        self.local_ptr().map(|p| unsafe { p.as_ref() })
    }

    /// The home cache, if the calling thread owns it and neither flag is
    /// set: then the release may take the owner's inlined path. One compare:
    /// the cache's owner word against the calling thread's token or'ed with
    /// the flags, which is no live token when a flag is set (tokens are
    /// multiples of [`TOKEN_STEP`]; an owner word is a live token or
    /// `NOBODY`).
    ///
    /// # Safety
    ///
    /// The home is not empty, and the recycler that made it is alive for
    /// `'a`.
    #[inline(always)]
    pub(crate) unsafe fn owned<'a>(&self) -> Option<&'a Local<T>> {
        let local = self.ptr.map_addr(|a| a & !TAGS);
        // SAFETY: not empty (the caller's guarantee), so a cache of a live
        // recycler, which never moves or frees a cache while it lives.
        let local = unsafe { &*local };
        let want = registry::current() | (self.ptr.addr() & TAGS) as u64;
        (local.owner_word() == want).then_some(local)
    }
}

impl<T> Clone for Home<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Home<T> {}
