//! Releases on other threads: objects travel home in batches and are drained
//! from the inbox when the owner's cache runs empty.

mod common;

use std::sync::{Arc, Barrier, LazyLock, mpsc};
use std::thread;

use common::{Counts, assert_conserved, builder, recycler};
use recycler_core::Recycler;

#[test]
fn foreign_release_goes_home_through_the_inbox() {
    let counts = Counts::new();
    let pool = builder(&counts).batch_size(4).build().unwrap();
    let guards: Vec<_> = (0..10).map(|_| pool.get()).collect();
    let serials: Vec<u64> = guards.iter().map(|g| g.serial).collect();
    // Joined explicitly: `join` (unlike the end of a scope) waits for the
    // thread's exit hook, which sends its last, partial batch home.
    thread::scope(|s| s.spawn(move || drop(guards)).join().unwrap());
    let s = pool.stats();
    assert_eq!((s.released_remote, s.idle, s.in_use), (10, 10, 0));

    // This thread's cache is empty; the 10 wait in its inbox (8 sent in two
    // full batches, 2 flushed when the releasing thread exited).
    let back: Vec<_> = (0..10).map(|_| pool.get()).collect();
    assert_eq!(counts.made(), 10, "all ten came home, none was made");
    let mut got: Vec<u64> = back.iter().map(|g| g.serial).collect();
    got.sort_unstable();
    assert_eq!(got, serials);
    drop(back);
    let s = pool.stats();
    assert_eq!((s.hits, s.released_local, s.idle), (10, 10, 10));
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn pending_releases_are_sent_when_the_releasing_thread_gets() {
    let counts = Counts::new();
    let pool = builder(&counts).batch_size(32).build().unwrap();
    let (to_b, from_a) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel::<()>();
    thread::scope(|s| {
        let pool = &pool;
        s.spawn(move || {
            let g: Vec<_> = from_a.recv().unwrap();
            drop(g); // 3 objects pending here, fewer than a batch
            let _own = pool.get(); // ... sent home now
            done_tx.send(()).unwrap();
            go_rx.recv().unwrap(); // stay alive until the owner has looked
        });
        to_b.send((0..3).map(|_| pool.get()).collect::<Vec<_>>())
            .unwrap();
        done_rx.recv().unwrap();
        // The releasing thread is still alive, yet the three are home.
        let back: Vec<_> = (0..3).map(|_| pool.get()).collect();
        assert_eq!(
            counts.made(),
            4,
            "3 came home; the other thread made its own"
        );
        drop(back);
        go_tx.send(()).unwrap();
    });
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn producer_consumer_recycles_without_growing() {
    let counts = Counts::new();
    let pool = recycler(&counts);
    let (tx, rx) = crossbeam_channel::bounded(64);
    const N: u64 = 100_000;
    thread::scope(|s| {
        let consumer = s.spawn(move || {
            for g in rx {
                drop(g);
            }
        });
        for i in 0..N {
            let mut g = pool.get();
            g.data.push(i);
            tx.send(g).unwrap();
        }
        drop(tx);
        consumer.join().unwrap();
    });
    let s = pool.stats();
    assert_eq!(s.gets, N);
    assert_eq!(s.released_remote, N);
    // Objects come home in batches; the number made stays bounded by what is
    // in flight (queue + batches on the way), not by N.
    assert!(
        s.created < 2_000,
        "made {} objects for {N} gets: {s}",
        s.created
    );
    assert!(s.hit_ratio() > 0.98, "{s}");
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn two_foreign_releasers() {
    let counts = Counts::new();
    let pool = builder(&counts).batch_size(8).build().unwrap();
    let a: Vec<_> = (0..50).map(|_| pool.get()).collect();
    let b: Vec<_> = (0..50).map(|_| pool.get()).collect();
    let barrier = Barrier::new(2);
    thread::scope(|s| {
        let barrier = &barrier;
        let ha = s.spawn(move || {
            barrier.wait();
            drop(a);
        });
        let hb = s.spawn(move || {
            barrier.wait();
            drop(b);
        });
        ha.join().unwrap();
        hb.join().unwrap();
    });
    let back: Vec<_> = (0..100).map(|_| pool.get()).collect();
    assert_eq!(counts.made(), 100, "all came home");
    drop(back);
    assert_conserved(&pool, &counts, 0);
}

#[test]
fn full_inbox_sends_to_the_depot_then_drops_and_counts() {
    // The inbox holds at most `max_capacity_per_thread` objects; the rest
    // go to the depot, and what the depot cannot hold is dropped.
    for (depot, idle) in [(32, 20), (4, 12)] {
        let counts = Counts::new();
        let pool = builder(&counts)
            .max_capacity_per_thread(8)
            .batch_size(4)
            .depot_capacity(depot)
            .build()
            .unwrap();
        let guards: Vec<_> = (0..20).map(|_| pool.get()).collect();
        thread::scope(|s| s.spawn(move || drop(guards)).join().unwrap());
        let s = pool.stats();
        assert_eq!((s.idle, s.dropped), (idle, 20 - idle), "{s}");
        assert_eq!(counts.alive(), idle);
        assert_conserved(&pool, &counts, 0);
    }
}

#[test]
fn static_recycler_and_a_guard_sent_away() {
    static POOL: LazyLock<Recycler<String>> = LazyLock::new(Recycler::new);
    let mut s = POOL.get();
    s.push_str("hello");
    let len = thread::spawn(move || s.len()).join().unwrap();
    assert_eq!(len, 5);
    let stats = POOL.stats();
    assert_eq!((stats.released_remote, stats.in_use), (1, 0));
}

#[test]
fn owned_guards_released_on_many_threads() {
    let counts = Counts::new();
    let pool = Arc::new(builder(&counts).batch_size(4).build().unwrap());
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let guards: Vec<_> = (0..25).map(|_| pool.get_owned()).collect();
            thread::spawn(move || drop(guards))
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    let back: Vec<_> = (0..200).map(|_| pool.get()).collect();
    assert_eq!(counts.made(), 200);
    drop(back);
    assert_conserved(&pool, &counts, 0);
}
