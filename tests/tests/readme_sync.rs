//! `README.md`'s tokio example is `recycler-core/examples/readme_tokio.rs`
//! in full: CI runs the file as an example and the README's copy as a doc
//! test, and this test keeps the two the same, byte for byte.

/// The line just before the README's copy.
const MARKER: &str = "<!-- recycler-core/examples/readme_tokio.rs, in full";

/// The code block that follows [`MARKER`] in `readme`.
fn block_after_marker(readme: &str) -> &str {
    let at = readme
        .find(MARKER)
        .unwrap_or_else(|| panic!("README.md has no line starting {MARKER:?}"));
    let rest = &readme[at..];
    let open = "```rust\n";
    let start = rest
        .find(open)
        .unwrap_or_else(|| panic!("no ```rust block after {MARKER:?} in README.md"))
        + open.len();
    let len = rest[start..]
        .find("\n```\n")
        .unwrap_or_else(|| panic!("the ```rust block after {MARKER:?} never ends"));
    &rest[start..start + len + 1]
}

#[test]
fn readme_tokio_example_is_the_example_file() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let readme = std::fs::read_to_string(format!("{root}/README.md")).expect("README.md");
    let example = std::fs::read_to_string(format!("{root}/recycler-core/examples/readme_tokio.rs"))
        .expect("recycler-core/examples/readme_tokio.rs");
    let shown = block_after_marker(&readme);
    if shown != example {
        let line = shown
            .lines()
            .zip(example.lines())
            .position(|(a, b)| a != b)
            .unwrap_or_else(|| shown.lines().count().min(example.lines().count()));
        panic!(
            "README.md's tokio example differs from recycler-core/examples/readme_tokio.rs \
             from line {} of the file on:\n  README:  {:?}\n  example: {:?}\n\
             copy the file into the README's block (it is shown in full, no hidden lines)",
            line + 1,
            shown.lines().nth(line).unwrap_or("<end>"),
            example.lines().nth(line).unwrap_or("<end>"),
        );
    }
    assert!(
        !shown
            .lines()
            .any(|l| l.trim_start().starts_with("# ") || l.trim() == "#"),
        "no rustdoc-hidden lines: GitHub shows them as they are"
    );
}
