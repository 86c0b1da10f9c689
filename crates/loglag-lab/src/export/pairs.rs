//! Tables defined once for every rendering, as lists of columns: Markdown and HTML show
//! `title` and the rounded `shown` value; CSV writes `key` and the `exact` value. The
//! pairs table is here; `export/load.rs` has the load and sink tables.

use std::io::{self, Write};

use super::glossary::NOT_APPLICABLE;
use crate::report::{CpuWaitMs, PairSummary};

/// One column of a table of `T`s.
pub(crate) struct Column<T> {
    /// Header in Markdown and HTML, units in words.
    pub title: &'static str,
    /// Header in CSV: snake_case, units as suffixes.
    pub key: &'static str,
    /// Names are left-aligned; numbers right-aligned.
    pub text: bool,
    /// Only in CSV (detail that would crowd a table meant for reading).
    pub csv_only: bool,
    /// The value as shown to a reader.
    pub shown: fn(&T) -> String,
    /// The value with full precision, for other tools.
    pub exact: fn(&T) -> String,
}

/// One column of the pairs table.
pub(crate) type PairColumn = Column<PairSummary>;

/// A Markdown table of `rows` with the columns a reader is shown.
pub(crate) fn markdown_table<'a, T: 'a>(
    columns: &[Column<T>],
    rows: impl IntoIterator<Item = &'a T>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let shown: Vec<&Column<T>> = columns.iter().filter(|c| !c.csv_only).collect();
    markdown_table_of(&shown, rows, out)
}

/// The pairs table's columns the headline speaks of (`--columns headline`, the
/// default on stdout), by CSV key: the figures it states, the generator's lateness
/// its verdicts weigh, and whether the log was verified.
pub(crate) const HEADLINE_KEYS: &[&str] = &[
    "condition",
    "sink",
    "p50_ms",
    "p99_ms",
    "max_backlog_kib",
    "drain_s",
    "dropped",
    "lost_records",
    "send_late_p99_us",
    "verified",
];

/// A Markdown table of `rows` with exactly `shown`.
pub(crate) fn markdown_table_of<'a, T: 'a>(
    shown: &[&Column<T>],
    rows: impl IntoIterator<Item = &'a T>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let titles: Vec<&str> = shown.iter().map(|c| c.title).collect();
    writeln!(out, "| {} |", titles.join(" | "))?;
    let rules: Vec<&str> = shown
        .iter()
        .map(|c| if c.text { "---" } else { "--:" })
        .collect();
    writeln!(out, "|{}|", rules.join("|"))?;
    for row in rows {
        let cells: Vec<String> = shown.iter().map(|c| shown_cell(c, row)).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    Ok(())
}

/// A cell as a reader is shown it: a figure that does not apply (an empty cell) is
/// [`NOT_APPLICABLE`], never blank or `0`.
pub(crate) fn shown_cell<T>(column: &Column<T>, row: &T) -> String {
    or_not_applicable((column.shown)(row))
}

/// `cell`, or [`NOT_APPLICABLE`] when it is empty.
pub(crate) fn or_not_applicable(cell: String) -> String {
    if cell.is_empty() {
        NOT_APPLICABLE.to_owned()
    } else {
        cell
    }
}

/// A CSV table of `rows` with every column, each cell quoted as CSV needs.
pub(crate) fn csv_table<'a, T: 'a>(
    columns: &[Column<T>],
    rows: impl IntoIterator<Item = &'a T>,
    out: &mut dyn Write,
) -> io::Result<()> {
    let keys: Vec<&str> = columns.iter().map(|c| c.key).collect();
    writeln!(out, "{}", keys.join(","))?;
    for row in rows {
        let cells: Vec<String> = columns.iter().map(|c| csv_quote(&(c.exact)(row))).collect();
        writeln!(out, "{}", cells.join(","))?;
    }
    Ok(())
}

/// A CSV field: quoted when it holds a comma, a quote or a line break.
pub(crate) fn csv_quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_owned()
    }
}

pub(crate) fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(String::new, |v| format!("{v:.digits$}"))
}

