//! `#[derive(Recyclable)]` on every supported shape, each attribute (std's
//! `#[default]` among them), a `no_implicit_prelude` module, and a derived
//! type in a `Recycler` end to end. The whole file denies warnings, so the
//! generated code must not warn.
#![deny(warnings, unused_qualifications)]

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt::Debug;
use std::marker::PhantomData;
use std::mem::size_of;
use std::time::Duration;

use recycler_core::{Recyclable, Recycler};

/// Resets `value` and checks that it equals `T::default()`.
fn assert_resets_to_default<T: Recyclable + Default + PartialEq + Debug>(mut value: T) {
    value.reset();
    assert_eq!(value, T::default());
}

// ---------------------------------------------------------------- structs

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    query: HashMap<String, String>,
    body: Vec<u8>,
    keep_alive: bool,
    content_length: Option<u64>,
}

#[test]
fn named_struct_resets_every_field_and_keeps_capacity() {
    let mut req = Request::default();
    req.method.push_str("POST");
    req.path.push_str("/orders");
    req.headers.push(("host".into(), "example.com".into()));
    req.query.insert("page".into(), "2".into());
    req.body.extend_from_slice(&[7; 300]);
    req.keep_alive = true;
    req.content_length = Some(300);
    let caps = (
        req.path.capacity(),
        req.headers.capacity(),
        req.query.capacity(),
        req.body.capacity(),
    );

    let expected = req.method.capacity()
        + caps.0
        + caps.1 * size_of::<(String, String)>()
        + caps.2 * size_of::<(String, String)>()
        + caps.3;
    assert_eq!(req.retained_bytes(), expected);

    req.reset();
    assert_eq!(req, Request::default());
    assert_eq!(
        caps,
        (
            req.path.capacity(),
            req.headers.capacity(),
            req.query.capacity(),
            req.body.capacity()
        )
    );
    assert_eq!(req.retained_bytes(), expected); // still held, for the next user
}

/// A `repr` other than `packed` is fine.
#[derive(Recyclable, Default, Debug, PartialEq)]
#[repr(C, align(8))]
struct Pair(Vec<u32>, String, u8);

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Marker;

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Empty {}

#[test]
fn tuple_unit_and_empty_structs() {
    let mut pair = Pair(vec![1, 2, 3], "abc".into(), 9);
    let cap = pair.0.capacity();
    assert_eq!(pair.retained_bytes(), cap * 4 + pair.1.capacity());
    pair.reset();
    assert_eq!(pair, Pair::default());
    assert_eq!(pair.0.capacity(), cap);

    let mut marker = Marker;
    marker.reset();
    assert_eq!(marker.retained_bytes(), 0);
    assert_resets_to_default(Empty {});
}

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Envelope {
    request: Request,
    trail: Box<Pair>,
    attempts: [u8; 4],
    pairs: (String, Vec<u16>),
    _unit: PhantomData<fn() -> u8>,
}

#[test]
fn nested_struct_resets_through_each_level() {
    let mut env = Envelope::default();
    env.request.body.extend_from_slice(b"payload");
    env.trail.0.push(1);
    env.attempts = [1, 2, 3, 4];
    env.pairs.1.push(5);
    let body = env.request.body.as_ptr();
    let retained = env.retained_bytes();
    assert!(retained >= env.request.body.capacity() + size_of::<Pair>() + 4);
    env.reset();
    assert_eq!(env, Envelope::default());
    assert_eq!(env.request.body.as_ptr(), body);
    assert_eq!(env.retained_bytes(), retained);
}

// --------------------------------------------------------------- generics

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Batch<T> {
    items: Vec<T>,
    last: Option<T>,
}

/// Lifetimes and const parameters pass through.
#[derive(Recyclable, Debug)]
struct Ring<'a, const N: usize> {
    slots: [Vec<u8>; N],
    #[recycle(skip)]
    name: &'a str,
}

