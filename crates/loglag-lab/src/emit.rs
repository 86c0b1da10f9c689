//! `loglag emit`: numbered test records through the pipeline into a sink named by a
//! URL, then the final metrics. A smoke test for a logging setup, and the torture
//! driver for files.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use loglag::rolling::{self, Compression, Naming};
use loglag::sink::{IntoSink, Sink, SinkSpec};
use loglag::{DropReason, Level, Metrics, NonBlockingBuilder, Overflow};

use crate::plan_error::PlanError;
use crate::report::{EmitMetrics, EmitSummary};
use crate::sys::units::{parse_bytes, parse_duration};

/// `--sink`'s parser. Clap's own error for a value that does not parse repeats the
/// value as given, a URL's `user:password@` included; this one gives only the
/// parser's error, which shows the URL with its credentials masked (`user:***@`).
#[derive(Clone)]
struct SinkParser;

impl clap::builder::TypedValueParser for SinkParser {
    type Value = SinkSpec;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<SinkSpec, clap::Error> {
        let refused = |why: String| {
            let arg = arg.map_or_else(|| "--sink".to_owned(), |a| a.to_string());
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("invalid value for '{arg}': {why}\n"),
            )
            .with_cmd(cmd)
        };
        let text = value
            .to_str()
            .ok_or_else(|| refused("a sink URL is UTF-8 text".to_owned()))?;
        text.parse().map_err(refused)
    }
}

/// Rotation for `file://` sinks.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct Rotation {
    /// file://: rotate before a file exceeds this size.
    #[arg(long = "rotate-bytes", value_parser = parse_bytes)]
    pub max_bytes: Option<u64>,
    /// file://: rotate every period (e.g. 1m, 1h), aligned to UTC.
    #[arg(long = "rotate-every", value_parser = parse_duration)]
    pub every: Option<Duration>,
    /// file://: keep this many rotated files.
    #[arg(long)]
    pub keep: Option<usize>,
    /// file://: compress rotated files in the background (gzip, the one there is).
    #[arg(long = "compress", value_name = "gzip", value_parser = parse_gzip, default_value = "none", hide_default_value = true, num_args = 1, action = clap::ArgAction::Set)]
    pub gzip: bool,
}

fn parse_gzip(s: &str) -> Result<bool, String> {
    match s {
        "gzip" => Ok(true),
        "none" => Ok(false),
        other => Err(format!(
            "unknown compression {other:?}: gzip is the one there is"
        )),
    }
}

fn parse_via(s: &str) -> Result<bool, String> {
    match s {
        "loglag" => Ok(false),
        "tracing-appender" => Ok(true),
        other => Err(format!(
            "unknown --via {other:?}: expected loglag or tracing-appender"
        )),
    }
}

fn parse_overflow(s: &str) -> Result<Overflow, String> {
    s.parse().map_err(|e: loglag::ParseError| e.to_string())
}

impl Rotation {
    fn any(&self) -> bool {
        self.max_bytes.is_some() || self.every.is_some() || self.keep.is_some() || self.gzip
    }
}

/// What to emit: `loglag emit`'s flags derive here, beside the fields they set.
/// [`emit`] refuses a plan that does not pass [`EmitPlan::validate`].
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "EXAMPLES:
    loglag emit --sink stdout --count 10
    loglag emit --sink file:///tmp/app.log --count 1000000 --size 200 --threads 4
    loglag emit --sink file:///tmp/app.log --count 5000000 --rotate-bytes 64MiB --keep 5 --compress gzip --overflow block
    loglag emit --sink file:///tmp/app.log --count 1000000 --rotate-every 1h --keep 24
    loglag emit --sink fifo:///tmp/app.fifo --rate 20000 --count 100000 --overflow block
    loglag emit --sink syslog+tcp://127.0.0.1:514 --count 100000 --overflow block
    loglag emit --sink otlp+http://127.0.0.1:4318/v1/logs --count 100000 --overflow block

