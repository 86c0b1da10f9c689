//! tracing-appender's `rolling` API, backed by [`RollingFile`]: replacing
//! `tracing_appender::rolling` with `loglag::rolling` keeps a program compiling and
//! naming its files the same way (`PREFIX.YYYY-MM-DD[-HH[-mm]][.SUFFIX]`).
//!
//! Passed to [`NonBlockingBuilder::build`](crate::NonBlockingBuilder::build), the
//! appender becomes the pipeline's sink itself ([`RollingFile`]): it rotates only
//! between batches and, with `.spool()`, gets exactly-once delivery. Passed to
//! [`crate::non_blocking()`] (tracing-appender's drop-in), used as an `io::Write` or as a
//! `MakeWriter`, it is a writer like any other, as tracing-appender's is: each write
//! rotates when one is due.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let appender = loglag::rolling::hourly(dir.path(), "app.log");
//! let (writer, _guard) = loglag::NonBlockingBuilder::default().build(appender)?;
//! # drop(writer);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`Builder`] is loglag's one rolling API: tracing-appender's knobs under their
//! names, and loglag's own for what tracing-appender lacks (size rotation, retention
//! by bytes or age, gzip, local time, a fixed current name, reopening, file mode).
//!
//! # What the sink touches
//! Only files whose whole name it could have produced: `[PREFIX.]DATE[.NNN][.SUFFIX]`
//! (or `PREFIX.DATE[.NNN]` for rotated files with [`Naming::Fixed`]), optionally
//! followed by `.gz`, with `DATE` in exactly this rotation's format, and only regular
//! files. Anything else in the directory (`2025-budget.xlsx`, `app.log.backup`, a
//! directory, a symlink) is never deleted, renamed or compressed, and the live file
//! never is, whatever its name (it is recognised by inode).
//!
//! # The order of names
//! Within one period a counter `NNN` is never reused (it continues from the highest on
//! disk, across restarts), and with size rotation every name carries one, so `ls |
//! sort` lists files in the order they were written, compressed ones included (while
//! a period has fewer than 1,000 files; `sort -V` beyond). The one exception is the
//! wall clock itself going back: names follow the wall clock, so a file started after
//! a backward jump is named for the earlier time (with the next free counter if that
//! name was taken).
//!
//! # Time
//! A period is identified by its start in wall time (UTC, or local with
//! [`Builder::local_time`]): when daylight saving time ends and an hour repeats, the
//! repeated hour is the same period and the same file. Any change of period, forward
//! or back (a wall-clock step), rotates and re-anchors at once.
//!
//! # Symlinks
//! No file the sink creates is reached through a symlink: the current file and the
//! compression temporary are opened with `O_NOFOLLOW` (a planted link at the current
//! file's path makes `build` fail, or a rotation fail and its records count as
//! `io_error`), rotated files are renamed without replacing anything, and the
//! `latest` link is made under a temporary name and renamed over the old one, which
//! replaces a planted link rather than following it.
//!
//! # Permissions
//! Files are created with mode `0o666` minus the process umask (`0o644` under the usual
//! `022`), as tracing-appender and `File::create` do; [`Builder::file_mode`] sets
//! another (`0o640`, `0o600`), still minus the umask. The spool is always `0o600`.

use std::io;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime};

use crate::sink::rolling::{Period, RollingFile, RollingSpec, TimeSource, DEFAULT_LOCK_WAIT};
use crate::sink::Sink;

pub use crate::sink::rolling::{Compression, Naming};

/// How often to rotate, as in tracing-appender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rotation(Option<Period>);

impl Rotation {
    pub const MINUTELY: Rotation = Rotation(Some(Period::Minutely));
    pub const HOURLY: Rotation = Rotation(Some(Period::Hourly));
    pub const DAILY: Rotation = Rotation(Some(Period::Daily));
    pub const WEEKLY: Rotation = Rotation(Some(Period::Weekly));
    pub const NEVER: Rotation = Rotation(None);

    /// Any period, aligned to multiples of it since the Unix epoch (loglag only).
    /// Names carry the finest date unit that divides it (`2026-12-01-03-15` for 15
    /// minutes, seconds for periods that are not whole minutes).
    pub fn every(period: Duration) -> Rotation {
        Rotation(Some(Period::Every(period)))
    }
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

    /// The file being written now.
    pub fn current_path(&self) -> std::path::PathBuf {
        self.lock().current_path().to_owned()
    }

