//! What the derive emits for an input with errors: the errors, and a stub
//! impl so that the user sees them alone, not also every place that needs
//! the type to be `Recyclable`.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{DeriveInput, Error};

pub(crate) fn expand(node: &DeriveInput, krate: &TokenStream, error: Option<Error>) -> TokenStream {
    let ident = &node.ident;
    let (impl_generics, ty_generics, where_clause) = node.generics.split_for_impl();
    let error = error.map(|error| error.into_compile_error());
    quote! {
        #error
        const _: () = {
            #[automatically_derived]
            impl #impl_generics #krate::Recyclable for #ident #ty_generics #where_clause {
                fn reset(&mut self) {
                    ::core::unreachable!()
                }
            }
        };
    }
}
