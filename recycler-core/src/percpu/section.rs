//! The per-CPU cache's two critical sections, [`pop`] and [`push`], on the
//! calling thread's CPU's stack (see [`crate::rseq`] for what a critical
//! section is, and [`super::slots`] for the layout).
//!
//! Each one, from its start to its commit:
//!
//! 1. reads `cpu_id` from the thread's `rseq` area; a CPU without a slot
//!    (or a thread without an area, whose `cpu_id` is negative) leaves for
//!    the locked path;
//! 2. reads that slot's `shut` word; non-zero leaves for the locked path
//!    there (a stealer, or a thread that found it shut, works on the stack
//!    under its lock);
//! 3. reads the length; an empty stack (pop) or a full one (push) leaves;
//! 4. pop: reads the top item; push: writes the item above the top (a slot
//!    no one reads until a commit says it holds an item);
//! 5. commits: one store of the new length.
//!
//! On x86-64 Linux this is `asm!`: the kernel restarts a section preempted,
//! migrated, signalled or fenced before its commit at its abort handler,
//! which counts the abort and starts over (after [`MAX_ABORTS`] in a row it
//! gives up to the locked path). Under loom it is the same steps on the
//! modelled CPU ([`crate::rseq`]), restarted by the model. Elsewhere there
//! are no sections ([`Sections`] has no value).

#[cfg(any(loom, all(target_os = "linux", target_arch = "x86_64")))]
use crate::rseq::MAX_ABORTS;
use crate::rseq::Sections;

use super::slots::Slots;

/// How a section ended, in one word that is zero exactly when it committed
/// without a restart (the fast path tests that alone): the low three bits
/// say how it ended ([`DONE`], [`REFUSED`], [`SHUT`], [`SLOW`]), bit 3
/// ([`RESTARTED`]) that it was aborted at least once, and the bits from 8
/// up the slot it found shut.
#[derive(Debug, Clone, Copy)]
pub(super) struct Status {
    bits: u32,
    /// Aborts in a row, counted by the abort handler.
    aborts: usize,
}

/// The section committed.
const DONE: u32 = 0;
/// The stack was empty (pop) or full (push).
const REFUSED: u32 = 1;
/// The slot was shut.
const SHUT: u32 = 2;
/// The CPU has no slot, or [`MAX_ABORTS`] aborts in a row.
const SLOW: u32 = 3;
/// The section was aborted at least once.
const RESTARTED: u32 = 8;

impl Status {
    /// Committed, at the first attempt.
    #[inline(always)]
    pub(super) fn is_clean(self) -> bool {
        self.bits == 0
    }

    /// Aborts before the section ended.
    pub(super) fn aborts(self) -> usize {
        debug_assert_eq!(self.bits & RESTARTED != 0, self.aborts > 0, "{self:?}");
        self.aborts
    }

    /// The status of a section that ended with `outcome` after `aborts`
    /// aborts (for the model, which decides in Rust).
    #[cfg(loom)]
    fn new(outcome: Outcome, aborts: usize) -> Self {
        let code = match outcome {
            Outcome::Done => DONE,
            Outcome::Refused => REFUSED,
            Outcome::Shut(cpu) => SHUT | (cpu as u32) << 8,
            Outcome::Slow => SLOW,
        };
        let restarted = if aborts > 0 { RESTARTED } else { 0 };
        Self {
            bits: code | restarted,
            aborts,
        }
    }

    /// How the section ended.
    pub(super) fn outcome(self) -> Outcome {
        match self.bits & 7 {
            DONE => Outcome::Done,
            REFUSED => Outcome::Refused,
            SHUT => Outcome::Shut((self.bits >> 8) as usize),
            code => {
                debug_assert_eq!(code, SLOW, "{self:?}");
                Outcome::Slow
            }
        }
    }
}

/// How a section ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Outcome {
    /// Committed.
    Done,
    /// Nothing to pop, or no room to push: the stack of the CPU the thread
    /// ran on was empty, or full.
    Refused,
    /// That stack (this slot) is shut: take the locked path there.
    Shut(usize),
    /// The thread's CPU has no slot, or the section was restarted
    /// [`MAX_ABORTS`] times in a row: take the locked path.
    Slow,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
pub(super) use self::x86_64::{pop, push};

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
mod x86_64 {
    use std::arch::asm;

