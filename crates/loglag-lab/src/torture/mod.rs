//! Fault injection for the pipeline: kill -9 at random moments during a flood, then
//! recover and check that every record whose log call returned is there exactly once,
//! in order. `loglag torture` prints the figures; the tests run a few trials.

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub mod request;

use crate::report::{FaultResult, HungResult, Kill9Report, SoakResult, Trial};
use loglag::__named_enum as named_enum;
use loglag::{DropReason, Level, NonBlockingBuilder, Overflow};

/// Producers in the flooding child.
pub const PRODUCERS: usize = 2;

fn line(producer: usize, seq: u64) -> String {
    // Varying lengths exercise wrap-around in the spool.
    let pad = "x".repeat(((seq as usize * 7 + producer * 13) % 90) + 1);
    format!("p{producer} s{seq} {pad}\n")
}

/// The pipeline both the child and the recovery use: a small spool, so it wraps often.
pub use crate::report::FloodPolicy;

named_enum! {
    /// The parts of `loglag torture`, in the order they run.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Part: "unknown part" {
        /// kill -9 mid-stream, then recovery from the spool: exactly once.
        Kill9 = "kill9",
        /// Every overflow policy into a slow sink: memory stays bounded.
        Soak = "soak",
        /// A sink that never returns: the caller's longest wait.
        Hung = "hung",
        /// ENOSPC and EPIPE: what is dropped is counted.
        Faults = "faults",
    }
}

fn builder(spool: &Path, policy: FloodPolicy) -> NonBlockingBuilder {
    let builder = NonBlockingBuilder::default()
        .mode(loglag::Mode::Async)
        .spool(spool)
        .capacity_bytes(256 << 10)
        .batch_bytes(16 << 10)
        .flush_interval(Duration::from_millis(1))
        .flush_on_panic(false);
    match policy {
        FloodPolicy::Block => builder.overflow(Overflow::Block),
        FloodPolicy::Default => builder,
    }
}

/// The sink the child and the recovery share: one file, or rolling files rotating at
/// `rotate_bytes` (`out`'s directory, named after it).
fn sink(out: &Path, rotate_bytes: Option<u64>) -> std::io::Result<Box<dyn loglag::sink::Sink>> {
    Ok(match rotate_bytes {
        // What an application passes to `finish`: a `std::fs::File`, which the builder
        // recognises as a file sink (the exactly-once path the torture is about).
        None => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(out)?;
            Box::new(loglag::sink::FdSink::from_file(file))
        }
        Some(max) => {
            let (dir, name) = crate::emit::dir_and_name(out);
            use loglag::sink::IntoSink;
            let appender = loglag::rolling::Builder::new()
                .naming(loglag::rolling::Naming::Fixed)
                .filename_prefix(name.unwrap_or("out.log".into()))
                .max_file_size(max)
                .build(dir)
                .map_err(std::io::Error::other)?;
            Box::new(appender.into_sink())
        }
    })
}

/// Every file the flood wrote, oldest first: rotated files by modification time (their
/// names are unique, not ordered), then the current one.
fn written_files(out: &Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let (dir, name) = crate::emit::dir_and_name(out);
    let name = name.unwrap_or_default();
    let mut rotated = Vec::new();
    for e in std::fs::read_dir(dir)? {
        let e = e?;
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with(&format!("{name}.")) && !n.ends_with(".tmp") {
            let meta = e.metadata()?;
            rotated.push((meta.modified()?, e.path()));
        }
    }
    rotated.sort();
    let mut files: Vec<_> = rotated.into_iter().map(|(_, p)| p).collect();
    files.push(out.to_owned());
    Ok(files)
}

/// Shared progress: per producer, how many of its calls have returned.
struct Progress(memmap2::MmapMut);

impl Progress {
    fn create(path: &Path) -> std::io::Result<Progress> {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)?;
        f.set_len(8 * PRODUCERS as u64)?;
        // SAFETY: a file only this harness uses; read and written through atomics.
        Ok(Progress(unsafe { memmap2::MmapMut::map_mut(&f)? }))
    }

    fn slot(&self, p: usize) -> &AtomicU64 {
        // SAFETY: the map holds PRODUCERS aligned u64 words.
        unsafe { &*(self.0.as_ptr() as *const AtomicU64).add(p) }
    }

    fn total(&self) -> u64 {
        (0..PRODUCERS)
            .map(|p| self.slot(p).load(Ordering::Acquire))
            .sum()
    }
}

