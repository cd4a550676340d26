//! [`RecyclerBuilder`]: the knobs of a [`Recycler`], checked in one place.

use std::fmt;

use crate::config::{Config, Factory, MAX_BATCH_SIZE, stripe_count};
use crate::error::ConfigError;
use crate::recyclable::Recyclable;
use crate::recycler::Recycler;
use crate::striped::MAX_STRIPES;

/// Builds a [`Recycler`] with settings other than the defaults.
///
/// Made by [`Recycler::builder`] (factory `T::default`) or
/// [`Recycler::builder_with_factory`]. Setters take and return the builder;
/// [`build`](Self::build) checks every setting at once.
///
/// | setting | default | meaning |
/// | --- | --- | --- |
/// | [`max_capacity_per_thread`](Self::max_capacity_per_thread) | 4096 | idle objects one thread keeps; 0 disables pooling |
/// | [`batch_size`](Self::batch_size) | 32 | objects moved at a time between threads and the depot |
/// | [`ratio`](Self::ratio) | 1 | pool one of every `ratio` freshly made objects |
/// | [`depot_capacity`](Self::depot_capacity) | 4 × `max_capacity_per_thread` | idle objects the shared depot holds |
/// | [`max_idle_bytes`](Self::max_idle_bytes) | none | cap on the bytes idle objects retain |
/// | [`reset_on_return`](Self::reset_on_return) | `true` | reset a foreign release on the releasing thread, or at home |
/// | [`striped`](Self::striped) | off | per-CPU stripes instead of per-thread caches |
/// | [`idle_decay`](Self::idle_decay) | on | hand what a cache left unused to the depot, now and then |
///
/// # Examples
///
/// ```
/// use recycler_core::Recycler;
///
/// let pool = Recycler::builder_with_factory(|| Vec::<u8>::with_capacity(1024))
///     .max_capacity_per_thread(256)
///     .batch_size(16)
///     .build()?;
/// assert!(pool.get().capacity() >= 1024);
/// # Ok::<(), recycler_core::ConfigError>(())
/// ```
pub struct RecyclerBuilder<T> {
    factory: Factory<T>,
    max_capacity_per_thread: usize,
    batch_size: usize,
    /// Whether `batch_size` was set (the default one is capped at the
    /// capacity silently; one set above it is an error).
    batch_size_set: bool,
    ratio: usize,
    depot_capacity: Option<usize>,
    max_idle_bytes: Option<usize>,
    reset_on_return: bool,
    stripes: Option<usize>,
    idle_decay: bool,
}

impl<T> RecyclerBuilder<T> {
    pub(crate) fn with_factory(factory: Factory<T>) -> Self {
        Self {
            factory,
            max_capacity_per_thread: Config::DEFAULT.max_capacity_per_thread,
            batch_size: Config::DEFAULT.batch_size,
            batch_size_set: false,
            ratio: Config::DEFAULT.ratio,
            depot_capacity: None,
            max_idle_bytes: None,
            reset_on_return: Config::DEFAULT.reset_on_return,
            stripes: None,
            idle_decay: Config::DEFAULT.idle_decay,
        }
    }

