//! The pure step of a lab run: raw results in, [`RunSummary`] out; and the pooling of
//! runs into pairs. No I/O, no clock: the same input always gives the same summary,
//! which the snapshot tests below pin down.

use std::time::Duration;

use super::plan::{ExpectLines, RunCondition, SinkKind};
use crate::api::condition::{Condition, RecordShape, SHORT_LINE_BYTES};
use crate::api::control::ApiStats;
use crate::load::{LoadResult, Outcome};
use crate::reader::inspect::{IdMatch, LineFindings};
use crate::reader::ReaderStats;
use crate::report::{
    CpuWaitMs, Lateness, Metrics, PairSummary, Params, ProcessFigures, RequestRow, RunSummary,
    Summary, TimeseriesRow, SCHEMA,
};
use crate::stats::{self, quantile};
use crate::sys::procfs::ProcCounters;

/// What one run recorded, before any computation.
#[derive(Debug, Clone)]
pub struct RawRun {
    pub run: usize,
    pub round: usize,
    pub condition: RunCondition,
    pub sink: SinkKind,
    pub duration: Duration,
    pub drain_timeout: Duration,
    pub lateness_limit_us: f64,
    /// The cores the API's process may use: its cgroup limit, or the machine's.
    pub api_cores: f64,
    /// The rate offered (open loop); `None` for a closed loop.
    pub offered_rps: Option<f64>,
    pub load: LoadResult,
    /// The built-in API's counters after the drain; `None` for an `--app`.
    pub api: Option<ApiStats>,
    /// What the reader read in all.
    pub read: ReaderStats,
    /// Whether everything written was read within `drain_timeout`.
    pub drained: bool,
    /// (time, produced bytes, read bytes) samples taken during the run.
    pub series: Vec<(u64, Option<u64>, u64)>,
    /// The API's CPU seconds before and after the load, and the wall time between.
    pub cpu_seconds: Option<(f64, f64)>,
    /// The sink reader's and the lab's own (the load generator's) CPU seconds, before
    /// and after, and the cores of the machine they all share.
    pub reader_cpu_seconds: Option<(f64, f64)>,
    pub lab_cpu_seconds: Option<(f64, f64)>,
    pub machine_cores: f64,
    /// The share of the machine's CPU time that was busy (all processes, other
    /// tenants' included) during the load.
    pub machine_busy: Option<f64>,
    /// How long the API, the reader and the generator waited for a CPU during the load.
    pub cpu_wait_ms: Option<CpuWaitMs>,
    pub cpu_window_s: f64,
    /// Warm-up requests the API served before the counters were reset.
    pub warmup_served: u64,
    /// Log lines the reader had read when it was reset after the warm-up.
    pub warmup_lines: u64,
    /// `--expect-lines`: how an `--app`'s log is verified.
    pub expect_lines: ExpectLines,
    /// How the API ended when stopped by a signal, in words (`None`: the built-in API
    /// was flushed through its control channel instead).
    pub app_exit: Option<crate::api::launch::AppExit>,
    /// The built-in API was stopped by a signal: `api` is what it had logged just
    /// before, and the lines read are checked against that.
    pub stopped_builtin: bool,
    /// What the built-in API logged per request.
    pub record: RecordShape,
    /// The X-Request-Id of the first measured request (the warm-up's are 0, 1, ...).
    pub first_id: u64,
    /// The API process's counters before and after the load.
    pub proc_counters: Option<(ProcCounters, ProcCounters)>,
    /// The longest wait of a queued record the logger reported, µs.
    pub oldest_queued_us: Option<u64>,
    /// What the reader found in the lines, when asked.
    pub findings: Option<LineFindings>,
    /// `--match-request-id`: match the ids in the log against the requests served.
    pub match_request_id: bool,
    /// `loglag-spool` after a stop: records the lab delivered from the API's spool (at
    /// least once: the batch in flight at a kill may come twice).
    pub recovered: Option<u64>,
    /// An `--app` whose `--app-recover` ran after its stop, with the records it said
    /// it delivered: its lines are at least once too.
    pub app_recovered: Option<Option<u64>>,
}

/// Everything one run produced.
pub(crate) struct RunOutput {
    pub(crate) summary: RunSummary,
    pub(crate) latencies_ns: Vec<u64>,
    pub(crate) lateness_ns: Vec<u64>,
    pub(crate) time_a_s: f64,
    pub(crate) time_b_s: f64,
    pub(crate) requests: Vec<RequestRow>,
    pub(crate) timeseries: Vec<TimeseriesRow>,
}

/// `v` as the CSVs write it (three decimals), so that the rows in memory are the rows
/// `loglag report DIR` reads back, and `--report`'s page is the page drawn from files.
fn as_written(v: f64) -> f64 {
    format!("{v:.3}")
        .parse()
        .expect("a formatted number parses")
}

