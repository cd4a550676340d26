//! The teardown matrix: every public entry point as a thread's *first* call
//! on a pool, crossed with every way the thread can end, for both pools in
//! both modes. Each case runs in a child process of its own (a crash or an
//! abort fails that case, not the suite), then checks the books from the
//! last thread standing: every object or buffer made is in use, idle or
//! gone, and everything idle is reachable from there.
//!
//! How a thread ends ([`Exit`]):
//! - holding guards (in a `thread_local!` of its own, dropped in teardown);
//! - after its pool was dropped by another thread (it still owns caches of
//!   a pool that is gone);
//! - while a `thread_local!` destructor of its own uses the same pool,
//!   registered before its first call (destroyed after the pool's exit
//!   hooks) or after it (destroyed before them);
//! - with a panic in the chain: a `Drop` of an object the exit hook drops,
//!   a `reset` of a guard dropped in teardown, or (buffers) the waker of a
//!   waiter that a teardown release wakes;
//! - with a forgotten guard and (buffers) a forgotten waiting future.
//!
//! The regressions this matrix was built around have their own tests at the
//! end of the file, each of which failed before its fix.

mod common;

use std::cell::RefCell;
use std::future::Future;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex, mpsc};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::Duration;

use common::{Counted, Counts, assert_buffers_counted, assert_conserved, builder, drain_reachable};
use recycler_core::buffer::{BufferPool, OwnedPooledBuf};
use recycler_core::{OwnedPooled, Recycler};

/// The environment variable naming the case a child process runs.
const CASE: &str = "RECYCLER_TEARDOWN_CASE";

/// The first call a thread makes on a pool.
#[derive(Debug, Clone, Copy)]
enum First {
    Get,
    TryGet,
    GetOwned,
    Trim,
    Prefill,
    Stats,
    Acquire,
    TryAcquire,
    AcquireTimeout,
    AcquireOwned,
    TryAcquireOwned,
    AcquireOwnedTimeout,
    TryAcquirePooled,
    TryAcquireOwnedPooled,
    AcquireAsync,
    AcquireOwnedAsync,
    Scope,
    IntoBytes,
}

const RECYCLER_FIRST: [First; 6] = [
    First::Get,
    First::TryGet,
    First::GetOwned,
    First::Trim,
    First::Prefill,
    First::Stats,
];

const BUFFER_FIRST: [First; 15] = [
    First::Acquire,
    First::TryAcquire,
    First::AcquireTimeout,
    First::AcquireOwned,
    First::TryAcquireOwned,
    First::AcquireOwnedTimeout,
    First::TryAcquirePooled,
    First::TryAcquireOwnedPooled,
    First::AcquireAsync,
    First::AcquireOwnedAsync,
    First::Trim,
    First::Prefill,
    First::Stats,
    First::Scope,
    First::IntoBytes,
];

/// How the thread ends.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Exit {
    HoldingGuards,
    PoolDroppedElsewhere,
    TlsBefore,
    TlsAfter,
    Panicking,
    Forgotten,
}

const EXITS: [Exit; 6] = [
    Exit::HoldingGuards,
    Exit::PoolDroppedElsewhere,
    Exit::TlsBefore,
    Exit::TlsAfter,
    Exit::Panicking,
    Exit::Forgotten,
];

/// Runs every case of one pool and mode, each in a child process; fails
/// with the list of the cases that failed.
fn run_matrix(pool: &str, striped: bool, firsts: &[First], exits: &[Exit]) {
    let mode = if striped { "striped" } else { "per-thread" };
    let exe = std::env::current_exe().unwrap();
    let mut failed = Vec::new();
    for first in firsts {
        for exit in exits {
            let case = format!("{pool}/{mode}/{first:?}/{exit:?}");
            let out = std::process::Command::new(&exe)
                .args(["child", "--exact", "--test-threads=1", "--nocapture"])
                .env(CASE, &case)
                .output()
                .unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            if !out.status.success() || !stdout.contains("1 passed") {
                let stderr = String::from_utf8_lossy(&out.stderr);
                let tail: Vec<_> = stderr.lines().rev().take(12).collect();
                failed.push(format!(
                    "{case}: {}\n    {}",
                    out.status,
                    tail.into_iter().rev().collect::<Vec<_>>().join("\n    ")
                ));
            }
        }
    }
    assert!(
        failed.is_empty(),
        "{} cases failed:\n{}",
        failed.len(),
        failed.join("\n")
    );
}

