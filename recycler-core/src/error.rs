//! Error types.

use std::error::Error;
use std::fmt;

/// A builder setting, or a combination of settings, that cannot work.
///
/// Returned by [`RecyclerBuilder::build`](crate::RecyclerBuilder::build). The
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
            Self::Below {
                field,
                value,
                other,
                other_value,
            } => write!(
                f,
                "`{field}` is {value}, below `{other}` ({other_value}); it must be at least that"
            ),
        }
    }
}

impl Error for ConfigError {}
