//! The buffer pool under concurrency: threads acquire buffers of random
//! sizes (some oversize), write them, grow some, pass some to each other and
//! release them, under an idle-memory cap and a memory limit. At checkpoints
//! every thread stops and the books must balance: every buffer allocated is
//! in use, idle, evicted or removed; the memory allocated is what the threads
//! hold plus what idles; idle memory is within its documented bound; and the
//! memory limit was never crossed.

mod common;

use std::sync::atomic::{AtomicU64, Ordering::SeqCst};
use std::sync::{Arc, Barrier};
use std::thread;

use common::{Rng, assert_buffers_counted};
use recycler_core::buffer::{BufferPool, BufferPoolStats, OwnedPooledBuf};

const THREADS: usize = 4;
const ROUNDS: usize = 4;
const OPS_PER_ROUND: usize = 1500;
const MAX_CAPACITY: usize = 64 * 1024;
const IDLE_CAP: usize = 512 * 1024;
/// Low enough that the threads reach it in every run: at 4 MiB (the
/// threads hold at most 4 × 24 buffers of 32 KiB on average, and the
/// channel 32 more) the check that the limit was reached failed in 2 to 6
/// runs of 100.
const LIMIT: usize = 2 << 20;

/// Bytes the threads hold right now (in use), kept by the test itself.
static HELD: AtomicU64 = AtomicU64::new(0);

fn take(buf: OwnedPooledBuf) -> OwnedPooledBuf {
    HELD.fetch_add(buf.capacity() as u64, SeqCst);
    buf
}

fn give(buf: OwnedPooledBuf) {
    HELD.fetch_sub(buf.capacity() as u64, SeqCst);
    drop(buf);
}

fn check(s: &BufferPoolStats, held: u64, quiet: bool) {
    assert_buffers_counted(s);
    assert_eq!(s.allocated_memory, held + s.idle_memory, "memory: {s}");
    assert!(s.allocated_memory <= LIMIT as u64, "{s}");
    let threshold = (IDLE_CAP / 8).max(2 * MAX_CAPACITY);
    let bound = (IDLE_CAP + (THREADS - 1) * (threshold + MAX_CAPACITY)) as u64;
    assert!(
        s.idle_memory <= bound,
        "idle {} above {bound}: {s}",
        s.idle_memory
    );
    if quiet {
        assert_eq!(s.idle_memory, s.accounted_idle_memory, "{s}");
    }
}

#[test]
fn books_balance_under_concurrency() {
    HELD.store(0, SeqCst);
    let pool = Arc::new(
        BufferPool::builder()
            .max_capacity(MAX_CAPACITY)
            .max_idle_memory(IDLE_CAP)
            .memory_limit(LIMIT)
            .max_idle_per_thread(16)
            .build()
            .unwrap(),
    );
    let (tx, rx) = crossbeam_channel::bounded::<OwnedPooledBuf>(32);
    let stop = Arc::new(Barrier::new(THREADS + 1));
    let go = Arc::new(Barrier::new(THREADS + 1));
    let limited = Arc::new(AtomicU64::new(0));
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            let (pool, tx, rx) = (Arc::clone(&pool), tx.clone(), rx.clone());
            let (stop, go) = (Arc::clone(&stop), Arc::clone(&go));
            let limited = Arc::clone(&limited);
            // No assertion in here: a panic would leave the others at the
            // barrier. The main thread checks everything.
            thread::spawn(move || {
                let mut rng = Rng(0x2545_F491_4F6C_DD1D ^ (t as u64 + 1) << 20);
                let mut mine: Vec<OwnedPooledBuf> = Vec::new();
                for _ in 0..ROUNDS {
                    for _ in 0..OPS_PER_ROUND {
                        let r = rng.next();
                        match r % 8 {
                            0..=3 => {
                                let size = if r.is_multiple_of(97) {
                                    MAX_CAPACITY + (r >> 20) as usize % 10_000
                                } else {
                                    (r >> 8) as usize % MAX_CAPACITY
                                };
                                match pool.try_acquire_owned(size) {
                                    Ok(buf) => {
                                        let mut buf = take(buf);
                                        // Write every byte asked for.
                                        buf.resize(size, t as u8);
                                        mine.push(buf);
                                    }
                                    // At the limit: a valid outcome; let go.
                                    Err(_) => {
                                        limited.fetch_add(1, SeqCst);
                                        mine.drain(..).for_each(give);
                                    }
                                }
                            }
                            4 if !mine.is_empty() => {
                                let i = (r >> 8) as usize % mine.len();
                                let buf = mine.swap_remove(i);
                                if let Err(back) = tx.try_send(buf) {
                                    give(back.into_inner());
                                }
                            }
                            5 if !mine.is_empty() => {
                                // Grow one past its capacity.
                                let i = (r >> 8) as usize % mine.len();
                                let buf = &mut mine[i];
                                let before = buf.capacity();
                                if before <= MAX_CAPACITY
                                    && buf.try_reserve(before - buf.len() + 1).is_ok()
                                {
                                    HELD.fetch_add((buf.capacity() - before) as u64, SeqCst);
                                }
                            }
                            _ => {
                                if let Ok(buf) = rx.try_recv() {
                                    give(buf);
                                } else if let Some(buf) = mine.pop() {
                                    give(buf);
                                }
                            }
                        }
                        if mine.len() > 24 {
                            give(mine.swap_remove(0));
                        }
                    }
                    stop.wait(); // the main thread checks the books
                    go.wait();
                }
                mine.into_iter().for_each(give);
            })
        })
        .collect();
    for _ in 0..ROUNDS {
        stop.wait();
        check(&pool.stats(), HELD.load(SeqCst), true);
        go.wait();
    }
    for h in handles {
        h.join().unwrap();
    }
    drop(tx);
    while let Ok(buf) = rx.try_recv() {
        give(buf);
    }
    assert_eq!(HELD.load(SeqCst), 0);
    let s = pool.stats();
    check(&s, 0, true);
    assert!(
        s.buckets.iter().map(|b| b.evicts).sum::<u64>() > 0,
        "the cap was hit: {s}"
    );
    assert!(s.oversize.acquires > 0, "{s}");
    assert!(
        limited.load(SeqCst) > 0,
        "the memory limit was reached: {s}"
    );
    assert_eq!(s.buckets.iter().map(|b| b.in_use).sum::<u64>(), 0, "{s}");
    // Nothing is stranded: trimming from here frees every idle buffer.
    pool.trim();
    let s = pool.stats();
    assert_eq!((s.idle_memory, s.allocated_memory), (0, 0), "{s}");
    check(&s, 0, true);
}

