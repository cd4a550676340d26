//! Parsing of `#[recycle(..)]` attributes into settings, each keeping its key
//! for error spans. Whether the settings make sense together is `valid.rs`'s
//! job.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{
    Attribute, Error, Expr, ExprLit, ExprUnary, Ident, Lit, LitStr, Meta, Path, Result, Token,
    UnOp, WherePredicate,
};

/// One `key` or `key = value` inside `#[recycle(..)]`.
pub(crate) struct Setting<T> {
    /// The key as written, for error spans.
    pub(crate) key: Path,
    pub(crate) value: T,
}

/// How the derive resets a field.
pub(crate) enum FieldRule {
    /// `#[recycle(skip)]`: leave the field as it is.
    Skip,
    /// `#[recycle(default)]`: assign `Default::default()`.
    Default,
    /// `#[recycle(with = path)]`: call `path(&mut field)`.
    With(Path),
    /// `#[recycle(shrink_to = N)]`: `ShrinkTo::clear_and_shrink_to(&mut field, N)`.
    /// Holds `N`: an integer literal or a constant expression.
    ShrinkTo(TokenStream),
}

impl FieldRule {
    pub(crate) fn name(&self) -> &'static str {
        match self {
            FieldRule::Skip => "skip",
            FieldRule::Default => "default",
            FieldRule::With(_) => "with",
            FieldRule::ShrinkTo(_) => "shrink_to",
        }
    }
}

/// The where-clause predicates of `bound = "..."`: `T: Clone, U: Recyclable`.
pub(crate) type Predicates = Punctuated<WherePredicate, Token![,]>;

/// `#[recycle(..)]` on the struct or enum itself.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    /// Every `crate = path`; more than one is an error.
    pub(crate) krate: Vec<Setting<Path>>,
    /// Every `bound = "..."`, which replaces the inferred bounds; more than
    /// one is an error.
    pub(crate) bound: Vec<Setting<Predicates>>,
}

/// The two ways to mark the variant an enum's `reset` returns to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Spelling {
    /// `#[recycle(default)]`.
    Recycle,
    /// std's `#[default]`, which also marks the variant `Default` returns.
    Std,
}

impl Spelling {
    pub(crate) fn attr(self) -> &'static str {
        match self {
            Spelling::Recycle => "#[recycle(default)]",
            Spelling::Std => "#[default]",
        }
    }
}

/// One mark of the variant `reset` returns to.
pub(crate) struct DefaultMark {
    pub(crate) spelling: Spelling,
    /// Where errors about it go: the `default` of `#[recycle(default)]`, or
    /// the whole `#[default]`.
    pub(crate) tokens: TokenStream,
}

/// `#[recycle(..)]` and `#[default]` on an enum variant.
#[derive(Default)]
pub(crate) struct VariantAttrs {
    /// Every mark, in the order written; both spellings on one variant mean
    /// the same, a spelling twice is an error.
    pub(crate) default: Vec<DefaultMark>,
}

/// `#[recycle(..)]` on a field.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    /// Every rule given; more than one is an error.
    pub(crate) rules: Vec<Setting<FieldRule>>,
    /// Every `bound = "..."`, which replaces the bounds inferred from this
    /// field; more than one is an error.
    pub(crate) bound: Vec<Setting<Predicates>>,
}

impl FieldAttrs {
    /// The field's rule, once validation has made sure there is at most one.
    pub(crate) fn rule(&self) -> Option<&FieldRule> {
        self.rules.first().map(|setting| &setting.value)
    }
}

/// The `#[recycle(..)]` attributes among `attrs`.
fn recycle_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|attr| attr.path().is_ident("recycle"))
}

/// std's `#[default]` attributes among `attrs`, in every form.
fn std_default_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|attr| attr.path().is_ident("default"))
}

/// The bare `#[default]` attributes among `attrs`: the form std gives the
/// marker of an enum's default variant.
///
/// `#[default = ..]` and `#[default(..)]` are left alone where the derive
/// reads no `#[default]` (on the type, on fields): they are not std's marker,
/// and another derive on the same type may own them.
fn bare_std_defaults(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    std_default_attrs(attrs).filter(|attr| matches!(attr.meta, Meta::Path(_)))
}

