//! A recycler's settings as the rest of the crate reads them: [`Config`],
//! validated by the public builder ([`crate::builder`]) or set by a buffer
//! pool for its buckets; the factory; and an idle-memory account shared
//! between recyclers. The paths import this, never the builder.

use crate::idle::IdleAccount;
use crate::loom::Arc;
use crate::striped::MAX_STRIPES;

/// Makes a fresh object when the pool has none.
pub(crate) type Factory<T> = Box<dyn Fn() -> T + Send + Sync>;

/// The largest `batch_size` accepted.
pub(crate) const MAX_BATCH_SIZE: usize = 1 << 16;

/// A recycler's settings, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Config {
    /// Idle objects one thread's cache holds before it spills a batch.
    pub(crate) max_capacity_per_thread: usize,
    /// Objects moved at a time between a cache, the inboxes and the depot;
    /// never more than `max_capacity_per_thread` (when that is not 0).
    pub(crate) batch_size: usize,
    /// Pool one of every `ratio` freshly made objects.
    pub(crate) ratio: usize,
    /// Idle objects the shared depot holds at most.
    pub(crate) depot_capacity: usize,
    /// Cap on the bytes idle objects retain, if any.
    pub(crate) max_idle_bytes: Option<usize>,
    /// Whether a release on another thread resets the object there (the
    /// default) or leaves it to the object's home (see
    /// [`RecyclerBuilder::reset_on_return`](crate::RecyclerBuilder::reset_on_return)).
    pub(crate) reset_on_return: bool,
    /// Striped mode's number of stripes (a power of two), or `None` for
    /// per-thread caches.
    pub(crate) stripes: Option<usize>,
    /// Whether idle caches decay ([`crate::decay`]).
    pub(crate) idle_decay: bool,
    /// Whether a thread taking a live thread's cache takes its hot slot
    /// too: a buffer pool's, whose owner paths mark every access; a plain
    /// recycler's slot is its owner's alone ([`crate::steal`]).
    pub(crate) slots_reachable: bool,
}

/// An idle-memory account shared with other recyclers (the buckets of a
/// buffer pool), and this recycler's index among them.
pub(crate) type SharedIdle = (Arc<IdleAccount>, usize);

impl Config {
    /// The defaults: Netty's capacity and chunk size, every object pooled.
    pub(crate) const DEFAULT: Config = Config {
        max_capacity_per_thread: 4096,
        batch_size: 32,
        ratio: 1,
        depot_capacity: 4 * 4096,
        max_idle_bytes: None,
        reset_on_return: true,
        stripes: None,
        idle_decay: true,
        slots_reachable: false,
    };

    /// Whether released objects may be kept at all.
    #[inline]
    pub(crate) fn pooling(&self) -> bool {
        self.max_capacity_per_thread != 0
    }
}

/// The stripes for `striped(n)`: `n`, or one per available CPU for 0,
/// rounded up to a power of two.
pub(crate) fn stripe_count(n: usize) -> usize {
    let n = if n == 0 {
        std::thread::available_parallelism().map_or(1, |n| n.get())
    } else {
        n
    };
    n.clamp(1, MAX_STRIPES).next_power_of_two()
}
