#![cfg(feature = "rolling")]
//! Rolling files under faults from outside: symlinks planted at every name the sink
//! creates (the current file, the next dated file, the fixed file's rotated name, the
//! compression temporary, the `latest` link), a full disk in the middle of gzip, the
//! current file or its whole directory deleted, the current file renamed without a
//! SIGHUP, and the modes files are created with.
//!
//! Time is a test clock (`time_source` over an atomic), so a rotation happens exactly
//! when a test moves it; the sink is driven directly (`before_batch`, then `write`) or
//! through the pipeline with `flush`. Nothing here waits on a timer.

use crate::support;

#[cfg(unix)]
use std::io::Write;
use std::ops::Range;
#[cfg(unix)]
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::sync::OnceLock;
use std::time::Duration;

use loglag::rolling::{Builder, Compression, Naming, Rotation};
use loglag::sink::{IntoSink, RollingFile, Sink};
use loglag::{Level, NonBlockingBuilder, Overflow};

#[cfg(unix)]
use support::mount_tmpfs;
use support::{decompressed, TestClock};

/// 2026-12-01T03:17:34Z: the hourly stamp is `2026-12-01-03`, the next `2026-12-01-04`.
const T0: i64 = 1_796_095_054;
const HOUR: i64 = 3600;

/// `YYYY-MM-DD-HH` (UTC) of `secs`, computed here rather than taken from the library
/// (Howard Hinnant's civil-from-days).
fn hour_stamp(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let hour = secs.rem_euclid(86_400) / 3600;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}-{hour:02}")
}

#[test]
fn the_test_clock_names_the_hours_it_is_meant_to() {
    assert_eq!(hour_stamp(T0), "2026-12-01-03");
    assert_eq!(hour_stamp(T0 + HOUR), "2026-12-01-04");
    assert_eq!(hour_stamp(T0 + 21 * HOUR), "2026-12-02-00");
}

/// Hourly, `app.YYYY-MM-DD-HH.log`, on the test clock.
fn hourly_dated(clock: &TestClock) -> Builder {
    Builder::new()
        .rotation(Rotation::HOURLY)
        .filename_prefix("app")
        .filename_suffix("log")
        .time_source(clock.source())
}

/// Hourly, current file `app.log`, rotated to `app.log.YYYY-MM-DD-HH`, on the test clock.
fn hourly_fixed(clock: &TestClock) -> Builder {
    Builder::new()
        .rotation(Rotation::HOURLY)
        .naming(Naming::Fixed)
        .filename_prefix("app.log")
        .time_source(clock.source())
}

/// The dated name of the hour holding `secs`.
fn dated_name(secs: i64) -> String {
    format!("app.{}.log", hour_stamp(secs))
}

fn record(seq: u64) -> Vec<u8> {
    format!("record seq={seq} {}\n", "x".repeat(40)).into_bytes()
}

fn records(seqs: Range<u64>) -> Vec<u8> {
    seqs.flat_map(record).collect()
}

/// Writes `bytes` as one batch, as the writer thread does: `before_batch` (where the
/// sink rotates), then `write` until all of it is written.
fn write_batch(sink: &mut RollingFile, bytes: &[u8]) {
    sink.before_batch(bytes.len()).unwrap();
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = sink.write(rest).unwrap();
        assert!(n > 0, "the sink wrote nothing");
        rest = &rest[n..];
    }
}

/// The `seq=` of every record line, in file order (other lines skipped).
fn seqs(bytes: &[u8]) -> Vec<u64> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter_map(|l| l.strip_prefix("record seq="))
        .map(|rest| rest.split_whitespace().next().unwrap().parse().unwrap())
        .collect()
}

/// Lines that are not records.
fn other_lines(bytes: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(bytes)
        .lines()
        .filter(|l| !l.starts_with("record seq="))
        .map(str::to_owned)
        .collect()
}

fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn exists(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok()
}

/// A file outside the log directory that a planted link points at; no test may change it.
struct Victim {
    _dir: tempfile::TempDir,
    path: PathBuf,
    content: Vec<u8>,
}

impl Victim {
    fn new() -> Victim {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("victim");
        let content = b"precious data that is not a log file\n".to_vec();
        std::fs::write(&path, &content).unwrap();
        Victim {
            _dir: dir,
            path,
            content,
        }
    }

