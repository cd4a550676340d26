//! Guards that fit where a `Box` would: the traits a guard forwards to its
//! object (`io::Read`, `io::BufRead`, `io::Write`, `io::Seek`, `Iterator` and
//! its kin, `Future`), unwind safety (the books balance after a panic caught
//! around a `get`), owned guards from a recycler that is a plain field
//! (`Recycler::handle`), and `try_get_owned`. The buffer pool's side is in
//! `buffer_fit.rs`.
#![deny(warnings)]
// tokio, which some tests use, is no dev-dependency under `--cfg loom`.
#![cfg(not(loom))]

mod common;

use std::collections::VecDeque;
use std::future::Future;
use std::io::{self, BufRead, Read, Write};
use std::panic::{RefUnwindSafe, UnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::AtomicU32;
use std::sync::atomic::Ordering::SeqCst;
use std::sync::{Arc, mpsc};
use std::task::{Context, Poll, Waker};
use std::thread;

use common::{Counts, assert_conserved};
use recycler_core::buffer::{BufferPool, BufferPoolHandle, OwnedPooledBuf, PooledBuf};
use recycler_core::{OwnedPooled, Pooled, Recyclable, Recycler, RecyclerHandle};

// ------------------------------------------------- the traits, at compile time

fn is_write<W: Write>() {}
fn is_read<R: Read>() {}
fn is_buf_read<R: BufRead>() {}
fn is_double_ended<I: DoubleEndedIterator + ExactSizeIterator + std::iter::FusedIterator>() {}
fn is_future<F: Future>() {}
fn is_unwind_safe<T: UnwindSafe + RefUnwindSafe>() {}
fn is_static_send<T: Send + 'static>(t: T) -> T {
    t
}

#[test]
fn guards_have_the_traits_of_their_objects_as_boxes_do() {
    // `Box<Vec<u8>>: Write`, and so are the guards.
    is_write::<Box<Vec<u8>>>();
    is_write::<Pooled<'static, Vec<u8>>>();
    is_write::<OwnedPooled<Vec<u8>>>();
    is_read::<Pooled<'static, VecDeque<u8>>>();
    is_buf_read::<OwnedPooled<VecDeque<u8>>>();
    is_double_ended::<Pooled<'static, Digits>>();
    is_double_ended::<OwnedPooled<Digits>>();
    is_future::<Pooled<'static, Ticks>>();
    is_future::<OwnedPooled<Ticks>>();
    is_unwind_safe::<Recycler<std::cell::Cell<u8>>>();
    is_unwind_safe::<RecyclerHandle<String>>();
    is_unwind_safe::<Pooled<'static, String>>();
    is_unwind_safe::<OwnedPooled<String>>();
    is_unwind_safe::<BufferPool>();
    is_unwind_safe::<BufferPoolHandle>();
    is_unwind_safe::<PooledBuf<'static>>();
    is_unwind_safe::<OwnedPooledBuf>();
    // The negative cases (a guard of a `String` is no writer, a guard of a
    // `Cell` is not `RefUnwindSafe`) are asserted in the unit tests of
    // `guard.rs`, with `static_assertions`.
}

// ------------------------------------------------------------- io forwarding

/// A reader and writer that records which of its methods ran, to tell a
/// forwarded call from the trait's default (which would call `read` or
/// `write` instead).
#[derive(Default)]
struct Probe {
    data: VecDeque<u8>,
    calls: Vec<&'static str>,
}

impl Recyclable for Probe {
    fn reset(&mut self) {
        self.data.clear();
        self.calls.clear();
    }
}

impl Read for Probe {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.calls.push("read");
        self.data.read(buf)
    }

    fn read_to_end(&mut self, buf: &mut Vec<u8>) -> io::Result<usize> {
        self.calls.push("read_to_end");
        let n = self.data.len();
        buf.extend(self.data.drain(..));
        Ok(n)
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> io::Result<()> {
        self.calls.push("read_exact");
        self.data.read_exact(buf)
    }
}

impl BufRead for Probe {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        self.calls.push("fill_buf");
        Ok(self.data.as_slices().0)
    }

    fn consume(&mut self, amt: usize) {
        self.calls.push("consume");
        self.data.drain(..amt);
    }

    fn read_line(&mut self, buf: &mut String) -> io::Result<usize> {
        self.calls.push("read_line");
        let end = self
            .data
            .iter()
            .position(|&b| b == b'\n')
            .map_or(self.data.len(), |i| i + 1);
        let line: Vec<u8> = self.data.drain(..end).collect();
        buf.push_str(std::str::from_utf8(&line).unwrap());
        Ok(line.len())
    }
}