    use super::{MAX_ABORTS, REFUSED, RESTARTED, SHUT, SLOW, Sections, Slots, Status};
    use crate::percpu::slots::{
        BASE_AT, CAPACITY_AT, COUNT_AT, ITEMS, LEN, SHUT as SHUT_AT, STRIDE_AT,
    };

    /// Pops the top item of the calling thread's CPU's stack. Returns how
    /// the section ended, and the item (when it committed).
    ///
    /// # Safety
    ///
    /// `sections` is this process's ([`crate::rseq::sections`]), so that
    /// the calling thread's `rseq` area is at its offset and its abort
    /// handlers are signed as the C library registered; `slots` is laid out
    /// as [`super::super::slots`] says, and no other code than these
    /// sections writes a slot whose `shut` word is zero.
    #[inline(always)]
    pub(in crate::percpu) unsafe fn pop(sections: &Sections, slots: &Slots) -> (Status, *mut ()) {
        let bits: u32;
        let item: *mut ();
        let mut aborts: usize = 0;
        // SAFETY: registers: the operands below only, and the flags. Memory:
        // reads the `Slots` header (`count`, `stride`, `base`) that `slots`
        // points to; reads `cpu_id` (fs:[area + 4]) and writes `rseq_cs` (fs:[area + 8])
        // of the calling thread's `rseq` area, which the C library
        // registered at `area` from its thread pointer (the caller's
        // guarantee); reads the `shut` and length words and one item of the
        // slot `cpu_id` names, after checking `cpu_id < count` and that
        // `len > 0` (so `len - 1 < capacity`), and writes its length word
        // (the commit) only. The descriptor in `__rseq_cs` (32-byte
        // aligned: version 0, flags 0, start `4:`, length `5: - 4:`, abort
        // `6:`) covers the instructions from the `cpu_id` load to the
        // commit; the abort handler, outside that range, follows the
        // 4-byte signature the C library registered (`ud1` encoding
        // `0x53053053` in its last four bytes, as glibc and librseq emit
        // it). Every operand written inside the section is `out` (not
        // `lateout`), so that no input shares its register and a restart
        // finds its inputs intact. The stack is not touched.
        unsafe {
            asm!(
                "xor {bits:e}, {bits:e}",
                // Restart point: (re)arm the descriptor; the kernel clears
                // `rseq_cs` when it aborts a section.
                "2:",
                "lea {t}, [rip + 3f]",
                "mov qword ptr fs:[{area} + 8], {t}",
                "4:",
                "mov {cpu:e}, dword ptr fs:[{area} + 4]",
                "cmp {cpu}, qword ptr [{slots} + {count_at}]",
                "jae 7f",
                "mov {t}, {cpu}",
                "imul {t}, qword ptr [{slots} + {stride_at}]",
                "add {t}, qword ptr [{slots} + {base_at}]",
                "cmp qword ptr [{t} + {shut_at}], 0",
                "jne 8f",
                "mov {len}, qword ptr [{t} + {len_at}]",
                "test {len}, {len}",
                "jz 9f",
                "mov {item}, qword ptr [{t} + 8 * {len} + {top}]",
                "dec {len}",
                // The commit.
                "mov qword ptr [{t} + {len_at}], {len}",
                "5:",
                // Out of line: the exits other than the commit, and the
                // abort handler.
                ".pushsection __rseq_failure, \"ax\"",
                "7:",
                "or {bits:e}, {slow}",
                "jmp 5b",
                "8:",
                "shl {cpu:e}, 8",
                "or {bits:e}, {cpu:e}",
                "or {bits:e}, {shut}",
                "jmp 5b",
                "9:",
                "or {bits:e}, {refused}",
                "jmp 5b",
                ".byte 0x0f, 0xb9, 0x3d",
                ".long 0x53053053",
                "6:",
                "or {bits:e}, {restarted}",
                "inc {aborts}",
                "cmp {aborts}, {max_aborts}",
                "jb 2b",
                "or {bits:e}, {slow}",
                "jmp 5b",
                ".popsection",
                ".pushsection __rseq_cs, \"aw\"",
                ".balign 32",
                "3:",
                ".long 0, 0",
                ".quad 4b, 5b - 4b, 6b",
                ".popsection",
                area = in(reg) sections.offset(),
                slots = in(reg) std::ptr::from_ref(slots),
                aborts = inout(reg) aborts,
                bits = out(reg) bits,
                item = out(reg) item,
                cpu = out(reg) _,
                t = out(reg) _,
                len = out(reg) _,
                count_at = const COUNT_AT,
                stride_at = const STRIDE_AT,
                base_at = const BASE_AT,
                shut_at = const SHUT_AT,
                len_at = const LEN,
                top = const ITEMS - 8,
                slow = const SLOW,
                shut = const SHUT,
                refused = const REFUSED,
                restarted = const RESTARTED,
                max_aborts = const MAX_ABORTS,
                options(nostack),
            );
        }
        (Status { bits, aborts }, item)
    }

