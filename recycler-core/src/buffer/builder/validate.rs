//! [`BufferPoolBuilder::validate`]: every setting checked in one place.

use super::BufferPoolBuilder;
use crate::buffer::config::{MAX_ALIGNMENT, MAX_BUCKETS, PoolConfig};
use crate::buffer::raw::AlignedBuf;
use crate::config::stripe_count;
use crate::error::ConfigError;
use crate::striped::MAX_STRIPES;

impl BufferPoolBuilder {
    /// Checks every setting.
    pub(crate) fn validate(&self) -> Result<PoolConfig, ConfigError> {
        let mut c = self.config;
        if let Some(n) = c.striped {
            if n > MAX_STRIPES {
                return Err(ConfigError::TooLarge {
                    field: "striped",
                    value: n,
                    max: MAX_STRIPES,
                });
            }
            c.striped = Some(stripe_count(n));
        }
        if c.bucket_step == 0 {
            return Err(ConfigError::Zero {
                field: "bucket_step",
            });
        }
        if c.max_capacity < c.bucket_step {
            return Err(ConfigError::Below {
                field: "max_capacity",
                value: c.max_capacity,
                other: "bucket_step",
                other_value: c.bucket_step,
            });
        }
        if !c.max_capacity.is_multiple_of(c.bucket_step) {
            if c.max_capacity == PoolConfig::DEFAULT.max_capacity {
                // `max_capacity` left at its default: the step the user
                // set is what does not fit it.
                return Err(ConfigError::NotDivisor {
                    field: "bucket_step",
                    value: c.bucket_step,
                    of: "max_capacity",
                    of_value: c.max_capacity,
                });
            }
            return Err(ConfigError::NotMultiple {
                field: "max_capacity",
                value: c.max_capacity,
                of: "bucket_step",
                of_value: c.bucket_step,
            });
        }
        if c.max_capacity / c.bucket_step > MAX_BUCKETS {
            return Err(ConfigError::TooLarge {
                field: "max_capacity",
                value: c.max_capacity,
                max: c.bucket_step.saturating_mul(MAX_BUCKETS),
            });
        }
        if !c.alignment.is_power_of_two() {
            return Err(ConfigError::NotPowerOfTwo {
                field: "alignment",
                value: c.alignment,
            });
        }
        if c.alignment > MAX_ALIGNMENT {
            return Err(ConfigError::TooLarge {
                field: "alignment",
                value: c.alignment,
                max: MAX_ALIGNMENT,
            });
        }
        if c.min_capacity > c.max_capacity {
            return Err(ConfigError::Below {
                field: "max_capacity",
                value: c.max_capacity,
                other: "min_capacity",
                other_value: c.min_capacity,
            });
        }
        let largest = AlignedBuf::max_capacity(c.alignment);
        if c.max_capacity > largest {
            return Err(ConfigError::TooLarge {
                field: "max_capacity",
                value: c.max_capacity,
                max: largest,
            });
        }
        if let Some(limit) = c.memory_limit {
            if limit == 0 {
                return Err(ConfigError::Zero {
                    field: "memory_limit",
                });
            }
            if limit < c.bucket_step {
                return Err(ConfigError::Below {
                    field: "memory_limit",
                    value: limit,
                    other: "bucket_step",
                    other_value: c.bucket_step,
                });
            }
        }
        if c.hard_limit && c.memory_limit.is_none() {
            return Err(ConfigError::Requires {
                field: "hard_limit(true)",
                needs: "memory_limit",
            });
        }
        if let (Some(idle), Some(limit)) = (c.max_idle_memory, c.memory_limit)
            && idle > limit
        {
            return Err(ConfigError::Above {
                field: "max_idle_memory",
                value: idle,
                other: "memory_limit",
                other_value: limit,
            });
        }
        Ok(c)
    }
}
