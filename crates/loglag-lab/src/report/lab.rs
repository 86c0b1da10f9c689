//! `loglag lab`'s results: runs, pairs, findings, requests and the time series.

use serde::{Deserialize, Serialize};

use super::common::{Lateness, Machine};

/// Everything a lab run measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Summary {
    pub schema: u32,
    pub params: Params,
    pub runs: Vec<RunSummary>,
    pub pairs: Vec<PairSummary>,
    /// What the runs say against the baseline, each with its interval and verdict.
    #[serde(default)]
    pub findings: Vec<Finding>,
    /// One row per request.
    #[serde(skip)]
    pub requests: Vec<RequestRow>,
    /// (run, t, produced, read) samples.
    #[serde(skip)]
    pub timeseries: Vec<TimeseriesRow>,
}

/// What was asked for, and where it ran.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Params {
    /// The plan, as it echoes itself (flattened: its fields sit beside these).
    #[serde(flatten)]
    pub plan: PlanEcho,
    /// Whether the CPU limit could be applied (cgroups may be unavailable).
    pub cpu_limit_applied: bool,
    pub loglag_version: String,
    /// The git revision loglag was built from, when known.
    #[serde(default)]
    pub git_revision: Option<String>,
    pub started_unix_s: u64,
    pub machine: Machine,
    /// The preset this run belongs to, and its step (`buffers` / `kill`).
    #[serde(default)]
    pub preset: Option<String>,
    #[serde(default)]
    pub step: Option<String>,
}

/// The plan as `summary.json` echoes it (flattened into its `params`), so that a
/// result says what it was asked to do. Built by `LabSettings::echo` (`lab/plan.rs`),
/// which takes every field of the plan apart: a new field does not compile until it
/// is echoed here or said not to be.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
pub struct PlanEcho {
    pub conditions: Vec<String>,
    pub sinks: Vec<String>,
    pub rounds: usize,
    pub rate: f64,
    pub duration_s: f64,
    pub connection: String,
    pub slow_rate_bytes_per_s: u64,
    pub read_size: usize,
    pub pipe_size: Option<usize>,
    pub threads: usize,
    pub warmup_requests: usize,
    pub cpu_limit: Option<f64>,
    /// Runs whose p99 send lateness exceeds this are flagged.
    #[serde(default = "default_lateness_limit")]
    pub lateness_limit_us: f64,
    pub app: Option<String>,
    /// Run after each stop of the `--app`, before its log was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_recover: Option<String>,
    /// Closed loop with this many connections (`None`: open loop at `rate`).
    #[serde(default)]
    pub closed: Option<usize>,
    /// What the built-in API logged per request: json16k, three or line120.
    #[serde(default)]
    pub record: Option<String>,
    /// Every Nth request logged an ERROR.
    #[serde(default)]
    pub error_every: Option<u64>,
    /// How the API was stopped at the end of each run, when a stop was measured.
    #[serde(default)]
    pub stop_signal: Option<String>,
    /// The slow-disk sink's delay per write, µs.
    #[serde(default)]
    pub disk_delay_us: Option<u64>,
    /// The built-in loglag condition's settings, when not its defaults.
    #[serde(default)]
    pub loglag_batch_bytes: Option<usize>,
    #[serde(default)]
    pub loglag_flush_interval_ms: Option<f64>,
    /// How long the network conditions' collector was down mid-run, ms.
    #[serde(default)]
    pub collector_outage_ms: Option<f64>,
    /// The condition every other is compared with in the findings (`--baseline`).
    #[serde(default)]
    pub baseline: Option<String>,
}

fn default_lateness_limit() -> f64 {
    Lateness::DEFAULT_LIMIT_US
}

/// One run: one (condition, sink) pair in one round, with a fresh API.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunSummary {
    pub run: usize,
    pub round: usize,
    pub condition: String,
    pub sink: String,
    pub requests: u64,
    pub completed: u64,
    /// What a run and a pair both state (flattened: the fields sit beside these).
    #[serde(flatten)]
    pub metrics: Metrics,
    /// The last response, in seconds after the first scheduled send.
    #[serde(default)]
    pub last_response_s: Option<f64>,
    /// The last log byte read, in seconds after the first scheduled send.
    #[serde(default)]
    pub last_byte_s: Option<f64>,
    /// Cores the sink reader and the lab's load generator used meanwhile: with the
    /// API's, what the machine gave the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_cpu_cores: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_cpu_cores: Option<f64>,
    /// The share of the machine's CPU that was busy meanwhile, other tenants included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_busy: Option<f64>,
    pub produced_bytes: Option<u64>,
    pub read_bytes: u64,
    pub read_newlines: u64,
    pub read_sha256: String,
    /// Why verification failed, or what it was based on.
    pub verify_note: String,
    /// Log lines the API should have written (an `--app`: warm-up included).
    #[serde(default)]
    pub expected_records: Option<u64>,
    /// How an `--app` ended when stopped at the end of the run.
    #[serde(default)]
    pub app_exit: Option<String>,
    /// Which request ids the log lacks (`--match-request-id`).
    #[serde(default)]
    pub request_ids: Option<IdMatch>,
}

