//! The memory of a two-thread pipeline whose messages are sometimes large:
//! what the defaults keep, and the one setting that bounds it.
//!
//! ```sh
//! cargo build --release -p recycler-benches --example pipeline_memory
//! for a in system jemalloc mimalloc; do
//!   RECYCLER_BENCHES_ALLOC=$a target/release/examples/pipeline_memory
//! done
//! ```
//!
//! A producer thread fills messages (a `Vec<u8>` body) and sends them
//! through a bounded queue (`crossbeam-channel`, 1024 slots) to a consumer
//! thread, which reads each body and drops the message. 200,000 messages,
//! 512 bytes each but for four bursts of 2,000 messages of 256 KiB (the
//! bursts start at 20 %, 40 %, 60 % and 80 % of the run). Each contender
//! runs in a process of its own, so that its peak RSS (`VmHWM`) is its own:
//!
//! - `fresh`: a `Box` of a message whose body is made with
//!   `Vec::with_capacity(len)` for each message, freed on the consumer;
//! - `defaults`: `Recycler::new()` of the same message, `get_owned`;
//! - `max_idle_bytes`: the same with `max_idle_bytes(8 MiB)`, and
//!   `max_idle_bytes_1m` with `max_idle_bytes(1 MiB)`;
//! - `shrink_to`: a message whose body is `#[recycle(shrink_to = 4096)]`,
//!   defaults otherwise;
//! - `buffer_pool`: `BufferPool::new()` (buckets up to 64 KiB), the body an
//!   `OwnedPooledBuf` acquired at 512 bytes and grown by one write.
//!
//! One line per contender: time per message (ns), peak RSS and its rise
//! over the start (KiB), the resident set once the run is over with the
//! pool still alive (KiB), the idle objects and the hit ratio.

use std::hint::black_box;
use std::sync::Arc;
use std::thread;
use std::time::Instant;

use recycler_benches::process::{peak_rss_kib, rss_kib, run_self};
use recycler_benches::{Dispatch, check_env};
use recycler_core::buffer::BufferPool;
use recycler_core::{Recyclable, Recycler};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

const KIB: usize = 1024;
const MESSAGES: usize = 200_000;
const SMALL: usize = 512;
const LARGE: usize = 256 * KIB;
const BURST: usize = 2_000;
const QUEUE: usize = 1024;

/// The body length of message `i`: [`LARGE`] in the four bursts, else
/// [`SMALL`].
fn len_of(i: usize) -> usize {
    let in_burst = (1..=4).any(|k| {
        let start = k * MESSAGES / 5;
        (start..start + BURST).contains(&i)
    });
    if in_burst { LARGE } else { SMALL }
}

/// A message kept whole by the pool.
#[derive(Default, Recyclable)]
struct Msg {
    seq: u64,
    body: Vec<u8>,
}

/// A message whose body is shrunk to 4 KiB on release.
#[derive(Default, Recyclable)]
struct ShrunkMsg {
    seq: u64,
    #[recycle(shrink_to = 4096)]
    body: Vec<u8>,
}

/// Runs the pipeline: `make(i, bytes)` on the producer builds message `i`
/// with the body `bytes`; `read` on the consumer reads it and drops it.
/// Returns the consumer's checksum.
fn pipeline<M: Send>(
    make: impl Fn(usize, &[u8]) -> M + Send,
    read: impl Fn(&M) -> u64 + Send,
) -> u64 {
    let src = vec![5u8; LARGE];
    let (tx, rx) = crossbeam_channel::bounded::<M>(QUEUE);
    thread::scope(|s| {
        s.spawn(move || {
            for i in 0..MESSAGES {
                tx.send(make(i, &src[..len_of(i)])).unwrap();
            }
        });
        s.spawn(move || rx.iter().map(|m| read(&m)).fold(0u64, u64::wrapping_add))
            .join()
            .unwrap()
    })
}

/// Reads a body: its length and a few of its bytes.
fn sum(seq: u64, body: &[u8]) -> u64 {
    seq ^ body.len() as u64 ^ u64::from(body[0]) ^ u64::from(body[body.len() - 1])
}

/// A message of either kind: its sequence number and its body.
trait Parts {
    fn parts(&mut self) -> (&mut u64, &mut Vec<u8>);
    fn view(&self) -> (u64, &[u8]);
}

