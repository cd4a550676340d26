//! Integration, stress and loom tests for `recycler-core`; see `tests/`.

/// `docs/derive.md`: its examples run as this crate's doc tests, so the
/// guide cannot drift from what the derive accepts and rejects.
#[cfg(doctest)]
#[doc = include_str!("../../docs/derive.md")]
pub struct DeriveGuide;

/// `docs/buffers.md`: the buffer pool guide, whose examples run as this
/// crate's doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/buffers.md")]
pub struct BuffersGuide;

/// `docs/guide.md`: the guide, whose examples run as this crate's doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../docs/guide.md")]
pub struct Guide;

/// `README.md`: its examples run as this crate's doc tests.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct Readme;

/// `recycler-core/README.md`, the crate's page on crates.io: its example
/// runs as this crate's doc test.
#[cfg(doctest)]
#[doc = include_str!("../../recycler-core/README.md")]
pub struct CoreReadme;

/// `recycler-derive/README.md`: its example runs as this crate's doc test
/// (the derive crate cannot use `recycler-core`, which depends on it).
#[cfg(doctest)]
#[doc = include_str!("../../recycler-derive/README.md")]
pub struct DeriveReadme;
