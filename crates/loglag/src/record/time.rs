//! Timestamps, formatted without a date-time dependency.

use std::time::{SystemTime, UNIX_EPOCH};

/// Appends `t` as RFC 3339 UTC with microseconds, e.g. `2026-10-29T12:00:00.000123Z`.
pub(crate) fn rfc3339_micros(out: &mut Vec<u8>, t: SystemTime) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs();
    // The date and time of day change once a second; build them once per second per
    // thread and only write the microseconds each time.
    let cached = SECOND.try_with(|cell| {
        // Busy if a signal handler that logs interrupted this very function: it
        // formats the prefix without the cache rather than panic (an abort there).
        let Ok(mut cell) = cell.try_borrow_mut() else {
            return false;
        };
        let (cached_secs, prefix) = &mut *cell;
        if *cached_secs != secs || prefix[0] == 0 {
            *cached_secs = secs;
            *prefix = second_prefix(secs);
        }
        out.extend_from_slice(prefix);
        true
    });
    if cached != Ok(true) {
        out.extend_from_slice(&second_prefix(secs));
    }
    let mut micros = d.subsec_micros();
    let mut digits = [b'0'; 8];
    digits[0] = b'.';
    digits[7] = b'Z';
    for slot in digits[1..7].iter_mut().rev() {
        *slot = b'0' + (micros % 10) as u8;
        micros /= 10;
    }
    out.extend_from_slice(&digits);
}

/// RFC 3339 UTC with microseconds, e.g. `2026-10-29T12:00:00.000123Z`, as a `String`
/// (for the lab: `loglag::__lab::rfc3339`).
///
/// ```
/// let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(86_400);
/// assert_eq!(loglag::__lab::rfc3339(t), "1970-01-02T00:00:00.000000Z");
/// ```
#[cfg(feature = "unstable-lab")]
pub fn rfc3339(t: SystemTime) -> String {
    let mut out = Vec::with_capacity(27);
    rfc3339_micros(&mut out, t);
    String::from_utf8(out).expect("ASCII")
}

/// Appends `t` as the `time` crate's `well_known::Rfc3339` writes it at an offset of
/// `offset_minutes` east of UTC: `2026-10-29T14:00:00.000123456+02:00`, nanoseconds with
/// trailing zeros cut (none on a whole second), `Z` at offset zero. Years past 9999,
/// which `time` refuses to write, are written as 9999.
pub(crate) fn rfc3339_offset(out: &mut Vec<u8>, t: SystemTime, offset_minutes: i16) {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let local = d.as_secs() as i64 + i64::from(offset_minutes) * 60;
    let (days, rem) = (local.div_euclid(86_400), local.rem_euclid(86_400));
    let (y, m, day) = civil_from_days(days);
    let _ = std::io::Write::write_fmt(
        out,
        format_args!(
            "{:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}",
            y.clamp(0, 9999),
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        ),
    );
    let nanos = d.subsec_nanos();
    if nanos != 0 {
        let mut digits = [b'0'; 9];
        let mut n = nanos;
        for slot in digits.iter_mut().rev() {
            *slot = b'0' + (n % 10) as u8;
            n /= 10;
        }
        // Not zero, so some digit is not '0'.
        let len = digits.iter().rposition(|&b| b != b'0').map_or(9, |i| i + 1);
        out.push(b'.');
        out.extend_from_slice(&digits[..len]);
    }
    if offset_minutes == 0 {
        out.push(b'Z');
        return;
    }
    let abs = offset_minutes.unsigned_abs();
    let _ = std::io::Write::write_fmt(
        out,
        format_args!(
            "{}{:02}:{:02}",
            if offset_minutes < 0 { '-' } else { '+' },
            abs / 60,
            abs % 60
        ),
    );
}

thread_local! {
    static SECOND: std::cell::RefCell<(u64, [u8; 19])> = const { std::cell::RefCell::new((0, [0; 19])) };
}

/// `YYYY-MM-DDTHH:MM:SS` for a Unix second.
fn second_prefix(secs: u64) -> [u8; 19] {
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    let mut buf = [0u8; 19];
    let mut w = &mut buf[..];
    let _ = std::io::Write::write_fmt(
        &mut w,
        format_args!(
            "{:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            y.clamp(0, 9999),
            rem / 3600,
            rem / 60 % 60,
            rem % 60
        ),
    );
    buf
}

/// Howard Hinnant's days-to-civil algorithm (proleptic Gregorian calendar).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A coarse monotonic clock in nanoseconds: a few nanoseconds to read, a few
/// milliseconds of resolution, which is plenty for "age of the oldest record".
/// Linux only has a coarse clock; elsewhere the ordinary monotonic clock serves.
pub(crate) fn coarse_monotonic_ns() -> u64 {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    return clock_ns(libc::CLOCK_MONOTONIC_COARSE);
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    return monotonic_ns();
}

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`).
#[cfg(unix)]
pub(crate) fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Monotonic nanoseconds: std's `Instant` (`QueryPerformanceCounter`) counted from the
/// first reading, plus one second so that no reading is 0 (which means "none" to a
/// ring's enqueue time).
#[cfg(not(unix))]
pub(crate) fn monotonic_ns() -> u64 {
    static ORIGIN: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let since = ORIGIN.get_or_init(std::time::Instant::now).elapsed();
    1_000_000_000 + since.as_nanos() as u64
}

/// `clock_gettime(clock)` in nanoseconds.
#[cfg(unix)]
pub(crate) fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats_known_instants() {
        let mut v = Vec::new();
        rfc3339_micros(
            &mut v,
            UNIX_EPOCH + Duration::from_micros(1_793_016_000_000_123),
        );
        assert_eq!(String::from_utf8(v).unwrap(), "2026-10-26T12:00:00.000123Z");
        let mut v = Vec::new();
        rfc3339_micros(&mut v, UNIX_EPOCH + Duration::from_secs(951_782_400)); // leap day 2000
        assert_eq!(String::from_utf8(v).unwrap(), "2000-02-29T00:00:00.000000Z");
    }

    /// The `time` crate's `well_known::Rfc3339` (tracing-subscriber's `OffsetTime` and
    /// `UtcTime`), for instants that exercise the trimmed nanoseconds, day and year
    /// boundaries, and offsets of each sign.
    #[test]
    fn rfc3339_offset_is_what_the_time_crate_writes() {
        use time::format_description::well_known::Rfc3339;
        let instants_ns: [u128; 9] = [
            0,
            1_000_000_000,
            1_793_016_000_000_123_000,
            1_793_016_000_123_456_789,
            1_793_016_000_100_000_000,
            1_793_016_000_000_000_001,
            951_868_799_999_999_999,
            946_684_799_500_000_000,
            253_402_300_000_000_000 - 86_400_000_000_000,
        ];
        let offsets: [(i8, i8); 8] = [
            (0, 0),
            (2, 0),
            (-5, 0),
            (5, 30),
            (-3, -30),
            (0, -30),
            (23, 59),
            (-23, -59),
        ];
        for ns in instants_ns {
            let t = UNIX_EPOCH + Duration::from_nanos(ns as u64);
            for (h, m) in offsets {
                let offset = time::UtcOffset::from_hms(h, m, 0).unwrap();
                let expected = time::OffsetDateTime::from(t)
                    .to_offset(offset)
                    .format(&Rfc3339)
                    .unwrap();
                let mut ours = Vec::new();
                rfc3339_offset(&mut ours, t, i16::from(h) * 60 + i16::from(m));
                assert_eq!(
                    String::from_utf8(ours).unwrap(),
                    expected,
                    "{ns} ns at {h}:{m}"
                );
            }
        }
    }
}
