//! compare's child processes: the same binary, started again with
//! [`ENV`] naming another global allocator, to run one workload and print
//! its outcomes as JSON on standard output. Its progress comes back as
//! lines on standard error, each starting with [`PROGRESS`].

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};

use recycler_benches::{ENV, GlobalAllocator};

use crate::json;
use crate::report::Outcome;

/// How a child's progress line starts; the rest names the sample taken.
pub(crate) const PROGRESS: &str = "compare-progress: ";

/// Runs workload `id` in a child process whose global allocator is
/// `alloc`, with the short budget if `quick`, without pinning threads if
/// `no_pin`; `step` is called for each of its samples, `warn` with every
/// other line it writes to standard error.
pub(crate) fn run(
    id: &str,
    alloc: GlobalAllocator,
    quick: bool,
    no_pin: bool,
    step: &mut dyn FnMut(&str),
    warn: &mut dyn FnMut(&str),
) -> Result<Vec<Outcome>, String> {
    let exe = std::env::current_exe().map_err(|e| {
        format!("cannot find compare's own executable to run {id} under {alloc}: {e}")
    })?;
    let mut cmd = Command::new(&exe);
    cmd.args(["--child", "--workload", id]);
    if quick {
        cmd.arg("--quick");
    }
    if no_pin {
        cmd.arg("--no-pin");
    }
    cmd.env(ENV, alloc.name())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot start {} for {id} under {alloc}: {e}", exe.display()))?;
    let (Some(mut stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(format!("no pipes to the {alloc} process for {id}"));
    };
    // Read standard output on a thread of its own, so that neither pipe
    // can fill up while the other is being read.
    let output = std::thread::spawn(move || {
        let mut s = String::new();
        stdout.read_to_string(&mut s).map(|_| s)
    });
    let mut errors = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.map_err(|e| format!("reading the {alloc} process for {id}: {e}"))?;
        match line.strip_prefix(PROGRESS) {
            Some(what) => step(what),
            None => errors.push(line),
        }
    }
    let status = child
        .wait()
        .map_err(|e| format!("waiting for the {alloc} process for {id}: {e}"))?;
    let output = output
        .join()
        .map_err(|_| format!("reading the {alloc} process for {id}: the reader panicked"))?
        .map_err(|e| format!("reading the {alloc} process for {id}: {e}"))?;
    if !status.success() {
        return Err(format!(
            "the {alloc} process for {id} failed ({status}):\n{}",
            errors.join("\n")
        ));
    }
    errors.iter().for_each(|l| warn(l));
    let outcomes = json::outcomes(&output)
        .map_err(|e| format!("the {alloc} process for {id} wrote bad JSON: {e}"))?;
    if let Some(o) = outcomes.iter().find(|o| o.alloc != alloc) {
        return Err(format!(
            "the process for {id} ran under {}, not under {alloc} as {ENV} asked",
            o.alloc
        ));
    }
    Ok(outcomes)
}
