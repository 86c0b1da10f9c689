//! `run_one`'s phases (warm-up, measure, stop, drain, verify, and the accounting at
//! the stop) driven by a scripted executor: no process, no socket, no load generator.
//! The API side keeps its counters in the built-in API's own `Produced`, so the hashes
//! and counts the verification compares are computed by the code the real API uses.

use std::collections::VecDeque;
use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};

use super::executor::{ApiControl, Executor, RunApi, RunReader};
use super::*;
use crate::api::condition::Condition;
use crate::api::control::Produced;
use crate::api::launch::{ApiKind, AppExit};
use crate::load::{LoadResult, RequestSample};
use crate::reader::{FinalReport, ReadConfig, ReaderStats};
use crate::sys::child::Ended;

/// What the scripted API does.
#[derive(Default, Clone)]
struct Script {
    /// The second warm-up request gets a 503.
    fail_warm_up: bool,
    /// An `--app`: no control channel; it writes straight into the pipe.
    app: bool,
    /// The API holds its records until told to flush (a memory buffer).
    buffers: bool,
    /// The pipe stops delivering after this many lines: the log never drains.
    pipe_stalls_after: Option<u64>,
    /// The API's logger drops every Nth record (counted), as a full queue would.
    drop_every: Option<u64>,
    /// The load is interrupted (Ctrl-C) once it starts.
    cancel_during_load: bool,
    /// Ctrl-C comes during the warm-up.
    cancel_during_warm_up: bool,
    /// A stop signal loses this many of the records the logger still held.
    stop_loses: usize,
    /// What the stop loses stays in a spool, which a recovery writes, the last of
    /// them this many times more (the batch in flight, delivered again).
    spools: Option<usize>,
    /// The API's time for each measured request, ns, by its index: its latency adds
    /// how late it was sent (else a latency of 0.2 ms).
    latency_ns: Option<fn(u64) -> u64>,
    /// How late the generator sent each measured request, ns, by its index (else 1 µs).
    lateness_ns: Option<fn(u64) -> u64>,
}

/// The run's shared state: the API's counters, the pipe, what the reader read, and
/// the order in which the phases touched them.
#[derive(Default)]
struct World {
    script: Script,
    produced: Produced,
    held: Mutex<Vec<Vec<u8>>>,
    spooled: Mutex<Vec<Vec<u8>>>,
    pipe: Mutex<VecDeque<Vec<u8>>>,
    read: Mutex<Read>,
    piped_lines: Mutex<u64>,
    events: Mutex<Vec<String>>,
    clock: Clock,
}

#[derive(Default)]
struct Read {
    bytes: u64,
    newlines: u64,
    sha: Sha256,
}

impl World {
    fn event(&self, e: impl Into<String>) {
        self.events.lock().unwrap().push(e.into());
    }

    fn events(&self) -> Vec<String> {
        self.events.lock().unwrap().clone()
    }

