//! The per-CPU cache on restartable sequences (`recycler_core::__PerCpu`,
//! not part of the API) under races: more threads than CPUs popping and
//! pushing, one thread stealing and draining, and forced preemption (the
//! workers yield, and a thread sends them signals while they run, which
//! the kernel answers by restarting any section it lands in). Every object
//! is counted: made = in the caches + in hand + stolen, each exactly once,
//! and each object's own state word catches a second pop of an object
//! already out.
//!
//! The stress runs in a child process (a bug here is a double free or a
//! crash, which must fail the test, not the suite). It runs in the mode the
//! environment selects (the whole file runs again with
//! `RECYCLER_NO_RSEQ=1`), and once more with the fallback forced; a third
//! child runs under valgrind, which has no `rseq`, to check that the cache
//! takes the fallback there.

use std::sync::Arc;
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicU8, AtomicU64, Ordering::Relaxed, Ordering::SeqCst,
};
use std::thread;
use std::time::{Duration, Instant};

use recycler_core::__PerCpu as PerCpu;

/// The environment variable naming the child's case.
const CHILD: &str = "RECYCLER_PERCPU_CHILD";
/// The switch that forces the fallback.
const NO_RSEQ: &str = "RECYCLER_NO_RSEQ";

/// Where an object is: in a cache, or out (in a thread's hand, stolen).
const IN: u8 = 1;
const OUT: u8 = 0;

struct Obj {
    id: u64,
    state: AtomicU8,
}

impl Obj {
    /// Before a push: it was out.
    fn put_in(&self) {
        let was = self.state.swap(IN, SeqCst);
        assert_eq!(was, OUT, "object {} pushed while in a cache", self.id);
    }

    /// After a push that failed.
    fn back_out(&self) {
        self.state.store(OUT, SeqCst);
    }

    /// After a pop or a steal: it was in a cache, and no one else took it.
    fn take_out(&self) {
        let was = self.state.swap(OUT, SeqCst);
        assert_eq!(was, IN, "object {} taken twice", self.id);
    }
}

/// A small xorshift generator, one per thread.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// What a child reports.
#[derive(Debug, Default)]
struct Report {
    rseq: bool,
    made: u64,
    ops: u64,
    aborts: u64,
    slow: u64,
    fences: u64,
    signals: u64,
}

impl Report {
    fn parse(stdout: &str) -> Option<Self> {
        // The harness prints `test child ... ` before it on the same line.
        let line = stdout
            .lines()
            .find_map(|l| l.split_once("percpu-report "))?
            .1;
        let mut r = Report::default();
        for kv in line.split_whitespace().take_while(|kv| kv.contains('=')) {
            let (k, v) = kv.split_once('=')?;
            let n: u64 = v.parse().ok()?;
            match k {
                "rseq" => r.rseq = n != 0,
                "made" => r.made = n,
                "ops" => r.ops = n,
                "aborts" => r.aborts = n,
                "slow" => r.slow = n,
                "fences" => r.fences = n,
                "signals" => r.signals = n,
                _ => return None,
            }
        }
        Some(r)
    }
}

extern "C" fn on_signal(_: libc::c_int) {}

/// Pins the thread `tid` (0: the calling thread) to `cpu`.
fn pin(tid: libc::pid_t, cpu: usize) {
    // SAFETY: a zeroed `cpu_set_t` is an empty set; `CPU_SET` writes inside
    // it; `sched_setaffinity` reads it. The thread is alive (the callers'
    // ordering), or `tid` names the caller.
    let rc = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(tid, size_of::<libc::cpu_set_t>(), &set)
    };
    assert_eq!(rc, 0, "pin {tid} to {cpu}");
}

