//! Severity levels, ordered from least to most severe.

use crate::record::parse::ParseError;
use std::fmt;
use std::str::FromStr;

/// The severity of a record. Ordered: `Trace < Debug < Info < Warn < Error`.
///
/// ```
/// use loglag::Level;
/// assert!(Level::Warn > Level::Info);
/// assert_eq!("error".parse::<Level>()?, Level::Error);
/// # Ok::<(), loglag::ParseError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u8)]
pub enum Level {
    /// Very verbose diagnostics.
    Trace = 0,
    /// Diagnostics for developers.
    Debug = 1,
    /// Normal operation.
    Info = 2,
    /// Something unexpected that the program handled.
    Warn = 3,
    /// A failure.
    Error = 4,
}

impl Level {
    /// All levels, least severe first; the index of each is `level as usize`.
    pub const ALL: [Level; 5] = [
        Level::Trace,
        Level::Debug,
        Level::Info,
        Level::Warn,
        Level::Error,
    ];

    pub(crate) fn from_index(i: u8) -> Level {
        Level::ALL[(i as usize).min(4)]
    }

    /// The upper-case name, as tracing-subscriber prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Trace => "TRACE",
            Level::Debug => "DEBUG",
            Level::Info => "INFO",
            Level::Warn => "WARN",
            Level::Error => "ERROR",
        }
    }
}

impl Level {
    /// The lower-case name, as logfmt prints it.
    pub fn as_lower_str(self) -> &'static str {
        match self {
            Level::Trace => "trace",
            Level::Debug => "debug",
            Level::Info => "info",
            Level::Warn => "warn",
            Level::Error => "error",
        }
    }
}

impl fmt::Display for Level {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Level {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Level, ParseError> {
        Level::ALL
            .into_iter()
            .find(|l| l.as_str().eq_ignore_ascii_case(s.trim()))
            .ok_or_else(|| ParseError::new("unknown level", s, "trace, debug, info, warn or error"))
    }
}

#[cfg(feature = "tracing")]
impl From<&tracing_core::Level> for Level {
    fn from(level: &tracing_core::Level) -> Level {
        match *level {
            tracing_core::Level::TRACE => Level::Trace,
            tracing_core::Level::DEBUG => Level::Debug,
            tracing_core::Level::INFO => Level::Info,
            tracing_core::Level::WARN => Level::Warn,
            _ => Level::Error,
        }
    }
}

#[cfg(feature = "log")]
impl From<log::Level> for Level {
    fn from(level: log::Level) -> Level {
        match level {
            log::Level::Trace => Level::Trace,
            log::Level::Debug => Level::Debug,
            log::Level::Info => Level::Info,
            log::Level::Warn => Level::Warn,
            log::Level::Error => Level::Error,
        }
    }
}
