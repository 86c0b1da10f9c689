//! `lab hops`'s tables in Markdown.

use std::io::{self, Write};

use super::cell;
use crate::report::HopsSummary;

pub fn markdown(s: &HopsSummary, out: &mut dyn Write) -> io::Result<()> {
    if let Some(saturation) = &s.saturation {
        writeln!(out, "**Inconclusive for the hop**: {saturation}\n")?;
    }
    writeln!(
        out,
        "| topology | traced | requests | errors | req/s | mean ms | p50 ms | p95 ms | p99 ms | max ms |"
    )?;
    writeln!(out, "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")?;
    for t in &s.topologies {
        writeln!(
            out,
            "| {} | {} | {} | {} | {:.0} | {} | {} | {} | {} | {} |",
            t.topology,
            if t.traced { "yes" } else { "no" },
            t.requests,
            t.errors,
            t.rps,
            cell(t.mean_ms, 2),
            cell(t.p50_ms, 2),
            cell(t.p95_ms, 2),
            cell(t.p99_ms, 2),
            cell(t.max_ms, 2)
        )?;
    }
    if !s.tax.is_empty() {
        writeln!(out, "\n| hop tax at | monolith ms | services ms | tax ms |")?;
        writeln!(out, "|---|--:|--:|--:|")?;
        for t in &s.tax {
            writeln!(
                out,
                "| {} | {} | {} | {} |",
                t.at,
                cell(t.monolith_ms, 2),
                cell(t.services_ms, 2),
                cell(t.tax_ms, 2)
            )?;
        }
    }
    if !s.breakdown.is_empty() {
        writeln!(
            out,
            "\n| hop (medians) | calls traced | connect ms | request ms | handler ms | response ms | call ms |"
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
    for topology in ["monolith", "services"] {
        if let Some((p50, p99)) = overhead(topology) {
            writeln!(
                out,
                "\nTracing's cost ({topology}, traced − untraced): p50 {p50:+.2} ms, p99 {p99:+.2} ms."
            )?;
        }
    }
    Ok(())
}
