//! `loglag lab`: runs every (condition, sink) pair, round after round, each with a
//! fresh API and reader, and measures what the spec lists. The runner knows nothing of
//! any one experiment beyond the plan it is given.

pub mod against;
pub mod executor;
pub mod findings;
pub(crate) mod interference;
pub mod measure;
pub mod plan;
pub mod preset;
pub mod request;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use executor::{ApiControl, Executor, Processes, RunApi, RunReader};
pub use plan::{ExpectLines, LabPlan, LabSettings, RunCondition, Signal, SinkKind};
pub use request::{LabRequest, Preset};

use crate::api::condition::{Condition, RecordShape};
use crate::api::control::ApiStats;
use crate::api::launch::ApiKind;
use crate::api::server::ServeConfig;
use crate::load::{LoadConfig, Outcome, Target};
use crate::reader::inspect::InspectConfig;
use crate::reader::{self, ReadConfig};
use crate::report::CpuWaitMs;
use crate::report::{Params, RunSummary, Summary};
use crate::sys::cgroup::CpuLimit;
use crate::sys::child::cpu_seconds;
use crate::sys::clock::mono_ns;
use crate::sys::procfs::{CpuWait, ProcCounters};

/// Told about progress; the CLI draws a progress bar with it.
pub trait Observer {
    fn run_started(&self, _index: usize, _total: usize, _label: &str) {}
    fn run_finished(&self, _run: &RunSummary) {}
    fn warn(&self, _message: &str) {}
    /// A line of progress that is not a warning (a finished topology's figures).
    fn progress(&self, _message: &str) {}
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
        plan: plan.echo(),
        cpu_limit_applied: false,
        loglag_version: env!("CARGO_PKG_VERSION").to_owned(),
        git_revision: option_env!("LOGLAG_GIT_REVISION").map(str::to_owned),
        started_unix_s,
        machine: crate::sys::procfs::machine(),
        preset: None,
        step: None,
    };
    let mut outputs = Vec::new();
    let result = (|| {
        let (dir, stale) = crate::sys::scratch::create("lab")?;
        if let Some(warning) = stale {
            observer.warn(&warning);
        }
        if plan.app.is_some() {
            // An earlier lab that was killed could not end its app's children: they are
            // in its cgroup (killed with it here), or carry its tag.
            let groups = crate::sys::cgroup::remove_stale();
            let stale = crate::sys::procfs::kill_stale_app_processes();
            if stale > 0 || groups > 0 {
                observer.warn(&format!(
                    "killed {stale} process(es) and removed {groups} cgroup(s) an --app of an earlier lab (killed itself) left behind"
                ));
            }
        }
        let limits = match plan.cpu_limit {
            None => None,
            Some(cores) => {
                let stale = crate::sys::cgroup::remove_stale();
                if stale > 0 {
                    observer.warn(&format!(
                        "removed {stale} cgroup(s) left behind by an earlier lab that was killed"
                    ));
                }
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
        let executor = Processes::new(&plan.exe)?;
        let schedule = plan.schedule();
        for (index, (round, condition, sink)) in schedule.iter().cloned().enumerate() {
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
                &executor,
                plan,
                index,
                round,
                condition,
                sink,
                dir.path(),
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
    (measure::summarise(params, outputs), result.err())
}

/// (time, produced bytes, read bytes) samples of one run.
type Series = Vec<(u64, Option<u64>, u64)>;

/// What the sampler saw: the series, and the longest wait of a queued record that
/// the logger reported (loglag only).
#[derive(Default)]
struct Sampled {
    series: Series,
    oldest_queued_us: Option<u64>,
}

/// Samples (time, produced, read) every 25 ms on its own thread. Stopped and joined
/// when finished or dropped, so that on every exit path, Ctrl-C included, it lets go of
/// the reader before the reader's process is killed and its cgroup removed.
struct Sampler {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Sampled>>,
}

impl Sampler {
    fn start(
        reader: Arc<Mutex<Box<dyn RunReader>>>,
        control: Option<Arc<dyn ApiControl>>,
    ) -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut sampled = Sampled::default();
                while !stop.load(Ordering::SeqCst) {
                    let api = control.as_ref().and_then(|c| c.stats().ok());
                    if let Some(age) = api.as_ref().and_then(|a| a.oldest_queued_us) {
                        sampled.oldest_queued_us =
                            Some(sampled.oldest_queued_us.map_or(age, |m| m.max(age)));
                    }
                    let produced = api.map(|s| s.handed_off_bytes);
                    let read = reader
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .stats()
                        .map(|s| s.bytes)
                        .unwrap_or(0);
                    sampled.series.push((mono_ns(), produced, read));
                    // Sampling at a fixed period is the purpose, not a synchronisation.
                    std::thread::sleep(Duration::from_millis(25));
                }
                sampled
            })
        };
        Sampler {
            stop,
            thread: Some(thread),
        }
    }

    fn finish(mut self) -> Sampled {
        self.stop_and_join()
    }

    fn stop_and_join(&mut self) -> Sampled {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop_and_join();
    }
}

