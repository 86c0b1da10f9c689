//! Sinks that misbehave, and the pipeline that outlives them (first found by the
//! adversarial review of issue 9): sinks that log, panic, lie about what they wrote,
//! hang on their notice or sit on a full disk or a full non-blocking pipe; the panic
//! hook in sync mode; span fields recorded again; many short-lived threads. Every wait
//! is bounded.

use crate::support;

use std::io;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use loglag::sink::{FdSink, Sink};
use loglag::{DropReason, Level, Mode, NonBlocking, NonBlockingBuilder, Overflow};
use support::*;

const LIMIT: Duration = Duration::from_secs(60);

/// A sink that logs one DEBUG record into `log` (its own pipeline) on every write, as an
/// HTTP or OTLP client instrumented with `tracing` would.
struct LoggingSink {
    log: Arc<OnceLock<NonBlocking>>,
    out: Arc<Mutex<Vec<u8>>>,
}

impl Sink for LoggingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(w) = self.log.get() {
            w.submit(Level::Debug, b"sink: wrote a batch\n");
        }
        self.out.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
}

type SinkOutput = Arc<Mutex<Vec<u8>>>;

fn logging_sink() -> (LoggingSink, Arc<OnceLock<NonBlocking>>, SinkOutput) {
    let log = Arc::new(OnceLock::new());
    let out = Arc::new(Mutex::new(Vec::new()));
    (
        LoggingSink {
            log: log.clone(),
            out: out.clone(),
        },
        log,
        out,
    )
}

fn producer_lines(out: &[u8]) -> Vec<String> {
    record_lines(out)
        .into_iter()
        .filter(|l| l.starts_with('p'))
        .collect()
}

#[test]
fn a_sink_that_logs_never_deadlocks_a_blocking_pipeline() {
    within(LIMIT, "reentrant sink with Overflow::Block", || {
        let (sink, log, out) = logging_sink();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .capacity_bytes(4096)
            .batch_bytes(256)
            .build(sink)
            .unwrap();
        let _ = log.set(writer.clone());
        support::flood(&writer, 4, 5_000, |p, i| format!("p{p} {i}\n"));
        guard.flush(LIMIT).expect("flush");
        let m = writer.metrics();
        assert_accounted(&m);
        // Block never drops a producer's record; only the sink's own may go.
        let lines = producer_lines(&out.lock().unwrap());
        assert_eq!(lines.len(), 20_000, "{m:#?}");
        assert_eq!(
            m.dropped_for(DropReason::QueueFull)
                + m.dropped_for(DropReason::IoError)
                + m.dropped_for(DropReason::Shutdown),
            0,
            "{m:#?}"
        );
        assert_eq!(m.dropped_records(), m.dropped_for(DropReason::Reentrant));
        drop(log); // the sink holds a writer; the guard's shutdown ends the cycle
        guard.shutdown();
    });
}

#[test]
fn a_sink_that_logs_in_sync_mode_drops_as_reentrant_instead_of_self_deadlocking() {
    within(LIMIT, "reentrant sink in sync mode", || {
        let (sink, log, out) = logging_sink();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Sync)
            .build(sink)
            .unwrap();
        let _ = log.set(writer.clone());
        for i in 0..100 {
            writer.submit(Level::Info, format!("p {i}\n").as_bytes());
        }
        let m = writer.metrics();
        assert_accounted(&m);
        assert_eq!(producer_lines(&out.lock().unwrap()).len(), 100);
        assert_eq!(
            m.dropped_for(DropReason::Reentrant),
            100,
            "one reentrant record per write: {m:#?}"
        );
        assert_eq!(m.dropped_at(Level::Debug), 100);
        guard.shutdown();
    });
}

/// Panics on the `panic_on`-th write call; otherwise writes, or returns `lie` bytes more
/// than it was given.
struct BadSink {
    calls: u32,
    panic_on: u32,
    overclaim: bool,
    out: Arc<Mutex<Vec<u8>>>,
}

impl Sink for BadSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.calls == self.panic_on {
            panic!("sink exploded on call {}", self.calls);
        }
        self.out.lock().unwrap().extend_from_slice(buf);
        if self.overclaim && self.calls == 2 {
            return Ok(buf.len() + 1);
        }
        Ok(buf.len())
    }
}

