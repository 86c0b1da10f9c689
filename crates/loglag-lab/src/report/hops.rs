//! `loglag lab hops`'s results (reference 004).

use serde::{Deserialize, Serialize};

use super::common::Machine;

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
