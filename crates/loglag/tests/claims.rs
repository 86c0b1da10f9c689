//! The documented defaults and sink contracts, each checked by what the pipeline does:
//! the 8 MiB budget with 1/8 reserved, 64 KiB records and batches, few write calls per
//! record, EINTR retried, partial writes accounted, the 5 s shutdown, `SpoolSync`,
//! `DropOldest` refused with a spool, and `LOGLAG_MODE`.
//! Every wait is bounded by `support::within`.

mod support;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loglag::sink::Sink;
use loglag::{DropReason, Level, Mode, NonBlockingBuilder, Overflow};
use support::*;

const LIMIT: Duration = Duration::from_secs(60);

/// Records each write's size; counts `sync` calls; optionally fails in scripted ways.
#[derive(Clone, Default)]
struct Recorder {
    out: Arc<Mutex<Vec<u8>>>,
    writes: Arc<Mutex<Vec<usize>>>,
    syncs: Arc<AtomicU64>,
    flushes: Arc<AtomicU64>,
    /// Return EINTR on every odd call (before writing anything).
    interrupt: bool,
    /// Accept this many bytes of the n-th call, then fail the next call with EIO.
    partial_then_fail: Option<(usize, usize)>,
    calls: usize,
}

impl Sink for Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.interrupt && self.calls % 2 == 1 {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let mut n = buf.len();
        if let Some((call, bytes)) = self.partial_then_fail {
            if self.calls == call {
                n = bytes.min(buf.len());
            } else if self.calls == call + 1 {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
        }
        self.writes.lock().unwrap().push(n);
        self.out.lock().unwrap().extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn as_file(&mut self) -> Option<&mut dyn loglag::sink::FileSink> {
        Some(self)
    }
}

/// A descriptor-less "file" that counts the syncs asked of it.
impl loglag::sink::FileSink for Recorder {
    fn descriptor(&self) -> Option<(std::os::fd::RawFd, (u64, u64))> {
        None
    }
    fn position(&mut self) -> Option<u64> {
        None
    }
    fn identity(&mut self) -> Option<(u64, u64)> {
        None
    }
    fn truncate_to(&mut self, _len: u64) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A sink that holds the writer in its first write until the gate opens.
fn gated_recorder() -> (Recorder, Gate, mpsc::Receiver<()>, impl Sink) {
    let recorder = Recorder::default();
    let gate = Gate::closed();
    let (tx, rx) = mpsc::channel();
    struct Held {
        inner: Recorder,
        gate: Gate,
        entered: mpsc::Sender<()>,
    }
    impl Sink for Held {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let _ = self.entered.send(());
            self.gate.wait_open();
            self.inner.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.inner.flush()
        }
    }
    let held = Held {
        inner: recorder.clone(),
        gate: gate.clone(),
        entered: tx,
    };
    (recorder, gate, rx, held)
}

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

#[test]
fn batches_are_at_most_64_kib_and_1000_records_take_at_most_5_write_calls() {
    within(LIMIT, "batching", || {
        let recorder = Recorder::default();
        let (writer, guard) = NonBlockingBuilder::default()
            .overflow(Overflow::Block)
            .mode(Mode::Async)
            .build(recorder.clone())
            .unwrap();
        const RECORDS: usize = 200_000;
        let mut record = format!("{{\"level\":\"INFO\",\"msg\":\"{}\"}}", "x".repeat(94));
        record.push('\n');
        assert_eq!(record.len(), 120);
        for _ in 0..RECORDS {
            writer.submit(Level::Info, record.as_bytes());
        }
        drop(guard);
        let m = writer.metrics();
        assert_eq!(m.written_records, RECORDS as u64, "{m:#?}");
        let writes = recorder.writes.lock().unwrap().clone();
        assert!(
            writes.iter().all(|&w| w <= 64 << 10),
            "a write exceeded 64 KiB: {:?}",
            writes.iter().max()
        );
        let per_1000 = writes.len() as f64 * 1000.0 / RECORDS as f64;
        assert!(
            per_1000 <= 5.0,
            "{} write calls for {RECORDS} records: {per_1000:.2} per 1,000",
            writes.len()
        );
        assert_eq!(m.write_syscalls, writes.len() as u64);
        // The writer tracked the largest backlog it saw: more than one record, never
        // more than the ring's budget plus the batch it holds while writing (the ring
        // space of a batch is released when it is taken, so producers may refill it).
        assert!(
            m.max_backlog_bytes > 120 && m.max_backlog_bytes <= (8 << 20) + 2 * (64 << 10),
            "max backlog {}",
            m.max_backlog_bytes
        );
    });
}

#[test]
fn an_interrupted_write_is_retried_and_is_not_an_error() {
    within(LIMIT, "EINTR", || {
        let recorder = Recorder {
            interrupt: true,
            ..Recorder::default()
        };
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(recorder.clone())
            .unwrap();
        for i in 0..1000 {
            writer.submit(Level::Info, format!("record {i}\n").as_bytes());
            if i % 100 == 0 {
                guard.flush(Duration::from_secs(30)).unwrap();
            }
        }
        guard.flush(Duration::from_secs(30)).unwrap();
        let m = writer.metrics();
        assert_eq!(m.written_records, 1000, "{m:#?}");
        assert_eq!(m.write_errors, 0, "EINTR is retried, not counted");
        assert_eq!(m.dropped_records(), 0);
        let out = String::from_utf8(recorder.out.lock().unwrap().clone()).unwrap();
        let expected: String = (0..1000).map(|i| format!("record {i}\n")).collect();
        assert_eq!(out, expected, "every record once, in order");
    });
}

#[test]
fn a_sink_that_writes_part_of_a_batch_then_fails_is_accounted_record_by_record() {
    within(LIMIT, "partial write", || {
        // 10 records of 10 bytes in one batch; the sink takes 35 bytes, then fails.
        let recorder = Recorder {
            partial_then_fail: Some((1, 35)),
            ..Recorder::default()
        };
        let (writer, guard) = NonBlockingBuilder::default()
            .flush_interval(Duration::from_secs(3600))
            .mode(Mode::Async)
            .build(recorder.clone())
            .unwrap();
        for i in 0..9 {
            writer.submit(Level::Info, format!("record {i:02}\n").as_bytes());
        }
        writer.submit(Level::Error, b"record 09\n");
        guard.flush(Duration::from_secs(30)).unwrap();
        // The next batch goes through and carries the in-band report.
        writer.submit(Level::Error, b"after\n");
        guard.flush(Duration::from_secs(30)).unwrap();
        let m = writer.metrics();
        assert_accounted(&m);
        assert_eq!(
            m.written_records,
            3 + 1,
            "3 whole records of the first batch, then one"
        );
        assert_eq!(
            m.dropped_for(DropReason::IoError),
            7,
            "the 7 records not (wholly) written: {m:#?}"
        );
        assert_eq!(m.write_errors, 1);
        let out = recorder.out.lock().unwrap().clone();
        assert_eq!(reported_drops(&out), 7, "{}", String::from_utf8_lossy(&out));
        let text = String::from_utf8_lossy(&out);
        assert!(
            text.starts_with("record 00\nrecord 01\nrecord 02\nrecor"),
            "{text}"
        );
        // The fragment is ended before anything else is written, so it cannot glue
        // itself to the next line: every later line is whole.
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[3], "recor", "{text}");
        assert!(lines.contains(&"after"), "{text}");
        assert!(
            text.contains("io_error=7"),
            "per-reason figure in-band: {text}"
        );
    });
}

