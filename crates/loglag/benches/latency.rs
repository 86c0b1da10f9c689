//! Per-call latency distributions, measured as Quill publishes them: bursts of calls,
//! each call timed alone with the TSC, then a pause, so that no queue saturates and
//! what is timed is the caller's cost. Each logger runs in its own process (ftlog and
//! fast_log both install the global `log` logger), and the loggers take turns round
//! after round, so that the machine's noise falls on all of them alike; the table
//! gives each percentile's median over the rounds.
//!
//! ```sh
//! cargo bench -p loglag --bench latency                      # every logger, 3 rounds
//! cargo bench -p loglag --bench latency -- --rounds 5 --only loglag_macro,noop
//! cargo bench -p loglag --bench latency -- --throughput      # events/s into a file
//! cargo bench -p loglag --bench latency -- --rss             # resident memory, idle and used
//! cargo bench -p loglag --bench latency -- --batched --only noop,ticklog,loglag_macro
//!                                    # bursts of 16 timed together (issue 34's harness)
//! cargo bench -p loglag --bench latency -- --only breakdown  # the macro's call taken apart
//! cargo bench -p loglag --bench latency -- --by-position --only ticklog,loglag_macro
//!                                    # also percentiles by a call's place in its burst
//! cargo bench -p loglag --bench latency -- --batched --by-phase --only ticklog,loglag_macro
//!                                    # also the p50 of every 1,000 bursts, in order:
//!                                    # the queue filling, then full
//! LATENCY_CAPACITY_BYTES=1048576 cargo bench -p loglag --bench latency -- --only loglag_macro
//!                                    # loglag's rows with another capacity_bytes (or
//!                                    # LATENCY_BATCH_BYTES for batch_bytes,
//!                                    # LATENCY_THREAD_RING_BYTES=0 for one shared ring)
//! LATENCY_MODE=format-only cargo bench -p loglag --bench latency -- --batched --only loglag_layer
//!                                    # loglag's rows in another mode: format-only
//!                                    # captures each record and queues none, which
//!                                    # splits a row's cost into capture and queue
//! LATENCY_DUMP=/tmp/bursts.txt target/release/deps/latency-<hash> --child loglag_macro --dir /tmp/x --batched
//!                                    # one child's bursts, in the order they ran: each
//!                                    # burst's mean per call in ns, one per line (where
//!                                    # its slow bursts fall: clustered, periodic)
//! ```
//!
//! Every logger writes the same event, a message and three fields (`request_id`,
//! `user`, `latency_ms`), to a file in one temporary directory; JSON where the logger
//! has it (loglag, tracing-subscriber, slog-json), its own text otherwise.

#[path = "../tests/it/support/procfs.rs"]
mod procfs;
#[allow(dead_code)]
mod support;

use std::hint::black_box;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BURST: usize = 16;
const BURSTS: usize = 20_000;
const WARM_UP_BURSTS: usize = 2_000;
const PAUSE: Duration = Duration::from_micros(50);

/// Rows that take the macro's call apart (`--only breakdown`, not in the default run):
/// what its clocks cost, the call with the pipeline off and with capture only (the
/// record built, timestamp included, but not pushed), and both back to back in a loop
/// (`loop_*`: every column is the loop's mean per call, no timer in it).
const BREAKDOWN: [&str; 16] = [
    "noop",
    "rdtsc",
    "clock_coarse",
    "loglag_macro_off",
    "loglag_macro_capture_only",
    "loglag_macro",
    "loop_capture_only",
    "loop_macro",
    "loop_macro_default",
    "loop_ticklog",
    "loop_tracing_floor",
    "loop_tracing_visit_floor",
    "loop_layer",
    "loop_capture_only_16k",
    "loop_macro_16k",
    "loop_memcpy_16k",
];

