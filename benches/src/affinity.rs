//! Pinning the two threads of a producer/consumer workload (W2, W2M) to
//! two different CPUs, so that on a small VM the scheduler cannot put both
//! on one CPU for part of a run and not for the rest: the figures of every
//! contender then come from the same placement.
//!
//! The producer (the thread that calls the workload) is pinned for the run
//! only: [`Pin`] restores its previous CPU mask when dropped. The consumer
//! is a thread of the run and dies with it. Where pinning is not possible
//! (another OS, fewer than two CPUs allowed, `sched_setaffinity` refused,
//! or switched off with [`set_enabled`]) the threads run where the
//! scheduler puts them, the same for every contender, and [`status`] says
//! so for the report.

use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

/// Whether the workloads pin at all (on by default).
static ENABLED: AtomicBool = AtomicBool::new(true);

/// What the last pinning attempt did: [`UNTRIED`], [`PINNED`] or
/// [`FAILED`].
static OUTCOME: AtomicU8 = AtomicU8::new(UNTRIED);

const UNTRIED: u8 = 0;
const PINNED: u8 = 1;
const FAILED: u8 = 2;

/// Which side of the pair a thread is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The thread that takes objects and sends them.
    Producer,
    /// The thread that receives, reads and releases them.
    Consumer,
}

/// Turns pinning on or off for the rest of the process (`compare
/// --no-pin`).
///
/// # Examples
///
/// ```
/// use recycler_benches::affinity;
///
/// affinity::set_enabled(false);
/// assert!(affinity::status().starts_with("not pinned"));
/// affinity::set_enabled(true);
/// ```
pub fn set_enabled(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// The two CPUs the producer and the consumer go to: the first two this
/// process may run on. `None` if pinning is off or fewer than two are
/// allowed.
pub fn cpus() -> Option<[usize; 2]> {
    if !ENABLED.load(Ordering::Relaxed) {
        return None;
    }
    let allowed = imp::allowed()?;
    match allowed[..] {
        [a, b, ..] => Some([a, b]),
        _ => None,
    }
}

/// One line for the report: where the producer and the consumer ran.
///
/// # Examples
///
/// ```
/// let s = recycler_benches::affinity::status();
/// assert!(s.starts_with("pinned") || s.starts_with("not pinned"), "{s}");
/// ```
pub fn status() -> String {
    if !ENABLED.load(Ordering::Relaxed) {
        return "not pinned (switched off): the scheduler places the two threads".into();
    }
    let Some([a, b]) = cpus() else {
        return "not pinned (fewer than two CPUs allowed, or not Linux): \
                the scheduler places the two threads"
            .into();
    };
    if OUTCOME.load(Ordering::Relaxed) == UNTRIED {
        // Try once on this thread, and put it back.
        drop(Pin::new(Side::Producer));
    }
    match OUTCOME.load(Ordering::Relaxed) {
        FAILED => {
            "not pinned (sched_setaffinity refused): the scheduler places the two threads".into()
        }
        _ => format!("pinned: producer on CPU {a}, consumer on CPU {b}"),
    }
}

/// A thread pinned to its side's CPU; restores the thread's previous CPU
/// mask when dropped.
#[derive(Debug)]
pub struct Pin {
    saved: Option<imp::Mask>,
}

impl Pin {
    /// Pins the calling thread to `side`'s CPU (see [`cpus`]); does
    /// nothing where pinning is off or not possible.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::affinity::{Pin, Side};
    ///
    /// let pin = Pin::new(Side::Producer);
    /// let _v = vec![1u8; 10]; // runs wherever the pin allows
    /// drop(pin); // the thread's previous mask is back
    /// ```
    pub fn new(side: Side) -> Pin {
        let Some([a, b]) = cpus() else {
            return Pin { saved: None };
        };
        let cpu = match side {
            Side::Producer => a,
            Side::Consumer => b,
        };
        let saved = imp::pin(cpu);
        OUTCOME.store(
            if saved.is_some() { PINNED } else { FAILED },
            Ordering::Relaxed,
        );
        Pin { saved }
    }

    /// Whether the thread is pinned.
    pub fn is_pinned(&self) -> bool {
        self.saved.is_some()
    }
}

impl Drop for Pin {
    fn drop(&mut self) {
        if let Some(mask) = self.saved.take() {
            imp::restore(&mask);
        }
    }
}

#[cfg(target_os = "linux")]
mod imp {
    /// A CPU mask, as `sched_getaffinity` fills it.
    pub(super) struct Mask(libc::cpu_set_t);

    impl std::fmt::Debug for Mask {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("Mask(..)")
        }
    }

    /// The calling thread's mask.
    fn current() -> Option<Mask> {
        // SAFETY: `cpu_set_t` is plain bits; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid, writable `cpu_set_t` of the size
        // passed; pid 0 is the calling thread.
        let rc = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) };
        (rc == 0).then_some(Mask(set))
    }

    /// The CPUs the calling thread may run on, in increasing order.
    pub(super) fn allowed() -> Option<Vec<usize>> {
        let mask = current()?;
        let mut cpus = Vec::new();
        for cpu in 0..8 * size_of::<libc::cpu_set_t>() {
            // SAFETY: `CPU_ISSET` reads bit `cpu` of the set, and `cpu` is
            // below the set's size in bits.
            if unsafe { libc::CPU_ISSET(cpu, &mask.0) } {
                cpus.push(cpu);
            }
        }
        Some(cpus)
    }

    /// Pins the calling thread to `cpu`; returns its previous mask, or
    /// `None` if the OS refused.
    pub(super) fn pin(cpu: usize) -> Option<Mask> {
        let saved = current()?;
        // SAFETY: as in `current`.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: `cpu` comes from `allowed`, so it is below the set's size
        // in bits.
        unsafe { libc::CPU_SET(cpu, &mut set) };
        // SAFETY: `set` is a valid `cpu_set_t` of the size passed; pid 0 is
        // the calling thread.
        let rc = unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) };
        (rc == 0).then_some(saved)
    }

    /// Gives the calling thread `mask` again.
    pub(super) fn restore(mask: &Mask) {
        // SAFETY: `mask` is a valid `cpu_set_t` of the size passed, read by
        // `sched_getaffinity`; pid 0 is the calling thread. A failure leaves
        // the thread pinned, which is harmless.
        unsafe { libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &mask.0) };
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    /// Nothing to save where nothing is pinned.
    #[derive(Debug)]
    pub(super) struct Mask;

    pub(super) fn allowed() -> Option<Vec<usize>> {
        None
    }

    pub(super) fn pin(_cpu: usize) -> Option<Mask> {
        None
    }

    pub(super) fn restore(_mask: &Mask) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_and_restores() {
        let before = imp::allowed();
        let expected = cpus().map(|c| c[1]);
        {
            let pin = Pin::new(Side::Consumer);
            if pin.is_pinned() {
                let now = imp::allowed().expect("readable");
                assert_eq!(now.len(), 1);
                assert_eq!(Some(now[0]), expected);
            }
        }
        assert_eq!(imp::allowed(), before, "the previous mask is back");
    }
}
