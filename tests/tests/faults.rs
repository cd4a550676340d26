//! Faults: a `reset`, a factory, a `retained_bytes` or a `Drop` that panics
//! at every point where the library calls it, a thread that panics while it
//! holds guards, and guards dropped in other thread-locals' destructors.
//!
//! After each fault the test checks what the caller saw (the panic, or
//! none where the library swallows it), that the recycler is still usable,
//! and that the books balance: every object made is in use, idle, dropped
//! or detached, the objects alive are those in use or idle, and every idle
//! object is reachable. `docs/testing.md` has the whole matrix.
//!
//! Cases whose fault happens inside a thread-local destructor run in a child
//! process ([`common::in_child_process`]): were the library to let a panic
//! out there, the process would abort, and that must fail one test, not
//! kill the others.

mod common;

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, mpsc};
use std::thread;

use common::{
    Counted, Counts, assert_buffers_counted, assert_conserved, builder, in_child_process, recycler,
};
use recycler_core::buffer::BufferPool;
use recycler_core::{OwnedPooled, Recycler, RecyclerBuilder};

/// Settings applied to a builder.
type Setup = fn(RecyclerBuilder<Counted>) -> RecyclerBuilder<Counted>;

/// A user hook that can be made to panic.
#[derive(Debug, Clone, Copy)]
enum Hook {
    Reset,
    Factory,
    Retained,
    /// The next `n` `Drop`s.
    Drop(u64),
}

fn arm(counts: &Counts, hook: Hook) {
    match hook {
        Hook::Reset => counts.reset_panics.store(true, SeqCst),
        Hook::Factory => counts.factory_panics.store(true, SeqCst),
        Hook::Retained => counts.retained_panics.store(true, SeqCst),
        Hook::Drop(n) => counts.drop_panics.store(n, SeqCst),
    }
}

fn disarm(counts: &Counts) {
    counts.reset_panics.store(false, SeqCst);
    counts.factory_panics.store(false, SeqCst);
    counts.retained_panics.store(false, SeqCst);
    counts.drop_panics.store(0, SeqCst);
}

/// Runs `f` with `hook` armed; whether it panicked.
fn panics_with(counts: &Counts, hook: Hook, f: impl FnOnce()) -> bool {
    arm(counts, hook);
    let panicked = catch_unwind(AssertUnwindSafe(f)).is_err();
    disarm(counts);
    panicked
}

/// The checks after every fault, on the last thread standing: nothing in
/// use, the books balance, every idle object is reachable from here, and the
/// recycler still hands out and takes back objects.
fn check_after(pool: &Recycler<Counted>, counts: &Counts) {
    let s = pool.stats();
    assert_eq!(s.in_use, 0, "{s}");
    assert_conserved(pool, counts, 0);
    let mut reachable = Vec::new();
    while let Some(g) = pool.try_get() {
        reachable.push(g);
    }
    assert_eq!(reachable.len() as u64, s.idle, "every idle object: {s}");
    drop(reachable);
    let again: Vec<_> = (0..3).map(|_| pool.get()).collect();
    drop(again);
    assert_eq!(pool.stats().in_use, 0);
    assert_conserved(pool, counts, 0);
}

/// Sends `guards` to a new thread, which drops them and exits.
fn release_elsewhere<G: Send + 'static>(guards: Vec<G>) -> thread::Result<()> {
    thread::spawn(move || drop(guards)).join()
}

// ---- get -------------------------------------------------------------------

#[test]
fn factory_panics_in_get() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    assert!(panics_with(&counts, Hook::Factory, || drop(pool.get())));
    let s = pool.stats();
    assert_eq!((s.created, s.gets), (0, 0), "nothing counted: {s}");
    check_after(&pool, &counts);
}

#[test]
fn factory_panics_in_get_owned_with_objects_in_use() {
    let counts = Counts::new();
    let pool = Arc::new(recycler(&counts));
    let held: Vec<_> = (0..3).map(|_| pool.get_owned()).collect();
    assert!(panics_with(&counts, Hook::Factory, || drop(
        pool.get_owned()
    )));
    drop(held);
    check_after(&pool, &counts);
    // Nothing of the failed get keeps the recycler: the last handle lets it
    // go, with what it holds idle.
    drop(pool);
    assert_eq!(counts.alive(), 0, "the failure kept the recycler alive");
}

