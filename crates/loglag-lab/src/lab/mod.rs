//! `loglag lab`: runs every (condition, sink) pair, round after round, each with a
//! fresh API and reader, and measures what the spec lists. The runner knows nothing of
//! any one experiment beyond the plan it is given.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::api::condition::{Condition, SHORT_LINE_BYTES};
use crate::api::control::ApiStats;
use crate::api::launch::{ApiKind, ApiProc};
use crate::load::{self, Connection, LoadConfig, Outcome, Target};
use crate::reader::client::ReaderProc;
use crate::reader::{self, ReadConfig};
use crate::report::{
    Lateness, Machine, PairSummary, Params, RequestRow, RunSummary, Summary, TimeseriesRow, SCHEMA,
};
use crate::stats::{self, quantile};
use crate::sys::cgroup::CpuLimit;
use crate::sys::child::cpu_seconds;
use crate::sys::clock::mono_ns;

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

/// Told about progress; the CLI draws a progress bar with it.
pub trait Observer {
    fn run_started(&self, _index: usize, _total: usize, _label: &str) {}
    fn run_finished(&self, _run: &RunSummary) {}
    fn warn(&self, _message: &str) {}
}

/// Why a lab run stopped early.
#[derive(Debug)]
#[non_exhaustive]
pub enum LabError {
    /// Ctrl-C.
    Cancelled,
    /// Something failed; the message says what.
    Failed(String),
}

impl std::fmt::Display for LabError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabError::Cancelled => f.write_str("interrupted"),
            LabError::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for LabError {}

fn fail(msg: impl Into<String>) -> LabError {
    LabError::Failed(msg.into())
}

impl From<std::io::Error> for LabError {
    fn from(e: std::io::Error) -> LabError {
        LabError::Failed(e.to_string())
    }
}

/// Everything one run produced.
struct RunOutput {
    summary: RunSummary,
    latencies_ns: Vec<u64>,
    lateness_ns: Vec<u64>,
    time_a_s: f64,
    time_b_s: f64,
    requests: Vec<RequestRow>,
    timeseries: Vec<TimeseriesRow>,
}

/// Runs the whole plan. Returns what was measured, and the error that stopped it, if
/// any: partial results are always returned.
pub fn run_lab(
    plan: &LabPlan,
    observer: &dyn Observer,
    cancel: &AtomicBool,
) -> (Summary, Option<LabError>) {
    let started_unix_s = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut params = Params {
        conditions: plan.conditions.iter().map(|c| c.to_string()).collect(),
        sinks: plan.sinks.iter().map(|s| s.as_str().to_owned()).collect(),
        rounds: plan.rounds,
        rate: plan.rate,
        duration_s: plan.duration.as_secs_f64(),
        connection: format!("{:?}", plan.connection).to_lowercase(),
        slow_rate_bytes_per_s: plan.slow_rate,
        read_size: plan.read_size,
        pipe_size: plan.pipe_size,
        threads: plan.threads,
        warmup_requests: plan.warmup,
        cpu_limit: plan.cpu_limit,
        cpu_limit_applied: false,
        lateness_limit_us: plan.lateness_limit_us,
        app: plan.app.clone(),
        loglag_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_revision: option_env!("LOGLAG_GIT_REVISION").map(str::to_owned),
        started_unix_s,
        machine: Machine::detect(),
    };
    let mut outputs = Vec::new();
    let result = (|| {
        let dir = tempfile::Builder::new().prefix("loglag-lab-").tempdir()?;
        let limits = match plan.cpu_limit {
            None => None,
            Some(cores) => {
                let tag = std::process::id();
                match (
                    CpuLimit::create(&format!("loglag-{tag}-api"), cores),
                    CpuLimit::create(&format!("loglag-{tag}-io"), cores),
                ) {
                    (Ok(api), Ok(io)) => Some((api, io)),
                    (Err(e), _) | (_, Err(e)) => {
                        observer.warn(&format!("--cpu-limit {cores}: cgroups are not usable here ({e}); running without a CPU limit"));
                        None
                    }
                }
            }
        };
        params.cpu_limit_applied = limits.is_some();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()?;
        let schedule = plan.schedule();
        for (index, &(round, condition, sink)) in schedule.iter().enumerate() {
            if cancel.load(Ordering::SeqCst) {
                return Err(LabError::Cancelled);
            }
            let label = format!(
                "{condition} / {sink} (round {})",
                round + 1,
                sink = sink.as_str()
            );
            observer.run_started(index, schedule.len(), &label);
            let out = run_one(
                plan,
                index,
                round,
                condition,
                sink,
                dir.path(),
                &runtime,
                limits.as_ref(),
                cancel,
            )
            .map_err(|e| match e {
                LabError::Failed(m) => fail(format!("run {} ({label}): {m}", index + 1)),
                other => other,
            })?;
            observer.run_finished(&out.summary);
            outputs.push(out);
        }
        Ok(())
    })();
    (summarise(params, outputs), result.err())
}

