//! An end-to-end server benchmark: a multi-thread tokio server with a
//! length-prefixed protocol, loaded by an in-process client on 127.0.0.1,
//! with its buffers coming from four places:
//!
//! - `fresh`: a new `Vec` for each request and each response;
//! - `bytesmut`: one `BytesMut` per connection for requests and one for
//!   responses, cleared and reused;
//! - `pooled`: `recycler_core::buffer::BufferPool::new()` (per-thread
//!   caches, default settings), a buffer acquired for each request and each
//!   response;
//! - `striped`: the same pool built with `.striped(0)`.
//!
//! Each mode runs under each global allocator (system, jemalloc, mimalloc)
//! in a process of its own (this binary, started again with
//! `RECYCLER_BENCHES_ALLOC` set), so that its peak resident memory
//! (`VmHWM`) is its own. The runs are interleaved: run 1 of every mode and
//! allocator, in an order rotated from run to run, then run 2, and so on.
//! Each process reports responses per second, the median and 99th
//! percentile latency, its peak RSS, the CPU time of the whole process
//! (server and client, from `getrusage`) per response, and its allocations
//! per response, counted by a global allocator that wraps the chosen one.
//! The tables give medians over the runs and their ranges. The results on
//! the project's machine, and what they mean, are in
//! `docs/benchmarks-record.md` ("An end-to-end server").
//!
//! Two variants: `small` (50 connections, 2 server workers, 64-byte
//! requests, 1 KiB responses, as a key-value server might see) and `large`
//! (256 connections, 4 server workers, 64 KiB responses: allocations 64
//! times larger, more buffers in flight at once, and per-connection buffers
//! that add up).
//!
//! ```sh
//! cargo run --release -p recycler-benches --example server                 # both variants, 3 runs: about 80 s
//! cargo run --release -p recycler-benches --example server -- --runs 7 --secs 1.5 --warmup 0.5
//! cargo run --release -p recycler-benches --example server -- --variant large --alloc jemalloc --mode fresh,pooled
//! ```
//!
//! Options: `--runs N` (3), `--secs S` measured per process (0.75),
//! `--warmup S` (0.25), `--variant small,large`, `--mode
//! fresh,bytesmut,pooled,striped`, `--alloc system,jemalloc,mimalloc`,
//! `--client-threads N` (2), `--max-requests N` per process (10⁷),
//! `--raw` (print every process's result line as it comes); `--workers N`,
//! `--conns N`, `--req BYTES`, `--resp BYTES` change every variant chosen
//! (frames, headers included; a pooled buffer above 64 KiB is not pooled
//! with the default settings).
//!
//! Every process stops by itself: the load stops after the warm-up and the
//! measured time, or after its share of `--max-requests`, and a watchdog
//! ends a process that is still running 30 s after it should have stopped.

mod child;
mod client;
mod count;
mod hist;
mod report;
mod serve;

use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use recycler_benches::{ENV, GlobalAllocator, check_env};

use crate::child::{Outcome, Params};
use crate::count::Counting;
use crate::report::Sample;
use crate::serve::{MAX_FRAME, Mode};

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A shape of load.
#[derive(Debug, Clone, Copy)]
struct Variant {
    /// Its name on the command line.
    name: &'static str,
    /// The server runtime's worker threads.
    workers: usize,
    /// Connections.
    conns: usize,
    /// Bytes of a request frame.
    req: usize,
    /// Bytes of a response frame (header included).
    resp: usize,
}

/// The variants, in the order they run.
const VARIANTS: [Variant; 2] = [
    Variant {
        name: "small",
        workers: 2,
        conns: 50,
        req: 64,
        resp: 1024,
    },
    Variant {
        name: "large",
        workers: 4,
        conns: 256,
        req: 64,
        resp: 64 * 1024,
    },
];

/// The command line.
#[derive(Debug)]
struct Options {
    runs: usize,
    measure: Duration,
    warmup: Duration,
    variants: Vec<usize>,
    modes: Vec<Mode>,
    allocs: Vec<GlobalAllocator>,
    client_threads: usize,
    max_requests: u64,
    raw: bool,
    /// `--workers`, `--conns`, `--req`, `--resp`: applied to every variant.
    overrides: [Option<usize>; 4],
}

/// The value after `--flag`.
fn value<'a>(flag: &str, it: &mut impl Iterator<Item = &'a String>) -> Result<&'a str, String> {
    it.next()
        .map(String::as_str)
        .ok_or_else(|| format!("{flag} wants a value"))
}

/// A number after `--flag`.
fn number<'a, T: std::str::FromStr>(
    flag: &str,
    it: &mut impl Iterator<Item = &'a String>,
) -> Result<T, String> {
    let v = value(flag, it)?;
    v.parse()
        .map_err(|_| format!("{flag} {v}: not a number of the kind expected"))
}