/// The child: floods until killed. Publishes, per producer, how many calls returned.
pub fn flood(
    spool: &Path,
    out: &Path,
    progress: &Path,
    rotate_bytes: Option<u64>,
    policy: FloodPolicy,
) -> std::io::Result<()> {
    let progress = Arc::new(Progress(unsafe_map(progress)?));
    let (writer, _guard) = builder(spool, policy)
        .spool_required(true)
        .build(sink(out, rotate_bytes)?)?;
    let threads: Vec<_> = (0..PRODUCERS)
        .map(|p| {
            let writer = writer.clone();
            let progress = progress.clone();
            std::thread::spawn(move || {
                for seq in 0.. {
                    writer.submit(Level::Info, line(p, seq).as_bytes());
                    progress.slot(p).store(seq + 1, Ordering::Release);
                }
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
    Ok(())
}

fn unsafe_map(path: &Path) -> std::io::Result<memmap2::MmapMut> {
    let f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)?;
    // SAFETY: the progress file is only used through atomics by this harness.
    unsafe { memmap2::MmapMut::map_mut(&f) }
}

/// A small deterministic generator, seeded per run, for kill moments.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 33
    }
}

/// Runs `trials` kill -9 trials. `child` builds the command that runs [`flood`] with
/// (spool, out, progress) paths.
pub fn kill9(
    trials: usize,
    seed: u64,
    rotate_bytes: Option<u64>,
    policy: FloodPolicy,
    child: impl Fn(&Path, &Path, &Path) -> Command,
    mut each: impl FnMut(usize, &Trial),
) -> std::io::Result<Kill9Report> {
    let mut rng = Lcg(seed | 1);
    let mut results = Vec::new();
    for i in 0..trials {
        let dir = tempfile::tempdir()?;
        let (spool, out, progress_path) = (
            dir.path().join("spool"),
            dir.path().join("out.log"),
            dir.path().join("progress"),
        );
        let progress = Progress::create(&progress_path)?;
        let mut cmd = child(&spool, &out, &progress_path);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit());
        let mut guard = crate::sys::child::ChildGuard::spawn(cmd, "the flooding child")?;
        // Kill at a random point: after a random number of returned calls, 1k to 60k.
        let target = 1_000 + rng.next() % 60_000;
        while progress.total() < target {
            if let Some(status) = guard.exited() {
                return Err(std::io::Error::other(format!(
                    "the flooding child exited on its own: {status}"
                )));
            }
            std::thread::yield_now();
        }
        // Our own child, unreaped: the pid is still its own.
        crate::sys::signal::send(guard.pid() as i32, crate::sys::signal::Signal::Kill);
        let _ = guard.wait();
        let returned: Vec<u64> = (0..PRODUCERS)
            .map(|p| progress.slot(p).load(Ordering::Acquire))
            .collect();
        let (_writer, recovery) = builder(&spool, policy)
            .spool_required(true)
            .build(sink(&out, rotate_bytes)?)?;
        let m = recovery.shutdown();
        let trial = check(&out, &returned, m.recovered_records, m.torn_records)?;
        each(i, &trial);
        results.push(trial);
    }
    let sum = |f: fn(&Trial) -> u64| results.iter().map(f).sum::<u64>();
    Ok(Kill9Report {
        schema: 1,
        trials,
        expected: sum(|t| t.expected),
        recovered: sum(|t| t.recovered),
        duplicates: sum(|t| t.duplicates),
        out_of_order: sum(|t| t.out_of_order),
        corrupt: sum(|t| t.corrupt),
        from_spool: sum(|t| t.from_spool),
        torn: sum(|t| t.torn),
        rotate_bytes,
        max_files: results.iter().map(|t| t.files).max().unwrap_or(0),
        policy,
        announced: sum(|t| t.announced),
        passed: results.iter().all(|t| t.passed(policy)),
    })
}

impl Trial {
    /// Every record whose call returned is in the sink once, in its producer's order;
    /// with drops, each missing one is counted in an announced report. A call still in
    /// progress at the kill may have been dropped and announced without having
    /// returned: at most one per producer.
    pub fn passed(&self, policy: FloodPolicy) -> bool {
        let clean = self.duplicates == 0 && self.out_of_order == 0 && self.corrupt == 0;
        let missing = self.expected - self.recovered;
        clean
            && match policy {
                FloodPolicy::Block => missing == 0,
                FloodPolicy::Default => {
                    missing <= self.announced && self.announced <= missing + PRODUCERS as u64
                }
            }
    }
}

