//! The derive's view of the input: the user's syntax tree with the
//! `#[recycle(..)]` attributes parsed next to the nodes they sit on.

use proc_macro2::TokenStream;
use quote::quote;
use syn::{Data, DeriveInput, Error, Fields, Index, Member, Path, Type};

use crate::attr::{self, Container, ContainerAttrs, FieldAttrs, VariantAttrs};

pub(crate) enum Input<'a> {
    Struct(Struct<'a>),
    Enum(Enum<'a>),
}

pub(crate) struct Struct<'a> {
    pub(crate) original: &'a DeriveInput,
    pub(crate) attrs: ContainerAttrs,
    /// The `packed` of `#[repr(packed)]`, which the derive cannot support.
    pub(crate) packed: Option<Path>,
    pub(crate) fields: Vec<Field<'a>>,
}

pub(crate) struct Enum<'a> {
    pub(crate) original: &'a DeriveInput,
    /// `enum Name`, where a missing default variant is reported.
    pub(crate) head: TokenStream,
    pub(crate) attrs: ContainerAttrs,
    pub(crate) variants: Vec<Variant<'a>>,
}

pub(crate) struct Variant<'a> {
    pub(crate) original: &'a syn::Variant,
    pub(crate) attrs: VariantAttrs,
    pub(crate) fields: Vec<Field<'a>>,
}

pub(crate) struct Field<'a> {
    pub(crate) member: Member,
    pub(crate) ty: &'a Type,
    pub(crate) attrs: FieldAttrs,
}

impl<'a> Input<'a> {
    /// Parses the attributes of `node`. Errors go to `errors`; `None` means
    /// the input cannot derive at all (a union).
    pub(crate) fn from_syn(node: &'a DeriveInput, errors: &mut Vec<Error>) -> Option<Self> {
        match &node.data {
            Data::Struct(data) => Some(Input::Struct(Struct {
                original: node,
                attrs: attr::container(&node.attrs, Container::Struct, errors),
                packed: attr::repr_packed(&node.attrs),
                fields: Field::multiple_from_syn(&data.fields, Container::Struct, errors),
            })),
            Data::Enum(data) => {
                let (enum_token, ident) = (&data.enum_token, &node.ident);
                Some(Input::Enum(Enum {
                    original: node,
                    head: quote!(#enum_token #ident),
                    attrs: attr::container(&node.attrs, Container::Enum, errors),
                    variants: data
                        .variants
                        .iter()
                        .map(|variant| Variant {
                            original: variant,
                            attrs: attr::variant(&variant.attrs, errors),
                            fields: Field::multiple_from_syn(
                                &variant.fields,
                                Container::Enum,
                                errors,
                            ),
                        })
                        .collect(),
                }))
            }
            Data::Union(data) => {
                let (union_token, ident) = (&data.union_token, &node.ident);
                errors.push(Error::new_spanned(
                    quote!(#union_token #ident),
                    "`Recyclable` cannot be derived for a union: the derive cannot know which \
                     field is live; implement `recycler_core::Recyclable` by hand",
                ));
                None
            }
        }
    }

    pub(crate) fn attrs(&self) -> &ContainerAttrs {
        match self {
            Input::Struct(s) => &s.attrs,
            Input::Enum(e) => &e.attrs,
        }
    }
}

impl<'a> Field<'a> {
    /// The fields of a struct, or, with `Container::Enum`, of an enum variant.
    fn multiple_from_syn(
        fields: &'a Fields,
        owner: Container,
        errors: &mut Vec<Error>,
    ) -> Vec<Self> {
        fields
            .iter()
            .enumerate()
            .map(|(i, field)| Field {
                member: match &field.ident {
                    Some(ident) => Member::Named(ident.clone()),
                    None => Member::Unnamed(Index {
                        index: i as u32,
                        span: syn::spanned::Spanned::span(&field.ty),
                    }),
                },
                ty: &field.ty,
                attrs: attr::field(&field.attrs, owner, errors),
            })
            .collect()
    }
}
