//! The guides and design notes, as pages of these docs: each module below
//! holds no code, only a page of the workspace's `docs/` folder.
//!
//! - [`usage`]: the user's guide: a quick start, which mode to choose
//!   (per-thread or striped), every setting with its default and when to
//!   change it, async use, reading the statistics, and troubleshooting.
//! - [`derive`](mod@derive): `#[derive(Recyclable)]`, with an example of
//!   every attribute and shape, the rules for type-parameter bounds and
//!   `retained_bytes`, and the compiler's message for each mistake.
//! - [`buffers`]: the buffer pool: buckets, the idle-memory cap and its
//!   overshoot bound, eviction, the memory limit, alignment, scopes, `bytes`.
//! - [`design`]: how the recycler works, why it is built this way, and what
//!   was measured to decide.
//!
//! Every example in them is compiled and run as a test of the workspace,
//! with every feature on (the buffer guide uses `bytes`): the doc tests of
//! its `recycler-tests` package include these files. (This crate's own doc
//! tests run with the default features, so they leave the guides out.)

/// The user's guide: quick start, choosing a mode, every setting, async
/// use, statistics and troubleshooting.
#[cfg_attr(not(doctest), doc = "")]
#[cfg_attr(not(doctest), doc = include_str!("../docs/guide.md"))]
pub mod usage {}

/// The guide to `#[derive(Recyclable)]`: every attribute, every supported
/// shape, and every compile error with what to write instead.
#[cfg_attr(not(doctest), doc = "")]
#[cfg_attr(not(doctest), doc = include_str!("../docs/derive.md"))]
pub mod derive {}

/// The guide to the buffer pool ([`BufferPool`](crate::buffer::BufferPool)):
/// buckets, the idle-memory cap, eviction, the memory limit, alignment,
/// scopes, statistics and `bytes`.
#[cfg_attr(not(doctest), doc = "")]
#[cfg_attr(not(doctest), doc = include_str!("../docs/buffers.md"))]
pub mod buffers {}

/// Design notes on [`Recycler<T>`](crate::Recycler): how it works, why it is
/// built this way, what was measured to decide, and which test checks each
/// promise.
#[cfg_attr(not(doctest), doc = "")]
#[cfg_attr(not(doctest), doc = include_str!("../docs/design.md"))]
pub mod design {}
