//! Striped mode under forced preemption: more threads than CPUs getting,
//! releasing and handing objects to each other, yielding, and sent signals
//! while they run (which restart any critical section a signal lands in),
//! one thread trimming and one reading the statistics all along; then the
//! books must balance and every idle object must be reachable. For the core
//! `Recycler` and for the `BufferPool`.
//!
//! It runs in the mode the environment selects: on restartable sequences
//! where the process can run them, and on the locked stripes with
//! `RECYCLER_NO_RSEQ=1` (the CI runs this file both ways) or under
//! valgrind. Each stress runs in a child process, so that a crash or a
//! hang fails the test rather than the suite.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering::Relaxed};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::{
    Counted, Counts, Rng, assert_buffers_counted, assert_conserved, builder, drain_reachable,
    in_child_process_within,
};
use recycler_core::Recycler;
use recycler_core::buffer::BufferPool;

/// Workers: four per CPU of this machine, at least eight.
fn workers() -> usize {
    thread::available_parallelism()
        .map_or(2, usize::from)
        .max(2)
        * 4
}

/// How long each stress runs.
const RUN: Duration = Duration::from_millis(1500);

extern "C" fn on_signal(_: libc::c_int) {}

/// A no-op `SIGUSR1` handler, restarting interrupted system calls.
fn install_handler() {
    // SAFETY: a zeroed `sigaction` with a handler that does nothing
    // (async-signal-safe), an empty mask and `SA_RESTART`.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
    }
}

/// The calling thread's id, for `tgkill`.
fn gettid() -> i32 {
    // SAFETY: `gettid` has no preconditions.
    unsafe { libc::gettid() }
}

/// Runs `work(thread index, rng, inbox, outboxes)` on `workers()` threads
/// for [`RUN`], with a thread that signals them all the while, and `side`
/// (a trimmer, a reader of statistics) on another; returns the signals
/// sent. Each worker has a channel that the others hand it things on; it
/// drains it as it goes, and once more after everyone stopped.
fn stress<G: Send>(
    work: impl Fn(usize, &mut Rng, &mut Vec<G>) + Sync,
    side: impl Fn() + Sync,
) -> u64 {
    install_handler();
    let n = workers();
    let stop = AtomicBool::new(false);
    let tids: Vec<AtomicI32> = (0..n).map(|_| AtomicI32::new(0)).collect();
    let signals = AtomicU64::new(0);
    let (txs, rxs): (Vec<mpsc::Sender<G>>, Vec<mpsc::Receiver<G>>) =
        (0..n).map(|_| mpsc::channel()).unzip();
    let barrier = std::sync::Barrier::new(n);
    thread::scope(|s| {
        for (i, rx) in rxs.into_iter().enumerate() {
            let (work, stop, tids, txs, barrier) = (&work, &stop, &tids, txs.clone(), &barrier);
            s.spawn(move || {
                tids[i].store(gettid(), Relaxed);
                let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (i as u64 + 1));
                let mut held: Vec<G> = Vec::new();
                let mut ops = 0u64;
                while !stop.load(Relaxed) {
                    work(i, &mut rng, &mut held);
                    // Hand one to another worker now and then.
                    if rng.next().is_multiple_of(8)
                        && let Some(g) = held.pop()
                    {
                        let to = (rng.next() as usize) % txs.len();
                        let _ = txs[to].send(g);
                    }
                    while let Ok(g) = rx.try_recv() {
                        held.push(g);
                    }
                    if held.len() > 64 {
                        held.truncate(16);
                    }
                    ops += 1;
                    if ops.is_multiple_of(64) {
                        thread::yield_now();
                    }
                }
                drop(held);
                barrier.wait();
                drop(txs);
                while let Ok(g) = rx.try_recv() {
                    drop(g);
                }
            });
        }
        drop(txs);
        s.spawn(|| {
            while !stop.load(Relaxed) {
                side();
                thread::sleep(Duration::from_millis(2));
            }
        });
        s.spawn(|| {
            // SAFETY: `getpid` has no preconditions.
            let pid = unsafe { libc::getpid() };
            while !stop.load(Relaxed) {
                for tid in &tids {
                    let tid = tid.load(Relaxed);
                    if tid != 0 {
                        // SAFETY: `tgkill` of a thread of this process that
                        // is alive until `stop` is set and the scope joins
                        // it (a thread id is not reused before); SIGUSR1
                        // has a no-op handler.
                        unsafe { libc::syscall(libc::SYS_tgkill, pid, tid, libc::SIGUSR1) };
                        signals.fetch_add(1, Relaxed);
                    }
                }
                thread::sleep(Duration::from_micros(50));
            }
        });
        let start = Instant::now();
        while start.elapsed() < RUN {
            thread::sleep(Duration::from_millis(10));
        }
        stop.store(true, Relaxed);
    });
    signals.load(Relaxed)
}

/// What the recycler's `Debug` says its stripes run on.
fn stripes_on<T>(debug: &T) -> String
where
    T: std::fmt::Debug,
{
    let text = format!("{debug:?}");
    if text.contains("stripes_on: Some(\"rseq\")") {
        "rseq".into()
    } else {
        "locks".into()
    }
}