/// A no-op `SIGUSR1` handler, restarting interrupted system calls.
fn install_handler() {
    // SAFETY: a zeroed `sigaction` with a handler that does nothing
    // (async-signal-safe), an empty mask and `SA_RESTART`.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as *const () as libc::sighandler_t;
        action.sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut action.sa_mask);
        assert_eq!(
            libc::sigaction(libc::SIGUSR1, &action, std::ptr::null_mut()),
            0
        );
    }
}

/// The stress: `workers` threads pop and push for `run`, one steals, one
/// signals the workers; then every object is counted.
fn stress(workers: usize, run: Duration, limit: u64) -> Report {
    install_handler();
    let cache: Arc<PerCpu<Obj>> = Arc::new(PerCpu::new(16));
    let made = Arc::new(AtomicU64::new(0));
    let ops = Arc::new(AtomicU64::new(0));
    let stop_signals = Arc::new(AtomicBool::new(false));
    let stop = Arc::new(AtomicBool::new(false));

    let cpus = thread::available_parallelism().map_or(1, usize::from);
    // Worker 0's thread id, for the signaller to move it between CPUs.
    let migrant = Arc::new(AtomicI32::new(0));
    let mut handles = Vec::new();
    for w in 0..workers {
        let (cache, made, ops, stop) = (
            Arc::clone(&cache),
            Arc::clone(&made),
            Arc::clone(&ops),
            Arc::clone(&stop),
        );
        let migrant = Arc::clone(&migrant);
        handles.push(thread::spawn(move || {
            if w == 0 {
                // SAFETY: no preconditions.
                migrant.store(unsafe { libc::gettid() }, SeqCst);
            } else if w >= workers / 2 {
                // Half the workers stay on one CPU each (more of them than
                // CPUs: they preempt each other there); the others move.
                pin(0, w % cpus);
            }
            let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ ((w as u64 + 1) * 0x1234_5678));
            let mut hand: Vec<Box<Obj>> = Vec::new();
            let mut n = 0u64;
            while !stop.load(Relaxed) {
                n += 1;
                let push = !hand.is_empty() && (hand.len() > 24 || rng.next().is_multiple_of(2));
                if push {
                    let obj = hand.pop().unwrap();
                    obj.put_in();
                    if let Err(obj) = cache.push(obj) {
                        obj.back_out();
                        hand.push(obj);
                    }
                } else if let Some(obj) = cache.pop() {
                    obj.take_out();
                    hand.push(obj);
                } else if made.load(Relaxed) < limit {
                    let id = made.fetch_add(1, SeqCst);
                    hand.push(Box::new(Obj {
                        id,
                        state: AtomicU8::new(OUT),
                    }));
                }
                if n.is_multiple_of(64) {
                    // SAFETY: no preconditions.
                    unsafe { libc::sched_yield() };
                }
            }
            ops.fetch_add(n, Relaxed);
            hand
        }));
    }

    let stealer = {
        let (cache, stop) = (Arc::clone(&cache), Arc::clone(&stop));
        thread::spawn(move || {
            let mut rng = Rng(0xDEAD_BEEF_CAFE_F00D);
            let mut stolen: Vec<Box<Obj>> = Vec::with_capacity(4096);
            let mut rounds = 0u64;
            while !stop.load(Relaxed) {
                rounds += 1;
                let before = stolen.len();
                if rounds.is_multiple_of(16) {
                    let all = cache.drain();
                    stolen.extend(all);
                } else {
                    // Another CPU's slot: a worker may be in a section
                    // there right now.
                    // SAFETY: no preconditions.
                    let own = unsafe { libc::sched_getcpu() }.max(0) as u64;
                    let others = cache.slots().max(2) as u64 - 1;
                    let slot = ((own + 1 + rng.next() % others) % cache.slots() as u64) as usize;
                    let max = (rng.next() % 8 + 1) as usize;
                    stolen.reserve(max);
                    cache.steal(slot, max, &mut stolen);
                }
                for obj in &stolen[before..] {
                    obj.take_out();
                }
                // Give some back, from whatever CPU this thread is on.
                if rounds.is_multiple_of(4) {
                    while stolen.len() > 64 {
                        let obj = stolen.pop().unwrap();
                        obj.put_in();
                        if let Err(obj) = cache.push(obj) {
                            obj.back_out();
                            stolen.push(obj);
                            break;
                        }
                    }
                }
                if rounds.is_multiple_of(8) {
                    thread::yield_now();
                }
            }
            stolen
        })
    };

    // The signaller: SIGUSR1 to every worker, over and over, while they run.
    let threads: Vec<libc::pthread_t> = {
        use std::os::unix::thread::JoinHandleExt;
        handles.iter().map(|h| h.as_pthread_t()).collect()
    };
    let signals = Arc::new(AtomicU64::new(0));
    while migrant.load(SeqCst) == 0 {
        thread::yield_now();
    }
    let signaller = {
        let (stop_signals, signals) = (Arc::clone(&stop_signals), Arc::clone(&signals));
        let migrant = migrant.load(SeqCst);
        thread::spawn(move || {
            let mut round = 0;
            while !stop_signals.load(Relaxed) {
                // Worker 0 to the next CPU, wherever it is in its loop.
                round += 1;
                pin(migrant, round % cpus);
                for &t in &threads {
                    // SAFETY: the workers are alive until this thread is
                    // joined (they stop only after it).
                    let rc = unsafe { libc::pthread_kill(t, libc::SIGUSR1) };
                    assert_eq!(rc, 0);
                    signals.fetch_add(1, Relaxed);
                }
                thread::sleep(Duration::from_micros(20));
            }
        })
    };

    let start = Instant::now();
    while start.elapsed() < run {
        thread::sleep(Duration::from_millis(10));
    }
    stop_signals.store(true, SeqCst);
    signaller.join().unwrap();
    stop.store(true, SeqCst);

    let mut all: Vec<Box<Obj>> = Vec::new();
    for h in handles {
        all.extend(h.join().unwrap());
    }
    let stolen = stealer.join().unwrap();
    all.extend(stolen);
    for obj in &all {
        assert_eq!(obj.state.load(SeqCst), OUT, "object {} out", obj.id);
    }
    let idle = cache.idle();
    let cached = cache.drain();
    assert_eq!(cached.len(), idle, "drain takes what the caches hold");
    for obj in &cached {
        obj.take_out();
    }
    all.extend(cached);

    let made = made.load(SeqCst);
    let mut ids: Vec<u64> = all.iter().map(|o| o.id).collect();
    ids.sort_unstable();
    let expected: Vec<u64> = (0..made).collect();
    assert!(
        ids == expected,
        "made {made}, counted {} ({} distinct)",
        ids.len(),
        {
            let mut d = ids.clone();
            d.dedup();
            d.len()
        }
    );
    assert!(made > 0);
    Report {
        rseq: cache.uses_rseq(),
        made,
        ops: ops.load(SeqCst),
        aborts: cache.aborts(),
        slow: cache.slow_ops(),
        fences: cache.fences(),
        signals: signals.load(SeqCst),
    }
}