#[test]
fn block_for_waits_its_bound_and_not_much_longer() {
    within(LIMIT, "BlockFor", || {
        let (_recorder, gate, entered, sink) = gated_recorder();
        let (writer, guard) = NonBlockingBuilder::default()
            .capacity_bytes(4096)
            .overflow(Overflow::BlockFor(Duration::from_millis(200)))
            .flush_interval(Duration::from_secs(3600))
            .mode(Mode::Async)
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"hold\n");
        entered.recv().unwrap();
        while writer.metrics().queue_full_events == 0 {
            let started = Instant::now();
            writer.submit(Level::Info, &[b'x'; 95]);
            let waited = started.elapsed();
            if writer.metrics().queue_full_events > 0 {
                assert!(
                    waited >= Duration::from_millis(200),
                    "gave up early: {waited:?}"
                );
                // Generous: the bound is a promise to the caller, so a wait of many
                // times it is a bug, not noise.
                assert!(waited < Duration::from_secs(10), "waited {waited:?}");
            }
        }
        assert_eq!(writer.metrics().dropped_for(DropReason::QueueFull), 1);
        gate.open();
        guard.flush(Duration::from_secs(30)).unwrap();
    });
}

#[test]
fn spool_sync_every_flush_syncs_after_each_batch_and_never_does_not() {
    for (sync, expect_all) in [
        (loglag::spool::SpoolSync::EveryFlush, true),
        (loglag::spool::SpoolSync::Never, false),
        (
            loglag::spool::SpoolSync::Every(Duration::from_secs(3600)),
            false,
        ),
    ] {
        within(LIMIT, "SpoolSync", move || {
            let dir = tempfile::tempdir().unwrap();
            let recorder = Recorder::default();
            let (writer, guard) = NonBlockingBuilder::default()
                .spool(dir.path().join("app.spool"))
                .spool_sync(sync)
                .mode(Mode::Async)
                .build(recorder.clone())
                .unwrap();
            // Opening a spool runs recovery, which syncs the sink once whatever the
            // setting: what it delivered must be durable before the spool forgets it.
            let at_open = recorder.syncs.load(Ordering::Relaxed);
            for i in 0..5 {
                writer.submit(Level::Error, format!("batch {i}\n").as_bytes());
                guard.flush(Duration::from_secs(30)).unwrap();
            }
            let batches = recorder.writes.lock().unwrap().len() as u64;
            let syncs = recorder.syncs.load(Ordering::Relaxed) - at_open;
            assert!(batches >= 5);
            if expect_all {
                assert_eq!(syncs, batches, "{sync:?}: one sync per batch");
            } else {
                assert_eq!(syncs, 0, "{sync:?}");
            }
        });
    }
}

