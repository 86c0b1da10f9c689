//! `lab hops`'s tables in Markdown.

use std::io::{self, Write};

use super::cell;
use super::pairs::{column, markdown_table, Column};
use crate::report::{HopsSummary, TaxRow, TopologySummary, Waterfall};

/// One row per topology run: the latency table of Markdown and HTML alike.
pub(crate) const TOPOLOGY_COLUMNS: &[Column<TopologySummary>] = &[
    column!("topology", "topology", text, |t| t.topology.clone()),
    column!("traced", "traced", text, |t| if t.traced {
        "yes"
    } else {
        "no"
    }
    .to_owned()),
    column!("requests", "requests", int, |t| t.requests.to_string()),
    column!("errors", "errors", int, |t| t.errors.to_string()),
    column!("req/s", "rps", float(0, 2), |t| Some(t.rps)),
    column!("mean ms", "mean_ms", float(2, 4), |t| t.mean_ms),
    column!("p50 ms", "p50_ms", float(2, 4), |t| t.p50_ms),
    column!("p95 ms", "p95_ms", float(2, 4), |t| t.p95_ms),
    column!("p99 ms", "p99_ms", float(2, 4), |t| t.p99_ms),
    column!("max ms", "max_ms", float(2, 4), |t| t.max_ms),
];

/// The hop tax at each statistic, with its interval.
pub(crate) const TAX_COLUMNS: &[Column<TaxRow>] = &[
    column!("hop tax at", "at", text, |t| t.at.clone()),
    column!("monolith ms", "monolith_ms", float(2, 4), |t| t.monolith_ms),
    column!("services ms", "services_ms", float(2, 4), |t| t.services_ms),
    column!("tax ms", "tax_ms", float(2, 4), |t| t.tax_ms),
    column!("95% interval ms", "tax_ci_ms", int, |t| interval(
        t.tax_ci_ms
    )),
];

/// What each run measured of the machine around it (results that have it).
const INTERFERENCE_COLUMNS: &[Column<TopologySummary>] = &[
    column!("offered req/s", "offered_rps", float(0, 2), |t| t
        .offered_rps),
    column!("CPU wait ms", "cpu_wait_ms", float(0, 3), |t| t
        .interference
        .as_ref()
        .and_then(|i| i.wait_ms())),
    column!("machine busy %", "machine_busy_pct", float(0, 2), |t| t
        .interference
        .as_ref()
        .and_then(|i| i.machine_busy)
        .map(|b| b * 100.0)),
    column!("send late p99 ms", "send_late_p99_ms", float(2, 4), |t| t
        .interference
        .as_ref()
        .and_then(|i| i.send_lateness.as_ref())
        .map(|l| l.p99_us / 1e3)),
];

/// Whether a tax row holds (results whose rows were judged).
const VERDICT_COLUMN: &[Column<TaxRow>] =
    &[column!("verdict", "verdict", text, |t| { verdict_cell(t) })];

/// A column again, to put together a table from two lists.
fn copied<T>(c: &Column<T>) -> Column<T> {
    Column {
        title: c.title,
        key: c.key,
        text: c.text,
        csv_only: c.csv_only,
        shown: c.shown,
        exact: c.exact,
    }
}

/// The topology table's columns: with what each run measured of the machine when
/// the summary has it (results written before do not).
pub(crate) fn topology_columns(s: &HopsSummary) -> Vec<Column<TopologySummary>> {
    let measured = s.topologies.iter().any(|t| t.interference.is_some());
    TOPOLOGY_COLUMNS
        .iter()
        .chain(
            measured
                .then_some(INTERFERENCE_COLUMNS)
                .into_iter()
                .flatten(),
        )
        .map(copied)
        .collect()
}

/// The tax table's columns: with the verdict when the rows were judged.
pub(crate) fn tax_columns(s: &HopsSummary) -> Vec<Column<TaxRow>> {
    let judged = s.tax.iter().any(|t| t.verdict.is_some());
    TAX_COLUMNS
        .iter()
        .chain(judged.then_some(VERDICT_COLUMN).into_iter().flatten())
        .map(copied)
        .collect()
}

