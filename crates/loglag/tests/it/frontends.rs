//! The front-ends: tracing-subscriber's fmt with our writer, our own Layer, the `log`
//! logger, and the A/B modes.

use crate::support;

use std::time::Duration;

use loglag::{Format, Level, LoglagLayer, Mode, NonBlockingBuilder};
use support::*;
use tracing_subscriber::prelude::*;

#[test]
fn drop_in_for_tracing_appender_with_fmt_json() {
    within(
        std::time::Duration::from_secs(300),
        "drop_in_for_tracing_appender_with_fmt_json",
        || {
            let (sink, out) = TestSink::new(Behaviour::Fast);
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .build(sink)
                .unwrap();
            let subscriber = tracing_subscriber::fmt()
                .json()
                .with_writer(writer.clone())
                .finish();
            tracing::subscriber::with_default(subscriber, || {
                tracing::info!(user = "ann", "logged in");
                tracing::debug!("filtered out by fmt's default INFO filter");
                tracing::error!(code = 7, "failed");
            });
            let m = guard.shutdown();
            assert_eq!(m.accepted, 2);
            assert_eq!(m.written_records, 2);
            let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
            let lines: Vec<_> = text.lines().collect();
            assert_eq!(lines.len(), 2);
            assert!(
                lines[0].contains("\"message\":\"logged in\"")
                    && lines[0].contains("\"level\":\"INFO\"")
            );
            assert!(lines[1].contains("\"level\":\"ERROR\""));
        },
    )
}

#[test]
fn own_layer_escapes_injection_and_keeps_one_record_per_line() {
    within(
        std::time::Duration::from_secs(300),
        "own_layer_escapes_injection_and_keeps_one_record_per_line",
        || {
            for format in [Format::Json, Format::Compact, Format::Logfmt] {
                let (sink, out) = TestSink::new(Behaviour::Fast);
                let (writer, guard) = NonBlockingBuilder::default()
                    .mode(Mode::Async)
                    .build(sink)
                    .unwrap();
                let layer = LoglagLayer::new(writer).format(format);
                let probe = layer.clone();
                let subscriber = tracing_subscriber::registry().with(layer);
                tracing::subscriber::with_default(subscriber, || {
                    let evil =
                        "bob\n2026-01-01T00:00:00Z ERROR forged: admin logged in\r\u{1b}[31m\0";
                    tracing::warn!(
                        user = evil,
                        n = 3,
                        ok = true,
                        "login {}",
                        "attempt\nsecond line"
                    );
                });
                probe.flush(Duration::from_secs(30)).unwrap();
                assert_eq!(
                    probe.metrics().written_records,
                    1,
                    "the layer reports its pipeline"
                );
                let m = guard.shutdown();
                assert_eq!(m.written_records, 1, "{format:?}");
                let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
                assert_eq!(text.matches('\n').count(), 1, "{format:?}: {text}");
                assert!(
                    !text.contains('\u{1b}') && !text.contains('\0') && !text.contains('\r'),
                    "{format:?}: {text}"
                );
                assert!(text.contains("forged"), "content kept, escaped");
            }
        },
    )
}

#[test]
fn log_crate_front_end() {
    within(
        std::time::Duration::from_secs(300),
        "log_crate_front_end",
        || {
            let (sink, out) = TestSink::new(Behaviour::Fast);
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .build(sink)
                .unwrap();
            let logger = loglag::Logger::new(writer)
                .format(Format::Logfmt)
                .max_level(log::LevelFilter::Info);
            assert_eq!(logger.metrics().accepted, 0);
            log::Log::log(
                &logger,
                &log::Record::builder()
                    .level(log::Level::Info)
                    .target("app")
                    .args(format_args!("port {}", 80))
                    .build(),
            );
            log::Log::log(
                &logger,
                &log::Record::builder()
                    .level(log::Level::Debug)
                    .target("app")
                    .args(format_args!("hidden"))
                    .build(),
            );
            let m = guard.shutdown();
            assert_eq!(m.written_records, 1);
            let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
            assert!(
                text.contains("level=info target=app msg=\"port 80\""),
                "{text}"
            );
        },
    )
}

