//! Code generation: `impl Recyclable` for a struct or an enum, or, when the
//! input has errors, the errors and a stub impl.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{ToTokens, format_ident, quote};
use syn::spanned::Spanned;
use syn::{DeriveInput, Error, Fields, Ident, Type};

use crate::ast::{Enum, Field, Input, Struct};
use crate::attr::{ContainerAttrs, FieldRule};
use crate::{fallback, valid};

pub(crate) fn derive(node: &DeriveInput) -> TokenStream {
    let mut errors = Vec::new();
    let input = Input::from_syn(node, &mut errors);
    if let Some(input) = &input {
        valid::validate(input, &mut errors);
    }
    let krate = crate_path(input.as_ref().map(Input::attrs));
    match (input, combine(errors)) {
        (Some(Input::Struct(input)), None) => impl_struct(&input, &krate),
        (Some(Input::Enum(input)), None) => impl_enum(&input, &krate),
        (_, error) => fallback::expand(node, &krate, error),
    }
}

fn combine(errors: Vec<Error>) -> Option<Error> {
    errors.into_iter().reduce(|mut all, next| {
        all.combine(next);
        all
    })
}

/// `::recycler_core`, or the path given by `#[recycle(crate = path)]`.
fn crate_path(attrs: Option<&ContainerAttrs>) -> TokenStream {
    match attrs.and_then(|attrs| attrs.krate.first()) {
        Some(setting) => setting.value.to_token_stream(),
        None => quote!(::recycler_core),
    }
}

