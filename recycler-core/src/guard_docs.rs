//! `guard_docs!`: the docs of a pair of items that one macro writes for
//! both guards of a kind, written once.

/// One item of a pair that a macro writes for both guards of a kind (the
/// borrowed guard and its owned twin), with the docs of the guard at hand:
///
/// ```text
/// guard_docs! {$kind
///     /// The borrowed guard's docs, with the examples.
///     owned:
///     /// The owned guard's: a line that links to them.
///     item:
///     impl ... for $guard { ... }
/// }
/// ```
///
/// `$kind` is `borrowed` or `owned`. Each doc example is written once, on
/// the borrowed guard, and runs once; the tests in `tests/` exercise the
/// owned guard's impls.
macro_rules! guard_docs {
    (borrowed $(#[$docs:meta])* owned: $(#[$link:meta])* item: $($item:tt)*) => {
        $(#[$docs])*
        $($item)*
    };
    (owned $(#[$docs:meta])* owned: $(#[$link:meta])* item: $($item:tt)*) => {
        $(#[$link])*
        $($item)*
    };
}

pub(crate) use guard_docs;
