//! Severity levels, ordered from least to most severe.

use crate::record::parse::named_enum;

named_enum! {
    /// The severity of a record. Ordered: `Trace < Debug < Info < Warn < Error`; the
    /// index of each is `level as usize`. Its name is upper case, as tracing-subscriber
    /// prints it, and parsed in any case.
    ///
    /// ```
    /// use loglag::Level;
    /// assert!(Level::Warn > Level::Info);
    /// assert_eq!("error".parse::<Level>()?, Level::Error);
    /// assert_eq!(Level::ALL.len(), 5);
    /// # Ok::<(), loglag::ParseError>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
    #[repr(u8)]
    pub enum Level: "unknown level" {
        /// Very verbose diagnostics.
        Trace = "TRACE",
        /// Diagnostics for developers.
        Debug = "DEBUG",
        /// Normal operation.
        Info = "INFO",
        /// Something unexpected that the program handled.
        Warn = "WARN",
        /// A failure.
        Error = "ERROR",
    }
}

impl Level {
    pub(crate) fn from_index(i: u8) -> Level {
        Level::ALL[(i as usize).min(4)]
    }

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