/// Whether `RECYCLER_NO_RSEQ` forces the fallback.
fn forced_off() -> bool {
    std::env::var_os("RECYCLER_NO_RSEQ").is_some_and(|v| !v.is_empty() && v != "0")
}

#[test]
fn striped_recycler_books_balance_under_preemption() {
    in_child_process_within(
        "striped_recycler_books_balance_under_preemption",
        Duration::from_secs(120),
        || {
            let counts = Counts::new();
            // Small caches and batches, so that spills, refills and takes
            // from other CPUs' caches (fences) happen all the time.
            let pool = builder(&counts)
                .striped(0)
                .batch_size(4)
                .max_capacity_per_thread(64)
                .build()
                .unwrap();
            let turns = AtomicU64::new(0);
            let on = stripes_on(&pool);
            if forced_off() {
                assert_eq!(on, "locks", "{pool:?}");
            }
            let signals = stress(
                |_, rng, held| match rng.next() % 4 {
                    0 | 1 => held.push(pool.get()),
                    2 => {
                        held.pop();
                    }
                    _ => {
                        if let Some(g) = pool.try_get() {
                            held.push(g);
                        }
                    }
                },
                || {
                    if turns.fetch_add(1, Relaxed).is_multiple_of(3) {
                        pool.trim();
                    } else {
                        let s = pool.stats();
                        assert!(s.in_use <= s.created, "{s}");
                    }
                },
            );
            let s = pool.stats();
            println!("on {on}: {signals} signals; {s}");
            assert!(signals > 100, "{signals}");
            assert_eq!(s.in_use, 0, "{s}");
            assert_conserved(&pool, &counts, 0);
            assert_eq!(
                drain_reachable(&pool),
                s.idle,
                "every idle object reachable"
            );
            pool.trim();
            assert_eq!(pool.stats().idle, 0);
            assert_eq!(counts.alive(), 0);
        },
    );
}

#[test]
fn striped_recycler_owned_guards_outlive_it_under_preemption() {
    in_child_process_within(
        "striped_recycler_owned_guards_outlive_it_under_preemption",
        Duration::from_secs(120),
        || {
            let counts = Counts::new();
            let pool: Arc<Recycler<Counted>> =
                Arc::new(builder(&counts).striped(0).batch_size(4).build().unwrap());
            // Guards out on other threads when the last handle goes: the
            // state lives on through their units, and their releases land
            // in the stripes until the last one lets it go.
            let mut held: Vec<_> = (0..256).map(|_| pool.get_owned()).collect();
            let releasers: Vec<_> = (0..8)
                .map(|_| {
                    let mine: Vec<_> = held.drain(..32).collect();
                    thread::spawn(move || {
                        for g in mine {
                            drop(g);
                            thread::yield_now();
                        }
                    })
                })
                .collect();
            drop(pool);
            for r in releasers {
                r.join().unwrap();
            }
            assert_eq!(counts.alive(), 0, "every object dropped with the state");
        },
    );
}

#[test]
fn striped_buffer_pool_books_balance_under_preemption() {
    in_child_process_within(
        "striped_buffer_pool_books_balance_under_preemption",
        Duration::from_secs(120),
        || {
            let pool = BufferPool::builder()
                .striped(0)
                .max_idle_per_bucket(64)
                .build()
                .unwrap();
            let sizes = [100usize, 1000, 4096, 6000, 20_000];
            let turns = AtomicU64::new(0);
            let signals = stress(
                |_, rng, held| match rng.next() % 4 {
                    0 | 1 => {
                        let size = sizes[(rng.next() as usize) % sizes.len()];
                        let mut b = pool.acquire(size);
                        b.extend_from_slice(&[1, 2, 3]);
                        held.push(b);
                    }
                    2 => {
                        held.pop();
                    }
                    _ => {
                        let size = sizes[(rng.next() as usize) % sizes.len()];
                        if let Some(b) = pool.try_acquire_pooled(size) {
                            held.push(b);
                        }
                    }
                },
                || {
                    if turns.fetch_add(1, Relaxed).is_multiple_of(2) {
                        pool.trim();
                    } else {
                        let _ = pool.stats();
                    }
                },
            );
            let s = pool.stats();
            println!("{signals} signals; {s}");
            assert!(signals > 100, "{signals}");
            assert_buffers_counted(&s);
            let idle: u64 = s.buckets.iter().map(|b| b.idle).sum();
            let in_use: u64 = s.buckets.iter().map(|b| b.in_use).sum();
            assert_eq!(in_use, 0, "{s}");
            // Every idle buffer is reachable from this thread.
            let mut reached = Vec::new();
            for b in &s.buckets {
                while let Some(buf) = pool.try_acquire_pooled(b.capacity) {
                    if buf.capacity() != b.capacity {
                        // A larger one served a smaller request: counted
                        // where it came from; stop, the books say the rest.
                        reached.push(buf);
                        break;
                    }
                    reached.push(buf);
                }
            }
            assert_eq!(reached.len() as u64, idle, "{s}");
            drop(reached);
            pool.trim();
            let s = pool.stats();
            assert_eq!(s.idle_memory, 0, "{s}");
            assert_buffers_counted(&s);
        },
    );
}
