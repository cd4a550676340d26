//! W2M, the message pipeline: W2's producer → consumer shape with W9's
//! realistic [`Message`] instead of a 64-byte object.
//!
//! The producer takes a message from the contender, fills it with message
//! `i` of the [`Corpus`] (a `String` topic, a payload of 256 to 4,096
//! bytes, 4 to 8 header pairs of short strings, a few scalars; the sizes
//! and contents are pseudo-random from a fixed seed, the same sequence for
//! every contender and every run) and sends it through a bounded queue
//! (`crossbeam-channel`, 1024 slots, both ends polling as in W2). The
//! consumer reads every byte of it ([`checksum`]) and releases it. Both
//! threads are pinned to two CPUs where the OS allows
//! ([`affinity`](crate::affinity)).
//!
//! A fresh `Box<Message>` allocates the box, the topic, the payload, the
//! header vector (and its growth past four pairs) and two strings per
//! header: 12 to 21 allocations per message, freed on the consumer. A pool
//! hands out a message whose strings and vectors kept their capacity, so
//! filling it copies bytes and allocates nothing. `thingbuf`'s channel is
//! its own pool and runs this shape itself
//! ([`Thingbuf::w2m`](crate::Thingbuf::w2m)).

use std::hint::black_box;
use std::thread;
use std::time::{Duration, Instant};

use crate::affinity::{Pin, Side};
use crate::message::{Corpus, Message};
use crate::source::Source;
use crate::workloads::{QUEUE, consume_polling, send_polling};

/// One run of a pipeline: how long it took, and the sum of the
/// consumer's checksums (the same for every contender given the same
/// count: they move the same messages).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pipelined {
    /// From the first take to the consumer's last release.
    pub elapsed: Duration,
    /// The wrapping sum of [`checksum`] over the messages received.
    pub checksum: u64,
}

/// Reads every byte of `m` (the topic, the payload, each header's name and
/// value) and its scalars, and folds them into a number: what a consumer
/// that validates or forwards the message pays to read it.
///
/// The bytes are summed eight at a time as little-endian words (the
/// compiler vectorizes it), so the reading costs about what bringing the
/// bytes to the consumer's cache costs, not more.
///
/// # Examples
///
/// ```
/// use recycler_benches::{Corpus, Message, checksum};
/// use recycler_core::Recyclable;
///
/// let corpus = Corpus::new();
/// let mut reused = Message::default();
/// corpus.fill(&mut reused, 9);
/// reused.reset();
/// corpus.fill(&mut reused, 4);
/// let mut fresh = Message::default();
/// corpus.fill(&mut fresh, 4);
/// assert_eq!(checksum(&reused), checksum(&fresh));
/// ```
#[inline]
pub fn checksum(m: &Message) -> u64 {
    let mut h = m.id
        ^ m.timestamp_ns.rotate_left(17)
        ^ (u64::from(m.partition) << 40)
        ^ (u64::from(m.priority) << 56);
    h = h.wrapping_add(sum_bytes(m.topic.as_bytes()).rotate_left(3));
    h = h.wrapping_add(sum_bytes(&m.payload));
    for (name, value) in m.headers.iter() {
        h = h.wrapping_add(sum_bytes(name.as_bytes()) ^ sum_bytes(value.as_bytes()).rotate_left(1));
    }
    h
}

/// The wrapping sum of `bytes` read as little-endian words (the tail
/// zero-padded), mixed with the length.
#[inline]
fn sum_bytes(bytes: &[u8]) -> u64 {
    let mut words = bytes.chunks_exact(8);
    let mut sum = 0u64;
    for w in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(w);
        sum = sum.wrapping_add(u64::from_le_bytes(word));
    }
    let mut tail = [0u8; 8];
    tail[..words.remainder().len()].copy_from_slice(words.remainder());
    sum.wrapping_add(u64::from_le_bytes(tail)) ^ (bytes.len() as u64) << 48
}

