//! `loglag torture`'s results.

use serde::{Deserialize, Serialize};

/// What `loglag torture` measured: each part that ran (a part that did not run is
/// left out, and reads back empty).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct TortureSummary {
    pub schema: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kill9: Option<Kill9Report>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub soak: Vec<SoakResult>,
    /// tracing-appender in the same soak, for comparison (it reports no accounting).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub soak_tracing_appender: Option<SoakResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hung: Vec<HungResult>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
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
    /// Every trial found every expected record exactly once, in order.
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
