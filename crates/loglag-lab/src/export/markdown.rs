use std::io::{self, Write};

use super::load::{LOAD_COLUMNS, SINK_COLUMNS};
use super::pairs::{markdown_table, markdown_table_of, HEADLINE_KEYS, PAIR_COLUMNS};
use super::{Columns, Exporter};
use crate::report::{LoadSummary, SinkSummary, Summary, TortureSummary};

/// The pairs table in Markdown, units in the headers.
#[derive(Debug, Clone, Copy)]
pub struct Markdown;

impl Exporter<Summary> for Markdown {
    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        lab_tables(s, Columns::All, out)
    }
}

/// What `loglag lab` prints on stdout in Markdown: the headline
/// ([`super::headline`]), then the tables with the `columns` asked.
#[derive(Debug, Clone, Copy, Default)]
pub struct LabStdout {
    pub columns: Columns,
}

impl Exporter<Summary> for LabStdout {
    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        let lines = super::headline::headline(s);
        for line in &lines {
            writeln!(out, "{line}")?;
        }
        if !lines.is_empty() {
            writeln!(out)?;
        }
        lab_tables(s, self.columns, out)
    }
}

/// The findings table's columns the headline speaks of: all but the ratio.
const HEADLINE_FINDING_COLUMNS: [usize; 7] = [0, 1, 2, 3, 4, 6, 7];

/// The pairs table, its notes and warnings, and the findings, with `columns`.
fn lab_tables(s: &Summary, columns: Columns, out: &mut dyn Write) -> io::Result<()> {
    match columns {
        Columns::All => markdown_table(PAIR_COLUMNS, &s.pairs, out)?,
        Columns::Headline => {
            let shown: Vec<_> = HEADLINE_KEYS
                .iter()
                .filter_map(|k| PAIR_COLUMNS.iter().find(|c| c.key == *k))
                .collect();
            markdown_table_of(&shown, &s.pairs, out)?;
        }
    }
    for note in super::pairs::footnotes(s) {
        writeln!(out, "\n{note}")?;
    }
    for p in &s.pairs {
        if let (false, Some(note)) = (p.metrics.verified, &p.verify_note) {
            writeln!(
                out,
                "\n**Not verified** ({} / {}): {note}.",
                p.condition, p.sink
            )?;
        }
    }
    for p in &s.pairs {
        if let Some(note) = &p.missing_ids_note {
            writeln!(
                out,
                "\n**Request ids** ({} / {}): {note}.",
                p.condition, p.sink
            )?;
        }
    }
    for (who, w) in crate::report::lateness_warnings(&s.pairs, s.params.plan.lateness_limit_us) {
        writeln!(out, "\n**Warning** ({who}): {w}.")?;
    }
    for (who, w) in crate::report::saturation_warnings(&s.pairs) {
        writeln!(out, "\n**Saturated** ({who}): {w}.")?;
    }
    if let Some(w) = crate::report::busy_machine_warning(s) {
        writeln!(out, "\n**Busy machine**: {w}.")?;
    }
    if !s.findings.is_empty() {
        use crate::export::findings::{finding_cells, findings_caption, FINDING_COLUMNS};
        writeln!(out, "\n**Findings.** {}\n", findings_caption())?;
        let shown: Vec<usize> = match columns {
            Columns::All => (0..FINDING_COLUMNS.len()).collect(),
            Columns::Headline => HEADLINE_FINDING_COLUMNS.to_vec(),
        };
        let titles: Vec<&str> = shown.iter().map(|&i| FINDING_COLUMNS[i].0).collect();
        let rules: Vec<&str> = shown
            .iter()
            .map(|&i| if FINDING_COLUMNS[i].1 { "--:" } else { "---" })
            .collect();
        writeln!(out, "| {} |", titles.join(" | "))?;
        writeln!(out, "|{}|", rules.join("|"))?;
        for f in &s.findings {
            let cells = finding_cells(f);
            let cells: Vec<&str> = shown.iter().map(|&i| cells[i].as_str()).collect();
            writeln!(out, "| {} |", cells.join(" | "))?;
        }
    }
    Ok(())
}

impl Exporter<LoadSummary> for Markdown {
    fn export(&self, s: &LoadSummary, out: &mut dyn Write) -> io::Result<()> {
        markdown_table(LOAD_COLUMNS, s.with_floor(), out)?;
        for s in s.with_floor() {
            if let Some(w) = &s.lateness_warning {
                writeln!(out, "\n**Warning** ({}): {w}.", s.url)?;
            }
        }
        Ok(())
    }
}