pub(crate) fn opt_int<T: ToString>(v: Option<T>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

macro_rules! column {
    ($title:expr, $key:expr, text, |$p:ident| $v:expr) => {
        Column {
            title: $title,
            key: $key,
            text: true,
            csv_only: false,
            shown: |$p| $v,
            exact: |$p| $v,
        }
    };
    ($title:expr, $key:expr, int, |$p:ident| $v:expr) => {
        Column {
            title: $title,
            key: $key,
            text: false,
            csv_only: false,
            shown: |$p| $v,
            exact: |$p| $v,
        }
    };
    // A column only CSV has: its key, and its cell as written.
    ($key:expr, csv, |$p:ident| $v:expr) => {
        Column {
            title: $key,
            key: $key,
            text: false,
            csv_only: true,
            shown: |$p| $v,
            exact: |$p| $v,
        }
    };
    ($title:expr, $key:expr, float($shown:expr, $exact:expr), |$p:ident| $v:expr) => {
        Column {
            title: $title,
            key: $key,
            text: false,
            csv_only: false,
            shown: |$p| $crate::export::pairs::opt($v, $shown),
            exact: |$p| $crate::export::pairs::opt($v, $exact),
        }
    };
}

pub(crate) use column;

/// Every column, in order.
pub(crate) const PAIR_COLUMNS: &[PairColumn] = &[
    column!("condition", "condition", text, |p| p.condition.clone()),
    column!("sink", "sink", text, |p| p.sink.clone()),
    column!("runs", "runs", int, |p| p.runs.to_string()),
    column!("requests", "requests", int, |p| p.requests.to_string()),
    column!("p50 ms", "p50_ms", float(2, 4), |p| p.metrics.p50_ms),
    column!("p99 ms", "p99_ms", float(2, 4), |p| p.metrics.p99_ms),
    PairColumn {
        title: "p99 range ms",
        key: "p99_ms_range",
        text: false,
        csv_only: false,
        shown: |p| {
            p.p99_ms_range
                .map_or_else(String::new, |(lo, hi)| format!("{lo:.2}–{hi:.2}"))
        },
        exact: |p| {
            p.p99_ms_range
                .map_or_else(String::new, |(lo, hi)| format!("{lo:.4}-{hi:.4}"))
        },
    },
    column!("max ms", "max_ms", float(2, 4), |p| p.metrics.max_ms),
    column!("errors", "http_errors", int, |p| p
        .metrics
        .http_errors
        .to_string()),
    column!("timeouts", "timeouts", int, |p| p
        .metrics
        .timeouts
        .to_string()),
    column!("gen µs", "gen_us", float(0, 2), |p| p.metrics.gen_us),
    column!("log call µs", "log_call_us", float(0, 2), |p| p
        .metrics
        .log_call_us),
    column!("max backlog KiB", "max_backlog_kib", float(0, 2), |p| p
        .metrics
        .max_backlog_kib),
    column!("drain s", "drain_s", float(2, 4), |p| Some(
        p.metrics.drain_s
    )),
    column!("rps API", "rps_api", float(2, 4), |p| Some(
        p.metrics.rps_api
    )),
    column!("rps logs read", "rps_logs_read", float(2, 4), |p| Some(
        p.metrics.rps_logs_read
    )),
    column!("CPU cores", "cpu_cores", float(3, 4), |p| p
        .metrics
        .cpu_cores),
    column!("dropped", "dropped", int, |p| opt_int(p.metrics.dropped)),
    PairColumn {
        csv_only: true,
        ..column!("queue full", "queue_full", int, |p| opt_int(
            p.metrics.queue_full
        ))
    },
    column!("lost", "lost_records", int, |p| opt_int(
        p.metrics.lost_records
    )),
    PairColumn {
        csv_only: true,
        ..column!(
            "send late mean µs",
            "send_late_mean_us",
            float(0, 1),
            |p| p.metrics.send_lateness.map(|l| l.mean_us)
        )
    },
    column!("send late p99 µs", "send_late_p99_us", float(0, 1), |p| p
        .metrics
        .send_lateness
        .map(|l| l.p99_us)),
    PairColumn {
        csv_only: true,
        ..column!("send late max µs", "send_late_max_us", float(0, 1), |p| p
            .metrics
            .send_lateness
            .map(|l| l.max_us))
    },
    PairColumn {
        shown: |p| if p.metrics.verified { "yes" } else { "NO" }.to_owned(),
        exact: |p| p.metrics.verified.to_string(),
        ..column!("verified", "verified", text, |p| p
            .metrics
            .verified
            .to_string())
    },
    // After the columns scripts already read by position. A pair's are summed over
    // its runs.
    column!("cpu_wait_api_ms", csv, |p| cpu_wait(
        p.metrics.cpu_wait_ms,
        |w| w.api
    )),
    column!("cpu_wait_reader_ms", csv, |p| cpu_wait(
        p.metrics.cpu_wait_ms,
        |w| w.reader
    )),
    column!("cpu_wait_generator_ms", csv, |p| cpu_wait(
        p.metrics.cpu_wait_ms,
        |w| w.generator
    )),
];

/// One process's CPU wait, ms, as CSV writes it: empty where it was not measured.
pub(crate) fn cpu_wait(w: Option<CpuWaitMs>, of: fn(&CpuWaitMs) -> Option<f64>) -> String {
    opt(w.as_ref().and_then(of), 3)
}

/// The sentences under the pairs table: what `dropped` and `lost` each count (they
/// overlap unless the runs were stopped by a signal), when a row has either; and that
/// one round of a SIGKILL stop is one draw.
pub(crate) fn footnotes(s: &crate::report::Summary) -> Vec<&'static str> {
    let mut out = Vec::new();
    let counted = |p: &PairSummary| {
        p.metrics.dropped.is_some_and(|d| d > 0) || p.metrics.lost_records.is_some_and(|l| l != 0)
    };
    if s.pairs.iter().any(counted) {
        out.push(match s.params.plan.stop_signal {
            Some(_) => super::glossary::DROPPED_AND_LOST_AT_STOP,
            None => super::glossary::DROPPED_WITHIN_LOST,
        });
    }
    if s.params.plan.stop_signal.as_deref() == Some("kill") && s.params.plan.rounds == 1 {
        out.push(super::glossary::ONE_KILL_ROUND);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::export::glossary::{DROPPED_AND_LOST_AT_STOP, DROPPED_WITHIN_LOST, ONE_KILL_ROUND};

    fn fixture() -> crate::report::Summary {
        serde_json::from_str(include_str!("../../tests/fixtures/lab/summary.json")).unwrap()
    }

    /// A figure that does not apply is a dash to a reader and an empty cell in CSV.
    #[test]
    fn a_figure_that_does_not_apply_is_a_dash_never_blank_or_zero() {
        let mut s = fixture();
        let p = &mut s.pairs[0];
        p.metrics.send_lateness = None;
        p.metrics.gen_us = None;
        p.metrics.dropped = None;
        let late = PAIR_COLUMNS
            .iter()
            .find(|c| c.key == "send_late_p99_us")
            .unwrap();
        assert_eq!(shown_cell(late, p), NOT_APPLICABLE);
        assert_eq!((late.exact)(p), "");
        let mut md = Vec::new();
        markdown_table(PAIR_COLUMNS, &s.pairs[..1], &mut md).unwrap();
        let row = String::from_utf8(md).unwrap();
        let row = row.lines().nth(2).unwrap();
        assert!(!row.contains("|  |"), "{row}");
        assert!(row.matches("| – |").count() >= 3, "{row}");
    }

    /// Dropped and lost are explained where a row has either, by what they count in
    /// these runs; one round of SIGKILL says it is one draw.
    #[test]
    fn the_pairs_table_says_what_dropped_and_lost_count() {
        let mut s = fixture();
        assert!(footnotes(&s).is_empty(), "nothing dropped or lost");
        s.pairs[1].metrics.dropped = Some(12);
        s.pairs[1].metrics.lost_records = Some(12);
        assert_eq!(footnotes(&s), [DROPPED_WITHIN_LOST]);
        s.params.plan.stop_signal = Some("kill".into());
        assert_eq!(s.params.plan.rounds, 1);
        assert_eq!(footnotes(&s), [DROPPED_AND_LOST_AT_STOP, ONE_KILL_ROUND]);
        s.params.plan.rounds = 3;
        assert_eq!(footnotes(&s), [DROPPED_AND_LOST_AT_STOP]);
    }
}
