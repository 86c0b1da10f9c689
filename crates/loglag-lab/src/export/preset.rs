//! A preset's table: the columns its reference article reported, in Markdown (and as
//! JSON through [`super::Json`]).

use std::io::{self, Write};

use super::cell;
use crate::report::{PresetRow, PresetSummary};

/// One column: title, right-aligned, value.
type Column = (&'static str, bool, fn(&PresetRow) -> String);

fn f(v: Option<f64>, digits: usize) -> String {
    cell(v, digits)
}

fn lost(r: &PresetRow) -> String {
    let lost = r
        .pair
        .metrics
        .lost_records
        .map_or_else(String::new, |v| v.to_string());
    match r.pair.metrics.duplicate_records {
        Some(d) if d > 0 => format!("{lost} ({d} twice)"),
        _ => lost,
    }
}

fn order(r: &PresetRow) -> String {
    match (
        r.pair.metrics.process.out_of_order,
        r.pair.metrics.process.error_lines,
    ) {
        (Some(0), Some(0)) => "in order".into(),
        (Some(0), Some(e)) => format!("in order, {e} ERROR"),
        (Some(n), _) => format!("{n} out of order"),
        _ => String::new(),
    }
}

fn errors(r: &PresetRow) -> String {
    (r.pair.metrics.http_errors + r.pair.metrics.timeouts).to_string()
}

/// A row's p99 interval, `lo–hi` ms.
fn p99_interval(r: &PresetRow) -> String {
    r.pair
        .p99_ms_interval
        .map_or_else(String::new, |(lo, hi)| format!("{lo:.2}–{hi:.2}"))
}

const BUFFERS: &[Column] = &[
    ("stop", false, |r| r.stop_signal.clone()),
    ("condition", false, |r| r.pair.condition.clone()),
    ("mean ms", true, |r| f(r.pair.metrics.mean_ms, 2)),
    ("p50 ms", true, |r| f(r.pair.metrics.p50_ms, 2)),
    ("p99 ms", true, |r| f(r.pair.metrics.p99_ms, 2)),
    ("p99 95% interval", true, p99_interval),
    ("req/s", true, |r| format!("{:.0}", r.pair.metrics.rps_api)),
    ("log writes/min", true, |r| {
        f(r.pair.metrics.process.log_writes_per_min, 0)
    }),
    ("syscw/min", true, |r| {
        f(r.pair.metrics.process.syscw_per_min, 0)
    }),
    ("log MiB", true, |r| {
        format!("{:.1}", r.log_bytes as f64 / 1048576.0)
    }),
    ("CPU cores", true, |r| f(r.pair.metrics.cpu_cores, 2)),
    ("dropped", true, |r| {
        r.pair
            .metrics
            .dropped
            .map_or_else(String::new, |d| d.to_string())
    }),
    ("lost at stop", true, lost),
    ("order", false, order),
    ("errors", true, errors),
];

const BLOCKING: &[Column] = &[
    ("clients", true, |r| {
        r.closed.map_or_else(String::new, |n| n.to_string())
    }),
    ("condition", false, |r| r.pair.condition.clone()),
    ("sink", false, |r| r.pair.sink.clone()),
    ("req/s", true, |r| format!("{:.0}", r.pair.metrics.rps_api)),
    ("p50 ms", true, |r| f(r.pair.metrics.p50_ms, 2)),
    ("p99 ms", true, |r| f(r.pair.metrics.p99_ms, 2)),
    ("p99 95% interval", true, p99_interval),
    ("CPU cores", true, |r| f(r.pair.metrics.cpu_cores, 2)),
    ("ctx vol/s", true, |r| {
        f(r.pair.metrics.process.ctx_voluntary_per_s, 0)
    }),
    ("ctx invol/s", true, |r| {
        f(r.pair.metrics.process.ctx_involuntary_per_s, 0)
    }),
    ("log writes/s", true, |r| {
        f(
            r.pair.metrics.process.log_writes_per_min.map(|w| w / 60.0),
            0,
        )
    }),
    ("lost", true, lost),
    ("errors", true, errors),
];

const SWEEP: &[Column] = &[
    ("batch KiB", true, |r| {
        r.batch_bytes
            .map_or_else(String::new, |b| (b >> 10).to_string())
    }),
    ("interval ms", true, |r| {
        r.flush_interval_ms
            .map_or_else(String::new, |i| i.to_string())
    }),
    ("p50 ms", true, |r| f(r.pair.metrics.p50_ms, 2)),
    ("p99 ms", true, |r| f(r.pair.metrics.p99_ms, 2)),
    ("p99 95% interval", true, p99_interval),
    ("log writes/s", true, |r| {
        f(
            r.pair.metrics.process.log_writes_per_min.map(|w| w / 60.0),
            1,
        )
    }),
    ("syscw/s", true, |r| {
        f(r.pair.metrics.process.syscw_per_min.map(|w| w / 60.0), 0)
    }),
    ("RSS peak MiB", true, |r| {
        f(
            r.pair
                .metrics
                .process
                .rss_peak_kib
                .map(|k| k as f64 / 1024.0),
            1,
        )
    }),
    ("oldest queued ms", true, |r| {
        f(r.pair.metrics.process.oldest_queued_ms, 0)
    }),
    ("lost", true, lost),
];

pub(super) fn columns(preset: &str) -> &'static [Column] {
    match preset {
        "buffers" => BUFFERS,
        "blocking" => BLOCKING,
        _ => SWEEP,
    }
}

