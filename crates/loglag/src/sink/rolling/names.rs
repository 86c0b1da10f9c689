//! The name grammar: which files are this sink's (`Names`), what a period is and how
//! its start is written into a name. A plain value, shared by the writer, which makes
//! names, and the housekeeper, which decides from them what it may touch.

use std::path::{Path, PathBuf};
use std::time::Duration;

/// How often a file is rotated by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Period {
    Minutely,
    Hourly,
    Daily,
    /// Weeks start on Sunday at midnight, as in tracing-appender.
    Weekly,
    /// Any period, aligned to multiples of it since the Unix epoch (in the chosen zone).
    Every(Duration),
}

impl Period {
    pub(super) fn seconds(self) -> i64 {
        match self {
            Period::Minutely => 60,
            Period::Hourly => 3600,
            Period::Daily => 86_400,
            Period::Weekly => 7 * 86_400,
            Period::Every(d) => d.as_secs().max(1) as i64,
        }
    }

    /// The start of the period holding `wall_s` (seconds since the epoch in the zone's
    /// wall time). This is the period's identity: two instants are in one period when
    /// their wall times floor to the same value, whatever the UTC offset did between
    /// them (DST).
    pub(super) fn floor(self, wall_s: i64) -> i64 {
        let p = self.seconds();
        match self {
            // 1970-01-01 was a Thursday: Sundays are 3 days later.
            Period::Weekly => (wall_s - 3 * 86_400).div_euclid(p) * p + 3 * 86_400,
            _ => wall_s.div_euclid(p) * p,
        }
    }

