//! The presets: the lab's plan for the 002 and 003 experiments, run as a few steps
//! (a stop signal, a concurrency, a grid point), each a complete lab run of its own.

use std::path::PathBuf;
use std::time::Duration;

use super::plan::{LabPlan, LabSettings, PlanError, RunCondition, Signal, SinkKind};
use super::request::LabRequest;
pub use super::request::{preset_defaults as defaults, Preset};
use crate::api::condition::{Condition, RecordShape};
use crate::report::{PresetRow, PresetSummary, Summary};

/// One step of a preset (or the one step of a plain run, labelled ""): a label (its
/// subdirectory) and its plan.
#[derive(Debug, Clone)]
pub struct Step {
    pub label: String,
    pub plan: LabPlan,
}

/// The sweep's grid (reference 003's table has the diagonal).
pub const SWEEP_BATCH_BYTES: [usize; 4] = [4 << 10, 32 << 10, 128 << 10, 1 << 20];
pub const SWEEP_INTERVALS_MS: [u64; 4] = [10, 100, 500, 2000];

impl LabRequest {
    /// The checked plans this request runs: one step, or a preset's. Flags that do not
    /// go together are refused here, naming them; each step's plan is then checked by
    /// [`LabPlan::new`] as it will run (a preset sets its own conditions, which
    /// `--baseline` must name). `exe` is the `loglag` executable the children run.
    pub fn steps(&self, exe: PathBuf) -> Result<Vec<Step>, PlanError> {
        let base = self.settings(exe)?;
        let Some(preset) = self.preset else {
            return Ok(vec![Step {
                label: String::new(),
                plan: LabPlan::new(base)?,
            }]);
        };
        preset
            .step_settings(base, self)
            .into_iter()
            .map(|(label, settings)| match LabPlan::new(settings) {
                Ok(plan) => Ok(Step { label, plan }),
                Err(error) => Err(PlanError::InStep {
                    preset: preset.as_str(),
                    step: label,
                    error: Box::new(error),
                }),
            })
            .collect()
    }

    /// The conditions asked for, parsed (`None`: not given). An `--app`'s are its own
    /// names; the built-in API's must be known.
    fn run_conditions(&self) -> Result<Option<Vec<RunCondition>>, PlanError> {
        let app = self.app.is_some();
        (!self.conditions.is_empty())
            .then(|| {
                self.conditions
                    .iter()
                    .map(|c| {
                        RunCondition::parse(c, app)
                            .map_err(|e| PlanError::Flags(format!("--conditions: {e}")))
                    })
                    .collect()
            })
            .transpose()
    }

