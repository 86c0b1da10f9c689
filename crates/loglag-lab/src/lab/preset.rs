//! The presets: the lab's plan for the 002 and 003 experiments, run as a few steps
//! (a stop signal, a concurrency, a grid point), each a complete lab run of its own.

use std::time::Duration;

use super::plan::{LabPlan, LabSettings, PlanError, RunCondition, Signal, SinkKind};
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
    pub stop_signal: Option<Signal>,
    pub record: Option<RecordShape>,
    /// The sweep's grid, when not the reference's.
    pub batch_bytes: Option<Vec<usize>>,
    pub flush_intervals: Option<Vec<Duration>>,
}

/// One step of a preset: a label (its subdirectory) and its plan.
#[derive(Debug, Clone)]
pub struct Step {
    pub label: String,
    pub plan: LabPlan,
}

/// What a preset sets unless the user says otherwise, stated once: the steps use them
/// and the CLI's `--help` prints them.
pub mod defaults {
    use std::time::Duration;

    /// Every preset reuses connections (the references' clients did).
    pub const CONNECTION: crate::load::Connection = crate::load::Connection::Keepalive;
    /// Load per step, buffers and blocking.
    pub const DURATION: Duration = Duration::from_secs(10);
    /// `buffers`: connections of its closed loop.
    pub const BUFFERS_CLOSED: usize = 100;
    /// `blocking`: one step per closed loop of this many connections.
    pub const BLOCKING_CLOSED: [usize; 2] = [500, 2000];
    /// `sweep`: load per step, and its open-loop rate.
    pub const SWEEP_DURATION: Duration = Duration::from_secs(5);
    pub const SWEEP_RATE: f64 = 1000.0;
}

/// A preset's step whose plan cannot run, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct StepError {
    pub preset: Preset,
    pub step: String,
    pub error: PlanError,
}

impl std::fmt::Display for StepError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--preset {} (step {}): {}",
            self.preset.as_str(),
            self.step,
            self.error
        )
    }
}

