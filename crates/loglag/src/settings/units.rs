//! Sizes and durations as people write them: one grammar ([`parse_size`],
//! [`parse_duration`], one [`UnitError`]) for the builder's configuration, its TOML
//! and environment, policy names (`block-for=5ms`) and every flag of the `loglag`
//! command; and the limits a configured size or duration must keep.

use std::time::{Duration, Instant};

/// The longest duration configuration accepts (timeouts, intervals, `block-for=`):
/// a year (8760h). Longer is a typo or "for ever", which `Overflow::Block` says.
pub(crate) const MAX_CONFIGURED_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// The smallest byte budget that works: a record of 64 bytes fits half of it with its
/// header. Less cut every record to nothing (0 dropped everything).
pub(crate) const MIN_CAPACITY_BYTES: usize = 256;

/// The largest byte budget, whatever the machine: 16 GiB. The ring is mapped and
/// touched at start, so the budget is memory the process takes at once.
pub(crate) const MAX_CAPACITY_BYTES: u64 = 16 << 30;

/// The smallest `max_record_bytes` kept as given (the pipeline raises less to 64).
#[cfg_attr(not(feature = "config"), allow(dead_code))]
pub(crate) const MIN_RECORD_BYTES: usize = 64;

/// The largest byte budget on this machine: [`MAX_CAPACITY_BYTES`], or the physical
/// memory if that is less.
#[cfg(windows)]
pub(crate) fn max_capacity_bytes() -> usize {
    let physical = crate::sys::windows::physical_memory()
        .filter(|m| *m > 0)
        .unwrap_or(u64::MAX);
    usize::try_from(physical.min(MAX_CAPACITY_BYTES)).unwrap_or(usize::MAX)
}

/// The largest byte budget on this machine: [`MAX_CAPACITY_BYTES`], or the physical
/// memory if that is less.
#[cfg(unix)]
pub(crate) fn max_capacity_bytes() -> usize {
    // SAFETY: sysconf has no preconditions; it returns -1 for an unknown name.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGESIZE),
        )
    };
    let physical = match (u64::try_from(pages), u64::try_from(page)) {
        (Ok(pages), Ok(page)) if pages > 0 && page > 0 => pages.saturating_mul(page),
        _ => u64::MAX,
    };
    usize::try_from(physical.min(MAX_CAPACITY_BYTES)).unwrap_or(usize::MAX)
}

/// `d` after `now`, or, when no `Instant` is that far (a configured or peer-provided
/// `d` from now, or `None` (no deadline) where that is past what an `Instant` holds:
/// a peer's or a user's duration never overflows the clock.
pub(crate) fn deadline_after(d: Duration) -> Option<std::time::Instant> {
    std::time::Instant::now().checked_add(d)
}

/// The time left before `by`, for a socket timeout (`None`: no deadline), or a
/// `TimedOut` error once it has passed: each read or write of a peer that dribbles
/// waits only what is left, so it cannot stretch the deadline.
pub(crate) fn time_left(by: Option<std::time::Instant>) -> std::io::Result<Option<Duration>> {
    let Some(by) = by else { return Ok(None) };
    let left = by.saturating_duration_since(std::time::Instant::now());
    if left.is_zero() {
        return Err(std::io::ErrorKind::TimedOut.into());
    }
    Ok(Some(left))
}

/// duration near `Duration::MAX`), an instant centuries away: no deadline in effect.
pub(crate) fn instant_after(now: Instant, d: Duration) -> Instant {
    now.checked_add(d).unwrap_or_else(|| {
        // 2^32 s is 136 years; halved until it fits (on Linux an `Instant` reaches
        // 292 billion years past boot, so the first does). Ends: `now + 0` fits.
        let mut far = Duration::from_secs(1 << 32);
        loop {
            if let Some(at) = now.checked_add(far) {
                return at;
            }
            far /= 2;
        }
    })
}

/// A size in bytes, in words, for messages: `68719476736 (64 GiB)`.
pub(crate) fn describe_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    for (unit, name) in UNITS {
        if bytes >= unit {
            let whole = bytes / unit;
            return if bytes % unit == 0 {
                format!("{bytes} ({whole} {name})")
            } else {
                format!("{bytes} ({:.1} {name})", bytes as f64 / unit as f64)
            };
        }
    }
    format!("{bytes} bytes")
}

/// What a size or a duration as written could not be read as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitError {
    /// The text as given.
    pub input: String,
    /// `"size"` or `"duration"`.
    pub what: &'static str,
}

impl std::fmt::Display for UnitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let expected = match self.what {
            "size" => "a number of bytes, optionally with B, KiB/K, MiB/M, GiB/G (powers of 1024) or kB, MB, GB (powers of 1000), like 4096, 256KiB or 1.5MiB",
            _ => "a number with one of ns, us (µs), ms, s, m (min), h or d, like 500ms, 8s, 1h or 7d",
        };
        write!(
            f,
            "invalid {} {:?}: expected {expected}",
            self.what, self.input
        )
    }
}

impl std::error::Error for UnitError {}

/// Splits `1.5MiB` into `1.5` and `MiB`; `None` without a number first.
fn number_and_unit(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (n, unit) = s.split_at(split);
    let n: f64 = n.parse().ok()?;
    (n.is_finite() && n >= 0.0).then_some((n, unit.trim()))
}

