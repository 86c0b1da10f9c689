//! The lab's results: the only types that derive `Serialize` for output. JSON carries
//! `"schema": 2` (schema 1, before the presets' fields, still reads: every field added
//! since has a default).

use serde::{Deserialize, Serialize};

/// The version of the JSON layout.
pub const SCHEMA: u32 = 2;

/// Every schema this version reads.
pub const READABLE_SCHEMAS: [u32; 2] = [1, 2];

/// Everything a lab run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema: u32,
    pub params: Params,
    pub runs: Vec<RunSummary>,
    pub pairs: Vec<PairSummary>,
    /// What the runs say against the baseline, each with its interval and verdict.
    #[serde(default)]
    pub findings: Vec<Finding>,
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
    /// Runs whose p99 send lateness exceeds this are flagged.
    #[serde(default = "default_lateness_limit")]
    pub lateness_limit_us: f64,
    pub app: Option<String>,
    pub loglag_version: String,
    /// The git revision loglag was built from, when known.
    #[serde(default)]
    pub git_revision: Option<String>,
    pub started_unix_s: u64,
    pub machine: Machine,
    /// Closed loop with this many connections (`None`: open loop at `rate`).
    #[serde(default)]
    pub closed: Option<usize>,
    /// What the built-in API logged per request: json16k, three or line120.
    #[serde(default)]
    pub record: Option<String>,
    /// Every Nth request logged an ERROR.
    #[serde(default)]
    pub error_every: Option<u64>,
    /// How the API was stopped at the end of each run, when a stop was measured.
    #[serde(default)]
    pub stop_signal: Option<String>,
    /// The slow-disk sink's delay per write, µs.
    #[serde(default)]
    pub disk_delay_us: Option<u64>,
    /// The built-in loglag condition's settings, when not its defaults.
    #[serde(default)]
    pub loglag_batch_bytes: Option<usize>,
    #[serde(default)]
    pub loglag_flush_interval_ms: Option<f64>,
    /// How long the network conditions' collector was down mid-run, ms.
    #[serde(default)]
    pub collector_outage_ms: Option<f64>,
    /// The preset this run belongs to, and its step (`buffers` / `kill`).
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub step: Option<String>,
    /// The condition every other is compared with in the findings (`--baseline`).
    #[serde(default)]
    pub baseline: Option<String>,
}

fn default_lateness_limit() -> f64 {
    Lateness::DEFAULT_LIMIT_US
}

/// The machine the lab ran on.
#[derive(Debug, Clone, Serialize, Deserialize, Default, PartialEq)]
pub struct Machine {
    pub cpu: String,
    pub cores: usize,
    pub kernel: String,
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
    /// Throughput "API": completed / (first scheduled send → max(duration, last response)).
    pub rps_api: f64,
    /// Throughput "logs read": the same, until every log byte was read.
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
    /// Log lines the API should have written (an `--app`: warm-up included).
    #[serde(default)]
    pub expected_records: Option<u64>,
    /// Expected − read: records lost (negative: extra lines). `None` when nothing
    /// says what to expect.
    #[serde(default)]
    pub lost_records: Option<i64>,
    /// Records written twice: after a `loglag-spool` stop, the batch in flight that the
    /// spool delivered again. `None` where nothing was recovered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_records: Option<u64>,
    /// How an `--app` ended when stopped at the end of the run.
    #[serde(default)]
    pub app_exit: Option<String>,
    /// How late the generator sent this run's requests.
    #[serde(default)]
    pub send_lateness: Option<Lateness>,
    /// Set when the generator's p99 lateness exceeds `Params::lateness_limit_us`.
    #[serde(default)]
    pub lateness_warning: Option<String>,
    /// The API could not keep up: it served less than 90% of the offered rate, or used
    /// 90% or more of the CPU it had. Its latencies are then queueing, not the logging
    /// cost alone; verdicts built on it are inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation_warning: Option<String>,
    #[serde(default)]
    pub mean_ms: Option<f64>,
    #[serde(flatten)]
    pub process: ProcessFigures,
    /// Which request ids the log lacks (`--match-request-id`).
    #[serde(default)]
    pub request_ids: Option<crate::reader::inspect::IdMatch>,
}