#[test]
fn retained_bytes_panics_in_get_under_a_cap() {
    let counts = Counts::new();
    let pool = builder(&counts).max_idle_bytes(1 << 20).build().unwrap();
    drop(pool.get());
    assert!(panics_with(&counts, Hook::Retained, || drop(pool.get())));
    let s = pool.stats();
    assert_eq!(
        (s.idle, s.dropped),
        (0, 1),
        "the object taken is dropped: {s}"
    );
    check_after(&pool, &counts);
}

/// `reset_on_return(false)`: the reset runs where the object leaves its
/// home's inbox, in the owner's `get`. The panic is swallowed (the code that
/// released the guard has moved on); the object is dropped, and `get` goes
/// on to the factory.
#[test]
fn deferred_reset_panics_in_the_owners_drain() {
    for hook_drop in [false, true] {
        let counts = Counts::new();
        let pool = builder(&counts)
            .reset_on_return(false)
            .batch_size(1)
            .build()
            .unwrap();
        let away = vec![pool.get()];
        thread::scope(|s| s.spawn(move || drop(away)).join().unwrap());
        arm(&counts, Hook::Reset);
        if hook_drop {
            arm(&counts, Hook::Drop(1)); // the failed object's `Drop` too
        }
        let got = catch_unwind(AssertUnwindSafe(|| pool.get()));
        disarm(&counts);
        assert_eq!(
            got.map(|g| g.serial).ok(),
            Some(1),
            "no panic; a fresh object"
        );
        let s = pool.stats();
        assert_eq!((s.created, s.dropped, s.in_use), (2, 1, 0), "{s}");
        check_after(&pool, &counts);
    }
}

/// A panic payload whose own `Drop` panics.
struct Bomb;

impl Drop for Bomb {
    fn drop(&mut self) {
        if !thread::panicking() {
            panic!("payload drop failure (test)");
        }
    }
}

/// While set, `ResetsWithABomb::reset` panics with a [`Bomb`].
static BOMB_ARMED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// A `Recyclable` whose `reset` panics with a [`Bomb`] as its payload.
#[derive(Default)]
struct ResetsWithABomb;

impl recycler_core::Recyclable for ResetsWithABomb {
    fn reset(&mut self) {
        if BOMB_ARMED.load(SeqCst) {
            std::panic::panic_any(Bomb);
        }
    }
}

/// A deferred `reset` that panics is swallowed where the object leaves the
/// inbox; the payload of that panic was dropped outside `catch_unwind`, so a
/// payload whose `Drop` panics unwound out of the owner's `get`. Payloads
/// are disposed of inside `catch_unwind` now.
#[test]
fn a_panic_payload_whose_drop_panics_stays_swallowed() {
    let pool: Recycler<ResetsWithABomb> = Recycler::builder()
        .reset_on_return(false)
        .batch_size(1)
        .build()
        .unwrap();
    let away = vec![pool.get()];
    thread::scope(|s| s.spawn(move || drop(away)).join().unwrap());
    BOMB_ARMED.store(true, SeqCst);
    let got = catch_unwind(AssertUnwindSafe(|| pool.get()));
    BOMB_ARMED.store(false, SeqCst);
    assert!(got.is_ok(), "the deferred reset's panic is swallowed");
    drop(got);
    let s = pool.stats();
    assert_eq!((s.created, s.dropped, s.in_use), (2, 1, 0), "{s}");
}

/// A `get` sends the thread's pending foreign releases home first; with the
/// home's inbox and the depot full, they are dropped there, and a panicking
/// `Drop` reaches the caller of `get`.
#[test]
fn drop_panics_when_get_sends_pending_releases() {
    let counts = Counts::new();
    let pool = builder(&counts)
        .max_capacity_per_thread(2) // the home's inbox takes 2; batches of 2
        .batch_size(2)
        .depot_capacity(0)
        .build()
        .unwrap();
    let guards: Vec<_> = (0..3).map(|_| pool.get()).collect();
    thread::scope(|s| {
        s.spawn(|| {
            drop(pool.get()); // this thread's own cache, with one object
            // 2 sent home as a batch, the third pending here.
            drop(guards);
            assert!(panics_with(&counts, Hook::Drop(1), || drop(pool.get())));
            let s = pool.stats();
            assert_eq!(s.dropped, 1, "refused by the inbox and the depot: {s}");
            drop(pool.get());
        })
        .join()
        .unwrap()
    });
    assert_eq!(counts.alive(), pool.stats().idle);
    check_after(&pool, &counts);
}

