#![cfg(feature = "rolling")]
//! Rolling files can be trusted with a user's directory: retention, compression and the
//! start-up sweep touch only names the sink itself produces, every limit holds in every
//! mode, and `ls | sort` lists the files in the order they were written.
//!
//! The sink is driven as the writer thread drives it (`before_batch`, then `write`),
//! with the clock behind `time_source`, so every rotation happens exactly when a test
//! moves the clock.

use crate::support;

use std::path::{Path, PathBuf};

use loglag::rolling::{Builder, Compression, Naming, Rotation};
use loglag::sink::{IntoSink, RollingFile, Sink};
use proptest::prelude::*;
use support::{decompressed, TestClock};

/// 2026-12-01T00:00:00Z.
const START: i64 = 1_796_083_200;

/// Files a user keeps next to the logs, each made to look like a log file.
const USER_FILES: [&str; 7] = [
    "2025-budget.xlsx",
    "2019-wedding-photos.tar",
    "app.log.2024-incident-notes.md",
    "x.gz.tmp",
    "backup.gz.tmp",
    "app.log.backup",
    "app.log.2026-12-01-notes",
];

/// Seeds the directory with the user's files, and with directories named exactly like
/// rotated files of every format (the sink deletes only regular files).
fn seed(dir: &Path, prefix: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let mut seeded = Vec::new();
    for (i, name) in USER_FILES.iter().enumerate() {
        let path = dir.join(name);
        let content = format!("the user's own file {i}\n").into_bytes();
        std::fs::write(&path, &content).unwrap();
        seeded.push((path, content));
    }
    let p = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}.")
    };
    for stamp in ["2020-01-01", "2020-01-01-00", "2020-01-01-00-00"] {
        let d = dir.join(format!("{p}{stamp}"));
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("inside"), b"kept").unwrap();
    }
    seeded
}

fn user_dirs(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let p = if prefix.is_empty() {
        String::new()
    } else {
        format!("{prefix}.")
    };
    ["2020-01-01", "2020-01-01-00", "2020-01-01-00-00"]
        .iter()
        .map(|s| dir.join(format!("{p}{s}")))
        .collect()
}

/// The sequence numbers in `text`, in order.
fn seqs(text: &[u8]) -> Vec<u64> {
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| {
            let l = std::str::from_utf8(l).unwrap();
            l.strip_prefix("seq=")
                .and_then(|r| r.split(' ').next())
                .unwrap_or_else(|| panic!("not a record: {l:?}"))
                .parse()
                .unwrap()
        })
        .collect()
}

/// One batch of `n` records, as the writer hands it to the sink.
fn write_batch(sink: &mut RollingFile, next: &mut u64, n: usize) {
    let mut batch = Vec::new();
    for _ in 0..n {
        batch.extend_from_slice(format!("seq={:08} {}\n", *next, "x".repeat(40)).as_bytes());
        *next += 1;
    }
    sink.before_batch(batch.len()).unwrap();
    let mut rest = &batch[..];
    while !rest.is_empty() {
        let k = sink.write(rest).unwrap();
        rest = &rest[k..];
    }
}

#[derive(Debug, Clone)]
struct Case {
    rotation: Option<(Rotation, i64)>,
    prefix: &'static str,
    suffix: Option<&'static str>,
    naming: Naming,
    max_file_size: Option<u64>,
    max_log_files: Option<usize>,
    max_total_size: Option<u64>,
    gzip: bool,
    /// (what happens to the clock, records in the batch), per batch.
    steps: Vec<(u8, usize)>,
}

fn case() -> impl Strategy<Value = Case> {
    let rotation = prop_oneof![
        Just(None),
        Just(Some((Rotation::MINUTELY, 60))),
        Just(Some((Rotation::HOURLY, 3600))),
        Just(Some((Rotation::DAILY, 86_400))),
        Just(Some((Rotation::WEEKLY, 7 * 86_400))),
    ];
    (
        rotation,
        prop_oneof![Just(""), Just("app.log"), Just("app")],
        prop_oneof![Just(None), Just(Some("log"))],
        prop_oneof![Just(Naming::Dated), Just(Naming::Fixed)],
        proptest::option::of(150u64..1500),
        proptest::option::of(0usize..5),
        proptest::option::of(300u64..3000),
        any::<bool>(),
        proptest::collection::vec((0u8..5, 1usize..6), 10..70),
    )
        .prop_map(
            |(rotation, prefix, suffix, naming, size, count, total, gzip, steps)| Case {
                rotation,
                prefix,
                suffix,
                naming,
                max_file_size: size,
                max_log_files: count,
                max_total_size: total,
                gzip,
                steps,
            },
        )
}