const LOGGERS: [&str; 18] = [
    "noop",
    "ticklog",
    "loglag_macro",
    "loglag_macro_2_threads",
    "tracing_floor",
    "tracing_visit_floor",
    "loglag_layer",
    "loglag_fmt_writer",
    "tracing_appender",
    "slog_async",
    "ftlog",
    "spdlog_async",
    "fast_log",
    "mutex_bufwriter",
    "loglag_macro_16k",
    "memcpy_16k",
    "memcpy_16k_ring",
    "memcpy_16k_ring_read",
];

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    let batched = args.iter().any(|a| a == "--batched");
    BATCHED.store(batched, std::sync::atomic::Ordering::Relaxed);
    let by_position = args.iter().any(|a| a == "--by-position");
    BY_POSITION.store(by_position, std::sync::atomic::Ordering::Relaxed);
    let by_phase = args.iter().any(|a| a == "--by-phase");
    BY_PHASE.store(by_phase, std::sync::atomic::Ordering::Relaxed);
    if let Some(name) = value("--child") {
        let dir = PathBuf::from(value("--dir").expect("--dir"));
        return child(&name, &dir);
    }
    if args.iter().any(|a| a == "--throughput") {
        return throughput();
    }
    if args.iter().any(|a| a == "--rss") {
        return rss_table();
    }
    let rounds: usize = value("--rounds").map_or(3, |r| r.parse().expect("--rounds N"));
    let only: Vec<String> = match value("--only") {
        Some(list) if list == "breakdown" => BREAKDOWN.iter().map(|s| s.to_string()).collect(),
        Some(list) => list.split(',').map(str::to_owned).collect(),
        None => LOGGERS.iter().map(|s| s.to_string()).collect(),
    };
    let dir = tempfile::tempdir().expect("temporary directory");
    let exe = std::env::current_exe().expect("own path");
    let mut results: Vec<(String, Vec<[f64; 5]>)> =
        only.iter().map(|n| (n.clone(), Vec::new())).collect();
    for round in 1..=rounds {
        for (name, per_round) in &mut results {
            eprint!("round {round}/{rounds}: {name} … ");
            let out = Command::new(&exe)
                .args(["--child", name, "--dir"])
                .arg(dir.path())
                .args(batched.then_some("--batched"))
                .args(by_position.then_some("--by-position"))
                .args(by_phase.then_some("--by-phase"))
                .output()
                .expect("run a child");
            let text = String::from_utf8_lossy(&out.stdout);
            for line in String::from_utf8_lossy(&out.stderr).lines() {
                if line.starts_with("position ") || line.starts_with("phases ") {
                    eprintln!("\n  {name}, {line}");
                }
            }
            let Some(line) = text.lines().find(|l| l.starts_with("RESULT ")) else {
                panic!(
                    "{name} gave no result: {}",
                    String::from_utf8_lossy(&out.stderr)
                );
            };
            let v: Vec<f64> = line[7..]
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            eprintln!("p50 {:.0} ns", v[0]);
            per_round.push([v[0], v[1], v[2], v[3], v[4]]);
        }
    }
    let median = |mut xs: Vec<f64>| {
        xs.sort_by(f64::total_cmp);
        xs[xs.len() / 2]
    };
    let reference = results
        .iter()
        .find(|(n, _)| n == "tracing_appender")
        .map(|(_, r)| median(r.iter().map(|x| x[0]).collect()));
    if batched {
        println!(
            "\nbursts of {BURST} calls timed together, each burst one sample of its mean per call, {BATCHED_PAUSE:?} pause, {BATCHED_BURSTS} bursts per round (16 KiB rows: each call timed, {BIG_PAUSE:?} pause), {rounds} rounds (median of rounds); the noop row is the timer's cost over 16 calls\n"
        );
    } else {
        println!(
            "\nbursts of {BURST} calls, {PAUSE:?} pause, {BURSTS} bursts per round ({BIG_PAUSE:?} and {BIG_BURSTS} for 16 KiB), {rounds} rounds (median of rounds); the noop row is the timer's own cost, included in every row\n"
        );
    }
    println!(
        "| logger | p50 ns | p99 ns | p99.9 ns | drops | p50 vs tracing_appender | mean of fastest 99%, ns |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, per_round) in &results {
        let col = |i: usize| median(per_round.iter().map(|x| x[i]).collect());
        let ratio = reference.map_or(String::from("–"), |r| format!("{:.2}×", col(0) / r));
        println!(
            "| {name} | {:.0} | {:.0} | {:.0} | {:.0} | {ratio} | {:.1} |",
            col(0),
            col(1),
            col(2),
            col(3),
            col(4)
        );
    }
}

/// The counter the timings are read from: the TSC on x86-64, the virtual counter
/// (`CNTVCT_EL0`) on aarch64, the monotonic clock elsewhere.
#[cfg(target_arch = "aarch64")]
#[inline(always)]
fn ticks() -> u64 {
    let t: u64;
    // SAFETY: reading CNTVCT_EL0 is allowed at EL0 on Linux; `isb` keeps the timed
    // call from being reordered around the reading.
    unsafe { core::arch::asm!("isb", "mrs {t}, cntvct_el0", t = out(reg) t) };
    t
}