/// Computes one run's summary, per-request rows and time series.
pub(crate) fn measure(raw: &RawRun) -> RunOutput {
    let RawRun {
        run,
        round,
        condition,
        sink,
        load,
        drained,
        ..
    } = raw;
    let (run, round, sink, drained) = (*run, *round, *sink, *drained);
    let api_stats = &raw.api;
    let series = &raw.series;
    let t0 = load.t0_mono_ns;
    let duration_s = raw.duration.as_secs_f64();
    let completed = load
        .samples
        .iter()
        .filter(|s| s.outcome == Outcome::Ok)
        .count() as u64;
    let http_errors = load
        .samples
        .iter()
        .filter(|s| matches!(s.outcome, Outcome::HttpError | Outcome::IoError))
        .count() as u64;
    let timeouts = load
        .samples
        .iter()
        .filter(|s| s.outcome == Outcome::Timeout)
        .count() as u64;
    let latencies_ns: Vec<u64> = load.samples.iter().filter_map(|s| s.latency_ns).collect();
    let mut sorted = latencies_ns.clone();
    let ms = |v: Option<u64>| v.map(|ns| ns as f64 / 1e6);
    let last_response = load.last_response_mono_ns().unwrap_or(t0);
    let last_byte = raw.read.last_byte_mono_ns;
    let since_t0 = |t: u64| t.saturating_sub(t0) as f64 / 1e9;
    let time_a = duration_s.max(since_t0(last_response));
    let time_b = time_a.max(last_byte.map_or(0.0, since_t0));
    let drain_s = last_byte.map_or(0.0, |b| b.saturating_sub(last_response) as f64 / 1e9);
    let read = &raw.read;
    // What the API was expected to write: what the built-in API reports, or for an
    // --app, its lines per request times every request it served, warm-up included.
    let network = raw
        .condition
        .built_in()
        .is_some_and(|c| c.collector().is_some());
    let (expected_records, lines_read) = match api_stats {
        // Stopped by a signal: every record logged and not dropped should be there.
        Some(a) if raw.stopped_builtin => {
            (Some(a.records.saturating_sub(a.dropped)), read.newlines)
        }
        // A network condition: records lost in the collector's connection are neither
        // written nor dropped; every record handed off is expected.
        Some(a) if network => (Some(a.records + a.report_lines), read.newlines),
        Some(a) => (Some(a.written_newlines + a.dropped), read.newlines),
        None => (
            app_expected_lines(raw, completed + http_errors),
            read.newlines + raw.warmup_lines,
        ),
    };
    let (verified, verify_note) = match (&api_stats, drained) {
        (Some(_), _) if raw.stopped_builtin => {
            verify_stop(raw, expected_records.unwrap_or(0), lines_read)
        }
        (_, false) => (
            false,
            format!("log not drained within {:?}", raw.drain_timeout),
        ),
        (Some(a), true) => {
            let ok = a.written_bytes == read.bytes
                && a.written_newlines == read.newlines
                && a.sha256 == read.sha256;
            let unseen = if network {
                (a.records + a.report_lines).saturating_sub(a.written_newlines + a.dropped)
            } else {
                0
            };
            let note = if ok && unseen > 0 {
                format!(
                    "{unseen} records lost unseen between the logger and the collector (sent, neither received nor counted as dropped: syslog over TCP has no acknowledgement); what the collector wrote was read whole ({} lines, sha256 match)",
                    read.newlines
                )
            } else if ok {
                format!(
                    "{} bytes, {} lines, sha256 match",
                    read.bytes, read.newlines
                )
            } else {
                format!(
                    "mismatch: API wrote {} bytes / {} lines / {}, reader read {} / {} / {}",
                    a.written_bytes,
                    a.written_newlines,
                    a.sha256,
                    read.bytes,
                    read.newlines,
                    read.sha256
                )
            };
            (ok && unseen == 0, note)
        }
        (None, true) => verify_app(raw, expected_records, completed + http_errors),
    };
    // Lines the logger was expected to write against lines read: a positive figure is
    // records lost, a negative one extra lines. After a spool's recovery (at least
    // once) extra lines are the batch delivered twice: duplicates, not a failure.
    let mut lost_records = expected_records.map(|e| e as i64 - lines_read as i64);
    // A network condition's OTLP sink retries a request whose answer was lost: the
    // collector may have written that batch twice. Extra lines there are duplicates too.
    let at_least_once = raw.recovered.is_some() || raw.app_recovered.is_some() || network;
    let duplicate_records = match (at_least_once, lost_records) {
        (true, Some(lost)) if lost < 0 => {
            lost_records = Some(0);
            Some(lost.unsigned_abs())
        }
        (true, Some(_)) => Some(0),
        _ => None,
    };
    let backlog: Vec<(u64, u64, u64)> = series
        .iter()
        .filter_map(|&(t, p, r)| p.map(|p| (t, p, r)))
        .collect();
    let lateness_ns: Vec<u64> = load.samples.iter().map(|s| s.send_lateness_ns).collect();
    // A closed loop has no schedule to be late for: its lateness does not apply (and
    // would read 0).
    let send_lateness = raw.offered_rps.and_then(|_| Lateness::of(&lateness_ns));
    let per_request =
        |total: u64, count: u64| (count > 0).then(|| total as f64 / count as f64 / 1000.0);
    let window_s = raw.cpu_window_s.max(1e-9);
    let counters = raw.proc_counters;
    let process = ProcessFigures {
        log_writes: api_stats.as_ref().map(|a| a.write_calls),
        log_writes_per_min: api_stats
            .as_ref()
            .map(|a| a.write_calls as f64 * 60.0 / window_s),
        syscw_per_min: counters
            .map(|(b, a)| a.syscw.saturating_sub(b.syscw) as f64 * 60.0 / window_s),
        ctx_voluntary_per_s: counters
            .map(|(b, a)| a.ctx_voluntary.saturating_sub(b.ctx_voluntary) as f64 / window_s),
        ctx_involuntary_per_s: counters
            .map(|(b, a)| a.ctx_involuntary.saturating_sub(b.ctx_involuntary) as f64 / window_s),
        rss_peak_kib: counters.map(|(_, a)| a.rss_peak_kib),
        oldest_queued_ms: raw.oldest_queued_us.map(|us| us as f64 / 1000.0),
        error_lines: raw
            .findings
            .as_ref()
            .filter(|f| f.sequenced_lines > 0)
            .map(|f| f.error_lines),
        out_of_order: raw
            .findings
            .as_ref()
            .filter(|f| f.sequenced_lines > 0)
            .map(|f| f.out_of_order),
    };
    let request_ids = raw
        .findings
        .as_ref()
        .filter(|_| raw.match_request_id)
        .map(|f| {
            let mut served: Vec<u64> = (0..raw.warmup_served).collect();
            served.extend(
                load.samples
                    .iter()
                    .filter(|s| s.status.is_some())
                    .map(|s| raw.first_id + s.index),
            );
            served.sort_unstable();
            let expect = match raw.condition.built_in() {
                Some(c) if api_stats.is_some() => Some(c.records_per_request(raw.record) as u32),
                _ => raw
                    .expect_lines
                    .for_condition(raw.condition.name())
                    .map(|n| n as u32),
            };
            IdMatch::of(&served, f, expect)
        });
    let mean_ms = stats::mean(latencies_ns.iter().map(|&ns| ns as f64 / 1e6));
    let rps_api = completed as f64 / time_a;
    let cpu_cores = raw.cpu_seconds.map(|(b, a)| (a - b) / raw.cpu_window_s);
    let reader_cpu_cores = raw
        .reader_cpu_seconds
        .map(|(b, a)| (a - b) / raw.cpu_window_s);
    let generator_cpu_cores = raw.lab_cpu_seconds.map(|(b, a)| (a - b) / raw.cpu_window_s);
    let summary = RunSummary {
        run,
        round,
        condition: condition.name().to_owned(),
        sink: sink.as_str().to_owned(),
        requests: load.samples.len() as u64,
        completed,
        last_response_s: load.last_response_mono_ns().map(since_t0),
        last_byte_s: last_byte.map(since_t0),
        produced_bytes: api_stats.as_ref().map(|a| a.written_bytes),
        read_bytes: read.bytes,
        read_newlines: read.newlines,
        read_sha256: read.sha256.clone(),
        verify_note,
        expected_records,
        // Rendered here, where the run becomes a report.
        app_exit: raw.app_exit.as_ref().map(|e| e.to_string()),
        reader_cpu_cores,
        generator_cpu_cores,
        machine_busy: raw.machine_busy,
        request_ids,
        metrics: Metrics {
            p50_ms: ms(quantile(&mut sorted, 0.50)),
            p99_ms: ms(quantile(&mut sorted, 0.99)),
            max_ms: ms(quantile(&mut sorted, 1.0)),
            http_errors,
            timeouts,
            gen_us: api_stats
                .as_ref()
                .and_then(|a| per_request(a.gen_ns, a.gen_count)),
            log_call_us: api_stats
                .as_ref()
                .and_then(|a| per_request(a.log_ns, a.log_count)),
            max_backlog_kib: (!backlog.is_empty())
                .then(|| stats::max_backlog(&backlog) as f64 / 1024.0),
            drain_s,
            rps_api,
            rps_logs_read: completed as f64 / time_b,
            cpu_cores,
            dropped: api_stats.as_ref().map(|a| a.dropped),
            queue_full: api_stats.as_ref().map(|a| a.queue_full),
            verified,
            lost_records,
            duplicate_records,
            send_lateness,
            lateness_warning: send_lateness.and_then(|l| l.warning(raw.lateness_limit_us)),
            saturation_warning: saturation(raw.offered_rps, rps_api, cpu_cores, raw.api_cores),
            machine_warning: machine_saturation(
                [cpu_cores, reader_cpu_cores, generator_cpu_cores],
                raw.machine_cores,
                raw.machine_busy,
            ),
            cpu_wait_ms: raw.cpu_wait_ms,
            mean_ms,
            process,
        },
    };
    let requests = load
        .samples
        .iter()
        .map(|s| RequestRow {
            run,
            condition: summary.condition.clone(),
            sink: summary.sink.clone(),
            scheduled_ms: as_written(s.scheduled_ns as f64 / 1e6),
            send_lateness_ms: as_written(s.send_lateness_ns as f64 / 1e6),
            latency_ms: s.latency_ns.map(|l| as_written(l as f64 / 1e6)),
            status: s.status,
            outcome: s.outcome.as_str().to_owned(),
        })
        .collect();
    let timeseries = series
        .iter()
        .filter(|&&(t, _, _)| t >= t0)
        .map(|&(t, produced, read)| TimeseriesRow {
            run,
            t_s: as_written(since_t0(t)),
            produced_bytes: produced,
            read_bytes: read,
        })
        .collect();
    RunOutput {
        summary,
        latencies_ns,
        lateness_ns,
        time_a_s: time_a,
        time_b_s: time_b,
        requests,
        timeseries,
    }
}