impl Exporter<TortureSummary> for Markdown {
    fn export(&self, t: &TortureSummary, out: &mut dyn Write) -> io::Result<()> {
        let yes = |b: bool| if b { "yes" } else { "NO" };
        if let Some(k) = &t.kill9 {
            writeln!(out, "| kill -9 trials | policy | records returned | present | announced dropped | duplicates | out of order | corrupt | delivered from spool | torn skipped |\n|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|")?;
            writeln!(
                out,
                "| {} | {:?} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                k.trials,
                k.policy,
                k.expected,
                k.recovered,
                k.announced,
                k.duplicates,
                k.out_of_order,
                k.corrupt,
                k.from_spool,
                k.torn
            )?;
        }
        if !t.soak.is_empty() {
            writeln!(out, "| policy | seconds | offered B/s | sink B/s | accepted | written | dropped: queue full | dropped: shutdown | accounted | budget MiB | max RSS growth MiB | call p50 µs | call p99 µs | call max µs |\n|---|--:|--:|--:|--:|--:|--:|--:|:-:|--:|--:|--:|--:|--:|")?;
            for r in &t.soak {
                writeln!(
                    out,
                    "| {} | {:.1} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.0} |",
                    r.policy, r.seconds, r.offered_bytes_per_s, r.sink_bytes_per_s, r.accepted, r.written,
                    r.dropped_queue_full, r.dropped_shutdown, yes(r.accounted),
                    r.budget_bytes as f64 / 1048576.0, r.max_rss_growth_bytes as f64 / 1048576.0,
                    r.call_p50_us, r.call_p99_us, r.call_max_us
                )?;
            }
            if let Some(r) = &t.soak_tracing_appender {
                writeln!(
                    out,
                    "| {} | {:.1} | {} | {} | {} | (not reported) | {} | (not reported) | no figure | (unbounded by bytes: 128,000 lines) | {:.1} | {:.1} | {:.1} | {:.0} |",
                    r.policy, r.seconds, r.offered_bytes_per_s, r.sink_bytes_per_s, r.accepted,
                    r.dropped_queue_full, r.max_rss_growth_bytes as f64 / 1048576.0,
                    r.call_p50_us, r.call_p99_us, r.call_max_us
                )?;
            }
            writeln!(out)?;
        }
        if !t.hung.is_empty() {
            writeln!(out, "A sink whose write never returns: a 64 KiB budget is filled, then each call is timed. Calls: timed / all; dropped: every drop of the run, the fill-up's and what was queued at the shutdown deadline included.\n")?;
            writeln!(out, "| policy (hung sink) | calls timed / all | caller's p99 wait µs | caller's max wait µs | dropped: budget full | dropped: at shutdown | accounted |\n|---|--:|--:|--:|--:|--:|:-:|")?;
            for r in &t.hung {
                writeln!(
                    out,
                    "| {} | {} / {} | {:.1} | {:.1} | {} | {} | {} |",
                    r.policy,
                    r.calls,
                    r.all_calls,
                    r.p99_wait_us,
                    r.max_wait_us,
                    r.dropped_queue_full,
                    r.dropped_shutdown,
                    yes(r.accounted)
                )?;
            }
            writeln!(
                out,
                "| Block | — | — | waits until the sink returns, by definition | 0 | 0 | yes |\n"
            )?;
        }
        if !t.faults.is_empty() {
            writeln!(out, "| sink fault | calls | caller's max wait µs | I/O errors | written | dropped | accounted |\n|---|--:|--:|--:|--:|--:|:-:|")?;
            for r in &t.faults {
                writeln!(
                    out,
                    "| {} | {} | {:.1} | {} | {} | {} | {} |",
                    r.fault,
                    r.calls,
                    r.max_wait_us,
                    r.io_errors,
                    r.written,
                    r.dropped,
                    yes(r.accounted)
                )?;
            }
        }
        Ok(())
    }
}

impl Exporter<SinkSummary> for Markdown {
    fn export(&self, s: &SinkSummary, out: &mut dyn Write) -> io::Result<()> {
        markdown_table(SINK_COLUMNS, [s], out)
    }
}
