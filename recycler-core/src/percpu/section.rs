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
//! 3. reads the slot's word and takes the length from it; an empty stack
//!    (pop) or a full one (push) leaves;
//! 4. pop: reads the top item; push: writes the item above the top (a slot
//!    no one reads until a commit says it holds an item);
//! 5. commits: one store of the new word: the length one less (pop), or the
//!    length and the push count one more each (push; a count that would
//!    carry out of the word leaves for the locked path instead).
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
/// say how it ended ([`DONE`], [`REFUSED`], [`SHUT`], [`SLOW`]), the bits
/// from 4 up how many times it was aborted (in units of [`ABORTED`]). One
/// register in the assembly, which keeps the sections' register count low.
#[derive(Debug, Clone, Copy)]
pub(super) struct Status {
    bits: u32,
}

/// The section committed.
const DONE: u32 = 0;
/// The stack was empty (pop) or full (push).
const REFUSED: u32 = 1;
/// The slot was shut.
const SHUT: u32 = 2;
/// The CPU has no slot, [`MAX_ABORTS`] aborts in a row, or (a push) the
/// push count about to carry out of the word.
const SLOW: u32 = 3;
/// Not a section's: the cache runs on the fallback, without sections.
const FALLBACK: u32 = 4;
/// One abort, as the abort handler counts it.
const ABORTED: u32 = 16;

#[cfg(any(loom, all(target_os = "linux", target_arch = "x86_64")))]
static_assertions::const_assert!(MAX_ABORTS < 1 << 24);

impl Status {
    /// What the fallback's operations report: no section ran.
    pub(super) const FALLBACK: Self = Self { bits: FALLBACK };

    /// Committed, at the first attempt.
    #[inline(always)]
    pub(super) fn is_clean(self) -> bool {
        self.bits == 0
    }

    /// Aborts before the section ended.
    pub(super) fn aborts(self) -> usize {
        (self.bits / ABORTED) as usize
    }

    /// The status of a section that ended with `outcome` after `aborts`
    /// aborts (for the model, which decides in Rust).
    #[cfg(loom)]
    fn new(outcome: Outcome, aborts: usize) -> Self {
        let code = match outcome {
            Outcome::Done => DONE,
            Outcome::Refused => REFUSED,
            Outcome::Shut => SHUT,
            Outcome::Slow => SLOW,
            Outcome::Fallback => FALLBACK,
        };
        Self {
            bits: code | aborts as u32 * ABORTED,
        }
    }

