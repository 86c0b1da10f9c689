//! What a user asks `loglag lab` for, as one typed request: every flag that shapes the
//! runs, with its help and its parser beside the field it sets (clap's derive; the CLI
//! flattens it and adds only where the results go). A flag a preset has its own value
//! for is an `Option`, so the preset can tell "set" from "left". `LabRequest::steps`
//! (in `preset.rs`, beside the presets it expands) turns a request into the checked
//! plans that run.

use std::time::Duration;

use crate::api::condition::{Condition, RecordShape};
use crate::api::launch::{AppLog, Readiness};
use crate::load::Connection;
use crate::sys::units::{parse_bytes, parse_duration, parse_rate};

use super::plan::{defaults, ExpectLines, Signal, SinkKind};
use loglag::__named_enum as named_enum;

named_enum! {
    /// A named experiment.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Preset: "unknown preset" {
        /// Reference 002: memory buffers against a write per record, and what a stop loses.
        Buffers = "buffers",
        /// Reference 003: what synchronous logging does to a multi-threaded server.
        Blocking = "blocking",
        /// Reference 003's tuning table: loglag's batch size against its flush interval.
        Sweep = "sweep",
    }
}

impl Preset {
    /// For `--help`.
    pub fn describe(self) -> &'static str {
        match self {
            Preset::Buffers => "what memory buffers lose at a stop: file-sync vs memory buffers of 50/100/200 vs queue+buffer vs loglag; 3 records per request, 100 connections; stopped with SIGTERM, then with SIGKILL",
            Preset::Blocking => "synchronous logging on a multi-threaded server: sync-writeln, tokio-fs, channel-batch, tracing-appender, loglag on a server with a thread per core; 500 and 2000 connections",
            Preset::Sweep => "tuning the queue: loglag batch 4 KiB..1 MiB x flush interval 10 ms..2 s at 1000 requests/s",
        }
    }
}