    /// The API serves request `id`: one record handed to its logger.
    fn serve(&self, id: u64) {
        let p = &self.produced;
        p.requests.fetch_add(1, Ordering::SeqCst);
        p.records.fetch_add(1, Ordering::SeqCst);
        let line = format!("{{\"request_id\":{id},\"msg\":\"served\"}}\n").into_bytes();
        p.handed_off_bytes
            .fetch_add(line.len() as u64, Ordering::SeqCst);
        if self.script.drop_every.is_some_and(|n| (id + 1) % n == 0) {
            p.dropped.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if self.script.buffers {
            self.held.lock().unwrap().push(line);
        } else {
            self.write(line);
        }
    }

    /// The logger's sink takes `line`: counted as written, into the pipe.
    fn write(&self, line: Vec<u8>) {
        self.produced.wrote(&line);
        self.pipe.lock().unwrap().push_back(line);
    }

    fn flush(&self) {
        self.flush_losing(0);
    }

    /// Writes what the logger holds but its last `lost` records (kept in the spool,
    /// if it has one).
    fn flush_losing(&self, lost: usize) {
        let mut held = std::mem::take(&mut *self.held.lock().unwrap());
        let unwritten = held.split_off(held.len().saturating_sub(lost));
        if self.script.spools.is_some() {
            *self.spooled.lock().unwrap() = unwritten;
        }
        for line in held {
            self.write(line);
        }
    }

    /// The reader reads what the pipe delivers.
    fn deliver(&self) {
        let mut pipe = self.pipe.lock().unwrap();
        let mut piped = self.piped_lines.lock().unwrap();
        let mut read = self.read.lock().unwrap();
        while self.script.pipe_stalls_after.is_none_or(|n| *piped < n) {
            let Some(line) = pipe.pop_front() else { break };
            *piped += 1;
            read.bytes += line.len() as u64;
            read.newlines += 1;
            read.sha.update(&line);
        }
    }

    fn reader_stats(&self) -> ReaderStats {
        self.deliver();
        let read = self.read.lock().unwrap();
        ReaderStats {
            mono_ns: crate::sys::clock::mono_ns(),
            bytes: read.bytes,
            newlines: read.newlines,
            reads: read.newlines,
            sha256: format!("{:x}", read.sha.clone().finalize()),
            last_byte_mono_ns: None,
            eof: false,
        }
    }
}

struct Scripted {
    world: Arc<World>,
    cancel: Arc<AtomicBool>,
}

/// The phases' clock: it starts at the run's start and moves only when a phase
/// pauses, so a timeout is a number of looks, whatever the machine is doing.
struct Clock {
    start: std::time::Instant,
    advanced: Mutex<Duration>,
}

impl Clock {
    fn advanced(&self) -> Duration {
        *self.advanced.lock().unwrap()
    }
}

impl Default for Clock {
    fn default() -> Clock {
        Clock {
            start: std::time::Instant::now(),
            advanced: Mutex::new(Duration::ZERO),
        }
    }
}

impl Executor for Scripted {
    fn start_reader(
        &self,
        _: &Path,
        _: ReadConfig,
        _: Option<usize>,
    ) -> io::Result<Box<dyn RunReader>> {
        self.world.event("start reader");
        Ok(Box::new(MockReader(self.world.clone())))
    }

    fn start_api(
        &self,
        kind: ApiKind<'_>,
        _: &RunCondition,
        _: &Path,
        _: &Path,
    ) -> io::Result<Box<dyn RunApi>> {
        assert_eq!(matches!(kind, ApiKind::App { .. }), self.world.script.app);
        self.world.event("start api");
        Ok(Box::new(MockApi(self.world.clone())))
    }

    fn load(&self, config: &LoadConfig, _: &AtomicBool) -> Option<LoadResult> {
        let n = (config.rate * config.duration.as_secs_f64()).round() as u64;
        self.world
            .event(format!("load {n} from id {}", config.first_id));
        let cancelled = if n > 1 {
            self.world.script.cancel_during_load
        } else {
            self.world.script.cancel_during_warm_up
        };
        if cancelled {
            self.cancel.store(true, Ordering::SeqCst);
            return None;
        }
        let samples = (0..n)
            .map(|i| {
                let id = config.first_id + i;
                let refused = self.world.script.fail_warm_up && id == 1;
                if !refused {
                    self.world.serve(id);
                }
                // The warm-up's single request keeps the defaults.
                let scripted = |f: Option<fn(u64) -> u64>| f.filter(|_| n > 1).map(|f| f(i));
                let late = scripted(self.world.script.lateness_ns).unwrap_or(1_000);
                // Timed from the scheduled send: how late it was sent, then the API's time.
                let latency =
                    scripted(self.world.script.latency_ns).map_or(200_000 + i, |l| l + late);
                RequestSample {
                    index: i,
                    scheduled_ns: i * 1_000_000,
                    send_lateness_ns: late,
                    connect_ns: None,
                    latency_ns: Some(latency),
                    status: Some(if refused { 503 } else { 200 }),
                    outcome: if refused {
                        crate::load::Outcome::HttpError
                    } else {
                        crate::load::Outcome::Ok
                    },
                    done_mono_ns: crate::sys::clock::mono_ns(),
                }
            })
            .collect();
        Some(LoadResult {
            t0_mono_ns: crate::sys::clock::mono_ns(),
            samples,
            wall: config.duration,
            interrupted: false,
        })
    }