    /// Blocks until compression and retention have caught up with every rotation so
    /// far. For tests and tools.
    pub fn wait_housekeeping(&self) {
        self.lock().wait_housekeeping();
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

/// A weekly-rotating appender (weeks start on Sunday, 00:00 UTC, as in
/// tracing-appender): `PREFIX.YYYY-MM-DD`, the date of that Sunday.
pub fn weekly(
    directory: impl AsRef<Path>,
    file_name_prefix: impl AsRef<Path>,
) -> RollingFileAppender {
    RollingFileAppender::new(Rotation::WEEKLY, directory, file_name_prefix)
}

/// One file that is never rotated: `FILE_NAME` (or, when it is empty, the date it was
/// created, as in tracing-appender).
pub fn never(directory: impl AsRef<Path>, file_name: impl AsRef<Path>) -> RollingFileAppender {
    RollingFileAppender::new(Rotation::NEVER, directory, file_name)
}

/// Builds a [`RollingFileAppender`]: tracing-appender's builder, plus what loglag adds.
///
/// | knob | default | |
/// |---|---|---|
/// | [`rotation`](Self::rotation) | [`Rotation::NEVER`] | tracing-appender |
/// | [`filename_prefix`](Self::filename_prefix) | `""` | tracing-appender |
/// | [`filename_suffix`](Self::filename_suffix) | `""` | tracing-appender |
/// | [`max_log_files`](Self::max_log_files) | keep all | tracing-appender |
/// | [`latest_symlink`](Self::latest_symlink) | none | tracing-appender |
/// | [`max_file_size`](Self::max_file_size) | none | loglag |
/// | [`max_total_size`](Self::max_total_size) | none | loglag |
/// | [`max_age`](Self::max_age) | none | loglag |
/// | [`compression`](Self::compression) | none | loglag |
/// | [`naming`](Self::naming) | [`Naming::Dated`] | loglag |
/// | [`local_time`](Self::local_time) | UTC | loglag |
/// | [`reopen_on_sighup`](Self::reopen_on_sighup) | off | loglag |
/// | [`file_mode`](Self::file_mode) | `0o666` minus umask | loglag |
/// | [`time_source`](Self::time_source) | the system clock | loglag, for tests |
/// | [`lock_wait`](Self::lock_wait) | 10 s | loglag |
///
/// ```
/// use loglag::rolling::{Builder, Compression, Rotation};
/// let dir = tempfile::tempdir()?;
/// let appender = Builder::new()
///     .rotation(Rotation::DAILY)
///     .filename_prefix("app")
///     .filename_suffix("log")
///     .max_file_size(64 << 20)
///     .max_log_files(10)
///     .compression(Compression::Gzip)
///     .build(dir.path())?;
/// let (writer, _guard) = loglag::non_blocking(appender);
/// # drop(writer);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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
    naming: Naming,
    local_time: bool,
    reopen_on_sighup: bool,
    file_mode: Option<u32>,
    clock: TimeSource,
    lock_wait: Duration,
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
            naming: Naming::Dated,
            local_time: false,
            reopen_on_sighup: false,
            file_mode: None,
            clock: TimeSource::default(),
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }

    pub fn rotation(self, rotation: Rotation) -> Builder {
        Builder { rotation, ..self }
    }

    /// The start of every file name (`app` in `app.2026-12-01.log`); with
    /// [`Naming::Fixed`], the current file's whole name.
    pub fn filename_prefix(self, prefix: impl Into<String>) -> Builder {
        Builder {
            prefix: prefix.into(),
            ..self
        }
    }

    /// The end of dated file names (`log` in `app.2026-12-01.log`).
    pub fn filename_suffix(self, suffix: impl Into<String>) -> Builder {
        let suffix: String = suffix.into();
        Builder {
            suffix: Some(suffix).filter(|s| !s.is_empty()),
            ..self
        }
    }

    /// Keeps at most `n` files, the current one included; `0` keeps every file
    /// (tracing-appender's meaning). Every file the appender produces counts, size
    /// rotation's included.
    pub fn max_log_files(self, n: usize) -> Builder {
        Builder {
            max_files: Some(n).filter(|&n| n > 0),
            ..self
        }
    }

    /// A symlink `NAME` in the directory, always pointing at the current file. An
    /// empty name means no link, as in tracing-appender. On Windows making a symlink
    /// needs Developer Mode or the SeCreateSymbolicLinkPrivilege; without them `build`
    /// fails, saying so.
    pub fn latest_symlink(self, name: impl Into<String>) -> Builder {
        let name: String = name.into();
        Builder {
            latest: Some(name).filter(|n| !n.is_empty()),
            ..self
        }
    }

    /// Also rotates before a batch would take the current file past `bytes` (loglag
    /// only). A batch is never split, so a file exceeds it by at most one batch when it
    /// was empty. Every name then carries a counter (`app.2026-12-01.003.log`). At
    /// least 1 byte: 0 makes [`build`](Self::build) fail, naming it.
    pub fn max_file_size(self, bytes: u64) -> Builder {
        Builder {
            max_bytes: Some(bytes),
            ..self
        }
    }