/// The child: runs the case its environment names (nothing when run as an
/// ordinary test).
#[test]
fn child() {
    let Ok(case) = std::env::var(CHILD) else {
        return;
    };
    let r = match case.as_str() {
        "stress" => stress(8, Duration::from_millis(1500), 2000),
        // Under valgrind: a short run (every operation is slowed 50 times).
        "short" => stress(4, Duration::from_millis(300), 200),
        other => panic!("unknown case {other}"),
    };
    println!(
        "percpu-report rseq={} made={} ops={} aborts={} slow={} fences={} signals={}",
        u8::from(r.rseq),
        r.made,
        r.ops,
        r.aborts,
        r.slow,
        r.fences,
        r.signals
    );
}

/// Runs `case` in a child process (under `wrapper`, if any), with the
/// environment changes given; fails with its output if it failed.
fn run_child(case: &str, wrapper: &[&str], env: &[(&str, Option<&str>)]) -> Report {
    let exe = std::env::current_exe().unwrap();
    let mut cmd = match wrapper.split_first() {
        Some((program, args)) => {
            let mut c = std::process::Command::new(program);
            c.args(args).arg(&exe);
            c
        }
        None => std::process::Command::new(&exe),
    };
    cmd.args(["child", "--exact", "--test-threads=1", "--nocapture"])
        .env(CHILD, case);
    for (k, v) in env {
        match v {
            Some(v) => cmd.env(k, v),
            None => cmd.env_remove(k),
        };
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success() && stdout.contains("1 passed"),
        "{case}: {}\nstdout:\n{stdout}\nstderr:\n{stderr}",
        out.status
    );
    let report = Report::parse(&stdout).unwrap_or_else(|| panic!("no report in:\n{stdout}"));
    println!("{case} {wrapper:?}: {report:?}");
    report
}

