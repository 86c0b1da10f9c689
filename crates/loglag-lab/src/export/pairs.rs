//! Tables defined once for every rendering, as lists of columns: Markdown and HTML show
//! `title` and the rounded `shown` value; CSV writes `key` and the `exact` value. The
//! pairs table is here; `export/load.rs` has the load and sink tables.

use std::io::{self, Write};

use crate::report::PairSummary;

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
    let titles: Vec<&str> = shown.iter().map(|c| c.title).collect();
    writeln!(out, "| {} |", titles.join(" | "))?;
    let rules: Vec<&str> = shown
        .iter()
        .map(|c| if c.text { "---" } else { "--:" })
        .collect();
    writeln!(out, "|{}|", rules.join("|"))?;
    for row in rows {
        let cells: Vec<String> = shown.iter().map(|c| (c.shown)(row)).collect();
        writeln!(out, "| {} |", cells.join(" | "))?;
    }
    Ok(())
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
];
