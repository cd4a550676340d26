//! The recycler on one thread: the owner path, capacity, ratio, spill and
//! refill, trim, detach, panics.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;

use common::{Counted, Counts, assert_conserved, builder, recycler};
use recycler_core::{ConfigError, OwnedPooled, Pooled, Recycler, RecyclerBuilder};

#[test]
fn owner_get_release_reuses_and_resets() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    let mut a = pool.get();
    a.data.extend([1, 2, 3]);
    let serial = a.serial;
    let data_ptr = a.data.as_ptr();
    drop(a);
    assert_eq!(counts.resets.load(SeqCst), 1);

    let b = pool.get();
    assert_eq!(b.serial, serial, "the same object comes back");
    assert!(b.data.is_empty(), "and it was reset");
    assert_eq!(b.data.as_ptr(), data_ptr, "with its allocation kept");
    drop(b);

    let s = pool.stats();
    assert_eq!((s.gets, s.hits, s.created, s.released_local), (2, 1, 1, 2));
    assert_eq!((s.idle, s.in_use, s.dropped), (1, 0, 0));
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn lifo_order_on_the_owner_thread() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    let guards: Vec<_> = (0..4).map(|_| pool.get()).collect();
    let serials: Vec<u64> = guards.iter().map(|g| g.serial).collect();
    drop(guards); // released in order 0, 1, 2, 3
    // The first release fills the hot slot; the others stack on the batch.
    // A get takes the slot first, then the object released last.
    let held: Vec<_> = (0..4).map(|_| pool.get()).collect();
    let again: Vec<u64> = held.iter().map(|g| g.serial).collect();
    assert_eq!(
        again,
        [serials[0], serials[3], serials[2], serials[1]],
        "{again:?} vs {serials:?}"
    );
    drop(held);
    // One object at a time: always the same one, through the slot.
    let first = pool.get().serial;
    for _ in 0..3 {
        assert_eq!(pool.get().serial, first);
    }
    assert_eq!(counts.made(), 4, "nothing made after the first four");
}

#[test]
fn many_held_at_once_all_return() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    for round in 0..3 {
        let guards: Vec<_> = (0..100).map(|_| pool.get()).collect();
        assert_eq!(pool.stats().in_use, 100);
        drop(guards);
        assert_eq!(counts.made(), 100, "round {round} reused every object");
    }
    let s = pool.stats();
    assert_eq!((s.created, s.hits, s.idle), (100, 200, 100));
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn try_get_never_calls_the_factory() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    assert!(pool.try_get().is_none());
    assert_eq!(counts.made(), 0);
    drop(pool.get());
    let g = pool.try_get().expect("one is pooled");
    assert!(pool.try_get().is_none(), "and only one");
    drop(g);
    assert_eq!(counts.made(), 1);
    let s = pool.stats();
    assert_eq!((s.gets, s.hits, s.created), (2, 1, 1));
}

