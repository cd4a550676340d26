//! Freeing idle objects: `trim`, eviction under an idle-memory cap, and
//! dropping the objects the pool has no room for.
//!
//! User code runs here (`Drop`, `retained_bytes`), and it may panic. Every
//! object is counted before any of it runs, and objects are dropped one by
//! one ([`drop_each`]), so that a panicking `Drop` can neither stop the
//! others from being dropped nor leave the books wrong. The first panic is
//! then passed on to the caller ([`pass_on`]), except during the thread's
//! teardown, where a panic out of a thread-local destructor would abort the
//! process: there it is swallowed (the panic hook has reported it).

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::cache::Local;
use crate::idle::bytes_of;
use crate::inbox::Batch;
use crate::recyclable::Recyclable;
use crate::registry::{self, EXITED};
use crate::shared::Shared;
use crate::stats::Counters;
use crate::unwind::{Panic, drop_each, first_of, forget_panic};

/// Resumes `panic`, if any, in the caller, unless the thread is exiting (a
/// panic would escape a thread-local destructor and abort) or already
/// panicking (it would abort too); then it is swallowed (the panic hook has
/// reported it).
///
/// "Exiting" means that the thread's exit hooks ([`crate::registry`]) have
/// started: only then does the calling thread's token read `EXITED`. A
/// thread-local destructor of the user's that runs before them is not told
/// apart from ordinary code; the paths that can be reached from one with
/// nobody to pass a panic to (a recycler's own drop) swallow theirs
/// unconditionally instead.
pub(crate) fn pass_on(panic: Option<Panic>) {
    let Some(panic) = panic else { return };
    if registry::current() != EXITED && !std::thread::panicking() {
        resume_unwind(panic);
    }
    forget_panic(panic);
}

impl<T: Recyclable> Shared<T> {
    /// The bytes of idle objects about to be dropped, under a cap; a
    /// `retained_bytes` that panics counts as 0 (the account is then off by
    /// that object's bytes) and its panic is returned.
    fn measure(&self, objs: &[Box<T>]) -> (u64, Option<Panic>) {
        if self.idle.is_none() {
            return (0, None);
        }
        let mut first = None;
        let mut sum = 0u64;
        for obj in objs {
            match catch_unwind(AssertUnwindSafe(|| bytes_of(obj))) {
                Ok(bytes) => sum = sum.saturating_add(bytes),
                Err(panic) => first = first_of(first, Some(panic)),
            }
        }
        (sum, first)
    }

    /// Takes the bytes of idle objects about to be dropped off the account;
    /// returns a panic of `retained_bytes`, if any.
    pub(crate) fn forget(&self, objs: &[Box<T>]) -> Option<Panic> {
        let (bytes, panic) = self.measure(objs);
        if let Some(acct) = &self.idle {
            acct.forget(bytes);
        }
        panic
    }

    /// Drops idle objects the pool has no room for: counts them as dropped
    /// (on `mine`'s counters if the calling thread owns it), takes their
    /// bytes off the idle account, drops them, and passes the first panic on
    /// (see the module docs).
    pub(crate) fn drop_idle(&self, objs: Batch<T>, mine: Option<&Local<T>>) {
        self.count_for(mine, |c| &c.dropped, objs.len() as u64);
        let measured = self.forget(&objs);
        let dropped = drop_each(objs);
        pass_on(first_of(measured, dropped));
    }

    /// Frees the idle objects in the shared depot, in every inbox, in the
    /// calling thread's own cache, and in the caches of other threads not
    /// inside an operation (see `Recycler::trim`).
    pub(crate) fn trim(&self) {
        let mut freed: Vec<Batch<T>> = Vec::new();
        let mut n = 0;
        if let Some(stripes) = &self.stripes {
            let all = stripes.drain();
            n += all.len();
            freed.push(all);
        } else if let Some(mine) = self.local_if_any() {
            self.flush_pending(mine);
            let own = mine.take_all();
            Counters::add_owned(&mine.counters.dropped, own.len() as u64);
            freed.push(own);
        }
        // What other threads keep: their caches' idle objects, and their
        // pending batches, sent to the inboxes drained next.
        let (quiet, stolen_panic) = self.steal_quiet();
        n += quiet.len();
        freed.push(quiet);
        for local in self.all_caches() {
            while let Some(batch) = local.inbox.recv() {
                n += batch.len();
                freed.push(batch);
            }
        }
        for batch in self.depot.drain() {
            n += batch.len();
            freed.push(batch);
        }
        Counters::add_shared(&self.shared.dropped, n as u64);
        let mut first = stolen_panic;
        for batch in &freed {
            first = first_of(first, self.forget(batch));
        }
        // User `Drop`s run last, with nothing borrowed or locked.
        let dropped = drop_each(freed.into_iter().flatten());
        pass_on(first_of(first, dropped));
    }
}