/// A spool cannot evict records the writer is delivering from it: `DropOldest` with a
/// spool is refused by `build`, naming the setting, and `finish` (which cannot fail)
/// says so and uses the default policy, never another one silently.
#[test]
fn drop_oldest_with_a_spool_is_refused_not_changed() {
    let dir = tempfile::tempdir().unwrap();
    let builder = || {
        NonBlockingBuilder::default()
            .overflow(Overflow::DropOldest)
            .spool(dir.path().join("app.spool"))
            .mode(Mode::Async)
    };
    match builder().build(loglag::sink::WriterSink::new(std::io::sink())) {
        Err(loglag::BuildError::Setting(e)) => {
            assert_eq!(e.key, "overflow");
            assert!(e.expected.contains("not with a spool"), "{e}");
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("DropOldest with a spool was accepted"),
    }
    let (writer, guard) = builder().finish(std::io::sink());
    writer.submit(Level::Info, b"kept\n");
    assert_eq!(guard.shutdown().written_records, 1);
}

#[test]
fn loglag_mode_parses_every_name_and_refuses_others() {
    for (name, mode) in [
        ("off", Mode::Off),
        ("format-only", Mode::FormatOnly),
        ("sync", Mode::Sync),
        ("async", Mode::Async),
    ] {
        assert_eq!(name.parse::<Mode>().unwrap(), mode);
        assert_eq!(mode.as_str(), name);
    }
    let err = "fast".parse::<Mode>().unwrap_err().to_string();
    assert!(
        err.contains("LOGLAG_MODE") && err.contains("\"fast\""),
        "{err}"
    );
    assert!(err.contains("off, format-only, sync or async"), "{err}");
}

/// A field whose `Debug` counts how often it is formatted.
struct Counted(Arc<AtomicU64>);

impl std::fmt::Debug for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fetch_add(1, Ordering::Relaxed);
        f.write_str("counted")
    }
}