#[test]
fn capacity_zero_disables_pooling() {
    let counts = Counts::new();
    let pool = builder(&counts).max_capacity_per_thread(0).build().unwrap();
    for _ in 0..10 {
        drop(pool.get());
    }
    assert_eq!(counts.made(), 10);
    assert_eq!(counts.destroyed(), 10);
    assert_eq!(
        counts.resets.load(SeqCst),
        0,
        "dropped objects are not reset"
    );
    let s = pool.stats();
    assert_eq!((s.created, s.dropped, s.idle, s.hits), (10, 10, 0, 0));
    assert!(pool.try_get().is_none());
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn ratio_pools_one_in_n_fresh_objects() {
    let counts = Counts::new();
    let pool = builder(&counts).ratio(4).build().unwrap();
    let guards: Vec<_> = (0..12).map(|_| pool.get()).collect();
    drop(guards);
    let s = pool.stats();
    assert_eq!((s.created, s.idle, s.dropped), (12, 3, 9));
    // Pooled objects are always pooled again, whatever the ratio.
    let guards: Vec<_> = (0..3).map(|_| pool.get()).collect();
    assert_eq!(counts.made(), 12);
    drop(guards);
    assert_eq!(pool.stats().idle, 3);
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn spill_to_depot_and_refill_on_another_thread() {
    let counts = Counts::new();
    let pool = builder(&counts)
        .max_capacity_per_thread(8)
        .batch_size(4)
        .build()
        .unwrap();
    // 20 released on this thread: 8 stay in its cache, 12 go to the depot in
    // batches of 4.
    let guards: Vec<_> = (0..20).map(|_| pool.get()).collect();
    drop(guards);
    assert_eq!(pool.stats().idle, 20);
    assert_eq!(pool.stats().dropped, 0);

    // Another thread has an empty cache and inbox: it refills from the depot
    // and takes all 12 without making any.
    std::thread::scope(|s| {
        let h = s.spawn(|| {
            let guards: Vec<_> = (0..12).map(|_| pool.get()).collect();
            assert_eq!(counts.made(), 20, "served from the depot");
            drop(guards);
        });
        h.join().unwrap();
    });
    let s = pool.stats();
    assert_eq!((s.created, s.hits, s.idle), (20, 12, 20));
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn full_depot_drops_and_counts() {
    let counts = Counts::new();
    let pool = builder(&counts)
        .max_capacity_per_thread(4)
        .batch_size(2)
        .depot_capacity(4)
        .build()
        .unwrap();
    let guards: Vec<_> = (0..12).map(|_| pool.get()).collect();
    drop(guards);
    // 4 in the cache, 4 in the depot, the other 4 dropped.
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped), (8, 4));
    assert_eq!(counts.destroyed(), 4);
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn trim_frees_what_idles() {
    let counts = Counts::new();
    let pool = builder(&counts)
        .max_capacity_per_thread(4)
        .batch_size(2)
        .build()
        .unwrap();
    let guards: Vec<_> = (0..10).map(|_| pool.get()).collect();
    drop(guards);
    assert_eq!(pool.stats().idle, 10);
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped), (0, 10));
    assert_eq!(counts.alive(), 0);
    // Still usable.
    drop(pool.get());
    assert_eq!(pool.stats().idle, 1);
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn into_inner_detaches_for_good() {
    let counts = Counts::new();
    let pool = Arc::new(recycler(&counts));
    let mut g = pool.get();
    g.data.push(9);
    let kept: Counted = Pooled::into_inner(g);
    assert_eq!(kept.data, [9], "not reset");
    let owned = pool.get_owned();
    let kept2: Counted = OwnedPooled::into_inner(owned);
    let s = pool.stats();
    assert_eq!((s.detached, s.in_use, s.idle), (2, 0, 0));
    assert_conserved(&pool, &counts, 2);
    drop((kept, kept2));
    assert_eq!(counts.alive(), 0);
    assert_eq!(Arc::strong_count(&pool), 1, "into_inner released the Arc");
}

#[test]
fn panicking_reset_drops_the_object_and_reaches_the_caller() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    let g = pool.get();
    counts.reset_panics.store(true, SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| drop(g)));
    counts.reset_panics.store(false, SeqCst);
    assert!(
        result.is_err(),
        "the panic reaches the code that dropped the guard"
    );
    assert_eq!(counts.destroyed(), 1, "the object was dropped");
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped, s.in_use), (0, 1, 0));
    // The recycler is consistent and usable.
    drop(pool.get());
    assert_eq!(pool.stats().idle, 1);
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn guard_dropped_while_panicking_is_not_pooled() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    let result = catch_unwind(AssertUnwindSafe(|| {
        let mut g = pool.get();
        g.data.push(1);
        // Even a panicking `reset` must not abort here: it is not called.
        counts.reset_panics.store(true, SeqCst);
        panic!("user code fails while holding a guard");
    }));
    counts.reset_panics.store(false, SeqCst);
    assert!(result.is_err());
    assert_eq!(counts.resets.load(SeqCst), 0);
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped, s.in_use), (0, 1, 0));
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn panicking_factory_leaves_the_recycler_usable() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    counts.factory_panics.store(true, SeqCst);
    assert!(catch_unwind(AssertUnwindSafe(|| drop(pool.get()))).is_err());
    counts.factory_panics.store(false, SeqCst);
    let s = pool.stats();
    assert_eq!((s.gets, s.created), (0, 0));
    drop(pool.get());
    drop(pool.get());
    let s = pool.stats();
    assert_eq!((s.gets, s.created, s.hits, s.idle), (2, 1, 1, 1));
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn factory_may_use_the_recycler_itself() {
    // A factory that gets from another recycler, and a recycler whose objects
    // hold guards of another: no borrow is held across user code.
    let inner: Arc<Recycler<Vec<u8>>> = Arc::new(Recycler::new());
    let inner2 = Arc::clone(&inner);
    let outer = Recycler::with_factory(move || Some(inner2.get_owned()));
    for _ in 0..3 {
        let mut g = outer.get();
        if let Some(v) = g.as_mut() {
            v.push(1);
        }
    }
    // `Option` resets to `None`, which releases the inner guard.
    assert_eq!(inner.stats().in_use, 0);
}