/// The child: runs the case its environment names (nothing when run as an
/// ordinary test).
#[test]
fn child() {
    let Ok(case) = std::env::var(CASE) else {
        return;
    };
    let parts: Vec<&str> = case.split('/').collect();
    let striped = parts[1] == "striped";
    let first = *RECYCLER_FIRST
        .iter()
        .chain(&BUFFER_FIRST)
        .find(|f| format!("{f:?}") == parts[2])
        .unwrap();
    let exit = *EXITS.iter().find(|e| format!("{e:?}") == parts[3]).unwrap();
    quiet_expected_panics();
    match parts[0] {
        "recycler" => recycler_case(striped, first, exit),
        _ => buffer_case(striped, first, exit),
    }
}

/// The panics the cases arm are expected (their messages end in
/// "(test)"): report only the others.
fn quiet_expected_panics() {
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if !info.to_string().contains("(test)") || std::env::var_os("TEARDOWN_VERBOSE").is_some() {
            report(info);
        }
    }));
}

#[test]
fn recycler_per_thread() {
    run_matrix("recycler", false, &RECYCLER_FIRST, &EXITS);
}

#[test]
fn recycler_striped() {
    run_matrix("recycler", true, &RECYCLER_FIRST, &EXITS);
}

#[test]
fn buffers_per_thread() {
    run_matrix("buffers", false, &BUFFER_FIRST, &EXITS);
}

#[test]
fn buffers_striped() {
    run_matrix("buffers", true, &BUFFER_FIRST, &EXITS);
}

// ---- the recycler ------------------------------------------------------------

thread_local! {
    /// Guards a thread holds when it exits.
    static HELD: RefCell<Vec<OwnedPooled<Counted>>> = const { RefCell::new(Vec::new()) };
    /// Buffers (and `Bytes`) a thread holds when it exits.
    static HELD_BUFS: RefCell<Vec<Box<dyn Send>>> = const { RefCell::new(Vec::new()) };
}

/// A `thread_local!` whose destructor uses a recycler.
struct UsesRecycler(RefCell<Option<Arc<Recycler<Counted>>>>);

impl Drop for UsesRecycler {
    fn drop(&mut self) {
        if let Some(pool) = self.0.borrow_mut().take() {
            let held: Vec<_> = (0..3).map(|_| pool.get()).collect();
            drop(held);
            drop(pool.try_get());
            pool.trim();
        }
    }
}

thread_local! {
    static USES_RECYCLER: UsesRecycler = const { UsesRecycler(RefCell::new(None)) };
}

fn recycler_first(pool: &Arc<Recycler<Counted>>, first: First) {
    match first {
        First::Get => drop(pool.get()),
        First::TryGet => drop(pool.try_get()),
        First::GetOwned => drop(pool.get_owned()),
        First::Trim => pool.trim(),
        First::Prefill => drop(pool.prefill(4)),
        First::Stats => drop(pool.stats()),
        _ => unreachable!(),
    }
}

