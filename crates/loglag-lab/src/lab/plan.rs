//! What a lab run is asked to do: the validated plan and the order of its runs.

use std::path::PathBuf;
use std::time::Duration;

use crate::api::condition::RecordShape;
use crate::load::Connection;
use loglag::__named_enum as named_enum;

named_enum! {
    /// How slow the log's sink is.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum SinkKind: "unknown sink" {
        /// No artificial limit.
        Fast = "fast",
        /// The reader is capped at the plan's `slow_rate` (the reference's slow pipe).
        Slow = "slow",
        /// The reader is fast, but every write the API makes waits the plan's `disk_delay`
        /// first, on whichever thread writes: a slow disk (reference 003).
        SlowDisk = "slow-disk",
    }
}

pub use crate::api::condition::RunCondition;

/// `--expect-lines`: how many log lines each request writes, for all conditions (`3`)
/// or per condition (`stream=3,memory=3`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExpectLines {
    all: Option<u64>,
    per_condition: Vec<(String, u64)>,
}

impl ExpectLines {
    pub fn for_condition(&self, name: &str) -> Option<u64> {
        self.per_condition
            .iter()
            .find(|(n, _)| n == name)
            .map(|&(_, v)| v)
            .or(self.all)
    }

    /// Names given per condition, to check against the plan's conditions.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.per_condition.iter().map(|(n, _)| n.as_str())
    }
}

impl std::str::FromStr for ExpectLines {
    type Err = String;
    fn from_str(s: &str) -> Result<ExpectLines, String> {
        let bad = || {
            format!(
                "--expect-lines {s:?}: expected a number (3) or NAME=N pairs (stream=3,memory=3)"
            )
        };
        if let Ok(n) = s.trim().parse::<u64>() {
            return Ok(ExpectLines {
                all: Some(n),
                per_condition: Vec::new(),
            });
        }
        let mut per_condition = Vec::new();
        for pair in s.split(',') {
            let (name, n) = pair.split_once('=').ok_or_else(bad)?;
            let n = n.trim().parse::<u64>().map_err(|_| bad())?;
            per_condition.push((name.trim().to_owned(), n));
        }
        Ok(ExpectLines {
            all: None,
            per_condition,
        })
    }
}

/// How each run stops an `--app`, as a deployment would.
pub use crate::sys::signal::Signal;

/// Every default of a lab run, stated once: `LabSettings::reference` parses them, and the
/// CLI gives them to clap, whose `--help` prints them. Durations and sizes are written
/// as a user types them.
pub mod defaults {
    /// Rounds of every (condition, sink) pair.
    pub const ROUNDS: usize = 1;
    /// Requests per second, open loop (the reference's).
    pub const RATE: f64 = 20.0;
    /// How long the load runs (the reference's).
    pub const DURATION: &str = "8s";
    /// The slow reader's cap (the reference's slow pipe).
    pub const SLOW_RATE: &str = "256KiB";
    /// The slow-disk sink's delay before each write.
    pub const DISK_DELAY: &str = "1ms";
    /// Bytes per read by the reader.
    pub const READ_SIZE: usize = 4096;
    /// Warm-up requests before counting starts.
    pub const WARMUP: usize = 2;
    /// How long an `--app` may take to be ready.
    pub const READY_TIMEOUT: &str = "20s";
    /// The longest wait for the log to drain after the last response.
    pub const DRAIN_TIMEOUT: &str = "120s";
    /// The longest wait for the warm-up's log lines to be read.
    pub const WARMUP_TIMEOUT: &str = "30s";
    /// Runs whose generator's p99 send lateness exceeds this are flagged.
    pub const LATENESS_LIMIT: &str = "100us";
    /// How long an API may take to exit after its stop signal.
    pub const STOP_TIMEOUT: &str = "10s";
}

fn default_duration(text: &str) -> Duration {
    crate::sys::units::parse_duration(text).expect("the defaults parse (tested)")
}

