//! Error types.

use std::error::Error;
use std::fmt;

/// A builder setting, or a combination of settings, that cannot work.
///
/// Returned by [`RecyclerBuilder::build`](crate::RecyclerBuilder::build) and
/// [`BufferPoolBuilder::build`](crate::buffer::BufferPoolBuilder::build). The
/// message names the setting and the numbers involved.
///
/// # Examples
///
/// ```
/// use recycler_core::{ConfigError, Recycler};
///
/// let err = Recycler::<Vec<u8>>::builder().batch_size(0).build().unwrap_err();
/// assert_eq!(err, ConfigError::Zero { field: "batch_size" });
/// assert_eq!(err.to_string(), "`batch_size` is 0; it must be at least 1");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConfigError {
    /// A setting that must be at least 1 was 0.
    Zero {
        /// The setting's builder method.
        field: &'static str,
    },
    /// A setting exceeds the largest value supported.
    TooLarge {
        /// The setting's builder method.
        field: &'static str,
        /// The value given.
        value: usize,
        /// The largest value supported.
        max: usize,
    },
    /// A setting must be a power of two.
    NotPowerOfTwo {
        /// The setting's builder method.
        field: &'static str,
        /// The value given.
        value: usize,
    },
    /// A setting must be a multiple of another one.
    NotMultiple {
        /// The setting's builder method.
        field: &'static str,
        /// The value given.
        value: usize,
        /// The setting it must be a multiple of.
        of: &'static str,
        /// That setting's value.
        of_value: usize,
    },
    /// A setting must not be below another one.
    Below {
        /// The setting's builder method.
        field: &'static str,
        /// The value given.
        value: usize,
        /// The setting it must not be below.
        other: &'static str,
        /// That setting's value.
        other_value: usize,
    },
    /// Two settings that cannot be combined.
    Conflict {
        /// The setting's builder method (and its value, where it matters).
        field: &'static str,
        /// The setting it conflicts with.
        other: &'static str,
    },
    /// A setting that means nothing without another one.
    Requires {
        /// The setting's builder method (and its value, where it matters).
        field: &'static str,
        /// The setting it needs.
        needs: &'static str,
    },
    /// A setting above another that bounds it.
    Above {
        /// The setting's builder method.
        field: &'static str,
        /// Its value.
        value: usize,
        /// The setting it must not be above.
        other: &'static str,
        /// That setting's value.
        other_value: usize,
    },
    /// A setting that must divide another one, and does not.
    NotDivisor {
        /// The setting's builder method.
        field: &'static str,
        /// Its value.
        value: usize,
        /// The setting it must divide.
        of: &'static str,
        /// That setting's value.
        of_value: usize,
    },
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Zero { field } => write!(f, "`{field}` is 0; it must be at least 1"),
            Self::TooLarge { field, value, max } => {
                write!(f, "`{field}` is {value}; it must be at most {max}")
            }
            Self::NotPowerOfTwo { field, value } => {
                write!(f, "`{field}` is {value}; it must be a power of two")
            }
            Self::NotMultiple {
                field,
                value,
                of,
                of_value,
            } => write!(
                f,
                "`{field}` is {value}; it must be a multiple of `{of}` ({of_value})"
            ),
            Self::Below {
                field,
                value,
                other,
                other_value,
            } => write!(
                f,
                "`{field}` is {value}, below `{other}` ({other_value}); it must be at least that"
            ),
            Self::Conflict { field, other } => {
                write!(f, "`{field}` cannot be combined with `{other}`")
            }
            Self::Requires { field, needs } => {
                write!(f, "`{field}` needs `{needs}`, which is not set")
            }
            Self::Above {
                field,
                value,
                other,
                other_value,
            } => write!(
                f,
                "`{field}` is {value}, above `{other}` ({other_value}); it must be at most that"
            ),
            Self::NotDivisor {
                field,
                value,
                of,
                of_value,
            } => write!(
                f,
                "`{field}` is {value}; it must divide `{of}` ({of_value})"
            ),
        }
    }
}

impl Error for ConfigError {}