fn check(out: &Path, returned: &[u64], from_spool: u64, torn: u64) -> std::io::Result<Trial> {
    let mut text = Vec::new();
    let files = written_files(out)?;
    for f in &files {
        let bytes = std::fs::read(f)?;
        // A file ends on a record boundary (rotation happens between batches); a
        // missing newline would glue two records and show up as corrupt.
        text.extend_from_slice(&bytes);
    }
    let mut next = [0u64; PRODUCERS];
    let mut seen: Vec<std::collections::HashSet<u64>> = vec![Default::default(); PRODUCERS];
    let mut trial = Trial {
        expected: returned.iter().sum(),
        recovered: 0,
        duplicates: 0,
        out_of_order: 0,
        corrupt: 0,
        from_spool,
        torn,
        files: files.len() as u64,
        announced: 0,
    };
    for raw in text.split_inclusive(|&b| b == b'\n') {
        // An in-band drop report, live or from recovery: its count, not a record.
        let report = std::str::from_utf8(raw).ok().and_then(|l| {
            l.split_once(" WARN loglag: dropped ")
                .and_then(|(_, rest)| rest.split(' ').next()?.parse::<u64>().ok())
        });
        if let Some(n) = report {
            trial.announced += n;
            continue;
        }
        let parsed = std::str::from_utf8(raw).ok().and_then(|l| {
            let mut parts = l.splitn(3, ' ');
            let p: usize = parts.next()?.strip_prefix('p')?.parse().ok()?;
            let seq: u64 = parts.next()?.strip_prefix('s')?.parse().ok()?;
            (p < PRODUCERS && line(p, seq) == l).then_some((p, seq))
        });
        let Some((p, seq)) = parsed else {
            trial.corrupt += 1;
            continue;
        };
        if !seen[p].insert(seq) {
            trial.duplicates += 1;
            continue;
        }
        // Order: never backwards. A gap is a record missing (counted below against the
        // calls that returned), not disorder.
        if seq < next[p] {
            trial.out_of_order += 1;
        }
        next[p] = seq + 1;
        if seq < returned[p] {
            trial.recovered += 1;
        }
    }
    Ok(trial)
}

/// RSS of this process in bytes, from /proc.
pub fn rss_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("VmRSS:")
                    .map(|v| v.trim().trim_end_matches(" kB").trim().parse::<u64>().ok())
            })
        })
        .flatten()
        .map_or(0, |kb| kb * 1024)
}

/// What an open-loop soak driver measured.
struct Offered {
    calls: u64,
    seconds: f64,
    max_rss: u64,
    /// Call durations in nanoseconds.
    hist: hdrhistogram::Histogram<u64>,
}

const SOAK_RECORD: usize = 256;

/// Calls `log(i, record)` on a fixed schedule (10 × `sink_rate` bytes per second of
/// 256-byte records) for `duration`, timing each call. Open loop: each record is due at
/// its slot, so a slow call never thins the offer.
fn offer(
    duration: Duration,
    sink_rate: u64,
    baseline: u64,
    mut log: impl FnMut(u64, &[u8]),
) -> Offered {
    let interval = Duration::from_secs_f64(SOAK_RECORD as f64 / (sink_rate * 10) as f64);
    let mut record = vec![b'x'; SOAK_RECORD - 1];
    record.push(b'\n');
    let mut hist =
        hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000_000, 3).expect("bounds");
    let mut max_rss = baseline;
    let start = std::time::Instant::now();
    let mut i: u64 = 0;
    while start.elapsed() < duration {
        let due = start + interval.mul_f64(i as f64);
        while std::time::Instant::now() < due {
            std::hint::spin_loop();
        }
        let t = std::time::Instant::now();
        log(i, &record);
        let _ = hist.record(t.elapsed().as_nanos().max(1) as u64);
        i += 1;
        if i % 4096 == 0 {
            max_rss = max_rss.max(rss_bytes());
        }
    }
    let seconds = start.elapsed().as_secs_f64();
    Offered {
        calls: i,
        seconds,
        max_rss: max_rss.max(rss_bytes()),
        hist,
    }
}