/// A type parameter that only appears in skipped, defaulted or phantom
/// fields gets no `Recyclable` bound.
#[derive(Recyclable, Debug)]
struct Typed<'a, Id, Tag: ?Sized, C>
where
    C: Clone + Debug,
{
    bytes: Vec<u8>,
    #[recycle(skip)]
    id: Id,
    #[recycle(default)]
    context: Option<C>,
    borrowed: PhantomData<&'a Tag>,
}

/// Not `Recyclable`, not `Default`: usable only where no bound asks for it.
#[derive(Debug, Clone, PartialEq)]
struct Opaque(u32);

#[test]
fn generic_structs_bound_only_what_they_reset() {
    let mut batch: Batch<String> = Batch::default();
    batch.items.push("a".into());
    batch.last = Some("b".into());
    let cap = batch.items.capacity();
    batch.reset();
    assert_eq!(batch, Batch::default());
    assert_eq!(batch.items.capacity(), cap);

    let mut typed: Typed<'static, Opaque, str, Opaque> = Typed {
        bytes: vec![1, 2, 3],
        id: Opaque(7),
        context: Some(Opaque(1)),
        borrowed: PhantomData,
    };
    typed.reset();
    assert!(typed.bytes.is_empty());
    assert_eq!(typed.id, Opaque(7));
    assert_eq!(typed.context, None);
    assert_eq!(typed.retained_bytes(), typed.bytes.capacity());

    let mut ring: Ring<'_, 2> = Ring {
        slots: [vec![1], Vec::with_capacity(10)],
        name: "ring",
    };
    ring.reset();
    assert!(ring.slots.iter().all(Vec::is_empty));
    assert_eq!(ring.retained_bytes(), ring.slots[0].capacity() + 10);
    assert_eq!(ring.name, "ring");
}

/// `where` clauses of the user's are kept next to the derived bounds.
#[derive(Recyclable, Default)]
struct Index<K, V>
where
    K: Ord,
{
    by_key: BTreeMap<K, V>,
    order: VecDeque<K>,
}

#[test]
fn where_clauses_are_kept() {
    let mut index: Index<u32, String> = Index::default();
    index.by_key.insert(1, "one".into());
    index.order.push_back(1);
    index.reset();
    assert!(index.by_key.is_empty() && index.order.is_empty());
}

// ----------------------------------------------------------------- enums

#[derive(Recyclable, Default, Debug, PartialEq)]
enum Frame {
    #[default]
    #[recycle(default)]
    Idle,
    Data(Vec<u8>),
    Headers {
        fields: Vec<(String, String)>,
        end_stream: bool,
    },
    Ping([u8; 8]),
}

#[test]
fn enum_resets_to_its_default_variant() {
    for frame in [
        Frame::Idle,
        Frame::Data(vec![1; 100]),
        Frame::Headers {
            fields: vec![("a".into(), "b".into())],
            end_stream: true,
        },
        Frame::Ping([1; 8]),
    ] {
        assert_resets_to_default(frame);
    }
}

#[test]
fn enum_retained_bytes_sums_the_live_variant() {
    let data = Frame::Data(Vec::with_capacity(100));
    assert_eq!(data.retained_bytes(), 100);
    let headers = Frame::Headers {
        fields: Vec::with_capacity(2),
        end_stream: false,
    };
    assert_eq!(headers.retained_bytes(), 2 * size_of::<(String, String)>());
    assert_eq!(Frame::Ping([0; 8]).retained_bytes(), 0);
    assert_eq!(Frame::Idle.retained_bytes(), 0);
}