Each record is `LEVEL emit: seq=N thread=T ...` padded to --size, N counting from 0;
to a syslog collector it is the MSG of an RFC 5424 message, to an OTLP receiver the
body of a LogRecord.
The exit status is 1 when any record was dropped (unless --allow-drops), so a CI job
can assert that a logging setup keeps up.")]
pub struct EmitPlan {
    /// Where to: stdout, stderr, file://PATH, fifo://PATH, syslog+tcp://HOST:PORT,
    /// syslog+udp://HOST:PORT, syslog+unix://PATH (e.g. syslog+unix:///dev/log),
    /// otlp+http://HOST:PORT[/PATH] (OTLP/HTTP protobuf, /v1/logs by default) or
    /// otlp+http+json://HOST:PORT[/PATH]; relp://HOST:PORT (acknowledged, at least once).
    #[arg(long, value_parser = SinkParser)]
    pub sink: SinkSpec,
    /// Records to emit.
    #[arg(long, default_value_t = 100_000)]
    pub count: u64,
    /// Bytes per record, newline included.
    #[arg(long, default_value = "128", value_parser = parse_size)]
    pub size: usize,
    /// Records per second in all (an open-loop schedule) [default: as fast as possible].
    #[arg(long)]
    pub rate: Option<f64>,
    /// The records' level.
    #[arg(long, default_value = "info")]
    pub level: Level,
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
    pub overflow: Overflow,
    #[command(flatten)]
    pub rotation: Rotation,
    /// Emit through tracing-appender's rolling appender and non_blocking instead
    /// (`--via tracing-appender`: its defaults; lossy(false) with --overflow block), to
    /// compare on the same machine [default: loglag].
    #[arg(long = "via", value_name = "loglag|tracing-appender", value_parser = parse_via, default_value = "loglag", hide_default_value = true, num_args = 1, action = clap::ArgAction::Set)]
    pub via_tracing_appender: bool,
}

fn parse_size(s: &str) -> Result<usize, String> {
    let bytes = parse_bytes(s).map_err(|e| e.to_string())?;
    usize::try_from(bytes).map_err(|_| format!("{s:?} is more than this machine can address"))
}

impl EmitPlan {
    /// Checks what the plan's own values must satisfy, whoever built it.
    pub fn validate(&self) -> Result<(), PlanError> {
        if self.count == 0 {
            return Err(PlanError::AtLeastOne("--count", ""));
        }
        if self.threads == 0 {
            return Err(PlanError::AtLeastOne("--threads", ""));
        }
        if !(16..=(64 << 10)).contains(&self.size) {
            return Err(PlanError::OutOfRange(
                "--size",
                "between 16 bytes and 64 KiB (the pipeline's record limit)",
            ));
        }
        if self.rate.is_some_and(|r| !(r > 0.0 && r.is_finite())) {
            return Err(PlanError::NotPositive(
                "--rate",
                "a positive number of records per second",
            ));
        }
        if self.rotation.every.is_some_and(|d| d.as_secs() == 0) {
            return Err(PlanError::OutOfRange("--rotate-every", "at least 1s"));
        }
        Ok(())
    }
}

fn open_sink(plan: &EmitPlan) -> std::io::Result<Box<dyn Sink>> {
    if plan.rotation.any() && !matches!(plan.sink, SinkSpec::File(_)) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "rotation options (--rotate-bytes, --rotate-every, --keep, --compress) need a file:// sink",
        ));
    }
    Ok(match &plan.sink {
        SinkSpec::File(p) if plan.rotation.any() => {
            let (dir, name) = dir_and_name(p);
            let name = name
                .ok_or_else(|| std::io::Error::other(format!("{} names no file", p.display())))?;
            let r = &plan.rotation;
            let mut b = rolling::Builder::new()
                .naming(Naming::Fixed)
                .filename_prefix(name);
            if let Some(m) = r.max_bytes {
                b = b.max_file_size(m);
            }
            if let Some(e) = r.every {
                b = b.rotation(rolling::Rotation::every(e));
            }
            if let Some(k) = r.keep {
                // --keep counts rotated files; max_log_files counts the current one too.
                b = b.max_log_files(k.saturating_add(1));
            }
            if r.gzip {
                b = b.compression(Compression::Gzip);
            }
            Box::new(b.build(dir).map_err(std::io::Error::other)?.into_sink())
        }
        other => other.open()?,
    })
}

/// A file path as a rolling sink takes it: its directory (`.` for a bare name) and its
/// file name, if it has one.
pub(crate) fn dir_and_name(path: &Path) -> (PathBuf, Option<String>) {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), PathBuf::from);
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    (dir, name)
}

/// Builds record `seq`: `<level> emit: seq=<seq> thread=<t> ....` padded to `size`.
pub fn record(out: &mut Vec<u8>, level: Level, seq: u64, thread: usize, size: usize) {
    use std::io::Write as _;
    out.clear();
    let _ = write!(out, "{level} emit: seq={seq} thread={thread} ");
    if out.len() + 1 < size {
        out.resize(size - 1, b'.');
    }
    out.push(b'\n');
}

