//! The two-thread pipelines of `compare`, each run in one process per
//! global allocator: W2 (a 64-byte object, producer → consumer) with its
//! targets (the recycler at least `Box` and 2× the fastest peer under
//! every allocator), and W2M, the message pipeline (see
//! [`recycler_benches::w2m_pipeline`]), with its targets (the recycler
//! with its defaults at least 1.5× a fresh `Box` and 1.2× `thingbuf` under
//! every allocator).

use recycler_benches::{
    Boxed, Corpus, LockfreeLinear, LockfreeMutex, LockfreeSpinLock, Message, Msg, OPool,
    ObjectPool, QueueFloor, RecyclerOwned, ShardedSlab, Source, Thingbuf, recyclers,
    w2_producer_consumer, w2m_pipeline,
};
use recycler_core::Recycler;

use crate::common::{
    BOX_MSG, MsgPeers, closest_peer, faster_or_slower, pinning_note, recycler_note,
};
use crate::measure::{Bench, Contender};
use crate::report::{Outcome, Unit};
use crate::targets::{self, Check};

/// A fresh `Box<Message>`, its strings and vectors allocated as it is
/// filled and freed by the consumer.
static BOX_MESSAGE: Boxed<Message> = Boxed::new();

/// The row the ratios are about: the recycler with its defaults.
const OURS: &str = "recycler";

fn contender<'a, S: Source<Object = Message>>(
    name: &'static str,
    source: &'a S,
    corpus: &'a Corpus,
) -> Contender<'a> {
    Contender::new(name, move |n| w2m_pipeline(source, corpus, n).elapsed)
}

/// W2M: producer fills a message, consumer checksums and releases it.
pub(crate) fn w2m(b: &mut Bench<'_>) -> Vec<Outcome> {
    let corpus = Corpus::new();
    let defaults = Recycler::<Message>::new();
    let owned = RecyclerOwned::<Message>::new();
    let at_home = Recycler::<Message>::builder()
        .reset_on_return(false)
        .build()
        .expect("a valid configuration");
    let chan = Thingbuf::<Message>::default();
    let slab = ShardedSlab::<Message>::default();
    let object_pool = ObjectPool::<Message>::default();
    let linear = LockfreeLinear::<Message>::default();
    let spin = LockfreeSpinLock::<Message>::default();
    let mutex = LockfreeMutex::<Message>::default();
    let opool = OPool::<Message>::default();
    let c = &corpus;
    let mut contenders = vec![
        contender(OURS, &defaults, c),
        contender("recycler_owned", &owned, c),
        contender("recycler_reset_at_home", &at_home, c),
        Contender::new("thingbuf", |n| chan.w2m(c, n).elapsed),
        contender("box", &BOX_MESSAGE, c),
        contender("sharded_slab", &slab, c),
        contender("object_pool", &object_pool, c),
        contender("lockfree_linear", &linear, c),
        contender("lockfree_spinlock", &spin, c),
        contender("lockfree_mutex", &mutex, c),
        contender("opool", &opool, c),
    ];
    let results = b.measure("W2M", &mut contenders);
    drop(contenders);
    let mut o = Outcome::new(
        "W2M",
        "message pipeline: one thread fills a message, another checksums and releases it",
        Unit::MopsPerSec,
        OURS,
        b.alloc,
        results,
    );
    o.notes.push(recycler_note(&defaults.stats()));
    if !b.is_counting()
        && let Some(note) = pinning_note()
    {
        o.notes.push(note);
    }
    vec![o]
}

