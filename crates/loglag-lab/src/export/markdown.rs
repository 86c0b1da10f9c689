use std::io::{self, Write};

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
        writeln!(
            out,
            "| condition | sink | p50 ms | p99 ms | max ms | errors | timeouts | gen µs | log call µs | max backlog KiB | drain s | rps API | rps logs read | CPU cores | dropped | lost | send late p99 µs | verified |"
        )?;
        writeln!(
            out,
            "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|"
        )?;
        for p in &s.pairs {
            writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {} | {} | {} | {} | {} |",
                p.condition,
                p.sink,
                cell(p.p50_ms, 2),
                cell(p.p99_ms, 2),
                cell(p.max_ms, 2),
                p.http_errors,
                p.timeouts,
                cell(p.gen_us, 0),
                cell(p.log_call_us, 0),
                cell(p.max_backlog_kib, 0),
                p.drain_s,
                p.rps_api,
                p.rps_logs_read,
                cell(p.cpu_cores, 3),
                p.dropped.map_or_else(String::new, |d| d.to_string()),
                p.lost_records.map_or_else(String::new, |d| d.to_string()),
                cell(p.send_lateness.map(|l| l.p99_us), 0),
                if p.verified { "yes" } else { "NO" },
            )?;
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
