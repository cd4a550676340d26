//! Thread tokens, the hot index, and the exit hooks that hand a thread's
//! caches over when the thread ends.
//!
//! Every thread that uses a recycler gets a [`Token`]: a number no other
//! thread of the process ever gets, so that comparing a cache's owner with the
//! calling thread's token is a plain load and compare. Tokens are multiples
//! of [`TOKEN_STEP`]: a guard's home keeps flags in the low bits of a cache
//! address, and the release path compares the cache's owner with the
//! calling thread's token *or'ed with those flags*, so one compare tells
//! "this thread owns the cache and nothing sends the release down the slow
//! path" (as mimalloc folds a page's flags into its owner word).
//!
//! The first time a thread claims a cache (or a buffer pool's index) it
//! registers an [`ExitFlush`] hook in a thread-local of its own; the hook
//! runs when the thread's thread-locals are destroyed and hands the cache's
//! contents to shared storage, then gives the cache up for a later thread
//! ([`crate::claim`]). The hooks also serve as the thread's map from a
//! recycler to its cache, behind the hot index.
//!
//! # The hot index
//!
//! `get` must find the calling thread's cache in a few instructions. So each
//! thread keeps a tiny direct-mapped index: [`HOT_ENTRIES`] entries of
//! (recycler key, cache pointer), filled on the slow path. An entry exists
//! only while the thread owns the cache and the cache has no foreign
//! releases pending, so a hit needs no other check. Recycler keys are never
//! reused, so an entry of a dropped recycler can never match. The exit hook
//! clears the index before the thread gives its caches up.
//!
//! # Teardown
//!
//! A thread whose exit hooks have run (or are running) owns nothing: its
//! token reads [`EXITED`], and every guard it drops afterwards takes the
//! foreign path. A thread whose *first* use of a recycler happens inside a
//! thread-local destructor registers its hooks then; `std` runs destructors
//! registered during teardown too, so that thread's cache is handed over
//! like any other.
//!
//! Note that `std::thread::scope` returns once its threads' closures have
//! returned, which can be before their thread-local destructors (and so these
//! hooks) have run; `JoinHandle::join` waits for them.

use std::cell::{Cell, RefCell};
use std::ptr::{self, NonNull};

use crate::loom::process::AtomicU64 as ProcessCounter;
use crate::loom::{AtomicPtr, AtomicU64, Ordering, Weak, const_thread_local, maybe_const_fn};

/// The identity of a thread, as seen by the caches it owns.
pub(crate) type Token = u64;

/// The owner of a cache that no live thread owns.
pub(crate) const NOBODY: Token = 0;

/// Tokens are multiples of this; the bits below it are free for a cache's
/// flags in its owner word (see the module docs).
pub(crate) const TOKEN_STEP: u64 = 8;

/// The calling thread has not used any recycler yet.
pub(crate) const UNASSIGNED: Token = u64::MAX;

/// The calling thread is exiting: its thread-locals are being destroyed.
pub(crate) const EXITED: Token = u64::MAX - 1;

/// The next token to hand out; live tokens are multiples of [`TOKEN_STEP`]
/// from `TOKEN_STEP` up (never `NOBODY`; `UNASSIGNED` and `EXITED` are not
/// multiples of it).
static NEXT_TOKEN: ProcessCounter = ProcessCounter::new(TOKEN_STEP);

/// The next recycler (or pool) key; 0 marks an empty [`HOT`] entry.
static NEXT_KEY: ProcessCounter = ProcessCounter::new(1);

/// Entries in the hot index (a power of two).
pub(crate) const HOT_ENTRIES: usize = 4;