/// What the API process did during the load, per run or pooled over a pair's runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessFigures {
    /// `write` calls on the log sink during the load (the built-in API counts its own).
    #[serde(default)]
    pub log_writes: Option<u64>,
    /// The same per minute.
    #[serde(default)]
    pub log_writes_per_min: Option<f64>,
    /// Write-family syscalls of the whole process (`syscw`, responses included), per minute.
    #[serde(default)]
    pub syscw_per_min: Option<f64>,
    /// Context switches per second, summed over threads.
    #[serde(default)]
    pub ctx_voluntary_per_s: Option<f64>,
    #[serde(default)]
    pub ctx_involuntary_per_s: Option<f64>,
    /// Peak resident set, KiB.
    #[serde(default)]
    pub rss_peak_kib: Option<u64>,
    /// The longest a record waited in loglag's queue, as sampled every 25 ms, ms.
    #[serde(default)]
    pub oldest_queued_ms: Option<f64>,
    /// ERROR lines read, and lines whose sequence number went backwards.
    #[serde(default)]
    pub error_lines: Option<u64>,
    #[serde(default)]
    pub out_of_order: Option<u64>,
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
    /// The lowest and highest p99 of a single round: the spread between rounds.
    #[serde(default)]
    pub p99_ms_range: Option<(f64, f64)>,
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
    /// Summed over rounds; `None` when nothing says what to expect.
    #[serde(default)]
    pub lost_records: Option<i64>,
    /// Summed over rounds; `None` where nothing was recovered from a spool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_records: Option<u64>,
    /// Why a round was not verified (the first such reason).
    #[serde(default)]
    pub verify_note: Option<String>,
    /// Pooled over every request of every round.
    #[serde(default)]
    pub send_lateness: Option<Lateness>,
    #[serde(default)]
    pub lateness_warning: Option<String>,
    /// The API could not keep up: it served less than 90% of the offered rate, or used
    /// 90% or more of the CPU it had. Its latencies are then queueing, not the logging
    /// cost alone; verdicts built on it are inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation_warning: Option<String>,
    /// Pooled over every request of every round.
    #[serde(default)]
    pub mean_ms: Option<f64>,
    /// Rates averaged over rounds; maxima for RSS and queue age; sums for counts.
    #[serde(flatten)]
    pub process: ProcessFigures,
    /// Where the first round that lacks request ids places the loss.
    #[serde(default)]
    pub missing_ids_note: Option<String>,
}

/// A latency percentile a finding compares.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Percentile {
    P50,
    P99,
}

impl Percentile {
    pub fn quantile(self) -> f64 {
        match self {
            Percentile::P50 => 0.50,
            Percentile::P99 => 0.99,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P99 => "p99",
        }
    }
}

/// One conclusion of a lab run: a condition's percentile against the baseline's on
/// the same sink, with 95% bootstrap intervals over the requests of every round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    pub condition: String,
    /// The condition it is compared with.
    pub baseline: String,
    pub sink: String,
    pub percentile: Percentile,
    pub value_ms: f64,
    pub baseline_ms: f64,
    /// `value_ms − baseline_ms`, and its interval.
    pub difference_ms: f64,
    pub difference_interval_ms: (f64, f64),
    /// `value_ms / baseline_ms`, and its interval.
    pub ratio: f64,
    pub ratio_interval: (f64, f64),
    /// `None`: the difference holds. `Some(why)`: inconclusive, and why.
    pub inconclusive: Option<String>,
    /// What a reader must know even when it holds (a saturation the condition caused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Finding {
    /// The verdict in words: "holds", or "inconclusive: why", with any note.
    pub fn verdict(&self) -> String {
        let mut v = match &self.inconclusive {
            None => "holds".to_owned(),
            Some(why) => format!("inconclusive: {why}"),
        };
        if let Some(note) = &self.note {
            v.push_str(&format!(" ({note})"));
        }
        v
    }
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

