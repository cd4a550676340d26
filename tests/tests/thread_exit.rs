//! Threads that exit leave their objects where others find them, and guards
//! dropped during thread-local teardown neither panic nor abort.

mod common;

use std::cell::{Cell, RefCell};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Barrier};
use std::thread;

use common::{
    Counted, Counts, assert_conserved, builder, drain_reachable, in_child_process, recycler,
};
use recycler_core::{OwnedPooled, Recycler, RecyclerBuilder};

#[test]
fn a_thousand_short_lived_threads_strand_nothing() {
    thousand_threads(|b| b.batch_size(8));
}

#[test]
fn a_thousand_short_lived_threads_strand_nothing_striped() {
    thousand_threads(|b| b.striped(4));
}

fn thousand_threads(configure: impl FnOnce(RecyclerBuilder<Counted>) -> RecyclerBuilder<Counted>) {
    let counts = Counts::new();
    let pool = configure(builder(&counts)).build().unwrap();
    const WAVES: usize = 125;
    const PER_WAVE: usize = 8;
    for wave in 0..WAVES {
        let barrier = Barrier::new(PER_WAVE);
        let (kept_tx, kept_rx) = std::sync::mpsc::channel();
        thread::scope(|s| {
            let mut handles = Vec::new();
            for t in 0..PER_WAVE {
                let (pool, barrier, kept_tx) = (&pool, &barrier, kept_tx.clone());
                handles.push(s.spawn(move || {
                    barrier.wait();
                    let mut mine: Vec<_> = (0..16).map(|_| pool.get()).collect();
                    for g in mine.iter_mut() {
                        g.data.push((wave * PER_WAVE + t) as u64);
                    }
                    // Hand some to the main thread, which releases them after
                    // this thread (their home) has exited.
                    kept_tx.send(mine.split_off(12)).unwrap();
                    drop(mine);
                }));
            }
            // `join` waits for the threads' exit hooks; the end of the scope
            // alone would not.
            handles.into_iter().for_each(|h| h.join().unwrap());
        });
        drop(kept_tx);
        for kept in kept_rx {
            drop(kept);
        }
    }
    // 1,000 threads have come and gone; nothing is in use.
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert_conserved(&pool, &counts, 0);
    // Every idle object is reachable from this surviving thread.
    let reachable = drain_reachable(&pool);
    assert_eq!(
        reachable + pool.stats().dropped,
        counts.made(),
        "{}",
        pool.stats()
    );
    assert_eq!(reachable, s.idle);
    assert!(
        counts.made() < (WAVES * PER_WAVE * 16 / 4) as u64,
        "threads reused what their predecessors left: made {}",
        counts.made()
    );
}

#[test]
fn exited_threads_hand_over_their_cache_and_inbox() {
    let counts = Counts::new();
    let pool = builder(&counts).batch_size(4).build().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    thread::scope(|s| {
        let h = s.spawn(|| {
            let mut all: Vec<_> = (0..16).map(|_| pool.get()).collect();
            // 6 sent away, to come back to its inbox after it exits...
            tx.send(all.split_off(10)).unwrap();
            // ...and 10 in this thread's cache when it exits.
            drop(all);
        });
        h.join().unwrap();
    });
    let away = rx.recv().unwrap();
    assert_eq!(counts.made(), 16);
    drop(away); // their home has exited: rescued into the depot
    assert_conserved(&pool, &counts, 0);
    assert_eq!(drain_reachable(&pool), 16);
}

thread_local! {
    static HELD: RefCell<Vec<OwnedPooled<Counted>>> = const { RefCell::new(Vec::new()) };
}

/// A guard kept in a thread-local is dropped while the thread's thread-locals
/// are destroyed: before or after the recycler's exit hook, depending on
/// which thread-local was touched first. Neither order may panic or abort,
/// nor lose the object.
#[test]
fn guards_dropped_during_thread_local_teardown() {
    let counts = Counts::new();
    let pool = Arc::new(recycler(&counts));
    for touch_first in [false, true] {
        let pool2 = Arc::clone(&pool);
        thread::spawn(move || {
            if touch_first {
                // Registered before the recycler's hook: destroyed after it.
                HELD.with_borrow(|_| ());
            }
            let guards: Vec<_> = (0..5).map(|_| pool2.get_owned()).collect();
            HELD.with_borrow_mut(|held| held.extend(guards));
            // Also a guard whose home is another thread.
            let foreign = thread::spawn({
                let pool3 = Arc::clone(&pool2);
                move || pool3.get_owned()
            })
            .join()
            .unwrap();
            HELD.with_borrow_mut(|held| held.push(foreign));
        })
        .join()
        .expect("thread exit with guards in a thread-local");
    }
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert_conserved(&pool, &counts, 0);
    assert_eq!(drain_reachable(&pool), s.idle);
}

