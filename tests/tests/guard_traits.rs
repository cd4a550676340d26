//! The guards stand for their objects as `Box` does, the buffers for their
//! bytes as `Vec<u8>` does: views, comparisons, hashing (and so lookups in
//! sets and maps through `Borrow`), `{:p}`, `Extend`. Also: `BytesMut` in a
//! derived type with `shrink_to`, the identities of the buffer statistics
//! when a buffer grows into another bucket, and the builder's `Debug`.
#![deny(warnings)]
// The pool handle inside a buffer or an owned guard has interior mutability,
// which clippy sees in every such key; their `Hash` and `Ord` read only the
// bytes or the object, never the handle.
#![allow(clippy::mutable_key_type)]

use std::borrow::{Borrow, BorrowMut, Cow};
use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use recycler_core::buffer::{BucketStats, BufferPool, BufferPoolStats, OwnedPooledBuf, PooledBuf};
use recycler_core::{OwnedPooled, Pooled, Recyclable, Recycler};

const KIB: usize = 1024;

/// The hash of `value` with fixed keys: the same value, the same hash.
fn hash_of<T: Hash + ?Sized>(value: &T) -> u64 {
    let mut h = DefaultHasher::new();
    value.hash(&mut h);
    h.finish()
}

fn string_guard<'a>(pool: &'a Recycler<String>, s: &str) -> Pooled<'a, String> {
    let mut g = pool.get();
    g.push_str(s);
    g
}

fn owned_string(pool: &Arc<Recycler<String>>, s: &str) -> OwnedPooled<String> {
    let mut g = pool.get_owned();
    g.push_str(s);
    g
}

// ------------------------------------------------------------- the guards

#[test]
fn a_set_of_guards_is_searched_by_the_object() {
    let pool: Recycler<String> = Recycler::new();
    let set: HashSet<Pooled<'_, String>> = ["a", "b", "c"]
        .into_iter()
        .map(|s| string_guard(&pool, s))
        .collect();
    assert_eq!(set.len(), 3);
    // `Pooled<String>: Borrow<String>`: lookups by `&String`.
    assert!(set.contains(&String::from("a")));
    assert!(set.contains(&String::from("c")));
    assert!(!set.contains(&String::from("d")));
    assert!(!set.contains(&String::new()));
    // By `&str` it does not compile (no `Borrow<str>`, as for
    // `Box<String>`); the unit tests assert the missing impl. The way to go:
    assert!(set.iter().any(|g| g.as_str() == "b"));

    // The same in a map, and in ordered collections of owned guards.
    let mut map: HashMap<Pooled<'_, String>, u32> = HashMap::new();
    map.insert(string_guard(&pool, "x"), 1);
    map.insert(string_guard(&pool, "y"), 2);
    assert_eq!(map.get(&String::from("y")), Some(&2));
    assert_eq!(map.get(&String::from("z")), None);
    *map.get_mut(&String::from("x")).unwrap() += 10;
    assert_eq!(map[&String::from("x")], 11);

    let owned_pool = Arc::new(Recycler::<String>::new());
    let tree: BTreeSet<OwnedPooled<String>> = ["m", "k", "z"]
        .into_iter()
        .map(|s| owned_string(&owned_pool, s))
        .collect();
    assert!(tree.contains(&String::from("k")));
    assert!(!tree.contains(&String::from("a")));
    let in_order: Vec<&str> = tree.iter().map(|g| g.as_str()).collect();
    assert_eq!(in_order, ["k", "m", "z"]);
    let mut btree: BTreeMap<OwnedPooled<String>, usize> = BTreeMap::new();
    btree.insert(owned_string(&owned_pool, "q"), 7);
    assert_eq!(btree.get(&String::from("q")), Some(&7));

    drop((set, map));
    assert_eq!(pool.stats().idle, 5, "the guards went home");
}

