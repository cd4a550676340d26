//! Model-based tests: random scripts of operations on a recycler or a
//! buffer pool, checked after every step against a small reference model of
//! the counts.
//!
//! A script runs on the test thread and on a helper thread that the script
//! sends guards to, has release them or get its own, and ends ("thread
//! exit") when the script says so; the next helper step starts a new one.
//! Some steps run with a user hook armed to panic (a `reset`, the factory,
//! `retained_bytes`, the next `Drop`); the step is then caught with
//! `catch_unwind` wherever the library lets the panic through.
//!
//! The model knows what the test holds (guards on each thread, detached
//! objects) and how many gets succeeded. After each step, with the helper
//! idle, it checks the recycler's statistics: objects in use and detached
//! as the model says, made = in use + idle + dropped + detached, objects
//! alive (counted by the payload's own `Drop`) = in use + idle + detached
//! and still held, every object handed out reset, and idle memory within
//! its documented bound. At the end of a script every idle object must be
//! reachable, and under a cap their bytes must be the figure counted.
//!
//! A failure shrinks to a short script, printed one step a line; guard
//! numbers index the guards held on that thread and wrap around.

mod common;

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, Once, mpsc};
use std::thread;

use common::{Counted, Counts, builder};
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use recycler_core::buffer::{BufferPool, BufferPoolStats, OwnedPooledBuf};
use recycler_core::{AcquireError, OwnedPooled, Recycler};

/// Steps per script, at most.
const MAX_STEPS: usize = 40;

/// The most `u64`s a payload's vector holds: its capacity stays at most 64,
/// so an object retains at most this many bytes.
const MAX_LEN: usize = 64;
const BIGGEST_OBJECT: u64 = MAX_LEN as u64 * 8;

/// Keeps the panics the scripts inject (their messages end in "(test)") out
/// of the output; every other panic is reported as usual.
fn quiet_injected_panics() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let payload = info.payload();
            let msg = payload
                .downcast_ref::<&str>()
                .copied()
                .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
            if !msg.is_some_and(|m| m.ends_with("(test)")) {
                default(info);
            }
        }));
    });
}

// ---- the helper thread -----------------------------------------------------

enum Cmd<G> {
    /// Hold this guard.
    Take(G),
    /// Get a guard of this thread's own (a size, for buffers).
    Make(usize),
    /// Release the guard at this index (wrapping).
    Release(usize),
    /// Exit: hand every guard back, or release them first.
    Exit { hand_back: bool },
}

struct Reply<G> {
    panicked: bool,
    held: usize,
    /// The sum of `weight` over the guards held (bytes, for buffers).
    weight: u64,
    handed_back: Vec<G>,
}

/// A thread that holds guards and releases them on command.
struct Helper<G> {
    tx: mpsc::Sender<Cmd<G>>,
    rx: mpsc::Receiver<Reply<G>>,
    handle: thread::JoinHandle<()>,
    held: usize,
    weight: u64,
}

