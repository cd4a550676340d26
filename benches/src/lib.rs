//! Workloads shared by the criterion suites in `benches/` and by the
//! `compare` binary, so that both measure exactly the same code.
//!
//! Every benchmark binary of this package runs under `tikv-jemallocator` as
//! its global allocator (see [`Jemalloc`]); the system allocator is measured
//! through [`SysBox`], which calls `std::alloc::System` directly, so both
//! allocators appear in one binary and one run.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::VecDeque;
use std::hint::black_box;
use std::ptr::NonNull;
use std::thread;
use std::time::{Duration, Instant};

use recycler_core::{Recyclable, Recycler};

pub use tikv_jemallocator::Jemalloc;

/// The object of W1 and W2: 64 bytes, like Netty's benchmark payload.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Msg {
    /// Eight words of payload.
    pub words: [u64; 8],
}

impl Recyclable for Msg {
    #[inline]
    fn reset(&mut self) {
        self.words = [0; 8];
    }
}

static_assertions::const_assert_eq!(size_of::<Msg>(), 64);

/// A `Box` whose memory comes from the system allocator, whatever the global
/// allocator is.
pub struct SysBox<T> {
    ptr: NonNull<T>,
}

impl<T> SysBox<T> {
    /// Allocates with `System` and moves `value` in.
    ///
    /// # Panics
    ///
    /// If `T` is zero-sized or the allocation fails.
    #[inline]
    pub fn new(value: T) -> Self {
        let layout = Layout::new::<T>();
        assert!(
            layout.size() > 0,
            "SysBox does not support zero-sized types"
        );
        // SAFETY: `layout` has a non-zero size (checked above).
        let raw = unsafe { System.alloc(layout) }.cast::<T>();
        let Some(ptr) = NonNull::new(raw) else {
            std::alloc::handle_alloc_error(layout)
        };
        // SAFETY: `ptr` is freshly allocated for one `T`, properly aligned.
        unsafe { ptr.as_ptr().write(value) };
        Self { ptr }
    }
}

impl<T> std::ops::Deref for SysBox<T> {
    type Target = T;

    fn deref(&self) -> &T {
        // SAFETY: `ptr` holds an initialized `T` owned by this box.
        unsafe { self.ptr.as_ref() }
    }
}

impl<T> std::ops::DerefMut for SysBox<T> {
    fn deref_mut(&mut self) -> &mut T {
        // SAFETY: `ptr` holds an initialized `T` owned uniquely by this box.
        unsafe { self.ptr.as_mut() }
    }
}

impl<T> Drop for SysBox<T> {
    fn drop(&mut self) {
        // SAFETY: `ptr` holds an initialized `T` that is dropped once, here.
        unsafe { self.ptr.as_ptr().drop_in_place() };
        // SAFETY: allocated by `System` with this same layout in `new`.
        unsafe { System.dealloc(self.ptr.as_ptr().cast(), Layout::new::<T>()) };
    }
}

// SAFETY: `SysBox<T>` owns its `T` like `Box<T>` does.
unsafe impl<T: Send> Send for SysBox<T> {}

impl<T: std::fmt::Debug> std::fmt::Debug for SysBox<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// Something to get objects from and release them to, one at a time.
pub trait Source: Sync {
    /// What the source hands out.
    type Guard<'a>: std::ops::DerefMut<Target = Msg> + Send
    where
        Self: 'a;
    /// Takes an object.
    fn take(&self) -> Self::Guard<'_>;
}

/// The recycler under test.
impl Source for Recycler<Msg> {
    type Guard<'a> = recycler_core::Pooled<'a, Msg>;

    #[inline]
    fn take(&self) -> Self::Guard<'_> {
        self.get()
    }
}

/// `Box::new` under the global allocator (jemalloc in this package).
#[derive(Debug, Default)]
pub struct BoxJemalloc;

impl Source for BoxJemalloc {
    type Guard<'a> = Box<Msg>;

    #[inline]
    fn take(&self) -> Box<Msg> {
        Box::new(Msg::default())
    }
}

/// `Box::new` under the system allocator.
#[derive(Debug, Default)]
pub struct BoxSystem;

impl Source for BoxSystem {
    type Guard<'a> = SysBox<Msg>;

    #[inline]
    fn take(&self) -> SysBox<Msg> {
        SysBox::new(Msg::default())
    }
}