    fn now(&self) -> std::time::Instant {
        self.world.clock.start + self.world.clock.advanced()
    }

    fn pause(&self, length: Duration) {
        *self.world.clock.advanced.lock().unwrap() += length;
    }
}

struct MockReader(Arc<World>);

impl RunReader for MockReader {
    fn stats(&mut self) -> io::Result<ReaderStats> {
        Ok(self.0.reader_stats())
    }

    fn reset(&mut self) -> io::Result<()> {
        self.0.event("reader reset");
        self.0.deliver();
        *self.0.read.lock().unwrap() = Read::default();
        Ok(())
    }

    fn finish(self: Box<Self>) -> io::Result<FinalReport> {
        self.0.event("reader finish");
        Ok(FinalReport {
            stats: self.0.reader_stats(),
            findings: None,
        })
    }

    fn pid(&self) -> Option<u32> {
        None
    }
}

struct MockApi(Arc<World>);

struct MockControl(Arc<World>);

impl ApiControl for MockControl {
    fn stats(&self) -> io::Result<crate::api::control::ApiStats> {
        Ok(self.0.produced.stats())
    }

    fn reset(&self) -> io::Result<()> {
        self.0.event("api reset");
        self.0.produced.reset();
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        self.0.event("api flush");
        self.0.flush();
        Ok(())
    }

    fn outage(&self, _: Duration) -> io::Result<()> {
        Ok(())
    }
}

impl RunApi for MockApi {
    fn http(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], 9))
    }

    fn control(&self) -> Option<Arc<dyn ApiControl>> {
        (!self.0.script.app).then(|| Arc::new(MockControl(self.0.clone())) as Arc<dyn ApiControl>)
    }

    fn stats(&self) -> io::Result<Option<crate::api::control::ApiStats>> {
        Ok((!self.0.script.app).then(|| self.0.produced.stats()))
    }

    fn check_alive(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn stop(&mut self, signal: Signal, _: Duration) -> AppExit {
        self.0.event(format!("api stop {}", signal.as_str()));
        // A service that flushes on its stop signal, but for what the script loses.
        self.0.flush_losing(self.0.script.stop_loses);
        AppExit {
            ended: Ended::Exited(std::os::unix::process::ExitStatusExt::from_raw(
                signal.number(),
            )),
            leftovers: Vec::new(),
        }
    }

    fn recover(&mut self, command: &str, _: Duration) -> io::Result<Option<u64>> {
        self.0.event(format!("api recover {command}"));
        let spooled = std::mem::take(&mut *self.0.spooled.lock().unwrap());
        let again = self.0.script.spools.unwrap_or(0);
        let last = spooled.last().cloned();
        let mut delivered = 0;
        for line in spooled
            .into_iter()
            .chain(last.into_iter().cycle().take(again))
        {
            self.0.write(line);
            delivered += 1;
        }
        Ok(Some(delivered))
    }

    fn end(&mut self) {
        self.0.event("api end");
    }

    fn stop_following(&mut self) -> io::Result<()> {
        Ok(())
    }

    fn pid(&self) -> Option<u32> {
        None
    }

    fn cpu_seconds(&self) -> Option<f64> {
        None
    }
}

fn plan(condition: RunCondition) -> LabSettings {
    let mut plan = LabSettings::reference(
        vec![condition],
        vec![SinkKind::Fast],
        std::path::PathBuf::from("/nonexistent/loglag"),
    );
    plan.duration = Duration::from_millis(500); // 10 requests at 20/s
    plan.drain_timeout = Duration::from_secs(5);
    plan
}

fn run(
    script: Script,
    settings: &LabSettings,
) -> (Result<measure::RunOutput, LabError>, Arc<World>) {
    let plan = &LabPlan::new(settings.clone()).expect("a plan that validates");
    let world = Arc::new(World {
        script,
        ..World::default()
    });
    let cancel = Arc::new(AtomicBool::new(false));
    let executor = Scripted {
        world: world.clone(),
        cancel: cancel.clone(),
    };
    let dir = tempfile::tempdir().unwrap();
    let condition = plan.conditions[0].clone();
    let out = run_one(
        &executor,
        plan,
        0,
        0,
        condition,
        SinkKind::Fast,
        dir.path(),
        None,
        &cancel,
    );
    (out, world)
}

