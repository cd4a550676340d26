#!/usr/bin/env bash
# Loom models of the recycler's cross-thread paths (tests/tests/loom.rs),
# built against the real code with `--cfg loom`, in release with debug
# assertions, in a target directory of their own (`loom` under
# CARGO_TARGET_DIR, or under `target`) so that the normal build cache is not
# invalidated.
set -euo pipefail
cd "$(dirname "$0")/.."
# Warnings are errors here too: the loom build compiles code that the
# normal build (and clippy) never sees.
export RUSTFLAGS="--cfg loom -C debug-assertions -D warnings"
export LOOM_MAX_PREEMPTIONS="${LOOM_MAX_PREEMPTIONS:-2}"
cargo test -p recycler-tests --release --test loom --test loom_buffer --test loom_striped --test loom_teardown --test loom_steal --test loom_keep --test loom_percpu --test loom_striped_rseq --target-dir "${CARGO_TARGET_DIR:-target}/loom" -- --test-threads=2 "$@"