/// What a preset sets unless the user says otherwise, stated once: the steps use them
/// and `--help` prints them.
pub mod preset_defaults {
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

/// `loglag lab --help-all`'s closing text (`--help` has a short one of its own); the condition and preset lists come from their
/// types.
fn after_help() -> String {
    let mut text = String::from(
        "EXAMPLES:
    loglag lab                                   # 7 conditions x {fast, slow}, 1 round
    loglag lab --rounds 3 --out results          # 3 rounds: verdicts with intervals
    loglag lab --conditions json-sync,json-queue,loglag --sinks slow
    loglag lab --app 'python3 examples/python/seed_api.py --port {port} --log {log_path} --condition {condition}'
    loglag lab --app 'python3 examples/python/buffer_api.py --port {port} --log {log_path} --mode {condition}' \\
        --conditions stream,memory --expect-lines 3 --stop-signal term --match-request-id
    loglag lab --app 'python3 examples/python/buffer_api.py --port {port} --log {log_path} --mode {condition}' \\
        --app-recover 'python3 examples/python/buffer_api.py --recover --log {log_path} --mode {condition}' \\
        --conditions memory,loglag-handler-spool --expect-lines 3 --stop-signal kill
    loglag lab --preset buffers --out buffers    # what buffers lose; also: blocking, sweep

CONDITIONS (the first seven run on the defaults; JSON records are 16 KiB):
",
    );
    for c in Condition::ALL {
        text.push_str(&format!("    {:<18}{}\n", c.as_str(), c.describe()));
    }
    text.push_str(
        "\nPRESETS (one command each; every step is a full run in its own subdirectory):\n",
    );
    for p in Preset::ALL {
        text.push_str(&format!("    {:<10}{}\n", p.as_str(), p.describe()));
    }
    text.push_str(
        "\nCOLUMNS (of the tables on stdout, in --out's files and on the report page):\n",
    );
    text.push_str(&crate::export::glossary::glossary_text());
    text
}

/// Every flag of `loglag lab` that shapes its runs.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = after_help())]
pub struct LabRequest {
    /// Run a named experiment: buffers (what memory buffers lose at a stop), blocking
    /// (synchronous logging on a multi-threaded server) or sweep (the queue's batch size
    /// against its flush interval). Flags given explicitly override the preset's settings.
    #[arg(long)]
    pub preset: Option<Preset>,
    /// Comma-separated conditions [default: none, short1, short10, json-gen,
    /// json-pre-sync, json-sync, json-queue; or the preset's].
    #[arg(long, value_delimiter = ',')]
    pub conditions: Vec<String>,
    /// Comma-separated sinks: fast, slow (the reader capped at --slow-rate) or
    /// slow-disk (every write of the API waits --disk-delay) [default: fast,slow; a
    /// preset: fast].
    #[arg(long, value_delimiter = ',')]
    pub sinks: Vec<SinkKind>,
    /// Rounds of every (condition, sink) pair; 3 gives each verdict an interval.
    #[arg(long, default_value_t = defaults::ROUNDS)]
    pub rounds: usize,
    #[arg(long, help = format!(
        "Requests per second, open loop [default: {}; sweep: {}]",
        defaults::RATE,
        preset_defaults::SWEEP_RATE
    ))]
    pub rate: Option<f64>,
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..), help = {
        use preset_defaults::{BLOCKING_CLOSED, BUFFERS_CLOSED};
        format!(
            "Closed loop with N connections, each sending its next request when the last is answered, instead of --rate [presets: buffers {BUFFERS_CLOSED}, blocking {} and {}]",
            BLOCKING_CLOSED[0], BLOCKING_CLOSED[1]
        )
    })]
    pub closed: Option<u64>,
    #[arg(long, value_parser = parse_duration, help = {
        use preset_defaults::{DURATION, SWEEP_DURATION};
        format!(
            "How long the load runs (e.g. 8s, 500ms, 1m) [default: {}; presets: {DURATION:?}, sweep {SWEEP_DURATION:?}]",
            defaults::DURATION
        )
    })]
    pub duration: Option<Duration>,
    #[arg(long, help = format!(
        "new: a connection per request (as the original experiment's client); keepalive: reuse connections [default: new; presets: {}]",
        preset_defaults::CONNECTION.as_str()
    ))]
    pub connection: Option<Connection>,
    /// The slow reader's cap (bytes per second; units B, KiB, MiB).
    #[arg(long, default_value = defaults::SLOW_RATE, value_parser = parse_rate)]
    pub slow_rate: u64,
    /// The slow-disk sink's delay before each write.
    #[arg(long, default_value = defaults::DISK_DELAY, value_parser = parse_duration)]
    pub disk_delay: Duration,
    /// Bytes per read by the reader.
    #[arg(long, default_value_t = defaults::READ_SIZE)]
    pub read_size: usize,
    /// Set the FIFO's capacity with F_SETPIPE_SZ [default: the kernel's 64 KiB].
    #[arg(long, value_parser = parse_bytes)]
    pub pipe_size: Option<u64>,
    /// Worker threads of the built-in API (1 = one event loop, as a single FastAPI
    /// worker) [default: 1; blocking: one per core].
    #[arg(long)]
    pub threads: Option<usize>,
    /// What the built-in API logs per request: json16k (the default), three (three
    /// 128-byte lines, INFO/DEBUG/INFO: the buffers preset) or line120 (one 120-byte
    /// line: the blocking preset).
    #[arg(long)]
    pub record: Option<RecordShape>,
    /// Every Nth request of the built-in API logs an ERROR: a memory buffer then writes
    /// what it holds, and the reader checks the order of what arrives.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub error_every: Option<u64>,
    /// The built-in loglag condition's batch size (e.g. 32KiB); with --preset sweep, a
    /// comma-separated list replaces the grid's [sweep: 4KiB,32KiB,128KiB,1MiB].
    #[arg(long, value_delimiter = ',', value_parser = parse_bytes)]
    pub batch_bytes: Vec<u64>,
    /// The built-in loglag condition's flush interval (e.g. 100ms); with --preset sweep,
    /// a list replaces the grid's [sweep: 10ms,100ms,500ms,2s].
    #[arg(long, value_delimiter = ',', value_parser = parse_duration)]
    pub flush_interval: Vec<Duration>,
    /// The network conditions (loglag-syslog, syslog-sync, loglag-otlp, otlp-sync):
    /// their collector goes down for this long (e.g. 2s) halfway through each measured
    /// run, closing its connections and refusing new ones.
    #[arg(long, value_parser = parse_duration)]
    pub collector_outage: Option<Duration>,
    /// Warm-up requests before counting starts.
    #[arg(long, default_value_t = defaults::WARMUP)]
    pub warmup: usize,
    /// Limit the API and the reader to this many cores each with cgroups (e.g. 0.25).
    #[arg(long)]
    pub cpu_limit: Option<f64>,
    /// Run this command as the API instead of the built-in one; {port}, {log_path} and
    /// {condition} are filled in.
    #[arg(long)]
    pub app: Option<String>,
    /// With --app: how the lab knows the app is ready. `connect` (a TCP connection
    /// succeeds; the probe is a real connection), `http:/PATH` (a 2xx answer; a real
    /// request) or `log:TEXT` (a line of the app's stderr contains TEXT; no connection,
    /// so nothing the app logs is the probe's).
    #[arg(long, default_value = "connect")]
    pub ready: Readiness,
    /// With --app: where it writes the log the lab reads: `path` (the file it is given
    /// as {log_path}), `stdout` or `stderr` (as containers log), or the file it writes
    /// on its own, named with a / (./app.log, /var/log/app.log), followed from its end
    /// as `tail -F` would. Only `path` needs {log_path}.
    #[arg(long, default_value = "path")]
    pub app_log: AppLog,
    /// With --app: how long to wait for it to be ready.
    #[arg(long, default_value = defaults::READY_TIMEOUT, value_parser = parse_duration)]
    pub ready_timeout: Duration,
    /// Longest wait for the log to drain after the last response.
    #[arg(long, default_value = defaults::DRAIN_TIMEOUT, value_parser = parse_duration)]
    pub drain_timeout: Duration,
    /// Longest wait for the warm-up requests' log lines to be read before the measured
    /// load starts: raise it for an --app that buffers its log for long.
    #[arg(long, default_value = defaults::WARMUP_TIMEOUT, value_parser = parse_duration)]
    pub warmup_timeout: Duration,
    /// Flag runs whose load generator's p99 send lateness exceeds this: their
    /// latencies include the instrument's own delay.
    #[arg(long, default_value = defaults::LATENESS_LIMIT, value_parser = parse_duration)]
    pub lateness_limit: Duration,
    /// With --app: log lines each request writes, for every condition (3) or per
    /// condition (stream=3,memory=3). Warm-up requests are counted too. Lines read
    /// against lines expected gives each run's lost_records.
    #[arg(long)]
    pub expect_lines: Option<ExpectLines>,
    /// How each run stops the API, as a deployment would: term, int or kill. What it
    /// writes while shutting down counts; what it never writes is lost. Applies to an
    /// --app always (default term), and to the built-in API when given or in a preset
    /// (buffers runs term, then kill).
    #[arg(long)]
    pub stop_signal: Option<Signal>,
    /// How long the API may take to exit after the stop signal before it is killed.
    #[arg(long, default_value = defaults::STOP_TIMEOUT, value_parser = parse_duration)]
    pub stop_timeout: Duration,
    /// With --app: a command run after each stop, before the log is counted, as the
    /// service's next start would run ({log_path} and {condition} are filled in): it
    /// delivers what a spool kept through a SIGKILL. What it writes counts like the
    /// app's lines, at least once (the batch in flight at the kill may come twice). It
    /// must exit 0 within --drain-timeout; a last stdout line `recovered N` is reported.
    /// Not with --app-log stdout|stderr: its stdout is read for that line.
    #[arg(long, value_name = "CMD")]
    pub app_recover: Option<String>,
    /// Match the request ids in the log (id=N, request_id=N, "request_id":"N") against
    /// the X-Request-Id of every request served, and report which are missing or
    /// incomplete: the last requests before the stop, or scattered.
    #[arg(long)]
    pub match_request_id: bool,
    /// The condition every other is compared with in the findings: p50 and p99
    /// differences and ratios on the same sink, with 95% bootstrap intervals
    /// [default: none, when it runs].
    #[arg(long, value_name = "CONDITION")]
    pub baseline: Option<String>,
}