/// A key for a new recycler or pool, never handed out again.
pub(crate) fn new_key() -> u64 {
    NEXT_KEY.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What a recycler (or pool) does with the calling thread's cache when the
/// thread exits.
///
/// A thread's exit runs in three phases over all of its hooks: first every
/// hook [forgets](ExitFlush::forget_on_exit) the ways the thread finds its
/// caches by pointers of its own (indexes), then every hook
/// [flushes](ExitFlush::flush_on_exit) and gives its cache up, then every
/// target [hears](ExitFlush::after_exit) that the thread has given up all
/// it had. So no cache
/// is given up (and possibly claimed at once by another thread) while any
/// index of the exiting thread still points at it, whatever order the
/// thread first touched its recyclers and pools in: code that runs during
/// the flushes (an object's `Drop`, which may use any pool) finds no stale
/// entry.
pub(crate) trait ExitFlush: Send + Sync {
    /// Phase one: forgets every pointer the calling thread keeps to the
    /// cache at `local` outside the hooks (an index of its own), before any
    /// hook of the thread gives a cache up. Runs no user code. The core
    /// recycler keeps none but the hot index, which the registry clears
    /// itself; the buffer pool's per-thread index is one.
    ///
    /// # Safety
    ///
    /// As for [`flush_on_exit`](Self::flush_on_exit).
    unsafe fn forget_on_exit(&self, local: *const (), token: Token) {
        let _ = (local, token);
    }

    /// Phase two: empties the cache at `local` into shared storage and gives
    /// it up.
    ///
    /// # Safety
    ///
    /// `local` must be the pointer registered with this hook: a cache owned by
    /// this recycler, which keeps it alive for as long as the recycler lives.
    unsafe fn flush_on_exit(&self, local: *const (), token: Token);

    /// Phase three: runs once every hook of the exiting thread has given
    /// its cache up (what the thread kept is in shared storage now). The
    /// core recycler has nothing to do; a buffer pool serves those who wait
    /// for memory, since what the thread gave up may serve them and their
    /// reclaim, while the thread was giving it up, may not have reached it.
    fn after_exit(&self) {}
}

struct Hook {
    /// The key of the recycler or pool that owns `local`.
    key: u64,
    target: Weak<dyn ExitFlush>,
    local: *const (),
}

/// The hooks of one thread, run when its thread-locals are destroyed.
struct ExitHooks {
    /// The thread's token, kept here too: other thread-locals (`THREAD`
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
        let _ = THREAD.try_with(|t| t.token.set(EXITED));
        let _ = HOT.try_with(|hot| hot.iter().for_each(HotEntry::close));
        let hooks = self.hooks.take();
        // Phase one: every index of this thread forgets its caches before
        // any cache is given up (see `ExitFlush`). Each recycler is kept
        // alive from here to its flush, so that it cannot drop (and run
        // user code) in between.
        let targets: Vec<_> = hooks
            .iter()
            .map(|hook| {
                let target = hook.target.upgrade()?;
                // SAFETY: `hook.local` was registered together with
                // `hook.target` by `register`, whose caller guarantees it is
                // a cache of that recycler; the upgraded `Arc` keeps the
                // recycler, and so the cache, alive during the call.
                unsafe { target.forget_on_exit(hook.local, token) };
                Some(target)
            })
            .collect();
        // Phase two: each hook flushes its cache and gives it up.
        for (hook, target) in hooks.iter().zip(&targets) {
            let Some(target) = target else { continue };
            // SAFETY: as above.
            unsafe { target.flush_on_exit(hook.local, token) };
        }
        // Phase three: each target hears that the thread has given up all
        // it had (a buffer pool serves its waiters from what went to the
        // depots); then it is let go. The last handle may have been
        // dropped meanwhile: the recycler then drops here, inside a
        // thread-local destructor. Its drop never unwinds (`Shared::drop`
        // swallows the panics of the objects it drops on an exiting
        // thread); stay safe even so, and the same for what phase three
        // runs (a waker).
        for target in targets.into_iter().flatten() {
            let done = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                target.after_exit();
                drop(target);
            }));
            if let Err(payload) = done {
                crate::unwind::forget_panic(payload);
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

/// One entry of the hot index: a recycler key (0: empty) and the calling
/// thread's cache of that recycler. Atomics, read and written `Relaxed` by
/// the thread itself (plain loads and stores), because a thread taking the
/// cache ([`crate::steal`]) clears the key from another thread.
pub(crate) struct HotEntry {
    key: AtomicU64,
    local: AtomicPtr<()>,
}

impl HotEntry {
    maybe_const_fn! {
        fn new() -> Self {
            Self {
                key: AtomicU64::new(0),
                local: AtomicPtr::new(ptr::null_mut()),
            }
        }
    }

    /// Sets the entry to (`key`, `local`): the pointer first, so that a key
    /// read by this thread always comes with its own pointer (only this
    /// thread stores a non-zero key).
    pub(crate) fn set(&self, key: u64, local: *const ()) {
        self.local.store(local.cast_mut(), Ordering::Relaxed);
        self.key.store(key, Ordering::Relaxed);
    }

    /// Empties the entry, from any thread: the owner's next lookup misses.
    pub(crate) fn close(&self) {
        self.key.store(0, Ordering::Relaxed);
    }
}

/// The mark other threads read to tell whether the calling thread is
/// inside an owner operation (see [`crate::steal`]).
pub(crate) struct Marks {
    /// Non-zero inside an owner access to a cache without its lock (a
    /// `get`'s pop, a release's push, a slow path's access). These never
    /// nest, so one word serves them all.
    pub(crate) busy: AtomicU64,
}

impl Marks {
    maybe_const_fn! {
        fn new() -> Self {
            Self { busy: AtomicU64::new(0) }
        }
    }
}

/// The calling thread's token and marks, in one thread-local so that the
/// owner path reaches both from one address.
struct Thread {
    /// Read by this thread only: a plain `Cell`, so that the owner path's
    /// compare takes it as a memory operand (an atomic load it does not).
    token: Cell<Token>,
    marks: Marks,
}

impl Thread {
    maybe_const_fn! {
        fn new() -> Self {
            Self {
                token: Cell::new(UNASSIGNED),
                marks: Marks::new(),
            }
        }
    }
}

/// Runs `f` with the calling thread's marks; `None` while thread-locals
/// are being destroyed.
#[inline(always)]
pub(crate) fn with_marks<R>(f: impl FnOnce(&Marks) -> R) -> Option<R> {
    THREAD.try_with(|t| f(&t.marks)).ok()
}

static_assertions::const_assert!(HOT_ENTRIES == 4);

const_thread_local! {
    static HOT: [HotEntry; HOT_ENTRIES] =
        [HotEntry::new(), HotEntry::new(), HotEntry::new(), HotEntry::new()];
    static THREAD: Thread = Thread::new();
    static HOOKS: ExitHooks =
        ExitHooks { token: Cell::new(UNASSIGNED), hooks: RefCell::new(Vec::new()) };
}

/// The calling thread's [`Marks`], for a thread that takes a cache it owns
/// to check it is not inside an operation; null while thread-locals are
/// being destroyed. The marks live as long as the thread.
pub(crate) fn marks() -> *const Marks {
    THREAD
        .try_with(|t| ptr::from_ref(&t.marks))
        .unwrap_or(ptr::null())
}

/// The calling thread's hot-index entry for the recycler `key`, for the
/// gate of its cache ([`crate::steal`]); null while thread-locals are
/// being destroyed. It lives as long as the thread.
pub(crate) fn hot_entry(key: u64) -> *const HotEntry {
    HOT.try_with(|hot| ptr::from_ref(&hot[hot_position(key)]))
        .unwrap_or(ptr::null())
}

/// The calling thread's token, or a value no cache is owned by (unassigned,
/// exiting) that sends the caller down the slow path.
#[inline(always)]
pub(crate) fn current() -> Token {
    THREAD.try_with(|t| t.token.get()).unwrap_or(EXITED)
}

/// Where the hot-index entry of the recycler `key` goes; recyclers keep it
/// with their key, so that the owner path need not compute it.
pub(crate) const fn hot_position(key: u64) -> usize {
    key as usize & (HOT_ENTRIES - 1)
}

/// The calling thread's cache of the recycler `key`, whose entry goes at
/// `at` ([`hot_position`]), if the hot index has it: a cache the calling
/// thread owns, with no foreign releases pending.
#[inline(always)]
pub(crate) fn hot(key: u64, at: usize) -> Option<NonNull<()>> {
    debug_assert_eq!(at, hot_position(key));
    HOT.try_with(|hot| {
        // SAFETY: `at` is `hot_position(key)`, below `HOT_ENTRIES`.
        let entry = unsafe { hot.get_unchecked(at) };
        let k = entry.key.load(Ordering::Relaxed);
        // SAFETY: an entry whose key is a recycler's (never 0) holds the
        // non-null pointer `HotEntry::set` stored with it (before the key; only
        // this thread stores keys other than 0).
        (k == key).then(|| unsafe { NonNull::new_unchecked(entry.local.load(Ordering::Relaxed)) })
    })
    .ok()
    .flatten()
}

/// Marks a hot-index key whose cache has foreign releases pending: `get`,
/// which looks up the plain key, misses it and takes the slow path, which
/// sends them; the other paths find the cache under the marked key. Recycler
/// keys never reach this bit (nor the one above, which marks an idle cap).
pub(crate) const PENDING_KEY: u64 = 1 << 62;

/// Marks the calling thread's hot-index entry for the recycler `key` as
/// having releases pending ([`PENDING_KEY`]), if it has one.
pub(crate) fn mark_pending(key: u64) {
    let _ = HOT.try_with(|hot| {
        let entry = &hot[hot_position(key)];
        if entry.key.load(Ordering::Relaxed) == key {
            entry.key.store(key | PENDING_KEY, Ordering::Relaxed);
        }
    });
}

/// Whether `token` names a live thread.
#[inline]
pub(crate) fn is_live(token: Token) -> bool {
    token != UNASSIGNED && token != EXITED
}

/// Gives the calling thread a token if it has none yet.
///
/// Returns [`EXITED`] when the thread's exit hooks have run or are running,
/// for then no hook could run at its exit and it must own nothing.
#[cold]
pub(crate) fn assign() -> Token {
    let token = current();
    if token != UNASSIGNED {
        return token;
    }
    // The hooks first: a thread that cannot have them must own nothing.
    if HOOKS.try_with(|_| ()).is_err() {
        return EXITED;
    }
    let token = NEXT_TOKEN.fetch_add(TOKEN_STEP, std::sync::atomic::Ordering::Relaxed);
    // 2^62 tokens would take centuries to hand out; refuse rather than wrap
    // into the reserved values.
    if token >= EXITED - TOKEN_STEP {
        return EXITED;
    }
    if THREAD.try_with(|t| t.token.set(token)).is_err()
        || HOOKS.try_with(|h| h.token.set(token)).is_err()
    {
        return EXITED;
    }
    token
}

/// Gives the calling thread a token, and so exit hooks, if it has none yet:
/// for striped mode, which claims no cache, so that a guard released in the
/// thread's teardown after the hooks have run sees the thread as exiting
/// (and a panicking `reset` there is swallowed, not aborting the process).
/// A thread-local read and a compare once the thread has its token.
#[inline]
pub(crate) fn enroll() {
    if current() == UNASSIGNED {
        assign();
    }
}

/// The cache the calling thread registered for the recycler `key`, if any
/// (null otherwise): the map behind the hot index.
pub(crate) fn registered(key: u64) -> *const () {
    HOOKS
        .try_with(|hooks| {
            hooks
                .hooks
                .borrow()
                .iter()
                .rev()
                .find(|h| h.key == key)
                .map_or(std::ptr::null(), |h| h.local)
        })
        .unwrap_or(std::ptr::null())
}

/// Registers `target.flush_on_exit(local, ..)` to run when the calling thread
/// exits, and `local` as the thread's cache of `key`. Returns `false` if the
/// thread is already exiting.
///
/// # Safety
///
/// `local` must point to a cache owned by `target` that lives as long as
/// `target` does, and must be owned by the calling thread; `key` is
/// `target`'s.
pub(crate) unsafe fn register(key: u64, target: Weak<dyn ExitFlush>, local: *const ()) -> bool {
    HOOKS
        .try_with(|hooks| {
            let mut hooks = hooks.hooks.borrow_mut();
            // Forget recyclers that have been dropped, amortized over pushes.
            if hooks.len() >= 8 && hooks.len().is_power_of_two() {
                hooks.retain(|h| h.target.strong_count() > 0);
            }
            hooks.push(Hook { key, target, local });
        })
        .is_ok()
}
