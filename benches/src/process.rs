//! What the examples that measure memory need of their own process: its
//! resident set from `/proc/self/status`, and running one contender in a
//! child process (this executable again), so that each contender's peak
//! resident set (`VmHWM`) is its own.

use std::process::Command;

/// A line of `/proc/self/status` in KiB (`key` is e.g. `"VmHWM:"` or
/// `"VmRSS:"`); `None` where the file or the line is missing (not Linux).
pub fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))
        .and_then(|v| v.trim().strip_suffix("kB"))
        .and_then(|v| v.trim().parse().ok())
}

/// The peak resident set of this process, in KiB (`VmHWM`; 0 if unknown).
pub fn peak_rss_kib() -> u64 {
    status_kib("VmHWM:").unwrap_or(0)
}

/// The resident set of this process now, in KiB (`VmRSS`; 0 if unknown).
pub fn rss_kib() -> u64 {
    status_kib("VmRSS:").unwrap_or(0)
}

/// Runs this executable again with `args` (the environment inherited) and
/// returns what it printed, trimmed; panics with its standard error if it
/// fails.
pub fn run_self(args: &[&str]) -> String {
    let exe = std::env::current_exe().expect("the path of this executable");
    let out = Command::new(exe)
        .args(args)
        .output()
        .expect("the child process starts");
    assert!(
        out.status.success(),
        "child {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