impl io::Seek for Probe {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.calls.push("seek");
        match pos {
            io::SeekFrom::Start(n) => Ok(n),
            _ => Err(io::Error::other("only from the start (test)")),
        }
    }

    fn stream_position(&mut self) -> io::Result<u64> {
        self.calls.push("stream_position");
        Ok(0)
    }
}

impl Write for Probe {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.calls.push("write");
        self.data.extend(buf);
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.calls.push("write_all");
        self.data.extend(buf);
        Ok(())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.calls.push("flush");
        Ok(())
    }
}

#[test]
fn io_calls_reach_the_objects_own_methods() -> io::Result<()> {
    let pool: Recycler<Probe> = Recycler::new();
    let mut p = pool.get();
    p.write_all(b"one\ntwo\n")?;
    p.flush()?;
    let mut line = String::new();
    p.read_line(&mut line)?;
    assert_eq!(line, "one\n");
    let mut two = [0; 2];
    p.read_exact(&mut two)?;
    assert_eq!(&two, b"tw");
    let mut rest = Vec::new();
    assert_eq!(p.read_to_end(&mut rest)?, 2);
    assert_eq!(rest, b"o\n");
    use std::io::Seek;
    assert_eq!(p.seek(io::SeekFrom::Start(3))?, 3);
    assert_eq!(
        p.stream_position()?,
        0,
        "the object's own, not `seek(Current(0))`"
    );
    assert_eq!(
        p.calls,
        [
            "write_all",
            "flush",
            "read_line",
            "read_exact",
            "read_to_end",
            "seek",
            "stream_position"
        ],
        "each call forwarded, none by the trait's default"
    );
    drop(p);

    // The owned guard, and generic code that takes a writer by value.
    let owned = Arc::new(Recycler::<Probe>::new());
    fn fill(mut w: impl Write) -> io::Result<()> {
        w.write_all(b"xy")
    }
    let mut o = owned.get_owned();
    fill(&mut o)?;
    let buf = o.fill_buf()?.to_vec();
    o.consume(1);
    let mut y = [0; 1];
    o.read_exact(&mut y)?;
    assert_eq!(o.seek(io::SeekFrom::Start(2))?, 2);
    assert_eq!(o.stream_position()?, 0);
    assert_eq!((buf, y), (b"xy".to_vec(), *b"y"));
    assert_eq!(
        o.calls,
        [
            "write_all",
            "fill_buf",
            "consume",
            "read_exact",
            "seek",
            "stream_position"
        ]
    );
    Ok(())
}

#[test]
fn a_pooled_vec_is_a_writer_and_a_pooled_deque_a_reader() -> io::Result<()> {
    let vecs: Recycler<Vec<u8>> = Recycler::new();
    let mut out = vecs.get();
    write!(out, "{}-{}", 4, 2)?;
    assert_eq!(
        out.write_vectored(&[io::IoSlice::new(b"a"), io::IoSlice::new(b"b")])?,
        2
    );
    assert_eq!(&out[..], b"4-2ab");
    // `io::copy` from a pooled deque into a pooled vector.
    let deques = Arc::new(Recycler::<VecDeque<u8>>::new());
    let mut input = deques.get_owned();
    input.extend(b"line 1\nline 2\n");
    let mut copied = vecs.get();
    assert_eq!(io::copy(&mut input, &mut *copied)?, 14);
    assert_eq!(&copied[..], b"line 1\nline 2\n");
    let mut lines = deques.get_owned();
    lines.extend(b"a\nb");
    let read: Vec<String> = lines.lines().collect::<io::Result<_>>()?; // consumes the guard
    assert_eq!(read, ["a", "b"]);
    assert_eq!(
        deques.stats().idle,
        1,
        "the guard `lines` consumed went home"
    );
    Ok(())
}

// ------------------------------------------------------ iterators and futures

/// The digits `0..n`, from both ends, counting `next` calls, with its own
/// `nth` (one step, not `n + 1` calls of `next`).
#[derive(Default)]
struct Digits {
    front: u32,
    back: u32,
    nexts: u32,
}

impl Recyclable for Digits {
    fn reset(&mut self) {
        *self = Self::default();
    }
}

