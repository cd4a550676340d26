//! The message of W9: what a broker or an RPC layer passes around, with a
//! topic, a payload of 256 bytes to 4 KiB, 4 to 8 header pairs and a few
//! scalars; its encoding (length-prefixed fields); and [`Corpus`], the
//! fixed-seed sequence of messages every contender builds.

use recycler_core::Recyclable;

use crate::buffers::XorShift;

/// A message: it owns heap memory in several places (the topic, the
/// payload, the headers' vector and every header's strings), which is what
/// pooling it keeps.
///
/// Its `reset` is derived: every field is cleared, keeping its capacity.
///
/// # Examples
///
/// ```
/// use recycler_benches::Message;
/// use recycler_core::Recyclable;
///
/// let mut m = Message::default();
/// m.topic.push_str("orders");
/// m.payload.extend_from_slice(&[1, 2, 3]);
/// m.headers.push("content-type", "application/json");
/// m.id = 7;
/// m.reset();
/// assert_eq!(m, Message::default());
/// assert!(m.topic.capacity() >= 6 && m.payload.capacity() >= 3);
/// ```
#[derive(Debug, Default, Clone, PartialEq, Eq, Recyclable)]
pub struct Message {
    /// Where the message goes.
    pub topic: String,
    /// The body: 256 bytes to 4 KiB in W9.
    pub payload: Vec<u8>,
    /// 4 to 8 name/value pairs in W9.
    pub headers: Headers,
    /// A sequence number.
    pub id: u64,
    /// When it was made, in nanoseconds since some epoch.
    pub timestamp_ns: u64,
    /// The partition of the topic.
    pub partition: u32,
    /// A priority class.
    pub priority: u8,
}

impl sharded_slab::Clear for Message {
    #[inline]
    fn clear(&mut self) {
        self.reset();
    }
}

/// Header pairs that keep their strings across a reset.
///
/// A plain `Vec<(String, String)>` would be reset with `Vec::clear`, which
/// drops the strings: a pool would then keep the vector's buffer but every
/// message would allocate its header strings again. `Headers` clears the
/// strings of the pairs in use and keeps them, so a reused message fills
/// its headers without allocating; a fresh one allocates two strings per
/// pair, as a `Vec<(String, String)>` would.
///
/// # Examples
///
/// ```
/// use recycler_benches::Headers;
/// use recycler_core::Recyclable;
///
/// let mut h = Headers::default();
/// h.push("trace-id", "abc");
/// h.push("reply-to", "inbox.7");
/// assert_eq!(h.len(), 2);
/// assert_eq!(h.iter().nth(1), Some(("reply-to", "inbox.7")));
/// h.reset();
/// assert!(h.is_empty());
/// assert!(h.retained_bytes() > 0, "the pairs' strings are kept");
/// ```
#[derive(Debug, Default, Clone)]
pub struct Headers {
    /// The pairs: the first `len` are in use, the rest are cleared strings
    /// kept for reuse.
    pairs: Vec<(String, String)>,
    len: usize,
}

impl Headers {
    /// Appends a pair, reusing a kept one if there is one.
    #[inline]
    pub fn push(&mut self, name: &str, value: &str) {
        if let Some((n, v)) = self.pairs.get_mut(self.len) {
            n.push_str(name);
            v.push_str(value);
        } else {
            self.pairs.push((name.to_owned(), value.to_owned()));
        }
        self.len += 1;
    }

    /// The pairs in use.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.pairs[..self.len]
            .iter()
            .map(|(n, v)| (n.as_str(), v.as_str()))
    }

    /// How many pairs are in use.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no pair is in use.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl PartialEq for Headers {
    fn eq(&self, other: &Self) -> bool {
        self.iter().eq(other.iter())
    }
}

impl Eq for Headers {}

impl Recyclable for Headers {
    #[inline]
    fn reset(&mut self) {
        for (n, v) in &mut self.pairs[..self.len] {
            n.clear();
            v.clear();
        }
        self.len = 0;
    }

    fn retained_bytes(&self) -> usize {
        self.pairs.retained_bytes()
            + self
                .pairs
                .iter()
                .map(|(n, v)| n.capacity() + v.capacity())
                .sum::<usize>()
    }
}

/// Where an encoding is written: a `Vec<u8>`, a pooled buffer, or a peer
/// pool's `Vec<u8>` (see [`Buffers`](crate::Buffers)).
pub trait EncodeBuf {
    /// Appends `bytes`.
    fn put(&mut self, bytes: &[u8]);

    /// What has been written.
    fn written(&self) -> &[u8];
}

