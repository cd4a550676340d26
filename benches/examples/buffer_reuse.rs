//! "Buffers a server can lean on", measured: the three patterns of
//! `tests/tests/buffer_reuse.rs` against fresh allocations, each contender
//! in a process of its own so that its peak RSS (`VmHWM`) is its own.
//!
//! ```sh
//! cargo build --release -p recycler-benches --example buffer_reuse
//! for a in system jemalloc mimalloc; do
//!   RECYCLER_BENCHES_ALLOC=$a target/release/examples/buffer_reuse all
//! done
//! ```
//!
//! - **grow** (part 1): per round `acquire(4096)`, 20 KiB written with one
//!   `extend_from_slice`, dropped; 200 000 rounds on each of 1 and 2
//!   threads. The pool (`serve_larger` on, the default; and off, which is
//!   how the pool behaved before this option) against `BytesMut::with_capacity(4096)`
//!   and `Vec::with_capacity(4096)` grown the same way.
//! - **burst** (part 2): 8 bursts of 256 messages, one at a time, each
//!   acquired small (1000 bytes), grown to 4 MiB in 64 KiB writes, and
//!   dropped; against a fresh `Vec`/`BytesMut` per message, a
//!   `Recycler` of messages whose body is `#[recycle(shrink_to = 64 KiB)]`
//!   (shrunk on every release), one whose body is kept whole under
//!   `max_idle_bytes(8 MiB)`, and a `BufferPool` with 64 KiB steps up to
//!   4 MiB under `max_idle_memory(8 MiB)` (`serve_larger` on, and off).
//!   The idle memory left afterwards is printed.
//! - **limit** (part 3): 4 threads, each acquiring with
//!   `acquire_timeout` a buffer of the next size of 2 sizes (4 and 16
//!   KiB, limit 32 KiB) or 4 sizes (4 to 32 KiB, limit 64 KiB), writing a
//!   page into it, holding it for a few microseconds, and dropping it;
//!   20 000 acquires a thread, with `serve_larger` on and off. Prints the
//!   hit ratio, the waits, and the waits that timed out after 2 s.
//!
//! One line per contender: `name`, time, ratio to the first baseline,
//! hit ratio, peak RSS. For part 1 also the anonymous resident set
//! (`RssAnon`) once every thread has run its rounds, read by the main
//! thread while the threads wait, alive: the same moment and the same read
//! in every contender's process. The peak (`VmHWM`) counts the pages of
//! the executable and the C library too (`RssFile`), whose count differs
//! between runs of one contender by about 190 KiB (two modes, with address
//! randomization off as well), more than the contenders differ by; the
//! anonymous part is what the contender's allocations hold, and repeats to
//! within a few pages, 4–24 KiB (`docs/benchmarks-record.md`, "Buffers that
//! grow").

use std::hint::black_box;
use std::sync::Barrier;
use std::thread;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use recycler_benches::process::{peak_rss_kib, rss_kib, run_self, status_kib};
use recycler_benches::{Dispatch, check_env};
use recycler_core::buffer::BufferPool;
use recycler_core::{Recyclable, Recycler};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

const KIB: usize = 1024;
const MIB: usize = 1 << 20;

/// The anonymous part of this process's resident set now, in KiB
/// (`RssAnon`: heap, thread stacks, statics written; not the pages of the
/// executable and the libraries, `RssFile`).
fn anon_rss_kib() -> u64 {
    status_kib("RssAnon:").unwrap_or(0)
}

/// Runs `f` on `threads` threads at once; the slowest thread's time.
fn on_threads(threads: usize, f: impl Fn(usize) + Sync) -> Duration {
    on_threads_then(threads, f, || ())
}

/// [`on_threads`], running `at_end` on the calling thread once every
/// thread has run `f` and before any exits (so that what the threads hold
/// can be read; the calling thread reads it, so that nothing is allocated
/// on the threads measured).
fn on_threads_then(threads: usize, f: impl Fn(usize) + Sync, at_end: impl FnOnce()) -> Duration {
    let done = Barrier::new(threads + 1);
    let exit = Barrier::new(threads + 1);
    thread::scope(|s| {
        let (f, done, exit) = (&f, &done, &exit);
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                s.spawn(move || {
                    let start = Instant::now();
                    f(t);
                    let elapsed = start.elapsed();
                    done.wait();
                    exit.wait();
                    elapsed
                })
            })
            .collect();
        done.wait();
        at_end();
        exit.wait();
        handles
            .into_iter()
            .map(|h| h.join().unwrap())
            .max()
            .unwrap()
    })
}

const GROW_ROUNDS: usize = 200_000;

/// What [`grow`] measures besides the peak: the resident set once the
/// pool is built (its own structures), and its anonymous part then and
/// once every thread has run its rounds (the threads alive, the pool's
/// buffers idle in their caches), in KiB.
struct GrowRss {
    built: u64,
    built_anon: u64,
    end_anon: u64,
}

