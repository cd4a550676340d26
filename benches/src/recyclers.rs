//! The recycler configurations that W1, W2, W6 and W9 measure, each a row
//! of their tables.

use recycler_core::{Recyclable, Recycler};

/// The recycler configurations measured in W1, W2, W6 and W9, each with
/// the name of its row; the first, `recycler` (the defaults), is the one
/// the tables' ratios are about. A new configuration (a mode, a builder
/// option) is one more line here, and appears in all four workloads, in
/// `compare` and in the criterion suites.
///
/// # Examples
///
/// ```
/// use recycler_benches::{Msg, recyclers};
///
/// let all = recyclers::<Msg>();
/// assert_eq!(all[0].0, "recycler");
/// ```
pub fn recyclers<T: Recyclable + Default + Send + 'static>() -> Vec<(&'static str, Recycler<T>)> {
    let striped = Recycler::builder()
        .striped(0)
        .build()
        .expect("a valid configuration");
    let at_home = Recycler::builder()
        .reset_on_return(false)
        .build()
        .expect("a valid configuration");
    // The idle-bytes cap that the guide suggests for objects whose size
    // varies: what turning it on costs where every object is small.
    let capped = Recycler::builder()
        .max_idle_bytes(8 << 20)
        .build()
        .expect("a valid configuration");
    vec![
        ("recycler", Recycler::new()),
        ("recycler_striped", striped),
        ("recycler_reset_at_home", at_home),
        ("recycler_capped", capped),
    ]
}