/// The targets of W2M, one line per allocator and target, and how the
/// recycler with `reset_on_return(false)` compares.
pub(crate) fn w2m_summary(group: &[Outcome]) -> Vec<String> {
    let corpus = Corpus::new();
    let mut lines = vec![format!(
        "messages: a String topic, a 256..4096-byte payload, 4..8 header pairs, scalars \
         (pseudo-random sizes, fixed seed); {:.0} bytes encoded on average",
        corpus.mean_encoded_len()
    )];
    for o in group {
        lines.push(targets::ratio(
            &format!("recycler >= 1.5x box under {}", o.alloc),
            Check::AtLeast(1.5),
            o.speedup("box"),
        ));
        lines.push(targets::ratio(
            &format!("recycler >= 1.2x thingbuf under {}", o.alloc),
            Check::AtLeast(1.2),
            o.speedup("thingbuf"),
        ));
        lines.push(targets::ratio(
            &format!("recycler_owned >= recycler under {}", o.alloc),
            Check::AtLeast(1.0),
            o.speedup_of("recycler_owned", OURS),
        ));
    }
    let at_home = |other: &str| {
        group
            .iter()
            .map(|o| {
                o.speedup_of("recycler_reset_at_home", other).map_or_else(
                    || format!("{} -", o.alloc),
                    |x| format!("{} {x:.2}x", o.alloc),
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    lines.push(format!(
        "recycler_reset_at_home (not a target): vs box {}; vs thingbuf {}",
        at_home("box"),
        at_home("thingbuf")
    ));
    lines
}

/// The peers of W2, by row name.
const CROSS_THREAD_PEERS: [&str; 8] = [
    "sharded_slab",
    "object_pool",
    "lockfree_linear",
    "lockfree_spinlock",
    "lockfree_mutex",
    "opool",
    "poolshark",
    "thingbuf",
];

/// The row W2's ratios are about.
const OURS_W2: &str = "recycler";

fn w2_contender<'a, S: Source<Object = Msg>>(name: &'static str, source: &'a S) -> Contender<'a> {
    Contender::new(name, move |n| w2_producer_consumer(source, n))
}

/// W2: producer/consumer across two threads.
pub(crate) fn w2(b: &mut Bench<'_>) -> Vec<Outcome> {
    let recyclers = recyclers::<Msg>();
    let peers = MsgPeers::default();
    let floor = QueueFloor::default();
    let chan = Thingbuf::default();
    let owned = RecyclerOwned::<Msg>::new();
    let mut contenders: Vec<Contender<'_>> = recyclers
        .iter()
        .map(|(name, r)| w2_contender(name, r))
        .collect();
    contenders.extend([
        w2_contender("recycler_owned", &owned),
        w2_contender("box", &BOX_MSG),
        w2_contender("sharded_slab", &peers.slab),
        w2_contender("object_pool", &peers.object_pool),
        w2_contender("lockfree_linear", &peers.linear),
        w2_contender("lockfree_spinlock", &peers.spin),
        w2_contender("lockfree_mutex", &peers.mutex),
        w2_contender("opool", &peers.opool),
        w2_contender("poolshark", &peers.shark),
        Contender::new("thingbuf", |n| chan.w2(n)),
        w2_contender("floor_queue", &floor),
    ]);
    let results = b.measure("W2", &mut contenders);
    drop(contenders);
    let mut o = Outcome::new(
        "W2",
        "producer/consumer: one thread gets, another reads and releases",
        Unit::MopsPerSec,
        recyclers[0].0,
        b.alloc,
        results,
    );
    o.notes.push(recycler_note(&recyclers[0].1.stats()));
    if let (Some(x), Some(floor_vs_box)) = (
        o.speedup_of("floor_queue", OURS_W2),
        o.speedup_of("floor_queue", "box"),
    ) {
        let bound = if floor_vs_box >= 1.0 {
            format!("so in this run no pool could beat box by more than {floor_vs_box:.2}x")
        } else {
            format!(
                "box beat the queue alone ({:.2}x): the floor bounds nothing in this run",
                1.0 / floor_vs_box
            )
        };
        o.notes.push(format!(
            "{}; {bound}",
            faster_or_slower(
                "floor_queue (the queue alone, no pool, no allocation)",
                "the recycler",
                x
            )
        ));
    }
    if !b.is_counting()
        && let Some(note) = pinning_note()
    {
        o.notes.push(note);
    }
    vec![o]
}

pub(crate) fn w2_summary(group: &[Outcome]) -> Vec<String> {
    let mut lines: Vec<String> = group
        .iter()
        .map(|o| {
            targets::ratio(
                &format!("recycler >= box under {}", o.alloc),
                Check::AtLeast(1.0),
                o.speedup("box"),
            )
        })
        .collect();
    for o in group {
        lines.push(targets::ratio(
            &format!("recycler_owned >= recycler under {}", o.alloc),
            Check::AtLeast(1.0),
            o.speedup_of("recycler_owned", OURS_W2),
        ));
    }
    for o in group {
        let closest = closest_peer(o, &CROSS_THREAD_PEERS);
        lines.push(targets::ratio(
            &format!(
                "recycler >= 2x the fastest peer under {} ({})",
                o.alloc,
                closest.map_or("-", |(p, _)| p)
            ),
            Check::AtLeast(2.0),
            closest.map(|(_, x)| x),
        ));
    }
    lines
}