// ---- release on the owner thread ----------------------------------------

#[test]
fn reset_panics_in_an_owner_release() {
    for cap in [None, Some(1 << 20)] {
        let counts = Counts::new();
        let mut b = builder(&counts);
        if let Some(cap) = cap {
            b = b.max_idle_bytes(cap);
        }
        let pool = b.build().unwrap();
        let (a, b) = (pool.get(), pool.get());
        drop(b); // the hot slot is taken: `a` goes on the batch
        assert!(panics_with(&counts, Hook::Reset, || drop(a)));
        let s = pool.stats();
        assert_eq!((s.idle, s.dropped), (1, 1), "cap {cap:?}: {s}");
        check_after(&pool, &counts);
    }
}

#[test]
fn retained_bytes_panics_in_an_owner_release_under_a_cap() {
    let counts = Counts::new();
    let pool = builder(&counts).max_idle_bytes(1 << 20).build().unwrap();
    let a = pool.get();
    assert!(panics_with(&counts, Hook::Retained, || drop(a)));
    assert_eq!(pool.stats().dropped, 1);
    check_after(&pool, &counts);
}

/// The objects a release drops instead of pooling: one `ratio` says not to
/// pool, one with pooling off, one over the idle-memory cap. The object's
/// panicking `Drop` reaches the code that dropped the guard.
#[test]
fn drop_panics_when_a_release_discards() {
    let cases: [(&str, Setup); 3] = [
        ("ratio 2", |b| b.ratio(2)),
        ("capacity 0", |b| b.max_capacity_per_thread(0)),
        ("cap of 1 byte", |b| b.max_idle_bytes(1)),
    ];
    for (name, setup) in cases {
        let counts = Counts::new();
        let pool = setup(builder(&counts)).build().unwrap();
        let (a, b) = (pool.get(), pool.get());
        drop(a); // pooled unless pooling is off or it is over the cap
        assert!(
            panics_with(&counts, Hook::Drop(1), || drop(b)),
            "{name}: the `Drop` panic reaches the releaser"
        );
        assert_eq!(counts.drop_panics.load(SeqCst), 0, "{name}");
        check_after(&pool, &counts);
    }
}

/// A release into a full cache spills its coldest batch to the depot; what
/// the depot has no room for is dropped, and the first panic of their
/// `Drop`s reaches the releaser after all of them are dropped.
#[test]
fn drop_panics_when_a_spill_finds_the_depot_full() {
    let counts = Counts::new();
    let pool = builder(&counts)
        .max_capacity_per_thread(4)
        .batch_size(3)
        .depot_capacity(1)
        .build()
        .unwrap();
    let guards: Vec<_> = (0..5).map(|_| pool.get()).collect();
    let mut guards = guards.into_iter();
    for g in guards.by_ref().take(4) {
        drop(g);
    }
    let last = guards.next().unwrap();
    assert!(panics_with(&counts, Hook::Drop(2), || drop(last)));
    assert_eq!(counts.drop_panics.load(SeqCst), 0, "both panicked");
    let s = pool.stats();
    // 3 spilled: 1 into the depot, 2 dropped; 2 stay cached.
    assert_eq!((s.idle, s.dropped), (3, 2), "{s}");
    check_after(&pool, &counts);
}