#[test]
fn the_writer_survives_a_panicking_sink_and_reports_the_batch() {
    within(LIMIT, "panicking sink", || {
        let out = Arc::new(Mutex::new(Vec::new()));
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .capacity_bytes(8192)
            .batch_bytes(512)
            .flush_on_panic(false)
            .build(BadSink {
                calls: 0,
                panic_on: 3,
                overclaim: false,
                out: out.clone(),
            })
            .unwrap();
        for i in 0..10_000 {
            writer.submit(Level::Info, format!("p {i}\n").as_bytes());
        }
        guard
            .flush(LIMIT)
            .expect("a flush after a sink panic completes");
        let m = writer.metrics();
        assert_accounted(&m);
        assert_eq!(m.in_flight_records, 0);
        assert!(
            m.dropped_for(DropReason::IoError) > 0,
            "the panicking batch is counted: {m:#?}"
        );
        assert_eq!(
            m.written_records + m.dropped_for(DropReason::IoError),
            10_000,
            "{m:#?}"
        );
        // Records after the panic were written, and the loss was announced in-band.
        let out = out.lock().unwrap();
        assert!(record_lines(&out).iter().any(|l| l == "p 9999"));
        assert_eq!(
            reported_drops(&out),
            m.dropped_for(DropReason::IoError),
            "in-band report"
        );
        guard.shutdown();
    });
}

#[test]
fn a_sink_claiming_more_bytes_than_given_is_an_io_error_not_a_panic() {
    within(LIMIT, "over-claiming sink", || {
        let out = Arc::new(Mutex::new(Vec::new()));
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .flush_on_panic(false)
            .build(BadSink {
                calls: 0,
                panic_on: 0,
                overclaim: true,
                out,
            })
            .unwrap();
        for round in 0..3 {
            writer.submit(Level::Info, format!("r {round}\n").as_bytes());
            guard.flush(LIMIT).expect("flush");
        }
        let m = writer.metrics();
        assert_accounted(&m);
        assert_eq!(m.write_errors, 1, "{m:#?}");
        assert_eq!(m.dropped_for(DropReason::IoError), 1, "{m:#?}");
        assert_eq!(m.written_records, 2, "{m:#?}");
        guard.shutdown();
    });
}

#[test]
#[cfg(target_os = "linux")] // pipe2
fn a_write_to_a_full_nonblocking_pipe_waits_for_room_instead_of_failing() {
    within(LIMIT, "O_NONBLOCK pipe", || {
        let mut fds = [0; 2];
        assert_eq!(
            // SAFETY: pipe2 fills two descriptors we then own.
            unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_NONBLOCK | libc::O_CLOEXEC) },
            0
        );
        // SAFETY: both descriptors are fresh and owned here.
        let (read_end, write_end) = unsafe {
            use std::os::fd::FromRawFd;
            (
                std::fs::File::from_raw_fd(fds[0]),
                std::fs::File::from_raw_fd(fds[1]),
            )
        };
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .capacity_bytes(256 << 10)
            .build(FdSink::from_file(write_end))
            .unwrap();
        let line = format!("{}\n", "z".repeat(99));
        // 100 KB: fits the ring (256 KiB), not the pipe (64 KiB).
        for _ in 0..1_000 {
            writer.submit(Level::Info, line.as_bytes());
        }
        guard.flush(Duration::ZERO).ok(); // wake the writer now
                                          // Wait (bounded by `within`) until the pipe is full: from then on every write
                                          // the writer makes gets EAGAIN until someone reads.
        let queued = |fd: i32| {
            let mut n: libc::c_int = 0;
            // SAFETY: FIONREAD into a c_int we own.
            unsafe { libc::ioctl(fd, libc::FIONREAD, &mut n) };
            n
        };
        let writable = |fd: i32| {
            let mut p = libc::pollfd {
                fd,
                events: libc::POLLOUT,
                revents: 0,
            };
            // SAFETY: one pollfd, no wait.
            unsafe { libc::poll(&mut p, 1, 0) != 0 }
        };
        while queued(fds[0]) == 0 || writable(fds[1]) {
            std::thread::yield_now();
        }
        let reader = std::thread::spawn(move || {
            // SAFETY: clear O_NONBLOCK on our read end so reads block.
            unsafe { libc::fcntl(fds[0], libc::F_SETFL, 0) };
            let mut all = Vec::new();
            io::Read::read_to_end(&mut &read_end, &mut all).unwrap();
            all
        });
        for _ in 1_000..5_000 {
            writer.submit(Level::Info, line.as_bytes());
        }
        guard.flush(LIMIT).expect("flush");
        let m = writer.metrics();
        assert_accounted(&m);
        assert_eq!(
            m.dropped_for(DropReason::IoError),
            0,
            "EAGAIN is not an I/O error: {m:#?}"
        );
        assert_eq!(m.written_records, 5_000);
        guard.shutdown(); // closes the write end, so the reader sees EOF
        let all = reader.join().unwrap();
        assert_eq!(all.len(), 5_000 * 100);
    });
}

