//! `compare`: runs short versions of the workloads against their baselines
//! and prints a legend, then one table per workload, with medians and the
//! ratio of recycler to each baseline, each target marked MET or MISSED,
//! and at the end the list of every target.
//!
//! ```text
//! cargo run --release -p recycler-benches --bin compare -- [--quick] [--no-pin]
//!     [--workload W1,W2] [--alloc jemalloc,system,mimalloc] [--json PATH] [--plot PATH]
//! ```
//!
//! The workloads whose results depend on the global allocator (W1, W2, W2M, W9)
//! run once per allocator, each in its own process: in this one, under the
//! allocator `RECYCLER_BENCHES_ALLOC` chose (jemalloc by default), and in a
//! child process per other allocator, this same executable started again
//! with `--child` and the variable set, which prints its outcomes as JSON
//! (see `child.rs`). Their tables have one column per allocator; every
//! ratio compares contenders measured in the same process. The other
//! workloads run in this process only.
//!
//! The criterion suites in `benches/` measure the same workloads (the same
//! functions from `recycler_benches`) with more samples. This command exits
//! non-zero only on an error (bad arguments, a file it cannot write, a
//! child process that failed), never because of a slow result.

mod child;
mod common;
mod json;
mod legend;
mod measure;
mod pipelines;
mod report;
mod targets;
mod workloads;

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use measure::{Bench, Budget};
use recycler_benches::{Dispatch, ENV, GlobalAllocator, affinity};
use report::Outcome;
use workloads::{WORKLOADS, Workload};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

const USAGE: &str = "\
usage: compare [--quick] [--no-pin] [--workload W1,W2,...] [--alloc A,B,...]
               [--json PATH] [--plot PATH]

Runs the workloads against their baselines and prints a legend, one table
per workload with every target marked MET or MISSED, and the list of
targets. W1, W2, W2M and W9 run once per global allocator, each in its own
process, and their tables have a column per allocator; ratios compare
contenders of the same process.

  --quick          fewer, shorter samples, W7 up to 1 Mi objects only
                   (a rough look in a few seconds)
  --no-pin         do not pin W2's and W2M's producer and consumer to two
                   CPUs (by default they are, where the OS allows)
  --workload LIST  only these workloads, comma-separated (W1, W2, W2M,
                   W3 to W10)
  --alloc LIST     the global allocators to run W1, W2, W2M and W9 under,
                   comma-separated: jemalloc, system, mimalloc, or all
                   (default: all); W1's peers run only under this
                   process's own allocator
  --json PATH      also write the results as JSON to PATH
  --plot PATH      also write an SVG bar chart to PATH
  --child          run as one of compare's own child processes: measure
                   the workloads under this process's allocator, print them
                   as JSON on standard output, progress on standard error
  -h, --help       this text

The global allocator of this process, and so of the workloads other than
W1, W2, W2M and W9, is the one RECYCLER_BENCHES_ALLOC names (system, jemalloc or
mimalloc); jemalloc if it is unset.";

#[derive(Debug, Default)]
struct Args {
    quick: bool,
    no_pin: bool,
    workloads: Vec<String>,
    allocs: Vec<GlobalAllocator>,
    json: Option<String>,
    plot: Option<String>,
    child: bool,
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
            "--no-pin" => out.no_pin = true,
            "--child" => out.child = true,
            "--workload" | "--workloads" => {
                for w in value("--workload")?.split(',').filter(|w| !w.is_empty()) {
                    let w = w.trim().to_ascii_uppercase();
                    if workloads::find(&w).is_none() {
                        let known: Vec<&str> = WORKLOADS.iter().map(|w| w.id).collect();
                        return Err(format!(
                            "unknown workload `{w}`; known: {}",
                            known.join(", ")
                        ));
                    }
                    if !out.workloads.contains(&w) {
                        out.workloads.push(w);
                    }
                }
            }
            "--alloc" | "--allocs" => {
                for a in value("--alloc")?.split(',').filter(|a| !a.is_empty()) {
                    let a = a.trim();
                    let chosen = if a.eq_ignore_ascii_case("all") {
                        GlobalAllocator::ALL.to_vec()
                    } else {
                        vec![GlobalAllocator::from_name(a).ok_or_else(|| {
                            format!(
                                "unknown allocator `{a}`; known: jemalloc, system, mimalloc, all"
                            )
                        })?]
                    };
                    for a in chosen {
                        if !out.allocs.contains(&a) {
                            out.allocs.push(a);
                        }
                    }
                }
            }
            "--json" => out.json = Some(value("--json")?),
            "--plot" => out.plot = Some(value("--plot")?),
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    if out.workloads.is_empty() {
        out.workloads = WORKLOADS.iter().map(|w| w.id.to_string()).collect();
    }
    if out.allocs.is_empty() {
        out.allocs = GlobalAllocator::ALL.to_vec();
    }
    Ok(Some(out))
}

