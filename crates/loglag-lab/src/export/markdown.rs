use std::io::{self, Write};

use super::pairs::shown_columns;
use super::{cell, Exporter};
use crate::report::{Lateness, LoadSummary, SinkSummary, Summary};

/// The pairs table in Markdown, units in the headers.
#[derive(Debug, Clone, Copy)]
pub struct Markdown;

impl Exporter for Markdown {
    fn file_name(&self) -> &'static str {
        "pairs.md"
    }

    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        let columns: Vec<_> = shown_columns().collect();
        let titles: Vec<&str> = columns.iter().map(|c| c.title).collect();
        writeln!(out, "| {} |", titles.join(" | "))?;
        let rules: Vec<&str> = columns
            .iter()
            .map(|c| if c.text { "---" } else { "--:" })
            .collect();
        writeln!(out, "|{}|", rules.join("|"))?;
        for p in &s.pairs {
            let cells: Vec<String> = columns.iter().map(|c| (c.shown)(p)).collect();
            writeln!(out, "| {} |", cells.join(" | "))?;
        }
        for p in &s.pairs {
            if let (false, Some(note)) = (p.verified, &p.verify_note) {
                writeln!(
                    out,
                    "\n**Not verified** ({} / {}): {note}.",
                    p.condition, p.sink
                )?;
            }
        }
        for p in &s.pairs {
            if let Some(w) = &p.lateness_warning {
                writeln!(out, "\n**Warning** ({} / {}): {w}.", p.condition, p.sink)?;
            }
        }
        Ok(())
    }

    fn export_load(&self, s: &LoadSummary, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "| target | requests | ok | errors | timeouts | rps | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | send late mean µs | send late p99 µs | send late max µs |")?;
        writeln!(
            out,
            "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
        )?;
        for s in s.floor.as_deref().into_iter().chain(std::iter::once(s)) {
            let late = |f: fn(&Lateness) -> f64| cell(s.send_lateness.as_ref().map(f), 0);
            writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {} |",
                s.url,
                s.requests,
                s.ok,
                s.http_errors + s.io_errors,
                s.timeouts,
                s.achieved_rps,
                cell(s.p50_ms, 3),
                cell(s.p90_ms, 3),
                cell(s.p99_ms, 3),
                cell(s.p999_ms, 3),
                cell(s.max_ms, 3),
                late(|l| l.mean_us),
                late(|l| l.p99_us),
                late(|l| l.max_us),
            )?;
        }
        for s in s.floor.as_deref().into_iter().chain(std::iter::once(s)) {
            if let Some(w) = &s.lateness_warning {
                writeln!(out, "\n**Warning** ({}): {w}.", s.url)?;
            }
        }
        Ok(())
    }

    fn export_sink(&self, s: &SinkSummary, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "| source | bytes | newlines | reads | seconds | last byte s | sha256 |\n|---|--:|--:|--:|--:|--:|---|")?;
        writeln!(
            out,
            "| {} | {} | {} | {} | {:.3} | {} | {} |",
            s.source,
            s.bytes,
            s.newlines,
            s.reads,
            s.seconds,
            cell(s.last_byte_s, 3),
            s.sha256
        )
    }
}
