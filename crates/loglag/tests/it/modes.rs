//! `LOGLAG_MODE`: every name, and `format-only` builds records while `off` does not; a
//! bad value warns once and `finish` runs `async`, `build` refuses it, and values are
//! case-insensitive (each of those in a real child process with the variable set).
//! Every wait is bounded by `support::within` or `support::wait_child_within`.
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

/// Runs this binary's test `test` again as a child playing `role` (see
/// [`played_a_child_role`]) with `LOGLAG_MODE` set to `mode`.
fn child_with_mode(
    test: &str,
    role: &str,
    mode: &str,
    out: &std::path::Path,
) -> std::process::Output {
    let child = rerun_as_child(module_path!(), test, role, out)
        .env("LOGLAG_MODE", mode)
        .spawn()
        .unwrap();
    wait_child_within(child, LIMIT, role)
}

/// In a child started by [`child_with_mode`], plays its role and returns true; in the
/// test itself, returns false.
fn played_a_child_role() -> bool {
    let Some((role, out)) = child_role() else {
        return false;
    };
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
            Err(loglag::BuildError::Mode(e)) => println!("refused: {e}"),
            Err(other) => println!("wrong error: {other}"),
            Ok(_) => println!("accepted"),
        },
        other => panic!("unknown role {other}"),
    }
    true
}

#[test]
fn a_typo_in_loglag_mode_warns_once_and_the_service_starts_in_async() {
    if played_a_child_role() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let out = child_with_mode(
        "a_typo_in_loglag_mode_warns_once_and_the_service_starts_in_async",
        "finish",
        "fast",
        &log,
    );
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
    if played_a_child_role() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = child_with_mode(
        "loglag_mode_is_case_insensitive",
        "finish",
        " SYNC ",
        &dir.path().join("app.log"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("mode=sync"), "{stdout}");
    assert!(!String::from_utf8_lossy(&out.stderr).contains("LOGLAG_MODE"));
    assert_eq!("Format-Only".parse::<Mode>().unwrap(), Mode::FormatOnly);
}

#[test]
fn build_refuses_a_bad_loglag_mode() {
    if played_a_child_role() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = child_with_mode(
        "build_refuses_a_bad_loglag_mode",
        "build",
        "fast",
        &dir.path().join("unused"),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("refused: invalid LOGLAG_MODE \"fast\""),
        "{stdout}"
    );
}
