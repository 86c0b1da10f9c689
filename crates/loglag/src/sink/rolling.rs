//! Rolling files: rotation by size, by time or both, retention, background gzip, a
//! `latest` symlink and reopening a file that was moved or deleted under the sink.
//! Configure it with [`crate::rolling::Builder`], the one rolling API.
//!
//! Rotation is decided in [`Sink::before_batch`], before the writer records where the
//! batch will land, so a batch never straddles two files and, with a spool, the journal
//! always names the file the batch went to: kill -9 at any moment, a rotation included,
//! neither loses nor duplicates a record (see `tests/rolling.rs`). One exception: a
//! dated file whose period ended while the process was down starts a new file at the
//! restart, so the interrupted batch is delivered again there (at least once).
//!
//! Two sinks on the same names in one directory (an overlapping restart, a rolling
//! deploy, one appender built twice) never share a file, and neither touches the
//! other's. A writer holds an exclusive `flock` on its live file for as long as it
//! writes it; the kernel lets go when the process dies, even by `kill -9`. So:
//! - a writer continues an existing file only if it can lock it. With dated names, a
//!   file another writer holds is left to it: this one starts the next counter and says
//!   so in-band. A fixed name has no other name to take: the second writer waits for
//!   the first to let go, up to `lock_wait` (10 s), and otherwise fails to build with
//!   an error naming the holder's process;
//! - housekeeping compresses or deletes a file only under that same lock, taken
//!   without waiting: a file another writer holds is skipped and tried again later.
//!
//! A never-rotated name (tracing-appender's `never`) takes no lock: nothing renames,
//! compresses or deletes it, and appends of whole batches from two writers do not
//! overwrite each other.
//!
//! What the sink may touch is decided by one grammar, `Names`, built from the
//! configuration: `[PREFIX.]STAMP[.NNN][.SUFFIX][.gz]` with the stamp in exactly this
//! rotation's date format. Retention, compression and the start-up sweep act only on
//! regular files whose whole name parses, and never on the file the writer has open
//! (checked by inode under `Live`'s lock). Everything else in the directory is the
//! user's.
//!
//! Compression and retention run on a housekeeping thread, never on the writer. A
//! rotated file is compressed into `NAME.gz.tmp` (created with `O_EXCL|O_NOFOLLOW`),
//! synced, renamed to `NAME.gz`, and only then is `NAME` removed; a crash or a full
//! disk in between leaves the uncompressed file, which a later pass compresses.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{FileSink, Sink, SinkReport};

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
    fn seconds(self) -> i64 {
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
    fn floor(self, wall_s: i64) -> i64 {
        let p = self.seconds();
        match self {
            // 1970-01-01 was a Thursday: Sundays are 3 days later.
            Period::Weekly => (wall_s - 3 * 86_400).div_euclid(p) * p + 3 * 86_400,
            _ => wall_s.div_euclid(p) * p,
        }
    }

    /// How dated names show the period (tracing-appender's formats).
    fn date_format(self) -> DateFormat {
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
enum DateFormat {
    Day,
    Hour,
    Minute,
    Second,
}

impl DateFormat {
    /// `wall_s` formatted as tracing-appender names files.
    fn format(self, wall_s: i64) -> String {
        let (y, m, d) = crate::format::time::civil_from_days(wall_s.div_euclid(86_400));
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

/// How rotated files are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
}

/// Where the sink reads the wall clock: the system's, or a test's.
#[derive(Clone, Default)]
pub(crate) struct TimeSource(Option<Arc<dyn Fn() -> SystemTime + Send + Sync>>);

impl TimeSource {
    pub(crate) fn new(now: impl Fn() -> SystemTime + Send + Sync + 'static) -> TimeSource {
        TimeSource(Some(Arc::new(now)))
    }

    fn now(&self) -> SystemTime {
        self.0.as_ref().map_or_else(SystemTime::now, |f| f())
    }

    /// Seconds since the epoch (negative before it).
    fn now_s(&self) -> i64 {
        match self.now().duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs() as i64),
        }
    }
}

impl std::fmt::Debug for TimeSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "TimeSource(custom)"
        } else {
            "TimeSource(system)"
        })
    }
}

/// Everything [`crate::rolling::Builder`] configures.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) dir: PathBuf,
    pub(crate) prefix: String,
    pub(crate) suffix: Option<String>,
    pub(crate) naming: Naming,
    pub(crate) max_bytes: Option<u64>,
    pub(crate) period: Option<Period>,
    pub(crate) local_time: bool,
    /// Rotated files to keep (the current one not counted).
    pub(crate) keep_files: Option<usize>,
    pub(crate) keep_bytes: Option<u64>,
    pub(crate) keep_age: Option<Duration>,
    pub(crate) compression: Option<Compression>,
    pub(crate) latest: Option<String>,
    pub(crate) reopen_on_sighup: bool,
    pub(crate) file_mode: Option<u32>,
    pub(crate) clock: TimeSource,
    /// How long `open` waits for another sink on the same names to let go.
    pub(crate) lock_wait: Duration,
}

impl Settings {
    fn offset_s(&self, utc_s: i64) -> i64 {
        if self.local_time {
            local_offset_s(utc_s)
        } else {
            0
        }
    }

    fn wall_s(&self, utc_s: i64) -> i64 {
        utc_s + self.offset_s(utc_s)
    }

    fn names(&self) -> Names {
        Names {
            prefix: self.prefix.clone(),
            suffix: self.suffix.clone(),
            naming: self.naming,
            format: self.period.map_or(DateFormat::Day, Period::date_format),
            counted: self.max_bytes.is_some(),
            // Never rotated, with one fixed name. (With neither prefix nor suffix,
            // tracing-appender names the file after the day it was created: that is a
            // dated name, and the grammar's.)
            never: self.period.is_none()
                && self.max_bytes.is_none()
                && !(self.naming == Naming::Dated
                    && self.prefix.is_empty()
                    && self.suffix.is_none()),
        }
    }
}