/// `holds`, `holds (what to know)` or `inconclusive: why`.
pub fn verdict_cell(t: &TaxRow) -> String {
    match &t.verdict {
        None => String::new(),
        Some(v) if v.holds => match &v.note {
            Some(note) => format!("holds ({note})"),
            None => "holds".to_owned(),
        },
        Some(v) => format!(
            "inconclusive: {}",
            v.inconclusive.as_deref().unwrap_or("no reason recorded")
        ),
    }
}

/// The hop breakdown's caption: which statistic the parts are.
pub fn breakdown_caption(s: &HopsSummary) -> &'static str {
    if s.breakdown.iter().all(|b| b.median_call) {
        "Each hop's median call (the ceil(n/2)-th shortest traced call), split into its own parts, which add up to its call time."
    } else {
        "The median of each part on its own: the parts need not add up to the median call."
    }
}

/// How much of a waterfall's request no span covers, and where, in words: "1224 ms
/// outside any span: 1223 ms before its first span began (…), 1 ms after its last".
pub fn uncovered_words(w: &Waterfall) -> Option<String> {
    let u = w.uncovered.as_ref()?;
    let f = super::findings::three_figures;
    let mut line = format!("{} ms outside any span", f(u.outside_ms));
    if let (Some(before), Some(after)) = (u.before_ms, u.after_ms) {
        let late = u.send_late_ms.unwrap_or(0.0);
        line += &format!(
            ": {} ms before its first span began ({} ms of it the generator sending late, the rest connecting and queueing before the server accepted and read it), {} ms after its last ended (the response's transfer and read)",
            f(before),
            f(late.min(before)),
            f(after)
        );
    }
    line.push('.');
    Some(line)
}

/// The headline, then the tables and what they need said.
pub fn markdown(s: &HopsSummary, out: &mut dyn Write) -> io::Result<()> {
    let headline = super::headline::hops_headline(s);
    for line in &headline {
        writeln!(out, "{line}")?;
    }
    if !headline.is_empty() {
        writeln!(out)?;
    }
    if let Some(interrupted) = &s.interrupted {
        writeln!(
            out,
            "**Incomplete**: {interrupted}. What finished is reported.\n"
        )?;
    }
    if let Some(saturation) = &s.saturation {
        writeln!(out, "**Inconclusive for the hop**: {saturation}\n")?;
    }
    markdown_table(&topology_columns(s), &s.topologies, out)?;
    if !s.tax.is_empty() {
        writeln!(out)?;
        markdown_table(&tax_columns(s), &s.tax, out)?;
        if let Some(rule) = &s.tax_rule {
            writeln!(out, "\n{rule}")?;
        } else if let Some(line) = tax_noise_line(s) {
            writeln!(out, "\n{line}")?;
        }
    }
    if !s.breakdown.is_empty() {
        let median_call = s.breakdown.iter().all(|b| b.median_call);
        writeln!(
            out,
            "\n| hop ({}) | calls traced | connect ms | request ms | handler ms | response ms | call ms |",
            if median_call { "median call" } else { "medians" }
        )?;
        writeln!(out, "|---|--:|--:|--:|--:|--:|--:|")?;
        for b in &s.breakdown {
            writeln!(
                out,
                "| {} | {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.3} |",
                b.hop,
                b.samples,
                b.connect_ms,
                b.request_ms,
                b.handler_ms,
                b.response_ms,
                b.call_ms
            )?;
        }
        if median_call {
            writeln!(out, "\n{}", breakdown_caption(s))?;
        }
    }
    let uncovered: Vec<String> = s
        .waterfalls
        .iter()
        .filter_map(|w| {
            Some(format!(
                "{} {}, request {} ({} ms): {}",
                w.topology,
                w.which,
                w.request_id,
                super::findings::three_figures(w.latency_ms),
                uncovered_words(w)?
            ))
        })
        .collect();
    if !uncovered.is_empty() {
        writeln!(
            out,
            "\nTime outside any span (the traced request nearest each percentile; its latency runs from its scheduled send):\n"
        )?;
        for line in uncovered {
            writeln!(out, "- {line}")?;
        }
    }
    let overhead = |topology: &str| {
        let on = s
            .topologies
            .iter()
            .find(|t| t.topology == topology && t.traced)?;
        let off = s
            .topologies
            .iter()
            .find(|t| t.topology == topology && !t.traced)?;
        Some((on.p50_ms? - off.p50_ms?, on.p99_ms? - off.p99_ms?))
    };
    if let Some(sweep) = &s.sweep {
        sweep_markdown(sweep, out)?;
    }
    if s.tracing_cost.is_empty() {
        // A summary written before the intervals existed.
        for topology in ["monolith", "services"] {
            if let Some((p50, p99)) = overhead(topology) {
                writeln!(
                    out,
                    "\nTracing's cost ({topology}, traced − untraced): p50 {p50:+.2} ms, p99 {p99:+.2} ms."
                )?;
            }
        }
    }
    for line in tracing_cost_lines(s) {
        writeln!(out, "\n{line}")?;
    }
    Ok(())
}