/// Pools runs into pairs, in the plan's order.
pub(crate) fn summarise(params: Params, outputs: Vec<RunOutput>) -> Summary {
    let mut pairs: Vec<PairSummary> = Vec::new();
    let mut keys: Vec<(String, String)> = Vec::new();
    for o in &outputs {
        let key = (o.summary.condition.clone(), o.summary.sink.clone());
        if !keys.contains(&key) {
            keys.push(key);
        }
    }
    // Keep the plan's order: conditions first, then sinks.
    keys.sort_by_key(|(c, s)| {
        (
            params.plan.conditions.iter().position(|x| x == c),
            params.plan.sinks.iter().position(|x| x == s),
        )
    });
    let mut pooled_ms: Vec<(Vec<f64>, super::findings::RoundPercentiles)> = Vec::new();
    for (condition, sink) in keys {
        let runs: Vec<&RunOutput> = outputs
            .iter()
            .filter(|o| o.summary.condition == condition && o.summary.sink == sink)
            .collect();
        let mut latencies: Vec<u64> = runs
            .iter()
            .flat_map(|o| o.latencies_ns.iter().copied())
            .collect();
        let ms = |v: Option<u64>| v.map(|ns| ns as f64 / 1e6);
        let opt_mean = |f: &dyn Fn(&RunSummary) -> Option<f64>| {
            stats::mean(runs.iter().filter_map(|o| f(&o.summary)))
        };
        let opt_sum = |f: &dyn Fn(&RunSummary) -> Option<u64>| {
            let v: Vec<u64> = runs.iter().filter_map(|o| f(&o.summary)).collect();
            (!v.is_empty()).then(|| v.iter().sum())
        };
        let completed: u64 = runs.iter().map(|o| o.summary.completed).sum();
        let time_a: f64 = runs.iter().map(|o| o.time_a_s).sum();
        let time_b: f64 = runs.iter().map(|o| o.time_b_s).sum();
        let lateness_ns: Vec<u64> = runs
            .iter()
            .flat_map(|o| o.lateness_ns.iter().copied())
            .collect();
        let pooled_lateness = runs
            .iter()
            .any(|o| o.summary.metrics.send_lateness.is_some())
            .then(|| Lateness::of(&lateness_ns))
            .flatten();
        // What bootstraps resample (the p99 interval here, the findings later).
        pooled_ms.push((
            super::findings::thinned(
                &latencies
                    .iter()
                    .map(|&ns| ns as f64 / 1e6)
                    .collect::<Vec<f64>>(),
            ),
            runs.iter()
                .filter_map(|o| {
                    let s = &o.summary;
                    Some((s.round, s.metrics.p50_ms?, s.metrics.p99_ms?))
                })
                .collect::<Vec<_>>(),
        ));
        pairs.push(PairSummary {
            runs: runs.len(),
            requests: runs.iter().map(|o| o.summary.requests).sum(),
            p99_ms_interval: stats::bootstrap_one(
                &pooled_ms.last().expect("pushed above").0,
                |s| stats::quantile_select(s, 0.99),
            ),
            p99_ms_range: {
                let p99s: Vec<f64> = runs
                    .iter()
                    .filter_map(|o| o.summary.metrics.p99_ms)
                    .collect();
                (p99s.len() > 1).then(|| {
                    (
                        p99s.iter().copied().fold(f64::MAX, f64::min),
                        p99s.iter().copied().fold(f64::MIN, f64::max),
                    )
                })
            },
            verify_note: runs
                .iter()
                .find(|o| !o.summary.metrics.verified)
                .map(|o| o.summary.verify_note.clone()),
            missing_ids_note: runs
                .iter()
                .filter_map(|o| o.summary.request_ids.as_ref())
                .find(|m| m.missing + m.incomplete > 0)
                .map(|m| {
                    format!(
                        "{} ids missing, {} incomplete ({}); first: {:?}",
                        m.missing, m.incomplete, m.placement, m.first
                    )
                }),
            condition,
            sink,
            metrics: Metrics {
                p50_ms: ms(quantile(&mut latencies, 0.50)),
                p99_ms: ms(quantile(&mut latencies, 0.99)),
                max_ms: ms(quantile(&mut latencies, 1.0)),
                http_errors: runs.iter().map(|o| o.summary.metrics.http_errors).sum(),
                timeouts: runs.iter().map(|o| o.summary.metrics.timeouts).sum(),
                gen_us: opt_mean(&|r| r.metrics.gen_us),
                log_call_us: opt_mean(&|r| r.metrics.log_call_us),
                max_backlog_kib: runs
                    .iter()
                    .filter_map(|o| o.summary.metrics.max_backlog_kib)
                    .reduce(f64::max),
                drain_s: stats::mean(runs.iter().map(|o| o.summary.metrics.drain_s)).unwrap_or(0.0),
                rps_api: if time_a > 0.0 {
                    completed as f64 / time_a
                } else {
                    0.0
                },
                rps_logs_read: if time_b > 0.0 {
                    completed as f64 / time_b
                } else {
                    0.0
                },
                cpu_cores: opt_mean(&|r| r.metrics.cpu_cores),
                dropped: opt_sum(&|r| r.metrics.dropped),
                queue_full: opt_sum(&|r| r.metrics.queue_full),
                verified: runs.iter().all(|o| o.summary.metrics.verified),
                lost_records: {
                    let lost: Vec<i64> = runs
                        .iter()
                        .filter_map(|o| o.summary.metrics.lost_records)
                        .collect();
                    (!lost.is_empty()).then(|| lost.iter().sum())
                },
                duplicate_records: opt_sum(&|r| r.metrics.duplicate_records),
                send_lateness: pooled_lateness,
                lateness_warning: pooled_lateness
                    .and_then(|l| l.warning(params.plan.lateness_limit_us)),
                saturation_warning: runs
                    .iter()
                    .find_map(|o| o.summary.metrics.saturation_warning.clone()),
                machine_warning: runs
                    .iter()
                    .find_map(|o| o.summary.metrics.machine_warning.clone()),
                cpu_wait_ms: CpuWaitMs::summed(
                    runs.iter()
                        .filter_map(|o| o.summary.metrics.cpu_wait_ms.as_ref()),
                ),
                mean_ms: stats::mean(latencies.iter().map(|&ns| ns as f64 / 1e6)),
                process: pool_process(runs.iter().map(|o| &o.summary.metrics.process)),
            },
        });
    }
    let baseline =
        super::findings::baseline_of(params.plan.baseline.as_deref(), &params.plan.conditions);
    let samples: Vec<_> = pairs
        .iter()
        .zip(pooled_ms)
        .map(
            |(pair, (resample_ms, per_round))| super::findings::PairSamples {
                pair,
                resample_ms,
                per_round,
            },
        )
        .collect();
    let findings = super::findings::findings(&samples, baseline.as_deref());
    drop(samples);
    let mut requests = Vec::new();
    let mut timeseries = Vec::new();
    let mut runs = Vec::new();
    for o in outputs {
        requests.extend(o.requests);
        timeseries.extend(o.timeseries);
        runs.push(o.summary);
    }
    Summary {
        schema: SCHEMA,
        params,
        runs,
        pairs,
        findings,
        requests,
        timeseries,
    }
}