/// W2M through a [`Source`]: the producer (the calling thread) takes `n`
/// messages, fills message `i` of `corpus` into each and sends it through
/// a bounded queue; the consumer checksums each and drops its guard,
/// which releases it (or, for `Box`, frees it and its strings and vectors).
///
/// # Examples
///
/// ```
/// use recycler_benches::{Boxed, Corpus, Message, w2m_pipeline};
/// use recycler_core::Recycler;
///
/// let corpus = Corpus::new();
/// let fresh = w2m_pipeline(&Boxed::<Message>::new(), &corpus, 2000);
/// let pooled = w2m_pipeline(&Recycler::<Message>::new(), &corpus, 2000);
/// assert_eq!(fresh.checksum, pooled.checksum);
/// ```
pub fn w2m_pipeline<S: Source<Object = Message>>(source: &S, corpus: &Corpus, n: u64) -> Pipelined {
    let (tx, rx) = crossbeam_channel::bounded::<S::Guard<'_>>(QUEUE);
    thread::scope(|s| {
        let consumer = s.spawn(move || {
            let _pin = Pin::new(Side::Consumer);
            let mut sum = 0u64;
            consume_polling(&rx, |m| {
                sum = sum.wrapping_add(checksum(black_box(&m)));
                drop(m);
            });
            sum
        });
        let _pin = Pin::new(Side::Producer);
        let start = Instant::now();
        for i in 0..n {
            let mut m = source.take();
            corpus.fill(&mut m, i);
            send_polling(&tx, m);
        }
        drop(tx);
        let checksum = consumer.join().unwrap_or(0);
        Pipelined {
            elapsed: start.elapsed(),
            checksum,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        Boxed, LockfreeLinear, LockfreeMutex, LockfreeSpinLock, OPool, ObjectPool, ShardedSlab,
        Thingbuf,
    };
    use recycler_core::Recycler;

    #[test]
    fn every_contender_moves_the_same_messages() {
        let corpus = Corpus::new();
        let n = 3000;
        let want = w2m_pipeline(&Boxed::<Message>::new(), &corpus, n).checksum;
        assert_ne!(want, 0);
        let at_home = Recycler::<Message>::builder()
            .reset_on_return(false)
            .build()
            .expect("valid");
        let sums = [
            w2m_pipeline(&Recycler::<Message>::new(), &corpus, n).checksum,
            w2m_pipeline(&at_home, &corpus, n).checksum,
            // Twice: the second run reuses the first run's messages.
            w2m_pipeline(&at_home, &corpus, n).checksum,
            w2m_pipeline(&ShardedSlab::<Message>::default(), &corpus, n).checksum,
            w2m_pipeline(&ObjectPool::<Message>::default(), &corpus, n).checksum,
            w2m_pipeline(&LockfreeLinear::<Message>::default(), &corpus, n).checksum,
            w2m_pipeline(&LockfreeSpinLock::<Message>::default(), &corpus, n).checksum,
            w2m_pipeline(&LockfreeMutex::<Message>::default(), &corpus, n).checksum,
            w2m_pipeline(&OPool::<Message>::default(), &corpus, n).checksum,
        ];
        assert!(sums.iter().all(|&s| s == want), "{sums:?} != {want}");
        let chan = Thingbuf::<Message>::default();
        assert_eq!(chan.w2m(&corpus, n).checksum, want);
        assert_eq!(chan.w2m(&corpus, n).checksum, want, "slots reused");
    }

    #[test]
    fn the_checksum_reads_every_byte() {
        let corpus = Corpus::new();
        let mut m = Message::default();
        corpus.fill(&mut m, 1);
        let base = checksum(&m);
        let last = m.payload.len() - 1;
        m.payload[last] ^= 1;
        assert_ne!(checksum(&m), base);
        m.payload[last] ^= 1;
        m.topic.push('x');
        assert_ne!(checksum(&m), base);
    }

    #[test]
    fn thingbuf_w2_runs() {
        let chan = Thingbuf::default();
        chan.w2(5000);
        chan.w2(5000);
    }
}