/// How late the generator sent requests, measured from each one's due time. Every
/// latency includes this delay, so a large figure means the instrument, not the API,
/// set the floor.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq)]
pub struct Lateness {
    pub mean_us: f64,
    pub p99_us: f64,
    pub max_us: f64,
}

impl Lateness {
    /// The default limit on p99 lateness before a run is flagged.
    pub const DEFAULT_LIMIT_US: f64 = 100.0;

    /// From per-request lateness in ns; `None` for no requests.
    pub fn of(lateness_ns: &[u64]) -> Option<Lateness> {
        let mut sorted = lateness_ns.to_vec();
        let us = |ns: u64| ns as f64 / 1e3;
        Some(Lateness {
            mean_us: crate::stats::mean(lateness_ns.iter().map(|&l| us(l)))?,
            p99_us: us(crate::stats::quantile(&mut sorted, 0.99)?),
            max_us: us(crate::stats::quantile(&mut sorted, 1.0)?),
        })
    }

    /// A sentence for runs whose p99 lateness exceeds `limit_us`.
    pub fn warning(&self, limit_us: f64) -> Option<String> {
        (self.p99_us > limit_us).then(|| {
            format!(
                "the load generator sent late (p99 {:.0} µs, max {:.0} µs, over the {limit_us:.0} µs limit): these latencies include its own delay",
                self.p99_us, self.max_us
            )
        })
    }
}

/// The saturation warnings of a lab run, one line per pair.
pub fn saturation_warnings(pairs: &[PairSummary]) -> Vec<(String, String)> {
    pairs
        .iter()
        .filter_map(|p| {
            let w = p.saturation_warning.clone()?;
            Some((format!("{} / {}", p.condition, p.sink), w))
        })
        .collect()
}

/// The lateness warnings of a lab run, one line each: per pair when a few pairs are
/// late, else one line for all of them (a busy machine makes every pair late, and
/// fourteen identical warnings hide the table). Each line is `(who, what)`.
pub fn lateness_warnings(pairs: &[PairSummary], limit_us: f64) -> Vec<(String, String)> {
    let late: Vec<&PairSummary> = pairs
        .iter()
        .filter(|p| p.lateness_warning.is_some())
        .collect();
    if late.len() <= 3 {
        return late
            .iter()
            .map(|p| {
                (
                    format!("{} / {}", p.condition, p.sink),
                    p.lateness_warning.clone().unwrap_or_default(),
                )
            })
            .collect();
    }
    let p99s: Vec<f64> = late
        .iter()
        .filter_map(|p| p.send_lateness.map(|l| l.p99_us))
        .collect();
    let lo = p99s.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = p99s.iter().copied().fold(0.0, f64::max);
    vec![(
        format!("{} of {} pairs", late.len(), pairs.len()),
        format!(
            "the load generator sent late (p99 {lo:.0} to {hi:.0} µs, over the {limit_us:.0} µs limit; see the send late column): these latencies include its own delay. Usually the machine is busy: close other work, or measure the floor with `loglag load --calibrate`"
        ),
    )]
}

/// A preset's results: one row per (step, condition, sink), each step being a full
/// lab run written to its own subdirectory.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PresetSummary {
    pub schema: u32,
    pub preset: String,
    pub description: String,
    /// Step labels, in order; each is a subdirectory of `--out`.
    pub steps: Vec<String>,
    pub rows: Vec<PresetRow>,
    /// What the numbers favour, and why (the sweep).
    pub verdict: Option<String>,
}

/// One pair of one step.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PresetRow {
    pub step: String,
    pub closed: Option<usize>,
    pub stop_signal: String,
    pub batch_bytes: Option<usize>,
    pub flush_interval_ms: Option<u64>,
    /// Log bytes read, summed over rounds.
    pub log_bytes: u64,
    pub pair: PairSummary,
}

