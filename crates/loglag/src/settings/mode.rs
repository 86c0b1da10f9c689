//! `LOGLAG_MODE`: switch the same binary between not logging, only building records,
//! writing them on the caller's thread, and the non-blocking pipeline.

use crate::record::parse::{named_enum, ParseError};

/// The environment variable read by [`Mode::from_env`].
pub const MODE_ENV: &str = "LOGLAG_MODE";

named_enum! {
    /// What a log call does. Comparing `format-only` with `sync` and `async` on your own
    /// service tells "building the log is slow" apart from "waiting to write it is slow".
    ///
    /// | mode | the call | accounting |
    /// |---|---|---|
    /// | `off` | returns before formatting | nothing counted |
    /// | `format-only` | builds the record as `async` would, then discards it | nothing counted |
    /// | `sync` | formats and writes it on the caller's thread | counted |
    /// | `async` (default) | builds it and hands it to the writer thread | counted |
    ///
    /// "Builds" is what the caller pays in `async`: a formatted line for `io::Write` and
    /// `log`, the captured values for [`LoglagLayer`](crate::LoglagLayer) and loglag's
    /// macros (their lines are rendered on the writer thread).
    ///
    /// ```
    /// assert_eq!("format-only".parse::<loglag::Mode>()?, loglag::Mode::FormatOnly);
    /// # Ok::<(), loglag::ParseError>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Mode: "invalid LOGLAG_MODE" {
        /// Do nothing.
        Off = "off",
        /// Build the record and discard it.
        FormatOnly = "format-only" | "format_only",
        /// Write on the caller's thread.
        Sync = "sync",
        /// Queue for the writer thread.
        #[default]
        Async = "async",
    }
}

impl Mode {
    /// Reads `LOGLAG_MODE` (case-insensitive). Unset (or empty) means `async`; an
    /// invalid value, not valid UTF-8 included, is an error here. `NonBlockingBuilder::finish` warns about it on stderr and uses
    /// `async` instead: a typo in the environment must not stop a service.
    pub fn from_env() -> Result<Mode, ParseError> {
        match std::env::var(MODE_ENV) {
            Ok(v) if !v.trim().is_empty() => v.parse(),
            Err(std::env::VarError::NotUnicode(v)) => Err(mode_error(&v.to_string_lossy())),
            _ => Ok(Mode::Async),
        }
    }
}

/// `LOGLAG_MODE`'s error (the variable is the mode's only spelling outside `Settings`).
fn mode_error(value: &str) -> ParseError {
    ParseError::named("invalid LOGLAG_MODE", value, &Mode::ALL.map(Mode::as_str))
}