#[test]
fn format_only_builds_the_record_and_off_does_not_and_neither_writes() {
    use tracing_subscriber::layer::SubscriberExt;
    for (mode, formats) in [(Mode::Off, false), (Mode::FormatOnly, true)] {
        let recorder = Recorder::default();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(mode)
            .build(recorder.clone())
            .unwrap();
        let subscriber =
            tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer.clone()));
        let formatted = Arc::new(AtomicU64::new(0));
        tracing::subscriber::with_default(subscriber, || {
            for _ in 0..10 {
                tracing::info!(field = ?Counted(formatted.clone()), "hello");
            }
        });
        drop(guard);
        assert_eq!(
            formatted.load(Ordering::Relaxed) > 0,
            formats,
            "{mode:?}: formatted {} times",
            formatted.load(Ordering::Relaxed)
        );
        assert!(
            recorder.out.lock().unwrap().is_empty(),
            "{mode:?} writes nothing"
        );
        assert_eq!(writer.metrics().accepted, 0, "{mode:?} counts nothing");
    }
}

#[test]
fn the_default_shutdown_waits_5_s_for_a_hung_sink_then_counts_the_loss() {
    let (_recorder, _gate, entered, sink) = gated_recorder();
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(sink)
        .unwrap();
    writer.submit(Level::Error, b"stuck in the sink\n");
    entered.recv().unwrap();
    writer.submit(Level::Info, b"queued behind it\n");
    let started = Instant::now();
    let metrics = within(LIMIT, "guard drop", move || guard.shutdown());
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(5), "gave up after {waited:?}");
    assert!(waited < Duration::from_secs(30), "waited {waited:?}");
    assert_eq!(metrics.dropped_for(DropReason::Shutdown), 2, "{metrics:#?}");
    assert_accounted(&metrics);
}

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

/// "Write as soon as 64 KiB is queued": with no interval to help (an hour) and no
/// ERROR, a full batch alone gets written. (Found by `cargo mutants`: a writer that
/// ignored the batch size still passed every other test, helped by the interval.)
#[test]
fn a_full_batch_is_written_without_waiting_for_the_interval() {
    within(LIMIT, "batch trigger", || {
        let recorder = Recorder::default();
        let (tx, wrote) = mpsc::channel();
        struct Tell(Recorder, mpsc::Sender<usize>);
        impl Sink for Tell {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let _ = self.1.send(buf.len());
                self.0.write(buf)
            }
        }
        let (writer, _guard) = NonBlockingBuilder::default()
            .flush_interval(Duration::from_secs(3600))
            .mode(Mode::Async)
            .build(Tell(recorder, tx))
            .unwrap();
        let record = [b'b'; 1023]
            .iter()
            .chain(b"\n")
            .copied()
            .collect::<Vec<u8>>();
        for _ in 0..100 {
            writer.submit(Level::Info, &record);
        }
        let first = wrote
            .recv_timeout(Duration::from_secs(30))
            .expect("a write once 64 KiB was queued, long before the 1 h interval");
        assert!(first >= 32 << 10, "a batch, not a trickle: {first} bytes");
    });
}

/// `flush` reports how many records it saw written, each time since the call began.
#[test]
fn each_flush_counts_the_records_written_while_it_waited() {
    within(LIMIT, "flush counts", || {
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(Recorder::default())
            .unwrap();
        for n in [3u64, 2] {
            for _ in 0..n {
                writer.submit(Level::Info, b"r\n");
            }
            assert_eq!(
                guard
                    .flush(Duration::from_secs(30))
                    .unwrap()
                    .written_records,
                n
            );
        }
    });
}

