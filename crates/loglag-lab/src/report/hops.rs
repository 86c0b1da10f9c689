//! `loglag lab hops`'s results (reference 004).

use serde::{Deserialize, Serialize};

use super::common::{Lateness, Machine};

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
    /// The rule that judged each tax row, in words with its numbers (the tables'
    /// caption). `None` in results written before the rows were judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tax_rule: Option<String>,
    /// Set when Ctrl-C (or a failure) stopped the runs: what finished is reported, and
    /// this says what is missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interrupted: Option<String>,
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
    /// Requests answered (the percentiles rest on them). `None` in results written
    /// before points carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<u64>,
    /// What the machine may have added to the point's latencies, measured as a
    /// topology run's is. `None` in results written before points carried it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<RunInterference>,
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
    /// Why the knee may be the machine's, not the topology's: what was measured at the
    /// knee's point could account for it (`hops::findings::judge_knee`). `None`: the
    /// knee holds, there is none, or results written before knees were judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
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
    /// Requests per second offered (an open loop; `None` for a closed loop, and in
    /// results written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offered_rps: Option<f64>,
    /// Requests the generator sent in the measured load: every one is either in
    /// `requests` (answered 2xx) or in `errors`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sent: Option<u64>,
    /// What else ran on the machine during the load, measured as the lab measures its
    /// runs. `None` in results written before it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interference: Option<RunInterference>,
}

/// What the machine may have added to one topology run's latencies, measured over its
/// load (from just before the first send to the last response).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunInterference {
    /// Seconds the figures below cover.
    pub window_s: f64,
    /// How long the topology's processes (every thread) waited for a CPU, runnable but
    /// not running (`/proc/PID/task/TID/schedstat`), ms over the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services_wait_ms: Option<f64>,
    /// The same for the load generator's threads.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_wait_ms: Option<f64>,
    /// Cores the topology's processes used over the window (CPU seconds ÷ seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub services_cores: Option<f64>,
    /// Cores the lab's process (the load generator) used.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_cores: Option<f64>,
    /// The share of the machine's CPU time that was busy (other tenants included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_busy: Option<f64>,
    /// Set when the machine was busy by the lab's rule (its cores 90% used or more).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_warning: Option<String>,
    /// How late the generator sent, from each request's due time (open loop only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lateness: Option<Lateness>,
}

impl RunInterference {
    /// The CPU wait of the run's processes and generator together, ms; `None` when
    /// neither was measured.
    pub fn wait_ms(&self) -> Option<f64> {
        match (self.services_wait_ms, self.generator_wait_ms) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        }
    }
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
    /// Whether the tax holds (`None` in results written before rows were judged).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<TaxVerdict>,
}

/// Whether a tax row holds, and why not, by the rule in [`HopsSummary::tax_rule`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TaxVerdict {
    pub holds: bool,
    /// Why the runs cannot carry the tax (set exactly when `holds` is false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inconclusive: Option<String>,
    /// What a reader must know of a tax that holds (a busy machine, one run each).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
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

/// Where one hop's time goes, ms: the parts of the hop's median call (the call whose
/// duration is the median of the traced calls, so the parts add up to `call_ms`); in
/// results written before `median_call`, the median of each part on its own.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct HopBreakdown {
    /// `payment` or `inventory`.
    pub hop: String,
    pub samples: usize,
    /// The parts are the median call's own (they add up to `call_ms`); false in results
    /// written before, whose parts are each part's median.
    #[serde(default)]
    pub median_call: bool,
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
    /// The request's time that no span covers (`None` in results written before).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncovered: Option<Uncovered>,
}

/// The part of a request's latency (from its scheduled send to its last byte) that no
/// span covers: the union of its spans' intervals, taken from the latency.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Uncovered {
    /// Latency − the union of the spans, ms.
    pub outside_ms: f64,
    /// Of it, before the first span began: the generator's lateness, connecting, and
    /// waiting to be accepted and read by the server (`None` when the send's time was
    /// not recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_ms: Option<f64>,
    /// Of `before_ms`, how late the generator sent the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_late_ms: Option<f64>,
    /// Of it, after the last span ended: the response's transfer and read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<f64>,
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
