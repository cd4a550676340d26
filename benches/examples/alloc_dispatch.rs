//! What the dispatching global allocator ([`Dispatch`]) costs: `Box::new`
//! of a 64-byte object and its drop, `n` times, through the global
//! allocator (`box`) or calling the process's allocator directly
//! (`direct`, an [`AllocBox`]). Count the instructions with callgrind, at
//! two counts, and divide the difference:
//!
//! ```sh
//! cargo build --release -p recycler-benches --example alloc_dispatch
//! for a in system jemalloc mimalloc; do for n in 1000000 2000000; do
//!   RECYCLER_BENCHES_ALLOC=$a valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/examples/alloc_dispatch box $n 2>&1 | grep Collected
//! done; done
//! ```
//!
//! The results, and how they compare with a plain `static` global
//! allocator, are in the documentation of `recycler_benches::Dispatch`'s
//! module (`src/global.rs`). `direct` counts what `AllocBox` costs
//! calling the allocator without the global allocator at all: 148
//! (system), 72.6 (jemalloc) and 85.4 (mimalloc) instructions per pair.

use std::hint::black_box;

use recycler_benches::{AllocBox, Dispatch, GlobalAllocator, Jemalloc, MiMalloc, Msg, System};

#[global_allocator]
static GLOBAL: Dispatch = Dispatch::new();

/// `n` boxes through the global allocator.
#[inline(never)]
fn boxes(n: u64) {
    for i in 0..n {
        // Not zeroes: LLVM would turn `malloc` + zeroing into `calloc`.
        let b = Box::new(Msg { words: [i; 8] });
        black_box(&*b);
    }
}

/// `n` boxes from `A`, called directly.
#[inline(never)]
fn direct<A: recycler_benches::DirectAlloc>(n: u64) {
    for i in 0..n {
        let b = AllocBox::<Msg, A>::new(Msg { words: [i; 8] });
        black_box(&*b);
    }
}

fn main() {
    let mut args = std::env::args().skip(1);
    let how = args.next().unwrap_or_else(|| "box".into());
    let n: u64 = args
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_000_000);
    let alloc = GlobalAllocator::current();
    match (how.as_str(), alloc) {
        ("box", _) => boxes(n),
        ("direct", GlobalAllocator::System) => direct::<System>(n),
        ("direct", GlobalAllocator::Jemalloc) => direct::<Jemalloc>(n),
        ("direct", GlobalAllocator::Mimalloc) => direct::<MiMalloc>(n),
        _ => {
            eprintln!("usage: alloc_dispatch [box|direct] [N]");
            std::process::exit(2);
        }
    }
    println!("{n} boxes, {how}, under {alloc}");
}