impl Case {
    fn builder(&self, clock: &TestClock) -> Builder {
        let mut b = Builder::new()
            .naming(self.naming)
            .filename_prefix(self.prefix);
        if let Some((r, _)) = self.rotation {
            b = b.rotation(r);
        }
        if let Some(s) = self.suffix {
            b = b.filename_suffix(s);
        }
        if let Some(m) = self.max_file_size {
            b = b.max_file_size(m);
        }
        if let Some(n) = self.max_log_files {
            b = b.max_log_files(n);
        }
        if let Some(t) = self.max_total_size {
            b = b.max_total_size(t);
        }
        if self.gzip {
            b = b.compression(Compression::Gzip);
        }
        clock.install(b)
    }
}

fn run(case: Case) {
    let dir = tempfile::tempdir().unwrap();
    let seeded = seed(dir.path(), case.prefix);
    let clock = TestClock::at(START + 1234);
    let builder = case.builder(&clock);
    if case.naming == Naming::Fixed && case.prefix.is_empty() {
        let e = builder
            .build(dir.path())
            .expect_err("a fixed name needs a name");
        assert!(e.to_string().contains("needs a file name"), "{e}");
        return;
    }
    let period = case.rotation.map_or(3600, |(_, p)| p);
    let mut sink = builder.build(dir.path()).unwrap().into_sink();
    let mut next = 0u64;
    for &(what, n) in &case.steps {
        match what {
            0 => {}
            1 => clock.advance(period / 2),
            2 => clock.advance(period),
            3 => clock.advance(7),
            // A restart: the next run continues the numbering (not for a fixed name
            // with time rotation, which dates its leftover file by its real mtime).
            _ if case.naming == Naming::Dated || case.rotation.is_none() => {
                sink.wait_housekeeping();
                drop(sink);
                sink = case.builder(&clock).build(dir.path()).unwrap().into_sink();
            }
            _ => {}
        }
        write_batch(&mut sink, &mut next, n);
    }
    sink.wait_housekeeping();
    let current = sink.current_path().to_owned();
    drop(sink);

    // 1. Every user file is byte-identical; the look-alike directories are intact.
    for (path, content) in &seeded {
        assert_eq!(
            &std::fs::read(path).unwrap(),
            content,
            "{path:?} was touched"
        );
    }
    for d in user_dirs(dir.path(), case.prefix) {
        assert_eq!(std::fs::read(d.join("inside")).unwrap(), b"kept", "{d:?}");
    }

    // 2. Our files, in `ls | sort` order, the fixed current name last.
    let user: Vec<PathBuf> = seeded.iter().map(|(p, _)| p.clone()).collect();
    let dirs = user_dirs(dir.path(), case.prefix);
    let mut ours: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| !user.contains(p) && !dirs.contains(p))
        .collect();
    ours.sort();
    if case.naming == Naming::Fixed {
        ours.retain(|p| p != &current);
        ours.push(current.clone());
    }
    assert!(
        ours.contains(&current),
        "the live file exists: {current:?} {ours:?}"
    );
    assert!(
        !ours.iter().any(|p| p.to_string_lossy().ends_with(".tmp")),
        "no temporary left: {ours:?}"
    );
    let rotated: Vec<&PathBuf> = ours.iter().filter(|p| **p != current).collect();

    // 3. The limits hold.
    if let Some(n) = case.max_log_files.filter(|&n| n > 0) {
        assert!(ours.len() <= n, "max_log_files({n}): {ours:?}");
    }
    if let Some(t) = case.max_total_size {
        let on_disk: u64 = rotated
            .iter()
            .map(|p| std::fs::metadata(p).unwrap().len())
            .sum();
        assert!(
            on_disk <= t,
            "max_total_size({t}): {on_disk} bytes in {rotated:?}"
        );
    }
    if case.gzip {
        for p in &rotated {
            assert!(p.to_string_lossy().ends_with(".gz"), "compressed: {p:?}");
        }
    }
    if let Some(m) = case.max_file_size {
        let batch_max = 5 * 55;
        for p in &ours {
            let len = decompressed(p).len() as u64;
            assert!(len <= m.max(batch_max), "{p:?}: {len} > {m}");
        }
    }

    // 4. Sorted names give the records in order, each exactly once; with retention,
    // what is left is the newest, contiguous up to the last record.
    let text: Vec<u8> = ours.iter().flat_map(|p| decompressed(p)).collect();
    let got = seqs(&text);
    let retained = case.max_log_files.is_some_and(|n| n > 0) || case.max_total_size.is_some();
    let first = if retained {
        got.first().copied().unwrap_or(next)
    } else {
        0
    };
    let want: Vec<u64> = (first..next).collect();
    assert_eq!(got, want, "records in {ours:?}");
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(64),
        failure_persistence: None,
        ..ProptestConfig::default()
    })]
    #[test]
    fn retention_touches_only_its_own_names_and_sorted_names_give_the_records_in_order(c in case()) {
        run(c);
    }
}