    /// The settings every step starts from, after the checks that concern flags
    /// together (one flag's own values are [`LabPlan::new`]'s to check).
    fn settings(&self, exe: PathBuf) -> Result<LabSettings, PlanError> {
        let refuse = |why: &str| Err(PlanError::Flags(why.to_owned()));
        let app = self.app.is_some();
        let conditions = self.run_conditions()?;
        if let Some(expect) = &self.expect_lines {
            if !app {
                return refuse(
                    "--expect-lines verifies an --app; the built-in API reports what it wrote",
                );
            }
            for name in expect.names() {
                if !conditions.iter().flatten().any(|c| c.name() == name) {
                    return refuse(&format!(
                        "--expect-lines names {name:?}, which is not in --conditions"
                    ));
                }
            }
        }
        if app && (self.record.is_some() || self.error_every.is_some()) {
            return refuse(
                "--record and --error-every shape what the built-in API logs; an --app logs on its own",
            );
        }
        if app && conditions.is_none() {
            return refuse(&format!(
                "--app needs --conditions: name the conditions your app understands; each is passed to it as {{condition}}, one run per name (the reference API's are {})",
                Condition::REFERENCE
                    .iter()
                    .map(|c| c.as_str())
                    .collect::<Vec<_>>()
                    .join(",")
            ));
        }
        if self.preset.is_some() && app {
            return refuse("--preset runs the built-in API's conditions; with --app, give --conditions and --expect-lines instead");
        }
        if self.rate.is_some() && self.closed.is_some() {
            return refuse("--rate is an open loop and --closed a closed one: give one of them");
        }
        if !app && self.app_log != crate::api::launch::AppLog::Path {
            return refuse("--app-log says where an --app writes its log; the built-in API writes to the lab's sink");
        }
        if !app && self.ready != crate::api::launch::Readiness::Connect {
            return refuse(
                "--ready says how an --app shows it is ready; the built-in API says so itself",
            );
        }
        if self.preset != Some(Preset::Sweep)
            && (self.batch_bytes.len() > 1 || self.flush_interval.len() > 1)
        {
            return refuse(
                "--batch-bytes and --flush-interval take a list only with --preset sweep",
            );
        }
        if self.batch_bytes.contains(&0) || self.flush_interval.iter().any(|d| d.is_zero()) {
            return refuse("--batch-bytes and --flush-interval must be positive");
        }
        let mut base = LabSettings::reference(
            conditions.unwrap_or_else(|| {
                Condition::REFERENCE
                    .iter()
                    .map(|&c| RunCondition::BuiltIn(c))
                    .collect()
            }),
            if self.sinks.is_empty() {
                vec![SinkKind::Fast, SinkKind::Slow]
            } else {
                self.sinks.clone()
            },
            exe,
        );
        base.rounds = self.rounds;
        base.rate = self.rate.unwrap_or(base.rate);
        base.closed = self.closed.map(|n| n as usize);
        base.duration = self.duration.unwrap_or(base.duration);
        base.connection = self.connection.unwrap_or(base.connection);
        base.slow_rate = self.slow_rate;
        base.disk_delay = self.disk_delay;
        base.read_size = self.read_size;
        base.pipe_size = self.pipe_size.map(|v| v as usize);
        base.threads = self.threads.unwrap_or(1);
        base.warmup = self.warmup;
        base.cpu_limit = self.cpu_limit;
        base.app = self.app.clone();
        base.app_recover = self.app_recover.clone();
        base.ready = self.ready.clone();
        base.ready_timeout = self.ready_timeout;
        base.app_log = self.app_log.clone();
        base.drain_timeout = self.drain_timeout;
        base.warmup_timeout = self.warmup_timeout;
        base.lateness_limit_us = self.lateness_limit.as_secs_f64() * 1e6;
        base.expect_lines = self.expect_lines.clone().unwrap_or_default();
        base.stop_signal = self.stop_signal.unwrap_or_default();
        base.stop_builtin = self.stop_signal.is_some();
        base.stop_timeout = self.stop_timeout;
        base.record = self.record.unwrap_or_default();
        base.error_every = self.error_every;
        base.match_request_id = self.match_request_id;
        base.baseline = self.baseline.clone();
        base.loglag_batch_bytes = self.batch_bytes.first().map(|&b| b as usize);
        base.loglag_flush_interval = self.flush_interval.first().copied();
        base.collector_outage = self.collector_outage;
        Ok(base)
    }
}

