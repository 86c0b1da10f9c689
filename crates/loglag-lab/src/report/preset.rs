//! A preset's results (002 buffers, 003 blocking and sweep): one row per step and pair.

use serde::{Deserialize, Serialize};

use super::lab::PairSummary;

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
