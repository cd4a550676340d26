//! Loom models of taking a live thread's cache (`recycler-core/src/steal.rs`),
//! run against the real code (built with `RUSTFLAGS="--cfg loom"`; see
//! `.ci/loom.sh`). Loom models `membarrier` as a `SeqCst` fence on both
//! sides (the owner path's light fence and the taker's heavy one).
//!
//! Each model races a taker (`trim`, or an owner's miss taking a quiet
//! thread's pending batch) against the owner paths of a live thread: an
//! owner that wakes up mid-steal, one that exits while the taker works, and
//! a foreign release into the batch being taken. Loom reports two threads
//! in one cache at once as a causality violation; the audit checks that
//! every object is counted once.

#![cfg(loom)]

mod loom_support;

use std::sync::Arc;
use std::sync::atomic::AtomicUsize;

use loom_support::{assert_buffers_counted, audit, counted, model, spawn};
use recycler_core::Recycler;
use recycler_core::buffer::BufferPool;

fn pool(alive: &Arc<AtomicUsize>) -> Arc<Recycler<loom_support::Obj>> {
    Arc::new(
        counted(alive)
            .max_capacity_per_thread(2)
            .batch_size(2)
            .depot_capacity(2)
            .build()
            .unwrap(),
    )
}

/// The owner gets and releases (its cache open, then in use) while another
/// thread trims: the owner may be inside its owner path when the taker
/// shuts the cache, or wake up and start one mid-steal. The hot slot is
/// the owner's alone; the batch is what the trim takes.
#[test]
fn trim_takes_a_cache_whose_owner_wakes_mid_steal() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = pool(&alive);
        let p = Arc::clone(&pool);
        let owner = spawn(move || {
            // The hot slot (its owner's alone) and the batch (marked, which
            // the trim takes): a push and a pop of the batch may run while
            // the trim takes.
            let (a, b) = (p.get(), p.get());
            drop(a);
            drop(b);
            let (c, d) = (p.get(), p.get());
            drop((c, d));
        });
        pool.trim();
        owner.join().unwrap();
        audit(&pool, &alive);
    });
}

/// The owner exits (its hooks flush the cache and give it up) while
/// another thread takes the cache's contents.
#[test]
fn a_take_races_the_owners_exit() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = pool(&alive);
        let p = Arc::clone(&pool);
        let owner = spawn(move || drop(p.get()));
        pool.trim();
        owner.join().unwrap();
        audit(&pool, &alive);
    });
}

/// A thread releases two objects of another thread's cache (pending in its
/// own cache, below `batch_size`... which is 2 here, so the second sends
/// the batch) while their owner, finding nothing, takes the pending batch.
#[test]
fn an_owners_miss_takes_a_pending_batch_racing_a_foreign_release() {
    model(|| {
        let alive = Arc::new(AtomicUsize::new(0));
        let pool = Arc::new(
            counted(&alive)
                .max_capacity_per_thread(4)
                .batch_size(4)
                .depot_capacity(0)
                .build()
                .unwrap(),
        );
        let (a, b) = (pool.get_owned(), pool.get_owned());
        let releaser = spawn(move || {
            drop(a);
            drop(b);
        });
        // Finds the objects in this thread's inbox, in the releaser's
        // pending batch (taken), or nowhere yet.
        drop(pool.try_get());
        releaser.join().unwrap();
        audit(&pool, &alive);
        assert_eq!(pool.stats().created, 2);
    });
}

/// The buffer pool's owner paths (the index cell and the owner word are
/// the gates) while another thread trims the pool.
#[test]
fn buffer_trim_takes_a_cache_whose_owner_acquires() {
    model(|| {
        let pool = Arc::new(
            BufferPool::builder()
                .bucket_step(16)
                .max_capacity(16)
                .max_idle_per_thread(2)
                .build()
                .unwrap(),
        );
        let p = Arc::clone(&pool);
        let owner = spawn(move || {
            drop(p.acquire(16));
            drop(p.acquire(16));
        });
        pool.trim();
        owner.join().unwrap();
        let s = pool.stats();
        assert_buffers_counted(&s);
        assert_eq!(s.total().in_use, 0, "{s}");
    });
}
