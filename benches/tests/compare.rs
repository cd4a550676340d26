//! `compare` end to end: the workloads that depend on the global allocator
//! run in one process per allocator, and the tables and the JSON carry a
//! column per allocator. (Structure only: no timing is asserted.)

use std::process::Command;

fn compare() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_compare"));
    cmd.env_remove(recycler_benches::ENV);
    cmd
}

#[test]
fn a_workload_runs_under_every_allocator_in_child_processes() {
    let json = std::env::temp_dir().join(format!("compare-test-{}.json", std::process::id()));
    let out = compare()
        .args(["--quick", "--workload", "W2", "--json"])
        .arg(&json)
        .output()
        .expect("compare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let header = stdout
        .lines()
        .find(|l| l.trim_start().starts_with("jemalloc"))
        .unwrap_or_else(|| panic!("no column header in\n{stdout}"));
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(columns, ["jemalloc", "system", "mimalloc"], "{stdout}");
    for row in ["recycler", "box", "sharded_slab", "poolshark"] {
        let line = stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(row))
            .unwrap_or_else(|| panic!("no row {row} in\n{stdout}"));
        assert!(!line.contains(" - "), "a column is missing: {line}");
    }
    let text = std::fs::read_to_string(&json).expect("the JSON was written");
    let _ = std::fs::remove_file(&json);
    for alloc in ["jemalloc", "system", "mimalloc"] {
        let field = format!("\"global_allocator\": \"{alloc}\"");
        assert_eq!(text.matches(&field).count(), 1, "{alloc} in\n{text}");
    }
}

#[test]
fn the_environment_chooses_compare_s_own_allocator() {
    let out = compare()
        .env(recycler_benches::ENV, "mimalloc")
        .args(["--quick", "--workload", "W8"])
        .output()
        .expect("compare runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    assert!(stdout.contains("global allocator: mimalloc"), "{stdout}");
}

#[test]
fn a_bad_allocator_name_is_refused() {
    let out = compare()
        .env(recycler_benches::ENV, "tcmalloc")
        .arg("--quick")
        .output()
        .expect("compare runs");
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("RECYCLER_BENCHES_ALLOC=tcmalloc names no allocator"),
        "{stderr}"
    );
    let out = compare()
        .args(["--alloc", "tcmalloc"])
        .output()
        .expect("compare runs");
    assert_eq!(out.status.code(), Some(2));
}
