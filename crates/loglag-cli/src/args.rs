//! Stage one: syntax. Validation into plans happens in `commands`.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use loglag::SinkSpec;
use loglag_lab::api::condition::RecordShape;
use loglag_lab::hops::service::{Calls, Work};
use loglag_lab::lab::LabRequest;
use loglag_lab::load::Connection;
use loglag_lab::sys::units::{parse_bytes, parse_duration};

/// Measure what logging costs an HTTP API.
///
/// `loglag lab` reproduces the reference experiment: the same small API with seven ways
/// of logging, writing to a FIFO read fast or capped at 256 KiB/s, under an open-loop
/// load of 20 requests/s for 8 s; five more conditions compare other loggers (twelve in
/// all: `loglag lab --help` lists them). Latency is timed from each request's scheduled
/// send; the generator's own lateness is reported next to it. Point it at your own API
/// with `--app`.
#[derive(Debug, Parser)]
#[command(name = "loglag", version, about, long_about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the reference experiment (or your own API with --app) and report.
    Lab(Box<LabArgs>),
    /// Open-loop (or closed-loop) HTTP load with latency from the scheduled send.
    Load(LoadArgs),
    /// Read a FIFO or TCP stream at a capped rate, counting bytes, lines and SHA-256.
    Sink(SinkArgs),
    /// Run the built-in API under test.
    Serve(ServeArgs),
    /// Render a lab --out directory as one self-contained HTML file with charts.
    Report(ReportArgs),
    /// Fault injection: kill -9 a flooding process at random moments and check recovery.
    Torture(TortureArgs),
    /// Deliver what a spool file still holds, without the application.
    Recover(RecoverArgs),
    /// Pump numbered test records (seq=0, 1, ...) through the pipeline into a sink and
    /// print the final metrics: a smoke test for a logging setup.
    Emit(EmitArgs),
    /// A process the lab starts (reader, API, flooder), configured by a JSON spec that
    /// only the lab writes. Not for use by hand.
    #[command(hide = true)]
    Child(ChildArgs),
}

#[derive(Debug, Args)]
pub struct ChildArgs {
    /// A `loglag_lab::child::ChildSpec` as JSON.
    pub spec: String,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag torture                                # kill -9 trials, overload soak, hung sink
    loglag torture --only kill9 --trials 100
    loglag torture --only kill9 --kill9-policy default   # drops announced across kill -9
    loglag torture --only soak --soak 60s --format json

WHAT IT MEASURES:
    kill9  kill -9 a process flooding a spool-mode pipeline at random moments, recover,
           and check every record whose call returned is there exactly once, in order
    soak   offer 10x what a throttled sink takes, per overflow policy: RSS growth against
           the byte budget, the caller's p99, and the accounting
    hung   a sink that never returns: the caller's longest wait per policy
    faults ENOSPC (with and without a fallback) and EPIPE: the caller's longest wait")]
pub struct TortureArgs {
    /// Run only this part: kill9, soak, hung or faults.
    #[arg(long)]
    pub only: Option<loglag_lab::torture::Part>,
    /// kill -9 trials to run.
    #[arg(long, default_value_t = 20)]
    pub trials: usize,
    /// How long each policy's overload soak runs.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub soak: Duration,
    /// The throttled sink's rate in the soak (the offer is 10x this).
    #[arg(long, default_value = "1MiB", value_parser = parse_bytes)]
    pub sink_rate: u64,
    /// Seed for the kill moments (default: from the clock).
    #[arg(long)]
    pub seed: Option<u64>,
    /// kill9: the flooding child's overflow policy. `block` drops nothing, so every
    /// record whose call returned must be in the sink; `default` (ShedByLevel) drops
    /// under the flood, and every record whose call returned must be in the sink or
    /// counted in an in-band report, the one recovery writes for the killed process
    /// included.
    #[arg(long, value_enum, default_value_t = Kill9Policy::Block)]
    pub kill9_policy: Kill9Policy,
    /// kill9: write through a rolling file sink that rotates at this size (e.g.
    /// 300KiB), and check every record exactly once across all files.
    #[arg(long, value_parser = parse_bytes)]
    pub rotate_bytes: Option<u64>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
}

/// What `loglag emit` writes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Via {
    /// loglag's pipeline.
    Loglag,
    /// tracing-appender's rolling appender and non_blocking.
    TracingAppender,
}

/// The kill -9 torture's flooding policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Kill9Policy {
    /// Overflow::Block: nothing dropped.
    Block,
    /// The default policy (ShedByLevel): drops, each counted in the sink.
    Default,
}