#[test]
fn guards_hash_as_their_objects() {
    let pool: Recycler<String> = Recycler::new();
    let owned_pool = Arc::new(Recycler::<String>::new());
    for s in ["", "a", "hello, world"] {
        let value = s.to_owned();
        assert_eq!(hash_of(&string_guard(&pool, s)), hash_of(&value), "{s:?}");
        assert_eq!(hash_of(&owned_string(&owned_pool, s)), hash_of(&value));
    }
    assert_ne!(
        hash_of(&string_guard(&pool, "a")),
        hash_of(&string_guard(&pool, "b"))
    );
    let numbers: Recycler<u64> = Recycler::new();
    let mut n = numbers.get();
    *n = 42;
    assert_eq!(hash_of(&n), hash_of(&42u64));
}

#[test]
fn guards_compare_and_order_as_their_objects() {
    let pool: Recycler<u32> = Recycler::new();
    let other: Recycler<u32> = Recycler::new();
    fn make(pool: &Recycler<u32>, v: u32) -> Pooled<'_, u32> {
        let mut g = pool.get();
        *g = v;
        g
    }
    // Guards of two recyclers compare (their lifetimes meet).
    let (a, b) = (make(&pool, 7), make(&other, 7));
    assert_eq!(a, b);
    assert!(a <= b);
    assert!(a >= b);
    assert!(!a.lt(&b) && !a.gt(&b), "neither is less");
    assert_eq!(a.partial_cmp(&b), Some(std::cmp::Ordering::Equal));
    let c = make(&other, 8);
    assert_ne!(a, c);
    assert!(a < c);
    assert!(c > a);
    assert_eq!(a.cmp(&c), std::cmp::Ordering::Less);
    assert_eq!(c.partial_cmp(&a), Some(std::cmp::Ordering::Greater));

    let mut list: Vec<Pooled<'_, u32>> = [5, 3, 9, 1].map(|v| make(&pool, v)).into();
    list.sort();
    assert_eq!(list.iter().map(|g| **g).collect::<Vec<_>>(), [1, 3, 5, 9]);
    assert_eq!(list.iter().max().map(|g| **g), Some(9));

    // `f64` compares partially: so do its guards.
    let floats: Recycler<f64> = Recycler::new();
    let (mut x, y) = (floats.get(), floats.get());
    *x = f64::NAN;
    assert_ne!(x, y);
    assert_eq!(x.partial_cmp(&y), None);

    let owned = Arc::new(Recycler::<u32>::new());
    let (mut p, mut q) = (owned.get_owned(), owned.get_owned());
    *p = 1;
    *q = 2;
    assert!(p < q);
    assert_ne!(p, q);
    *q = 1;
    assert_eq!(p, q);
}

#[test]
fn guards_lend_their_objects_as_views() {
    fn total(v: impl AsRef<Vec<u8>>) -> usize {
        v.as_ref().iter().map(|&b| b as usize).sum()
    }
    fn push_one(mut v: impl AsMut<Vec<u8>>) {
        v.as_mut().push(1);
    }
    fn first<B: Borrow<Vec<u8>>>(v: &B) -> Option<u8> {
        v.borrow().first().copied()
    }
    fn clear<B: BorrowMut<Vec<u8>>>(v: &mut B) {
        v.borrow_mut().clear();
    }
    let pool: Recycler<Vec<u8>> = Recycler::new();
    let mut v = pool.get();
    push_one(&mut v);
    push_one(&mut v);
    assert_eq!(total(&v), 2);
    assert_eq!(first(&v), Some(1));
    clear(&mut v);
    assert_eq!(first(&v), None);

    let owned = Arc::new(Recycler::<Vec<u8>>::new());
    let mut w = owned.get_owned();
    push_one(&mut w);
    assert_eq!((total(&w), first(&w)), (1, Some(1)));
    clear(&mut w);
    assert!(w.is_empty());
}

