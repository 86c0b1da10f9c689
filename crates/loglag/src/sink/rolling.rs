//! Rolling files: rotation by size, by time or both, retention, background gzip, a
//! `latest` symlink and reopening on SIGHUP.
//!
//! Rotation is decided in [`Sink::before_batch`], before the writer records where the
//! batch will land, so a batch never straddles two files and, with a spool, the journal
//! always names the file the batch went to: kill -9 at any moment, a rotation included,
//! neither loses nor duplicates a record (see `tests/rolling.rs`).
//!
//! Compression and retention run on a housekeeping thread, never on the writer. A
//! rotated file is compressed to `NAME.gz.tmp`, synced, renamed to `NAME.gz`, and only
//! then is `NAME` removed; a crash in between leaves the uncompressed file, which the
//! next start compresses.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Sink;

/// How often a file is rotated by time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Minutely,
    Hourly,
    Daily,
    /// Weeks start on Monday (at midnight).
    Weekly,
    /// Any period, aligned to multiples of it since the Unix epoch (in the chosen clock).
    Every(Duration),
}

impl Period {
    fn seconds(self) -> u64 {
        match self {
            Period::Minutely => 60,
            Period::Hourly => 3600,
            Period::Daily => 86_400,
            Period::Weekly => 7 * 86_400,
            Period::Every(d) => d.as_secs().max(1),
        }
    }

    /// The start of the period holding `local_s` (seconds since the epoch, in the
    /// chosen clock's wall time).
    fn floor(self, local_s: i64) -> i64 {
        let p = self.seconds() as i64;
        match self {
            // 1970-01-01 was a Thursday: Mondays are 4 days later.
            Period::Weekly => (local_s - 4 * 86_400).div_euclid(p) * p + 4 * 86_400,
            _ => local_s.div_euclid(p) * p,
        }
    }

    /// How dated names show the period (tracing-appender's formats).
    fn date_format(self) -> DateFormat {
        match self {
            Period::Minutely => DateFormat::Minute,
            Period::Hourly => DateFormat::Hour,
            Period::Daily | Period::Weekly => DateFormat::Day,
            Period::Every(d) if d.as_secs() % 86_400 == 0 => DateFormat::Day,
            Period::Every(d) if d.as_secs() % 3600 == 0 => DateFormat::Hour,
            Period::Every(d) if d.as_secs() % 60 == 0 => DateFormat::Minute,
            Period::Every(_) => DateFormat::Second,
        }
    }
}

#[derive(Debug, Clone, Copy)]
enum DateFormat {
    Day,
    Hour,
    Minute,
    Second,
}

/// Whose midnight a period starts at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Clock {
    #[default]
    Utc,
    /// The machine's local time zone (as `localtime_r` sees it, DST included).
    Local,
}

/// What the files are called.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Naming {
    /// The current file keeps a fixed name (`app.log`); a rotated one gets the start of
    /// its period appended (`app.log.2026-12-01-03`, then `.001`, `.002` if that exists).
    /// `tail -F app.log` and logrotate-style tools follow it.
    #[default]
    Fixed,
    /// tracing-appender's: the current file is `PREFIX.DATE[.SUFFIX]` and is never
    /// renamed.
    Dated,
}

/// How rotated files are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
}

/// Settings for a [`RollingFile`].
#[derive(Debug, Clone)]
pub struct RollingFileBuilder {
    dir: PathBuf,
    prefix: String,
    suffix: Option<String>,
    naming: Naming,
    max_bytes: Option<u64>,
    period: Option<Period>,
    clock: Clock,
    keep_files: Option<usize>,
    keep_bytes: Option<u64>,
    keep_age: Option<Duration>,
    compression: Option<Compression>,
    latest: Option<String>,
    reopen_on_sighup: bool,
}

impl RollingFileBuilder {
    /// Files in `dir` named after `name` (`app.log`). Without a rotation setting the
    /// file is never rotated.
    pub fn new(dir: impl Into<PathBuf>, name: impl Into<String>) -> RollingFileBuilder {
        RollingFileBuilder {
            dir: dir.into(),
            prefix: name.into(),
            suffix: None,
            naming: Naming::Fixed,
            max_bytes: None,
            period: None,
            clock: Clock::Utc,
            keep_files: None,
            keep_bytes: None,
            keep_age: None,
            compression: None,
            latest: None,
            reopen_on_sighup: false,
        }
    }