impl Iterator for Digits {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        self.nexts += 1;
        (self.front < self.back).then(|| {
            self.front += 1;
            self.front - 1
        })
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = (self.back - self.front) as usize;
        (n, Some(n))
    }

    fn nth(&mut self, n: usize) -> Option<u32> {
        self.front = self.front.saturating_add(n as u32).min(self.back);
        self.next()
    }
}

impl DoubleEndedIterator for Digits {
    fn next_back(&mut self) -> Option<u32> {
        (self.front < self.back).then(|| {
            self.back -= 1;
            self.back
        })
    }
}

impl ExactSizeIterator for Digits {}
impl std::iter::FusedIterator for Digits {}

fn digits(pool: &Recycler<Digits>, n: u32) -> Pooled<'_, Digits> {
    let mut d = pool.get();
    d.back = n;
    d
}

#[test]
fn iterator_calls_reach_the_objects_own_methods() {
    let pool: Recycler<Digits> = Recycler::new();
    let mut d = digits(&pool, 10);
    assert_eq!(d.len(), 10);
    assert_eq!(d.size_hint(), (10, Some(10)));
    assert_eq!(d.nth(5), Some(5));
    assert_eq!(d.nexts, 1, "the object's `nth`, not five calls of `next`");
    assert_eq!(d.next_back(), Some(9));
    assert_eq!(d.by_ref().rev().take(2).collect::<Vec<_>>(), [8, 7]);
    assert_eq!(d.len(), 1);
    // Consumed by a `for` loop: the object goes home, reset.
    let mut seen = Vec::new();
    for x in d {
        seen.push(x);
    }
    assert_eq!(seen, [6]);
    let s = pool.stats();
    assert_eq!((s.in_use, s.idle), (0, 1));
    let again = pool.get();
    assert_eq!((again.front, again.back, again.nexts), (0, 0, 0), "reset");
    drop(again);

    let owned = Arc::new(Recycler::<Digits>::new());
    let mut o = owned.get_owned();
    o.back = 5;
    assert_eq!(o.len(), 5);
    assert_eq!(o.next_back(), Some(4));
    let sum: u32 = o.map(|x| x * 10).sum();
    assert_eq!(sum, 60);
    assert_eq!(owned.stats().idle, 1);
}

/// Ready on its third poll, waking its waker each time it is not.
#[derive(Default)]
struct Ticks(u32);

impl Recyclable for Ticks {
    fn reset(&mut self) {
        self.0 = 0;
    }
}