#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
#[inline(always)]
fn ticks() -> u64 {
    static ANCHOR: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    ANCHOR.get_or_init(Instant::now).elapsed().as_nanos() as u64
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn ticks() -> u64 {
    // SAFETY: `lfence` and `rdtsc` have no preconditions on x86-64; the fence keeps
    // the timed call from being reordered around the reading.
    unsafe {
        core::arch::x86_64::_mm_lfence();
        let t = core::arch::x86_64::_rdtsc();
        core::arch::x86_64::_mm_lfence();
        t
    }
}

/// TSC ticks per nanosecond, measured against `Instant` over 50 ms.
fn ticks_per_ns() -> f64 {
    let (t0, i0) = (ticks(), Instant::now());
    while i0.elapsed() < Duration::from_millis(50) {}
    (ticks() - t0) as f64 / i0.elapsed().as_nanos() as f64
}

/// Times `call` in bursts; returns (p50, p99, p99.9) in ns.
/// Bytes one thread writes and another reads, handed over by release/acquire on an
/// index (the coherence experiment), as loglag's rings hand over records.
struct SharedBytes(std::cell::UnsafeCell<Vec<u8>>);
// SAFETY: each slot is written or read by one thread at a time, ordered by the
// release/acquire pairs in `memcpy_16k_ring_read`.
unsafe impl Sync for SharedBytes {}

fn measure(call: impl FnMut(u64)) -> [f64; 4] {
    measure_with(call, PAUSE, BURSTS)
}

/// 16 KiB events need a longer pause for the writer to drain a burst (256 KiB) before
/// the next, or the queue saturates and the drop path is what gets timed.
const BIG_PAUSE: Duration = Duration::from_millis(1);
const BIG_BURSTS: usize = 2_000;

/// `--batched`: each burst of 16 calls is timed as a whole and counts as one sample of
/// its mean per call, with a 1 µs pause after it, 12,500 bursts (200,000 calls): the
/// harness issue 34 compared ticklog with. The timer's cost is spread over 16 calls,
/// so differences of a few ns show; a tail is a burst's, not one call's.
static BATCHED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// `--by-position`: the per-call harness also gives each call's position in its burst
/// its own percentiles (on stderr), to tell the first call after a pause from the rest.
static BY_POSITION: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// `--by-phase`: the batched harness also gives the p50 of every 1,000 bursts, in
/// the order they ran (on stderr): a logger that keeps records shows the queue filling
/// (each call keeps its record) and then full (most calls drop theirs), and the run's
/// p50 falls in whichever phase holds more bursts.
static BY_PHASE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
const PHASE_BURSTS: usize = 1_000;
const BATCHED_PAUSE: Duration = Duration::from_micros(1);
const BATCHED_BURSTS: usize = 200_000 / BURST;

fn measure_with(call: impl FnMut(u64), pause: Duration, bursts: usize) -> [f64; 4] {
    if BATCHED.load(std::sync::atomic::Ordering::Relaxed) && pause == PAUSE {
        measure_batched(call)
    } else {
        measure_each(call, pause, bursts)
    }
}

fn measure_batched(mut call: impl FnMut(u64)) -> [f64; 4] {
    let per_ns = ticks_per_ns();
    let pause = (BATCHED_PAUSE.as_nanos() as f64 * per_ns) as u64;
    let mut samples = Vec::with_capacity(BATCHED_BURSTS);
    let mut i = 0u64;
    for burst in 0..WARM_UP_BURSTS + BATCHED_BURSTS {
        let t0 = ticks();
        for _ in 0..BURST {
            call(i);
            i += 1;
        }
        let t1 = ticks();
        if burst >= WARM_UP_BURSTS {
            samples.push(t1 - t0);
        }
        let until = ticks() + pause;
        while ticks() < until {
            std::hint::spin_loop();
        }
    }
    let per_call = |t: u64| t as f64 / per_ns / BURST as f64;
    if let Ok(path) = std::env::var("LATENCY_DUMP") {
        let text: String = samples
            .iter()
            .map(|&t| format!("{:.1}\n", per_call(t)))
            .collect();
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("LATENCY_DUMP={path}: {e}"));
    }
    if BY_PHASE.load(std::sync::atomic::Ordering::Relaxed) {
        let phases: Vec<String> = samples
            .chunks(PHASE_BURSTS)
            .map(|chunk| {
                let mut chunk = chunk.to_vec();
                chunk.sort_unstable();
                format!("{:.0}", per_call(quantile(&chunk, 0.5)))
            })
            .collect();
        eprintln!(
            "phases (p50 ns of each {PHASE_BURSTS} bursts, in order): {}",
            phases.join(" ")
        );
    }
    samples.sort_unstable();
    let q = |p: f64| per_call(quantile(&samples, p));
    let fastest = &samples[..samples.len() * 99 / 100];
    let mean = fastest.iter().map(|&t| per_call(t)).sum::<f64>() / fastest.len() as f64;
    [q(0.50), q(0.99), q(0.999), mean]
}

/// The `p` quantile of sorted `samples` (nearest rank).
fn quantile(samples: &[u64], p: f64) -> u64 {
    samples[((samples.len() as f64 * p).ceil() as usize).clamp(1, samples.len()) - 1]
}

fn measure_each(mut call: impl FnMut(u64), pause: Duration, bursts: usize) -> [f64; 4] {
    let per_ns = ticks_per_ns();
    let pause = (pause.as_nanos() as f64 * per_ns) as u64;
    let warm_up = WARM_UP_BURSTS.min(bursts);
    let mut samples = Vec::with_capacity(bursts * BURST);
    let mut i = 0u64;
    for burst in 0..warm_up + bursts {
        for _ in 0..BURST {
            let t0 = ticks();
            call(i);
            let t1 = ticks();
            if burst >= warm_up {
                samples.push(t1 - t0);
            }
            i += 1;
        }
        let until = ticks() + pause;
        while ticks() < until {
            std::hint::spin_loop();
        }
    }
    if BY_POSITION.load(std::sync::atomic::Ordering::Relaxed) {
        for position in [0, 1, BURST / 2, BURST - 1] {
            let mut at: Vec<u64> = samples
                .iter()
                .skip(position)
                .step_by(BURST)
                .copied()
                .collect();
            at.sort_unstable();
            let q = |p: f64| quantile(&at, p) as f64 / per_ns;
            eprintln!(
                "position {position}: p50 {:.0} ns, p99 {:.0}, p99.9 {:.0}",
                q(0.5),
                q(0.99),
                q(0.999)
            );
        }
    }
    samples.sort_unstable();
    let q = |p: f64| quantile(&samples, p) as f64 / per_ns;
    // The timer's steps are ~10 ns on this VM, too coarse for a difference of a few
    // ns between builds; the mean of the fastest 99% resolves one.
    let fastest = &samples[..samples.len() * 99 / 100];
    let mean = fastest.iter().sum::<u64>() as f64 / fastest.len() as f64 / per_ns;
    [q(0.50), q(0.99), q(0.999), mean]
}

