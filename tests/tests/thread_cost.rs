//! What a thread that touched a recycler costs: 1,000 threads each do one
//! get and one release and stay alive, and a counting global allocator
//! reports the heap bytes they hold beyond what 1,000 bare threads hold
//! (thread stacks are mapped, not allocated, and are the same either way).
//! Also what a buffer pool holds once built, before any thread uses it.

#![cfg(not(feature = "track"))]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;

use recycler_core::Recycler;
use recycler_core::buffer::BufferPool;

/// The system allocator, counting the bytes live on the heap.
struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);

// SAFETY: forwards every call to the system allocator unchanged; counting
// touches only a static atomic.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, SeqCst);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, SeqCst);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, SeqCst);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const THREADS: usize = 1000;

/// The heap bytes `THREADS` live threads hold once each has run `work`
/// (the threads wait, alive, while the bytes are read).
fn held_by_threads(work: impl Fn() + Send + Sync + 'static) -> i64 {
    let work = Arc::new(work);
    let done = Arc::new(Barrier::new(THREADS + 1));
    let exit = Arc::new(Barrier::new(THREADS + 1));
    let before = LIVE.load(SeqCst);
    let threads: Vec<_> = (0..THREADS)
        .map(|_| {
            let (work, done, exit) = (Arc::clone(&work), Arc::clone(&done), Arc::clone(&exit));
            thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || {
                    work();
                    done.wait();
                    exit.wait();
                })
                .unwrap()
        })
        .collect();
    done.wait();
    let held = LIVE.load(SeqCst) - before;
    exit.wait();
    for t in threads {
        t.join().unwrap();
    }
    held
}

/// Heap bytes per thread that running `work` costs, beyond a bare thread.
/// (Resident memory is no measure here: glibc gives threads arenas of their
/// own, and reuses the stacks of threads that exited, so the process's RSS
/// moves by more than the recycler allocates, in both directions.)
fn cost_per_thread(work: impl Fn() + Send + Sync + 'static) -> i64 {
    let bare = held_by_threads(|| {});
    let used = held_by_threads(work);
    (used - bare) / THREADS as i64
}

/// The heap bytes a value made by `make` holds.
fn held_by<T>(make: impl FnOnce() -> T) -> (T, i64) {
    let before = LIVE.load(SeqCst);
    let value = make();
    (value, LIVE.load(SeqCst) - before)
}

/// The median of five runs of `measure`.
fn median_of_5(mut measure: impl FnMut() -> i64) -> i64 {
    let mut runs: Vec<i64> = (0..5).map(|_| measure()).collect();
    runs.sort_unstable();
    runs[2]
}

/// One test, so that nothing else allocates while it counts: the global
/// count is the whole process's.
#[test]
fn a_thread_that_touched_a_pool_costs_at_most_2_kib() {
    // A pool's buckets are made when first used: built, a default pool (16
    // buckets) holds its shared state (1,152 bytes), 64 bytes per bucket and
    // the memory ledger (120), where each bucket's recycler (1,792 bytes)
    // made up front came to 31 KiB; one of 64 KiB steps up to 4 MiB (64
    // buckets), 5.3 KiB instead of 117.
    // Medians of five pools: the count is the whole process's, and the test
    // harness's own thread may allocate or free during a window (once, in
    // CI: 900 bytes more).
    let heap = median_of_5(|| held_by(BufferPool::new).1);
    println!("buffer pool, built: {heap} heap bytes");
    assert!(heap <= 4096, "{heap} bytes");
    let made = median_of_5(|| {
        let pool = BufferPool::new();
        held_by(|| drop(pool.acquire(1000))).1
    });
    // This thread's first acquire: the bucket's recycler, the thread's index
    // and cache, and the buffer (4 KiB).
    println!("buffer pool, first acquire: {made} heap bytes");
    assert!(
        (4096 + 1792..=4096 + 1792 + 2048).contains(&made),
        "{made} bytes"
    );
    let (_, heap) = held_by(|| {
        BufferPool::builder()
            .bucket_step(64 << 10)
            .max_capacity(4 << 20)
            .build()
            .unwrap()
    });
    println!("buffer pool of 64 buckets, built: {heap} heap bytes");
    assert!(heap <= 8192, "{heap} bytes");

    let pool: Arc<Recycler<[u64; 8]>> = Arc::new(Recycler::new());
    let p = Arc::clone(&pool);
    let heap = cost_per_thread(move || drop(p.get()));
    // The cache (640 bytes: three 128-byte-aligned groups of lines and the
    // slot list's link), the exit-hook list (128) and the object (64).
    println!("recycler: {heap} heap bytes per thread");
    assert!(heap <= 2048, "{heap} bytes per thread");

    let buffers = Arc::new(BufferPool::new());
    let b = Arc::clone(&buffers);
    let heap = cost_per_thread(move || drop(b.acquire(1000)));
    // Not counting the buffer itself (4 KiB, pooled in the thread's cache).
    let heap = heap - 4096;
    println!("buffer pool: {heap} heap bytes per thread beyond its buffer");
    assert!(heap <= 2048, "{heap} bytes per thread");
}
