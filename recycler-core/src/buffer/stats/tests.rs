use super::*;

fn bucket(capacity: usize, acquires: u64, pooled: u64) -> BucketStats {
    BucketStats {
        capacity,
        acquires,
        pooled,
        requested: acquires,
        non_pooled: acquires - pooled,
        releases: acquires,
        idle: 1,
        ..BucketStats::default()
    }
}

#[test]
fn dump_has_one_line_per_used_bucket() {
    let stats = BufferPoolStats {
        buckets: vec![
            bucket(4096, 1000, 999),
            BucketStats {
                capacity: 8192,
                ..BucketStats::default()
            },
            bucket(12288, 4, 3),
        ],
        oversize: BucketStats {
            capacity: usize::MAX,
            ..BucketStats::default()
        },
        idle_memory: 16384,
        allocated_memory: 16384,
        accounted_idle_memory: 0,
        max_idle_memory: Some(1 << 20),
        max_idle_per_bucket: None,
        memory_limit: None,
        statistics: true,
        overdrafts: 0,
        overdraft_memory: 0,
        limit_violations: 0,
    };
    let text = stats.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(
        lines[0],
        "BufferPool: 3 buckets of 4 KiB to 12 KiB; idle 16 KiB (max 1 MiB), \
         allocated 16 KiB (limit none)"
    );
    assert_eq!(
        lines[1],
        "    4 KiB: acquires 1000 (hits 999, 99.9%), created 1, released 1000, \
         removed 0, idle 1, in use 0, evicted 0"
    );
    assert!(
        lines[2].starts_with("   12 KiB: acquires 4 (hits 3, 75.0%), created 1,"),
        "{text}"
    );
    assert_eq!(
        lines[3],
        "    total: acquires 1004 (hits 1002, 99.8%), created 2, released 1004, \
         removed 0, idle 2, in use 0, evicted 0"
    );
}

#[test]
fn total_sums_every_count_of_buckets_and_oversize() {
    let count = |n: u64| BucketStats {
        capacity: 4096,
        acquires: n,
        pooled: 2 * n,
        non_pooled: 3 * n,
        evicts: 4 * n,
        removes: 5 * n,
        releases: 6 * n,
        in_use: 7 * n,
        idle: 8 * n,
        prefilled: 9 * n,
        waiting: 10 * n,
        waits: 11 * n,
        timeouts: 12 * n,
        cancelled: 13 * n,
        requested: 14 * n,
        served_larger: 15 * n,
    };
    let stats = BufferPoolStats {
        buckets: vec![count(1), count(10)],
        oversize: BucketStats {
            capacity: usize::MAX,
            ..count(100)
        },
        idle_memory: 0,
        allocated_memory: 0,
        accounted_idle_memory: 0,
        max_idle_memory: None,
        max_idle_per_bucket: None,
        memory_limit: None,
        statistics: true,
        overdrafts: 0,
        overdraft_memory: 0,
        limit_violations: 0,
    };
    assert_eq!(
        stats.total(),
        BucketStats {
            capacity: 0,
            ..count(111)
        }
    );
    let text = stats.to_string();
    let last = text.lines().last().unwrap();
    assert!(
        last.starts_with("    total: acquires 111 (hits 222,"),
        "{text}"
    );
    assert!(
        text.lines()
            .nth(3)
            .unwrap()
            .starts_with(" oversize: acquires 100"),
        "{text}"
    );
    assert!(
        last.ends_with(
            "evicted 444, requested 1554 (served larger 1665), prefilled 999, waits 1221 \
             (waiting 1110, timed out 1332, cancelled 1443)"
        ),
        "{text}"
    );
    // Saturates rather than wraps.
    let full = BucketStats {
        idle: u64::MAX,
        ..count(1)
    };
    let huge = BufferPoolStats {
        buckets: vec![full, full],
        ..stats
    };
    assert_eq!(huge.total().idle, u64::MAX);
}

#[test]
fn an_unused_pool_still_ends_with_its_total() {
    let stats = BufferPoolStats {
        buckets: vec![BucketStats {
            capacity: 4096,
            ..BucketStats::default()
        }],
        oversize: BucketStats {
            capacity: usize::MAX,
            ..BucketStats::default()
        },
        idle_memory: 0,
        allocated_memory: 0,
        accounted_idle_memory: 0,
        max_idle_memory: None,
        max_idle_per_bucket: None,
        memory_limit: None,
        statistics: false,
        overdrafts: 0,
        overdraft_memory: 0,
        limit_violations: 0,
    };
    let text = stats.to_string();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.ends_with("; statistics off\n    total: acquires 0 (hits 0, 100.0%), created 0, released 0, removed 0, idle 0, in use 0, evicted 0"), "{text}");
}

#[test]
fn byte_units() {
    assert_eq!(Bytes(1 << 20).to_string(), "1 MiB");
    assert_eq!(Bytes(61440).to_string(), "60 KiB");
    assert_eq!(Bytes(1000).to_string(), "1000 B");
    assert_eq!(Cap(None).to_string(), "none");
}