/// Part 1 with `contender` on `threads` threads: the slowest thread's
/// time, the hit ratio, and the resident sets of [`GrowRss`].
fn grow(contender: &str, threads: usize) -> (Duration, f64, GrowRss) {
    let body = vec![7u8; 20 * KIB];
    let pool = match contender {
        "pool" => Some(BufferPool::new()),
        "pool_serve_larger_off" => Some(BufferPool::builder().serve_larger(false).build().unwrap()),
        _ => None,
    };
    let built_anon = anon_rss_kib();
    let built = rss_kib();
    let mut end_anon = 0;
    let rounds = |_: usize| match (&pool, contender) {
        (Some(pool), _) => {
            for _ in 0..GROW_ROUNDS {
                let mut buf = pool.acquire(4096);
                buf.extend_from_slice(&body);
                black_box(&buf[..]);
            }
        }
        (None, "bytesmut") => {
            for _ in 0..GROW_ROUNDS {
                let mut buf = BytesMut::with_capacity(4096);
                buf.extend_from_slice(&body);
                black_box(&buf[..]);
            }
        }
        _ => {
            for _ in 0..GROW_ROUNDS {
                let mut buf: Vec<u8> = Vec::with_capacity(4096);
                buf.extend_from_slice(&body);
                black_box(&buf[..]);
            }
        }
    };
    let elapsed = on_threads_then(threads, rounds, || end_anon = anon_rss_kib());
    let ratio = pool.map_or(f64::NAN, |p| {
        let t = p.stats().total();
        t.pooled as f64 / t.acquires as f64
    });
    let rss = GrowRss {
        built,
        built_anon,
        end_anon,
    };
    (elapsed, ratio, rss)
}

/// A message whose body is shrunk on every release.
#[derive(Default, Recyclable)]
struct ShrunkMsg {
    #[recycle(shrink_to = 65536)]
    body: Vec<u8>,
}

/// A message whose body is kept whole.
#[derive(Default, Recyclable)]
struct WholeMsg {
    body: Vec<u8>,
}

/// A message of either kind: its body.
trait Body {
    fn body(&mut self) -> &mut Vec<u8>;
}

impl Body for ShrunkMsg {
    fn body(&mut self) -> &mut Vec<u8> {
        &mut self.body
    }
}

impl Body for WholeMsg {
    fn body(&mut self) -> &mut Vec<u8> {
        &mut self.body
    }
}

/// Part 2 with messages from `r`: each taken, its body grown to 4 MiB in
/// `chunk`s, dropped. The hit ratio and the idle objects afterwards.
fn burst_recycled<M: Recyclable + Body + Send + 'static>(
    r: Recycler<M>,
    chunk: &[u8],
) -> (f64, u64) {
    for _ in 0..BURSTS * BURST {
        let mut m = r.get();
        let body = m.body();
        body.reserve(1000);
        while body.len() < 4 * MIB {
            body.extend_from_slice(chunk);
        }
        black_box(&body[..]);
    }
    let s = r.stats();
    (s.hits as f64 / s.gets as f64, s.idle)
}

const BURSTS: usize = 8;
const BURST: usize = 256;

/// Grows `buf` to 4 MiB, 64 KiB at a time, through `extend`.
#[inline]
fn fill_4mib(len: impl Fn() -> usize, mut extend: impl FnMut(&[u8]), chunk: &[u8]) {
    while len() < 4 * MIB {
        extend(chunk);
    }
}

fn burst(contender: &str) -> (Duration, f64, u64) {
    let chunk = vec![3u8; 64 * KIB];
    let mut ratio = f64::NAN;
    let mut idle_after = 0;
    let start = Instant::now();
    match contender {
        "vec" => {
            for _ in 0..BURSTS * BURST {
                let mut v: Vec<u8> = Vec::with_capacity(1000);
                while v.len() < 4 * MIB {
                    v.extend_from_slice(&chunk);
                }
                black_box(&v[..]);
            }
        }
        "bytesmut" => {
            for _ in 0..BURSTS * BURST {
                let mut v = BytesMut::with_capacity(1000);
                while v.len() < 4 * MIB {
                    v.extend_from_slice(&chunk);
                }
                black_box(&v[..]);
            }
        }
        "recycler_shrink_to" => {
            (ratio, idle_after) = burst_recycled(Recycler::<ShrunkMsg>::new(), &chunk)
        }
        "recycler_max_idle_bytes" => {
            let r = Recycler::<WholeMsg>::builder()
                .max_idle_bytes(8 * MIB)
                .build()
                .unwrap();
            (ratio, idle_after) = burst_recycled(r, &chunk);
        }
        _ => {
            let pool = BufferPool::builder()
                .bucket_step(64 * KIB)
                .max_capacity(4 * MIB)
                .max_idle_memory(8 * MIB)
                .serve_larger(contender != "pool_serve_larger_off")
                .build()
                .unwrap();
            for _ in 0..BURSTS * BURST {
                let mut buf = pool.acquire(1000);
                let len = std::cell::Cell::new(0);
                fill_4mib(
                    || len.get(),
                    |c| {
                        buf.extend_from_slice(c);
                        len.set(buf.len());
                    },
                    &chunk,
                );
                black_box(&buf[..]);
            }
            let s = pool.stats();
            let t = s.total();
            ratio = t.pooled as f64 / t.acquires as f64;
            idle_after = s.idle_memory;
        }
    }
    (start.elapsed(), ratio, idle_after)
}