fn summarise(params: Params, outputs: Vec<RunOutput>) -> Summary {
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
            params.conditions.iter().position(|x| x == c),
            params.sinks.iter().position(|x| x == s),
        )
    });
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
        let pooled_lateness = Lateness::of(&lateness_ns);
        pairs.push(PairSummary {
            runs: runs.len(),
            requests: runs.iter().map(|o| o.summary.requests).sum(),
            p50_ms: ms(quantile(&mut latencies, 0.50)),
            p99_ms: ms(quantile(&mut latencies, 0.99)),
            max_ms: ms(quantile(&mut latencies, 1.0)),
            http_errors: runs.iter().map(|o| o.summary.http_errors).sum(),
            timeouts: runs.iter().map(|o| o.summary.timeouts).sum(),
            gen_us: opt_mean(&|r| r.gen_us),
            log_call_us: opt_mean(&|r| r.log_call_us),
            max_backlog_kib: runs
                .iter()
                .filter_map(|o| o.summary.max_backlog_kib)
                .reduce(f64::max),
            drain_s: stats::mean(runs.iter().map(|o| o.summary.drain_s)).unwrap_or(0.0),
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
            cpu_cores: opt_mean(&|r| r.cpu_cores),
            dropped: opt_sum(&|r| r.dropped),
            queue_full: opt_sum(&|r| r.queue_full),
            verified: runs.iter().all(|o| o.summary.verified),
            send_lateness: pooled_lateness,
            lateness_warning: pooled_lateness.and_then(|l| l.warning(params.lateness_limit_us)),
            condition,
            sink,
        });
    }
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
        requests,
        timeseries,
    }
}

