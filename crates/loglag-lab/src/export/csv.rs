//! CSV files. Values are numbers or simple names; anything else is quoted.

use std::io::{self, Write};

use super::load::{LOAD_COLUMNS, SINK_COLUMNS};
use super::pairs::{csv_quote as quote, csv_table, Column, PAIR_COLUMNS};
use super::{cell, Exporter};
use crate::report::{LoadSummary, RunSummary, SinkSummary, Summary};

fn opt_u64(v: Option<u64>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// `pairs.csv`: one row per (condition, sink).
#[derive(Debug, Clone, Copy)]
pub struct PairsCsv;

impl Exporter for PairsCsv {
    fn file_name(&self) -> &'static str {
        "pairs.csv"
    }

    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        csv_table(PAIR_COLUMNS, &s.pairs, out)
    }

    fn export_load(&self, s: &LoadSummary, out: &mut dyn Write) -> io::Result<()> {
        csv_table(LOAD_COLUMNS, s.with_floor(), out)
    }

    fn export_sink(&self, s: &SinkSummary, out: &mut dyn Write) -> io::Result<()> {
        csv_table(SINK_COLUMNS, [s], out)
    }
}

/// A column only CSV has: its key, and its cell.
macro_rules! run_column {
    ($key:expr, |$r:ident| $v:expr) => {
        Column {
            title: $key,
            key: $key,
            text: false,
            csv_only: true,
            shown: |$r| $v,
            exact: |$r| $v,
        }
    };
}

/// `runs.csv`'s columns, each a header and how its cell is written, so that the
/// header and the rows cannot drift apart.
const RUN_COLUMNS: &[Column<RunSummary>] = &[
    run_column!("run", |r| r.run.to_string()),
    run_column!("round", |r| r.round.to_string()),
    run_column!("condition", |r| r.condition.clone()),
    run_column!("sink", |r| r.sink.clone()),
    run_column!("requests", |r| r.requests.to_string()),
    run_column!("completed", |r| r.completed.to_string()),
    run_column!("p50_ms", |r| cell(r.metrics.p50_ms, 4)),
    run_column!("p99_ms", |r| cell(r.metrics.p99_ms, 4)),
    run_column!("max_ms", |r| cell(r.metrics.max_ms, 4)),
    run_column!("http_errors", |r| r.metrics.http_errors.to_string()),
    run_column!("timeouts", |r| r.metrics.timeouts.to_string()),
    run_column!("gen_us", |r| cell(r.metrics.gen_us, 2)),
    run_column!("log_call_us", |r| cell(r.metrics.log_call_us, 2)),
    run_column!("max_backlog_kib", |r| cell(r.metrics.max_backlog_kib, 2)),
    run_column!("drain_s", |r| format!("{:.4}", r.metrics.drain_s)),
    run_column!("rps_api", |r| format!("{:.4}", r.metrics.rps_api)),
    run_column!("rps_logs_read", |r| {
        format!("{:.4}", r.metrics.rps_logs_read)
    }),
    run_column!("cpu_cores", |r| cell(r.metrics.cpu_cores, 4)),
    run_column!("reader_cpu_cores", |r| cell(r.reader_cpu_cores, 4)),
    run_column!("generator_cpu_cores", |r| cell(r.generator_cpu_cores, 4)),
    run_column!("machine_busy", |r| cell(r.machine_busy, 3)),
    run_column!("dropped", |r| opt_u64(r.metrics.dropped)),
    run_column!("queue_full", |r| opt_u64(r.metrics.queue_full)),
    run_column!("produced_bytes", |r| opt_u64(r.produced_bytes)),
    run_column!("read_bytes", |r| r.read_bytes.to_string()),
    run_column!("read_newlines", |r| r.read_newlines.to_string()),
    run_column!("read_sha256", |r| r.read_sha256.clone()),
    run_column!("verified", |r| r.metrics.verified.to_string()),
    run_column!("verify_note", |r| r.verify_note.clone()),
    run_column!("send_late_mean_us", |r| {
        cell(r.metrics.send_lateness.map(|l| l.mean_us), 1)
    }),
    run_column!("send_late_p99_us", |r| {
        cell(r.metrics.send_lateness.map(|l| l.p99_us), 1)
    }),
    run_column!("send_late_max_us", |r| {
        cell(r.metrics.send_lateness.map(|l| l.max_us), 1)
    }),
    run_column!("expected_records", |r| opt_u64(r.expected_records)),
    run_column!("lost_records", |r| {
        r.metrics
            .lost_records
            .map_or_else(String::new, |v| v.to_string())
    }),
    run_column!("app_exit", |r| r.app_exit.clone().unwrap_or_default()),
];

/// `runs.csv`: one row per run.
#[derive(Debug, Clone, Copy)]
pub struct RunsCsv;

impl Exporter for RunsCsv {
    fn file_name(&self) -> &'static str {
        "runs.csv"
    }

    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        csv_table(RUN_COLUMNS, &s.runs, out)
    }
}

/// `requests.csv`: one row per request.
#[derive(Debug, Clone, Copy)]
pub struct RequestsCsv;

impl Exporter for RequestsCsv {
    fn file_name(&self) -> &'static str {
        "requests.csv"
    }

    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        writeln!(
            out,
            "run,condition,sink,scheduled_ms,send_lateness_ms,latency_ms,status,outcome"
        )?;
        for r in &s.requests {
            writeln!(
                out,
                "{},{},{},{:.3},{:.3},{},{},{}",
                r.run,
                quote(&r.condition),
                quote(&r.sink),
                r.scheduled_ms,
                r.send_lateness_ms,
                cell(r.latency_ms, 3),
                r.status.map_or_else(String::new, |s| s.to_string()),
                r.outcome
            )?;
        }
        Ok(())
    }
}

/// `timeseries.csv`: bytes produced and read over time, per run.
#[derive(Debug, Clone, Copy)]
pub struct TimeseriesCsv;

impl Exporter for TimeseriesCsv {
    fn file_name(&self) -> &'static str {
        "timeseries.csv"
    }

    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        writeln!(out, "run,t_s,produced_bytes,read_bytes")?;
        for r in &s.timeseries {
            writeln!(
                out,
                "{},{:.3},{},{}",
                r.run,
                r.t_s,
                opt_u64(r.produced_bytes),
                r.read_bytes
            )?;
        }
        Ok(())
    }
}
