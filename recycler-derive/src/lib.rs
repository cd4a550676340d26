//! `#[derive(Recyclable)]` for [`recycler-core`](https://docs.rs/recycler-core).
//!
//! Use it through `recycler_core::Recyclable`, which re-exports it under the
//! default `derive` feature.

use proc_macro::TokenStream;

/// Derives `recycler_core::Recyclable` for a struct.
///
/// Placeholder: the full derive is tracked by its own issue.
#[proc_macro_derive(Recyclable, attributes(recycle))]
pub fn derive_recyclable(input: TokenStream) -> TokenStream {
    let _ = input;
    TokenStream::new()
}
