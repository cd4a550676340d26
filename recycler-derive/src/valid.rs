//! Checks that the parsed attributes make sense together. Every problem is
//! reported, each on the tokens that cause it.

use quote::quote;
use syn::{Error, Fields};

use crate::ast::{Enum, Field, Input, Struct};
use crate::attr::{ContainerAttrs, Setting, Spelling};

pub(crate) fn validate(input: &Input<'_>, errors: &mut Vec<Error>) {
    match input {
        Input::Struct(s) => validate_struct(s, errors),
        Input::Enum(e) => validate_enum(e, errors),
    }
}

fn validate_container(attrs: &ContainerAttrs, errors: &mut Vec<Error>) {
    at_most_once(&attrs.krate, "crate", errors);
    at_most_once(&attrs.bound, "bound", errors);
}

/// Reports every setting after the first as a duplicate.
fn at_most_once<T>(settings: &[Setting<T>], name: &str, errors: &mut Vec<Error>) {
    for extra in settings.iter().skip(1) {
        errors.push(Error::new_spanned(
            &extra.key,
            format!("duplicate `{name}` attribute"),
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
        validate_field(field, errors);
    }
}

fn validate_field(field: &Field<'_>, errors: &mut Vec<Error>) {
    at_most_one_rule(field, errors);
    at_most_once(&field.attrs.bound, "bound", errors);
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

    // The first variant marked, and the spelling of its first mark.
    let mut default_variant: Option<(&syn::Ident, Spelling)> = None;
    for variant in &input.variants {
        let ident = &variant.original.ident;
        let marks = &variant.attrs.default;
        for (i, mark) in marks.iter().enumerate() {
            if marks[..i]
                .iter()
                .any(|earlier| earlier.spelling == mark.spelling)
            {
                errors.push(Error::new_spanned(
                    &mark.tokens,
                    format!("duplicate `{}` attribute", mark.spelling.attr()),
                ));
                continue;
            }
            // `#[recycle(default)]` and `#[default]` on one variant mean the
            // same (std's `Default` reads the one, this derive either); a
            // later variant is reported once, on its first mark.
            if let (Some((first, spelling)), 0) = (default_variant, i) {
                errors.push(Error::new_spanned(
                    &mark.tokens,
                    format!(
                        "only one variant can be the one `reset` returns to, and `{first}` \
                         already is, marked `{}`{}",
                        spelling.attr(),
                        if spelling == mark.spelling {
                            ""
                        } else {
                            "; to this derive `#[default]` means what `#[recycle(default)]` \
                             means, so `Default` and `reset` cannot pick different variants \
                             (implement one of the two by hand for that)"
                        },
                    ),
                ));
            }
        }
        if let (None, Some(mark)) = (default_variant, marks.first()) {
            default_variant = Some((ident, mark.spelling));
        }
        if let Some(mark) = marks.first()
            && !matches!(variant.original.fields, Fields::Unit)
        {
            let fields = &variant.original.fields;
            errors.push(Error::new_spanned(
                quote!(#ident #fields),
                format!(
                    "the `{}` variant must be a unit variant: `reset` sets the value to \
                     `Self::{ident}` and has nothing to fill its fields with; mark a \
                     variant without fields, or add one",
                    mark.spelling.attr(),
                ),
            ));
        }
        for field in &variant.fields {
            validate_field(field, errors);
        }
    }

    if default_variant.is_none() && !input.variants.is_empty() {
        errors.push(Error::new_spanned(
            &input.head,
            "`#[derive(Recyclable)]` on an enum needs one unit variant marked \
             `#[recycle(default)]` or `#[default]`: the state `reset` returns to",
        ));
    }
}