impl Parts for Msg {
    fn parts(&mut self) -> (&mut u64, &mut Vec<u8>) {
        (&mut self.seq, &mut self.body)
    }
    fn view(&self) -> (u64, &[u8]) {
        (self.seq, &self.body)
    }
}

impl Parts for ShrunkMsg {
    fn parts(&mut self) -> (&mut u64, &mut Vec<u8>) {
        (&mut self.seq, &mut self.body)
    }
    fn view(&self) -> (u64, &[u8]) {
        (self.seq, &self.body)
    }
}

/// The pipeline with messages from `pool`: the checksum, the idle objects
/// at the end, the hit ratio, and the resident set at the end (KiB).
fn recycled<M: Recyclable + Parts + Send + Sync + 'static>(
    pool: Recycler<M>,
) -> (u64, u64, f64, u64) {
    let pool = Arc::new(pool);
    let c = pipeline(
        |i, bytes| {
            let mut m = pool.get_owned();
            let (seq, body) = m.parts();
            *seq = i as u64;
            body.extend_from_slice(bytes);
            m
        },
        |m| {
            let (seq, body) = m.view();
            sum(seq, body)
        },
    );
    let s = pool.stats();
    (c, s.idle, s.hits as f64 / s.gets as f64, rss_kib())
}

/// One contender; prints its line.
fn run(contender: &str) {
    let before = rss_kib();
    let start = Instant::now();
    let (checksum, idle, hits, after) = match contender {
        "fresh" => {
            let c = pipeline(
                |i, bytes| {
                    let mut body = Vec::with_capacity(bytes.len());
                    body.extend_from_slice(bytes);
                    Box::new(Msg {
                        seq: i as u64,
                        body,
                    })
                },
                |m| sum(m.seq, &m.body),
            );
            (c, 0, f64::NAN, rss_kib())
        }
        "defaults" => recycled(Recycler::<Msg>::new()),
        "max_idle_bytes" => recycled(
            Recycler::<Msg>::builder()
                .max_idle_bytes(8 << 20)
                .build()
                .unwrap(),
        ),
        "max_idle_bytes_1m" => recycled(
            Recycler::<Msg>::builder()
                .max_idle_bytes(1 << 20)
                .build()
                .unwrap(),
        ),
        "shrink_to" => recycled(Recycler::<ShrunkMsg>::new()),
        "buffer_pool" => {
            let pool = Arc::new(BufferPool::new());
            let c = pipeline(
                |i, bytes| {
                    let mut b = pool.acquire_owned(SMALL);
                    b.extend_from_slice(bytes);
                    (i as u64, b)
                },
                |(seq, b)| sum(*seq, b),
            );
            let s = pool.stats();
            let t = s.total();
            let hits = t.pooled as f64 / t.acquires as f64;
            (c, t.idle, hits, rss_kib())
        }
        other => panic!("unknown contender {other}"),
    };
    let elapsed = start.elapsed();
    black_box(checksum);
    let peak = peak_rss_kib();
    println!(
        "{:7.0} {:8} {:8} {:8} {:6} {:.4}",
        elapsed.as_nanos() as f64 / MESSAGES as f64,
        peak,
        peak.saturating_sub(before),
        after,
        idle,
        hits
    );
}

fn main() {
    if let Err(err) = check_env() {
        eprintln!("{err}");
        std::process::exit(2);
    }
    match std::env::args().nth(1) {
        Some(contender) => run(&contender),
        None => {
            let alloc = std::env::var("RECYCLER_BENCHES_ALLOC").unwrap_or_default();
            println!(
                "allocator: {}",
                if alloc.is_empty() { "jemalloc" } else { &alloc }
            );
            println!(
                "{:15} {:>7} {:>8} {:>8} {:>8} {:>6} {:>6}",
                "contender", "ns/msg", "peak KiB", "rise", "after", "idle", "hits"
            );
            let mut base = None;
            for c in [
                "fresh",
                "defaults",
                "max_idle_bytes",
                "max_idle_bytes_1m",
                "shrink_to",
                "buffer_pool",
            ] {
                let line = run_self(&[c]);
                let rise: f64 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
                let base = *base.get_or_insert(rise);
                println!("{c:15} {line}  (rise {:.2}x fresh)", rise / base);
            }
        }
    }
}
