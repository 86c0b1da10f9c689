//! `loglag load`'s and `loglag sink`'s results.

use serde::{Deserialize, Serialize};

use super::common::Lateness;

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
