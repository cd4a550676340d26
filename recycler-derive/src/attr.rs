//! Parsing of `#[recycle(..)]` attributes into settings, each keeping its key
//! for error spans. Whether the settings make sense together is `valid.rs`'s
//! job.

use proc_macro2::TokenStream;
use quote::ToTokens;
use syn::ext::IdentExt;
use syn::meta::ParseNestedMeta;
use syn::parse::ParseStream;
use syn::spanned::Spanned;
use syn::{
    Attribute, Error, Expr, ExprLit, ExprUnary, Ident, Lit, LitStr, Path, Result, Token, UnOp,
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

/// `#[recycle(..)]` on the struct or enum itself.
#[derive(Default)]
pub(crate) struct ContainerAttrs {
    /// Every `crate = path`; more than one is an error.
    pub(crate) krate: Vec<Setting<Path>>,
}

/// `#[recycle(..)]` on an enum variant.
#[derive(Default)]
pub(crate) struct VariantAttrs {
    /// The key of every `default` marker; more than one is an error.
    pub(crate) default: Vec<Path>,
}

/// `#[recycle(..)]` on a field.
#[derive(Default)]
pub(crate) struct FieldAttrs {
    /// Every rule given; more than one is an error.
    pub(crate) rules: Vec<Setting<FieldRule>>,
}

impl FieldAttrs {
    /// The field's rule, once validation has made sure there is at most one.
    pub(crate) fn rule(&self) -> Option<&FieldRule> {
        self.rules.first().map(|setting| &setting.value)
    }
}

const FIELD_KEYS: &str = "`skip`, `default`, `with = path::to::fn` or `shrink_to = N`";

/// The `#[recycle(..)]` attributes among `attrs`.
fn recycle_attrs(attrs: &[Attribute]) -> impl Iterator<Item = &Attribute> {
    attrs.iter().filter(|attr| attr.path().is_ident("recycle"))
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
                        "unknown attribute `{}` on {}; the only one allowed here is \
                         `#[recycle(crate = path::to::recycler_core)]`{}",
                        key_name(&meta.path),
                        match kind {
                            Container::Struct => "a struct",
                            Container::Enum => "an enum",
                        },
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
    out
}

pub(crate) fn variant(attrs: &[Attribute], errors: &mut Vec<Error>) -> VariantAttrs {
    let mut out = VariantAttrs::default();
    for attr in recycle_attrs(attrs) {
        let parsed = attr.parse_nested_meta(|meta| {
            if meta.path.is_ident("default") {
                no_value(&meta, "default")?;
                out.default.push(meta.path);
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

pub(crate) fn field(attrs: &[Attribute], errors: &mut Vec<Error>) -> FieldAttrs {
    let mut out = FieldAttrs::default();
    for attr in recycle_attrs(attrs) {
        let parsed = attr.parse_nested_meta(|meta| {
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
                return Err(Error::new_spanned(
                    &meta.path,
                    format!(
                        "unknown attribute `{}` on a field{}; expected {FIELD_KEYS}",
                        key_name(&meta.path),
                        did_you_mean(&meta.path, &["skip", "default", "with", "shrink_to"]),
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
