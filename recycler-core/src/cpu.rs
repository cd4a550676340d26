//! Which CPU the calling thread runs on, for striped mode: a hint, read in
//! about a nanosecond, that may be stale by the time it is used (the thread
//! can migrate right after); striped mode only needs it to spread threads
//! over stripes and to keep a thread on the same stripe while it stays on a
//! CPU.
//!
//! - Linux on x86-64 with glibc 2.35 or later: the `cpu_id` field of the
//!   `rseq` area that glibc registers for every thread, found at
//!   `__rseq_offset` from the thread pointer (looked up once with `dlsym`, so
//!   that older C libraries still link); about 1 ns, against about 6 ns for
//!   `sched_getcpu` on the machine this was measured on.
//! - Other Linux, or a thread without an `rseq` area: `sched_getcpu`.
//! - Elsewhere, or if that fails: a stable per-thread number (the thread's
//!   token), so that each thread keeps to one stripe.

/// The calling thread's CPU, or a stable stand-in for it (see the module
/// docs).
#[inline]
pub(crate) fn current() -> usize {
    #[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
    if let Some(cpu) = rseq::cpu() {
        return cpu;
    }
    #[cfg(all(target_os = "linux", not(loom)))]
    {
        // SAFETY: `sched_getcpu` has no preconditions.
        let cpu = unsafe { libc::sched_getcpu() };
        if cpu >= 0 {
            return cpu as usize;
        }
    }
    stand_in()
}

/// `__rseq_offset`: where the C library put every thread's `rseq` area,
/// from the thread pointer; `None` if it registers none (`__rseq_size` is 0,
/// as under valgrind, or the symbols are missing). Looked up once.
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
pub(crate) fn rseq_offset() -> Option<isize> {
    rseq::offset()
}

/// The `cpu_id` field of the calling thread's `rseq` area: `None` if the C
/// library registers none, or if the kernel refused this thread's.
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
pub(crate) fn rseq_cpu() -> Option<usize> {
    rseq::cpu()
}

/// The calling thread's stand-in CPU: its token, which no other live thread
/// has (tokens are multiples of 4, hence the shift).
#[cold]
fn stand_in() -> usize {
    #[cfg(loom)]
    return crate::loom::thread_number();
    #[cfg(not(loom))]
    return (crate::registry::assign() >> 2) as usize;
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
mod rseq {
    use std::sync::atomic::{AtomicIsize, Ordering::Relaxed};

    /// `__rseq_offset` once looked up; [`UNKNOWN`] before, [`NONE`] if the
    /// C library has no `rseq` area.
    static OFFSET: AtomicIsize = AtomicIsize::new(UNKNOWN);
    const UNKNOWN: isize = isize::MIN;
    const NONE: isize = isize::MIN + 1;

    /// `__rseq_offset`, if the C library registers an `rseq` area.
    pub(super) fn offset() -> Option<isize> {
        let mut offset = OFFSET.load(Relaxed);
        if offset == UNKNOWN {
            offset = look_up();
        }
        (offset != NONE).then_some(offset)
    }

    /// The `cpu_id` field of the calling thread's `rseq` area, if it has one.
    #[inline]
    pub(super) fn cpu() -> Option<usize> {
        let mut offset = OFFSET.load(Relaxed);
        if offset == UNKNOWN {
            offset = look_up();
        }
        if offset == NONE {
            return None;
        }
        let tp: usize;
        // SAFETY: reads the thread pointer (the `fs` base, whose first word
        // points to itself on x86-64 Linux); no memory is written.
        unsafe {
            std::arch::asm!(
                "mov {}, fs:0",
                out(reg) tp,
                options(nostack, preserves_flags, readonly, pure)
            );
        }
        // `struct rseq { u32 cpu_id_start; u32 cpu_id; .. }`, registered by
        // the C library at `__rseq_offset` from the thread pointer of every
        // thread it starts.
        let at = tp.wrapping_add_signed(offset).wrapping_add(4) as *const u32;
        // SAFETY: the C library reported an `rseq` area (nonzero
        // `__rseq_size`), in every thread's control block for its whole
        // life; the kernel writes `cpu_id` only on return to user space,
        // between our instructions: a volatile read of an aligned `u32`.
        let cpu = unsafe { at.read_volatile() };
        // A thread without a registered area reads a negative value.
        (cpu < 1 << 31).then_some(cpu as usize)
    }

    #[cold]
    fn look_up() -> isize {
        // SAFETY: `dlsym` with the default handle and a NUL-terminated name
        // has no preconditions; it returns null for an unknown symbol.
        let (offset, size) = unsafe {
            (
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_offset".as_ptr()),
                libc::dlsym(libc::RTLD_DEFAULT, c"__rseq_size".as_ptr()),
            )
        };
        let found = if offset.is_null() || size.is_null() {
            NONE
        } else {
            // SAFETY: glibc documents both symbols as constants set before
            // any thread starts: a `ptrdiff_t` and an `unsigned int`.
            let (offset, size) = unsafe { (*offset.cast::<isize>(), *size.cast::<u32>()) };
            if size == 0 || offset == UNKNOWN || offset == NONE {
                NONE
            } else {
                offset
            }
        };
        OFFSET.store(found, Relaxed);
        found
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    #[test]
    #[cfg(target_os = "linux")]
    fn agrees_with_sched_getcpu() {
        // The thread may migrate between the two reads; on a machine that is
        // not moving threads around every few nanoseconds, most pairs agree.
        let agreed = (0..1000)
            .filter(|_| {
                let ours = super::current();
                // SAFETY: no preconditions.
                let theirs = unsafe { libc::sched_getcpu() };
                theirs >= 0 && ours == theirs as usize
            })
            .count();
        assert!(agreed > 500, "{agreed} of 1000 reads agreed");
    }
}