fn recycler_case(striped: bool, first: First, exit: Exit) {
    let counts = Counts::new();
    let mut b = builder(&counts)
        .max_capacity_per_thread(8)
        .batch_size(2)
        .depot_capacity(4);
    if striped {
        b = b.striped(2);
    }
    let pool = Arc::new(b.build().unwrap());
    // Objects idle elsewhere before the thread starts.
    let elsewhere: Vec<_> = (0..3).map(|_| pool.get()).collect();
    drop(elsewhere);
    let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let theirs = Arc::clone(&pool);
    let c = Arc::clone(&counts);
    let thread = thread::spawn(move || {
        let pool = theirs;
        if exit == Exit::TlsBefore {
            USES_RECYCLER.with(|u| *u.0.borrow_mut() = Some(Arc::clone(&pool)));
        }
        if exit == Exit::Panicking {
            // Registered before the exit hooks: destroyed after they ran.
            HELD.with(|_| ());
        }
        recycler_first(&pool, first);
        // Some activity: objects in this thread's cache, some sent home.
        let mine: Vec<_> = (0..6).map(|_| pool.get_owned()).collect();
        drop(mine);
        match exit {
            Exit::HoldingGuards => {
                let guards: Vec<_> = (0..3).map(|_| pool.get_owned()).collect();
                HELD.with(|h| h.borrow_mut().extend(guards));
            }
            Exit::PoolDroppedElsewhere => {
                drop(pool);
                dropped_tx.send(()).unwrap();
                go_rx.recv().unwrap();
            }
            Exit::TlsAfter => {
                USES_RECYCLER.with(|u| *u.0.borrow_mut() = Some(Arc::clone(&pool)));
            }
            Exit::TlsBefore => {}
            Exit::Panicking => {
                // A guard whose `reset` panics when teardown drops it, and
                // `Drop`s that panic when the exit hook drops what the
                // depot cannot hold.
                HELD.with(|h| h.borrow_mut().push(pool.get_owned()));
                let full: Vec<_> = (0..8).map(|_| pool.get()).collect();
                drop(full);
                c.reset_panics.store(true, SeqCst);
                c.drop_panics.store(u64::MAX, SeqCst);
            }
            Exit::Forgotten => std::mem::forget(pool.get()),
        }
    });
    if exit == Exit::PoolDroppedElsewhere {
        dropped_rx.recv().unwrap();
        drop(pool);
        go_tx.send(()).unwrap();
        thread.join().unwrap();
        assert_eq!(counts.alive(), 0, "the pool dropped everything it held");
        return;
    }
    thread.join().unwrap();
    counts.reset_panics.store(false, SeqCst);
    counts.drop_panics.store(0, SeqCst);
    let forgotten = u64::from(exit == Exit::Forgotten);
    let s = pool.stats();
    assert_eq!(s.in_use, forgotten, "{s}");
    assert_conserved(&pool, &counts, 0);
    // Nothing stranded: all that is idle is reachable from here.
    assert_eq!(drain_reachable(&pool), s.idle, "{s}");
    pool.trim();
    assert_eq!(pool.stats().idle, 0);
    assert_conserved(&pool, &counts, 0);
}

// ---- the buffer pool -----------------------------------------------------------

/// The pool's memory limit in the buffer cases.
const LIMIT: usize = 64 * 1024;

/// A `thread_local!` whose destructor uses a buffer pool.
struct UsesPool(RefCell<Option<Arc<BufferPool>>>);

impl Drop for UsesPool {
    fn drop(&mut self) {
        if let Some(pool) = self.0.borrow_mut().take() {
            let held: Vec<_> = [100, 5000, 20_000].map(|n| pool.acquire(n)).into();
            drop(held);
            drop(pool.try_acquire(4096));
            pool.trim();
            drop(pool.acquire(8192));
        }
    }
}

thread_local! {
    static USES_POOL: UsesPool = const { UsesPool(RefCell::new(None)) };
}

/// Wakes a thread; panics instead once `PANIC_WAKE` is set.
struct Unpark(thread::Thread);

static PANIC_WAKE: AtomicBool = AtomicBool::new(false);
static WAKES: AtomicU64 = AtomicU64::new(0);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        WAKES.fetch_add(1, SeqCst);
        assert!(!PANIC_WAKE.load(SeqCst), "waker failure (test)");
        self.0.unpark();
    }
}

fn waker() -> Waker {
    Waker::from(Arc::new(Unpark(thread::current())))
}