/// The name of a key, for messages (`crate` is a keyword, hence not `get_ident`).
fn key_name(path: &Path) -> String {
    path.to_token_stream().to_string().replace(' ', "")
}

/// What `#[derive(Recyclable)]` sits on, for container attributes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Container {
    Struct,
    Enum,
}

pub(crate) fn container(
    attrs: &[Attribute],
    kind: Container,
    errors: &mut Vec<Error>,
) -> ContainerAttrs {
    let mut out = ContainerAttrs::default();
    for attr in recycle_attrs(attrs) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("crate") {
                let value = path_value(&meta, "crate = path::to::recycler_core")?;
                out.krate.push(Setting {
                    key: meta.path,
                    value,
                });
                Ok(())
            } else if meta.path.is_ident("bound") {
                let value = bound_value(&meta)?;
                out.bound.push(Setting {
                    key: meta.path,
                    value,
                });
                Ok(())
            } else if meta.path.is_ident("default") && kind == Container::Enum {
                Err(Error::new_spanned(
                    &meta.path,
                    "`#[recycle(default)]` goes on the unit variant that `reset` returns to, \
                     not on the enum",
                ))
            } else {
                Err(Error::new_spanned(
                    &meta.path,
                    format!(
                        "unknown attribute `{}` on {}{}; expected \
                         `crate = path::to::recycler_core` or `bound = \"..\"`{}",
                        key_name(&meta.path),
                        match kind {
                            Container::Struct => "a struct",
                            Container::Enum => "an enum",
                        },
                        did_you_mean(&meta.path, &["crate", "bound"]),
                        match kind {
                            Container::Struct => "; field attributes go on the fields",
                            Container::Enum => "",
                        },
                    ),
                ))
            }
        });
        errors.extend(parsed.err());
    }
    for attr in bare_std_defaults(attrs) {
        errors.push(Error::new_spanned(
            attr,
            match kind {
                Container::Struct => {
                    "`#[default]` marks the unit variant of an enum that `reset` returns to; \
                     it has no meaning on a struct"
                }
                Container::Enum => {
                    "`#[default]` goes on the unit variant that `reset` returns to, not on \
                     the enum"
                }
            },
        ));
    }
    out
}

pub(crate) fn variant(attrs: &[Attribute], errors: &mut Vec<Error>) -> VariantAttrs {
    let mut out = VariantAttrs::default();
    for attr in attrs {
        // A marker written with a value is reported, and still counts as
        // the mark it is meant to be, so that the enum is not also reported
        // as having none.
        if attr.path().is_ident("default") {
            if !matches!(attr.meta, Meta::Path(_)) {
                errors.push(Error::new_spanned(
                    attr,
                    "`#[default]` takes no value: write `#[default]`",
                ));
            }
            out.default.push(DefaultMark {
                spelling: Spelling::Std,
                tokens: attr.to_token_stream(),
            });
            continue;
        }
        if !attr.path().is_ident("recycle") {
            continue;
        }
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                if let Err(error) = no_value(&meta, "default") {
                    errors.push(error);
                    skip_value(&meta)?;
                }
                out.default.push(DefaultMark {
                    spelling: Spelling::Recycle,
                    tokens: meta.path.to_token_stream(),
                });
                Ok(())
            } else {
                Err(Error::new_spanned(
                    &meta.path,
                    format!(
                        "unknown attribute `{}` on a variant; the only one allowed here is \
                         `#[recycle(default)]`, which marks the variant `reset` returns to",
                        key_name(&meta.path),
                    ),
                ))
            }
        });
        errors.extend(parsed.err());
    }
    out
}

/// The keys a field takes, by what the field is in.
fn field_keys(owner: Container) -> (&'static [&'static str], &'static str) {
    match owner {
        Container::Struct => (
            &["skip", "default", "with", "shrink_to", "bound"],
            "`skip`, `default`, `with = path::to::fn`, `shrink_to = N` or `bound = \"..\"`",
        ),
        Container::Enum => (&["skip", "bound"], "`skip` or `bound = \"..\"`"),
    }
}