impl<G: Send + 'static> Helper<G> {
    fn spawn(make: impl Fn(usize) -> Option<G> + Send + 'static, weight: fn(&G) -> u64) -> Self {
        let (tx, cmds) = mpsc::channel::<Cmd<G>>();
        let (replies, rx) = mpsc::channel();
        let handle = thread::spawn(move || {
            let mut held: Vec<G> = Vec::new();
            for cmd in cmds {
                let mut handed_back = Vec::new();
                let mut exit = false;
                let panicked = match cmd {
                    Cmd::Take(g) => {
                        held.push(g);
                        false
                    }
                    Cmd::Make(size) => match catch_unwind(AssertUnwindSafe(|| make(size))) {
                        Ok(g) => {
                            held.extend(g);
                            false
                        }
                        Err(_) => true,
                    },
                    Cmd::Release(i) if !held.is_empty() => {
                        let g = held.remove(i % held.len());
                        catch_unwind(AssertUnwindSafe(|| drop(g))).is_err()
                    }
                    Cmd::Release(_) => false,
                    Cmd::Exit { hand_back } => {
                        exit = true;
                        if hand_back {
                            handed_back = std::mem::take(&mut held);
                            false
                        } else {
                            let mut panicked = false;
                            for g in held.drain(..) {
                                panicked |= catch_unwind(AssertUnwindSafe(|| drop(g))).is_err();
                            }
                            panicked
                        }
                    }
                };
                let reply = Reply {
                    panicked,
                    held: held.len(),
                    weight: held.iter().map(weight).sum(),
                    handed_back,
                };
                replies.send(reply).unwrap();
                if exit {
                    break;
                }
            }
        });
        Self {
            tx,
            rx,
            handle,
            held: 0,
            weight: 0,
        }
    }

    /// Runs `cmd` on the helper and waits until it is idle again.
    fn run(&mut self, cmd: Cmd<G>) -> Reply<G> {
        self.tx.send(cmd).unwrap();
        let reply = self.rx.recv().unwrap();
        self.held = reply.held;
        self.weight = reply.weight;
        reply
    }

    /// Ends the thread; returns its guards if `hand_back`. Waits for the
    /// thread's exit hooks (`join` does).
    fn exit(mut self, hand_back: bool) -> Reply<G> {
        let reply = self.run(Cmd::Exit { hand_back });
        self.handle
            .join()
            .expect("the helper thread exits normally");
        reply
    }
}

// ---- recycler scripts ------------------------------------------------------

/// A user hook armed to panic during one step.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Hook {
    Reset,
    Factory,
    RetainedBytes,
    /// The next `Drop` only.
    Drop,
}

#[derive(Clone, Copy)]
enum Op {
    Get,
    TryGet,
    Release(usize),
    /// Pushes this many values into a guard's vector (up to `MAX_LEN`).
    Push(usize, usize),
    Detach(usize),
    DropDetached,
    Send(usize),
    HelperGet,
    HelperRelease(usize),
    HelperExit {
        hand_back: bool,
    },
    Trim,
    Prefill(usize),
}

impl fmt::Debug for Op {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Op::Get => write!(f, "get"),
            Op::TryGet => write!(f, "try_get"),
            Op::Release(i) => write!(f, "release guard {i}"),
            Op::Push(i, n) => write!(f, "push {n} values into guard {i}"),
            Op::Detach(i) => write!(f, "detach guard {i} (into_inner)"),
            Op::DropDetached => write!(f, "drop a detached object"),
            Op::Send(i) => write!(f, "send guard {i} to the helper thread"),
            Op::HelperGet => write!(f, "helper: get"),
            Op::HelperRelease(i) => write!(f, "helper: release guard {i}"),
            Op::HelperExit { hand_back: true } => {
                write!(f, "helper: exit, handing its guards back")
            }
            Op::HelperExit { hand_back: false } => {
                write!(f, "helper: release its guards, then exit")
            }
            Op::Trim => write!(f, "trim"),
            Op::Prefill(n) => write!(f, "prefill {n}"),
        }
    }
}

#[derive(Clone, Copy)]
struct Step {
    fault: Option<Hook>,
    op: Op,
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.fault {
            None => write!(f, "{:?}", self.op),
            Some(hook) => write!(f, "with a panicking {hook:?}: {:?}", self.op),
        }
    }
}

/// A script, printed one numbered step a line.
#[derive(Clone)]
struct Script<S>(Vec<S>);

impl<S: fmt::Debug> fmt::Debug for Script<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "Script:")?;
        for (i, step) in self.0.iter().enumerate() {
            writeln!(f, "  {:>2}. {step:?}", i + 1)?;
        }
        Ok(())
    }
}

/// The recycler's settings.
#[derive(Clone, Copy, Debug)]
struct Setup {
    max_capacity_per_thread: usize,
    batch_size: usize,
    depot_capacity: usize,
    ratio: usize,
    max_idle_bytes: Option<usize>,
    reset_on_return: bool,
}

