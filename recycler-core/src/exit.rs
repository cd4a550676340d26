//! Thread exit: the hook ([`crate::registry`]) that hands a thread's cache
//! over when the thread ends, so that nothing strands with a dead thread.
//!
//! In order, on the exiting thread (whose token already reads `EXITED`, so
//! any guard dropped from here on takes the foreign path):
//!
//! 1. send the thread's pending foreign releases home;
//! 2. move its slot and batch into the depot, a batch at a time;
//! 3. publish its idle-memory delta;
//! 4. give the cache up (`owner = NOBODY`, `Release`), issue a `SeqCst` fence,
//!    and drain its inbox into the depot.
//!
//! A releaser that sends a batch to an inbox issues a `SeqCst` fence after
//! the send and then reads the home's owner; if it reads `NOBODY`, it drains
//! that inbox itself. With both fences, either the exiting thread's drain
//! sees the batch or the releaser sees `NOBODY`: the store-buffering race
//! cannot lose the batch.
//!
//! Objects the depot has no room for are dropped here, inside a
//! thread-local destructor, where a panic would abort the process: a
//! panicking `Drop` is caught, the object counted as dropped, and the rest
//! dropped all the same ([`crate::trim`]).

use crate::cache::Local;
use crate::inbox::Batch;
use crate::loom::{Ordering, fence};
use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::registry::{ExitFlush, Token};
use crate::shared::Shared;

impl<T: Recyclable + Send> ExitFlush for Shared<T> {
    unsafe fn flush_on_exit(&self, local: *const (), token: Token) {
        // SAFETY: the caller passes the pointer registered for this recycler
        // in `claim_local`: a `Local<T>` it keeps alive.
        let local = unsafe { &*local.cast::<Local<T>>() };
        if !local.is_owned_by(token) {
            return;
        }
        // SAFETY: the registry runs the hooks with the exiting thread's own
        // token, which the cache's owner word holds: the thread owns it, and
        // gives it up only below.
        let mine = unsafe { Mine::new(local) };
        self.flush_pending(mine);
        // The credits this cache holds for owned guards go back to the
        // count, below (a later owner starts with none).
        let credits = mine.take_credits();
        // SAFETY: the closure runs no user code.
        let cached = unsafe {
            mine.with_cache(|c| {
                c.fresh = 0;
                c.idle_cell = std::ptr::null();
                c.take_all()
            })
        };
        let mut rest: Batch<T> = cached;
        while !rest.is_empty() {
            let chunk = rest.split_off(rest.len().saturating_sub(self.config.batch_size));
            if let Some(rejected) = self.depot.put(chunk) {
                self.drop_idle(rejected, Some(local));
            }
        }
        // The thread's unpublished idle bytes become everyone's: its objects
        // stay idle, in the depot.
        if let Some(acct) = &self.idle {
            acct.flush(&local.delta);
        }
        // SAFETY: the thread touches only the inbox from here on, through
        // `local`, never its owner-only state.
        unsafe { mine.abandon() };
        // Pairs with the fence in `send_home`.
        fence(Ordering::SeqCst);
        self.rescue(local, None);
        let let_go = match self.credits_to {
            // A bucket's credits are units of its pool's count, touched only
            // if the cache held some: then they kept the pool alive up to
            // here (a bucket's state may outlive its pool, held by this
            // hook). Its own count is given nothing, which orders what the
            // hook did before this state's drop all the same.
            Some(pool) => {
                let own = self.keep.give(0);
                debug_assert!(own.is_none(), "giving nothing lets nothing go");
                // SAFETY: `credits` units of it were out, given back here.
                (credits > 0)
                    .then(|| unsafe { pool.get() }.give(credits))
                    .flatten()
            }
            None => self.keep.give(credits),
        };
        if let Some(let_go) = let_go {
            // This recycler's own state is held by the registry (an `Arc`)
            // while the hook runs, and freed after; a pool, which owns this
            // bucket's handle, is not an argument of the hook, and this
            // bucket's state outlives it (the registry's `Arc`).
            // SAFETY: so nothing of the state it lets go is an argument here.
            unsafe { let_go.run() };
        }
    }
}
