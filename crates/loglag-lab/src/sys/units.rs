//! Byte sizes and durations as users type them (`256KiB`, `1.5MiB/s`, `500ms`, `8s`),
//! parsed once, into `u64` bytes and `Duration`, for every command and config.

use std::time::Duration;

/// Parses sizes and rates such as `256KiB`, `1MiB`, `4096`, `64k`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num.parse().map_err(|_| {
        format!("invalid size {s:?}: expected a number with an optional unit, like 256KiB")
    })?;
    let unit = unit.trim().trim_end_matches("/s");
    let mult = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" | "kb" => 1024.0,
        "m" | "mib" | "mb" => 1024.0 * 1024.0,
        "g" | "gib" | "gb" => 1024.0 * 1024.0 * 1024.0,
        _ => return Err(format!("invalid unit in {s:?}: use B, KiB, MiB or GiB")),
    };
    Ok((value * mult).round() as u64)
}

/// Writes a size the way [`parse_bytes`] reads it back: `4KiB`, `1MiB`, `1500B`.
pub fn format_bytes(bytes: u64) -> String {
    for (unit, size) in [("GiB", 1u64 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)] {
        if bytes >= size && bytes % size == 0 {
            return format!("{}{unit}", bytes / size);
        }
    }
    format!("{bytes}B")
}

/// Parses `8s`, `500ms`, `100us`, `1.5s`, `2m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let value: f64 = num
        .parse()
        .map_err(|_| format!("invalid duration {s:?}: use e.g. 8s, 500ms, 2m"))?;
    let secs = match unit {
        "" | "s" => value,
        "ms" => value / 1e3,
        "us" | "µs" => value / 1e6,
        "m" | "min" => value * 60.0,
        other => {
            return Err(format!(
                "invalid unit {other:?} in {s:?}: use us, ms, s or m"
            ))
        }
    };
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("invalid duration {s:?}"));
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse() {
        assert_eq!(parse_bytes("256KiB").unwrap(), 262_144);
        assert_eq!(parse_bytes("4096").unwrap(), 4096);
        assert_eq!(parse_bytes("1.5MiB/s").unwrap(), 1_572_864);
        assert!(parse_bytes("fast").is_err());
        assert!(parse_bytes("10 parsecs").is_err());
        for v in [4096, 1 << 20, 1500, 3 << 30] {
            assert_eq!(parse_bytes(&format_bytes(v)).unwrap(), v);
        }
        assert_eq!(format_bytes(32 << 10), "32KiB");
    }

    #[test]
    fn durations_parse() {
        assert_eq!(parse_duration("8s").unwrap(), Duration::from_secs(8));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("100us").unwrap(), Duration::from_micros(100));
        assert_eq!(parse_duration("2").unwrap(), Duration::from_secs(2));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert!(parse_duration("8 parsecs").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