#[test]
fn pointer_formats_the_objects_address() {
    let pool: Recycler<String> = Recycler::new();
    let g = pool.get();
    let object: *const String = &*g;
    let text = format!("{g:p}");
    assert_eq!(text, format!("{object:p}"));
    assert_ne!(text, format!("{:p}", &g), "the object's, not the guard's");
    assert!(text.starts_with("0x"), "{text}");
    // The guard moves; the object does not. (A box of the guard formats
    // the guard's address, as boxes do.)
    let moved = Box::new(g);
    assert_eq!(format!("{moved:p}"), format!("{:p}", &*moved));
    assert_ne!(format!("{moved:p}"), text);
    assert_eq!(format!("{:p}", *moved), text);
    assert_eq!(format!("{:p}", &**moved), text);
    drop(moved);
    // The same object again, at the same address.
    assert_eq!(format!("{:p}", pool.get()), text);

    let owned = Arc::new(Recycler::<String>::new());
    let h = owned.get_owned();
    assert_eq!(format!("{h:p}"), format!("{:p}", &*h));
    assert_eq!(format!("{h:#p}"), format!("{:#p}", &*h as *const String));
    assert_eq!(format!("{}", owned_string(&owned, "shown")), "shown");
}

// ------------------------------------------------------------ the buffers

fn buf_with<'a>(pool: &'a BufferPool, bytes: &[u8]) -> PooledBuf<'a> {
    let mut b = pool.acquire(bytes.len());
    b.extend_from_slice(bytes);
    b
}

fn owned_with(pool: &Arc<BufferPool>, capacity: usize, bytes: &[u8]) -> OwnedPooledBuf {
    let mut b = pool.acquire_owned(capacity);
    b.extend_from_slice(bytes);
    b
}

#[test]
fn buffers_compare_with_byte_containers_both_ways() {
    let pool = Arc::new(BufferPool::new());
    let buf = buf_with(&pool, b"abc");
    let owned = owned_with(&pool, 20 * KIB, b"abc");
    let array: [u8; 3] = *b"abc";
    let mut array_mut = *b"abc";
    let vec = b"abc".to_vec();
    let cow: Cow<'_, [u8]> = Cow::Borrowed(&b"abc"[..]);

    macro_rules! equal_both_ways {
        ($buf:expr) => {
            assert!($buf == array[..] && array[..] == $buf, "[u8]");
            assert!($buf == &array[..] && &array[..] == $buf, "&[u8]");
            assert!(
                $buf == &mut array_mut[..] && &mut array_mut[..] == $buf,
                "&mut [u8]"
            );
            assert!($buf == array && array == $buf, "[u8; N]");
            assert!($buf == &array && &array == $buf, "&[u8; N]");
            assert!($buf == vec && vec == $buf, "Vec<u8>");
            assert!($buf == cow && cow == $buf, "Cow<[u8]>");
        };
    }
    equal_both_ways!(buf);
    equal_both_ways!(owned);
    assert!(buf == owned, "across the buffer types");
    assert!(owned == buf, "across the buffer types, the other way");
    assert_eq!(owned.capacity(), 20 * KIB, "the capacities differ");

    // And unequal where the bytes differ, in every direction.
    let other = buf_with(&pool, b"abd");
    let shorter = owned_with(&pool, 1, b"ab");
    macro_rules! unequal_both_ways {
        ($a:expr, $b:expr) => {
            assert!($a != $b, "{} != {}", stringify!($a), stringify!($b));
            assert!($b != $a, "{} != {}", stringify!($b), stringify!($a));
            assert!(!($a == $b) && !($b == $a));
        };
    }
    unequal_both_ways!(buf, other);
    unequal_both_ways!(owned, shorter);
    unequal_both_ways!(buf, shorter);
    unequal_both_ways!(other, array);
    unequal_both_ways!(other, vec);
    unequal_both_ways!(shorter, b"abc"[..]);
    unequal_both_ways!(shorter, &b"abc"[..]);
    unequal_both_ways!(shorter, Cow::Borrowed(&b"abc"[..]));
    assert!(pool.acquire(1) == *b"", "empty buffers are empty slices");
    assert!(pool.acquire(1) == pool.acquire(9000), "two empty buffers");
}

