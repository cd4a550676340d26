//! The global allocator of a benchmark process, chosen per process from the
//! environment: the system allocator, jemalloc or mimalloc.
//!
//! Every benchmark binary of this package (the `compare` command, every
//! criterion suite, the examples) declares
//!
//! ```ignore
//! #[global_allocator]
//! static GLOBAL: recycler_benches::Dispatch = recycler_benches::Dispatch::new();
//! ```
//!
//! and runs with the allocator that the environment variable
//! [`RECYCLER_BENCHES_ALLOC`](ENV) names: `system`, `jemalloc` or
//! `mimalloc`; unset or empty means jemalloc. Each allocator is then the
//! global one, so the recycler's own allocations (its batch vectors, the
//! channel blocks of its inboxes, the depot) and the peers' go to it too, as
//! they would in a program that chose that allocator.
//!
//! # How the choice is made
//!
//! [`Dispatch`] reads the variable once, in the first allocation the process
//! makes, with `libc::getenv` (which does not allocate), and keeps the
//! choice in an atomic byte. Every later call loads that byte (a relaxed
//! load, a plain load on x86-64) and calls the chosen allocator.
//! The choice is set with a compare-exchange from "undecided" and never
//! changes afterwards, so every block is freed by the allocator that made it.
//!
//! A value the allocator cannot read (an unknown name) falls back to
//! jemalloc: an allocator must not panic. [`check_env`] reports it, and the
//! binaries call it first (`compare` refuses to run, the criterion suites
//! panic before measuring).
//!
//! Two other designs would do: a cargo feature per allocator (three builds,
//! and `compare` could not run all three from one command), or one binary
//! per allocator (three copies of every suite). One build that re-executes
//! itself keeps `cargo run --release -p recycler-benches --bin compare` a
//! single command: `compare` runs the workloads whose results depend on the
//! allocator (W1's rows that allocate, W2, W9) once in its own process and
//! once in a child process per other allocator, started from
//! `std::env::current_exe()` with the variable set.
//!
//! # What the dispatch costs
//!
//! Counted with `valgrind --tool=callgrind` on `examples/alloc_dispatch.rs`
//! (`Box::new` of a 64-byte object and its drop; the difference between
//! 2·10⁶ and 10⁶ iterations), against the same loop in a binary whose
//! global allocator is a plain `static` of that allocator. Instructions per
//! `Box::new` + drop:
//!
//! | allocator | through `Dispatch` | plain `static` | added |
//! | --- | ---: | ---: | ---: |
//! | system (glibc) | 157 | 150 | 7 |
//! | jemalloc | 85.7 | 74.7 | 11 |
//! | mimalloc | 98.4 | 87.4 | 11 |
//!
//! The allocator's own code is inlined into the caller as with a plain
//! `static` (its checks on the layout fold away when the layout is a
//! constant); what is added is a load of the choice and a four-way jump
//! table on `alloc`, a compare chain on `dealloc`. In wall time (five runs
//! of 5·10⁷ pairs each) the two could not be told apart on this shared
//! machine. The alternatives measured (instructions added for system,
//! jemalloc and mimalloc): a compare chain on `alloc` too cost about the
//! same, 5, 12 and 14, once its cold "undecided" arm was a tail call
//! (before, the function saved registers on every call: 6, 12 and 17); a
//! table of function pointers cost 15, 21 and 9, as the allocators' checks
//! on the layout no longer fold away.
//!
//! The choice lives in this library, so the binary reaches it through the
//! GOT; in loops the compiler hoists that address out.

use std::alloc::{GlobalAlloc, Layout, System};
use std::ffi::CStr;
use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};

use mimalloc::MiMalloc;
use tikv_jemallocator::Jemalloc;

/// The name of the environment variable that chooses the global allocator:
/// `system`, `jemalloc` or `mimalloc`; unset or empty means jemalloc.
pub const ENV: &str = "RECYCLER_BENCHES_ALLOC";

/// [`ENV`] as a C string, for `getenv`.
const ENV_C: &CStr = c"RECYCLER_BENCHES_ALLOC";

/// One of the three global allocators a benchmark process can run under.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum GlobalAllocator {
    /// The system allocator (glibc's `malloc` on Linux).
    System,
    /// jemalloc, through `tikv-jemallocator` (the default).
    Jemalloc,
    /// mimalloc.
    Mimalloc,
}

