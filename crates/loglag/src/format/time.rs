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
pub(crate) fn coarse_monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC_COARSE)
}

/// `clock_gettime(clock)` in nanoseconds.
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
}
