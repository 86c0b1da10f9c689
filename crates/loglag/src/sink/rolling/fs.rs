//! The file-system seam: the few operations housekeeping performs (and the writer's
//! renames and removals of names), as a trait, so a test can run them on a file system
//! in memory and stop them at any step. `OsFs` is the real one, over `std::fs` and
//! libc (on Windows, `crate::sys::windows`); nothing else in the crate sees the trait.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::sys::{self, Identity};

/// What kind of thing a name is (as `lstat` sees it: a link is not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    File,
    Symlink,
    Other,
}

/// What `lstat` (or `fstat`, for an open handle) says about a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Meta {
    pub(super) kind: Kind,
    /// (device, inode): what `Live` publishes.
    pub(super) id: (u64, u64),
    pub(super) len: u64,
    pub(super) modified: SystemTime,
    /// Permission bits, which a compressed file inherits.
    pub(super) mode: u32,
    /// 0 once the file has no name left.
    pub(super) nlink: u64,
}

impl Meta {
    pub(super) fn is_file(&self) -> bool {
        self.kind == Kind::File
    }

    /// The modification time in seconds since the epoch (negative before it).
    pub(super) fn mtime_s(&self) -> i64 {
        match self.modified.duration_since(UNIX_EPOCH) {
            Ok(d) => d.as_secs() as i64,
            Err(e) => -(e.duration().as_secs_f64().ceil() as i64),
        }
    }

    /// From std's metadata and what `crate::sys` adds (the identity and link count,
    /// which std's metadata carries only on unix).
    fn of((m, identity): (std::fs::Metadata, Identity)) -> Meta {
        let kind = if m.file_type().is_symlink() {
            Kind::Symlink
        } else if m.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        Meta {
            kind,
            id: identity.id,
            len: m.len(),
            modified: sys::modified(&m),
            mode: sys::mode_bits(&m),
            nlink: identity.links,
        }
    }
}

/// `lstat`.
fn meta_at(path: &Path) -> io::Result<Meta> {
    sys::stat_path(path).map(Meta::of)
}

/// An open file's metadata (`fstat`).
fn meta_of(file: &File) -> io::Result<Meta> {
    sys::stat_file(file).map(Meta::of)
}

/// One name in a directory, with what `lstat` said about it when it was listed.
#[derive(Debug, Clone)]
pub(super) struct Entry {
    pub(super) name: OsString,
    pub(super) path: PathBuf,
    pub(super) meta: Meta,
}

/// What housekeeping does to the disk, and no more. No call follows a symbolic link.
pub(super) trait Fs: Send + Sync + std::fmt::Debug {
    /// The directory's entries (a name that vanished while listing is left out).
    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>>;
    /// `lstat`.
    fn stat(&self, path: &Path) -> io::Result<Meta>;
    /// Opens a file for reading; a symbolic link fails (`O_NOFOLLOW`).
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Handle>>;
    /// Creates a file for writing that must not exist (`O_EXCL|O_NOFOLLOW`).
    fn create_new(&self, path: &Path, mode: u32) -> io::Result<Box<dyn Handle>>;
    /// Renames, failing with `AlreadyExists` rather than replacing `to`.
    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()>;
    /// Unlinks a name.
    fn remove(&self, path: &Path) -> io::Result<()>;
}

/// An open file. Its lock, if taken, is let go when it is dropped.
pub(super) trait Handle: Read + Write + Send {
    /// The exclusive `flock`, without waiting. `Ok(false)`: someone else holds it.
    fn try_lock_exclusive(&self) -> io::Result<bool>;
    fn meta(&self) -> io::Result<Meta>;
    fn set_modified(&self, t: SystemTime) -> io::Result<()>;
    /// Data and metadata to disk (`fsync`).
    fn sync(&self) -> io::Result<()>;
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct OsFs;

impl Fs for OsFs {
    fn list(&self, dir: &Path) -> io::Result<Vec<Entry>> {
        Ok(std::fs::read_dir(dir)?
            .flatten()
            .filter_map(|e| {
                let path = e.path();
                let meta = meta_at(&path).ok()?;
                Some(Entry {
                    name: e.file_name(),
                    path,
                    meta,
                })
            })
            .collect())
    }

    fn stat(&self, path: &Path) -> io::Result<Meta> {
        meta_at(path)
    }

    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Handle>> {
        let file = sys::open_no_follow(OpenOptions::new().read(true), path)?;
        Ok(Box::new(OsFile(file)))
    }

    /// `mode` is ignored on Windows, which has none.
    fn create_new(&self, path: &Path, mode: u32) -> io::Result<Box<dyn Handle>> {
        let mut options = OpenOptions::new();
        sys::create_mode(options.write(true).create_new(true), mode);
        Ok(Box::new(OsFile(sys::open_no_follow(&mut options, path)?)))
    }

    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        sys::rename_noreplace(from, to)
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
}

struct OsFile(File);

impl Read for OsFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for OsFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl Handle for OsFile {
    fn try_lock_exclusive(&self) -> io::Result<bool> {
        try_lock_exclusive(&self.0)
    }

    fn meta(&self) -> io::Result<Meta> {
        meta_of(&self.0)
    }

    fn set_modified(&self, t: SystemTime) -> io::Result<()> {
        self.0.set_modified(t)
    }

    fn sync(&self) -> io::Result<()> {
        self.0.sync_all()
    }

    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        sys::read_exact_at(&self.0, buf, offset)
    }
}

/// Takes `file`'s exclusive lock without waiting (on Windows a lock on one byte past
/// any data, which readers of the file do not feel). `Ok(false)`: another writer (or a
/// housekeeper) holds it. A file system without locks (some network mounts) can
/// protect nothing; the sink logs as it did before locks rather than refusing to. The
/// handle needs read or write access (an append-only handle cannot lock on Windows).
pub(super) fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    match sys::try_lock(file, true) {
        Err(e) if sys::locks_unsupported(&e) => Ok(true),
        taken => taken,
    }
}
