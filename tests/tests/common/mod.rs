//! A payload that counts how many of it were made and destroyed, so tests can
//! check that every object is accounted for.

#![allow(dead_code)] // each test file uses its own subset

use std::io::Read;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::time::{Duration, Instant};

use recycler_core::buffer::BufferPoolStats;
use recycler_core::{Recyclable, Recycler, RecyclerBuilder};

/// Tallies shared by every `Counted` of one test.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) made: AtomicU64,
    pub(crate) destroyed: AtomicU64,
    pub(crate) resets: AtomicU64,
    /// While set, `reset` panics.
    pub(crate) reset_panics: AtomicBool,
    /// While set, the factory panics.
    pub(crate) factory_panics: AtomicBool,
    /// While set, `retained_bytes` panics (after `retained_skip` more calls
    /// that do not).
    pub(crate) retained_panics: AtomicBool,
    pub(crate) retained_skip: AtomicU64,
    /// How many more `Drop`s panic (after counting the object destroyed);
    /// none while the dropping thread is already panicking, which would
    /// abort.
    pub(crate) drop_panics: AtomicU64,
}

impl Counts {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    pub(crate) fn made(&self) -> u64 {
        self.made.load(SeqCst)
    }

    pub(crate) fn destroyed(&self) -> u64 {
        self.destroyed.load(SeqCst)
    }

    /// Objects that exist right now.
    pub(crate) fn alive(&self) -> u64 {
        self.made() - self.destroyed()
    }
}

/// A payload with a heap part, counted.
#[derive(Debug)]
pub(crate) struct Counted {
    pub(crate) counts: Arc<Counts>,
    pub(crate) data: Vec<u64>,
    /// Which object this is, for tests that follow one object around.
    pub(crate) serial: u64,
}

impl Counted {
    pub(crate) fn new(counts: &Arc<Counts>) -> Self {
        if counts.factory_panics.load(SeqCst) {
            panic!("factory failure (test)");
        }
        let serial = counts.made.fetch_add(1, SeqCst);
        Self {
            counts: Arc::clone(counts),
            data: Vec::with_capacity(4),
            serial,
        }
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.counts.destroyed.fetch_add(1, SeqCst);
        if std::thread::panicking() {
            return;
        }
        let panics = &self.counts.drop_panics;
        if panics
            .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
            .is_ok()
        {
            panic!("drop failure (test)");
        }
    }
}

impl Recyclable for Counted {
    fn reset(&mut self) {
        if self.counts.reset_panics.load(SeqCst) {
            panic!("reset failure (test)");
        }
        self.counts.resets.fetch_add(1, SeqCst);
        self.data.clear();
    }

    fn retained_bytes(&self) -> usize {
        if self.counts.retained_panics.load(SeqCst)
            && self
                .counts
                .retained_skip
                .fetch_update(SeqCst, SeqCst, |n| n.checked_sub(1))
                .is_err()
        {
            panic!("retained_bytes failure (test)");
        }
        self.data.capacity() * 8
    }
}

/// A recycler of `Counted` with default settings.
pub(crate) fn recycler(counts: &Arc<Counts>) -> Recycler<Counted> {
    let counts = Arc::clone(counts);
    Recycler::with_factory(move || Counted::new(&counts))
}

/// A builder of a recycler of `Counted`.
pub(crate) fn builder(counts: &Arc<Counts>) -> RecyclerBuilder<Counted> {
    let counts = Arc::clone(counts);
    Recycler::builder_with_factory(move || Counted::new(&counts))
}

/// Checks that the recycler's books match the objects that exist, once all
/// threads are quiet: every object made is in use, idle, dropped or detached
/// (`detached_alive` of the detached ones are still held by the test).
pub(crate) fn assert_conserved(pool: &Recycler<Counted>, counts: &Counts, detached_alive: u64) {
    let s = pool.stats();
    assert_eq!(s.created, counts.made(), "created vs made: {s}");
    assert_eq!(
        s.created,
        s.in_use + s.idle + s.dropped + s.detached,
        "books: {s}"
    );
    assert_eq!(
        counts.alive(),
        s.in_use + s.idle + detached_alive,
        "objects alive vs books: {s}"
    );
}