/// Under a cap, what a spill drops is measured; a panicking
/// `retained_bytes` there (the released object itself measured fine)
/// reaches the releaser once the spill is done. The idle-bytes figure then
/// overstates by the dropped object's bytes, which nobody could measure.
#[test]
fn retained_bytes_panics_when_a_spill_finds_the_depot_full() {
    let counts = Counts::new();
    let pool = builder(&counts)
        .max_capacity_per_thread(2)
        .batch_size(1)
        .depot_capacity(0)
        .max_idle_bytes(1 << 20)
        .build()
        .unwrap();
    let guards: Vec<_> = (0..3).map(|_| pool.get()).collect();
    let mut guards = guards.into_iter();
    drop(guards.next());
    drop(guards.next());
    let last = guards.next().unwrap();
    counts.retained_skip.store(1, SeqCst); // the release's own measure
    assert!(panics_with(&counts, Hook::Retained, || drop(last)));
    counts.retained_skip.store(0, SeqCst);
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped), (2, 1), "{s}");
    assert_eq!(s.idle_bytes, 3 * 32, "overstated by one object: {s}");
    check_after(&pool, &counts);
}

// ---- release on another thread ------------------------------------------

#[test]
fn reset_panics_in_a_foreign_release() {
    let counts = Counts::new();
    let pool = Arc::new(recycler(&counts));
    let guards = vec![pool.get_owned(), pool.get_owned()];
    let c = Arc::clone(&counts);
    let result = thread::spawn(move || {
        let mut guards = guards.into_iter();
        drop(guards.next()); // released on this thread: pending here
        assert!(panics_with(&c, Hook::Reset, || drop(guards.next())));
    })
    .join();
    assert!(result.is_ok());
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped, s.released_remote), (1, 1, 2), "{s}");
    check_after(&pool, &counts);
}

#[test]
fn retained_bytes_panics_in_a_foreign_release_under_a_cap() {
    let counts = Counts::new();
    let pool = Arc::new(builder(&counts).max_idle_bytes(1 << 20).build().unwrap());
    let g = pool.get_owned();
    let c = Arc::clone(&counts);
    thread::spawn(move || assert!(panics_with(&c, Hook::Retained, || drop(g))))
        .join()
        .unwrap();
    assert_eq!(pool.stats().dropped, 1);
    check_after(&pool, &counts);
}

/// A foreign release whose batch the home's inbox refuses and the depot has
/// no room for: the batch is dropped on the releasing thread, and the
/// panicking `Drop` reaches the releaser.
#[test]
fn drop_panics_when_a_foreign_batch_finds_nowhere_to_go() {
    let counts = Counts::new();
    let pool = Arc::new(
        builder(&counts)
            .max_capacity_per_thread(1) // the home's inbox takes 1
            .batch_size(1)
            .depot_capacity(0)
            .build()
            .unwrap(),
    );
    let guards = vec![pool.get_owned(), pool.get_owned()];
    let c = Arc::clone(&counts);
    thread::spawn(move || {
        let mut guards = guards.into_iter();
        drop(guards.next()); // into the home's inbox
        assert!(panics_with(&c, Hook::Drop(1), || drop(guards.next())));
    })
    .join()
    .unwrap();
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped), (1, 1), "{s}");
    check_after(&pool, &counts);
}

/// `reset_on_return(false)`: a foreign release does not reset, so a
/// panicking `reset` is not called there; it runs (and panics, swallowed)
/// when the owner drains its inbox.
#[test]
fn deferred_reset_is_not_called_by_a_foreign_release() {
    let counts = Counts::new();
    let pool = Arc::new(
        builder(&counts)
            .reset_on_return(false)
            .batch_size(1)
            .build()
            .unwrap(),
    );
    let g = pool.get_owned();
    let c = Arc::clone(&counts);
    thread::spawn(move || assert!(!panics_with(&c, Hook::Reset, || drop(g))))
        .join()
        .unwrap();
    assert_eq!(counts.resets.load(SeqCst), 0);
    assert_eq!(pool.stats().idle, 1, "in this thread's inbox, unreset");
    arm(&counts, Hook::Reset);
    let got = pool.get(); // the drain resets, which panics
    disarm(&counts);
    assert_eq!(
        got.serial, 1,
        "the unreset object was dropped, a new one made"
    );
    drop(got);
    check_after(&pool, &counts);
}

// ---- trim --------------------------------------------------------------------