/// In `sync` mode `flush` reaches the sink, and from another thread it waits for a
/// write in progress rather than skipping the flush.
#[test]
fn a_sync_flush_reaches_the_sink_even_while_another_thread_writes() {
    within(LIMIT, "sync flush", || {
        let (recorder, gate, entered, sink) = gated_recorder();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Sync)
            .build(sink)
            .unwrap();
        let writing = {
            let writer = writer.clone();
            std::thread::spawn(move || writer.submit(Level::Info, b"held\n"))
        };
        entered.recv().unwrap();
        let guard = Arc::new(guard);
        let flushing = {
            let guard = guard.clone();
            std::thread::Builder::new()
                .name("sync-flusher".into())
                .spawn(move || guard.flush(Duration::from_secs(30)).map(|_| ()))
                .unwrap()
        };
        // Open the gate only once the flush waits for the sink (or has given up on it).
        while !flushing.is_finished() && thread_state("sync-flusher") != Some('S') {
            std::thread::yield_now();
        }
        gate.open();
        writing.join().unwrap();
        flushing.join().unwrap().unwrap();
        assert_eq!(recorder.flushes.load(Ordering::Relaxed), 1);
        assert_eq!(recorder.out.lock().unwrap().as_slice(), b"held\n");
    });
}

/// A producer waiting for room under `BlockFor` is woken when the writer frees it, not
/// when its (here: hour-long) wait runs out.
#[test]
fn a_producer_waiting_for_room_is_woken_when_room_is_made() {
    within(LIMIT, "block-for wake", || {
        let (_recorder, gate, entered, sink) = gated_recorder();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(4096)
            .overflow(Overflow::BlockFor(Duration::from_secs(3600)))
            .flush_interval(Duration::from_secs(3600))
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"hold the writer\n");
        entered.recv().unwrap();
        let record = [b'k'; 1023]
            .iter()
            .chain(b"\n")
            .copied()
            .collect::<Vec<u8>>();
        // Three records of 1 KiB fill most of the 4 KiB; a fourth does not fit.
        for _ in 0..3 {
            writer.submit(Level::Info, &record);
        }
        let waiting = {
            let (writer, record) = (writer.clone(), record.clone());
            std::thread::spawn(move || writer.submit(Level::Info, &record))
        };
        gate.open();
        waiting.join().unwrap();
        let m = guard.shutdown();
        assert_eq!((m.written_records, m.dropped_records()), (5, 0), "{m:?}");
    });
}

/// The fields of `/proc/self/task/*/stat` after the command name (state first), of
/// the thread of this process called `name`.
fn thread_stat(name: &str) -> Option<Vec<String>> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim() == name {
            let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
            let rest = &stat[stat.rfind(')')? + 2..];
            return Some(rest.split_whitespace().map(str::to_owned).collect());
        }
    }
    None
}

/// The scheduler state (`R`, `S`, ...) of one thread of this process, found by name.
fn thread_state(name: &str) -> Option<char> {
    thread_stat(name)?.first()?.chars().next()
}

/// The record that completes a batch wakes a writer that is asleep (the interval is an
/// hour away). Each record is offered only once the writer sleeps again, so no other
/// wake-up can stand in for the one under test.
#[test]
fn the_record_that_completes_a_batch_wakes_a_sleeping_writer() {
    within(LIMIT, "batch wake", || {
        let (tx, wrote) = mpsc::channel();
        struct Tell(mpsc::Sender<usize>);
        impl Sink for Tell {
            fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                let _ = self.0.send(buf.len());
                Ok(buf.len())
            }
        }
        let (writer, _guard) = NonBlockingBuilder::default()
            .thread_name("batch-wake")
            .batch_bytes(4096)
            .flush_interval(Duration::from_secs(3600))
            .mode(Mode::Async)
            .build(Tell(tx))
            .unwrap();
        let record = [b'w'; 1023]
            .iter()
            .chain(b"\n")
            .copied()
            .collect::<Vec<u8>>();
        // Four records of 1 KiB (plus headers) cross 4 KiB with the fourth.
        for _ in 0..4 {
            while thread_state("batch-wake") != Some('S') {
                std::thread::yield_now();
            }
            assert!(
                wrote.try_recv().is_err(),
                "written before the batch was full"
            );
            writer.submit(Level::Info, &record);
        }
        let first = wrote
            .recv_timeout(Duration::from_secs(60))
            .expect("the fourth record wakes the writer");
        assert_eq!(first, 4 * 1024);
    });
}