fn op() -> impl Strategy<Value = Op> {
    let i = 0..8usize;
    prop_oneof![
        4 => Just(Op::Get),
        1 => Just(Op::TryGet),
        4 => i.clone().prop_map(Op::Release),
        2 => (i.clone(), 1..24usize).prop_map(|(i, n)| Op::Push(i, n)),
        1 => i.clone().prop_map(Op::Detach),
        1 => Just(Op::DropDetached),
        3 => i.clone().prop_map(Op::Send),
        2 => Just(Op::HelperGet),
        3 => i.prop_map(Op::HelperRelease),
        1 => any::<bool>().prop_map(|hand_back| Op::HelperExit { hand_back }),
        1 => Just(Op::Trim),
        1 => (1..6usize).prop_map(Op::Prefill),
    ]
}

fn step() -> impl Strategy<Value = Step> {
    let hook = prop_oneof![
        Just(Hook::Reset),
        Just(Hook::Factory),
        Just(Hook::RetainedBytes),
        Just(Hook::Drop),
    ];
    (prop::option::weighted(0.15, hook), op()).prop_map(|(fault, op)| Step { fault, op })
}

fn script() -> impl Strategy<Value = Script<Step>> {
    vec(step(), 1..MAX_STEPS).prop_map(Script)
}

fn setup(capped: bool, reset_on_return: bool) -> impl Strategy<Value = Setup> {
    let cap = if capped {
        (64..2048usize).prop_map(Some).boxed()
    } else {
        Just(None).boxed()
    };
    (0..6usize, 1..5usize, 0..10usize, 1..4usize, cap).prop_map(
        move |(max, batch, depot, ratio, max_idle_bytes)| Setup {
            max_capacity_per_thread: max,
            batch_size: batch,
            depot_capacity: depot,
            ratio,
            max_idle_bytes,
            reset_on_return,
        },
    )
}

type Guard = OwnedPooled<Counted>;

/// The test's side of a recycler script: what it holds and has seen.
struct RecyclerModel {
    setup: Setup,
    counts: Arc<Counts>,
    pool: Arc<Recycler<Counted>>,
    held: Vec<Guard>,
    helper: Option<Helper<Guard>>,
    detached: Vec<Counted>,
    detached_ever: u64,
    gets: u64,
    /// A `retained_bytes` has panicked: the idle-bytes figure may overstate
    /// from then on (by the bytes nobody could measure), never understate.
    unmeasured: bool,
}

impl RecyclerModel {
    fn new(setup: Setup) -> Self {
        let counts = Counts::new();
        let mut b = builder(&counts)
            .max_capacity_per_thread(setup.max_capacity_per_thread)
            // A batch above the capacity is refused by `build()`; the
            // recycler capped it, which is what the model assumed.
            .batch_size(match setup.max_capacity_per_thread {
                0 => setup.batch_size,
                max => setup.batch_size.min(max),
            })
            .depot_capacity(setup.depot_capacity)
            .ratio(setup.ratio)
            .reset_on_return(setup.reset_on_return);
        if let Some(cap) = setup.max_idle_bytes {
            b = b.max_idle_bytes(cap);
        }
        Self {
            setup,
            counts,
            pool: Arc::new(b.build().unwrap()),
            held: Vec::new(),
            helper: None,
            detached: Vec::new(),
            detached_ever: 0,
            gets: 0,
            unmeasured: false,
        }
    }

    fn helper(&mut self) -> &mut Helper<Guard> {
        let pool = Arc::clone(&self.pool);
        self.helper
            .get_or_insert_with(|| Helper::spawn(move |_| Some(pool.get_owned()), |_| 0))
    }

