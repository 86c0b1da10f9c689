//! Unix's half of the file calls whose steps differ by platform: opening a name
//! without following a link, a rename that never replaces (or swaps two names), a lock
//! taken without waiting, a file's identity and names, and reading at an offset.
//! `windows.rs` has each under the same name and signature, and `sys/mod.rs` publishes
//! whichever is built; the rest of the crate calls them and has no `cfg` of its own
//! for these steps. A leaf: it knows nothing of the rest of the crate.

use std::fs::{File, Metadata, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::Identity;

/// Opens `path` with `options`, refusing a symbolic link (`O_NOFOLLOW`, which fails
/// with `ELOOP`: [`is_link_refusal`]), close-on-exec. It is opened `O_NONBLOCK`, so
/// that a FIFO put at the name answers at once rather than waiting for its other end,
/// and that flag is cleared before the file is returned: a caller that wanted a
/// regular file checks what it got, and the descriptor is the ordinary one.
pub(crate) fn open_no_follow(options: &mut OpenOptions, path: &Path) -> io::Result<File> {
    let file = options
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)?;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own.
    let cleared = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags != -1 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) != -1
    };
    if !cleared {
        return Err(io::Error::last_os_error());
    }
    Ok(file)
}

/// Whether [`open_no_follow`] failed because the name is a symbolic link.
pub(crate) fn is_link_refusal(e: &io::Error) -> bool {
    e.raw_os_error() == Some(libc::ELOOP)
}

/// The permission bits a file gets if `options` creates it (less the umask).
pub(crate) fn create_mode(options: &mut OpenOptions, mode: u32) -> &mut OpenOptions {
    options.mode(mode)
}

/// A file's permission bits, which a compressed copy inherits.
pub(crate) fn mode_bits(meta: &Metadata) -> u32 {
    meta.mode()
}

/// A file's modification time, from the raw fields: `modified()` can fail where
/// `st_mtime` cannot (a time before the epoch).
pub(crate) fn modified(meta: &Metadata) -> SystemTime {
    if meta.mtime() >= 0 {
        UNIX_EPOCH + Duration::new(meta.mtime() as u64, meta.mtime_nsec() as u32)
    } else {
        UNIX_EPOCH - Duration::from_secs(meta.mtime().unsigned_abs())
            + Duration::from_nanos(meta.mtime_nsec() as u64)
    }
}

/// An open file's metadata and identity (`fstat`).
pub(crate) fn stat_file(file: &File) -> io::Result<(Metadata, Identity)> {
    let meta = file.metadata()?;
    let identity = identity(&meta);
    Ok((meta, identity))
}

/// What `path` names, not following a link (`lstat`): its metadata and identity.
pub(crate) fn stat_path(path: &Path) -> io::Result<(Metadata, Identity)> {
    let meta = std::fs::symlink_metadata(path)?;
    let identity = identity(&meta);
    Ok((meta, identity))
}

fn identity(meta: &Metadata) -> Identity {
    Identity {
        id: (meta.dev(), meta.ino()),
        links: meta.nlink(),
    }
}

/// Takes `file`'s `flock` without waiting, exclusive or shared. `Ok(false)`: another
/// open file holds it. An error the file system gives for having no locks at all is
/// [`locks_unsupported`].
pub(crate) fn try_lock(file: &File, exclusive: bool) -> io::Result<bool> {
    let lock = if exclusive {
        libc::LOCK_EX
    } else {
        libc::LOCK_SH
    };
    loop {
        // SAFETY: flock on a descriptor the caller owns.
        if unsafe { libc::flock(file.as_raw_fd(), lock | libc::LOCK_NB) } == 0 {
            return Ok(true);
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EWOULDBLOCK) => return Ok(false),
            Some(libc::EINTR) => continue,
            _ => return Err(e),
        }
    }
}

/// Whether [`try_lock`] failed because the file system has no locks (some network
/// mounts).
pub(crate) fn locks_unsupported(e: &io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::ENOLCK | libc::EOPNOTSUPP | libc::ENOSYS)
    )
}

/// `pread` of exactly `buf.len()` bytes at `offset`.
pub(crate) fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    file.read_exact_at(buf, offset)
}

fn c_path(p: &Path) -> io::Result<std::ffi::CString> {
    use std::os::unix::ffi::OsStrExt;
    std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(io::Error::other)
}

/// `rename(2)` that fails with `AlreadyExists` instead of replacing `to`
/// (`renameat2(RENAME_NOREPLACE)`); `link(2)` then `unlink(2)` where the file system
/// cannot.
#[cfg(any(target_os = "linux", target_os = "android"))]
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (f, t) = (c_path(from)?, c_path(to)?);
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
        Some(libc::EINVAL | libc::ENOSYS) => link_then_unlink(from, to),
        _ => Err(e),
    }
}

/// `rename(2)` that fails with `AlreadyExists` instead of replacing `to`: macOS's
/// `renamex_np(RENAME_EXCL)`; `link(2)` then `unlink(2)` where the file system cannot.
#[cfg(target_vendor = "apple")]
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    let (f, t) = (c_path(from)?, c_path(to)?);
    // SAFETY: both are valid NUL-terminated paths.
    let r = unsafe { libc::renamex_np(f.as_ptr(), t.as_ptr(), libc::RENAME_EXCL) };
    if r == 0 {
        return Ok(());
    }
    let e = io::Error::last_os_error();
    match e.raw_os_error() {
        Some(libc::ENOTSUP | libc::EINVAL) => link_then_unlink(from, to),
        _ => Err(e),
    }
}

/// Neither Linux nor macOS: no rename that refuses to replace.
#[cfg(not(any(target_os = "linux", target_os = "android", target_vendor = "apple")))]
pub(crate) fn rename_noreplace(from: &Path, to: &Path) -> io::Result<()> {
    link_then_unlink(from, to)
}

/// `link(2)` refuses to replace (it fails with `AlreadyExists`), then the old name goes.
fn link_then_unlink(from: &Path, to: &Path) -> io::Result<()> {
    std::fs::hard_link(from, to)?;
    std::fs::remove_file(from)
}

/// Swaps two names in one step (`renameat2(RENAME_EXCHANGE)`); where the platform or
/// file system cannot, an error [`no_exchange`] recognises.
#[cfg(target_os = "linux")]
pub(crate) fn rename_exchange(a: &Path, b: &Path) -> io::Result<()> {
    let (a, b) = (c_path(a)?, c_path(b)?);
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
pub(crate) fn rename_exchange(_a: &Path, _b: &Path) -> io::Result<()> {
    Err(io::Error::from_raw_os_error(libc::ENOSYS))
}

/// Whether [`rename_exchange`] failed because the platform or file system cannot.
pub(crate) fn no_exchange(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EINVAL | libc::ENOSYS))
}