/// The local zone's UTC offset at `utc_s`, as `localtime_r` sees it (DST included).
fn local_offset_s(utc_s: i64) -> i64 {
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
    prefix: String,
    suffix: Option<String>,
    naming: Naming,
    format: DateFormat,
    counted: bool,
    never: bool,
}

impl Names {
    /// The one name of a never-rotating, never-dated file (tracing-appender's).
    fn never_name(&self) -> Option<String> {
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
    fn is_temporary(&self, name: &str) -> bool {
        name.strip_suffix(".gz.tmp")
            .is_some_and(|n| self.parse(n).is_some_and(|p| !p.gz))
    }
}

/// The identity (device, inode) of the file the writer has open. The writer holds the
/// lock while it creates a file and publishes it; the housekeeper holds it while it
/// decides a file is not the live one. So the housekeeper never compresses, renames or
/// deletes the live file, whatever its name.
#[derive(Debug, Default)]
struct Live(Mutex<Option<(u64, u64)>>);

impl Live {
    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, u64)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A [`Sink`] writing to rolling files. Build it with [`crate::rolling::Builder`].
#[derive(Debug)]
pub struct RollingFile {
    settings: Settings,
    names: Names,
    /// The current file's path and handle, and its length.
    current: PathBuf,
    file: Option<File>,
    len: u64,
    /// With time rotation: the current period's start, in wall-time seconds.
    period: Option<i64>,
    /// With dated names: the stamp in the current file's name.
    current_stamp: String,
    /// The last name taken in this process: a counter is never reused, even after
    /// retention deleted the file that had it.
    last_taken: Option<(String, Option<u32>)>,
    live: Arc<Live>,
    /// What `live` holds, readable without its lock: the open file's (device, inode).
    live_id: (u64, u64),
    housekeeper: Housekeeper,
    hup: Option<Arc<AtomicBool>>,
    /// Something to say in-band before the next batch (a file reopened).
    notice: Option<String>,
    /// The current name is held by another writer; this one writes the file it has
    /// open (said once).
    locked_out: bool,
}

impl RollingFile {
    /// Opens (or creates) the current file and starts the housekeeping thread, which
    /// first compresses rotated files a crash left uncompressed.
    pub(crate) fn open(settings: Settings) -> io::Result<RollingFile> {
        if settings.naming == Naming::Fixed && settings.prefix.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a fixed-name rolling file needs a file name (the prefix is empty)",
            ));
        }
        if settings.prefix.contains('/')
            || settings.suffix.as_deref().is_some_and(|s| s.contains('/'))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the file name prefix and suffix cannot contain '/' (put it in the directory)",
            ));
        }
        if settings
            .suffix
            .as_deref()
            .is_some_and(|s| s == "gz" || s.ends_with(".gz"))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "a file name suffix ending in \"gz\" would read as a compressed file; compression adds .gz itself",
            ));
        }
        if let Some(latest) = &settings.latest {
            if latest.contains('/') || latest == "." || latest == ".." {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!(
                        "latest_symlink {latest:?} must be a plain file name in the log directory"
                    ),
                ));
            }
            let at = settings.dir.join(latest);
            if std::fs::symlink_metadata(&at).is_ok_and(|m| !m.file_type().is_symlink()) {
                return Err(io::Error::new(
                    io::ErrorKind::AlreadyExists,
                    format!(
                        "latest_symlink: {} exists and is not a symlink; refusing to replace it",
                        at.display()
                    ),
                ));
            }
        }
        std::fs::create_dir_all(&settings.dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot create log directory {}: {e}",
                    settings.dir.display()
                ),
            )
        })?;
        let hup = if settings.reopen_on_sighup {
            Some(sighup_flag()?)
        } else {
            None
        };
        let names = settings.names();
        let live = Arc::new(Live::default());
        let now = settings.clock.now_s();
        let mut file = RollingFile {
            period: settings.period.map(|p| p.floor(settings.wall_s(now))),
            names,
            current: PathBuf::new(),
            file: None,
            len: 0,
            current_stamp: String::new(),
            last_taken: None,
            live: live.clone(),
            live_id: (0, 0),
            housekeeper: Housekeeper::idle(),
            hup,
            notice: None,
            locked_out: false,
            settings,
        };
        file.open_at_start()?;
        file.update_latest_link()?;
        file.housekeeper = Housekeeper::start(Rules::of(&file.settings, live))?;
        file.housekeeper.send(Job::Pass);
        Ok(file)
    }

    /// The file being written now.
    pub fn current_path(&self) -> &Path {
        &self.current
    }

    fn stamp_of(&self, wall_s: i64) -> String {
        self.names.format.format(wall_s)
    }

    /// The stamp a new dated file gets now: its period's, or today's for size-only.
    fn new_stamp(&self) -> String {
        let wall = self.settings.wall_s(self.settings.clock.now_s());
        match (self.period, self.settings.period) {
            (Some(start), Some(_)) => self.stamp_of(start),
            _ => DateFormat::Day.format(wall),
        }
    }

    /// At start, continue the file a previous run was writing (exactly-once recovery
    /// with a spool needs the same file), or start a new one.
    fn open_at_start(&mut self) -> io::Result<()> {
        match self.settings.naming {
            Naming::Fixed => {
                let path = self.settings.dir.join(&self.settings.prefix);
                self.open_waiting(&path)?;
                // A file left by an earlier run belongs to the period it was last
                // written in: the first batch rotates it if that period is over.
                if let (Some(p), true) = (self.settings.period, self.len > 0) {
                    if let Some(m) = self.file.as_ref().and_then(|f| f.metadata().ok()) {
                        self.period = Some(p.floor(self.settings.wall_s(m.mtime())));
                    }
                }
                Ok(())
            }
            Naming::Dated => {
                if let Some(name) = self.names.never_name() {
                    let path = self.settings.dir.join(name);
                    return self.open_path(&path, Open::Continue);
                }
                let stamp = self.new_stamp();
                // The highest-numbered file of this stamp, if still uncompressed, is
                // the one an earlier run was writing.
                let newest = self
                    .ours_with_stamp(&stamp)
                    .into_iter()
                    .max_by_key(|p| p.counter.map_or(-1, i64::from));
                match newest {
                    Some(p)
                        if !p.gz
                            && !self
                                .settings
                                .dir
                                .join(self.names.name(&stamp, p.counter) + ".gz")
                                .exists() =>
                    {
                        let path = self.settings.dir.join(self.names.name(&stamp, p.counter));
                        // Only if it is still there: compressed away meanwhile, it
                        // must not be made again beside its `.gz`.
                        match self.open_path(&path, Open::Existing) {
                            Ok(()) => {
                                self.current_stamp = stamp.clone();
                                self.last_taken = Some((stamp, p.counter));
                                Ok(())
                            }
                            // Another writer's live file (an overlapping restart): left
                            // to it; this one takes the next name.
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                                ) =>
                            {
                                self.last_taken = Some((stamp.clone(), p.counter));
                                self.open_new_dated(stamp)?;
                                self.notice = Some(format!(
                                    "{e}; this writer continues in {}",
                                    self.current.display()
                                ));
                                Ok(())
                            }
                            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                                self.last_taken = Some((stamp.clone(), p.counter));
                                self.open_new_dated(stamp)
                            }
                            Err(e) => Err(e),
                        }
                    }
                    _ => self.open_new_dated(stamp),
                }
            }
        }
    }

    /// Creates `path` already locked: made and locked under a temporary name, then
    /// renamed into place without replacing anything. A writer waiting for the name can
    /// only ever open it locked, so it never takes a file from under the writer that
    /// just made it (a fixed name's rotation). `Interrupted` if someone made the name
    /// meanwhile: opening it again sees theirs.
    fn create_locked(&self, path: &Path) -> io::Result<File> {
        let (file, tmp) = self.locked_temporary(path)?;
        match rename_noreplace(&tmp, path) {
            Ok(()) => Ok(file),
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                if e.kind() == io::ErrorKind::AlreadyExists {
                    Err(io::Error::new(
                        io::ErrorKind::Interrupted,
                        format!("{} was made by someone else meanwhile", path.display()),
                    ))
                } else {
                    Err(e)
                }
            }
        }
    }

    /// A new, empty file for `path`, locked, under a temporary name beside it
    /// (`.NAME.PID.N.new`, dot-first: no sink's grammar matches it).
    fn locked_temporary(&self, path: &Path) -> io::Result<(File, PathBuf)> {
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        let name = name.unwrap_or_default();
        let mut options = OpenOptions::new();
        options
            .append(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        if let Some(mode) = self.settings.file_mode {
            options.mode(mode);
        }
        // Never an existing name: one may hold a rotated file's records (see
        // `Rules::adopt_rotation_leftover`), and a planted link is not followed.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let (file, tmp) = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let tmp = path.with_file_name(format!(".{name}.{}.{n}.new", std::process::id()));
            match options.open(&tmp) {
                Ok(file) => break (file, tmp),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        if let Err(e) = try_lock_exclusive(&file) {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        Ok((file, tmp))
    }

    /// Whether `path` names the file this sink has open.
    fn names_open_file(&self, path: &Path) -> bool {
        std::fs::symlink_metadata(path).is_ok_and(|m| (m.dev(), m.ino()) == self.live_id)
            && self.file.is_some()
    }

    /// Opens the fixed name, waiting up to `lock_wait` for another writer that holds
    /// it (an old process still draining) to let go. While it waits it never creates
    /// the name: the holder, rotating, would find its own fixed name taken.
    fn open_waiting(&mut self, path: &Path) -> io::Result<()> {
        let started = std::time::Instant::now();
        // Made (locked) if missing at the first try. Once a holder was seen, only
        // opened: made below only if it stays missing. A holder's own rotation never
        // leaves the name missing (an atomic exchange), and a holder whose file was
        // moved away and whose name another writer made keeps writing its own file.
        let mut how = Open::Continue;
        let mut moves = 0;
        loop {
            match self.open_path(path, how) {
                // A rotation under us: try the new file at once (a holder that rotates
                // without end cannot keep us here: the count is bounded).
                Err(e) if e.kind() == io::ErrorKind::Interrupted && moves < 100 => {
                    moves += 1;
                }
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::NotFound
                    ) && started.elapsed() < self.settings.lock_wait =>
                {
                    how = Open::Existing;
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(io::Error::new(
                        e.kind(),
                        format!(
                            "{e}; waited {:.1} s for it to finish (`lock_wait`). Two writers \
                             on one file name would lose records at rotation: give this one \
                             another name or directory",
                            started.elapsed().as_secs_f64()
                        ),
                    ))
                }
                // Gone while waiting, and still gone: this one makes it, locked.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return self.open_path(path, Open::Continue)
                }
                other => return other,
            }
        }
    }

    /// This sink's names in the directory with this stamp (any counter, gz or not).
    fn ours_with_stamp(&self, stamp: &str) -> Vec<Parsed> {
        let Ok(entries) = std::fs::read_dir(&self.settings.dir) else {
            return Vec::new();
        };
        entries
            .flatten()
            .filter_map(|e| self.names.parse(e.file_name().to_str()?))
            .filter(|p| p.stamp == stamp)
            .collect()
    }

    /// The next counter for `stamp`: above every one on disk and every one taken in
    /// this process. `None` (no counter) when neither size rotation nor a clash asks
    /// for one.
    fn next_counter(&self, stamp: &str) -> Option<u32> {
        let mut highest: Option<i64> = self
            .ours_with_stamp(stamp)
            .iter()
            .map(|p| p.counter.map_or(-1, i64::from))
            .max();
        if let Some((s, n)) = &self.last_taken {
            if s == stamp {
                highest = highest.max(Some(n.map_or(-1, i64::from)));
            }
        }
        match highest {
            None if !self.names.counted => None,
            None => Some(0),
            Some(h) => Some((h + 1).max(if self.names.counted { 0 } else { 1 }) as u32),
        }
    }

    /// Creates a new dated file with `stamp` and the next free counter.
    fn open_new_dated(&mut self, stamp: String) -> io::Result<()> {
        let mut counter = self.next_counter(&stamp);
        loop {
            let path = self.settings.dir.join(self.names.name(&stamp, counter));
            match self.open_path(&path, Open::New) {
                Ok(()) => break,
                // Someone else has the name (or its .gz does), or holds it: take the
                // next one.
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::AlreadyExists
                            | io::ErrorKind::WouldBlock
                            | io::ErrorKind::Interrupted
                    ) =>
                {
                    counter = Some(counter.map_or(1, |n| n + 1));
                }
                Err(e) => return Err(e),
            }
        }
        self.current_stamp = stamp.clone();
        self.last_taken = Some((stamp, counter));
        Ok(())
    }

    /// Opens `path` for appending without following a symlink, takes its lock (unless
    /// the name is never rotated) and publishes it as live. Fails with `WouldBlock`,
    /// naming the holder, if another writer holds the file.
    fn open_path(&mut self, path: &Path, how: Open) -> io::Result<()> {
        let mut live = self.live.lock();
        if how == Open::New && gz(path).exists() {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        let mut options = OpenOptions::new();
        options
            .append(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC);
        match how {
            Open::New => options.create_new(true),
            // A locked name is created under a temporary one first (below); a
            // never-rotated name takes no lock.
            Open::Continue if self.names.never => options.create(true),
            Open::Continue | Open::Existing => &mut options,
        };
        if let Some(mode) = self.settings.file_mode {
            options.mode(mode);
        }
        let opened = match options.open(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && how == Open::Continue => {
                self.create_locked(path)
            }
            other => other,
        };
        let file = opened.map_err(|e| {
            if e.raw_os_error() == Some(libc::ELOOP) {
                io::Error::new(
                    e.kind(),
                    format!(
                        "{} is a symbolic link; loglag does not write through a link it did not make",
                        path.display()
                    ),
                )
            } else if e.kind() == io::ErrorKind::AlreadyExists {
                e
            } else {
                io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
            }
        })?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a regular file", path.display()),
            ));
        }
        if !self.names.never {
            if !try_lock_exclusive(&file)? {
                let moved_on = std::fs::symlink_metadata(path).map_or(true, |now| {
                    (now.dev(), now.ino()) != (meta.dev(), meta.ino())
                });
                if moved_on {
                    // The holder rotated it away between our open and our lock: the
                    // name means another file now, which is worth trying at once.
                    return Err(io::Error::new(
                        io::ErrorKind::Interrupted,
                        format!("{} moved on as it was opened", path.display()),
                    ));
                }
                return Err(held_by_another(path, &meta));
            }
            // Renamed (a rotation) or compressed and unlinked by a housekeeper between
            // the open and the lock: whatever the name means now, it is not this file.
            let still_there = std::fs::symlink_metadata(path)
                .is_ok_and(|now| (now.dev(), now.ino()) == (meta.dev(), meta.ino()));
            if file.metadata()?.nlink() == 0 || !still_there {
                return Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    format!("{} moved on as it was opened", path.display()),
                ));
            }
        }
        *live = Some((meta.dev(), meta.ino()));
        drop(live);
        self.live_id = (meta.dev(), meta.ino());
        self.len = meta.len();
        self.file = Some(file);
        self.current = path.to_owned();
        Ok(())
    }

    /// Points the `latest` link at the current file: a new link under a temporary
    /// name, renamed over the old one, so readers never see it missing. `rename`
    /// replaces a planted link or file at that name; it never follows one.
    fn update_latest_link(&self) -> io::Result<()> {
        let Some(link) = &self.settings.latest else {
            return Ok(());
        };
        let link = self.settings.dir.join(link);
        if link == self.current {
            return Ok(());
        }
        let target = self.current.file_name().expect("a file");
        let tmp = self.settings.dir.join(format!(
            ".{}.{}.tmp",
            link.file_name().expect("a file name").to_string_lossy(),
            std::process::id()
        ));
        let _ = std::fs::remove_file(&tmp); // a link, or nothing: never followed
        std::os::unix::fs::symlink(target, &tmp)?;
        std::fs::rename(&tmp, &link).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    /// Closes the current file and starts a new one for the period starting at
    /// `new_period` (wall seconds), or for size rotation within this one.
    fn rotate(&mut self, new_period: Option<i64>) -> io::Result<()> {
        let old_period = self.period;
        self.period = new_period.or(old_period);
        let rotated = match self.settings.naming {
            // The new file is opened before the old one is closed: if that fails, the
            // old file stays current and the next batch tries again.
            Naming::Dated => {
                let stamp = self.new_stamp();
                self.open_new_dated(stamp)
            }
            Naming::Fixed => self.rotate_fixed(old_period),
        };
        if let Err(e) = rotated {
            self.period = old_period;
            return Err(e);
        }
        if let Err(e) = self.update_latest_link() {
            self.notice = Some(format!("cannot update the latest symlink: {e}"));
        }
        self.housekeeper.send(Job::Pass);
        Ok(())
    }

    /// Renames the current file after its period (never over an existing file) and
    /// opens a new one under the fixed name.
    fn rotate_fixed(&mut self, old_period: Option<i64>) -> io::Result<()> {
        let wall = self.settings.wall_s(self.settings.clock.now_s());
        let stamp = match (old_period, self.settings.period) {
            (Some(start), Some(_)) => self.stamp_of(start),
            _ => DateFormat::Day.format(wall),
        };
        let mut counter = self.next_counter(&stamp);
        let fixed = self.current.clone();
        if !self.names_open_file(&fixed) {
            // The name is no longer this writer's file (moved away, or another
            // writer's now): never rename what another writer holds.
            return self.reopen();
        }
        // The new file is made locked under a temporary name and swapped in for the
        // old one in one step, so the fixed name never goes missing: a writer waiting
        // for it (a restart) can never make it in between and lock this one out.
        let (fresh, tmp) = self.locked_temporary(&fixed)?;
        let live = self.live.lock();
        let rotated_from = match rename_exchange(&tmp, &fixed) {
            Ok(()) => tmp.clone(),
            // No atomic exchange here (not Linux, or a file system without it): the
            // old file is renamed, then the new one put in its place.
            Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS)) => {
                fixed.clone()
            }
            Err(e) => {
                let _ = std::fs::remove_file(&tmp);
                return Err(e);
            }
        };
        let mut renamed = None;
        for _ in 0..10_000 {
            let target = self.settings.dir.join(self.names.name(&stamp, counter));
            match rename_noreplace(&rotated_from, &target) {
                Ok(()) => {
                    renamed = Some(target);
                    break;
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    counter = Some(counter.map_or(1, |n| n + 1));
                }
                Err(e) => {
                    if rotated_from == tmp {
                        // Swapped in already: the new file is current; the old one
                        // keeps its records under the temporary name until a rename
                        // succeeds (it is never deleted).
                        eprintln!(
                            "loglag: cannot rename the rotated {} (kept as {}): {e}",
                            fixed.display(),
                            tmp.display()
                        );
                        break;
                    }
                    let _ = std::fs::remove_file(&tmp);
                    return Err(e);
                }
            }
        }
        if rotated_from == fixed {
            if let Err(e) = rename_noreplace(&tmp, &fixed) {
                // Someone made the name in the moment it was free: this writer keeps
                // writing its file, now under its rotated name, and tries the fixed
                // name again at the next batch.
                let _ = std::fs::remove_file(&tmp);
                drop(live);
                self.notice = Some(format!(
                    "{} was taken by another writer as it rotated ({e}); this writer keeps writing {}",
                    fixed.display(),
                    renamed.as_deref().unwrap_or(&fixed).display()
                ));
                return Ok(());
            }
        }
        // Closed, not synced: a kill -9 keeps the page cache, and forcing 256 MiB to
        // disk at every rotation would stall the writer (`SpoolSync` is for power loss).
        let meta = fresh.metadata()?;
        let mut live = live;
        *live = Some((meta.dev(), meta.ino()));
        drop(live);
        self.live_id = (meta.dev(), meta.ino());
        self.file = Some(fresh);
        self.len = 0;
        self.last_taken = Some((stamp, counter));
        Ok(())
    }

    /// Whether the open file still has a name: not deleted (`st_nlink == 0`) and,
    /// for a fixed name, still the file at that path.
    fn still_named(&self) -> bool {
        let Some(file) = &self.file else { return true };
        let Ok(open) = file.metadata() else {
            return true;
        };
        if open.nlink() == 0 {
            return false;
        }
        match std::fs::symlink_metadata(&self.current) {
            Ok(at_path) => at_path.dev() == open.dev() && at_path.ino() == open.ino(),
            // Gone. Any other error (EACCES, ESTALE) says nothing about the file: keep
            // writing to the descriptor that works.
            Err(e) => e.kind() != io::ErrorKind::NotFound,
        }
    }

    /// Drops the handle and opens the current path afresh (a new file if it is gone).
    fn reopen(&mut self) -> io::Result<()> {
        // The old identity stays published until `open_path` swaps in the new one, under
        // one lock: the housekeeper never sees a moment with no live file.
        let previous = self.file.take();
        let _ = std::fs::create_dir_all(&self.settings.dir);
        let path = self.current.clone();
        if self.settings.naming == Naming::Dated && gz(&path).exists() {
            // Someone compressed the live file under its own name: continue under the
            // next counter rather than beside that `.gz`, which compression would
            // otherwise meet.
            return self.open_new_dated(self.current_stamp.clone());
        }
        let mut opened = self.open_path(&path, Open::Continue);
        for _ in 0..3 {
            // Moved on as it was opened (a rotation of another writer): once more.
            match &opened {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                    opened = self.open_path(&path, Open::Continue);
                }
                _ => break,
            }
        }
        match opened {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) && previous
                    .as_ref()
                    .is_some_and(|f| f.metadata().is_ok_and(|m| m.nlink() > 0)) =>
            {
                // The name is another writer's now (it made it after ours was moved
                // away). The file this writer has open still has a name: its records
                // go on there, none is lost, and the name is tried again next batch.
                self.file = previous;
                if !self.locked_out {
                    self.locked_out = true;
                    self.notice = Some(format!(
                        "{e}; this writer keeps writing the file it has open until the name is free"
                    ));
                }
                Ok(())
            }
            Ok(()) => {
                self.locked_out = false;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            self.reopen()?;
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// Blocks until the housekeeping thread has done everything asked of it so far
    /// (compression and retention after each rotation) and one more pass. For tests
    /// and tools.
    pub fn wait_housekeeping(&self) {
        let (tx, rx) = mpsc::channel();
        self.housekeeper.send(Job::Idle(tx));
        let _ = rx.recv();
    }
}

