//! The pipeline at its edges: configuration that cannot crash the service, a spool
//! that cannot be used, lines that stay whole, drop reports in the log's own format,
//! and drops just before a kill -9 announced by recovery.

mod support;

use std::io::Write;
use std::time::Duration;

use loglag::spool::SpoolErrorKind;
use loglag::{BuildError, Level, Mode, NonBlockingBuilder, Overflow};
use support::{within, Behaviour, Gate, TestSink};

const LIMIT: Duration = Duration::from_secs(120);
const CHILD_ENV: &str = "LOGLAG_EDGES_CHILD";

/// Runs this binary's `edges_child_main` with `LOGLAG_MODE` set to `mode`.
fn child_with_mode(role: &str, mode: &str, out: &std::path::Path) -> std::process::Output {
    let child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "edges_child_main",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, role)
        .env("LOGLAG_MODE", mode)
        .env("LOGLAG_EDGES_OUT", out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    support::wait_child_within(child, LIMIT, role)
}

/// Not a test of its own: the child processes' entry point.
#[test]
fn edges_child_main() {
    let Ok(role) = std::env::var(CHILD_ENV) else {
        return;
    };
    let out = std::env::var("LOGLAG_EDGES_OUT").unwrap();
    match role.as_str() {
        "finish" => {
            let file = std::fs::File::create(&out).unwrap();
            let (writer, guard) = NonBlockingBuilder::default().finish(file);
            writer.submit(Level::Info, b"the service started\n");
            println!("mode={}", writer.mode());
            let m = guard.shutdown();
            println!("written={}", m.written_records);
        }
        "build" => match NonBlockingBuilder::default()
            .build(loglag::sink::WriterSink::new(std::io::sink()))
        {
            Err(BuildError::Mode(e)) => println!("refused: {e}"),
            Err(other) => println!("wrong error: {other}"),
            Ok(_) => println!("accepted"),
        },
        "drops-then-sigkill" => {
            // The writer is held in its first write, so every drop stays unannounced.
            let gate = Gate::closed();
            let (sink, entered) = TestSink::new(Behaviour::Fast).0.gated(gate);
            let (writer, _guard) = NonBlockingBuilder::default()
                .spool(&out)
                .capacity_bytes(64 << 10)
                .build(sink)
                .unwrap();
            writer.submit(Level::Error, b"seq=0\n");
            entered.recv().unwrap();
            for seq in 1..20_000u64 {
                writer.submit(Level::Info, format!("seq={seq}\n").as_bytes());
            }
            let m = writer.metrics();
            println!("returned={} dropped={}", m.accepted, m.dropped_records());
            std::io::stdout().flush().unwrap();
            loop {
                std::thread::park(); // until the parent's SIGKILL
            }
        }
        other => panic!("unknown role {other}"),
    }
}

#[test]
fn a_typo_in_loglag_mode_warns_once_and_the_service_starts_in_async() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let out = child_with_mode("finish", "fast", &log);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}\n{stdout}\n{stderr}", out.status);
    assert!(
        stdout.contains("mode=async") && stdout.contains("written=1"),
        "{stdout}"
    );
    assert_eq!(std::fs::read(&log).unwrap(), b"the service started\n");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("LOGLAG_MODE"))
        .collect();
    assert_eq!(warnings.len(), 1, "one warning: {stderr}");
    assert!(
        warnings[0].contains("\"fast\"") && warnings[0].contains("off, format-only, sync or async"),
        "it names the value and the valid ones: {stderr}"
    );
}