#[test]
fn a_set_of_buffers_is_searched_by_bytes() {
    let pool = Arc::new(BufferPool::new());
    let set: HashSet<PooledBuf<'_>> = [&b"GET"[..], b"PUT", b"POST"]
        .into_iter()
        .map(|m| buf_with(&pool, m))
        .collect();
    assert!(set.contains(&b"PUT"[..]));
    assert!(set.contains(b"POST".as_slice()));
    assert!(!set.contains(&b"DELETE"[..]));
    assert!(!set.contains(&b""[..]));
    // By `&[u8; N]` it does not compile (`Borrow<[u8; 3]>` does not exist,
    // as for `Vec<u8>`): slice it.

    let mut map: HashMap<OwnedPooledBuf, u32> = HashMap::new();
    map.insert(owned_with(&pool, 1, b"key"), 1);
    assert_eq!(map.get(&b"key"[..]), Some(&1));
    assert_eq!(map.get(&b"ke"[..]), None);

    let tree: BTreeSet<PooledBuf<'_>> = [&b"b"[..], b"a", b"ab", b""]
        .into_iter()
        .map(|m| buf_with(&pool, m))
        .collect();
    assert!(tree.contains(&b"ab"[..]));
    let in_order: Vec<&[u8]> = tree.iter().map(|b| &b[..]).collect();
    assert_eq!(in_order, [&b""[..], b"a", b"ab", b"b"], "as slices order");

    // And a set of `Vec<u8>` is searched by a buffer's bytes.
    let vecs: HashSet<Vec<u8>> = HashSet::from([b"GET".to_vec()]);
    assert!(vecs.contains(&buf_with(&pool, b"GET")[..]));
}

#[test]
fn buffers_hash_and_order_as_their_bytes() {
    let pool = Arc::new(BufferPool::new());
    for bytes in [&b""[..], b"x", &[0u8; 5000]] {
        let buf = buf_with(&pool, bytes);
        let owned = owned_with(&pool, 1, bytes);
        assert_eq!(hash_of(&buf), hash_of(bytes), "len {}", bytes.len());
        assert_eq!(hash_of(&buf), hash_of(&bytes.to_vec()));
        assert_eq!(hash_of(&owned), hash_of(bytes));
    }
    assert_ne!(
        hash_of(&buf_with(&pool, b"a")),
        hash_of(&buf_with(&pool, b"b"))
    );

    let (a, ab, b) = (
        buf_with(&pool, b"a"),
        buf_with(&pool, b"ab"),
        buf_with(&pool, b"b"),
    );
    assert!(a < ab && ab < b);
    assert_eq!(ab.cmp(&b), b"ab"[..].cmp(&b"b"[..]));
    let mut owned: Vec<OwnedPooledBuf> = [&b"zz"[..], b"z", b"a"]
        .into_iter()
        .map(|m| owned_with(&pool, 1, m))
        .collect();
    owned.sort();
    let sorted: Vec<&[u8]> = owned.iter().map(|b| &b[..]).collect();
    assert_eq!(sorted, [&b"a"[..], b"z", b"zz"]);
    assert!(owned[0] < owned[1] && owned[2] > owned[1]);
    assert_eq!(owned[1].cmp(&owned[2]), std::cmp::Ordering::Less);
}

#[test]
fn buffers_lend_their_bytes_as_views() {
    fn upper<B: BorrowMut<[u8]>>(b: &mut B) {
        b.borrow_mut().make_ascii_uppercase();
    }
    fn len_of(b: impl AsRef<[u8]>) -> usize {
        b.as_ref().len()
    }
    let pool = Arc::new(BufferPool::new());
    let mut buf = buf_with(&pool, b"abc");
    upper(&mut buf);
    assert_eq!(buf, *b"ABC");
    assert_eq!(len_of(&buf), 3);
    let view: &[u8] = buf.borrow();
    assert_eq!(view, b"ABC");
    buf.as_mut()[0] = b'x';
    assert_eq!(buf, *b"xBC");
    let mut owned = owned_with(&pool, 1, b"q");
    upper(&mut owned);
    assert_eq!(owned, *b"Q");
}