    /// Rotates before a batch would take the current file past `bytes` (a batch is
    /// never split, so a file may exceed it by at most one batch when it was empty).
    pub fn max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = Some(bytes.max(1));
        self
    }

    /// Rotates at each period boundary.
    pub fn every(mut self, period: Period) -> Self {
        self.period = Some(period);
        self
    }

    /// Periods follow local time instead of UTC.
    pub fn local_time(mut self, local: bool) -> Self {
        self.clock = if local { Clock::Local } else { Clock::Utc };
        self
    }

    pub fn naming(mut self, naming: Naming) -> Self {
        self.naming = naming;
        self
    }

    /// A suffix after the date in [`Naming::Dated`] names (`app.2026-12-01.log`).
    pub fn suffix(mut self, suffix: impl Into<String>) -> Self {
        self.suffix = Some(suffix.into()).filter(|s| !s.is_empty());
        self
    }

    /// Keeps at most `n` rotated files (the current one not counted); older ones are
    /// deleted after each rotation.
    pub fn keep_files(mut self, n: usize) -> Self {
        self.keep_files = Some(n);
        self
    }

    /// Keeps rotated files up to `bytes` in total, deleting the oldest first.
    pub fn keep_bytes(mut self, bytes: u64) -> Self {
        self.keep_bytes = Some(bytes);
        self
    }

    /// Deletes rotated files older than `age` (by modification time).
    pub fn keep_age(mut self, age: Duration) -> Self {
        self.keep_age = Some(age);
        self
    }

    /// Compresses rotated files in the background.
    pub fn compress(mut self, compression: Compression) -> Self {
        self.compression = Some(compression);
        self
    }

    /// Keeps a symlink `dir/NAME` pointing at the current file (useful with
    /// [`Naming::Dated`], whose current file's name changes).
    pub fn latest_symlink(mut self, name: impl Into<String>) -> Self {
        self.latest = Some(name.into());
        self
    }

    /// Reopens the current file's path after SIGHUP, before the next batch: logrotate's
    /// `create` mode (rename the file, then signal) then loses nothing. Needs the
    /// `signals` feature. (`copytruncate` cannot be made safe: lines written between
    /// its copy and its truncate are lost, whatever the writer does.)
    pub fn reopen_on_sighup(mut self, on: bool) -> Self {
        self.reopen_on_sighup = on;
        self
    }

    /// Opens (or creates) the current file and starts the housekeeping thread, which
    /// first compresses rotated files a crash left uncompressed.
    pub fn build(self) -> io::Result<RollingFile> {
        std::fs::create_dir_all(&self.dir).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot create log directory {}: {e}", self.dir.display()),
            )
        })?;
        let hup = if self.reopen_on_sighup {
            Some(sighup_flag()?)
        } else {
            None
        };
        let housekeeper = Housekeeper::start(Rules::of(&self))?;
        let now = now_s();
        let mut file = RollingFile {
            period_start: self.period.map(|p| period_start(p, self.clock, now)),
            current: PathBuf::new(),
            file: None,
            len: 0,
            config: self,
            housekeeper,
            hup,
        };
        file.open_current()?;
        file.housekeeper.send(Job::Sweep(file.current.clone()));
        Ok(file)
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

fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The clock's UTC offset at `utc_s`, in seconds.
fn offset_s(clock: Clock, utc_s: i64) -> i64 {
    match clock {
        Clock::Utc => 0,
        Clock::Local => {
            // SAFETY: localtime_r writes into the `tm` we own.
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
    }
}

/// The UTC second at which the period holding `utc_s` started, in `clock`'s wall time.
fn period_start(period: Period, clock: Clock, utc_s: i64) -> i64 {
    let offset = offset_s(clock, utc_s);
    period.floor(utc_s + offset) - offset
}

/// `utc_s` as `clock`'s wall time, formatted as tracing-appender names files.
fn format_date(utc_s: i64, clock: Clock, format: DateFormat) -> String {
    let local = utc_s + offset_s(clock, utc_s);
    let (y, m, d) = crate::format::time::civil_from_days(local.div_euclid(86_400));
    let secs = local.rem_euclid(86_400);
    let (h, min, s) = (secs / 3600, secs % 3600 / 60, secs % 60);
    match format {
        DateFormat::Day => format!("{y:04}-{m:02}-{d:02}"),
        DateFormat::Hour => format!("{y:04}-{m:02}-{d:02}-{h:02}"),
        DateFormat::Minute => format!("{y:04}-{m:02}-{d:02}-{h:02}-{min:02}"),
        DateFormat::Second => format!("{y:04}-{m:02}-{d:02}-{h:02}-{min:02}-{s:02}"),
    }
}

/// A [`Sink`] writing to rolling files. Build it with [`RollingFileBuilder`], or use
/// [`crate::rolling`]'s tracing-appender-compatible functions.
#[derive(Debug)]
pub struct RollingFile {
    config: RollingFileBuilder,
    /// The current file's path and handle, and its length.
    current: PathBuf,
    file: Option<File>,
    len: u64,
    /// The start of the current period (UTC seconds), with time rotation.
    period_start: Option<i64>,
    housekeeper: Housekeeper,
    hup: Option<Arc<AtomicBool>>,
}

impl RollingFile {
    /// The file being written now.
    pub fn current_path(&self) -> &Path {
        &self.current
    }

    fn dated_name(&self, period_start: Option<i64>) -> String {
        let c = &self.config;
        let date = format_date(
            period_start.unwrap_or_else(now_s),
            c.clock,
            c.period.map_or(DateFormat::Day, Period::date_format),
        );
        let mut name = if c.prefix.is_empty() {
            date
        } else if c.period.is_none() {
            // tracing-appender's `never`: the name as given.
            c.prefix.clone()
        } else {
            format!("{}.{date}", c.prefix)
        };
        if let Some(suffix) = &c.suffix {
            name.push('.');
            name.push_str(suffix);
        }
        name
    }

    fn open_current(&mut self) -> io::Result<()> {
        let name = match self.config.naming {
            Naming::Fixed => self.config.prefix.clone(),
            Naming::Dated => self.dated_name(self.period_start),
        };
        let path = self.config.dir.join(&name);
        let file = OpenOptions::new()
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| {
                io::Error::new(e.kind(), format!("cannot open {}: {e}", path.display()))
            })?;
        self.len = file.metadata()?.len();
        self.file = Some(file);
        self.current = path;
        if let Some(link) = &self.config.latest {
            let link = self.config.dir.join(link);
            if link != self.current {
                // A new link under a temporary name, renamed over the old: readers
                // never see it missing.
                let tmp = self.config.dir.join(format!(".{}.tmp", name));
                let _ = std::fs::remove_file(&tmp);
                std::os::unix::fs::symlink(&name, &tmp)?;
                std::fs::rename(&tmp, &link)?;
            }
        }
        Ok(())
    }

    fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            self.open_current()?;
        }
        Ok(self.file.as_mut().expect("opened above"))
    }

    /// Closes the current file and starts a new one. With fixed naming the old file is
    /// renamed after the start of its period (or now, for size rotation).
    fn rotate(&mut self, new_period: Option<i64>) -> io::Result<()> {
        // Closed, not synced: a kill -9 keeps the page cache, and forcing 256 MiB to
        // disk at every rotation would stall the writer (`SpoolSync` is for power loss).
        drop(self.file.take());
        let old = self.current.clone();
        let rotated = match self.config.naming {
            Naming::Dated => {
                if new_period == self.period_start {
                    // Size rotation within a dated period: the dated file is complete;
                    // move it aside with a counter so the next one can take the name.
                    let target = unique(&old);
                    std::fs::rename(&old, &target)?;
                    target
                } else {
                    old
                }
            }
            Naming::Fixed => {
                let stamp = format_date(
                    self.period_start.unwrap_or_else(now_s),
                    self.config.clock,
                    self.config
                        .period
                        .map_or(DateFormat::Second, Period::date_format),
                );
                let target = unique(&old.with_file_name(format!("{}.{stamp}", self.config.prefix)));
                std::fs::rename(&old, &target)?;
                target
            }
        };
        self.period_start = new_period;
        self.open_current()?;
        self.housekeeper
            .send(Job::Rotated(rotated, self.current.clone()));
        Ok(())
    }
}

