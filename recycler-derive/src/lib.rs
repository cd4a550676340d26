//! `#[derive(Recyclable)]` for [`recycler-core`](https://docs.rs/recycler-core).
//!
//! Use it through `recycler_core::Recyclable`, which re-exports it under the
//! default `derive` feature. The guide, with an example of every attribute
//! and of every error, is the "Deriving" section of `recycler_core`'s docs
//! and its [derive guide](https://docs.rs/recycler-core/latest/recycler_core/guide/derive/index.html).

mod ast;
mod attr;
mod expand;
mod fallback;
mod valid;

use proc_macro::TokenStream;
use syn::{DeriveInput, parse_macro_input};

/// Derives `recycler_core::Recyclable`: `reset` resets every field with its
/// own `Recyclable::reset` (an enum becomes its `#[recycle(default)]` or
/// `#[default]` variant), and `retained_bytes` sums the fields'.
///
/// Attributes, all written `#[recycle(..)]` but std's `#[default]`:
///
/// | where | attribute | effect |
/// | --- | --- | --- |
/// | field | `skip` | left as it is; counts 0 bytes |
/// | field | `default` | set to `Default::default()` (the type needs `Default`, not `Recyclable`); counts 0 bytes |
/// | field | `with = path::to::fn` | reset by calling `fn(&mut FieldType)`; counts 0 bytes |
/// | field | `shrink_to = N` | cleared, then capacity cut to at most `N` (`recycler_core::ShrinkTo`) |
/// | field | `bound = "T: Trait, .."` | these predicates instead of the bounds inferred from the field |
/// | variant | `default`, or std's `#[default]` | the unit variant `reset` returns to; exactly one per enum |
/// | struct or enum | `bound = "T: Trait, .."` | these predicates instead of the inferred bounds; `""` for none |
/// | struct or enum | `crate = path` | where to find `recycler_core`, for crates that re-export it |
///
/// A field of an enum variant takes only `skip` and `bound`. Each type
/// parameter that appears in a field reset through `Recyclable` (other than
/// in a `PhantomData`) gets a `T: Recyclable` bound, unless a `bound` says
/// otherwise; the type's own where-clauses are kept. Unions cannot derive it.
#[proc_macro_derive(Recyclable, attributes(recycle, default))]
pub fn derive_recyclable(input: TokenStream) -> TokenStream {
    let input = parse_macro_input!(input as DeriveInput);
    expand::derive(&input).into()
}