    /// How the section ended.
    pub(super) fn outcome(self) -> Outcome {
        match self.bits % ABORTED {
            DONE => Outcome::Done,
            REFUSED => Outcome::Refused,
            SHUT => Outcome::Shut,
            FALLBACK => Outcome::Fallback,
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
    /// That stack is shut: take the locked path (on the slot of the CPU the
    /// thread runs on then, most likely the same).
    Shut,
    /// The thread's CPU has no slot, the section was restarted
    /// [`MAX_ABORTS`] times in a row, or a push count was about to carry:
    /// take the locked path.
    Slow,
    /// No section ran: the cache is on the fallback (a lock per stack).
    Fallback,
}

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
pub(super) use self::x86_64::{pop, push};

#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
mod x86_64 {
    use std::arch::asm;

    use super::{ABORTED, MAX_ABORTS, REFUSED, SHUT, SLOW, Sections, Slots, Status};
    use crate::percpu::slots::{
        BASE_AT, CAPACITY_AT, COUNT_AT, ITEMS, LEN_MASK, PUSHED, SHUT as SHUT_AT, STRIDE_AT, WORD,
    };

    /// The start of both sections, a template piece of their `asm!`: zero
    /// `bits`; the restart point `2:`, which (re)arms the descriptor (the
    /// kernel clears `rseq_cs` when it aborts a section); the section's
    /// start `4:`; `n` the CPU (`cpu_id`), checked below the slots' count;
    /// `t` the address of that CPU's slot, whose `shut` word must be zero.
    /// Leaves by `7:` (no slot for this CPU) or `8:` (shut).
    macro_rules! section_head {
        () => {
            concat!(
                "xor {bits:e}, {bits:e}\n",
                "2:\n",
                "lea {t}, [rip + 3f]\n",
                "mov qword ptr fs:[{area} + 8], {t}\n",
                "4:\n",
                "mov {n:e}, dword ptr fs:[{area} + 4]\n",
                "cmp {n}, qword ptr [{slots} + {count_at}]\n",
                "jae 7f\n",
                "mov {t}, {n}\n",
                "imul {t}, qword ptr [{slots} + {stride_at}]\n",
                "add {t}, qword ptr [{slots} + {base_at}]\n",
                "cmp qword ptr [{t} + {shut_at}], 0\n",
                "jne 8f",
            )
        };
    }

    /// The end of both sections, a template piece of their `asm!`: the
    /// commit (the slot's word from `w`, one store) and the section's end
    /// `5:`; out of line, in `__rseq_failure`, the exits other than the
    /// commit (`7:` slow, `8:` shut, `9:` refused, each setting its bit of
    /// `bits`) and the abort handler `6:` after the signature (`ud1`
    /// encoding `0x53053053`), which counts the abort and restarts at `2:`
    /// until `give_up`, then leaves slow; and the descriptor `3:` in
    /// `__rseq_cs` (32-byte aligned: version 0, flags 0, start `4:`,
    /// length `5: - 4:`, abort `6:`).
    macro_rules! section_tail {
        () => {
            concat!(
                "mov qword ptr [{t} + {word_at}], {w}\n",
                "5:\n",
                ".pushsection __rseq_failure, \"ax\"\n",
                "7:\n",
                "or {bits:e}, {slow}\n",
                "jmp 5b\n",
                "8:\n",
                "or {bits:e}, {shut}\n",
                "jmp 5b\n",
                "9:\n",
                "or {bits:e}, {refused}\n",
                "jmp 5b\n",
                ".byte 0x0f, 0xb9, 0x3d\n",
                ".long 0x53053053\n",
                "6:\n",
                "add {bits:e}, {aborted}\n",
                "cmp {bits:e}, {give_up}\n",
                "jb 2b\n",
                "or {bits:e}, {slow}\n",
                "jmp 5b\n",
                ".popsection\n",
                ".pushsection __rseq_cs, \"aw\"\n",
                ".balign 32\n",
                "3:\n",
                ".long 0, 0\n",
                ".quad 4b, 5b - 4b, 6b\n",
                ".popsection",
            )
        };
    }

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
        // SAFETY: registers: the seven operands below (`area` and `slots`
        // inputs, never written; `bits`, `item`, `n`, `t` and `w` written)
        // and the flags; the stack is not touched (`nostack`). Memory:
        // reads the `Slots` header (`count`, `stride`, `base`) that `slots`
        // points to; reads `cpu_id` (fs:[area + 4]) and writes `rseq_cs`
        // (fs:[area + 8]) of the calling thread's `rseq` area, which the C
        // library registered at `area` from its thread pointer (the
        // caller's guarantee); reads the `shut` word, the word (length and
        // push count) and one item of the slot `cpu_id` names, after
        // checking `cpu_id < count` and that `len > 0` (so `len - 1 <
        // capacity`), and writes its word (the commit: the word less one,
        // the length less one as `len > 0`) only. The descriptor in
        // `__rseq_cs` (32-byte aligned: version 0, flags 0, start `4:`,
        // length `5: - 4:`, abort `6:`) covers the instructions from the
        // `cpu_id` load to the commit; the abort handler, outside that
        // range, follows the 4-byte signature the C library registered
        // (`ud1` encoding `0x53053053` in its last four bytes, as glibc and
        // librseq emit it). Every operand written inside the section is
        // `out` (not `lateout`), so that no input shares its register and a
        // restart finds its inputs intact; `bits` is written only outside
        // the section (zeroed before it, counted by the abort handler, set
        // by the exits).
        unsafe {
            asm!(
                section_head!(),
                // `n`: the length.
                "mov {w}, qword ptr [{t} + {word_at}]",
                "mov {n}, {w}",
                "and {n}, {len_mask}",
                "jz 9f",
                "mov {item}, qword ptr [{t} + 8 * {n} + {top}]",
                "dec {w}",
                // The commit, the exits and the abort handler.
                section_tail!(),
                area = in(reg) sections.offset(),
                slots = in(reg) std::ptr::from_ref(slots),
                bits = out(reg) bits,
                item = out(reg) item,
                n = out(reg) _,
                t = out(reg) _,
                w = out(reg) _,
                count_at = const COUNT_AT,
                stride_at = const STRIDE_AT,
                base_at = const BASE_AT,
                shut_at = const SHUT_AT,
                word_at = const WORD,
                len_mask = const LEN_MASK,
                top = const ITEMS - 8,
                slow = const SLOW,
                shut = const SHUT,
                refused = const REFUSED,
                aborted = const ABORTED,
                give_up = const MAX_ABORTS as u32 * ABORTED,
                options(nostack),
            );
        }
        (Status { bits }, item)
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
        // SAFETY: as in `pop` (and it reads `capacity` from the `Slots`
        // header too), but for what the section does to the slot: it
        // reads the `shut` word and the word, checks `len < capacity`,
        // writes `item` at index `len` (above the top: no one reads it
        // before a commit says it holds an item, and a restarted push
        // overwrites it) and commits the word plus `PUSHED` (length
        // `len + 1`, one more push counted), unless that carries out of the
        // word (then it leaves for the locked path without a store).
        // Registers: as `pop`'s, `item` an input (never written) instead of
        // an output.
        unsafe {
            asm!(
                section_head!(),
                "mov {w}, qword ptr [{t} + {word_at}]",
                "mov {n}, {w}",
                "and {n}, {len_mask}",
                "cmp {n}, qword ptr [{slots} + {capacity_at}]",
                "jae 9f",
                "mov qword ptr [{t} + 8 * {n} + {items}], {item}",
                "add {w}, {pushed}",
                // The push count would carry out of the word: the locked
                // path folds it.
                "jc 7f",
                // The commit, the exits and the abort handler.
                section_tail!(),
                area = in(reg) sections.offset(),
                slots = in(reg) std::ptr::from_ref(slots),
                item = in(reg) item,
                bits = out(reg) bits,
                n = out(reg) _,
                t = out(reg) _,
                w = out(reg) _,
                count_at = const COUNT_AT,
                stride_at = const STRIDE_AT,
                base_at = const BASE_AT,
                capacity_at = const CAPACITY_AT,
                shut_at = const SHUT_AT,
                word_at = const WORD,
                len_mask = const LEN_MASK,
                pushed = const PUSHED,
                items = const ITEMS,
                slow = const SLOW,
                shut = const SHUT,
                refused = const REFUSED,
                aborted = const ABORTED,
                give_up = const MAX_ABORTS as u32 * ABORTED,
                options(nostack),
            );
        }
        Status { bits }
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
    use crate::percpu::slots::{PUSHED, split};
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
                    return Attempt::End(Outcome::Shut, null);
                }
                let Some(word) = sections.step(cpu, || slots.word(cpu).load(Ordering::Relaxed))
                else {
                    return Attempt::Restart;
                };
                let (_, len) = split(word);
                if len == 0 {
                    return Attempt::End(Outcome::Refused, null);
                }
                let Some(item) = sections.step(cpu, || slots.read(cpu, len - 1)) else {
                    return Attempt::Restart;
                };
                match sections.step(cpu, || slots.word(cpu).store(word - 1, Ordering::Relaxed)) {
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
                    return Attempt::End(Outcome::Shut, ());
                }
                let Some(word) = sections.step(cpu, || slots.word(cpu).load(Ordering::Relaxed))
                else {
                    return Attempt::Restart;
                };
                let (_, len) = split(word);
                if len >= slots.capacity() {
                    return Attempt::End(Outcome::Refused, ());
                }
                if sections.step(cpu, || slots.write(cpu, len, item)).is_none() {
                    return Attempt::Restart;
                }
                let Some(next) = word.checked_add(PUSHED) else {
                    return Attempt::End(Outcome::Slow, ());
                };
                match sections.step(cpu, || slots.word(cpu).store(next, Ordering::Relaxed)) {
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