/// The table's titles (with whether each is a number) and its cells, for HTML.
pub fn table(s: &PresetSummary) -> (Vec<(&'static str, bool)>, Vec<Vec<String>>) {
    let cols = columns(&s.preset);
    (
        cols.iter().map(|c| (c.0, c.1)).collect(),
        s.rows
            .iter()
            .map(|r| cols.iter().map(|c| shown(c, r)).collect())
            .collect(),
    )
}

/// A cell as a reader is shown it: [`NOT_APPLICABLE`](super::glossary::NOT_APPLICABLE)
/// where the figure does not apply.
fn shown(c: &Column, r: &PresetRow) -> String {
    super::pairs::or_not_applicable((c.2)(r))
}

/// The sentences under the table: what `dropped` and `lost at stop` each count (the
/// buffers preset shows both, and stops every run by a signal), and that one round of
/// a SIGKILL step is one draw.
pub fn footnotes(s: &PresetSummary) -> Vec<String> {
    let mut out = Vec::new();
    if columns(&s.preset).iter().any(|c| c.0 == "dropped") {
        out.push(super::glossary::DROPPED_AND_LOST_AT_STOP.to_owned());
    }
    if s.rows
        .iter()
        .any(|r| r.stop_signal == "kill" && r.pair.runs == 1)
    {
        out.push(super::glossary::ONE_KILL_ROUND.to_owned());
    }
    out
}

/// What the page says under the table, row by row: (label, step / condition, text)
/// for an unverified row, a late generator and a saturated API; then one line for a
/// busy machine, however many rows it disturbed (each step's `summary.json` has its
/// runs' `machine_warning` and `cpu_wait_ms`).
pub fn notes(s: &PresetSummary) -> Vec<(&'static str, String, String)> {
    let mut out = Vec::new();
    for r in &s.rows {
        let p = &r.pair;
        let who = || format!("{} / {}", r.step, p.condition);
        let unverified = (!p.metrics.verified)
            .then_some(p.verify_note.as_deref())
            .flatten();
        for (label, text) in [
            ("Not verified", unverified),
            ("Warning", p.metrics.lateness_warning.as_deref()),
            ("Saturated", p.metrics.saturation_warning.as_deref()),
        ] {
            if let Some(text) = text {
                out.push((label, who(), text.to_owned()));
            }
        }
    }
    let busy: Vec<_> = s
        .rows
        .iter()
        .filter(|r| r.pair.metrics.machine_warning.is_some())
        .collect();
    if !busy.is_empty() {
        // The most the API waited for a CPU in one run of a busy row.
        let api_wait = busy
            .iter()
            .filter_map(|r| {
                let w = r.pair.metrics.cpu_wait_ms?.api?;
                Some(w / r.pair.runs.max(1) as f64)
            })
            .reduce(f64::max);
        out.push((
            "Busy machine",
            format!("{} of {} rows", busy.len(), s.rows.len()),
            match api_wait {
                Some(w) => format!("the machine was busy (its cores 90% used or more, other tenants included): the API waited up to {w:.1} ms for a CPU in a run"),
                None => "the machine was busy (its cores 90% used or more, other tenants included): latencies include waiting for a core".to_owned(),
            },
        ));
    }
    out
}

/// The headline, the table, notes on unverified rows, and the verdict.
pub fn markdown(s: &PresetSummary, out: &mut dyn Write) -> io::Result<()> {
    let headline = super::headline::preset_headline(s);
    for line in &headline {
        writeln!(out, "{line}")?;
    }
    if !headline.is_empty() {
        writeln!(out)?;
    }
    writeln!(out, "**{}**: {}\n", s.preset, s.description)?;
    let cols = columns(&s.preset);
    let titles: Vec<&str> = cols.iter().map(|c| c.0).collect();
    writeln!(out, "| {} |", titles.join(" | "))?;
    let rules: Vec<&str> = cols
        .iter()
        .map(|c| if c.1 { "--:" } else { "---" })
        .collect();
    writeln!(out, "|{}|", rules.join("|"))?;
    for r in &s.rows {
        let cells: Vec<String> = cols.iter().map(|c| shown(c, r)).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    for note in footnotes(s) {
        writeln!(out, "\n{note}")?;
    }
    for (label, who, text) in notes(s) {
        writeln!(out, "\n**{label}** ({who}): {text}.")?;
    }
    if let Some(v) = &s.verdict {
        writeln!(out, "\n{v}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffers preset's table shows dropped beside lost at stop and says what
    /// each counts; a SIGKILL step of one round says its losses are one draw; an
    /// empty cell is a dash.
    #[test]
    fn the_buffers_table_says_what_dropped_and_lost_count() {
        let mut s: PresetSummary =
            serde_json::from_str(include_str!("../../tests/fixtures/buffers-preset.json")).unwrap();
        let notes = footnotes(&s);
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert_eq!(notes[0], super::super::glossary::DROPPED_AND_LOST_AT_STOP);
        assert!(notes[1].starts_with("One round"), "{notes:?}");
        for r in &mut s.rows {
            r.pair.runs = 3;
            r.pair.metrics.process.out_of_order = None;
        }
        assert_eq!(footnotes(&s).len(), 1, "three rounds give a spread");
        let (titles, rows) = table(&s);
        let order = titles.iter().position(|t| t.0 == "order").unwrap();
        assert!(rows.iter().all(|r| r[order] == "–"), "not checked: a dash");
        let mut md = Vec::new();
        markdown(&s, &mut md).unwrap();
        let md = String::from_utf8(md).unwrap();
        assert!(md.contains("| dropped | lost at stop |"), "{md}");
    }

    #[test]
    fn every_preset_has_a_column_set_with_the_condition_or_grid() {
        for p in crate::lab::preset::Preset::ALL {
            let cols = columns(p.as_str());
            assert!(cols.iter().any(|c| c.0 == "p99 ms"), "{p}");
        }
    }
}