#[cfg(feature = "signals")]
fn sighup_flag() -> io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, flag.clone())?;
    Ok(flag)
}

#[cfg(not(feature = "signals"))]
fn sighup_flag() -> io::Result<Arc<AtomicBool>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "reopen_on_sighup needs loglag's `signals` feature",
    ))
}

/// `rename(2)` that fails with `AlreadyExists` instead of replacing `to`.
fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: both are valid NUL-terminated paths.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // A file system without RENAME_NOREPLACE: link(2) refuses to replace too.
        Some(libc::EINVAL | libc::ENOSYS) => {
            std::fs::hard_link(from, to)?;
            std::fs::remove_file(from)
        }
        _ => Err(e),
    }
}

/// Swaps two names in one step (`renameat2(RENAME_EXCHANGE)`); `EINVAL` or `ENOSYS`
/// where the platform or file system cannot.
#[cfg(target_os = "linux")]
fn rename_exchange(a: &Path, b: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: both are valid NUL-terminated paths.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(not(target_os = "linux"))]
fn rename_exchange(_a: &Path, _b: &Path) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// How [`RollingFile::open_path`] opens a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    /// Create it; fail if it (or its `.gz`) exists.
    New,
    /// Continue it, creating it if missing.
    Continue,
    /// Continue it only if it exists.
    Existing,
}