fn parse_overflow(s: &str) -> Result<loglag::Overflow, String> {
    s.parse()
        .map_err(|e: loglag::ParseOverflowError| e.to_string())
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag emit --sink stdout --count 10
    loglag emit --sink file:///tmp/app.log --count 1000000 --size 200 --threads 4
    loglag emit --sink file:///tmp/app.log --count 5000000 --rotate-bytes 64MiB --keep 5 --compress gzip --overflow block
    loglag emit --sink fifo:///tmp/app.fifo --rate 20000 --count 100000 --overflow block
    loglag emit --sink syslog+tcp://127.0.0.1:514 --count 100000 --overflow block
    loglag emit --sink otlp+http://127.0.0.1:4318/v1/logs --count 100000 --overflow block

Each record is `LEVEL emit: seq=N thread=T ...` padded to --size, N counting from 0;
to a syslog collector it is the MSG of an RFC 5424 message, to an OTLP receiver the
body of a LogRecord.
The exit status is 1 when any record was dropped (unless --allow-drops), so a CI job
can assert that a logging setup keeps up.")]
pub struct EmitArgs {
    /// Where to: stdout, stderr, file://PATH, fifo://PATH, syslog+tcp://HOST:PORT,
    /// syslog+udp://HOST:PORT, syslog+unix://PATH (e.g. syslog+unix:///dev/log),
    /// otlp+http://HOST:PORT[/PATH] (OTLP/HTTP protobuf, /v1/logs by default) or
    /// otlp+http+json://HOST:PORT[/PATH]; relp://HOST:PORT (acknowledged, at least once).
    #[arg(long)]
    pub sink: SinkSpec,
    /// Records to emit.
    #[arg(long, default_value_t = 100_000)]
    pub count: u64,
    /// Bytes per record, newline included.
    #[arg(long, default_value = "128", value_parser = parse_bytes)]
    pub size: u64,
    /// Records per second in all (an open-loop schedule) [default: as fast as possible].
    #[arg(long)]
    pub rate: Option<f64>,
    /// The records' level.
    #[arg(long, default_value = "info")]
    pub level: loglag::Level,
    /// Producer threads.
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Spool the queue in this file (kill -9 safe; exactly once into a file).
    #[arg(long)]
    pub spool: Option<PathBuf>,
    /// What to do when the queue is full: shed-by-level (never waits; DEBUG, then INFO
    /// go first, WARN/ERROR keep a reserve), block (waits; nothing dropped),
    /// block-for=DURATION (waits at most that long, e.g. block-for=5ms), drop-newest or
    /// drop-oldest.
    #[arg(long, default_value = "shed-by-level", value_parser = parse_overflow)]
    pub overflow: loglag::Overflow,
    /// file://: rotate before a file exceeds this size.
    #[arg(long, value_parser = parse_bytes)]
    pub rotate_bytes: Option<u64>,
    /// file://: rotate every period (e.g. 1m, 1h), aligned to UTC.
    #[arg(long, value_parser = parse_duration)]
    pub rotate_every: Option<Duration>,
    /// file://: keep this many rotated files.
    #[arg(long)]
    pub keep: Option<usize>,
    /// file://: compress rotated files in the background (gzip).
    #[arg(long)]
    pub compress: Option<CompressName>,
    /// Exit 0 even when records were dropped.
    #[arg(long)]
    pub allow_drops: bool,
    /// Emit through tracing-appender's rolling appender and non_blocking instead (its
    /// defaults; lossy(false) with --overflow block), to compare on the same machine.
    #[arg(long, value_enum, default_value_t = Via::Loglag)]
    pub via: Via,
    /// Format of the summary (on stderr when the sink is stdout).
    #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
}

/// Compression of rotated files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressName {
    Gzip,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag recover /var/spool/app.loglag -o recovered.log
    loglag recover /var/spool/app.loglag            # to stdout")]
pub struct RecoverArgs {
    /// The spool file given to NonBlockingBuilder::spool.
    pub spool: PathBuf,
    /// Append the records to this file ('-' or absent: stdout).
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag report results -o report.html
    loglag lab --out results --report        # writes results/report.html at the end")]
pub struct ReportArgs {
    /// A directory written by `loglag lab --out DIR`.
    pub dir: PathBuf,
    /// Where to write the HTML ('-' for stdout) [default: DIR/report.html].
    #[arg(short, long)]
    pub output: Option<PathBuf>,
}

/// Output format on stdout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    Md,
    Json,
    Csv,
}

/// `loglag lab`: the flags that shape its runs are the lab's own request type; here
/// only where its results go.
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct LabArgs {
    #[command(subcommand)]
    pub sub: Option<LabCommand>,
    #[command(flatten)]
    pub request: LabRequest,
    /// Write summary.json, pairs.csv, runs.csv, requests.csv, timeseries.csv and
    /// manifest.json here (a preset: one subdirectory per step, and preset.md and
    /// preset.json).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Format of the table on stdout.
    #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
    /// Also write DIR/report.html (needs --out DIR).
    #[arg(long, requires = "out")]
    pub report: bool,
}

/// Experiments other than logging's.
#[derive(Debug, Subcommand)]
pub enum LabCommand {
    /// The latency cost of a service boundary (reference 004): one /buy endpoint as
    /// in-process calls and as three HTTP services, traced.
    Hops(HopsArgs),
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag lab hops                                  # the reference's conditions: 200 req/s, new connections
    loglag lab hops --duration 5s --out hops --report
    loglag lab hops --users 500 --connection keepalive  # closed loop at capacity: queueing, not the hop
    loglag lab hops --rate 2000 --calls concurrent
    loglag lab hops --sweep --no-overhead --out hops --report   # latency against load: each knee

WHAT IT RUNS:
    monolith   order, payment and inventory as function calls in one process
    services   order calls payment and inventory over HTTP (hyper), W3C traceparent
               propagated; each process on loopback
    Each step does --work-time of work (1 ms, as in the reference); both return the same
    bytes. One request in --trace-every is traced: every handler and outgoing call is a
    tracing span, written through a loglag pipeline; --out gets spans.otlp.json (OTLP/JSON,
    one document: Jaeger 1.55+ imports it via the UI's upload; JSON Lines does not import).
    Each topology also runs with tracing off, to show what collecting spans cost.")]
pub struct HopsArgs {
    /// Closed loop with this many users instead of --rate, each sending its next request
    /// when the last is answered (no think time: each topology then runs at its
    /// capacity, and the lab says so).
    #[arg(long, conflicts_with = "rate", value_parser = clap::value_parser!(u64).range(1..))]
    pub users: Option<u64>,
    #[arg(long, help = format!(
        "Open loop at this many requests per second [default: {}, below both topologies' capacity on 2 cores, as the reference's unsaturated service was]",
        loglag_lab::hops::defaults::RATE
    ))]
    pub rate: Option<f64>,
    /// How long each topology is loaded.
    #[arg(long, default_value = loglag_lab::hops::defaults::DURATION, value_parser = parse_duration)]
    pub duration: Duration,
    /// order's two calls: sequential (the reference) or concurrent.
    #[arg(long, default_value = "sequential")]
    pub calls: Calls,
    /// order's outgoing connections: new (one per call, as the reference's
    /// `httpx.Client()` per request) or keepalive (pooled).
    #[arg(long, default_value = "new")]
    pub connection: Connection,
    /// How a step works: sleep (async, the thread is free) or spin (busy).
    #[arg(long, default_value = "sleep")]
    pub work: Work,
    /// Work per step.
    #[arg(long, default_value = loglag_lab::hops::defaults::WORK_TIME, value_parser = parse_duration)]
    pub work_time: Duration,
    /// Bytes of each step's response body (the serialisation cost).
    #[arg(long, default_value_t = loglag_lab::hops::defaults::BODY_BYTES)]
    pub body_bytes: usize,
    /// Worker threads per process [default: one per core].
    #[arg(long)]
    pub threads: Option<usize>,
    /// Trace one request in this many.
    #[arg(long, default_value_t = loglag_lab::hops::defaults::TRACE_EVERY, value_parser = clap::value_parser!(u64).range(1..))]
    pub trace_every: u64,
    /// Skip the untraced runs that measure tracing's own cost.
    #[arg(long)]
    pub no_overhead: bool,
    /// Also load both topologies (untraced) at each of --sweep-rates, open loop: p50 and
    /// p99 against offered load, the knee where each stops keeping up, its capacity,
    /// and the tax at each load.
    #[arg(long)]
    pub sweep: bool,
    /// The offered rates of --sweep, requests/s; it stops early once both topologies
    /// serve under half the offer.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = loglag_lab::hops::defaults::SWEEP_RATES
    )]
    pub sweep_rates: Vec<f64>,
    /// Load per --sweep point.
    #[arg(long, default_value = loglag_lab::hops::defaults::SWEEP_DURATION, value_parser = parse_duration)]
    pub sweep_duration: Duration,
    /// Write summary.json (its `hops` section), hops.md and spans.otlp.json here.
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write DIR/report.html: percentiles, the tax, a stacked bar per hop and
    /// waterfalls (needs --out).
    #[arg(long, requires = "out")]
    pub report: bool,
    /// Give each service (and the monolith) its own network namespace, joined by veth
    /// pairs, so every hop crosses a real network stack instead of loopback. Needs root
    /// and `ip` (iproute2); every namespace is removed on exit.
    #[arg(long)]
    pub netns: bool,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag load http://127.0.0.1:8080/ --rate 20 --duration 8s
    loglag load http://127.0.0.1:8080/ --rate 20000 --duration 5s --connection keepalive
    loglag load http://127.0.0.1:8080/ --closed 64 --duration 5s --connection keepalive
    loglag load --calibrate --rate 500 --connection keepalive     # the generator's own floor
    loglag load http://127.0.0.1:8080/ --calibrate                # the floor, then your API