/// A generic enum; a `skip` field in a variant is left out of
/// `retained_bytes` and needs no `Recyclable`.
#[derive(Recyclable, Debug, PartialEq)]
enum Slot<T> {
    Full(T, #[recycle(skip)] Opaque),
    #[recycle(default)]
    Vacant,
}

#[test]
fn generic_enum_with_skipped_variant_field() {
    let mut slot = Slot::Full(vec![0u64; 4], Opaque(1));
    assert_eq!(slot.retained_bytes(), 4 * 8);
    slot.reset();
    assert_eq!(slot, Slot::Vacant);
    assert_eq!(slot.retained_bytes(), 0);
}

/// An enum whose variants hold nothing to count.
#[derive(Recyclable, Debug, PartialEq, Clone, Copy)]
enum Mode {
    #[recycle(default)]
    Off,
    On,
    Level(u8),
}

#[test]
fn fieldless_enum() {
    let mut mode = Mode::Level(3);
    assert_eq!(mode.retained_bytes(), 0);
    mode.reset();
    assert_eq!(mode, Mode::Off);
    let mut on = Mode::On;
    on.reset();
    assert_eq!(on, Mode::Off);
}

/// An enum with no variants has no values; the derive accepts it.
#[derive(Recyclable)]
enum Never {}

#[test]
fn empty_enum_derives() {
    fn assert_recyclable<T: Recyclable>() {}
    assert_recyclable::<Never>();
}

// ------------------------------------------------------- std's `#[default]`

/// std's `#[default]` alone, without std's `Default` derive, marks the
/// variant `reset` returns to.
#[derive(Recyclable, Debug, PartialEq)]
enum Phase {
    Start,
    #[default]
    Idle,
    Busy(Vec<u8>),
}

#[test]
fn std_default_alone_marks_the_reset_variant() {
    for mut phase in [Phase::Start, Phase::Idle, Phase::Busy(vec![1; 32])] {
        phase.reset();
        assert_eq!(phase, Phase::Idle);
    }
}

/// std's `Default` derive reads the same `#[default]`, before or after this
/// derive, in one `derive` attribute or two: neither takes it from the other.
#[derive(Default, Recyclable, Debug, PartialEq)]
enum DefaultFirst {
    Start,
    #[default]
    Idle,
    Busy(String),
}

#[derive(Recyclable, Default, Debug, PartialEq)]
enum DefaultLast {
    Start,
    #[default]
    Idle,
    Busy(String),
}

#[derive(Recyclable, Default, Debug, PartialEq)]
enum SeparateDerives {
    Start,
    Busy(String),
    #[default]
    Idle,
}

#[test]
fn std_default_is_shared_with_std_derive_default() {
    assert_eq!(DefaultFirst::default(), DefaultFirst::Idle);
    assert_eq!(DefaultLast::default(), DefaultLast::Idle);
    assert_eq!(SeparateDerives::default(), SeparateDerives::Idle);
    for value in [
        DefaultFirst::Start,
        DefaultFirst::Busy("x".into()),
        DefaultFirst::Idle,
    ] {
        assert_resets_to_default(value);
    }
    for value in [DefaultLast::Start, DefaultLast::Busy("x".into())] {
        assert_resets_to_default(value);
    }
    for value in [SeparateDerives::Start, SeparateDerives::Busy("x".into())] {
        assert_resets_to_default(value);
    }
}

#[test]
fn recycler_returns_an_enum_to_its_std_default_variant() {
    let pool: Recycler<DefaultLast> = Recycler::new();
    *pool.get() = DefaultLast::Busy("job".into());
    assert_eq!(*pool.get(), DefaultLast::Idle);
    assert_eq!(pool.stats().hits, 1);
}

// -------------------------------------------------------------- `bound`

/// `bound = ""`: `Vec<T>` and `Option<T>` are `Recyclable` for every `T`, so
/// the inferred `T: Recyclable` is not needed.
#[derive(Recyclable, Debug)]
#[recycle(bound = "")]
struct Queue<T> {
    items: Vec<T>,
    pending: Option<T>,
}

/// `bound = ".."` replaces the inferred bounds with the ones given.
#[derive(Recyclable)]
#[recycle(bound = "T: Clone")]
struct Snapshots<T> {
    history: Vec<T>,
}

#[test]
fn container_bound_replaces_the_inferred_bounds() {
    fn assert_recyclable<T: Recyclable>() {}
    // `Opaque` is neither `Recyclable` nor `Default`.
    assert_recyclable::<Queue<Opaque>>();
    assert_recyclable::<Snapshots<Opaque>>();

    let mut queue = Queue {
        items: vec![Opaque(1), Opaque(2)],
        pending: Some(Opaque(3)),
    };
    let cap = queue.items.capacity();
    assert_eq!(queue.retained_bytes(), cap * size_of::<Opaque>());
    queue.reset();
    assert!(queue.items.is_empty() && queue.pending.is_none());
    assert_eq!(queue.items.capacity(), cap);

    let mut snapshots = Snapshots {
        history: vec![Opaque(1)],
    };
    snapshots.reset();
    assert!(snapshots.history.is_empty());
}

#[test]
fn recycler_of_a_bound_struct_with_a_non_recyclable_parameter() {
    let pool = Recycler::with_factory(|| Queue::<Opaque> {
        items: Vec::with_capacity(8),
        pending: None,
    });
    let mut queue = pool.get();
    queue.items.push(Opaque(7));
    queue.pending = Some(Opaque(8));
    let ptr = queue.items.as_ptr();
    drop(queue);

    let queue = pool.get();
    assert!(queue.items.is_empty() && queue.pending.is_none());
    assert_eq!(queue.items.as_ptr(), ptr, "the same allocation, reused");
}

/// A field's `bound` replaces what is inferred from that field: here
/// `I: Recyclable`, which `I::Item` would otherwise ask, and which an
/// iterator is not.
#[derive(Recyclable)]
struct Lines<I: Iterator> {
    #[recycle(bound = "I::Item: Recyclable")]
    current: I::Item,
    #[recycle(bound = "")]
    seen: Vec<I::Item>,
    #[recycle(skip)]
    source: I,
}

/// The container's `bound` replaces the inferred bounds; the fields' are
/// added to it.
#[derive(Recyclable)]
#[recycle(bound = "")]
struct Mixed<A, B> {
    a: Vec<A>,
    #[recycle(bound = "B: Recyclable")]
    b: B,
}

/// `bound` on a field of an enum variant.
#[derive(Recyclable, Debug, PartialEq)]
enum Cell<T> {
    #[default]
    Empty,
    Many(#[recycle(bound = "")] Vec<T>),
}

#[test]
fn field_bounds() {
    let mut lines = Lines {
        current: String::from("line"),
        seen: vec![String::from("a")],
        source: vec![String::from("b")].into_iter(),
    };
    lines.reset();
    assert!(lines.current.is_empty() && lines.seen.is_empty());
    assert_eq!(lines.source.len(), 1, "skipped");

    let mut mixed = Mixed {
        a: vec![Opaque(1)],
        b: String::from("b"),
    };
    assert_eq!(
        mixed.retained_bytes(),
        mixed.a.capacity() * size_of::<Opaque>() + mixed.b.capacity()
    );
    mixed.reset();
    assert!(mixed.a.is_empty() && mixed.b.is_empty());

    let mut cell = Cell::Many(Vec::with_capacity(4));
    cell.reset();
    assert_eq!(cell, Cell::<Opaque>::Empty);
}

// -------------------------------------------------------- field attributes

const MAX_IDLE_BODY: usize = 1024;

fn clear_keep_first(lines: &mut Vec<String>) {
    lines.truncate(1);
}

mod helpers {
    pub(crate) fn reset_counter(counter: &mut u32) {
        *counter = 100;
    }
}

#[derive(Recyclable, Debug)]
struct Connection {
    read_buf: Vec<u8>,
    peer: String,
    headers: HashMap<String, String>,
    /// Survives reset: counts over the connection's whole life.
    #[recycle(skip)]
    requests_served: u64,
    /// A foreign type that is `Default` but not `Recyclable`.
    #[recycle(default)]
    idle_for: Duration,
    #[recycle(with = clear_keep_first)]
    log: Vec<String>,
    #[recycle(with = "helpers::reset_counter")]
    credits: u32,
    #[recycle(shrink_to = 4096)]
    write_buf: Vec<u8>,
    #[recycle(shrink_to = MAX_IDLE_BODY)]
    body: String,
    #[recycle(shrink_to = 16usize)]
    seen: HashSet<u64>,
    #[recycle(shrink_to = 2 * MAX_IDLE_BODY)]
    out: Vec<u8>,
}

impl Connection {
    fn new() -> Self {
        Self {
            read_buf: Vec::new(),
            peer: String::new(),
            headers: HashMap::new(),
            requests_served: 0,
            idle_for: Duration::ZERO,
            log: Vec::new(),
            credits: 100,
            write_buf: Vec::new(),
            body: String::new(),
            seen: HashSet::new(),
            out: Vec::new(),
        }
    }
}

#[test]
fn field_attributes() {
    let mut conn = Connection::new();
    conn.read_buf.extend_from_slice(&[1; 64]);
    conn.peer.push_str("10.0.0.1:443");
    conn.headers.insert("a".into(), "b".into());
    conn.requests_served = 41;
    conn.idle_for = Duration::from_secs(3);
    conn.log.extend(["first".to_owned(), "second".to_owned()]);
    conn.credits = 3;
    conn.write_buf.extend_from_slice(&[0; 100]);
    conn.body.push_str(&"x".repeat(10_000));
    conn.seen.extend(0..1000);
    conn.out.resize(10_000, 0);
    let write_cap = conn.write_buf.capacity();
    let read_cap = conn.read_buf.capacity();

    // skip, default and with fields count 0 bytes.
    let counted = |c: &Connection| {
        c.read_buf.capacity()
            + c.peer.capacity()
            + c.headers.capacity() * size_of::<(String, String)>()
            + c.write_buf.capacity()
            + c.body.capacity()
            + c.seen.capacity() * 8
            + c.out.capacity()
    };
    assert_eq!(conn.retained_bytes(), counted(&conn));

    conn.reset();
    assert!(conn.read_buf.is_empty() && conn.peer.is_empty() && conn.headers.is_empty());
    assert_eq!(conn.read_buf.capacity(), read_cap);
    assert_eq!(conn.requests_served, 41, "skip keeps the value");
    assert_eq!(
        conn.idle_for,
        Duration::ZERO,
        "default assigns Default::default()"
    );
    assert_eq!(conn.log, ["first"], "with calls the function");
    assert_eq!(conn.credits, 100, "with = \"path\" works too");
    assert!(conn.write_buf.is_empty());
    assert_eq!(
        conn.write_buf.capacity(),
        write_cap,
        "under the limit: kept"
    );
    assert!(conn.body.is_empty());
    assert_eq!(
        conn.body.capacity(),
        MAX_IDLE_BODY,
        "over the limit: shrunk"
    );
    assert!(conn.seen.is_empty() && conn.seen.capacity() <= 16);
    assert_eq!(
        conn.out.capacity(),
        2 * MAX_IDLE_BODY,
        "shrink_to takes a const expression"
    );
    assert_eq!(conn.retained_bytes(), counted(&conn));
}

fn clear_all<T>(items: &mut Vec<T>) {
    items.clear();
}

/// `with` takes any path that coerces to `fn(&mut FieldType)`: a generic
/// function, a method.
#[derive(Recyclable, Default, Debug, PartialEq)]
struct WithPaths {
    #[recycle(with = clear_all)]
    generic: Vec<u32>,
    #[recycle(with = Vec::clear)]
    method: Vec<String>,
    #[recycle(with = String::clear)]
    text: String,
}

#[test]
fn with_generic_functions_and_methods() {
    assert_resets_to_default(WithPaths {
        generic: vec![1],
        method: vec!["a".into()],
        text: "b".into(),
    });
}

#[derive(Recyclable, Default, Debug, PartialEq)]
struct Keywords {
    r#type: String,
    r#match: Vec<u8>,
}

#[test]
fn raw_identifier_fields() {
    assert_resets_to_default(Keywords {
        r#type: "text/plain".into(),
        r#match: vec![1],
    });
}

#[test]
fn retained_bytes_saturates() {
    struct Huge;
    impl Recyclable for Huge {
        fn reset(&mut self) {}
        fn retained_bytes(&self) -> usize {
            usize::MAX
        }
    }
    #[derive(Recyclable)]
    struct Twice(Huge, Huge);
    assert_eq!(Twice(Huge, Huge).retained_bytes(), usize::MAX);
}

/// A recursive type: `Self` and the type's own name in its fields.
#[derive(Recyclable, Default, Debug, PartialEq)]
struct Node {
    label: String,
    children: Vec<Node>,
    parent: Option<Box<Self>>,
}

#[test]
fn recursive_type() {
    let mut node = Node::default();
    node.children.push(Node {
        label: "leaf".into(),
        ..Node::default()
    });
    node.parent = Some(Box::default());
    assert_resets_to_default(node);
}

/// Types declared by a `macro_rules!` macro: field names, `self` and the
/// generated locals come from different hygiene contexts.
macro_rules! declare_message {
    ($name:ident { $($field:ident: $ty:ty),* $(,)? }) => {
        #[derive(Recyclable, Default, Debug, PartialEq)]
        struct $name {
            $($field: $ty,)*
            #[recycle(skip)]
            sequence: u64,
            #[recycle(shrink_to = 8)]
            scratch: Vec<u8>,
        }
    };
}

declare_message!(Quote { symbol: String, prices: Vec<u64> });

#[test]
fn derive_inside_macro_rules() {
    let mut quote = Quote {
        symbol: "ACME".into(),
        prices: vec![1, 2],
        sequence: 9,
        scratch: vec![0; 100],
    };
    quote.reset();
    assert_eq!(
        quote,
        Quote {
            sequence: 9,
            ..Quote::default()
        }
    );
    assert_eq!(quote.scratch.capacity(), 8);
}

// ------------------------------------------------------ container: crate

/// A crate that re-exports `recycler_core` under another path.
mod facade {
    pub(crate) use recycler_core as pool;
}

#[derive(facade::pool::Recyclable, Default, Debug, PartialEq)]
#[recycle(crate = facade::pool)]
struct ViaFacade {
    data: Vec<u8>,
    #[recycle(shrink_to = 8)]
    small: Vec<u8>,
}

#[derive(Recyclable, Default, Debug, PartialEq)]
#[recycle(crate = "crate::facade::pool")]
enum ViaFacadeString {
    #[default]
    #[recycle(default)]
    Nothing,
    Something(String),
}

#[test]
fn crate_path_override() {
    assert_resets_to_default(ViaFacade {
        data: vec![1],
        small: vec![2; 100],
    });
    assert_resets_to_default(ViaFacadeString::Something("x".into()));
}

// ------------------------------------------------ no_implicit_prelude

#[no_implicit_prelude]
mod no_prelude {
    use ::recycler_core::Recyclable;
    use ::std::collections::HashMap;
    use ::std::string::String;
    use ::std::vec::Vec;