/// Takes `file`'s exclusive `flock` without waiting. `Ok(false)`: another writer (or a
/// housekeeper) holds it.
fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    use std::os::fd::AsRawFd;
    loop {
        // SAFETY: flock on a descriptor the caller owns.
        let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
        if r == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            // A file system without flock (some network mounts) can protect nothing;
            // the sink logs as it did before locks rather than refusing to.
            Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS) => return Ok(true),
            _ => return Err(e),
        }
    }
}

/// The error for a file another writer (or its housekeeper, compressing it) holds,
/// naming that process where `/proc/locks` tells it.
fn held_by_another(path: &Path, meta: &std::fs::Metadata) -> io::Error {
    let holder = lock_holder(meta.ino())
        .map(|pid| {
            if pid == std::process::id() {
                " by another rolling sink in this process".to_owned()
            } else {
                format!(" by process {pid}")
            }
        })
        .unwrap_or_default();
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!("{} is held{holder}", path.display()),
    )
}

/// The process holding an `flock` on the file with inode `ino`, from `/proc/locks`
/// (`1: FLOCK  ADVISORY  WRITE 1234 fe:00:5308727 0 EOF`). Linux only; `None` elsewhere
/// or when the holder cannot be told.
fn lock_holder(ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let is_flock = fields.get(1) == Some(&"FLOCK");
        let inode = fields.get(5)?.rsplit(':').next()?.parse::<u64>().ok()?;
        (is_flock && inode == ino).then(|| fields.get(4)?.parse().ok())?
    })
}

