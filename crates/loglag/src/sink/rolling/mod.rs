//! Rolling files: rotation by size, by time or both, retention, background gzip, a
//! `latest` symlink and reopening a file that was moved or deleted under the sink.
//! Configure it with [`crate::rolling::Builder`], the one rolling API.
//!
//! Rotation is decided in [`Sink::before_batch`], before the writer records where the
//! batch will land, so a batch never straddles two files and, with a spool, the journal
//! always names the file the batch went to: kill -9 at any moment, a rotation included,
//! neither loses nor duplicates a record (see `tests/it/rolling.rs`). One exception: a
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
mod file;
mod fs;
mod housekeeping;
mod names;

use std::fs::File;
use std::io::{self, Write};
#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{FileSink, Sink, SinkReport};
use file::{Live, Open};
use fs::{Fs, OsFs};
pub use housekeeping::Compression;
use housekeeping::{Housekeeper, Job, Rules};
pub use names::Naming;
pub(crate) use names::Period;
use names::{local_offset_s, DateFormat, Names, Parsed};

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

/// Everything a rolling file is: the one description that `rolling::Builder`, a
/// `file://` URL's query and `Config`'s file keys all produce, and that
/// [`RollingFile::open`] checks.
#[derive(Debug, Clone)]
pub(crate) struct RollingSpec {
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

/// Twice the default shutdown deadline: an old process that is still draining at a
/// restart has time to let go of the names before a new one gives up waiting.
pub(crate) const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(10);

impl RollingSpec {
    /// A file in `dir` as tracing-appender makes one by default: never rotated, a
    /// dated name, every file kept, UTC.
    pub(crate) fn new(dir: PathBuf) -> RollingSpec {
        RollingSpec {
            dir,
            prefix: String::new(),
            suffix: None,
            naming: Naming::Dated,
            max_bytes: None,
            period: None,
            local_time: false,
            keep_files: None,
            keep_bytes: None,
            keep_age: None,
            compression: None,
            latest: None,
            reopen_on_sighup: false,
            file_mode: None,
            clock: TimeSource::default(),
            lock_wait: DEFAULT_LOCK_WAIT,
        }
    }

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
/// A [`Sink`] writing to rolling files. Build it with [`crate::rolling::Builder`].
#[derive(Debug)]
pub struct RollingFile {
    settings: RollingSpec,
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
    /// What renames and removes names (the housekeeper shares it).
    fs: Arc<dyn Fs>,
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
    pub(crate) fn open(settings: RollingSpec) -> io::Result<RollingFile> {
        if settings.max_bytes == Some(0) {
            let e = crate::settings::SettingError::new("max_file_size", "0");
            return Err(io::Error::new(io::ErrorKind::InvalidInput, e));
        }
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
        #[cfg(windows)]
        windows_can_have(&settings)?;
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
            fs: Arc::new(OsFs),
            hup,
            notice: None,
            locked_out: false,
            settings,
        };
        file.open_at_start()?;
        file.update_latest_link()?;
        file.housekeeper = Housekeeper::start(Rules::of(&file.settings, live, file.fs.clone()))?;
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
                        self.period = Some(p.floor(self.settings.wall_s(mtime_s(&m))));
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

    /// Blocks until the housekeeping thread has done everything asked of it so far
    /// (compression and retention after each rotation) and one more pass. For tests
    /// and tools. A rotated file whose lock is held (a child process between `fork`
    /// and `exec` holds its parent's locks for a moment) is tried again for up to 5 s
    /// before this returns; one held longer is left for a later pass.
    pub fn wait_housekeeping(&self) {
        let (tx, rx) = mpsc::channel();
        self.housekeeper.send(Job::Idle(tx));
        let _ = rx.recv();
    }
}

/// The modification time in seconds since the epoch.
#[cfg(unix)]
fn mtime_s(m: &std::fs::Metadata) -> i64 {
    m.mtime()
}

#[cfg(windows)]
fn mtime_s(m: &std::fs::Metadata) -> i64 {
    match m.modified().map(|t| t.duration_since(UNIX_EPOCH)) {
        Ok(Ok(d)) => d.as_secs() as i64,
        Ok(Err(e)) => -(e.duration().as_secs() as i64),
        Err(_) => 0,
    }
}

/// What Windows cannot do as the settings ask, refused by name: file modes (a new file
/// takes its directory's ACL), and names it does not allow (`:` would name an
/// alternate data stream of another file, `\` a directory).
#[cfg(windows)]
fn windows_can_have(settings: &RollingSpec) -> io::Result<()> {
    if let Some(mode) = settings.file_mode {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "file_mode {mode:04o}: file modes are unix permissions, and Windows has none \
                 (a new file takes its directory's ACL)"
            ),
        ));
    }
    let names = [
        ("prefix", Some(settings.prefix.as_str())),
        ("suffix", settings.suffix.as_deref()),
        ("latest_symlink", settings.latest.as_deref()),
    ];
    for (what, name) in names {
        let Some(name) = name else { continue };
        if let Some(c) = name
            .chars()
            .find(|c| matches!(c, '<' | '>' | ':' | '"' | '\\' | '|' | '?' | '*') || c.is_control())
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("the file name {what} {name:?} has {c:?}, which Windows does not allow in a file name"),
            ));
        }
    }
    Ok(())
}

#[cfg(all(feature = "signals", unix))]
fn sighup_flag() -> io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, flag.clone())?;
    Ok(flag)
}

/// Windows has no SIGHUP; nothing there tells a process to reopen its files.
#[cfg(all(feature = "signals", not(unix)))]
fn sighup_flag() -> io::Result<Arc<AtomicBool>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "reopen_on_sighup: there is no SIGHUP on Windows (the sink notices a moved or deleted \
         file by itself before each batch)",
    ))
}

#[cfg(not(feature = "signals"))]
fn sighup_flag() -> io::Result<Arc<AtomicBool>> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "reopen_on_sighup needs loglag's `signals` feature",
    ))
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

impl crate::sink::sealed::Sealed for RollingFile {}

impl FileSink for RollingFile {
    #[cfg(unix)]
    fn descriptor(&self) -> Option<(super::RawDescriptor, (u64, u64))> {
        use std::os::fd::AsRawFd;
        Some((self.file.as_ref()?.as_raw_fd(), self.live_id))
    }

    /// No `fork` on Windows: no child ever writes to a descriptor.
    #[cfg(not(unix))]
    fn descriptor(&self) -> Option<(super::RawDescriptor, (u64, u64))> {
        None
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
        crate::sys::file_id(self.file().ok()?).ok()
    }
}

#[cfg(test)]
mod housekeeping_tests;
#[cfg(test)]
mod mem_fs;