impl EncodeBuf for Vec<u8> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    #[inline]
    fn written(&self) -> &[u8] {
        self
    }
}

impl EncodeBuf for recycler_core::buffer::PooledBuf<'_> {
    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }

    #[inline]
    fn written(&self) -> &[u8] {
        self
    }
}

impl Message {
    /// The length of [`encode`](Self::encode)'s output.
    #[inline]
    pub fn encoded_len(&self) -> usize {
        let headers: usize = self
            .headers
            .iter()
            .map(|(n, v)| 8 + n.len() + v.len())
            .sum();
        8 + 8 + 4 + 1 + 4 + self.topic.len() + 4 + self.payload.len() + 4 + headers
    }

    /// Writes the message into `out`: the scalars (little-endian), then the
    /// topic, the payload and each header string, each preceded by its
    /// length as a `u32`, with the header count before the headers.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_benches::{EncodeBuf, Message};
    ///
    /// let mut m = Message::default();
    /// m.topic.push_str("t");
    /// m.headers.push("k", "v");
    /// let mut out = Vec::new();
    /// m.encode(&mut out);
    /// assert_eq!(out.len(), m.encoded_len());
    /// assert_eq!(&out[21..26], [1, 0, 0, 0, b't']);
    /// ```
    #[inline]
    pub fn encode<B: EncodeBuf + ?Sized>(&self, out: &mut B) {
        out.put(&self.id.to_le_bytes());
        out.put(&self.timestamp_ns.to_le_bytes());
        out.put(&self.partition.to_le_bytes());
        out.put(&[self.priority]);
        put_field(out, self.topic.as_bytes());
        put_field(out, &self.payload);
        out.put(&(self.headers.len() as u32).to_le_bytes());
        for (name, value) in self.headers.iter() {
            put_field(out, name.as_bytes());
            put_field(out, value.as_bytes());
        }
    }
}

/// Writes `bytes`' length as a little-endian `u32`, then `bytes`.
#[inline]
fn put_field<B: EncodeBuf + ?Sized>(out: &mut B, bytes: &[u8]) {
    out.put(&(bytes.len() as u32).to_le_bytes());
    out.put(bytes);
}

/// Reads a few bytes of an encoding (its length, a byte in the middle and
/// the last one), so that the compiler keeps the writes that made it.
#[inline]
pub fn glance(encoding: &[u8]) -> u64 {
    let n = encoding.len();
    if n == 0 {
        return 0;
    }
    n as u64 ^ (u64::from(encoding[n / 2]) << 8) ^ (u64::from(encoding[n - 1]) << 16)
}

/// How many messages [`Corpus`] describes before it repeats.
const CORPUS_LEN: usize = 256;

/// The largest payload W9 sends.
pub const MAX_PAYLOAD: usize = 4096;

/// The smallest payload W9 sends.
pub const MIN_PAYLOAD: usize = 256;

/// The header names W9's messages use.
const HEADER_NAMES: [&str; 8] = [
    "content-type",
    "trace-id",
    "span-id",
    "reply-to",
    "correlation-id",
    "content-encoding",
    "schema-version",
    "x-tenant",
];

/// What one message of the sequence holds.
#[derive(Debug, Clone)]
struct Spec {
    topic: String,
    payload_offset: usize,
    payload_len: usize,
    headers: Vec<(&'static str, String)>,
    timestamp_ns: u64,
    partition: u32,
    priority: u8,
}

/// A fixed-seed sequence of message contents, made once before measuring,
/// so that every contender builds exactly the same messages and the
/// workload's loop does no formatting: message `i` is built by
/// [`fill`](Self::fill) from entry `i % 256`.
///
/// # Examples
///
/// ```
/// use recycler_benches::{Corpus, Message};
///
/// let corpus = Corpus::new();
/// let mut m = Message::default();
/// corpus.fill(&mut m, 3);
/// assert_eq!(m.id, 3);
/// assert!((256..=4096).contains(&m.payload.len()));
/// assert!((4..=8).contains(&m.headers.len()));
/// ```
#[derive(Debug, Clone)]
pub struct Corpus {
    specs: Vec<Spec>,
    /// The bytes payloads are copied from.
    bytes: Vec<u8>,
}

impl Default for Corpus {
    fn default() -> Self {
        Self::new()
    }
}

impl Corpus {
    /// The sequence every workload uses (seed fixed).
    pub fn new() -> Self {
        let mut rng = XorShift::new(0x9E37_79B9_7F4A_7C15);
        let bytes: Vec<u8> = (0..2 * MAX_PAYLOAD).map(|_| rng.next_u64() as u8).collect();
        let specs = (0..CORPUS_LEN)
            .map(|i| {
                let topic = format!(
                    "{}.{}.events-{}",
                    ["orders", "payments", "inventory", "telemetry"][rng.below(4)],
                    ["eu-west-1", "us-east-2", "ap-south-1"][rng.below(3)],
                    rng.below(1000)
                );
                let headers = (0..4 + rng.below(5))
                    .map(|h| {
                        let len = 8 + rng.below(33);
                        let value: String = (0..len)
                            .map(|_| char::from(b'a' + rng.below(26) as u8))
                            .collect();
                        (HEADER_NAMES[h], value)
                    })
                    .collect();
                Spec {
                    topic,
                    payload_offset: rng.below(MAX_PAYLOAD),
                    payload_len: MIN_PAYLOAD + rng.below(MAX_PAYLOAD - MIN_PAYLOAD + 1),
                    headers,
                    timestamp_ns: 1_700_000_000_000_000_000 + i as u64 * 1_000,
                    partition: rng.below(64) as u32,
                    priority: rng.below(4) as u8,
                }
            })
            .collect();
        Self { specs, bytes }
    }