/// Where progress goes: a bar on a terminal, lines for the parent process
/// (in a child), or nowhere.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProgressTo {
    Bar,
    Lines,
    Nowhere,
}

/// A progress line on standard error.
struct Progress {
    total: usize,
    done: usize,
    started: Instant,
    to: ProgressTo,
}

impl Progress {
    fn new(total: usize, to: ProgressTo) -> Self {
        Self {
            total,
            done: 0,
            started: Instant::now(),
            to,
        }
    }

    fn step(&mut self, what: &str) {
        self.done += 1;
        match self.to {
            ProgressTo::Nowhere => {}
            ProgressTo::Lines => eprintln!("{}{what}", child::PROGRESS),
            ProgressTo::Bar => {
                let width = 30;
                let filled = (self.done * width / self.total.max(1)).min(width);
                let mut err = std::io::stderr().lock();
                let _ = write!(
                    err,
                    "\r[{}{}] {:>4}/{} {:>5.1}s  {:<50}",
                    "#".repeat(filled),
                    ".".repeat(width - filled),
                    self.done,
                    self.total,
                    self.started.elapsed().as_secs_f64(),
                    what
                );
                let _ = err.flush();
            }
        }
    }

    fn clear(&self) {
        if self.to == ProgressTo::Bar {
            let _ = write!(std::io::stderr(), "\r{:110}\r", "");
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

fn budget(quick: bool) -> Budget {
    if quick {
        Budget {
            sample: Duration::from_millis(4),
            samples: 5,
            quick: true,
        }
    } else {
        Budget {
            sample: Duration::from_millis(25),
            samples: 11,
            quick: false,
        }
    }
}

/// The workloads `args` names.
fn chosen(args: &Args) -> Vec<&'static Workload> {
    args.workloads
        .iter()
        .filter_map(|w| workloads::find(w))
        .collect()
}

/// As a child process: measures the workloads under this process's
/// allocator, only the rows that depend on it, and prints them as JSON.
fn run_child(args: &Args, alloc: GlobalAllocator) {
    let mut progress = Progress::new(0, ProgressTo::Lines);
    let mut step = |what: &str| progress.step(what);
    let mut outcomes = Vec::new();
    for w in chosen(args) {
        let mut bench = Bench::new(budget(args.quick), alloc, false, &mut step);
        outcomes.extend((w.run)(&mut bench));
    }
    print!("{}", report::json(&outcomes, &machine()));
}

/// The samples a whole run takes, for the progress bar: each workload run
/// once as a counting pass per process it runs in.
fn count_samples(args: &Args, own: GlobalAllocator) -> usize {
    let budget = budget(args.quick);
    let mut nothing = |_: &str| {};
    chosen(args)
        .iter()
        .map(|w| {
            let processes: Vec<GlobalAllocator> = if w.per_allocator {
                args.allocs.clone()
            } else {
                vec![own]
            };
            processes
                .into_iter()
                .map(|alloc| {
                    let mut bench = Bench::counting(budget, alloc, alloc == own, &mut nothing);
                    (w.run)(&mut bench);
                    bench.counted()
                })
                .sum::<usize>()
        })
        .sum()
}

fn run(args: &Args) -> Result<(), String> {
    let own = GlobalAllocator::current();
    if args.no_pin {
        affinity::set_enabled(false);
    }
    if args.child {
        run_child(args, own);
        return Ok(());
    }
    let budget = budget(args.quick);
    let machine = machine();
    println!("recycler compare: {machine}");
    let others: Vec<&str> = args
        .allocs
        .iter()
        .filter(|a| **a != own)
        .map(|a| a.name())
        .collect();
    let also: Vec<&str> = args.allocs.iter().map(|a| a.name()).collect();
    println!(
        "global allocator: {own} ({ENV}); W1, W2, W2M and W9 run under {}{}\n",
        also.join(", "),
        if others.is_empty() {
            String::new()
        } else {
            format!(" ({} in child processes)", others.join(", "))
        }
    );
    println!("{}", legend::legend(budget, &affinity::status()));
    let to = if std::io::stderr().is_terminal() {
        ProgressTo::Bar
    } else {
        ProgressTo::Nowhere
    };
    let mut progress = Progress::new(count_samples(args, own), to);
    let mut outcomes = Vec::new();
    let mut failures = Vec::new();
    // Every target line printed, with the table (and column) it comes from.
    let mut target_lines: Vec<(String, String)> = Vec::new();
    let mut keep_targets = |place: &str, notes: &[String]| {
        for note in notes.iter().filter(|n| targets::parse(n).is_some()) {
            target_lines.push((place.to_string(), note.clone()));
        }
    };
    for w in chosen(args) {
        let started = Instant::now();
        let mut done: Vec<Outcome> = Vec::new();
        if w.per_allocator {
            for &alloc in &args.allocs {
                if alloc == own {
                    let mut step = |what: &str| progress.step(what);
                    let mut bench = Bench::new(budget, own, true, &mut step);
                    done.extend((w.run)(&mut bench));
                    continue;
                }
                let mut warnings = Vec::new();
                let result = child::run(
                    w.id,
                    alloc,
                    args.quick,
                    args.no_pin,
                    &mut |what| progress.step(what),
                    &mut |line| warnings.push(line.to_string()),
                );
                progress.clear();
                warnings.iter().for_each(|l| eprintln!("{l}"));
                match result {
                    Ok(o) => done.extend(o),
                    Err(e) => {
                        eprintln!("compare: {e}");
                        failures.push(e);
                    }
                }
            }
            progress.clear();
            for group in report::group_by_title(&done) {
                let summary = (w.summary)(&group);
                println!("{}", report::matrix(&group, &summary, w.best));
                for o in &group {
                    keep_targets(&format!("{} {}", w.id, o.alloc), &o.notes);
                }
                keep_targets(w.id, &summary);
            }
        } else {
            let mut step = |what: &str| progress.step(what);
            let mut bench = Bench::new(budget, own, true, &mut step);
            done = (w.run)(&mut bench);
            progress.clear();
            for o in &done {
                println!("{}", report::table(o));
                keep_targets(w.id, &o.notes);
            }
        }
        println!(
            "    ({} took {:.1}s)\n",
            w.id,
            started.elapsed().as_secs_f64()
        );
        outcomes.extend(done);
    }
    println!("{}", targets::summary(&target_lines));
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
    if failures.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} child process(es) failed; their columns are missing",
            failures.len()
        ))
    }
}