impl Future for Ticks {
    type Output = u32;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<u32> {
        self.0 += 1;
        if self.0 == 3 {
            Poll::Ready(self.0)
        } else {
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Polls `fut` to completion on this thread; returns the output and the
/// number of polls.
fn block_on<F: Future + Unpin>(mut fut: F) -> (F::Output, u32) {
    let mut cx = Context::from_waker(Waker::noop());
    let mut polls = 0;
    loop {
        polls += 1;
        if let Poll::Ready(out) = Pin::new(&mut fut).poll(&mut cx) {
            return (out, polls);
        }
    }
}

#[test]
fn a_guard_of_an_unpin_future_is_a_future() {
    let pool: Recycler<Ticks> = Recycler::new();
    assert_eq!(block_on(pool.get()), (3, 3));
    assert_eq!(
        pool.stats().idle,
        1,
        "the future went home when the guard dropped"
    );
    // Reset: the next one starts over.
    assert_eq!(block_on(pool.get()), (3, 3));
    assert_eq!(pool.stats().hits, 1);

    // An owned one, awaited in a task on a runtime.
    let owned = Arc::new(Recycler::<Ticks>::new());
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let fut = owned.get_owned();
    let out = rt.block_on(async { tokio::spawn(fut).await }); // the guard is the task
    assert_eq!(out.unwrap(), 3);
    assert_eq!(owned.stats().idle, 1);
}

// ------------------------------------------------------------ unwind safety

#[test]
fn a_panic_inside_catch_unwind_leaves_the_recyclers_books_balanced() {
    let counts = Counts::new();
    let pool = common::recycler(&counts);
    drop(pool.get()); // one idle
    // No `AssertUnwindSafe`: `&pool` is `RefUnwindSafe`.
    let caught = catch_unwind(|| {
        let mut a = pool.get(); // the idle one
        let b = pool.get(); // a new one
        a.data.push(1); // half-changed when the panic comes
        drop(b); // pooled before the panic
        panic!("user code fails (test)");
    });
    assert!(caught.is_err());
    let s = pool.stats();
    assert_eq!(
        (s.in_use, s.idle, s.dropped),
        (0, 1, 1),
        "`a` dropped, not pooled: {s}"
    );
    assert_conserved(&pool, &counts, 0);
    // Still usable, and the object it hands out is the clean one.
    let g = pool.get();
    assert!(g.data.is_empty());
    drop(g);

    // Owned guards and a handle move in and out as well.
    let counts = Counts::new();
    let shared = Arc::new(common::recycler(&counts));
    let handle = shared.handle();
    let held = shared.get_owned();
    let caught = catch_unwind(move || {
        let _kept = held;
        let _also = handle.get_owned();
        panic!("again (test)");
    });
    assert!(caught.is_err());
    let s = shared.stats();
    assert_eq!(
        (s.created, s.in_use, s.idle, s.dropped),
        (2, 0, 0, 2),
        "{s}"
    );
    assert_conserved(&shared, &counts, 0);
}

/// An object made, checked and counted on each `poll`, for the unwind test
/// of futures: a panic in `poll` of a pooled future drops it.
#[derive(Default)]
struct Exploding(Arc<AtomicU32>);

impl Recyclable for Exploding {
    fn reset(&mut self) {}
}

impl Future for Exploding {
    type Output = ();

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        self.0.fetch_add(1, SeqCst);
        panic!("poll fails (test)");
    }
}

#[test]
fn a_future_that_panics_in_poll_is_not_pooled() {
    let pool: Recycler<Exploding> = Recycler::new();
    let polls = Arc::new(AtomicU32::new(0));
    let caught = catch_unwind(|| {
        let mut fut = pool.get();
        fut.0 = Arc::clone(&polls);
        block_on(fut)
    });
    assert!(caught.is_err());
    assert_eq!(polls.load(SeqCst), 1);
    let s = pool.stats();
    assert_eq!((s.in_use, s.idle, s.dropped), (0, 0, 1), "{s}");
}

// --------------------------------------------------------------- the handle

/// A server that keeps its recycler as a plain field.
#[derive(Default)]
struct Server {
    frames: Recycler<Vec<u8>>,
}

#[test]
fn a_recycler_in_a_plain_field_gives_static_guards_through_its_handle() {
    let server = Arc::new(Server::default());
    let frames = server.frames.handle();
    let (tx, rx) = mpsc::channel::<OwnedPooled<Vec<u8>>>();
    let workers: Vec<_> = (0..4u8)
        .map(|i| {
            let frames = frames.clone();
            let tx = tx.clone();
            thread::spawn(move || {
                for _ in 0..25 {
                    let mut f = is_static_send(frames.get_owned());
                    f.push(i);
                    tx.send(f).unwrap();
                }
            })
        })
        .collect();
    drop(tx);
    for w in workers {
        w.join().unwrap();
    }
    let got: Vec<_> = rx.iter().collect();
    assert_eq!(got.len(), 100);
    assert!(got.iter().all(|f| f.len() == 1));
    drop(got); // released here, on another thread than the one that got each
    let s = server.frames.stats();
    assert_eq!(
        (s.gets, s.in_use, s.released_local + s.released_remote),
        (100, 0, 100),
        "one pool: {s}"
    );
    // The handle outlives the server; its guards keep the pool alive.
    let guard = frames.get_owned();
    drop(server);
    drop(frames);
    assert!(guard.is_empty());
}

#[test]
fn try_get_owned_takes_only_what_is_pooled() {
    for striped in [false, true] {
        let counts = Counts::new();
        let mut b = common::builder(&counts);
        if striped {
            b = b.striped(2);
        }
        let pool = Arc::new(b.build().unwrap());
        assert!(pool.try_get_owned().is_none());
        assert!(pool.handle().try_get_owned().is_none());
        assert_eq!(counts.made(), 0, "never the factory");
        let first = pool.get_owned();
        let serial = first.serial;
        drop(first);
        let again = pool.handle().try_get_owned().expect("the pooled one");
        assert_eq!(again.serial, serial);
        let moved = thread::spawn(move || again.serial).join().unwrap();
        assert_eq!(moved, serial);
        assert_eq!(counts.made(), 1);
        let s = pool.stats();
        assert_eq!(
            (s.gets, s.hits, s.created),
            (2, 1, 1),
            "striped {striped}: {s}"
        );
        assert_conserved(&pool, &counts, 0);
    }
}
