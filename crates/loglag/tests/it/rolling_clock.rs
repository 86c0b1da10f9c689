#![cfg(feature = "rolling")]
//! Time cannot destroy the live file: daylight saving time both ways in a real zone
//! (Europe/Berlin, through the system's zone database and `localtime_r`), and the wall
//! clock jumping an hour or a year either way. The clock is the appender's
//! `time_source`; every numbered record must be on disk exactly once afterwards, and
//! the file being written must never be compressed or deleted.
//!
//! Every test in this binary runs in Europe/Berlin: `TZ` is set once, before any test
//! reads local time.

/// A skip is said on stderr past the test harness's capture (which holds only what
/// `eprintln!` prints), so a plain `cargo test` shows what did not run and why.
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

use crate::support;

/// The zone these tests run in: each runs alone in a child process of the test
/// program with it set (on Windows the system's zone is read instead).
const ZONE: &[(&str, &str)] = if cfg!(unix) {
    &[("TZ", "Europe/Berlin")]
} else {
    &[]
};

use std::path::Path;
#[cfg(unix)]
use std::sync::Once;

use loglag::rolling::{Builder, Compression, Naming, Rotation};
use loglag::sink::{IntoSink, RollingFile, Sink};
use support::{decompressed, TestClock};

/// 2026-10-24T20:00Z: 22:00 CEST, five hours before Berlin's clocks go back (01:00Z).
const BEFORE_FALL_BACK: i64 = 1_792_872_000;
/// 2026-03-28T20:00Z: 21:00 CET, five hours before Berlin's clocks go forward (01:00Z).
const BEFORE_SPRING_FORWARD: i64 = 1_774_728_000;

#[cfg(unix)]
extern "C" {
    fn tzset();
}

/// Windows' time-zone API does not read `TZ`: the system's zone must be Berlin's
/// ("W. Europe Standard Time", or one with the same rules; under Wine, started with
/// `TZ=Europe/Berlin`, as `scripts/test-windows` does). Otherwise the tests skip,
/// saying so.
#[cfg(windows)]
fn berlin() -> bool {
    use windows_sys::Win32::System::Time::{
        GetDynamicTimeZoneInformation, DYNAMIC_TIME_ZONE_INFORMATION,
    };
    // SAFETY: a zeroed out-structure.
    let key = unsafe {
        let mut zone: DYNAMIC_TIME_ZONE_INFORMATION = std::mem::zeroed();
        GetDynamicTimeZoneInformation(&mut zone);
        let end = zone
            .TimeZoneKeyName
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(128);
        String::from_utf16_lossy(&zone.TimeZoneKeyName[..end])
    };
    // Berlin's zone, or one with its offsets and rules (Wine maps Europe/Berlin to
    // Central Europe's).
    let berlins = [
        "W. Europe Standard Time",
        "Central Europe Standard Time",
        "Central European Standard Time",
        "Romance Standard Time",
    ];
    if berlins.contains(&key.as_str()) {
        return true;
    }
    assert!(
        std::env::var_os("LOGLAG_REQUIRE_TZDATA").is_none(),
        "the system's time zone is {key:?}, not W. Europe Standard Time"
    );
    skip_note!("skipped: the system's time zone is {key:?}; the DST tests need W. Europe Standard Time (Europe/Berlin)");
    false
}

#[cfg(unix)]
fn berlin() -> bool {
    static SET: Once = Once::new();
    SET.call_once(|| {
        // SAFETY: every test calls this before anything in the process reads the zone,
        // and `Once` makes the others wait until it is done.
        unsafe {
            std::env::set_var("TZ", "Europe/Berlin");
            tzset();
        }
    });
    if Path::new("/usr/share/zoneinfo/Europe/Berlin").exists() {
        return true;
    }
    assert!(
        std::env::var_os("LOGLAG_REQUIRE_TZDATA").is_none(),
        "Europe/Berlin is not in /usr/share/zoneinfo (install tzdata)"
    );
    skip_note!("skipped: no zone database (install tzdata to run the DST tests)");
    false
}

/// Writes one record, as the writer thread would, and checks that the live file is
/// still there, uncompressed, holding it.
fn write_record(sink: &mut RollingFile, seq: u64) {
    let line = format!("seq={seq}\n");
    sink.before_batch(line.len()).unwrap();
    assert_eq!(sink.write(line.as_bytes()).unwrap(), line.len());
    let live = sink.current_path().to_owned();
    let text = std::fs::read_to_string(&live).unwrap_or_else(|e| panic!("{live:?}: {e}"));
    assert!(
        text.ends_with(&line),
        "seq {seq} is not at the end of {live:?}"
    );
}

/// Every record in every file of the directory, each exactly once.
fn assert_each_once(dir: &Path, n: u64) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut seen = vec![0u32; n as usize];
    for name in &names {
        let text = decompressed(&dir.join(name));
        for line in String::from_utf8(text).unwrap().lines() {
            let seq: usize = line.strip_prefix("seq=").unwrap().parse().unwrap();
            seen[seq] += 1;
        }
    }
    let wrong: Vec<(usize, u32)> = seen
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, c)| c != 1)
        .collect();
    assert!(
        wrong.is_empty(),
        "records not exactly once (seq, count): {:?} in {names:?}",
        &wrong[..wrong.len().min(20)]
    );
    names
}

/// Steps the clock from `from` by `step` seconds `steps` times, one record each, with
/// the housekeeper caught up every `settle` records.
fn walk(
    sink: &mut RollingFile,
    clock: &TestClock,
    from: i64,
    step: i64,
    steps: u64,
    seq: &mut u64,
) {
    clock.set(from);
    for i in 0..steps {
        write_record(sink, *seq);
        *seq += 1;
        clock.set(clock.get() + step);
        if i % 16 == 0 {
            sink.wait_housekeeping();
        }
    }
}