    /// Writes message `i` of the sequence into `m`, which must be fresh or
    /// reset.
    #[inline]
    pub fn fill(&self, m: &mut Message, i: u64) {
        let spec = &self.specs[i as usize % CORPUS_LEN];
        m.topic.push_str(&spec.topic);
        m.payload.extend_from_slice(
            &self.bytes[spec.payload_offset..spec.payload_offset + spec.payload_len],
        );
        for (name, value) in &spec.headers {
            m.headers.push(name, value);
        }
        m.id = i;
        m.timestamp_ns = spec.timestamp_ns;
        m.partition = spec.partition;
        m.priority = spec.priority;
    }

    /// The mean length of an encoded message over the sequence.
    pub fn mean_encoded_len(&self) -> f64 {
        let mut m = Message::default();
        let total: usize = (0..CORPUS_LEN as u64)
            .map(|i| {
                m.reset();
                self.fill(&mut m, i);
                m.encoded_len()
            })
            .sum();
        total as f64 / CORPUS_LEN as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding_has_the_announced_length_and_layout() {
        let corpus = Corpus::new();
        let mut m = Message::default();
        for i in 0..CORPUS_LEN as u64 {
            m.reset();
            corpus.fill(&mut m, i);
            let mut out = Vec::new();
            m.encode(&mut out);
            assert_eq!(out.len(), m.encoded_len());
            assert_eq!(out[..8], i.to_le_bytes());
            let topic_len = u32::from_le_bytes(out[21..25].try_into().unwrap()) as usize;
            assert_eq!(&out[25..25 + topic_len], m.topic.as_bytes());
            assert!((MIN_PAYLOAD..=MAX_PAYLOAD).contains(&m.payload.len()));
            assert!((4..=8).contains(&m.headers.len()));
        }
    }

    #[test]
    fn a_reused_message_equals_a_fresh_one() {
        let corpus = Corpus::new();
        let mut reused = Message::default();
        for i in [5u64, 17, 300, 2] {
            reused.reset();
            corpus.fill(&mut reused, i);
            let mut fresh = Message::default();
            corpus.fill(&mut fresh, i);
            assert_eq!(reused, fresh);
        }
    }

    #[test]
    fn the_sequence_varies() {
        let corpus = Corpus::new();
        let lens: std::collections::HashSet<usize> =
            corpus.specs.iter().map(|s| s.payload_len).collect();
        assert!(lens.len() > 100, "payload lengths vary");
        let counts: std::collections::HashSet<usize> =
            corpus.specs.iter().map(|s| s.headers.len()).collect();
        assert_eq!(counts.len(), 5, "4 to 8 headers");
        assert!(corpus.mean_encoded_len() > 1000.0);
    }

    #[test]
    fn headers_keep_their_strings() {
        let mut h = Headers::default();
        h.push("a", "some value");
        h.push("b", "another");
        let kept = h.retained_bytes();
        h.reset();
        assert_eq!(h.retained_bytes(), kept);
        h.push("c", "x");
        assert_eq!(h.iter().collect::<Vec<_>>(), [("c", "x")]);
        assert_eq!(h.retained_bytes(), kept, "reused without allocating");
    }

    #[test]
    fn glance_reads_the_ends() {
        assert_eq!(glance(&[]), 0);
        assert_ne!(glance(&[1, 2, 3]), glance(&[1, 2, 4]));
    }
}