    /// Pushes `item` onto the calling thread's CPU's stack. Returns how the
    /// section ended: `item` is the stack's if it committed, and still the
    /// caller's otherwise.
    ///
    /// # Safety
    ///
    /// As for [`pop`].
    #[inline(always)]
    pub(in crate::percpu) unsafe fn push(
        sections: &Sections,
        slots: &Slots,
        item: *mut (),
    ) -> Status {
        let bits: u32;
        let mut aborts: usize = 0;
        // SAFETY: as in `pop` (and it reads `capacity` from the `Slots`
        // header too), but for what the section does to the slot:
        // it reads the `shut` and length words, checks `len < capacity`,
        // writes `item` at index `len` (above the top: no one reads it
        // before a commit says it holds an item, and a restarted push
        // overwrites it) and commits the length `len + 1`. `item` is an
        // input, never written.
        unsafe {
            asm!(
                "xor {bits:e}, {bits:e}",
                "2:",
                "lea {t}, [rip + 3f]",
                "mov qword ptr fs:[{area} + 8], {t}",
                "4:",
                "mov {cpu:e}, dword ptr fs:[{area} + 4]",
                "cmp {cpu}, qword ptr [{slots} + {count_at}]",
                "jae 7f",
                "mov {t}, {cpu}",
                "imul {t}, qword ptr [{slots} + {stride_at}]",
                "add {t}, qword ptr [{slots} + {base_at}]",
                "cmp qword ptr [{t} + {shut_at}], 0",
                "jne 8f",
                "mov {len}, qword ptr [{t} + {len_at}]",
                "cmp {len}, qword ptr [{slots} + {capacity_at}]",
                "jae 9f",
                "mov qword ptr [{t} + 8 * {len} + {items}], {item}",
                "inc {len}",
                // The commit.
                "mov qword ptr [{t} + {len_at}], {len}",
                "5:",
                ".pushsection __rseq_failure, \"ax\"",
                "7:",
                "or {bits:e}, {slow}",
                "jmp 5b",
                "8:",
                "shl {cpu:e}, 8",
                "or {bits:e}, {cpu:e}",
                "or {bits:e}, {shut}",
                "jmp 5b",
                "9:",
                "or {bits:e}, {refused}",
                "jmp 5b",
                ".byte 0x0f, 0xb9, 0x3d",
                ".long 0x53053053",
                "6:",
                "or {bits:e}, {restarted}",
                "inc {aborts}",
                "cmp {aborts}, {max_aborts}",
                "jb 2b",
                "or {bits:e}, {slow}",
                "jmp 5b",
                ".popsection",
                ".pushsection __rseq_cs, \"aw\"",
                ".balign 32",
                "3:",
                ".long 0, 0",
                ".quad 4b, 5b - 4b, 6b",
                ".popsection",
                area = in(reg) sections.offset(),
                slots = in(reg) std::ptr::from_ref(slots),
                item = in(reg) item,
                aborts = inout(reg) aborts,
                bits = out(reg) bits,
                cpu = out(reg) _,
                t = out(reg) _,
                len = out(reg) _,
                count_at = const COUNT_AT,
                stride_at = const STRIDE_AT,
                base_at = const BASE_AT,
                capacity_at = const CAPACITY_AT,
                shut_at = const SHUT_AT,
                len_at = const LEN,
                items = const ITEMS,
                slow = const SLOW,
                shut = const SHUT,
                refused = const REFUSED,
                restarted = const RESTARTED,
                max_aborts = const MAX_ABORTS,
                options(nostack),
            );
        }
        Status { bits, aborts }
    }
}

#[cfg(loom)]
pub(super) use self::model::{pop, push};

/// The sections' steps on the modelled CPU (see [`crate::rseq`]'s model):
/// each step a restart point, the commit the last step.
#[cfg(loom)]
mod model {
    use super::{MAX_ABORTS, Outcome, Sections, Slots, Status};
    use crate::loom::Ordering;
    use crate::rseq::current_cpu;

    /// What one attempt came to: an end, or a restart.
    enum Attempt<R> {
        End(Outcome, R),
        Restart,
    }