/// Offers 10× what the sink takes, for `duration`, under `overflow`. `baseline` is the
/// process's RSS before any pipeline existed (freed rings stay resident in the allocator,
/// so a per-run baseline would hide them).
pub fn soak(overflow: Overflow, duration: Duration, sink_rate: u64, baseline: u64) -> SoakResult {
    const BUDGET: usize = 8 << 20;
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(loglag::Mode::Async)
        .capacity_bytes(BUDGET)
        .overflow(overflow)
        .shutdown_timeout(Duration::from_millis(200))
        .flush_on_panic(false)
        .build(loglag::sink::WriterSink::new(ThrottledWriter {
            rate: sink_rate,
        }))
        .expect("valid settings");
    let o = offer(duration, sink_rate, baseline, |i, record| {
        writer.submit(
            if i % 10 == 0 {
                Level::Warn
            } else {
                Level::Info
            },
            record,
        )
    });
    let m = guard.shutdown();
    SoakResult {
        policy: format!("{overflow:?}"),
        seconds: o.seconds,
        offered_bytes_per_s: sink_rate * 10,
        sink_bytes_per_s: sink_rate,
        accepted: m.accepted,
        written: m.written_records,
        dropped: m.dropped_records(),
        dropped_queue_full: m.dropped_for(DropReason::QueueFull),
        dropped_shutdown: m.dropped_for(DropReason::Shutdown),
        in_flight_after_shutdown: m.in_flight_records,
        accounted: m.is_accounted(),
        budget_bytes: BUDGET as u64,
        max_rss_growth_bytes: o.max_rss.saturating_sub(baseline),
        call_p50_us: o.hist.value_at_quantile(0.5) as f64 / 1000.0,
        call_p99_us: o.hist.value_at_quantile(0.99) as f64 / 1000.0,
        call_max_us: o.hist.max() as f64 / 1000.0,
    }
}

/// A sink that never returns from its first write: the reader stopped reading.
struct Hung;

impl loglag::sink::Sink for Hung {
    fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
        loop {
            std::thread::park();
        }
    }
}

/// Fills a small budget behind a hung sink, then times `calls` more log calls.
/// Not for `Overflow::Block`, which waits for the sink by definition.
pub fn hung_sink(overflow: Overflow, calls: u64) -> HungResult {
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(loglag::Mode::Async)
        .capacity_bytes(64 << 10)
        .overflow(overflow)
        .shutdown_timeout(Duration::from_millis(50))
        .flush_on_panic(false)
        .build(Hung)
        .expect("valid settings");
    let record = [b'y'; 255];
    let mut waits = Vec::with_capacity(calls as usize);
    for i in 0..(calls + 1024) {
        let level = if i % 10 == 0 {
            Level::Error
        } else {
            Level::Info
        };
        let t = std::time::Instant::now();
        writer.submit(level, &record);
        if i >= 1024 {
            waits.push(t.elapsed().as_nanos() as u64);
        }
    }
    let p99 = crate::stats::quantile(&mut waits, 0.99).unwrap_or(0);
    let max = Duration::from_nanos(waits.iter().copied().max().unwrap_or(0));
    let m = guard.shutdown();
    HungResult {
        policy: format!("{overflow:?}"),
        calls,
        p99_wait_us: p99 as f64 / 1000.0,
        max_wait_us: max.as_secs_f64() * 1e6,
        dropped: m.dropped_records(),
        all_calls: calls + 1024,
        dropped_queue_full: m.dropped_for(DropReason::QueueFull),
        dropped_shutdown: m.dropped_for(DropReason::Shutdown),
        accounted: m.is_accounted(),
    }
}

/// A sink that takes at most `rate` bytes per second (the behaviour under test: a slow
/// collector), by sleeping after each write. One writer for loglag (through
/// `WriterSink`) and for the peers, so both meet the same collector.
struct ThrottledWriter {
    rate: u64,
}

