//! `RecyclerBuilder::max_idle_bytes`: the idle-memory accounting of the
//! buffer pool, serving any `Recycler<T>` through
//! `Recyclable::retained_bytes`.

mod common;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::Ordering::SeqCst;
use std::thread;

use common::{Counts, assert_conserved, builder};
use recycler_core::{Recyclable, Recycler};

/// A message whose payload may have grown large.
#[derive(Default, Recyclable)]
struct Message {
    topic: String,
    payload: Vec<u8>,
}

/// Takes every idle object reachable from this thread and sums what they
/// retain (the objects are dropped back afterwards).
fn drain_bytes<T: Recyclable + Send + 'static>(pool: &Recycler<T>) -> (usize, u64) {
    let mut held = Vec::new();
    while let Some(obj) = pool.try_get() {
        held.push(obj);
    }
    let bytes = held.iter().map(|o| o.retained_bytes() as u64).sum();
    (held.len(), bytes)
}

#[test]
fn large_messages_are_capped_in_bytes_not_only_in_count() {
    let pool = Recycler::<Message>::builder()
        .max_idle_bytes(64 * 1024)
        .build()
        .unwrap();
    let mut msgs: Vec<_> = (0..10).map(|_| pool.get()).collect();
    for (i, m) in msgs.iter_mut().enumerate() {
        m.topic.push_str("orders");
        // Two of them grew to 1 MiB; the others stay small.
        let size = if i % 5 == 0 { 1 << 20 } else { 1000 };
        m.payload.reserve_exact(size);
    }
    drop(msgs);
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped), (8, 2), "the two large ones: {s}");
    assert!(s.idle_bytes <= 64 * 1024, "{s}");
    assert_eq!(drain_bytes(&pool), (8, s.idle_bytes), "counted exactly");
}

#[test]
fn taking_an_object_uncounts_it() {
    let pool = Recycler::builder_with_factory(|| Vec::<u8>::with_capacity(1000))
        .max_idle_bytes(10_000)
        .build()
        .unwrap();
    let objs: Vec<_> = (0..5).map(|_| pool.get()).collect();
    drop(objs);
    assert_eq!(pool.stats().idle_bytes, 5000);
    let a = pool.get();
    let b = pool.get();
    assert_eq!(pool.stats().idle_bytes, 3000);
    assert_eq!(pool.stats().hits, 2);
    drop((a, b));
    assert_eq!(pool.stats().idle_bytes, 5000);
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.idle, s.idle_bytes), (0, 0), "{s}");
}

#[test]
fn objects_are_still_reused_through_the_cache() {
    let pool = Recycler::<Vec<u64>>::builder()
        .max_idle_bytes(1 << 20)
        .build()
        .unwrap();
    let mut v = pool.get();
    v.reserve(100);
    let ptr = v.as_ptr();
    drop(v);
    let v = pool.get();
    assert_eq!(v.as_ptr(), ptr);
    assert_eq!(pool.stats().idle_bytes, 0, "in use again");
}

#[test]
fn without_a_cap_nothing_is_counted() {
    let pool: Recycler<Vec<u8>> = Recycler::new();
    let mut v = pool.get();
    v.reserve(1000);
    drop(v);
    let s = pool.stats();
    assert_eq!((s.idle, s.idle_bytes, s.evicted), (1, 0, 0));
    assert!(!s.to_string().contains("idle bytes"), "{s}");
}

#[test]
fn foreign_releases_and_thread_exits_are_counted() {
    let pool = Arc::new(
        Recycler::builder_with_factory(|| Vec::<u8>::with_capacity(100))
            .max_idle_bytes(1 << 20)
            .batch_size(4)
            .build()
            .unwrap(),
    );
    let objs: Vec<_> = (0..30).map(|_| pool.get_owned()).collect();
    let p = Arc::clone(&pool);
    thread::spawn(move || {
        drop(objs); // released here, sent home
        let own: Vec<_> = (0..7).map(|_| p.get_owned()).collect();
        drop(own); // this thread's cache, flushed to the depot at exit
    })
    .join()
    .unwrap();
    let s = pool.stats();
    assert_eq!(s.idle, 37, "{s}");
    assert_eq!(s.idle_bytes, 3700, "{s}");
    assert_eq!(drain_bytes(&pool), (37, 3700));
}

