//! Idle decay, in the spirit of jemalloc's thread-cache GC: a thread whose
//! load dropped does not sit on a full cache.
//!
//! Every [`DECAY_PERIOD`] gets on a cache (a test of the hit count the get
//! path already keeps against a constant, never a pass on every get), the owner looks at the
//! batch's low-water mark: the fewest objects it held since the last pass.
//! Those objects stayed unused for the whole period; three quarters of them,
//! the coldest (the front of the batch), go to the depot, where any thread
//! finds them, and the mark starts again from what is left. A thread that
//! keeps using its cache loses nothing it needs: what it dips into stays.
//!
//! It only runs when the owner gets: a thread that stops calling into the
//! recycler altogether keeps its cache (only the owner may touch it) until it
//! gets again or exits. Striped mode has no caches at all.

use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};

use crate::mine::Mine;
use crate::recyclable::Recyclable;
use crate::shared::Shared;
use crate::stats::Counters;

/// Gets between two decay passes on one cache (a power of two).
pub(crate) const DECAY_PERIOD: u64 = 1 << 16;

impl<T: Recyclable> Shared<T> {
    /// A decay pass on `mine`, if decay is on (the owner path tests the
    /// period, a constant, and lands here either way).
    #[cold]
    #[inline(never)]
    pub(crate) fn decay(&self, mine: Mine<'_, T>) {
        if !self.config.idle_decay {
            return;
        }
        let batch_size = self.config.batch_size;
        let mut rejected = Vec::new();
        // SAFETY: the closure runs no user code (the depot moves boxes under
        // its lock).
        unsafe {
            mine.with_cache(|c| {
                let unused = c.low_water.min(c.batch.len());
                let mut n = unused - unused / 4;
                while n > 0 {
                    let chunk = n.min(batch_size);
                    n -= chunk;
                    if let Some(back) = self.depot.put_front(&mut c.batch, chunk) {
                        rejected.extend(back);
                    }
                }
                c.low_water = c.batch.len();
            })
        };
        if !rejected.is_empty() {
            self.drop_idle(rejected, Some(mine.local()));
        }
    }

    /// The decay pass of a get that has just taken `obj` from `mine` and
    /// counted its hit. The pass may drop objects the depot refuses, and a
    /// `Drop` may panic: then `obj` goes back into the cache and the hit is
    /// uncounted (the get did not happen) before the panic goes on to the
    /// caller, so the object is neither dropped uncounted during the unwind
    /// nor lost to the books. `restore` runs first in that case (the slow
    /// get counts the object's bytes idle again under a cap).
    #[cold]
    #[inline(never)]
    pub(crate) fn decay_after_get(
        &self,
        mine: Mine<'_, T>,
        obj: Box<T>,
        restore: impl FnOnce(),
    ) -> Box<T> {
        let Err(panic) = catch_unwind(AssertUnwindSafe(|| self.decay(mine))) else {
            return obj;
        };
        restore();
        // Back in the slot or on the batch, whatever the cache holds.
        let kept = mine.push(obj, usize::MAX);
        debug_assert!(kept.is_none());
        // Minus one, as the owner writes its counters: a load and a store.
        Counters::add_owned(&mine.counters.hits, u64::MAX);
        resume_unwind(panic)
    }
}
