//! An echo server on tokio whose buffers come from one shared
//! [`BufferPool`] with a memory limit, awaited rather than blocked on.
//!
//! Each connection waits until its socket is readable, then asks the pool
//! for a buffer with [`acquire_owned_async`](BufferPool::acquire_owned_async),
//! reads into it with tokio's `read_buf` (the buffer is a `bytes::BufMut`),
//! awaits something else while holding it (here a `yield_now`, standing for
//! a lookup or a downstream call), writes it back and drops it, which
//! returns it to the pool. A connection that is idle holds no memory.
//!
//! Sixteen clients talk at once, but the limit leaves room for four 4 KiB
//! buffers: when it is reached, `acquire_owned_async` parks the task (not
//! the worker thread) in a first-come, first-served queue until another
//! task releases a buffer, and the memory freed then goes to the task that
//! has waited longest. The server never holds more than the limit, no
//! request fails, and every buffer comes back: the example checks all
//! three, and prints how often a task had to wait.
//!
//! While a task waits, a released buffer is not cached but handed to the
//! task that has waited longest, which reuses it: under this contention
//! nearly every acquire waits, and nearly every one is still a pooled hit.
//!
//! ```text
//! cargo run -p recycler-core --features bytes --example tokio_echo
//! ```

use std::future::{Future, poll_fn};
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use recycler_core::buffer::BufferPool;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const CLIENTS: usize = 16;
const MESSAGES: usize = 200;
const BUF: usize = 4096;
/// Room for a quarter of the clients' buffers at once.
const LIMIT: usize = CLIENTS / 4 * BUF;

/// The most memory the pool had allocated, seen by any handler.
static PEAK: AtomicU64 = AtomicU64::new(0);
/// Polls of an acquire that found no memory and queued the task.
static WAITS: AtomicU64 = AtomicU64::new(0);

/// Echoes one connection until the client closes it.
async fn serve(pool: Arc<BufferPool>, mut stream: TcpStream) -> std::io::Result<usize> {
    let mut echoed = 0;
    loop {
        // Memory only once there is something to read.
        stream.readable().await?;
        let mut acquire = pin!(pool.acquire_owned_async(BUF));
        let mut buf = poll_fn(|cx| {
            let poll = acquire.as_mut().poll(cx);
            if poll.is_pending() {
                WAITS.fetch_add(1, Relaxed);
            }
            poll
        })
        .await
        .map_err(std::io::Error::other)?;
        PEAK.fetch_max(pool.stats().allocated_memory, Relaxed);
        let n = stream.read_buf(&mut buf).await?;
        if n == 0 {
            return Ok(echoed); // the client closed; `buf` goes back
        }
        tokio::task::yield_now().await; // other work, the buffer held
        stream.write_all(&buf).await?;
        echoed += n;
    } // each turn's buffer is back in the pool here
}

/// Sends `MESSAGES` messages of varying lengths and checks each echo.
async fn client(addr: std::net::SocketAddr, id: usize) -> std::io::Result<usize> {
    let mut stream = TcpStream::connect(addr).await?;
    let mut back = vec![0; BUF];
    let mut sent = 0;
    for i in 0..MESSAGES {
        let len = 1 + (id * 97 + i * 31) % 1000;
        let msg: Vec<u8> = (0..len).map(|j| (id + i + j) as u8).collect();
        stream.write_all(&msg).await?;
        stream.read_exact(&mut back[..len]).await?;
        assert_eq!(back[..len], msg[..], "client {id}, message {i}");
        sent += len;
    }
    Ok(sent)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_io()
        .build()?;
    runtime.block_on(async {
        let pool = Arc::new(BufferPool::builder().memory_limit(LIMIT).build()?);
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;

        let server = tokio::spawn({
            let pool = Arc::clone(&pool);
            async move {
                let mut handlers = Vec::new();
                for _ in 0..CLIENTS {
                    let (stream, _) = listener.accept().await?;
                    stream.set_nodelay(true)?;
                    handlers.push(tokio::spawn(serve(Arc::clone(&pool), stream)));
                }
                let mut echoed = 0;
                for handler in handlers {
                    echoed += handler.await??;
                }
                Ok::<_, std::io::Error>(echoed)
            }
        });
        let clients: Vec<_> = (0..CLIENTS)
            .map(|id| tokio::spawn(client(addr, id)))
            .collect();
        let mut sent = 0;
        for c in clients {
            sent += c.await??;
        }
        let echoed = server.await??;

        let stats = pool.stats();
        println!("{stats}");
        let total = stats.total();
        let peak = PEAK.load(Relaxed);
        println!(
            "\n{CLIENTS} clients, {MESSAGES} messages each: {sent} bytes echoed through \
             {} buffer acquires, {} buffers allocated; at most {peak} of the {LIMIT}-byte \
             limit in use; tasks queued for memory {} times",
            total.acquires,
            total.non_pooled,
            WAITS.load(Relaxed)
        );
        assert_eq!(echoed, sent, "every byte echoed");
        assert!(peak <= LIMIT as u64, "the limit held: {peak} > {LIMIT}");
        assert_eq!(total.in_use, 0, "every buffer came back");
        Ok::<_, Box<dyn std::error::Error>>(())
    })
}