    /// Plants a symlink at `at` pointing at the victim.
    fn plant(&self, at: &Path) {
        #[cfg(unix)]
        std::os::unix::fs::symlink(&self.path, at).unwrap();
        #[cfg(windows)]
        std::os::windows::fs::symlink_file(&self.path, at).unwrap();
    }

    fn assert_unchanged(&self) {
        let now = std::fs::read(&self.path).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&now),
            String::from_utf8_lossy(&self.content),
            "the victim behind the planted link was changed"
        );
    }

    /// The planted link is still there and still points at the victim (it was neither
    /// followed nor replaced).
    fn assert_link_intact(&self, at: &Path) {
        let meta = std::fs::symlink_metadata(at).unwrap();
        assert!(
            meta.file_type().is_symlink(),
            "{} is no longer the link",
            at.display()
        );
        assert_eq!(std::fs::read_link(at).unwrap(), self.path);
    }
}

// ---------------------------------------------------------------------------------
// 1. Planted symlinks, one per name the sink creates.
// ---------------------------------------------------------------------------------

#[test]
fn a_link_planted_at_the_compression_temporary_is_not_followed_and_the_file_is_gzipped() {
    if support::wine_cannot(
        "a_link_planted_at_the_compression_temporary_is_not_followed_and_the_file_is_gzipped",
        "make a symbolic link (it reports success and makes nothing)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new();
    let clock = TestClock::at(T0);
    let mut sink = hourly_dated(&clock)
        .compression(Compression::Gzip)
        .build(dir.path())
        .unwrap()
        .into_sink();
    // The start-up pass (which sweeps stale temporaries) is over: from here on only the
    // compression of the rotated file can meet the link.
    sink.wait_housekeeping();
    let first = dir.path().join(dated_name(T0));
    assert_eq!(sink.current_path(), first);
    let tmp = dir.path().join(format!("{}.gz.tmp", dated_name(T0)));
    victim.plant(&tmp);

    let old = records(0..100);
    write_batch(&mut sink, &old);
    clock.advance(HOUR);
    let new = records(100..150);
    write_batch(&mut sink, &new);
    let second = dir.path().join(dated_name(T0 + HOUR));
    assert_eq!(
        sink.current_path(),
        second,
        "the clock moved an hour: rotated"
    );
    sink.wait_housekeeping();

    victim.assert_unchanged();
    assert!(
        !exists(&tmp),
        "the temporary's name still holds something: {:?}",
        names_in(dir.path())
    );
    let gz = dir.path().join(format!("{}.gz", dated_name(T0)));
    assert_eq!(
        decompressed(&gz),
        old,
        "the .gz holds exactly the rotated records"
    );
    assert!(!exists(&first), "the original is removed once compressed");
    assert_eq!(std::fs::read(&second).unwrap(), new);
    drop(sink);
    assert_eq!(
        names_in(dir.path()),
        vec![format!("{}.gz", dated_name(T0)), dated_name(T0 + HOUR)]
    );
}

fn build_fails_on_a_link_at_the_current_file(builder: Builder, current: &str) {
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new();
    let at = dir.path().join(current);
    victim.plant(&at);
    let err = builder
        .build(dir.path())
        .expect_err("build must refuse a symlink at the current file's path");
    let message = err.to_string();
    assert!(message.contains("symbolic link"), "{message}");
    victim.assert_unchanged();
    victim.assert_link_intact(&at);
    assert_eq!(names_in(dir.path()), vec![current.to_owned()]);
}

#[test]
fn a_link_planted_at_the_current_dated_file_makes_build_fail() {
    if support::wine_cannot(
        "a_link_planted_at_the_current_dated_file_makes_build_fail",
        "make a symbolic link (it reports success and makes nothing)",
    ) {
        return;
    }
    let clock = TestClock::at(T0);
    build_fails_on_a_link_at_the_current_file(hourly_dated(&clock), &dated_name(T0));
}

#[test]
fn a_link_planted_at_the_current_fixed_file_makes_build_fail() {
    if support::wine_cannot(
        "a_link_planted_at_the_current_fixed_file_makes_build_fail",
        "make a symbolic link (it reports success and makes nothing)",
    ) {
        return;
    }
    let clock = TestClock::at(T0);
    build_fails_on_a_link_at_the_current_file(hourly_fixed(&clock), "app.log");
}

#[test]
fn a_link_planted_at_the_next_dated_file_is_skipped_for_a_counter_name() {
    if support::wine_cannot(
        "a_link_planted_at_the_next_dated_file_is_skipped_for_a_counter_name",
        "make a symbolic link (it reports success and makes nothing)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new();
    let clock = TestClock::at(T0);
    let mut sink = hourly_dated(&clock).build(dir.path()).unwrap().into_sink();
    let first = dir.path().join(dated_name(T0));
    assert_eq!(sink.current_path(), first);
    let next = dir.path().join(dated_name(T0 + HOUR));
    victim.plant(&next);

    write_batch(&mut sink, &records(0..50));
    clock.advance(HOUR);
    write_batch(&mut sink, &records(50..80));
    write_batch(&mut sink, &records(80..100));
    sink.wait_housekeeping();

    let counter = dir
        .path()
        .join(format!("app.{}.001.log", hour_stamp(T0 + HOUR)));
    assert_eq!(sink.current_path(), counter, "{:?}", names_in(dir.path()));
    drop(sink);
    victim.assert_unchanged();
    victim.assert_link_intact(&next);
    assert_eq!(
        seqs(&std::fs::read(&first).unwrap()),
        (0..50).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(&std::fs::read(&counter).unwrap()),
        (50..100).collect::<Vec<_>>()
    );
}

#[test]
fn a_link_planted_at_the_fixed_files_rotated_name_is_not_replaced() {
    if support::wine_cannot(
        "a_link_planted_at_the_fixed_files_rotated_name_is_not_replaced",
        "make a symbolic link (it reports success and makes nothing)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new();
    let clock = TestClock::at(T0);
    let mut sink = hourly_fixed(&clock).build(dir.path()).unwrap().into_sink();
    let current = dir.path().join("app.log");
    assert_eq!(sink.current_path(), current);
    let rotated = dir.path().join(format!("app.log.{}", hour_stamp(T0)));
    victim.plant(&rotated);

    write_batch(&mut sink, &records(0..50));
    clock.advance(HOUR);
    write_batch(&mut sink, &records(50..100));
    sink.wait_housekeeping();
    assert_eq!(sink.current_path(), current);
    drop(sink);

    victim.assert_unchanged();
    victim.assert_link_intact(&rotated);
    let counter = dir.path().join(format!("app.log.{}.001", hour_stamp(T0)));
    assert_eq!(
        seqs(&std::fs::read(&counter).unwrap()),
        (0..50).collect::<Vec<_>>(),
        "{:?}",
        names_in(dir.path())
    );
    assert_eq!(
        seqs(&std::fs::read(&current).unwrap()),
        (50..100).collect::<Vec<_>>()
    );
}

#[test]
fn a_link_planted_at_the_latest_name_is_replaced_not_followed() {
    if support::wine_cannot(
        "a_link_planted_at_the_latest_name_is_replaced_not_followed",
        "make a symbolic link (it reports success and makes nothing)",
    ) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let victim = Victim::new();
    let clock = TestClock::at(T0);
    let latest = dir.path().join("latest");
    victim.plant(&latest);
    let mut sink = hourly_dated(&clock)
        .latest_symlink("latest")
        .build(dir.path())
        .unwrap()
        .into_sink();
    victim.assert_unchanged();
    assert_eq!(
        std::fs::read_link(&latest).unwrap(),
        PathBuf::from(dated_name(T0)),
        "build points `latest` at the current file"
    );

    write_batch(&mut sink, &records(0..50));
    clock.advance(HOUR);
    write_batch(&mut sink, &records(50..100));
    sink.wait_housekeeping();
    assert_eq!(
        std::fs::read_link(&latest).unwrap(),
        PathBuf::from(dated_name(T0 + HOUR)),
        "rotation moves `latest` to the new file"
    );
    drop(sink);

    victim.assert_unchanged();
    let first = std::fs::read(dir.path().join(dated_name(T0))).unwrap();
    let second = std::fs::read(&latest).unwrap(); // through our own link
    assert_eq!(seqs(&first), (0..50).collect::<Vec<_>>());
    assert_eq!(seqs(&second), (50..100).collect::<Vec<_>>());
    assert_eq!(
        names_in(dir.path()),
        vec![dated_name(T0), dated_name(T0 + HOUR), "latest".to_owned()],
        "no temporary link is left behind"
    );
}

// ---------------------------------------------------------------------------------
// 2. A full disk while gzipping.
// ---------------------------------------------------------------------------------

#[cfg(unix)]
/// Bytes free for an unprivileged writer on the file system holding `path`.
fn free_bytes(path: &Path) -> u64 {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: statvfs writes only into the struct we own; `c` is NUL-terminated.
    unsafe {
        let mut s: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(c.as_ptr(), &mut s), 0);
        s.f_bavail as u64 * s.f_frsize as u64
    }
}

#[cfg(unix)]
/// Records of pseudo-random hex (xorshift): about 2:1 under gzip, no better.
fn hex_records(seqs: Range<u64>, state: &mut u64) -> Vec<u8> {
    let mut out = Vec::new();
    for seq in seqs {
        let mut line = format!("record seq={seq} ");
        for _ in 0..25 {
            *state ^= *state << 13;
            *state ^= *state >> 7;
            *state ^= *state << 17;
            line.push_str(&format!("{:016x}", *state));
        }
        line.push('\n');
        out.extend_from_slice(line.as_bytes());
    }
    out
}

// A tmpfs mounted small: unix (mount, statvfs).
#[cfg(unix)]
#[test]
fn a_full_disk_during_gzip_keeps_the_original_and_a_later_pass_compresses_it() {
    let Some(tmpfs) = mount_tmpfs(
        "1m",
        "a_full_disk_during_gzip_keeps_the_original_and_a_later_pass_compresses_it",
    ) else {
        return;
    };
    let dir = tmpfs.path.clone();
    let clock = TestClock::at(T0);
    let mut sink = hourly_dated(&clock)
        .compression(Compression::Gzip)
        .build(&dir)
        .unwrap()
        .into_sink();
    sink.wait_housekeeping();
    let first = dir.join(dated_name(T0));

    // ~250 KiB of hex, compressing to ~130 KiB.
    let mut state = 0x9E37_79B9_7F4A_7C15_u64;
    let mut old = Vec::new();
    for chunk in 0..12 {
        let batch = hex_records(chunk * 100..(chunk + 1) * 100, &mut state);
        write_batch(&mut sink, &batch);
        old.extend_from_slice(&batch);
    }
    assert_eq!(std::fs::read(&first).unwrap(), old);
    let gz_len = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(&old).unwrap();
        e.finish().unwrap().len() as u64
    };

    // Fill the file system, then give back 32 KiB: room for a few records, not the .gz.
    let filler = dir.join("filler");
    {
        let mut f = std::fs::File::create(&filler).unwrap();
        let block = vec![0xA5u8; 64 << 10];
        while f.write_all(&block).is_ok() {}
        let len = f.metadata().unwrap().len();
        f.set_len(len.saturating_sub(32 << 10)).unwrap();
        f.sync_all().unwrap();
    }
    let free = free_bytes(&dir);
    assert!(
        free < gz_len && free >= 16 << 10,
        "the premise: {free} bytes free, the .gz needs {gz_len}"
    );

    clock.advance(HOUR);
    sink.before_batch(1).unwrap();
    let second = dir.join(dated_name(T0 + HOUR));
    assert_eq!(sink.current_path(), second, "rotated");
    sink.wait_housekeeping();

    let gz = dir.join(format!("{}.gz", dated_name(T0)));
    let temporaries: Vec<String> = names_in(&dir)
        .into_iter()
        .filter(|n| n.ends_with(".gz.tmp"))
        .collect();
    assert!(temporaries.is_empty(), "left behind: {temporaries:?}");
    assert!(
        !exists(&gz),
        "a .gz that cannot have fitted: {:?}",
        names_in(&dir)
    );
    assert_eq!(
        std::fs::read(&first).unwrap(),
        old,
        "the rotated original is kept intact while it cannot be compressed"
    );

    // The new file still takes records (they fit in what is left).
    let new = hex_records(1200..1220, &mut state);
    write_batch(&mut sink, &new);

    std::fs::remove_file(&filler).unwrap();
    sink.wait_housekeeping(); // one more pass: the retry

    assert_eq!(
        decompressed(&gz),
        old,
        "the .gz decompresses to exactly the original"
    );
    assert!(!exists(&first), "the original is removed once compressed");
    let temporaries: Vec<String> = names_in(&dir)
        .into_iter()
        .filter(|n| n.ends_with(".gz.tmp"))
        .collect();
    assert!(temporaries.is_empty(), "left behind: {temporaries:?}");
    drop(sink);

    // What was written is what is on disk, no more, no less.
    let mut on_disk = decompressed(&gz);
    on_disk.extend_from_slice(&std::fs::read(&second).unwrap());
    let mut written = old.clone();
    written.extend_from_slice(&new);
    assert_eq!(on_disk.len(), written.len());
    assert!(
        on_disk == written,
        "the bytes on disk differ from those written"
    );
    assert_eq!(seqs(&on_disk), (0..1220).collect::<Vec<_>>());
    assert_eq!(
        names_in(&dir),
        vec![format!("{}.gz", dated_name(T0)), dated_name(T0 + HOUR)]
    );
}

// ---------------------------------------------------------------------------------
// 3. The current file (or its directory) deleted under the sink, through the pipeline.
// ---------------------------------------------------------------------------------

const FLUSH: Duration = Duration::from_secs(60);

/// Writes records `0..n` through the pipeline, flushes, calls `fault`, writes `n..m`
/// and shuts down; returns the metrics.
fn through_pipeline(sink: RollingFile, n: u64, m: u64, fault: impl FnOnce()) -> loglag::Metrics {
    let (writer, guard) = NonBlockingBuilder::default()
        .overflow(Overflow::Block)
        .build(sink)
        .unwrap();
    for seq in 0..n {
        writer.submit(Level::Info, &record(seq));
    }
    writer.flush(FLUSH).unwrap();
    fault();
    for seq in n..m {
        writer.submit(Level::Info, &record(seq));
    }
    writer.flush(FLUSH).unwrap();
    drop(writer);
    guard.shutdown()
}

/// The file holds one in-band notice that it was reopened (a WARN record of target
/// `loglag`, in the default compact report format), and nothing else but records.
fn assert_one_reopen_notice(bytes: &[u8]) {
    let others = other_lines(bytes);
    assert_eq!(others.len(), 1, "expected exactly one notice: {others:#?}");
    let notice = &others[0];
    assert!(
        notice.contains(" WARN loglag: ") && notice.contains("deleted or moved"),
        "{notice}"
    );
}

fn assert_all_written(m: &loglag::Metrics, total: u64) {
    assert_eq!(m.written_records, total, "{m:#?}");
    assert_eq!(m.dropped_records(), 0, "{m:#?}");
    assert_eq!(m.write_errors, 0, "{m:#?}");
}

#[test]
fn a_current_file_deleted_under_the_pipeline_is_recreated_and_loses_nothing() {
    if support::wine_cannot("a_current_file_deleted_under_the_pipeline_is_recreated_and_loses_nothing", "delete an open file (its name stays until the last handle closes, and the handle is not told)") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    let sink = hourly_dated(&clock).build(dir.path()).unwrap().into_sink();
    let current = sink.current_path().to_owned();
    let (n, m) = (500, 1200);
    let path = current.clone();
    let metrics = through_pipeline(sink, n, m, move || {
        assert_eq!(
            seqs(&std::fs::read(&path).unwrap()),
            (0..n).collect::<Vec<_>>(),
            "flushed before the fault"
        );
        std::fs::remove_file(&path).unwrap();
    });
    assert_all_written(&metrics, m);
    let bytes = std::fs::read(&current).unwrap();
    assert_eq!(seqs(&bytes), (n..m).collect::<Vec<_>>());
    assert_one_reopen_notice(&bytes);
    assert_eq!(names_in(dir.path()), vec![dated_name(T0)]);
}

#[test]
fn a_log_directory_deleted_under_the_pipeline_is_recreated_and_loses_nothing() {
    if support::wine_cannot(
        "a_log_directory_deleted_under_the_pipeline_is_recreated_and_loses_nothing",
        "remove a directory that holds an open file",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("logs");
    let clock = TestClock::at(T0);
    let sink = hourly_dated(&clock).build(&dir).unwrap().into_sink();
    let current = sink.current_path().to_owned();
    let (n, m) = (500, 1200);
    let d = dir.clone();
    let metrics = through_pipeline(sink, n, m, move || {
        std::fs::remove_dir_all(&d).unwrap();
        assert!(!exists(&d));
    });
    assert_all_written(&metrics, m);
    assert!(dir.is_dir(), "the directory is recreated");
    let bytes = std::fs::read(&current).unwrap();
    assert_eq!(seqs(&bytes), (n..m).collect::<Vec<_>>());
    assert_one_reopen_notice(&bytes);
    assert_eq!(names_in(&dir), vec![dated_name(T0)]);
}

// ---------------------------------------------------------------------------------
// 4. The current file renamed from outside, no SIGHUP.
// ---------------------------------------------------------------------------------

#[test]
fn a_fixed_file_renamed_without_sighup_is_reopened_at_its_name_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    // reopen_on_sighup stays off (the default).
    let sink = hourly_fixed(&clock).build(dir.path()).unwrap().into_sink();
    let current = dir.path().join("app.log");
    assert_eq!(sink.current_path(), current);
    let old = dir.path().join("app.log.old");
    let (n, m) = (500, 1200);
    let (c, o) = (current.clone(), old.clone());
    let metrics = through_pipeline(sink, n, m, move || std::fs::rename(&c, &o).unwrap());
    assert_all_written(&metrics, m);

    let before = std::fs::read(&old).unwrap();
    let after = std::fs::read(&current).unwrap();
    assert_eq!(
        seqs(&before),
        (0..n).collect::<Vec<_>>(),
        "the records before the rename stay in the renamed file, and only they"
    );
    assert!(
        other_lines(&before).is_empty(),
        "{:?}",
        other_lines(&before)
    );
    assert_eq!(
        seqs(&after),
        (n..m).collect::<Vec<_>>(),
        "the records after it are in a new app.log, and only they"
    );
    assert_one_reopen_notice(&after);
    assert_eq!(
        names_in(dir.path()),
        vec!["app.log".to_owned(), "app.log.old".to_owned()]
    );
}

// ---------------------------------------------------------------------------------
// 5. File modes.
// ---------------------------------------------------------------------------------

#[cfg(unix)]
/// The process umask, read once (umask(2) can only be read by setting it; the
/// `OnceLock` makes this the only place that does, and every mode test calls it before
/// creating a file).
fn umask() -> u32 {
    static UMASK: OnceLock<u32> = OnceLock::new();
    *UMASK.get_or_init(|| {
        // SAFETY: umask(2) cannot fail; the old value is restored at once.
        unsafe {
            let old = libc::umask(0o077);
            libc::umask(old);
            old as u32
        }
    })
}

#[cfg(unix)]
fn mode(path: &Path) -> u32 {
    std::fs::symlink_metadata(path)
        .unwrap()
        .permissions()
        .mode()
        & 0o777
}

#[cfg(unix)]
/// Writes an hour, rotates, compresses; returns (first file's gz, current file).
fn rotate_and_compress(builder: Builder, clock: &TestClock, dir: &Path) -> (PathBuf, PathBuf) {
    let mut sink = builder
        .compression(Compression::Gzip)
        .build(dir)
        .unwrap()
        .into_sink();
    write_batch(&mut sink, &records(0..20));
    clock.advance(HOUR);
    write_batch(&mut sink, &records(20..40));
    sink.wait_housekeeping();
    let current = sink.current_path().to_owned();
    drop(sink);
    let gz = dir.join(format!("{}.gz", dated_name(T0)));
    assert_eq!(decompressed(&gz), records(0..20));
    (gz, current)
}

// File modes are unix permissions (Windows refuses file_mode: see below).
#[cfg(unix)]
#[test]
fn file_mode_0o600_applies_to_the_current_file_and_to_its_gz() {
    let expected = 0o600 & !umask();
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    let sink = hourly_dated(&clock)
        .file_mode(0o600)
        .build(dir.path())
        .unwrap()
        .into_sink();
    assert_eq!(mode(sink.current_path()), expected);
    drop(sink);

    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    let (gz, current) =
        rotate_and_compress(hourly_dated(&clock).file_mode(0o600), &clock, dir.path());
    assert_eq!(
        mode(&current),
        expected,
        "the file a rotation creates: {:o}",
        mode(&current)
    );
    assert_eq!(mode(&gz), expected, "the .gz: {:o}", mode(&gz));
}

// File modes are unix permissions (Windows refuses file_mode: see below).
#[cfg(unix)]
#[test]
fn file_mode_applies_to_a_fixed_file_recreated_after_rotation() {
    let expected = 0o600 & !umask();
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    let mut sink = hourly_fixed(&clock)
        .file_mode(0o600)
        .build(dir.path())
        .unwrap()
        .into_sink();
    let current = dir.path().join("app.log");
    assert_eq!(mode(&current), expected);
    write_batch(&mut sink, &records(0..20));
    clock.advance(HOUR);
    write_batch(&mut sink, &records(20..40));
    drop(sink);
    let rotated = dir.path().join(format!("app.log.{}", hour_stamp(T0)));
    assert_eq!(mode(&rotated), expected);
    assert_eq!(mode(&current), expected, "the new app.log");
}

// File modes are unix permissions (Windows refuses file_mode: see below).
#[cfg(unix)]
#[test]
fn without_file_mode_files_are_created_0o666_minus_the_umask() {
    let expected = 0o666 & !umask();
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    let sink = hourly_dated(&clock).build(dir.path()).unwrap().into_sink();
    assert_eq!(
        mode(sink.current_path()),
        expected,
        "{:o}",
        mode(sink.current_path())
    );
    drop(sink);

    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    let (gz, current) = rotate_and_compress(hourly_dated(&clock), &clock, dir.path());
    assert_eq!(mode(&current), expected);
    assert_eq!(mode(&gz), expected, "the .gz keeps its original's mode");
}

/// Windows has no file modes: asking for one is refused, by name, when the sink is
/// built.
#[cfg(windows)]
#[test]
fn file_mode_is_refused_on_windows() {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    let e = hourly_dated(&clock)
        .file_mode(0o600)
        .build(dir.path())
        .map(|_| ())
        .unwrap_err();
    let io = std::error::Error::source(&e)
        .and_then(|s| s.downcast_ref::<std::io::Error>())
        .expect("an io::Error inside");
    assert_eq!(io.kind(), std::io::ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("Windows"), "{e}");
}

/// Windows: a reader that opened the current file without sharing deletion (as many
/// Windows programs do) keeps a fixed name's rotation from renaming it. The rotation
/// fails (the writer counts a write error), the batch goes to the current file, and the
/// next batch after the reader let go rotates. Nothing is lost.
#[cfg(windows)]
#[test]
fn a_reader_that_shares_no_deletion_delays_a_fixed_names_rotation_and_loses_nothing() {
    use std::os::windows::fs::OpenOptionsExt;
    use windows_sys::Win32::Storage::FileSystem::{FILE_SHARE_READ, FILE_SHARE_WRITE};
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(T0);
    let mut sink = hourly_fixed(&clock).build(dir.path()).unwrap().into_sink();
    let current = dir.path().join("app.log");
    write_batch(&mut sink, &records(0..10));
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .share_mode(FILE_SHARE_READ | FILE_SHARE_WRITE)
        .open(&current)
        .unwrap();
    clock.advance(HOUR);
    let batch = records(10..20);
    assert!(
        sink.before_batch(batch.len()).is_err(),
        "the rename is refused"
    );
    assert_eq!(sink.write(&batch).unwrap(), batch.len());
    drop(reader);
    write_batch(&mut sink, &records(20..30));
    drop(sink);
    let rotated = dir.path().join(format!("app.log.{}", hour_stamp(T0)));
    assert_eq!(
        seqs(&std::fs::read(&rotated).unwrap()),
        (0..20).collect::<Vec<_>>()
    );
    assert_eq!(
        seqs(&std::fs::read(&current).unwrap()),
        (20..30).collect::<Vec<_>>()
    );
}