#[test]
fn loglag_mode_is_case_insensitive() {
    let dir = tempfile::tempdir().unwrap();
    let out = child_with_mode("finish", " SYNC ", &dir.path().join("app.log"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("mode=sync"), "{stdout}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("LOGLAG_MODE"));
    assert_eq!("Format-Only".parse::<Mode>().unwrap(), Mode::FormatOnly);
}

#[test]
fn build_refuses_a_bad_loglag_mode() {
    let dir = tempfile::tempdir().unwrap();
    let out = child_with_mode("build", "fast", &dir.path().join("unused"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("refused: invalid LOGLAG_MODE \"fast\""),
        "{stdout}"
    );
}

#[test]
fn a_spool_in_use_is_warned_about_and_the_pipeline_runs_without_it() {
    within(LIMIT, "spool in use", || {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("app.spool");
        let (first, _first_guard) = NonBlockingBuilder::default()
            .spool(&spool)
            .build(TestSink::new(Behaviour::Fast).0)
            .unwrap();
        assert!(!first.metrics().spool_refused);
        // A restart while the old instance is still exiting: the second must not panic.
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (second, guard) = NonBlockingBuilder::default()
            .spool(&spool)
            .build(sink)
            .unwrap();
        assert!(second.metrics().spool_refused, "Metrics say so");
        second.submit(Level::Info, b"still logging\n");
        let m = guard.shutdown();
        assert_eq!(m.written_records, 1);
        assert_eq!(out.lock().unwrap().as_slice(), b"still logging\n");
        // With the spool required, build fails instead, with the typed error.
        match NonBlockingBuilder::default()
            .spool(&spool)
            .spool_required(true)
            .build(TestSink::new(Behaviour::Fast).0)
        {
            Err(BuildError::Spool(e)) => assert_eq!(e.kind, SpoolErrorKind::InUse, "{e}"),
            Err(other) => panic!("wrong error: {other}"),
            Ok(_) => panic!("a spool in use was accepted"),
        }
    });
}

#[test]
fn a_corrupt_spool_is_warned_about_and_the_pipeline_runs_without_it() {
    within(LIMIT, "corrupt spool", || {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("app.spool");
        std::fs::write(
            &spool,
            b"this is not a spool at all, just text\n".repeat(200),
        )
        .unwrap();
        let before = std::fs::read(&spool).unwrap();
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (writer, guard) = NonBlockingBuilder::default()
            .spool(&spool)
            .build(sink)
            .unwrap();
        assert!(writer.metrics().spool_refused);
        writer.submit(Level::Info, b"x\n");
        guard.shutdown();
        assert_eq!(out.lock().unwrap().as_slice(), b"x\n");
        assert_eq!(
            std::fs::read(&spool).unwrap(),
            before,
            "the refused file is left alone"
        );
        let err = NonBlockingBuilder::default()
            .spool(&spool)
            .spool_required(true)
            .build(TestSink::new(Behaviour::Fast).0)
            .expect_err("refused");
        assert!(matches!(err, BuildError::Spool(_)), "{err:?}");
        // And it still converts into an io::Error for `?`.
        let io: std::io::Error = err.into();
        assert!(loglag::spool::SpoolError::of(&io).is_some());
    });
}

/// `writeln!` with several arguments is several `write` calls: they make one record.
#[test]
fn writeln_makes_one_record_per_line() {
    within(LIMIT, "writeln", || {
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (mut writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .build(sink)
            .unwrap();
        let n = 10_000u64;
        for seq in 0..n {
            let part = "part";
            writeln!(writer, "seq={seq} {part} {}", seq * 3).unwrap();
        }
        // `write!` then a plain write of the newline: one record too.
        write!(writer, "seq={n} part").unwrap();
        writer
            .write_all(format!(" {}\n", n * 3).as_bytes())
            .unwrap();
        // A plain write is a record of its own, newline or not (tracing-appender's).
        writer.write_all(b"plain").unwrap();
        // A line without its newline goes out on flush.
        write!(writer, "no newline").unwrap();
        std::io::Write::flush(&mut writer).unwrap();
        let m = guard.shutdown();
        assert_eq!(m.accepted, n + 3, "one record per line");
        let text = String::from_utf8(out.lock().unwrap().clone()).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        assert_eq!(lines.len() as u64, n + 2);
        for (seq, line) in lines.iter().take(n as usize + 1).enumerate() {
            assert_eq!(*line, format!("seq={seq} part {}\n", seq * 3));
        }
        assert_eq!(
            lines[n as usize + 1],
            "plainno newline",
            "two records, no newline in either"
        );
    });
}

/// Under drops and size rotation, every line on disk is whole, rotated files begin
/// with a line, and each line is written exactly once or counted as dropped.
#[test]
fn lines_stay_whole_under_drops_and_rotation() {
    within(LIMIT, "whole lines", || {
        let dir = tempfile::tempdir().unwrap();
        let appender = loglag::rolling::Builder::new()
            .filename_prefix("app.log")
            .max_file_size(1 << 10)
            .build(dir.path())
            .unwrap();
        let (mut writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::DropNewest)
            .capacity_bytes(8 << 10)
            // Batches smaller than a file: whatever the timing, the 8 KiB accepted
            // before the first drop are written in several batches, so files rotate.
            .batch_bytes(512)
            .build(appender)
            .unwrap();
        let n = 40_000u64;
        for seq in 0..n {
            // Three writes per line, as `writeln!` does with arguments.
            write!(writer, "seq={seq} ").unwrap();
            write!(writer, "{}", "y".repeat(30)).unwrap();
            writeln!(writer).unwrap();
        }
        let m = guard.shutdown();
        assert_eq!(m.accepted, n);
        assert_eq!(m.written_records + m.dropped_records(), n, "{m:?}");
        let mut seen = vec![false; n as usize];
        let mut files = 0;
        for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
            files += 1;
            let text = String::from_utf8(std::fs::read(e.path()).unwrap()).unwrap();
            assert!(
                text.is_empty() || text.ends_with('\n'),
                "{:?} ends mid-line",
                e.path()
            );
            for line in text.lines() {
                if line.contains(" WARN loglag: dropped ") {
                    continue; // the in-band report, between whole lines
                }
                let (head, tail) = line.split_once(' ').unwrap_or_else(|| panic!("{line:?}"));
                assert_eq!(tail, "y".repeat(30), "a whole line: {line:?}");
                let seq: usize = head.strip_prefix("seq=").unwrap().parse().unwrap();
                assert!(!seen[seq], "seq {seq} twice");
                seen[seq] = true;
            }
        }
        assert!(files > 1, "it rotated");
        let written = seen.iter().filter(|s| **s).count() as u64;
        assert_eq!(written, m.written_records, "every written line is on disk");
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

/// Drops counted just before a kill -9 are announced by recovery: every record whose
/// call returned is in the sink or in that count, exactly.
#[test]
fn drops_just_before_a_kill_9_are_announced_by_recovery() {
    use std::io::BufRead;
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("app.spool");
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "edges_child_main",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "drops-then-sigkill")
        .env("LOGLAG_EDGES_OUT", &spool)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // The test harness prints its own lines first.
    let line = std::io::BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map(Result::unwrap)
        .find_map(|l| l.find("returned=").map(|at| l[at..].to_owned()))
        .expect("the child reports before it is killed");
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let numbers: Vec<u64> = line
        .split_whitespace()
        .map(|kv| kv.split_once('=').unwrap().1.parse().unwrap())
        .collect();
    let (returned, dropped) = (numbers[0], numbers[1]);
    assert!(dropped > 0, "the test needs drops: {line}");

    let out = dir.path().join("recovered.log");
    let r = loglag::spool::recover(&spool, loglag::sink::FdSink::append(&out).unwrap()).unwrap();
    assert_eq!(r.unannounced_drops, dropped, "{r:?}");
    let text = std::fs::read_to_string(&out).unwrap();
    let mut present = std::collections::HashSet::new();
    let mut announced = 0;
    for line in text.lines() {
        if let Some(rest) = line.split(" WARN loglag: dropped ").nth(1) {
            announced += rest.split(' ').next().unwrap().parse::<u64>().unwrap();
            assert!(rest.contains("before the previous process ended"), "{line}");
            continue;
        }
        let seq: u64 = line
            .strip_prefix("seq=")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("neither a record nor a drop report: {line:?}"));
        assert!(present.insert(seq), "seq {seq} twice");
    }
    assert_eq!(announced, dropped);
    assert_eq!(
        present.len() as u64 + announced,
        returned,
        "records returned = records present + records announced as dropped"
    );
    // A second recovery announces nothing again.
    let again =
        loglag::spool::recover(&spool, loglag::sink::FdSink::append(&out).unwrap()).unwrap();
    assert_eq!((again.records, again.unannounced_drops), (0, 0));
}

/// Overflow policies have names that read back, for configuration files and flags.
#[test]
fn overflow_policies_parse_from_their_names() {
    for policy in [
        Overflow::Block,
        Overflow::BlockFor(Duration::from_millis(5)),
        Overflow::DropNewest,
        Overflow::DropOldest,
        Overflow::ShedByLevel,
    ] {
        assert_eq!(
            policy.name().parse::<Overflow>().unwrap(),
            policy,
            "{policy}"
        );
    }
    assert_eq!(
        "Drop_Newest".parse::<Overflow>().unwrap(),
        Overflow::DropNewest
    );
    for bad in [
        "fast",
        "block-for=",
        "block-for=5",
        "block-for=-1ms",
        "block-for=5parsecs",
    ] {
        let e = bad.parse::<Overflow>().unwrap_err().to_string();
        assert!(e.contains("shed-by-level"), "{bad}: {e}");
    }
}
