//! `compare`: runs short versions of the workloads against their baselines in
//! one process and prints one table per workload, with medians and the ratio
//! of recycler to each baseline.
//!
//! ```text
//! cargo run --release -p recycler-benches --bin compare -- [--quick]
//!     [--workload W1,W2] [--json PATH] [--plot PATH]
//! ```
//!
//! The criterion suites in `benches/` measure the same workloads (the same
//! functions from `recycler_benches`) with more samples. This command exits
//! non-zero only on an error (bad arguments, a file it cannot write), never
//! because of a slow result.

mod measure;
mod report;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use measure::{Budget, Contender, measure};
use recycler_benches::{
    BoxJemalloc, BoxSystem, Jemalloc, Msg, w1_floor, w1_get_release, w2_producer_consumer,
};
use recycler_core::Recycler;
use report::{Outcome, Unit};

#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

const USAGE: &str = "\
usage: compare [--quick] [--workload W1,W2] [--json PATH] [--plot PATH]

Runs the workloads against their baselines and prints one table per workload.

  --quick          fewer, shorter samples (a rough look in a few seconds)
  --workload LIST  only these workloads, comma-separated (W1, W2)
  --json PATH      also write the results as JSON to PATH
  --plot PATH      also write an SVG bar chart to PATH
  -h, --help       this text";

/// The workloads this command knows, in order.
const WORKLOADS: [&str; 2] = ["W1", "W2"];

#[derive(Debug, Default)]
struct Args {
    quick: bool,
    workloads: Vec<String>,
    json: Option<String>,
    plot: Option<String>,
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Args>, String> {
    let mut out = Args::default();
    let mut args = args.peekable();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--quick" => out.quick = true,
            "--workload" | "--workloads" => {
                for w in value("--workload")?.split(',').filter(|w| !w.is_empty()) {
                    let w = w.trim().to_ascii_uppercase();
                    if !WORKLOADS.contains(&w.as_str()) {
                        return Err(format!(
                            "unknown workload `{w}`; known: {}",
                            WORKLOADS.join(", ")
                        ));
                    }
                    out.workloads.push(w);
                }
            }
            "--json" => out.json = Some(value("--json")?),
            "--plot" => out.plot = Some(value("--plot")?),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if out.workloads.is_empty() {
        out.workloads = WORKLOADS.iter().map(|w| w.to_string()).collect();
    }
    Ok(Some(out))
}

/// A progress line on standard error (only when it is a terminal).
struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    tty: bool,
}

impl Progress {
    fn new(total: usize) -> Self {
        Self {
            total,
            done: 0,
            started: Instant::now(),
            tty: std::io::stderr().is_terminal(),
        }
    }

    fn step(&mut self, what: &str) {
        self.done += 1;
        if !self.tty {
            return;
        }
        let width = 30;
        let filled = (self.done * width / self.total.max(1)).min(width);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] {:>3}/{} {:>5.1}s  {:<40}",
            "#".repeat(filled),
            ".".repeat(width - filled),
            self.done,
            self.total,
            self.started.elapsed().as_secs_f64(),
            what
        );
        let _ = err.flush();
    }

    fn clear(&self) {
        if self.tty {
            let _ = write!(std::io::stderr(), "\r{:100}\r", "");
        }
    }
}

/// W1: owner-thread get + release, 1 and 16 held.
fn w1(budget: Budget, progress: &mut Progress) -> Vec<Outcome> {
    let pool: Recycler<Msg> = Recycler::new();
    [1usize, 16]
        .into_iter()
        .map(|held| {
            let mut contenders = vec![
                Contender::new("recycler", |n| w1_get_release(&pool, held, n)),
                Contender::new("box_jemalloc", |n| w1_get_release(&BoxJemalloc, held, n)),
                Contender::new("box_system", |n| w1_get_release(&BoxSystem, held, n)),
                Contender::new("floor_tls_vecdeque", |n| w1_floor(held, n)),
            ];
            let label = format!("W1 held={held}");
            let results = measure(&mut contenders, budget, |c| progress.step(&format!("{label} {c}")));
            let mut o = Outcome {
                id: "W1",
                title: format!("get + release on one thread, 64-byte object, {held} held"),
                unit: Unit::NsPerOp,
                ours: "recycler",
                results,
                notes: Vec::new(),
            };
            if let (Some(j), Some(f)) = (o.speedup("box_jemalloc"), o.speedup("floor_tls_vecdeque")) {
                o.notes.push(format!(
                    "targets: >= 2x faster than box_jemalloc (now {j:.2}x); within 1.3x of the floor (now {:.2}x)",
                    1.0 / f
                ));
            }
            o
        })
        .collect()
}