/// A 95% interval as `[lo, hi]` ms, or nothing.
pub fn interval(ci: Option<(f64, f64)>) -> String {
    ci.map_or_else(String::new, |(lo, hi)| format!("[{lo:+.2}, {hi:+.2}]"))
}

/// What tracing cost each topology, with its intervals, and "inconclusive" where an
/// interval includes zero (the difference is within the runs' noise) or lies below it
/// (a cost cannot be negative: the runs drifted).
pub fn tracing_cost_lines(s: &HopsSummary) -> Vec<String> {
    s.tracing_cost
        .iter()
        .map(|c| {
            format!(
                "Tracing's cost ({}, traced − untraced, 95% bootstrap intervals): p50 {}, p99 {}.",
                c.topology,
                judged_cost(c.p50_ms, c.p50_ci_ms),
                judged_cost(c.p99_ms, c.p99_ci_ms)
            )
        })
        .collect()
}

/// A cost with its interval, and "inconclusive" when the interval includes zero or lies
/// below it.
fn judged_cost(ms: f64, ci: (f64, f64)) -> String {
    let verdict = if ci.0 <= 0.0 && ci.1 >= 0.0 {
        " (inconclusive: within noise)"
    } else if ci.1 < 0.0 {
        // Collecting spans cannot make a request faster: the interval, over requests,
        // does not see the drift between two runs.
        " (inconclusive: tracing cannot make requests faster; the two runs drifted apart)"
    } else {
        ""
    };
    format!("{ms:+.2} ms {}{verdict}", interval(Some(ci)))
}

/// The sweep: one row per offered rate, both topologies and the tax, then the knees.
fn sweep_markdown(sweep: &crate::report::HopsSweep, out: &mut dyn Write) -> io::Result<()> {
    writeln!(
        out,
        "\n**Sweep** (untraced, open loop, {} s per point)\n\n| offered req/s | monolith req/s | p50 ms | p99 ms | services req/s | p50 ms | p99 ms | tax p50 ms | tax p99 ms | machine busy % | send late p99 ms |",
        sweep.duration_s
    )?;
    writeln!(out, "|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")?;
    let mut rates: Vec<f64> = sweep.points.iter().map(|p| p.offered_rps).collect();
    rates.dedup();
    for rate in rates {
        let at = |t: &str| {
            sweep
                .points
                .iter()
                .find(|p| p.offered_rps == rate && p.topology == t)
        };
        let (m, s) = (at("monolith"), at("services"));
        let rps = |p: Option<&crate::report::SweepPoint>| {
            p.map_or(String::new(), |p| format!("{:.0}", p.rps))
        };
        let ms = |v: Option<f64>| cell(v, 2);
        let tax = |f: fn(&crate::report::SweepPoint) -> Option<f64>| {
            cell(m.and_then(f).zip(s.and_then(f)).map(|(m, s)| s - m), 2)
        };
        // The larger of the two runs at the rate: either may move the tax.
        let most = |f: fn(&crate::report::RunInterference) -> Option<f64>| {
            [m, s]
                .into_iter()
                .flatten()
                .filter_map(|p| p.interference.as_ref().and_then(f))
                .reduce(f64::max)
        };
        writeln!(
            out,
            "| {rate:.0} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            rps(m),
            ms(m.and_then(|p| p.p50_ms)),
            ms(m.and_then(|p| p.p99_ms)),
            rps(s),
            ms(s.and_then(|p| p.p50_ms)),
            ms(s.and_then(|p| p.p99_ms)),
            tax(|p| p.p50_ms),
            tax(|p| p.p99_ms),
            cell(most(|i| i.machine_busy.map(|b| b * 100.0)), 0),
            cell(
                most(|i| i.send_lateness.as_ref().map(|l| l.p99_us / 1e3)),
                2
            )
        )?;
    }
    writeln!(out)?;
    for k in &sweep.knees {
        writeln!(out, "- {}", knee_line(k))?;
    }
    if let Some(line) = throughput_lost(sweep) {
        writeln!(out, "- {line}")?;
    }
    Ok(())
}