/// `path`, or `path.001`, `path.002`, ... whichever does not exist yet. Zero-padded,
/// so that names sort in the order the files were rotated.
fn unique(path: &Path) -> PathBuf {
    if !path.exists() && !gz(path).exists() {
        return path.to_owned();
    }
    (1..)
        .map(|n| PathBuf::from(format!("{}.{n:03}", path.display())))
        .find(|p| !p.exists() && !gz(p).exists())
        .expect("some number is free")
}

fn gz(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.gz", path.display()))
}

impl Sink for RollingFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.file()?.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }

    fn before_batch(&mut self, batch_len: usize) -> io::Result<()> {
        if let Some(hup) = &self.hup {
            if hup.swap(false, Ordering::AcqRel) {
                // logrotate moved the file away: write to a new one at the same path.
                self.file = None;
                self.open_current()?;
            }
        }
        let now_period = self
            .config
            .period
            .map(|p| period_start(p, self.config.clock, now_s()));
        let time_up = now_period.is_some() && now_period > self.period_start;
        let too_big = self
            .config
            .max_bytes
            .is_some_and(|max| self.len > 0 && self.len + batch_len as u64 > max);
        if time_up || too_big {
            self.rotate(now_period.or(self.period_start))?;
        }
        Ok(())
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
#[derive(Debug, Clone)]
struct Rules {
    dir: PathBuf,
    /// Rotated files start with this (and are not the current file).
    stem: String,
    keep_files: Option<usize>,
    keep_bytes: Option<u64>,
    keep_age: Option<Duration>,
    compression: Option<Compression>,
    latest: Option<String>,
}

impl Rules {
    fn of(b: &RollingFileBuilder) -> Rules {
        Rules {
            dir: b.dir.clone(),
            stem: if b.prefix.is_empty() {
                String::new()
            } else {
                format!("{}.", b.prefix)
            },
            keep_files: b.keep_files,
            keep_bytes: b.keep_bytes,
            keep_age: b.keep_age,
            compression: b.compression,
            latest: b.latest.clone(),
        }
    }

    /// Rotated files (compressed or not), oldest first; never `current`.
    fn rotated(&self, current: &Path) -> Vec<(PathBuf, std::fs::Metadata)> {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return Vec::new();
        };
        let mut files: Vec<(PathBuf, std::fs::Metadata)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                // Only names this sink gives: the stem, then a date (`2026-...`).
                // Anything else in the directory is someone else's and never deleted,
                // which matters when the prefix is empty.
                let dated = name.strip_prefix(&self.stem).is_some_and(|rest| {
                    let b = rest.as_bytes();
                    b.len() >= 5 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
                });
                let ours = dated && !name.ends_with(".tmp") && Some(&name) != self.latest.as_ref();
                let path = e.path();
                let meta = std::fs::symlink_metadata(&path).ok()?;
                (ours && meta.is_file() && path != current).then_some((path, meta))
            })
            .collect();
        // Modification time to the nanosecond, then the name (zero-padded counters
        // sort in rotation order) for files rotated within one clock tick.
        files.sort_by(|a, b| {
            let t = |m: &std::fs::Metadata| (m.mtime(), m.mtime_nsec());
            t(&a.1).cmp(&t(&b.1)).then(a.0.cmp(&b.0))
        });
        files
    }
}

enum Job {
    /// A file was just rotated (the first path; the second is the new current file):
    /// compress it, then apply retention.
    Rotated(PathBuf, PathBuf),
    /// Compress what a crash left uncompressed, remove stale temporaries, apply
    /// retention (at start; the path is the current file).
    Sweep(PathBuf),
    /// Report back once everything before this is done.
    Idle(mpsc::Sender<()>),
}