/// What a lab run is asked to do, as set: the reference's settings from
/// [`LabSettings::reference`], changed by whoever builds it. [`LabPlan::new`] checks
/// them into a plan; nothing runs from unchecked settings.
#[derive(Debug, Clone)]
pub struct LabSettings {
    pub conditions: Vec<RunCondition>,
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
    /// How the lab knows the `--app` is ready, and how long it waits.
    pub ready: crate::api::launch::Readiness,
    pub ready_timeout: Duration,
    /// Where the `--app` writes its log.
    pub app_log: crate::api::launch::AppLog,
    /// Run after each stop of the `--app`, before the log is counted (`{log_path}`,
    /// `{condition}`): its next start's recovery of a spool.
    pub app_recover: Option<String>,
    /// The `loglag` executable, used to start `serve` and `sink` children.
    pub exe: PathBuf,
    /// How long to wait for the log to drain after the last response.
    pub drain_timeout: Duration,
    /// How long to wait for the warm-up's log lines to be read.
    pub warmup_timeout: Duration,
    /// Runs whose p99 send lateness exceeds this (µs) are flagged.
    pub lateness_limit_us: f64,
    /// Lines per request an `--app` writes, to verify it.
    pub expect_lines: ExpectLines,
    /// How an `--app` is stopped at the end of each run, and how long it may take.
    pub stop_signal: Signal,
    pub stop_timeout: Duration,
    /// Stop the built-in API with `stop_signal` too, and count what the stop lost,
    /// instead of asking it to flush and comparing hashes.
    pub stop_builtin: bool,
    /// Closed loop with this many connections instead of the open-loop `rate`.
    pub closed: Option<usize>,
    /// What the built-in API logs per request.
    pub record: RecordShape,
    /// Every Nth request of the built-in API logs an ERROR.
    pub error_every: Option<u64>,
    /// The `slow-disk` sink's delay before each write.
    pub disk_delay: Duration,
    /// The built-in `loglag` condition's batch size and flush interval.
    pub loglag_batch_bytes: Option<usize>,
    pub loglag_flush_interval: Option<Duration>,
    /// The network conditions' collector goes down for this long halfway through
    /// each measured run.
    pub collector_outage: Option<Duration>,
    /// Find which request ids are missing from the log.
    pub match_request_id: bool,
    /// The condition the findings compare every other with (`None`: `none`, if run).
    pub baseline: Option<String>,
}

impl LabSettings {
    /// A plan with the reference experiment's settings for `conditions` and `sinks`;
    /// callers change what they need.
    pub fn reference(
        conditions: Vec<RunCondition>,
        sinks: Vec<SinkKind>,
        exe: PathBuf,
    ) -> LabSettings {
        LabSettings {
            conditions,
            sinks,
            rounds: defaults::ROUNDS,
            rate: defaults::RATE,
            duration: default_duration(defaults::DURATION),
            connection: Connection::New,
            slow_rate: crate::sys::units::parse_bytes(defaults::SLOW_RATE)
                .expect("the defaults parse (tested)"),
            read_size: defaults::READ_SIZE,
            pipe_size: None,
            threads: 1,
            warmup: defaults::WARMUP,
            cpu_limit: None,
            app: None,
            ready: crate::api::launch::Readiness::Connect,
            ready_timeout: default_duration(defaults::READY_TIMEOUT),
            app_log: crate::api::launch::AppLog::Path,
            app_recover: None,
            exe,
            drain_timeout: default_duration(defaults::DRAIN_TIMEOUT),
            warmup_timeout: default_duration(defaults::WARMUP_TIMEOUT),
            lateness_limit_us: default_duration(defaults::LATENESS_LIMIT).as_secs_f64() * 1e6,
            expect_lines: ExpectLines::default(),
            stop_signal: Signal::Term,
            stop_timeout: default_duration(defaults::STOP_TIMEOUT),
            stop_builtin: false,
            closed: None,
            record: RecordShape::default(),
            error_every: None,
            disk_delay: default_duration(defaults::DISK_DELAY),
            loglag_batch_bytes: None,
            loglag_flush_interval: None,
            collector_outage: None,
            match_request_id: false,
            baseline: None,
        }
    }
}

/// A validated lab plan: only [`LabPlan::new`] makes one, so every plan that runs was
/// checked, whoever built it. Its settings are read through `Deref`; to change one,
/// build new settings and check them again.
#[derive(Debug, Clone)]
pub struct LabPlan(LabSettings);

impl LabPlan {
    /// Checks `settings` (see [`LabSettings::validate`]) into a plan.
    pub fn new(settings: LabSettings) -> Result<LabPlan, PlanError> {
        settings.validate()?;
        Ok(LabPlan(settings))
    }

    /// A copy of the settings, to change and check into another plan.
    pub fn to_settings(&self) -> LabSettings {
        self.0.clone()
    }
}

impl std::ops::Deref for LabPlan {
    type Target = LabSettings;
    fn deref(&self) -> &LabSettings {
        &self.0
    }
}

pub use crate::report::PlanEcho;

