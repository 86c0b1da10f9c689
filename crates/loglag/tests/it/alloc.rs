//! The hot path does not allocate: a counting global allocator sees zero heap
//! allocations per record in steady state, through the raw writer and through the Layer.

use crate::support;

use loglag::{Level, LoglagLayer, Mode, NonBlockingBuilder};
use tracing_subscriber::prelude::*;

fn allocations_during(f: impl FnOnce()) -> u64 {
    support::alloc::allocations_during(f).1
}

#[test]
fn zero_allocations_per_record_in_steady_state() {
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .finish(std::io::sink());
    let record = [b'r'; 120];
    let subscriber = tracing_subscriber::registry().with(LoglagLayer::new(writer.clone()));
    tracing::subscriber::with_default(subscriber, || {
        // Warm up: the per-thread buffer and counter slot are allocated once.
        for i in 0..1000 {
            writer.submit(Level::Info, &record);
            tracing::info!(i, user = "ann", latency_ms = 1.5, "request done");
        }
        let n = allocations_during(|| {
            for i in 0..10_000 {
                writer.submit(Level::Info, &record);
                tracing::info!(i, user = "ann", latency_ms = 1.5, "request done");
            }
        });
        assert_eq!(n, 0, "heap allocations on the hot path");
    });
    let m = guard.shutdown();
    assert_eq!(m.accepted, 22_000);
    assert_eq!(m.written_records + m.dropped_records(), 22_000);
}

/// Every output format, events inside an entered span, and the `log` front-end: after
/// warm-up, no record allocates.
#[test]
fn zero_allocations_in_every_format_inside_spans_and_through_log() {
    use log::Log;
    for format in [
        loglag::Format::Json,
        loglag::Format::Compact,
        loglag::Format::Logfmt,
    ] {
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .finish(std::io::sink());
        let layer = LoglagLayer::new(writer.clone()).format(format);
        let logger = loglag::Logger::new(writer.clone()).format(format);
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("request", id = 42u64, path = "/buy");
            let _entered = span.enter();
            let one_round = |i: u64| {
                tracing::info!(i, user = "ann", latency_ms = 1.5, "request done");
                logger.log(
                    &log::Record::builder()
                        .level(log::Level::Info)
                        .target("app")
                        .args(format_args!("log front-end {}", i))
                        .build(),
                );
            };
            for i in 0..1000 {
                one_round(i);
            }
            let n = allocations_during(|| {
                for i in 0..10_000 {
                    one_round(i);
                }
            });
            assert_eq!(n, 0, "{format:?}: heap allocations on the hot path");
        });
        let m = guard.shutdown();
        assert_eq!(m.accepted, 22_000, "{format:?}");
    }
}

/// A full queue drops without allocating: the drop path is as cheap as the happy path.
#[test]
fn dropping_on_a_full_queue_does_not_allocate() {
    use std::sync::mpsc;
    struct Stalled(mpsc::Receiver<()>, mpsc::Sender<()>);
    impl loglag::sink::Sink for Stalled {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _ = self.1.send(());
            let _ = self.0.recv();
            Ok(buf.len())
        }
    }
    let (release, released) = mpsc::channel();
    let (entered_tx, entered) = mpsc::channel();
    let (writer, guard) = NonBlockingBuilder::default()
        .capacity_bytes(4096)
        .overflow(loglag::Overflow::DropNewest)
        .mode(Mode::Async)
        .build(Stalled(released, entered_tx))
        .unwrap();
    writer.submit(Level::Error, b"hold the writer\n");
    entered.recv().unwrap();
    let record = [b'd'; 120];
    while writer.metrics().dropped_records() == 0 {
        writer.submit(Level::Info, &record);
    }
    let n = allocations_during(|| {
        for _ in 0..10_000 {
            writer.submit(Level::Info, &record);
        }
    });
    assert_eq!(n, 0, "heap allocations while dropping");
    assert!(writer.metrics().dropped_records() > 10_000);
    drop(release);
    let m = guard.shutdown();
    assert_eq!(m.written_records + m.dropped_records(), m.accepted);
}

/// loglag's own macros: no allocation per call in steady state, with fields of every
/// kind, a literal message, and a message with arguments.
#[test]
fn zero_allocations_per_native_macro_call() {
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .finish(std::io::sink());
    let _macros = support::macros_lock();
    loglag::set_global(&writer, loglag::Format::Json, Level::Info);
    let one_round = |i: u64| {
        loglag::info!(i, user = "ann", latency_ms = 1.5, ok = true, "request done");
        loglag::warn!(peer = %"10.0.0.1", "retry {} of {}", i, 3);
    };
    for i in 0..1000 {
        one_round(i);
    }
    let n = allocations_during(|| {
        for i in 0..10_000 {
            one_round(i);
        }
    });
    assert_eq!(n, 0, "heap allocations per native macro call");
    loglag::set_max_level(None);
    let m = guard.shutdown();
    assert_eq!(m.accepted, 22_000);
    assert_eq!(m.written_records + m.dropped_records(), 22_000);
}