impl GlobalAllocator {
    /// All three, in the order `compare` prints them by default: the
    /// default first.
    pub const ALL: [GlobalAllocator; 3] = [
        GlobalAllocator::Jemalloc,
        GlobalAllocator::System,
        GlobalAllocator::Mimalloc,
    ];

    /// The allocator this process runs under (deciding it now if nothing
    /// has been allocated yet).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::GlobalAllocator;
    ///
    /// // Without `#[global_allocator]` set to `Dispatch`, this is what the
    /// // environment asks for; the same in every call.
    /// assert_eq!(GlobalAllocator::current(), GlobalAllocator::current());
    /// ```
    pub fn current() -> GlobalAllocator {
        current()
    }

    /// Its name, as [`ENV`] spells it.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::GlobalAllocator;
    ///
    /// assert_eq!(GlobalAllocator::Mimalloc.name(), "mimalloc");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            GlobalAllocator::System => "system",
            GlobalAllocator::Jemalloc => "jemalloc",
            GlobalAllocator::Mimalloc => "mimalloc",
        }
    }

    /// The allocator named `name` (as [`ENV`] spells it, any case).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::GlobalAllocator;
    ///
    /// assert_eq!(GlobalAllocator::from_name("System"), Some(GlobalAllocator::System));
    /// assert_eq!(GlobalAllocator::from_name("tcmalloc"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<GlobalAllocator> {
        Self::from_bytes(name.as_bytes())
    }

    /// As [`from_name`](Self::from_name), on bytes, without allocating.
    fn from_bytes(name: &[u8]) -> Option<GlobalAllocator> {
        GlobalAllocator::ALL
            .into_iter()
            .find(|a| a.name().as_bytes().eq_ignore_ascii_case(name))
    }
}

impl fmt::Display for GlobalAllocator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Checks [`ENV`]: `Err` with a message naming the variable, the value and
/// the allocators it may name if the value is none of them. (The allocator
/// itself falls back to jemalloc on such a value, as it must not panic.)
///
/// # Examples
///
/// ```
/// // The doc tests run without the variable, or with a valid value.
/// assert!(recycler_benches::check_env().is_ok());
/// ```
pub fn check_env() -> Result<GlobalAllocator, String> {
    match std::env::var_os(ENV) {
        None => Ok(GlobalAllocator::Jemalloc),
        Some(v) if v.is_empty() => Ok(GlobalAllocator::Jemalloc),
        Some(v) => match v.to_str().and_then(GlobalAllocator::from_name) {
            Some(a) => Ok(a),
            None => Err(format!(
                "{ENV}={} names no allocator; known: system, jemalloc, mimalloc",
                v.to_string_lossy()
            )),
        },
    }
}

/// A criterion group name with the process's global allocator in it
/// (`w2_producer_consumer/mimalloc`), so that criterion keeps each
/// allocator's history apart.
///
/// # Panics
///
/// If [`ENV`] names no allocator (see [`check_env`]): a suite must not
/// measure under an allocator other than the one asked for.
///
/// # Examples
///
/// ```
/// let name = recycler_benches::bench_group("w1_get_release");
/// assert!(name.starts_with("w1_get_release/"));
/// ```
pub fn bench_group(base: &str) -> String {
    if let Err(e) = check_env() {
        panic!("{e}");
    }
    format!("{base}/{}", GlobalAllocator::current())
}

/// Nothing allocated yet: the choice is still to be made.
const UNDECIDED: u8 = 0;
const SYSTEM: u8 = 1;
const JEMALLOC: u8 = 2;
const MIMALLOC: u8 = 3;

impl GlobalAllocator {
    /// The value kept in [`CHOICE`].
    const fn code(self) -> u8 {
        match self {
            GlobalAllocator::System => SYSTEM,
            GlobalAllocator::Jemalloc => JEMALLOC,
            GlobalAllocator::Mimalloc => MIMALLOC,
        }
    }

    /// The allocator of a decided [`CHOICE`].
    const fn from_code(code: u8) -> Option<GlobalAllocator> {
        match code {
            SYSTEM => Some(GlobalAllocator::System),
            JEMALLOC => Some(GlobalAllocator::Jemalloc),
            MIMALLOC => Some(GlobalAllocator::Mimalloc),
            _ => None,
        }
    }
}