#[test]
fn extend_grows_like_extend_from_slice() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(4 * KIB);
    buf.extend(0..=255u8);
    buf.extend(&[7u8; 3]);
    assert_eq!(buf.len(), 259);
    assert_eq!(&buf[250..], [250, 251, 252, 253, 254, 255, 7, 7, 7]);
    // Past the capacity, from an exact size (grown once, as
    // `extend_from_slice` does: twice the capacity or what is needed, if
    // more) and from an unknown one (a filter's lower bound is 0: grown as
    // `push` grows, doubling each time, as a `Vec` would).
    let data: Vec<u8> = (0..5000u32).map(|i| i as u8).collect();
    let mut grown = pool.acquire(4 * KIB);
    grown.extend(data.iter().copied());
    assert_eq!((grown.len(), grown.capacity()), (5000, 8 * KIB));
    assert_eq!(grown, data);
    let mut filtered = pool.acquire(4 * KIB);
    filtered.extend(data.iter().chain(&data).filter(|_| true));
    assert_eq!((filtered.len(), filtered.capacity()), (10_000, 16 * KIB));
    let mut at_once = pool.acquire(4 * KIB);
    at_once.extend(data.iter().chain(&data));
    assert_eq!((at_once.len(), at_once.capacity()), (10_000, 12 * KIB));
    assert_eq!(filtered[..5000], data[..]);
    assert_eq!(filtered[5000..], data[..]);
    // The same as `extend_from_slice`.
    let mut by_slice = pool.acquire(4 * KIB);
    by_slice.extend_from_slice(&data);
    assert_eq!(by_slice.capacity(), grown.capacity());

    let owned_pool = Arc::new(BufferPool::new());
    let mut owned = owned_pool.acquire_owned(1);
    owned.extend(b"hello");
    owned.extend("!".bytes());
    assert_eq!(owned, b"hello!");
    // Grown buffers return to the bucket of their new capacity.
    drop((grown, filtered, by_slice, at_once));
    let s = pool.stats();
    assert_eq!(s.bucket(8 * KIB).unwrap().idle, 2, "{s}");
    assert_eq!(s.bucket(12 * KIB).unwrap().idle, 1, "{s}");
    assert_eq!(s.bucket(16 * KIB).unwrap().idle, 1, "{s}");
}

#[test]
fn extend_past_the_memory_limit_is_an_overdraft_as_documented() {
    let pool = BufferPool::builder().memory_limit(4 * KIB).build().unwrap();
    let mut buf = pool.acquire(1);
    buf.extend(std::iter::repeat_n(1u8, 4 * KIB + 1));
    assert_eq!(buf.len(), 4 * KIB + 1);
    assert_eq!(pool.stats().overdrafts, 1);
}

#[test]
fn extend_from_an_iterator_that_stops_early_writes_what_it_yields() {
    let pool = BufferPool::builder().memory_limit(4 * KIB).build().unwrap();
    let mut buf = pool.acquire(1);
    // Exactly the capacity: no growth needed, so the limit is never hit.
    buf.extend(std::iter::repeat_n(1u8, 4 * KIB));
    assert_eq!(buf.len(), 4 * KIB);
    buf.extend(std::iter::empty::<u8>());
    assert_eq!(buf.len(), 4 * KIB);
}

// ------------------------------------------------------ BytesMut, derived

#[derive(Recyclable)]
struct Frame {
    #[recycle(shrink_to = 1024)]
    payload: BytesMut,
    header: BytesMut,
    seq: u64,
}

fn frame() -> Frame {
    Frame {
        payload: BytesMut::with_capacity(256),
        header: BytesMut::with_capacity(64),
        seq: 0,
    }
}

#[test]
fn bytes_mut_field_is_cleared_and_shrunk_by_the_derive() {
    let pool = Recycler::with_factory(frame);
    let mut f = pool.get();
    f.payload.put_bytes(0xAB, 100_000); // one huge payload
    f.header.put_bytes(1, 2000); // grows, but is not capped
    f.seq = 9;
    let header_capacity = f.header.capacity();
    assert!(header_capacity >= 2000);
    drop(f);

    let f = pool.get();
    assert_eq!(pool.stats().hits, 1, "the same frame, reset");
    assert!(f.payload.is_empty() && f.header.is_empty());
    assert_eq!(f.payload.capacity(), 1024, "capped at shrink_to");
    assert_eq!(f.header.capacity(), header_capacity, "kept: no shrink_to");
    assert_eq!(f.seq, 0);
    assert_eq!(f.retained_bytes(), 1024 + header_capacity);
    drop(f);

    // Under the limit the payload keeps its allocation.
    let mut f = pool.get();
    f.payload.put_slice(b"small");
    let ptr = f.payload.as_ptr();
    drop(f);
    let f = pool.get();
    assert_eq!((f.payload.capacity(), f.payload.as_ptr()), (1024, ptr));
}