/// Deletes a rotated file unless another writer holds it. Whether it was deleted.
fn remove_unless_held(path: &Path) -> bool {
    let file = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(file) => file,
        // Not readable by this process (left by a run as another user): no writer of
        // this user holds it; deleting needs only the directory, as before locks.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
            return std::fs::remove_file(path).is_ok()
        }
        Err(_) => return false,
    };
    // The lock is held across the unlink, so no writer takes the file up meanwhile.
    matches!(try_lock_exclusive(&file), Ok(true)) && std::fs::remove_file(path).is_ok()
}

fn gz(path: &Path) -> PathBuf {
    let mut p = path.as_os_str().to_owned();
    p.push(".gz");
    PathBuf::from(p)
}

impl Sink for RollingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file()?.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }

    fn before_batch(&mut self, batch_len: usize) -> io::Result<()> {
        let hup = self
            .hup
            .as_ref()
            .is_some_and(|h| h.swap(false, Ordering::AcqRel));
        if hup {
            // logrotate moved the file away: write to a new one at the same path.
            self.reopen()?;
        } else if !self.still_named() {
            let path = self.current.display().to_string();
            self.reopen()?;
            // With SIGHUP reopening, a rename before the signal is logrotate doing its
            // job, not news; without it, someone moved or deleted the file.
            // (Locked out of the name, it said so itself, once.)
            if !self.settings.reopen_on_sighup && !self.locked_out {
                self.notice = Some(format!(
                    "the log file {path} was deleted or moved by someone else; reopened it"
                ));
            }
        }
        if let Some(p) = self.settings.period {
            let wall = p.floor(self.settings.wall_s(self.settings.clock.now_s()));
            if Some(wall) != self.period {
                let same_name = self.settings.naming == Naming::Dated
                    && self.stamp_of(wall) == self.current_stamp;
                if same_name {
                    // The clock came back into a period of the same name (the repeated
                    // hour when DST ends): that is no rotation.
                    self.period = Some(wall);
                } else {
                    // Forward, or back after a jump: either way a new period, which
                    // re-anchors; a name already taken gets the next counter.
                    return self.rotate(Some(wall));
                }
            }
        }
        let too_big = self
            .settings
            .max_bytes
            .is_some_and(|max| self.len > 0 && self.len + batch_len as u64 > max);
        if too_big {
            self.rotate(None)?;
        }
        Ok(())
    }

    fn take_report(&mut self) -> SinkReport {
        SinkReport {
            notice: self.notice.take(),
            ..SinkReport::default()
        }
    }

    fn as_file(&mut self) -> Option<&mut dyn FileSink> {
        Some(self)
    }
}