/// A recycler used for the first time, and dropped, inside thread-local
/// destructors.
#[test]
fn recycler_used_inside_a_thread_local_destructor() {
    struct UsesPoolOnDrop(Arc<Recycler<Vec<u8>>>);
    impl Drop for UsesPoolOnDrop {
        fn drop(&mut self) {
            let mut g = self.0.get();
            g.push(1);
            drop(g);
            let _ = self.0.try_get();
        }
    }
    thread_local! {
        static LATE: RefCell<Option<UsesPoolOnDrop>> = const { RefCell::new(None) };
    }
    let pool = Arc::new(Recycler::<Vec<u8>>::new());
    for warm in [false, true] {
        let p = Arc::clone(&pool);
        thread::spawn(move || {
            LATE.with_borrow_mut(|late| *late = Some(UsesPoolOnDrop(Arc::clone(&p))));
            if warm {
                drop(p.get());
            }
        })
        .join()
        .expect("no panic in thread-local teardown");
    }
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert_eq!(s.created, s.idle + s.dropped, "{s}");
}

#[test]
fn recycler_dropped_while_threads_hold_pending_releases() {
    let counts = Counts::new();
    let pool = Arc::new(builder(&counts).batch_size(64).build().unwrap());
    let guards: Vec<_> = (0..10).map(|_| pool.get_owned()).collect();
    let (released_tx, released_rx) = std::sync::mpsc::channel();
    let (exit_tx, exit_rx) = std::sync::mpsc::channel::<()>();
    let t = thread::spawn(move || {
        drop(guards); // pending on this thread, fewer than a batch
        released_tx.send(()).unwrap();
        exit_rx.recv().unwrap();
        // The thread exits after the recycler is gone: its exit hook finds
        // nothing to flush.
    });
    released_rx.recv().unwrap();
    assert_eq!(counts.alive(), 10);
    drop(pool);
    assert_eq!(
        counts.alive(),
        0,
        "pending objects were dropped with the recycler"
    );
    exit_tx.send(()).unwrap();
    t.join().unwrap();
}

/// `Drop`s that panic inside the thread-exit hook, which runs in a
/// thread-local destructor: the objects the depot has no room for
/// (`depot_capacity(0)`) are dropped there. The panics are swallowed (a
/// panic out of a thread-local destructor aborts the process, as it used
/// to here), every object is dropped and counted. In a child process, so
/// that an abort fails this test only.
#[test]
fn panicking_drops_in_the_thread_exit_hook_do_not_abort() {
    in_child_process(
        "panicking_drops_in_the_thread_exit_hook_do_not_abort",
        || {
            let counts = Counts::new();
            let pool = Arc::new(builder(&counts).depot_capacity(0).build().unwrap());
            let (p, c) = (Arc::clone(&pool), Arc::clone(&counts));
            thread::spawn(move || {
                let (a, b) = (p.get(), p.get());
                drop((a, b)); // both in this thread's cache
                c.drop_panics.store(2, SeqCst); // both panic when the exit hook drops them
            })
            .join()
            .expect("the thread exits normally");
            assert_eq!(counts.drop_panics.load(SeqCst), 0, "both `Drop`s panicked");
            let s = pool.stats();
            assert_eq!((s.in_use, s.idle, s.dropped), (0, 0, 2), "{s}");
            assert_conserved(&pool, &counts, 0);
            assert_eq!(counts.alive(), 0);
        },
    );
}

thread_local! {
    static LAST: RefCell<Option<OwnedPooled<Counted>>> = const { RefCell::new(None) };
}

/// An `OwnedPooled` dropped in a thread-local destructor, on a thread that
/// used a `thread_local::ThreadLocal` before but never a recycler: the
/// destructor runs after the one that frees that crate's thread id, and the
/// release is the thread's first use of the recycler. It must neither panic
/// nor abort (the recycler used that crate, which panicked there, inside a
/// destructor: an abort). In a child process, so that an abort fails this
/// test only.
#[test]
fn owned_guard_dropped_after_other_thread_locals_are_gone() {
    in_child_process(
        "owned_guard_dropped_after_other_thread_locals_are_gone",
        || {
            let counts = Counts::new();
            let pool = Arc::new(recycler(&counts));
            let guard = pool.get_owned(); // its home: this thread
            thread::spawn(move || {
                // Touched first, so destroyed last: after `thread_local`'s own
                // destructor (thread-locals are destroyed in reverse order).
                LAST.with_borrow_mut(|last| *last = Some(guard));
                let other: thread_local::ThreadLocal<Cell<u32>> = thread_local::ThreadLocal::new();
                other.get_or(|| Cell::new(1)).set(2);
            })
            .join()
            .expect("the thread exits normally");
            let s = pool.stats();
            assert_eq!((s.in_use, s.idle, s.released_remote), (0, 1, 1), "{s}");
            assert_conserved(&pool, &counts, 0);
            assert_eq!(drain_reachable(&pool), 1);
        },
    );
}