/// The case: size-only rotation (tracing-appender's default `NEVER`), with
/// both limits. Every rotated file counts.
#[test]
fn size_only_rotation_obeys_max_log_files_and_max_total_size() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = Builder::new()
        .filename_prefix("app.log")
        .max_file_size(200)
        .max_log_files(2)
        .build(dir.path())
        .unwrap()
        .into_sink();
    let mut next = 0;
    for _ in 0..60 {
        write_batch(&mut sink, &mut next, 2);
    }
    sink.wait_housekeeping();
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    drop(sink);

    let dir = tempfile::tempdir().unwrap();
    let mut sink = Builder::new()
        .filename_prefix("app.log")
        .max_file_size(200)
        .max_total_size(500)
        .build(dir.path())
        .unwrap()
        .into_sink();
    for _ in 0..60 {
        write_batch(&mut sink, &mut next, 2);
    }
    sink.wait_housekeeping();
    let current = sink.current_path().to_owned();
    let rotated: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path() != current)
        .map(|e| e.metadata().unwrap().len())
        .sum();
    assert!(rotated <= 500, "{rotated}");
}

#[test]
fn max_log_files_zero_keeps_every_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut sink = Builder::new()
        .filename_prefix("app.log")
        .max_file_size(200)
        .max_log_files(0)
        .build(dir.path())
        .unwrap()
        .into_sink();
    let mut next = 0;
    for _ in 0..20 {
        write_batch(&mut sink, &mut next, 3);
    }
    sink.wait_housekeeping();
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 20);
}

/// Counters are never reused within a period, even when retention deleted the files
/// that had them, and a restart continues from the highest one on disk.
#[test]
fn counters_continue_across_retention_and_restarts() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(START);
    let builder = clock.install(
        Builder::new()
            .rotation(Rotation::DAILY)
            .filename_prefix("app")
            .filename_suffix("log")
            .max_file_size(100)
            .max_log_files(2)
            .compression(Compression::Gzip),
    );
    let mut next = 0;
    let mut names_seen = Vec::new();
    for _run in 0..3 {
        let mut sink = builder.build(dir.path()).unwrap().into_sink();
        for _ in 0..6 {
            write_batch(&mut sink, &mut next, 2);
            names_seen.push(
                sink.current_path()
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
            );
        }
        sink.wait_housekeeping();
    }
    names_seen.dedup();
    let mut sorted = names_seen.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(
        names_seen, sorted,
        "each new file sorts after the last, none reused"
    );
    assert_eq!(
        names_seen.first().map(String::as_str),
        Some("app.2026-12-01.000.log")
    );
}

