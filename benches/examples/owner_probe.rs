//! The owner paths, one loop each, for instruction counts: `n` rounds of
//! one operation on the thread that owns the cache. Count with callgrind
//! at two counts and divide the difference by the difference of the counts,
//! so that the start-up cancels out:
//!
//! ```sh
//! cargo build --release -p recycler-benches --example owner_probe
//! for n in 100000 200000; do
//!   valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/owner_probe get $n 2>&1 | grep Collected
//! done
//! ```
//!
//! The operations (`KIND`):
//!
//! - `get`: `get` and drop of a 64-byte object, one held (W1's shape);
//! - `get16`: the same with 16 objects held, released in turn;
//! - `w1_16`: W1's shape with 16 held: 16 gets, then the 16 dropped (one
//!   round counted as 16 get + release pairs: divide by 16 too);
//! - `box16`: the same shape with an allocation and a free per object
//!   (what `Box::new` and its drop do) from the allocator
//!   `RECYCLER_BENCHES_ALLOC` names, as `compare`'s global allocator
//!   (W1's baseline); the probe's own global allocator stays the system's,
//!   so that the other kinds' counts do not move with it;
//! - `get_owned`: `get_owned` and drop on an `Arc<Recycler<_>>`;
//! - `striped`: `get` and drop on a `striped(2)` recycler;
//! - `vec`: `get` and drop of a `Vec<u8>`, one byte pushed;
//! - `capped`: the same under `max_idle_bytes`;
//! - `acquire`: `acquire(4096)` and drop on a default buffer pool;
//! - `acquire_owned`: `acquire_owned(4096)` and drop;
//! - `acquire_striped`: `acquire(4096)` and drop on a `striped(0)` pool
//!   (valgrind has no `rseq`: counted on the locked stripes);
//! - `handoff`, `handoff_owned`: W2's shape, `get` (or `get_owned`) on
//!   this thread and the drop on another, in batches of 256 guards handed
//!   over a channel (both threads' instructions counted: the release is
//!   a foreign one, the get finds what came home).
//!
//! Figures and their history: `docs/BENCHMARKS.md` and its record.

use std::alloc::{GlobalAlloc, Layout};
use std::hint::black_box;
use std::sync::Arc;

use recycler_benches::Msg;
use recycler_core::Recycler;
use recycler_core::buffer::BufferPool;

#[inline(never)]
fn get(pool: &Recycler<Msg>, n: u64) {
    for i in 0..n {
        let mut m = pool.get();
        m.words[0] = i;
        black_box(&*m);
    }
}

#[inline(never)]
fn get16(pool: &Recycler<Msg>, n: u64) {
    let mut held: Vec<_> = (0..16).map(|_| pool.get()).collect();
    for i in 0..n {
        let at = (i % 16) as usize;
        drop(std::mem::replace(&mut held[at], pool.get()));
        held[at].words[0] = i;
        black_box(&*held[at]);
    }
}

#[inline(never)]
fn w1_16(pool: &Recycler<Msg>, n: u64) {
    let mut held = Vec::with_capacity(16);
    for i in 0..n {
        for _ in 0..16 {
            let mut m = pool.get();
            m.words[0] = i;
            black_box(&mut *m);
            held.push(m);
        }
        held.clear();
    }
}

#[inline(never)]
fn box16(n: u64) {
    let alloc = recycler_benches::Dispatch::new();
    let layout = Layout::new::<Msg>();
    let mut held: Vec<*mut Msg> = Vec::with_capacity(16);
    for i in 0..n {
        for _ in 0..16 {
            // SAFETY: `layout` is `Msg`'s, not zero-sized.
            let m = unsafe { alloc.alloc(layout) }.cast::<Msg>();
            assert!(!m.is_null());
            let mut words = [0; 8];
            words[0] = i;
            // SAFETY: `m` is a fresh allocation for one `Msg`.
            unsafe { m.write(Msg { words }) };
            black_box(m);
            held.push(m);
        }
        for m in held.drain(..) {
            // SAFETY: allocated above with `layout`, freed once.
            unsafe { alloc.dealloc(m.cast(), layout) };
        }
    }
}

#[inline(never)]
fn get_owned(pool: &Arc<Recycler<Msg>>, n: u64) {
    for i in 0..n {
        let mut m = pool.get_owned();
        m.words[0] = i;
        black_box(&*m);
    }
}

#[inline(never)]
fn capped(pool: &Recycler<Vec<u8>>, n: u64) {
    for i in 0..n {
        let mut v = pool.get();
        v.push(i as u8);
        black_box(&*v);
    }
}

#[inline(never)]
fn acquire(pool: &BufferPool, n: u64) {
    for i in 0..n {
        let mut b = pool.acquire(4096);
        b.push(i as u8);
        black_box(&*b);
    }
}

#[inline(never)]
fn acquire_owned(pool: &Arc<BufferPool>, n: u64) {
    for i in 0..n {
        let mut b = pool.acquire_owned(4096);
        b.push(i as u8);
        black_box(&*b);
    }
}

/// Gets `n` guards by `make` on this thread, in batches of 256 handed to
/// another thread, which drops them.
#[inline(never)]
fn handoff<G: Send>(n: u64, make: impl Fn(u64) -> G + Sync) {
    const BATCH: u64 = 256;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<G>>(1);
    std::thread::scope(|s| {
        s.spawn(move || {
            for batch in rx {
                drop(black_box(batch));
            }
        });
        let mut left = n;
        while left > 0 {
            let k = left.min(BATCH);
            let batch: Vec<G> = (0..k).map(&make).collect();
            tx.send(batch).expect("the consumer runs");
            left -= k;
        }
        drop(tx);
    });
}

fn main() {
    let mut args = std::env::args().skip(1);
    let kind = args.next().unwrap_or_else(|| "get".into());
    let n: u64 = args
        .next()
        .map_or(100_000, |s| s.parse().expect("a count of rounds"));
    match kind.as_str() {
        "get" => get(&Recycler::new(), n),
        "get16" => get16(&Recycler::new(), n),
        "w1_16" => w1_16(&Recycler::new(), n),
        "box16" => box16(n),
        "get_owned" => get_owned(&Arc::new(Recycler::new()), n),
        "striped" => get(&Recycler::builder().striped(2).build().expect("valid"), n),
        "vec" => capped(&Recycler::new(), n),
        "capped" => capped(
            &Recycler::builder()
                .max_idle_bytes(1 << 20)
                .build()
                .expect("valid"),
            n,
        ),
        "acquire" => acquire(&BufferPool::default(), n),
        "acquire_owned" => acquire_owned(&Arc::new(BufferPool::default()), n),
        "acquire_striped" => acquire(&BufferPool::builder().striped(0).build().expect("valid"), n),
        "handoff" => {
            let pool = Recycler::<Msg>::new();
            handoff(n, |i| {
                let mut m = pool.get();
                m.words[0] = i;
                m
            });
        }
        "handoff_owned" => {
            let pool = Arc::new(Recycler::<Msg>::new());
            handoff(n, |i| {
                let mut m = pool.get_owned();
                m.words[0] = i;
                m
            });
        }
        other => panic!("unknown kind {other}: see the module docs"),
    }
}
