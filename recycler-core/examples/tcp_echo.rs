//! A toy TCP echo server on loopback whose buffers come from a
//! [`BufferPool`] with a memory limit small enough to hit.
//!
//! Each connection reads into a pooled input buffer and echoes through a
//! pooled output buffer (like a proxy that transforms what it relays), so a
//! busy connection holds up to 24 KiB, and three would need more than the
//! 64 KiB limit. A handler that cannot get memory within 20 ms says so and
//! drops the connection; the clients report how far they got.
//!
//! It runs three rounds, each with a pool of its own, and prints the pool's
//! statistics after each:
//!
//! 1. two clients, whose connections fit in the limit: nearly every acquire
//!    reuses a buffer;
//! 2. five clients, which do not fit: handlers wait for memory, and while
//!    any thread waits, the pool frees every released buffer instead of
//!    caching it, so that the waiter can allocate (the buffer it needs may
//!    be of another bucket). The waiter then allocates afresh: a miss. Most
//!    acquires of this round are such misses, so its hit ratio is low, and
//!    its `removed` count (buffers freed rather than kept) is close to its
//!    `created` count;
//! 3. the five clients again, without the limit: the hit ratio of round 1
//!    again. Under memory pressure the hit ratio measures the contention,
//!    not the reuse.
//!
//! Everything ends by itself: each client sends forty messages, and the
//! server of each round stops after its clients' connections.
//!
//! ```text
//! cargo run -p recycler-core --example tcp_echo
//! ```

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::{Duration, Instant};

use recycler_core::AcquireError;
use recycler_core::buffer::{BucketStats, BufferPool, PooledBuf};

/// Clients of the round that fits in the memory limit, and of the one that
/// does not.
const FITTING: usize = 2;
const CROWDED: usize = 5;
const MESSAGES: usize = 40;
const BUF: usize = 16 * 1024;
const LIMIT: usize = 64 * 1024;

/// The highest `allocated_memory` any handler saw, in this round.
static PEAK: AtomicU64 = AtomicU64::new(0);
/// Nanoseconds the handlers of this round spent in `acquire_timeout`,
/// summed over the handlers.
static WAITED: AtomicU64 = AtomicU64::new(0);

/// `pool.acquire_timeout(capacity, wait)`, its time added to `WAITED`.
fn acquire_timed(
    pool: &BufferPool,
    capacity: usize,
    wait: Duration,
) -> Result<PooledBuf<'_>, AcquireError> {
    let start = Instant::now();
    let got = pool.acquire_timeout(capacity, wait);
    WAITED.fetch_add(start.elapsed().as_nanos() as u64, Relaxed);
    got
}

fn note_peak(pool: &BufferPool) {
    PEAK.fetch_max(pool.stats().allocated_memory, Relaxed);
}

/// Echoes one connection until the client closes it, or until the pool has
/// no memory for it.
fn handle(pool: &BufferPool, mut stream: TcpStream, id: usize) -> io::Result<usize> {
    let wait = Duration::from_millis(20);
    let mut echoed = 0;
    loop {
        let mut input = match acquire_timed(pool, BUF, wait) {
            Ok(buf) => buf,
            Err(err) => {
                println!(
                    "server: connection {id}: no input buffer within {wait:?}: {err}; closing"
                );
                stream.shutdown(Shutdown::Both)?;
                return Ok(echoed);
            }
        };
        note_peak(pool);
        input.resize(input.capacity(), 0);
        let n = stream.read(&mut input)?;
        if n == 0 {
            return Ok(echoed); // the client is done
        }
        input.truncate(n);
        // Hold both buffers at once, as a relay would.
        let mut output = match acquire_timed(pool, n, wait) {
            Ok(buf) => buf,
            Err(err) => {
                println!(
                    "server: connection {id}: no output buffer within {wait:?}: {err}; closing"
                );
                stream.shutdown(Shutdown::Both)?;
                return Ok(echoed);
            }
        };
        note_peak(pool);
        output.extend_from_slice(&input);
        thread::sleep(Duration::from_millis(1)); // some work on the message
        stream.write_all(&output)?;
        echoed += 1;
    }
}

