//! Restartable sequences: what the per-CPU cache ([`crate::percpu`]) needs
//! from the kernel and the C library to run its pops and pushes as critical
//! sections that the kernel restarts, instead of behind a lock.
//!
//! A critical section reads the `cpu_id` the kernel keeps in the thread's
//! `rseq` area, works on that CPU's data, and ends with a single committing
//! store. Before it starts it points the area's `rseq_cs` field at a
//! descriptor of its code (start, length up to the commit, abort address);
//! if the thread is preempted, migrated or sent a signal while its
//! instruction pointer is inside, the kernel sends it to the abort address
//! instead of back where it was, so that a section's commit never follows a
//! moment when another thread ran on its CPU. Nothing else than that CPU's
//! sections may then write the data without further ado: another CPU's
//! thread first shuts the data (a word every section reads) and then
//! restarts every section in flight with [`Sections::restart_all`].
//!
//! - **The area.** glibc 2.35 and later registers one for every thread it
//!   starts, at `__rseq_offset` from the thread pointer ([`crate::cpu`] finds
//!   it), with the x86 signature `0x53053053` that every abort handler must
//!   be preceded by. `__rseq_size` is 0 when it registered none (the
//!   `glibc.pthread.rseq=0` tunable, a kernel without `rseq`, valgrind); a
//!   thread whose registration failed reads a negative `cpu_id`.
//! - **The restart.** `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_RSEQ)`
//!   interrupts every CPU that runs a thread of this process and makes each
//!   of them restart the section it is in, if any, before it runs another
//!   instruction of it; threads that are not running are restarted when they
//!   resume (they were preempted). It implies a full memory barrier on those
//!   CPUs. The command needs a registration, once per process, made on first
//!   use (Linux 5.10 or later).
//! - **The switch.** [`sections`] probes both, once per process; setting the
//!   environment variable `RECYCLER_NO_RSEQ=1` (any value but empty or `0`)
//!   before the first probe turns them off, and every per-CPU cache then
//!   works behind a lock per CPU.
//!
//! Under loom there is no kernel: [`Sections`] is a model of it (see the
//! `model` module below), which restarts a modelled section explicitly.

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
pub(crate) use self::linux::{Sections, current_cpu, sections};
#[cfg(loom)]
pub(crate) use self::model::{Sections, current_cpu, sections};
#[cfg(loom)]
pub use self::model::{set_cpu, set_off};
#[cfg(not(any(loom, all(target_os = "linux", target_arch = "x86_64"))))]
pub(crate) use self::unsupported::{Sections, current_cpu, sections};

/// How many aborts in a row a critical section takes before it gives up to
/// the locked path: a thread restarted that often is being hit by a storm
/// of signals or fences, and a lock serves it as well.
#[cfg_attr(
    not(any(loom, all(target_os = "linux", target_arch = "x86_64"))),
    allow(dead_code, reason = "no critical sections on this platform")
)]
pub(crate) const MAX_ABORTS: usize = 8;

/// The environment variable that turns restartable sequences off.
#[cfg(not(loom))]
pub(crate) const NO_RSEQ: &str = "RECYCLER_NO_RSEQ";

