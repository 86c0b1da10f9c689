//! Sizes and durations as people write them in configuration and policy names.

use std::time::Duration;

/// A size: bytes, or with `KiB`/`K`, `MiB`/`M`, `GiB`/`G` (powers of 1024).
#[cfg_attr(not(feature = "config"), allow(dead_code))]
pub(crate) fn parse_size(s: &str) -> Option<usize> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: usize = n.parse().ok()?;
    let times = match unit.trim() {
        "" | "B" => 1,
        "K" | "KiB" | "k" | "kib" => 1 << 10,
        "M" | "MiB" | "mib" => 1 << 20,
        "G" | "GiB" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(times)
}

/// A duration: a number with `ns`, `us`, `ms`, `s`, `m` or `h`.
pub(crate) fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit() && c != '.')?;
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    let seconds = match unit {
        "ns" => n / 1e9,
        "us" | "µs" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        "m" => n * 60.0,
        "h" => n * 3600.0,
        _ => return None,
    };
    (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_as_people_write_them() {
        assert_eq!(parse_size("8MiB"), Some(8 << 20));
        assert_eq!(parse_size("64K"), Some(64 << 10));
        assert_eq!(parse_size("512"), Some(512));
        assert_eq!(parse_size("1.5MiB"), None);
        assert_eq!(parse_size("99999999999999999999GiB"), None);
        assert_eq!(parse_duration("250us"), Some(Duration::from_micros(250)));
        assert_eq!(parse_duration("1.5s"), Some(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Some(Duration::from_secs(120)));
        assert_eq!(parse_duration("10"), None, "a unit is required");
    }
}
