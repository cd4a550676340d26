//! [`Home`]: the pointer a guard keeps to the cache its object returns to.

use std::marker::PhantomData;
use std::ptr::NonNull;

use crate::cache::Local;
use crate::mine::Mine;
use crate::registry::{self, Token};

/// Where a guard's object goes when released: the cache of the thread that
/// got it, the recycler's orphan cache (for objects handed to a thread that
/// owns no cache), or its discard cache (for objects to drop on release:
/// `ratio`, capacity 0); a buffer above a pool's largest bucket, which no
/// bucket takes back, has a placeholder the release never looks at.
///
/// Everything that sends a release down the slow path shows in the home
/// cache's owner word, so the owner path needs one compare
/// ([`mine`](Self::mine)): the orphan and discard caches are never owned,
/// and the caches of a recycler with an idle-memory cap carry a flag in
/// their owner word (see [`Local::owner_word`]).
pub(crate) struct Home<T> {
    ptr: NonNull<Local<T>>,
    _marker: PhantomData<*const T>,
}

impl<T> Home<T> {
    #[inline(always)]
    pub(crate) fn new(local: &Local<T>) -> Self {
        Self {
            ptr: NonNull::from(local),
            _marker: PhantomData,
        }
    }

    /// The home cache's address.
    #[inline(always)]
    pub(crate) fn local_ptr(&self) -> NonNull<Local<T>> {
        self.ptr
    }

    /// The home cache.
    ///
    /// # Safety
    ///
    /// The recycler that made this home is alive for `'a`; it owns every
    /// cache until it drops.
    #[inline(always)]
    pub(crate) unsafe fn local<'a>(&self) -> &'a Local<T> {
        // SAFETY: a home points to a cache of a live recycler (the caller's
        // guarantee); caches never move.
        unsafe { self.ptr.as_ref() }
    }

    /// The home cache, if the calling thread owns it and nothing sends the
    /// release down the slow path: then the release may take the owner's
    /// inlined path. One compare of the cache's owner word with the
    /// calling thread's token; it fails for a cache another thread is
    /// taking (`CLOSED`, see [`crate::steal`]).
    ///
    /// # Safety
    ///
    /// The recycler that made this home is alive for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn mine<'a>(&self) -> Option<Mine<'a, T>> {
        // SAFETY: a cache of a live recycler (the caller's guarantee), which
        // never moves or frees a cache while it lives.
        let local = unsafe { self.ptr.as_ref() };
        if local.owner_word() == registry::current() {
            // SAFETY: its owner word is the calling thread's token, which no
            // other thread has (flags would make them differ): the calling
            // thread owns the cache.
            Some(unsafe { Mine::new(local) })
        } else {
            None
        }
    }

    /// [`mine`](Self::mine), with the owner word it compared when the
    /// calling thread does not own the home: for the release that goes on
    /// to ask whether it is [`NEAR`](crate::cache::NEAR) without a second
    /// load.
    ///
    /// # Safety
    ///
    /// The recycler that made this home is alive for `'a`.
    #[inline(always)]
    pub(crate) unsafe fn owner<'a>(&self) -> Result<Mine<'a, T>, Token> {
        // SAFETY: a cache of a live recycler (the caller's guarantee), which
        // never moves or frees a cache while it lives.
        let local = unsafe { self.ptr.as_ref() };
        let word = local.owner_word();
        if word == registry::current() {
            // SAFETY: as in `mine`: the calling thread owns the cache.
            Ok(unsafe { Mine::new(local) })
        } else {
            Err(word)
        }
    }

    /// Whether the home is a striped recycler's whose releases take the
    /// lean path ([`crate::near`]): a cache marked
    /// [`NEAR`](crate::cache::NEAR). One load and one compare.
    ///
    /// # Safety
    ///
    /// The recycler that made this home is alive.
    #[inline(always)]
    pub(crate) unsafe fn is_near(&self) -> bool {
        // SAFETY: a cache of a live recycler (the caller's guarantee).
        unsafe { self.ptr.as_ref() }.owner_word() == crate::cache::NEAR
    }
}

impl<T> Clone for Home<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Home<T> {}
