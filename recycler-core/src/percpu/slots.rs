//! The memory of a per-CPU cache: one slot per CPU, each a bounded stack of
//! pointers under a `shut` word, laid out as the critical sections'
//! assembly ([`super::section`]) reads it.
//!
//! A slot, in bytes from its start:
//!
//! | offset | word | written by |
//! | --- | --- | --- |
//! | [`SHUT`] | how many locked accesses want the stack shut | the locked path (atomic read-modify-write) |
//! | [`WORD`] | the stack's length (low [`LEN_BITS`] bits) and the sections' pushes since the last locked access (the bits above) | a section's commit, or the locked path |
//! | [`ITEMS`] + 8 × i | the `i`th object's pointer | a push (section or locked) |
//!
//! The word is what makes a section's commit one store and still counted: a
//! pop stores the word less one (the length less one), a push the word plus
//! [`PUSHED`] (the length and the push count one more each). The locked
//! path folds the count into the slot's books ([`super::locked`]) and
//! leaves the count at zero; the pops since are the length it left, plus
//! the pushes counted, less the length now. A push whose count would carry
//! out of the word leaves for the locked path instead of committing.
//!
//! Slots are [`ALIGN`]-byte aligned and span a multiple of it, so that two
//! CPUs never write the same cache line (nor the adjacent line that x86
//! prefetches with it). Outside the sections, Rust reads and writes these
//! words with `Relaxed` atomics (the sections' plain aligned loads and
//! stores are atomic on x86-64 too); what orders them is the protocol in
//! [`super`]: a section's CPU, or the lock and a fence.
//!
//! Under loom, the same words are loom atomics, and the items loom
//! `UnsafeCell`s, so that a section and a locked access that touch an item
//! at once are reported.

#[cfg(not(loom))]
pub(super) use self::raw::Slots;
#[cfg(all(target_os = "linux", target_arch = "x86_64", not(loom)))]
pub(super) use self::raw::{BASE_AT, CAPACITY_AT, COUNT_AT, STRIDE_AT};

#[cfg(loom)]
pub(super) use self::model::Slots;

/// Offset of the `shut` word in a slot.
#[cfg(not(loom))]
pub(super) const SHUT: usize = 0;
/// Offset of the word (length and push count) in a slot.
#[cfg(not(loom))]
pub(super) const WORD: usize = 8;
/// Offset of the first item in a slot.
#[cfg(not(loom))]
pub(super) const ITEMS: usize = 16;
/// A slot's alignment, and the unit of its size.
#[cfg(not(loom))]
pub(super) const ALIGN: usize = 128;

/// The most items a slot holds: keeps the arithmetic of slot sizes far from
/// overflow (a slot of this capacity spans 8 MiB), and the length within
/// [`LEN_BITS`].
pub(crate) const MAX_CAPACITY: usize = 1 << 20;

/// Bits of the word that hold the length.
pub(crate) const LEN_BITS: u32 = 21;
/// The length's bits of the word.
pub(crate) const LEN_MASK: usize = (1 << LEN_BITS) - 1;
/// What a section's push adds to the word: one push counted, one item more.
/// A 32-bit immediate, as the assembly needs.
pub(crate) const PUSHED: usize = (1 << LEN_BITS) + 1;

static_assertions::const_assert!(MAX_CAPACITY <= LEN_MASK);
static_assertions::const_assert!(PUSHED < 1 << 31);

/// A word's push count and length.
#[inline(always)]
pub(crate) fn split(word: usize) -> (usize, usize) {
    (word >> LEN_BITS, word & LEN_MASK)
}

/// The most slots a cache has.
pub(crate) const MAX_SLOTS: usize = 4096;

#[cfg(not(loom))]
mod raw {
    use std::alloc::{self, Layout};
    use std::ptr::NonNull;

    use super::{ALIGN, ITEMS, MAX_CAPACITY, MAX_SLOTS, SHUT, WORD};
    use crate::loom::{AtomicPtr, AtomicUsize, Ordering};

    /// The slots: one zeroed allocation of `count` slots of `stride` bytes.
    /// The sections read these four words from memory (at the offsets
    /// below), which keeps their register count low.
    #[repr(C)]
    pub(crate) struct Slots {
        base: NonNull<u8>,
        count: usize,
        stride: usize,
        capacity: usize,
    }

    /// Where the sections find `base`, `count`, `stride` and `capacity` in
    /// a `Slots`.
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub(crate) const BASE_AT: usize = std::mem::offset_of!(Slots, base);
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub(crate) const COUNT_AT: usize = std::mem::offset_of!(Slots, count);
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub(crate) const STRIDE_AT: usize = std::mem::offset_of!(Slots, stride);
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    pub(crate) const CAPACITY_AT: usize = std::mem::offset_of!(Slots, capacity);