/// CPU seconds one thread of this process has used, found by name.
fn thread_cpu_seconds(name: &str) -> Option<f64> {
    let f = thread_stat(name)?;
    let ticks: f64 = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// An idle pipeline sleeps: its writer parks until the interval or a wake-up instead
/// of polling. (Found by `cargo mutants`: mutants of the park condition busy-looped,
/// writing the same output, and no test noticed.)
#[test]
fn an_idle_writer_sleeps() {
    within(LIMIT, "idle writer", || {
        let (writer, guard) = NonBlockingBuilder::default()
            .thread_name("idle-writer")
            .flush_interval(Duration::from_millis(50))
            .mode(Mode::Async)
            .build(Recorder::default())
            .unwrap();
        writer.submit(Level::Info, b"one record, then nothing\n");
        guard.flush(Duration::from_secs(30)).unwrap();
        let before = thread_cpu_seconds("idle-writer").expect("the writer thread");
        // Idle time is the behaviour under test; a busy loop burns all of it.
        std::thread::sleep(Duration::from_millis(600));
        let used = thread_cpu_seconds("idle-writer").unwrap() - before;
        assert!(
            used < 0.2,
            "an idle writer used {used:.2} s of CPU in 0.6 s"
        );
    });
}

/// A sink that is slow but alive when the shutdown deadline passes: the writer itself
/// stops at the deadline, counts what is still queued as `shutdown`, and leaves nothing
/// in flight. (The hung-sink test covers the guard's side; `cargo mutants` showed the
/// writer's side was untested.)
#[test]
fn the_writer_counts_what_a_slow_sink_leaves_at_the_deadline() {
    struct Slow;
    impl Sink for Slow {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            // Slowness is the behaviour under test: 20 ms per write.
            std::thread::sleep(Duration::from_millis(20));
            Ok(buf.len())
        }
    }
    within(LIMIT, "slow sink at the deadline", || {
        let (writer, guard) = NonBlockingBuilder::default()
            .batch_bytes(1024)
            .overflow(Overflow::Block)
            .shutdown_timeout(Duration::from_millis(200))
            .mode(Mode::Async)
            .build(Slow)
            .unwrap();
        // 100 batches of 1 KiB at 20 ms each: 2 s of writing, 10 times the deadline.
        for i in 0..1000 {
            writer.submit(Level::Info, format!("{i:099}\n").as_bytes());
        }
        let m = guard.shutdown();
        assert!(m.is_accounted(), "{m:#?}");
        assert_eq!(m.in_flight_records, 0, "nothing left uncounted: {m:#?}");
        assert!(
            m.dropped_for(DropReason::Shutdown) > 0,
            "the deadline cut the queue off: {m:#?}"
        );
        assert!(m.written_records > 0, "{m:#?}");
        assert_eq!(
            m.written_records + m.dropped_for(DropReason::Shutdown),
            1000,
            "{m:#?}"
        );
    });
}