fn block_on<F: Future>(f: F) -> F::Output {
    let waker = waker();
    let mut f = std::pin::pin!(f);
    loop {
        match f.as_mut().poll(&mut Context::from_waker(&waker)) {
            Poll::Ready(out) => return out,
            Poll::Pending => thread::park(),
        }
    }
}

fn buffer_first(pool: &Arc<BufferPool>, first: First) {
    match first {
        First::Acquire => drop(pool.acquire(1000)),
        First::TryAcquire => drop(pool.try_acquire(1000).unwrap()),
        First::AcquireTimeout => drop(pool.acquire_timeout(1000, Duration::ZERO).unwrap()),
        First::AcquireOwned => drop(pool.acquire_owned(1000)),
        First::TryAcquireOwned => drop(pool.try_acquire_owned(1000).unwrap()),
        First::AcquireOwnedTimeout => {
            drop(pool.acquire_owned_timeout(1000, Duration::ZERO).unwrap());
        }
        First::TryAcquirePooled => drop(pool.try_acquire_pooled(1000)),
        First::TryAcquireOwnedPooled => drop(pool.try_acquire_owned_pooled(1000)),
        First::AcquireAsync => drop(block_on(pool.acquire_async(1000)).unwrap()),
        First::AcquireOwnedAsync => drop(block_on(pool.acquire_owned_async(1000)).unwrap()),
        First::Trim => pool.trim(),
        First::Prefill => drop(pool.prefill(4096, 2).unwrap()),
        First::Stats => drop(pool.stats()),
        First::Scope => {
            let scope = pool.scope();
            scope.alloc(100).fill(1);
            scope.alloc(3000).fill(2);
        }
        First::IntoBytes => {
            let mut buf = pool.acquire_owned(1000);
            buf.extend_from_slice(b"teardown");
            let bytes = buf.into_bytes();
            let part = bytes.slice(2..);
            drop(bytes);
            drop(part);
        }
        _ => unreachable!(),
    }
}