/// What `loglag lab hops` measured (summary.json's `hops` section).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HopsSummary {
    /// The settings, in words: load, calls, connection, work, body size.
    pub params: HopsParams,
    /// Each topology, traced and (for the overhead) untraced.
    pub topologies: Vec<TopologySummary>,
    /// services − monolith at each percentile (traced runs).
    pub tax: Vec<TaxRow>,
    /// Each hop's time split into its parts: medians over the traced requests.
    pub breakdown: Vec<HopBreakdown>,
    /// The median and the p99 request of each traced topology, span by span.
    pub waterfalls: Vec<Waterfall>,
    /// The OTLP/JSON file with every span, relative to the output directory.
    pub spans_file: Option<String>,
    pub spans: usize,
    /// Every run returned these same bytes for request 0 (checked; a difference stops
    /// the lab).
    pub identical_body_bytes: usize,
    pub machine: Machine,
    /// Set when a topology ran saturated: the tax is then queueing, not the hop.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation: Option<String>,
    /// `--sweep`: both topologies at each offered rate, and where each saturates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<HopsSweep>,
    /// Traced − untraced per topology, with intervals (empty with `--no-overhead`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tracing_cost: Vec<TracingCost>,
}

/// `lab hops --sweep`: latency against offered load, both topologies, untraced.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HopsSweep {
    /// Seconds of load per point.
    pub duration_s: f64,
    pub points: Vec<SweepPoint>,
    /// Each topology's knee and capacity.
    pub knees: Vec<Knee>,
}

/// One topology at one offered rate.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SweepPoint {
    pub offered_rps: f64,
    pub topology: String,
    /// Responses per second achieved.
    pub rps: f64,
    pub errors: u64,
    pub mean_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

/// Where a topology stops keeping up.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Knee {
    pub topology: String,
    /// The lowest offered rate it did not keep up with (served under 90% of it, or a
    /// p99 over 5× its p99 at the lowest rate); `None` if it kept up at every rate.
    pub knee_rps: Option<f64>,
    /// The most responses per second it achieved at any point.
    pub capacity_rps: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HopsParams {
    pub users: Option<usize>,
    pub rate: Option<f64>,
    pub duration_s: f64,
    pub calls: String,
    pub connection: String,
    pub work: String,
    pub work_ms: f64,
    pub body_bytes: usize,
    pub threads: usize,
    pub trace_every: u64,
    pub netns: bool,
}

/// One topology's run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TopologySummary {
    /// `monolith` or `services`.
    pub topology: String,
    /// Whether spans were collected in this run.
    pub traced: bool,
    pub requests: u64,
    pub errors: u64,
    pub rps: f64,
    pub mean_ms: Option<f64>,
    pub p50_ms: Option<f64>,
    pub p95_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    /// Latency at each of [`HOP_PERCENTILES`], for the chart.
    pub percentiles_ms: Vec<(f64, f64)>,
}

/// The percentiles `lab hops` reports and draws.
pub const HOP_PERCENTILES: [f64; 9] = [10.0, 25.0, 50.0, 75.0, 90.0, 95.0, 99.0, 99.9, 100.0];

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaxRow {
    /// `mean`, `p50`, `p95`, `p99`, `max`.
    pub at: String,
    pub monolith_ms: Option<f64>,
    pub services_ms: Option<f64>,
    pub tax_ms: Option<f64>,
    /// 95% bootstrap interval of `tax_ms` over the requests of each run (none for max).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tax_ci_ms: Option<(f64, f64)>,
}

/// What collecting spans cost one topology: traced − untraced, with 95% bootstrap
/// intervals over the requests of the two runs.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TracingCost {
    pub topology: String,
    pub p50_ms: f64,
    pub p50_ci_ms: (f64, f64),
    pub p99_ms: f64,
    pub p99_ci_ms: (f64, f64),
}