/// Owned buffers and `FrameBuf`s outlive every handle of their pool, on
/// several threads: they keep the pool alive (not an `Arc` each: a unit of
/// its keep-alive count, most as credits of the threads' caches), a
/// `FrameBuf` takes new buffers from it after the last handle dropped, and
/// the last of them, released on another thread, lets it go. The books
/// balance while the pool has a handle; the rest is for AddressSanitizer
/// and valgrind, which CI runs this under.
#[test]
fn owned_buffers_outlive_their_pool_across_threads() {
    use bytes::BufMut;
    use recycler_core::buffer::FrameBuf;

    const WORKERS: usize = 4;
    const ROUNDS: usize = 2_000;
    let pool = Arc::new(
        BufferPool::builder()
            .max_capacity(MAX_CAPACITY)
            .build()
            .unwrap(),
    );
    let (txs, rxs): (Vec<_>, Vec<_>) = (0..WORKERS).map(|_| crossbeam_channel::bounded(32)).unzip();
    let start = Arc::new(Barrier::new(WORKERS + 1));
    let workers: Vec<_> = rxs
        .into_iter()
        .enumerate()
        .map(
            |(i, rx): (usize, crossbeam_channel::Receiver<OwnedPooledBuf>)| {
                let pool = Arc::clone(&pool);
                let next = txs[(i + 1) % WORKERS].clone();
                let start = Arc::clone(&start);
                thread::spawn(move || {
                    let mut rng = Rng(i as u64 + 7);
                    let mut held = Vec::new();
                    let mut rx_frames = FrameBuf::with_capacity(&pool, 100);
                    start.wait();
                    for round in 0..ROUNDS {
                        let size = [100, 5000, 20_000][(rng.next() % 3) as usize];
                        let mut buf = pool.acquire_owned(size);
                        buf.put_u32(round as u32);
                        match rng.next() % 3 {
                            0 => held.push(buf),
                            1 => {
                                let _ = next.try_send(buf);
                            }
                            _ => drop(buf),
                        }
                        while let Ok(buf) = rx.try_recv() {
                            held.push(buf);
                        }
                        if held.len() > 16 {
                            held.drain(..8);
                        }
                        rx_frames.put_u32(round as u32);
                        if round % 16 == 15 {
                            drop(rx_frames.split_to(64));
                        }
                    }
                    drop(pool); // this thread's handle; its buffers live on
                    (held, rx_frames)
                })
            },
        )
        .collect();
    drop(txs);
    start.wait();
    let out: Vec<_> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let held: usize = out.iter().map(|(held, _)| held.len()).sum();
    let s = pool.stats();
    assert_buffers_counted(&s);
    let in_use: u64 = s.buckets.iter().map(|b| b.in_use).sum();
    // The held buffers, and the readers' (none if every byte was split
    // off, as after the last round here).
    assert!(in_use >= held as u64, "held {held}: {s}");
    assert!(in_use <= (held + WORKERS) as u64, "held {held}: {s}");
    drop(pool); // the last handle: only buffers and readers keep the pool
    let mut readers = Vec::new();
    let mut rest = Vec::new();
    for (held, rx_frames) in out {
        rest.extend(held);
        readers.push(rx_frames);
    }
    // The readers take new buffers after the pool's last handle dropped,
    // on other threads, of buckets made before and after.
    let writers: Vec<_> = readers
        .into_iter()
        .enumerate()
        .map(|(i, mut rx_frames)| {
            thread::spawn(move || {
                for round in 0..200 {
                    rx_frames.put_slice(&[i as u8; 300]);
                    if round % 8 == 7 {
                        let frame = rx_frames.split_to(2000);
                        assert_eq!(frame[frame.len() - 1], i as u8, "the bytes written");
                    }
                }
                rx_frames.put_slice(&[0; 40_000]); // a bucket of its own
                rx_frames
            })
        })
        .collect();
    let readers: Vec<_> = writers.into_iter().map(|w| w.join().unwrap()).collect();
    let last = rest.pop();
    drop(rest);
    drop(readers);
    thread::spawn(move || drop(last)).join().unwrap();
}