    fn reset_to_seven(n: &mut u8) {
        *n = 7;
    }

    #[derive(Recyclable)]
    pub(crate) struct Everything<T> {
        pub(crate) items: Vec<T>,
        pub(crate) names: HashMap<String, u32>,
        #[recycle(skip)]
        pub(crate) kept: u64,
        #[recycle(default)]
        pub(crate) defaulted: ::core::time::Duration,
        #[recycle(with = reset_to_seven)]
        pub(crate) seven: u8,
        #[recycle(shrink_to = 2)]
        pub(crate) shrunk: Vec<u8>,
    }

    #[derive(Recyclable)]
    pub(crate) struct Tuple(pub(crate) String, pub(crate) Vec<u8>);

    #[derive(Recyclable)]
    pub(crate) struct Unit;

    #[derive(Recyclable)]
    pub(crate) enum State<T> {
        #[recycle(default)]
        Start,
        Running(T, #[recycle(skip)] u8),
        Done {
            output: Vec<T>,
        },
    }

    #[derive(Recyclable)]
    pub(crate) enum Nothing {}

    #[derive(Recyclable)]
    pub(crate) enum Light {
        #[default]
        Off,
        On(Vec<u8>),
    }

    #[derive(Recyclable)]
    #[recycle(bound = "T: ::core::clone::Clone")]
    pub(crate) struct Loose<T> {
        pub(crate) items: Vec<T>,
        #[recycle(bound = "")]
        pub(crate) last: ::core::option::Option<T>,
    }
}

#[test]
fn works_without_the_prelude() {
    use no_prelude::{Everything, State, Tuple, Unit};

    let mut all = Everything {
        items: vec![1u32, 2],
        names: HashMap::from([("a".to_owned(), 1)]),
        kept: 5,
        defaulted: Duration::from_secs(1),
        seven: 0,
        shrunk: vec![0; 10],
    };
    all.reset();
    assert!(all.items.is_empty() && all.names.is_empty());
    assert_eq!((all.kept, all.defaulted, all.seven), (5, Duration::ZERO, 7));
    assert_eq!(all.shrunk.capacity(), 2);

    let mut t = Tuple("x".into(), vec![1]);
    t.reset();
    assert!(t.0.is_empty() && t.1.is_empty());
    Unit.reset();

    let mut s = State::Done { output: vec![1u8] };
    assert_eq!(s.retained_bytes(), 1);
    s.reset();
    assert!(matches!(s, State::Start));
    let mut r = State::Running(String::from("job"), 3);
    assert!(matches!(r, State::Running(_, 3)));
    r.reset();
    assert!(matches!(r, State::Start));

    let mut light = no_prelude::Light::On(vec![1]);
    light.reset();
    assert!(matches!(light, no_prelude::Light::Off));
    let mut loose = no_prelude::Loose {
        items: vec![Opaque(1)],
        last: Some(Opaque(2)),
    };
    loose.reset();
    assert!(loose.items.is_empty() && loose.last.is_none());

    fn assert_recyclable<T: Recyclable>() {}
    assert_recyclable::<no_prelude::Nothing>();
}

// -------------------------------------------------------------- Recycler

#[test]
fn recycler_reuses_a_derived_value() {
    let pool: Recycler<Request> = Recycler::new();

    let mut req = pool.get();
    req.path.push_str("/upload");
    req.body.extend_from_slice(&[42; 4096]);
    req.headers.push(("content-type".into(), "bytes".into()));
    let body = req.body.as_ptr();
    let headers = req.headers.as_ptr();
    drop(req);

    let req = pool.get();
    assert_eq!(*req, Request::default(), "reset on release");
    assert_eq!(req.body.as_ptr(), body, "the same inner allocation");
    assert_eq!(req.headers.as_ptr(), headers);
    assert!(req.body.capacity() >= 4096);
    drop(req);

    let stats = pool.stats();
    assert_eq!((stats.created, stats.hits), (1, 1));
}

#[test]
fn recycler_with_shrink_to_caps_what_one_big_value_leaves_behind() {
    let pool = Recycler::with_factory(Connection::new);

    let mut conn = pool.get();
    conn.body.push_str(&"x".repeat(1 << 20));
    conn.requests_served += 1;
    drop(conn);

    let mut conn = pool.get();
    assert!(conn.body.is_empty());
    assert_eq!(conn.body.capacity(), MAX_IDLE_BODY);
    assert_eq!(conn.requests_served, 1);
    conn.requests_served += 1;
    drop(conn);
    assert_eq!(pool.get().requests_served, 2);
}

#[test]
fn recycler_with_a_derived_enum_and_generic() {
    let frames: Recycler<Frame> = Recycler::new();
    *frames.get() = Frame::Data(vec![1, 2, 3]);
    assert_eq!(*frames.get(), Frame::Idle);

    let batches: Recycler<Batch<Vec<u8>>> = Recycler::new();
    let mut batch = batches.get();
    batch.items.push(vec![1]);
    let ptr = batch.items.as_ptr();
    drop(batch);
    let batch = batches.get();
    assert!(batch.items.is_empty());
    assert_eq!(batch.items.as_ptr(), ptr);
}