/// The figures a run states and a pair states pooled over its runs: one definition,
/// so that a metric is added once. How a pair pools each is said at the field.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Metrics {
    /// Latency percentiles, ms (a pair: over every request of every round, pooled).
    pub p50_ms: Option<f64>,
    pub p99_ms: Option<f64>,
    pub max_ms: Option<f64>,
    #[serde(default)]
    pub mean_ms: Option<f64>,
    pub http_errors: u64,
    pub timeouts: u64,
    /// Average time building the record, µs (empty when the app cannot report it).
    pub gen_us: Option<f64>,
    /// Average time in the logger call, µs.
    pub log_call_us: Option<f64>,
    /// The largest backlog (a pair: of any round).
    pub max_backlog_kib: Option<f64>,
    /// From the last response until every log byte was read (a pair: mean over rounds).
    pub drain_s: f64,
    /// Throughput "API": completed / (first scheduled send → max(duration, last
    /// response)); a pair: summed completions over summed time.
    pub rps_api: f64,
    /// Throughput "logs read": the same, until every log byte was read.
    pub rps_logs_read: f64,
    /// Cores the API used (a pair: mean over rounds).
    pub cpu_cores: Option<f64>,
    /// Records the logger dropped, and times its queue was full (a pair: summed).
    pub dropped: Option<u64>,
    pub queue_full: Option<u64>,
    /// What was read is what was written (a pair: every round was).
    pub verified: bool,
    /// Expected − read: records lost (negative: extra lines). `None` when nothing
    /// says what to expect. A pair: summed over rounds.
    #[serde(default)]
    pub lost_records: Option<i64>,
    /// Records written twice: after a `loglag-spool` stop, the batch in flight that the
    /// spool delivered again. `None` where nothing was recovered. A pair: summed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duplicate_records: Option<u64>,
    /// How late the generator sent the requests (a pair: every request pooled).
    #[serde(default)]
    pub send_lateness: Option<Lateness>,
    /// Set when the generator's p99 lateness exceeds `lateness_limit_us`.
    #[serde(default)]
    pub lateness_warning: Option<String>,
    /// The API could not keep up: it served less than 90% of the offered rate, or used
    /// 90% or more of the CPU it had. Its latencies are then queueing, not the logging
    /// cost alone; verdicts built on it are inconclusive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub saturation_warning: Option<String>,
    /// The machine was saturated (all its cores busy, other tenants included): every
    /// latency may include waiting for a core, whatever the condition did. The
    /// findings weigh the wait measured in `cpu_wait_ms`, not this flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_warning: Option<String>,
    /// How long the run's processes waited for a CPU during the load (a pair: summed
    /// over its runs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_wait_ms: Option<CpuWaitMs>,
    /// What the API process did (a pair: rates averaged over rounds; maxima for RSS
    /// and queue age; sums for counts).
    #[serde(flatten)]
    pub process: ProcessFigures,
}

impl Metrics {
    /// Whether a warning says these latencies are not the logging's alone: the
    /// generator was late, or the API or the machine was saturated. Charts draw such
    /// a pair dashed or faded.
    pub fn flagged(&self) -> bool {
        self.lateness_warning.is_some()
            || self.saturation_warning.is_some()
            || self.machine_warning.is_some()
    }
}

/// How long each of a run's processes waited for a CPU during the load, ms: runnable
/// but not running (the run-queue wait of `/proc/PID/task/*/schedstat`, summed over
/// threads, read as the load starts and as it ends). What other tenants, and the
/// lab's processes among themselves, cost the run. `None`: not measured.
#[derive(Debug, Clone, Copy, Default, Serialize, Deserialize, PartialEq)]
pub struct CpuWaitMs {
    /// The API (an `--app` with everything it forked), without the threads of the
    /// built-in API's control channel, which answer the lab's sampler.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<f64>,
    /// The sink reader.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader: Option<f64>,
    /// The load generator: the lab's runtime threads that send and receive.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<f64>,
}