#[test]
fn drop_panics_in_trim() {
    let counts = Counts::new();
    let pool = Arc::new(builder(&counts).batch_size(2).build().unwrap());
    let here: Vec<_> = (0..4).map(|_| pool.get_owned()).collect();
    let away: Vec<_> = (0..4).map(|_| pool.get_owned()).collect();
    drop(here); // in this thread's cache
    release_elsewhere(away).unwrap(); // in this thread's inbox
    let s = pool.stats();
    assert_eq!(s.idle, 8, "{s}");
    assert!(panics_with(&counts, Hook::Drop(3), || pool.trim()));
    assert_eq!(counts.drop_panics.load(SeqCst), 0, "all three panicked");
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped), (0, 8), "everything freed: {s}");
    assert_eq!(counts.alive(), 0);
    check_after(&pool, &counts);
}

/// Under a cap, trim measures what it frees; a panicking `retained_bytes`
/// reaches the caller, after every object is freed. The idle-bytes figure
/// then overstates by that object's bytes, which nobody can know (see
/// `docs/testing.md`).
#[test]
fn retained_bytes_panics_in_trim_under_a_cap() {
    let counts = Counts::new();
    let pool = builder(&counts).max_idle_bytes(1 << 20).build().unwrap();
    let held: Vec<_> = (0..4).map(|_| pool.get()).collect();
    drop(held);
    assert_eq!(pool.stats().idle_bytes, 4 * 32);
    assert!(panics_with(&counts, Hook::Retained, || pool.trim()));
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped), (0, 4), "{s}");
    assert!(s.idle_bytes <= 4 * 32, "{s}");
    assert_eq!(counts.alive(), 0);
    check_after(&pool, &counts);
}

// ---- prefill -----------------------------------------------------------------

/// A factory that fails in the middle of `prefill`: the batches stored
/// before stay pooled; the objects of the batch being made drop with the
/// panic, counted as made and dropped.
#[test]
fn factory_panics_in_prefill() {
    let counts = Counts::new();
    let c = Arc::clone(&counts);
    let pool = Recycler::builder_with_factory(move || {
        if c.made() == 6 {
            panic!("factory failure (test)");
        }
        Counted::new(&c)
    })
    .batch_size(4)
    .build()
    .unwrap();
    assert!(catch_unwind(AssertUnwindSafe(|| pool.prefill(8))).is_err());
    let s = pool.stats();
    assert_eq!((s.created, s.dropped, s.idle), (6, 2, 4), "{s}");
    assert_eq!(counts.made(), 6);
    assert_eq!(counts.alive(), 4, "the 2 of the batch being made dropped");
    check_after(&pool, &counts);
}

#[test]
fn retained_bytes_panics_in_prefill_under_a_cap() {
    let counts = Counts::new();
    let pool = builder(&counts).max_idle_bytes(1 << 20).build().unwrap();
    assert_eq!(pool.prefill(3), 3);
    assert!(panics_with(&counts, Hook::Retained, || {
        pool.prefill(3);
    }));
    let s = pool.stats();
    assert_eq!((s.created, s.dropped), (4, 1), "the one measured: {s}");
    assert_eq!((s.idle, s.idle_bytes), (3, 3 * 32), "{s}");
    check_after(&pool, &counts);
}

// ---- thread exit -------------------------------------------------------------

/// The exit hook drops what the depot has no room for; a panicking `Drop`
/// (or `retained_bytes`, under a cap) there is swallowed: a panic out of a
/// thread-local destructor aborts the process.
#[test]
fn drop_and_retained_bytes_panic_in_the_exit_hook() {
    in_child_process("drop_and_retained_bytes_panic_in_the_exit_hook", || {
        for hook in [Hook::Drop(3), Hook::Retained] {
            let counts = Counts::new();
            let mut b = builder(&counts).depot_capacity(1).batch_size(2);
            if matches!(hook, Hook::Retained) {
                b = b.max_idle_bytes(1 << 20);
            }
            let pool = Arc::new(b.build().unwrap());
            let (p, c) = (Arc::clone(&pool), Arc::clone(&counts));
            thread::spawn(move || {
                let held: Vec<_> = (0..5).map(|_| p.get()).collect();
                drop(held); // 5 cached; at exit 1 fits the depot
                arm(&c, hook);
            })
            .join()
            .expect("the thread exits normally");
            disarm(&counts);
            let s = pool.stats();
            assert_eq!((s.idle, s.dropped), (1, 4), "{hook:?}: {s}");
            check_after(&pool, &counts);
        }
    });
}