/// A pair's process figures: rates averaged over its runs, the largest RSS and queue
/// age, and summed line counts.
fn pool_process<'a>(runs: impl Iterator<Item = &'a ProcessFigures> + Clone) -> ProcessFigures {
    let mean = |f: fn(&ProcessFigures) -> Option<f64>| stats::mean(runs.clone().filter_map(f));
    let sum =
        |f: fn(&ProcessFigures) -> Option<u64>| runs.clone().filter_map(f).reduce(|a, b| a + b);
    ProcessFigures {
        log_writes: sum(|p| p.log_writes),
        log_writes_per_min: mean(|p| p.log_writes_per_min),
        syscw_per_min: mean(|p| p.syscw_per_min),
        ctx_voluntary_per_s: mean(|p| p.ctx_voluntary_per_s),
        ctx_involuntary_per_s: mean(|p| p.ctx_involuntary_per_s),
        rss_peak_kib: runs.clone().filter_map(|p| p.rss_peak_kib).max(),
        oldest_queued_ms: runs
            .clone()
            .filter_map(|p| p.oldest_queued_ms)
            .reduce(f64::max),
        error_lines: sum(|p| p.error_lines),
        out_of_order: sum(|p| p.out_of_order),
    }
}

/// Lines an `--app` should have written for `served` measured requests plus the
/// warm-up: `--expect-lines` for its condition, else the built-in condition's figure.
fn app_expected_lines(raw: &RawRun, served: u64) -> Option<u64> {
    let per_request = raw
        .expect_lines
        .for_condition(raw.condition.name())
        .or_else(|| raw.condition.built_in().map(|c| expected_per_request(c).1))?;
    Some(per_request * (served + raw.warmup_served))
}