    impl Slots {
        /// `count` empty, open slots (clamped to `1..=MAX_SLOTS`) of
        /// `capacity` items each (at most `MAX_CAPACITY`).
        pub(crate) fn new(count: usize, capacity: usize) -> Self {
            let count = count.clamp(1, MAX_SLOTS);
            let capacity = capacity.min(MAX_CAPACITY);
            let stride = (ITEMS + 8 * capacity).next_multiple_of(ALIGN);
            let layout = Layout::from_size_align(count * stride, ALIGN)
                .expect("bounded by MAX_SLOTS and MAX_CAPACITY");
            // SAFETY: the layout's size is at least `ALIGN`, not zero.
            let base = unsafe { alloc::alloc_zeroed(layout) };
            let Some(base) = NonNull::new(base) else {
                alloc::handle_alloc_error(layout)
            };
            Self {
                base,
                count,
                stride,
                capacity,
            }
        }

        /// The slots' start.
        #[inline(always)]
        pub(crate) fn base(&self) -> *mut u8 {
            self.base.as_ptr()
        }

        /// How many slots there are.
        #[inline(always)]
        pub(crate) fn count(&self) -> usize {
            self.count
        }

        /// Items a slot holds at most.
        #[inline(always)]
        pub(crate) fn capacity(&self) -> usize {
            self.capacity
        }

        /// The word at `offset` in `slot`.
        #[inline(always)]
        fn at(&self, slot: usize, offset: usize) -> *mut usize {
            assert!(slot < self.count);
            debug_assert!(offset < self.stride && offset.is_multiple_of(8));
            // SAFETY: `slot < count` and `offset < stride`: inside the
            // allocation.
            unsafe { self.base().add(slot * self.stride + offset).cast() }
        }

        /// `slot`'s `shut` word.
        #[inline(always)]
        pub(crate) fn shut(&self, slot: usize) -> &AtomicUsize {
            // SAFETY: an aligned word of the allocation, alive as long as
            // `self`; every access to it is atomic (Rust's, and the
            // sections' aligned loads).
            unsafe { AtomicUsize::from_ptr(self.at(slot, SHUT)) }
        }

        /// `slot`'s word: its length and its sections' push count.
        #[inline(always)]
        pub(crate) fn word(&self, slot: usize) -> &AtomicUsize {
            // SAFETY: as for `shut`.
            unsafe { AtomicUsize::from_ptr(self.at(slot, WORD)) }
        }

        /// `slot`'s `i`th item.
        #[inline(always)]
        fn item(&self, slot: usize, i: usize) -> &AtomicPtr<()> {
            assert!(i < self.capacity);
            // SAFETY: as for `shut`; `i < capacity`, so the item lies
            // inside the slot.
            unsafe { AtomicPtr::from_ptr(self.at(slot, ITEMS + 8 * i).cast()) }
        }

        /// Reads `slot`'s `i`th item (the caller has the stack to itself).
        #[inline(always)]
        pub(crate) fn read(&self, slot: usize, i: usize) -> *mut () {
            self.item(slot, i).load(Ordering::Relaxed)
        }

        /// Writes `slot`'s `i`th item (the caller has the stack to itself).
        #[inline(always)]
        pub(crate) fn write(&self, slot: usize, i: usize, item: *mut ()) {
            self.item(slot, i).store(item, Ordering::Relaxed);
        }
    }

    impl Drop for Slots {
        fn drop(&mut self) {
            let layout =
                Layout::from_size_align(self.count * self.stride, ALIGN).expect("made in `new`");
            // SAFETY: allocated in `new` with this layout, freed once.
            unsafe { alloc::dealloc(self.base(), layout) };
        }
    }
}

#[cfg(loom)]
mod model {
    use super::{MAX_CAPACITY, MAX_SLOTS};
    use crate::loom::{AtomicUsize, UnsafeCell};

    /// The slots, one loom structure each.
    pub(crate) struct Slots {
        slots: Box<[Slot]>,
        capacity: usize,
    }

    struct Slot {
        shut: AtomicUsize,
        word: AtomicUsize,
        items: Box<[UnsafeCell<*mut ()>]>,
    }

    impl Slots {
        /// As the real `Slots::new`.
        pub(crate) fn new(count: usize, capacity: usize) -> Self {
            let count = count.clamp(1, MAX_SLOTS);
            let capacity = capacity.min(MAX_CAPACITY);
            Self {
                slots: (0..count)
                    .map(|_| Slot {
                        shut: AtomicUsize::new(0),
                        word: AtomicUsize::new(0),
                        items: (0..capacity)
                            .map(|_| UnsafeCell::new(std::ptr::null_mut()))
                            .collect(),
                    })
                    .collect(),
                capacity,
            }
        }

        pub(crate) fn count(&self) -> usize {
            self.slots.len()
        }

        pub(crate) fn capacity(&self) -> usize {
            self.capacity
        }

        pub(crate) fn shut(&self, slot: usize) -> &AtomicUsize {
            &self.slots[slot].shut
        }

        pub(crate) fn word(&self, slot: usize) -> &AtomicUsize {
            &self.slots[slot].word
        }

        pub(crate) fn read(&self, slot: usize, i: usize) -> *mut () {
            // SAFETY: a plain read of a pointer; loom reports any access
            // that is not ordered with it.
            self.slots[slot].items[i].with(|p| unsafe { *p })
        }

        pub(crate) fn write(&self, slot: usize, i: usize, item: *mut ()) {
            // SAFETY: as for `read`.
            self.slots[slot].items[i].with_mut(|p| unsafe { *p = item });
        }
    }
}