    fn arm(&self, hook: Option<Hook>) {
        let c = &self.counts;
        match hook {
            None => {}
            Some(Hook::Reset) => c.reset_panics.store(true, SeqCst),
            Some(Hook::Factory) => c.factory_panics.store(true, SeqCst),
            Some(Hook::RetainedBytes) => c.retained_panics.store(true, SeqCst),
            Some(Hook::Drop) => c.drop_panics.store(1, SeqCst),
        }
    }

    fn disarm(&self) {
        let c = &self.counts;
        c.reset_panics.store(false, SeqCst);
        c.factory_panics.store(false, SeqCst);
        c.retained_panics.store(false, SeqCst);
        c.drop_panics.store(0, SeqCst);
    }

    /// A guard just handed out: counted, and reset.
    fn got(&mut self, g: Guard) -> Result<(), TestCaseError> {
        prop_assert!(g.data.is_empty(), "handed out unreset: {:?}", g.data);
        self.gets += 1;
        self.held.push(g);
        Ok(())
    }

    fn run(&mut self, step: Step) -> Result<(), TestCaseError> {
        self.arm(step.fault);
        if step.fault == Some(Hook::RetainedBytes) && self.setup.max_idle_bytes.is_some() {
            self.unmeasured = true;
        }
        let result = self.run_op(step.op);
        self.disarm();
        result
    }

    fn run_op(&mut self, op: Op) -> Result<(), TestCaseError> {
        let n = self.held.len();
        match op {
            Op::Get => {
                if let Ok(g) = catch_unwind(AssertUnwindSafe(|| self.pool.get_owned())) {
                    self.got(g)?;
                }
            }
            Op::TryGet => {
                if let Ok(Some(g)) = catch_unwind(AssertUnwindSafe(|| self.pool.try_get())) {
                    // A borrowed guard: checked, counted, then released.
                    prop_assert!(g.data.is_empty(), "handed out unreset");
                    self.gets += 1;
                    let _ = catch_unwind(AssertUnwindSafe(|| drop(g)));
                }
            }
            Op::Release(i) if n > 0 => {
                let g = self.held.remove(i % n);
                let _ = catch_unwind(AssertUnwindSafe(|| drop(g)));
            }
            Op::Push(i, k) if n > 0 => {
                let data = &mut self.held[i % n].data;
                let k = k.min(MAX_LEN - data.len());
                data.extend((0..k).map(|v| v as u64));
            }
            Op::Detach(i) if n > 0 => {
                let g = self.held.remove(i % n);
                self.detached.push(OwnedPooled::into_inner(g));
                self.detached_ever += 1;
            }
            Op::DropDetached => {
                if let Some(obj) = self.detached.pop() {
                    let _ = catch_unwind(AssertUnwindSafe(|| drop(obj)));
                }
            }
            Op::Send(i) if n > 0 => {
                let g = self.held.remove(i % n);
                self.helper().run(Cmd::Take(g));
            }
            Op::HelperGet => {
                let before = self.helper().held;
                let reply = self.helper().run(Cmd::Make(0));
                if !reply.panicked && reply.held > before {
                    self.gets += 1;
                }
            }
            Op::HelperRelease(i) => {
                self.helper().run(Cmd::Release(i));
            }
            Op::HelperExit { hand_back } => {
                if let Some(helper) = self.helper.take() {
                    let reply = helper.exit(hand_back);
                    self.held.extend(reply.handed_back);
                }
            }
            Op::Trim => {
                let _ = catch_unwind(AssertUnwindSafe(|| self.pool.trim()));
            }
            Op::Prefill(k) => {
                let _ = catch_unwind(AssertUnwindSafe(|| self.pool.prefill(k)));
            }
            Op::Release(_) | Op::Push(..) | Op::Detach(_) | Op::Send(_) => {}
        }
        Ok(())
    }

    fn in_use(&self) -> u64 {
        (self.held.len() + self.helper.as_ref().map_or(0, |h| h.held)) as u64
    }