impl FileSink for RollingFile {
    fn descriptor(&self) -> Option<(std::os::fd::RawFd, (u64, u64))> {
        use std::os::fd::AsRawFd;
        Some((self.file.as_ref()?.as_raw_fd(), self.live_id))
    }

    fn position(&mut self) -> Option<u64> {
        self.file().ok()?.metadata().ok().map(|m| m.len())
    }

    fn truncate_to(&mut self, len: u64) -> io::Result<()> {
        self.file()?.set_len(len)?;
        self.len = len;
        Ok(())
    }

    fn sync(&mut self) -> io::Result<()> {
        self.file()?.sync_data()
    }

    fn identity(&mut self) -> Option<(u64, u64)> {
        let meta = self.file().ok()?.metadata().ok()?;
        Some((meta.dev(), meta.ino()))
    }
}

/// What the housekeeper needs to know about the files.
#[derive(Debug)]
struct Rules {
    dir: PathBuf,
    names: Names,
    keep_files: Option<usize>,
    keep_bytes: Option<u64>,
    keep_age: Option<Duration>,
    compression: Option<Compression>,
    file_mode: Option<u32>,
    clock: TimeSource,
    live: Arc<Live>,
}

impl Rules {
    fn of(s: &Settings, live: Arc<Live>) -> Rules {
        Rules {
            dir: s.dir.clone(),
            names: s.names(),
            keep_files: s.keep_files,
            keep_bytes: s.keep_bytes,
            keep_age: s.keep_age,
            compression: s.compression,
            file_mode: s.file_mode,
            clock: s.clock.clone(),
            live,
        }
    }