fn json_queue() -> RunCondition {
    RunCondition::BuiltIn(Condition::JsonQueue)
}

#[test]
fn the_phases_run_in_order_and_a_whole_log_is_verified() {
    let (out, world) = run(Script::default(), &plan(json_queue()));
    let out = out.expect("the run completes");
    assert_eq!(
        world.events(),
        [
            "start reader",
            "start api",
            "load 1 from id 0",
            "load 1 from id 1",
            "api flush",
            "api reset",
            "reader reset",
            "load 10 from id 2",
            "api flush",
            "api end",
            "reader finish",
        ]
    );
    let s = &out.summary;
    assert_eq!((s.requests, s.completed), (10, 10));
    assert!(s.metrics.verified, "{}", s.verify_note);
    assert!(s.verify_note.contains("sha256 match"), "{}", s.verify_note);
    // The warm-up's two records are not the measured run's.
    assert_eq!((s.read_newlines, s.metrics.lost_records), (10, Some(0)));
}

#[test]
fn records_held_by_a_buffering_logger_are_flushed_before_the_drain() {
    let mut plan = plan(json_queue());
    // Without the flush after the warm-up, the warm-up's lines are never read: the run
    // fails here, quickly.
    plan.warmup_timeout = Duration::from_millis(200);
    let (out, world) = run(
        Script {
            buffers: true,
            ..Script::default()
        },
        &plan,
    );
    let s = out.expect("the run completes").summary;
    // Without the flush after the load, none of the run's lines would be read.
    assert!(s.metrics.verified, "{}", s.verify_note);
    assert_eq!(s.read_newlines, 10);
    assert_eq!(
        world.events().iter().filter(|e| *e == "api flush").count(),
        2
    );
}

#[test]
fn every_line_missing_from_a_logger_that_drops_is_a_counted_drop() {
    let (out, _) = run(
        Script {
            drop_every: Some(4),
            ..Script::default()
        },
        &plan(json_queue()),
    );
    let s = out.expect("the run completes").summary;
    // Ids 2..12: 3, 7 and 11 are dropped, and said to be.
    assert_eq!(s.metrics.dropped, Some(3));
    assert_eq!(s.read_newlines, 7);
    // What was written was read whole; the three lines the log lacks are the drops.
    assert!(s.metrics.verified, "{}", s.verify_note);
    assert_eq!(s.metrics.lost_records, Some(3));
}

#[test]
fn a_log_that_never_drains_ends_the_run_unverified_instead_of_hanging() {
    let mut plan = plan(json_queue());
    plan.drain_timeout = Duration::from_millis(100);
    let (out, world) = run(
        Script {
            // The two warm-up lines, then five of the ten.
            pipe_stalls_after: Some(7),
            ..Script::default()
        },
        &plan,
    );
    let s = out
        .expect("a stalled log is a finding, not an error")
        .summary;
    // The drain gave up at its timeout on the phases' clock, not before.
    assert!(world.clock.advanced() >= plan.drain_timeout);
    assert!(!s.metrics.verified);
    assert!(s.verify_note.contains("not drained"), "{}", s.verify_note);
    assert_eq!(s.read_newlines, 5);
}

#[test]
fn a_failed_warm_up_request_fails_the_run_naming_it() {
    let (out, world) = run(
        Script {
            fail_warm_up: true,
            ..Script::default()
        },
        &plan(json_queue()),
    );
    let Err(LabError::Failed(message)) = out else {
        panic!("a failed warm-up must fail the run");
    };
    assert!(message.contains("warm-up request"), "{message}");
    assert!(message.contains("503"), "{message}");
    assert!(
        !world.events().iter().any(|e| e.starts_with("load 10")),
        "no load after it"
    );
}