/// The start-up sweep removes only its own temporaries, and only with a name it
/// could have made.
#[test]
fn the_sweep_removes_only_its_own_temporaries() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(START);
    for name in [
        "x.gz.tmp",
        "backup.gz.tmp",
        "app.log.gz.tmp",
        "app.log.2026-11-30.gz.tmp",
    ] {
        std::fs::write(dir.path().join(name), b"tmp").unwrap();
    }
    let sink = clock
        .install(
            Builder::new()
                .rotation(Rotation::DAILY)
                .filename_prefix("app.log")
                .compression(Compression::Gzip),
        )
        .build(dir.path())
        .unwrap()
        .into_sink();
    sink.wait_housekeeping();
    for kept in ["x.gz.tmp", "backup.gz.tmp", "app.log.gz.tmp"] {
        assert!(dir.path().join(kept).exists(), "{kept} is the user's");
    }
    assert!(
        !dir.path().join("app.log.2026-11-30.gz.tmp").exists(),
        "ours, stale"
    );
    // And without compression configured, the sweep still removes only its own.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("x.gz.tmp"), b"tmp").unwrap();
    let sink = Builder::new()
        .filename_prefix("")
        .rotation(Rotation::DAILY)
        .build(dir.path())
        .unwrap()
        .into_sink();
    sink.wait_housekeeping();
    assert!(dir.path().join("x.gz.tmp").exists());
}

/// A file the writer has open is never compressed or deleted, even when its name is
/// a rotated file's and retention would otherwise remove it.
#[test]
fn the_live_file_is_never_compressed_or_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(START);
    let builder = clock.install(
        Builder::new()
            .rotation(Rotation::HOURLY)
            .filename_prefix("app")
            .max_log_files(1)
            .max_total_size(0)
            .compression(Compression::Gzip),
    );
    let mut sink = builder.build(dir.path()).unwrap().into_sink();
    let mut next = 0;
    for _ in 0..10 {
        write_batch(&mut sink, &mut next, 3);
        clock.advance(3600);
        sink.wait_housekeeping();
        let current = sink.current_path().to_owned();
        assert!(current.exists(), "{current:?}");
        assert!(!current.to_string_lossy().ends_with(".gz"));
    }
    write_batch(&mut sink, &mut next, 3);
    sink.wait_housekeeping();
    let text = decompressed(sink.current_path());
    assert_eq!(seqs(&text), (30..33).collect::<Vec<_>>());
}

// File modes are unix permissions (Windows refuses them: windows_refuses_what_it_cannot_do_by_name).
#[cfg(unix)]
/// The plain file sink takes a mode too; the default is `File::create`'s.
#[test]
fn a_plain_file_sink_is_created_with_the_mode_asked_for() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("private.log");
    let mut sink = loglag::sink::FdSink::append_with_mode(&path, 0o600).unwrap();
    sink.write(b"x\n").unwrap();
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "{mode:o}");
}

/// What Windows cannot do is refused, naming Windows: a file mode, a FIFO, SIGHUP
/// reopening, a name with a character Windows does not allow in file names.
#[cfg(windows)]
#[test]
fn windows_refuses_what_it_cannot_do_by_name() {
    use loglag::sink::FdSink;
    let dir = tempfile::tempdir().unwrap();
    let said = |e: &dyn std::fmt::Display, what: &str| {
        let text = e.to_string();
        assert!(text.contains(what), "should name {what}: {text}");
    };
    let e = FdSink::append_with_mode(dir.path().join("private.log"), 0o600).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
    said(&e, "Windows");
    assert!(!dir.path().join("private.log").exists());
    let mut sink = FdSink::append_with_mode(dir.path().join("plain.log"), 0o666).unwrap();
    sink.write(b"x\n").unwrap();
    assert_eq!(std::fs::read(dir.path().join("plain.log")).unwrap(), b"x\n");
    let e = FdSink::fifo(dir.path().join("app.fifo"), None).unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported);
    said(&e, "Windows");
    let e = "fifo:///run/app.fifo"
        .parse::<loglag::sink::SinkSpec>()
        .unwrap()
        .open()
        .map(|_| ())
        .unwrap_err();
    said(&e, "Windows");
    let e = Builder::new()
        .filename_prefix("app.log")
        .reopen_on_sighup(true)
        .build(dir.path())
        .map(|_| ())
        .unwrap_err();
    said(&e, "SIGHUP");
    said(&e, "Windows");
    for bad in ["app:log", "a\\b", "what?"] {
        let e = Builder::new()
            .filename_prefix(bad)
            .build(dir.path())
            .map(|_| ())
            .unwrap_err();
        said(&e, "Windows does not allow");
    }
}