fn file(dir: &Path, name: &str) -> PathBuf {
    dir.join(format!("{name}-{}.log", std::process::id()))
}

fn loglag_file(dir: &Path, name: &str) -> (loglag::NonBlocking, loglag::WorkerGuard) {
    let mode = match std::env::var("LATENCY_MODE") {
        Ok(mode) => mode
            .parse()
            .unwrap_or_else(|e| panic!("LATENCY_MODE={mode:?}: {e}")),
        Err(_) => loglag::Mode::Async,
    };
    let mut builder = loglag::NonBlockingBuilder::default().mode(mode);
    if let Some(bytes) = std::env::var("LATENCY_CAPACITY_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        builder = builder.capacity_bytes(bytes);
    }
    if let Some(bytes) = std::env::var("LATENCY_THREAD_RING_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        builder = builder.thread_ring_bytes(bytes);
    }
    if let Some(bytes) = std::env::var("LATENCY_BATCH_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        builder = builder.batch_bytes(bytes);
    }
    builder
        .build(loglag::sink::FdSink::append(file(dir, name)).expect("log file"))
        .unwrap()
}

/// The benches' event (`support::event!`) through loglag's own macro.
macro_rules! macro_event {
    ($i:expr) => {
        loglag::info!(
            request_id = $i,
            user = "ann",
            latency_ms = 12.5,
            "request completed"
        )
    };
}

/// What any tracing Layer pays before it does anything: a registry whose one Layer
/// does nothing.
struct Floor;
impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Floor {}

/// What a Layer that reads the event's values pays before it does anything with
/// them: `Floor`, plus tracing's visit of every field (each value handed over and
/// dropped; the message's `Debug` is not run).
struct VisitFloor;
impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for VisitFloor {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Drop;
        impl tracing::field::Visit for Drop {
            fn record_debug(&mut self, _: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                black_box(value);
            }
            fn record_str(&mut self, _: &tracing::field::Field, value: &str) {
                black_box(value);
            }
            fn record_i64(&mut self, _: &tracing::field::Field, value: i64) {
                black_box(value);
            }
            fn record_u64(&mut self, _: &tracing::field::Field, value: u64) {
                black_box(value);
            }
            fn record_f64(&mut self, _: &tracing::field::Field, value: f64) {
                black_box(value);
            }
            fn record_bool(&mut self, _: &tracing::field::Field, value: bool) {
                black_box(value);
            }
        }
        event.record(&mut Drop);
    }
}

fn report(p: [f64; 4], drops: u64) {
    println!("RESULT {} {} {} {drops} {}", p[0], p[1], p[2], p[3]);
}

fn child(name: &str, dir: &Path) {
    run_child(name, dir);
    // The loops write hundreds of MB each: gone with the child, not with the run.
    let _ = std::fs::remove_file(file(dir, name));
}

