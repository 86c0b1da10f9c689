#![cfg(feature = "rolling")]
//! Rolling files through the pipeline: nothing lost or duplicated across rotations,
//! compression and a SIGHUP reopen; retention deletes exactly the oldest files; the
//! tracing-appender names.

use crate::support;

use std::io::Read;
use std::path::{Path, PathBuf};

use loglag::rolling::{Builder, Compression, Naming, Rotation};
use loglag::sink::IntoSink;
use loglag::{Level, NonBlockingBuilder, Overflow};

/// A rolling file at `dir/name` that keeps its name and is renamed when rotated.
fn fixed(name: &str) -> Builder {
    Builder::new().naming(Naming::Fixed).filename_prefix(name)
}

/// Every file in `dir` whose name starts with `name`, in the order `ls | sort` gives
/// (the order the promise is about), then the current file, decompressed.
fn read_all(dir: &Path, name: &str) -> (Vec<PathBuf>, Vec<u8>) {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            n.starts_with(&format!("{name}.")) && !n.ends_with(".tmp")
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    files.push(dir.join(name));
    let mut all = Vec::new();
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        if f.extension().is_some_and(|e| e == "gz") {
            let mut d = flate2::read::GzDecoder::new(&bytes[..]);
            d.read_to_end(&mut all).unwrap();
        } else {
            all.extend_from_slice(&bytes);
        }
    }
    (files, all)
}

/// Checks that `text` holds records `seq=0..n` exactly once and in order.
fn assert_exactly_once(text: &[u8], n: u64) {
    let mut next = 0;
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = std::str::from_utf8(line).unwrap();
        let seq: u64 = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("seq="))
            .unwrap_or_else(|| panic!("not a record: {line:?}"))
            .parse()
            .unwrap();
        assert_eq!(
            seq, next,
            "record {next} missing, duplicated or out of order"
        );
        next += 1;
    }
    assert_eq!(next, n, "records written");
}

fn flood(builder: Builder, dir: &Path, n: u64) -> std::io::Result<()> {
    let sink = builder.build(dir).map_err(std::io::Error::other)?;
    let (writer, guard) = NonBlockingBuilder::default()
        .overflow(Overflow::Block)
        .batch_bytes(8 << 10)
        .build(sink)
        .unwrap();
    for seq in 0..n {
        writer.submit(
            Level::Info,
            format!("record seq={seq} {}\n", "x".repeat(90)).as_bytes(),
        );
    }
    let m = guard.shutdown();
    assert_eq!(m.written_records, n, "{m:?}");
    assert_eq!(m.dropped_records(), 0);
    Ok(())
}

#[test]
fn size_rotation_with_compression_loses_and_duplicates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let n = 50_000;
    // The guard's shutdown joins the writer, whose sink joins the housekeeper: every
    // rotated file is compressed when `flood` returns.
    flood(
        fixed("app.log")
            .max_file_size(256 << 10)
            .compression(Compression::Gzip),
        dir.path(),
        n,
    )
    .unwrap();
    let (files, text) = read_all(dir.path(), "app.log");
    assert!(files.len() >= 15, "{files:?}");
    for f in &files[..files.len() - 1] {
        assert!(
            f.to_string_lossy().ends_with(".gz"),
            "rotated files are compressed: {f:?}"
        );
        let raw = std::fs::metadata(f).unwrap().len();
        assert!(
            raw < 256 << 10,
            "and smaller than a file's limit: {f:?} {raw}"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    assert_exactly_once(&text, n);
}

#[test]
fn no_file_exceeds_its_size_by_more_than_a_batch_and_each_ends_a_record() {
    let dir = tempfile::tempdir().unwrap();
    flood(fixed("app.log").max_file_size(64 << 10), dir.path(), 20_000).unwrap();
    let (files, text) = read_all(dir.path(), "app.log");
    for f in &files {
        let bytes = std::fs::read(f).unwrap();
        assert!(bytes.len() <= 64 << 10, "{f:?}: {}", bytes.len());
        assert!(
            bytes.is_empty() || bytes.ends_with(b"\n"),
            "{f:?} ends mid-record"
        );
    }
    assert_exactly_once(&text, 20_000);
}

#[test]
fn retention_deletes_exactly_the_oldest_files() {
    let dir = tempfile::tempdir().unwrap();
    // Someone else's files in the same directory are never touched.
    for other in ["app.log.bak", "notes.txt", "app.logger.2026-01-01"] {
        std::fs::write(dir.path().join(other), b"keep me").unwrap();
    }
    let n = 30_000;
    flood(
        fixed("app.log").max_file_size(128 << 10).max_log_files(4),
        dir.path(),
        n,
    )
    .unwrap();
    for other in ["app.log.bak", "notes.txt", "app.logger.2026-01-01"] {
        std::fs::remove_file(dir.path().join(other)).expect("left alone");
    }
    let (files, text) = read_all(dir.path(), "app.log");
    assert_eq!(files.len(), 4, "3 rotated and the current: {files:?}");
    // What is left is the newest records, contiguous up to the last one.
    let first: u64 = std::str::from_utf8(&text)
        .unwrap()
        .split_whitespace()
        .find_map(|w| w.strip_prefix("seq="))
        .unwrap()
        .parse()
        .unwrap();
    assert!(first > 0, "the oldest files are gone");
    let mut next = first;
    for line in text.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let line = std::str::from_utf8(line).unwrap();
        let seq: u64 = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("seq="))
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(seq, next);
        next += 1;
    }
    assert_eq!(next, n, "the newest are all there");
    // Total-size retention too.
    let dir = tempfile::tempdir().unwrap();
    flood(
        fixed("app.log")
            .max_file_size(64 << 10)
            .max_total_size(200 << 10),
        dir.path(),
        20_000,
    )
    .unwrap();
    let (files, _) = read_all(dir.path(), "app.log");
    let rotated: u64 = files[..files.len() - 1]
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert!(rotated <= 200 << 10 && rotated > 100 << 10, "{rotated}");
}