/// Takes every object the calling thread can reach without the factory, and
/// returns how many (they go back when the guards drop).
pub(crate) fn drain_reachable(pool: &Recycler<Counted>) -> u64 {
    let mut held = Vec::new();
    while let Some(g) = pool.try_get() {
        held.push(g);
    }
    held.len() as u64
}

/// Checks a buffer pool's books: every buffer it made (every acquire that
/// allocated, oversize ones and overdrafts included, and every buffer
/// prefilled) is in use, idle, evicted or removed (an overdraft is always
/// removed when released: freed, never pooled). Also the overdraft and the
/// waiting books: the bytes held outside the limit are held by buffers in
/// use (none once none is), violations are overdrafts, and every wait that
/// joined a queue is waiting still, or was served, timed out or cancelled.
pub(crate) fn assert_buffers_counted(s: &BufferPoolStats) {
    let made: u64 = s
        .buckets
        .iter()
        .map(|b| b.non_pooled + b.prefilled)
        .sum::<u64>()
        + s.oversize.non_pooled;
    let gone: u64 = s
        .buckets
        .iter()
        .chain([&s.oversize])
        .map(|b| b.in_use + b.idle + b.evicts + b.removes)
        .sum();
    assert_eq!(made, gone, "every buffer made is counted once: {s}");
    let total = s.total();
    if s.statistics && total.in_use == 0 {
        assert_eq!(
            s.overdraft_memory, 0,
            "no buffer in use holds an overdraft: {s}"
        );
    }
    assert!(
        s.limit_violations <= s.overdrafts,
        "a violation is an overdraft: {s}"
    );
    assert!(
        s.overdrafts == 0 || s.memory_limit.is_some(),
        "no overdraft without a limit: {s}"
    );
    for b in s.buckets.iter().chain([&s.oversize]) {
        assert!(
            b.waits >= b.waiting + b.timeouts + b.cancelled,
            "every wait is waiting, served, timed out or cancelled: {b}"
        );
    }
}

/// A small deterministic generator (xorshift), one per thread.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The environment variable that tells a re-run test binary which test it
/// runs as a child process.
const CHILD: &str = "RECYCLER_TESTS_CHILD";

/// Runs `body` in a child process: this test binary, run again with only
/// the test `name` (its full path, as `cargo test -- --list` shows it), so
/// that an abort fails this test instead of killing the whole binary.
/// Asserts that the child ran the test and exited normally.
pub(crate) fn in_child_process(name: &str, body: impl FnOnce()) {
    in_child_process_within(name, Duration::from_secs(600), body);
}

/// [`in_child_process`], failing the test if the child has not exited
/// within `limit` (then it is killed): for a test whose failure is a hang.
pub(crate) fn in_child_process_within(name: &str, limit: Duration, body: impl FnOnce()) {
    if std::env::var_os(CHILD).is_some_and(|v| v == name) {
        body();
        return;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let mut child = Command::new(exe)
        .args([name, "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, name)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary runs again");
    // Read the pipes on threads of their own, so that a child that writes
    // much never blocks on them.
    let mut out_pipe = child.stdout.take().expect("piped");
    let mut err_pipe = child.stderr.take().expect("piped");
    let out_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break Some(status);
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stdout = out_reader.join().unwrap_or_default();
    let stderr = err_reader.join().unwrap_or_default();
    let Some(status) = status else {
        panic!(
            "the child running `{name}` hung: killed after {limit:?}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
        );
    };
    assert!(
        status.success(),
        "the child running `{name}` failed: {status}\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    assert!(
        stdout.contains("1 passed"),
        "the child did not run `{name}`:\n{stdout}"
    );
}