    /// Runs `attempt` (one pass of a section, `None` meaning a step found
    /// it restarted) until it ends, at most [`MAX_ABORTS`] restarts in a
    /// row.
    fn run<R>(mut attempt: impl FnMut() -> Attempt<R>, none: R) -> (Status, R) {
        let mut aborts = 0;
        loop {
            match attempt() {
                Attempt::End(outcome, r) => return (Status::new(outcome, aborts), r),
                Attempt::Restart => {
                    aborts += 1;
                    if aborts >= MAX_ABORTS {
                        return (Status::new(Outcome::Slow, aborts), none);
                    }
                }
            }
        }
    }

    /// The modelled pop (see [`super`]).
    ///
    /// # Safety
    ///
    /// None under loom (kept `unsafe` to match the real one).
    pub(in crate::percpu) unsafe fn pop(sections: &Sections, slots: &Slots) -> (Status, *mut ()) {
        let null = std::ptr::null_mut();
        run(
            || {
                let cpu = current_cpu();
                if cpu >= slots.count() {
                    return Attempt::End(Outcome::Slow, null);
                }
                sections.enter(cpu);
                // `Acquire`: the real load is an x86 load (acquire), which
                // pairs with the locked path's `Release` reopening.
                let Some(shut) = sections.step(cpu, || slots.shut(cpu).load(Ordering::Acquire))
                else {
                    return Attempt::Restart;
                };
                if shut != 0 {
                    return Attempt::End(Outcome::Shut(cpu), null);
                }
                let Some(len) = sections.step(cpu, || slots.len(cpu).load(Ordering::Relaxed))
                else {
                    return Attempt::Restart;
                };
                if len == 0 {
                    return Attempt::End(Outcome::Refused, null);
                }
                let Some(item) = sections.step(cpu, || slots.read(cpu, len - 1)) else {
                    return Attempt::Restart;
                };
                match sections.step(cpu, || slots.len(cpu).store(len - 1, Ordering::Relaxed)) {
                    Some(()) => Attempt::End(Outcome::Done, item),
                    None => Attempt::Restart,
                }
            },
            null,
        )
    }

    /// The modelled push (see [`super`]).
    ///
    /// # Safety
    ///
    /// None under loom (kept `unsafe` to match the real one).
    pub(in crate::percpu) unsafe fn push(
        sections: &Sections,
        slots: &Slots,
        item: *mut (),
    ) -> Status {
        let (status, ()) = run(
            || {
                let cpu = current_cpu();
                if cpu >= slots.count() {
                    return Attempt::End(Outcome::Slow, ());
                }
                sections.enter(cpu);
                let Some(shut) = sections.step(cpu, || slots.shut(cpu).load(Ordering::Acquire))
                else {
                    return Attempt::Restart;
                };
                if shut != 0 {
                    return Attempt::End(Outcome::Shut(cpu), ());
                }
                let Some(len) = sections.step(cpu, || slots.len(cpu).load(Ordering::Relaxed))
                else {
                    return Attempt::Restart;
                };
                if len >= slots.capacity() {
                    return Attempt::End(Outcome::Refused, ());
                }
                if sections.step(cpu, || slots.write(cpu, len, item)).is_none() {
                    return Attempt::Restart;
                }
                match sections.step(cpu, || slots.len(cpu).store(len + 1, Ordering::Relaxed)) {
                    Some(()) => Attempt::End(Outcome::Done, ()),
                    None => Attempt::Restart,
                }
            },
            (),
        );
        status
    }
}

#[cfg(not(any(loom, all(target_os = "linux", target_arch = "x86_64"))))]
pub(super) use self::unsupported::{pop, push};

/// No sections on this platform: [`Sections`] has no value, so these are
/// never called.
#[cfg(not(any(loom, all(target_os = "linux", target_arch = "x86_64"))))]
mod unsupported {
    use super::{Sections, Slots, Status};

    /// Never called (no [`Sections`] exists here).
    ///
    /// # Safety
    ///
    /// None.
    pub(in crate::percpu) unsafe fn pop(sections: &Sections, _slots: &Slots) -> (Status, *mut ()) {
        match *sections {}
    }

    /// Never called (no [`Sections`] exists here).
    ///
    /// # Safety
    ///
    /// None.
    pub(in crate::percpu) unsafe fn push(
        sections: &Sections,
        _slots: &Slots,
        _item: *mut (),
    ) -> Status {
        match *sections {}
    }
}