    /// The checks after every step, with the helper idle.
    fn check(&self) -> Result<(), TestCaseError> {
        let s = self.pool.stats();
        prop_assert_eq!(s.in_use, self.in_use(), "in use: {}", s);
        prop_assert_eq!(s.detached, self.detached_ever, "detached: {}", s);
        prop_assert_eq!(s.gets, self.gets, "gets: {}", s);
        prop_assert_eq!(s.created, self.counts.made(), "created vs made: {}", s);
        prop_assert_eq!(
            s.created,
            s.in_use + s.idle + s.dropped + s.detached,
            "books: {}",
            s
        );
        prop_assert_eq!(
            self.counts.alive(),
            s.in_use + s.idle + self.detached.len() as u64,
            "objects alive vs in use + idle + detached and kept: {}",
            s
        );
        if let Some(cap) = self.setup.max_idle_bytes {
            // Two threads release: one other thread's unpublished delta and
            // object in flight at most.
            let bound = cap as u64 + (cap as u64 / 8).max(1) + BIGGEST_OBJECT;
            prop_assert!(s.idle_bytes <= bound, "idle bytes above {}: {}", bound, s);
        }
        Ok(())
    }

    /// The end of a script: the helper exits, everything is released, and
    /// every idle object is reachable from this thread, with the bytes
    /// counted.
    fn finish(mut self) -> Result<(), TestCaseError> {
        if let Some(helper) = self.helper.take() {
            self.held.extend(helper.exit(true).handed_back);
        }
        for g in self.held.drain(..) {
            drop(g);
        }
        self.check()?;
        // Take every idle object: each is reachable, or dropped when found
        // (a batch sent home to an exited thread's cache, with no room in
        // the depot).
        let mut reachable = Vec::new();
        while let Some(g) = self.pool.try_get() {
            prop_assert!(g.data.is_empty(), "handed out unreset");
            reachable.push(g);
        }
        let s = self.pool.stats();
        prop_assert_eq!(s.idle, 0, "every idle object reachable: {}", s);
        prop_assert_eq!(s.in_use, reachable.len() as u64, "{}", s);
        prop_assert_eq!(
            self.counts.alive(),
            s.in_use + self.detached.len() as u64,
            "{}",
            s
        );
        if self.setup.max_idle_bytes.is_some() && !self.unmeasured {
            prop_assert_eq!(s.idle_bytes, 0, "nothing idle, no idle bytes: {}", s);
        }
        Ok(())
    }
}

fn run_recycler_script(setup: Setup, script: Script<Step>) -> Result<(), TestCaseError> {
    quiet_injected_panics();
    let mut model = RecyclerModel::new(setup);
    for step in script.0 {
        model.run(step)?;
        model.check()?;
    }
    model.finish()
}

/// The same scripts on every run, so that a failure reproduces as is, and
/// no files written; `PROPTEST_CASES` and `PROPTEST_RNG_SEED` override the
/// count and the seed (for a longer search).
fn config() -> ProptestConfig {
    let mut config = ProptestConfig::default();
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = CASES;
    }
    if std::env::var_os("PROPTEST_RNG_SEED").is_none() {
        config.rng_seed = RngSeed::Fixed(0x7265_6379_636c_6572);
    }
    config.failure_persistence = None;
    config
}

/// Scripts per property: the whole file runs in about a second in a debug
/// build.
const CASES: u32 = 256;

proptest! {
    #![proptest_config(config())]

    /// A recycler without a cap, resetting on release.
    #[test]
    fn recycler(setup in setup(false, true), script in script()) {
        run_recycler_script(setup, script)?;
    }

    /// A recycler under `max_idle_bytes`.
    #[test]
    fn recycler_with_an_idle_cap(setup in setup(true, true), script in script()) {
        run_recycler_script(setup, script)?;
    }

    /// A recycler with `reset_on_return(false)`: foreign releases reset at
    /// home.
    #[test]
    fn recycler_with_deferred_reset(setup in setup(false, false), script in script()) {
        run_recycler_script(setup, script)?;
    }
}