fn dst_case(rotation: Rotation, start: i64, naming: Naming) -> (Vec<String>, String) {
    let dir = tempfile::tempdir().unwrap();
    let clock = TestClock::at(start);
    let mut sink = clock
        .install(
            Builder::new()
                .rotation(rotation)
                .naming(naming)
                .filename_prefix("app.log")
                .local_time(true)
                .compression(Compression::Gzip),
        )
        .build(dir.path())
        .unwrap()
        .into_sink();
    let mut seq = 0;
    // Ten hours in 5-minute steps: across the change and past the next midnight.
    walk(&mut sink, &clock, start, 300, 12 * 10 + 60, &mut seq);
    sink.wait_housekeeping();
    let live = sink.current_path().to_owned();
    drop(sink);
    let names = assert_each_once(dir.path(), seq);
    (
        names,
        live.file_name().unwrap().to_string_lossy().into_owned(),
    )
}

#[test]
fn the_fall_back_hour_keeps_writing_the_same_daily_file() {
    if crate::support::alone(
        module_path!(),
        "the_fall_back_hour_keeps_writing_the_same_daily_file",
        ZONE,
    ) {
        return;
    }
    if !berlin() {
        return;
    }
    let (names, live) = dst_case(Rotation::DAILY, BEFORE_FALL_BACK, Naming::Dated);
    // 22:00 CEST on the 24th to 05:00 CET on the 25th: two local days, two files, and
    // the repeated 02:00-03:00 hour is no rotation.
    assert_eq!(
        names,
        ["app.log.2026-10-24.gz", "app.log.2026-10-25"],
        "live: {live:?}"
    );
}

#[test]
fn the_fall_back_hour_is_one_hourly_period() {
    if crate::support::alone(
        module_path!(),
        "the_fall_back_hour_is_one_hourly_period",
        ZONE,
    ) {
        return;
    }
    if !berlin() {
        return;
    }
    for naming in [Naming::Dated, Naming::Fixed] {
        let (names, _) = dst_case(Rotation::HOURLY, BEFORE_FALL_BACK, naming);
        let two_am: Vec<&String> = names
            .iter()
            .filter(|n| n.contains("2026-10-25-02"))
            .collect();
        assert_eq!(
            two_am.len(),
            1,
            "{naming:?}: the repeated hour is one file: {names:?}"
        );
        assert!(
            !names.iter().any(|n| n.contains(".001")),
            "{naming:?}: no clash: {names:?}"
        );
    }
}

#[test]
fn the_spring_forward_skips_an_hour_and_loses_nothing() {
    if crate::support::alone(
        module_path!(),
        "the_spring_forward_skips_an_hour_and_loses_nothing",
        ZONE,
    ) {
        return;
    }
    if !berlin() {
        return;
    }
    let (names, _) = dst_case(Rotation::HOURLY, BEFORE_SPRING_FORWARD, Naming::Dated);
    assert!(
        !names.iter().any(|n| n.contains("2026-03-29-02")),
        "02:00 never happened: {names:?}"
    );
    assert!(
        names.iter().any(|n| n.contains("2026-03-29-03")),
        "{names:?}"
    );
    let (names, _) = dst_case(Rotation::DAILY, BEFORE_SPRING_FORWARD, Naming::Dated);
    assert_eq!(names, ["app.log.2026-03-28.gz", "app.log.2026-03-29"]);
}

/// The clock jumps by `jump` for a few records and comes back: rotation keeps going
/// afterwards (it re-anchors), nothing is lost, and the names taken before the jump
/// are not reused.
fn jump_case(jump: i64, rotation: Rotation, naming: Naming) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let start = BEFORE_FALL_BACK - 86_400 * 30; // a plain day in September
    let clock = TestClock::at(start);
    let mut sink = clock
        .install(
            Builder::new()
                .rotation(rotation)
                .naming(naming)
                .filename_prefix("app.log")
                .compression(Compression::Gzip),
        )
        .build(dir.path())
        .unwrap()
        .into_sink();
    let mut seq = 0;
    walk(&mut sink, &clock, start, 60, 30, &mut seq);
    let back_at = clock.get();
    walk(&mut sink, &clock, back_at + jump, 1, 5, &mut seq);
    walk(&mut sink, &clock, back_at, 60, 30, &mut seq);
    // After the excursion, time rotation still happens at the next boundary.
    let files = || std::fs::read_dir(dir.path()).unwrap().count();
    let before = files();
    walk(&mut sink, &clock, clock.get() + 3 * 3600, 60, 3, &mut seq);
    assert_eq!(files(), before + 1, "rotation resumed");
    sink.wait_housekeeping();
    drop(sink);
    assert_each_once(dir.path(), seq)
}

#[test]
fn wall_clock_jumps_either_way_lose_nothing_and_rotation_resumes() {
    if crate::support::alone(
        module_path!(),
        "wall_clock_jumps_either_way_lose_nothing_and_rotation_resumes",
        ZONE,
    ) {
        return;
    }
    if !berlin() {
        return;
    }
    for naming in [Naming::Dated, Naming::Fixed] {
        for jump in [3600, -3600, 365 * 86_400, -365 * 86_400] {
            let names = jump_case(jump, Rotation::HOURLY, naming);
            assert!(!names.is_empty(), "{naming:?} {jump}");
        }
    }
    // A year forward and back with daily files: the day's name is taken before the
    // jump, so the return continues under the next counter, not in the old file.
    let names = jump_case(365 * 86_400, Rotation::DAILY, Naming::Dated);
    assert!(names.iter().any(|n| n.contains(".001")), "{names:?}");
}