fn main() -> ExitCode {
    if let Err(e) = recycler_benches::check_env() {
        eprintln!("compare: {e}");
        return ExitCode::from(2);
    }
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
        assert!(!a.child);
        let a = parse(&[]).unwrap().unwrap();
        assert_eq!(
            a.workloads,
            [
                "W1", "W2", "W2M", "W3", "W4", "W5", "W6", "W7", "W8", "W9", "W10"
            ]
        );
        assert!(!a.no_pin);
        assert!(parse(&["--no-pin"]).unwrap().unwrap().no_pin);
        assert_eq!(a.allocs, GlobalAllocator::ALL);
        assert!(parse(&["--help"]).unwrap().is_none());
        assert!(parse(&["-h"]).unwrap().is_none());
    }

    #[test]
    fn parses_workloads_and_allocators() {
        let a = parse(&["--workload", "w2m"]).unwrap().unwrap();
        assert_eq!(a.workloads, ["W2M"]);
        let a = parse(&[
            "--workload=w9,W1,w9",
            "--alloc",
            "Mimalloc,system",
            "--child",
        ])
        .unwrap()
        .unwrap();
        assert_eq!(a.workloads, ["W9", "W1"]);
        assert_eq!(
            a.allocs,
            [GlobalAllocator::Mimalloc, GlobalAllocator::System]
        );
        assert!(a.child);
        let a = parse(&["--alloc", "system,all"]).unwrap().unwrap();
        assert_eq!(
            a.allocs,
            [
                GlobalAllocator::System,
                GlobalAllocator::Jemalloc,
                GlobalAllocator::Mimalloc
            ]
        );
    }

    #[test]
    fn usage_names_every_flag_and_workload() {
        for flag in [
            "--quick",
            "--no-pin",
            "--workload",
            "--alloc",
            "--json",
            "--plot",
            "--child",
            "--help",
        ] {
            assert!(USAGE.contains(flag), "{flag}");
        }
        assert!(USAGE.contains("W2M") && USAGE.contains("W3 to W10"));
        assert_eq!(WORKLOADS.last().map(|w| w.id), Some("W10"));
    }

    #[test]
    fn rejects_bad_arguments() {
        assert!(
            parse(&["--workload", "W11"])
                .unwrap_err()
                .contains("unknown workload `W11`")
        );
        assert!(
            parse(&["--alloc", "tcmalloc"])
                .unwrap_err()
                .contains("unknown allocator `tcmalloc`")
        );
        assert!(parse(&["--alloc"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--json"]).unwrap_err().contains("needs a value"));
        assert!(parse(&["--fast"]).unwrap_err().contains("unknown argument"));
    }
}