/// `buffered_lines_limit(n)` bounds the queue to n records on top of the byte budget,
/// as tracing-appender's does: with the writer held inside a write, the (n + 1)-th
/// record is full whatever its size; DropNewest drops the newest, DropOldest keeps the
/// newest n.
#[test]
fn buffered_lines_limit_bounds_queued_records() {
    for (overflow, first_kept) in [(Overflow::DropNewest, 1u64), (Overflow::DropOldest, 91)] {
        within(LIMIT, "lines limit", move || {
            let gate = Gate::closed();
            let (sink, lines) = TestSink::new(Behaviour::Fast);
            let (sink, entered) = sink.gated(gate.clone());
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .overflow(overflow)
                .buffered_lines_limit(10)
                .build(sink)
                .unwrap();
            // Record 0, an ERROR, is written at once: the writer is now held in write.
            writer.submit(Level::Error, b"seq=0\n");
            entered.recv().unwrap();
            for seq in 1..=100u64 {
                writer.submit(Level::Error, format!("seq={seq}\n").as_bytes());
            }
            let m = writer.metrics();
            assert_eq!(m.dropped_records(), 90, "{overflow:?}: {m:?}");
            assert_eq!(m.dropped_for(DropReason::QueueFull), 90);
            // Let every write through.
            gate.open();
            let m = guard.shutdown();
            assert_eq!(m.written_records, 11, "{overflow:?}: {m:?}");
            let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
            let seqs: Vec<u64> = text
                .lines()
                .filter_map(|l| l.strip_prefix("seq=")?.parse().ok())
                .collect();
            let expected: Vec<u64> = std::iter::once(0)
                .chain(first_kept..first_kept + 10)
                .collect();
            assert_eq!(seqs, expected, "{overflow:?}");
        });
    }
}

/// `lossy(false)` with `buffered_lines_limit(n)`: the (n + 1)-th record waits for a
/// free slot instead of being dropped, and goes in once the writer frees one.
#[test]
fn a_blocking_lines_limit_waits_for_a_slot_and_loses_nothing() {
    within(LIMIT, "blocking lines limit", || {
        let gate = Gate::closed();
        let (sink, lines) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .lossy(false)
            .buffered_lines_limit(10)
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"seq=0\n");
        entered.recv().unwrap();
        for seq in 1..=10u64 {
            writer.submit(Level::Info, format!("seq={seq}\n").as_bytes());
        }
        // Every slot is taken: the next record waits on its own thread.
        let waiting = {
            let writer = writer.clone();
            std::thread::spawn(move || writer.submit(Level::Info, b"seq=11\n"))
        };
        gate.open();
        waiting.join().unwrap();
        let m = guard.shutdown();
        assert_eq!((m.written_records, m.dropped_records()), (12, 0), "{m:?}");
        let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
        assert!(text.ends_with("seq=11\n"), "{text}");
    });
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

/// `batch_bytes` is a bound a batch may reach exactly: records that add up to it go out
/// in one write. And a record larger than a batch is still written, alone. (cargo
/// mutants: `>` → `>=` at either comparison in the ring's pop went unnoticed.)
#[test]
fn a_batch_fills_to_exactly_batch_bytes_and_an_oversized_record_still_goes() {
    within(LIMIT, "batch boundary", || {
        let gate = Gate::closed();
        let (sink, _) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (sink, wrote) = sink.observed();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .batch_bytes(300)
            .flush_interval(Duration::from_secs(3600))
            .build(sink)
            .unwrap();
        let record = |c: u8, len: usize| {
            let mut r = vec![c; len - 1];
            r.push(b'\n');
            r
        };
        // Hold the writer inside the first write, then queue six 100-byte records and
        // one of 450 bytes.
        writer.submit(Level::Error, &record(b'0', 100));
        entered.recv().unwrap();
        for _ in 0..6 {
            writer.submit(Level::Info, &record(b'a', 100));
        }
        writer.submit(Level::Info, &record(b'b', 450));
        gate.open();
        let m = guard.shutdown();
        assert_eq!(m.written_records, 8, "{m:?}");
        assert_eq!(m.dropped_records(), 0, "{m:?}");
        let writes: Vec<usize> = wrote.try_iter().map(|w| w.len()).collect();
        assert_eq!(writes, [100, 300, 300, 450]);
    });
}