#[test]
fn bytes_mut_is_recyclable_on_its_own() {
    let pool: Recycler<BytesMut> = Recycler::with_factory(|| BytesMut::with_capacity(512));
    let mut b = pool.get();
    b.put_slice(b"data");
    let ptr = b.as_ptr();
    drop(b);
    let b = pool.get();
    assert!(b.is_empty());
    assert_eq!((b.capacity(), b.as_ptr()), (512, ptr));
    assert_eq!(b.retained_bytes(), 512);
}

// --------------------------------------------- statistics when buffers grow

/// `acquires == releases + in_use` for one entry.
fn balanced(b: &BucketStats) -> bool {
    b.acquires == b.releases + b.in_use
}

/// Whether every count of `b` is 0.
fn untouched(b: &BucketStats) -> bool {
    let mut zero = BucketStats::default();
    zero.capacity = b.capacity;
    *b == zero
}

/// Every buffer allocated accounted for in one entry.
fn allocations_accounted(b: &BucketStats) -> bool {
    b.non_pooled == b.in_use + b.idle + b.evicts + b.removes
}

fn assert_pooled_plus_non_pooled(s: &BufferPoolStats) {
    for b in s.buckets.iter().chain([&s.oversize, &s.total()]) {
        assert_eq!(b.acquires, b.pooled + b.non_pooled, "{s}");
    }
}

#[test]
fn a_grown_buffer_is_acquired_in_one_bucket_and_released_in_another() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(4 * KIB);
    buf.extend_from_slice(&[1; 5000]); // 4 KiB -> 8 KiB
    assert_eq!(buf.capacity(), 8 * KIB);

    // Still held: in use in the bucket it came from.
    let s = pool.stats();
    let (small, large) = (s.buckets[0], s.buckets[1]);
    assert_eq!((small.acquires, small.in_use), (1, 1), "{s}");
    assert_eq!(
        (large.acquires, large.in_use, large.releases),
        (0, 0, 0),
        "{s}"
    );
    assert!(balanced(&small) && balanced(&large), "{s}");

    drop(buf);
    let s = pool.stats();
    let (small, large) = (s.buckets[0], s.buckets[1]);
    // Acquired in 4 KiB, released (and idle) in 8 KiB.
    assert_eq!(
        (small.acquires, small.releases, small.in_use, small.idle),
        (1, 0, 0, 0),
        "{s}"
    );
    assert_eq!(
        (large.acquires, large.releases, large.in_use, large.idle),
        (0, 1, 0, 1),
        "{s}"
    );
    // So, per bucket, `acquires == releases + in_use` does not hold ...
    assert!(!balanced(&small) && !balanced(&large), "{s}");
    // ... `acquires + grown_in == releases + in_use + grown_out` does, with
    // one buffer grown out of the small bucket and into the large one ...
    assert_eq!(small.acquires, small.releases + small.in_use + 1);
    assert_eq!(large.acquires + 1, large.releases + large.in_use);
    // ... and over the pool the move cancels out.
    let total = s.total();
    assert!(balanced(&total), "{s}");
    assert_eq!((total.acquires, total.releases, total.idle), (1, 1, 1));
    // Allocations: likewise only over the pool.
    assert!(!allocations_accounted(&small) && !allocations_accounted(&large));
    assert!(allocations_accounted(&total), "{s}");
    assert_pooled_plus_non_pooled(&s);

    // Reused from its new bucket, the buffer balances there from now on.
    let again = pool.acquire(8 * KIB);
    assert_eq!(again.capacity(), 8 * KIB);
    drop(again);
    let large = pool.stats().buckets[1];
    assert_eq!((large.acquires, large.pooled, large.releases), (1, 1, 2));
    assert_eq!(large.acquires + 1, large.releases + large.in_use);
}