#[test]
fn ctrl_c_during_the_load_cancels_the_run() {
    let (out, _) = run(
        Script {
            cancel_during_load: true,
            ..Script::default()
        },
        &plan(json_queue()),
    );
    assert!(matches!(out, Err(LabError::Cancelled)));
}

#[test]
fn ctrl_c_during_the_warm_up_cancels_the_run_before_the_load() {
    let (out, world) = run(
        Script {
            cancel_during_warm_up: true,
            ..Script::default()
        },
        &plan(json_queue()),
    );
    assert!(matches!(out, Err(LabError::Cancelled)));
    assert!(!world.events().iter().any(|e| e.starts_with("load 10")));
}

#[test]
fn a_builtin_api_stopped_by_a_signal_is_held_to_what_it_had_logged() {
    let mut plan = plan(json_queue());
    plan.stop_builtin = true;
    plan.stop_signal = Signal::Term;
    let (out, world) = run(
        Script {
            buffers: true,
            stop_loses: 3,
            ..Script::default()
        },
        &plan,
    );
    let s = out.expect("the run completes").summary;
    let events = world.events();
    // No flush is asked for after the load: the stop signal is the only warning.
    let after_load = &events[events
        .iter()
        .position(|e| e == "load 10 from id 2")
        .unwrap()..];
    assert_eq!(after_load[1], "api stop term");
    assert!(!after_load.contains(&"api flush".to_owned()));
    // Held to the ten records it had logged, not to the seven it wrote.
    assert_eq!(s.expected_records, Some(10));
    assert_eq!(s.metrics.lost_records, Some(3));
    assert!(!s.metrics.verified);
    assert!(
        s.verify_note.starts_with("3 records lost at the stop"),
        "{}",
        s.verify_note
    );
    assert!(
        s.app_exit.as_deref().is_some_and(|e| e.contains("SIGTERM")),
        "{:?}",
        s.app_exit
    );
}

#[test]
fn an_app_is_verified_by_the_lines_it_was_expected_to_write() {
    let mut plan = plan(RunCondition::parse("mine", true).unwrap());
    plan.app = Some("my-service --port {port} --log {log_path}".into());
    plan.expect_lines = "1".parse().unwrap();
    let (out, world) = run(
        Script {
            app: true,
            drop_every: Some(5),
            ..Script::default()
        },
        &plan,
    );
    let s = out.expect("the run completes").summary;
    // 12 requests served (warm-up included), 1 line each, ids 4 and 9 never written.
    assert_eq!(s.expected_records, Some(12));
    assert_eq!(s.metrics.lost_records, Some(2));
    assert!(
        !s.metrics.verified,
        "two lines are missing: {}",
        s.verify_note
    );
    assert!(world.events().contains(&"api stop term".to_owned()));
}

/// An app that buffers, killed: what its spool kept is lost unless `--app-recover`
/// delivers it after the stop, before the log is counted; what recovery delivers
/// twice is counted as duplicates, not as a failure.
#[test]
fn an_apps_recovery_runs_after_its_stop_and_what_it_delivers_is_counted() {
    let app_plan = |recover: Option<&str>| {
        let mut plan = plan(RunCondition::parse("mine", true).unwrap());
        plan.app = Some("my-service --port {port} --log {log_path}".into());
        plan.app_recover = recover.map(str::to_owned);
        plan.expect_lines = "1".parse().unwrap();
        plan.stop_signal = Signal::Kill;
        plan
    };
    let script = |again| Script {
        app: true,
        buffers: true,
        stop_loses: 4,
        spools: Some(again),
        ..Script::default()
    };

    let (out, world) = run(script(0), &app_plan(None));
    let s = out.expect("the run completes").summary;
    assert_eq!(s.metrics.lost_records, Some(4), "{}", s.verify_note);
    assert!(!world.events().iter().any(|e| e.starts_with("api recover")));

    let (out, world) = run(
        script(0),
        &app_plan(Some("my-service --recover {log_path} --mode {condition}")),
    );
    let s = out.expect("the run completes").summary;
    let events = world.events();
    let stop = events.iter().position(|e| e == "api stop kill").unwrap();
    let recover = &events[stop + 1];
    assert!(
        recover.starts_with("api recover my-service --recover /")
            && recover.ends_with(" --mode mine"),
        "the recovery comes right after the stop, placeholders filled: {events:?}"
    );
    assert_eq!(s.metrics.lost_records, Some(0), "{}", s.verify_note);
    assert_eq!(s.metrics.duplicate_records, Some(0));
    assert!(s.metrics.verified, "{}", s.verify_note);
    assert!(
        s.verify_note.contains("--app-recover delivered 4 records"),
        "{}",
        s.verify_note
    );

    let (out, _) = run(
        script(2),
        &app_plan(Some("my-service --recover {log_path}")),
    );
    let s = out.expect("the run completes").summary;
    assert_eq!(s.metrics.lost_records, Some(0), "{}", s.verify_note);
    assert_eq!(s.metrics.duplicate_records, Some(2), "{}", s.verify_note);
    assert!(s.metrics.verified, "{}", s.verify_note);
}