/// `reset_on_return(false)`: an exiting thread moves its inbox to the depot,
/// resetting what is in it; a panicking `reset` (and that object's `Drop`)
/// is swallowed there.
#[test]
fn deferred_reset_panics_in_the_exit_hook() {
    in_child_process("deferred_reset_panics_in_the_exit_hook", || {
        let counts = Counts::new();
        let pool = Arc::new(
            builder(&counts)
                .reset_on_return(false)
                .batch_size(1)
                .build()
                .unwrap(),
        );
        let (p, c) = (Arc::clone(&pool), Arc::clone(&counts));
        thread::spawn(move || {
            let away = vec![p.get_owned(), p.get_owned()];
            release_elsewhere(away).unwrap(); // into this thread's inbox
            arm(&c, Hook::Reset);
            arm(&c, Hook::Drop(1));
        })
        .join()
        .expect("the thread exits normally");
        disarm(&counts);
        let s = pool.stats();
        assert_eq!((s.idle, s.dropped), (0, 2), "{s}");
        check_after(&pool, &counts);
    });
}

thread_local! {
    static KEPT: RefCell<Vec<OwnedPooled<Counted>>> = const { RefCell::new(Vec::new()) };
}

/// Guards kept in a thread-local and dropped while the thread's
/// thread-locals are destroyed, before and after the recycler's exit hook,
/// where the library drops them (no room in the home's inbox nor in the
/// depot): the books balance in both orders. Once the hook has run, the
/// library swallows their panicking `Drop`s. Before it, the thread still
/// owns its cache and the panic reaches the code that dropped the guard, a
/// thread-local destructor, where `std` aborts the process: as it would for
/// the same object dropped there without a recycler (see `docs/testing.md`).
#[test]
fn guards_dropped_in_thread_local_destructors_with_nowhere_to_go() {
    in_child_process(
        "guards_dropped_in_thread_local_destructors_with_nowhere_to_go",
        || {
            for after_the_hook in [false, true] {
                let counts = Counts::new();
                let pool = Arc::new(
                    builder(&counts)
                        .max_capacity_per_thread(1)
                        .batch_size(1)
                        .depot_capacity(0)
                        .build()
                        .unwrap(),
                );
                let (p, c) = (Arc::clone(&pool), Arc::clone(&counts));
                thread::spawn(move || {
                    if after_the_hook {
                        // Touched first: destroyed after the hook.
                        KEPT.with_borrow(|_| ());
                    }
                    let mut kept: Vec<_> = (0..3).map(|_| p.get_owned()).collect();
                    let p2 = Arc::clone(&p);
                    kept.push(thread::spawn(move || p2.get_owned()).join().unwrap());
                    KEPT.with_borrow_mut(|k| k.extend(kept));
                    if after_the_hook {
                        arm(&c, Hook::Drop(u64::MAX));
                    }
                })
                .join()
                .expect("the thread exits normally");
                disarm(&counts);
                let s = pool.stats();
                assert_eq!(s.in_use, 0, "after the hook: {after_the_hook}: {s}");
                assert_eq!(s.idle + s.dropped, 4, "{s}");
                check_after(&pool, &counts);
            }
        },
    );
}

// ---- the recycler drops ------------------------------------------------------

#[test]
fn drop_panics_when_the_recycler_drops() {
    let counts = Counts::new();
    let pool = Arc::new(
        builder(&counts)
            .max_capacity_per_thread(4)
            .batch_size(2)
            .build()
            .unwrap(),
    );
    let here: Vec<_> = (0..10).map(|_| pool.get_owned()).collect();
    let away: Vec<_> = (0..4).map(|_| pool.get_owned()).collect();
    drop(here); // 4 cached, 6 in the depot
    release_elsewhere(away).unwrap(); // 4 in this thread's inbox
    assert_eq!(counts.alive(), 14);
    // Three of the `Drop`s panic: all objects are dropped, and no panic
    // leaves the recycler's drop (which may run where a panic aborts: a
    // thread-local destructor, another thread's exit hook).
    assert!(!panics_with(&counts, Hook::Drop(3), move || drop(pool)));
    assert_eq!(counts.alive(), 0);
    assert_eq!(counts.drop_panics.load(SeqCst), 0, "three panicked");
}

