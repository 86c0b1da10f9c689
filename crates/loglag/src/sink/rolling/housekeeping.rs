//! Housekeeping, on its own thread: the start-up sweep, compression (gzip into
//! `NAME.gz.tmp`, synced, renamed, and only then the original removed) and retention.
//! It touches only files the grammar calls rotated, never the live one, and each only
//! under its `flock`.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use super::file::Live;
use super::fs::{Fs, Meta};
use super::names::{gz, Names, Parsed};
use super::{Naming, RollingSpec, TimeSource};
use crate::sink::backoff::{Backoff, Retry};

/// How rotated files are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Compression {
    Gzip,
}

/// Deletes a rotated file unless another writer holds it. Whether it was deleted.
fn remove_unless_held(fs: &dyn Fs, path: &Path) -> bool {
    let file = match fs.open_read(path) {
        Ok(file) => file,
        // Not readable by this process (left by a run as another user): no writer of
        // this user holds it; deleting needs only the directory, as before locks.
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied => return fs.remove(path).is_ok(),
        Err(_) => return false,
    };
    // The lock is held across the unlink, so no writer takes the file up meanwhile.
    matches!(file.try_lock_exclusive(), Ok(true)) && fs.remove(path).is_ok()
}

/// What the housekeeper needs to know about the files.
#[derive(Debug)]
pub(super) struct Rules {
    pub(super) dir: PathBuf,
    pub(super) names: Names,
    pub(super) keep_files: Option<usize>,
    pub(super) keep_bytes: Option<u64>,
    pub(super) keep_age: Option<Duration>,
    pub(super) compression: Option<Compression>,
    pub(super) file_mode: Option<u32>,
    pub(super) clock: TimeSource,
    pub(super) live: Arc<Live>,
    /// Every file operation goes through it: the real file system, or a test's.
    pub(super) fs: Arc<dyn Fs>,
}

