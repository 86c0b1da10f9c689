//! The file-system seam: the few operations housekeeping performs (and the writer's
//! renames and removals of names), as a trait, so a test can run them on a file system
//! in memory and stop them at any step. `OsFs` is the real one, over `std::fs` and
//! libc (on Windows, `crate::sys::windows`); nothing else in the crate sees the trait.

use std::ffi::OsString;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
#[cfg(unix)]
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
#[cfg(windows)]
use std::os::windows::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
#[cfg(unix)]
use std::time::Duration;
use std::time::{SystemTime, UNIX_EPOCH};

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

    #[cfg(unix)]
    fn of(m: &std::fs::Metadata) -> Meta {
        let kind = if m.file_type().is_symlink() {
            Kind::Symlink
        } else if m.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        // From the raw fields: `modified()` can fail where `st_mtime` cannot.
        let modified = if m.mtime() >= 0 {
            UNIX_EPOCH + Duration::new(m.mtime() as u64, m.mtime_nsec() as u32)
        } else {
            UNIX_EPOCH - Duration::from_secs(m.mtime().unsigned_abs())
                + Duration::from_nanos(m.mtime_nsec() as u64)
        };
        Meta {
            kind,
            id: (m.dev(), m.ino()),
            len: m.len(),
            modified,
            mode: m.mode(),
            nlink: m.nlink(),
        }
    }

    /// On Windows std's metadata carries no identity or link count: `info` does. The
    /// mode is what the read-only attribute says, and nothing applies it.
    #[cfg(windows)]
    fn of(m: &std::fs::Metadata, info: crate::sys::windows::FileInfo) -> Meta {
        let kind = if m.file_type().is_symlink() {
            Kind::Symlink
        } else if m.is_file() {
            Kind::File
        } else {
            Kind::Other
        };
        Meta {
            kind,
            id: info.id,
            len: m.len(),
            modified: m.modified().unwrap_or(UNIX_EPOCH),
            mode: if m.permissions().readonly() {
                0o444
            } else {
                0o666
            },
            nlink: info.links,
        }
    }
}

/// `lstat`.
#[cfg(unix)]
fn meta_at(path: &Path) -> io::Result<Meta> {
    std::fs::symlink_metadata(path).map(|m| Meta::of(&m))
}

/// `lstat`: std's metadata, and the identity of what the name is (not what it
/// points to).
#[cfg(windows)]
fn meta_at(path: &Path) -> io::Result<Meta> {
    let m = std::fs::symlink_metadata(path)?;
    Ok(Meta::of(&m, crate::sys::windows::path_info(path)?))
}

/// An open file's metadata (`fstat`).
#[cfg(unix)]
fn meta_of(file: &File) -> io::Result<Meta> {
    file.metadata().map(|m| Meta::of(&m))
}

#[cfg(windows)]
fn meta_of(file: &File) -> io::Result<Meta> {
    Ok(Meta::of(
        &file.metadata()?,
        crate::sys::windows::file_info(file)?,
    ))
}

/// Refuses what was opened without following a link, if it is one: Windows opens the
/// link itself where unix fails with `ELOOP`.
#[cfg(windows)]
pub(super) fn refuse_link(file: File, path: &Path) -> io::Result<File> {
    if file.metadata()?.file_type().is_symlink() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "{} is a symbolic link; loglag does not write through a link it did not make",
                path.display()
            ),
        ));
    }
    Ok(file)
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

    #[cfg(unix)]
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Handle>> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(path)?;
        Ok(Box::new(OsFile(file)))
    }

    #[cfg(windows)]
    fn open_read(&self, path: &Path) -> io::Result<Box<dyn Handle>> {
        let file = OpenOptions::new()
            .read(true)
            .custom_flags(crate::sys::windows::NO_FOLLOW)
            .open(path)?;
        Ok(Box::new(OsFile(refuse_link(file, path)?)))
    }

    /// `mode` is ignored on Windows, which has none.
    #[cfg(windows)]
    fn create_new(&self, path: &Path, _mode: u32) -> io::Result<Box<dyn Handle>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(crate::sys::windows::NO_FOLLOW)
            .open(path)?;
        Ok(Box::new(OsFile(file)))
    }

    #[cfg(unix)]
    fn create_new(&self, path: &Path, mode: u32) -> io::Result<Box<dyn Handle>> {
        let file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(mode)
            .open(path)?;
        Ok(Box::new(OsFile(file)))
    }

    fn rename_noreplace(&self, from: &Path, to: &Path) -> io::Result<()> {
        rename_noreplace(from, to)
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

    #[cfg(unix)]
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        FileExt::read_exact_at(&self.0, buf, offset)
    }

    #[cfg(windows)]
    fn read_exact_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        crate::sys::windows::read_exact_at(&self.0, buf, offset)
    }
}

/// `rename(2)` that fails with `AlreadyExists` instead of replacing `to`: macOS's
/// `renamex_np(RENAME_EXCL)`.
#[cfg(target_vendor = "apple")]
pub(super) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other);
    let (f, t) = (c(from)?, c(to)?);
    // SAFETY: both are valid NUL-terminated paths.
    let r = unsafe { libc::renamex_np(f.as_ptr(), t.as_ptr(), libc::RENAME_EXCL) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        // A file system without RENAME_EXCL: link(2) refuses to replace too.
        Some(libc::ENOTSUP | libc::EINVAL) => link_then_unlink(from, to),
        _ => Err(e),
    }
}

/// Where the platform has no rename that refuses to replace: `link(2)` refuses (it
/// fails with `AlreadyExists`), then the old name goes.
#[cfg(unix)]
#[cfg_attr(
    not(any(target_os = "linux", target_os = "android", target_vendor = "apple")),
    allow(dead_code)
)]
fn link_then_unlink(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

/// `MoveFileExW` without `MOVEFILE_REPLACE_EXISTING`: fails with `AlreadyExists`.
#[cfg(windows)]
pub(super) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    crate::sys::windows::rename_noreplace(from, to)
}

/// Neither Linux nor macOS: no rename that refuses to replace.
#[cfg(all(
    unix,
    not(any(target_os = "linux", target_os = "android", target_vendor = "apple"))
))]
pub(super) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    link_then_unlink(from, to)
}

/// `rename(2)` that fails with `AlreadyExists` instead of replacing `to`.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(super) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
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
        Some(libc::EINVAL | libc::ENOSYS) => link_then_unlink(from, to),
        _ => Err(e),
    }
}

/// Takes `file`'s exclusive lock without waiting: on Windows a lock on one byte past
/// any data (`crate::sys::windows::try_lock`), which readers of the file do not feel.
/// `Ok(false)`: another writer (or a housekeeper) holds it. The handle needs read or
/// write access (an append-only handle cannot lock there).
#[cfg(windows)]
pub(super) fn try_lock_exclusive(file: &File) -> io::Result<bool> {
    crate::sys::windows::try_lock(file, true)
}

/// Takes `file`'s exclusive `flock` without waiting. `Ok(false)`: another writer (or a
/// housekeeper) holds it.
#[cfg(unix)]
pub(super) fn try_lock_exclusive(file: &File) -> io::Result<bool> {
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