impl CpuWaitMs {
    /// The three together; `None` when none was measured.
    pub fn total(&self) -> Option<f64> {
        let measured = [self.api, self.reader, self.generator];
        measured
            .iter()
            .any(Option::is_some)
            .then(|| measured.iter().flatten().sum())
    }

    /// Each role summed over `runs` (a pair's figure); `None` when no run measured any.
    pub fn summed<'a>(runs: impl Iterator<Item = &'a CpuWaitMs>) -> Option<CpuWaitMs> {
        let add = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        runs.fold(None, |acc: Option<CpuWaitMs>, r| {
            let acc = acc.unwrap_or_default();
            Some(CpuWaitMs {
                api: add(acc.api, r.api),
                reader: add(acc.reader, r.reader),
                generator: add(acc.generator, r.generator),
            })
        })
    }
}

/// What the API process did during the load, per run or pooled over a pair's runs.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct ProcessFigures {
    /// `write` calls on the log sink during the load (the built-in API counts its own).
    #[serde(default)]
    pub log_writes: Option<u64>,
    /// The same per minute.
    #[serde(default)]
    pub log_writes_per_min: Option<f64>,
    /// Write-family syscalls of the whole process (`syscw`, responses included), per minute.
    #[serde(default)]
    pub syscw_per_min: Option<f64>,
    /// Context switches per second, summed over threads.
    #[serde(default)]
    pub ctx_voluntary_per_s: Option<f64>,
    #[serde(default)]
    pub ctx_involuntary_per_s: Option<f64>,
    /// Peak resident set, KiB.
    #[serde(default)]
    pub rss_peak_kib: Option<u64>,
    /// The longest a record waited in loglag's queue, as sampled every 25 ms, ms.
    #[serde(default)]
    pub oldest_queued_ms: Option<f64>,
    /// ERROR lines read, and lines whose sequence number went backwards.
    #[serde(default)]
    pub error_lines: Option<u64>,
    #[serde(default)]
    pub out_of_order: Option<u64>,
}

/// One (condition, sink) pair pooled over its rounds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct PairSummary {
    pub condition: String,
    pub sink: String,
    pub runs: usize,
    pub requests: u64,
    /// The pooled figures (flattened: the fields sit beside these).
    #[serde(flatten)]
    pub metrics: Metrics,
    /// 95% bootstrap interval of `p99_ms` over the pooled requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub p99_ms_interval: Option<(f64, f64)>,
    /// The lowest and highest p99 of a single round: the spread between rounds.
    #[serde(default)]
    pub p99_ms_range: Option<(f64, f64)>,
    /// Why a round was not verified (the first such reason).
    #[serde(default)]
    pub verify_note: Option<String>,
    /// Where the first round that lacks request ids places the loss.
    #[serde(default)]
    pub missing_ids_note: Option<String>,
}

/// A latency percentile a finding compares.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Percentile {
    P50,
    P99,
}

impl Percentile {
    pub fn quantile(self) -> f64 {
        match self {
            Percentile::P50 => 0.50,
            Percentile::P99 => 0.99,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Percentile::P50 => "p50",
            Percentile::P99 => "p99",
        }
    }

    /// This percentile of a pair, over every request of every round.
    pub fn of(self, pair: &PairSummary) -> Option<f64> {
        match self {
            Percentile::P50 => pair.metrics.p50_ms,
            Percentile::P99 => pair.metrics.p99_ms,
        }
    }
}

/// One conclusion of a lab run: a condition's percentile against the baseline's on
/// the same sink, with 95% bootstrap intervals over the requests of every round.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Finding {
    pub condition: String,
    /// The condition it is compared with.
    pub baseline: String,
    pub sink: String,
    pub percentile: Percentile,
    pub value_ms: f64,
    pub baseline_ms: f64,
    /// `value_ms − baseline_ms`, and its interval.
    pub difference_ms: f64,
    pub difference_interval_ms: (f64, f64),
    /// `value_ms / baseline_ms`, and its interval.
    pub ratio: f64,
    pub ratio_interval: (f64, f64),
    /// `None`: the difference holds. `Some(why)`: inconclusive, and why.
    pub inconclusive: Option<String>,
    /// What a reader must know even when it holds (a saturation the condition caused).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

impl Finding {
    /// The verdict in words: "holds", or "inconclusive: why", with any note.
    pub fn verdict(&self) -> String {
        let mut v = match &self.inconclusive {
            None => "holds".to_owned(),
            Some(why) => format!("inconclusive: {why}"),
        };
        if let Some(note) = &self.note {
            v.push_str(&format!(" ({note})"));
        }
        v
    }
}

