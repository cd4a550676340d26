//! The workloads: each takes a contender and an operation count and
//! returns how long the operations took.

use std::hint::black_box;
use std::ops::DerefMut;
use std::thread;
use std::time::{Duration, Instant};

use crate::affinity::{Pin, Side};
use crate::encoding::Buffers;
use crate::message::{Corpus, EncodeBuf, Message, glance};
use crate::payload::Msg;
use crate::source::{Source, Take};

/// W1: get, touch, release on one thread, `held` objects at a time; runs
/// `iters` rounds (`iters * held` objects) and returns the elapsed time.
///
/// The guards are not passed through `black_box` themselves (only the objects
/// they point to): moving a multi-word guard through memory that way measures
/// store-forwarding stalls of the harness, not the pool.
pub fn w1_get_release<S: Take<Object = Msg>>(source: &S, held: usize, iters: u64) -> Duration {
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
    start.elapsed()
}

/// Waits a little for the other side of a queue: spins, then yields the CPU
/// so that two threads sharing one CPU still make progress.
#[derive(Debug, Default)]
pub(crate) struct Backoff(u32);

impl Backoff {
    pub(crate) fn wait(&mut self) {
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
///
/// The producer (the calling thread, for the run) and the consumer are
/// pinned to two different CPUs where the OS allows (see
/// [`affinity`](crate::affinity)).
pub fn w2_producer_consumer<S: Source<Object = Msg>>(source: &S, n: u64) -> Duration {
    let (tx, rx) = crossbeam_channel::bounded::<S::Guard<'_>>(QUEUE);
    thread::scope(|s| {
        let consumer = s.spawn(move || {
            let _pin = Pin::new(Side::Consumer);
            consume_polling(&rx, read_msg)
        });
        let _pin = Pin::new(Side::Producer);
        let start = Instant::now();
        for i in 0..n {
            let mut g = source.take();
            g.words[0] = i;
            send_polling(&tx, g);
        }
        drop(tx);
        let _ = consumer.join();
        start.elapsed()
    })
}

/// W6: one thread takes objects and hands each to one of `workers` threads,
/// chosen at random, which reads and releases it: objects migrate between
/// threads all the time. Returns the elapsed time for `n` objects.
pub fn w6_migrating<S: Source<Object = Msg>>(source: &S, workers: usize, n: u64) -> Duration {
    let workers = workers.max(1);
    let channels: Vec<_> = (0..workers)
        .map(|_| crossbeam_channel::bounded::<S::Guard<'_>>(256))
        .collect();
    thread::scope(|s| {
        let handles: Vec<_> = channels
            .iter()
            .map(|(_, rx)| {
                let rx = rx.clone();
                s.spawn(move || consume_polling(&rx, read_msg))
            })
            .collect();
        let senders: Vec<_> = channels.iter().map(|(tx, _)| tx.clone()).collect();
        drop(channels);
        let mut rng = 0x2545_F491_4F6C_DD1Du64;
        let start = Instant::now();
        for i in 0..n {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let to = (rng % workers as u64) as usize;
            let mut g = source.take();
            g.words[0] = i;
            send_polling(&senders[to], g);
        }
        drop(senders);
        for h in handles {
            let _ = h.join();
        }
        start.elapsed()
    })
}

/// The capacity of W2's, W2M's and W9's queues.
pub(crate) const QUEUE: usize = 1024;

/// W2's and W6's consumer: reads the message, as a real consumer would,
/// then releases it.
#[inline]
pub(crate) fn read_msg<G: DerefMut<Target = Msg>>(g: G) {
    black_box(g.words[0]);
    drop(g);
}

/// Receives items until the queue disconnects, polling while it is empty
/// (see [`w2_producer_consumer`]), and hands each to `consume`.
pub(crate) fn consume_polling<T>(rx: &crossbeam_channel::Receiver<T>, mut consume: impl FnMut(T)) {
    let mut backoff = Backoff::default();
    loop {
        match rx.try_recv() {
            Ok(item) => {
                backoff = Backoff::default();
                consume(item);
            }
            Err(crossbeam_channel::TryRecvError::Empty) => backoff.wait(),
            Err(crossbeam_channel::TryRecvError::Disconnected) => return,
        }
    }
}

/// Sends `item`, polling while the queue is full (see [`w2_producer_consumer`]).
pub(crate) fn send_polling<T>(tx: &crossbeam_channel::Sender<T>, item: T) {
    let mut backoff = Backoff::default();
    let mut item = item;
    loop {
        match tx.try_send(item) {
            Ok(()) => return,
            Err(crossbeam_channel::TrySendError::Full(back)) => {
                item = back;
                backoff.wait();
            }
            Err(crossbeam_channel::TrySendError::Disconnected(_)) => return,
        }
    }
}

/// W9, owner shape: build message `i` of `corpus` in an object from
/// `messages`, encode it into a buffer from `buffers`, glance at the
/// encoding, release both; `iters` messages on one thread.
///
/// # Examples
///
/// ```
/// use recycler_benches::{Boxed, Corpus, FreshVec, Message, w9_owner};
///
/// let took = w9_owner(&Boxed::<Message>::new(), &FreshVec, &Corpus::new(), 100);
/// assert!(took.as_secs() < 60);
/// ```
pub fn w9_owner<M, B>(messages: &M, buffers: &B, corpus: &Corpus, iters: u64) -> Duration
where
    M: Take<Object = Message>,
    B: Buffers,
{
    let start = Instant::now();
    for i in 0..iters {
        let mut m = messages.take();
        corpus.fill(&mut m, i);
        encode_and_release(m, buffers);
    }
    start.elapsed()
}

/// W9, producer/consumer shape: one thread builds message `i` of `corpus`
/// in an object from `messages` and passes it through a bounded queue (as
/// in W2) to another, which encodes it into a buffer from `buffers`,
/// glances at the encoding and releases both. Returns the elapsed time for
/// `n` messages.
///
/// # Examples
///
/// ```
/// use recycler_benches::{Boxed, Corpus, FreshVec, Message, w9_producer_consumer};
///
/// let took = w9_producer_consumer(&Boxed::<Message>::new(), &FreshVec, &Corpus::new(), 100);
/// assert!(took.as_secs() < 60);
/// ```
pub fn w9_producer_consumer<M, B>(messages: &M, buffers: &B, corpus: &Corpus, n: u64) -> Duration
where
    M: Source<Object = Message>,
    B: Buffers + Sync,
{
    let (tx, rx) = crossbeam_channel::bounded::<M::Guard<'_>>(1024);
    thread::scope(|s| {
        let consumer = s.spawn(move || consume_polling(&rx, |m| encode_and_release(m, buffers)));
        let start = Instant::now();
        for i in 0..n {
            let mut m = messages.take();
            corpus.fill(&mut m, i);
            send_polling(&tx, m);
        }
        drop(tx);
        let _ = consumer.join();
        start.elapsed()
    })
}

/// W9's reading side: encodes the message into a buffer of exactly its
/// encoded length, glances at the encoding, releases the buffer, then the
/// message.
#[inline]
fn encode_and_release<G: DerefMut<Target = Message>, B: Buffers>(m: G, buffers: &B) {
    let mut buf = buffers.buffer(m.encoded_len());
    m.encode(&mut buf);
    black_box(glance(buf.written()));
    drop(buf);
    drop(m);
}

/// W7: `n` live pooled objects are released, then the recycler is dropped
/// (the JDK's `DirectByteBufferGC` shape: freeing millions of live buffers
/// must cost linear time). Returns the time of the release and the drop.
pub fn w7_teardown(n: usize) -> Duration {
    let pool = recycler_core::Recycler::<Msg>::builder()
        .max_capacity_per_thread(n)
        .depot_capacity(n)
        .build()
        .expect("valid configuration");
    let guards: Vec<_> = (0..n).map(|_| pool.get()).collect();
    let start = Instant::now();
    drop(guards);
    drop(pool);
    start.elapsed()
}

/// The baseline of W7: `n` live boxes freed.
pub fn w7_teardown_boxes(n: usize) -> Duration {
    let boxes: Vec<Box<Msg>> = (0..n).map(|_| Box::new(Msg::default())).collect();
    let start = Instant::now();
    drop(boxes);
    start.elapsed()
}

/// W8: W1 (one object held) on `threads` threads at once, sharing one pool.
/// Returns the time of the slowest thread for `iters` operations each, so
/// that `threads * iters / time` is the aggregate throughput.
pub fn w8_scaling<S: Take<Object = Msg> + Sync>(
    source: &S,
    threads: usize,
    iters: u64,
) -> Duration {
    let barrier = std::sync::Barrier::new(threads.max(1));
    thread::scope(|s| {
        let handles: Vec<_> = (0..threads.max(1))
            .map(|_| {
                let barrier = &barrier;
                s.spawn(move || {
                    // Warm this thread's cache before the clock starts.
                    w1_get_release(source, 1, 1000);
                    barrier.wait();
                    w1_get_release(source, 1, iters)
                })
            })
            .collect();
        handles
            .into_iter()
            .filter_map(|h| h.join().ok())
            .max()
            .unwrap_or_default()
    })
}
