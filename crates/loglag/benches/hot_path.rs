//! Per-call cost and end-to-end throughput, with the peers measured in the same run.
//!
//! ```sh
//! cargo bench -p loglag --bench hot_path
//! ```

mod support;

use std::time::{Duration, Instant};

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion};
use slog::{o, Drain};
use tracing_subscriber::prelude::*;

use support::{big_field, CountingSink};

fn loglag_layer() -> (impl tracing::Subscriber + Send + Sync, loglag::WorkerGuard) {
    let (writer, guard) = loglag::NonBlockingBuilder::default()
        .mode(loglag::Mode::Async)
        .finish(std::io::sink());
    (
        tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer)),
        guard,
    )
}

fn loglag_fmt() -> (impl tracing::Subscriber + Send + Sync, loglag::WorkerGuard) {
    let (writer, guard) = loglag::NonBlockingBuilder::default()
        .mode(loglag::Mode::Async)
        .finish(std::io::sink());
    (
        tracing_subscriber::fmt()
            .json()
            .with_writer(writer)
            .finish(),
        guard,
    )
}

fn appender() -> (
    impl tracing::Subscriber + Send + Sync,
    tracing_appender::non_blocking::WorkerGuard,
) {
    let (writer, guard) = tracing_appender::non_blocking(std::io::sink());
    (
        tracing_subscriber::fmt()
            .json()
            .with_writer(writer)
            .finish(),
        guard,
    )
}

fn slog_async() -> (slog::Logger, slog_async::AsyncGuard) {
    let decorator = slog_term::PlainSyncDecorator::new(std::io::sink());
    let drain = slog_term::FullFormat::new(decorator).build().fuse();
    let (drain, guard) = slog_async::Async::new(drain).build_with_guard();
    (slog::Logger::root(drain.fuse(), o!()), guard)
}

fn hot_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("hot_path");
    g.bench_function("noop", |b| {
        tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            b.iter(|| event!(black_box(7u64)))
        })
    });
    g.bench_function("loglag", |b| {
        let (sub, _guard) = loglag_layer();
        tracing::subscriber::with_default(sub, || b.iter(|| event!(black_box(7u64))))
    });
    g.bench_function("loglag_macro", |b| {
        let (writer, _guard) = loglag::NonBlockingBuilder::default()
            .mode(loglag::Mode::Async)
            .finish(std::io::sink());
        loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
        b.iter(|| {
            loglag::info!(
                request_id = black_box(7u64),
                user = "ann",
                latency_ms = 12.5,
                "request completed"
            )
        });
        loglag::set_max_level(None);
    });
    g.bench_function("loglag_fmt_writer", |b| {
        let (sub, _guard) = loglag_fmt();
        tracing::subscriber::with_default(sub, || b.iter(|| event!(black_box(7u64))))
    });
    g.bench_function("tracing_appender", |b| {
        let (sub, _guard) = appender();
        tracing::subscriber::with_default(sub, || b.iter(|| event!(black_box(7u64))))
    });
    g.bench_function("slog_async", |b| {
        let (log, _guard) = slog_async();
        b.iter(|| slog::info!(log, "request completed"; "request_id" => black_box(7u64), "user" => "ann", "latency_ms" => 12.5))
    });
    g.finish();
}

fn hot_path_16k(c: &mut Criterion) {
    let big = big_field();
    let mut g = c.benchmark_group("hot_path_16k");
    g.bench_function("noop", |b| {
        tracing::subscriber::with_default(tracing_subscriber::registry(), || {
            b.iter(|| tracing::info!(payload = %big, "big"))
        })
    });
    g.bench_function("loglag", |b| {
        let (sub, _guard) = loglag_layer();
        tracing::subscriber::with_default(sub, || b.iter(|| tracing::info!(payload = %big, "big")))
    });
    g.bench_function("tracing_appender", |b| {
        let (sub, _guard) = appender();
        tracing::subscriber::with_default(sub, || b.iter(|| tracing::info!(payload = %big, "big")))
    });
    g.bench_function("slog_async", |b| {
        let (log, _guard) = slog_async();
        b.iter(|| slog::info!(log, "big"; "payload" => %big))
    });
    g.finish();
}

const EVENTS: u64 = 1_000_000;

/// A blocking loglag pipeline into a fresh file (set-up, not timed).
fn loglag_to_file(path: &std::path::Path) -> (loglag::NonBlocking, loglag::WorkerGuard) {
    let _ = std::fs::remove_file(path);
    loglag::NonBlockingBuilder::default()
        .mode(loglag::Mode::Async)
        .overflow(loglag::Overflow::Block)
        .build(loglag::sink::FdSink::append(path).unwrap())
        .unwrap()
}

/// Logs `EVENTS` events through `subscriber` (the timed part).
fn flood(subscriber: impl tracing::Subscriber + Send + Sync + 'static) {
    tracing::subscriber::with_default(subscriber, || {
        for i in 0..EVENTS {
            event!(i);
        }
    });
}

fn throughput(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let mut g = c.benchmark_group("throughput");
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.throughput(criterion::Throughput::Elements(EVENTS));
    g.bench_function("loglag_fmt_writer", |b| {
        b.iter_batched(
            || loglag_to_file(&dir.path().join("loglag.log")),
            |(writer, guard)| {
                flood(
                    tracing_subscriber::fmt()
                        .json()
                        .with_writer(writer)
                        .finish(),
                );
                assert_eq!(guard.shutdown().written_records, EVENTS);
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("loglag_layer", |b| {
        b.iter_batched(
            || loglag_to_file(&dir.path().join("loglag-layer.log")),
            |(writer, guard)| {
                flood(tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer)));
                assert_eq!(guard.shutdown().written_records, EVENTS);
            },
            BatchSize::PerIteration,
        )
    });
    g.bench_function("tracing_appender", |b| {
        b.iter_batched(
            || {
                let path = dir.path().join("appender.log");
                let _ = std::fs::remove_file(&path);
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&path)
                    .unwrap();
                tracing_appender::non_blocking::NonBlockingBuilder::default()
                    .lossy(false)
                    .finish(file)
            },
            |(writer, guard)| {
                flood(
                    tracing_subscriber::fmt()
                        .json()
                        .with_writer(writer)
                        .finish(),
                );
                drop(guard);
            },
            BatchSize::PerIteration,
        )
    });
    g.finish();
    report_syscalls();
}

/// Write calls per 1,000 records of ~120 bytes, printed next to the timings.
fn report_syscalls() {
    let n = 100_000u64;
    let (writer, guard) = loglag::NonBlockingBuilder::default()
        .mode(loglag::Mode::Async)
        .overflow(loglag::Overflow::Block)
        .finish(std::io::sink());
    let record = [b'r'; 119];
    let started = Instant::now();
    for _ in 0..n {
        writer.submit(loglag::Level::Info, &[&record[..], b"\n"].concat());
    }
    let m = guard.shutdown();
    let counter = CountingSink::default();
    let (mut appender, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .lossy(false)
        .finish(counter.clone());
    for _ in 0..n {
        std::io::Write::write_all(&mut appender, &[&record[..], b"\n"].concat()).unwrap();
    }
    drop(guard);
    let per_k = |calls: u64| calls as f64 * 1000.0 / n as f64;
    eprintln!(
        "write calls per 1,000 records of 120 bytes: loglag {:.2}, tracing_appender {:.2} ({n} records, {:?})",
        per_k(m.write_syscalls),
        per_k(counter.0.load(std::sync::atomic::Ordering::Relaxed)),
        started.elapsed()
    );
}

criterion_group!(benches, hot_path, hot_path_16k, throughput);
criterion_main!(benches);
