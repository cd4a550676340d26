//! One thread serving requests, as an event loop or a thread-per-core server
//! does: each request is read into a pooled buffer, parsed into a pooled
//! `Request`, answered with a pooled `Response`, and encoded into another
//! pooled buffer, and every one of them is released on the thread that got
//! it. That is the owner's fast path: a get pops this thread's cache and a
//! release pushes onto it, with no lock and no atomic read-modify-write, so
//! after the first requests every get is a hit and, with the request's
//! strings and vectors kept at their capacity, the loop allocates nothing.
//!
//! A global allocator that counts calls shows the last part: it prints how
//! many allocations the steady state made.
//!
//! ```text
//! cargo run --release -p recycler-core --example event_loop
//! ```

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::io::Write;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use recycler_core::buffer::BufferPool;
use recycler_core::{Recyclable, Recycler};

/// Connections served at once: each may hold a request while it waits.
const CONNECTIONS: usize = 16;
/// Requests served in all.
const REQUESTS: usize = 50_000;
/// Requests served before the allocation count starts: the warm-up, which
/// makes the pooled objects and grows their strings and vectors.
const WARM_UP: usize = 1_000;

/// Counts every allocation and reallocation of the program.
struct CountingAlloc;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: every call goes to `System` unchanged; the counter is a side
// effect that allocates nothing.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract for `alloc`, passed on.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by `System` with `layout`.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Relaxed);
        // SAFETY: the caller's contract for `realloc`, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

/// A parsed request. The header names and values stay in one `String` and
/// their places in a `Vec` of ranges: `Vec::reset` keeps the vector's
/// capacity but drops its elements, so a `Vec<(String, String)>` would
/// allocate its strings anew for every request.
#[derive(Debug, Default, Recyclable)]
struct Request {
    method: String,
    path: String,
    header_text: String,
    headers: Vec<(Range<usize>, Range<usize>)>,
    /// Which connection sent it.
    #[recycle(skip)]
    connection: usize,
}

impl Request {
    /// Parses `bytes` (a request line and headers, CRLF-separated) into
    /// `self`, which was reset. `None` if they are not such a request.
    fn parse(&mut self, bytes: &[u8], connection: usize) -> Option<()> {
        let text = std::str::from_utf8(bytes).ok()?;
        let mut lines = text.split("\r\n");
        let mut request_line = lines.next()?.split(' ');
        self.method.push_str(request_line.next()?);
        self.path.push_str(request_line.next()?);
        for line in lines.take_while(|l| !l.is_empty()) {
            let (name, value) = line.split_once(": ")?;
            let start = self.header_text.len();
            self.header_text.push_str(name);
            let mid = self.header_text.len();
            self.header_text.push_str(value);
            let end = self.header_text.len();
            self.headers.push((start..mid, mid..end));
        }
        self.connection = connection;
        Some(())
    }

    /// The value of header `name`.
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| &self.header_text[n.clone()] == name)
            .map(|(_, v)| &self.header_text[v.clone()])
    }
}

/// A response, built by the handler and encoded by the loop.
#[derive(Debug, Default, Recyclable)]
struct Response {
    status: u16,
    body: Vec<u8>,
}

/// The pools the loop thread owns: nothing here is shared with another
/// thread, so every get and release takes the owner path.
struct Server {
    requests: Recycler<Request>,
    responses: Recycler<Response>,
    buffers: BufferPool,
}

/// What the loop "wrote to the sockets": bytes, and a checksum of them.
#[derive(Debug, Default)]
struct Sink {
    written: u64,
    checksum: u64,
}

