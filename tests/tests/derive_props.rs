//! Properties of `#[derive(Recyclable)]` over realistic shapes: after any
//! mutation, `reset()` makes a value equal to `T::default()`, its
//! collections keep their capacity (a `shrink_to` field keeps at most its
//! limit), and `retained_bytes` still counts what is kept.
#![deny(warnings)]

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::fmt::Debug;
use std::hash::Hash;
use std::mem::size_of;
use std::time::Duration;

use proptest::collection::{btree_set, hash_map, vec};
use proptest::prelude::*;
use recycler_core::Recyclable;

const BODY_LIMIT: usize = 4096;

#[derive(Recyclable, Default, Debug, PartialEq, Clone)]
struct HttpRequest {
    method: String,
    uri: String,
    version: u8,
    headers: Vec<(String, String)>,
    query: HashMap<String, String>,
    #[recycle(shrink_to = 4096)]
    body: Vec<u8>,
    content_length: Option<u64>,
    keep_alive: bool,
    #[recycle(default)]
    timeout: Duration,
}

/// The capacities `reset` must keep (all but `body`, which is capped).
fn request_capacities(r: &HttpRequest) -> [usize; 4] {
    [
        r.method.capacity(),
        r.uri.capacity(),
        r.headers.capacity(),
        r.query.capacity(),
    ]
}

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Session {
    request: HttpRequest,
    history: VecDeque<HttpRequest>,
    tags: BTreeSet<String>,
    scratch: Box<Scratch>,
    counters: [u32; 4],
    state: Message,
}

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Scratch {
    bytes: Vec<u8>,
}

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Table<K: Eq + Hash, V> {
    rows: Vec<(K, V)>,
    index: HashMap<K, usize>,
    pending: Option<V>,
    generation: u64,
}

#[derive(Recyclable, Default, Debug, PartialEq, Clone)]
enum Message {
    #[default]
    #[recycle(default)]
    Empty,
    Text(String),
    Binary {
        data: Vec<u8>,
        compressed: bool,
    },
    Requests(Vec<HttpRequest>),
}

/// Neither `Recyclable` nor `Default`: `Log<Entry>` derives only thanks to
/// `bound = ""`.
#[derive(Debug, Clone, PartialEq)]
struct Entry(u64, String);

/// A generic struct whose collections need no bound on `T`, with an enum
/// marked by std's `#[default]` alone.
#[derive(Recyclable, Debug, PartialEq)]
#[recycle(bound = "")]
struct Log<T> {
    entries: Vec<T>,
    by_id: HashMap<u64, T>,
    last: Option<T>,
    phase: Phase,
}

impl<T> Default for Log<T> {
    fn default() -> Self {
        Self {
            entries: Vec::new(),
            by_id: HashMap::new(),
            last: None,
            phase: Phase::default(),
        }
    }
}

#[derive(Recyclable, Default, Debug, PartialEq, Clone)]
enum Phase {
    #[default]
    Open,
    Flushing(Vec<u8>),
    Closed {
        reason: String,
    },
}

/// One use of a pooled request: what a parser would write into it.
#[derive(Debug, Clone)]
struct RequestWrite {
    method: String,
    uri: String,
    version: u8,
    headers: Vec<(String, String)>,
    query: HashMap<String, String>,
    body: Vec<u8>,
    content_length: Option<u64>,
    keep_alive: bool,
    timeout_ms: u64,
}

impl RequestWrite {
    fn apply(&self, r: &mut HttpRequest) {
        r.method.push_str(&self.method);
        r.uri.push_str(&self.uri);
        r.version = self.version;
        r.headers.extend(self.headers.iter().cloned());
        r.query.extend(self.query.clone());
        r.body.extend_from_slice(&self.body);
        r.content_length = self.content_length;
        r.keep_alive = self.keep_alive;
        r.timeout = Duration::from_millis(self.timeout_ms);
    }
}

fn text() -> impl Strategy<Value = String> {
    "[a-zA-Z0-9/_.-]{0,24}"
}

fn request_write() -> impl Strategy<Value = RequestWrite> {
    (
        (
            "GET|POST|PUT|DELETE",
            text(),
            any::<u8>(),
            vec((text(), text()), 0..8),
        ),
        (
            hash_map(text(), text(), 0..8),
            // Mostly small bodies, sometimes one far over the limit.
            prop_oneof![4 => vec(any::<u8>(), 0..512), 1 => vec(any::<u8>(), 0..20_000)],
            any::<Option<u64>>(),
            any::<bool>(),
            any::<u64>(),
        ),
    )
        .prop_map(
            |((method, uri, version, headers), (query, body, content_length, keep_alive, t))| {
                RequestWrite {
                    method,
                    uri,
                    version,
                    headers,
                    query,
                    body,
                    content_length,
                    keep_alive,
                    timeout_ms: t,
                }
            },
        )
}

