//! A probe for instruction counts, not a test: one run of W2 (64-byte
//! object) or W2M (the message pipeline) for one contender, under the
//! global allocator `RECYCLER_BENCHES_ALLOC` names, for `callgrind`:
//!
//! ```text
//! PROBE_WORKLOAD=W2 PROBE_CONTENDER=recycler PROBE_N=200000 RECYCLER_BENCHES_ALLOC=mimalloc \
//!   valgrind --tool=callgrind target/release/deps/probe-<hash> --ignored --exact probe
//! ```
//!
//! Contenders: `recycler` (defaults), `recycler_reset_at_home`, `box`,
//! `thingbuf`, `floor_queue` (W2 only). Threads are not pinned (valgrind
//! runs one thread at a time anyway). `PROBE_WORKLOAD=W2M1` does W2M's
//! work on one thread (take, fill, checksum, release; `recycler` or
//! `box`), to tell the work from the handoff in wall time. Ignored by
//! default.

use std::time::Instant;

use recycler_benches::{
    Boxed, Corpus, Dispatch, Message, Msg, QueueFloor, Take, Thingbuf, affinity, checksum,
    w2_producer_consumer, w2m_pipeline,
};
use recycler_core::Recycler;

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

fn var(name: &str, default: &str) -> String {
    std::env::var(name).unwrap_or_else(|_| default.to_string())
}

#[test]
#[ignore = "a probe for callgrind (docs/BENCHMARKS.md), not a test"]
fn probe() {
    affinity::set_enabled(false);
    let n: u64 = var("PROBE_N", "100000")
        .parse()
        .expect("PROBE_N is a count");
    let contender = var("PROBE_CONTENDER", "recycler");
    fn at_home<T: recycler_core::Recyclable + Default + Send + 'static>() -> Recycler<T> {
        Recycler::builder()
            .reset_on_return(false)
            .build()
            .expect("a valid configuration")
    }
    match var("PROBE_WORKLOAD", "W2").to_ascii_uppercase().as_str() {
        "W2" => {
            let took = match contender.as_str() {
                "recycler" => w2_producer_consumer(&Recycler::<Msg>::new(), n),
                "recycler_reset_at_home" => w2_producer_consumer(&at_home::<Msg>(), n),
                "box" => w2_producer_consumer(&Boxed::<Msg>::new(), n),
                "thingbuf" => Thingbuf::<Msg>::default().w2(n),
                "floor_queue" => w2_producer_consumer(&QueueFloor::default(), n),
                other => panic!("unknown contender {other}"),
            };
            eprintln!("W2 {contender} {n} objects in {took:?}");
        }
        "W2M" => {
            let corpus = Corpus::new();
            let run = match contender.as_str() {
                "recycler" => w2m_pipeline(&Recycler::<Message>::new(), &corpus, n),
                "recycler_reset_at_home" => w2m_pipeline(&at_home::<Message>(), &corpus, n),
                "box" => w2m_pipeline(&Boxed::<Message>::new(), &corpus, n),
                "thingbuf" => Thingbuf::<Message>::default().w2m(&corpus, n),
                other => panic!("unknown contender {other}"),
            };
            eprintln!("W2M {contender} {n} messages in {:?}", run.elapsed);
        }
        "W2M1" => {
            fn one_thread<S: Take<Object = Message>>(source: &S, n: u64) -> std::time::Duration {
                let corpus = Corpus::new();
                let mut sum = 0u64;
                let start = Instant::now();
                for i in 0..n {
                    let mut m = source.take();
                    corpus.fill(&mut m, i);
                    sum = sum.wrapping_add(checksum(std::hint::black_box(&m)));
                }
                std::hint::black_box(sum);
                start.elapsed()
            }
            let took = match contender.as_str() {
                "recycler" => one_thread(&Recycler::<Message>::new(), n),
                "box" => one_thread(&Boxed::<Message>::new(), n),
                other => panic!("unknown contender {other}"),
            };
            eprintln!(
                "W2M1 {contender} {n} messages in {took:?}: {:.0} ns each",
                took.as_secs_f64() * 1e9 / n as f64
            );
        }
        other => panic!("unknown workload {other}"),
    }
}