/// Verifies the built-in API stopped by a signal: every record it had logged, and not
/// dropped, should have been read.
fn verify_stop(raw: &RawRun, expected: u64, lines_read: u64) -> (bool, String) {
    let exit = raw
        .app_exit
        .as_ref()
        .map_or(String::new(), |e| format!("; the API {e}"));
    match lines_read.cmp(&expected) {
        std::cmp::Ordering::Equal => (
            true,
            match raw.recovered {
                Some(n) => format!("{lines_read} lines: every record logged before the stop was written, {n} of them delivered from the spool after it{exit}"),
                None => format!("{lines_read} lines: every record logged before the stop was written{exit}"),
            },
        ),
        // The reader never went quiet within the drain timeout: the missing lines may
        // still be in the pipe, so say so rather than call them lost.
        std::cmp::Ordering::Less if !raw.drained => (
            false,
            format!(
                "{} records not read within the drain timeout of {:?} (lost at the stop, or still in the pipe): {lines_read} lines read, {expected} logged{exit}",
                expected - lines_read,
                raw.drain_timeout
            ),
        ),
        std::cmp::Ordering::Less => (
            false,
            format!(
                "{} records lost at the stop: {lines_read} lines read, {expected} logged{exit}",
                expected - lines_read
            ),
        ),
        std::cmp::Ordering::Greater if raw.recovered.is_some() => (
            true,
            format!(
                "{lines_read} lines: every record logged before the stop was written, {} twice: the batch in flight at the stop, which the spool delivers again (at least once into a pipe){exit}",
                lines_read - expected
            ),
        ),
        std::cmp::Ordering::Greater => (
            false,
            format!(
                "{} extra lines: {lines_read} read, {expected} logged{exit}",
                lines_read - expected
            ),
        ),
    }
}

/// Verifies an `--app` from what the reader read, since the app reports nothing.
fn verify_app(raw: &RawRun, expected: Option<u64>, served: u64) -> (bool, String) {
    let read = &raw.read;
    let lines_read = read.newlines + raw.warmup_lines;
    let exit = raw
        .app_exit
        .as_ref()
        .map_or(String::new(), |e| format!("; the app {e}"));
    let exit = match raw.app_recovered {
        Some(Some(n)) => format!("{exit}, then --app-recover delivered {n} records"),
        Some(None) => format!("{exit}, then --app-recover ran"),
        None => exit,
    };
    let Some(expected) = expected else {
        return (
            false,
            format!(
                "cannot verify {:?}: the app reports nothing and no --expect-lines was given for it ({lines_read} lines read){exit}",
                raw.condition.name()
            ),
        );
    };
    let requests = served + raw.warmup_served;
    if lines_read == expected {
        // A built-in condition's bytes are known too.
        if let Some(c) = raw.condition.built_in() {
            let (bytes, _) = expected_per_request(c);
            if read.bytes != bytes * served {
                return (
                    false,
                    format!(
                        "{lines_read} lines as expected, but {} bytes where {} were expected{exit}",
                        read.bytes,
                        bytes * served
                    ),
                );
            }
        }
        return (
            true,
            format!(
                "{lines_read} lines for {requests} requests (warm-up included), as expected{exit}"
            ),
        );
    }
    if lines_read > expected && raw.app_recovered.is_some() {
        // Recovery delivers at least once: the batch in flight at a kill comes again
        // (and a request the kill cut off may have logged without being served).
        return (
            true,
            format!(
                "{lines_read} lines for {requests} requests (warm-up included): none lost, {} more than expected, delivered again by the recovery (at least once){exit}",
                lines_read - expected
            ),
        );
    }
    let (what, n) = if lines_read < expected {
        ("lost", expected - lines_read)
    } else {
        ("extra", lines_read - expected)
    };
    (
        false,
        format!(
            "{n} records {what}: {lines_read} lines read, {expected} expected for {requests} requests (warm-up included){exit}"
        ),
    )
}

