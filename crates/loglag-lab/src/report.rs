//! The lab's results: the only types that derive `Serialize` for output. JSON carries
//! `"schema": 1`.

use serde::{Deserialize, Serialize};

/// The version of the JSON layout.
pub const SCHEMA: u32 = 1;

/// Everything a lab run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema: u32,
    pub params: Params,
    pub runs: Vec<RunSummary>,
    pub pairs: Vec<PairSummary>,
    /// One row per request.
    #[serde(skip)]
    pub requests: Vec<RequestRow>,
    /// (run, t, produced, read) samples.
    #[serde(skip)]
    pub timeseries: Vec<TimeseriesRow>,
}

/// What was asked for, and where it ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Params {
    pub conditions: Vec<String>,
    pub sinks: Vec<String>,
    pub rounds: usize,
    pub rate: f64,
    pub duration_s: f64,
    pub connection: String,
    pub slow_rate_bytes_per_s: u64,
    pub read_size: usize,
    pub pipe_size: Option<usize>,
    pub threads: usize,
    pub warmup_requests: usize,
    pub cpu_limit: Option<f64>,
    /// Whether the CPU limit could be applied (cgroups may be unavailable).
    pub cpu_limit_applied: bool,
    pub app: Option<String>,
    pub loglag_version: String,
    /// The git revision loglag was built from, when known.
    #[serde(default)]
    pub git_revision: Option<String>,
    pub started_unix_s: u64,
    pub machine: Machine,
}

/// The machine the lab ran on.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
}

impl Machine {
    /// Reads /proc for the CPU model and kernel.
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|l| {
                l.strip_prefix("model name")
                    .and_then(|r| r.split_once(':'))
                    .map(|(_, v)| v.trim().to_owned())
            })
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .unwrap_or_default()
            .trim()
            .to_owned();
        Machine {
            cpu,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            kernel,
        }
    }
}

/// One run: one (condition, sink) pair in one round, with a fresh API.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSummary {
    pub run: usize,
    pub round: usize,
    pub condition: String,
    pub sink: String,
    pub requests: u64,
    pub completed: u64,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub http_errors: u64,
    pub timeouts: u64,
    /// Average time building the record, µs (empty when the app cannot report it).
    pub gen_us: Option<f64>,
    /// Average time in the logger call, µs.
    pub log_call_us: Option<f64>,
    pub max_backlog_kib: Option<f64>,
    pub drain_s: f64,
    /// The last response, in seconds after the first scheduled send.
    #[serde(default)]
    pub last_response_s: Option<f64>,
    /// The last log byte read, in seconds after the first scheduled send.
    #[serde(default)]
    pub last_byte_s: Option<f64>,
    /// Throughput A: completed / (first scheduled send → max(duration, last response)).
    pub rps_api: f64,
    /// Throughput B: the same, until every log byte was read.
    pub rps_logs_read: f64,
    pub cpu_cores: Option<f64>,
    pub dropped: Option<u64>,
    pub queue_full: Option<u64>,
    pub produced_bytes: Option<u64>,
    pub read_bytes: u64,
    pub read_newlines: u64,
    pub read_sha256: String,
    pub verified: bool,
    /// Why verification failed, or what it was based on.
    pub verify_note: String,
}

/// One (condition, sink) pair pooled over its rounds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairSummary {
    pub condition: String,
    pub sink: String,
    pub runs: usize,
    pub requests: u64,
    /// Percentiles over every request of every round, pooled.
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub http_errors: u64,
    pub timeouts: u64,
    pub gen_us: Option<f64>,
    pub log_call_us: Option<f64>,
    /// The largest backlog of any round.
    pub max_backlog_kib: Option<f64>,
    /// Mean over rounds.
    pub drain_s: f64,
    /// Summed completions over summed time.
    pub rps_api: f64,
    pub rps_logs_read: f64,
    pub cpu_cores: Option<f64>,
    pub dropped: Option<u64>,
    pub queue_full: Option<u64>,
    pub verified: bool,
}

/// One request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestRow {
    pub run: usize,
    pub condition: String,
    pub sink: String,
    pub scheduled_ms: f64,
    pub send_lateness_ms: f64,
    pub latency_ms: Option<f64>,
    pub status: Option<u16>,
    pub outcome: String,
}

/// Bytes produced and read at one instant of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimeseriesRow {
    pub run: usize,
    pub t_s: f64,
    pub produced_bytes: Option<u64>,
    pub read_bytes: u64,
}

/// What `loglag load` measured.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct LoadSummary {
    pub schema: u32,
    pub url: String,
    pub mode: String,
    pub rate: Option<f64>,
    pub connections: Option<usize>,
    pub duration_s: f64,
    pub requests: u64,
    pub ok: u64,
    pub http_errors: u64,
    pub io_errors: u64,
    pub timeouts: u64,
    pub achieved_rps: f64,
    pub p50_ms: Option<f64>,
    pub p90_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub p999_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub mean_send_lateness_ms: Option<f64>,
    pub max_send_lateness_ms: Option<f64>,
}

/// What `loglag sink` read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SinkSummary {
    pub schema: u32,
    pub source: String,
    pub bytes: u64,
    pub newlines: u64,
    pub reads: u64,
    pub sha256: String,
    pub seconds: f64,
    /// When the last byte arrived, in seconds from the start.
    pub last_byte_s: Option<f64>,
    pub rate_cap_bytes_per_s: Option<u64>,
}