// ---- buffer pool scripts ---------------------------------------------------

const STEP: usize = 1024;
const MAX_CAPACITY: usize = 8 * STEP;

#[derive(Clone)]
enum BufOp {
    Acquire(usize),
    Release(usize),
    /// Writes this many bytes into a buffer, growing it if need be.
    Write(usize, usize),
    Send(usize),
    HelperAcquire(usize),
    HelperRelease(usize),
    HelperExit {
        hand_back: bool,
    },
    /// A scope that allocates these slices, then ends.
    Scope(Vec<usize>),
    Trim,
}

impl fmt::Debug for BufOp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BufOp::Acquire(n) => write!(f, "acquire {n} bytes"),
            BufOp::Release(i) => write!(f, "release buffer {i}"),
            BufOp::Write(i, n) => write!(f, "write {n} bytes into buffer {i}"),
            BufOp::Send(i) => write!(f, "send buffer {i} to the helper thread"),
            BufOp::HelperAcquire(n) => write!(f, "helper: acquire {n} bytes"),
            BufOp::HelperRelease(i) => write!(f, "helper: release buffer {i}"),
            BufOp::HelperExit { hand_back: true } => {
                write!(f, "helper: exit, handing its buffers back")
            }
            BufOp::HelperExit { hand_back: false } => {
                write!(f, "helper: release its buffers, then exit")
            }
            BufOp::Scope(lens) => write!(f, "a scope allocating {lens:?}"),
            BufOp::Trim => write!(f, "trim"),
        }
    }
}

#[derive(Clone, Copy, Debug)]
struct PoolSetup {
    max_idle_memory: Option<usize>,
    max_idle_per_bucket: Option<usize>,
    memory_limit: Option<usize>,
    max_idle_per_thread: usize,
}

fn pool_setup() -> impl Strategy<Value = PoolSetup> {
    (
        prop::option::of(2 * STEP..32 * STEP),
        prop::option::of(0..6usize),
        prop::option::of((2..24usize).prop_map(|k| k * STEP)),
        0..8usize,
    )
        .prop_map(
            |(max_idle_memory, per_bucket, memory_limit, max_idle_per_thread)| PoolSetup {
                // An idle cap above the limit is refused by `build()` (the
                // limit bounds idle memory too): at most the limit here.
                max_idle_memory: match (max_idle_memory, memory_limit) {
                    (Some(cap), Some(limit)) => Some(cap.min(limit)),
                    (cap, _) => cap,
                },
                max_idle_per_bucket: per_bucket,
                memory_limit,
                max_idle_per_thread,
            },
        )
}

fn buf_op() -> impl Strategy<Value = BufOp> {
    let i = 0..8usize;
    let size = prop_oneof![
        4 => 0..MAX_CAPACITY + 1,
        4 => (1..=MAX_CAPACITY / STEP).prop_map(|k| k * STEP),
        1 => MAX_CAPACITY + 1..3 * MAX_CAPACITY,
    ];
    // The helper weighs little, so that scripts often run with no other
    // thread alive, where every idle buffer is within reach.
    prop_oneof![
        6 => size.clone().prop_map(BufOp::Acquire),
        5 => i.clone().prop_map(BufOp::Release),
        2 => (i.clone(), 1..3 * STEP).prop_map(|(i, n)| BufOp::Write(i, n)),
        2 => i.clone().prop_map(BufOp::Send),
        1 => size.prop_map(BufOp::HelperAcquire),
        2 => i.prop_map(BufOp::HelperRelease),
        2 => any::<bool>().prop_map(|hand_back| BufOp::HelperExit { hand_back }),
        1 => vec(0..3 * STEP, 1..5).prop_map(BufOp::Scope),
        1 => Just(BufOp::Trim),
    ]
}

/// The test's side of a buffer pool script.
struct PoolModel {
    setup: PoolSetup,
    pool: Arc<BufferPool>,
    held: Vec<OwnedPooledBuf>,
    helper: Option<Helper<OwnedPooledBuf>>,
}

