//! A toy TCP echo server on loopback whose buffers come from a
//! [`BufferPool`] with a memory limit small enough to hit.
//!
//! Each connection reads into a pooled input buffer and echoes through a
//! pooled output buffer (like a proxy that transforms what it relays), so
//! three busy connections would need more than the 64 KiB limit. A handler
//! that cannot get memory within 20 ms says so and drops the connection;
//! the clients report how far they got. Everything ends by itself: five
//! clients send forty messages each, and the server stops after five
//! connections.
//!
//! ```text
//! cargo run -p recycler-core --example tcp_echo
//! ```

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::thread;
use std::time::Duration;

use recycler_core::buffer::BufferPool;

const CLIENTS: usize = 5;
const MESSAGES: usize = 40;
const BUF: usize = 16 * 1024;
const LIMIT: usize = 64 * 1024;

/// The highest `allocated_memory` any handler saw.
static PEAK: AtomicU64 = AtomicU64::new(0);

fn note_peak(pool: &BufferPool) {
    PEAK.fetch_max(pool.stats().allocated_memory, Relaxed);
}

/// Echoes one connection until the client closes it, or until the pool has
/// no memory for it.
fn handle(pool: &BufferPool, mut stream: TcpStream, id: usize) -> io::Result<usize> {
    let wait = Duration::from_millis(20);
    let mut echoed = 0;
    loop {
        let mut input = match pool.acquire_timeout(BUF, wait) {
            Ok(buf) => buf,
            Err(err) => {
                eprintln!(
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
        let mut output = match pool.acquire_timeout(n, wait) {
            Ok(buf) => buf,
            Err(err) => {
                eprintln!(
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

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pool = Arc::new(
        BufferPool::builder()
            .max_capacity(BUF)
            .memory_limit(LIMIT)
            .max_idle_memory(32 * 1024)
            .build()?,
    );
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    println!("echo server on {addr}, buffers of {BUF} bytes, memory limit {LIMIT} bytes");

    let server = {
        let pool = Arc::clone(&pool);
        thread::spawn(move || -> io::Result<usize> {
            let mut handlers = Vec::new();
            for (id, stream) in listener.incoming().take(CLIENTS).enumerate() {
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

    let clients: Vec<_> = (0..CLIENTS)
        .map(|id| thread::spawn(move || client(addr, id)))
        .collect();
    let mut complete = 0;
    for (id, c) in clients.into_iter().enumerate() {
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
    println!("{complete} of {CLIENTS} clients got all their echoes; {echoed} messages echoed");
    println!("peak allocated memory {peak} of {LIMIT} bytes");
    println!("{stats}");
    assert!(peak <= LIMIT as u64, "the pool went over its limit");
    assert!(stats.allocated_memory <= LIMIT as u64);
    Ok(())
}