    /// How dated names show the period (tracing-appender's formats).
    pub(super) fn date_format(self) -> DateFormat {
        match self {
            Period::Minutely => DateFormat::Minute,
            Period::Hourly => DateFormat::Hour,
            Period::Daily | Period::Weekly => DateFormat::Day,
            Period::Every(_) if self.seconds() % 86_400 == 0 => DateFormat::Day,
            Period::Every(_) if self.seconds() % 3600 == 0 => DateFormat::Hour,
            Period::Every(_) if self.seconds() % 60 == 0 => DateFormat::Minute,
            Period::Every(_) => DateFormat::Second,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum DateFormat {
    Day,
    Hour,
    Minute,
    Second,
}

impl DateFormat {
    /// `wall_s` formatted as tracing-appender names files.
    pub(super) fn format(self, wall_s: i64) -> String {
        let (y, m, d) = crate::record::time::civil_from_days(wall_s.div_euclid(86_400));
        let secs = wall_s.rem_euclid(86_400);
        let (h, min, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
        match self {
            DateFormat::Day => format!("{y:04}-{m:02}-{d:02}"),
            DateFormat::Hour => format!("{y:04}-{m:02}-{d:02}-{h:02}"),
            DateFormat::Minute => format!("{y:04}-{m:02}-{d:02}-{h:02}-{min:02}"),
            DateFormat::Second => format!("{y:04}-{m:02}-{d:02}-{h:02}-{min:02}-{s:02}"),
        }
    }

    /// Whether `s` is a stamp in exactly this format (`2026-12-01-03`, digits and
    /// dashes in their places, nothing else).
    fn matches(self, s: &str) -> bool {
        let len = match self {
            DateFormat::Day => 10,
            DateFormat::Hour => 13,
            DateFormat::Minute => 16,
            DateFormat::Second => 19,
        };
        let shaped = s.len() == len
            && s.bytes().enumerate().all(|(i, b)| match i {
                4 | 7 | 10 | 13 | 16 => b == b'-',
                _ => b.is_ascii_digit(),
            });
        shaped && is_real_time(s)
    }
}

/// Whether a stamp of the right shape names a real date and time: `2026-13-45` is
/// someone else's file, which retention must not delete.
fn is_real_time(stamp: &str) -> bool {
    let field = |at: usize| stamp.get(at..at + 2).and_then(|f| f.parse::<u32>().ok());
    let (Some(y), Some(m), Some(d)) = (
        stamp.get(0..4).and_then(|f| f.parse::<i64>().ok()),
        field(5),
        field(8),
    ) else {
        return false;
    };
    let leap = y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
    let days_in_month = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    let time_ok = [(11, 24), (14, 60), (17, 60)]
        .iter()
        .all(|&(at, limit)| at >= stamp.len() || field(at).is_some_and(|v| v < limit));
    (1..=days_in_month).contains(&d) && time_ok
}

/// What the files are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// The current file keeps a fixed name (`app.log`); a rotated one is renamed after
    /// the start of its period (`app.log.2026-12-01-03`). `tail -F app.log` and
    /// logrotate-style tools follow it.
    Fixed,
    /// tracing-appender's: the current file is `PREFIX.DATE[.SUFFIX]` and is never
    /// renamed.
    #[default]
    Dated,
}
/// The local zone's UTC offset at `utc_s`, as Windows' time-zone settings give it
/// (DST included).
#[cfg(windows)]
pub(super) fn local_offset_s(utc_s: i64) -> i64 {
    crate::sys::windows::local_offset_s(utc_s)
}

/// The local zone's UTC offset at `utc_s`, as `localtime_r` sees it (DST included).
#[cfg(unix)]
pub(super) fn local_offset_s(utc_s: i64) -> i64 {
    // SAFETY: localtime_r writes only into the `tm` we own.
    unsafe {
        let t = utc_s as libc::time_t;
        let mut tm: libc::tm = std::mem::zeroed();
        if libc::localtime_r(&t, &mut tm).is_null() {
            0
        } else {
            tm.tm_gmtoff
        }
    }
}
/// A file name of this sink, taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) stamp: String,
    pub(crate) counter: Option<u32>,
    pub(crate) gz: bool,
}

/// The names one configuration produces, and nothing else: the grammar retention,
/// compression and the sweep match exactly, anchored at both ends.
///
/// - [`Naming::Dated`]: `[PREFIX.]STAMP[.NNN][.SUFFIX]`, the current file included;
///   with no rotation at all, tracing-appender's fixed name (`PREFIX[.SUFFIX]`).
/// - [`Naming::Fixed`]: the current file is `PREFIX`; rotated ones `PREFIX.STAMP[.NNN]`.
///
/// Any of them may end in `.gz` once compressed. `NNN` (three digits or more) is
/// always there when size rotation is on, and otherwise only when a period's name was
/// taken already (the wall clock went back).
#[derive(Debug, Clone)]
pub(crate) struct Names {
    pub(super) prefix: String,
    pub(super) suffix: Option<String>,
    pub(super) naming: Naming,
    pub(super) format: DateFormat,
    pub(super) counted: bool,
    pub(super) never: bool,
}

impl Names {
    /// The one name of a never-rotating, never-dated file (tracing-appender's).
    pub(super) fn never_name(&self) -> Option<String> {
        if !self.never || self.naming == Naming::Fixed {
            return None;
        }
        match (self.prefix.as_str(), &self.suffix) {
            ("", None) => None, // tracing-appender dates it
            (p, None) => Some(p.to_owned()),
            ("", Some(s)) => Some(s.clone()),
            (p, Some(s)) => Some(format!("{p}.{s}")),
        }
    }

    pub(crate) fn name(&self, stamp: &str, counter: Option<u32>) -> String {
        let mut parts: Vec<&str> = Vec::with_capacity(4);
        if !self.prefix.is_empty() {
            parts.push(&self.prefix);
        }
        parts.push(stamp);
        let counter = counter.map(|n| format!("{n:03}"));
        if let Some(c) = &counter {
            parts.push(c);
        }
        if self.naming == Naming::Dated {
            if let Some(s) = &self.suffix {
                parts.push(s);
            }
        }
        parts.join(".")
    }

    /// `name` taken apart, if this sink could have produced it (rotated or current,
    /// compressed or not). The fixed current name (`PREFIX`) is not a match.
    pub(crate) fn parse(&self, name: &str) -> Option<Parsed> {
        if self.never {
            // One fixed name, never rotated: nothing else is this sink's.
            return None;
        }
        let (rest, gz) = match name.strip_suffix(".gz") {
            Some(r) => (r, true),
            None => (name, false),
        };
        let mut rest = rest;
        if !self.prefix.is_empty() {
            rest = rest.strip_prefix(self.prefix.as_str())?.strip_prefix('.')?;
        }
        if self.naming == Naming::Dated {
            if let Some(s) = &self.suffix {
                rest = rest.strip_suffix(s.as_str())?.strip_suffix('.')?;
            }
        }
        let (stamp, counter) = match rest.split_once('.') {
            Some((stamp, n)) => {
                // Three to six digits: the counter never comes near u32's end, and a
                // longer number is someone else's.
                if !(3..=6).contains(&n.len()) || !n.bytes().all(|b| b.is_ascii_digit()) {
                    return None;
                }
                (stamp, Some(n.parse().ok()?))
            }
            None => (rest, None),
        };
        self.format.matches(stamp).then(|| Parsed {
            stamp: stamp.to_owned(),
            counter,
            gz,
        })
    }

    /// Whether `name` is one of this sink's compression temporaries (`NAME.gz.tmp`).
    pub(super) fn is_temporary(&self, name: &str) -> bool {
        name.strip_suffix(".gz.tmp")
            .is_some_and(|n| self.parse(n).is_some_and(|p| !p.gz))
    }
}
pub(super) fn gz(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".gz");
    PathBuf::from(p)
}
#[cfg(test)]
mod tests {
    use super::*;