/// The allocator chosen for this process: [`UNDECIDED`] until the first
/// allocation, then one of the three codes, never changing again.
static CHOICE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The value of [`CHOICE`], at most [`MIMALLOC`].
#[inline(always)]
fn choice() -> u8 {
    // Relaxed: the byte is the only data, and it is stored once (see
    // `decide`).
    let code = CHOICE.load(Ordering::Relaxed);
    // SAFETY: only `UNDECIDED` and the codes of `GlobalAllocator::code`
    // are ever stored. (Knowing it lets the compiler dispatch with a jump
    // table of four entries instead of a chain of compares.)
    unsafe { std::hint::assert_unchecked(code <= MIMALLOC) };
    code
}

/// The chosen allocator; decides it on the first call.
fn current() -> GlobalAllocator {
    GlobalAllocator::from_code(choice()).unwrap_or_else(decide)
}

/// Reads [`ENV`] and stores the choice, unless another thread stored one
/// first (then that one stands). Allocates nothing.
#[cold]
#[inline(never)]
fn decide() -> GlobalAllocator {
    // SAFETY: `ENV_C` is a NUL-terminated string. `getenv` races only with
    // a concurrent `setenv`; this runs in the process's first allocation,
    // before `main` can have started a thread or changed the environment.
    let value = unsafe { libc::getenv(ENV_C.as_ptr()) };
    let wanted = if value.is_null() {
        GlobalAllocator::Jemalloc
    } else {
        // SAFETY: `getenv` returned a non-null pointer to a NUL-terminated
        // string in the environment, which nothing changes meanwhile (see
        // above).
        let bytes = unsafe { CStr::from_ptr(value) }.to_bytes();
        GlobalAllocator::from_bytes(bytes).unwrap_or(GlobalAllocator::Jemalloc)
    };
    match CHOICE.compare_exchange(
        UNDECIDED,
        wanted.code(),
        Ordering::Relaxed,
        Ordering::Relaxed,
    ) {
        Ok(_) => wanted,
        Err(other) => GlobalAllocator::from_code(other).unwrap_or(wanted),
    }
}

/// The global allocator of every benchmark binary here: the system
/// allocator, jemalloc or mimalloc, as [`ENV`] says (see the
/// [module docs](self)).
///
/// # Examples
///
/// ```
/// use recycler_benches::{Dispatch, GlobalAllocator};
///
/// #[global_allocator]
/// static GLOBAL: Dispatch = Dispatch::new();
///
/// let v = vec![1u8; 100];
/// assert_eq!(v.len(), 100);
/// assert_eq!(Dispatch::chosen(), GlobalAllocator::current());
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct Dispatch;

impl Dispatch {
    /// The dispatcher (it chooses in the process's first allocation).
    pub const fn new() -> Self {
        Dispatch
    }

    /// The allocator this process's [`Dispatch`] calls (deciding it now if
    /// nothing has been allocated yet).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::{Dispatch, GlobalAllocator};
    ///
    /// assert_eq!(Dispatch::chosen(), GlobalAllocator::current());
    /// ```
    pub fn chosen() -> GlobalAllocator {
        current()
    }
}

/// [`GlobalAlloc::alloc`] before the choice is made.
///
/// # Safety
///
/// As [`GlobalAlloc::alloc`].
#[cold]
#[inline(never)]
unsafe fn alloc_undecided(layout: Layout) -> *mut u8 {
    decide();
    // SAFETY: the caller's guarantees, passed on; decided now.
    unsafe { Dispatch.alloc(layout) }
}

/// [`GlobalAlloc::alloc_zeroed`] before the choice is made.
///
/// # Safety
///
/// As [`GlobalAlloc::alloc_zeroed`].
#[cold]
#[inline(never)]
unsafe fn alloc_zeroed_undecided(layout: Layout) -> *mut u8 {
    decide();
    // SAFETY: the caller's guarantees, passed on; decided now.
    unsafe { Dispatch.alloc_zeroed(layout) }
}

/// The jemalloc and mimalloc instances `Dispatch` forwards to.
static JE: Jemalloc = Jemalloc;
static MI: MiMalloc = MiMalloc;

