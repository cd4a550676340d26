#!/usr/bin/env bash
# AddressSanitizer over the integration suites that exercise the library's
# unsafe code and its teardown, on the stable toolchain: the sanitizer
# runtimes ship with rust-std, and RUSTC_BOOTSTRAP=1 admits the unstable
# `-Zsanitizer` flag. std itself stays uninstrumented (no rust-src here for
# `-Zbuild-std`), which ASan tolerates: it checks every access our code and
# the tests make. Its own target directory (`asan` under CARGO_TARGET_DIR,
# or under `target`), so the normal build cache stays valid.
#
# Left out, and why:
# - bad_input: allocations of `isize::MAX` bytes and 1 GiB alignments, which
#   check typed errors (ASan's allocator reports them as errors, or needs
#   allocator_may_return_null, which it is given all the same);
# - compiletest, soundness: trybuild runs the compiler;
# - derive, derive_props: expansion only;
# - stress, soak, model: the same paths as the suites run here, longer;
# - alloc, zero_alloc: they count allocations in steady state, and ASan's
#   slowdown changes the timing that steady state depends on (checked
#   without it);
# - loom models: a build of their own.
#
# ThreadSanitizer builds the same way (`-Zsanitizer=thread
# -Cunsafe-allow-abi-mismatch=sanitizer`), but without an instrumented std
# it reports std's own `Mutex`, `Arc` and channel fences as races; see
# docs/testing.md for the command and the triage.
set -euo pipefail
cd "$(dirname "$0")/.."

target=$(rustc -vV | sed -n 's/^host: //p')
export RUSTC_BOOTSTRAP=1
export RUSTFLAGS="-Zsanitizer=address"
export RUSTDOCFLAGS="-Zsanitizer=address"
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=0"
TESTS=(pool thread_exit teardown idle_cap handoff faults guard_traits buffer buffer_async buffer_codec frame_model buffer_fit buffer_limit buffer_liveness buffer_bucket_cap guard_fit buffer_stress striped decay steal buffer_reuse stress percpu)
args=()
for t in "${TESTS[@]}"; do args+=(--test "$t"); done
cargo test -p recycler-tests --target "$target" \
    --target-dir "${CARGO_TARGET_DIR:-target}/asan" "${args[@]}"
cargo test -p recycler-core --lib --target "$target" \
    --target-dir "${CARGO_TARGET_DIR:-target}/asan" -- --skip buffer::limit::tests::backoff_is_bounded