#[test]
fn a_warm_up_whose_log_is_never_read_fails_within_the_warmup_timeout() {
    let mut plan = plan(json_queue());
    plan.warmup_timeout = Duration::from_millis(60);
    let (out, world) = run(
        Script {
            pipe_stalls_after: Some(0),
            ..Script::default()
        },
        &plan,
    );
    let Err(LabError::Failed(message)) = out else {
        panic!("an unread warm-up must fail the run");
    };
    assert!(message.contains("--warmup-timeout"), "{message}");
    // Three looks 20 ms apart, then the fourth at the timeout: on the phases' clock.
    assert_eq!(world.clock.advanced(), plan.warmup_timeout);
    assert!(
        !world.events().iter().any(|e| e.starts_with("load 10")),
        "no load after it"
    );
}

/// A whole lab's summary from scripted runs, one per (condition, sink, script), as
/// `run_lab` summarises its runs: an 8 s load at 20/s, 160 requests each. The runs take
/// no real time, so what the machine did meanwhile (its busy share, the waits read
/// from /proc, the backlog sampled every 25 ms) is not theirs and is set.
fn scripted_summary(runs: Vec<(RunCondition, SinkKind, Script)>) -> Summary {
    let mut conditions: Vec<RunCondition> = Vec::new();
    let mut sinks: Vec<SinkKind> = Vec::new();
    for (c, k, _) in &runs {
        if !conditions.contains(c) {
            conditions.push(c.clone());
        }
        if !sinks.contains(k) {
            sinks.push(*k);
        }
    }
    let mut settings = LabSettings::reference(
        conditions,
        sinks,
        std::path::PathBuf::from("/nonexistent/loglag"),
    );
    settings.duration = Duration::from_secs(8);
    let plan = &LabPlan::new(settings).expect("a plan that validates");
    let dir = tempfile::tempdir().unwrap();
    let outputs = runs
        .into_iter()
        .enumerate()
        .map(|(index, (condition, sink, script))| {
            let world = Arc::new(World {
                script,
                ..World::default()
            });
            let cancel = Arc::new(AtomicBool::new(false));
            let executor = Scripted {
                world,
                cancel: cancel.clone(),
            };
            let mut out = run_one(
                &executor,
                plan,
                index,
                0,
                condition,
                sink,
                dir.path(),
                None,
                &cancel,
            )
            .expect("the run completes");
            out.summary.metrics.machine_warning = None;
            out.summary.metrics.cpu_wait_ms = None;
            // The sampler samples on real time, which may give it no look at all: the
            // scripted reader reads each line as it is written, so no backlog.
            out.summary.metrics.max_backlog_kib = Some(0.0);
            out
        })
        .collect();
    let params = Params {
        plan: plan.echo(),
        cpu_limit_applied: false,
        loglag_version: "0.0.0".into(),
        git_revision: None,
        started_unix_s: 0,
        machine: crate::report::Machine::default(),
        preset: None,
        step: None,
    };
    measure::summarise(params, outputs)
}