#[test]
fn dropping_the_recycler_drops_every_idle_object() {
    let counts = Counts::new();
    let pool = builder(&counts)
        .max_capacity_per_thread(4)
        .batch_size(2)
        .build()
        .unwrap();
    let guards: Vec<_> = (0..10).map(|_| pool.get()).collect();
    drop(guards); // 4 in the cache, 6 in the depot
    std::thread::scope(|s| {
        let g: Vec<_> = (0..3).map(|_| pool.get()).collect();
        // Released on another thread: on their way home.
        s.spawn(move || drop(g)).join().unwrap();
    });
    assert_eq!(counts.alive(), 10);
    drop(pool);
    assert_eq!(counts.alive(), 0);
}

#[test]
fn owned_guard_keeps_the_recycler_alive() {
    let counts = Counts::new();
    let pool = Arc::new(recycler(&counts));
    let (a, b) = (pool.get(), pool.get());
    drop(a); // one idle object, in the pool
    let mut g = pool.get_owned();
    drop(b);
    drop(pool);
    // The guard keeps the pool alive, with what it holds idle.
    assert_eq!(counts.alive(), 2, "the pool lives while a guard is out");
    g.data.push(7);
    drop(g);
    assert_eq!(counts.alive(), 0, "the last guard let the pool go");
}

#[test]
fn owned_guards_released_elsewhere_keep_the_pool_until_the_last() {
    let counts = Counts::new();
    let pool = Arc::new(recycler(&counts));
    // Owned guards made on this thread, whose cache holds their credits.
    let guards: Vec<_> = (0..200).map(|_| pool.get_owned()).collect();
    let mut guards = guards.into_iter();
    let first: Vec<_> = guards.by_ref().take(100).collect();
    drop(first); // released here: credits back in this thread's cache
    drop(pool); // the last handle takes the credits back
    assert_eq!(counts.alive(), 200, "100 guards out keep the pool");
    let rest: Vec<_> = guards.collect();
    std::thread::spawn(move || drop(rest)).join().unwrap();
    assert_eq!(
        counts.alive(),
        0,
        "the last guard, released elsewhere, let it go"
    );
}

#[test]
fn guards_format_like_their_object() {
    let pool: Recycler<String> = Recycler::new();
    let mut s = pool.get();
    s.push_str("abc");
    assert_eq!(format!("{s:?} {s}"), "\"abc\" abc");
    drop(s);
    let pool = Arc::new(pool);
    let mut o = pool.get_owned();
    o.push('z');
    assert_eq!(format!("{o:?} {o}"), "\"z\" z");
    let dbg = format!("{pool:?}");
    assert!(
        dbg.starts_with("Recycler { max_capacity_per_thread: 4096"),
        "{dbg}"
    );
}