/// Bytes (and lines) the reference conditions write per request; used to verify an
/// `--app` that cannot report what it produced.
fn expected_per_request(c: Condition) -> (u64, u64) {
    match c {
        Condition::Short1 => (SHORT_LINE_BYTES as u64, 1),
        Condition::Short10 => (10 * SHORT_LINE_BYTES as u64, 10),
        c if c.bytes_per_request(RecordShape::Json16k) > 0 => {
            (c.bytes_per_request(RecordShape::Json16k) as u64, 1)
        }
        _ => (0, 0),
    }
}

/// Whether a run saturated the API, and how: it served under 90% of the rate offered
/// (the rest queued), or used 90% or more of the CPU it had.
pub fn saturation(
    offered_rps: Option<f64>,
    served_rps: f64,
    cpu_cores: Option<f64>,
    api_cores: f64,
) -> Option<String> {
    let mut why = Vec::new();
    if let Some(offered) = offered_rps.filter(|&o| o > 0.0) {
        if served_rps < 0.9 * offered {
            why.push(format!(
                "it served {served_rps:.1} of the {offered:.1} requests/s offered"
            ));
        }
    }
    if let Some(cpu) = cpu_cores.filter(|_| api_cores > 0.0) {
        if cpu >= 0.9 * api_cores {
            why.push(format!(
                "it used {cpu:.2} of the {api_cores:.2} CPU cores it had"
            ));
        }
    }
    (!why.is_empty()).then(|| {
        format!(
            "the API was saturated ({}): its latency is queueing as much as the logging",
            why.join("; ")
        )
    })
}

/// Whether the machine's cores were all busy during the load: the API, the reader and
/// the load generator together used 90% of them, or the machine was 90% busy (other
/// tenants included). Then the processes waited for each other's CPU, and a latency
/// includes that wait whichever process it was measured in.
pub fn machine_saturation(
    cores_used: [Option<f64>; 3],
    machine_cores: f64,
    machine_busy: Option<f64>,
) -> Option<String> {
    let [api, reader, generator] = cores_used.map(|c| c.unwrap_or(0.0));
    let ours = api + reader + generator;
    let busy = machine_busy.unwrap_or(0.0);
    (machine_cores > 0.0 && (ours >= 0.9 * machine_cores || busy >= 0.9)).then(|| {
        format!(
            "the machine was saturated ({:.0}% busy; the API {api:.2}, the reader {reader:.2} and the load generator {generator:.2} of its {machine_cores:.0} cores): latencies include waiting for a core",
            (busy.max(ours / machine_cores) * 100.0).min(100.0)
        )
    })
}