/// W1: get, touch, release on one thread, `held` objects at a time; runs
/// `iters` rounds and returns the time per object.
///
/// The guards are not passed through `black_box` themselves (only the objects
/// they point to): moving a multi-word guard through memory that way measures
/// store-forwarding stalls of the harness, not the pool.
pub fn w1_get_release<S: Source>(source: &S, held: usize, iters: u64) -> Duration {
    let start = Instant::now();
    if held <= 1 {
        for i in 0..iters {
            let mut g = source.take();
            g.words[0] = i;
            black_box(&mut *g);
        }
    } else {
        let mut guards = Vec::with_capacity(held);
        for i in 0..iters {
            for _ in 0..held {
                let mut g = source.take();
                g.words[0] = i;
                black_box(&mut *g);
                guards.push(g);
            }
            guards.clear();
        }
    }
    start.elapsed() / u32::try_from(held.max(1)).unwrap_or(u32::MAX)
}

/// The floor of W1: a bare thread-local `VecDeque` of boxes, popped and
/// pushed at the back, with the same reset as the recycler's.
pub fn w1_floor(held: usize, iters: u64) -> Duration {
    thread_local! {
        static STACK: std::cell::RefCell<VecDeque<Box<Msg>>> =
            const { std::cell::RefCell::new(VecDeque::new()) };
    }
    let take = |i: u64| {
        let mut g = STACK
            .with_borrow_mut(VecDeque::pop_back)
            .unwrap_or_else(|| Box::new(Msg::default()));
        g.words[0] = i;
        black_box(&mut *g);
        g
    };
    let give = |mut g: Box<Msg>| {
        g.words = [0; 8];
        STACK.with_borrow_mut(|s| s.push_back(g));
    };
    let start = Instant::now();
    if held <= 1 {
        for i in 0..iters {
            give(take(i));
        }
    } else {
        let mut guards: Vec<Box<Msg>> = Vec::with_capacity(held);
        for i in 0..iters {
            for _ in 0..held {
                guards.push(take(i));
            }
            guards.drain(..).for_each(give);
        }
    }
    start.elapsed() / u32::try_from(held.max(1)).unwrap_or(u32::MAX)
}

/// Waits a little for the other side of a queue: spins, then yields the CPU
/// so that two threads sharing one CPU still make progress.
#[derive(Debug, Default)]
struct Backoff(u32);

impl Backoff {
    fn wait(&mut self) {
        if self.0 < 64 {
            std::hint::spin_loop();
            self.0 += 1;
        } else {
            thread::yield_now();
        }
    }
}

/// W2: one thread takes objects and passes them through a bounded queue to
/// another, which reads and releases them. Returns the elapsed time for `n`
/// objects.
///
/// Both ends poll the queue (`try_send`/`try_recv`, spinning briefly, then
/// yielding), as Netty's producer/consumer benchmark does with its spinning
/// queue: with a blocking queue, whichever side is faster parks and is woken
/// through the kernel for nearly every object, and the benchmark measures
/// futex wake-ups instead of the pool.
pub fn w2_producer_consumer<S: Source>(source: &S, n: u64) -> Duration {
    let (tx, rx) = crossbeam_channel::bounded::<S::Guard<'_>>(1024);
    thread::scope(|s| {
        let consumer = s.spawn(move || {
            let mut backoff = Backoff::default();
            loop {
                match rx.try_recv() {
                    Ok(g) => {
                        backoff = Backoff::default();
                        // Consume the message: read it, as a real consumer
                        // would, then release it.
                        black_box(g.words[0]);
                        drop(g);
                    }
                    Err(crossbeam_channel::TryRecvError::Empty) => backoff.wait(),
                    Err(crossbeam_channel::TryRecvError::Disconnected) => break,
                }
            }
        });
        let start = Instant::now();
        for i in 0..n {
            let mut g = source.take();
            g.words[0] = i;
            let mut backoff = Backoff::default();
            let mut item = g;
            loop {
                match tx.try_send(item) {
                    Ok(()) => break,
                    Err(crossbeam_channel::TrySendError::Full(back)) => {
                        item = back;
                        backoff.wait();
                    }
                    Err(crossbeam_channel::TrySendError::Disconnected(_)) => break,
                }
            }
        }
        drop(tx);
        let _ = consumer.join();
        start.elapsed()
    })
}
