//! Output: one table per workload (one column per global allocator for
//! the workloads that run under each), and optionally JSON and an SVG
//! chart.

use std::fmt::Write as _;

use recycler_benches::GlobalAllocator;

use crate::measure::Measured;

/// How a workload's figures read best.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    /// Nanoseconds per operation; lower is better.
    NsPerOp,
    /// Millions of operations per second; higher is better.
    MopsPerSec,
}

impl Unit {
    fn label(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns per op, lower is better",
            Unit::MopsPerSec => "Mops/s, higher is better",
        }
    }

    fn value(self, ns: f64) -> f64 {
        match self {
            Unit::NsPerOp => ns,
            Unit::MopsPerSec => 1e3 / ns,
        }
    }

    pub(crate) fn json_name(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns_per_op",
            Unit::MopsPerSec => "mops_per_sec",
        }
    }

    /// The unit [`json_name`](Self::json_name) names.
    pub(crate) fn from_json_name(name: &str) -> Option<Unit> {
        [Unit::NsPerOp, Unit::MopsPerSec]
            .into_iter()
            .find(|u| u.json_name() == name)
    }
}

/// The result of one workload with one set of parameters, in one process.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Outcome {
    /// `W1`, `W2`, ...
    pub(crate) id: String,
    /// What was measured, with its parameters.
    pub(crate) title: String,
    pub(crate) unit: Unit,
    /// The contender the ratios are about.
    pub(crate) ours: String,
    /// The global allocator of the process that measured it.
    pub(crate) alloc: GlobalAllocator,
    pub(crate) results: Vec<Measured>,
    /// Extra lines (hit ratios, targets).
    pub(crate) notes: Vec<String>,
}

impl Outcome {
    /// An outcome of workload `id` with no notes yet.
    pub(crate) fn new(
        id: &str,
        title: impl Into<String>,
        unit: Unit,
        ours: &str,
        alloc: GlobalAllocator,
        results: Vec<Measured>,
    ) -> Self {
        Self {
            id: id.to_string(),
            title: title.into(),
            unit,
            ours: ours.to_string(),
            alloc,
            results,
            notes: Vec::new(),
        }
    }

    fn ours(&self) -> Option<&Measured> {
        self.results.iter().find(|m| m.name == self.ours)
    }

    /// How many times faster `ours` is than `other` (below 1: slower).
    pub(crate) fn speedup(&self, other: &str) -> Option<f64> {
        let ours = self.ours()?;
        let other = self.results.iter().find(|m| m.name == other)?;
        Some(other.median_ns / ours.median_ns)
    }

    /// The best (lowest) time per item among the samples of `name`.
    pub(crate) fn best(&self, name: &str) -> Option<f64> {
        self.results
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| m.samples_ns.iter().copied().min_by(f64::total_cmp))
    }

    /// The median time per item of the contender `name`, if it ran.
    pub(crate) fn median(&self, name: &str) -> Option<f64> {
        self.results
            .iter()
            .find(|m| m.name == name)
            .map(|m| m.median_ns)
    }

    /// How many times faster the contender `a` is than `b`.
    pub(crate) fn speedup_of(&self, a: &str, b: &str) -> Option<f64> {
        Some(self.median(b)? / self.median(a)?)
    }
}

/// The outcome measured under `alloc` among `group` (the outcomes of one
/// workload with one set of parameters, one per global allocator).
pub(crate) fn column(group: &[Outcome], alloc: GlobalAllocator) -> Option<&Outcome> {
    group.iter().find(|o| o.alloc == alloc)
}

/// Groups `outcomes` by workload and title, keeping the order of first
/// appearance: each group is one table, its members one column each.
pub(crate) fn group_by_title(outcomes: &[Outcome]) -> Vec<Vec<Outcome>> {
    let mut groups: Vec<Vec<Outcome>> = Vec::new();
    for o in outcomes {
        match groups
            .iter_mut()
            .find(|g| g[0].id == o.id && g[0].title == o.title)
        {
            Some(g) => g.push(o.clone()),
            None => groups.push(vec![o.clone()]),
        }
    }
    groups
}

