//! Leak tracking by call site (feature `track`): every live guard is
//! remembered with the place in the source that took it, so that
//! [`Recycler::leaks`](crate::Recycler::leaks) and
//! [`BufferPool::leaks`](crate::buffer::BufferPool::leaks) can say where the
//! objects still in use were taken, how many, and since when. Jetty's
//! tracking pool records a stack trace per buffer; a call site is enough to
//! find a leak, and costs far less.
//!
//! The methods that hand out guards are `#[track_caller]` with the feature
//! on, and the tracker is a locked map from an object's address to where and
//! when it was taken, updated on every get and release: a lock and a hash
//! per operation, for finding leaks in tests and staging, not for the hot
//! path of production. Without the feature none of it is compiled.

use std::collections::HashMap;
use std::fmt;
use std::panic::Location;
use std::time::{Duration, Instant};

use crate::loom::Mutex;

/// Where and when one live object was taken.
type Taken = (&'static Location<'static>, Instant);

/// The live objects at one address: one, or more for zero-sized objects,
/// which share an address (the rest in `more`, which allocates only then).
type AtAddress = (Taken, Vec<Taken>);

/// Hashes an address: a multiplication, since addresses are already spread
/// and not chosen by an adversary (SipHash would cost more than the rest of
/// a record).
#[derive(Default, Clone, Copy)]
struct AddrHasher(u64);

impl std::hash::Hasher for AddrHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

type Live = HashMap<usize, AtAddress, std::hash::BuildHasherDefault<AddrHasher>>;

/// Where and when the live objects were taken.
#[derive(Default)]
pub(crate) struct Tracker {
    /// By object address.
    live: Mutex<Live>,
}

impl Tracker {
    fn lock(&self) -> crate::loom::MutexGuard<'_, Live> {
        self.live
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The object at `addr` was taken at `at`.
    pub(crate) fn taken(&self, addr: usize, at: &'static Location<'static>) {
        let taken = (at, Instant::now());
        match self.lock().entry(addr) {
            std::collections::hash_map::Entry::Occupied(mut e) => e.get_mut().1.push(taken),
            std::collections::hash_map::Entry::Vacant(e) => {
                e.insert((taken, Vec::new()));
            }
        }
    }

    /// The object at `addr` came back (or was detached).
    pub(crate) fn returned(&self, addr: usize) {
        let mut live = self.lock();
        if let Some((_, more)) = live.get_mut(&addr)
            && more.pop().is_none()
        {
            live.remove(&addr);
        }
    }

    /// The live objects by call site.
    pub(crate) fn leaks(&self) -> Leaks {
        let now = Instant::now();
        let mut sites: HashMap<&'static Location<'static>, LeakSite> = HashMap::new();
        let live = self.lock();
        let all = live
            .values()
            .flat_map(|(first, more)| std::iter::once(first).chain(more));
        for (at, since) in all {
            let site = sites.entry(*at).or_insert(LeakSite {
                location: at,
                count: 0,
                oldest: Duration::ZERO,
            });
            site.count += 1;
            site.oldest = site.oldest.max(now.saturating_duration_since(*since));
        }
        let mut sites: Vec<LeakSite> = sites.into_values().collect();
        sites.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.location.file().cmp(b.location.file()))
                .then_with(|| a.location.line().cmp(&b.location.line()))
        });
        Leaks { sites }
    }
}

impl fmt::Debug for Tracker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracker").finish_non_exhaustive()
    }
}

/// The objects in use, by the call site that took them: the report of
/// [`Recycler::leaks`](crate::Recycler::leaks) and
/// [`BufferPool::leaks`](crate::buffer::BufferPool::leaks) (feature
/// `track`).
///
/// Its `Display` reads at a glance, the busiest call site first:
///
/// ```text
/// 3 in use, from 2 call sites
///     2 from src/server.rs:41:30, the oldest for 12.3s
///     1 from src/codec.rs:77:18, the oldest for 0.2s
/// ```
///
/// # Examples
///
/// ```
/// # #[cfg(feature = "track")] {
/// use recycler_core::Recycler;
///
/// let pool: Recycler<Vec<u8>> = Recycler::new();
/// let kept = pool.get();
/// std::mem::forget(pool.get()); // a leak
/// let leaks = pool.leaks();
/// assert_eq!(leaks.in_use(), 2);
/// assert_eq!(leaks.sites().len(), 2); // two lines of this example
/// println!("{leaks}");
/// # drop(kept);
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leaks {
    sites: Vec<LeakSite>,
}

/// One call site of a [`Leaks`] report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeakSite {
    /// Where the objects were taken: the caller of `get`, `get_owned`,
    /// `try_get` or one of the buffer pool's `acquire` methods.
    pub location: &'static Location<'static>,
    /// How many objects taken there are in use.
    pub count: usize,
    /// How long the oldest of them has been in use.
    pub oldest: Duration,
}

impl Leaks {
    /// The call sites, the one with the most objects in use first.
    pub fn sites(&self) -> &[LeakSite] {
        &self.sites
    }

    /// The objects in use, over every call site.
    pub fn in_use(&self) -> usize {
        self.sites.iter().map(|s| s.count).sum()
    }

    /// Whether nothing is in use.
    pub fn is_empty(&self) -> bool {
        self.sites.is_empty()
    }
}

impl fmt::Display for Leaks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.sites.len();
        write!(
            f,
            "{} in use, from {n} call site{}",
            self.in_use(),
            if n == 1 { "" } else { "s" }
        )?;
        for site in &self.sites {
            write!(f, "\n    {site}")?;
        }
        Ok(())
    }
}

impl fmt::Display for LeakSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} from {}, the oldest for {:.1?}",
            self.count, self.location, self.oldest
        )
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[track_caller]
    fn here() -> &'static Location<'static> {
        Location::caller()
    }

    #[test]
    fn groups_by_site_and_forgets_returns() {
        let t = Tracker::default();
        let (a, b) = (here(), here());
        t.taken(1, a);
        t.taken(2, a);
        t.taken(3, b);
        t.returned(2);
        t.returned(99); // unknown: ignored
        let leaks = t.leaks();
        assert_eq!(leaks.in_use(), 2);
        assert_eq!(leaks.sites().len(), 2);
        // Zero-sized objects share an address: each take is one entry.
        t.taken(7, b);
        t.taken(7, b);
        t.returned(7);
        let leaks = t.leaks();
        assert_eq!(leaks.in_use(), 3);
        assert_eq!(leaks.sites()[0].location, b, "the busiest site first");
        let text = leaks.to_string();
        assert!(
            text.starts_with("3 in use, from 2 call sites\n    2 from "),
            "{text}"
        );
        assert!(text.contains("track.rs"), "{text}");
    }
}