#[test]
fn many_short_lived_threads_do_not_grow_the_counter_slots() {
    within(LIMIT, "short-lived threads", || {
        // `Block`: the writer never reads the threads' counters (only a policy that
        // refuses on them makes it), so no first record finds their lock held by a
        // reader, the one case in which it is counted on the shared total and makes
        // no slot (it failed so, 1 run in 2 under Wine).
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .finish(io::sink());
        // Three live threads hold a slot each.
        let barrier = Arc::new(std::sync::Barrier::new(4));
        let live: Vec<_> = (0..3)
            .map(|_| {
                let (w, barrier) = (writer.clone(), barrier.clone());
                std::thread::spawn(move || {
                    w.submit(Level::Info, b"live\n");
                    barrier.wait(); // submitted
                    barrier.wait(); // counted
                })
            })
            .collect();
        barrier.wait();
        assert_eq!(writer.debug_counter_slots(), 3, "one slot per live thread");
        barrier.wait();
        for t in live {
            t.join().unwrap();
        }
        for _ in 0..2_000 {
            let w = writer.clone();
            std::thread::spawn(move || w.submit(Level::Info, b"x\n"))
                .join()
                .unwrap();
        }
        // Before `metrics()`, which folds too: the slots must not have grown meanwhile.
        assert!(
            writer.debug_counter_slots() <= 128,
            "slots of exited threads are folded away: {}",
            writer.debug_counter_slots()
        );
        let m = writer.metrics();
        assert_eq!(m.accepted, 2_003);
        guard.shutdown();
    });
}

#[test]
fn a_span_field_recorded_again_replaces_its_value() {
    use tracing_subscriber::prelude::*;
    let out = Arc::new(Mutex::new(Vec::new()));
    struct Shared(Arc<Mutex<Vec<u8>>>);
    impl io::Write for Shared {
        fn write(&mut self, b: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .finish(Shared(out.clone()));
    let subscriber = tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("req", step = tracing::field::Empty);
        for step in 0..1_000u64 {
            span.record("step", step);
        }
        let _enter = span.enter();
        tracing::info!("done");
    });
    guard.flush(LIMIT).unwrap();
    let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
    let line = text.lines().last().unwrap();
    let v: serde_json::Value = serde_json::from_str(line).unwrap();
    assert_eq!(v["span"]["step"], 999, "{line}");
    assert_eq!(
        line.matches("\"step\"").count(),
        2,
        "once in span, once in spans: {line}"
    );
}

#[test]
fn a_json_record_over_the_limit_is_still_json() {
    use tracing_subscriber::prelude::*;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.log");
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .max_record_bytes(1024)
        .finish(std::fs::File::create(&path).unwrap());
    let subscriber = tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer.clone()));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(payload = %"\"q\"\n".repeat(2_000), n = 3, "big");
    });
    guard.flush(LIMIT).unwrap();
    assert_eq!(writer.metrics().truncated, 1);
    let text = std::fs::read_to_string(&path).unwrap();
    let line = text.lines().next().unwrap();
    assert!(line.len() < 1024);
    let v: serde_json::Value = serde_json::from_str(line).expect("valid JSON after truncation");
    assert_eq!(v["fields"]["n"], 3);
    assert!(v["fields"]["payload"]
        .as_str()
        .unwrap()
        .contains("…[truncated "));
}

/// This test binary again, running `test` alone as a child that plays `role` (see
/// `played_a_child_role`), with `arg` as its path.
fn child(test: &str, role: &str, arg: &std::path::Path) -> std::process::Child {
    rerun_as_child(module_path!(), test, role, arg)
        .spawn()
        .unwrap()
}