/// Where one hop's time goes (medians, ms).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HopBreakdown {
    /// `payment` or `inventory`.
    pub hop: String,
    pub samples: usize,
    /// TCP connect and HTTP handshake (0 on a pooled connection).
    pub connect_ms: f64,
    /// Connected → the server's span starts: writing the request, the transfer and
    /// waiting to be scheduled on the server.
    pub request_ms: f64,
    /// The server's handler (its own span).
    pub handler_ms: f64,
    /// The handler's end → the client has the whole response.
    pub response_ms: f64,
    /// The whole call as the client saw it.
    pub call_ms: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Waterfall {
    pub topology: String,
    /// `p50` or `p99`.
    pub which: String,
    pub request_id: u64,
    pub latency_ms: f64,
    pub trace_id: String,
    pub spans: Vec<WaterfallSpan>,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WaterfallSpan {
    pub service: String,
    pub name: String,
    pub depth: usize,
    /// From the root span's start.
    pub start_ms: f64,
    pub duration_ms: f64,
    /// (offset ms, name) of the span's events.
    pub events: Vec<(f64, String)>,
}

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
    pub truncated: u64,
    pub write_syscalls: u64,
    pub io_errors: u64,
    pub max_backlog_bytes: u64,
    pub write_p50_us: f64,
    pub write_p99_us: f64,
    pub write_max_us: f64,
    pub recovered_records: u64,
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
    /// How late the generator sent (open loop only).
    pub send_lateness: Option<Lateness>,
    /// Set when `send_lateness.p99_us` exceeds the limit.
    pub lateness_warning: Option<String>,
    /// Set when Ctrl-C stopped the load early, saying what the figures cover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
    /// With `--calibrate`: the same load against a null server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor: Option<Box<LoadSummary>>,
}

impl LoadSummary {
    /// The calibration floor (if any), then this summary: the order tables show them.
    pub fn with_floor(&self) -> impl Iterator<Item = &LoadSummary> {
        self.floor
            .as_deref()
            .into_iter()
            .chain(std::iter::once(self))
    }
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

/// What `loglag torture` measured: each part that ran.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TortureSummary {
    pub schema: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kill9: Option<Kill9Report>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub soak: Vec<SoakResult>,
    /// tracing-appender in the same soak, for comparison (it reports no accounting).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub soak_tracing_appender: Option<SoakResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub hung: Vec<HungResult>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultResult>,
}

impl TortureSummary {
    /// Every part that ran held its promises: recovery exact, every record accounted.
    pub fn passed(&self) -> bool {
        self.kill9.as_ref().is_none_or(|k| k.passed)
            && self.soak.iter().all(|r| r.accounted)
            && self.hung.iter().all(|r| r.accounted)
            && self.faults.iter().all(|r| r.accounted)
    }
}

/// The flooding child's overflow policy in the kill -9 torture.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FloodPolicy {
    /// `Overflow::Block`: nothing is dropped, so every record whose call returned must
    /// be in the sink.
    #[default]
    Block,
    /// The default policy (`ShedByLevel`): records are dropped under the flood, so
    /// each one whose call returned must be in the sink or counted in an in-band
    /// report, live or written by recovery.
    Default,
}

/// One kill -9 trial's outcome.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Trial {
    /// Calls that had returned when the child was killed.
    pub expected: u64,
    /// Of those, records found in the sink after recovery.
    pub recovered: u64,
    /// Records found more than once.
    pub duplicates: u64,
    /// Records out of order for their producer.
    pub out_of_order: u64,
    /// Lines that are not a record the child wrote (corruption).
    pub corrupt: u64,
    /// Records recovery delivered from the spool.
    pub from_spool: u64,
    /// Torn regions recovery skipped.
    pub torn: u64,
    /// Files the records were spread over (rotation).
    #[serde(default)]
    pub files: u64,
    /// Drops announced in the sink: the live in-band reports and recovery's report of
    /// what the killed process had not announced (only with the default policy).
    #[serde(default)]
    pub announced: u64,
}

/// The summary of all trials.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Kill9Report {
    pub schema: u32,
    pub trials: usize,
    pub expected: u64,
    pub recovered: u64,
    pub duplicates: u64,
    pub out_of_order: u64,
    pub corrupt: u64,
    pub from_spool: u64,
    pub torn: u64,
    /// Every trial found every expected record exactly once, in order.
    /// The sink rotated at this size (`--rotate-bytes`), and the most files one trial
    /// spread its records over.
    #[serde(default)]
    pub rotate_bytes: Option<u64>,
    #[serde(default)]
    pub max_files: u64,
    /// The overflow policy of the flooding child.
    #[serde(default)]
    pub policy: FloodPolicy,
    /// Drops announced in the sink, over all trials.
    #[serde(default)]
    pub announced: u64,
    pub passed: bool,
}