fn buffer_case(striped: bool, first: First, exit: Exit) {
    let mut b = BufferPool::builder().memory_limit(LIMIT);
    if striped {
        b = b.striped(2);
    }
    let pool = Arc::new(b.build().unwrap());
    let elsewhere: Vec<_> = [4096, 8192].map(|n| pool.acquire(n)).into();
    drop(elsewhere);
    if matches!(exit, Exit::Panicking | Exit::Forgotten) {
        // The thread is to hold the whole limit.
        pool.trim();
    }
    let (ready_tx, ready_rx) = mpsc::channel::<()>();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    let theirs = Arc::clone(&pool);
    let thread = thread::spawn(move || {
        let pool = theirs;
        if exit == Exit::TlsBefore {
            USES_POOL.with(|u| *u.0.borrow_mut() = Some(Arc::clone(&pool)));
        }
        buffer_first(&pool, first);
        let mine: Vec<_> = [100, 1000, 4096, 16_384]
            .map(|n| pool.acquire_owned(n))
            .into();
        drop(mine);
        match exit {
            Exit::HoldingGuards => {
                let held: Vec<OwnedPooledBuf> = [200, 9000].map(|n| pool.acquire_owned(n)).into();
                let bytes = pool.acquire_owned(300).into_bytes();
                HELD_BUFS.with(|h| {
                    let mut h = h.borrow_mut();
                    h.extend(held.into_iter().map(|b| Box::new(b) as Box<dyn Send>));
                    h.push(Box::new(bytes));
                });
            }
            Exit::PoolDroppedElsewhere => {
                drop(pool);
                ready_tx.send(()).unwrap();
                go_rx.recv().unwrap();
            }
            Exit::TlsAfter => {
                USES_POOL.with(|u| *u.0.borrow_mut() = Some(Arc::clone(&pool)));
            }
            Exit::TlsBefore => {}
            Exit::Panicking | Exit::Forgotten => {
                // The whole limit held here, and released in teardown, while
                // another thread waits for it (with a waker that panics, or
                // with a future it forgot).
                let mut all = Vec::new();
                while let Ok(buf) = pool.try_acquire_owned(16_384) {
                    all.push(buf);
                }
                assert_eq!(all.len(), LIMIT / 16_384);
                HELD_BUFS.with(|h| {
                    h.borrow_mut()
                        .extend(all.into_iter().map(|b| Box::new(b) as Box<dyn Send>));
                });
                ready_tx.send(()).unwrap();
                go_rx.recv().unwrap();
            }
        }
    });
    match exit {
        Exit::PoolDroppedElsewhere => {
            ready_rx.recv().unwrap();
            drop(pool);
            go_tx.send(()).unwrap();
            thread.join().unwrap();
            return;
        }
        Exit::Panicking | Exit::Forgotten => {
            ready_rx.recv().unwrap();
            // A waiter queued at the limit.
            let mut waiting = Box::pin(pool.acquire_async(16_384));
            let waker = waker();
            let polled = waiting.as_mut().poll(&mut Context::from_waker(&waker));
            assert!(polled.is_pending(), "the limit is held by the thread");
            if exit == Exit::Panicking {
                PANIC_WAKE.store(true, SeqCst);
            } else {
                std::mem::forget(waiting);
                waiting = Box::pin(pool.acquire_async(16_384));
                assert!(
                    waiting
                        .as_mut()
                        .poll(&mut Context::from_waker(&waker))
                        .is_pending()
                );
            }
            go_tx.send(()).unwrap();
            thread.join().unwrap();
            PANIC_WAKE.store(false, SeqCst);
            // Memory freed in the thread's teardown reaches the waiter.
            let got = block_on(waiting).unwrap();
            assert!(got.capacity() >= 16_384);
        }
        _ => thread.join().unwrap(),
    }
    let s = pool.stats();
    assert_buffers_counted(&s);
    let in_use: u64 = s
        .buckets
        .iter()
        .chain([&s.oversize])
        .map(|b| b.in_use)
        .sum();
    assert_eq!(in_use, 0, "{s}");
    // A forgotten future is handed a buffer, which it keeps for good
    // (counted idle, out of trim's reach): the cost of leaking it is what it
    // holds, and nothing more.
    let kept = if exit == Exit::Forgotten { 16_384 } else { 0 };
    pool.trim();
    let s = pool.stats();
    assert_eq!(s.idle_memory, kept, "trim frees everything idle: {s}");
    assert_eq!(s.allocated_memory, kept, "{s}");
    // And pooling goes on: a release is kept, and the next acquire reuses it.
    drop(pool.acquire(4096));
    let before = pool.stats().buckets[0].pooled;
    drop(pool.acquire(4096));
    assert_eq!(pool.stats().buckets[0].pooled, before + 1);
}

// ---- regressions -----------------------------------------------------------------

/// A payload whose `Drop` runs a hook, once.
struct OnDrop(Mutex<Option<Box<dyn FnOnce() + Send>>>);

impl recycler_core::Recyclable for OnDrop {
    fn reset(&mut self) {}
}

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(hook) = self.0.get_mut().unwrap().take() {
            hook();
        }
    }
}