const LIMIT_ROUNDS: usize = 20_000;

fn limit(sizes: &[usize], limit: usize, serve_larger: bool) -> (Duration, f64, u64, u64) {
    let pool = BufferPool::builder()
        .memory_limit(limit)
        .serve_larger(serve_larger)
        .build()
        .unwrap();
    let elapsed = on_threads(4, |t| {
        let mut i = t;
        for _ in 0..LIMIT_ROUNDS {
            i += 1;
            let size = sizes[i % sizes.len()];
            // A wait that times out (all threads waiting while idle memory
            // sits in their own caches: see `docs/buffers.md`, "Memory idle
            // in another thread's cache is not free") is counted, not fatal.
            let Ok(mut buf) = pool.acquire_timeout(size, Duration::from_secs(2)) else {
                continue;
            };
            buf.resize(4096, 1);
            let until = Instant::now() + Duration::from_micros(5);
            while Instant::now() < until {
                std::hint::spin_loop();
            }
            black_box(&buf[..]);
        }
    });
    let s = pool.stats();
    if std::env::var_os("BUFFER_REUSE_DUMP").is_some() {
        eprintln!("{s}");
    }
    let t = s.total();
    (
        elapsed,
        t.pooled as f64 / t.acquires as f64,
        t.waits,
        t.timeouts,
    )
}

fn main() {
    if let Err(err) = check_env() {
        eprintln!("{err}");
        std::process::exit(2);
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    match args.as_slice() {
        ["grow", contender, threads] => {
            let before = rss_kib();
            let (t, ratio, rss) = grow(contender, threads.parse().unwrap());
            let peak = peak_rss_kib();
            println!(
                "{:.1} {:.6} {} {} {} {} {}",
                t.as_nanos() as f64 / GROW_ROUNDS as f64,
                ratio,
                peak,
                peak - before,
                peak - rss.built,
                rss.end_anon,
                rss.end_anon.saturating_sub(rss.built_anon)
            );
        }
        ["burst", contender] => {
            let before = rss_kib();
            let (t, ratio, idle) = burst(contender);
            println!(
                "{:.0} {:.4} {} {} {}",
                t.as_nanos() as f64 / (BURSTS * BURST) as f64,
                ratio,
                peak_rss_kib(),
                peak_rss_kib() - before,
                idle
            );
        }
        ["limit", n, larger] => {
            let larger = *larger == "on";
            let (t, ratio, waits, timeouts) = if *n == "2" {
                limit(&[4 * KIB, 16 * KIB], 32 * KIB, larger)
            } else {
                limit(&[4 * KIB, 8 * KIB, 16 * KIB, 32 * KIB], 64 * KIB, larger)
            };
            println!(
                "{:.0} {:.4} {} {}",
                t.as_nanos() as f64 / LIMIT_ROUNDS as f64,
                ratio,
                waits,
                timeouts
            );
        }
        [what] => {
            let alloc = std::env::var("RECYCLER_BENCHES_ALLOC").unwrap_or_default();
            println!(
                "allocator: {}",
                if alloc.is_empty() { "jemalloc" } else { &alloc }
            );
            if matches!(*what, "all" | "grow") {
                for threads in ["1", "2"] {
                    println!(
                        "grow, {threads} thread(s): ns/round, hit ratio, peak RSS, over the start, over the pool built, \
                         anonymous RSS after the rounds, over the pool built (KiB)"
                    );
                    let mut base = None;
                    for c in ["bytesmut", "vec", "pool", "pool_serve_larger_off"] {
                        let line = run_self(&["grow", c, threads]);
                        let ns: f64 = line.split(' ').next().unwrap().parse().unwrap();
                        let base = *base.get_or_insert(ns);
                        println!("  {c:24} {line}  ({:.2}x bytesmut)", ns / base);
                    }
                }
            }
            if matches!(*what, "all" | "burst") {
                println!(
                    "burst: ns/message, hit ratio, peak RSS KiB, over the start KiB, idle after (bytes; recycler: objects)"
                );
                let mut base = None;
                for c in [
                    "vec",
                    "bytesmut",
                    "recycler_shrink_to",
                    "recycler_max_idle_bytes",
                    "pool_max_idle_memory",
                    "pool_serve_larger_off",
                ] {
                    let line = run_self(&["burst", c]);
                    let ns: f64 = line.split(' ').next().unwrap().parse().unwrap();
                    let base = *base.get_or_insert(ns);
                    println!("  {c:24} {line}  ({:.2}x vec)", ns / base);
                }
            }
            if matches!(*what, "all" | "limit") {
                println!("limit, 4 threads: ns/acquire, hit ratio, waits, timeouts (2 s)");
                for n in ["2", "4"] {
                    for larger in ["on", "off"] {
                        let line = run_self(&["limit", n, larger]);
                        println!("  {n} sizes, serve_larger {larger:3}  {line}");
                    }
                }
            }
        }
        _ => {
            eprintln!("usage: buffer_reuse all|grow|burst|limit");
            std::process::exit(2);
        }
    }
}
