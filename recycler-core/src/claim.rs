//! [`ClaimList`]: the per-thread values of one recycler (its threads' caches)
//! or of one buffer pool (its threads' indexes), each owned by one live
//! thread at a time and reused by a later thread once its owner exits.
//!
//! A value names its owner in an atomic word ([`Claimable::owner`]): a thread's
//! [`Token`], or [`NOBODY`]. A thread *claims* a value for itself: it takes a
//! value that nobody owns (a compare-and-swap from `NOBODY` to its token), or
//! pushes a new one. Its exit hook gives the value up with a `Release` store of
//! `NOBODY`, after which the next claimer's `Acquire` exchange sees every
//! write the old owner made to the value's owner-only parts.
//!
//! The list is append-only and lock-free: values are never removed or moved
//! while the list lives, so a `&T` into it stays valid, and readers (`stats`,
//! `trim`) walk it without a lock. It frees its values when it drops.
//!
//! Why not the `thread_local` crate: it keys its storage by a thread id that
//! it frees in a thread-local destructor of its own, shared by every
//! `ThreadLocal` of the process. A thread whose first use of a recycler
//! happens in a thread-local destructor that runs after that one (possible
//! whenever the thread used any other `ThreadLocal` before) makes the crate
//! panic inside a destructor, which aborts the process, and nothing can tell
//! beforehand. Here a thread's ownership is tracked by our own exit hook
//! ([`crate::registry`]), registered when the thread first claims a value,
//! so a claim made during teardown is simply undone when that hook runs.

use std::ptr;

use crate::loom::{AtomicPtr, AtomicU64, Ordering};
use crate::registry::{NOBODY, Token};

/// A value that a [`ClaimList`] hands to one thread at a time.
pub(crate) trait Claimable {
    /// The token of the thread that owns this value, or [`NOBODY`].
    fn owner(&self) -> &AtomicU64;
}

/// An append-only list of per-thread values.
pub(crate) struct ClaimList<T> {
    /// The newest value; each links to the one pushed before it.
    head: AtomicPtr<Node<T>>,
}

struct Node<T> {
    value: T,
    /// Written once, before the node is published, and never again.
    next: *mut Node<T>,
}

// SAFETY: the list owns its nodes (boxes it frees when it drops); sending the
// list sends the values, hence `T: Send`.
unsafe impl<T: Send> Send for ClaimList<T> {}
// SAFETY: other threads reach the values through `&T` only (`iter`, `claim`),
// hence `T: Sync`; the links are written before a node is published with a
// `Release` exchange and only read after an `Acquire` load.
unsafe impl<T: Send + Sync> Sync for ClaimList<T> {}

impl<T: Claimable> ClaimList<T> {
    pub(crate) fn new() -> Self {
        Self {
            head: AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Claims a value for the thread with `token`: one that no thread owns,
    /// or a new one made by `create`, whose owner `claim` sets to `token`.
    ///
    /// A reused value is in whatever state its last owner left it; its owner
    /// gave it up (its exit hook) after emptying its owner-only parts.
    pub(crate) fn claim(&self, token: Token, create: impl FnOnce() -> T) -> &T {
        for value in self.iter() {
            let owner = value.owner();
            // Acquire: pairs with the `Release` store of `NOBODY` by the
            // thread that gave the value up, so its last writes to the value's
            // owner-only parts happen before ours.
            if owner.load(Ordering::Relaxed) == NOBODY
                && owner
                    .compare_exchange(NOBODY, token, Ordering::Acquire, Ordering::Relaxed)
                    .is_ok()
            {
                return value;
            }
        }
        let value = create();
        value.owner().store(token, Ordering::Relaxed);
        let node = Box::into_raw(Box::new(Node {
            value,
            next: ptr::null_mut(),
        }));
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: `node` is ours alone until the exchange below publishes
            // it.
            unsafe { (*node).next = head };
            // Release: a reader that loads this head (Acquire) sees the node
            // and its link initialized.
            match self
                .head
                .compare_exchange(head, node, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => break,
                Err(now) => head = now,
            }
        }
        // SAFETY: the node is never freed or moved while `self` lives.
        unsafe { &(*node).value }
    }

    /// Every value, newest first (those pushed after this call starts may be
    /// missed).
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        // Acquire: pairs with the `Release` exchange that published the head,
        // so its value and every older node's are initialized.
        let mut at = self.head.load(Ordering::Acquire);
        std::iter::from_fn(move || {
            // SAFETY: nodes are published initialized (above) and are never
            // freed while `self` lives.
            let node = unsafe { at.as_ref() }?;
            at = node.next;
            Some(&node.value)
        })
    }
}

impl<T> Drop for ClaimList<T> {
    fn drop(&mut self) {
        let mut at = self.head.load(Ordering::Acquire);
        while !at.is_null() {
            // SAFETY: every node was made by `Box::into_raw` in `claim` and is
            // freed once, here; `&mut self` means nothing borrows it.
            let node = unsafe { Box::from_raw(at) };
            at = node.next;
        }
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    struct Cell {
        owner: AtomicU64,
        made_by: Token,
    }

    impl Claimable for Cell {
        fn owner(&self) -> &AtomicU64 {
            &self.owner
        }
    }

    fn cell(made_by: Token) -> Cell {
        Cell {
            owner: AtomicU64::new(NOBODY),
            made_by,
        }
    }

    #[test]
    fn claims_reuse_what_is_given_up() {
        let list = ClaimList::new();
        let a = list.claim(4, || cell(4));
        let b = list.claim(8, || cell(8));
        assert!(!ptr::eq(a, b));
        assert_eq!(
            (
                a.owner.load(Ordering::Relaxed),
                b.owner.load(Ordering::Relaxed)
            ),
            (4, 8)
        );
        a.owner.store(NOBODY, Ordering::Release);
        let c = list.claim(12, || cell(12));
        assert!(ptr::eq(a, c), "the value given up is reused");
        assert_eq!((c.made_by, c.owner.load(Ordering::Relaxed)), (4, 12));
        assert_eq!(list.iter().count(), 2);
    }
}
