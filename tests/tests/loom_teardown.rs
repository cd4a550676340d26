//! Loom models of a thread's exit order, run against the real code (built
//! with `RUSTFLAGS="--cfg loom"`; see `.ci/loom.sh`).
//!
//! A thread's exit hooks run in the order the thread first touched its
//! caches and indexes. The model races the hooks of a thread whose first
//! call on a buffer pool was `trim` (its bucket caches' hooks registered
//! before the pool's index) against another thread that claims the caches
//! it gives up, while a `Drop` run by a later hook acquires from the pool.
//! Before the exit ran in two phases (every index forgotten before any
//! cache is given up), that `Drop` reached, through the exiting thread's
//! stale index, a cache the other thread had claimed: two threads in one
//! unsynchronized cache, which loom reports as a causality violation.

#![cfg(loom)]

mod loom_support;

use std::sync::{Arc, Mutex};

use loom_support::{assert_buffers_counted, model, spawn};
use recycler_core::buffer::BufferPool;
use recycler_core::{Recyclable, Recycler};

/// A payload whose `Drop` runs a hook once.
struct OnDrop(Mutex<Option<Box<dyn FnOnce() + Send>>>);

impl Recyclable for OnDrop {
    fn reset(&mut self) {}
}

impl Drop for OnDrop {
    fn drop(&mut self) {
        if let Some(hook) = self.0.get_mut().unwrap().take() {
            hook();
        }
    }
}

#[test]
fn exit_hooks_race_a_thread_claiming_the_caches_they_give_up() {
    model(|| {
        let pool = Arc::new(
            BufferPool::builder()
                .bucket_step(16)
                .max_capacity(16)
                .max_idle_per_thread(1)
                .build()
                .unwrap(),
        );
        // No depot, one object per thread: the exit hook drops the
        // object the thread cached, and its `Drop` runs then.
        let objects: Arc<Recycler<OnDrop>> = Arc::new(
            Recycler::builder_with_factory(|| OnDrop(Mutex::new(None)))
                .max_capacity_per_thread(1)
                .depot_capacity(0)
                .build()
                .unwrap(),
        );
        let (p, o) = (Arc::clone(&pool), Arc::clone(&objects));
        let t = spawn(move || {
            p.trim(); // the bucket cache's hook first
            let obj = o.get();
            let in_drop = Arc::clone(&p);
            *obj.0.lock().unwrap() = Some(Box::new(move || drop(in_drop.acquire(16))));
            drop(obj); // its recycler's hook second
            drop(p.acquire(16)); // the index's hook last
        });
        let q = Arc::clone(&pool);
        let b = spawn(move || {
            // Claims the cache the exiting thread gives up, if it is free.
            drop(q.acquire(16));
        });
        t.join().unwrap();
        b.join().unwrap();
        let s = pool.stats();
        assert_buffers_counted(&s);
        pool.trim();
        assert_eq!(
            pool.stats().allocated_memory,
            0,
            "every idle buffer reachable"
        );
    });
}