    /// Replaces the factory that makes objects when the pool has none.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<String>::builder()
    ///     .factory(|| String::with_capacity(80))
    ///     .build()?;
    /// assert!(pool.get().capacity() >= 80);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn factory(mut self, f: impl Fn() -> T + Send + Sync + 'static) -> Self {
        self.factory = Box::new(f);
        self
    }

    /// Idle objects one thread's cache holds (Netty's `maxCapacityPerThread`,
    /// default 4096). Past it, the cache spills its oldest batch to the shared
    /// depot. 0 disables pooling: every released object is dropped.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().max_capacity_per_thread(0).build()?;
    /// drop(pool.get());
    /// assert_eq!(pool.stats().dropped, 1);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn max_capacity_per_thread(mut self, n: usize) -> Self {
        self.max_capacity_per_thread = n;
        self
    }

    /// Objects moved at a time (Netty's chunk size, default 32): from the
    /// inbox into a cache, from a cache to the depot and back, and from a
    /// releasing thread to an object's home. At least 1, at most 65536,
    /// and at most `max_capacity_per_thread` when that is not 0 (the
    /// default batch is capped at a smaller capacity; a batch set above it
    /// is an error).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().batch_size(64).build()?;
    /// # drop(pool);
    /// assert!(Recycler::<Vec<u8>>::builder().batch_size(0).build().is_err());
    /// let err = Recycler::<Vec<u8>>::builder()
    ///     .batch_size(64)
    ///     .max_capacity_per_thread(16)
    ///     .build()
    ///     .unwrap_err();
    /// assert!(err.to_string().starts_with("`batch_size` is 64, above `max_capacity_per_thread`"));
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self.batch_size_set = true;
        self
    }

    /// Pool one of every `n` freshly made objects (default 1: all of them);
    /// the others are dropped when released. Objects taken from the pool are
    /// always pooled again. As in Netty, a high ratio keeps a burst of new
    /// objects from filling the pool.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().ratio(4).build()?;
    /// let guards: Vec<_> = (0..8).map(|_| pool.get()).collect();
    /// drop(guards);
    /// assert_eq!(pool.stats().idle, 2);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn ratio(mut self, n: usize) -> Self {
        self.ratio = n;
        self
    }

    /// Idle objects the shared depot holds at most (default 4 ×
    /// `max_capacity_per_thread`). The depot takes the batches that caches
    /// spill and the contents of caches whose threads exit; what does not fit
    /// is dropped and counted.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().depot_capacity(1024).build()?;
    /// # drop(pool);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn depot_capacity(mut self, n: usize) -> Self {
        self.depot_capacity = Some(n);
        self
    }

    /// Caps the bytes that idle objects keep alive, as measured by
    /// [`Recyclable::retained_bytes`] after `reset` (default: no cap). A
    /// message pool whose `Vec`s grew large is then capped in bytes, not only
    /// in count.
    ///
    /// Bytes are counted when an object is released into the pool and
    /// uncounted when it leaves (taken, dropped): an object never returned is
    /// never counted. A release that would go over the cap drops its object
    /// instead of pooling it. Each thread counts in a delta of its own and
    /// publishes it past a threshold, so the cap costs no shared write per
    /// operation; in exchange it may be exceeded by at most
    /// `(N - 1) × (max(cap / 8, 1) + B)` bytes, with `N` threads releasing
    /// and `B` the largest `retained_bytes` of one object. With one
    /// releasing thread the cap holds exactly.
    ///
    /// A recycler with a cap takes its slow path (still lock-free on its own
    /// thread) for every get and release, a few nanoseconds more.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().max_idle_bytes(1000).build()?;
    /// let mut small = pool.get();
    /// small.reserve_exact(600);
    /// let mut big = pool.get();
    /// big.reserve_exact(600);
    /// drop(small); // 600 idle bytes: pooled
    /// drop(big); // would make 1200: dropped
    /// let stats = pool.stats();
    /// assert_eq!((stats.idle, stats.dropped), (1, 1));
    /// assert_eq!(stats.idle_bytes, 600);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn max_idle_bytes(mut self, n: usize) -> Self {
        self.max_idle_bytes = Some(n);
        self
    }

    /// Where a guard released on *another* thread than the one that got it
    /// is reset (default `true`: on the releasing thread, like every other
    /// release).
    ///
    /// With `false`, such a release leaves the object as it is and sends it
    /// home; the thread that owns the home resets it when it takes the batch
    /// in (its `get` that found its cache empty), or, if that thread has
    /// exited, the thread that moves the batch to the shared depot. Releases
    /// on the thread that got the object still reset at once.
    ///
    /// Why: `reset` writes the object, so on the releasing thread it pulls
    /// the object's cache lines over in exclusive state, and the home thread's
    /// next write must pull them back: three cache-line transfers per object
    /// in a producer/consumer pipeline, where a remote `free` costs two.
    /// Resetting at home, where the lines are still shared, saves that
    /// transfer. [The design notes](crate::guide::design) have the measurements.
    ///
    /// What changes:
    ///
    /// - an object waiting to go home (in a batch, in the inbox) holds on to
    ///   its contents until it is reset, so it keeps their memory alive a
    ///   little longer;
    /// - a `reset` that panics there cannot reach the code that released the
    ///   guard, which has moved on, nor should it reach an unrelated `get`:
    ///   the panic is caught, the object is dropped and counted in
    ///   [`RecyclerStats::dropped`](crate::RecyclerStats::dropped), and the
    ///   thread carries on (the panic hook still reports the panic). An
    ///   object's `Drop` that panics while it is dropped there is caught the
    ///   same way;
    /// - it cannot be combined with
    ///   [`max_idle_bytes`](Self::max_idle_bytes), which measures idle
    ///   objects after their reset: `build` returns a [`ConfigError`].
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder()
    ///     .reset_on_return(false)
    ///     .batch_size(1)
    ///     .build()?;
    /// let mut v = pool.get();
    /// v.extend_from_slice(b"sent away");
    /// std::thread::scope(|s| {
    ///     s.spawn(move || drop(v)); // not reset there, sent home
    /// });
    /// let v = pool.get(); // the same vector, reset here as it came in
    /// assert!(v.is_empty() && v.capacity() >= 9);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn reset_on_return(mut self, yes: bool) -> Self {
        self.reset_on_return = yes;
        self
    }

    /// Striped mode: `stripes` stripes of idle objects shared by all
    /// threads, chosen by the CPU a thread runs on, instead of a cache per
    /// thread; `0` means one per available CPU. The count is rounded up to a
    /// power of two; at most 1024.
    ///
    /// For async runtimes whose tasks migrate between worker threads, and
    /// thread pools whose threads idle, are handed other work or die: in the
    /// default mode, objects wait in the cache of the thread that released
    /// them until it uses the recycler again, and a release on another
    /// thread than the one that got the object sends it back there. In
    /// striped mode **no object ever belongs to a thread**: once a release
    /// returns, the object sits in a stripe that any thread takes it from.
    ///
    /// How, chosen once when the recycler is built:
    ///
    /// - **On restartable sequences** (Linux on x86-64 with glibc 2.35 or
    ///   later and Linux 5.10 or later): a small cache per CPU (`2 ×`
    ///   [`batch_size`](Self::batch_size), at most
    ///   [`max_capacity_per_thread`](Self::max_capacity_per_thread) and
    ///   256) whose pop and push are critical sections the kernel restarts
    ///   if the thread is preempted, migrated or signalled inside them: no
    ///   lock and no atomic read-modify-write, a few nanoseconds per get +
    ///   release. Behind the caches, a depot of batches holding up to
    ///   `stripes × max_capacity_per_thread`: a full cache spills a batch
    ///   there, an empty one refills from there; a get that finds both
    ///   empty takes what the other CPUs' caches hold (with one
    ///   `membarrier`, a microsecond or so) when they hold a quarter of a
    ///   cache between them, and calls the factory otherwise; `try_get`,
    ///   `trim` and eviction reach every cache.
    /// - **Elsewhere** (another OS or architecture, an older C library,
    ///   valgrind, or the environment variable `RECYCLER_NO_RSEQ=1` set
    ///   before the first striped recycler is built): `stripes` stripes,
    ///   each behind a lock that a get or a release takes for a pop or a
    ///   push, skipping to the next stripe if that one is busy; a get whose
    ///   stripe is empty looks at the others before it calls the factory,
    ///   and a release into a full stripe tries the others before it drops
    ///   its object. Each stripe holds `max_capacity_per_thread` objects.
    ///
    /// `{:?}` of the recycler says which (`stripes_on`). Releases are not
    /// told apart by thread, so
    /// [`RecyclerStats::released_local`](crate::RecyclerStats::released_local)
    /// counts them all. [`max_idle_bytes`](Self::max_idle_bytes) holds
    /// exactly with one releasing thread, and is counted with one atomic
    /// operation per get and per release (a capped striped recycler takes
    /// the slower paths). Figures: `docs/BENCHMARKS.md`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().striped(0).build()?;
    /// let v = pool.get();
    /// std::thread::scope(|s| {
    ///     s.spawn(move || drop(v)); // released on another thread...
    /// });
    /// // ...and at once in a stripe this thread reaches too.
    /// assert!(pool.try_get().is_some());
    /// assert_eq!(pool.stats().created, 1);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn striped(mut self, stripes: usize) -> Self {
        self.stripes = Some(stripes);
        self
    }

    /// Whether a thread's cache gives back, now and then, what it left
    /// unused (default on). Every 65,536 gets on a cache, its owner hands to
    /// the depot three quarters of the objects that its batch held, unused,
    /// the whole time since the last such pass (the batch's low-water mark),
    /// as jemalloc's thread-cache GC does. So a thread whose load dropped
    /// does not sit on a full cache that other threads could use, while a
    /// thread that keeps using its objects keeps them. It costs the owner
    /// path a test of a count it keeps anyway; turn it off to keep caches
    /// exactly as full as their use left them.
    ///
    /// A thread that stops calling into the recycler altogether keeps its
    /// cache until it uses the recycler again or exits: only the owner
    /// touches its cache. For threads that go idle, see
    /// [`striped`](Self::striped).
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool: Recycler<Vec<u8>> = Recycler::new();
    /// let burst: Vec<_> = (0..1000).map(|_| pool.get()).collect();
    /// drop(burst); // 1000 idle in this thread's cache
    /// for _ in 0..200_000 {
    ///     drop(pool.get()); // from then on, one object at a time
    /// }
    /// // Decay handed most of the unused ones to the depot, where other
    /// // threads find them.
    /// let found = std::thread::scope(|s| {
    ///     s.spawn(|| std::iter::from_fn(|| pool.try_get()).take(1000).count())
    ///         .join()
    ///         .unwrap()
    /// });
    /// assert!(found > 900, "{found}");
    ///
    /// let kept = Recycler::<Vec<u8>>::builder().idle_decay(false).build()?;
    /// # drop(kept);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn idle_decay(mut self, on: bool) -> Self {
        self.idle_decay = on;
        self
    }

    /// Checks every setting.
    fn validate(&self) -> Result<Config, ConfigError> {
        if self.batch_size == 0 {
            return Err(ConfigError::Zero {
                field: "batch_size",
            });
        }
        if self.batch_size > MAX_BATCH_SIZE {
            return Err(ConfigError::TooLarge {
                field: "batch_size",
                value: self.batch_size,
                max: MAX_BATCH_SIZE,
            });
        }
        let max = self.max_capacity_per_thread;
        if self.batch_size_set && max != 0 && self.batch_size > max {
            return Err(ConfigError::Above {
                field: "batch_size",
                value: self.batch_size,
                other: "max_capacity_per_thread",
                other_value: max,
            });
        }
        if self.ratio == 0 {
            return Err(ConfigError::Zero { field: "ratio" });
        }
        if !self.reset_on_return && self.max_idle_bytes.is_some() {
            return Err(ConfigError::Conflict {
                field: "reset_on_return(false)",
                other: "max_idle_bytes",
            });
        }
        let stripes = match self.stripes {
            None => None,
            Some(n) if n > MAX_STRIPES => {
                return Err(ConfigError::TooLarge {
                    field: "striped",
                    value: n,
                    max: MAX_STRIPES,
                });
            }
            Some(n) => {
                if !self.reset_on_return {
                    return Err(ConfigError::Conflict {
                        field: "reset_on_return(false)",
                        other: "striped",
                    });
                }
                Some(stripe_count(n))
            }
        };
        Ok(Config {
            max_capacity_per_thread: max,
            batch_size: if max == 0 {
                self.batch_size
            } else {
                self.batch_size.min(max)
            },
            ratio: self.ratio,
            depot_capacity: self.depot_capacity.unwrap_or(max.saturating_mul(4)),
            max_idle_bytes: self.max_idle_bytes,
            reset_on_return: self.reset_on_return,
            stripes,
            idle_decay: self.idle_decay,
            slots_reachable: false,
        })
    }
}

