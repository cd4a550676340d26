//! One measurement, in a process of its own: a server in one tokio runtime,
//! the load in another, one mode, one global allocator. Prints one line,
//! [`RESULT`] followed by `key=value` pairs, that the parent reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering::Relaxed};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;

use crate::client::{self, MEASURE, STOP};
use crate::count::allocations;
use crate::hist::Histogram;
use crate::serve::{self, Buffers, Mode};

/// How the child's result line starts.
pub(crate) const RESULT: &str = "server-result";

/// What a child runs.
#[derive(Debug, Clone)]
pub(crate) struct Params {
    /// Where the server's buffers come from.
    pub(crate) mode: Mode,
    /// The server runtime's worker threads.
    pub(crate) workers: usize,
    /// The client runtime's worker threads.
    pub(crate) client_threads: usize,
    /// Connections.
    pub(crate) conns: usize,
    /// Bytes of a request frame.
    pub(crate) req: usize,
    /// Bytes of a response frame.
    pub(crate) resp: usize,
    /// Before measuring: connecting, and the pools and allocators warming.
    pub(crate) warmup: Duration,
    /// Measuring.
    pub(crate) measure: Duration,
    /// At most this many requests in all (split among the connections).
    pub(crate) max_requests: u64,
}

/// What a child measured.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Outcome {
    /// Responses per second while measuring.
    pub(crate) rps: f64,
    /// Median latency, microseconds.
    pub(crate) p50_us: f64,
    /// 99th percentile latency, microseconds.
    pub(crate) p99_us: f64,
    /// Peak resident memory of the process (`VmHWM`), MiB.
    pub(crate) hwm_mib: f64,
    /// Allocations of the whole process while measuring, per response.
    pub(crate) allocs: f64,
    /// CPU time of the whole process (user and system) while measuring,
    /// per response, microseconds.
    pub(crate) cpu_us: f64,
    /// The user part of [`cpu_us`](Self::cpu_us).
    pub(crate) user_us: f64,
    /// The pool's hit ratio over the whole run, if the mode has a pool.
    pub(crate) hits: Option<f64>,
}

impl Outcome {
    /// The result line.
    pub(crate) fn line(&self) -> String {
        let hits = self.hits.map_or(-1.0, |h| h);
        format!(
            "{RESULT} rps={} p50_us={} p99_us={} hwm_mib={} allocs={} cpu_us={} user_us={} \
             hits={hits}",
            self.rps,
            self.p50_us,
            self.p99_us,
            self.hwm_mib,
            self.allocs,
            self.cpu_us,
            self.user_us
        )
    }

    /// Reads a result line.
    pub(crate) fn parse(line: &str) -> Option<Outcome> {
        let mut o = Outcome::default();
        let mut seen = 0;
        for pair in line.strip_prefix(RESULT)?.split_whitespace() {
            let (key, value) = pair.split_once('=')?;
            let value: f64 = value.parse().ok()?;
            match key {
                "rps" => o.rps = value,
                "p50_us" => o.p50_us = value,
                "p99_us" => o.p99_us = value,
                "hwm_mib" => o.hwm_mib = value,
                "allocs" => o.allocs = value,
                "cpu_us" => o.cpu_us = value,
                "user_us" => o.user_us = value,
                "hits" => o.hits = (value >= 0.0).then_some(value),
                _ => return None,
            }
            seen += 1;
        }
        (seen == 8).then_some(o)
    }
}

/// The process's peak resident memory, MiB, from `/proc/self/status`.
fn peak_rss_mib() -> Result<f64, String> {
    let kib = recycler_benches::process::status_kib("VmHWM:")
        .ok_or("no VmHWM line in /proc/self/status")?;
    Ok(kib as f64 / 1024.0)
}

/// The CPU time this process has used so far, user and system, in
/// microseconds.
fn cpu_time() -> (u64, u64) {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `usage` points to writable memory for one `rusage`, which
    // `getrusage` fills; `RUSAGE_SELF` is a valid `who`.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return (0, 0);
    }
    // SAFETY: `getrusage` succeeded, so it initialized `usage` (and the
    // all-zero bytes it started from are a valid `rusage` anyway).
    let usage = unsafe { usage.assume_init() };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    (us(usage.ru_utime), us(usage.ru_stime))
}

/// Runs the measurement `p` describes.
pub(crate) fn run(p: &Params) -> Result<Outcome, String> {
    let buffers = Buffers::new(p.mode);
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(p.workers)
        .thread_name("server")
        .enable_all()
        .build()
        .map_err(|e| format!("the server runtime: {e}"))?;
    let load = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(p.client_threads)
        .thread_name("client")
        .enable_all()
        .build()
        .map_err(|e| format!("the client runtime: {e}"))?;

    let listener = server
        .block_on(TcpListener::bind("127.0.0.1:0"))
        .map_err(|e| format!("binding 127.0.0.1: {e}"))?;
    let addr = listener.local_addr().map_err(|e| e.to_string())?;
    let accept = server.spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                if let Err(e) = serve::serve(buffers, stream).await {
                    eprintln!("server: {e}");
                }
            });
        }
    });

    let per_conn = (p.max_requests / p.conns as u64).max(1);
    let phase = Arc::new(AtomicU8::new(client::WARMUP));
    let (latencies, allocs, (user, sys), elapsed) = load.block_on(async {
        let conns: Vec<_> = (0..p.conns)
            .map(|_| {
                let phase = Arc::clone(&phase);
                tokio::spawn(client::connection(addr, p.req, p.resp, per_conn, phase))
            })
            .collect();
        tokio::time::sleep(p.warmup).await;
        let (a0, c0, t0) = (allocations(), cpu_time(), Instant::now());
        phase.store(MEASURE, Relaxed);
        tokio::time::sleep(p.measure).await;
        phase.store(STOP, Relaxed);
        let (a1, c1, elapsed) = (allocations(), cpu_time(), t0.elapsed());
        let cpu = (c1.0 - c0.0, c1.1 - c0.1);
        let mut all = Histogram::new();
        let mut spent = 0;
        for conn in conns {
            let measured = tokio::time::timeout(Duration::from_secs(10), conn)
                .await
                .map_err(|_| "a connection did not finish within 10 s of the stop".to_owned())?
                .map_err(|e| format!("a connection's task: {e}"))?
                .map_err(|e| format!("a connection: {e}"))?;
            all.merge(&measured.latencies);
            spent += usize::from(measured.requests >= per_conn);
        }
        if spent > 0 {
            eprintln!(
                "{spent} of {} connections made their share of the {} requests before the time was up",
                p.conns, p.max_requests
            );
        }
        Ok::<_, String>((all, a1 - a0, cpu, elapsed))
    })?;
    accept.abort();

    let responses = latencies.len();
    if responses == 0 {
        return Err("no response arrived while measuring".into());
    }
    let hits = match buffers {
        Buffers::Pool(pool) => Some(pool.stats().total().hit_ratio()),
        _ => None,
    };
    let outcome = Outcome {
        rps: responses as f64 / elapsed.as_secs_f64(),
        p50_us: latencies.quantile(0.50) as f64 / 1e3,
        p99_us: latencies.quantile(0.99) as f64 / 1e3,
        hwm_mib: peak_rss_mib()?,
        allocs: allocs as f64 / responses as f64,
        cpu_us: (user + sys) as f64 / responses as f64,
        user_us: user as f64 / responses as f64,
        hits,
    };
    load.shutdown_timeout(Duration::from_secs(1));
    server.shutdown_timeout(Duration::from_secs(1));
    Ok(outcome)
}