impl std::io::Write for ThrottledWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = buf.len().min(64 << 10);
        std::thread::sleep(Duration::from_secs_f64(n as f64 / self.rate as f64));
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The same soak for `tracing_appender::non_blocking` with its defaults (lossy, 128,000
/// lines), for comparison in one harness. Drops come from its `error_counter`; records
/// still queued at the end cannot be counted: it has no such figure.
pub fn soak_tracing_appender(duration: Duration, sink_rate: u64, baseline: u64) -> SoakResult {
    use std::io::Write as _;
    let (mut writer, guard) = tracing_appender::non_blocking(ThrottledWriter { rate: sink_rate });
    let o = offer(duration, sink_rate, baseline, |_, record| {
        let _ = writer.write_all(record);
    });
    let dropped = writer.error_counter().dropped_lines() as u64;
    // Its guard waits at most 1 s (hard-coded), then abandons the rest without a count.
    drop(guard);
    SoakResult {
        policy: "tracing-appender (lossy, defaults)".into(),
        seconds: o.seconds,
        offered_bytes_per_s: sink_rate * 10,
        sink_bytes_per_s: sink_rate,
        accepted: o.calls,
        written: 0,
        dropped,
        dropped_queue_full: dropped,
        dropped_shutdown: 0,
        in_flight_after_shutdown: 0,
        accounted: false,
        budget_bytes: 0,
        max_rss_growth_bytes: o.max_rss.saturating_sub(baseline),
        call_p50_us: o.hist.value_at_quantile(0.5) as f64 / 1000.0,
        call_p99_us: o.hist.value_at_quantile(0.99) as f64 / 1000.0,
        call_max_us: o.hist.max() as f64 / 1000.0,
    }
}

fn timed_calls(writer: &loglag::NonBlocking, calls: u64) -> Duration {
    let record = [b'f'; 199];
    let mut max = Duration::ZERO;
    for i in 0..calls {
        let t = std::time::Instant::now();
        writer.submit(
            if i % 50 == 0 {
                Level::Error
            } else {
                Level::Info
            },
            &[&record[..], b"\n"].concat(),
        );
        max = max.max(t.elapsed());
    }
    max
}

fn fault_result(fault: &str, calls: u64, max: Duration, m: &loglag::Metrics) -> FaultResult {
    FaultResult {
        fault: fault.into(),
        calls,
        max_wait_us: max.as_secs_f64() * 1e6,
        io_errors: m.write_errors,
        dropped: m.dropped_records(),
        written: m.written_records,
        accounted: m.is_accounted(),
    }
}

/// ENOSPC (`/dev/full`) with and without a fallback, and EPIPE (a FIFO whose reader
/// exits after 100 bytes), each under the default policy.
pub fn sink_faults(calls: u64) -> std::io::Result<Vec<FaultResult>> {
    use loglag::sink::{Fallback, FdSink, WriterSink};
    let mut out = Vec::new();
    let build = || {
        NonBlockingBuilder::default()
            .mode(loglag::Mode::Async)
            .flush_on_panic(false)
    };

    let (writer, guard) = build().build(FdSink::append("/dev/full")?)?;
    let max = timed_calls(&writer, calls);
    out.push(fault_result(
        "ENOSPC (/dev/full), no fallback",
        calls,
        max,
        &guard.shutdown(),
    ));

    let chain = Fallback::new(FdSink::append("/dev/full")?).then(WriterSink::new(std::io::sink()));
    let (writer, guard) = build().build(chain)?;
    let max = timed_calls(&writer, calls);
    out.push(fault_result(
        "ENOSPC (/dev/full) → fallback",
        calls,
        max,
        &guard.shutdown(),
    ));

    let dir = tempfile::tempdir()?;
    let fifo = dir.path().join("sink.fifo");
    crate::reader::ensure_fifo(&fifo)?;
    let mut reader = Command::new("head")
        .arg("-c")
        .arg("100")
        .arg(&fifo)
        .stdout(Stdio::null())
        .spawn()?;
    let (writer, guard) = build().build(FdSink::fifo(&fifo, None)?)?;
    let max = timed_calls(&writer, calls);
    let m = guard.shutdown();
    let _ = reader.wait();
    out.push(fault_result("EPIPE (FIFO reader exits)", calls, max, &m));

    // A sink that logs into its own pipeline on every write (an instrumented HTTP or
    // OTLP client), under `Block` with a 4 KiB budget: it must not deadlock.
    let log = std::sync::Arc::new(std::sync::OnceLock::<loglag::NonBlocking>::new());
    let sink = LoggingSink(log.clone());
    let (writer, guard) = build()
        .overflow(Overflow::Block)
        .capacity_bytes(4096)
        .build(sink)?;
    let _ = log.set(writer.clone());
    let max = timed_calls(&writer, calls);
    let m = guard.shutdown();
    out.push(fault_result(
        "sink logs into its own pipeline (Block, 4 KiB)",
        calls,
        max,
        &m,
    ));

    // A sink that panics on every 100th write: each panic costs its batch (io_error),
    // never the writer thread.
    let (writer, guard) = build().overflow(Overflow::Block).build(PanickingSink(0))?;
    let max = timed_calls(&writer, calls);
    out.push(fault_result(
        "sink panics every 100th write (Block)",
        calls,
        max,
        &guard.shutdown(),
    ));
    Ok(out)
}

struct LoggingSink(std::sync::Arc<std::sync::OnceLock<loglag::NonBlocking>>);

impl loglag::sink::Sink for LoggingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if let Some(w) = self.0.get() {
            w.submit(Level::Debug, b"sink: wrote a batch\n");
        }
        Ok(buf.len())
    }
}

struct PanickingSink(u64);

impl loglag::sink::Sink for PanickingSink {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += 1;
        if self.0 % 100 == 0 {
            panic!("torture: the sink panics on write {}", self.0);
        }
        Ok(buf.len())
    }
}