#[test]
fn modes_separate_building_from_writing() {
    within(
        std::time::Duration::from_secs(300),
        "modes_separate_building_from_writing",
        || {
            for (mode, expect_written) in [
                (Mode::Off, 0),
                (Mode::FormatOnly, 0),
                (Mode::Sync, 3),
                (Mode::Async, 3),
            ] {
                let (sink, out) = TestSink::new(Behaviour::Fast);
                let (writer, guard) = NonBlockingBuilder::default()
                    .mode(mode)
                    .build(sink)
                    .unwrap();
                let subscriber =
                    tracing_subscriber::registry().with(LoglagLayer::new(writer.clone()));
                tracing::subscriber::with_default(subscriber, || {
                    for i in 0..3 {
                        tracing::info!(i, "hello");
                    }
                });
                if mode == Mode::Sync {
                    // Written on the caller's thread: already there, with no flush.
                    assert_eq!(
                        out.lock().unwrap().iter().filter(|&&b| b == b'\n').count(),
                        3
                    );
                }
                let m = guard.shutdown();
                assert_eq!(m.written_records, expect_written, "{mode}");
                assert_eq!(writer.mode(), mode);
            }
        },
    )
}

#[test]
fn flush_works_from_async_code() {
    within(
        std::time::Duration::from_secs(300),
        "flush_works_from_async_code",
        || {
            let (sink, out) = TestSink::new(Behaviour::Fast);
            let (writer, _guard) = NonBlockingBuilder::default()
                .flush_interval(Duration::from_secs(3600))
                .mode(Mode::Async)
                .build(sink)
                .unwrap();
            writer.submit(Level::Info, b"one\n");
            let flushed = futures_lite_block_on(writer.flush_async(Duration::from_secs(30)))
                .expect("flushed");
            assert_eq!(flushed.written_records, 1);
            assert_eq!(&*out.lock().unwrap(), b"one\n");
        },
    )
}

/// A minimal executor: parks the thread until the waker fires.
fn futures_lite_block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::task::{Context, Poll, Wake, Waker};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: std::sync::Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut fut = std::pin::pin!(fut);
    loop {
        if let Poll::Ready(v) = fut.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park();
    }
}

#[test]
fn metrics_render_as_prometheus_text() {
    within(
        std::time::Duration::from_secs(300),
        "metrics_render_as_prometheus_text",
        || {
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .finish(std::io::sink());
            writer.submit(Level::Info, b"x\n");
            guard.flush(Duration::from_secs(30)).unwrap();
            let text = writer.metrics().to_prometheus("loglag");
            assert!(text.contains("loglag_accepted_total 1\n"));
            assert!(text.contains("loglag_written_records_total 1\n"));
            assert!(text.contains("loglag_dropped_total{reason=\"queue_full\"} 0\n"));
        },
    )
}

#[test]
fn events_carry_their_spans_like_tracing_subscriber_json() {
    within(
        std::time::Duration::from_secs(300),
        "events_carry_their_spans_like_tracing_subscriber_json",
        || {
            let run = |format: Format| {
                let (sink, out) = TestSink::new(Behaviour::Fast);
                let (writer, guard) = NonBlockingBuilder::default()
                    .mode(Mode::Async)
                    .build(sink)
                    .unwrap();
                let subscriber =
                    tracing_subscriber::registry().with(LoglagLayer::new(writer).format(format));
                tracing::subscriber::with_default(subscriber, || {
                    let outer = tracing::info_span!("request", id = 42, path = "/buy\n");
                    let _o = outer.enter();
                    let inner = tracing::info_span!("db", table = tracing::field::Empty);
                    inner.record("table", "orders");
                    let _i = inner.enter();
                    tracing::info!(rows = 3, "query done");
                });
                guard.shutdown();
                let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
                text
            };
            let json: serde_json::Value =
                serde_json::from_str(run(Format::Json).trim_end()).unwrap();
            assert_eq!(json["fields"]["message"], "query done");
            assert_eq!(
                json["span"],
                serde_json::json!({"name": "db", "table": "orders"})
            );
            assert_eq!(
                json["spans"],
                serde_json::json!([{"name": "request", "id": 42, "path": "/buy\n"}, {"name": "db", "table": "orders"}])
            );
            let logfmt = run(Format::Logfmt);
            assert!(
                logfmt.ends_with(" span=request>db id=42 path=\"/buy\\n\" table=\"orders\"\n"),
                "{logfmt}"
            );
            assert_eq!(logfmt.matches('\n').count(), 1);
        },
    )
}
