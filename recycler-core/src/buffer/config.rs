//! A buffer pool's settings as the rest of the pool reads them:
//! [`PoolConfig`], validated by the public builder ([`super::builder`]), and
//! the bounds the builder checks them against. The paths import this, never
//! the builder.

/// The most buckets a pool may have.
pub(crate) const MAX_BUCKETS: usize = 4096;

/// The largest alignment accepted: 1 GiB.
pub(crate) const MAX_ALIGNMENT: usize = 1 << 30;

/// A buffer pool's settings, validated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PoolConfig {
    pub(crate) bucket_step: usize,
    /// Requests below it get an exact-size buffer that is never pooled.
    pub(crate) min_capacity: usize,
    pub(crate) max_capacity: usize,
    pub(crate) max_idle_memory: Option<usize>,
    /// Idle buffers each bucket keeps across all threads, at most (plus the
    /// documented slack).
    pub(crate) max_idle_per_bucket: Option<usize>,
    pub(crate) memory_limit: Option<usize>,
    pub(crate) alignment: usize,
    pub(crate) max_idle_per_thread: usize,
    pub(crate) statistics: bool,
    /// Striped mode's stripes per bucket (a power of two), or `None`.
    pub(crate) striped: Option<usize>,
    /// `hard_limit(true)`: `io::Write` fails at the limit, and every
    /// overdraft counts as a violation.
    pub(crate) hard_limit: bool,
    /// `serve_larger(true)`: an acquire whose bucket has nothing for it
    /// takes a larger idle buffer from the calling thread's caches before
    /// it allocates: of the bucket its buffers grew into, or, where the
    /// memory limit binds, of any larger bucket (`super::limit`).
    pub(crate) serve_larger: bool,
}

impl PoolConfig {
    /// Jetty's defaults: 16 buckets of 4 KiB steps up to 64 KiB.
    pub(crate) const DEFAULT: PoolConfig = PoolConfig {
        bucket_step: 4096,
        min_capacity: 0,
        max_capacity: 65536,
        max_idle_memory: None,
        max_idle_per_bucket: None,
        memory_limit: None,
        alignment: 1,
        max_idle_per_thread: 64,
        statistics: true,
        striped: None,
        hard_limit: false,
        serve_larger: true,
    };

    /// The number of buckets.
    pub(crate) fn buckets(&self) -> usize {
        self.max_capacity / self.bucket_step
    }
}