fn impl_struct(input: &Struct<'_>, krate: &TokenStream) -> TokenStream {
    let resets = input.fields.iter().map(|field| {
        let member = &field.member;
        reset_field(field, krate, quote!(self.#member))
    });
    let retained = sum(input.fields.iter().filter_map(|field| {
        let member = &field.member;
        retained_field(field, krate, quote!(&self.#member))
    }));
    wrap(
        input.original,
        krate,
        &input.attrs,
        input.fields.iter(),
        quote!(#(#resets)*),
        retained,
    )
}

fn impl_enum(input: &Enum<'_>, krate: &TokenStream) -> TokenStream {
    // `#[recycle(default)]` or `#[default]`: validation made sure that only
    // one variant has either.
    let default = input
        .variants
        .iter()
        .find(|variant| !variant.attrs.default.is_empty())
        .map(|variant| &variant.original.ident);
    let reset = match default {
        Some(ident) => quote!(*self = Self::#ident;),
        // No variants, so no value to reset.
        None => quote!(match *self {}),
    };

    let any_retained = input
        .variants
        .iter()
        .flat_map(|variant| &variant.fields)
        .any(counts_retained);
    let retained = if input.variants.is_empty() {
        quote!(match *self {})
    } else if !any_retained {
        quote!(0usize)
    } else {
        let arms = input.variants.iter().map(|variant| {
            let ident = &variant.original.ident;
            // Spanned on the field's type, so that the bound of `retained_bytes`
            // is reported there.
            let binding = |i: usize| {
                let span = variant.fields[i].ty.span();
                format_ident!("__recycle_field{}", i, span = span)
            };
            let patterns = variant.fields.iter().enumerate().map(|(i, field)| {
                if counts_retained(field) {
                    binding(i).into_token_stream()
                } else {
                    quote!(_)
                }
            });
            let pattern = match &variant.original.fields {
                Fields::Named(_) => {
                    let members = variant.fields.iter().map(|field| &field.member);
                    quote!(Self::#ident { #(#members: #patterns),* })
                }
                Fields::Unnamed(_) => quote!(Self::#ident(#(#patterns),*)),
                Fields::Unit => quote!(Self::#ident),
            };
            let sum = sum(variant.fields.iter().enumerate().filter_map(|(i, field)| {
                retained_field(field, krate, binding(i).into_token_stream())
            }));
            quote!(#pattern => #sum,)
        });
        quote!(match self { #(#arms)* })
    };

    let fields = input.variants.iter().flat_map(|variant| &variant.fields);
    wrap(input.original, krate, &input.attrs, fields, reset, retained)
}

/// The impl, in an anonymous `const` so that nothing leaks into the user's
/// namespace.
///
/// The impl keeps the user's where-clauses and adds each field's
/// `#[recycle(bound = "..")]`; then either the container's `bound`, or, by
/// default, `T: Recyclable` for each type parameter `T` that appears in a
/// field reset through `Recyclable` without a `bound` of its own.
fn wrap<'a>(
    node: &DeriveInput,
    krate: &TokenStream,
    attrs: &ContainerAttrs,
    fields: impl Iterator<Item = &'a Field<'a>> + Clone,
    reset: TokenStream,
    retained: TokenStream,
) -> TokenStream {
    let ident = &node.ident;
    let (impl_generics, ty_generics, where_clause) = node.generics.split_for_impl();
    let existing = where_clause
        .map(|clause| clause.predicates.iter())
        .into_iter()
        .flatten();
    let own = fields
        .clone()
        .filter_map(|field| field.attrs.bound.first())
        .flat_map(|bound| bound.value.iter());
    let inferred: Vec<TokenStream> = match attrs.bound.first() {
        Some(bound) => bound.value.iter().map(ToTokens::to_token_stream).collect(),
        None => node
            .generics
            .type_params()
            .map(|param| &param.ident)
            .filter(|param| {
                fields.clone().any(|field| {
                    counts_retained(field)
                        && field.attrs.bound.is_empty()
                        && !is_phantom_data(field.ty)
                        && mentions(field.ty.to_token_stream(), param)
                })
            })
            .map(|param| quote!(#param: #krate::Recyclable))
            .collect(),
    };
    quote! {
        const _: () = {
            // The trait's path, as given by `crate = path`, carries the
            // fields' spans; it may be in scope under a shorter name.
            #[allow(unused_qualifications)]
            #[automatically_derived]
            impl #impl_generics #krate::Recyclable for #ident #ty_generics
            where
                #(#existing,)*
                #(#own,)*
                #(#inferred,)*
            {
                #[inline]
                fn reset(&mut self) {
                    #reset
                }

                #[inline]
                fn retained_bytes(&self) -> ::core::primitive::usize {
                    #retained
                }
            }
        };
    }
}

/// The statement that resets one field (reached by `place`), if any.
fn reset_field(field: &Field<'_>, krate: &TokenStream, place: TokenStream) -> TokenStream {
    let span = field.ty.span();
    match field.attrs.rule() {
        None => call(
            qualified(field.ty, quote!(#krate::Recyclable), quote!(reset)),
            quote!(&mut #place),
            None,
            span,
        ),
        Some(FieldRule::Skip) => TokenStream::new(),
        Some(FieldRule::Default) => {
            let default = qualified(field.ty, quote!(::core::default::Default), quote!(default));
            let call = respan(quote!(#default()), span);
            quote!(#place = #call;)
        }
        Some(FieldRule::With(path)) => {
            // Through a `fn` pointer, so that a function of another shape is
            // reported as exactly that, on the path.
            let span = path.span();
            let function = Ident::new("__recycle_with", span);
            let signature = respan(quote!(fn(&mut _)), span);
            quote!({
                let #function: #signature = #path;
                #function(&mut #place);
            })
        }
        Some(FieldRule::ShrinkTo(limit)) => call(
            qualified(
                field.ty,
                quote!(#krate::ShrinkTo),
                quote!(clear_and_shrink_to),
            ),
            quote!(&mut #place),
            Some(limit),
            span,
        ),
    }
}

/// The field's term in `retained_bytes`, if it has one, given a reference to
/// the field: fields reset through `Recyclable` count; `skip`, `default` and
/// `with` fields do not.
fn retained_field(
    field: &Field<'_>,
    krate: &TokenStream,
    by_ref: TokenStream,
) -> Option<TokenStream> {
    let ty = field.ty;
    let span = ty.span();
    let count = call(
        qualified(ty, quote!(#krate::Recyclable), quote!(retained_bytes)),
        by_ref,
        None,
        span,
    );
    match field.attrs.rule() {
        None => Some(count),
        // Names `ShrinkTo` here too: a type that is not `ShrinkTo` is then
        // reported once, as that, and not also as not `Recyclable` (whose
        // notes offer attributes that cannot join `shrink_to`); the compiler
        // drops an error implied by another on the same tokens.
        Some(FieldRule::ShrinkTo(_)) => {
            let shrink = respan(
                qualified(ty, quote!(#krate::ShrinkTo), quote!(clear_and_shrink_to)),
                span,
            );
            Some(quote!({
                let _ = #shrink;
                #count
            }))
        }
        Some(FieldRule::Skip | FieldRule::Default | FieldRule::With(_)) => None,
    }
}

/// `<ty as Trait>::method`: an unmet `ty: Trait` is reported on `ty`, all
/// of it, as the user wrote it.
fn qualified(ty: &Type, trait_path: TokenStream, method: TokenStream) -> TokenStream {
    let span = ty.span();
    let trait_path = respan(trait_path, span);
    let rest = respan(quote!(>::#method), span);
    let lt = respan(quote!(<), span);
    let as_ = respan(quote!(as), span);
    quote!(#lt #ty #as_ #trait_path #rest)
}

/// `{ let arg = place; function(arg, extra) }`, with the function and the
/// argument spanned on `span` (the field's type).
///
/// The compiler reports an unmet bound of a call on its argument: with this
/// span, it lands on the field's type instead of on `#[derive(Recyclable)]`.
/// `self` cannot take the user's span (it is hygienic), so the place goes
/// through a local.
fn call(
    function: TokenStream,
    place: TokenStream,
    extra: Option<&TokenStream>,
    span: Span,
) -> TokenStream {
    let function = respan(function, span);
    let arg = Ident::new("__recycle_field", span);
    let extra = extra.map(|extra| quote!(, #extra));
    let mut args = Group::new(Delimiter::Parenthesis, quote!(#arg #extra));
    args.set_span(span);
    quote!({
        let #arg = #place;
        #function #args
    })
}

/// Whether the field is reset through `Recyclable` (itself, or through
/// `ShrinkTo`, which requires it), so that its type must implement it and its
/// bytes count.
fn counts_retained(field: &Field<'_>) -> bool {
    matches!(field.attrs.rule(), None | Some(FieldRule::ShrinkTo(_)))
}

/// `0usize.saturating_add(a).saturating_add(b)..`
fn sum(terms: impl Iterator<Item = TokenStream>) -> TokenStream {
    quote!(0usize #(.saturating_add(#terms))*)
}

/// Whether `tokens` name the type parameter `param` anywhere.
///
/// Over-approximates (a path `module::T` also matches), which at worst adds
/// a bound the user can see in the docs of the impl.
fn mentions(tokens: TokenStream, param: &Ident) -> bool {
    tokens.into_iter().any(|token| match token {
        TokenTree::Ident(ident) => ident == *param,
        TokenTree::Group(group) => mentions(group.stream(), param),
        TokenTree::Punct(_) | TokenTree::Literal(_) => false,
    })
}

/// `PhantomData<T>` is `Recyclable` for every `T`, so it asks no bound of `T`.
fn is_phantom_data(ty: &Type) -> bool {
    match ty {
        Type::Path(path) => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "PhantomData"),
        _ => false,
    }
}

/// `tokens` with every span set to `span`.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = TokenTree::Group(inner);
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}
