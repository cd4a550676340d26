//! Three stages on three threads, handing guards along channels, as a
//! message broker or a log shipper does:
//!
//! 1. the reader gets a pooled `Record` and a pooled input buffer, fills the
//!    buffer with a raw line, and passes both on;
//! 2. the parser parses the line into the record and drops the buffer;
//! 3. the writer encodes the record into a pooled output buffer, "sends"
//!    it, and drops the record.
//!
//! Every record and every input buffer is released on a thread other than
//! the one that got it, so it travels home: the releasing thread gathers
//! releases in batches per home and hands each batch over in one channel
//! operation, and the reader's next get refills its cache from its inbox.
//! The output buffers never leave the writer: its owner path.
//!
//! When the stages end, their threads exit, and what they held goes to the
//! shared depot: nothing is stranded with a dead thread. The main thread
//! takes every idle record back to show it, and checks that every object
//! made is accounted for.
//!
//! ```text
//! cargo run --release -p recycler-core --example pipeline
//! ```

use std::io::Write;
use std::iter;
use std::sync::mpsc::sync_channel;
use std::thread;
use std::time::Instant;

use recycler_core::buffer::{BufferPool, PooledBuf};
use recycler_core::{Pooled, Recyclable, Recycler};

/// Records sent through the pipeline.
const RECORDS: usize = 50_000;
/// Records (or lines) each channel holds at most.
const CHANNEL: usize = 64;

/// A parsed log line.
#[derive(Debug, Default, Recyclable)]
struct Record {
    host: String,
    level: String,
    fields: Vec<u64>,
    /// How many times this object went round the pipeline: kept by reset.
    #[recycle(skip)]
    trips: u64,
}

fn main() {
    let records: Recycler<Record> = Recycler::new();
    let buffers = BufferPool::new();
    let (to_parser, from_reader) = sync_channel::<(Pooled<'_, Record>, PooledBuf<'_>)>(CHANNEL);
    let (to_writer, from_parser) = sync_channel::<Pooled<'_, Record>>(CHANNEL);

    let start = Instant::now();
    let (sent, checksum) = thread::scope(|s| {
        let (records, buffers) = (&records, &buffers);
        // Stage 1: gets both guards on its own thread.
        s.spawn(move || {
            for i in 0..RECORDS {
                let mut record = records.get();
                record.trips += 1;
                let mut line = buffers.acquire(256);
                write!(
                    line,
                    "host-{:02} {} {} {} {}",
                    i % 16,
                    ["INFO", "WARN", "ERROR"][i % 3],
                    i,
                    i * 3,
                    i % 1000
                )
                .expect("a pooled buffer grows as a Vec does");
                to_parser
                    .send((record, line))
                    .expect("the parser outlives the reader");
            }
            // `to_parser` drops here: the parser's loop ends.
        });

        // Stage 2: parses, and releases the input buffer here, away from
        // its home.
        s.spawn(move || {
            for (mut record, line) in from_reader {
                let text = std::str::from_utf8(&line).expect("the reader writes UTF-8");
                let mut words = text.split(' ');
                record.host.push_str(words.next().expect("a host"));
                record.level.push_str(words.next().expect("a level"));
                record
                    .fields
                    .extend(words.map(|w| w.parse::<u64>().expect("numbers")));
                drop(line); // released on the parser's thread: sent home
                to_writer
                    .send(record)
                    .expect("the writer outlives the parser");
            }
        });

        // Stage 3: encodes into buffers of its own, and releases the record
        // here, away from its home.
        let writer = s.spawn(move || {
            let (mut sent, mut checksum) = (0u64, 0u64);
            for record in from_parser {
                let mut out = buffers.acquire(256);
                write!(out, "{} [{}]", record.host, record.level).expect("grows");
                for field in &record.fields {
                    write!(out, " {field}").expect("grows");
                }
                out.push(b'\n');
                sent += out.len() as u64;
                checksum = out
                    .iter()
                    .fold(checksum, |h, &b| h.rotate_left(5) ^ u64::from(b));
                // `record` is released here, `out` too (on its own thread).
            }
            (sent, checksum)
        });
        writer.join().expect("the writer panicked")
    });
    let elapsed = start.elapsed();

    // Every stage has ended and its thread has exited.
    let stats = records.stats();
    let bufs = buffers.stats();
    println!(
        "{RECORDS} records through three threads in {:.1} ms ({:.0} ns per record), \
         {sent} bytes written (checksum {checksum:016x})",
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_nanos() as f64 / RECORDS as f64,
    );
    println!("records: {stats}");
    println!("{bufs}");

    // Released remote: every record was released on the writer's thread.
    assert_eq!(stats.released_remote, RECORDS as u64);
    assert_eq!(stats.released_local, 0);
    // Each object went round many times: the pool made only about as many
    // as were in flight at once.
    assert!(stats.hit_ratio() > 0.95, "hit ratio {}", stats.hit_ratio());
    // Conservation: every record made is idle, in use, dropped or detached.
    assert_eq!(
        stats.created,
        stats.idle + stats.in_use + stats.dropped + stats.detached
    );
    assert_eq!(stats.in_use, 0);
    // The buffers' version of it, over the whole pool.
    let total = bufs.total();
    assert_eq!(
        total.non_pooled,
        total.in_use + total.idle + total.evicts + total.removes
    );

    // No record was dropped (the default capacities hold them all), so each
    // trip is counted on one of them.
    assert_eq!(stats.dropped, 0);

    // Nothing stranded: the three threads are gone, yet every idle record is
    // reachable from this one, which never got or released any.
    let taken: Vec<_> = iter::from_fn(|| records.try_get()).collect();
    let trips: u64 = taken.iter().map(|r| r.trips).sum();
    let most = taken.iter().map(|r| r.trips).max().unwrap_or(0);
    println!(
        "after the threads exited: {} idle records, all {} taken back by the main thread; \
         {trips} trips in all, the busiest record made {most}",
        stats.idle,
        taken.len(),
    );
    assert_eq!(taken.len() as u64, stats.idle, "a record was stranded");
    assert_eq!(trips, RECORDS as u64, "every trip counted once");
}
