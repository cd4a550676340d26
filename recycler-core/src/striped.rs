//! Striped mode ([`RecyclerBuilder::striped`](crate::RecyclerBuilder::striped)):
//! idle objects kept by the CPU a thread runs on, instead of in per-thread
//! caches.
//!
//! Per-thread caches strand objects whenever a thread stops calling into the
//! pool (a tokio worker that goes idle, a pool thread handed other work, a
//! thread parked for ever), and tasks that migrate release their objects on
//! other threads than the ones that got them. Undertow fixed the same
//! problem by striping its queues by processor count instead of by thread
//! (UNDERTOW-2717). Here no object ever belongs to a thread: once a release
//! returns, the object is where any thread takes it from. There is no
//! inbox and no exit hook. Two mechanisms, chosen once per recycler:
//!
//! - **On restartable sequences** ([`cpus`]; Linux on x86-64 with an `rseq`
//!   area and `membarrier`'s rseq command, see [`crate::rseq`]): a small
//!   cache per CPU whose pop and push are critical sections (no lock, no
//!   atomic read-modify-write), in front of a locked depot of batches.
//! - **Elsewhere** ([`locked`]: another OS or architecture, valgrind, a C
//!   library without an `rseq` area, `RECYCLER_NO_RSEQ=1`): `stripes`
//!   stacks, each behind a try-lock, chosen by the CPU a thread runs on.
//!
//! Both keep every guarantee of striped mode: every idle object reachable
//! from every thread (`trim`, `try_get`, a get that finds nothing near),
//! counted once, bounded in number and in idle bytes.

mod cpus;
mod locked;

pub(crate) use self::cpus::CpuStripes;
use self::locked::LockedStripes;
use crate::cpu;
use crate::stats::Tally;

/// The most stripes a recycler may have.
pub(crate) const MAX_STRIPES: usize = 1024;

/// Whether a pop whose own stripe is empty takes from the others.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Steal {
    /// Whatever there is: for `try_get`, which never makes an object.
    Any,
    /// On sections, only what is worth a fence (see [`cpus`]); the locked
    /// stripes take whatever there is.
    IfWorth,
}

/// The stripes of one recycler (see the module docs).
#[allow(
    clippy::large_enum_variant,
    reason = "one per recycler, inside its shared state; boxing the per-CPU \
              caches would add a load to every get and release"
)]
pub(crate) enum Stripes<T> {
    /// Per-CPU caches on restartable sequences, and a depot.
    Cpus(CpuStripes<T>),
    /// Stacks behind try-locks.
    Locked(LockedStripes<T>),
}

impl<T> Stripes<T> {
    /// `count` stripes of `capacity` objects each, moving `batch` at a
    /// time: on restartable sequences where the process can run them.
    pub(crate) fn new(count: usize, capacity: usize, batch: usize) -> Self {
        match CpuStripes::new(count, capacity, batch) {
            Some(cpus) => Self::Cpus(cpus),
            None => Self::Locked(LockedStripes::new(count, capacity)),
        }
    }

    /// Whether these stripes run on restartable sequences.
    pub(crate) fn on_sections(&self) -> bool {
        matches!(self, Self::Cpus(_))
    }

    /// Pops an idle object, nearest first, counting the hit; `None` if
    /// there is none (or, as `steal` says, none worth the taking).
    #[inline]
    pub(crate) fn pop(&self, steal: Steal) -> Option<Box<T>> {
        match self {
            Self::Cpus(cpus) => cpus.pop(steal),
            Self::Locked(locked) => locked.pop(cpu::current()),
        }
    }

    /// Pushes `obj`, reset, nearest first, counting the release; hands it
    /// back if there is no room.
    #[inline]
    pub(crate) fn push(&self, obj: Box<T>) -> Result<(), Box<T>> {
        match self {
            Self::Cpus(cpus) => cpus.push(obj),
            Self::Locked(locked) => locked.push(cpu::current(), obj),
        }
    }

    /// Moves objects that `prefill` made from the back of `objs` into the
    /// stripes; leaves in `objs` those that do not fit.
    pub(crate) fn fill(&self, objs: &mut Vec<Box<T>>) {
        match self {
            Self::Cpus(cpus) => cpus.fill(objs),
            Self::Locked(locked) => locked.fill(objs),
        }
    }

    /// Takes up to `n` idle objects (for eviction), the coldest first.
    pub(crate) fn take(&self, n: usize) -> Vec<Box<T>> {
        match self {
            Self::Cpus(cpus) => cpus.take(n),
            Self::Locked(locked) => locked.take(n),
        }
    }

    /// Takes every idle object, for the caller to drop outside the locks.
    pub(crate) fn drain(&self) -> Vec<Box<T>> {
        match self {
            Self::Cpus(cpus) => cpus.drain(),
            Self::Locked(locked) => locked.drain(),
        }
    }

    /// Room for this many more objects where `prefill` puts them (a
    /// snapshot; saturates at `usize::MAX`).
    pub(crate) fn room(&self) -> usize {
        match self {
            Self::Cpus(cpus) => cpus.room(),
            Self::Locked(locked) => locked.room(),
        }
    }

    /// Idle objects now (a snapshot).
    pub(crate) fn idle(&self) -> usize {
        match self {
            Self::Cpus(cpus) => cpus.idle(),
            Self::Locked(locked) => locked.idle(),
        }
    }

    /// Adds what the stripes served to `tally`.
    pub(crate) fn add_to(&self, tally: &mut Tally) {
        match self {
            Self::Cpus(cpus) => cpus.add_to(tally),
            Self::Locked(locked) => locked.add_to(tally),
        }
    }
}
