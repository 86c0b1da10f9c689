//! The presets: the lab's plan for the 002 and 003 experiments, run as a few steps
//! (a stop signal, a concurrency, a grid point), each a complete lab run of its own.

use std::time::Duration;

use super::plan::{LabPlan, RunCondition, SinkKind, StopSignal};
use crate::api::condition::{Condition, RecordShape};
use crate::load::Connection;
use crate::report::{PresetRow, PresetSummary, Summary};

/// A named experiment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Reference 002: memory buffers against a write per record, and what a stop loses.
    Buffers,
    /// Reference 003: what synchronous logging does to a multi-threaded server.
    Blocking,
    /// Reference 003's tuning table: loglag's batch size against its flush interval.
    Sweep,
}

/// What the user set explicitly; everything else is the preset's.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    pub conditions: Option<Vec<RunCondition>>,
    pub sinks: Option<Vec<SinkKind>>,
    pub duration: Option<Duration>,
    pub rate: Option<f64>,
    pub closed: Option<usize>,
    pub connection: Option<Connection>,
    pub threads: Option<usize>,
    pub stop_signal: Option<StopSignal>,
    pub record: Option<RecordShape>,
}

/// One step of a preset: a label (its subdirectory) and its plan.
#[derive(Debug, Clone)]
pub struct Step {
    pub label: String,
    pub plan: LabPlan,
}

/// The sweep's grid (reference 003's table has the diagonal).
pub const SWEEP_BATCH_BYTES: [usize; 4] = [4 << 10, 32 << 10, 128 << 10, 1 << 20];
pub const SWEEP_INTERVALS_MS: [u64; 4] = [10, 100, 500, 2000];