/// tracing-appender's meaning: an empty `latest_symlink` name is no link (it made
/// `build` fail with NotADirectory).
#[test]
fn an_empty_latest_symlink_name_means_no_link() {
    let dir = tempfile::tempdir().unwrap();
    let appender = Builder::new()
        .rotation(Rotation::DAILY)
        .filename_prefix("app")
        .latest_symlink("")
        .build(dir.path())
        .expect("builds");
    drop(appender);
    let links = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().unwrap().is_symlink())
        .count();
    assert_eq!(links, 0);
}

/// Configurations that would confuse the grammar, or replace a user's file, are
/// refused at build with a clear error, not discovered later.
#[test]
fn confusing_configurations_are_refused_at_build() {
    let dir = tempfile::tempdir().unwrap();
    let err = |b: Builder| b.build(dir.path()).expect_err("refused").to_string();
    let e = err(Builder::new()
        .filename_prefix("app")
        .filename_suffix("log.gz"));
    assert!(e.contains("gz"), "{e}");
    let e = err(Builder::new()
        .filename_prefix("app")
        .latest_symlink("../elsewhere"));
    assert!(e.contains("plain file name"), "{e}");
    std::fs::write(dir.path().join("current"), b"a user's file").unwrap();
    let e = err(Builder::new()
        .filename_prefix("app")
        .latest_symlink("current"));
    assert!(e.contains("not a symlink"), "{e}");
    assert_eq!(
        std::fs::read(dir.path().join("current")).unwrap(),
        b"a user's file"
    );
}

/// A never-rotating file has one name: files that merely look dated are not its own,
/// and a counter longer than six digits is nobody's counter.
#[test]
fn a_never_rotating_file_claims_no_other_name() {
    let dir = tempfile::tempdir().unwrap();
    for name in ["app.log.2026-01-01", "app.log.2026-01-01.4294967295"] {
        std::fs::write(dir.path().join(name), b"mine").unwrap();
    }
    let mut sink = Builder::new()
        .filename_prefix("app.log")
        .max_log_files(1)
        .compression(Compression::Gzip)
        .build(dir.path())
        .unwrap()
        .into_sink();
    let mut next = 0;
    write_batch(&mut sink, &mut next, 3);
    sink.wait_housekeeping();
    for name in ["app.log.2026-01-01", "app.log.2026-01-01.4294967295"] {
        assert_eq!(
            std::fs::read(dir.path().join(name)).unwrap(),
            b"mine",
            "{name}"
        );
    }
}

/// An operator gzips the live file under its own name: the sink notices the file is
/// gone, continues under the next counter, and never replaces the operator's `.gz`.
#[test]
fn a_live_file_compressed_by_someone_else_is_not_overwritten() {
    if support::wine_cannot("a_live_file_compressed_by_someone_else_is_not_overwritten", "delete an open file (its name stays until the last handle closes, and the handle is not told)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(START);
    let mut sink = clock
        .install(
            Builder::new()
                .rotation(Rotation::DAILY)
                .filename_prefix("app")
                .compression(Compression::Gzip),
        )
        .build(dir.path())
        .unwrap()
        .into_sink();
    let mut next = 0;
    write_batch(&mut sink, &mut next, 3);
    let live = sink.current_path().to_owned();
    // What `gzip FILE` does: FILE.gz, then FILE removed.
    let original = std::fs::read(&live).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut enc, &original).unwrap();
    let theirs = enc.finish().unwrap();
    let gz = PathBuf::from(format!("{}.gz", live.display()));
    std::fs::write(&gz, &theirs).unwrap();
    std::fs::remove_file(&live).unwrap();
    write_batch(&mut sink, &mut next, 3);
    assert_ne!(sink.current_path(), live.as_path(), "a new name");
    assert!(sink.take_report().notice.is_some(), "said in-band");
    clock.advance(86_400);
    write_batch(&mut sink, &mut next, 3);
    sink.wait_housekeeping();
    assert_eq!(
        std::fs::read(&gz).unwrap(),
        theirs,
        "the operator's .gz is untouched"
    );
    let mut names: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    names.sort();
    let text: Vec<u8> = names.iter().flat_map(|p| decompressed(p)).collect();
    // Each record once. (Their order across these names is not sorted: the counter
    // was taken because someone else took the name.)
    let mut got = seqs(&text);
    got.sort();
    assert_eq!(got, (0..9).collect::<Vec<_>>(), "{names:?}");
}