impl LabSettings {
    /// What `summary.json` says the run was asked to do.
    pub fn echo(&self) -> PlanEcho {
        // Every field by name, no `..`: adding one to the plan fails to compile here
        // until it is echoed or listed as not echoed.
        let LabSettings {
            conditions,
            sinks,
            rounds,
            rate,
            duration,
            connection,
            slow_rate,
            read_size,
            pipe_size,
            threads,
            warmup,
            cpu_limit,
            app,
            app_recover,
            closed,
            record,
            error_every,
            stop_signal,
            stop_builtin,
            disk_delay,
            loglag_batch_bytes,
            loglag_flush_interval,
            collector_outage,
            lateness_limit_us,
            baseline,
            // Not echoed: how the lab found, waited for and verified the API, not what
            // it measured (and `exe` is this machine's path).
            ready: _,
            ready_timeout: _,
            app_log: _,
            exe: _,
            drain_timeout: _,
            warmup_timeout: _,
            expect_lines: _,
            stop_timeout: _,
            match_request_id: _,
        } = self;
        PlanEcho {
            conditions: conditions.iter().map(|c| c.to_string()).collect(),
            sinks: sinks.iter().map(|s| s.as_str().to_owned()).collect(),
            rounds: *rounds,
            rate: *rate,
            duration_s: duration.as_secs_f64(),
            connection: connection.as_str().to_owned(),
            slow_rate_bytes_per_s: *slow_rate,
            read_size: *read_size,
            pipe_size: *pipe_size,
            threads: *threads,
            warmup_requests: *warmup,
            cpu_limit: *cpu_limit,
            lateness_limit_us: *lateness_limit_us,
            app: app.clone(),
            app_recover: app_recover.clone(),
            closed: *closed,
            // An --app logs on its own: no record shape is the plan's.
            record: app.is_none().then(|| record.to_string()),
            error_every: *error_every,
            // A stop is measured for an --app always, for the built-in API when asked.
            stop_signal: (app.is_some() || *stop_builtin).then(|| stop_signal.as_str().to_owned()),
            disk_delay_us: sinks
                .contains(&SinkKind::SlowDisk)
                .then_some(disk_delay.as_micros() as u64),
            loglag_batch_bytes: *loglag_batch_bytes,
            loglag_flush_interval_ms: loglag_flush_interval.map(|d| d.as_secs_f64() * 1e3),
            collector_outage_ms: collector_outage.map(|d| d.as_secs_f64() * 1e3),
            baseline: baseline.clone(),
        }
    }
}

pub use crate::plan_error::PlanError;

impl LabSettings {
    /// Checks what the plan's own values must satisfy, whoever built it (the CLI, a
    /// preset, a program using the lab as a library). The CLI checks the combinations
    /// of flags only it can see (`--rate` with `--closed`, `--record` with `--app`).
    pub fn validate(&self) -> Result<(), PlanError> {
        use crate::api::launch::{AppLog, Readiness};
        if let Some((i, c)) = self
            .conditions
            .iter()
            .enumerate()
            .find(|(i, c)| self.conditions[..*i].contains(c))
        {
            let _ = i;
            return Err(PlanError::ConditionTwice(c.to_string()));
        }
        if let Some((_, s)) = self
            .sinks
            .iter()
            .enumerate()
            .find(|(i, s)| self.sinks[..*i].contains(s))
        {
            return Err(PlanError::SinkTwice(s.as_str()));
        }
        if let Some(app) = &self.app {
            if self.sinks.contains(&SinkKind::SlowDisk) {
                return Err(PlanError::SlowDiskWithApp);
            }
            if !app.contains("{port}") {
                return Err(PlanError::AppWithoutPort(app.clone()));
            }
            if self.app_log == AppLog::Path && !app.contains("{log_path}") {
                return Err(PlanError::AppWithoutLogPath(app.clone()));
            }
            if self.app_log == AppLog::Stderr && matches!(self.ready, Readiness::Log(_)) {
                return Err(PlanError::ReadyLogOnStderr);
            }
            if self.app_recover.is_some() && matches!(self.app_log, AppLog::Stdout | AppLog::Stderr)
            {
                return Err(PlanError::Flags(
                    "--app-recover writes into {log_path} or the app's own file, and its standard output is read for `recovered N`: use it with --app-log path or a file, not stdout|stderr".to_owned(),
                ));
            }
        } else if self.app_recover.is_some() {
            return Err(PlanError::Flags(
                "--app-recover recovers an --app's spool after its stop; the built-in API's loglag-spool condition is recovered by the lab itself".to_owned(),
            ));
        }
        if let Some(b) = &self.baseline {
            if !self.conditions.iter().any(|c| c.name() == b) {
                return Err(PlanError::BaselineNotRun(
                    b.clone(),
                    self.conditions.iter().map(|c| c.to_string()).collect(),
                ));
            }
        }
        if self.read_size == 0 {
            return Err(PlanError::AtLeastOne("--read-size", " byte"));
        }
        if self.threads == 0 {
            return Err(PlanError::AtLeastOne("--threads", ""));
        }
        if self.rounds == 0 {
            return Err(PlanError::AtLeastOne("--rounds", ""));
        }
        if !(self.rate > 0.0 && self.rate.is_finite()) {
            return Err(PlanError::NotPositive(
                "--rate",
                "a positive number of requests per second",
            ));
        }
        if self.duration.is_zero() {
            return Err(PlanError::NotPositive("--duration", "positive"));
        }
        if self.cpu_limit.is_some_and(|c| !(c > 0.0 && c.is_finite())) {
            return Err(PlanError::NotPositive(
                "--cpu-limit",
                "a positive number of cores, e.g. 0.25",
            ));
        }
        if self.ready_timeout.is_zero() {
            return Err(PlanError::NotPositive("--ready-timeout", "positive"));
        }
        if self.warmup_timeout.is_zero() {
            return Err(PlanError::NotPositive("--warmup-timeout", "positive"));
        }
        if self.slow_rate == 0 {
            return Err(PlanError::NotPositive("--slow-rate", "positive"));
        }
        if self.collector_outage.is_some_and(|d| d.is_zero()) {
            return Err(PlanError::NotPositive(
                "--collector-outage",
                "positive, e.g. 2s",
            ));
        }
        Ok(())
    }

