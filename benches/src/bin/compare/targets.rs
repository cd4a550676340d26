//! Target lines: each says MET or MISSED, what the target is and the
//! figure measured, so that a reader can act on it without working out a
//! ratio; and the list of all of them at the end of a run.

/// How a target line starts when the figure meets the target.
pub(crate) const MET: &str = "MET";
/// How a target line starts when it does not.
pub(crate) const MISSED: &str = "MISSED";
/// How a target line starts when a figure is missing (a contender that did
/// not run, a NaN).
pub(crate) const UNKNOWN: &str = "N/A";

/// Whether a measured figure meets its target.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Check {
    /// At least the bound (a speed-up, a throughput).
    AtLeast(f64),
    /// At most the bound (a time ratio, a cost).
    AtMost(f64),
}

impl Check {
    /// `Some(met)`, or `None` if `now` is not a number.
    fn met(self, now: f64) -> Option<bool> {
        if now.is_nan() {
            return None;
        }
        Some(match self {
            Check::AtLeast(bound) => now >= bound,
            Check::AtMost(bound) => now <= bound,
        })
    }
}

/// A target line: `MET     target: <what>; now <figure>`, the mark padded
/// so that the lines align. `now` is the figure, `shown` how to print it.
pub(crate) fn line(what: &str, check: Check, now: f64, shown: &str) -> String {
    let mark = match check.met(now) {
        Some(true) => MET,
        Some(false) => MISSED,
        None => UNKNOWN,
    };
    format!("{mark:<6} target: {what}; now {shown}")
}

/// A target on a speed-up: `now` is a ratio, printed as `1.23x`.
pub(crate) fn ratio(what: &str, check: Check, now: Option<f64>) -> String {
    let now = now.unwrap_or(f64::NAN);
    line(what, check, now, &format!("{now:.2}x"))
}

/// Whether `note` is a target line, and whether it was met.
pub(crate) fn parse(note: &str) -> Option<Option<bool>> {
    let mark = note.split_whitespace().next()?;
    match mark {
        MET => Some(Some(true)),
        MISSED => Some(Some(false)),
        UNKNOWN if note.contains(" target: ") => Some(None),
        _ => None,
    }
}

/// The closing list: how many targets were met and missed, then every
/// target line (`where` says which table and column each comes from).
pub(crate) fn summary(lines: &[(String, String)]) -> String {
    let count = |want: Option<bool>| lines.iter().filter(|(_, l)| parse(l) == Some(want)).count();
    let mut out = format!(
        "targets: {} met, {} missed{}\n",
        count(Some(true)),
        count(Some(false)),
        match count(None) {
            0 => String::new(),
            n => format!(", {n} without a figure"),
        }
    );
    for (place, l) in lines {
        out.push_str(&format!("    {place:<12} {l}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_say_met_or_missed() {
        let met = ratio("recycler >= 2x box", Check::AtLeast(2.0), Some(2.5));
        assert_eq!(met, "MET    target: recycler >= 2x box; now 2.50x");
        let missed = line("x <= 3%", Check::AtMost(3.0), 4.0, "4.0%");
        assert!(missed.starts_with("MISSED target: x <= 3%"), "{missed}");
        let unknown = ratio("y", Check::AtLeast(1.0), None);
        assert!(unknown.starts_with("N/A"), "{unknown}");
        assert_eq!(parse(&met), Some(Some(true)));
        assert_eq!(parse(&missed), Some(Some(false)));
        assert_eq!(parse(&unknown), Some(None));
        assert_eq!(parse("recycler hit ratio 99%"), None);
        let s = summary(&[
            ("W1".into(), met),
            ("W4".into(), missed),
            ("W2".into(), unknown),
        ]);
        assert!(
            s.starts_with("targets: 1 met, 1 missed, 1 without a figure"),
            "{s}"
        );
        assert!(s.contains("W4           MISSED"), "{s}");
    }
}