impl std::error::Error for StepError {}

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
    /// user set explicitly. Each step's plan is checked as it will run (the base alone
    /// is not: the preset sets its conditions, which `--baseline` must name).
    pub fn steps(self, base: &LabSettings, o: &Overrides) -> Result<Vec<Step>, StepError> {
        self.step_settings(base.clone(), o)
            .into_iter()
            .map(|(label, settings)| match LabPlan::new(settings) {
                Ok(plan) => Ok(Step { label, plan }),
                Err(error) => Err(StepError {
                    preset: self,
                    step: label,
                    error,
                }),
            })
            .collect()
    }

    fn step_settings(self, mut plan: LabSettings, o: &Overrides) -> Vec<(String, LabSettings)> {
        let built_in = |cs: &[Condition]| cs.iter().map(|&c| RunCondition::BuiltIn(c)).collect();
        plan.sinks = o.sinks.clone().unwrap_or_else(|| vec![SinkKind::Fast]);
        plan.connection = o.connection.unwrap_or(defaults::CONNECTION);
        plan.stop_builtin = true;
        match self {
            Preset::Buffers => {
                plan.conditions = o
                    .conditions
                    .clone()
                    .unwrap_or_else(|| built_in(&Condition::BUFFERS));
                plan.record = o.record.unwrap_or(RecordShape::Three);
                plan.closed = Some(o.closed.unwrap_or(defaults::BUFFERS_CLOSED));
                plan.duration = o.duration.unwrap_or(defaults::DURATION);
                plan.threads = o.threads.unwrap_or(1);
                let signals = match o.stop_signal {
                    Some(s) => vec![s],
                    None => vec![Signal::Term, Signal::Kill],
                };
                signals
                    .into_iter()
                    .map(|signal| {
                        (
                            signal.as_str().to_owned(),
                            LabSettings {
                                stop_signal: signal,
                                ..plan.clone()
                            },
                        )
                    })
                    .collect()
            }
            Preset::Blocking => {
                plan.conditions = o
                    .conditions
                    .clone()
                    .unwrap_or_else(|| built_in(&Condition::BLOCKING));
                plan.record = o.record.unwrap_or(RecordShape::Line120);
                plan.duration = o.duration.unwrap_or(defaults::DURATION);
                plan.threads = o
                    .threads
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
                plan.stop_signal = o.stop_signal.unwrap_or(Signal::Term);
                let levels = match o.closed {
                    Some(n) => vec![n],
                    None => defaults::BLOCKING_CLOSED.to_vec(),
                };
                levels
                    .into_iter()
                    .map(|n| {
                        (
                            format!("closed-{n}"),
                            LabSettings {
                                closed: Some(n),
                                ..plan.clone()
                            },
                        )
                    })
                    .collect()
            }
            Preset::Sweep => {
                plan.conditions = o
                    .conditions
                    .clone()
                    .unwrap_or_else(|| built_in(&[Condition::Loglag]));
                plan.record = o.record.unwrap_or(RecordShape::Line120);
                plan.duration = o.duration.unwrap_or(defaults::SWEEP_DURATION);
                plan.rate = o.rate.unwrap_or(defaults::SWEEP_RATE);
                plan.closed = o.closed;
                plan.threads = o.threads.unwrap_or(1);
                plan.stop_signal = o.stop_signal.unwrap_or(Signal::Term);
                let batches = o
                    .batch_bytes
                    .clone()
                    .unwrap_or_else(|| SWEEP_BATCH_BYTES.to_vec());
                let intervals = o
                    .flush_intervals
                    .clone()
                    .unwrap_or_else(|| SWEEP_INTERVALS_MS.map(Duration::from_millis).to_vec());
                let mut steps = Vec::new();
                for &batch in &batches {
                    for &interval in &intervals {
                        steps.push((
                            format!(
                                "batch-{}-interval-{}ms",
                                crate::sys::units::format_bytes(batch as u64),
                                interval.as_millis()
                            ),
                            LabSettings {
                                loglag_batch_bytes: Some(batch),
                                loglag_flush_interval: Some(interval),
                                ..plan.clone()
                            },
                        ));
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

/// The most log a crash may lose that the sweep's verdict accepts: records older than
/// this still queued at a SIGKILL.
pub const LOSS_WINDOW_MS: f64 = 200.0;

/// Why a point's figures cannot carry a comparison, if they cannot: the generator was
/// late (so latency includes the instrument's own delay), requests failed, or what was
/// logged was not verified.
pub fn flagged(r: &PresetRow) -> Option<String> {
    let p = &r.pair;
    let why = if p.metrics.lateness_warning.is_some() {
        "the load generator was late"
    } else if p.metrics.saturation_warning.is_some() {
        "the API was saturated"
    } else if p.metrics.machine_warning.is_some() {
        "the machine was saturated"
    } else if p.metrics.http_errors > 0 || p.metrics.timeouts > 0 {
        "requests failed or timed out"
    } else if !p.metrics.verified {
        "the log was not verified"
    } else {
        return None;
    };
    Some(format!("{} ({})", r.step, why))
}

/// Which grid point the sweep's numbers favour, and why. Of the points whose p99 is
/// within 10% (or 0.2 ms) of the best and whose oldest queued record stayed under
/// [`LOSS_WINDOW_MS`], the one that writes least often; ties go to the smaller batch
/// (less memory held), then the shorter interval.
///
/// No point is favoured when any point is [`flagged`]: the verdict then says
/// "Inconclusive" and why. The p99 spread between rounds is given when there was more
/// than one round, and its absence said when there was not.
pub fn sweep_verdict(rows: &[PresetRow]) -> Option<String> {
    let measured: Vec<&PresetRow> = rows
        .iter()
        .filter(|r| {
            r.pair.metrics.p99_ms.is_some() && r.pair.metrics.process.log_writes_per_min.is_some()
        })
        .collect();
    if measured.is_empty() {
        return None;
    }
    // A point with no latency or write rate (every request failed) is flagged too: a
    // favourite among the others would hide it.
    let flags: Vec<String> = rows
        .iter()
        .filter_map(|r| {
            if r.pair.metrics.p99_ms.is_none()
                || r.pair.metrics.process.log_writes_per_min.is_none()
            {
                Some(format!("{} (nothing was measured)", r.step))
            } else {
                flagged(r)
            }
        })
        .collect();
    if !flags.is_empty() {
        return Some(format!(
            "Inconclusive: {} of {} points were measured under conditions that cannot carry a comparison: {}. No point is favoured; run again on a quieter machine (see the warnings), with more --rounds, or at a rate the API keeps up with.",
            flags.len(),
            rows.len(),
            flags.join(", ")
        ));
    }
    let best_p99 = measured
        .iter()
        .filter_map(|r| r.pair.metrics.p99_ms)
        .fold(f64::INFINITY, f64::min);
    if !best_p99.is_finite() {
        return None;
    }
    let tolerance = (best_p99 * 0.10).max(0.2);
    let writes = |r: &PresetRow| {
        r.pair
            .metrics
            .process
            .log_writes_per_min
            .unwrap_or(f64::MAX)
            / 60.0
    };
    let age = |r: &PresetRow| r.pair.metrics.process.oldest_queued_ms.unwrap_or(0.0);
    let fewest_writes = |a: &&PresetRow, b: &&PresetRow| {
        // Write rates within 5% are the same rate measured twice (the window is not exact).
        let (wa, wb) = (writes(a), writes(b));
        let same = (wa - wb).abs() <= 0.05 * wa.max(wb);
        (if same {
            std::cmp::Ordering::Equal
        } else {
            wa.total_cmp(&wb)
        })
        .then(a.batch_bytes.cmp(&b.batch_bytes))
        .then(a.flush_interval_ms.cmp(&b.flush_interval_ms))
    };
    let label = |r: &PresetRow| {
        format!(
            "{} KiB / {} ms",
            r.batch_bytes.unwrap_or(0) >> 10,
            r.flush_interval_ms.unwrap_or(0)
        )
    };
    let fast_enough: Vec<&PresetRow> = measured
        .iter()
        .copied()
        .filter(|r| r.pair.metrics.p99_ms.unwrap_or(f64::MAX) <= best_p99 + tolerance)
        .collect();
    let pick = fast_enough
        .iter()
        .copied()
        .filter(|r| age(r) <= LOSS_WINDOW_MS)
        .min_by(fewest_writes)
        .or_else(|| fast_enough.iter().copied().min_by(fewest_writes))?;
    let spread = |r: &PresetRow| {
        let interval = r.pair.p99_ms_interval.map_or_else(String::new, |(lo, hi)| {
            format!(", 95% interval {lo:.2}–{hi:.2} ms")
        });
        match (r.pair.runs, r.pair.p99_ms_range) {
            (n, Some((lo, hi))) if n > 1 => {
                format!("{interval}, {lo:.2}–{hi:.2} ms over {n} rounds")
            }
            _ => interval,
        }
    };
    let mut text = format!(
        "The numbers favour {}: its p99 ({:.2} ms{}) is within {tolerance:.2} ms of the best ({best_p99:.2} ms); of those points whose oldest queued record stayed under {LOSS_WINDOW_MS:.0} ms (what a SIGKILL can lose), it writes least often ({:.1} writes/s, the oldest record {:.0} ms).",
        label(pick),
        pick.pair.metrics.p99_ms.unwrap_or(0.0),
        spread(pick),
        writes(pick),
        age(pick),
    );
    if pick.pair.runs <= 1 {
        text.push_str(" One round: no spread between rounds is known (--rounds 3 gives one).");
    }
    if let Some(fewer) = fast_enough.iter().copied().min_by(fewest_writes) {
        if fewer.step != pick.step && writes(fewer) < writes(pick) {
            text.push_str(&format!(
                " {} writes less ({:.1} writes/s) but holds records up to {:.0} ms.",
                label(fewer),
                writes(fewer),
                age(fewer)
            ));
        }
    }
    let slowest = measured.iter().max_by(|a, b| {
        a.pair
            .metrics
            .p99_ms
            .unwrap_or(0.0)
            .total_cmp(&b.pair.metrics.p99_ms.unwrap_or(0.0))
    })?;
    if slowest.pair.metrics.p99_ms.unwrap_or(0.0) > best_p99 + tolerance {
        text.push_str(&format!(
            " The slowest point is {} (p99 {:.2} ms{}).",
            label(slowest),
            slowest.pair.metrics.p99_ms.unwrap_or(0.0),
            spread(slowest)
        ));
    } else {
        text.push_str(" At this rate every point's p99 is within that margin: the setting moves syscalls and the loss window, not latency.");
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{Metrics, PairSummary, ProcessFigures};

    fn row(batch_k: usize, interval: u64, p99: f64, writes_per_s: f64, age_ms: f64) -> PresetRow {
        let pair: PairSummary = serde_json::from_value(serde_json::json!({
            "condition": "loglag", "sink": "fast", "runs": 1, "requests": 1000,
            "p50_ms": 0.1, "p99_ms": p99, "max_ms": 1.0, "http_errors": 0, "timeouts": 0,
            "gen_us": null, "log_call_us": null, "max_backlog_kib": null, "drain_s": 0.0,
            "rps_api": 1000.0, "rps_logs_read": 1000.0, "cpu_cores": null, "dropped": 0,
            "queue_full": 0, "verified": true
        }))
        .unwrap();
        PresetRow {
            step: format!("{batch_k}-{interval}"),
            closed: None,
            stop_signal: "term".into(),
            batch_bytes: Some(batch_k << 10),
            flush_interval_ms: Some(interval),
            log_bytes: 0,
            pair: PairSummary {
                metrics: Metrics {
                    process: ProcessFigures {
                        log_writes_per_min: Some(writes_per_s * 60.0),
                        oldest_queued_ms: Some(age_ms),
                        ..ProcessFigures::default()
                    },
                    ..pair.metrics
                },
                ..pair
            },
        }
    }

    #[test]
    fn the_verdict_weighs_latency_writes_and_the_loss_window() {
        let rows = vec![
            row(4, 10, 0.20, 100.0, 12.0),
            row(32, 100, 0.21, 10.0, 96.0),
            row(128, 100, 0.20, 10.1, 100.0),
            row(1024, 2000, 0.19, 0.5, 1990.0),
            row(1024, 10, 5.0, 100.0, 12.0),
        ];
        let v = sweep_verdict(&rows).unwrap();
        assert!(v.starts_with("The numbers favour 32 KiB / 100 ms"), "{v}");
        assert!(v.contains("1024 KiB / 2000 ms writes less"), "{v}");
        assert!(v.contains("slowest point is 1024 KiB / 10 ms"), "{v}");
        assert!(v.contains("One round"), "{v}");
        assert_eq!(sweep_verdict(&[]), None);
    }

    /// The run: 15 of 16 points flagged for a late generator, and the lab still
    /// named a favourite. A flagged point makes the verdict inconclusive, and says why.
    #[test]
    fn a_flagged_point_makes_the_verdict_inconclusive() {
        let mut rows = vec![
            row(4, 10, 0.20, 100.0, 12.0),
            row(32, 100, 0.21, 10.0, 96.0),
            row(128, 100, 0.20, 10.1, 100.0),
        ];
        rows[1].pair.metrics.lateness_warning = Some("sends were up to 276 ms late".into());
        rows[2].pair.metrics.http_errors = 3;
        let v = sweep_verdict(&rows).unwrap();
        assert!(v.starts_with("Inconclusive: 2 of 3 points"), "{v}");
        assert!(v.contains("32-100 (the load generator was late)"), "{v}");
        assert!(v.contains("128-100 (requests failed or timed out)"), "{v}");
        assert!(!v.contains("favour "), "{v}");
        // A point where nothing was measured is not silently left out.
        let mut rows = vec![
            row(4, 10, 0.20, 100.0, 12.0),
            row(32, 100, 0.21, 10.0, 96.0),
        ];
        rows[1].pair.metrics.p99_ms = None;
        let v = sweep_verdict(&rows).unwrap();
        assert!(v.contains("32-100 (nothing was measured)"), "{v}");
        // With rounds, the favourite's spread is given.
        let mut rows = vec![
            row(4, 10, 0.20, 100.0, 12.0),
            row(32, 100, 0.21, 10.0, 96.0),
        ];
        rows[1].pair.runs = 3;
        rows[1].pair.p99_ms_range = Some((0.19, 0.24));
        let v = sweep_verdict(&rows).unwrap();
        assert!(v.contains("0.19–0.24 ms over 3 rounds"), "{v}");
    }

    #[test]
    fn presets_parse_and_plan_their_steps() {
        let base = LabSettings::reference(Vec::new(), Vec::new(), "loglag".into());
        let buffers = Preset::Buffers.steps(&base, &Overrides::default()).unwrap();
        assert_eq!(
            buffers.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(),
            ["term", "kill"]
        );
        assert!(buffers
            .iter()
            .all(|s| s.plan.stop_builtin && s.plan.closed == Some(100)));
        assert_eq!(buffers[1].plan.stop_signal, Signal::Kill);
        let only_kill = Preset::Buffers
            .steps(
                &base,
                &Overrides {
                    stop_signal: Some(Signal::Kill),
                    closed: Some(7),
                    ..Overrides::default()
                },
            )
            .unwrap();
        assert_eq!(only_kill.len(), 1);
        assert_eq!(only_kill[0].plan.closed, Some(7));
        let blocking = Preset::Blocking
            .steps(&base, &Overrides::default())
            .unwrap();
        assert_eq!(
            blocking.iter().map(|s| s.plan.closed).collect::<Vec<_>>(),
            [Some(500), Some(2000)]
        );
        let sweep = Preset::Sweep.steps(&base, &Overrides::default()).unwrap();
        assert_eq!(sweep.len(), 16);
        assert_eq!(sweep[0].label, "batch-4KiB-interval-10ms");
        assert_eq!(sweep[15].plan.loglag_batch_bytes, Some(1 << 20));
        assert_eq!("sweep".parse::<Preset>().unwrap(), Preset::Sweep);
        assert!("buffer".parse::<Preset>().is_err());
        // A step's plan is checked like any other.
        let zero = Preset::Sweep.steps(
            &base,
            &Overrides {
                duration: Some(Duration::ZERO),
                ..Overrides::default()
            },
        );
        assert_eq!(
            zero.unwrap_err().to_string(),
            "--preset sweep (step batch-4KiB-interval-10ms): --duration must be positive"
        );
        // --baseline is checked against the conditions each step runs, not the
        // reference's that the base holds before the preset sets its own.
        let with_baseline = LabSettings {
            baseline: Some("loglag".into()),
            ..base.clone()
        };
        assert!(Preset::Buffers
            .steps(&with_baseline, &Overrides::default())
            .is_ok());
        let not_run = LabSettings {
            baseline: Some("json-sync".into()),
            ..base.clone()
        };
        let err = Preset::Buffers
            .steps(&not_run, &Overrides::default())
            .unwrap_err();
        assert!(matches!(err.error, PlanError::BaselineNotRun(..)), "{err}");
    }
}
