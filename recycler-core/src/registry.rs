//! Thread tokens, and the exit hook that empties a thread's caches when the
//! thread ends.
//!
//! Every thread that uses a recycler gets a [`Token`]: a number no other
//! thread of the process ever gets, so that comparing a cache's owner with the
//! calling thread's token is a plain load and compare. Tokens are never
//! reused, unlike the ids of the `thread_local` crate, which hands a dead
//! thread's slot to the next thread that takes its id.
//!
//! The `thread_local` crate does not drop a thread's value when the thread
//! exits, so a thread's cached objects would stay where they are until some
//! later thread happened to get the same id. To avoid stranding them, the
//! first time a thread claims a cache it registers an [`ExitFlush`] hook in a
//! thread-local of its own; the hook runs when the thread's thread-locals are
//! destroyed and hands the cache's contents to the shared depot.
//!
//! # The hot index
//!
//! `get` must find the calling thread's cache in a few instructions. Looking
//! it up through the `thread_local` crate costs a thread-id read, a bucket
//! load and a presence check, and then an owner check. So each thread keeps a
//! tiny direct-mapped index of its own: [`HOT_SLOTS`] entries of (recycler
//! id, cache pointer), filled on the slow path. An entry exists only while the
//! thread owns the cache, so a hit needs no owner check. Recycler ids are never reused, so an entry of a
//! dropped recycler can never match. The exit hook clears the index before
//! the thread gives its caches up.
//!
//! # Ordering with the `thread_local` crate
//!
//! The hook must run while the thread still owns its slot, i.e. before the
//! `thread_local` crate's own thread-local guard frees the thread's id. The
//! crate registers that guard the first time the thread touches any
//! `ThreadLocal`; [`assign`] makes sure that has happened before it registers
//! our hooks, and thread-local destructors run in reverse order of
//! registration on the platforms `std` supports, so ours run first. The hook
//! also re-checks ownership before touching a cache.
//!
//! Note that `std::thread::scope` returns once its threads' closures have
//! returned, which can be before their thread-local destructors (and so these
//! hooks) have run; `JoinHandle::join` waits for them.

use std::cell::{Cell, RefCell};

use crate::loom::process::AtomicU64;
use crate::loom::{Weak, const_thread_local};

/// The identity of a thread, as seen by the caches it owns.
pub(crate) type Token = u64;

/// The owner of a cache that no live thread owns.
pub(crate) const NOBODY: Token = 0;

/// The calling thread has not used any recycler yet.
const UNASSIGNED: Token = u64::MAX;

/// The calling thread is exiting: its thread-locals are being destroyed.
pub(crate) const EXITED: Token = u64::MAX - 1;

/// The next token to hand out; live tokens are `1..EXITED`.
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// The next recycler id; 0 marks an empty [`HOT`] entry.
static NEXT_RECYCLER_ID: AtomicU64 = AtomicU64::new(1);

/// Entries in the hot index (a power of two).
pub(crate) const HOT_SLOTS: usize = 4;

/// An id for a new recycler, never handed out again.
pub(crate) fn new_recycler_id() -> u64 {
    NEXT_RECYCLER_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What a recycler does with the calling thread's cache when the thread exits.
pub(crate) trait ExitFlush: Send + Sync {
    /// Empties the cache at `local` into shared storage.
    ///
    /// # Safety
    ///
    /// `local` must be the pointer registered with this hook: a cache owned by
    /// this recycler, which keeps it alive for as long as the recycler lives.
    unsafe fn flush_on_exit(&self, local: *const (), token: Token);
}

struct Hook {
    target: Weak<dyn ExitFlush>,
    local: *const (),
}

/// The hooks of one thread, run when its thread-locals are destroyed.
struct ExitHooks {
    /// The thread's token, kept here too: other thread-locals (`TOKEN`
    /// itself, under loom) may already be gone when this one is destroyed.
    token: Cell<Token>,
    hooks: RefCell<Vec<Hook>>,
}

impl ExitHooks {
    /// Runs the hooks: the thread gives up every cache it owns.
    fn run(&self) {
        // From here on the thread owns nothing: guards dropped later in this
        // thread's teardown (or by the hooks themselves) take the foreign path,
        // and `get` finds no cache in the hot index.
        let token = self.token.replace(EXITED);
        let _ = TOKEN.try_with(|t| t.set(EXITED));
        let _ = HOT.try_with(|hot| hot.iter().for_each(|e| e.set(EMPTY)));
        let hooks = self.hooks.take();
        for hook in hooks {
            if let Some(target) = hook.target.upgrade() {
                // SAFETY: `hook.local` was registered together with
                // `hook.target` by `register`, whose caller guarantees it is
                // a cache of that recycler; the upgraded `Arc` keeps the
                // recycler, and so the cache, alive during the call.
                unsafe { target.flush_on_exit(hook.local, token) };
            }
        }
    }
}

impl Drop for ExitHooks {
    fn drop(&mut self) {
        self.run();
    }
}

/// Runs the calling thread's exit hooks now, as its exit would.
///
/// For loom models only: loom's `JoinHandle::join` returns before the
/// thread's thread-locals are destroyed (and destroys them in no fixed order),
/// so a model's threads call this as their last step to exit
/// deterministically. The code run is the same as at a real exit.
#[cfg(loom)]
pub fn run_exit_hooks_now() {
    let _ = HOOKS.try_with(ExitHooks::run);
}

type HotEntry = (u64, *const ());

const EMPTY: HotEntry = (0, std::ptr::null());

/// An empty hot-index entry, to initialize the array with.
#[allow(
    clippy::declare_interior_mutable_const,
    reason = "only copied into the array"
)]
const EMPTY_CELL: Cell<HotEntry> = Cell::new(EMPTY);