#[test]
fn time_rotation_under_load_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sink = fixed("app.log")
        .rotation(Rotation::every(std::time::Duration::from_secs(1)))
        .build(dir.path())
        .unwrap();
    let (writer, guard) = NonBlockingBuilder::default()
        .overflow(Overflow::Block)
        .build(sink)
        .unwrap();
    // Log until two rotations have happened: the test waits on the files, not a clock.
    let mut seq = 0;
    loop {
        writer.submit(Level::Info, format!("record seq={seq}\n").as_bytes());
        seq += 1;
        if seq % 1000 == 0 {
            let rotated = std::fs::read_dir(dir.path())
                .unwrap()
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("app.log."))
                .count();
            if rotated >= 2 {
                break;
            }
            std::thread::yield_now();
        }
    }
    let m = guard.shutdown();
    assert_eq!(m.written_records, seq);
    let (files, text) = read_all(dir.path(), "app.log");
    assert!(files.len() >= 3);
    // Rotated by time: named after their period's start, to the second.
    let name = files[0].file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(name.len(), "app.log.2026-12-01-03-17-34".len(), "{name}");
    assert_exactly_once(&text, seq);
}

// SIGHUP is unix's (Windows refuses reopen_on_sighup: rolling_trust.rs, windows_refuses_what_it_cannot_do_by_name).
#[cfg(all(feature = "signals", unix))]
#[test]
fn a_sighup_reopen_under_load_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let sink = fixed("app.log")
        .reopen_on_sighup(true)
        .build(dir.path())
        .unwrap();
    let (writer, guard) = NonBlockingBuilder::default()
        .overflow(Overflow::Block)
        .build(sink)
        .unwrap();
    let n = 40_000u64;
    for seq in 0..n {
        writer.submit(Level::Info, format!("record seq={seq}\n").as_bytes());
        if seq == n / 2 {
            // logrotate's `create`: move the file away, then signal.
            std::fs::rename(dir.path().join("app.log"), dir.path().join("app.log.1")).unwrap();
            // SAFETY: raising a signal the builder registered a handler for.
            unsafe { libc::raise(libc::SIGHUP) };
        }
    }
    let m = guard.shutdown();
    assert_eq!(m.written_records, n);
    let old = std::fs::read(dir.path().join("app.log.1")).unwrap();
    let new = std::fs::read(dir.path().join("app.log")).unwrap();
    assert!(!new.is_empty(), "the file was reopened at its path");
    assert_exactly_once(&[old, new].concat(), n);
}

#[test]
fn dated_names_match_tracing_appender() {
    let dir = tempfile::tempdir().unwrap();
    let hour = |t: std::time::SystemTime| {
        let s = loglag::__lab::rfc3339(t);
        format!("{}-{}", &s[..10], &s[11..13])
    };
    let before = hour(std::time::SystemTime::now());
    let mut appender = loglag::rolling::hourly(dir.path(), "app.log");
    std::io::Write::write_all(&mut appender, b"one\n").unwrap();
    let after = hour(std::time::SystemTime::now());
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names == [format!("app.log.{before}")] || names == [format!("app.log.{after}")],
        "{names:?}"
    );
    let dir = tempfile::tempdir().unwrap();
    let mut never = loglag::rolling::never(dir.path(), "fixed.log");
    std::io::Write::write_all(&mut never, b"x\n").unwrap();
    assert_eq!(std::fs::read(dir.path().join("fixed.log")).unwrap(), b"x\n");
    if !support::wine_cannot(
        "dated_names_match_tracing_appender, its latest link",
        "make a symbolic link",
    ) {
        let dir = tempfile::tempdir().unwrap();
        let appender = loglag::rolling::Builder::new()
            .rotation(loglag::rolling::Rotation::DAILY)
            .filename_prefix("svc")
            .filename_suffix("log")
            .latest_symlink("svc.current")
            .build(dir.path())
            .unwrap();
        drop(appender);
        let link = std::fs::read_link(dir.path().join("svc.current")).unwrap();
        let name = link.to_string_lossy();
        assert!(
            name.starts_with("svc.")
                && name.ends_with(".log")
                && name.len() == "svc.2026-12-01.log".len(),
            "{name}"
        );
    }
    // tracing-appender allows no prefix: names are then just dates, and retention must
    // still leave everything else in the directory alone.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), b"mine").unwrap();
    std::fs::write(dir.path().join("2020-01-01.log"), b"old log").unwrap();
    let appender = loglag::rolling::Builder::new()
        .rotation(loglag::rolling::Rotation::DAILY)
        .filename_suffix("log")
        .max_log_files(1)
        .build(dir.path())
        .unwrap();
    let sink = appender.into_sink();
    sink.wait_housekeeping();
    let names = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect::<std::collections::BTreeSet<_>>();
    assert!(names.contains("notes.txt"), "{names:?}");
    assert!(
        !names.contains("2020-01-01.log"),
        "the old dated file went: {names:?}"
    );
    assert_eq!(names.len(), 2, "notes.txt and today's file: {names:?}");
}
