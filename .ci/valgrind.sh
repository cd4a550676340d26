#!/usr/bin/env bash
# recycler-core's unit tests and a chosen set of integration tests under
# valgrind's memcheck: no invalid access, no use of uninitialized memory, no
# memory definitely lost (a leak with no pointer left to it). Memory still
# reachable at exit, or "possibly lost" (the test harness's own threads),
# is not an error.
#
# The test binaries are the debug ones `cargo test` builds, in the same
# target directory (CARGO_TARGET_DIR, or `target`), so after the tests have
# run this builds nothing. Each binary runs under
#   valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite
# with --trace-children=yes, so that the tests that re-run their binary in a
# child process (thread-exit faults, teardown orders) are checked too.
#
# Left out, and why:
# - bad_input: 1 GiB alignments and allocations of isize::MAX bytes, which
#   check typed errors, not memory; valgrind's allocator refuses or warns.
# - compiletest and soundness::compile_fail: trybuild runs the compiler.
# - derive, derive_props: compile-time expansion; nothing there allocates
#   through the library's unsafe code that the other tests do not.
# - stress: the same paths as handoff and buffer_stress, ten times longer
#   (about a minute under valgrind).
# - the loom models: a build of their own (`--cfg loom`).
# - buffer::limit::tests::backoff_is_bounded: it counts the waits made
#   before a 20 ms deadline, which valgrind's slowdown makes too few.
# - steal's tokio stall (16,000 acquires of up to 32 KiB, each written).
# - teardown's matrix (some 200 child processes; AddressSanitizer runs it,
#   .ci/sanitizers.sh): its regression tests run here.
# The model-based tests run 16 scripts per property instead of 256.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v valgrind >/dev/null; then
    echo "valgrind is not installed; installing it"
    apt-get update -qq && apt-get install -y -qq valgrind
fi

TESTS=(pool thread_exit teardown idle_cap handoff faults guard_traits buffer buffer_async buffer_stress striped decay soundness model steal percpu)

# Prints "name executable" for each test binary cargo reports building.
executables() {
    python3 -c '
import json, sys
for line in sys.stdin:
    try:
        msg = json.loads(line)
    except ValueError:
        continue
    if msg.get("reason") == "compiler-artifact" and msg.get("executable") \
            and msg.get("profile", {}).get("test"):
        print(msg["target"]["name"], msg["executable"])
'
}

args=()
for t in "${TESTS[@]}"; do args+=(--test "$t"); done
bins=$(
    {
        cargo test -p recycler-core --lib --no-run --message-format=json
        cargo test -p recycler-tests "${args[@]}" --no-run --message-format=json
    } | executables
)

failed=0
run() {
    local name=$1 exe=$2
    shift 2
    local log start
    log=$(mktemp)
    start=$(date +%s)
    if RUST_BACKTRACE=0 PROPTEST_CASES=16 valgrind --trace-children=yes --error-exitcode=1 \
        --leak-check=full --errors-for-leak-kinds=definite --quiet "$exe" "$@" >"$log" 2>&1; then
        printf '%-16s ok   %4ss  %s\n' "$name" "$(($(date +%s) - start))" \
            "$(grep -h 'test result' "$log" | tail -1)"
    else
        printf '%-16s FAIL %4ss\n' "$name" "$(($(date +%s) - start))"
        grep -E '^==[0-9]+== ' "$log" | head -200 || true
        grep -vE '^==[0-9]+== ' "$log" | tail -60
        failed=1
    fi
    rm -f "$log"
}

while read -r name exe; do
    case $name in
        recycler_core) run "$name" "$exe" --skip buffer::limit::tests::backoff_is_bounded ;;
        soundness) run "$name" "$exe" --skip compile_fail ;;
        # The matrix runs some 200 child processes (a second or more each
        # under valgrind); its regressions run here, the matrix under ASan.
        teardown) run "$name" "$exe" --skip recycler_ --skip buffers_ ;;
        # Tests that leak on purpose: a forgotten waiting future (it keeps
        # what it was granted), and the second payload of a panic whose
        # payload's `Drop` panicked (leaked rather than dropped, by design).
        buffer_async) run "$name" "$exe" --skip a_leaked_waiting_future ;;
        faults) run "$name" "$exe" --skip a_panic_payload_whose_drop_panics ;;
        # Taking quiet threads' caches (valgrind has no `membarrier`, so the
        # caches never open and every access takes the lock: the fallback);
        # the tokio stall's 16,000 acquires run natively only.
        steal) run "$name" "$exe" --skip tokio_tasks ;;
        *) run "$name" "$exe" ;;
    esac
done <<<"$bins"

if [ "$failed" -ne 0 ]; then
    echo "valgrind found errors (or a test failed under it)"
    exit 1
fi
echo "valgrind: no errors, no definite leaks"