/// Why a buffer could not be had: returned by
/// [`BufferPool::try_acquire`](crate::buffer::BufferPool::try_acquire),
/// [`BufferPool::acquire_timeout`](crate::buffer::BufferPool::acquire_timeout),
/// [`BufferPool::acquire_async`](crate::buffer::BufferPool::acquire_async),
/// their owned forms, [`BufferPool::prefill`](crate::buffer::BufferPool::prefill),
/// [`Scope::try_alloc`](crate::buffer::Scope::try_alloc),
/// [`PooledBuf::try_reserve`](crate::buffer::PooledBuf::try_reserve) and
/// [`PooledBuf::reserve_async`](crate::buffer::PooledBuf::reserve_async).
///
/// The message names the setting or the limit concerned and the numbers.
///
/// # Examples
///
/// ```
/// use recycler_core::AcquireError;
/// use recycler_core::buffer::BufferPool;
///
/// let pool = BufferPool::builder().memory_limit(8192).build()?;
/// let held = pool.acquire(8192);
/// let err = pool.try_acquire(3000).unwrap_err();
/// assert_eq!(
///     err,
///     AcquireError::LimitExceeded { requested: 3000, needed: 4096, allocated: 8192, limit: 8192 }
/// );
/// assert_eq!(
///     err.to_string(),
///     "`memory_limit` exceeded: 3000 bytes requested (4096 to allocate), \
///      8192 of 8192 bytes already allocated"
/// );
/// # drop(held);
/// # Ok::<(), recycler_core::ConfigError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcquireError {
    /// No buffer of this size can exist: with the pool's alignment it would
    /// exceed `isize::MAX` bytes, the most any allocation may hold.
    TooLarge {
        /// The capacity asked for, in bytes (`usize::MAX` when a buffer's
        /// length plus the bytes to reserve overflows).
        requested: usize,
        /// The largest capacity possible with the pool's alignment.
        max: usize,
    },
    /// The pool's `memory_limit` does not leave room for the buffer, even
    /// after freeing the idle buffers it could reach (and, for
    /// `acquire_timeout`, after waiting); or the buffer (or a growth, for
    /// `reserve_async`) is larger than the limit itself, so that no wait
    /// could ever end. The methods that cannot fail never see it: they make
    /// an overdraft instead.
    LimitExceeded {
        /// The capacity asked for, in bytes: the `capacity` argument, a
        /// scope's slice length, or for a growth the length plus the bytes
        /// to reserve.
        requested: usize,
        /// The bytes that had to be allocated for it: `requested` rounded up
        /// to its bucket's capacity (exactly `requested` above
        /// `max_capacity`), or for a growth the bytes it adds.
        needed: usize,
        /// The bytes the pool had allocated (in use and idle) when it gave up.
        allocated: u64,
        /// The pool's `memory_limit`.
        limit: u64,
    },
    /// A blocking wait at the `memory_limit`
    /// ([`acquire_timeout`](crate::buffer::BufferPool::acquire_timeout),
    /// [`acquire_owned_timeout`](crate::buffer::BufferPool::acquire_owned_timeout))
    /// gave up at its deadline: no memory was freed for it in time. The
    /// numbers are those of [`LimitExceeded`](Self::LimitExceeded), as they
    /// were when it gave up.
    TimedOut {
        /// The capacity asked for, in bytes.
        requested: usize,
        /// The bytes that had to be allocated for it (`requested` rounded
        /// up to its bucket's capacity).
        needed: usize,
        /// The bytes the pool had allocated (in use and idle) when it gave
        /// up.
        allocated: u64,
        /// The pool's `memory_limit`.
        limit: u64,
        /// How long it waited: the timeout it was given.
        waited: std::time::Duration,
    },
    /// The allocator returned no memory.
    AllocFailed {
        /// The bytes asked of the allocator.
        requested: usize,
        /// The alignment asked for.
        alignment: usize,
    },
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { requested, max } => write!(
                f,
                "a buffer of {requested} bytes cannot exist; the largest possible is {max} bytes"
            ),
            Self::LimitExceeded {
                requested,
                needed,
                allocated,
                limit,
            } => {
                let s = if *requested == 1 { "" } else { "s" };
                write!(f, "`memory_limit` exceeded: {requested} byte{s} requested")?;
                if needed != requested {
                    write!(f, " ({needed} to allocate)")?;
                }
                write!(f, ", {allocated} of {limit} bytes already allocated")
            }
            Self::TimedOut {
                requested,
                needed,
                allocated,
                limit,
                waited,
            } => {
                let s = if *requested == 1 { "" } else { "s" };
                write!(
                    f,
                    "no room under the `memory_limit` after waiting {waited:?}: \
                     {requested} byte{s} requested"
                )?;
                if needed != requested {
                    write!(f, " ({needed} to allocate)")?;
                }
                write!(f, ", {allocated} of {limit} bytes allocated")
            }
            Self::AllocFailed {
                requested,
                alignment,
            } => write!(
                f,
                "the allocator could not provide {requested} bytes aligned to {alignment}"
            ),
        }
    }
}

impl AcquireError {
    /// The error as the caller sees it: `LimitExceeded` with `requested`
    /// the capacity the caller asked for (the layers below know only the
    /// bytes to allocate).
    pub(crate) fn requested_as(self, requested: usize) -> Self {
        match self {
            Self::LimitExceeded {
                needed,
                allocated,
                limit,
                ..
            } => Self::LimitExceeded {
                requested,
                needed,
                allocated,
                limit,
            },
            other => other,
        }
    }
}

impl Error for AcquireError {}

/// An acquire's error as an I/O error, so that `?` works in functions that
/// return `io::Result`: the memory limit and the allocator failing are
/// [`OutOfMemory`](std::io::ErrorKind::OutOfMemory), as `io::Write` into a
/// buffer at the limit reports it; a wait that gave up at its deadline is
/// [`TimedOut`](std::io::ErrorKind::TimedOut); a size no buffer can have is
/// [`InvalidInput`](std::io::ErrorKind::InvalidInput). The error itself is
/// kept as the source.
///
/// # Examples
///
/// ```
/// use std::io;
/// use recycler_core::buffer::BufferPool;
///
/// fn respond(pool: &BufferPool) -> io::Result<usize> {
///     let buf = pool.try_acquire(8192)?; // no `map_err`
///     Ok(buf.capacity())
/// }
///
/// let pool = BufferPool::builder().memory_limit(4096).build()?;
/// let err = respond(&pool).unwrap_err();
/// assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
/// assert!(err.to_string().contains("`memory_limit` exceeded"));
/// # Ok::<(), recycler_core::ConfigError>(())
/// ```
impl From<AcquireError> for std::io::Error {
    fn from(err: AcquireError) -> Self {
        let kind = match err {
            AcquireError::TooLarge { .. } => std::io::ErrorKind::InvalidInput,
            AcquireError::LimitExceeded { .. } | AcquireError::AllocFailed { .. } => {
                std::io::ErrorKind::OutOfMemory
            }
            AcquireError::TimedOut { .. } => std::io::ErrorKind::TimedOut,
        };
        std::io::Error::new(kind, err)
    }
}