fn wait_until(
    cancel: &AtomicBool,
    timeout: Duration,
    mut done: impl FnMut() -> Result<bool, LabError>,
) -> Result<bool, LabError> {
    let deadline = Instant::now() + timeout;
    loop {
        if done()? {
            return Ok(true);
        }
        if cancel.load(Ordering::SeqCst) {
            return Err(LabError::Cancelled);
        }
        if Instant::now() >= deadline {
            return Ok(false);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Decides when the reader has read everything the API wrote.
struct CaughtUp {
    condition: Condition,
    /// For an `--app` that cannot report what it wrote: how long the reader must see no
    /// new bytes.
    quiet: Duration,
    last_change: (u64, Instant),
}

impl CaughtUp {
    fn new(condition: Condition, quiet: Duration) -> CaughtUp {
        CaughtUp {
            condition,
            quiet,
            last_change: (u64::MAX, Instant::now()),
        }
    }

    fn check(&mut self, read: u64, api: Option<&ApiStats>) -> bool {
        match api {
            // Everything handed off was written or dropped, and everything written was read.
            Some(a) => {
                read >= a.written_bytes
                    && a.written_bytes + a.dropped * self.condition.bytes_per_request() as u64
                        >= a.handed_off_bytes
            }
            None => {
                if read != self.last_change.0 {
                    self.last_change = (read, Instant::now());
                }
                self.last_change.1.elapsed() >= self.quiet
            }
        }
    }
}

/// Bytes (and lines) the reference conditions write per request; used to verify an
/// `--app` that cannot report what it produced.
fn expected_per_request(c: Condition) -> (u64, u64) {
    match c {
        Condition::Short1 => (SHORT_LINE_BYTES as u64, 1),
        Condition::Short10 => (10 * SHORT_LINE_BYTES as u64, 10),
        c if c.bytes_per_request() > 0 => (c.bytes_per_request() as u64, 1),
        _ => (0, 0),
    }
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    plan: &LabPlan,
    run: usize,
    round: usize,
    condition: Condition,
    sink: SinkKind,
    dir: &Path,
    runtime: &tokio::runtime::Runtime,
    limits: Option<&(CpuLimit, CpuLimit)>,
    cancel: &AtomicBool,
) -> Result<RunOutput, LabError> {
    let fifo = dir.join(format!("run-{run}.fifo"));
    reader::ensure_fifo(&fifo)?;
    let read = ReadConfig {
        read_size: plan.read_size,
        rate: (sink == SinkKind::Slow).then_some(plan.slow_rate),
    };
    let mut reader = ReaderProc::start(&plan.exe, &fifo, read, plan.pipe_size)?;
    let kind = match &plan.app {
        Some(app) => ApiKind::App(app),
        None => ApiKind::BuiltIn {
            exe: &plan.exe,
            threads: plan.threads,
        },
    };
    let stderr_path = dir.join(format!("api-{run}.stderr"));
    let mut api = ApiProc::start(kind, condition, &fifo, &stderr_path)?;
    if let Some((api_limit, io_limit)) = limits {
        api_limit.add(api.guard.pid())?;
        io_limit.add(reader.guard.pid())?;
    }
    let target = Target {
        addr: api.http,
        host: api.http.to_string(),
        path: "/".into(),
    };

    // Warm-up: a few requests, wait until their log bytes are read, then reset.
    for _ in 0..plan.warmup {
        let one = LoadConfig {
            target: target.clone(),
            rate: 1000.0,
            duration: Duration::from_millis(1),
            connection: plan.connection,
            closed: None,
            grace: Duration::from_secs(10),
        };
        let r = runtime.block_on(load::run(&one));
        if let Some(s) = r.samples.iter().find(|s| s.outcome != Outcome::Ok) {
            api.check_alive()?;
            return Err(fail(format!(
                "warm-up request to http://{} failed ({:?}, status {:?})",
                api.http, s.outcome, s.status
            )));
        }
    }
    if let Some(c) = &api.control {
        // A buffering logger (memory-buffer) holds the warm-up's records until told.
        c.flush()
            .map_err(|e| fail(format!("cannot ask the API to flush: {e}")))?;
    }
    let mut caught_up = CaughtUp::new(condition, Duration::from_millis(500));
    let warmed = wait_until(cancel, Duration::from_secs(30), || {
        let read = reader.stats()?.bytes;
        Ok(caught_up.check(read, api.stats()?.as_ref()))
    })?;
    if !warmed {
        return Err(fail(
            "the warm-up's log bytes were not all read within 30 s",
        ));
    }
    if let Some(c) = &api.control {
        c.reset()
            .map_err(|e| fail(format!("cannot reset the API's counters: {e}")))?;
    }
    reader.reset()?;

    // Measure: sample produced and read bytes while the load runs.
    let reader = Arc::new(Mutex::new(reader));
    let stop_sampling = Arc::new(AtomicBool::new(false));
    let sampler = {
        let reader = reader.clone();
        let control = api.control.clone();
        let stop = stop_sampling.clone();
        std::thread::spawn(move || {
            let mut series = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                let produced = control
                    .as_ref()
                    .and_then(|c| c.stats().ok())
                    .map(|s| s.handed_off_bytes);
                let read = reader
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .stats()
                    .map(|s| s.bytes)
                    .unwrap_or(0);
                series.push((mono_ns(), produced, read));
                std::thread::sleep(Duration::from_millis(25));
            }
            series
        })
    };
    let cpu_before = cpu_seconds(api.guard.pid());
    let cpu_clock = Instant::now();
    let config = LoadConfig {
        target,
        rate: plan.rate,
        duration: plan.duration,
        connection: plan.connection,
        closed: None,
        grace: Duration::from_secs(30).max(plan.duration),
    };
    let load = runtime.block_on(async {
        tokio::select! {
            r = load::run(&config) => Some(r),
            () = watch(cancel) => None,
        }
    });
    let cpu_after = cpu_seconds(api.guard.pid());
    let cpu_window = cpu_clock.elapsed().as_secs_f64();
    let Some(load) = load else {
        stop_sampling.store(true, Ordering::SeqCst);
        return Err(LabError::Cancelled);
    };
    api.check_alive()?;
    if let Some(c) = &api.control {
        // What the application would do at exit: write what it still buffers.
        c.flush()
            .map_err(|e| fail(format!("cannot ask the API to flush: {e}")))?;
    }

    // Drain: wait until every byte the API wrote has been read.
    let mut caught_up = CaughtUp::new(condition, Duration::from_secs(1));
    let drained = wait_until(cancel, plan.drain_timeout, || {
        let read = reader
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .stats()?
            .bytes;
        Ok(caught_up.check(read, api.stats()?.as_ref()))
    })?;
    stop_sampling.store(true, Ordering::SeqCst);
    let series = sampler.join().unwrap_or_default();
    let api_stats = api.stats()?;
    api.guard.stop(Duration::from_secs(2));
    let reader = Arc::try_unwrap(reader)
        .map_err(|_| fail("reader still shared"))?
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let report = reader.finish()?;
    let _ = std::fs::remove_file(&fifo);

    // Compute.
    let t0 = load.t0_mono_ns;
    let duration_s = plan.duration.as_secs_f64();
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
    let last_byte = report.stats.last_byte_mono_ns;
    let since_t0 = |t: u64| t.saturating_sub(t0) as f64 / 1e9;
    let time_a = duration_s.max(since_t0(last_response));
    let time_b = time_a.max(last_byte.map_or(0.0, since_t0));
    let drain_s = last_byte.map_or(0.0, |b| b.saturating_sub(last_response) as f64 / 1e9);
    let read = &report.stats;
    let (verified, verify_note) = match (&api_stats, drained) {
        (_, false) => (
            false,
            format!("log not drained within {:?}", plan.drain_timeout),
        ),
        (Some(a), true) => {
            let ok = a.written_bytes == read.bytes
                && a.written_newlines == read.newlines
                && a.sha256 == read.sha256;
            let note = if ok {
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
            (ok, note)
        }
        (None, true) => {
            let (bytes, lines) = expected_per_request(condition);
            let served = completed + http_errors;
            let ok = read.bytes == bytes * served && read.newlines == lines * served;
            (
                ok,
                format!(
                    "reader only: {} bytes / {} lines for {served} requests (expected {} / {})",
                    read.bytes,
                    read.newlines,
                    bytes * served,
                    lines * served
                ),
            )
        }
    };
    let backlog: Vec<(u64, u64, u64)> = series
        .iter()
        .filter_map(|&(t, p, r)| p.map(|p| (t, p, r)))
        .collect();
    let lateness_ns: Vec<u64> = load.samples.iter().map(|s| s.send_lateness_ns).collect();
    let send_lateness = Lateness::of(&lateness_ns);
    let per_request =
        |total: u64, count: u64| (count > 0).then(|| total as f64 / count as f64 / 1000.0);
    let summary = RunSummary {
        run,
        round,
        condition: condition.to_string(),
        sink: sink.as_str().to_owned(),
        requests: load.samples.len() as u64,
        completed,
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
        last_response_s: load.last_response_mono_ns().map(since_t0),
        last_byte_s: last_byte.map(since_t0),
        rps_api: completed as f64 / time_a,
        rps_logs_read: completed as f64 / time_b,
        cpu_cores: cpu_before.zip(cpu_after).map(|(b, a)| (a - b) / cpu_window),
        dropped: api_stats.as_ref().map(|a| a.dropped),
        queue_full: api_stats.as_ref().map(|a| a.queue_full),
        produced_bytes: api_stats.as_ref().map(|a| a.written_bytes),
        read_bytes: read.bytes,
        read_newlines: read.newlines,
        read_sha256: read.sha256.clone(),
        verified,
        verify_note,
        send_lateness,
        lateness_warning: send_lateness.and_then(|l| l.warning(plan.lateness_limit_us)),
    };
    let requests = load
        .samples
        .iter()
        .map(|s| RequestRow {
            run,
            condition: summary.condition.clone(),
            sink: summary.sink.clone(),
            scheduled_ms: s.scheduled_ns as f64 / 1e6,
            send_lateness_ms: s.send_lateness_ns as f64 / 1e6,
            latency_ms: s.latency_ns.map(|l| l as f64 / 1e6),
            status: s.status,
            outcome: serde_json::to_value(s.outcome)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
        })
        .collect();
    let timeseries = series
        .iter()
        .filter(|&&(t, _, _)| t >= t0)
        .map(|&(t, produced, read)| TimeseriesRow {
            run,
            t_s: since_t0(t),
            produced_bytes: produced,
            read_bytes: read,
        })
        .collect();
    Ok(RunOutput {
        summary,
        latencies_ns,
        lateness_ns,
        time_a_s: time_a,
        time_b_s: time_b,
        requests,
        timeseries,
    })
}

async fn watch(cancel: &AtomicBool) {
    while !cancel.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