/// Looks until `done` says so (`true`), `cancel` is set, or `timeout` has passed on
/// the executor's clock (`false`); `done` is given the time of each look.
fn wait_until(
    executor: &dyn Executor,
    cancel: &AtomicBool,
    timeout: Duration,
    mut done: impl FnMut(Instant) -> Result<bool, LabError>,
) -> Result<bool, LabError> {
    let deadline = executor.now() + timeout;
    loop {
        let now = executor.now();
        if done(now)? {
            return Ok(true);
        }
        if cancel.load(Ordering::SeqCst) {
            return Err(LabError::Cancelled);
        }
        if now >= deadline {
            return Ok(false);
        }
        executor.pause(Duration::from_millis(20));
    }
}

/// Decides when the reader has read everything the API wrote.
struct CaughtUp {
    /// Bytes a dropped record would have had (built-in conditions).
    record_bytes: u64,
    /// For an API that cannot report what it wrote (an `--app`, or the built-in one
    /// once stopped): how long the reader must see no new bytes...
    quiet: Duration,
    /// ...unless it has read every line expected.
    expected_lines: Option<u64>,
    last_change: (u64, Instant),
    /// A network condition: records a TCP collector lost unseen (in kernel buffers when
    /// it went down) are neither written nor dropped, so once the collector has
    /// written nothing new for `quiet` and the reader has read all it wrote, the run
    /// is over, and the missing records are reported lost.
    network: bool,
}

impl CaughtUp {
    fn new(plan: &LabPlan, condition: &RunCondition, quiet: Duration, now: Instant) -> CaughtUp {
        CaughtUp {
            record_bytes: condition
                .built_in()
                .map_or(0, |c| c.record_bytes(plan.record) as u64),
            quiet,
            expected_lines: None,
            last_change: (u64::MAX, now),
            network: condition
                .built_in()
                .is_some_and(|c| c.collector().is_some()),
        }
    }

    fn expecting(mut self, lines: Option<u64>) -> CaughtUp {
        self.expected_lines = lines;
        self
    }

