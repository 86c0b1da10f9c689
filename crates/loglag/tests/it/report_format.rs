//! The in-band drop reports follow the log's format, so a JSON log stays JSON lines
//! under overload: the front-end's format, else the records' own (`fmt().json()`
//! through the `MakeWriter` with nothing configured).
//! Every wait is bounded by `support::within`.
#![allow(unused_imports)] // one import list for the promise files

use crate::support;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loglag::sink::Sink;
use loglag::{DropReason, Level, Mode, NonBlockingBuilder, Overflow};
use support::promises::*;
use support::*;

/// A JSON log stays all JSON under overload: the in-band drop reports follow the
/// layer's format (before, they were compact text lines inside a JSON file, which log
/// shippers reject). An explicit `report_format` still wins.
#[test]
fn drop_reports_follow_the_layers_format_unless_set() {
    use tracing_subscriber::layer::SubscriberExt;
    for explicit in [None, Some(loglag::Format::Compact)] {
        within(LIMIT, "report format", move || {
            let (recorder, gate, entered, sink) = gated_recorder();
            let mut builder = NonBlockingBuilder::default()
                .capacity_bytes(4096)
                .overflow(Overflow::DropNewest)
                .mode(Mode::Async);
            if let Some(f) = explicit {
                builder = builder.report_format(f);
            }
            let (writer, guard) = builder.build(sink).unwrap();
            let subscriber =
                tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer.clone()));
            tracing::subscriber::with_default(subscriber, || {
                tracing::error!("hold the writer");
                entered.recv().unwrap();
                for i in 0..200 {
                    tracing::info!(i, "overload");
                }
            });
            assert!(writer.metrics().dropped_records() > 0);
            gate.open();
            guard.flush(Duration::from_secs(30)).unwrap();
            let out = String::from_utf8(recorder.out.lock().unwrap().clone()).unwrap();
            let reports: Vec<&str> = out.lines().filter(|l| l.contains("dropped")).collect();
            assert!(!reports.is_empty(), "{out}");
            match explicit {
                None => {
                    for line in out.lines() {
                        assert!(
                            serde_json::from_str::<serde_json::Value>(line).is_ok(),
                            "not JSON: {line}"
                        );
                    }
                    // Structured reports carry the figures as fields, not only in words.
                    let report: serde_json::Value = serde_json::from_str(reports[0]).unwrap();
                    let dropped = report["fields"]["dropped"].as_u64();
                    assert!(dropped.is_some_and(|d| d > 0), "{report}");
                    assert!(report["fields"]["queue_full"].is_u64(), "{report}");
                }
                Some(_) => assert!(
                    reports
                        .iter()
                        .all(|l| serde_json::from_str::<serde_json::Value>(l).is_err()),
                    "an explicit compact report_format is kept: {reports:?}"
                ),
            }
        });
    }
}

/// `fmt().json()` through the `MakeWriter`, with the one builder call MIGRATING.md
/// shows: under overload every line of the log, drop reports included, is JSON.
#[test]
fn a_json_log_under_overload_stays_json_lines() {
    within(LIMIT, "json under overload", || {
        let gate = Gate::closed();
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(16 << 10)
            .overflow(Overflow::DropNewest)
            .report_format(loglag::Format::Json)
            .build(sink)
            .unwrap();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_writer(writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(n = 0, "first, written at once");
            entered.recv().unwrap();
            for n in 1..500 {
                tracing::info!(n, "under \"overload\"\nwith a newline");
            }
        });
        assert!(
            writer.metrics().dropped_records() > 0,
            "the queue overflowed"
        );
        gate.open();
        guard.shutdown();
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let mut reports = 0;
        for line in text.lines() {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
            if line.contains("dropped") {
                reports += 1;
                assert!(v.is_object());
            }
        }
        assert!(reports > 0, "the drop was announced in-band:\n{text}");
    });
}

/// `fmt().json()` through the `MakeWriter`, with nothing else configured: the drop
/// reports are JSON too, so every line of the file parses.
#[test]
fn json_records_get_json_drop_reports_without_being_asked() {
    within(LIMIT, "json reports", || {
        let gate = Gate::closed();
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(16 << 10)
            .build(sink)
            .unwrap();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_writer(writer.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            tracing::error!(seq = 0, "the first, written at once");
            entered.recv().unwrap();
            // The writer is held in the sink: these fill the queue and overflow.
            for seq in 1..2000 {
                tracing::info!(seq, "queued or dropped");
            }
        });
        assert!(
            writer.metrics().dropped_records() > 0,
            "the test needs drops"
        );
        gate.open();
        let m = guard.shutdown();
        assert!(m.dropped_records() > 0);
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let mut reports = 0;
        for line in text.lines() {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
            if v["target"] == "loglag" {
                reports += 1;
            }
        }
        assert!(reports >= 1, "a drop report is in the file: {text}");
    });
}