#[test]
fn the_last_owned_guard_drops_the_recycler_and_a_drop_panics() {
    let counts = Counts::new();
    let pool = Arc::new(recycler(&counts));
    let guards: Vec<_> = (0..4).map(|_| pool.get_owned()).collect();
    drop(pool);
    let mut guards = guards.into_iter();
    for g in guards.by_ref().take(3) {
        drop(g); // into the cache of the recycler the guards keep alive
    }
    let last = guards.next().unwrap();
    // Released, then the recycler drops with its guard's `Arc`: one of the
    // 4 objects' `Drop` panics, and is swallowed by the recycler's drop.
    arm(&counts, Hook::Drop(1));
    drop(last);
    assert_eq!(counts.drop_panics.load(SeqCst), 0, "one panicked");
    disarm(&counts);
    assert_eq!(counts.alive(), 0);
}

// ---- threads that panic holding guards --------------------------------------

/// A thread panics while it holds guards of its own, guards from another
/// thread, and owned guards: unwinding drops them without resetting, and
/// counts them dropped; the recycler carries on. A panicking `reset` is not
/// even called.
#[test]
fn a_thread_panics_while_holding_guards() {
    let counts = Counts::new();
    let pool = Arc::new(builder(&counts).batch_size(2).build().unwrap());
    let foreign: Vec<_> = (0..3).map(|_| pool.get_owned()).collect();
    let (p, c) = (Arc::clone(&pool), Arc::clone(&counts));
    let result = thread::spawn(move || {
        let mine: Vec<_> = (0..4).map(|_| p.get()).collect();
        let owned: Vec<_> = (0..2).map(|_| p.get_owned()).collect();
        c.reset_panics.store(true, SeqCst);
        let _held = (mine, owned, foreign);
        panic!("user code fails while holding guards (test)");
    })
    .join();
    disarm(&counts);
    assert!(result.is_err());
    assert_eq!(counts.resets.load(SeqCst), 0, "no reset while panicking");
    let s = pool.stats();
    assert_eq!((s.dropped, s.in_use, s.idle), (9, 0, 0), "{s}");
    check_after(&pool, &counts);
}

/// A scope's holder panics: every buffer goes back, the books balance and the
/// memory limit is free again. (The buffer pool runs no user code: its
/// eviction, spills and exits have no hook that could panic.)
#[test]
fn a_thread_panics_while_holding_buffers_and_a_scope() {
    let pool = Arc::new(
        BufferPool::builder()
            .max_capacity(16 * 1024)
            .max_idle_memory(32 * 1024)
            .memory_limit(128 * 1024)
            .build()
            .unwrap(),
    );
    let (tx, rx) = mpsc::channel();
    let p = Arc::clone(&pool);
    let result = thread::spawn(move || {
        let away = p.acquire_owned(4096);
        tx.send(away).unwrap();
        let scope = p.scope();
        let a = scope.alloc(10_000);
        a[0] = 1;
        let mut grown = p.acquire(100);
        grown.resize(10_000, 7); // grows into another bucket
        let _big = p.acquire(40 * 1024); // above the largest bucket
        let _bufs: Vec<_> = (0..4).map(|i| p.acquire(1 + i * 2048)).collect();
        panic!("user code fails while holding buffers (test)");
    })
    .join();
    assert!(result.is_err());
    drop(rx.recv().unwrap()); // its home has exited
    let s = pool.stats();
    assert_buffers_counted(&s);
    assert_eq!(s.total().in_use, 0, "{s}");
    assert_eq!(s.allocated_memory, s.idle_memory, "{s}");
    assert!(s.idle_memory <= 32 * 1024, "{s}");
    assert_eq!(s.idle_memory, s.accounted_idle_memory, "{s}");
    // Usable up to the limit again.
    let all: Vec<_> = (0..8).map(|_| pool.acquire(16 * 1024)).collect();
    assert_eq!(pool.stats().allocated_memory, 128 * 1024);
    drop(all);
    pool.trim();
    assert_eq!(pool.stats().allocated_memory, 0);
}