/// A topology's knee in words, with why it is inconclusive when it is.
pub fn knee_line(k: &crate::report::Knee) -> String {
    match (k.knee_rps, &k.inconclusive) {
        (Some(r), None) => format!(
            "{}: knee at {r:.0} requests/s offered; capacity {:.0} requests/s.",
            k.topology, k.capacity_rps
        ),
        (Some(r), Some(why)) => format!(
            "{}: knee at {r:.0} requests/s offered, inconclusive: {why}; capacity {:.0} requests/s.",
            k.topology, k.capacity_rps
        ),
        (None, _) => format!(
            "{}: kept up at every rate offered (served up to {:.0} requests/s).",
            k.topology, k.capacity_rps
        ),
    }
}

/// What the boundary costs in throughput, in words: only when the sweep found both
/// capacities (a topology that kept up at every rate has shown a lower bound only).
pub fn throughput_lost(sweep: &crate::report::HopsSweep) -> Option<String> {
    let knee = |t: &str| sweep.knees.iter().find(|k| k.topology == t);
    let (m, s) = (knee("monolith")?, knee("services")?);
    Some(match (m.knee_rps, s.knee_rps) {
        (Some(_), Some(_)) if m.capacity_rps > 0.0 => format!(
            "The boundary costs {:.0}% of the throughput: {:.0} requests/s at most in one process, {:.0} as three services.",
            (1.0 - s.capacity_rps / m.capacity_rps) * 100.0,
            m.capacity_rps,
            s.capacity_rps
        ),
        _ => format!(
            "The sweep did not reach every capacity (monolith served up to {:.0}, services {:.0} requests/s): raise --sweep-rates to compare them.",
            m.capacity_rps, s.capacity_rps
        ),
    })
}

/// Which tax figures are within noise (their interval includes zero), in words.
pub fn tax_noise_line(s: &HopsSummary) -> Option<String> {
    let within: Vec<&str> = s
        .tax
        .iter()
        .filter(|t| t.tax_ci_ms.is_some_and(|(lo, hi)| lo <= 0.0 && hi >= 0.0))
        .map(|t| t.at.as_str())
        .collect();
    (!within.is_empty()).then(|| {
        format!(
            "Inconclusive at {}: the interval includes 0, so these runs cannot tell the topologies apart there.",
            within.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cost is stated when its interval lies above zero; within noise or below zero
    /// (impossible for a cost: drift between runs) it is inconclusive.
    #[test]
    fn a_cost_holds_only_above_zero() {
        assert!(!judged_cost(0.3, (0.2, 0.4)).contains("inconclusive"));
        assert!(judged_cost(0.1, (-0.1, 0.3)).contains("within noise"));
        assert!(judged_cost(-0.04, (-0.05, -0.03)).contains("drifted"));
    }
}