fn run_child(name: &str, dir: &Path) {
    use tracing_subscriber::prelude::*;
    match name {
        "rss_loglag" | "rss_tracing_appender" => rss_child(name, dir),
        "noop" => report(
            measure(|i| {
                black_box(i);
            }),
            0,
        ),
        #[cfg(target_arch = "x86_64")]
        "rdtsc" => report(
            measure(|_| {
                // SAFETY: `rdtsc` has no preconditions on x86-64.
                black_box(unsafe { core::arch::x86_64::_rdtsc() });
            }),
            0,
        ),
        #[cfg(target_os = "linux")]
        "clock_coarse" => report(
            measure(|_| {
                let mut ts = libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                };
                // SAFETY: `ts` is a valid out-pointer.
                unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC_COARSE, &mut ts) };
                black_box(ts.tv_nsec);
            }),
            0,
        ),
        "loglag_macro_off" | "loglag_macro_capture_only" => {
            let mode = if name == "loglag_macro_off" {
                loglag::Mode::Off
            } else {
                loglag::Mode::FormatOnly
            };
            let (writer, _guard) = loglag::NonBlockingBuilder::default()
                .mode(mode)
                .build(loglag::sink::FdSink::append(file(dir, name)).expect("log file"))
                .unwrap();
            loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
            report(measure(|i| macro_event!(i)), 0);
        }
        // Back to back, no pause: the mean of a loop of 200,000 calls (the best of 50
        // loops), free of the timer's cost and steps. Capture only, or the whole call
        // with a thread ring large enough that a loop never fills it; the writer drains
        // between loops.
        "loop_capture_only" | "loop_macro" | "loop_capture_only_16k" | "loop_macro_16k" => {
            let mode = if name.starts_with("loop_macro") {
                loglag::Mode::Async
            } else {
                loglag::Mode::FormatOnly
            };
            let (writer, guard) = loglag::NonBlockingBuilder::default()
                .mode(mode)
                .capacity_bytes(256 << 20)
                .thread_ring_bytes(64 << 20)
                .build(loglag::sink::FdSink::append(file(dir, name)).expect("log file"))
                .unwrap();
            loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
            let big = "x".repeat(16 << 10);
            let (calls, call): (u64, &dyn Fn(u64)) = if name.ends_with("_16k") {
                // 32 MiB a loop: within the thread ring.
                (2_000, &|_| loglag::info!(payload = big.as_str(), "big"))
            } else {
                (200_000, &|i| macro_event!(i))
            };
            let mut best = f64::MAX;
            for _ in 0..50 {
                let started = Instant::now();
                for i in 0..calls {
                    call(i);
                }
                best = best.min(started.elapsed().as_nanos() as f64 / calls as f64);
                writer
                    .flush(Duration::from_secs(10))
                    .expect("the loop drains");
            }
            report([best; 4], guard.shutdown().dropped_records());
        }
        // The default pipeline, back to back in loops of 2,000 calls (about 200 KiB,
        // within the default thread ring), draining between loops: what `perf record`
        // should look at for the caller's cost, free of the timer and of page faults.
        "loop_macro_default" | "loop_layer" | "loop_tracing_floor" | "loop_tracing_visit_floor" => {
            let (writer, guard) = loglag_file(dir, name);
            loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
            let loops = || {
                let mut best = f64::MAX;
                for _ in 0..2_000 {
                    let started = Instant::now();
                    for i in 0..2_000u64 {
                        if name == "loop_macro_default" {
                            macro_event!(i);
                        } else {
                            event!(i);
                        }
                    }
                    best = best.min(started.elapsed().as_nanos() as f64 / 2_000.0);
                    writer
                        .flush(Duration::from_secs(10))
                        .expect("the loop drains");
                }
                best
            };
            let best = match name {
                "loop_layer" => tracing::subscriber::with_default(
                    tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer.clone())),
                    loops,
                ),
                "loop_tracing_floor" => tracing::subscriber::with_default(
                    tracing_subscriber::registry().with(Floor),
                    loops,
                ),
                "loop_tracing_visit_floor" => tracing::subscriber::with_default(
                    tracing_subscriber::registry().with(VisitFloor),
                    loops,
                ),
                _ => loops(),
            };
            report([best; 4], guard.shutdown().dropped_records());
        }
        // The floor for `loop_macro_16k`: each 16 KiB copied into the next slot of a
        // 64 MiB region (the thread ring it writes), so the destination is beyond the
        // caches as the ring's is, once into a hot buffer first (the capture).
        "loop_memcpy_16k" => {
            let big = vec![b'x'; 16 << 10];
            let mut hot = vec![0u8; 16 << 10];
            let mut region = vec![0u8; 64 << 20];
            let slots = region.len() / big.len();
            let mut slot = 0;
            let mut best = f64::MAX;
            for _ in 0..50 {
                let started = Instant::now();
                for _ in 0..2_000 {
                    hot.copy_from_slice(black_box(&big));
                    region[slot * big.len()..][..big.len()].copy_from_slice(black_box(&hot));
                    black_box(&region);
                    slot = (slot + 1) % slots;
                }
                best = best.min(started.elapsed().as_nanos() as f64 / 2_000.0);
            }
            report([best; 4], 0);
        }
        "loglag_macro" => {
            let (writer, guard) = loglag_file(dir, name);
            loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
            let p = measure(|i| macro_event!(i));
            report(p, guard.shutdown().dropped_records());
        }
        "loglag_macro_2_threads" => {
            // A second producer logs the same bursts meanwhile (untimed): the two
            // contend for the ring's head.
            let (writer, guard) = loglag_file(dir, name);
            loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
            let stop = std::sync::atomic::AtomicBool::new(false);
            let p = std::thread::scope(|s| {
                s.spawn(|| {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        measure_with(
                            |i| {
                                loglag::info!(
                                    request_id = i,
                                    user = "bob",
                                    latency_ms = 1.0,
                                    "other"
                                )
                            },
                            PAUSE,
                            BURSTS / 10,
                        );
                    }
                });
                let p = measure(|i| macro_event!(i));
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
                p
            });
            report(p, guard.shutdown().dropped_records());
        }
        "loglag_layer" => {
            let (writer, guard) = loglag_file(dir, name);
            let sub = tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer));
            let p = tracing::subscriber::with_default(sub, || measure(|i| event!(i)));
            report(p, guard.shutdown().dropped_records());
        }
        "loglag_fmt_writer" => {
            let (writer, guard) = loglag_file(dir, name);
            let sub = tracing_subscriber::fmt()
                .json()
                .with_writer(writer)
                .finish();
            let p = tracing::subscriber::with_default(sub, || measure(|i| event!(i)));
            report(p, guard.shutdown().dropped_records());
        }
        "tracing_appender" => {
            let f = std::fs::File::create(file(dir, name)).unwrap();
            let (writer, guard) = tracing_appender::non_blocking(f);
            let errors = writer.error_counter();
            let sub = tracing_subscriber::fmt()
                .json()
                .with_writer(writer)
                .finish();
            let p = tracing::subscriber::with_default(sub, || measure(|i| event!(i)));
            drop(guard);
            report(p, errors.dropped_lines() as u64);
        }
        "slog_async" => {
            use slog::Drain;
            let f = std::fs::File::create(file(dir, name)).unwrap();
            let drain = slog_json::Json::default(f).fuse();
            let (drain, guard) = slog_async::Async::new(drain).build_with_guard();
            let log = slog::Logger::root(drain.fuse(), slog::o!());
            let p = measure(
                |i| slog::info!(log, "request completed"; "request_id" => i, "user" => "ann", "latency_ms" => 12.5),
            );
            drop(log);
            drop(guard);
            report(p, 0);
        }
        // ticklog 0.1.2: a per-thread buffer and a drain thread that formats, as
        // loglag's macro; the same message and fields as format arguments. It counts
        // no drops, so the drops column is what the file lacks: calls made minus
        // lines written, read after its guard has drained and joined.
        "ticklog" | "loop_ticklog" => {
            let path = file(dir, name);
            let guard = ticklog::configure! {
                sink: ticklog::FileSink::truncate(&path).expect("log file"),
                max_level: ticklog::Level::Info,
            }
            .expect("ticklog builds once per process");
            if name == "loop_ticklog" {
                // As `loop_macro_default`: loops of 2,000 calls, the best loop's mean.
                // ticklog has no flush to wait on, so each loop is followed by a
                // 2 ms pause for its drain thread.
                let mut best = f64::MAX;
                for _ in 0..2_000 {
                    let started = Instant::now();
                    for i in 0..2_000u64 {
                        ticklog::info!(
                            "request completed request_id={} user={} latency_ms={}",
                            i,
                            "ann",
                            12.5
                        );
                    }
                    best = best.min(started.elapsed().as_nanos() as f64 / 2_000.0);
                    std::thread::sleep(Duration::from_millis(2));
                }
                drop(guard);
                return report([best; 4], 0);
            }
            let p = measure(|i| {
                ticklog::info!(
                    "request completed request_id={} user={} latency_ms={}",
                    i,
                    "ann",
                    12.5
                )
            });
            drop(guard);
            let bursts = if BATCHED.load(std::sync::atomic::Ordering::Relaxed) {
                BATCHED_BURSTS
            } else {
                BURSTS
            };
            let calls = ((WARM_UP_BURSTS + bursts) * BURST) as u64;
            let lines =
                std::fs::read(&path).map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count());
            report(p, calls.saturating_sub(lines as u64));
        }
        // The loglag_layer row minus this one is loglag's own cost.
        "tracing_floor" => {
            let sub = tracing_subscriber::registry().with(Floor);
            let p = tracing::subscriber::with_default(sub, || measure(|i| event!(i)));
            report(p, 0);
        }
        // The loglag_layer row minus this one is what loglag does with the values.
        "tracing_visit_floor" => {
            let sub = tracing_subscriber::registry().with(VisitFloor);
            let p = tracing::subscriber::with_default(sub, || measure(|i| event!(i)));
            report(p, 0);
        }
        "ftlog" => {
            let f = std::fs::File::create(file(dir, name)).unwrap();
            let guard = ftlog::builder()
                .bounded(100_000, false)
                .root(f)
                .try_init()
                .expect("ftlog");
            let p = measure(|i| {
                log::info!(
                    "request completed request_id={} user={} latency_ms={}",
                    i,
                    "ann",
                    12.5
                )
            });
            drop(guard);
            report(p, 0);
        }
        "fast_log" => {
            let path = file(dir, name);
            fast_log::init(
                fast_log::Config::new()
                    .file(path.to_str().unwrap())
                    .chan_len(Some(100_000)),
            )
            .expect("fast_log");
            let p = measure(|i| {
                log::info!(
                    "request completed request_id={} user={} latency_ms={}",
                    i,
                    "ann",
                    12.5
                )
            });
            log::logger().flush();
            report(p, 0);
        }
        "spdlog_async" => {
            use spdlog::sink::{AsyncPoolSink, FileSink};
            let file_sink = FileSink::builder()
                .path(file(dir, name))
                .build_arc()
                .unwrap();
            let sink = AsyncPoolSink::builder()
                .sink(file_sink)
                .build_arc()
                .unwrap();
            let logger = spdlog::Logger::builder().sink(sink).build_arc().unwrap();
            let p = measure(|i| {
                spdlog::info!(logger: logger,
                    "request completed request_id={} user={} latency_ms={}", i, "ann", 12.5)
            });
            logger.flush();
            report(p, 0);
        }
        "mutex_bufwriter" => {
            // What people write by hand: format on the caller, under a lock.
            let f = std::fs::File::create(file(dir, name)).unwrap();
            let w = Mutex::new(std::io::BufWriter::new(f));
            let p = measure(|i| {
                let micros = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_micros();
                let mut w = w.lock().unwrap();
                let _ = writeln!(
                    w,
                    "{{\"timestamp\":{micros},\"level\":\"INFO\",\"fields\":{{\"message\":\"request completed\",\"request_id\":{i},\"user\":\"ann\",\"latency_ms\":12.5}},\"target\":\"latency\"}}"
                );
            });
            let _ = w.lock().unwrap().flush();
            report(p, 0);
        }
        "loglag_macro_16k" => {
            let big = "x".repeat(16 << 10);
            let (writer, guard) = loglag::NonBlockingBuilder::default()
                .mode(loglag::Mode::Async)
                .capacity_bytes(64 << 20)
                .build(loglag::sink::FdSink::append(file(dir, name)).unwrap())
                .unwrap();
            loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
            let p = measure_with(
                |_| loglag::info!(payload = big.as_str(), "big"),
                BIG_PAUSE,
                BIG_BURSTS,
            );
            report(p, guard.shutdown().dropped_records());
        }
        "memcpy_16k" => {
            let big = vec![b'x'; 16 << 10];
            let mut to = vec![0u8; 16 << 10];
            let p = measure_with(
                |_| {
                    to.copy_from_slice(black_box(&big));
                    black_box(&to);
                },
                BIG_PAUSE,
                BIG_BURSTS,
            );
            report(p, 0);
        }
        // Where a 16 KiB record has to go: into the next 16 KiB of a 1 MiB region (the
        // thread ring `loglag_macro_16k` gets from its 64 MiB budget), cycling, so the
        // destination is as cold as the ring's. The floor for one copy into a ring.
        "memcpy_16k_ring" => {
            let big = vec![b'x'; 16 << 10];
            let mut ring = vec![0u8; 1 << 20];
            let slots = ring.len() / big.len();
            let p = measure_with(
                |i| {
                    let at = (i as usize % slots) * big.len();
                    ring[at..at + big.len()].copy_from_slice(black_box(&big));
                    black_box(&ring);
                },
                BIG_PAUSE,
                BIG_BURSTS,
            );
            report(p, 0);
        }
        // The same, with another thread reading each slot once it is published, as the
        // writer reads a ring: the next lap's copy finds the lines in the other core's
        // cache and must take them back. The floor for handing 16 KiB to a writer thread.
        "memcpy_16k_ring_read" => {
            use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
            const SLOT: usize = 16 << 10;
            let big = vec![b'x'; SLOT];
            let ring =
                std::sync::Arc::new(SharedBytes(std::cell::UnsafeCell::new(vec![0u8; 1 << 20])));
            let slots = (1 << 20) / SLOT;
            let written = std::sync::Arc::new(AtomicU64::new(0));
            let read = std::sync::Arc::new(AtomicU64::new(0));
            let stop = std::sync::Arc::new(AtomicBool::new(false));
            let reader = {
                let (ring, written, read, stop) =
                    (ring.clone(), written.clone(), read.clone(), stop.clone());
                std::thread::spawn(move || {
                    let mut sum = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        let upto = written.load(Ordering::Acquire);
                        let mut at = read.load(Ordering::Relaxed);
                        while at < upto {
                            let start = (at as usize % slots) * SLOT;
                            // SAFETY: slot `at` was published (acquire above) and is not
                            // written again until `read` passes it (release below).
                            let bytes = unsafe { &(&*ring.0.get())[start..start + SLOT] };
                            sum =
                                sum.wrapping_add(bytes.iter().map(|&b| u64::from(b)).sum::<u64>());
                            at += 1;
                            read.store(at, Ordering::Release);
                        }
                        std::hint::spin_loop();
                    }
                    black_box(sum);
                })
            };
            let p = measure_with(
                |i| {
                    // A lap ahead of the reader would overwrite what it reads (never
                    // with these pauses; waited for, to stay correct).
                    while i >= read.load(Ordering::Acquire) + slots as u64 {
                        std::hint::spin_loop();
                    }
                    let start = (i as usize % slots) * SLOT;
                    // SAFETY: slot `i` is not being read (checked above).
                    unsafe {
                        std::ptr::copy_nonoverlapping(
                            black_box(&big).as_ptr(),
                            (*ring.0.get()).as_mut_ptr().add(start),
                            SLOT,
                        )
                    };
                    written.store(i + 1, Ordering::Release);
                },
                BIG_PAUSE,
                BIG_BURSTS,
            );
            stop.store(true, Ordering::Relaxed);
            reader.join().unwrap();
            report(p, 0);
        }
        other => panic!("unknown logger {other}; known: {LOGGERS:?}"),
    }
}