    fn names(
        prefix: &str,
        suffix: Option<&str>,
        naming: Naming,
        format: DateFormat,
        counted: bool,
    ) -> Names {
        Names {
            prefix: prefix.into(),
            suffix: suffix.map(Into::into),
            naming,
            format,
            counted,
            never: false,
        }
    }

    #[test]
    fn periods_start_on_their_boundaries() {
        // 2026-12-01T03:17:34Z is a Tuesday.
        let t = 1_796_095_054;
        assert_eq!(DateFormat::Second.format(t), "2026-12-01-03-17-34");
        assert_eq!(
            DateFormat::Hour.format(Period::Hourly.floor(t)),
            "2026-12-01-03"
        );
        assert_eq!(DateFormat::Day.format(Period::Daily.floor(t)), "2026-12-01");
        assert_eq!(
            DateFormat::Second.format(Period::Weekly.floor(t)),
            "2026-11-29-00-00-00",
            "weeks start on Sunday, as in tracing-appender"
        );
        assert_eq!(
            Period::Every(Duration::from_secs(15 * 60)).floor(t) % 900,
            0
        );
    }

    #[test]
    fn the_grammar_matches_only_names_it_produces() {
        let n = names("", None, Naming::Dated, DateFormat::Day, false);
        assert_eq!(
            n.parse("2026-12-01").map(|p| p.stamp),
            Some("2026-12-01".into())
        );
        assert!(n.parse("2026-12-01.gz").is_some_and(|p| p.gz));
        assert_eq!(n.parse("2026-12-01.004").and_then(|p| p.counter), Some(4));
        for user in [
            "2025-budget.xlsx",
            "2019-wedding-photos.tar",
            "2026-12-01.xlsx",
            "2026-12-01-03",
            "2026-12-01.04",
            "x.gz.tmp",
        ] {
            assert_eq!(n.parse(user), None, "{user}");
        }
        let n = names("app.log", None, Naming::Fixed, DateFormat::Day, true);
        assert!(n.parse("app.log.2026-12-01.000").is_some());
        for user in [
            "app.log",
            "app.log.2024-incident-notes.md",
            "app.log.backup",
            "app.log.001",
            "app.logger.2026-12-01",
        ] {
            assert_eq!(n.parse(user), None, "{user}");
        }
        let n = names("app", Some("log"), Naming::Dated, DateFormat::Hour, true);
        assert_eq!(
            n.name("2026-12-01-03", Some(7)),
            "app.2026-12-01-03.007.log"
        );
        assert!(n.parse("app.2026-12-01-03.007.log.gz").is_some());
        assert!(n.is_temporary("app.2026-12-01-03.007.log.gz.tmp"));
        assert!(!n.is_temporary("backup.gz.tmp"));
        assert!(!n.is_temporary("app.2026-12-01-03.007.log.gz.gz.tmp"));
    }

    #[test]
    fn the_grammar_accepts_only_real_dates_and_times() {
        let n = names("app", None, Naming::Dated, DateFormat::Day, false);
        for real in ["app.2026-12-31", "app.2024-02-29", "app.2000-02-29"] {
            assert!(n.parse(real).is_some(), "{real}");
        }
        for impossible in [
            "app.2026-13-45",
            "app.2026-00-10",
            "app.2026-12-00",
            "app.2026-04-31",
            "app.2026-02-29",
            "app.1900-02-29",
        ] {
            assert_eq!(n.parse(impossible), None, "{impossible}");
        }
        let n = names("app", None, Naming::Dated, DateFormat::Second, false);
        assert!(n.parse("app.2026-12-01-23-59-59").is_some());
        for impossible in [
            "app.2026-12-01-24-00-00",
            "app.2026-12-01-23-60-00",
            "app.2026-12-01-23-00-60",
        ] {
            assert_eq!(n.parse(impossible), None, "{impossible}");
        }
    }
}
