//! The legend `compare` prints before its tables: what the columns,
//! ratios, medians and "best" mean, which configuration each recycler row
//! is, and how the samples were taken.

use crate::measure::Budget;

/// The legend, for a run with `budget`; `pinning` says where the two
/// threads of W2 and W2M ran (see `recycler_benches::affinity`).
pub(crate) fn legend(budget: Budget, pinning: &str) -> String {
    format!(
        "\
How to read this:
  - One table per workload and set of parameters; one row per contender.
    Figures are medians of {samples} samples of about {ms} ms each, in the
    table's unit (Mops/s: millions per second, higher is better; ns per op:
    lower is better). W2 and W2M also show the best sample beside the median.
  - Samples are interleaved: sample 1 of every contender, then sample 2 of
    every contender, and so on, so that a shared machine's drifts hit every
    contender alike. Each contender is calibrated first (one warm-up run).
  - Nx (a ratio) compares medians measured in the same process: the row's
    time divided by the recycler's. Above 1 the recycler is faster, below 1
    slower. Ratios never compare columns: each column of W1, W2, W2M and W9
    is its own process, under its own global allocator.
  - \"recycler\" is Recycler::new(), the defaults; every other configuration
    is named: recycler_reset_at_home = reset_on_return(false),
    recycler_capped = max_idle_bytes(8 MiB),
    recycler_striped = striped(0), recycler_owned = get_owned.
    \"box\" allocates every object fresh; floor_* rows are harness floors
    (what the workload costs with no pool at all), not contenders.
  - MET / MISSED: whether the median figure meets the project's target;
    all target lines are listed again at the end.
  - One run's figures move by 10-50% on a shared machine: run it a few
    times and read the range (docs/BENCHMARKS.md gives medians and ranges
    across runs).
  - W2 and W2M threads: {pinning}.
",
        samples = budget.samples,
        ms = budget.sample.as_millis(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_what_a_reader_needs() {
        let budget = Budget {
            sample: std::time::Duration::from_millis(25),
            samples: 11,
            quick: false,
        };
        let l = legend(budget, "pinned: producer on CPU 0, consumer on CPU 1");
        for needle in [
            "medians of 11 samples of about 25 ms",
            "best sample",
            "Above 1 the recycler is faster, below 1",
            "Recycler::new(), the defaults",
            "reset_on_return(false)",
            "MET / MISSED",
            "sample 1 of every contender, then sample 2",
            "producer on CPU 0",
        ] {
            assert!(l.contains(needle), "{needle} in\n{l}");
        }
    }
}