/// The one size grammar of loglag, its configuration, its URLs and its command line:
/// a number of bytes, optionally fractional, with `B`, `KiB`/`K`/`k`, `MiB`/`M`,
/// `GiB`/`G` (powers of 1024) or `kB`/`KB`, `MB`, `GB` (powers of 1000). An error for
/// anything else and for a size a `u64` does not hold.
pub fn parse_size(s: &str) -> Result<u64, UnitError> {
    let error = || UnitError {
        input: s.to_owned(),
        what: "size",
    };
    let (n, unit) = number_and_unit(s).ok_or_else(error)?;
    let times: f64 = match unit {
        "" | "B" | "b" => 1.0,
        "K" | "KiB" | "k" | "kib" | "Ki" => 1024.0,
        "M" | "MiB" | "mib" | "Mi" => 1024.0 * 1024.0,
        "G" | "GiB" | "gib" | "Gi" => 1024.0 * 1024.0 * 1024.0,
        "kB" | "KB" | "kb" => 1e3,
        "MB" | "mb" => 1e6,
        "GB" | "gb" => 1e9,
        _ => return Err(error()),
    };
    let bytes = (n * times).round();
    // 2^64 is exactly representable; anything at or past it is no u64.
    if bytes >= 18_446_744_073_709_551_616.0 {
        return Err(error());
    }
    Ok(bytes as u64)
}

/// Writes a size the way [`parse_size`] reads it back: `4KiB`, `1MiB`, `1500B`.
pub fn format_size(bytes: u64) -> String {
    for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= size && bytes % size == 0 {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes}B")
}

/// The one duration grammar: a number, optionally fractional, with `ns`, `us`/`µs`,
/// `ms`, `s`, `m`/`min`, `h` or `d`; the unit is required. An error for anything else
/// and for a duration no `Duration` holds (it never panics); callers that read
/// configuration also hold it to a year (`8760h`).
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    let error = || UnitError {
        input: s.to_owned(),
        what: "duration",
    };
    let (n, unit) = number_and_unit(s).ok_or_else(error)?;
    let seconds = match unit {
        "ns" => n / 1e9,
        "us" | "µs" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        "m" | "min" => n * 60.0,
        "h" => n * 3600.0,
        "d" => n * 86_400.0,
        _ => return Err(error()),
    };
    // Not `from_secs_f64`: it panics on what no `Duration` holds (1e23h).
    Duration::try_from_secs_f64(seconds).map_err(|_| error())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_durations_read_as_people_write_them() {
        assert_eq!(parse_size("8MiB"), Ok(8 << 20));
        assert_eq!(parse_size("64K"), Ok(64 << 10));
        assert_eq!(parse_size("64k"), Ok(64 << 10));
        assert_eq!(parse_size("512"), Ok(512));
        assert_eq!(parse_size("1.5MiB"), Ok(1_572_864));
        assert_eq!(parse_size("2MB"), Ok(2_000_000));
        assert_eq!(parse_size("10kB"), Ok(10_000));
        assert!(parse_size("99999999999999999999GiB").is_err());
        assert!(parse_size("18446744073709551616").is_err());
        assert_eq!(
            parse_size("18446744073709549568"),
            Ok(18_446_744_073_709_549_568)
        );
        assert!(parse_size("fast").is_err());
        assert!(parse_size("10 parsecs").is_err());
        assert!(parse_size("-1KiB").is_err());
        for v in [4096, 1 << 20, 1500, 3 << 30] {
            assert_eq!(parse_size(&format_size(v)), Ok(v));
        }
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("2min"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse_duration("7d"), Ok(Duration::from_secs(7 * 86_400)));
        let err = parse_duration("10").unwrap_err();
        assert!(
            err.to_string()
                .contains("ns, us (µs), ms, s, m (min), h or d"),
            "{err}"
        );
        let err = parse_size("3 parsecs").unwrap_err().to_string();
        assert!(err.starts_with("invalid size \"3 parsecs\""), "{err}");
    }

    /// `Duration::from_secs_f64` panicked on these.
    #[test]
    fn a_duration_beyond_any_duration_is_none_not_a_panic() {
        for unit in ["ns", "us", "µs", "ms", "s", "m", "h"] {
            for n in ["99999999999999999999999", "1e400", "18446744073709551616"] {
                let _ = parse_duration(&format!("{n}{unit}"));
                let _ = parse_size(&format!("{n}{unit}"));
            }
            assert_eq!(
                parse_duration(&format!("99999999999999999999999{unit}"))
                    .ok()
                    .filter(|d| *d > MAX_CONFIGURED_DURATION)
                    .is_some(),
                unit == "ns" || unit == "us" || unit == "µs"
            );
        }
        assert_eq!(
            parse_duration("5000000000000000h").map(|d| d > MAX_CONFIGURED_DURATION),
            Ok(true)
        );
        assert_eq!(parse_duration("8760h"), Ok(MAX_CONFIGURED_DURATION));
        assert!(parse_duration("-1s").is_err());
        assert!(parse_duration(".s").is_err());
    }

    #[test]
    fn an_instant_beyond_any_instant_saturates_far_away() {
        let now = Instant::now();
        assert_eq!(
            instant_after(now, Duration::from_secs(5)),
            now + Duration::from_secs(5)
        );
        let far = instant_after(now, Duration::MAX);
        assert!(far >= now + Duration::from_secs(100 * 365 * 24 * 3600));
        // And from there on, still no panic.
        let _ = instant_after(far, Duration::MAX);
    }

    #[test]
    fn the_largest_budget_is_at_most_16_gib_and_the_physical_memory() {
        let max = max_capacity_bytes() as u64;
        assert!(max <= MAX_CAPACITY_BYTES);
        assert!(max >= 64 << 20, "{max}: this machine has more than 64 MiB");
        assert_eq!(describe_size(64 << 30), "68719476736 (64 GiB)");
        assert_eq!(describe_size(1536), "1536 (1.5 KiB)");
        assert_eq!(describe_size(10), "10 bytes");
    }
}