const_thread_local! {
    static HOT: [Cell<HotEntry>; HOT_SLOTS] = [EMPTY_CELL; HOT_SLOTS];
    static TOKEN: Cell<Token> = Cell::new(UNASSIGNED);
    static HOOKS: ExitHooks =
        ExitHooks { token: Cell::new(UNASSIGNED), hooks: RefCell::new(Vec::new()) };
}

/// The calling thread's token, or a value no cache is owned by (unassigned,
/// exiting) that sends the caller down the slow path.
#[inline(always)]
pub(crate) fn current() -> Token {
    TOKEN.try_with(Cell::get).unwrap_or(EXITED)
}

/// The calling thread's cache of the recycler `id`, if the hot index has it;
/// null otherwise. A non-null result is a cache the calling thread owns.
#[inline(always)]
pub(crate) fn hot(id: u64) -> *const () {
    HOT.try_with(|hot| {
        let (key, local) = hot[id as usize & (HOT_SLOTS - 1)].get();
        if key == id { local } else { std::ptr::null() }
    })
    .unwrap_or(std::ptr::null())
}

/// Records `local` as the calling thread's cache of the recycler `id`.
///
/// # Safety
///
/// The calling thread owns `local`, a cache of the recycler `id` that lives as
/// long as that recycler, until the thread exits (the exit hook clears every
/// entry before the thread gives its caches up).
pub(crate) unsafe fn set_hot(id: u64, local: *const ()) {
    let _ = HOT.try_with(|hot| hot[id as usize & (HOT_SLOTS - 1)].set((id, local)));
}

/// Whether `token` names a live thread.
#[inline]
pub(crate) fn is_live(token: Token) -> bool {
    token != UNASSIGNED && token != EXITED
}

/// Gives the calling thread a token if it has none yet.
///
/// Returns [`EXITED`] when the thread's thread-locals are being destroyed,
/// for then no hook could run at its exit and it must own nothing.
#[cold]
pub(crate) fn assign() -> Token {
    let token = current();
    if token != UNASSIGNED {
        return token;
    }
    // The `thread_local` crate's exit guard first, then our hooks: the hooks'
    // destructor, registered later, runs earlier (see the module docs). Both
    // before the thread can own anything.
    crate::loom::register_thread_id();
    if HOOKS.try_with(|_| ()).is_err() {
        return EXITED;
    }
    let token = NEXT_TOKEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // 2^64 - 2 tokens would take centuries to hand out; refuse rather than
    // wrap into the reserved values.
    if token >= EXITED {
        return EXITED;
    }
    if TOKEN.try_with(|t| t.set(token)).is_err() || HOOKS.try_with(|h| h.token.set(token)).is_err()
    {
        return EXITED;
    }
    token
}

/// Registers `target.flush_on_exit(local, ..)` to run when the calling thread
/// exits. Returns `false` if the thread is already exiting.
///
/// # Safety
///
/// `local` must point to a cache owned by `target` that lives as long as
/// `target` does, and must be owned by the calling thread.
pub(crate) unsafe fn register(target: Weak<dyn ExitFlush>, local: *const ()) -> bool {
    HOOKS
        .try_with(|hooks| {
            let mut hooks = hooks.hooks.borrow_mut();
            // Forget recyclers that have been dropped, amortized over pushes.
            if hooks.len() >= 8 && hooks.len().is_power_of_two() {
                hooks.retain(|h| h.target.strong_count() > 0);
            }
            hooks.push(Hook { target, local });
        })
        .is_ok()
}
