//! The tables of `loglag load`, `loglag sink` and `loglag emit`, as lists of columns
//! (see `export/pairs.rs`): Markdown and CSV render the same list, so they cannot drift.

use std::io::{self, Write};

use super::pairs::{column, csv_table, Column};
use crate::load::RequestSample;
use crate::report::{EmitSummary, LoadSummary, SinkSummary};

/// The send lateness in µs, by one of its statistics.
fn late(s: &LoadSummary, of: fn(&crate::report::Lateness) -> f64) -> Option<f64> {
    s.send_lateness.as_ref().map(of)
}

/// One row per target: the calibration floor, then the target.
pub(crate) const LOAD_COLUMNS: &[Column<LoadSummary>] = &[
    column!("target", "url", text, |s| s.url.clone()),
    Column {
        csv_only: true,
        ..column!("mode", "mode", text, |s| s.mode.to_string())
    },
    column!("requests", "requests", int, |s| s.requests.to_string()),
    column!("ok", "ok", int, |s| s.ok.to_string()),
    column!("HTTP errors", "http_errors", int, |s| s
        .http_errors
        .to_string()),
    column!("I/O errors", "io_errors", int, |s| s.io_errors.to_string()),
    column!("timeouts", "timeouts", int, |s| s.timeouts.to_string()),
    column!("rps", "achieved_rps", float(1, 2), |s| Some(s.achieved_rps)),
    column!("p50 ms", "p50_ms", float(3, 3), |s| s.p50_ms),
    column!("p90 ms", "p90_ms", float(3, 3), |s| s.p90_ms),
    column!("p99 ms", "p99_ms", float(3, 3), |s| s.p99_ms),
    column!("p99.9 ms", "p999_ms", float(3, 3), |s| s.p999_ms),
    column!("max ms", "max_ms", float(3, 3), |s| s.max_ms),
    column!(
        "send late mean µs",
        "send_late_mean_us",
        float(0, 1),
        |s| late(s, |l| l.mean_us)
    ),
    column!("send late p99 µs", "send_late_p99_us", float(0, 1), |s| {
        late(s, |l| l.p99_us)
    }),
    column!("send late max µs", "send_late_max_us", float(0, 1), |s| {
        late(s, |l| l.max_us)
    }),
    Column {
        csv_only: true,
        ..column!("lateness warning", "lateness_warning", text, |s| s
            .lateness_warning
            .clone()
            .unwrap_or_default())
    },
];

/// What `loglag sink` read: one row.
pub(crate) const SINK_COLUMNS: &[Column<SinkSummary>] = &[
    column!("source", "source", text, |s| s.source.clone()),
    column!("bytes", "bytes", int, |s| s.bytes.to_string()),
    column!("newlines", "newlines", int, |s| s.newlines.to_string()),
    column!("reads", "reads", int, |s| s.reads.to_string()),
    column!("seconds", "seconds", float(3, 3), |s| Some(s.seconds)),
    column!("last byte s", "last_byte_s", float(3, 3), |s| s.last_byte_s),
    column!("sha256", "sha256", text, |s| s.sha256.clone()),
];

/// `loglag load --requests-csv`: one row per request, times in ms.
pub(super) const REQUEST_COLUMNS: &[Column<RequestSample>] = &[
    column!("index", "index", int, |r| r.index.to_string()),
    column!("scheduled ms", "scheduled_ms", float(3, 3), |r| Some(
        r.scheduled_ns as f64 / 1e6
    )),
    column!("send lateness ms", "send_lateness_ms", float(3, 3), |r| {
        Some(r.send_lateness_ns as f64 / 1e6)
    }),
    column!("connect ms", "connect_ms", float(3, 3), |r| r
        .connect_ns
        .map(|ns| ns as f64 / 1e6)),
    column!("latency ms", "latency_ms", float(3, 3), |r| r
        .latency_ns
        .map(|ns| ns as f64 / 1e6)),
    column!("status", "status", int, |r| r
        .status
        .map_or_else(String::new, |s| s.to_string())),
    column!("outcome", "outcome", text, |r| r
        .outcome
        .as_str()
        .to_owned()),
];

/// Writes `loglag load`'s per-request CSV.
pub fn requests_csv(samples: &[RequestSample], out: &mut dyn Write) -> io::Result<()> {
    csv_table(REQUEST_COLUMNS, samples, out)
}

/// What `loglag emit` did: one row.
pub(super) const EMIT_COLUMNS: &[Column<EmitSummary>] = &[
    column!("sink", "sink", text, |s| s.sink.clone()),
    column!("records", "records", int, |s| s.records.to_string()),
    column!("written", "written", int, |s| s
        .metrics
        .written_records
        .to_string()),
    Column {
        title: "dropped (queue full / io / shutdown)",
        key: "dropped",
        text: false,
        csv_only: false,
        shown: |s| {
            let m = &s.metrics;
            format!(
                "{} ({} / {} / {})",
                m.dropped_records, m.dropped_queue_full, m.dropped_io_error, m.dropped_shutdown
            )
        },
        exact: |s| s.metrics.dropped_records.to_string(),
    },
    column!("write calls", "write_syscalls", int, |s| s
        .metrics
        .write_syscalls
        .to_string()),
    column!("elapsed s", "elapsed_s", float(3, 3), |s| Some(s.elapsed_s)),
    column!("records/s", "records_per_s", float(0, 0), |s| Some(
        s.records_per_s
    )),
    column!("MiB/s", "mib_per_s", float(1, 1), |s| Some(s.mib_per_s)),
    // Added after the columns scripts already read by position.
    column!("write p99 µs", "write_p99_us", float(0, 1), |s| Some(
        s.metrics.write_p99_us
    )),
    Column {
        csv_only: true,
        ..column!("dropped, queue full", "dropped_queue_full", int, |s| s
            .metrics
            .dropped_queue_full
            .to_string())
    },
    Column {
        csv_only: true,
        ..column!("dropped, io", "dropped_io_error", int, |s| s
            .metrics
            .dropped_io_error
            .to_string())
    },
    Column {
        csv_only: true,
        ..column!("dropped, shutdown", "dropped_shutdown", int, |s| s
            .metrics
            .dropped_shutdown
            .to_string())
    },
];

/// `loglag emit`'s table, as Markdown or CSV.
pub fn emit_table(s: &EmitSummary, csv: bool, out: &mut dyn Write) -> io::Result<()> {
    if csv {
        csv_table(EMIT_COLUMNS, [s], out)
    } else {
        super::pairs::markdown_table(EMIT_COLUMNS, [s], out)
    }
}