/// Sends `MESSAGES` messages of assorted sizes and checks each echo;
/// returns how many came back.
fn client(addr: std::net::SocketAddr, id: usize) -> io::Result<usize> {
    let mut stream = TcpStream::connect(addr)?;
    let mut echo = vec![0; BUF];
    for i in 0..MESSAGES {
        let len = 100 + (id * 997 + i * 1301) % 8000;
        let msg: Vec<u8> = (0..len).map(|j| (i + j + id) as u8).collect();
        if stream.write_all(&msg).is_err() {
            return Ok(i);
        }
        let mut got = 0;
        while got < len {
            match stream.read(&mut echo[got..len]) {
                Ok(0) | Err(_) => return Ok(i), // closed by the server
                Ok(n) => got += n,
            }
        }
        assert_eq!(
            &echo[..len],
            &msg[..],
            "client {id}: message {i} came back wrong"
        );
    }
    Ok(MESSAGES)
}

/// Serves `clients` clients with a pool of its own, with the memory limit
/// or without; returns the pool's totals, and how many handlers were
/// acquiring a buffer at any moment, on average.
fn round(clients: usize, limited: bool) -> Result<(BucketStats, f64), Box<dyn std::error::Error>> {
    let builder = BufferPool::builder()
        .max_capacity(BUF)
        .max_idle_memory(32 * 1024);
    let pool = Arc::new(if limited {
        builder.memory_limit(LIMIT).build()?
    } else {
        builder.build()?
    });
    for counter in [&PEAK, &WAITED] {
        counter.store(0, Relaxed);
    }
    let start = Instant::now();
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let limit = if limited {
        format!("memory limit {LIMIT} bytes")
    } else {
        "no memory limit".to_owned()
    };
    println!("echo server on {addr} for {clients} clients, buffers of up to {BUF} bytes, {limit}");

    let server = {
        let pool = Arc::clone(&pool);
        thread::spawn(move || -> io::Result<usize> {
            let mut handlers = Vec::new();
            for (id, stream) in listener.incoming().take(clients).enumerate() {
                let (pool, stream) = (Arc::clone(&pool), stream?);
                handlers.push(thread::spawn(move || handle(&pool, stream, id)));
            }
            let mut echoed = 0;
            for h in handlers {
                echoed += h.join().expect("handler panicked")?;
            }
            Ok(echoed)
        })
    };

    let client_threads: Vec<_> = (0..clients)
        .map(|id| thread::spawn(move || client(addr, id)))
        .collect();
    let mut complete = 0;
    for (id, c) in client_threads.into_iter().enumerate() {
        let n = c.join().expect("client panicked")?;
        if n == MESSAGES {
            complete += 1;
        } else {
            println!(
                "client {id}: the server dropped the connection after {n} of {MESSAGES} messages"
            );
        }
    }
    let echoed = server.join().expect("server panicked")?;

    let stats = pool.stats();
    let peak = PEAK.load(Relaxed);
    println!("{complete} of {clients} clients got all their echoes; {echoed} messages echoed");
    println!("peak allocated memory {peak} bytes ({limit})");
    println!("{stats}");
    if limited {
        assert!(peak <= LIMIT as u64, "the pool went over its limit");
        assert!(stats.allocated_memory <= LIMIT as u64);
    }
    let waiting = WAITED.load(Relaxed) as f64 / start.elapsed().as_nanos() as f64;
    Ok((stats.total(), waiting))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    println!("== round 1: {FITTING} clients, within the memory limit");
    let fitting = round(FITTING, true)?;
    println!("\n== round 2: {CROWDED} clients, over the memory limit");
    let crowded = round(CROWDED, true)?;
    println!("\n== round 3: {CROWDED} clients, no memory limit");
    let unlimited = round(CROWDED, false)?;

    println!("\n== the hit ratio");
    for (name, (t, waiting)) in [
        ("round 1", fitting),
        ("round 2", crowded),
        ("round 3", unlimited),
    ] {
        println!(
            "{name}: {:5.1}% of {} acquires reused a buffer; {} buffers allocated, {} of them \
             freed on release rather than kept; {:.2} handlers acquiring at any moment",
            t.hit_ratio() * 100.0,
            t.acquires,
            t.non_pooled,
            t.removes,
            waiting,
        );
    }
    println!(
        "Round 2 serves the load of round 3 within a limit it does not fit in: on average \
         {:.1}\nof its handlers were waiting for memory at any moment. While any thread waits, \
         the pool\nfrees each released buffer instead of keeping it, so that the waiter can \
         allocate (it may\nneed a buffer of another size), and the waiter's allocation is a \
         miss: under memory\npressure the hit ratio measures the contention, not the reuse. \
         Within its limit (round 1)\nor without one (round 3), the same server reuses nearly \
         every buffer.",
        crowded.1
    );
    Ok(())
}