impl<T: Recyclable + Send + 'static> RecyclerBuilder<T> {
    /// Checks the settings and makes the recycler.
    ///
    /// # Errors
    ///
    /// [`ConfigError`] naming the first setting out of range: `batch_size` of
    /// 0 or above 65536, `ratio` of 0, `striped` above 1024,
    /// `reset_on_return(false)` together with `max_idle_bytes` or
    /// `striped`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let err = Recycler::<String>::builder().ratio(0).build().unwrap_err();
    /// assert_eq!(err.to_string(), "`ratio` is 0; it must be at least 1");
    /// ```
    pub fn build(self) -> Result<Recycler<T>, ConfigError> {
        let config = self.validate()?;
        Ok(Recycler::from_parts(self.factory, config, None, None))
    }
}

/// The builders of a recycler: here, with what they build, rather than
/// beside the recycler, which never names its builder.
impl<T: Recyclable + Send + 'static> Recycler<T> {
    /// A builder whose factory is `T::default`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::<Vec<u8>>::builder().max_capacity_per_thread(64).build()?;
    /// # drop(pool);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn builder() -> RecyclerBuilder<T>
    where
        T: Default,
    {
        Self::builder_with_factory(T::default)
    }

    /// A builder whose factory is `f`.
    ///
    /// # Examples
    ///
    /// ```
    /// use recycler_core::Recycler;
    ///
    /// let pool = Recycler::builder_with_factory(|| String::with_capacity(64))
    ///     .batch_size(8)
    ///     .build()?;
    /// assert!(pool.get().capacity() >= 64);
    /// # Ok::<(), recycler_core::ConfigError>(())
    /// ```
    pub fn builder_with_factory(f: impl Fn() -> T + Send + Sync + 'static) -> RecyclerBuilder<T> {
        RecyclerBuilder::with_factory(Box::new(f))
    }
}