    /// Whether the reader has caught up, looking at `now`.
    fn check(
        &mut self,
        read: &crate::reader::ReaderStats,
        api: Option<&ApiStats>,
        now: Instant,
    ) -> bool {
        match api {
            // Everything handed off was written or dropped, and everything written was read.
            Some(a) => {
                let balanced = read.bytes >= a.written_bytes
                    && a.written_bytes + a.dropped * self.record_bytes >= a.handed_off_bytes;
                if balanced || !self.network {
                    return balanced;
                }
                if a.written_bytes != self.last_change.0 {
                    self.last_change = (a.written_bytes, now);
                }
                read.bytes >= a.written_bytes && now - self.last_change.1 >= self.quiet
            }
            None => {
                if self.expected_lines.is_some_and(|e| read.newlines >= e) {
                    return true;
                }
                if read.bytes != self.last_change.0 {
                    self.last_change = (read.bytes, now);
                }
                now - self.last_change.1 >= self.quiet
            }
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_one(
    executor: &dyn Executor,
    plan: &LabPlan,
    run: usize,
    round: usize,
    condition: RunCondition,
    sink: SinkKind,
    dir: &Path,
    limits: Option<&(CpuLimit, CpuLimit)>,
    cancel: &AtomicBool,
) -> Result<measure::RunOutput, LabError> {
    let fifo = dir.join(format!("run-{run}.fifo"));
    reader::ensure_fifo(&fifo)?;
    let read = ReadConfig {
        read_size: plan.read_size,
        rate: (sink == SinkKind::Slow).then_some(plan.slow_rate),
        inspect: InspectConfig {
            request_ids: plan.match_request_id,
            // The built-in text records carry a sequence number.
            order: plan.app.is_none() && plan.record != RecordShape::Json16k,
        },
    };
    let mut reader = executor.start_reader(&fifo, read, plan.pipe_size)?;
    let serve = ServeConfig {
        threads: plan.threads,
        record: plan.record,
        error_every: plan.error_every,
        write_delay: (sink == SinkKind::SlowDisk).then_some(plan.disk_delay),
        loglag_batch_bytes: plan.loglag_batch_bytes,
        loglag_flush_interval: plan.loglag_flush_interval,
        ..ServeConfig::new(Condition::None)
    };
    let kind = match &plan.app {
        Some(app) => ApiKind::App {
            command: app,
            ready: &plan.ready,
            timeout: plan.ready_timeout,
            log: plan.app_log.clone(),
            // On cgroup v2 a CPU limit puts the app in its own cgroup, and a process is
            // in one cgroup only: the environment tag then finds what it leaves.
            contain: !(limits.is_some() && crate::sys::cgroup::cpu_limits_are_v2()),
        },
        None => ApiKind::BuiltIn {
            exe: &plan.exe,
            config: &serve,
        },
    };
    let stderr_path = dir.join(format!("api-{run}.stderr"));
    let mut api = executor.start_api(kind, &condition, &fifo, &stderr_path)?;
    if let Some((api_limit, io_limit)) = limits {
        if let Some(pid) = api.pid() {
            api_limit.add(pid)?;
        }
        if let Some(pid) = reader.pid() {
            io_limit.add(pid)?;
        }
    }
    let control = api.control();
    let target = Target {
        addr: api.http(),
        host: api.http().to_string(),
        path: "/".into(),
    };

    // Warm-up: a few requests (ids 0, 1, ...), wait until their log bytes are read,
    // then reset.
    for id in 0..plan.warmup {
        let one = LoadConfig::single(target.clone(), plan.connection, id as u64);
        let r = executor.load(&one, cancel).ok_or(LabError::Cancelled)?;
        if let Some(s) = r.samples.iter().find(|s| s.outcome != Outcome::Ok) {
            api.check_alive()?;
            return Err(fail(format!(
                "warm-up request to http://{} failed ({:?}, status {:?})",
                api.http(),
                s.outcome,
                s.status
            )));
        }
    }
    if let Some(c) = &control {
        // A buffering logger (memory-buffer) holds the warm-up's records until told.
        c.flush()
            .map_err(|e| fail(format!("cannot ask the API to flush: {e}")))?;
    }
    let mut caught_up = CaughtUp::new(plan, &condition, Duration::from_millis(500), executor.now());
    let warmed = wait_until(executor, cancel, plan.warmup_timeout, |now| {
        let read = reader.stats()?;
        Ok(caught_up.check(&read, api.stats()?.as_ref(), now))
    })?;
    if !warmed {
        return Err(fail(format!(
            "the warm-up's log bytes were not all read within {:?} (--warmup-timeout)",
            plan.warmup_timeout
        )));
    }
    if let Some(c) = &control {
        c.reset()
            .map_err(|e| fail(format!("cannot reset the API's counters: {e}")))?;
    }
    // An --app cannot be reset: what its warm-up wrote is counted here, and whatever
    // it still buffers arrives later, so verification counts every request it served.
    let warmup_lines = reader.stats()?.newlines;
    reader.reset()?;

    // Measure: sample produced and read bytes while the load runs.
    let reader_pid = reader.pid();
    let reader = Arc::new(Mutex::new(reader));
    let sampler = Sampler::start(reader.clone(), control.clone());
    let pid = api.pid();
    let cpu_before = CpuReading::take(api.as_ref(), reader_pid);
    let proc_before = pid.and_then(|pid| ProcCounters::read(pid).ok());
    let cpu_clock = Instant::now();
    let config = LoadConfig {
        target,
        rate: plan.rate,
        duration: plan.duration,
        connection: plan.connection,
        closed: plan.closed,
        grace: Duration::from_secs(30).max(plan.duration),
        first_id: plan.warmup as u64,
    };
    // `--collector-outage`: the collector goes down halfway through the load.
    let outage = match (plan.collector_outage, &control) {
        (Some(length), Some(control)) if matches!(&condition, RunCondition::BuiltIn(c) if c.collector().is_some()) =>
        {
            let (control, halfway) = (control.clone(), plan.duration / 2);
            Some(std::thread::spawn(move || {
                std::thread::sleep(halfway);
                control.outage(length)
            }))
        }
        _ => None,
    };
    let load = executor.load(&config, cancel);
    if let Some(outage) = outage {
        outage
            .join()
            .map_err(|_| fail("the collector outage thread panicked"))?
            .map_err(|e| fail(format!("cannot take the collector down: {e}")))?;
    }
    let cpu_after = CpuReading::take(api.as_ref(), reader_pid);
    let proc_after = pid.and_then(|pid| ProcCounters::read(pid).ok());
    let cpu_window = cpu_clock.elapsed().as_secs_f64();
    let Some(load) = load else {
        return Err(LabError::Cancelled);
    };
    api.check_alive()?;
    // The built-in API is stopped by a signal only when asked (the presets): then what
    // it had logged by now is what the reader should see, and the stop may lose some.
    let stop_builtin = plan.stop_builtin && control.is_some();
    let logged_before_stop = if stop_builtin {
        api.stats()?
    } else {
        if let Some(c) = &control {
            // What the application would do at exit: write what it still buffers.
            c.flush()
                .map_err(|e| fail(format!("cannot ask the API to flush: {e}")))?;
        }
        None
    };
    // An --app is stopped as a deployment stops it; what it writes while shutting
    // down counts, and what it never writes shows up as lost records.
    // What it started and left running (workers, a `setsid` daemon) is killed and said
    // where its exit is.
    let app_exit =
        (control.is_none() || stop_builtin).then(|| api.stop(plan.stop_signal, plan.stop_timeout));

    // loglag-spool: what the stop left in the spool is delivered now, as the service's
    // next start would, into the pipe the reader reads; counted like the rest.
    let recovered = match condition.built_in() {
        Some(Condition::LoglagSpool) if stop_builtin => Some(recover_spool(&fifo)?),
        _ => None,
    };
    // An --app's own recovery (--app-recover), as its next start would run it: into
    // the pipe the reader reads, however slowly, so it may take as long as a drain.
    let app_recovered = match (&plan.app_recover, &app_exit) {
        (Some(template), Some(_)) if control.is_none() => {
            let command = template
                .replace("{log_path}", &fifo.display().to_string())
                .replace("{condition}", condition.name());
            Some(api.recover(&command, plan.drain_timeout)?)
        }
        _ => None,
    };

    // Drain: wait until every byte the API wrote has been read.
    let served = load.samples.iter().filter(|s| s.status.is_some()).count() as u64;
    let expected_lines = match &logged_before_stop {
        Some(a) => Some(a.records.saturating_sub(a.dropped)),
        None => plan
            .expect_lines
            .for_condition(condition.name())
            .map(|per| per * (served + plan.warmup as u64))
            .map(|all| all.saturating_sub(warmup_lines)),
    };
    let mut caught_up = CaughtUp::new(plan, &condition, Duration::from_secs(1), executor.now())
        .expecting(expected_lines);
    let drained = wait_until(executor, cancel, plan.drain_timeout, |now| {
        let read = reader.lock().unwrap_or_else(|e| e.into_inner()).stats()?;
        let api = if app_exit.is_some() {
            None
        } else {
            api.stats()?
        };
        Ok(caught_up.check(&read, api.as_ref(), now))
    })?;
    let sampled = sampler.finish();
    let api_stats = match logged_before_stop {
        Some(a) => Some(a),
        None if app_exit.is_none() => api.stats()?,
        None => None,
    };
    api.end();
    // An --app-log FILE: its last bytes, then the FIFO's end for the reader.
    api.stop_following()?;
    let reader = Arc::try_unwrap(reader)
        .map_err(|_| fail("reader still shared"))?
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    let report = reader.finish()?;
    let _ = std::fs::remove_file(&fifo);

    Ok(measure::measure(&measure::RawRun {
        run,
        round,
        condition,
        sink,
        duration: plan.duration,
        drain_timeout: plan.drain_timeout,
        lateness_limit_us: plan.lateness_limit_us,
        // The whole process is measured (the logger's writer and blocking threads
        // included), so it is held against what the whole process may use: its cgroup
        // limit, or the machine. A blocked event loop shows in the served rate.
        api_cores: match plan.cpu_limit {
            Some(limit) if limits.is_some() => limit,
            _ => std::thread::available_parallelism().map_or(1, |n| n.get()) as f64,
        },
        offered_rps: plan.closed.is_none().then_some(plan.rate),
        load,
        api: api_stats,
        read: report.stats,
        drained,
        series: sampled.series,
        cpu_seconds: cpu_before.api.zip(cpu_after.api),
        reader_cpu_seconds: cpu_before.reader.zip(cpu_after.reader),
        lab_cpu_seconds: cpu_before.lab.zip(cpu_after.lab),
        machine_cores: std::thread::available_parallelism().map_or(1, |n| n.get()) as f64,
        machine_busy: cpu_before.machine_busy_until(&cpu_after),
        cpu_wait_ms: cpu_before.wait_until(&cpu_after),
        cpu_window_s: cpu_window,
        warmup_served: plan.warmup as u64,
        warmup_lines,
        expect_lines: plan.expect_lines.clone(),
        app_exit,
        stopped_builtin: stop_builtin,
        record: plan.record,
        first_id: plan.warmup as u64,
        proc_counters: proc_before.zip(proc_after),
        oldest_queued_us: sampled.oldest_queued_us,
        findings: report.findings,
        match_request_id: plan.match_request_id,
        recovered,
        app_recovered,
    }))
}

/// CPU seconds of the run's processes, how long they had waited for a CPU, and the
/// machine's (busy, all) ticks, read just before and just after the load. The reader
/// and the lab itself (the load generator) share the machine with the API: their CPU
/// says whether the machine, not the API, set the limit, and their wait what the
/// machine's other work cost the run.
struct CpuReading {
    api: Option<f64>,
    reader: Option<f64>,
    lab: Option<f64>,
    machine: Option<(u64, u64)>,
    /// (API, reader, generator).
    waits: [Option<CpuWait>; 3],
}

impl CpuReading {
    fn take(api: &dyn RunApi, reader_pid: Option<u32>) -> CpuReading {
        let api_pids = api.processes();
        CpuReading {
            api: api.cpu_seconds(),
            reader: reader_pid.and_then(cpu_seconds),
            lab: cpu_seconds(std::process::id()),
            machine: crate::sys::procfs::machine_cpu_ticks(),
            waits: [
                // The control channel answers the lab's sampler, not the requests.
                (!api_pids.is_empty())
                    .then(|| CpuWait::read(&api_pids, |name| !name.starts_with("control")))
                    .flatten(),
                reader_pid.and_then(|pid| CpuWait::read(&[pid], |_| true)),
                CpuWait::read(&[std::process::id()], |name| {
                    name == executor::GENERATOR_THREAD
                }),
            ],
        }
    }

    /// How long each process waited for a CPU from this reading to `later`.
    fn wait_until(&self, later: &CpuReading) -> Option<CpuWaitMs> {
        let [api, reader, generator] = [0, 1, 2].map(|i| {
            let (before, after) = self.waits[i].as_ref().zip(later.waits[i].as_ref())?;
            Some(after.ms_since(before))
        });
        let wait = CpuWaitMs {
            api,
            reader,
            generator,
        };
        wait.total().is_some().then_some(wait)
    }

    /// The share of the machine's CPU time that was busy from this reading to `later`.
    fn machine_busy_until(&self, later: &CpuReading) -> Option<f64> {
        let ((busy0, all0), (busy1, all1)) = self.machine.zip(later.machine)?;
        (all1 > all0).then(|| (busy1 - busy0) as f64 / (all1 - all0) as f64)
    }
}

/// Delivers the `loglag-spool` condition's spool into the log pipe, as the service's
/// next start would, and removes it. Returns the records delivered.
fn recover_spool(log: &std::path::Path) -> Result<u64, LabError> {
    let spool = crate::api::condition::spool_path_for(log);
    if !spool.exists() {
        return Ok(0);
    }
    let recovered = loglag::spool::recover_opening(&spool, || loglag::sink::FdSink::append(log))
        .map_err(|e| {
            fail(format!(
                "cannot deliver the API's spool {}: {e}",
                spool.display()
            ))
        })?;
    let _ = std::fs::remove_file(&spool);
    Ok(recovered.records)
}

/// Returns once `cancel` is set (polled: it is set from a signal handler).
pub(crate) async fn watch(cancel: &AtomicBool) {
    while !cancel.load(Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// Their exit statuses are unix wait statuses (a signal's number).
#[cfg(all(test, unix))]
mod tests;
