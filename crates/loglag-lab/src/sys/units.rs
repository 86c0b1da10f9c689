//! Sizes and durations on the lab's command line: the library's one grammar
//! (`loglag::units`: `256KiB`, `1.5MiB`, `500ms`, `8s`, `1h`), re-exported so every
//! flag reads what configuration reads, and a rate, which is a size per second.

use std::time::Duration;

pub use loglag::units::{format_size as format_bytes, UnitError};

/// A size in bytes (`4096`, `256KiB`, `1.5MiB`, `2MB`), as [`loglag::units::parse_size`].
pub fn parse_bytes(s: &str) -> Result<u64, UnitError> {
    loglag::units::parse_size(s)
}

/// A rate in bytes per second: a size, with or without `/s` (`256KiB`, `1MiB/s`).
pub fn parse_rate(s: &str) -> Result<u64, UnitError> {
    let s = s.trim();
    loglag::units::parse_size(s.strip_suffix("/s").unwrap_or(s))
}

/// A duration (`8s`, `500ms`, `100us`, `1.5s`, `2m`, `1h`, `7d`), as
/// [`loglag::units::parse_duration`]: the unit is required.
pub fn parse_duration(s: &str) -> Result<Duration, UnitError> {
    loglag::units::parse_duration(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_flags_read_the_library_grammar() {
        assert_eq!(parse_bytes("256KiB").unwrap(), 262_144);
        assert_eq!(parse_rate("1.5MiB/s").unwrap(), 1_572_864);
        assert_eq!(parse_rate("256KiB").unwrap(), 262_144);
        assert_eq!(format_bytes(32 << 10), "32KiB");
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert!(parse_duration("8").is_err(), "a unit is required");
        assert!(parse_bytes("fast").is_err());
    }
}