impl<T> fmt::Debug for RecyclerBuilder<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RecyclerBuilder")
            .field("max_capacity_per_thread", &self.max_capacity_per_thread)
            .field("batch_size", &self.batch_size)
            .field("ratio", &self.ratio)
            .field("depot_capacity", &self.depot_capacity)
            .field("max_idle_bytes", &self.max_idle_bytes)
            .field("reset_on_return", &self.reset_on_return)
            .field("striped", &self.stripes)
            .field("idle_decay", &self.idle_decay)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builder() -> RecyclerBuilder<u8> {
        RecyclerBuilder::with_factory(Box::new(|| 0))
    }

    #[test]
    fn defaults() {
        let c = builder().validate().unwrap();
        assert_eq!(c, Config::DEFAULT);
        assert_eq!(c.depot_capacity, 16384);
        assert!(c.pooling());
    }

    #[test]
    fn rejects_bad_values() {
        assert_eq!(
            builder().batch_size(0).validate(),
            Err(ConfigError::Zero {
                field: "batch_size"
            })
        );
        assert_eq!(
            builder().ratio(0).validate(),
            Err(ConfigError::Zero { field: "ratio" })
        );
        assert_eq!(
            builder()
                .reset_on_return(false)
                .max_idle_bytes(1)
                .validate()
                .unwrap_err()
                .to_string(),
            "`reset_on_return(false)` cannot be combined with `max_idle_bytes`"
        );
        assert_eq!(
            builder().striped(1025).validate().unwrap_err().to_string(),
            "`striped` is 1025; it must be at most 1024"
        );
        assert_eq!(builder().striped(3).validate().unwrap().stripes, Some(4));
        assert_eq!(
            builder().striped(1024).validate().unwrap().stripes,
            Some(1024)
        );
        assert!(builder().striped(0).validate().unwrap().stripes.unwrap() >= 1);
        let err = builder().batch_size(usize::MAX).validate().unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("`batch_size` is {}; it must be at most 65536", usize::MAX)
        );
    }

    #[test]
    fn batch_is_capped_by_capacity() {
        let c = builder().max_capacity_per_thread(8).validate().unwrap();
        assert_eq!(c.batch_size, 8);
        let c = builder().max_capacity_per_thread(0).validate().unwrap();
        assert!(!c.pooling());
        assert_eq!(c.depot_capacity, 0);
    }
}