/// One request.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RequestRow {
    pub run: usize,
    pub condition: String,
    pub sink: String,
    pub scheduled_ms: f64,
    pub send_lateness_ms: f64,
    pub latency_ms: Option<f64>,
    pub status: Option<u16>,
    pub outcome: String,
}

/// Bytes produced and read at one instant of a run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct TimeseriesRow {
    pub run: usize,
    pub t_s: f64,
    pub produced_bytes: Option<u64>,
    pub read_bytes: u64,
}

/// The API's saturation warnings of a lab run, one line per pair: each is that pair's
/// own (a condition's doing, or a baseline's trouble). A busy machine is one cause
/// for every pair: [`busy_machine_warning`].
pub fn saturation_warnings(pairs: &[PairSummary]) -> Vec<(String, String)> {
    pairs
        .iter()
        .filter_map(|p| {
            let w = p.metrics.saturation_warning.clone()?;
            Some((format!("{} / {}", p.condition, p.sink), w))
        })
        .collect()
}

/// One line for a busy machine, however many runs it disturbed: how many were (their
/// cores 90% used or more, other tenants included: `machine_warning`), and the most
/// the API, the reader and the generator waited for a CPU in one of them. Each run's
/// own figures are in `summary.json` (`machine_warning`, `cpu_wait_ms`). Without runs
/// (a summary read back without them), its pairs are counted instead.
pub fn busy_machine_warning(s: &Summary) -> Option<String> {
    let (busy, all, waits): (usize, usize, Vec<CpuWaitMs>) = if s.runs.is_empty() {
        let busy: Vec<&PairSummary> = s
            .pairs
            .iter()
            .filter(|p| p.metrics.machine_warning.is_some())
            .collect();
        let waits = busy
            .iter()
            .filter_map(|p| {
                let w = p.metrics.cpu_wait_ms?;
                let per_run = |v: Option<f64>| v.map(|v| v / p.runs.max(1) as f64);
                Some(CpuWaitMs {
                    api: per_run(w.api),
                    reader: per_run(w.reader),
                    generator: per_run(w.generator),
                })
            })
            .collect();
        (busy.len(), s.pairs.len(), waits)
    } else {
        let busy: Vec<&RunSummary> = s
            .runs
            .iter()
            .filter(|r| r.metrics.machine_warning.is_some())
            .collect();
        let waits = busy.iter().filter_map(|r| r.metrics.cpu_wait_ms).collect();
        (busy.len(), s.runs.len(), waits)
    };
    if busy == 0 {
        return None;
    }
    let what = if s.runs.is_empty() { "pairs" } else { "runs" };
    let most = |f: fn(&CpuWaitMs) -> Option<f64>| waits.iter().filter_map(f).reduce(f64::max);
    let waited = match (most(|w| w.api), most(|w| w.reader), most(|w| w.generator)) {
        (None, None, None) => {
            ": latencies include waiting for a core (how long was not measured)".to_owned()
        }
        (api, reader, generator) => {
            let ms =
                |v: Option<f64>| v.map_or("(not measured)".to_owned(), |v| format!("{v:.1} ms"));
            format!(
                ": the API waited up to {} for a CPU in a run, the reader up to {}, the load generator up to {}; each finding weighs that wait against its difference (see its note)",
                ms(api),
                ms(reader),
                ms(generator)
            )
        }
    };
    Some(format!(
        "the machine was busy (its cores 90% used or more, other tenants included) during {busy} of {all} {what}{waited}"
    ))
}

/// The lateness warnings of a lab run, one line each: per pair when a few pairs are
/// late, else one line for all of them (a busy machine makes every pair late, and
/// fourteen identical warnings hide the table). Each line is `(who, what)`.
pub fn lateness_warnings(pairs: &[PairSummary], limit_us: f64) -> Vec<(String, String)> {
    let late: Vec<&PairSummary> = pairs
        .iter()
        .filter(|p| p.metrics.lateness_warning.is_some())
        .collect();
    if late.len() <= 3 {
        return late
            .iter()
            .map(|p| {
                (
                    format!("{} / {}", p.condition, p.sink),
                    p.metrics.lateness_warning.clone().unwrap_or_default(),
                )
            })
            .collect();
    }
    let p99s: Vec<f64> = late
        .iter()
        .filter_map(|p| p.metrics.send_lateness.map(|l| l.p99_us))
        .collect();
    let lo = p99s.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = p99s.iter().copied().fold(0.0, f64::max);
    vec![(
        format!("{} of {} pairs", late.len(), pairs.len()),
        format!(
            "the load generator sent late (p99 {lo:.0} to {hi:.0} µs, over the {limit_us:.0} µs limit; see the send late column): these latencies include its own delay. Usually the machine is busy: close other work, or measure the floor with `loglag load --calibrate`"
        ),
    )]
}

