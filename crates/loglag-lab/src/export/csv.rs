//! CSV files. Values are numbers or simple names; anything else is quoted.

use std::io::{self, Write};

use super::load::{LOAD_COLUMNS, SINK_COLUMNS};
use super::pairs::{column, cpu_wait, csv_quote as quote, csv_table, Column, PAIR_COLUMNS};
use super::{cell, Exporter};
use crate::report::{LoadSummary, RunSummary, SinkSummary, Summary};

fn opt_u64(v: Option<u64>) -> String {
    v.map_or_else(String::new, |v| v.to_string())
}

/// `pairs.csv`: one row per (condition, sink).
#[derive(Debug, Clone, Copy)]
pub struct PairsCsv;

impl Exporter<Summary> for PairsCsv {
    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        csv_table(PAIR_COLUMNS, &s.pairs, out)
    }
}

impl Exporter<LoadSummary> for PairsCsv {
    fn export(&self, s: &LoadSummary, out: &mut dyn Write) -> io::Result<()> {
        csv_table(LOAD_COLUMNS, s.with_floor(), out)
    }
}

impl Exporter<SinkSummary> for PairsCsv {
    fn export(&self, s: &SinkSummary, out: &mut dyn Write) -> io::Result<()> {
        csv_table(SINK_COLUMNS, [s], out)
    }
}

/// `runs.csv`'s columns, each a header and how its cell is written, so that the
/// header and the rows cannot drift apart.
pub(super) const RUN_COLUMNS: &[Column<RunSummary>] = &[
    column!("run", csv, |r| r.run.to_string()),
    column!("round", csv, |r| r.round.to_string()),
    column!("condition", csv, |r| r.condition.clone()),
    column!("sink", csv, |r| r.sink.clone()),
    column!("requests", csv, |r| r.requests.to_string()),
    column!("completed", csv, |r| r.completed.to_string()),
    column!("p50_ms", csv, |r| cell(r.metrics.p50_ms, 4)),
    column!("p99_ms", csv, |r| cell(r.metrics.p99_ms, 4)),
    column!("max_ms", csv, |r| cell(r.metrics.max_ms, 4)),
    column!("http_errors", csv, |r| r.metrics.http_errors.to_string()),
    column!("timeouts", csv, |r| r.metrics.timeouts.to_string()),
    column!("gen_us", csv, |r| cell(r.metrics.gen_us, 2)),
    column!("log_call_us", csv, |r| cell(r.metrics.log_call_us, 2)),
    column!("max_backlog_kib", csv, |r| cell(
        r.metrics.max_backlog_kib,
        2
    )),
    column!("drain_s", csv, |r| format!("{:.4}", r.metrics.drain_s)),
    column!("rps_api", csv, |r| format!("{:.4}", r.metrics.rps_api)),
    column!("rps_logs_read", csv, |r| {
        format!("{:.4}", r.metrics.rps_logs_read)
    }),
    column!("cpu_cores", csv, |r| cell(r.metrics.cpu_cores, 4)),
    column!("reader_cpu_cores", csv, |r| cell(r.reader_cpu_cores, 4)),
    column!("generator_cpu_cores", csv, |r| cell(
        r.generator_cpu_cores,
        4
    )),
    column!("machine_busy", csv, |r| cell(r.machine_busy, 3)),
    column!("dropped", csv, |r| opt_u64(r.metrics.dropped)),
    column!("queue_full", csv, |r| opt_u64(r.metrics.queue_full)),
    column!("produced_bytes", csv, |r| opt_u64(r.produced_bytes)),
    column!("read_bytes", csv, |r| r.read_bytes.to_string()),
    column!("read_newlines", csv, |r| r.read_newlines.to_string()),
    column!("read_sha256", csv, |r| r.read_sha256.clone()),
    column!("verified", csv, |r| r.metrics.verified.to_string()),
    column!("verify_note", csv, |r| r.verify_note.clone()),
    column!("send_late_mean_us", csv, |r| {
        cell(r.metrics.send_lateness.map(|l| l.mean_us), 1)
    }),
    column!("send_late_p99_us", csv, |r| {
        cell(r.metrics.send_lateness.map(|l| l.p99_us), 1)
    }),
    column!("send_late_max_us", csv, |r| {
        cell(r.metrics.send_lateness.map(|l| l.max_us), 1)
    }),
    column!("expected_records", csv, |r| opt_u64(r.expected_records)),
    column!("lost_records", csv, |r| {
        r.metrics
            .lost_records
            .map_or_else(String::new, |v| v.to_string())
    }),
    column!("app_exit", csv, |r| r.app_exit.clone().unwrap_or_default()),
    // After the columns scripts already read by position.
    column!("cpu_wait_api_ms", csv, |r| cpu_wait(
        r.metrics.cpu_wait_ms,
        |w| w.api
    )),
    column!("cpu_wait_reader_ms", csv, |r| cpu_wait(
        r.metrics.cpu_wait_ms,
        |w| w.reader
    )),
    column!("cpu_wait_generator_ms", csv, |r| cpu_wait(
        r.metrics.cpu_wait_ms,
        |w| w.generator
    )),
];

/// `runs.csv`: one row per run.
#[derive(Debug, Clone, Copy)]
pub struct RunsCsv;

impl Exporter<Summary> for RunsCsv {
    fn export(&self, s: &Summary, out: &mut dyn Write) -> io::Result<()> {
        csv_table(RUN_COLUMNS, &s.runs, out)
    }
}

/// `requests.csv`: one row per request.
#[derive(Debug, Clone, Copy)]
pub struct RequestsCsv;

impl Exporter<Summary> for RequestsCsv {
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

impl Exporter<Summary> for TimeseriesCsv {
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