/// The housekeeping thread: compression and retention, off the writer thread.
#[derive(Debug)]
struct Housekeeper {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

impl Housekeeper {
    fn start(rules: Rules) -> io::Result<Housekeeper> {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("loglag-rolling".into())
            .spawn(move || {
                for job in rx {
                    match job {
                        Job::Rotated(path, current) => {
                            if let Some(c) = rules.compression {
                                if let Err(e) = compress(&path, c) {
                                    eprintln!("loglag: cannot compress {}: {e}", path.display());
                                }
                            }
                            retain(&rules, &current);
                        }
                        Job::Sweep(current) => {
                            if let Some(c) = rules.compression {
                                for (path, _) in rules.rotated(&current) {
                                    if !path.to_string_lossy().ends_with(".gz") {
                                        let _ = compress(&path, c);
                                    }
                                }
                            }
                            if let Ok(entries) = std::fs::read_dir(&rules.dir) {
                                for e in entries.flatten() {
                                    let name = e.file_name().to_string_lossy().into_owned();
                                    if name.starts_with(&rules.stem) && name.ends_with(".gz.tmp") {
                                        let _ = std::fs::remove_file(e.path());
                                    }
                                }
                            }
                            retain(&rules, &current);
                        }
                        Job::Idle(done) => {
                            let _ = done.send(());
                        }
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

impl RollingFile {
    /// Blocks until the housekeeping thread has done everything asked of it so far
    /// (compression and retention after each rotation). For tests and tools.
    pub fn wait_housekeeping(&self) {
        let (tx, rx) = mpsc::channel();
        self.housekeeper.send(Job::Idle(tx));
        let _ = rx.recv();
    }
}

/// Compresses `path` to `path.gz`: into a temporary, synced, renamed, and only then is
/// the original removed.
fn compress(path: &Path, compression: Compression) -> io::Result<()> {
    match compression {
        Compression::Gzip => {
            let target = gz(path);
            let tmp = PathBuf::from(format!("{}.tmp", target.display()));
            let mut input = match File::open(path) {
                Ok(f) => f,
                // Retention got to it first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
            let modified = input.metadata()?.modified()?;
            let out = File::create(&tmp)?;
            let mut encoder = flate2::write::GzEncoder::new(out, flate2::Compression::default());
            io::copy(&mut input, &mut encoder)?;
            let out = encoder.finish()?;
            // Keep the original's time: retention orders files by it, and a compressed
            // file must not look newer than the files rotated after it.
            out.set_modified(modified)?;
            out.sync_all()?;
            std::fs::rename(&tmp, &target)?;
            std::fs::remove_file(path)
        }
    }
}

/// Deletes the oldest rotated files until every rule holds.
fn retain(rules: &Rules, current: &Path) {
    let mut files = rules.rotated(current);
    let now = SystemTime::now();
    let too_old = |meta: &std::fs::Metadata| {
        rules.keep_age.is_some_and(|age| {
            meta.modified()
                .ok()
                .and_then(|m| now.duration_since(m).ok())
                .is_some_and(|a| a > age)
        })
    };
    let mut total: u64 = files.iter().map(|(_, m)| m.len()).sum();
    while let Some((path, meta)) = files.first() {
        let over_count = rules.keep_files.is_some_and(|k| files.len() > k);
        let over_bytes = rules.keep_bytes.is_some_and(|k| total > k);
        if !(over_count || over_bytes || too_old(meta)) {
            break;
        }
        if std::fs::remove_file(path).is_ok() {
            total -= meta.len();
        }
        files.remove(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_start_on_their_boundaries() {
        // 2026-12-01T03:17:34Z is a Tuesday.
        let t = 1_796_095_054;
        assert_eq!(
            format_date(t, Clock::Utc, DateFormat::Second),
            "2026-12-01-03-17-34"
        );
        assert_eq!(
            format_date(
                period_start(Period::Hourly, Clock::Utc, t),
                Clock::Utc,
                DateFormat::Hour
            ),
            "2026-12-01-03"
        );
        assert_eq!(
            format_date(
                period_start(Period::Daily, Clock::Utc, t),
                Clock::Utc,
                DateFormat::Day
            ),
            "2026-12-01"
        );
        assert_eq!(
            format_date(
                period_start(Period::Weekly, Clock::Utc, t),
                Clock::Utc,
                DateFormat::Second
            ),
            "2026-11-30-00-00-00",
            "weeks start on Monday"
        );
        assert_eq!(
            period_start(Period::Every(Duration::from_secs(15 * 60)), Clock::Utc, t) % 900,
            0
        );
    }
}