#[test]
fn a_panicking_reset_under_a_cap_leaves_the_books_straight() {
    let counts = Counts::new();
    let pool = builder(&counts).max_idle_bytes(1 << 20).build().unwrap();
    let mut a = pool.get();
    a.data.reserve(10);
    let b = pool.get();
    counts.reset_panics.store(true, SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| drop(a)));
    assert!(result.is_err());
    counts.reset_panics.store(false, SeqCst);
    drop(b);
    let s = pool.stats();
    assert_eq!((s.idle, s.dropped), (1, 1), "{s}");
    assert_eq!(
        s.idle_bytes,
        4 * 8,
        "only `b` (capacity 4 of u64) is idle: {s}"
    );
    assert_conserved(&pool, &counts, 0);
}

/// Several threads get, grow, pass on and release objects; at the end the
/// count is exact and within the documented bound.
#[test]
fn many_threads_stay_within_the_bound() {
    const THREADS: usize = 4;
    const CAP: usize = 256 * 1024;
    const BIGGEST: usize = 8 * 8192; // retained bytes of the largest object
    let counts = Counts::new();
    let pool = Arc::new(builder(&counts).max_idle_bytes(CAP).build().unwrap());
    let (tx, rx) = crossbeam_channel::bounded(64);
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (pool, tx, rx) = (Arc::clone(&pool), tx.clone(), rx.clone());
            thread::spawn(move || {
                let mut rng = 0x9E37_79B9_7F4A_7C15u64 ^ (t as u64 + 1);
                let mut held = Vec::new();
                for _ in 0..3000 {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    let mut obj = pool.get_owned();
                    obj.data.reserve((rng % 8192) as usize);
                    held.push(obj);
                    if held.len() > 16 {
                        let obj = held.swap_remove((rng >> 20) as usize % held.len());
                        if rng.is_multiple_of(4) {
                            let _ = tx.try_send(obj); // released by whoever takes it
                        }
                    }
                    if let Ok(other) = rx.try_recv() {
                        drop(other);
                    }
                }
            })
        })
        .collect();
    drop((tx, rx.clone()));
    for h in handles {
        h.join().unwrap();
    }
    while let Ok(left) = rx.try_recv() {
        drop(left);
    }
    let s = pool.stats();
    let threshold = (CAP / 8).max(1);
    let bound = (CAP + (THREADS - 1) * (threshold + BIGGEST)) as u64;
    assert!(s.idle_bytes <= bound, "{} > {bound}: {s}", s.idle_bytes);
    assert!(s.dropped > 0, "the cap was reached: {s}");
    assert_conserved(&pool, &counts, 0);
    assert_eq!(drain_bytes(&pool), (s.idle as usize, s.idle_bytes), "exact");
}

/// A `retained_bytes` that panics as a guard is released under a cap: the
/// panic reaches the code that dropped the guard, and the object, dropped
/// by the unwinding, is counted as released and dropped (it used to stay
/// "in use" forever).
#[test]
fn a_panicking_retained_bytes_on_release_counts_the_object_dropped() {
    let counts = Counts::new();
    let pool = builder(&counts).max_idle_bytes(1 << 20).build().unwrap();
    let a = pool.get();
    let b = pool.get();
    counts.retained_panics.store(true, SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| drop(a)));
    counts.retained_panics.store(false, SeqCst);
    assert!(result.is_err(), "the panic reaches the caller");
    assert_eq!(counts.destroyed(), 1);
    let s = pool.stats();
    assert_eq!((s.in_use, s.idle, s.dropped), (1, 0, 1), "{s}");
    drop(b);
    let s = pool.stats();
    assert_eq!(
        (s.in_use, s.idle, s.dropped, s.idle_bytes),
        (0, 1, 1, 32),
        "{s}"
    );
    assert_conserved(&pool, &counts, 0);
}