/// The case: json-sync against json-queue on the fast sink, p50 0.501 vs
/// 0.767 ms (160 requests each, 1 µs apart from 0.422 and 0.688 ms, 30 µs of it the
/// generator's lateness), while two of the json-queue run's sends were later, by
/// `late` (its p99 lateness: 1% of 160 is 1.6 requests).
fn sync_against_a_late_queue(late: fn(u64) -> u64) -> Summary {
    fn spread(i: u64) -> u64 {
        // A permutation of 0..160: (i * 37) mod 160; the late ones (3 and 7: 111
        // and 99) sit above the median, so the p50 stays where it is.
        ((i * 37) % 160) * 1_000
    }
    let sync = Script {
        latency_ns: Some(|i| 392_000 + spread(i)),
        lateness_ns: Some(|_| 30_000),
        ..Script::default()
    };
    let queue = Script {
        latency_ns: Some(|i| 658_000 + spread(i)),
        lateness_ns: Some(late),
        ..Script::default()
    };
    scripted_summary(vec![
        (
            RunCondition::BuiltIn(Condition::JsonSync),
            SinkKind::Fast,
            sync,
        ),
        (json_queue(), SinkKind::Fast, queue),
    ])
}

fn sync_vs_queue_p50(s: &Summary) -> crate::report::Finding {
    s.findings
        .iter()
        .find(|f| {
            f.condition == "json-sync"
                && f.baseline == "json-queue"
                && f.percentile == crate::report::Percentile::P50
        })
        .cloned()
        .unwrap_or_else(|| panic!("no json-sync vs json-queue p50 finding: {:?}", s.findings))
}

#[test]
fn a_generator_late_at_p99_makes_a_small_p50_difference_inconclusive() {
    let s = sync_against_a_late_queue(|i| if i == 3 || i == 7 { 23_500_000 } else { 30_000 });
    let f = sync_vs_queue_p50(&s);
    assert_eq!((f.value_ms, f.baseline_ms), (0.501, 0.767), "{f:?}");
    let why = f
        .inconclusive
        .as_deref()
        .unwrap_or_else(|| panic!("holds: {f:?}"));
    assert!(
        why.starts_with("the generator was 23.5 ms late at p99 in json-queue: 0.470 ms at p50's scale, half the difference (0.266 ms) or more"),
        "{why}"
    );
}

#[test]
fn a_generator_slightly_late_at_p99_leaves_the_p50_difference_holding() {
    let s = sync_against_a_late_queue(|i| if i == 3 || i == 7 { 500_000 } else { 30_000 });
    let f = sync_vs_queue_p50(&s);
    assert_eq!((f.value_ms, f.baseline_ms), (0.501, 0.767), "{f:?}");
    assert_eq!(f.inconclusive, None, "{f:?}");
}

/// The headline of the case, with `none` beside it: every figure is the
/// scripted runs', the queue's comparison is inconclusive and its one reason has a line.
#[test]
fn the_headline_gives_the_reason_a_late_generator_leaves_a_comparison_inconclusive() {
    let from = |base: fn(u64) -> u64, late: fn(u64) -> u64| Script {
        latency_ns: Some(base),
        lateness_ns: Some(late),
        ..Script::default()
    };
    let on_time: fn(u64) -> u64 = |_| 30_000;
    let s = scripted_summary(vec![
        (
            RunCondition::BuiltIn(Condition::None),
            SinkKind::Fast,
            from(|i| 270_000 + ((i * 37) % 160) * 1_000, on_time),
        ),
        (
            RunCondition::BuiltIn(Condition::JsonSync),
            SinkKind::Fast,
            from(|i| 392_000 + ((i * 37) % 160) * 1_000, on_time),
        ),
        (
            json_queue(),
            SinkKind::Fast,
            from(
                |i| 658_000 + ((i * 37) % 160) * 1_000,
                |i| if i == 3 || i == 7 { 23_500_000 } else { 30_000 },
            ),
        ),
    ]);
    let lines = crate::export::headline::headline(&s);
    assert!(
        lines.contains(&"    (the generator was 23.5 ms late at p99 in json-queue)".to_owned()),
        "{lines:#?}"
    );
    insta::assert_snapshot!(lines.join("\n"));
}