/// A thread whose first call on a buffer pool is `trim` registered its
/// bucket caches' exit hooks before the pool's index. At exit, the hooks
/// gave the caches up while the index still pointed at them; a `Drop` run
/// by a later hook that acquired from the pool went through the stale
/// index into a cache another thread had claimed meanwhile, and took the
/// buffer that thread had left there (two threads in one unsynchronized
/// cache). Now every index of the exiting thread is dead before any of its
/// caches is given up.
#[test]
fn an_exiting_threads_pool_index_is_dead_before_its_caches_are_given_up() {
    common::in_child_process(
        "an_exiting_threads_pool_index_is_dead_before_its_caches_are_given_up",
        || {
            let pool = Arc::new(BufferPool::new());
            // No depot and one object per thread: at exit, the hook drops
            // what the thread cached, and the `Drop` runs.
            let objects: Arc<Recycler<OnDrop>> = Arc::new(
                Recycler::builder_with_factory(|| OnDrop(Mutex::new(None)))
                    .max_capacity_per_thread(1)
                    .depot_capacity(0)
                    .build()
                    .unwrap(),
            );
            let (claimed_tx, claimed_rx) = mpsc::channel::<usize>();
            let (taken_tx, taken_rx) = mpsc::channel::<OwnedPooledBuf>();
            let (b_go_tx, b_go_rx) = mpsc::channel::<()>();
            // B: claims the bucket cache T gives up, leaves a buffer in it,
            // and stays alive (parked) until the end.
            let b_pool = Arc::clone(&pool);
            let b = thread::spawn(move || {
                b_go_rx.recv().unwrap();
                let buf = b_pool.acquire(4096);
                let left = buf.as_ptr() as usize;
                drop(buf);
                claimed_tx.send(left).unwrap();
                b_go_rx.recv().unwrap();
                // The buffer B left in its cache is still there.
                let before = b_pool.stats().buckets[0].pooled;
                let again = b_pool.acquire(4096);
                (
                    left,
                    again.as_ptr() as usize,
                    b_pool.stats().buckets[0].pooled - before,
                )
            });
            let t_pool = Arc::clone(&pool);
            let t_objects = Arc::clone(&objects);
            let t_go = b_go_tx.clone();
            let (left_tx, left_rx) = mpsc::channel::<usize>();
            let t = thread::spawn(move || {
                // First call: trim (the bucket caches' hooks first) ...
                t_pool.trim();
                // ... then an object whose `Drop` (run by its recycler's exit
                // hook, after the bucket caches are given up) lets B claim
                // one and then acquires here, keeping the buffer ...
                let obj = t_objects.get();
                let (pool, go) = (Arc::clone(&t_pool), t_go);
                *obj.0.lock().unwrap() = Some(Box::new(move || {
                    go.send(()).unwrap();
                    left_tx.send(claimed_rx.recv().unwrap()).unwrap();
                    taken_tx.send(pool.acquire_owned(4096)).unwrap();
                }));
                drop(obj);
                // ... and only then the index (its hook last).
                drop(t_pool.acquire(4096));
            });
            t.join().unwrap();
            let left = left_rx.recv().unwrap();
            let taken = taken_rx.recv().unwrap();
            assert_ne!(
                taken.as_ptr() as usize,
                left,
                "the exiting thread took the buffer from the cache B owns"
            );
            b_go_tx.send(()).unwrap();
            let (_, again, hits) = b.join().unwrap();
            assert_eq!((again, hits), (left, 1), "B finds what it left");
            drop(taken);
            assert_buffers_counted(&pool.stats());
        },
    );
}

/// A payload whose `Drop` runs a hook once, and panics while `PANIC_DROP`
/// is set.
struct Gate(Option<Box<dyn FnOnce() + Send>>);

static PANIC_DROP: AtomicBool = AtomicBool::new(false);

impl recycler_core::Recyclable for Gate {
    fn reset(&mut self) {}
}

impl Drop for Gate {
    fn drop(&mut self) {
        if let Some(hook) = self.0.take() {
            hook();
        } else if PANIC_DROP.load(SeqCst) && !thread::panicking() {
            panic!("drop failure (test)");
        }
    }
}