/// Which of the requests `served` lack lines in the log: none at all (`missing`) or
/// fewer than `expect` (`incomplete`), and where they fall.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct IdMatch {
    /// Requests whose id appears on no line.
    pub missing: u64,
    /// Requests with some lines but fewer than expected.
    pub incomplete: u64,
    /// The first few ids that are missing or incomplete, in order.
    pub first: Vec<u64>,
    /// `last N requests before the stop`, `scattered` or `none`.
    pub placement: String,
    /// Lines whose id no request of this run carried (another process, or a garbled id).
    pub unknown_ids: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair(condition: &str, late_p99_us: f64) -> PairSummary {
        let mut p: PairSummary = serde_json::from_value(serde_json::json!({
            "condition": condition, "sink": "fast", "runs": 1, "requests": 100,
            "p50_ms": 0.1, "p99_ms": 1.0, "max_ms": 1.0, "http_errors": 0, "timeouts": 0,
            "gen_us": null, "log_call_us": null, "max_backlog_kib": null, "drain_s": 0.0,
            "rps_api": 20.0, "rps_logs_read": 20.0, "cpu_cores": null, "dropped": 0,
            "queue_full": 0, "verified": true
        }))
        .unwrap();
        let lateness = Lateness {
            mean_us: late_p99_us / 2.0,
            p50_us: Some(late_p99_us / 3.0),
            p99_us: late_p99_us,
            max_us: late_p99_us * 2.0,
        };
        p.metrics.lateness_warning = lateness.warning(100.0);
        p.metrics.send_lateness = Some(lateness);
        p
    }

    /// A busy machine is one cause, said once whatever the number of runs it
    /// disturbed, with the most each process waited; the API's own saturation stays
    /// per pair.
    #[test]
    fn a_busy_machine_is_one_line_and_a_saturated_api_is_its_pair_s() {
        let mut s: Summary =
            serde_json::from_str(include_str!("../../tests/fixtures/lab/summary.json")).unwrap();
        assert_eq!(busy_machine_warning(&s), None);
        let runs = s.runs.len();
        for (i, r) in s.runs.iter_mut().enumerate() {
            r.metrics.machine_warning = Some("the machine was saturated (98% busy)".into());
            r.metrics.cpu_wait_ms = Some(CpuWaitMs {
                api: Some(10.0 * (i + 1) as f64),
                reader: Some(1.5),
                generator: None,
            });
        }
        for p in &mut s.pairs {
            p.metrics.machine_warning = Some("the machine was saturated (98% busy)".into());
        }
        s.pairs[3].metrics.saturation_warning = Some("the API was saturated".into());
        let line = busy_machine_warning(&s).unwrap();
        assert!(
            line.starts_with(&format!("the machine was busy (its cores 90% used or more, other tenants included) during {runs} of {runs} runs: the API waited up to {}.0 ms for a CPU in a run, the reader up to 1.5 ms, the load generator up to (not measured)", 10 * runs)),
            "{line}"
        );
        let saturated = saturation_warnings(&s.pairs);
        assert_eq!(saturated.len(), 1, "{saturated:?}");
        assert_eq!(saturated[0].1, "the API was saturated");
        // Without runs (a summary that kept only its pairs), the pairs are counted.
        s.runs.clear();
        let line = busy_machine_warning(&s).unwrap();
        assert!(line.contains(&format!("during {0} of {0} pairs: latencies include waiting for a core (how long was not measured)", s.pairs.len())), "{line}");
    }

    #[test]
    fn a_few_late_pairs_are_named_and_many_are_summed_up() {
        let few = [pair("none", 50.0), pair("a", 300.0), pair("b", 200.0)];
        let lines = lateness_warnings(&few, 100.0);
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0].0, "a / fast");
        assert!(lines[0].1.contains("p99 300 µs"), "{:?}", lines[0]);

        let many: Vec<PairSummary> = (0..6)
            .map(|i| pair(&format!("c{i}"), 200.0 + 100.0 * i as f64))
            .chain([pair("calm", 10.0)])
            .collect();
        let lines = lateness_warnings(&many, 100.0);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert_eq!(lines[0].0, "6 of 7 pairs");
        assert!(lines[0].1.contains("p99 200 to 700 µs"), "{:?}", lines[0]);
        assert!(lateness_warnings(&[pair("calm", 10.0)], 100.0).is_empty());
    }
}
