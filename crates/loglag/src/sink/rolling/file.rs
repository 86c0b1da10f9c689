//! The live file: opening a name without following a link, the exclusive `flock` that
//! keeps two writers apart, swapping a fixed name's file in one step, reopening a file
//! moved or deleted under the writer, and the `Live` guard through which the
//! housekeeper learns which inode it must never touch.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Mutex;
use std::time::Duration;

use super::fs::try_lock_exclusive;
use super::names::{gz, DateFormat};
use super::{Naming, RollingFile};
use crate::sink::backoff::{Backoff, Retry};
use crate::sys;

/// The identity (device, inode) of the file the writer has open. The writer holds the
/// lock while it creates a file and publishes it; the housekeeper holds it while it
/// decides a file is not the live one. So the housekeeper never compresses, renames or
/// deletes the live file, whatever its name.
#[derive(Debug, Default)]
pub(super) struct Live(Mutex<Option<(u64, u64)>>);

impl Live {
    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, Option<(u64, u64)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}
impl RollingFile {
    /// Creates `path` already locked: made and locked under a temporary name, then
    /// renamed into place without replacing anything. A writer waiting for the name can
    /// only ever open it locked, so it never takes a file from under the writer that
    /// just made it (a fixed name's rotation). `Interrupted` if someone made the name
    /// meanwhile: opening it again sees theirs.
    fn create_locked(&self, path: &Path) -> io::Result<File> {
        let (file, tmp) = self.locked_temporary(path)?;
        match self.fs.rename_noreplace(&tmp, path) {
            Ok(()) => Ok(file),
            Err(e) => {
                let _ = self.fs.remove(&tmp);
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
        // Read access on Windows: an append-only handle cannot take a lock there.
        options.read(cfg!(windows)).append(true).create_new(true);
        if let Some(mode) = self.settings.file_mode {
            sys::create_mode(&mut options, mode);
        }
        // Never an existing name: one may hold a rotated file's records (see
        // `Rules::adopt_rotation_leftover`), and a planted link is not followed.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let (file, tmp) = loop {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let tmp = path.with_file_name(format!(".{name}.{}.{n}.new", std::process::id()));
            match sys::open_no_follow(&mut options, &tmp) {
                Ok(file) => break (file, tmp),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        };
        if let Err(e) = try_lock_exclusive(&file) {
            let _ = self.fs.remove(&tmp);
            return Err(e);
        }
        // Its identity, asked under its first name: Wine cannot tell a renamed handle's
        // volume, and remembers it from here (see `crate::sys::windows::file_info`).
        sys::file_id(&file)?;
        Ok((file, tmp))
    }

    /// Whether `path` names the file this sink has open.
    fn names_open_file(&self, path: &Path) -> bool {
        sys::path_id(path).is_ok_and(|id| id == self.live_id) && self.file.is_some()
    }

    /// Opens the fixed name, waiting up to `lock_wait` for another writer that holds
    /// it (an old process still draining) to let go. While it waits it never creates
    /// the name: the holder, rotating, would find its own fixed name taken.
    pub(super) fn open_waiting(&mut self, path: &Path) -> io::Result<()> {
        let started = std::time::Instant::now();
        // A holder is seen again soon (1 ms, doubling to 20 ms) until `lock_wait`.
        let mut retry = Retry::new(
            Backoff::new(Duration::from_millis(1), Duration::from_millis(20)),
            started.checked_add(self.settings.lock_wait),
        );
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
                    ) && retry.wait() =>
                {
                    how = Open::Existing;
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

    /// Opens `path` for appending without following a symlink, takes its lock (unless
    /// the name is never rotated) and publishes it as live. Fails with `WouldBlock`,
    /// naming the holder, if another writer holds the file.
    pub(super) fn open_path(&mut self, path: &Path, how: Open) -> io::Result<()> {
        let mut live = self.live.lock();
        if how == Open::New && gz(path).exists() {
            return Err(io::ErrorKind::AlreadyExists.into());
        }
        let mut options = OpenOptions::new();
        // Read access on Windows: an append-only handle cannot take a lock there.
        options.read(cfg!(windows)).append(true);
        match how {
            Open::New => options.create_new(true),
            // A locked name is created under a temporary one first (below); a
            // never-rotated name takes no lock.
            Open::Continue if self.names.never => options.create(true),
            Open::Continue | Open::Existing => &mut options,
        };
        if let Some(mode) = self.settings.file_mode {
            sys::create_mode(&mut options, mode);
        }
        let mut made_locked = false;
        let opened = match sys::open_no_follow(&mut options, path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && how == Open::Continue => {
                made_locked = true;
                self.create_locked(path)
            }
            other => other,
        };
        let file = opened.map_err(|e| {
            if sys::is_link_refusal(&e) {
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
        let id = sys::file_id(&file)?;
        if !self.names.never {
            // Windows' locks do not nest: the handle `create_locked` made holds its lock
            // already, and a second one by that handle fails. (unix's flock takes it
            // again, as before.)
            let held = cfg!(windows) && made_locked;
            if !held && !try_lock_exclusive(&file)? {
                let moved_on = sys::path_id(path).map_or(true, |now| now != id);
                if moved_on {
                    // The holder rotated it away between our open and our lock: the
                    // name means another file now, which is worth trying at once.
                    return Err(io::Error::new(
                        io::ErrorKind::Interrupted,
                        format!("{} moved on as it was opened", path.display()),
                    ));
                }
                return Err(held_by_another(path, id));
            }
            // Renamed (a rotation) or compressed and unlinked by a housekeeper between
            // the open and the lock: whatever the name means now, it is not this file.
            let still_there = sys::path_id(path).is_ok_and(|now| now == id);
            if id_and_links(&file)?.1 == 0 || !still_there {
                return Err(io::Error::new(
                    io::ErrorKind::Interrupted,
                    format!("{} moved on as it was opened", path.display()),
                ));
            }
        }
        *live = Some(id);
        drop(live);
        self.live_id = id;
        self.len = meta.len();
        self.file = Some(file);
        self.current = path.to_owned();
        Ok(())
    }

    /// Points the `latest` link at the current file: a new link under a temporary
    /// name, renamed over the old one, so readers never see it missing. `rename`
    /// replaces a planted link or file at that name; it never follows one.
    pub(super) fn update_latest_link(&self) -> io::Result<()> {
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
        #[cfg(unix)]
        std::os::unix::fs::symlink(target, &tmp)?;
        #[cfg(windows)]
        std::os::windows::fs::symlink_file(target, &tmp).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot make the latest symlink {}: {e} (on Windows a symbolic link needs \
                     Developer Mode or the SeCreateSymbolicLinkPrivilege)",
                    link.display()
                ),
            )
        })?;
        std::fs::rename(&tmp, &link).inspect_err(|_| {
            let _ = std::fs::remove_file(&tmp);
        })
    }

    /// Renames the current file after its period (never over an existing file) and
    /// opens a new one under the fixed name.
    pub(super) fn rotate_fixed(&mut self, old_period: Option<i64>) -> io::Result<()> {
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
        let rotated_from = match sys::rename_exchange(&tmp, &fixed) {
            Ok(()) => tmp.clone(),
            // No atomic exchange here (not Linux, or a file system without it): the
            // old file is renamed, then the new one put in its place.
            Err(e) if sys::no_exchange(&e) => fixed.clone(),
            Err(e) => {
                let _ = self.fs.remove(&tmp);
                return Err(e);
            }
        };
        let mut renamed = None;
        for _ in 0..10_000 {
            let target = self.settings.dir.join(self.names.name(&stamp, counter));
            match self.fs.rename_noreplace(&rotated_from, &target) {
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
                    let _ = self.fs.remove(&tmp);
                    return Err(e);
                }
            }
        }
        if rotated_from == fixed {
            if let Err(e) = self.fs.rename_noreplace(&tmp, &fixed) {
                // Someone made the name in the moment it was free: this writer keeps
                // writing its file, now under its rotated name, and tries the fixed
                // name again at the next batch.
                let _ = self.fs.remove(&tmp);
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
        // disk at every rotation would stall the writer (a spool's sync setting is for power loss).
        let (id, _) = id_and_links(&fresh)?;
        let mut live = live;
        *live = Some(id);
        drop(live);
        self.live_id = id;
        self.file = Some(fresh);
        self.len = 0;
        self.last_taken = Some((stamp, counter));
        Ok(())
    }

    /// Whether the open file still has a name: not deleted (`st_nlink == 0`) and,
    /// for a fixed name, still the file at that path.
    pub(super) fn still_named(&self) -> bool {
        let Some(file) = &self.file else { return true };
        let Ok((open, links)) = id_and_links(file) else {
            return true;
        };
        if links == 0 {
            return false;
        }
        match sys::path_id(&self.current) {
            Ok(at_path) => at_path == open,
            // Gone. Any other error (EACCES, ESTALE) says nothing about the file: keep
            // writing to the descriptor that works.
            Err(e) => e.kind() != io::ErrorKind::NotFound,
        }
    }

    /// Drops the handle and opens the current path afresh (a new file if it is gone).
    pub(super) fn reopen(&mut self) -> io::Result<()> {
        // The old identity stays published until `open_path` swaps in the new one, under
        // one lock: the housekeeper never sees a moment with no live file.
        let previous = self.file.take();
        // Windows keeps a deleted file's name until its last handle is closed (unless
        // it was deleted with POSIX semantics): a handle to a deleted file goes now, so
        // that the name can be made again.
        #[cfg(windows)]
        let previous = previous.filter(|f| id_and_links(f).map_or(true, |(_, links)| links > 0));
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
                    .is_some_and(|f| id_and_links(f).is_ok_and(|(_, links)| links > 0)) =>
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

    pub(super) fn file(&mut self) -> io::Result<&mut File> {
        if self.file.is_none() {
            self.reopen()?;
        }
        Ok(self.file.as_mut().expect("opened above"))
    }
}

/// An open file's (device, inode) and its number of names (`fstat`).
fn id_and_links(file: &File) -> io::Result<((u64, u64), u64)> {
    sys::stat_file(file).map(|(_, i)| (i.id, i.links))
}

/// How [`RollingFile::open_path`] opens a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Open {
    /// Create it; fail if it (or its `.gz`) exists.
    New,
    /// Continue it, creating it if missing.
    Continue,
    /// Continue it only if it exists.
    Existing,
}

/// The error for a file another writer (or its housekeeper, compressing it) holds,
/// naming the process that holds it where `/proc` tells it (Linux).
///
/// `/proc/locks` names the process that *took* an `flock`, but the lock belongs to the
/// open file, which a child forked without `exec` shares: when the taker has exited and
/// such a child lives on, the child holds the lock. So the taker is named only when it
/// still holds the lock; otherwise the living processes whose open files carry it
/// (`/proc/PID/fdinfo/FD`'s `lock:` lines) are.
fn held_by_another(path: &Path, id: (u64, u64)) -> io::Error {
    io::Error::new(
        io::ErrorKind::WouldBlock,
        format!("{} is held{}", path.display(), holder_named(id)),
    )
}

/// " by …" naming who holds the `flock` on the file `id`, or "" when `/proc` does not
/// tell (not Linux, or no such lock listed).
#[cfg(target_os = "linux")]
fn holder_named(id: (u64, u64)) -> String {
    let Some(taker) = lock_taker(id.1) else {
        return String::new();
    };
    let me = std::process::id();
    if taker == me {
        return " by another rolling sink in this process".to_owned();
    }
    // The taker still holds it (or its descriptors cannot be read, another user's).
    if holds_lock(taker, id) != Some(false) && alive(taker) {
        return format!(" by process {taker}");
    }
    // Every process's open files are read: a waiting writer that retries every 20 ms
    // does it at most once a second for the same lock.
    static LAST: Mutex<Option<Scanned>> = Mutex::new(None);
    let mut last = LAST.lock().unwrap_or_else(|e| e.into_inner());
    let sharers = match &*last {
        Some((was, by, at, found))
            if *was == id && *by == taker && at.elapsed() < Duration::from_secs(1) =>
        {
            found.clone()
        }
        _ => {
            let found: Vec<u32> = pids()
                .filter(|&pid| pid != taker && holds_lock(pid, id) == Some(true))
                .collect();
            *last = Some((id, taker, std::time::Instant::now(), found.clone()));
            found
        }
    };
    drop(last);
    let list = |pids: &[u32]| {
        let names: Vec<String> = pids
            .iter()
            .map(|&p| {
                if p == me {
                    format!("{p} (this one)")
                } else {
                    p.to_string()
                }
            })
            .collect();
        names.join(", ")
    };
    match sharers.as_slice() {
        [] => format!(
            " by a process that process {taker} forked, most likely (process {taker} took \
             the lock and has exited; no process whose open files /proc shows has it)"
        ),
        [one] => format!(
            " by process {} (which has the locked file open, sharing it with process \
             {taker} that took the lock and has exited: a child it forked without exec, \
             most likely)",
            list(&[*one])
        ),
        many => format!(
            " by processes {} (which have the locked file open, sharing it with process \
             {taker} that took the lock and has exited: children it forked without exec, \
             most likely)",
            list(many)
        ),
    }
}

/// The last scan for a lock's holders: the file, the lock's taker, when, and the
/// processes found sharing it.
#[cfg(target_os = "linux")]
type Scanned = ((u64, u64), u32, std::time::Instant, Vec<u32>);

/// Not Linux: no `/proc` to tell who holds it.
#[cfg(not(target_os = "linux"))]
fn holder_named(_: (u64, u64)) -> String {
    String::new()
}

/// Whether a `/proc/locks` or `fdinfo` lock line is an `flock` on a file with inode
/// `ino`, and if so the pid it gives (the lock's taker): `1: FLOCK  ADVISORY  WRITE
/// 1234 fe:00:5308727 0 EOF`. A blocked waiter's line (`1: -> FLOCK …`) is not the
/// lock. The device there is the filesystem's own, which an overlay's `stat` does not
/// show, so only the inode is compared.
#[cfg(target_os = "linux")]
fn flock_line(line: &str, ino: u64) -> Option<u32> {
    let fields: Vec<&str> = line.split_whitespace().collect();
    if fields.get(1) != Some(&"FLOCK") {
        return None;
    }
    let inode = fields.get(5)?.rsplit(':').next()?.parse::<u64>().ok()?;
    (inode == ino).then(|| fields.get(4)?.parse().ok())?
}

/// The process that took the `flock` on a file with inode `ino`, from `/proc/locks`.
/// Linux only; `None` elsewhere or when none is listed.
#[cfg(target_os = "linux")]
fn lock_taker(ino: u64) -> Option<u32> {
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| flock_line(line, ino))
}

/// Whether one of `pid`'s open files is the file `id` and carries an `flock` (its
/// `fdinfo` lists the locks of the open file, which every process that inherited that
/// open file shares); `None` when its descriptors cannot be read.
#[cfg(target_os = "linux")]
fn holds_lock(pid: u32, id: (u64, u64)) -> Option<bool> {
    let fds = std::fs::read_dir(format!("/proc/{pid}/fdinfo")).ok()?;
    Some(fds.flatten().any(|fd| {
        let locked = std::fs::read_to_string(fd.path()).is_ok_and(|info| {
            info.lines()
                .filter_map(|l| l.strip_prefix("lock:"))
                .any(|l| flock_line(l, id.1).is_some())
        });
        // The same file as ours, as `stat` shows it to us (device and inode).
        locked
            && std::fs::metadata(format!(
                "/proc/{pid}/fd/{}",
                fd.file_name().to_string_lossy()
            ))
            .is_ok_and(|m| {
                use std::os::unix::fs::MetadataExt;
                (m.dev(), m.ino()) == id
            })
    }))
}

/// The processes `/proc` lists.
#[cfg(target_os = "linux")]
fn pids() -> impl Iterator<Item = u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
}

/// Whether `pid` is a running process (listed, and not a zombie that has exited).
#[cfg(target_os = "linux")]
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name's closing parenthesis.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}