    /// Rotated files (compressed or not), oldest first: regular files whose whole name
    /// parses, never the live file.
    fn rotated(&self) -> Vec<(PathBuf, Parsed, std::fs::Metadata)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let live = *self.live.lock();
        let mut files: Vec<_> = entries
            .flatten()
            .filter_map(|e| {
                let parsed = self.names.parse(e.file_name().to_str()?)?;
                let path = e.path();
                let meta = std::fs::symlink_metadata(&path).ok()?;
                let is_live = live == Some((meta.dev(), meta.ino()));
                (meta.is_file() && !is_live).then_some((path, parsed, meta))
            })
            .collect();
        // Modification time to the nanosecond (a compressed file keeps its original's),
        // then the name (zero-padded counters sort in rotation order).
        files.sort_by(|a, b| {
            let t = |m: &std::fs::Metadata| (m.mtime(), m.mtime_nsec());
            t(&a.2).cmp(&t(&b.2)).then(a.0.cmp(&b.0))
        });
        files
    }

    /// Removes this sink's own stale compression temporaries.
    fn sweep_temporaries(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for e in entries.flatten() {
            let is_ours = e
                .file_name()
                .to_str()
                .is_some_and(|n| self.names.is_temporary(n));
            if is_ours {
                let _ = std::fs::remove_file(e.path());
            } else if let Some(name) = e.file_name().to_str() {
                self.adopt_rotation_leftover(name, &e.path());
            }
        }
    }

    /// A fixed name's rotation swaps a new file in under a temporary name
    /// (`.NAME.PID.N.new`) and then renames the old one from it. A crash in between, or
    /// a rename that failed, leaves the old file's records there: this gives them a
    /// rotated name (from the file's modification time), so retention and compression
    /// see them; an empty one is removed. A file another writer holds is its to finish.
    fn adopt_rotation_leftover(&self, name: &str, path: &Path) {
        let Some(fixed) = (self.names.naming == Naming::Fixed).then_some(&self.names.prefix) else {
            return;
        };
        let Some(pid) = name
            .strip_prefix('.')
            .and_then(|n| n.strip_prefix(fixed.as_str()))
            .and_then(|n| n.strip_prefix('.'))
            .and_then(|n| n.strip_suffix(".new"))
            .and_then(|mid| mid.split_once('.'))
            .filter(|(_, n)| n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|(pid, _)| pid.parse::<i32>().ok())
        else {
            return;
        };
        // Only a dead process's: a live one (this one included) may have just made it
        // and not yet locked it.
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        if alive {
            return;
        }
        let Ok(file) = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)
        else {
            return;
        };
        if !matches!(try_lock_exclusive(&file), Ok(true)) {
            return;
        }
        let Ok(meta) = file.metadata() else { return };
        if !meta.is_file() {
            return;
        }
        if meta.len() == 0 {
            let _ = std::fs::remove_file(path);
            return;
        }
        let stamp = self.names.format.format(meta.mtime());
        for counter in 0..100_000 {
            let target = self.dir.join(self.names.name(&stamp, Some(counter)));
            match rename_noreplace(path, &target) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                _ => return,
            }
        }
    }

    /// Compresses every rotated file not compressed yet, then applies retention to
    /// what is on disk. Returns whether a compression failed (and is to be retried).
    fn pass(&self) -> bool {
        let mut failed = false;
        // Listed here but left uncompressed: counted at their size by retention.
        let mut stuck = Vec::new();
        if let Some(c) = self.compression {
            for (path, parsed, _) in self.rotated() {
                if parsed.gz {
                    continue;
                }
                // The live check under the lock: a file the writer publishes after
                // the listing above is not the one we hold here.
                let still_rotated = {
                    let live = self.live.lock();
                    std::fs::symlink_metadata(&path)
                        .is_ok_and(|m| *live != Some((m.dev(), m.ino())))
                };
                if still_rotated {
                    match compress(&path, c, self.file_mode) {
                        Ok(()) => {}
                        // Another writer's live file: tried again later, quietly.
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            failed = true;
                            stuck.push(path);
                        }
                        Err(e) => {
                            // A `.gz` that is not ours stays in the way; retrying will
                            // not help.
                            failed |= e.kind() != io::ErrorKind::AlreadyExists;
                            eprintln!(
                                "loglag: cannot compress {} (kept as it is, retried later): {e}",
                                path.display()
                            );
                            stuck.push(path);
                        }
                    }
                }
            }
        }
        self.retain(self.compression.is_some(), &stuck);
        failed
    }

    /// Deletes the oldest rotated files until every rule holds. Sizes are what is on
    /// disk (compressed sizes once compressed). With `compressing`, an uncompressed
    /// rotated file not in `stuck` is one that rotated after this pass's compression
    /// began: it is counted once compressed, at the next pass, and not at its full size
    /// now. Counted now, a burst of rotations would delete the compressed history to
    /// make room for files about to shrink tenfold. One that this pass could not
    /// compress (`stuck`: a failure, a foreign `.gz` in the way, another writer's) counts
    /// at its size, so the limit still bounds the disk.
    fn retain(&self, compressing: bool, stuck: &[PathBuf]) {
        let mut files = self.rotated();
        let now = self.clock.now();
        let too_old = |meta: &std::fs::Metadata| {
            self.keep_age.is_some_and(|age| {
                meta.modified()
                    .ok()
                    .and_then(|m| now.duration_since(m).ok())
                    .is_some_and(|a| a > age)
            })
        };
        let on_disk = |path: &PathBuf, parsed: &Parsed, meta: &std::fs::Metadata| {
            if compressing && !parsed.gz && !stuck.contains(path) {
                0
            } else {
                meta.len()
            }
        };
        let mut total: u64 = files.iter().map(|(f, p, m)| on_disk(f, p, m)).sum();
        while let Some((path, parsed, meta)) = files.first() {
            let over_count = self.keep_files.is_some_and(|k| files.len() > k);
            let over_bytes = self.keep_bytes.is_some_and(|k| total > k);
            if !(over_count || over_bytes || too_old(meta)) {
                break;
            }
            let live = self.live.lock();
            let is_live =
                std::fs::symlink_metadata(path).is_ok_and(|m| *live == Some((m.dev(), m.ino())));
            if !is_live && remove_unless_held(path) {
                total -= on_disk(path, parsed, meta);
            }
            drop(live);
            files.remove(0);
        }
    }
}