/// A burst of rotations with gzip and `max_total_size`: files waiting for compression
/// are counted at what they will occupy once compressed, not at their full size, so
/// retention never deletes the compressed history to make room for them. (Counted at
/// full size, a 64 KiB limit kept 6 files, 12.5 KB, of ~200.)
#[test]
fn max_total_size_with_gzip_keeps_the_compressed_history_through_a_burst() {
    let dir = tempfile::tempdir().unwrap();
    let limit: u64 = 64 << 10;
    let mut sink = Builder::new()
        .filename_prefix("app.log")
        .max_file_size(8 << 10)
        .max_total_size(limit)
        .compression(Compression::Gzip)
        .build(dir.path())
        .unwrap()
        .into_sink();
    let mut next = 0;
    // ~300 rotations, as fast as the writer can go: the housekeeper lags behind.
    for _ in 0..300 {
        write_batch(&mut sink, &mut next, 140);
    }
    sink.wait_housekeeping();
    let current = sink.current_path().to_owned();
    let rotated: Vec<(String, u64)> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .filter(|e| e.path() != current)
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            (name, e.metadata().unwrap().len())
        })
        .collect();
    assert!(
        rotated.iter().all(|(n, _)| n.ends_with(".gz")),
        "all compressed: {rotated:?}"
    );
    let total: u64 = rotated.iter().map(|(_, len)| len).sum();
    let largest = rotated.iter().map(|(_, len)| *len).max().unwrap_or(0);
    assert!(total <= limit, "{total} bytes kept, over the limit");
    assert!(
        total + largest > limit,
        "only {total} bytes kept in {} files: the history was deleted for files about \
         to be compressed",
        rotated.len()
    );
}

/// A fixed name's rotation swaps the new file in under a temporary name and then
/// renames the old one from it; a crash in between leaves the old file's records at
/// `.NAME.PID.N.new`. The next start gives them a rotated name (so retention and
/// compression see them), and leaves alone a live process's temporary.
#[test]
fn a_rotation_left_half_done_by_a_dead_process_is_given_a_rotated_name() {
    let dir = tempfile::tempdir().unwrap();
    // A process that has ended: its pid is a dead one.
    #[cfg(unix)]
    let mut child = std::process::Command::new("true").spawn().unwrap();
    #[cfg(windows)]
    let mut child = std::process::Command::new("cmd")
        .args(["/c", "exit"])
        .spawn()
        .unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let leftover = dir.path().join(format!(".app.log.{dead}.0.new"));
    std::fs::write(&leftover, b"seq=00000000 left by a crash\n").unwrap();
    let live = dir
        .path()
        .join(format!(".app.log.{}.0.new", std::process::id()));
    std::fs::write(&live, b"").unwrap();
    let sink = Builder::new()
        .naming(Naming::Fixed)
        .filename_prefix("app.log")
        .max_file_size(1 << 20)
        .build(dir.path())
        .unwrap()
        .into_sink();
    sink.wait_housekeeping();
    assert!(!leftover.exists(), "adopted");
    assert!(live.exists(), "a live process's temporary is its own");
    let adopted: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("app.log.") && n.ends_with(".000"))
        .collect();
    assert_eq!(adopted.len(), 1, "{adopted:?}");
    assert_eq!(
        std::fs::read(dir.path().join(&adopted[0])).unwrap(),
        b"seq=00000000 left by a crash\n"
    );
}