/// The last handle of a recycler dropped while another thread's exit hook
/// held it: the recycler dropped inside that thread's thread-local
/// destructor, and a panicking `Drop` of an object it held aborted the
/// process. Now the recycler's drop never unwinds.
#[test]
fn the_last_handle_dropped_while_an_exit_hook_holds_the_recycler() {
    common::in_child_process(
        "the_last_handle_dropped_while_an_exit_hook_holds_the_recycler",
        || {
            quiet_expected_panics();
            let pool: Arc<Recycler<Gate>> = Arc::new(
                Recycler::builder_with_factory(|| Gate(None))
                    .max_capacity_per_thread(2)
                    .depot_capacity(0)
                    .build()
                    .unwrap(),
            );
            // Idle in this thread's cache: dropped when the recycler drops.
            drop((pool.get(), pool.get()));
            let (hooked_tx, hooked_rx) = mpsc::channel::<()>();
            let (dropped_tx, dropped_rx) = mpsc::channel::<()>();
            let theirs = Arc::clone(&pool);
            let t = thread::spawn(move || {
                // Cached here; at exit the hook, holding the recycler, drops
                // it (no depot), and its `Drop` waits for the main thread to
                // drop the last handle.
                let mut obj = theirs.get();
                obj.0 = Some(Box::new(move || {
                    hooked_tx.send(()).unwrap();
                    dropped_rx.recv().unwrap();
                    PANIC_DROP.store(true, SeqCst);
                }));
                drop(obj);
                drop(theirs);
            });
            hooked_rx.recv().unwrap();
            drop(pool);
            dropped_tx.send(()).unwrap();
            // The recycler drops on T, in its teardown, and the objects it
            // held panic as they drop.
            t.join().unwrap();
            PANIC_DROP.store(false, SeqCst);
        },
    );
}

/// A recycler kept in a `thread_local!` with idle objects whose `Drop`
/// panics: its drop in the thread's teardown aborted the process. Both
/// orders: the recycler's thread-local destroyed before the thread's exit
/// hooks run (the thread used another recycler first) and after.
#[test]
fn a_recycler_in_a_thread_local_drops_without_aborting() {
    common::in_child_process(
        "a_recycler_in_a_thread_local_drops_without_aborting",
        || {
            quiet_expected_panics();
            static COUNTS: std::sync::OnceLock<Arc<Counts>> = std::sync::OnceLock::new();
            let counts = Arc::clone(COUNTS.get_or_init(Counts::new));
            thread_local! {
                static LOCAL: Recycler<Counted> = builder(COUNTS.get().unwrap()).build().unwrap();
            }
            for other_first in [false, true] {
                let before = counts.made();
                let c = Arc::clone(&counts);
                thread::spawn(move || {
                    let other = builder(&c).build().unwrap();
                    if other_first {
                        drop(other.get());
                    }
                    LOCAL.with(|r| drop((r.get(), r.get(), r.get())));
                    c.drop_panics.store(u64::MAX, SeqCst);
                })
                .join()
                .unwrap();
                counts.drop_panics.store(0, SeqCst);
                assert!(counts.made() > before);
                assert_eq!(counts.alive(), 0);
            }
        },
    );
}

/// A decay pass that a get ran dropped an object whose `Drop` panicked: the
/// get unwound with the object it had just taken, which was dropped
/// uncounted (`in_use` stayed 1 for ever). Now the object goes back, and
/// the books balance.
#[test]
fn a_panic_in_the_decay_pass_of_a_get_loses_nothing() {
    let counts = Counts::new();
    let pool = builder(&counts).depot_capacity(0).build().unwrap();
    // One object in the slot, seven idle on the batch the whole time.
    let eight: Vec<_> = (0..8).map(|_| pool.get()).collect();
    drop(eight);
    // The first pass (at 65,536 hits) finds the low-water mark at zero; the
    // second one moves the unused objects to a depot that takes none.
    let period = 1 << 16;
    for _ in 0..2 * period - 1 {
        drop(pool.get());
    }
    assert_eq!(pool.stats().hits, 2 * period - 1);
    counts.drop_panics.store(1, SeqCst);
    let got = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.get()));
    assert!(got.is_err(), "the decay's drop panicked through the get");
    counts.drop_panics.store(0, SeqCst);
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert!(s.dropped > 0, "{s}");
    assert_conserved(&pool, &counts, 0);
    // Everything idle is reachable (the next get runs the decay pass again,
    // which may move more to the depot, that drops them).
    let reachable = drain_reachable(&pool);
    assert_eq!(reachable, pool.stats().idle);
    // And the next get works.
    drop(pool.get());
    assert_conserved(&pool, &counts, 0);
}
