//! The two fences of the steal protocol: a light one on the owner path (a
//! compiler fence where the heavy one can reach the owner's CPU) and a heavy
//! one for the thread that takes a cache.
//!
//! On Linux the heavy fence is `membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED)`:
//! the kernel interrupts every CPU running a thread of this process and
//! executes a full barrier there, so the owner's plain stores and loads act
//! as if separated by a `SeqCst` fence (the technique of liburcu's
//! membarrier flavour and of folly's `asymmetric_thread_fence_heavy`). The
//! command needs a one-time registration, done on first use; where it is
//! unavailable (an old kernel, a seccomp filter, valgrind), the slower
//! `MEMBARRIER_CMD_GLOBAL` serves if present, and otherwise
//! [`available`] is `false`: no cache then ever opens its owner path
//! ([`crate::gate::Gate`]), every operation takes the cache's lock, and taking a
//! cache needs no fence at all. Elsewhere (and under loom, which models
//! `membarrier` as a `SeqCst` fence on both sides) both fences are `SeqCst`
//! fences.

#[cfg(any(loom, not(target_os = "linux")))]
mod imp {
    use crate::loom::{Ordering, fence};

    /// The owner's side: a full fence.
    #[inline(always)]
    pub(crate) fn light() {
        fence(Ordering::SeqCst);
    }

    /// The stealer's side: a full fence.
    pub(crate) fn heavy() -> bool {
        fence(Ordering::SeqCst);
        true
    }

    /// Always: the owner path pays a full fence instead.
    pub(crate) fn available() -> bool {
        true
    }
}

#[cfg(all(target_os = "linux", not(loom)))]
mod imp {
    use std::sync::atomic::{AtomicU8, Ordering, compiler_fence};

    const CMD_QUERY: libc::c_long = 0;
    const CMD_GLOBAL: libc::c_long = 1;
    const CMD_PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const CMD_REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    const UNKNOWN: u8 = 0;
    const PRIVATE: u8 = 1;
    const GLOBAL: u8 = 2;
    const NONE: u8 = 3;

    /// Which command serves, found on first use.
    static MODE: AtomicU8 = AtomicU8::new(UNKNOWN);

    /// The `membarrier` system call with `flags = 0`, `cpu_id = 0`: its
    /// return value, negative on failure (also serves `crate::rseq`).
    pub(crate) fn membarrier(cmd: libc::c_long) -> libc::c_long {
        // SAFETY: `membarrier(cmd, flags = 0, cpu_id = 0)` reads no memory
        // of ours; an unknown command fails with `EINVAL`, a missing system
        // call with `ENOSYS`.
        unsafe {
            libc::syscall(
                libc::SYS_membarrier,
                cmd,
                0 as libc::c_long,
                0 as libc::c_long,
            )
        }
    }

    #[cold]
    fn probe() -> u8 {
        let mask = membarrier(CMD_QUERY);
        let mode = if mask < 0 {
            NONE
        } else if mask & CMD_PRIVATE_EXPEDITED != 0
            && membarrier(CMD_REGISTER_PRIVATE_EXPEDITED) == 0
        {
            PRIVATE
        } else if mask & CMD_GLOBAL != 0 {
            GLOBAL
        } else {
            NONE
        };
        MODE.store(mode, Ordering::Relaxed);
        mode
    }

    fn mode() -> u8 {
        match MODE.load(Ordering::Relaxed) {
            UNKNOWN => probe(),
            mode => mode,
        }
    }

    /// The owner's side: the compiler keeps the order of the owner's
    /// accesses; `membarrier` orders them on the CPU.
    #[inline(always)]
    pub(crate) fn light() {
        compiler_fence(Ordering::SeqCst);
    }

    /// The stealer's side: `membarrier`. `false` if it failed (then no owner
    /// path may be assumed fenced, and nothing is taken).
    pub(crate) fn heavy() -> bool {
        let cmd = match mode() {
            PRIVATE => CMD_PRIVATE_EXPEDITED,
            GLOBAL => CMD_GLOBAL,
            _ => return false,
        };
        std::sync::atomic::fence(Ordering::SeqCst);
        let ok = membarrier(cmd) == 0;
        std::sync::atomic::fence(Ordering::SeqCst);
        ok
    }

    /// Whether a heavy fence is available; probed once.
    pub(crate) fn available() -> bool {
        mode() != NONE
    }
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
pub(crate) use imp::membarrier;
pub(crate) use imp::{available, heavy, light};
