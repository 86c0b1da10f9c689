//! `loglag emit`'s results.

use serde::{Deserialize, Serialize};

/// What `loglag emit` did.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmitSummary {
    pub schema: u32,
    pub sink: String,
    /// Records emitted: all that were asked for, or those before an interruption.
    pub records: u64,
    /// Stopped by Ctrl-C (or SIGTERM) before every record was emitted.
    #[serde(default)]
    pub interrupted: bool,
    pub record_bytes: usize,
    pub threads: usize,
    /// Until the last record was submitted, and until the pipeline had written it all.
    pub submit_s: f64,
    pub elapsed_s: f64,
    /// Written records (and MiB) per second over `elapsed_s`.
    pub records_per_s: f64,
    pub mib_per_s: f64,
    pub metrics: EmitMetrics,
}

/// The pipeline's final `Metrics`, as `loglag emit` reports them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct EmitMetrics {
    pub accepted: u64,
    pub written_records: u64,
    pub written_bytes: u64,
    pub dropped_records: u64,
    pub dropped_queue_full: u64,
    pub dropped_io_error: u64,
    pub dropped_shutdown: u64,
    pub dropped_reentrant: u64,
    /// Refused by the peer (a RELP `500`, an OTLP `partial_success`); absent from
    /// results written before the reason existed.
    #[serde(default)]
    pub dropped_rejected: u64,
    pub truncated: u64,
    pub write_syscalls: u64,
    /// `Metrics::write_errors` (failed write calls), under its older name.
    pub io_errors: u64,
    pub max_backlog_bytes: u64,
    pub write_p50_us: f64,
    pub write_p99_us: f64,
    pub write_max_us: f64,
    pub recovered_records: u64,
}