fn request() -> impl Strategy<Value = HttpRequest> {
    request_write().prop_map(|w| {
        let mut r = HttpRequest::default();
        w.apply(&mut r);
        r
    })
}

fn message() -> impl Strategy<Value = Message> {
    prop_oneof![
        Just(Message::Empty),
        text().prop_map(Message::Text),
        (vec(any::<u8>(), 0..256), any::<bool>())
            .prop_map(|(data, compressed)| Message::Binary { data, compressed }),
        vec(request(), 0..3).prop_map(Message::Requests),
    ]
}

/// What `reset` must do to `value`, whatever it holds.
fn check_reset<T: Recyclable + Default + PartialEq + Debug>(value: &mut T) {
    value.reset();
    assert_eq!(*value, T::default());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A request reused for several messages in a row.
    #[test]
    fn request_resets_and_keeps_capacity(writes in vec(request_write(), 1..4)) {
        let mut r = HttpRequest::default();
        for write in &writes {
            write.apply(&mut r);
            let kept = request_capacities(&r);
            let body = r.body.capacity();
            let retained = r.retained_bytes();

            check_reset(&mut r);
            prop_assert_eq!(request_capacities(&r), kept);
            prop_assert_eq!(r.body.capacity(), body.min(BODY_LIMIT));
            prop_assert_eq!(r.retained_bytes(), retained - (body - r.body.capacity()));
        }
    }

    #[test]
    fn nested_struct_resets_at_every_level(
        writes in vec(request_write(), 0..3),
        history in vec(request(), 0..4),
        tags in btree_set(text(), 0..6),
        scratch in vec(any::<u8>(), 0..1024),
        counters in any::<[u32; 4]>(),
        state in message(),
    ) {
        let mut s = Session::default();
        for write in &writes {
            write.apply(&mut s.request);
        }
        s.history.extend(history);
        s.tags.extend(tags);
        s.scratch.bytes.extend_from_slice(&scratch);
        s.counters = counters;
        s.state = state;
        let kept = (
            request_capacities(&s.request),
            s.history.capacity(),
            s.scratch.bytes.capacity(),
        );

        check_reset(&mut s);
        prop_assert_eq!(
            (request_capacities(&s.request), s.history.capacity(), s.scratch.bytes.capacity()),
            kept
        );
    }

    #[test]
    fn generic_struct_resets_for_several_instantiations(
        rows in vec((text(), vec(any::<u8>(), 0..64)), 0..16),
        numbers in vec((any::<u64>(), text()), 0..16),
        generation in any::<u64>(),
    ) {
        fn fill<K, V>(rows: &[(K, V)], generation: u64) -> Result<(), TestCaseError>
        where
            K: Recyclable + Default + Eq + Hash + Clone + Debug,
            V: Recyclable + Default + Clone + Debug + PartialEq,
        {
            let mut table = Table::<K, V>::default();
            for (i, (k, v)) in rows.iter().enumerate() {
                table.rows.push((k.clone(), v.clone()));
                table.index.insert(k.clone(), i);
                table.pending = Some(v.clone());
            }
            table.generation = generation;
            let kept = (table.rows.capacity(), table.index.capacity());
            let retained = table.retained_bytes();

            check_reset(&mut table);
            prop_assert_eq!((table.rows.capacity(), table.index.capacity()), kept);
            prop_assert_eq!(table.retained_bytes(), retained);
            Ok(())
        }
        fill(&rows, generation)?;
        fill(&numbers, generation)?;
    }

    #[test]
    fn bound_struct_resets_and_keeps_capacity(
        entries in vec((any::<u64>(), text()), 0..32),
        phase in prop_oneof![
            Just(Phase::Open),
            vec(any::<u8>(), 0..64).prop_map(Phase::Flushing),
            text().prop_map(|reason| Phase::Closed { reason }),
        ],
    ) {
        let mut log = Log::<Entry>::default();
        for (id, text) in entries {
            let entry = Entry(id, text);
            log.entries.push(entry.clone());
            log.by_id.insert(id, entry.clone());
            log.last = Some(entry);
        }
        log.phase = phase;
        let kept = (log.entries.capacity(), log.by_id.capacity());
        let collections = kept.0 * size_of::<Entry>() + kept.1 * size_of::<(u64, Entry)>();
        prop_assert_eq!(log.retained_bytes(), collections + log.phase.retained_bytes());

        check_reset(&mut log);
        prop_assert_eq!((log.entries.capacity(), log.by_id.capacity()), kept);
        prop_assert_eq!(log.retained_bytes(), collections);
    }

    #[test]
    fn enum_resets_to_its_default_variant(mut m in message()) {
        check_reset(&mut m);
        prop_assert_eq!(m.retained_bytes(), 0);
    }
}
