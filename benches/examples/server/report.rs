//! The tables: per variant, one row per allocator and mode, each figure the
//! median over the runs (throughput and CPU time with their range), and
//! throughput relative to `fresh` under the same allocator in the same run.

use std::fmt::Write as _;

use recycler_benches::GlobalAllocator;

use crate::child::Outcome;
use crate::serve::Mode;

/// One child's outcome, and what it ran.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    /// The index of the variant.
    pub(crate) variant: usize,
    /// The global allocator.
    pub(crate) alloc: GlobalAllocator,
    /// The mode.
    pub(crate) mode: Mode,
    /// Which run (0-based).
    pub(crate) run: usize,
    /// What it measured.
    pub(crate) outcome: Outcome,
}

/// The median of `v` (the mean of the middle two if even); NaN if empty.
fn median(v: &mut [f64]) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `median (min–max)`, each written by `f`; just the median for one run.
fn spread(mut v: Vec<f64>, f: impl Fn(f64) -> String) -> String {
    let m = median(&mut v);
    match (v.first(), v.last()) {
        (Some(&lo), Some(&hi)) if v.len() > 1 => format!("{} ({}–{})", f(m), f(lo), f(hi)),
        _ => f(m),
    }
}

/// Requests per second, in thousands.
fn kilo(x: f64) -> String {
    format!("{:.1}k", x / 1e3)
}

/// Three significant digits or so.
fn short(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}")
    } else if x >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

/// The table of variant `variant`, titled `title`, from `samples`.
pub(crate) fn table(
    title: &str,
    variant: usize,
    samples: &[Sample],
    allocs: &[GlobalAllocator],
    modes: &[Mode],
) -> String {
    let header = [
        "allocator",
        "mode",
        "requests/s",
        "× fresh",
        "p50 µs",
        "p99 µs",
        "peak RSS MiB",
        "CPU µs/req",
        "user µs/req",
        "allocs/req",
        "pool hits",
    ];
    let mut rows: Vec<[String; 11]> = Vec::new();
    for &alloc in allocs {
        for &mode in modes {
            let of = |m: Mode| -> Vec<&Sample> {
                samples
                    .iter()
                    .filter(|s| s.variant == variant && s.alloc == alloc && s.mode == m)
                    .collect()
            };
            let mine = of(mode);
            if mine.is_empty() {
                continue;
            }
            let col = |f: fn(&Outcome) -> f64| -> Vec<f64> {
                mine.iter().map(|s| f(&s.outcome)).collect()
            };
            let mid = |f: fn(&Outcome) -> f64| median(&mut col(f));
            let fresh = of(Mode::Fresh);
            let ratios: Vec<f64> = mine
                .iter()
                .filter_map(|s| {
                    let f = fresh.iter().find(|f| f.run == s.run)?;
                    Some(s.outcome.rps / f.outcome.rps)
                })
                .collect();
            let vs_fresh = if mode == Mode::Fresh || ratios.is_empty() {
                String::new()
            } else {
                spread(ratios, |x| format!("{x:.2}"))
            };
            let hits: Vec<f64> = mine.iter().filter_map(|s| s.outcome.hits).collect();
            let hits = if hits.is_empty() {
                "–".to_owned()
            } else {
                let mut hits = hits;
                format!("{:.2}%", median(&mut hits) * 100.0)
            };
            rows.push([
                alloc.name().to_owned(),
                mode.name().to_owned(),
                spread(col(|o| o.rps), kilo),
                vs_fresh,
                short(mid(|o| o.p50_us)),
                short(mid(|o| o.p99_us)),
                short(mid(|o| o.hwm_mib)),
                spread(col(|o| o.cpu_us), short),
                short(mid(|o| o.user_us)),
                format!("{:.2}", mid(|o| o.allocs)),
                hits,
            ]);
        }
    }
    let mut widths = header.map(|h| h.chars().count());
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = format!("{title}\n");
    let line = |out: &mut String, cells: &[&str]| {
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            let pad = w - cell.chars().count();
            if i < 2 {
                let _ = write!(out, "{cell}{}  ", " ".repeat(pad));
            } else {
                let _ = write!(out, "{}{cell}  ", " ".repeat(pad));
            }
        }
        let trimmed = out.trim_end().len();
        out.truncate(trimmed);
        out.push('\n');
    };
    line(&mut out, &header);
    for row in &rows {
        let cells: Vec<&str> = row.iter().map(String::as_str).collect();
        line(&mut out, &cells);
    }
    out
}