/// Emits and returns what happened. `progress` counts records submitted.
pub fn emit(
    plan: &EmitPlan,
    progress: &AtomicU64,
    stop: &std::sync::atomic::AtomicBool,
) -> std::io::Result<EmitSummary> {
    plan.validate()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e.to_string()))?;
    if plan.via_tracing_appender {
        return emit_via_tracing_appender(plan, progress, stop);
    }
    let sink = open_sink(plan)?;
    let mut builder = NonBlockingBuilder::default().overflow(plan.overflow);
    if let Some(spool) = &plan.spool {
        builder = builder.spool(spool).spool_required(true);
    }
    let (writer, guard) = builder.build(sink)?;
    let started = Instant::now();
    // Syslog collectors expect RFC 5424 messages, OTLP reads fields from JSON: the
    // numbered record is then their message.
    let record_format = plan.sink.record_format();
    let submitted = produce(plan, progress, started, stop, || {
        let writer = writer.clone();
        let mut message = Vec::new();
        Box::new(move |line: &[u8]| {
            if let Some(format) = record_format {
                use loglag::__lab::{LineBuilder, Value};
                message.clear();
                let text =
                    std::str::from_utf8(line.strip_suffix(b"\n").unwrap_or(line)).unwrap_or("");
                let mut b = LineBuilder::begin(
                    &mut message,
                    format,
                    std::time::SystemTime::now(),
                    plan.level,
                    "emit",
                );
                b.field("message", Value::Str(text));
                b.finish();
                writer.submit(plan.level, &message);
            } else {
                writer.submit(plan.level, line)
            }
        })
    });
    let submitted_s = started.elapsed().as_secs_f64();
    let m = guard.shutdown();
    let elapsed_s = started.elapsed().as_secs_f64();
    Ok(EmitSummary {
        schema: crate::report::SCHEMA,
        sink: plan.sink.to_string(),
        records: submitted,
        interrupted: submitted < plan.count,
        record_bytes: plan.size,
        threads: plan.threads,
        submit_s: submitted_s,
        elapsed_s,
        records_per_s: m.written_records as f64 / elapsed_s.max(1e-9),
        mib_per_s: m.written_bytes as f64 / elapsed_s.max(1e-9) / 1048576.0,
        metrics: metrics(&m),
    })
}

/// The same records through `tracing_appender::rolling` and `non_blocking` (its
/// defaults, `lossy(false)` when `--overflow block`). Its write calls are counted from
/// `/proc/self/io`, as it does not count them itself.
fn emit_via_tracing_appender(
    plan: &EmitPlan,
    progress: &AtomicU64,
    stop: &std::sync::atomic::AtomicBool,
) -> std::io::Result<EmitSummary> {
    use std::io::Write as _;
    use tracing_appender::rolling::{RollingFileAppender, Rotation as TaRotation};
    let SinkSpec::File(path) = &plan.sink else {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "--via tracing-appender writes files: give a file:// sink",
        ));
    };
    if plan.rotation.max_bytes.is_some() || plan.rotation.gzip || plan.rotation.keep.is_some() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "tracing-appender rotates by time only, keeps files by count, and does not compress: --via tracing-appender takes --rotate-every 1m|1h|1d only",
        ));
    }
    let rotation = match plan.rotation.every.map(|d| d.as_secs()) {
        None => TaRotation::NEVER,
        Some(60) => TaRotation::MINUTELY,
        Some(3600) => TaRotation::HOURLY,
        Some(86_400) => TaRotation::DAILY,
        Some(other) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!("tracing-appender cannot rotate every {other} s: use 1m, 1h or 1d"),
            ))
        }
    };
    let (dir, name) = dir_and_name(path);
    let appender = RollingFileAppender::new(rotation, dir, name.as_deref().unwrap_or("emit.log"));
    let syscw =
        || crate::sys::procfs::ProcCounters::read(std::process::id()).map_or(0, |c| c.syscw);
    let syscw_before = syscw();
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(plan.overflow != Overflow::Block)
        .finish(appender);
    let errors = writer.error_counter();
    let started = Instant::now();
    let submitted = produce(plan, progress, started, stop, || {
        let mut writer = writer.clone();
        Box::new(move |line: &[u8]| {
            let _ = writer.write_all(line);
        })
    });
    let submit_s = started.elapsed().as_secs_f64();
    drop(writer);
    drop(guard);
    let elapsed_s = started.elapsed().as_secs_f64();
    let dropped = errors.dropped_lines() as u64;
    let written = submitted.saturating_sub(dropped);
    Ok(EmitSummary {
        schema: crate::report::SCHEMA,
        sink: format!("{} (tracing-appender)", plan.sink),
        records: submitted,
        interrupted: submitted < plan.count,
        record_bytes: plan.size,
        threads: plan.threads,
        submit_s,
        elapsed_s,
        records_per_s: written as f64 / elapsed_s.max(1e-9),
        mib_per_s: (written * plan.size as u64) as f64 / elapsed_s.max(1e-9) / 1048576.0,
        metrics: EmitMetrics {
            accepted: submitted,
            written_records: written,
            written_bytes: written * plan.size as u64,
            dropped_records: dropped,
            dropped_queue_full: dropped,
            dropped_io_error: 0,
            dropped_shutdown: 0,
            dropped_reentrant: 0,
            dropped_rejected: 0,
            truncated: 0,
            write_syscalls: syscw().saturating_sub(syscw_before),
            io_errors: 0,
            max_backlog_bytes: 0,
            write_p50_us: 0.0,
            write_p99_us: 0.0,
            write_max_us: 0.0,
            recovered_records: 0,
        },
    })
}