// SAFETY: every method forwards, with the caller's arguments unchanged, to
// one allocator that upholds the `GlobalAlloc` contract. The choice is made
// in the first allocation and never changes after it (see `decide`), so a
// block is always freed or resized by the allocator that made it.
unsafe impl GlobalAlloc for Dispatch {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match choice() {
            // SAFETY: forwarded with the caller's guarantees (`layout` has
            // a non-zero size).
            SYSTEM => unsafe { System.alloc(layout) },
            // SAFETY: as above.
            JEMALLOC => unsafe { JE.alloc(layout) },
            // SAFETY: as above.
            MIMALLOC => unsafe { MI.alloc(layout) },
            // SAFETY: as above.
            _ => unsafe { alloc_undecided(layout) },
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match choice() {
            // SAFETY: forwarded with the caller's guarantees.
            SYSTEM => unsafe { System.alloc_zeroed(layout) },
            // SAFETY: as above.
            JEMALLOC => unsafe { JE.alloc_zeroed(layout) },
            // SAFETY: as above.
            MIMALLOC => unsafe { MI.alloc_zeroed(layout) },
            // SAFETY: as above.
            _ => unsafe { alloc_zeroed_undecided(layout) },
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // A block exists, so the choice is made, and `ptr` was allocated by
        // the allocator chosen (it never changes), with `layout`.
        match choice() {
            // SAFETY: as said above, and the caller's guarantees.
            SYSTEM => unsafe { System.dealloc(ptr, layout) },
            // SAFETY: as above.
            MIMALLOC => unsafe { MI.dealloc(ptr, layout) },
            // SAFETY: as above (jemalloc, the only other decided value).
            _ => unsafe { JE.dealloc(ptr, layout) },
        }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // As in `dealloc`: the choice is made.
        match choice() {
            // SAFETY: `ptr` was allocated by this same allocator with
            // `layout`, and `new_size` is valid, as the caller guarantees.
            SYSTEM => unsafe { System.realloc(ptr, layout, new_size) },
            // SAFETY: as above.
            MIMALLOC => unsafe { MI.realloc(ptr, layout, new_size) },
            // SAFETY: as above.
            _ => unsafe { JE.realloc(ptr, layout, new_size) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in GlobalAllocator::ALL {
            assert_eq!(GlobalAllocator::from_name(a.name()), Some(a));
            assert_eq!(GlobalAllocator::from_bytes(a.name().as_bytes()), Some(a));
            assert_eq!(a.to_string(), a.name());
        }
        assert_eq!(
            GlobalAllocator::from_name("JEMALLOC"),
            Some(GlobalAllocator::Jemalloc)
        );
        assert_eq!(GlobalAllocator::from_name(""), None);
        assert_eq!(GlobalAllocator::from_name("jemallocx"), None);
    }

    #[test]
    fn the_choice_is_made_once() {
        let first = current();
        assert_eq!(GlobalAllocator::from_code(choice()), Some(first));
        assert_eq!(decide(), first, "a second decision keeps the first");
        assert_eq!(current(), first);
        assert_eq!(Dispatch::chosen(), first);
    }

    #[test]
    fn codes_round_trip() {
        for a in GlobalAllocator::ALL {
            assert_eq!(GlobalAllocator::from_code(a.code()), Some(a));
        }
        assert_eq!(GlobalAllocator::from_code(UNDECIDED), None);
    }

    #[test]
    fn dispatch_allocates_and_frees() {
        let dispatch = Dispatch;
        let layout = Layout::from_size_align(100, 64).expect("valid layout");
        // SAFETY: `layout` has a non-zero size.
        let p = unsafe { dispatch.alloc_zeroed(layout) };
        assert!(!p.is_null());
        assert_eq!(p as usize % 64, 0);
        // SAFETY: `p` points to 100 zeroed bytes allocated above.
        let bytes = unsafe { std::slice::from_raw_parts(p, 100) };
        assert!(bytes.iter().all(|&b| b == 0));
        // SAFETY: `p` was allocated by `Dispatch` with `layout`; 300 is a
        // valid size.
        let q = unsafe { dispatch.realloc(p, layout, 300) };
        assert!(!q.is_null());
        let bigger = Layout::from_size_align(300, 64).expect("valid layout");
        // SAFETY: `q` was reallocated by `Dispatch` to `bigger`.
        unsafe { dispatch.dealloc(q, bigger) };
    }
}