/// Whether [`NO_RSEQ`] asks for the fallback.
#[cfg(not(loom))]
fn forced_off() -> bool {
    std::env::var_os(NO_RSEQ).is_some_and(|v| !v.is_empty() && v != "0")
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
mod linux {
    use std::sync::OnceLock;
    use std::sync::atomic::{Ordering, fence};

    use crate::fence::membarrier;

    const CMD_QUERY: libc::c_long = 0;
    const CMD_PRIVATE_EXPEDITED_RSEQ: libc::c_long = 1 << 7;
    const CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ: libc::c_long = 1 << 8;

    /// Proof that critical sections may run in this process: the C library
    /// registered an `rseq` area for its threads, and the fence that
    /// restarts them is registered.
    #[derive(Clone, Copy, Debug)]
    pub(crate) struct Sections {
        /// `__rseq_offset`: the calling thread's area is at this offset
        /// from its thread pointer (the `fs` base).
        offset: isize,
    }

    /// The probe's answer, once made.
    static PROBED: OnceLock<Option<Sections>> = OnceLock::new();

    /// Critical sections, if this process can run them (probed once; see
    /// the module docs). `_slots` serves the loom model only.
    pub(crate) fn sections(_slots: usize) -> Option<Sections> {
        *PROBED.get_or_init(probe)
    }

    #[cold]
    fn probe() -> Option<Sections> {
        if super::forced_off() {
            return None;
        }
        let offset = crate::cpu::rseq_offset()?;
        // The probing thread's own registration worked (the kernel writes
        // a valid `cpu_id` only into a registered area).
        crate::cpu::rseq_cpu()?;
        let both = CMD_PRIVATE_EXPEDITED_RSEQ | CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ;
        let mask = membarrier(CMD_QUERY);
        if mask < 0 || mask & both != both {
            return None;
        }
        (membarrier(CMD_REGISTER_PRIVATE_EXPEDITED_RSEQ) == 0).then_some(Sections { offset })
    }

    impl Sections {
        /// `__rseq_offset`.
        #[inline(always)]
        pub(crate) fn offset(self) -> isize {
            self.offset
        }

        /// Restarts every critical section in flight in the process, and
        /// fences: when it returns, every section that was past its start
        /// either committed (and its stores are visible here) or will
        /// restart from the top before it runs another instruction, and
        /// every section that starts later sees what the caller stored
        /// before the call. `false` if the system call failed (then nothing
        /// of the sort may be assumed).
        pub(crate) fn restart_all(&self) -> bool {
            fence(Ordering::SeqCst);
            let ok = membarrier(CMD_PRIVATE_EXPEDITED_RSEQ) == 0;
            fence(Ordering::SeqCst);
            ok
        }
    }

    /// The calling thread's CPU for the locked path (see [`crate::cpu`]).
    #[inline]
    pub(crate) fn current_cpu() -> usize {
        crate::cpu::current()
    }
}

#[cfg(not(any(loom, all(target_os = "linux", target_arch = "x86_64"))))]
mod unsupported {
    /// No critical sections here: no value of this type exists.
    #[derive(Clone, Copy, Debug)]
    pub(crate) enum Sections {}

    /// None on this platform (the environment variable is read all the
    /// same, so that it behaves alike everywhere).
    pub(crate) fn sections(_slots: usize) -> Option<Sections> {
        let _ = super::forced_off();
        None
    }

    impl Sections {
        pub(crate) fn restart_all(&self) -> bool {
            match *self {}
        }
    }

    /// The calling thread's CPU for the locked path (see [`crate::cpu`]).
    #[inline]
    pub(crate) fn current_cpu() -> usize {
        crate::cpu::current()
    }
}

/// The kernel's side, modelled for loom: each slot of a per-CPU cache is a
/// modelled CPU that runs one thread's section at a time.
///
/// A section runs as a sequence of steps ([`Sections::step`]), each under
/// its CPU's model lock (so that loom can preempt between any two steps,
/// never inside one). Starting a section on a CPU ([`Sections::enter`])
/// makes the thread that CPU's occupant, which is what a thread running
/// there means: whoever was in a section there before has been preempted.
/// A step that finds another occupant, or none, has been preempted or
/// fenced since its section started, and restarts it from the top, as the
/// kernel would send it to its abort handler; the commit is the last step,
/// checked and stored under one lock, as the real commit is one instruction.
/// [`Sections::restart_all`], the modelled `membarrier`, empties every CPU
/// under its lock: every section in flight restarts, and everything a
/// section did before happens before what the caller does after.
///
/// A thread's CPU is its own choice ([`set_cpu`], between operations): the
/// models make an owner "migrate" by changing it. A real migration in the
/// middle of a section is a preemption, which the model has already.
#[cfg(loom)]
mod model {
    use std::cell::Cell;

    use loom::thread::{self, ThreadId};

    use crate::loom::{Mutex, Ordering, fence};

    crate::loom::const_thread_local! {
        static CPU: Cell<usize> = Cell::new(0);
        static OFF: Cell<bool> = Cell::new(false);
    }

    /// Makes the calling (loom) thread's next per-CPU caches run without
    /// sections (`off`), as `RECYCLER_NO_RSEQ=1` makes a process's: for
    /// the models of striped mode's locked stripes. Loom builds only.
    pub fn set_off(off: bool) {
        OFF.with(|o| o.set(off));
    }

    /// Moves the calling (loom) thread to the modelled `cpu` (CPU 0 until
    /// it does): its next operation on a per-CPU cache runs there. Loom
    /// builds only, for the models.
    pub fn set_cpu(cpu: usize) {
        CPU.with(|c| c.set(cpu));
    }

    /// The calling thread's modelled CPU.
    pub(crate) fn current_cpu() -> usize {
        CPU.with(Cell::get)
    }

    /// The modelled CPUs of one per-CPU cache.
    #[derive(Debug)]
    pub(crate) struct Sections {
        /// Per CPU, the thread whose section runs there.
        occupants: Box<[Mutex<Option<ThreadId>>]>,
    }

    /// A model for `slots` CPUs: available under loom unless the calling
    /// thread turned it off ([`set_off`]).
    pub(crate) fn sections(slots: usize) -> Option<Sections> {
        if OFF.with(Cell::get) {
            return None;
        }
        Some(Sections {
            occupants: (0..slots).map(|_| Mutex::new(None)).collect(),
        })
    }

    impl Sections {
        fn occupant(&self, cpu: usize) -> crate::loom::MutexGuard<'_, Option<ThreadId>> {
            self.occupants[cpu]
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        /// Starts a section on `cpu` (the calling thread's): it becomes the
        /// occupant, preempting the section there, if any.
        pub(crate) fn enter(&self, cpu: usize) {
            *self.occupant(cpu) = Some(thread::current().id());
        }

        /// One step of the calling thread's section on `cpu`: `f`, unless
        /// the section has been preempted or fenced since it started
        /// (`None`: restart it).
        pub(crate) fn step<R>(&self, cpu: usize, f: impl FnOnce() -> R) -> Option<R> {
            let occupant = self.occupant(cpu);
            (*occupant == Some(thread::current().id())).then(f)
        }

        /// The modelled `membarrier`: every section in flight restarts.
        pub(crate) fn restart_all(&self) -> bool {
            fence(Ordering::SeqCst);
            for cpu in 0..self.occupants.len() {
                *self.occupant(cpu) = None;
            }
            fence(Ordering::SeqCst);
            true
        }
    }
}