impl Preset {
    pub const ALL: [Preset; 3] = [Preset::Buffers, Preset::Blocking, Preset::Sweep];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Buffers => "buffers",
            Preset::Blocking => "blocking",
            Preset::Sweep => "sweep",
        }
    }

    /// For `--help`.
    pub fn describe(self) -> &'static str {
        match self {
            Preset::Buffers => "ref. 002: file-sync vs memory buffers of 50/100/200 vs queue+buffer vs loglag; 3 records per request, 100 connections; stopped with SIGTERM, then with SIGKILL",
            Preset::Blocking => "ref. 003: sync-writeln, tokio-fs, channel-batch, tracing-appender, loglag on a server with a thread per core; 500 and 2000 connections",
            Preset::Sweep => "ref. 003's tuning table: loglag batch 4 KiB..1 MiB x flush interval 10 ms..2 s at 1000 requests/s",
        }
    }

    /// The plan of every step, from `base` (the user's other settings) and what the
    /// user set explicitly.
    pub fn steps(self, base: &LabPlan, o: &Overrides) -> Vec<Step> {
        let built_in = |cs: &[Condition]| cs.iter().map(|&c| RunCondition::BuiltIn(c)).collect();
        let mut plan = base.clone();
        plan.sinks = o.sinks.clone().unwrap_or_else(|| vec![SinkKind::Fast]);
        plan.connection = o.connection.unwrap_or(Connection::Keepalive);
        plan.stop_builtin = true;
        match self {
            Preset::Buffers => {
                plan.conditions = o
                    .conditions
                    .clone()
                    .unwrap_or_else(|| built_in(&Condition::BUFFERS));
                plan.record = o.record.unwrap_or(RecordShape::Three);
                plan.closed = Some(o.closed.unwrap_or(100));
                plan.duration = o.duration.unwrap_or(Duration::from_secs(10));
                plan.threads = o.threads.unwrap_or(1);
                let signals = match o.stop_signal {
                    Some(s) => vec![s],
                    None => vec![StopSignal::Term, StopSignal::Kill],
                };
                signals
                    .into_iter()
                    .map(|signal| Step {
                        label: signal.as_str().to_owned(),
                        plan: LabPlan {
                            stop_signal: signal,
                            ..plan.clone()
                        },
                    })
                    .collect()
            }
            Preset::Blocking => {
                plan.conditions = o
                    .conditions
                    .clone()
                    .unwrap_or_else(|| built_in(&Condition::BLOCKING));
                plan.record = o.record.unwrap_or(RecordShape::Line120);
                plan.duration = o.duration.unwrap_or(Duration::from_secs(10));
                plan.threads = o
                    .threads
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
                plan.stop_signal = o.stop_signal.unwrap_or(StopSignal::Term);
                let levels = match o.closed {
                    Some(n) => vec![n],
                    None => vec![500, 2000],
                };
                levels
                    .into_iter()
                    .map(|n| Step {
                        label: format!("closed-{n}"),
                        plan: LabPlan {
                            closed: Some(n),
                            ..plan.clone()
                        },
                    })
                    .collect()
            }
            Preset::Sweep => {
                plan.conditions = o
                    .conditions
                    .clone()
                    .unwrap_or_else(|| built_in(&[Condition::Loglag]));
                plan.record = o.record.unwrap_or(RecordShape::Line120);
                plan.duration = o.duration.unwrap_or(Duration::from_secs(5));
                plan.rate = o.rate.unwrap_or(1000.0);
                plan.closed = o.closed;
                plan.threads = o.threads.unwrap_or(1);
                plan.stop_signal = o.stop_signal.unwrap_or(StopSignal::Term);
                let mut steps = Vec::new();
                for batch in SWEEP_BATCH_BYTES {
                    for interval in SWEEP_INTERVALS_MS {
                        steps.push(Step {
                            label: format!("batch-{}k-interval-{interval}ms", batch >> 10),
                            plan: LabPlan {
                                loglag_batch_bytes: Some(batch),
                                loglag_flush_interval: Some(Duration::from_millis(interval)),
                                ..plan.clone()
                            },
                        });
                    }
                }
                steps
            }
        }
    }

    /// The preset's table: one row per (step, condition, sink), and what it favours.
    pub fn summarise(self, steps: &[(Step, Summary)]) -> PresetSummary {
        let mut rows = Vec::new();
        for (step, summary) in steps {
            for pair in &summary.pairs {
                let log_bytes = summary
                    .runs
                    .iter()
                    .filter(|r| r.condition == pair.condition && r.sink == pair.sink)
                    .map(|r| r.read_bytes)
                    .sum();
                rows.push(PresetRow {
                    step: step.label.clone(),
                    closed: step.plan.closed,
                    stop_signal: step.plan.stop_signal.as_str().to_owned(),
                    batch_bytes: step.plan.loglag_batch_bytes,
                    flush_interval_ms: step
                        .plan
                        .loglag_flush_interval
                        .map(|d| d.as_millis() as u64),
                    log_bytes,
                    pair: pair.clone(),
                });
            }
        }
        let verdict = match self {
            Preset::Sweep => sweep_verdict(&rows),
            _ => None,
        };
        PresetSummary {
            schema: crate::report::SCHEMA,
            preset: self.as_str().to_owned(),
            description: self.describe().to_owned(),
            steps: steps.iter().map(|(s, _)| s.label.clone()).collect(),
            rows,
            verdict,
        }
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl std::str::FromStr for Preset {
    type Err = String;
    fn from_str(s: &str) -> Result<Preset, String> {
        Preset::ALL
            .into_iter()
            .find(|p| p.as_str() == s.trim())
            .ok_or_else(|| format!("unknown preset {s:?}: expected buffers, blocking or sweep"))
    }
}

/// Which grid point the sweep's numbers favour, and why: among the points whose p99
/// is within 10% (or 0.2 ms) of the best, the one that writes least often; ties go to
/// the shorter interval, which bounds what a crash can lose.
pub fn sweep_verdict(rows: &[PresetRow]) -> Option<String> {
    let measured: Vec<&PresetRow> = rows
        .iter()
        .filter(|r| r.pair.p99_ms.is_some() && r.pair.process.log_writes_per_min.is_some())
        .collect();
    let best_p99 = measured
        .iter()
        .filter_map(|r| r.pair.p99_ms)
        .fold(f64::INFINITY, f64::min);
    if !best_p99.is_finite() {
        return None;
    }
    let tolerance = (best_p99 * 0.10).max(0.2);
    let writes = |r: &PresetRow| r.pair.process.log_writes_per_min.unwrap_or(f64::MAX);
    let pick = measured
        .iter()
        .filter(|r| r.pair.p99_ms.unwrap_or(f64::MAX) <= best_p99 + tolerance)
        .min_by(|a, b| {
            writes(a)
                .total_cmp(&writes(b))
                .then(a.flush_interval_ms.cmp(&b.flush_interval_ms))
        })?;
    let fastest = measured
        .iter()
        .min_by(|a, b| writes(a).total_cmp(&writes(b)))?;
    let label = |r: &PresetRow| {
        format!(
            "{} KiB / {} ms",
            r.batch_bytes.unwrap_or(0) >> 10,
            r.flush_interval_ms.unwrap_or(0)
        )
    };
    let mut text = format!(
        "The numbers favour {}: its p99 ({:.2} ms) is within {:.2} ms of the best ({best_p99:.2} ms), and of those points it writes least often ({:.0} writes/s).",
        label(pick),
        pick.pair.p99_ms.unwrap_or(0.0),
        tolerance,
        writes(pick) / 60.0,
    );
    if let Some(age) = pick.pair.process.oldest_queued_ms {
        text.push_str(&format!(
            " A record waits at most about {age:.0} ms there: what a SIGKILL can lose."
        ));
    }
    if fastest.step != pick.step {
        text.push_str(&format!(
            " {} writes even less ({:.1} writes/s) but its p99 is {:.2} ms.",
            label(fastest),
            writes(fastest) / 60.0,
            fastest.pair.p99_ms.unwrap_or(0.0)
        ));
    }
    Some(text)
}
