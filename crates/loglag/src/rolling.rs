//! tracing-appender's `rolling` API, backed by [`RollingFile`]: replacing
//! `tracing_appender::rolling` with `loglag::rolling` keeps a program compiling and
//! naming its files the same way (`PREFIX.YYYY-MM-DD[-HH[-mm]][.SUFFIX]`).
//!
//! Passed to [`crate::non_blocking`] or [`NonBlockingBuilder::finish`](crate::NonBlockingBuilder::finish),
//! the appender becomes the pipeline's sink itself: it rotates only between batches
//! and, with `.spool()`, gets exactly-once delivery. Used directly as an `io::Write` or
//! a `MakeWriter`, it writes synchronously, as tracing-appender's does.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let appender = loglag::rolling::hourly(dir.path(), "app.log");
//! let (writer, _guard) = loglag::non_blocking(appender);
//! # drop(writer);
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Beyond tracing-appender, [`Builder`] also rotates by size
//! ([`Builder::max_file_size`]), keeps files by total size or age, compresses rotated
//! files and follows local time.

use std::io;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use crate::sink::rolling::{Compression, Naming, Period, RollingFile, RollingFileBuilder};
use crate::sink::Sink;

/// How often to rotate, as in tracing-appender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation(Option<Period>);

impl Rotation {
    pub const MINUTELY: Rotation = Rotation(Some(Period::Minutely));
    pub const HOURLY: Rotation = Rotation(Some(Period::Hourly));
    pub const DAILY: Rotation = Rotation(Some(Period::Daily));
    pub const WEEKLY: Rotation = Rotation(Some(Period::Weekly));
    pub const NEVER: Rotation = Rotation(None);
}

/// A file appender that rotates; see the module documentation.
#[derive(Debug)]
pub struct RollingFileAppender {
    file: Mutex<RollingFile>,
}

/// Why building an appender failed.
#[derive(Debug)]
pub struct InitError(io::Error);

impl std::fmt::Display for InitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "initializing rolling file appender failed: {}", self.0)
    }
}

impl std::error::Error for InitError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl RollingFileAppender {
    /// As tracing-appender's: panics if the directory or file cannot be created.
    pub fn new(
        rotation: Rotation,
        directory: impl AsRef<Path>,
        filename_prefix: impl AsRef<Path>,
    ) -> RollingFileAppender {
        Builder::new()
            .rotation(rotation)
            .filename_prefix(filename_prefix.as_ref().to_string_lossy())
            .build(directory)
            .expect("initializing rolling file appender failed")
    }

    pub fn builder() -> Builder {
        Builder::new()
    }

    /// The sink behind the appender (what `finish` uses).
    pub fn into_sink(self) -> RollingFile {
        self.file.into_inner().unwrap_or_else(|e| e.into_inner())
    }

    fn lock(&self) -> MutexGuard<'_, RollingFile> {
        self.file.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Writes one buffer to the file, rotating first when it is time: each `write` is one
/// record (or batch), so rotation never splits one.
fn write_rotating(file: &mut RollingFile, buf: &[u8]) -> io::Result<usize> {
    file.before_batch(buf.len())?;
    let (_, written) = crate::sink::write_all_counted(file, buf);
    written.map(|()| buf.len()).map_err(|(e, _)| e)
}

impl io::Write for RollingFileAppender {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_rotating(&mut self.lock(), buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The writer [`RollingFileAppender`] hands to `tracing_subscriber::fmt` per event.
#[derive(Debug)]
pub struct RollingWriter<'a>(MutexGuard<'a, RollingFile>);

impl io::Write for RollingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_rotating(&mut self.0, buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(feature = "tracing")]
impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for RollingFileAppender {
    type Writer = RollingWriter<'a>;
    fn make_writer(&'a self) -> RollingWriter<'a> {
        RollingWriter(self.lock())
    }
}

/// A minutely-rotating appender: `PREFIX.YYYY-MM-DD-HH-mm`.
pub fn minutely(
    directory: impl AsRef<Path>,
    file_name_prefix: impl AsRef<Path>,
) -> RollingFileAppender {
    RollingFileAppender::new(Rotation::MINUTELY, directory, file_name_prefix)
}

/// An hourly-rotating appender: `PREFIX.YYYY-MM-DD-HH`.
pub fn hourly(
    directory: impl AsRef<Path>,
    file_name_prefix: impl AsRef<Path>,
) -> RollingFileAppender {
    RollingFileAppender::new(Rotation::HOURLY, directory, file_name_prefix)
}

/// A daily-rotating appender: `PREFIX.YYYY-MM-DD`.
pub fn daily(
    directory: impl AsRef<Path>,
    file_name_prefix: impl AsRef<Path>,
) -> RollingFileAppender {
    RollingFileAppender::new(Rotation::DAILY, directory, file_name_prefix)
}

/// A weekly-rotating appender (weeks start on Monday): `PREFIX.YYYY-MM-DD`.
pub fn weekly(
    directory: impl AsRef<Path>,
    file_name_prefix: impl AsRef<Path>,
) -> RollingFileAppender {
    RollingFileAppender::new(Rotation::WEEKLY, directory, file_name_prefix)
}

/// One file that is never rotated: `FILE_NAME`.
pub fn never(directory: impl AsRef<Path>, file_name: impl AsRef<Path>) -> RollingFileAppender {
    RollingFileAppender::new(Rotation::NEVER, directory, file_name)
}

/// tracing-appender's builder, plus size rotation, retention by bytes or age,
/// compression and local time.
#[derive(Debug, Clone)]
#[must_use]
pub struct Builder {
    rotation: Rotation,
    prefix: String,
    suffix: Option<String>,
    max_files: Option<usize>,
    latest: Option<String>,
    max_bytes: Option<u64>,
    keep_bytes: Option<u64>,
    keep_age: Option<Duration>,
    compression: Option<Compression>,
    local_time: bool,
    reopen_on_sighup: bool,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder::new()
    }
}

impl Builder {
    /// Never rotates, no prefix or suffix, keeps every file (tracing-appender's
    /// defaults).
    pub fn new() -> Builder {
        Builder {
            rotation: Rotation::NEVER,
            prefix: String::new(),
            suffix: None,
            max_files: None,
            latest: None,
            max_bytes: None,
            keep_bytes: None,
            keep_age: None,
            compression: None,
            local_time: false,
            reopen_on_sighup: false,
        }
    }

