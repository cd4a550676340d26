use super::*;

fn err(b: BufferPoolBuilder) -> ConfigError {
    b.validate().unwrap_err()
}

#[test]
fn defaults_are_jettys() {
    let c = BufferPoolBuilder::new().validate().unwrap();
    assert_eq!(c, PoolConfig::DEFAULT);
    assert_eq!(c.buckets(), 16);
}

#[test]
fn every_bad_setting_is_named() {
    let b = BufferPoolBuilder::new;
    assert_eq!(
        err(b().bucket_step(0)),
        ConfigError::Zero {
            field: "bucket_step"
        }
    );
    assert_eq!(
        err(b().max_capacity(100)).to_string(),
        "`max_capacity` is 100, below `bucket_step` (4096); it must be at least that"
    );
    assert!(matches!(
        err(b().max_capacity(4097)),
        ConfigError::NotMultiple {
            field: "max_capacity",
            ..
        }
    ));
    assert_eq!(
        err(b().bucket_step(1).max_capacity(4097)),
        ConfigError::TooLarge {
            field: "max_capacity",
            value: 4097,
            max: 4096
        }
    );
    for bad in [0, 3, 4095] {
        assert_eq!(
            err(b().alignment(bad)),
            ConfigError::NotPowerOfTwo {
                field: "alignment",
                value: bad
            }
        );
    }
    assert!(matches!(
        err(b().alignment(1 << 31)),
        ConfigError::TooLarge {
            field: "alignment",
            ..
        }
    ));
    assert_eq!(
        err(b().memory_limit(0)),
        ConfigError::Zero {
            field: "memory_limit"
        }
    );
    assert!(matches!(
        err(b().memory_limit(100)),
        ConfigError::Below {
            field: "memory_limit",
            ..
        }
    ));
    assert_eq!(
        err(b().min_capacity(65537)),
        ConfigError::Below {
            field: "max_capacity",
            value: 65536,
            other: "min_capacity",
            other_value: 65537
        }
    );
    assert_eq!(
        err(b().max_capacity(8192).min_capacity(10_000)).to_string(),
        "`max_capacity` is 8192, below `min_capacity` (10000); it must be at least that"
    );
    let huge = usize::MAX / 2 + 1;
    assert!(matches!(
        err(b().bucket_step(huge).max_capacity(huge)),
        ConfigError::TooLarge {
            field: "max_capacity",
            ..
        }
    ));
}

#[test]
fn debug_names_every_setting_and_no_private_type() {
    let b = BufferPoolBuilder::new()
        .bucket_step(1000)
        .min_capacity(300)
        .max_capacity(8000)
        .max_idle_memory(5)
        .max_idle_per_bucket(9)
        .memory_limit(6000)
        .alignment(64)
        .max_idle_per_thread(7)
        .statistics(false)
        .striped(3)
        .hard_limit(true)
        .serve_larger(false);
    let text = format!("{b:?}");
    assert!(
        !text.contains("PoolConfig") && !text.contains("config"),
        "{text}"
    );
    assert_eq!(
        text,
        "BufferPoolBuilder { bucket_step: 1000, min_capacity: 300, max_capacity: 8000, \
         max_idle_memory: Some(5), max_idle_per_bucket: Some(9), \
         memory_limit: Some(6000), alignment: 64, max_idle_per_thread: 7, statistics: false, \
         striped: Some(3), hard_limit: true, serve_larger: false }"
    );
    // An invalid setting is shown as set: `Debug` checks nothing.
    assert!(format!("{:?}", BufferPoolBuilder::new().alignment(3)).contains("alignment: 3,"));
}

#[test]
fn min_capacity_up_to_max_capacity_is_valid() {
    for min in [0, 1, 4096, 65535, 65536] {
        let c = BufferPoolBuilder::new().min_capacity(min).validate();
        assert_eq!(c.map(|c| c.min_capacity), Ok(min));
    }
}

#[test]
fn zero_idle_cap_and_zero_per_thread_are_valid() {
    assert!(
        BufferPoolBuilder::new()
            .max_idle_memory(0)
            .max_idle_per_thread(0)
            .validate()
            .is_ok()
    );
}

#[test]
fn bucket_cap_zero_is_valid_and_joins_the_memory_cap() {
    let c = BufferPoolBuilder::new().max_idle_per_bucket(0).validate();
    assert_eq!(c.map(|c| c.max_idle_per_bucket), Ok(Some(0)));
    let c = BufferPoolBuilder::new()
        .max_idle_per_bucket(4)
        .max_idle_memory(1 << 20)
        .validate()
        .unwrap();
    assert_eq!(
        (c.max_idle_per_bucket, c.max_idle_memory),
        (Some(4), Some(1 << 20))
    );
}