/// The attributes of a field of a struct or, for `Container::Enum`, of an
/// enum variant.
///
/// An enum's `reset` replaces the whole value and never resets a field in
/// place, so there a field takes only `skip` and `bound`; `default`, `with`
/// and `shrink_to` are reported here, without a word on their values.
pub(crate) fn field(attrs: &[Attribute], owner: Container, errors: &mut Vec<Error>) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in recycle_attrs(attrs) {
        let parsed = attr.parse_nested_meta(|meta| {
            let resets = ["default", "with", "shrink_to"];
            if owner == Container::Enum && resets.iter().any(|key| meta.path.is_ident(key)) {
                skip_value(&meta)?;
                errors.push(Error::new_spanned(
                    &meta.path,
                    format!(
                        "`{}` has no effect in an enum: `reset` replaces the whole value with \
                         the default variant; a field of a variant takes only \
                         `#[recycle(skip)]` (which leaves it out of `retained_bytes`) and \
                         `#[recycle(bound = \"..\")]`",
                        key_name(&meta.path),
                    ),
                ));
                return Ok(());
            }
            if meta.path.is_ident("bound") {
                let value = bound_value(&meta)?;
                out.bound.push(Setting {
                    key: meta.path,
                    value,
                });
                return Ok(());
            }
            let value = if meta.path.is_ident("skip") {
                no_value(&meta, "skip")?;
                FieldRule::Skip
            } else if meta.path.is_ident("default") {
                no_value(&meta, "default")?;
                FieldRule::Default
            } else if meta.path.is_ident("with") {
                FieldRule::With(path_value(&meta, "with = path::to::fn")?)
            } else if meta.path.is_ident("shrink_to") {
                FieldRule::ShrinkTo(limit_value(&meta)?)
            } else {
                let (known, listed) = field_keys(owner);
                return Err(Error::new_spanned(
                    &meta.path,
                    format!(
                        "unknown attribute `{}` on a field{}{}; expected {listed}",
                        key_name(&meta.path),
                        match owner {
                            Container::Struct => "",
                            Container::Enum => " of an enum variant",
                        },
                        did_you_mean(&meta.path, known),
                    ),
                ));
            };
            out.rules.push(Setting {
                key: meta.path,
                value,
            });
            Ok(())
        });
        errors.extend(parsed.err());
    }
    for attr in bare_std_defaults(attrs) {
        errors.push(Error::new_spanned(
            attr,
            match owner {
                Container::Struct => {
                    "`#[default]` marks the unit variant of an enum that `reset` returns to, \
                     not a field; to reset this field to `Default::default()`, write \
                     `#[recycle(default)]`"
                }
                Container::Enum => {
                    "`#[default]` goes on the unit variant that `reset` returns to, not on a \
                     field"
                }
            },
        ));
    }
    out
}

/// The `packed` in `#[repr(packed)]` or `#[repr(packed(N))]`, if any.
///
/// A malformed `repr` is left for the compiler to report.
pub(crate) fn repr_packed(attrs: &[Attribute]) -> Option<Path> {
    let mut packed = None;
    for attr in attrs.iter().filter(|attr| attr.path().is_ident("repr")) {
        let _ = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("packed") {
                packed = Some(meta.path.clone());
            }
            if meta.input.peek(syn::token::Paren) {
                let content;
                syn::parenthesized!(content in meta.input);
                content.parse::<TokenStream>()?;
            }
            Ok(())
        });
    }
    packed
}

/// Rejects `key = ..` and `key(..)` for a key that takes no value.
fn no_value(meta: &ParseNestedMeta, key: &str) -> Result<()> {
    if meta.input.is_empty() || meta.input.peek(Token![,]) {
        Ok(())
    } else {
        Err(meta.error(format!("`{key}` takes no value: write `#[recycle({key})]`")))
    }
}

/// Consumes the value of a key that is reported without it: `= ..` up to
/// the next `,`, or `(..)`.
fn skip_value(meta: &ParseNestedMeta) -> Result<()> {
    if meta.input.peek(Token![=]) {
        let value = meta.value()?;
        // An expression, so that the commas of `f::<A, B>` stay inside it.
        let fork = value.fork();
        if fork.parse::<Expr>().is_ok() && (fork.is_empty() || fork.peek(Token![,])) {
            value.parse::<Expr>()?;
        }
        while !value.is_empty() && !value.peek(Token![,]) {
            value.parse::<proc_macro2::TokenTree>()?;
        }
    } else if meta.input.peek(syn::token::Paren) {
        let content;
        syn::parenthesized!(content in meta.input);
        content.parse::<TokenStream>()?;
    }
    Ok(())
}

