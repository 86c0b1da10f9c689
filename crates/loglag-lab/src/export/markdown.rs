use std::io::{self, Write};

use super::{cell, Exporter};
use crate::report::Summary;

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
            "| condition | sink | p50 ms | p99 ms | max ms | errors | timeouts | gen µs | log call µs | max backlog KiB | drain s | rps API | rps logs read | CPU cores | dropped | verified |"
        )?;
        writeln!(
            out,
            "|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:-:|"
        )?;
        for p in &s.pairs {
            writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.2} | {:.2} | {:.2} | {} | {} | {} |",
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
                if p.verified { "yes" } else { "NO" },
            )?;
        }
        Ok(())
    }
}