#[test]
fn a_buffer_grown_past_max_capacity_is_freed_and_never_counted_released() {
    let pool = BufferPool::new();
    let mut buf = pool.acquire(60 * KIB);
    buf.resize(70 * KIB, 0);
    drop(buf);
    let s = pool.stats();
    let old = *s.bucket(60 * KIB).unwrap();
    assert_eq!(
        (old.acquires, old.releases, old.in_use, old.removes),
        (1, 0, 0, 1),
        "{s}"
    );
    assert!(untouched(&s.oversize), "not oversize: {s}");
    let total = s.total();
    // Over the pool: one short, the buffer that outgrew `max_capacity`.
    assert!(!balanced(&total), "{s}");
    assert_eq!(total.acquires, total.releases + total.in_use + 1);
    // Its allocation is accounted for (in `removes`), even per bucket.
    assert!(
        allocations_accounted(&old) && allocations_accounted(&total),
        "{s}"
    );
    assert_eq!(s.allocated_memory, 0);
}

#[test]
fn a_grown_buffer_the_pool_does_not_keep_counts_where_it_came_from() {
    // A pool that keeps nothing frees every released buffer at once, grown
    // or not, as a release of the bucket it came from.
    let pool = BufferPool::builder()
        .max_idle_per_thread(0)
        .build()
        .unwrap();
    let mut buf = pool.acquire(4 * KIB);
    buf.extend_from_slice(&[1; 5000]);
    drop(buf);
    let s = pool.stats();
    let (small, large) = (s.buckets[0], s.buckets[1]);
    assert_eq!(
        (small.acquires, small.releases, small.removes),
        (1, 1, 1),
        "{s}"
    );
    assert!(untouched(&large), "{s}");
    assert!(balanced(&small) && allocations_accounted(&small), "{s}");
    assert!(balanced(&s.total()), "{s}");
}

#[test]
fn the_dump_ends_with_the_total() {
    let pool = BufferPool::new();
    let held = pool.acquire(100);
    drop(pool.acquire(100));
    drop(pool.acquire(10_000));
    drop(pool.acquire(1 << 20)); // oversize
    let s = pool.stats();
    let total = s.total();
    assert_eq!(
        (total.acquires, total.pooled, total.non_pooled, total.in_use),
        (4, 0, 4, 1)
    );
    assert_eq!((total.releases, total.idle, total.removes), (3, 2, 1));
    let text = s.to_string();
    let last = text.lines().last().unwrap();
    assert_eq!(
        last,
        "    total: acquires 4 (hits 0, 0.0%), created 4, released 3, removed 1, \
         idle 2, in use 1, evicted 0",
        "{text}"
    );
    assert_eq!(text.matches("total").count(), 1, "{text}");
    assert!(
        text.contains(" oversize: acquires 1 (hits 0, 0.0%), created 1"),
        "{text}"
    );
    // One decimal, as `RecyclerStats` prints.
    drop(pool.acquire(100));
    drop(pool.acquire(100));
    let text = pool.stats().to_string();
    assert!(text.contains("4 KiB: acquires 4 (hits 2, 50.0%)"), "{text}");
    drop(held);
}

// ------------------------------------------------------- the builder's Debug

#[test]
fn the_builder_shows_its_settings_by_their_public_names() {
    let builder = BufferPool::builder()
        .bucket_step(2048)
        .max_capacity(32 * KIB)
        .memory_limit(1 << 20)
        .alignment(512);
    let text = format!("{builder:?}");
    assert!(!text.contains("PoolConfig"), "{text}");
    for setting in [
        "bucket_step: 2048",
        "max_capacity: 32768",
        "max_idle_memory: None",
        "memory_limit: Some(1048576)",
        "alignment: 512",
        "max_idle_per_thread: 64",
        "statistics: true",
    ] {
        assert!(text.contains(setting), "{setting} in {text}");
    }
    assert!(text.starts_with("BufferPoolBuilder {"), "{text}");
}