/// What a request of `size` bytes allocates: its bucket's capacity, or the
/// size itself above the largest bucket.
fn allocation(size: usize) -> usize {
    if size <= MAX_CAPACITY {
        size.max(1).div_ceil(STEP) * STEP
    } else {
        size
    }
}

fn made_and_gone(s: &BufferPoolStats) -> (u64, u64) {
    let made = s.buckets.iter().map(|b| b.non_pooled).sum::<u64>() + s.oversize.non_pooled;
    let gone = s
        .buckets
        .iter()
        .chain([&s.oversize])
        .map(|b| b.in_use + b.idle + b.evicts + b.removes)
        .sum();
    (made, gone)
}

impl PoolModel {
    fn new(setup: PoolSetup) -> Self {
        let mut b = BufferPool::builder()
            .bucket_step(STEP)
            .max_capacity(MAX_CAPACITY)
            .max_idle_per_thread(setup.max_idle_per_thread);
        if let Some(cap) = setup.max_idle_memory {
            b = b.max_idle_memory(cap);
        }
        if let Some(n) = setup.max_idle_per_bucket {
            b = b.max_idle_per_bucket(n);
        }
        if let Some(limit) = setup.memory_limit {
            b = b.memory_limit(limit);
        }
        Self {
            setup,
            pool: Arc::new(b.build().unwrap()),
            held: Vec::new(),
            helper: None,
        }
    }

    fn helper(&mut self) -> &mut Helper<OwnedPooledBuf> {
        let pool = Arc::clone(&self.pool);
        self.helper.get_or_insert_with(|| {
            Helper::spawn(
                move |size| pool.try_acquire_owned(size).ok(),
                |b| b.capacity() as u64,
            )
        })
    }

    fn held_bytes(&self) -> u64 {
        let here: u64 = self.held.iter().map(|b| b.capacity() as u64).sum();
        here + self.helper.as_ref().map_or(0, |h| h.weight)
    }

    fn limit_failure(&self, err: &AcquireError) -> Result<(), TestCaseError> {
        prop_assert!(
            matches!(err, AcquireError::LimitExceeded { .. }) && self.setup.memory_limit.is_some(),
            "unexpected failure: {err}"
        );
        Ok(())
    }