// Their exit statuses are unix wait statuses (a signal's number).
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn killed_by_sigkill() -> crate::api::launch::AppExit {
        use std::os::unix::process::ExitStatusExt;
        crate::api::launch::AppExit {
            ended: crate::sys::child::Ended::Exited(std::process::ExitStatus::from_raw(9)),
            leftovers: Vec::new(),
        }
    }

    /// Three processes on two cores: together they can saturate the machine though
    /// none of them alone looks busy.
    #[test]
    fn a_machine_whose_cores_were_all_used_is_called_saturated() {
        let w = machine_saturation([Some(0.8), Some(0.4), Some(0.7)], 2.0, None).unwrap();
        assert!(
            w.contains("95% busy") && w.contains("generator 0.70"),
            "{w}"
        );
        assert_eq!(
            machine_saturation([Some(0.5), Some(0.1), None], 2.0, Some(0.5)),
            None
        );
        // Other tenants count: the machine was busy though the lab's processes were not.
        let w = machine_saturation([Some(0.2), Some(0.1), Some(0.3)], 2.0, Some(0.97)).unwrap();
        assert!(w.contains("97% busy"), "{w}");
        let run = measure(&raw(1000, 1000, true)).summary;
        assert!((run.reader_cpu_cores.unwrap() - 0.04).abs() < 1e-9);
        assert!((run.generator_cpu_cores.unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn a_run_that_cannot_keep_up_is_called_saturated() {
        assert_eq!(saturation(Some(20.0), 20.0, Some(0.02), 1.0), None);
        let w = saturation(Some(20.0), 16.2, Some(0.02), 1.0).unwrap();
        assert!(w.contains("16.2 of the 20.0 requests/s"), "{w}");
        let w = saturation(None, 9849.0, Some(1.95), 2.0).unwrap();
        assert!(w.contains("1.95 of the 2.00 CPU cores"), "{w}");
        assert_eq!(
            saturation(None, 9849.0, Some(1.0), 2.0),
            None,
            "closed loop, half the CPU"
        );
    }
    use crate::load::RequestSample;

    const T0: u64 = 1_000_000_000_000;
    const MS: u64 = 1_000_000;

    /// Ten requests at 20/s, the i-th taking (i + 1) ms, the last sent 2 ms late; the
    /// API wrote 10 lines of 100 bytes and the reader read them, the last byte 1.2 s
    /// after the first scheduled send.
    fn raw(api_written: u64, read_bytes: u64, drained: bool) -> RawRun {
        let samples = (0..10u64)
            .map(|i| RequestSample {
                index: i,
                scheduled_ns: i * 50 * MS,
                send_lateness_ns: if i == 9 { 2 * MS } else { 10_000 },
                connect_ns: Some(100_000),
                latency_ns: Some((i + 1) * MS),
                status: Some(200),
                outcome: Outcome::Ok,
                done_mono_ns: T0 + i * 50 * MS + (i + 1) * MS,
            })
            .collect();
        RawRun {
            run: 3,
            round: 1,
            condition: RunCondition::BuiltIn(Condition::JsonQueue),
            sink: SinkKind::Slow,
            duration: Duration::from_millis(500),
            drain_timeout: Duration::from_secs(120),
            lateness_limit_us: 100.0,
            api_cores: 1.0,
            offered_rps: Some(20.0),
            load: LoadResult {
                t0_mono_ns: T0,
                samples,
                wall: Duration::from_millis(520),
                interrupted: false,
            },
            api: Some(ApiStats {
                mono_ns: T0 + 2_000 * MS,
                requests: 10,
                handed_off_bytes: 1000,
                written_bytes: api_written,
                written_newlines: 10,
                sha256: "ab".repeat(32),
                gen_ns: 10 * 20_000,
                gen_count: 10,
                log_ns: 10 * 5_000,
                log_count: 10,
                dropped: 0,
                queue_full: 0,
                ..ApiStats::default()
            }),
            read: ReaderStats {
                mono_ns: T0 + 2_000 * MS,
                bytes: read_bytes,
                newlines: 10,
                reads: 3,
                sha256: "ab".repeat(32),
                last_byte_mono_ns: Some(T0 + 1_200 * MS),
                eof: false,
            },
            drained,
            series: vec![
                (T0 - 10 * MS, Some(0), 0),
                (T0 + 100 * MS, Some(300), 100),
                (T0 + 600 * MS, Some(1000), 400),
                (T0 + 1_300 * MS, Some(1000), 1000),
            ],
            cpu_seconds: Some((1.0, 1.25)),
            reader_cpu_seconds: Some((0.5, 0.6)),
            lab_cpu_seconds: Some((2.0, 2.25)),
            machine_cores: 2.0,
            machine_busy: Some(0.3),
            cpu_wait_ms: Some(CpuWaitMs {
                api: Some(1.5),
                reader: Some(0.25),
                generator: Some(0.5),
            }),
            cpu_window_s: 2.5,
            warmup_served: 2,
            warmup_lines: 0,
            expect_lines: ExpectLines::default(),
            app_exit: None,
            stopped_builtin: false,
            record: RecordShape::Json16k,
            first_id: 2,
            proc_counters: None,
            recovered: None,
            app_recovered: None,
            oldest_queued_us: None,
            findings: None,
            match_request_id: false,
        }
    }

    #[test]
    fn a_built_in_api_stopped_by_a_signal_counts_what_the_stop_lost() {
        let mut r = raw(1000, 1000, true);
        r.stopped_builtin = true;
        r.app_exit = Some(killed_by_sigkill());
        r.api.as_mut().unwrap().records = 30;
        r.read.newlines = 26;
        r.match_request_id = true;
        // Warm-up ids 0 and 1 and requests 2..=11 were served; the last two are gone.
        let mut findings = LineFindings::default();
        for id in 0..10 {
            findings.id_lines.insert(id, 3);
        }
        r.record = RecordShape::Three;
        r.findings = Some(findings);
        let s = measure(&r).summary;
        assert_eq!(s.expected_records, Some(30));
        assert_eq!(s.metrics.lost_records, Some(4));
        assert!(!s.metrics.verified);
        assert!(
            s.verify_note.starts_with("4 records lost at the stop"),
            "{}",
            s.verify_note
        );
        assert!(s.verify_note.contains("SIGKILL"), "{}", s.verify_note);
        let ids = s.request_ids.unwrap();
        assert_eq!((ids.missing, ids.first.clone()), (2, vec![10, 11]));
        assert_eq!(ids.placement, "the last 2 requests before the stop");
        r.drained = false;
        let s = measure(&r).summary;
        assert!(
            s.verify_note.contains("still in the pipe"),
            "{}",
            s.verify_note
        );
        r.drained = true;
        r.read.newlines = 30;
        let s = measure(&r).summary;
        assert!(s.metrics.verified, "{}", s.verify_note);
        assert_eq!(s.metrics.lost_records, Some(0));
    }

    /// `--match-request-id` with `--expect-lines quiet=0`: an app's condition that logs
    /// nothing is verified by its zero lines, and has no ids to miss (it said
    /// "verified yes … 0 lines as expected", then "12 ids missing").
    #[test]
    fn a_condition_expected_to_log_nothing_misses_no_ids() {
        let mut r = raw(0, 0, true);
        r.api = None;
        r.condition = RunCondition::Named("quiet".into());
        r.expect_lines = "quiet=0".parse().unwrap();
        r.read.newlines = 0;
        r.match_request_id = true;
        r.findings = Some(LineFindings::default());
        let out = measure(&r);
        let s = &out.summary;
        assert!(s.metrics.verified, "{}", s.verify_note);
        let ids = s.request_ids.as_ref().unwrap();
        assert_eq!((ids.missing, ids.incomplete), (0, 0), "{ids:?}");
        assert!(ids.placement.starts_with("not applicable"), "{ids:?}");
        let params: Params =
            serde_json::from_str(include_str!("../../tests/fixtures/lab/summary.json"))
                .map(|s: Summary| s.params)
                .unwrap();
        let summary = summarise(params, vec![out]);
        assert_eq!(summary.pairs[0].missing_ids_note, None);
        // Expected to log a line per request, the same empty log misses every id.
        r.expect_lines = "quiet=1".parse().unwrap();
        let s = measure(&r).summary;
        assert!(!s.metrics.verified);
        assert_eq!(
            s.request_ids.unwrap().missing,
            12,
            "2 warm-up and 10 measured"
        );
    }

    /// A closed loop sends each request when the last is answered: no schedule, so no
    /// lateness (a table shows – there, not 0).
    #[test]
    fn a_closed_loop_has_no_send_lateness() {
        let mut r = raw(1000, 1000, true);
        r.offered_rps = None;
        let out = measure(&r);
        assert_eq!(out.summary.metrics.send_lateness, None);
        assert_eq!(out.summary.metrics.lateness_warning, None);
        let params: Params =
            serde_json::from_str(include_str!("../../tests/fixtures/lab/summary.json"))
                .map(|s: Summary| s.params)
                .unwrap();
        let summary = summarise(params, vec![out]);
        assert_eq!(summary.pairs[0].metrics.send_lateness, None);
        assert!(measure(&raw(1000, 1000, true))
            .summary
            .metrics
            .send_lateness
            .is_some());
    }

    /// `loglag-spool` killed: the lab delivered the spool, and the batch in flight came
    /// twice. Nothing is lost, the repeats are counted as duplicates, the run verifies;
    /// without a recovery the same lines would be "extra" and fail.
    #[test]
    fn a_spool_recovered_after_a_kill_loses_nothing_and_counts_its_duplicates() {
        let mut r = raw(1000, 1000, true);
        r.condition = RunCondition::BuiltIn(Condition::LoglagSpool);
        r.stopped_builtin = true;
        r.app_exit = Some(killed_by_sigkill());
        r.api.as_mut().unwrap().records = 30;
        r.read.newlines = 33;
        r.recovered = Some(12);
        let s = measure(&r).summary;
        assert_eq!(
            (
                s.metrics.lost_records,
                s.metrics.duplicate_records,
                s.metrics.verified
            ),
            (Some(0), Some(3), true),
            "{}",
            s.verify_note
        );
        assert!(s.verify_note.contains("3 twice"), "{}", s.verify_note);
        r.read.newlines = 30;
        let s = measure(&r).summary;
        assert_eq!(
            (s.metrics.lost_records, s.metrics.duplicate_records),
            (Some(0), Some(0))
        );
        assert!(
            s.verify_note
                .contains("12 of them delivered from the spool"),
            "{}",
            s.verify_note
        );
        r.read.newlines = 28;
        let s = measure(&r).summary;
        assert_eq!(
            (s.metrics.lost_records, s.metrics.verified),
            (Some(2), false),
            "a loss is a loss"
        );
        r.recovered = None;
        r.read.newlines = 33;
        let s = measure(&r).summary;
        assert_eq!(
            (
                s.metrics.lost_records,
                s.metrics.duplicate_records,
                s.metrics.verified
            ),
            (Some(-3), None, false)
        );
    }

    #[test]
    fn a_verified_run() {
        let out = measure(&raw(1000, 1000, true));
        insta::assert_snapshot!(serde_json::to_string_pretty(&out.summary).unwrap());
        assert_eq!(out.requests.len(), 10);
        assert_eq!(out.requests[9].send_lateness_ms, 2.0);
        assert_eq!(out.timeseries.len(), 3, "samples before t0 are left out");
        assert_eq!(out.latencies_ns.len(), 10);
    }

    /// The rows hold what the CSVs write (three decimals), so a page drawn from memory
    /// (`--report`) is the page drawn from the files (`loglag report DIR`).
    #[test]
    fn rows_hold_what_the_csvs_write() {
        let mut raw = raw(1000, 1000, true);
        for (i, s) in raw.load.samples.iter_mut().enumerate() {
            // Times to the nanosecond, as the generator measures them.
            s.scheduled_ns += 1_234 + i as u64;
            s.send_lateness_ns += 567;
            s.latency_ns = s.latency_ns.map(|l| l + 891);
        }
        for point in &mut raw.series {
            point.0 += 4_321;
        }
        let out = measure(&raw);
        let written = |v: f64| format!("{v:.3}").parse::<f64>().unwrap() == v;
        assert!(!out.requests.is_empty() && !out.timeseries.is_empty());
        assert!(out.requests.iter().all(|r| written(r.scheduled_ms)
            && written(r.send_lateness_ms)
            && r.latency_ms.is_none_or(written)));
        assert!(out.timeseries.iter().all(|r| written(r.t_s)));
        assert_eq!(
            out.requests[9].send_lateness_ms, 2.001,
            "567 ns more, to the µs"
        );
    }

    #[test]
    fn a_short_read_and_an_undrained_log_are_not_verified() {
        let short = measure(&raw(1000, 900, true)).summary;
        assert!(!short.metrics.verified);
        assert!(
            short.verify_note.starts_with("mismatch"),
            "{}",
            short.verify_note
        );
        let undrained = measure(&raw(1000, 1000, false)).summary;
        assert!(!undrained.metrics.verified);
        assert_eq!(undrained.verify_note, "log not drained within 120s");
    }

    #[test]
    fn pairs_pool_their_rounds() {
        let mut second = raw(1000, 1000, true);
        second.run = 4;
        second.round = 2;
        for s in &mut second.load.samples {
            s.latency_ns = s.latency_ns.map(|l| l + 10 * MS);
        }
        let outputs = vec![measure(&raw(1000, 1000, true)), measure(&second)];
        let params: Params =
            serde_json::from_str(include_str!("../../tests/fixtures/lab/summary.json"))
                .map(|s: Summary| s.params)
                .unwrap();
        let summary = summarise(params, outputs);
        assert_eq!(summary.runs.len(), 2);
        insta::assert_snapshot!(serde_json::to_string_pretty(&summary.pairs).unwrap());
    }
}
