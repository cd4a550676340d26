//! `thingbuf` as a contender of W2 and W2M: a channel that is its own pool.
//!
//! `thingbuf::mpsc::blocking::with_recycle` makes a bounded channel whose
//! slots hold the objects themselves. The producer's `send_ref` claims a
//! free slot and hands out a reference to the object already in it, which
//! the producer fills in place; the consumer's `recv_ref` reads it in the
//! slot, and dropping that reference frees the slot for a later send. No
//! object is ever allocated after the slots' first round, and nothing is
//! moved: what passes is the slot. The recycling policy, [`ResetRecycle`],
//! calls the object's [`Recyclable::reset`] (for W2M's message: clear every
//! string and vector, keep their capacity). `thingbuf` runs it when a slot
//! is claimed for its next send, so on the producer's thread, as the
//! recycler's `reset_on_return(false)` does.
//!
//! Both ends poll (`try_send_ref`/`try_recv_ref` with the same brief spin
//! then yield as every other contender's queue, see
//! [`w2_producer_consumer`](crate::w2_producer_consumer)): the blocking
//! calls would measure thread wake-ups instead. The channel lives across
//! runs, as the other contenders' pools do; each run sends `n` objects and
//! the consumer receives exactly `n`.

use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};

use recycler_core::Recyclable;
use thingbuf::mpsc::blocking::{Receiver, Sender, with_recycle};
use thingbuf::mpsc::errors::{TryRecvError, TrySendError};

use crate::affinity::{Pin, Side};
use crate::message::{Corpus, Message};
use crate::payload::Msg;
use crate::pipeline::{Pipelined, checksum};
use crate::workloads::{Backoff, QUEUE};

/// `thingbuf`'s recycling policy for any [`Recyclable`]: a new slot holds
/// `T::default()`, a reused one is [`reset`](Recyclable::reset).
#[derive(Debug, Default, Clone, Copy)]
pub struct ResetRecycle;

impl<T: Recyclable + Default> thingbuf::Recycle<T> for ResetRecycle {
    fn new_element(&self) -> T {
        T::default()
    }

    #[inline]
    fn recycle(&self, element: &mut T) {
        element.reset();
    }
}

/// A `thingbuf` blocking MPSC channel of `T` with [`ResetRecycle`], as many
/// slots as the other contenders' queue; both halves kept for the runs.
pub struct Thingbuf<T: Recyclable + Default = Msg> {
    tx: Sender<T, ResetRecycle>,
    rx: Receiver<T, ResetRecycle>,
}

impl<T: Recyclable + Default> Default for Thingbuf<T> {
    fn default() -> Self {
        let (tx, rx) = with_recycle(QUEUE, ResetRecycle);
        Self { tx, rx }
    }
}

impl<T: Recyclable + Default> std::fmt::Debug for Thingbuf<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Thingbuf").finish_non_exhaustive()
    }
}

impl<T: Recyclable + Default + Send + Sync> Thingbuf<T> {
    /// Sends `n` objects, each filled in place by `fill(object, i)`, to a
    /// consumer thread that calls `read` on each in its slot, then frees the
    /// slot. Returns the elapsed time and the sum of what `read` returned.
    fn run(
        &self,
        n: u64,
        mut fill: impl FnMut(&mut T, u64),
        read: impl Fn(&T) -> u64 + Send,
    ) -> Pipelined {
        let rx = &self.rx;
        thread::scope(|s| {
            let consumer = s.spawn(move || {
                let _pin = Pin::new(Side::Consumer);
                let mut sum = 0u64;
                let mut got = 0;
                let mut backoff = Backoff::default();
                while got < n {
                    match rx.try_recv_ref() {
                        Ok(slot) => {
                            backoff = Backoff::default();
                            sum = sum.wrapping_add(read(&slot));
                            drop(slot);
                            got += 1;
                        }
                        Err(TryRecvError::Closed) => break,
                        Err(_) => backoff.wait(),
                    }
                }
                sum
            });
            let _pin = Pin::new(Side::Producer);
            let start = Instant::now();
            for i in 0..n {
                let mut backoff = Backoff::default();
                let mut slot = loop {
                    match self.tx.try_send_ref() {
                        Ok(slot) => break slot,
                        Err(TrySendError::Full(())) => backoff.wait(),
                        Err(_) => panic!("the consumer of a thingbuf run hung up"),
                    }
                };
                fill(&mut slot, i);
                drop(slot);
            }
            let checksum = consumer.join().unwrap_or(0);
            Pipelined {
                elapsed: start.elapsed(),
                checksum,
            }
        })
    }
}

impl Thingbuf<Msg> {
    /// W2 through `thingbuf`: the producer writes a word of each 64-byte
    /// object in its slot, the consumer reads it there. Returns the
    /// elapsed time for `n` objects.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::Thingbuf;
    ///
    /// let chan = Thingbuf::default();
    /// assert!(chan.w2(5000).as_secs() < 60);
    /// ```
    pub fn w2(&self, n: u64) -> Duration {
        self.run(
            n,
            |m, i| m.words[0] = i,
            |m| {
                black_box(m.words[0]);
                0
            },
        )
        .elapsed
    }
}

impl Thingbuf<Message> {
    /// W2M through `thingbuf`: the producer fills message `i` of `corpus`
    /// in a slot (whose strings and vectors kept their capacity), the
    /// consumer checksums it there (see [`w2m_pipeline`](crate::w2m_pipeline)).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::{Corpus, Message, Thingbuf};
    ///
    /// let chan = Thingbuf::<Message>::default();
    /// let run = chan.w2m(&Corpus::new(), 3000);
    /// assert!(run.elapsed.as_secs() < 60);
    /// ```
    pub fn w2m(&self, corpus: &Corpus, n: u64) -> Pipelined {
        self.run(n, |m, i| corpus.fill(m, i), checksum)
    }
}