    /// Keeps rotated files up to `bytes` in total on disk (compressed sizes once
    /// compressed), deleting the oldest first (loglag only). The current file is not
    /// counted.
    pub fn max_total_size(self, bytes: u64) -> Builder {
        Builder {
            keep_bytes: Some(bytes),
            ..self
        }
    }

    /// Deletes rotated files last written more than `age` ago (loglag only).
    pub fn max_age(self, age: Duration) -> Builder {
        Builder {
            keep_age: Some(age),
            ..self
        }
    }

    /// Compresses rotated files in the background (loglag only).
    pub fn compression(self, compression: Compression) -> Builder {
        Builder {
            compression: Some(compression),
            ..self
        }
    }

    /// Gzips rotated files in the background.
    #[deprecated(note = "use `.compression(Compression::Gzip)`")]
    pub fn compress_gzip(self) -> Builder {
        self.compression(Compression::Gzip)
    }

    /// What the files are called (loglag only): [`Naming::Dated`], tracing-appender's,
    /// by default; [`Naming::Fixed`] keeps the current file at `PREFIX` and renames it
    /// when it is rotated.
    pub fn naming(self, naming: Naming) -> Builder {
        Builder { naming, ..self }
    }

    /// Rotates on local-time boundaries and names files in local time rather than UTC
    /// (loglag only).
    pub fn local_time(self, local: bool) -> Builder {
        Builder {
            local_time: local,
            ..self
        }
    }

    /// Reopens the current file's path after SIGHUP, before the next batch (loglag
    /// only): logrotate's `create` mode. Needs the `signals` feature. A file moved or
    /// deleted under the sink is noticed within a batch and reopened either way; without
    /// this setting it is also reported in-band (with it, a move before the signal is
    /// logrotate's and not reported). (`copytruncate` cannot be made safe: lines
    /// written between its copy and its truncate are lost, whatever the writer does.)
    /// Windows has no SIGHUP: there `build` refuses it, saying so.
    pub fn reopen_on_sighup(self, on: bool) -> Builder {
        Builder {
            reopen_on_sighup: on,
            ..self
        }
    }

    /// The mode new files are created with, minus the umask (loglag only; `0o640` to
    /// let a log group read them). Compressed files get the same mode. Windows has no
    /// file modes (a new file takes its directory's ACL): there `build` refuses it,
    /// saying so.
    pub fn file_mode(self, mode: u32) -> Builder {
        Builder {
            file_mode: Some(mode & 0o7777),
            ..self
        }
    }

    /// Where the appender reads the wall clock (loglag only). The default is the
    /// system clock; tests pass their own to drive rotation through DST and clock
    /// jumps. Rotation, names and `max_age` all read it.
    pub fn time_source(self, now: impl Fn() -> SystemTime + Send + Sync + 'static) -> Builder {
        Builder {
            clock: TimeSource::new(now),
            ..self
        }
    }

    /// How long [`build`](Self::build) waits for another writer that holds the fixed
    /// current name (with [`Naming::Fixed`]; loglag only; default 10 s). A writer holds
    /// an exclusive lock on the file it writes: a restart that overlaps the old process
    /// waits for it to drain and exit, then continues its file. If the other is still
    /// there after `wait`, `build` fails with an error naming its process.
    /// `Duration::ZERO` fails at once. (Dated names never wait: a file another writer
    /// holds is left to it, and this one starts the next counter.)
    pub fn lock_wait(self, wait: Duration) -> Builder {
        Builder {
            lock_wait: wait,
            ..self
        }
    }

    /// Creates the directory if needed and opens (and locks) the current file.
    pub fn build(&self, directory: impl AsRef<Path>) -> Result<RollingFileAppender, InitError> {
        let b = self.clone();
        let settings = RollingSpec {
            dir: directory.as_ref().to_owned(),
            prefix: b.prefix,
            suffix: b.suffix,
            naming: b.naming,
            max_bytes: b.max_bytes,
            period: b.rotation.0,
            local_time: b.local_time,
            // tracing-appender counts the current file.
            // tracing-appender: 0 keeps every file; n counts the current one.
            keep_files: b.max_files.and_then(|n| n.checked_sub(1)),
            keep_bytes: b.keep_bytes,
            keep_age: b.keep_age,
            compression: b.compression,
            latest: b.latest,
            reopen_on_sighup: b.reopen_on_sighup,
            file_mode: b.file_mode,
            clock: b.clock,
            lock_wait: b.lock_wait,
        };
        Ok(RollingFileAppender {
            file: Mutex::new(RollingFile::open(settings).map_err(InitError)?),
        })
    }
}

impl crate::sink::IntoSink for RollingFileAppender {
    type Sink = RollingFile;
    /// The appender becomes the pipeline's sink: it rotates between batches only.
    fn into_sink(self) -> RollingFile {
        self.file.into_inner().unwrap_or_else(|e| e.into_inner())
    }
}