/// `bound = "T: Clone, U: Recyclable"`, as serde writes it; `bound = ""`
/// for none.
fn bound_value(meta: &ParseNestedMeta) -> Result<Predicates> {
    const EXAMPLE: &str = "`#[recycle(bound = \"T: Recyclable\")]`";
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!(
            "`bound` needs where-clause predicates in a string, as in {EXAMPLE}, or \
             `bound = \"\"` for none"
        )));
    }
    let value = meta.value()?;
    if !value.peek(LitStr) {
        return Err(value.error(format!(
            "expected a string after `bound =`: where-clause predicates, as in {EXAMPLE}"
        )));
    }
    let lit: LitStr = value.parse()?;
    let invalid = |error: Error| {
        Error::new(
            lit.span(),
            format!(
                "`bound` must hold where-clause predicates separated by commas, as in \
                 {EXAMPLE}: {error}"
            ),
        )
    };
    lit.parse_with(Predicates::parse_terminated)
        .map_err(invalid)
}

/// `key = path` or `key = "path"` (the string form as serde writes it).
fn path_value(meta: &ParseNestedMeta, example: &str) -> Result<Path> {
    let key = key_name(&meta.path);
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!(
            "`{key}` needs a path: write `#[recycle({example})]`"
        )));
    }
    let value = meta.value()?;
    if value.peek(LitStr) {
        let lit: LitStr = value.parse()?;
        return lit.parse();
    }
    if starts_path(value) {
        return value.parse();
    }
    Err(value.error(format!(
        "expected a path after `{key} =`, as in `#[recycle({example})]`"
    )))
}

/// `shrink_to = N`, with `N` an integer literal or a constant expression of
/// type `usize` (`MAX_IDLE`, `64 * 1024`); the compiler checks the type.
fn limit_value(meta: &ParseNestedMeta) -> Result<TokenStream> {
    const EXAMPLE: &str = "`#[recycle(shrink_to = 4096)]`";
    if !meta.input.peek(Token![=]) {
        return Err(meta.error(format!(
            "`shrink_to` needs the largest capacity to keep, as in {EXAMPLE}"
        )));
    }
    let value = meta.value()?;
    let expected = |span| {
        Error::new(
            span,
            format!(
                "expected the largest capacity to keep, an integer or a `usize` constant, \
                 as in {EXAMPLE}"
            ),
        )
    };
    let expr: Expr = value.parse().map_err(|error| expected(error.span()))?;
    match &expr {
        Expr::Lit(ExprLit {
            lit: Lit::Int(lit), ..
        }) => {
            if !matches!(lit.suffix(), "" | "usize") {
                return Err(Error::new_spanned(
                    lit,
                    format!("`shrink_to` takes a `usize`, not a `{}`", lit.suffix()),
                ));
            }
            if lit.base10_parse::<usize>().is_err() {
                return Err(not_a_capacity(&expr));
            }
        }
        Expr::Lit(other) => return Err(expected(other.span())),
        Expr::Unary(ExprUnary {
            op: UnOp::Neg(_), ..
        }) => return Err(not_a_capacity(&expr)),
        _ => {}
    }
    Ok(expr.to_token_stream())
}

fn not_a_capacity(expr: &Expr) -> Error {
    let text = expr.to_token_stream().to_string().replace(' ', "");
    Error::new_spanned(
        expr,
        format!("`shrink_to` takes a capacity, a `usize`, and `{text}` is not one"),
    )
}

/// ` (did you mean `skip`?)` for a key within two edits of a known one.
fn did_you_mean(path: &Path, known: &[&str]) -> String {
    let name = key_name(path);
    known
        .iter()
        .map(|candidate| (edit_distance(&name, candidate), candidate))
        .filter(|(distance, _)| *distance <= 2)
        .min()
        .map(|(_, candidate)| format!(" (did you mean `{candidate}`?)"))
        .unwrap_or_default()
}

/// Levenshtein distance, for the short keys of this attribute.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitute = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substitute.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

fn starts_path(input: ParseStream) -> bool {
    input.peek(Token![::]) || input.peek(Ident::peek_any)
}