    fn run(&mut self, op: BufOp) -> Result<(), TestCaseError> {
        let n = self.held.len();
        match op {
            BufOp::Acquire(size) => {
                let fits = self
                    .setup
                    .memory_limit
                    .is_none_or(|l| self.held_bytes() + allocation(size) as u64 <= l as u64);
                match self.pool.try_acquire_owned(size) {
                    Ok(b) => {
                        prop_assert!(b.is_empty() && b.capacity() >= size);
                        self.held.push(b);
                    }
                    Err(err) => {
                        self.limit_failure(&err)?;
                        // With no other thread alive, every idle buffer is
                        // within reach: what fits beside the buffers held
                        // must be had.
                        prop_assert!(
                            !fits || self.helper.is_some(),
                            "{} refused with {} bytes held: {}",
                            err,
                            self.held_bytes(),
                            self.pool.stats()
                        );
                    }
                }
            }
            BufOp::Release(i) if n > 0 => drop(self.held.remove(i % n)),
            BufOp::Write(i, len) if n > 0 => {
                let buf = &mut self.held[i % n];
                match buf.try_reserve(len) {
                    Ok(()) => {
                        let before = buf.len();
                        buf.extend_from_slice(&vec![7; len]);
                        prop_assert_eq!(buf.len(), before + len);
                    }
                    Err(err) => self.limit_failure(&err)?,
                }
            }
            BufOp::Send(i) if n > 0 => {
                let b = self.held.remove(i % n);
                self.helper().run(Cmd::Take(b));
            }
            BufOp::HelperAcquire(size) => {
                self.helper().run(Cmd::Make(size));
            }
            BufOp::HelperRelease(i) => {
                self.helper().run(Cmd::Release(i));
            }
            BufOp::HelperExit { hand_back } => {
                if let Some(helper) = self.helper.take() {
                    self.held.extend(helper.exit(hand_back).handed_back);
                }
            }
            BufOp::Scope(lens) => {
                let scope = self.pool.scope();
                for len in lens {
                    match scope.try_alloc(len) {
                        Ok(slice) => {
                            prop_assert_eq!(slice.len(), len);
                            slice.fill(1);
                        }
                        Err(err) => self.limit_failure(&err)?,
                    }
                }
            }
            BufOp::Trim => self.pool.trim(),
            BufOp::Release(_) | BufOp::Write(..) | BufOp::Send(_) => {}
        }
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let s = self.pool.stats();
        let (made, gone) = made_and_gone(&s);
        prop_assert_eq!(made, gone, "every buffer counted once: {}", s);
        let in_use = s.total().in_use;
        let held = self.held.len() + self.helper.as_ref().map_or(0, |h| h.held);
        prop_assert_eq!(in_use, held as u64, "in use: {}", s);
        prop_assert_eq!(
            s.allocated_memory,
            self.held_bytes() + s.idle_memory,
            "memory: {}",
            s
        );
        if self.setup.max_idle_memory.is_some() || self.setup.max_idle_per_bucket.is_some() {
            prop_assert_eq!(s.idle_memory, s.accounted_idle_memory, "counted: {}", s);
        }
        if let Some(n) = self.setup.max_idle_per_bucket {
            // Two threads release: one other thread's unpublished delta
            // (below `max(n / 8, 2)` buffers) and buffer in flight at most.
            let bound = (n + (n / 8).max(2) + 1) as u64;
            for b in &s.buckets {
                prop_assert!(b.idle <= bound, "bucket idle above {}: {}", bound, s);
            }
        }
        if let Some(limit) = self.setup.memory_limit {
            prop_assert!(s.allocated_memory <= limit as u64, "over the limit: {}", s);
        }
        if let Some(cap) = self.setup.max_idle_memory {
            // One other thread's unpublished delta, and a buffer in flight;
            // with the bucket cap too, the deltas are per bucket, and the
            // pool's account misses every thread's deltas for the buckets
            // other than the one it releases into (docs/buffers.md).
            let slack = match self.setup.max_idle_per_bucket {
                None => (cap / 8).max(2 * MAX_CAPACITY),
                Some(n) => {
                    let per_bucket = |c: usize| (n * c / 8).max(2 * c);
                    2 * (1..=MAX_CAPACITY / STEP)
                        .map(|i| per_bucket(i * STEP))
                        .sum::<usize>()
                }
            };
            let bound = (cap + slack + MAX_CAPACITY) as u64;
            prop_assert!(s.idle_memory <= bound, "idle above {}: {}", bound, s);
        }
        Ok(())
    }

    fn finish(mut self) -> Result<(), TestCaseError> {
        if let Some(helper) = self.helper.take() {
            self.held.extend(helper.exit(true).handed_back);
        }
        self.held.clear();
        self.check()?;
        self.pool.trim();
        let s = self.pool.stats();
        prop_assert_eq!(s.allocated_memory, 0, "every idle buffer reachable: {}", s);
        prop_assert_eq!(s.accounted_idle_memory, 0, "{}", s);
        prop_assert_eq!(s.total().idle, 0, "{}", s);
        Ok(())
    }
}

proptest! {
    #![proptest_config(config())]

    /// A buffer pool with or without an idle cap, a limit, growth, scopes.
    #[test]
    fn buffer_pool(setup in pool_setup(), script in vec(buf_op(), 1..MAX_STEPS).prop_map(Script)) {
        let mut model = PoolModel::new(setup);
        for op in script.0 {
            model.run(op)?;
            model.check()?;
        }
        model.finish()?;
    }
}