impl Preset {
    fn step_settings(self, mut plan: LabSettings, o: &LabRequest) -> Vec<(String, LabSettings)> {
        let built_in = |cs: &[Condition]| cs.iter().map(|&c| RunCondition::BuiltIn(c)).collect();
        // What the user gave is in `plan` already (conditions parsed); what they left
        // is the preset's.
        let asked_conditions = !o.conditions.is_empty();
        let closed = o.closed.map(|n| n as usize);
        if o.sinks.is_empty() {
            plan.sinks = vec![SinkKind::Fast];
        }
        plan.connection = o.connection.unwrap_or(defaults::CONNECTION);
        plan.stop_builtin = true;
        match self {
            Preset::Buffers => {
                if !asked_conditions {
                    plan.conditions = built_in(&Condition::BUFFERS);
                }
                plan.record = o.record.unwrap_or(RecordShape::Three);
                plan.closed = Some(closed.unwrap_or(defaults::BUFFERS_CLOSED));
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
                if !asked_conditions {
                    plan.conditions = built_in(&Condition::BLOCKING);
                }
                plan.record = o.record.unwrap_or(RecordShape::Line120);
                plan.duration = o.duration.unwrap_or(defaults::DURATION);
                plan.threads = o
                    .threads
                    .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
                plan.stop_signal = o.stop_signal.unwrap_or(Signal::Term);
                let levels = match closed {
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
                if !asked_conditions {
                    plan.conditions = built_in(&[Condition::Loglag]);
                }
                plan.record = o.record.unwrap_or(RecordShape::Line120);
                plan.duration = o.duration.unwrap_or(defaults::SWEEP_DURATION);
                plan.rate = o.rate.unwrap_or(defaults::SWEEP_RATE);
                plan.closed = closed;
                plan.threads = o.threads.unwrap_or(1);
                plan.stop_signal = o.stop_signal.unwrap_or(Signal::Term);
                let batches: Vec<usize> = if o.batch_bytes.is_empty() {
                    SWEEP_BATCH_BYTES.to_vec()
                } else {
                    o.batch_bytes.iter().map(|&b| b as usize).collect()
                };
                let intervals = if o.flush_interval.is_empty() {
                    SWEEP_INTERVALS_MS.map(Duration::from_millis).to_vec()
                } else {
                    o.flush_interval.clone()
                };
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

/// The most log a crash may lose that the sweep's verdict accepts: records older than
/// this still queued at a SIGKILL.
pub const LOSS_WINDOW_MS: f64 = 200.0;

/// How far a point's p99 may move before the sweep's verdict would rank it otherwise:
/// the verdict's band, 10% of the p99 or 0.2 ms.
fn band_ms(p99_ms: f64) -> f64 {
    (p99_ms * 0.10).max(0.2)
}

/// Why a point's figures cannot carry a comparison, if they cannot: requests failed,
/// what was logged was not verified, the API could not keep up, or the interference
/// measured in its runs could move its p99 by half the verdict's band ([`band_ms`]) or
/// more. Interference is weighed by the lab's one rule
/// ([`interference_verdict`](super::interference::interference_verdict)) at p99, the
/// band in place of a difference: the generator's lateness at p99, and, on a machine
/// flagged busy, the CPU its runs waited for at p99's scale. A busy machine whose wait
/// could not move the p99 that far does not flag the point.
pub fn flagged(r: &PresetRow) -> Option<String> {
    use super::interference::{interference_verdict, Interference, Wording};
    use crate::report::Percentile;
    let p = &r.pair;
    let why = if p.metrics.http_errors > 0 || p.metrics.timeouts > 0 {
        "requests failed or timed out".to_owned()
    } else if !p.metrics.verified {
        "the log was not verified".to_owned()
    } else if p.metrics.saturation_warning.is_some() {
        "the API was saturated".to_owned()
    } else {
        let band = band_ms(p.metrics.p99_ms?);
        // The step names the point; the reason need not name its condition.
        let own = Interference {
            who: "",
            ..Interference::of(p, Percentile::P99)
        };
        let sides = [own, Interference::default()];
        let disturbance = interference_verdict(band, Percentile::P99, sides).err()?;
        disturbance.words(&Wording {
            against: "the verdict's band",
            ..Wording::lab(Percentile::P99)
        })
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
    let tolerance = band_ms(best_p99);
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
        rows[1].pair.metrics.send_lateness = Some(crate::report::Lateness {
            mean_us: 30.0,
            p50_us: Some(20.0),
            p99_us: 276.0,
            max_us: 900.0,
        });
        rows[2].pair.metrics.http_errors = 3;
        let v = sweep_verdict(&rows).unwrap();
        assert!(v.starts_with("Inconclusive: 2 of 3 points"), "{v}");
        assert!(
            v.contains("32-100 (the generator was 0.276 ms late at p99, half the verdict's band (0.200 ms) or more)"),
            "{v}"
        );
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

    /// A busy machine flags a point only when the CPU its runs waited for could move
    /// its p99 by half the verdict's band (10% of it, or 0.2 ms) or more; a generator
    /// late by less than that at p99 does not flag it either.
    #[test]
    fn a_busy_machine_flags_a_point_only_when_its_measured_wait_could_move_it() {
        let busy = |wait_ms: Option<f64>| {
            let mut r = row(32, 100, 2.0, 10.0, 96.0);
            r.pair.metrics.machine_warning = Some("the machine's cores were 97% busy".into());
            r.pair.metrics.cpu_wait_ms = wait_ms.map(|w| crate::report::CpuWaitMs {
                api: Some(w),
                reader: Some(0.0),
                generator: Some(0.0),
            });
            r
        };
        // 1000 requests, 1 run: p99's scale is 10 requests. Half the band of a 2 ms
        // p99 is 0.1 ms, so 0.5 ms of waiting in all (0.05 each) holds...
        assert_eq!(flagged(&busy(Some(0.5))), None);
        // ...and 5 ms (0.5 each) does not.
        let why = flagged(&busy(Some(5.0))).unwrap();
        assert!(
            why.contains("waited 0.500 ms for a CPU at p99's scale"),
            "{why}"
        );
        // Not measured (results from before the wait was): busy is enough, as then.
        let why = flagged(&busy(None)).unwrap();
        assert!(why.contains("not measured"), "{why}");
        // A quiet machine's wait is the same in every run: never a flag.
        let mut quiet = busy(Some(500.0));
        quiet.pair.metrics.machine_warning = None;
        assert_eq!(flagged(&quiet), None);
        // Lateness under half the band at p99 is no flag; at it, it is.
        let mut late = row(32, 100, 2.0, 10.0, 96.0);
        late.pair.metrics.send_lateness = Some(crate::report::Lateness {
            mean_us: 10.0,
            p50_us: Some(8.0),
            p99_us: 90.0,
            max_us: 3860.0,
        });
        assert_eq!(flagged(&late), None, "the latest send is not the p99's");
        late.pair.metrics.send_lateness.as_mut().unwrap().p99_us = 100.0;
        assert!(flagged(&late).is_some());
    }

    /// A request as the command line gives it.
    fn request(args: &[&str]) -> LabRequest {
        #[derive(clap::Parser)]
        struct Lab {
            #[command(flatten)]
            request: LabRequest,
        }
        <Lab as clap::Parser>::try_parse_from(std::iter::once("lab").chain(args.iter().copied()))
            .unwrap()
            .request
    }

    fn steps(args: &[&str]) -> Result<Vec<Step>, PlanError> {
        request(args).steps("loglag".into())
    }

    /// Every step a preset plans is a plain directory name, as `loglag report` (which
    /// refuses any other: html/untrusted.rs) and the step links need.
    #[test]
    fn every_planned_step_is_a_plain_directory_name() {
        for preset in ["buffers", "blocking", "sweep"] {
            for step in steps(&["--preset", preset]).unwrap() {
                assert_eq!(
                    crate::html::untrusted::component(&step.label),
                    Ok(step.label.as_str()),
                    "{preset}"
                );
                assert!(crate::html::untrusted::href(&[&step.label]).is_some());
            }
        }
    }

    #[test]
    fn presets_parse_and_plan_their_steps() {
        let buffers = steps(&["--preset", "buffers"]).unwrap();
        assert_eq!(
            buffers.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(),
            ["term", "kill"]
        );
        assert!(buffers
            .iter()
            .all(|s| s.plan.stop_builtin && s.plan.closed == Some(100)));
        assert_eq!(buffers[1].plan.stop_signal, Signal::Kill);
        assert_eq!(buffers[0].plan.sinks, [SinkKind::Fast]);
        let only_kill = steps(&[
            "--preset",
            "buffers",
            "--stop-signal",
            "kill",
            "--closed",
            "7",
        ])
        .unwrap();
        assert_eq!(only_kill.len(), 1);
        assert_eq!(only_kill[0].plan.closed, Some(7));
        let blocking = steps(&["--preset", "blocking"]).unwrap();
        assert_eq!(
            blocking.iter().map(|s| s.plan.closed).collect::<Vec<_>>(),
            [Some(500), Some(2000)]
        );
        let sweep = steps(&["--preset", "sweep"]).unwrap();
        assert_eq!(sweep.len(), 16);
        assert_eq!(sweep[0].label, "batch-4KiB-interval-10ms");
        assert_eq!(sweep[15].plan.loglag_batch_bytes, Some(1 << 20));
        assert_eq!(sweep[0].plan.rate, defaults::SWEEP_RATE);
        let grid = steps(&[
            "--preset",
            "sweep",
            "--batch-bytes",
            "8KiB,64KiB",
            "--flush-interval",
            "50ms",
        ])
        .unwrap();
        assert_eq!(
            grid.iter().map(|s| s.label.as_str()).collect::<Vec<_>>(),
            ["batch-8KiB-interval-50ms", "batch-64KiB-interval-50ms"]
        );
        // What the user gave wins over the preset's.
        let mine = steps(&[
            "--preset",
            "buffers",
            "--conditions",
            "loglag",
            "--sinks",
            "slow",
        ])
        .unwrap();
        assert!(mine
            .iter()
            .all(|s| s.plan.conditions.len() == 1 && s.plan.sinks == [SinkKind::Slow]));
        assert_eq!("sweep".parse::<Preset>().unwrap(), Preset::Sweep);
        assert!("buffer".parse::<Preset>().is_err());
        // A step's plan is checked like any other.
        assert_eq!(
            steps(&["--preset", "sweep", "--duration", "0s"])
                .unwrap_err()
                .to_string(),
            "--preset sweep (step batch-4KiB-interval-10ms): --duration must be positive"
        );
        // --baseline is checked against the conditions each step runs, not the
        // reference's that the base holds before the preset sets its own.
        assert!(steps(&["--preset", "buffers", "--baseline", "loglag"]).is_ok());
        let err = steps(&["--preset", "buffers", "--baseline", "json-sync"]).unwrap_err();
        assert!(
            matches!(&err, PlanError::InStep { error, .. } if matches!(**error, PlanError::BaselineNotRun(..))),
            "{err}"
        );
    }

    #[test]
    fn flags_that_do_not_go_together_are_refused_naming_both() {
        for (args, says) in [
            (
                &["--rate", "5", "--closed", "3"][..],
                "--rate is an open loop",
            ),
            (
                &["--expect-lines", "3"][..],
                "--expect-lines verifies an --app",
            ),
            (&["--app", "x {port}"][..], "--app needs --conditions"),
            (
                &["--batch-bytes", "4KiB,8KiB"][..],
                "take a list only with --preset sweep",
            ),
            (
                &["--app-log", "stdout"][..],
                "--app-log says where an --app",
            ),
            (&["--conditions", "no-such"][..], "--conditions:"),
        ] {
            let err = steps(args).unwrap_err();
            assert!(matches!(err, PlanError::Flags(_)), "{args:?}: {err:?}");
            assert!(err.to_string().contains(says), "{args:?}: {err}");
        }
        // The plain run is one step, labelled "", on the reference's defaults.
        let plain = steps(&[]).unwrap();
        assert_eq!(plain.len(), 1);
        assert_eq!(plain[0].label, "");
        assert_eq!(plain[0].plan.conditions.len(), 7);
        assert_eq!(plain[0].plan.sinks, [SinkKind::Fast, SinkKind::Slow]);
    }
}