/// Seconds after `--flag`.
fn seconds<'a>(flag: &str, it: &mut impl Iterator<Item = &'a String>) -> Result<Duration, String> {
    let s: f64 = number(flag, it)?;
    Duration::try_from_secs_f64(s).map_err(|_| format!("{flag} {s}: not a duration"))
}

/// A comma-separated list after `--flag`, each item read by `f`.
fn list<'a, T>(
    flag: &str,
    it: &mut impl Iterator<Item = &'a String>,
    f: impl Fn(&str) -> Option<T>,
) -> Result<Vec<T>, String> {
    value(flag, it)?
        .split(',')
        .map(|s| f(s.trim()).ok_or_else(|| format!("{flag}: unknown {s:?}")))
        .collect()
}

impl Options {
    /// Reads the parent's command line.
    fn parse(args: &[String]) -> Result<Options, String> {
        let mut o = Options {
            runs: 3,
            measure: Duration::from_millis(750),
            warmup: Duration::from_millis(250),
            variants: (0..VARIANTS.len()).collect(),
            modes: Mode::ALL.to_vec(),
            allocs: GlobalAllocator::ALL.to_vec(),
            client_threads: 2,
            max_requests: 10_000_000,
            raw: false,
            overrides: [None; 4],
        };
        let mut it = args.iter();
        while let Some(flag) = it.next() {
            match flag.as_str() {
                "--runs" => o.runs = number(flag, &mut it)?,
                "--secs" => o.measure = seconds(flag, &mut it)?,
                "--warmup" => o.warmup = seconds(flag, &mut it)?,
                "--variant" => {
                    o.variants =
                        list(flag, &mut it, |s| VARIANTS.iter().position(|v| v.name == s))?;
                }
                "--mode" => o.modes = list(flag, &mut it, Mode::from_name)?,
                "--alloc" => o.allocs = list(flag, &mut it, GlobalAllocator::from_name)?,
                "--client-threads" => o.client_threads = number(flag, &mut it)?,
                "--max-requests" => o.max_requests = number(flag, &mut it)?,
                "--raw" => o.raw = true,
                "--workers" => o.overrides[0] = Some(number(flag, &mut it)?),
                "--conns" => o.overrides[1] = Some(number(flag, &mut it)?),
                "--req" => o.overrides[2] = Some(number(flag, &mut it)?),
                "--resp" => o.overrides[3] = Some(number(flag, &mut it)?),
                "-h" | "--help" => return Err(usage()),
                other => return Err(format!("unknown argument {other:?}\n{}", usage())),
            }
        }
        if o.runs == 0 || o.client_threads == 0 || o.max_requests == 0 || o.measure.is_zero() {
            return Err(
                "--runs, --client-threads, --max-requests and --secs must be above 0".into(),
            );
        }
        let [workers, conns, req, resp] = o.overrides;
        if workers == Some(0) || conns == Some(0) {
            return Err("--workers and --conns must be above 0".into());
        }
        if req.is_some_and(|r| !(8..=MAX_FRAME).contains(&r))
            || resp.is_some_and(|r| !(4..=MAX_FRAME).contains(&r))
        {
            return Err(format!(
                "--req is 8 to {MAX_FRAME} bytes, --resp 4 to {MAX_FRAME}"
            ));
        }
        Ok(o)
    }

    /// Variant `i` with the overrides applied.
    fn variant(&self, i: usize) -> Variant {
        let mut v = VARIANTS[i];
        let [workers, conns, req, resp] = self.overrides;
        v.workers = workers.unwrap_or(v.workers);
        v.conns = conns.unwrap_or(v.conns);
        v.req = req.unwrap_or(v.req);
        v.resp = resp.unwrap_or(v.resp);
        v
    }
}

/// The options, in one line each.
fn usage() -> String {
    "usage: server [--runs N] [--secs S] [--warmup S] [--variant small,large] \
     [--mode fresh,bytesmut,pooled,striped] [--alloc system,jemalloc,mimalloc] \
     [--client-threads N] [--max-requests N] [--raw] \
     [--workers N] [--conns N] [--req BYTES] [--resp BYTES]"
        .into()
}

/// Reads a child's command line: `--child` then `key=value` pairs.
fn child_params(args: &[String]) -> Result<Params, String> {
    let get = |key: &str| -> Result<String, String> {
        args.iter()
            .find_map(|a| a.strip_prefix(key)?.strip_prefix('='))
            .map(str::to_owned)
            .ok_or_else(|| format!("the child's {key} is missing"))
    };
    let num = |s: String| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
    Ok(Params {
        mode: Mode::from_name(&get("mode")?).ok_or("an unknown mode")?,
        workers: num(get("workers")?)? as usize,
        client_threads: num(get("client_threads")?)? as usize,
        conns: num(get("conns")?)? as usize,
        req: num(get("req")?)? as usize,
        resp: num(get("resp")?)? as usize,
        warmup: Duration::from_micros(num(get("warmup_us")?)?),
        measure: Duration::from_micros(num(get("measure_us")?)?),
        max_requests: num(get("max_requests")?)?,
    })
}

