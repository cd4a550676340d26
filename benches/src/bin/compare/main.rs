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
mod workloads;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use measure::Budget;
use recycler_benches::Jemalloc;
use workloads::WORKLOADS;

#[global_allocator]
static GLOBAL: Jemalloc = Jemalloc;

const USAGE: &str = "\
usage: compare [--quick] [--workload W1,W2,...] [--json PATH] [--plot PATH]

Runs the workloads against their baselines and prints one table per workload.

  --quick          fewer, shorter samples (a rough look in a few seconds)
  --workload LIST  only these workloads, comma-separated (W1 to W8)
  --json PATH      also write the results as JSON to PATH
  --plot PATH      also write an SVG bar chart to PATH
  -h, --help       this text";

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
                    if !WORKLOADS.iter().any(|(id, _)| *id == w) {
                        let known: Vec<&str> = WORKLOADS.iter().map(|(id, _)| *id).collect();
                        return Err(format!(
                            "unknown workload `{w}`; known: {}",
                            known.join(", ")
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
        out.workloads = WORKLOADS.iter().map(|(id, _)| id.to_string()).collect();
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
            sample: Duration::from_millis(25),
            samples: 11,
        }
    };
    let contenders_per_workload = |w: &str| {
        WORKLOADS
            .iter()
            .find(|(id, _)| *id == w)
            .map_or(0, |(_, n)| *n)
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
        let started = Instant::now();
        let done = workloads::run(w, budget, &mut |what| progress.step(what));
        let took = started.elapsed();
        progress.clear();
        for o in &done {
            println!("{}", report::table(o));
        }
        println!("    ({w} took {:.1}s)\n", took.as_secs_f64());
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
        assert_eq!(
            a.workloads,
            ["W1", "W2", "W3", "W4", "W5", "W6", "W7", "W8"]
        );
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
