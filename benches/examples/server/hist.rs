//! A latency histogram with fixed buckets: exact below 128 ns, then 64
//! buckets per power of two (within 1.6 % of the value), so that recording
//! never allocates and merging is adding counts.

use std::time::Duration;

/// Values below this are counted exactly.
const LINEAR: u64 = 128;
/// Buckets per power of two above [`LINEAR`] (a power of two itself).
const SUB: u64 = 64;
/// log2 of [`SUB`].
const SUB_BITS: u32 = 6;
/// Buckets in all: up to `u64::MAX` nanoseconds.
const BUCKETS: usize = (LINEAR + (64 - 7) * SUB) as usize;

/// Counts of latencies in nanoseconds.
#[derive(Debug, Clone)]
pub(crate) struct Histogram {
    counts: Box<[u64]>,
}

/// The bucket of `ns`.
fn index(ns: u64) -> usize {
    if ns < LINEAR {
        return ns as usize;
    }
    let exp = 63 - ns.leading_zeros(); // at least 7
    let sub = (ns >> (exp - SUB_BITS)) & (SUB - 1);
    (LINEAR + u64::from(exp - 7) * SUB + sub) as usize
}

/// The middle of bucket `i`, in nanoseconds.
fn value(i: usize) -> u64 {
    let i = i as u64;
    if i < LINEAR {
        return i;
    }
    let exp = (i - LINEAR) / SUB + 7;
    let sub = (i - LINEAR) % SUB;
    let shift = exp - u64::from(SUB_BITS);
    let low = (SUB + sub) << shift;
    low + (1 << shift) / 2
}

impl Histogram {
    /// An empty histogram (allocated once, here).
    pub(crate) fn new() -> Self {
        Self {
            counts: vec![0; BUCKETS].into_boxed_slice(),
        }
    }

    /// Counts one latency.
    #[inline]
    pub(crate) fn record(&mut self, latency: Duration) {
        let ns = u64::try_from(latency.as_nanos()).unwrap_or(u64::MAX);
        self.counts[index(ns)] += 1;
    }

    /// Adds `other`'s counts to this one's.
    pub(crate) fn merge(&mut self, other: &Histogram) {
        for (a, b) in self.counts.iter_mut().zip(other.counts.iter()) {
            *a += b;
        }
    }

    /// How many latencies were counted.
    pub(crate) fn len(&self) -> u64 {
        self.counts.iter().sum()
    }

    /// The latency below which a share `q` (0 to 1) of those counted lie,
    /// in nanoseconds (the middle of its bucket); 0 if none were counted.
    pub(crate) fn quantile(&self, q: f64) -> u64 {
        let total = self.len();
        if total == 0 {
            return 0;
        }
        let rank = ((q * total as f64).ceil() as u64).clamp(1, total);
        let mut seen = 0;
        for (i, &c) in self.counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return value(i);
            }
        }
        value(BUCKETS - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_round_trip() {
        for ns in [0, 1, 127, 128, 129, 1000, 25_000, 1 << 40, u64::MAX] {
            let v = value(index(ns));
            let err = v.abs_diff(ns) as f64 / ns.max(1) as f64;
            assert!(err <= 1.0 / 64.0, "{ns} -> {v}");
        }
        assert_eq!(index(u64::MAX), BUCKETS - 1);
        let mut h = Histogram::new();
        for us in 1..=100 {
            h.record(Duration::from_micros(us));
        }
        let p50 = h.quantile(0.5);
        assert!((49_000..=51_000).contains(&p50), "{p50}");
    }
}