#[test]
fn bad_configuration_is_a_typed_error() {
    let err = Recycler::<String>::builder()
        .batch_size(0)
        .build()
        .unwrap_err();
    assert_eq!(
        err,
        ConfigError::Zero {
            field: "batch_size"
        }
    );
    let err = Recycler::<String>::builder().ratio(0).build().unwrap_err();
    assert_eq!(err.to_string(), "`ratio` is 0; it must be at least 1");
    let err = Recycler::<String>::builder()
        .batch_size(1 << 20)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "`batch_size` is 1048576; it must be at most 65536"
    );
    let _: &dyn std::error::Error = &err;
    // Huge but valid values build without allocating for them up front.
    let pool = Recycler::<String>::builder()
        .max_capacity_per_thread(usize::MAX)
        .depot_capacity(usize::MAX)
        .build()
        .unwrap();
    drop(pool.get());
    assert_eq!(pool.stats().idle, 1);
}

/// Dropping a recycler drops every object it holds, wherever it idles (the
/// caches of threads still running), even when one of
/// their `Drop`s panics; the panic then reaches the code that dropped the
/// recycler. (The unwinding used to stop the walk over the threads' caches:
/// 60 of these 80 objects leaked.)
#[test]
fn dropping_the_recycler_drops_every_object_even_if_a_drop_panics() {
    const THREADS: usize = 4;
    let counts = Counts::new();
    let pool = Arc::new(
        builder(&counts)
            .max_capacity_per_thread(32)
            .batch_size(8)
            .build()
            .unwrap(),
    );
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let mut exits = Vec::new();
    let mut threads = Vec::new();
    for _ in 0..THREADS {
        let (exit_tx, exit_rx) = std::sync::mpsc::channel::<()>();
        let (pool, ready_tx) = (Arc::clone(&pool), ready_tx.clone());
        threads.push(std::thread::spawn(move || {
            // All 20 in this thread's cache (nothing spills, so nothing
            // is shared and every thread makes its own).
            let guards: Vec<_> = (0..20).map(|_| pool.get_owned()).collect();
            drop(guards);
            drop(pool);
            ready_tx.send(()).unwrap();
            // Still running, its cache full, when the recycler drops.
            let _ = exit_rx.recv(); // the sender is dropped: exit
        }));
        exits.push(exit_tx);
    }
    for _ in 0..THREADS {
        ready_rx.recv().unwrap();
    }
    assert_eq!(counts.made(), 80);
    assert_eq!(Arc::strong_count(&pool), 1);
    counts.drop_panics.store(1, SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| drop(pool)));
    assert!(result.is_ok(), "a recycler's drop never unwinds");
    assert_eq!(counts.drop_panics.load(SeqCst), 0, "one `Drop` panicked");
    assert_eq!(counts.alive(), 0, "every object was dropped");
    drop(exits);
    for t in threads {
        t.join().unwrap();
    }
}

/// A release of an object that `ratio` or capacity 0 marked to be dropped
/// counted as remote (its home, the discard cache, is owned by nobody),
/// even on the thread that got it. It counts as local now, in both modes.
#[test]
fn discarded_releases_count_as_local() {
    type Setup = fn(RecyclerBuilder<Counted>) -> RecyclerBuilder<Counted>;
    let setups: [(&str, Setup); 4] = [
        ("capacity 0", |b| b.max_capacity_per_thread(0)),
        ("ratio", |b| b.ratio(1000)),
        ("striped, capacity 0", |b| {
            b.striped(2).max_capacity_per_thread(0)
        }),
        ("striped, ratio", |b| b.striped(2).ratio(1000)),
    ];
    for (name, setup) in setups {
        let counts = Counts::new();
        let pool = setup(builder(&counts)).build().unwrap();
        // The first object made is pooled under `ratio`: take it out of the
        // way, then count the rest.
        let first = pool.get();
        let before = pool.stats();
        drop(pool.get());
        let s = pool.stats();
        assert_eq!(
            (
                s.released_local - before.released_local,
                s.released_remote - before.released_remote,
                s.dropped - before.dropped
            ),
            (1, 0, 1),
            "{name}: {s}"
        );
        drop(first);
        assert_conserved(&pool, &counts, 0);
    }
}
