//! Checks that the parsed attributes make sense together. Every problem is
//! reported, each on the tokens that cause it.

use quote::quote;
use syn::{Error, Fields};

use crate::ast::{Enum, Field, Input, Struct};
use crate::attr::{ContainerAttrs, FieldRule};

pub(crate) fn validate(input: &Input<'_>, errors: &mut Vec<Error>) {
    match input {
        Input::Struct(s) => validate_struct(s, errors),
        Input::Enum(e) => validate_enum(e, errors),
    }
}

fn validate_container(attrs: &ContainerAttrs, errors: &mut Vec<Error>) {
    for extra in attrs.krate.iter().skip(1) {
        errors.push(Error::new_spanned(
            &extra.key,
            "duplicate `crate` attribute",
        ));
    }
}

fn validate_struct(input: &Struct<'_>, errors: &mut Vec<Error>) {
    validate_container(&input.attrs, errors);
    if let Some(packed) = &input.packed {
        errors.push(Error::new_spanned(
            packed,
            "`Recyclable` cannot be derived for a `#[repr(packed)]` struct: resetting a field \
             in place takes a reference to it, which may be unaligned; implement \
             `recycler_core::Recyclable` by hand, moving each field out and back",
        ));
    }
    for field in &input.fields {
        at_most_one_rule(field, errors);
    }
}

/// Reports every rule after a field's first, as a duplicate or a conflict.
fn at_most_one_rule(field: &Field<'_>, errors: &mut Vec<Error>) {
    let rules = &field.attrs.rules;
    for (i, extra) in rules.iter().enumerate().skip(1) {
        let name = extra.value.name();
        let message = if rules[..i]
            .iter()
            .any(|earlier| earlier.value.name() == name)
        {
            format!("duplicate `{name}` attribute")
        } else {
            format!(
                "`{name}` cannot be combined with `{}`: each says how `reset` treats this \
                 field, so keep only one",
                rules[0].value.name(),
            )
        };
        errors.push(Error::new_spanned(&extra.key, message));
    }
}

fn validate_enum(input: &Enum<'_>, errors: &mut Vec<Error>) {
    validate_container(&input.attrs, errors);

    let mut default_variant = None;
    for variant in &input.variants {
        let ident = &variant.original.ident;
        for (i, key) in variant.attrs.default.iter().enumerate() {
            let message = match (i, default_variant) {
                (0, None) => {
                    default_variant = Some(ident);
                    continue;
                }
                (0, Some(first)) => format!(
                    "only one variant can be `#[recycle(default)]`, and `{first}` already is"
                ),
                _ => "duplicate `default` attribute".to_owned(),
            };
            errors.push(Error::new_spanned(key, message));
        }
        if !variant.attrs.default.is_empty() && !matches!(variant.original.fields, Fields::Unit) {
            let fields = &variant.original.fields;
            errors.push(Error::new_spanned(
                quote!(#ident #fields),
                format!(
                    "the `#[recycle(default)]` variant must be a unit variant: `reset` sets \
                     the value to `Self::{ident}` and has nothing to fill its fields with; \
                     mark a variant without fields, or add one"
                ),
            ));
        }

        for field in &variant.fields {
            let mut skipped = false;
            for rule in &field.attrs.rules {
                let message = match rule.value {
                    FieldRule::Skip if !skipped => {
                        skipped = true;
                        continue;
                    }
                    FieldRule::Skip => "duplicate `skip` attribute".to_owned(),
                    _ => format!(
                        "`{}` has no effect in an enum: `reset` replaces the whole value with \
                         the `#[recycle(default)]` variant; the only field attribute allowed \
                         here is `#[recycle(skip)]`, which leaves the field out of \
                         `retained_bytes`",
                        rule.value.name(),
                    ),
                };
                errors.push(Error::new_spanned(&rule.key, message));
            }
        }
    }

    if default_variant.is_none() && !input.variants.is_empty() {
        errors.push(Error::new_spanned(
            &input.head,
            "`#[derive(Recyclable)]` on an enum needs one unit variant marked \
             `#[recycle(default)]`: the state `reset` returns to",
        ));
    }
}