impl Rules {
    pub(super) fn of(s: &RollingSpec, live: Arc<Live>, fs: Arc<dyn Fs>) -> Rules {
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
            fs,
        }
    }

    /// Rotated files (compressed or not), oldest first: regular files whose whole name
    /// parses, never the live file.
    fn rotated(&self) -> Vec<(PathBuf, Parsed, Meta)> {
        let Ok(entries) = self.fs.list(&self.dir) else {
            return Vec::new();
        };
        let live = *self.live.lock();
        let mut files: Vec<_> = entries
            .into_iter()
            .filter_map(|e| {
                let parsed = self.names.parse(e.name.to_str()?)?;
                let is_live = live == Some(e.meta.id);
                (e.meta.is_file() && !is_live).then_some((e.path, parsed, e.meta))
            })
            .collect();
        // Modification time to the nanosecond (a compressed file keeps its original's),
        // then the name (zero-padded counters sort in rotation order).
        files.sort_by(|a, b| a.2.modified.cmp(&b.2.modified).then(a.0.cmp(&b.0)));
        files
    }

    /// Removes this sink's own stale compression temporaries.
    pub(super) fn sweep_temporaries(&self) {
        let Ok(entries) = self.fs.list(&self.dir) else {
            return;
        };
        for e in entries {
            let Some(name) = e.name.to_str() else {
                continue;
            };
            if self.names.is_temporary(name) {
                let _ = self.fs.remove(&e.path);
            } else {
                self.adopt_rotation_leftover(name, &e.path);
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
        #[cfg(unix)]
        // SAFETY: kill with signal 0 only checks whether the process exists.
        let alive = unsafe { libc::kill(pid, 0) } == 0
            || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
        #[cfg(windows)]
        let alive = u32::try_from(pid).map_or(true, crate::sys::windows::process_alive);
        if alive {
            return;
        }
        let Ok(file) = self.fs.open_read(path) else {
            return;
        };
        if !matches!(file.try_lock_exclusive(), Ok(true)) {
            return;
        }
        let Ok(meta) = file.meta() else { return };
        if !meta.is_file() {
            return;
        }
        if meta.len == 0 {
            let _ = self.fs.remove(path);
            return;
        }
        let stamp = self.names.format.format(meta.mtime_s());
        for counter in 0..100_000 {
            let target = self.dir.join(self.names.name(&stamp, Some(counter)));
            match self.fs.rename_noreplace(path, &target) {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                _ => return,
            }
        }
    }

    /// Compresses every rotated file not compressed yet, then applies retention to
    /// what is on disk. Returns what is left to retry.
    pub(super) fn pass(&self) -> Left {
        let mut failed = false;
        let mut held = false;
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
                    self.fs.stat(&path).is_ok_and(|m| *live != Some(m.id))
                };
                if still_rotated {
                    match compress(&*self.fs, &path, c, self.file_mode) {
                        Ok(()) => {}
                        // Another writer's live file: tried again later, quietly.
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            held = true;
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
        Left { failed, held }
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
        let too_old = |meta: &Meta| {
            self.keep_age
                .is_some_and(|age| now.duration_since(meta.modified).is_ok_and(|a| a > age))
        };
        let on_disk = |path: &PathBuf, parsed: &Parsed, meta: &Meta| {
            if compressing && !parsed.gz && !stuck.contains(path) {
                0
            } else {
                meta.len
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
            let is_live = self.fs.stat(path).is_ok_and(|m| *live == Some(m.id));
            if !is_live && remove_unless_held(&*self.fs, path) {
                total -= on_disk(path, parsed, meta);
            }
            drop(live);
            files.remove(0);
        }
    }
}

/// What a pass could not do, to be tried again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Left {
    /// A compression failed (a full disk): tried again after [`COMPRESSION_RETRY`].
    pub(super) failed: bool,
    /// A rotated file's lock was held. Most often only for a moment: a child process
    /// between `fork` and `exec` holds its parent's locks (a service spawning a
    /// command as it rotates). Tried again soon, then less and less often (another
    /// writer's live file stays held).
    pub(super) held: bool,
}

pub(super) enum Job {
    /// Compress what is pending, then apply retention.
    Pass,
    /// Report back once everything before this is done, after one more pass.
    Idle(mpsc::Sender<()>),
}

/// The housekeeping thread: compression and retention, off the writer thread.
#[derive(Debug)]
pub(super) struct Housekeeper {
    tx: Option<mpsc::Sender<Job>>,
    thread: Option<JoinHandle<()>>,
}

/// How soon a failed compression (a full disk) is tried again without a rotation.
const COMPRESSION_RETRY: Duration = Duration::from_secs(30);
/// A held file is tried again after this, then twice as long each time, up to
/// [`COMPRESSION_RETRY`].
const HELD_RETRY_FIRST: Duration = Duration::from_millis(10);
/// How long [`Job::Idle`] waits for a held file before it reports back anyway.
const HELD_PATIENCE: Duration = Duration::from_secs(5);

impl Housekeeper {
    pub(super) fn idle() -> Housekeeper {
        Housekeeper {
            tx: None,
            thread: None,
        }
    }

    pub(super) fn start(rules: Rules) -> io::Result<Housekeeper> {
        let (tx, rx) = mpsc::channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("loglag-rolling".into())
            .spawn(move || {
                crate::sys::fork::block_async_signals();
                rules.sweep_temporaries();
                let mut left = Left {
                    failed: false,
                    held: false,
                };
                let mut held_backoff = Backoff::new(HELD_RETRY_FIRST, COMPRESSION_RETRY);
                loop {
                    let wait = match left {
                        Left { held: true, .. } => Some(held_backoff.next()),
                        Left { failed: true, .. } => Some(COMPRESSION_RETRY),
                        _ => {
                            held_backoff.reset();
                            None
                        }
                    };
                    let job = if let Some(wait) = wait {
                        match rx.recv_timeout(wait) {
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
                    left = rules.pass();
                    if !acks.is_empty() && left.held {
                        // Whoever waits for housekeeping gets the pass after a
                        // moment's hold (a fork's child execs), within a bound: a file
                        // another writer keeps open stays held.
                        let mut retry = Retry::for_up_to(
                            Backoff::new(Duration::from_millis(1), Duration::from_millis(128)),
                            HELD_PATIENCE,
                        );
                        while left.held && retry.wait() {
                            left = rules.pass();
                        }
                    }
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

    pub(super) fn send(&self, job: Job) {
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
fn compress(
    fs: &dyn Fs,
    path: &Path,
    compression: Compression,
    mode: Option<u32>,
) -> io::Result<()> {
    match compression {
        Compression::Gzip => {
            let target = gz(path);
            let mut tmp = target.as_os_str().to_owned();
            tmp.push(".tmp");
            let tmp = PathBuf::from(tmp);
            let mut input = match fs.open_read(path) {
                Ok(f) => f,
                // Retention got to it first.
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(e),
            };
            // Under the file's lock, so a writer cannot take it up while it is
            // compressed, and a file another writer holds is left alone.
            if !input.try_lock_exclusive()? {
                return Err(io::Error::new(
                    io::ErrorKind::WouldBlock,
                    "held by a writer",
                ));
            }
            let meta = input.meta()?;
            if !meta.is_file() || meta.nlink == 0 {
                return Ok(());
            }
            // Whatever is at the temporary's name (ours from a crash, or a planted
            // link) is removed, not followed; the new one must not exist.
            let _ = fs.remove(&tmp);
            let out = fs.create_new(&tmp, mode.unwrap_or(meta.mode & 0o777))?;
            let written = (|| {
                let mut encoder =
                    flate2::write::GzEncoder::new(out, flate2::Compression::default());
                io::copy(&mut input, &mut encoder)?;
                let out = encoder.finish()?;
                // Keep the original's time: retention orders files by it, and a
                // compressed file must not look newer than files rotated after it.
                out.set_modified(meta.modified)?;
                out.sync()?;
                fs.rename_noreplace(&tmp, &target)
            })();
            match written {
                Ok(()) => fs.remove(path),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let _ = fs.remove(&tmp);
                    // `NAME.gz` is there already: a crash between the rename and the
                    // removal leaves a complete one, whose gzip trailer holds the
                    // original's length. Anything else is not ours to replace.
                    if gzip_length(fs, &target).is_some_and(|n| n == meta.len as u32) {
                        fs.remove(path)
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
                    let _ = fs.remove(&tmp);
                    Err(e)
                }
            }
        }
    }
}

/// The uncompressed length (mod 2^32) a gzip file's trailer records.
fn gzip_length(fs: &dyn Fs, path: &Path) -> Option<u32> {
    let file = fs.open_read(path).ok()?;
    let len = file.meta().ok()?.len;
    let mut tail = [0u8; 4];
    file.read_exact_at(&mut tail, len.checked_sub(4)?).ok()?;
    Some(u32::from_le_bytes(tail))
}