/// A producer thread's way of logging one record (its own clone of the writer).
type Submit<'a> = Box<dyn FnMut(&[u8]) + Send + 'a>;

/// Runs `plan.threads` producers sharing one sequence, each building record `seq` and
/// handing it to its own submitter (from `submitter`), on the open-loop schedule
/// `seq / rate` when there is one.
/// Emits the plan's records from its threads until all are submitted or `stop` is
/// set. Returns how many were submitted.
fn produce<'a>(
    plan: &EmitPlan,
    progress: &AtomicU64,
    started: Instant,
    stop: &std::sync::atomic::AtomicBool,
    submitter: impl Fn() -> Submit<'a> + Sync,
) -> u64 {
    let next = AtomicU64::new(0);
    let submitted = AtomicU64::new(0);
    std::thread::scope(|scope| {
        for t in 0..plan.threads.max(1) {
            let (next, submitted) = (&next, &submitted);
            let mut submit = submitter();
            scope.spawn(move || {
                let mut line = Vec::with_capacity(plan.size);
                loop {
                    if stop.load(Ordering::Relaxed) {
                        return;
                    }
                    let seq = next.fetch_add(1, Ordering::Relaxed);
                    if seq >= plan.count {
                        return;
                    }
                    if let Some(rate) = plan.rate {
                        let due = started + Duration::from_secs_f64(seq as f64 / rate);
                        let now = Instant::now();
                        if due > now {
                            std::thread::sleep(due - now);
                        }
                    }
                    record(&mut line, plan.level, seq, t, plan.size);
                    submit(&line);
                    submitted.fetch_add(1, Ordering::Relaxed);
                    progress.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    submitted.into_inner()
}

fn metrics(m: &Metrics) -> EmitMetrics {
    EmitMetrics {
        accepted: m.accepted,
        written_records: m.written_records,
        written_bytes: m.written_bytes,
        dropped_records: m.dropped_records(),
        dropped_queue_full: m.dropped_for(DropReason::QueueFull),
        dropped_io_error: m.dropped_for(DropReason::IoError),
        dropped_shutdown: m.dropped_for(DropReason::Shutdown),
        dropped_reentrant: m.dropped_for(DropReason::Reentrant),
        dropped_rejected: m.dropped_for(DropReason::Rejected),
        truncated: m.truncated,
        write_syscalls: m.write_syscalls,
        // The key is older than `Metrics::write_errors`; readers of the JSON know it so.
        io_errors: m.write_errors,
        max_backlog_bytes: m.max_backlog_bytes,
        write_p50_us: m.write_latency.p50.as_secs_f64() * 1e6,
        write_p99_us: m.write_latency.p99.as_secs_f64() * 1e6,
        write_max_us: m.write_latency.max.as_secs_f64() * 1e6,
        recovered_records: m.recovered_records,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each value the plan cannot run with is refused naming its flag, before any
    /// sink is opened; a good plan passes.
    #[test]
    fn a_plan_names_what_it_cannot_run_with() {
        let good = || EmitPlan {
            sink: SinkSpec::Stdout,
            count: 10,
            size: 120,
            rate: None,
            level: Level::Info,
            threads: 1,
            spool: None,
            overflow: Overflow::Block,
            rotation: Rotation {
                max_bytes: None,
                every: None,
                keep: None,
                gzip: false,
            },
            via_tracing_appender: false,
        };
        assert_eq!(good().validate(), Ok(()));
        let refused = |change: fn(&mut EmitPlan)| {
            let mut plan = good();
            change(&mut plan);
            plan.validate().unwrap_err().to_string()
        };
        assert_eq!(refused(|p| p.count = 0), "--count must be at least 1");
        assert_eq!(refused(|p| p.threads = 0), "--threads must be at least 1");
        assert!(refused(|p| p.size = 8).starts_with("--size must be between 16 bytes"));
        assert!(refused(|p| p.size = 65 << 10).starts_with("--size must be"));
        assert!(refused(|p| p.rate = Some(f64::INFINITY)).starts_with("--rate must be"));
        assert_eq!(
            refused(|p| p.rotation.every = Some(Duration::from_millis(500))),
            "--rotate-every must be at least 1s"
        );
        let mut plan = good();
        plan.count = 0;
        let stop = std::sync::atomic::AtomicBool::new(false);
        let err = emit(&plan, &AtomicU64::new(0), &stop).unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
    }

    #[test]
    fn urls_parse_and_refuse_clearly() {
        assert_eq!("stdout".parse::<SinkSpec>().unwrap(), SinkSpec::Stdout);
        assert_eq!(
            "file:///tmp/a.log".parse::<SinkSpec>().unwrap(),
            SinkSpec::File("/tmp/a.log".into())
        );
        assert_eq!(
            "fifo:///tmp/x.fifo".parse::<SinkSpec>().unwrap(),
            SinkSpec::Fifo("/tmp/x.fifo".into())
        );
        // RFC 8089: what follows `//` is a host, so no relative path.
        assert!("fifo://x.fifo"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("host \"x.fifo\" is not supported"));
        assert!("tcp://1.2.3.4:5"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("unknown sink scheme"));
        assert!("file://"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("no path"));
        assert!("/tmp/x"
            .parse::<SinkSpec>()
            .unwrap_err()
            .contains("not a sink URL"));
    }

    #[test]
    fn syslog_sink_urls_parse_and_read_back() {
        for url in [
            "syslog+tcp://127.0.0.1:514",
            "syslog+udp://[::1]:5514",
            "syslog+unix:///dev/log",
            "relp://127.0.0.1:2514",
        ] {
            let parsed: SinkSpec = url.parse().unwrap();
            assert!(parsed.is_syslog());
            assert_eq!(parsed.to_string(), url);
        }
        for bad in [
            "syslog+tcp://localhost",
            "syslog+udp://:514",
            "syslog+tcp://h:port",
        ] {
            let err = bad.parse::<SinkSpec>().unwrap_err();
            assert!(err.contains("HOST:PORT"), "{bad}: {err}");
        }
        let err = "syslog://x:1".parse::<SinkSpec>().unwrap_err();
        assert!(err.contains("syslog+tcp://HOST:PORT"), "{err}");
    }

    #[test]
    fn otlp_sink_urls_parse_read_back_and_want_json_records() {
        for (url, json) in [
            ("otlp+http://127.0.0.1:4318", false),
            ("otlp+http://collector:4318/v1/logs", false),
            ("otlp+http+json://127.0.0.1:4318/v1/logs", true),
        ] {
            let parsed: SinkSpec = url.parse().unwrap();
            assert!(matches!(parsed, SinkSpec::Otlp { json: j, .. } if j == json));
            assert_eq!(parsed.record_format(), Some(loglag::Format::Json));
            assert_eq!(parsed.to_string(), url);
        }
        let alias: SinkSpec = "otlp+json://127.0.0.1:4318".parse().unwrap();
        assert_eq!(alias.to_string(), "otlp+http+json://127.0.0.1:4318");
        for bad in ["otlp+http://collector", "otlp+json://:4318/v1/logs"] {
            let err = bad.parse::<SinkSpec>().unwrap_err();
            assert!(err.contains("HOST:PORT"), "{bad}: {err}");
        }
    }

    #[test]
    fn records_have_their_size_and_number() {
        let mut line = Vec::new();
        record(&mut line, Level::Warn, 42, 3, 100);
        assert_eq!(line.len(), 100);
        let text = String::from_utf8(line).unwrap();
        assert!(text.starts_with("WARN emit: seq=42 thread=3 "), "{text}");
    }
}