enum Job {
    /// Compress what is pending, then apply retention.
    Pass,
    /// Report back once everything before this is done, after one more pass.
    Idle(mpsc::Sender<()>),
}

/// The housekeeping thread: compression and retention, off the writer thread.
#[derive(Debug)]
struct Housekeeper {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// How soon a failed compression (a full disk) is tried again without a rotation.
const COMPRESSION_RETRY: Duration = Duration::from_secs(30);

impl Housekeeper {
    fn idle() -> Housekeeper {
        Housekeeper {
            tx: None,
            thread: None,
        }
    }

    fn start(rules: Rules) -> io::Result<Housekeeper> {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("loglag-rolling".into())
            .spawn(move || {
                rules.sweep_temporaries();
                let mut retry = false;
                loop {
                    let job = if retry {
                        match rx.recv_timeout(COMPRESSION_RETRY) {
                            Ok(job) => Some(job),
                            Err(mpsc::RecvTimeoutError::Timeout) => None,
                            Err(mpsc::RecvTimeoutError::Disconnected) => break,
                        }
                    } else {
                        match rx.recv() {
                            Ok(job) => Some(job),
                            Err(_) => break,
                        }
                    };
                    // Jobs queued meanwhile are folded into this pass: one pass sees
                    // every rotated file, so retention counts compressed sizes.
                    let mut acks = Vec::new();
                    for job in job.into_iter().chain(rx.try_iter()) {
                        if let Job::Idle(ack) = job {
                            acks.push(ack);
                        }
                    }
                    retry = rules.pass();
                    for ack in acks {
                        let _ = ack.send(());
                    }
                }
            })?;
        Ok(Housekeeper {
            tx: Some(tx),
            thread: Some(thread),
        })
    }

    fn send(&self, job: Job) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(job);
        } else if let Job::Idle(ack) = job {
            let _ = ack.send(());
        }
    }
}

impl Drop for Housekeeper {
    /// Finishes what was queued: compression that is cut short by the process ending
    /// loses nothing (the next start completes it).
    fn drop(&mut self) {
        drop(self.tx.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Compresses `path` to `path.gz`: into a temporary that is created, never followed,
/// synced and renamed; only then is the original removed. On failure the temporary
/// is removed and the original kept.
fn compress(path: &Path, compression: Compression, mode: Option<u32>) -> io::Result<()> {
    match compression {
        Compression::Gzip => {
            let target = gz(path);
            let mut tmp = target.as_os_str().to_owned();
            tmp.push(".tmp");
            let tmp = PathBuf::from(tmp);
            let mut input = match OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .open(path)
            {
                Ok(f) => f,
                // Retention got to it first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
            // Under the file's lock, so a writer cannot take it up while it is
            // compressed, and a file another writer holds is left alone.
            if !try_lock_exclusive(&input)? {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "held by a writer",
                ));
            }
            let meta = input.metadata()?;
            if !meta.is_file() || meta.nlink() == 0 {
                return Ok(());
            }
            // Whatever is at the temporary's name (ours from a crash, or a planted
            // link) is removed, not followed; the new one must not exist.
            let _ = std::fs::remove_file(&tmp);
            let mut options = OpenOptions::new();
            options
                .write(true)
                .create_new(true)
                .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
                .mode(mode.unwrap_or(meta.mode() & 0o777));
            let out = options.open(&tmp)?;
            let written = (|| {
                let mut encoder =
                    flate2::write::GzEncoder::new(out, flate2::Compression::default());
                io::copy(&mut input, &mut encoder)?;
                let out = encoder.finish()?;
                // Keep the original's time: retention orders files by it, and a
                // compressed file must not look newer than files rotated after it.
                out.set_modified(meta.modified()?)?;
                out.sync_all()?;
                rename_noreplace(&tmp, &target)
            })();
            match written {
                Ok(()) => std::fs::remove_file(path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let _ = std::fs::remove_file(&tmp);
                    // `NAME.gz` is there already: a crash between the rename and the
                    // removal leaves a complete one, whose gzip trailer holds the
                    // original's length. Anything else is not ours to replace.
                    if gzip_length(&target).is_some_and(|n| n == meta.len() as u32) {
                        std::fs::remove_file(path)
                    } else {
                        Err(io::Error::new(
                            io::ErrorKind::AlreadyExists,
                            format!(
                                "{} exists and is not this file compressed; both are kept",
                                target.display()
                            ),
                        ))
                    }
                }
                Err(e) => {
                    let _ = std::fs::remove_file(&tmp);
                    Err(e)
                }
            }
        }
    }
}

/// The uncompressed length (mod 2^32) a gzip file's trailer records.
fn gzip_length(path: &Path) -> Option<u32> {
    use std::os::unix::fs::FileExt;
    let file = File::open(path).ok()?;
    let len = file.metadata().ok()?.len();
    let mut tail = [0u8; 4];
    file.read_exact_at(&mut tail, len.checked_sub(4)?).ok()?;
    Some(u32::from_le_bytes(tail))
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