    pub fn rotation(self, rotation: Rotation) -> Builder {
        Builder { rotation, ..self }
    }

    pub fn filename_prefix(self, prefix: impl Into<String>) -> Builder {
        Builder {
            prefix: prefix.into(),
            ..self
        }
    }

    pub fn filename_suffix(self, suffix: impl Into<String>) -> Builder {
        Builder {
            suffix: Some(suffix.into()),
            ..self
        }
    }

    /// Keeps at most `n` files, the current one included (tracing-appender's meaning).
    pub fn max_log_files(self, n: usize) -> Builder {
        Builder {
            max_files: Some(n.max(1)),
            ..self
        }
    }

    /// A symlink `NAME` in the directory, always pointing at the current file.
    pub fn latest_symlink(self, name: impl Into<String>) -> Builder {
        Builder {
            latest: Some(name.into()),
            ..self
        }
    }

    /// Also rotates before a file would exceed `bytes` (loglag only).
    pub fn max_file_size(self, bytes: u64) -> Builder {
        Builder {
            max_bytes: Some(bytes),
            ..self
        }
    }

    /// Keeps rotated files up to `bytes` in total (loglag only).
    pub fn max_total_size(self, bytes: u64) -> Builder {
        Builder {
            keep_bytes: Some(bytes),
            ..self
        }
    }

    /// Deletes rotated files older than `age` (loglag only).
    pub fn max_age(self, age: Duration) -> Builder {
        Builder {
            keep_age: Some(age),
            ..self
        }
    }

    /// Gzips rotated files in the background (loglag only).
    pub fn compress_gzip(self) -> Builder {
        Builder {
            compression: Some(Compression::Gzip),
            ..self
        }
    }

    /// Rotates on local-time boundaries rather than UTC (loglag only).
    pub fn local_time(self, local: bool) -> Builder {
        Builder {
            local_time: local,
            ..self
        }
    }

    /// Reopens the current file after SIGHUP (loglag only; logrotate's `create`).
    pub fn reopen_on_sighup(self, on: bool) -> Builder {
        Builder {
            reopen_on_sighup: on,
            ..self
        }
    }

    pub fn build(&self, directory: impl AsRef<Path>) -> Result<RollingFileAppender, InitError> {
        let b = self.clone();
        let mut file = RollingFileBuilder::new(directory.as_ref(), b.prefix)
            .naming(Naming::Dated)
            .local_time(b.local_time)
            .reopen_on_sighup(b.reopen_on_sighup);
        if let Some(period) = b.rotation.0 {
            file = file.every(period);
        }
        if let Some(s) = b.suffix {
            file = file.suffix(s);
        }
        if let Some(n) = b.max_files {
            // tracing-appender counts the current file; dated files never leave it.
            file = file.keep_files(n.saturating_sub(1));
        }
        if let Some(l) = b.latest {
            file = file.latest_symlink(l);
        }
        if let Some(m) = b.max_bytes {
            file = file.max_bytes(m);
        }
        if let Some(k) = b.keep_bytes {
            file = file.keep_bytes(k);
        }
        if let Some(a) = b.keep_age {
            file = file.keep_age(a);
        }
        if let Some(c) = b.compression {
            file = file.compress(c);
        }
        Ok(RollingFileAppender {
            file: Mutex::new(file.build().map_err(InitError)?),
        })
    }
}