/// Runs one measurement in a child process under `alloc`.
fn spawn(o: &Options, v: Variant, mode: Mode, alloc: GlobalAllocator) -> Result<Outcome, String> {
    let exe = std::env::current_exe().map_err(|e| format!("finding this executable: {e}"))?;
    let out = Command::new(exe)
        .arg("--child")
        .arg(format!("mode={}", mode.name()))
        .arg(format!("workers={}", v.workers))
        .arg(format!("client_threads={}", o.client_threads))
        .arg(format!("conns={}", v.conns))
        .arg(format!("req={}", v.req))
        .arg(format!("resp={}", v.resp))
        .arg(format!("warmup_us={}", o.warmup.as_micros()))
        .arg(format!("measure_us={}", o.measure.as_micros()))
        .arg(format!("max_requests={}", o.max_requests))
        .env(ENV, alloc.name())
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("starting a child: {e}"))?;
    let what = format!("{} {} under {alloc}", v.name, mode.name());
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        return Err(format!("{what} failed ({}):\n{stderr}", out.status));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    for line in stderr.lines() {
        eprintln!("{what}: {line}");
    }
    if o.raw {
        eprintln!("{what}: {}", stdout.trim());
    }
    stdout
        .lines()
        .find_map(Outcome::parse)
        .ok_or_else(|| format!("{what} printed no result line:\n{stdout}\n{stderr}"))
}

/// The child: one measurement, its result on standard output.
fn child(args: &[String]) -> Result<(), String> {
    let p = child_params(args)?;
    let alloc = check_env()?;
    if GlobalAllocator::current() != alloc {
        return Err(format!(
            "running under {}, not {alloc}",
            GlobalAllocator::current()
        ));
    }
    // The watchdog: whatever happens, this process ends.
    let deadline = p.warmup + p.measure + Duration::from_secs(30);
    std::thread::spawn(move || {
        std::thread::sleep(deadline);
        eprintln!("server: still running {deadline:?} after the start; giving up");
        std::process::exit(3);
    });
    let outcome = child::run(&p)?;
    println!("{}", outcome.line());
    Ok(())
}

/// The parent: every run of every variant, mode and allocator, interleaved.
fn parent(o: &Options) -> Result<(), String> {
    let started = Instant::now();
    let combos: Vec<(Mode, GlobalAllocator)> = o
        .allocs
        .iter()
        .flat_map(|&a| o.modes.iter().map(move |&m| (m, a)))
        .collect();
    let total = o.runs * o.variants.len() * combos.len();
    eprintln!(
        "{total} processes of {:.2} s warm-up + {:.2} s measured each",
        o.warmup.as_secs_f64(),
        o.measure.as_secs_f64()
    );
    let mut samples = Vec::new();
    for run in 0..o.runs {
        for &variant in &o.variants {
            let v = o.variant(variant);
            // Rotate the order from run to run, and reverse it every other
            // run, so that no mode or allocator always runs first or last.
            let mut order = combos.clone();
            let shift = (run * 5) % order.len().max(1);
            order.rotate_left(shift);
            if run % 2 == 1 {
                order.reverse();
            }
            for (mode, alloc) in order {
                let outcome = spawn(o, v, mode, alloc)?;
                samples.push(Sample {
                    variant,
                    alloc,
                    mode,
                    run,
                    outcome,
                });
            }
        }
        eprintln!(
            "run {} of {} done ({:.0} s)",
            run + 1,
            o.runs,
            started.elapsed().as_secs_f64()
        );
    }
    println!();
    for &variant in &o.variants {
        let v = o.variant(variant);
        let title = format!(
            "{}: {} connections, {} server workers, {} client threads, {} B requests, \
             {} B responses; {} run(s) of {:.2} s, medians (min–max)",
            v.name,
            v.conns,
            v.workers,
            o.client_threads,
            v.req,
            v.resp,
            o.runs,
            o.measure.as_secs_f64()
        );
        println!(
            "{}",
            report::table(&title, variant, &samples, &o.allocs, &o.modes)
        );
    }
    println!(
        "requests/s: responses per second; × fresh: requests/s over fresh's under the same \
         allocator in the same run;\nCPU, user: CPU time of the whole process (server and \
         client; user and system, user alone) per response;\nallocs/req: allocations of the \
         whole process per response; pool hits: acquires served from the pool.\n{:.0} s in all.",
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("--child") => child(&args[1..]),
        _ => Options::parse(&args).and_then(|o| {
            check_env()?;
            parent(&o)
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("server: {e}");
            ExitCode::FAILURE
        }
    }
}
