//! The documented defaults: the 8 MiB budget with 1/8 kept for WARN and ERROR, 64 KiB
//! records, the settings a writer shows, and tracing-appender's builder calls.
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

/// `{:?}` of a writer, as a user prints it while debugging a setup, shows the settings
/// in force and how full the queue is.
#[test]
fn a_writers_debug_output_shows_its_settings_and_queue() {
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(1 << 20)
        .build(Recorder::default())
        .unwrap();
    let text = format!("{writer:?}");
    for expected in [
        "capacity_bytes: 1048576",
        "batch_bytes: 65536",
        "Ring",
        "capacity: 1048576",
        "used: 0",
    ] {
        assert!(text.contains(expected), "{expected:?} in {text}");
    }
    drop(guard);
}

#[test]
fn the_default_budget_is_8_mib_with_an_eighth_kept_for_warn_and_error() {
    within(LIMIT, "default budget", || {
        let (_recorder, gate, entered, sink) = gated_recorder();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"hold the writer\n");
        entered.recv().unwrap();
        // INFO records of 1 KiB until the default policy (ShedByLevel) sheds one.
        let record = [b'i'; 1023]
            .iter()
            .chain(b"\n")
            .copied()
            .collect::<Vec<u8>>();
        let mut accepted_info = 0u64;
        while writer.metrics().dropped_records() == 0 {
            writer.submit(Level::Info, &record);
            accepted_info += 1;
            assert!(accepted_info < 100_000, "the budget never filled");
        }
        accepted_info -= 1; // the one that was shed
        let info_bytes = writer.metrics().in_flight_bytes;
        // WARN may still use the reserved eighth.
        let mut accepted_warn = 0u64;
        while writer.metrics().dropped_records() == 1 {
            writer.submit(Level::Warn, &record);
            accepted_warn += 1;
            assert!(accepted_warn < 100_000, "the reserve never filled");
        }
        let total_bytes = writer.metrics().in_flight_bytes;
        let mib = |b: u64| b as f64 / (1 << 20) as f64;
        // INFO stops at 7/8 of 8 MiB, everything at 8 MiB (within a record and the
        // ring's per-record header).
        assert!(
            (6.9..=7.01).contains(&mib(info_bytes)),
            "INFO filled {:.3} MiB ({accepted_info} records)",
            mib(info_bytes)
        );
        assert!(
            (7.9..=8.01).contains(&mib(total_bytes)),
            "WARN filled to {:.3} MiB ({accepted_warn} more records)",
            mib(total_bytes)
        );
        assert_eq!(writer.metrics().dropped_at(Level::Info), 1);
        gate.open();
        guard.flush(Duration::from_secs(30)).unwrap();
    });
}

#[test]
fn records_over_64_kib_are_truncated_by_default_and_smaller_ones_are_not() {
    within(LIMIT, "default max record", || {
        let recorder = Recorder::default();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(recorder.clone())
            .unwrap();
        let mut fits = vec![b'a'; (64 << 10) - 1];
        fits.push(b'\n');
        let mut over = vec![b'b'; 64 << 10];
        over.push(b'\n');
        writer.submit(Level::Info, &fits);
        writer.submit(Level::Info, &over);
        guard.flush(Duration::from_secs(30)).unwrap();
        let m = writer.metrics();
        assert_eq!(m.truncated, 1, "{m:#?}");
        let out = recorder.out.lock().unwrap().clone();
        let lines: Vec<&[u8]> = out
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(
            lines[0].len(),
            (64 << 10) - 1,
            "64 KiB with its newline is kept whole"
        );
        assert!(
            lines[1].len() < 64 << 10,
            "cut to fit 64 KiB with its newline"
        );
        assert!(lines[1].starts_with(b"bbbb"));
    });
}

/// A tracing-appender builder chain ports as it is: `lossy`, `buffered_lines_limit`
/// and `thread_name` exist and do what their names say.
#[test]
fn tracing_appender_builder_calls_port_unchanged() {
    struct NamesThread(Arc<Mutex<Option<String>>>);
    impl Sink for NamesThread {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            *self.0.lock().unwrap() = std::thread::current().name().map(str::to_owned);
            Ok(buf.len())
        }
    }
    within(LIMIT, "builder chain", || {
        let name = Arc::new(Mutex::new(None));
        let (writer, guard) = NonBlockingBuilder::default()
            .lossy(false)
            .buffered_lines_limit(1_000)
            .thread_name("my-log-writer")
            .mode(Mode::Async)
            .build(NamesThread(name.clone()))
            .unwrap();
        writer.submit(Level::Info, b"hello\n");
        guard.flush(Duration::from_secs(30)).unwrap();
        assert_eq!(name.lock().unwrap().as_deref(), Some("my-log-writer"));
        // lossy(false) is Block: a full budget waits instead of dropping.
        assert_eq!(writer.metrics().dropped_records(), 0);
    });
}