/// The table of one outcome, as printed.
pub(crate) fn table(o: &Outcome) -> String {
    let mut out = String::new();
    let samples = o.results.first().map_or(0, |m| m.samples_ns.len());
    let _ = writeln!(out, "{}  {}", o.id, o.title);
    let _ = writeln!(
        out,
        "    ({}; median of {} samples; Nx faster/slower: {} against the row, medians)",
        o.unit.label(),
        samples,
        o.ours
    );
    let width = o.results.iter().map(|m| m.name.len()).max().unwrap_or(0);
    for m in &o.results {
        let value = o.unit.value(m.median_ns);
        let comparison = if m.name == o.ours {
            String::new()
        } else {
            match o.speedup(&m.name) {
                Some(x) if m.name.starts_with("floor") => {
                    format!("{} at {:.2}x the floor", o.ours, 1.0 / x)
                }
                Some(x) if x >= 1.0 => format!("{} {:.2}x faster", o.ours, x),
                Some(x) => format!("{} {:.2}x slower", o.ours, 1.0 / x),
                None => String::new(),
            }
        };
        let line = format!("    {:<width$}  {:>9.2}   {}", m.name, value, comparison);
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for note in &o.notes {
        let _ = writeln!(out, "    {note}");
    }
    out
}

/// The table of one group of outcomes (see [`group_by_title`]): one column
/// per global allocator, each cell the median (and, with `best`, the best
/// sample) and how many times faster `ours` is than that row in the same
/// process; then each column's notes, then `notes` (about the whole group).
pub(crate) fn matrix(group: &[Outcome], notes: &[String], best: bool) -> String {
    let mut out = String::new();
    let Some(first) = group.first() else {
        return out;
    };
    let samples = first.results.first().map_or(0, |m| m.samples_ns.len());
    let _ = writeln!(out, "{}  {}", first.id, first.title);
    let _ = writeln!(
        out,
        "    ({}; median{} of {samples} samples; one process per global allocator;",
        first.unit.label(),
        if best { " and best" } else { "" },
    );
    let _ = writeln!(
        out,
        "     Nx = the row's median time / {}'s, same process: above 1 {} is faster, below 1 slower)",
        first.ours, first.ours
    );
    // Rows: every contender of any column, in order of first appearance.
    let mut rows: Vec<&str> = Vec::new();
    for o in group {
        for m in &o.results {
            if !rows.contains(&m.name.as_str()) {
                rows.push(&m.name);
            }
        }
    }
    let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    // A cell: the median (9), the best (9) if shown, the ratio (8).
    let cell_width = if best { 26 } else { 18 };
    let mut header = format!("    {:<width$}", "");
    for o in group {
        let _ = write!(
            header,
            "  {:>9}{:<w$}",
            o.alloc.name(),
            "",
            w = cell_width - 9
        );
    }
    let _ = writeln!(out, "{}", header.trim_end());
    if best {
        let mut sub = format!("    {:<width$}", "");
        for _ in group {
            let _ = write!(
                sub,
                "  {:<cell_width$}",
                format!("{:>9}{:>9}{:>8}", "median", "best", "ratio")
            );
        }
        let _ = writeln!(out, "{}", sub.trim_end());
    }
    for row in &rows {
        let mut line = format!("    {row:<width$}");
        for o in group {
            let cell = match o.results.iter().find(|m| m.name == *row) {
                None => format!("{:>9}", "-"),
                Some(m) => {
                    let mut cell = format!("{:>9.2}", o.unit.value(m.median_ns));
                    if best {
                        let b = o.best(&m.name).map_or(f64::NAN, |ns| o.unit.value(ns));
                        let _ = write!(cell, "{b:>9.2}");
                    }
                    if m.name != o.ours {
                        let x = o
                            .speedup(&m.name)
                            .map_or_else(String::new, |x| format!("{x:.2}x"));
                        let _ = write!(cell, " {x:>7}");
                    }
                    cell
                }
            };
            let _ = write!(line, "  {cell:<cell_width$}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for o in group {
        for note in &o.notes {
            let _ = writeln!(out, "    {}: {note}", o.alloc);
        }
    }
    for note in notes {
        let _ = writeln!(out, "    {note}");
    }
    out
}

/// Escapes a string for JSON.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_num(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.4}")
    } else {
        "null".to_string()
    }
}

/// All outcomes as JSON, for machines.
pub(crate) fn json(outcomes: &[Outcome], machine: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{{\n  \"machine\": {},\n  \"workloads\": [",
        json_str(machine)
    );
    for (i, o) in outcomes.iter().enumerate() {
        let _ = writeln!(out, "    {{");
        let _ = writeln!(out, "      \"id\": {},", json_str(&o.id));
        let _ = writeln!(out, "      \"title\": {},", json_str(&o.title));
        let _ = writeln!(out, "      \"unit\": {},", json_str(o.unit.json_name()));
        let _ = writeln!(out, "      \"ours\": {},", json_str(&o.ours));
        let _ = writeln!(
            out,
            "      \"global_allocator\": {},",
            json_str(o.alloc.name())
        );
        let notes: Vec<String> = o.notes.iter().map(|n| json_str(n)).collect();
        let _ = writeln!(out, "      \"notes\": [{}],", notes.join(", "));
        let _ = writeln!(out, "      \"results\": [");
        for (j, m) in o.results.iter().enumerate() {
            let samples: Vec<String> = m.samples_ns.iter().map(|&s| json_num(s)).collect();
            let speedup = o.speedup(&m.name).map_or("null".to_string(), json_num);
            let _ = writeln!(
                out,
                "        {{\"name\": {}, \"median_ns_per_op\": {}, \"median\": {}, \"ours_speedup\": {}, \"samples_ns_per_op\": [{}]}}{}",
                json_str(&m.name),
                json_num(m.median_ns),
                json_num(o.unit.value(m.median_ns)),
                speedup,
                samples.join(", "),
                if j + 1 < o.results.len() { "," } else { "" }
            );
        }
        let _ = writeln!(out, "      ]");
        let _ = writeln!(
            out,
            "    }}{}",
            if i + 1 < outcomes.len() { "," } else { "" }
        );
    }
    let _ = writeln!(out, "  ]\n}}");
    out
}

/// Escapes text for SVG.
fn xml(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A horizontal bar chart: one block per outcome, one bar per contender,
/// length proportional to speed (operations per second) relative to the
/// fastest contender of that outcome. Plain SVG, no dependencies.
pub(crate) fn svg(outcomes: &[Outcome], machine: &str) -> String {
    const LEFT: f64 = 230.0;
    const BAR_MAX: f64 = 420.0;
    const ROW: f64 = 20.0;
    const WIDTH: f64 = 760.0;
    let rows: usize = outcomes.iter().map(|o| o.results.len() + 2).sum();
    let height = 60.0 + rows as f64 * ROW;
    let mut out = String::new();
    let _ = writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        out,
        r#"<text x="10" y="20" font-size="14" font-weight="bold">recycler vs baselines: speed relative to the fastest (longer is faster)</text>"#
    );
    let _ = writeln!(
        out,
        r##"<text x="10" y="38" fill="#555">{}</text>"##,
        xml(machine)
    );
    let mut y = 60.0;
    for o in outcomes {
        let _ = writeln!(
            out,
            r#"<text x="10" y="{:.0}" font-weight="bold">{} {} [{}]</text>"#,
            y + 14.0,
            o.id,
            xml(&o.title),
            o.alloc
        );
        y += ROW;
        let fastest = o
            .results
            .iter()
            .map(|m| m.median_ns)
            .fold(f64::INFINITY, f64::min);
        for m in &o.results {
            let rel = fastest / m.median_ns;
            let len = (rel * BAR_MAX).max(1.0);
            let color = if m.name == o.ours {
                "#d9534f"
            } else {
                "#5b7fb0"
            };
            let _ = writeln!(
                out,
                r#"<text x="{:.0}" y="{:.0}" text-anchor="end">{}</text>"#,
                LEFT - 8.0,
                y + 14.0,
                xml(&m.name)
            );
            let _ = writeln!(
                out,
                r#"<rect x="{LEFT}" y="{:.0}" width="{len:.1}" height="{:.0}" fill="{color}"/>"#,
                y + 3.0,
                ROW - 6.0
            );
            let value = o.unit.value(m.median_ns);
            let unit = match o.unit {
                Unit::NsPerOp => "ns/op",
                Unit::MopsPerSec => "Mops/s",
            };
            let _ = writeln!(
                out,
                r#"<text x="{:.1}" y="{:.0}">{value:.2} {unit}</text>"#,
                LEFT + len + 6.0,
                y + 14.0
            );
            y += ROW;
        }
        y += ROW;
    }
    let _ = writeln!(out, "</svg>");
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn m(name: &str, ns: f64) -> Measured {
        Measured {
            name: name.to_string(),
            samples_ns: vec![ns],
            median_ns: ns,
        }
    }

    pub(crate) fn outcome() -> Outcome {
        let mut o = Outcome::new(
            "W1",
            "get + release \"quoted\"",
            Unit::NsPerOp,
            "recycler",
            GlobalAllocator::Jemalloc,
            vec![
                m("recycler", 2.0),
                m("box", 6.0),
                m("slowbox", 1.0),
                m("floor_x", 1.6),
            ],
        );
        o.notes.push("a note".into());
        o
    }

    #[test]
    fn matrix_has_a_column_per_allocator() {
        let a = outcome();
        let mut b = outcome();
        b.alloc = GlobalAllocator::System;
        b.results = vec![m("recycler", 4.0), m("box", 2.0)];
        b.notes = vec!["hits".into()];
        let groups = group_by_title(&[a.clone(), b.clone()]);
        assert_eq!(groups.len(), 1);
        assert_eq!(column(&groups[0], GlobalAllocator::System), Some(&b));
        let t = matrix(&groups[0], &["overall".to_string()], false);
        assert!(t.contains("jemalloc") && t.contains("system"), "{t}");
        let box_row = t
            .lines()
            .find(|l| l.trim_start().starts_with("box"))
            .unwrap();
        assert!(
            box_row.contains("3.00x") && box_row.contains("0.50x"),
            "{t}"
        );
        let slow_row = t.lines().find(|l| l.contains("slowbox")).unwrap();
        assert!(slow_row.trim_end().ends_with('-'), "{t}");
        assert!(
            t.contains("system: hits") && t.contains("jemalloc: a note"),
            "{t}"
        );
        assert!(t.trim_end().ends_with("overall"), "{t}");
        let t = matrix(&groups[0], &[], true);
        assert!(t.contains("median     best   ratio"), "{t}");
        let box_row = t
            .lines()
            .find(|l| l.trim_start().starts_with("box"))
            .unwrap();
        // jemalloc: median 6 ns = best 6 ns; ratio 3.00x.
        assert!(box_row.contains("6.00     6.00   3.00x"), "{box_row}");
    }

    #[test]
    fn ratios_and_table() {
        let o = outcome();
        assert_eq!(o.speedup("box"), Some(3.0));
        let t = table(&o);
        assert!(t.contains("recycler 3.00x faster"), "{t}");
        assert!(t.contains("recycler 2.00x slower"), "{t}");
        assert!(t.contains("recycler at 1.25x the floor"), "{t}");
        assert!(t.contains("a note"));
    }

    #[test]
    fn json_and_svg_are_well_formed_enough() {
        let o = outcome();
        let j = json(std::slice::from_ref(&o), "machine \"x\"");
        assert!(j.contains(r#""title": "get + release \"quoted\"""#), "{j}");
        assert!(j.contains(r#""ours_speedup": 3.0000"#), "{j}");
        assert_eq!(j.matches('{').count(), j.matches('}').count());
        assert!(j.contains(r#""global_allocator": "jemalloc""#), "{j}");
        let s = svg(&[o], "m & <m>");
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("m &amp; &lt;m&gt;"));
    }
}