/// One policy under sustained overload.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SoakResult {
    pub policy: String,
    pub seconds: f64,
    pub offered_bytes_per_s: u64,
    pub sink_bytes_per_s: u64,
    pub accepted: u64,
    pub written: u64,
    pub dropped: u64,
    /// Of the drops: refused because the budget was full.
    pub dropped_queue_full: u64,
    /// Of the drops: still queued when the 200 ms shutdown deadline passed.
    pub dropped_shutdown: u64,
    pub in_flight_after_shutdown: u64,
    /// written + dropped + in flight == accepted, at the end.
    pub accounted: bool,
    pub budget_bytes: u64,
    /// Peak RSS growth over `baseline` (the process before any pipeline was built).
    pub max_rss_growth_bytes: u64,
    pub call_p50_us: f64,
    pub call_p99_us: f64,
    pub call_max_us: f64,
}

/// The caller's longest wait once the sink hangs and the budget is full.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HungResult {
    pub policy: String,
    /// Calls timed, after the budget was full.
    pub calls: u64,
    pub p99_wait_us: f64,
    pub max_wait_us: f64,
    /// Every drop of the run: the calls that found the budget full (the fill-up's
    /// included) and what was still queued at the shutdown deadline.
    pub dropped: u64,
    /// Every call made: the fill-up and the timed calls.
    #[serde(default)]
    pub all_calls: u64,
    /// Drops because the budget was full.
    #[serde(default)]
    pub dropped_queue_full: u64,
    /// Records still queued when the shutdown deadline passed (the sink never returns).
    #[serde(default)]
    pub dropped_shutdown: u64,
    pub accounted: bool,
}

/// The caller's experience of a failing sink.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct FaultResult {
    pub fault: String,
    pub calls: u64,
    pub max_wait_us: f64,
    pub io_errors: u64,
    pub dropped: u64,
    pub written: u64,
    pub accounted: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(condition: &str, late_p99_us: f64) -> PairSummary {
        let mut p: PairSummary = serde_json::from_value(serde_json::json!({
            "condition": condition, "sink": "fast", "runs": 1, "requests": 100,
            "p50_ms": 0.1, "p99_ms": 1.0, "max_ms": 1.0, "http_errors": 0, "timeouts": 0,
            "gen_us": null, "log_call_us": null, "max_backlog_kib": null, "drain_s": 0.0,
            "rps_api": 20.0, "rps_logs_read": 20.0, "cpu_cores": null, "dropped": 0,
            "queue_full": 0, "verified": true
        }))
        .unwrap();
        let lateness = Lateness {
            mean_us: late_p99_us / 2.0,
            p99_us: late_p99_us,
            max_us: late_p99_us * 2.0,
        };
        p.lateness_warning = lateness.warning(100.0);
        p.send_lateness = Some(lateness);
        p
    }

    #[test]
    fn a_few_late_pairs_are_named_and_many_are_summed_up() {
        let few = [pair("none", 50.0), pair("a", 300.0), pair("b", 200.0)];
        let lines = lateness_warnings(&few, 100.0);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].0, "a / fast");
        assert!(lines[0].1.contains("p99 300 µs"), "{:?}", lines[0]);

        let many: Vec<PairSummary> = (0..6)
            .map(|i| pair(&format!("c{i}"), 200.0 + 100.0 * i as f64))
            .chain([pair("calm", 10.0)])
            .collect();
        let lines = lateness_warnings(&many, 100.0);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].0, "6 of 7 pairs");
        assert!(lines[0].1.contains("p99 200 to 700 µs"), "{:?}", lines[0]);
        assert!(lateness_warnings(&[pair("calm", 10.0)], 100.0).is_empty());
    }
}