/// Events per second delivered into a file by one writer thread, with 1 and 2
/// producers, blocking when the queue is full (nothing dropped), timed from the first
/// call until the guard has written everything.
/// `--rss`: what one pipeline with its default configuration keeps resident, each
/// logger in its own process: VmRSS before building it, after 200 ms idle, after
/// 1,000 records, after 1,000,000 (each flushed) and 3 s after that, idle, as
/// differences from before.
fn rss_table() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let exe = std::env::current_exe().expect("own path");
    println!(
        "| logger | idle KiB | after 1,000 records | after 1,000,000 records | then 3 s idle |"
    );
    println!("|---|---:|---:|---:|---:|");
    for name in ["rss_loglag", "rss_tracing_appender"] {
        let out = Command::new(&exe)
            .args(["--child", name, "--dir"])
            .arg(dir.path())
            .output()
            .expect("run a child");
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(line) = text.lines().find(|l| l.starts_with("RSS ")) else {
            panic!("{name}: {}", String::from_utf8_lossy(&out.stderr));
        };
        let v: Vec<&str> = line[4..].split_whitespace().collect();
        println!(
            "| {} | +{} | +{} | +{} | +{} |",
            &name[4..],
            v[0],
            v[1],
            v[2],
            v[3]
        );
    }
}