/// A `retained_bytes` that panics as an idle object is taken under a cap:
/// the panic reaches the caller of `get`, and the object, dropped by the
/// unwinding, is counted as dropped, not as handed out (the hit used to be
/// counted before the measure, so the object stayed "in use" forever).
#[test]
fn a_panicking_retained_bytes_on_get_counts_the_object_dropped() {
    let counts = Counts::new();
    let pool = builder(&counts).max_idle_bytes(1 << 20).build().unwrap();
    drop(pool.get());
    assert_eq!(pool.stats().idle, 1);
    counts.retained_panics.store(true, SeqCst);
    let result = catch_unwind(AssertUnwindSafe(|| drop(pool.get())));
    counts.retained_panics.store(false, SeqCst);
    assert!(result.is_err(), "the panic reaches the caller");
    assert_eq!(counts.destroyed(), 1);
    let s = pool.stats();
    assert_eq!((s.in_use, s.idle, s.dropped), (0, 0, 1), "{s}");
    assert_conserved(&pool, &counts, 0);
    // Usable afterwards.
    drop(pool.get());
    let s = pool.stats();
    assert_eq!((s.in_use, s.idle, s.created), (0, 1, 2), "{s}");
    assert_conserved(&pool, &counts, 0);
}

/// The pipeline of the guide's "Memory: the one setting to know", in
/// lock-step rounds so that it does not depend on timing: a producer fills
/// 256 messages a round and sends them to a consumer, which holds them to
/// the round's end and drops them (foreign releases) before the next. One round in eight is a burst
/// of 64 KiB payloads, the others 512 bytes. With the defaults every
/// message in circulation keeps a burst's capacity for ever; under
/// `max_idle_bytes` what the idle ones keep stays within the cap's bound.
#[test]
fn a_pipeline_keeps_its_bursts_large_unless_capped() {
    const WINDOW: usize = 256;
    const LARGE: usize = 64 * 1024;
    const CAP: usize = 1 << 20;
    fn run(pool: Arc<Recycler<Message>>) -> (usize, u64) {
        let (tx, rx) = crossbeam_channel::bounded::<Option<_>>(WINDOW + 1);
        let (ack_tx, ack_rx) = crossbeam_channel::bounded::<()>(1);
        let consumer = thread::spawn(move || {
            // Holds a round's messages until its end: the round's 256 are
            // then 256 objects, none reused within the round.
            let mut round = Vec::with_capacity(WINDOW);
            while let Ok(msg) = rx.recv() {
                match msg {
                    Some(m) => round.push(m),
                    None => {
                        round.clear();
                        ack_tx.send(()).unwrap();
                    }
                }
            }
        });
        let body = vec![7u8; LARGE];
        for round in 0..32 {
            let len = if round % 8 == 3 { LARGE } else { 512 };
            for _ in 0..WINDOW {
                let mut m = pool.get_owned();
                m.topic.push_str("orders");
                m.payload.extend_from_slice(&body[..len]);
                tx.send(Some(m)).unwrap();
            }
            tx.send(None).unwrap();
            ack_rx.recv().unwrap();
        }
        drop(tx);
        consumer.join().unwrap();
        drain_bytes(&pool)
    }
    let defaults = Arc::new(Recycler::new());
    let (n, kept) = run(Arc::clone(&defaults));
    assert!(
        kept >= (WINDOW * LARGE) as u64,
        "the defaults keep every burst's message whole: {kept} bytes in {n}: {}",
        defaults.stats()
    );
    let capped = Arc::new(
        Recycler::<Message>::builder()
            .max_idle_bytes(CAP)
            .build()
            .unwrap(),
    );
    let (_, kept) = run(Arc::clone(&capped));
    // The bound of `idle.rs` with two releasing threads (the consumer, and
    // the producer, whose batches come home): cap + threshold + one object.
    let bound = (CAP + CAP / 8 + LARGE + 64) as u64;
    assert!(kept <= bound, "{kept} > {bound}: {}", capped.stats());
    assert!(capped.stats().dropped > 0, "{}", capped.stats());
}