/// In a child started by [`child`], plays its role and returns true: the test ends
/// there. In the test itself returns false at once.
fn played_a_child_role() -> bool {
    let Some((role, arg)) = child_role() else {
        return false;
    };
    match role.as_str() {
        // Sync mode, the default panic hook on, and a sink that panics: the hook must
        // not wait for the sink lock this very thread holds.
        "sync-panicking-sink" => {
            let out = Arc::new(Mutex::new(Vec::new()));
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Sync)
                .build(BadSink {
                    calls: 0,
                    panic_on: 2,
                    overclaim: false,
                    out,
                })
                .unwrap();
            for i in 0..10 {
                writer.submit(Level::Info, format!("r {i}\n").as_bytes());
            }
            let m = guard.shutdown();
            println!(
                "records_dropped_io={} written={}",
                m.dropped_for(DropReason::IoError),
                m.written_records
            );
        }
        // A spool larger than the file system: an error, never SIGBUS.
        "spool-on-full-fs" => {
            let spool = std::path::Path::new(&arg).join("app.spool");
            let result = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .capacity_bytes(8 << 20)
                .spool(&spool)
                .spool_required(true)
                .build(FdSink::stderr());
            match result {
                Ok(_) => println!("opened"),
                Err(e) => println!("error: {e}"),
            }
        }
        // Batches that fail, succeed, then fail again: two streaks of failures.
        "failing-streaks" => {
            // Fails the records `batch 0-2` and `batch 4-5`; in-band drop reports and
            // `batch 3` go through.
            struct Scripted;
            impl Sink for Scripted {
                fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
                    let fails = [b"batch 0", b"batch 1", b"batch 2", b"batch 4", b"batch 5"];
                    if fails.iter().any(|f| buf.starts_with(*f)) {
                        return Err(io::Error::other("scripted failure"));
                    }
                    Ok(buf.len())
                }
            }
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .flush_interval(Duration::from_secs(3600))
                .build(Scripted)
                .unwrap();
            for i in 0..6 {
                writer.submit(Level::Info, format!("batch {i}\n").as_bytes());
                guard.flush(Duration::from_secs(60)).unwrap();
            }
            let m = guard.shutdown();
            println!(
                "records_dropped_io={} write_errors={}",
                m.dropped_for(DropReason::IoError),
                m.write_errors
            );
        }
        // A clean shutdown, then one whose sink hangs past the deadline.
        "deadline-messages" => {
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .build(FdSink::from_file(tempfile::tempfile().unwrap()))
                .unwrap();
            writer.submit(Level::Info, b"clean\n");
            guard.shutdown();
            eprintln!("--- hung ---");
            struct Hung;
            impl Sink for Hung {
                fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                    loop {
                        std::thread::park();
                    }
                }
            }
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .shutdown_timeout(Duration::from_millis(50))
                .build(Hung)
                .unwrap();
            for i in 0..3 {
                writer.submit(Level::Error, format!("stuck {i}\n").as_bytes());
            }
            let m = guard.shutdown();
            println!("shutdown={}", m.dropped_for(DropReason::Shutdown));
        }
        other => panic!("unknown role {other}"),
    }
    true
}

