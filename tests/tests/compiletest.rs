//! Compile-fail tests of `#[derive(Recyclable)]`: each `tests/ui/*.rs` must
//! fail to compile with exactly the messages in its `.stderr`.
//!
//! The messages depend on the compiler version; refresh them with
//! `TRYBUILD=overwrite cargo test -p recycler-tests --test compiletest`
//! after a toolchain upgrade, read the diff, and update the matching outputs
//! in `docs/derive.md` (which shows each case with its full compiler output).

#[test]
#[cfg_attr(miri, ignore)]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
