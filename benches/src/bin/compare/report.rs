//! Output: one table per workload, and optionally JSON and an SVG chart.

use std::fmt::Write as _;

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

    fn json_name(self) -> &'static str {
        match self {
            Unit::NsPerOp => "ns_per_op",
            Unit::MopsPerSec => "mops_per_sec",
        }
    }
}

/// The result of one workload with one set of parameters.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// `W1`, `W2`, ...
    pub(crate) id: &'static str,
    /// What was measured, with its parameters.
    pub(crate) title: String,
    pub(crate) unit: Unit,
    /// The contender the ratios are about.
    pub(crate) ours: &'static str,
    pub(crate) results: Vec<Measured>,
    /// Extra lines (hit ratios, targets).
    pub(crate) notes: Vec<String>,
}

impl Outcome {
    fn ours(&self) -> Option<&Measured> {
        self.results.iter().find(|m| m.name == self.ours)
    }

    /// How many times faster `ours` is than `other` (below 1: slower).
    pub(crate) fn speedup(&self, other: &str) -> Option<f64> {
        let ours = self.ours()?;
        let other = self.results.iter().find(|m| m.name == other)?;
        Some(other.median_ns / ours.median_ns)
    }
}

/// The table of one outcome, as printed.
pub(crate) fn table(o: &Outcome) -> String {
    let mut out = String::new();
    let samples = o.results.first().map_or(0, |m| m.samples_ns.len());
    let _ = writeln!(out, "{}  {}", o.id, o.title);
    let _ = writeln!(
        out,
        "    ({}; median of {} samples)",
        o.unit.label(),
        samples
    );
    let width = o.results.iter().map(|m| m.name.len()).max().unwrap_or(0);
    for m in &o.results {
        let value = o.unit.value(m.median_ns);
        let comparison = if m.name == o.ours {
            String::new()
        } else {
            match o.speedup(m.name) {
                Some(x) if m.name.starts_with("floor") => {
                    format!("{} at {:.2}x the floor", o.ours, 1.0 / x)
                }
                Some(x) if x >= 1.0 => format!("{} {:.2}x faster", o.ours, x),
                Some(x) => format!("{} {:.2}x slower", o.ours, 1.0 / x),
                None => String::new(),
            }
        };
        let _ = writeln!(
            out,
            "    {:<width$}  {:>9.2}   {}",
            m.name, value, comparison
        );
    }
    for note in &o.notes {
        let _ = writeln!(out, "    {note}");
    }
    out
}

/// Escapes a string for JSON.
fn json_str(s: &str) -> String {
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
        let _ = writeln!(out, "      \"id\": {},", json_str(o.id));
        let _ = writeln!(out, "      \"title\": {},", json_str(&o.title));
        let _ = writeln!(out, "      \"unit\": {},", json_str(o.unit.json_name()));
        let _ = writeln!(out, "      \"ours\": {},", json_str(o.ours));
        let notes: Vec<String> = o.notes.iter().map(|n| json_str(n)).collect();
        let _ = writeln!(out, "      \"notes\": [{}],", notes.join(", "));
        let _ = writeln!(out, "      \"results\": [");
        for (j, m) in o.results.iter().enumerate() {
            let samples: Vec<String> = m.samples_ns.iter().map(|&s| json_num(s)).collect();
            let speedup = o.speedup(m.name).map_or("null".to_string(), json_num);
            let _ = writeln!(
                out,
                "        {{\"name\": {}, \"median_ns_per_op\": {}, \"median\": {}, \"ours_speedup\": {}, \"samples_ns_per_op\": [{}]}}{}",
                json_str(m.name),
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
            r#"<text x="10" y="{:.0}" font-weight="bold">{} {}</text>"#,
            y + 14.0,
            o.id,
            xml(&o.title)
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
                xml(m.name)
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
mod tests {
    use super::*;

    fn outcome() -> Outcome {
        let m = |name, ns: f64| Measured {
            name,
            samples_ns: vec![ns],
            median_ns: ns,
        };
        Outcome {
            id: "W1",
            title: "get + release \"quoted\"".into(),
            unit: Unit::NsPerOp,
            ours: "recycler",
            results: vec![
                m("recycler", 2.0),
                m("box", 6.0),
                m("slowbox", 1.0),
                m("floor_x", 1.6),
            ],
            notes: vec!["a note".into()],
        }
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
        let s = svg(&[o], "m & <m>");
        assert!(s.starts_with("<svg") && s.trim_end().ends_with("</svg>"));
        assert!(s.contains("m &amp; &lt;m&gt;"));
    }
}
