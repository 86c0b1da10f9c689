//! What a lab run is asked to do: the validated plan and the order of its runs.

use std::path::PathBuf;
use std::time::Duration;

use crate::api::condition::Condition;
use crate::load::Connection;

/// The reader's speed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SinkKind {
    /// No artificial limit.
    Fast,
    /// Capped at the plan's `slow_rate`.
    Slow,
}

impl SinkKind {
    pub fn as_str(self) -> &'static str {
        match self {
            SinkKind::Fast => "fast",
            SinkKind::Slow => "slow",
        }
    }
}

impl std::str::FromStr for SinkKind {
    type Err = String;
    fn from_str(s: &str) -> Result<SinkKind, String> {
        match s.trim() {
            "fast" => Ok(SinkKind::Fast),
            "slow" => Ok(SinkKind::Slow),
            other => Err(format!("unknown sink {other:?}: expected fast or slow")),
        }
    }
}

/// A validated lab plan.
#[derive(Debug, Clone)]
pub struct LabPlan {
    pub conditions: Vec<Condition>,
    pub sinks: Vec<SinkKind>,
    pub rounds: usize,
    pub rate: f64,
    pub duration: Duration,
    pub connection: Connection,
    pub slow_rate: u64,
    pub read_size: usize,
    pub pipe_size: Option<usize>,
    pub threads: usize,
    pub warmup: usize,
    pub cpu_limit: Option<f64>,
    /// An external API command with `{port}`, `{log_path}` and `{condition}` placeholders.
    pub app: Option<String>,
    /// The `loglag` executable, used to start `serve` and `sink` children.
    pub exe: PathBuf,
    /// How long to wait for the log to drain after the last response.
    pub drain_timeout: Duration,
    /// Runs whose p99 send lateness exceeds this (µs) are flagged.
    pub lateness_limit_us: f64,
}

impl LabPlan {
    /// The runs in order: every pair each round, each round starting one pair later.
    pub fn schedule(&self) -> Vec<(usize, Condition, SinkKind)> {
        let pairs: Vec<(Condition, SinkKind)> = self
            .conditions
            .iter()
            .flat_map(|&c| self.sinks.iter().map(move |&s| (c, s)))
            .collect();
        let mut out = Vec::new();
        for round in 0..self.rounds {
            for k in 0..pairs.len() {
                let (c, s) = pairs[(round + k) % pairs.len()];
                out.push((round, c, s));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::Lateness;

    #[test]
    fn rounds_rotate_their_starting_pair() {
        let plan = LabPlan {
            conditions: vec![Condition::None, Condition::JsonSync],
            sinks: vec![SinkKind::Fast, SinkKind::Slow],
            rounds: 2,
            rate: 20.0,
            duration: Duration::from_secs(1),
            connection: Connection::New,
            slow_rate: 1,
            read_size: 4096,
            pipe_size: None,
            threads: 1,
            warmup: 2,
            cpu_limit: None,
            app: None,
            exe: PathBuf::new(),
            drain_timeout: Duration::from_secs(1),
            lateness_limit_us: Lateness::DEFAULT_LIMIT_US,
        };
        let s = plan.schedule();
        assert_eq!(s.len(), 8);
        assert_eq!((s[0].1, s[0].2), (Condition::None, SinkKind::Fast));
        assert_eq!(
            (s[4].1, s[4].2),
            (Condition::None, SinkKind::Slow),
            "round 2 starts one pair later"
        );
        assert_eq!((s[7].1, s[7].2), (Condition::None, SinkKind::Fast));
    }
}