    /// The runs in order: every pair each round, each round starting one pair later.
    pub fn schedule(&self) -> Vec<(usize, RunCondition, SinkKind)> {
        let pairs: Vec<(&RunCondition, SinkKind)> = self
            .conditions
            .iter()
            .flat_map(|c| self.sinks.iter().map(move |&s| (c, s)))
            .collect();
        let mut out = Vec::new();
        for round in 0..self.rounds {
            for k in 0..pairs.len() {
                let (c, s) = pairs[(round + k) % pairs.len()];
                out.push((round, c.clone(), s));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The echo says what a run measured under: an --app has no record shape but a
    /// stop signal, a built-in run a stop signal only when its stop was measured, and
    /// the disk delay only where a slow-disk sink ran.
    #[test]
    fn the_echo_states_only_what_the_runs_used() {
        let builtin = LabSettings::reference(
            vec![RunCondition::BuiltIn(
                crate::api::condition::Condition::JsonSync,
            )],
            vec![SinkKind::Fast],
            PathBuf::new(),
        );
        let echo = builtin.echo();
        assert_eq!(echo.conditions, ["json-sync"]);
        assert_eq!(
            (echo.rate, echo.duration_s, echo.warmup_requests),
            (20.0, 8.0, 2)
        );
        assert_eq!(echo.record.as_deref(), Some("json16k"));
        assert_eq!((echo.stop_signal, echo.disk_delay_us), (None, None));

        let mut stopped = builtin.clone();
        stopped.stop_builtin = true;
        stopped.sinks.push(SinkKind::SlowDisk);
        let echo = stopped.echo();
        assert_eq!(echo.stop_signal.as_deref(), Some("term"));
        assert_eq!(echo.disk_delay_us, Some(1_000));

        let mut app = builtin;
        app.app = Some("svc --port {port} --log {log_path}".into());
        let echo = app.echo();
        assert_eq!(
            (echo.record, echo.stop_signal.as_deref()),
            (None, Some("term"))
        );
    }

    /// The defaults the CLI hands clap are the plan's, and they parse.
    #[test]
    fn every_default_parses_into_the_reference_plan() {
        let plan = LabSettings::reference(Vec::new(), Vec::new(), PathBuf::new());
        assert_eq!(plan.duration, Duration::from_secs(8));
        assert_eq!(plan.slow_rate, 256 << 10);
        assert_eq!(plan.disk_delay, Duration::from_millis(1));
        assert_eq!(plan.ready_timeout, Duration::from_secs(20));
        assert_eq!(plan.drain_timeout, Duration::from_secs(120));
        assert_eq!(plan.warmup_timeout, Duration::from_secs(30));
        assert_eq!(
            plan.lateness_limit_us,
            crate::report::Lateness::DEFAULT_LIMIT_US
        );
        assert_eq!(plan.stop_timeout, Duration::from_secs(10));
        assert_eq!(
            (plan.rounds, plan.rate, plan.read_size, plan.warmup),
            (1, 20.0, 4096, 2)
        );
    }

    /// Each value a plan cannot run with is refused with its flag named; a good plan
    /// passes.
    #[test]
    fn a_plan_names_what_it_cannot_run_with() {
        let good = || {
            LabSettings::reference(
                vec![RunCondition::BuiltIn(
                    crate::api::condition::Condition::Loglag,
                )],
                vec![SinkKind::Fast, SinkKind::Slow],
                PathBuf::from("loglag"),
            )
        };
        assert_eq!(good().validate(), Ok(()));
        let mut p = good();
        p.rounds = 0;
        assert_eq!(
            p.validate().unwrap_err().to_string(),
            "--rounds must be at least 1"
        );
        let mut p = good();
        p.rate = f64::NAN;
        assert!(p
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--rate must be"));
        let mut p = good();
        p.warmup_timeout = Duration::ZERO;
        assert_eq!(
            p.validate().unwrap_err().to_string(),
            "--warmup-timeout must be positive"
        );
        let mut p = good();
        p.collector_outage = Some(Duration::ZERO);
        assert!(p
            .validate()
            .unwrap_err()
            .to_string()
            .contains("--collector-outage"));
        let mut p = good();
        p.sinks.push(SinkKind::Fast);
        assert_eq!(p.validate(), Err(PlanError::SinkTwice("fast")));
        let mut p = good();
        p.conditions.push(p.conditions[0].clone());
        assert!(matches!(p.validate(), Err(PlanError::ConditionTwice(_))));
        let mut p = good();
        p.app = Some("python3 app.py".into());
        assert!(matches!(p.validate(), Err(PlanError::AppWithoutPort(_))));
        p.app = Some("python3 app.py {port}".into());
        assert!(matches!(p.validate(), Err(PlanError::AppWithoutLogPath(_))));
        let mut p = good();
        p.app_recover = Some("python3 app.py --recover".into());
        assert!(p
            .validate()
            .unwrap_err()
            .to_string()
            .starts_with("--app-recover recovers an --app's spool"));
        let mut p = good();
        p.app = Some("python3 app.py {port}".into());
        p.app_log = crate::api::launch::AppLog::Stdout;
        p.app_recover = Some("python3 app.py --recover".into());
        assert!(p
            .validate()
            .unwrap_err()
            .to_string()
            .contains("not stdout|stderr"));
    }
    use crate::api::condition::Condition;

    #[test]
    fn rounds_rotate_their_starting_pair() {
        let plan = LabSettings {
            rounds: 2,
            ..LabSettings::reference(
                vec![
                    RunCondition::BuiltIn(Condition::None),
                    RunCondition::BuiltIn(Condition::JsonSync),
                ],
                vec![SinkKind::Fast, SinkKind::Slow],
                PathBuf::new(),
            )
        };
        let s = plan.schedule();
        assert_eq!(s.len(), 8);
        let none = RunCondition::BuiltIn(Condition::None);
        assert_eq!((s[0].1.clone(), s[0].2), (none.clone(), SinkKind::Fast));
        assert_eq!(
            (s[4].1.clone(), s[4].2),
            (none.clone(), SinkKind::Slow),
            "round 2 starts one pair later"
        );
        assert_eq!((s[7].1.clone(), s[7].2), (none, SinkKind::Fast));
    }

    #[test]
    fn app_conditions_and_expectations_parse() {
        assert_eq!(
            RunCondition::parse("json-sync", true).unwrap(),
            RunCondition::BuiltIn(Condition::JsonSync)
        );
        assert_eq!(
            RunCondition::parse("memory", true).unwrap(),
            RunCondition::Named("memory".into())
        );
        assert!(RunCondition::parse("memory", false)
            .unwrap_err()
            .contains("needs --app"));
        for hostile in ["x;rm -rf ~", "$(id)", "a b", "-x", ""] {
            assert!(RunCondition::parse(hostile, true).is_err(), "{hostile:?}");
        }
        let e: ExpectLines = "stream=3, memory=2".parse().unwrap();
        assert_eq!(e.for_condition("stream"), Some(3));
        assert_eq!(e.for_condition("memory"), Some(2));
        assert_eq!(e.for_condition("queue"), None);
        let all: ExpectLines = "3".parse().unwrap();
        assert_eq!(all.for_condition("anything"), Some(3));
        assert!("x=y".parse::<ExpectLines>().is_err());
        assert_eq!("SIGTERM".parse::<Signal>().unwrap(), Signal::Term);
        assert!("hup".parse::<Signal>().is_err());
    }
}