/// W2: producer/consumer across two threads.
fn w2(budget: Budget, progress: &mut Progress) -> Vec<Outcome> {
    let pool: Recycler<Msg> = Recycler::new();
    let mut contenders = vec![
        Contender::new("recycler", |n| w2_producer_consumer(&pool, n)),
        Contender::new("box_jemalloc", |n| w2_producer_consumer(&BoxJemalloc, n)),
        Contender::new("box_system", |n| w2_producer_consumer(&BoxSystem, n)),
    ];
    let results = measure(&mut contenders, budget, |c| {
        progress.step(&format!("W2 {c}"))
    });
    let mut o = Outcome {
        id: "W2",
        title: "producer/consumer: one thread gets, another reads and releases".into(),
        unit: Unit::MopsPerSec,
        ours: "recycler",
        results,
        notes: Vec::new(),
    };
    if let Some(j) = o.speedup("box_jemalloc") {
        o.notes.push(format!(
            "target: at least as fast as box_jemalloc (now {j:.2}x)"
        ));
    }
    let stats = pool.stats();
    o.notes.push(format!(
        "recycler hit ratio {:.2}%",
        stats.hit_ratio() * 100.0
    ));
    vec![o]
}

/// A line describing the machine, for the report.
fn machine() -> String {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split(':').nth(1))
                .map(|m| m.trim().to_string())
        })
        .unwrap_or_else(|| "unknown CPU".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!(
        "{cpu}, {cores} CPUs, {} {}",
        std::env::consts::OS,
        std::env::consts::ARCH
    )
}

fn run(args: &Args) -> Result<(), String> {
    let budget = if args.quick {
        Budget {
            sample: Duration::from_millis(10),
            samples: 5,
        }
    } else {
        Budget {
            sample: Duration::from_millis(40),
            samples: 15,
        }
    };
    let contenders_per_workload = |w: &str| match w {
        "W1" => 2 * 4,
        "W2" => 3,
        _ => 0,
    };
    let total = args
        .workloads
        .iter()
        .map(|w| contenders_per_workload(w))
        .sum::<usize>()
        * budget.samples;
    let machine = machine();
    println!("recycler compare: {machine}");
    println!("allocator for every contender but *_system: jemalloc (global allocator)\n");
    let mut progress = Progress::new(total);
    let mut outcomes = Vec::new();
    for w in &args.workloads {
        let done = match w.as_str() {
            "W1" => w1(budget, &mut progress),
            "W2" => w2(budget, &mut progress),
            _ => Vec::new(),
        };
        progress.clear();
        for o in &done {
            println!("{}", report::table(o));
        }
        outcomes.extend(done);
    }
    println!("took {:.1}s", progress.started.elapsed().as_secs_f64());
    if let Some(path) = &args.json {
        std::fs::write(path, report::json(&outcomes, &machine))
            .map_err(|e| format!("cannot write JSON to {path}: {e}"))?;
        println!("wrote {path}");
    }
    if let Some(path) = &args.plot {
        std::fs::write(path, report::svg(&outcomes, &machine))
            .map_err(|e| format!("cannot write the chart to {path}: {e}"))?;
        println!("wrote {path}");
    }
    Ok(())
}

fn main() -> ExitCode {
    let args = match parse_args(std::env::args().skip(1)) {
        Ok(Some(args)) => args,
        Ok(None) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("compare: {e}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("compare: {e}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Option<Args>, String> {
        parse_args(args.iter().map(|s| s.to_string()))
    }

    #[test]
    fn parses_flags() {
        let a = parse(&["--quick", "--workload", "w2", "--json=out.json"])
            .unwrap()
            .unwrap();
        assert!(a.quick);
        assert_eq!(a.workloads, ["W2"]);
        assert_eq!(a.json.as_deref(), Some("out.json"));
        let a = parse(&[]).unwrap().unwrap();
        assert_eq!(a.workloads, ["W1", "W2"]);
        assert!(parse(&["--help"]).unwrap().is_none());
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(
            parse(&["--workload", "W9"])
                .unwrap_err()
                .contains("unknown workload `W9`")
        );
        assert!(parse(&["--json"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--fast"]).unwrap_err().contains("unknown argument"));
    }
}