/// One `--rss` row: VmRSS around building one pipeline and logging through it.
fn rss_child(name: &str, dir: &Path) {
    let before = procfs::vm_rss_kib().unwrap_or(0);
    let mut marks = Vec::new();
    match name {
        "rss_loglag" => {
            let (writer, guard) = loglag::NonBlockingBuilder::default()
                .build(loglag::sink::FdSink::append(file(dir, name)).expect("log file"))
                .unwrap();
            loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
            std::thread::sleep(Duration::from_millis(200));
            marks.push(procfs::vm_rss_kib().unwrap_or(0));
            for n in [1_000u64, 999_000] {
                for i in 0..n {
                    macro_event!(i);
                    if i % 4096 == 0 {
                        // Keep within the budget: the question is memory, not drops.
                        let _ = writer.flush(Duration::from_secs(10));
                    }
                }
                writer.flush(Duration::from_secs(10)).expect("flushed");
                marks.push(procfs::vm_rss_kib().unwrap_or(0));
            }
            // What an idle pipeline gives back after the burst.
            std::thread::sleep(Duration::from_secs(3));
            marks.push(procfs::vm_rss_kib().unwrap_or(0));
            drop(guard);
        }
        "rss_tracing_appender" => {
            use tracing_subscriber::prelude::*;
            let f = std::fs::File::create(file(dir, name)).unwrap();
            let (writer, guard) = tracing_appender::non_blocking(f);
            let sub = tracing_subscriber::registry()
                .with(tracing_subscriber::fmt::layer().json().with_writer(writer));
            tracing::subscriber::with_default(sub, || {
                std::thread::sleep(Duration::from_millis(200));
                marks.push(procfs::vm_rss_kib().unwrap_or(0));
                for n in [1_000u64, 999_000] {
                    for i in 0..n {
                        event!(i);
                        if i % 4096 == 0 {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                    }
                    std::thread::sleep(Duration::from_millis(100));
                    marks.push(procfs::vm_rss_kib().unwrap_or(0));
                }
                std::thread::sleep(Duration::from_secs(3));
                marks.push(procfs::vm_rss_kib().unwrap_or(0));
            });
            drop(guard);
        }
        _ => unreachable!(),
    }
    println!(
        "RSS {}",
        marks
            .iter()
            .map(|m| (*m as i64 - before as i64).to_string())
            .collect::<Vec<_>>()
            .join(" ")
    );
}

fn throughput() {
    const PER_PRODUCER: u64 = 2_000_000;
    let dir = tempfile::tempdir().unwrap();
    println!(
        "| path | producers | events | seconds | events/s | dropped | writer CPU per million written |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|");
    // `Block` writes every record; `DropOldest` shows what the writer's merge costs
    // while producers evict under it (the merge waits at a ring mid-eviction).
    let rows = [
        ("loglag_macro", loglag::Overflow::Block),
        ("loglag_layer", loglag::Overflow::Block),
        ("loglag_macro", loglag::Overflow::DropOldest),
    ];
    for producers in [1u64, 2] {
        for (path, overflow) in rows {
            let label = match overflow {
                loglag::Overflow::Block => path.to_string(),
                other => format!("{path}, {other:?}"),
            };
            let (writer, guard) = loglag::NonBlockingBuilder::default()
                .mode(loglag::Mode::Async)
                .overflow(overflow)
                .build(
                    loglag::sink::FdSink::append(file(dir.path(), &format!("{path}-{producers}")))
                        .unwrap(),
                )
                .unwrap();
            loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
            let started = Instant::now();
            std::thread::scope(|s| {
                for _ in 0..producers {
                    let writer = writer.clone();
                    s.spawn(move || {
                        if path == "loglag_macro" {
                            for i in 0..PER_PRODUCER {
                                macro_event!(i);
                            }
                        } else {
                            use tracing_subscriber::prelude::*;
                            let sub = tracing_subscriber::registry()
                                .with(loglag::LoglagLayer::new(writer));
                            tracing::subscriber::with_default(sub, || {
                                for i in 0..PER_PRODUCER {
                                    event!(i);
                                }
                            });
                        }
                    });
                }
            });
            writer
                .flush(Duration::from_secs(60))
                .expect("everything written");
            let secs = started.elapsed().as_secs_f64();
            // The writer's CPU, as BqLog publishes its consumer's: read before the
            // guard joins the thread (`None` where /proc has no threads).
            let writer_cpu = procfs::thread_cpu_seconds("loglag-writer");
            let m = guard.shutdown();
            let events = producers * PER_PRODUCER;
            assert_eq!(m.written_records + m.dropped_records(), events, "{m:?}");
            if overflow == loglag::Overflow::Block {
                assert_eq!(m.written_records, events, "{m:?}");
            }
            println!(
                "| {label} | {producers} | {events} | {secs:.3} | {:.2} M | {} | {} |",
                events as f64 / secs / 1e6,
                m.dropped_records(),
                writer_cpu.map_or("–".into(), |cpu| format!(
                    "{:.0} ms",
                    cpu * 1e3 / (m.written_records as f64 / 1e6)
                )),
            );
            loglag::set_max_level(None);
        }
    }
}