/// Only a shutdown that gives up on a hung sink says so on stderr, with the count.
#[test]
fn only_a_shutdown_cut_short_says_so_on_stderr() {
    if played_a_child_role() {
        return;
    }
    let out = wait_child_within(
        child(
            "only_a_shutdown_cut_short_says_so_on_stderr",
            "deadline-messages",
            std::path::Path::new(""),
        ),
        LIMIT,
        "deadline messages",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let (clean, hung) = stderr.split_once("--- hung ---").expect("marker");
    assert!(
        !clean.contains("loglag:"),
        "a clean shutdown is silent: {clean}"
    );
    let shutdown: u64 = stdout
        .split("shutdown=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("shutdown count");
    assert_eq!(shutdown, 3);
    assert!(
        hung.contains(&format!(
            "loglag: the sink did not finish within the shutdown deadline; {shutdown} records lost (shutdown)"
        )),
        "{hung}"
    );
}

/// The writer reports a streak of failed writes on stderr once, and a new streak after
/// a success again: a failing disk does not flood stderr, and a recovery is not silent.
#[test]
fn write_failures_are_reported_on_stderr_once_per_streak() {
    if played_a_child_role() {
        return;
    }
    let out = wait_child_within(
        child(
            "write_failures_are_reported_on_stderr_once_per_streak",
            "failing-streaks",
            std::path::Path::new(""),
        ),
        LIMIT,
        "failing streaks",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("records_dropped_io=5 write_errors=5"),
        "{stdout}"
    );
    let reports: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("loglag: write to the log sink failed"))
        .collect();
    assert_eq!(reports.len(), 2, "one per streak: {stderr}");
    assert!(
        reports[0].contains("scripted failure; 1 records dropped (io_error)"),
        "{stderr}"
    );
}

#[test]
fn sync_mode_with_a_panicking_sink_neither_hangs_nor_dies() {
    if played_a_child_role() {
        return;
    }
    let out = wait_child_within(
        child(
            "sync_mode_with_a_panicking_sink_neither_hangs_nor_dies",
            "sync-panicking-sink",
            std::path::Path::new(""),
        ),
        LIMIT,
        "sync + panicking sink",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("records_dropped_io=1 written=9"),
        "{stdout}"
    );
}

// A tmpfs mount is unix's (on Windows the spool's blocks are allocated by set_len at open).
#[cfg(unix)]
#[test]
fn a_spool_on_a_full_file_system_is_an_error_not_sigbus() {
    if played_a_child_role() {
        return;
    }
    let Some(tmpfs) = mount_tmpfs("1m", "a_spool_on_a_full_file_system") else {
        return;
    };
    let out = wait_child_within(
        child(
            "a_spool_on_a_full_file_system_is_an_error_not_sigbus",
            "spool-on-full-fs",
            &tmpfs.path,
        ),
        LIMIT,
        "spool on full fs",
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{:?}: {stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("error: cannot allocate"), "{stdout}");
}

/// A sink that has something to say before the batch (RELP's "sent again", rolling's
/// "reopened") and hangs while the writer writes that notice, until `release`.
struct HangsOnItsNotice {
    release: std::sync::mpsc::Receiver<()>,
    hung: std::sync::mpsc::Sender<()>,
    said: bool,
}

impl Sink for HangsOnItsNotice {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if String::from_utf8_lossy(buf).contains("reopened the file") {
            let _ = self.hung.send(());
            let _ = self.release.recv();
        }
        Ok(buf.len())
    }

    fn take_report(&mut self) -> loglag::sink::SinkReport {
        if std::mem::replace(&mut self.said, true) {
            return loglag::sink::SinkReport::default();
        }
        loglag::sink::SinkReport::notice("reopened the file")
    }
}

/// The batch the writer took before it wrote the sink's notice is in flight while the
/// notice hangs: at the shutdown deadline the guard finds and counts it (`shutdown`),
/// and nothing is left in flight or counted by nobody.
#[test]
fn a_sink_hanging_on_its_notice_leaves_no_record_counted_by_nobody() {
    within(LIMIT, "hanging notice", || {
        let (release_tx, release) = std::sync::mpsc::channel();
        let (hung, hung_rx) = std::sync::mpsc::channel();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .shutdown_timeout(Duration::from_millis(300))
            .build(HangsOnItsNotice {
                release,
                hung,
                said: false,
            })
            .unwrap();
        for i in 0..100 {
            writer.submit(Level::Info, format!("record {i}\n").as_bytes());
        }
        let _ = guard.flush(Duration::from_millis(1));
        hung_rx.recv().unwrap();
        let m = guard.shutdown();
        release_tx.send(()).unwrap();
        assert_accounted(&m);
        assert_eq!(
            (
                m.written_records,
                m.dropped_for(DropReason::Shutdown),
                m.in_flight_records
            ),
            (0, 100, 0),
            "the taken batch is counted lost at the deadline: {m:#?}"
        );
    });
}

/// A `sync`-mode sink that logs its own diagnostics through a second pipeline: that
/// record is the second pipeline's to write, not a re-entry of the first.
struct LogsElsewhere {
    other: NonBlocking,
}

impl Sink for LogsElsewhere {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.other
            .submit(Level::Info, b"the first sink wrote a batch\n");
        Ok(buf.len())
    }
}

#[test]
fn a_sync_sink_logging_through_another_pipeline_is_written_there() {
    within(LIMIT, "sync cross-pipeline", || {
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (other, other_guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(sink)
            .unwrap();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Sync)
            .build(LogsElsewhere {
                other: other.clone(),
            })
            .unwrap();
        writer.submit(Level::Info, b"to the sync pipeline\n");
        let m = guard.shutdown();
        assert_accounted(&m);
        let other_m = other_guard.shutdown();
        assert_accounted(&other_m);
        assert_eq!(
            (
                other_m.accepted,
                other_m.written_records,
                other_m.dropped_for(DropReason::Reentrant)
            ),
            (1, 1, 0),
            "{other_m:#?}"
        );
        assert_eq!(
            record_lines(&out.lock().unwrap()),
            ["the first sink wrote a batch"]
        );
    });
}
