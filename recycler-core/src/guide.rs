//! The guides and design notes, as pages of these docs: each module below
//! holds no code, only a page of the workspace's `docs/` folder.
//!
//! - [`derive`](mod@derive): `#[derive(Recyclable)]`, with an example of every attribute
//!   and shape, the rules for type-parameter bounds and `retained_bytes`, and
//!   the compiler's message for each mistake.
//! - [`buffers`]: the buffer pool: buckets, the idle-memory cap and its
//!   overshoot bound, eviction, the memory limit, alignment, scopes, `bytes`.
//! - [`design`]: how the recycler works, why it is built this way, and what
//!   was measured to decide.
//!
//! Their examples are compiled and run as doc tests of the `recycler-tests`
//! package, with every feature on (the buffer guide uses `bytes`), rather
//! than as this crate's, whose doc tests run with the default features.

/// The guide to `#[derive(Recyclable)]`: every attribute, every supported
/// shape, and every compile error with what to write instead.
///
/// Its examples run as doc tests of the `recycler-tests` package.
#[cfg_attr(not(doctest), doc = "")]
#[cfg_attr(not(doctest), doc = include_str!("../docs/derive.md"))]
pub mod derive {}

/// The guide to the buffer pool ([`BufferPool`](crate::buffer::BufferPool)):
/// buckets, the idle-memory cap, eviction, the memory limit, alignment,
/// scopes, statistics and `bytes`.
///
/// Its examples run as doc tests of the `recycler-tests` package.
#[cfg_attr(not(doctest), doc = "")]
#[cfg_attr(not(doctest), doc = include_str!("../docs/buffers.md"))]
pub mod buffers {}

/// Design notes on [`Recycler<T>`](crate::Recycler): how it works, why it is
/// built this way, what was measured to decide, and which test checks each
/// promise.
#[cfg_attr(not(doctest), doc = "")]
#[cfg_attr(not(doctest), doc = include_str!("../docs/design.md"))]
pub mod design {}