impl Server {
    /// Reads request `n` of `connection`: what a socket would deliver.
    fn read(&self, connection: usize, n: usize) -> recycler_core::buffer::PooledBuf<'_> {
        let mut input = self.buffers.acquire(4096);
        write!(
            input,
            "GET /items/{:06} HTTP/1.1\r\nHost: shop.example\r\nX-Connection: {connection}\r\n\
             Accept: application/json\r\n\r\n",
            n * 7 + connection
        )
        .expect("a pooled buffer grows as a Vec does");
        input
    }

    /// Answers `req` and writes the response to `sink`.
    fn respond(&self, req: &Request, sink: &mut Sink) {
        let mut resp = self.responses.get();
        let item = req.path.rsplit('/').next().unwrap_or("");
        resp.status = if req.header("Host").is_some() {
            200
        } else {
            400
        };
        write!(
            resp.body,
            "{{\"item\": {item}, \"connection\": {}}}",
            req.connection
        )
        .expect("writing to a Vec cannot fail");

        let mut output = self.buffers.acquire(4096);
        let reason = if resp.status == 200 {
            "OK"
        } else {
            "Bad Request"
        };
        write!(
            output,
            "HTTP/1.1 {} {reason}\r\nContent-Length: {}\r\n\r\n",
            resp.status,
            resp.body.len()
        )
        .expect("a pooled buffer grows as a Vec does");
        output.extend_from_slice(&resp.body);
        sink.written += output.len() as u64;
        sink.checksum = output
            .iter()
            .fold(sink.checksum, |h, &b| h.rotate_left(5) ^ u64::from(b));
        // `output` and `resp` are released here, on this thread.
    }
}

fn main() {
    let server = Server {
        requests: Recycler::new(),
        responses: Recycler::new(),
        buffers: BufferPool::new(),
    };
    let mut sink = Sink::default();
    // Requests waiting for "a backend": one in four waits until the loop has
    // served 32 more, so that several requests are in use at once (and the
    // pool makes as many as are ever in use together).
    let mut waiting: VecDeque<(usize, recycler_core::Pooled<'_, Request>)> = VecDeque::new();
    let mut steady_allocations = 0;

    let start = Instant::now();
    for n in 0..REQUESTS {
        if n == WARM_UP {
            steady_allocations = ALLOCATIONS.load(Relaxed);
        }
        let connection = n % CONNECTIONS;
        let input = server.read(connection, n);
        let mut req = server.requests.get();
        req.parse(&input, connection)
            .expect("the client sends valid requests");
        drop(input); // parsed: the buffer goes back to its bucket

        if n % 4 == 0 && waiting.len() < CONNECTIONS {
            waiting.push_back((n + 32, req));
        } else {
            server.respond(&req, &mut sink);
        }
        while waiting.front().is_some_and(|(due, _)| *due <= n) {
            let (_, req) = waiting.pop_front().expect("checked above");
            server.respond(&req, &mut sink);
        }
    }
    // Counted before the last requests are answered: their release brings
    // every request object home at once, more than were ever idle together,
    // and the thread's cache grows to hold them.
    let steady_allocations = ALLOCATIONS.load(Relaxed) - steady_allocations;
    for (_, req) in waiting.drain(..) {
        server.respond(&req, &mut sink);
    }
    let elapsed = start.elapsed();

    println!(
        "served {REQUESTS} requests on {CONNECTIONS} connections on one thread in {:.1} ms \
         ({:.0} ns per request), {} bytes written (checksum {:016x})",
        elapsed.as_secs_f64() * 1e3,
        elapsed.as_nanos() as f64 / REQUESTS as f64,
        sink.written,
        sink.checksum,
    );
    println!(
        "allocations in the loop after the first {WARM_UP} requests: {steady_allocations} \
         ({} requests, each with a pooled request, a pooled response and two pooled buffers)",
        REQUESTS - WARM_UP,
    );
    let requests = server.requests.stats();
    let responses = server.responses.stats();
    let buffers = server.buffers.stats();
    println!("requests:  {requests}");
    println!("responses: {responses}");
    println!("{buffers}");

    // What the owner path promises, checked.
    for stats in [requests, responses] {
        assert_eq!(stats.released_remote, 0, "every release was on this thread");
        assert!(stats.hit_ratio() > 0.99, "hit ratio {}", stats.hit_ratio());
        assert!(
            stats.created <= CONNECTIONS as u64 + 1,
            "created {}",
            stats.created
        );
        assert_eq!(stats.in_use, 0);
    }
    let total = buffers.total();
    assert!(
        total.hit_ratio() > 0.99,
        "buffer hit ratio {}",
        total.hit_ratio()
    );
    assert_eq!(
        steady_allocations, 0,
        "the steady state allocated: a pooled object lost its capacity"
    );
}