TIMING:
    Request i is due at i/rate after the start and is timed from then, not from when it
    was sent, so a slow server cannot hide behind a slow client. The generator's own
    lateness (actual send - due time) is reported; a p99 over --lateness-limit is
    flagged, because every latency includes it. --calibrate measures the same load
    against a null server, so your API's latency can be told from the instrument's.")]
pub struct LoadArgs {
    /// The URL to GET (http:// only). May be left out with --calibrate.
    pub url: Option<String>,
    /// First run the same load against a null server (a child `loglag serve` doing no
    /// work) and print its latency as the floor, next to the URL's.
    #[arg(long)]
    pub calibrate: bool,
    /// Flag the run when the generator's p99 send lateness exceeds this.
    #[arg(long, default_value = "100us", value_parser = parse_duration)]
    pub lateness_limit: Duration,
    /// Requests per second, on a fixed schedule.
    #[arg(short = 'r', long, default_value_t = 20.0)]
    pub rate: f64,
    /// How long to send.
    #[arg(short = 'd', long, default_value = "8s", value_parser = parse_duration)]
    pub duration: Duration,
    /// keepalive (reuse connections, as oha, wrk and vegeta do) or new (a connection
    /// per request, as the lab's reference experiment does).
    #[arg(short = 'c', long, default_value = "keepalive")]
    pub connection: Connection,
    /// Closed loop with N connections instead of a schedule (for throughput).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub closed: Option<u64>,
    /// How long unfinished requests may take after the schedule ends before they
    /// count as timeouts.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub grace: Duration,
    /// Output format.
    #[arg(short = 'f', long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
    /// Also write one row per request as CSV here ('-' for stdout).
    #[arg(long)]
    pub requests_csv: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(after_help = "EXAMPLES:
    loglag sink --fifo /tmp/app.fifo --rate 256KiB
    loglag sink --listen 127.0.0.1:9000")]
pub struct SinkArgs {
    /// Read this FIFO (created if missing; an existing non-FIFO is refused).
    #[arg(long, conflicts_with = "listen", required_unless_present = "listen")]
    pub fifo: Option<PathBuf>,
    /// Listen on this TCP address and read the first connection.
    #[arg(long)]
    pub listen: Option<String>,
    /// Cap the read rate (bytes per second; units B, KiB, MiB).
    #[arg(long, value_parser = parse_bytes)]
    pub rate: Option<u64>,
    /// Bytes per read.
    #[arg(long, default_value_t = 4096)]
    pub read_size: usize,
    /// Set the FIFO's capacity with F_SETPIPE_SZ.
    #[arg(long, value_parser = parse_bytes)]
    pub pipe_size: Option<u64>,
    /// Write (seconds, bytes read) samples, 20 a second, as CSV to this file.
    #[arg(long)]
    pub samples: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = OutputFormat::Md)]
    pub format: OutputFormat,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Port on 127.0.0.1; 0 picks a free one and prints it.
    #[arg(long, default_value_t = 8080)]
    pub port: u16,
    /// How to log each request.
    #[arg(long, default_value = "none")]
    pub condition: String,
    /// Worker threads (1 = a single-threaded event loop).
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Write logs to this FIFO or file [default: stdout].
    #[arg(long)]
    pub log: Option<PathBuf>,
    /// SHA-256 rounds of fixed work per request; 0 makes a trivial server.
    #[arg(long, default_value_t = loglag_lab::api::server::DEFAULT_HASH_ROUNDS)]
    pub hash_rounds: u32,
    /// What each request logs: json16k (one 16 KiB JSON record), three (three 128-byte
    /// lines, INFO/DEBUG/INFO) or line120 (one 120-byte line).
    #[arg(long, default_value = "json16k")]
    pub record: RecordShape,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
