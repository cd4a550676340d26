//! Shared workloads for the benchmarks and the `compare` binary.