fn forced_off() -> bool {
    std::env::var_os(NO_RSEQ).is_some_and(|v| !v.is_empty() && v != "0")
}

/// In the mode the environment selects. With sections, the run must have
/// restarted some (signals and fences land inside them), shut some out
/// (the stealer) and fenced.
#[test]
fn stress_in_the_mode_selected() {
    if under_valgrind() {
        return;
    }
    let r = run_child("stress", &[], &[]);
    if forced_off() {
        assert!(!r.rseq, "{NO_RSEQ} is set: {r:?}");
    }
    if r.rseq {
        assert!(r.aborts > 0, "no section was restarted: {r:?}");
        assert!(r.slow > 0, "no section found its slot shut: {r:?}");
        assert!(r.fences > 0, "{r:?}");
    } else {
        assert_eq!((r.aborts, r.slow, r.fences), (0, 0, 0), "{r:?}");
    }
    assert!(r.signals > 1000, "{r:?}");
}

/// With the switch set, whatever the environment of the suite.
#[test]
fn stress_on_the_forced_fallback() {
    if under_valgrind() {
        return;
    }
    let r = run_child("stress", &[], &[(NO_RSEQ, Some("1"))]);
    assert!(!r.rseq, "{r:?}");
    assert_eq!((r.aborts, r.slow, r.fences), (0, 0, 0), "{r:?}");
}

/// Whether this process runs under valgrind (its preload library).
fn under_valgrind() -> bool {
    std::env::var("LD_PRELOAD").is_ok_and(|p| p.contains("vgpreload"))
}

/// Whether this binary was built with AddressSanitizer: as it starts, its
/// runtime reserves the shadow gap of x86-64 Linux, from `0x8fff7000`
/// (its symbols are not exported, so `dlsym` cannot tell).
fn under_asan() -> bool {
    std::fs::read_to_string("/proc/self/maps")
        .is_ok_and(|maps| maps.lines().any(|l| l.starts_with("8fff7000-")))
}

/// Valgrind has no `rseq` (glibc reports `__rseq_size` 0 there): the cache
/// must take the fallback, and work.
#[test]
fn valgrind_takes_the_fallback() {
    if under_valgrind() {
        // Already under it (the CI's valgrind run): check in place.
        let cache: PerCpu<u8> = PerCpu::new(4);
        assert!(!cache.uses_rseq(), "{cache:?}");
        return;
    }
    if under_asan() {
        // AddressSanitizer's shadow memory and valgrind do not mix.
        println!("built with AddressSanitizer: skipped");
        return;
    }
    let found = std::process::Command::new("valgrind")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !found {
        println!("valgrind is not installed: skipped");
        return;
    }
    let r = run_child(
        "short",
        &["valgrind", "-q", "--error-exitcode=1"],
        &[(NO_RSEQ, None)],
    );
    assert!(!r.rseq, "{r:?}");
}
