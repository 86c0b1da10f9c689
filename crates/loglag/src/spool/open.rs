//! Opening a spool file: never through a symlink, created `0600`, owned by this user,
//! `flock`ed against a second live process, its blocks allocated and its capacity read
//! and checked against its length; then mapped and handed to recovery. What is no
//! regular file, or empty, is refused without waiting on it. A spool file this open
//! created and then refused (too large a capacity, no room on the disk) is removed;
//! one that was there before never is.
//!
//! On Windows: a symbolic link is refused as on unix; the lock is one byte past the
//! data (`crate::sys::windows::try_lock`); there is no owner or mode to check (the file
//! takes its directory's ACL); the blocks are allocated by growing the file, which
//! NTFS allocates (it is not sparse).

use std::fs::OpenOptions;
use std::io;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use super::header::{SpoolHeader, SpoolRegion, HEADER_BYTES, MAGIC, READS_VERSIONS};
use super::recovery::{resume, Recovered};
use super::{invalid, spool_error, SpoolErrorKind, SpoolSync, MAX_CAPACITY};
use crate::queue::Ring;
use crate::sink::backoff::{Backoff, Retry};
use crate::sink::Sink;

/// Opens (or creates) the spool at `path`, delivers whatever a previous process left in
/// it to `sink`, and returns a ring over it, ready for new records.
pub(crate) fn open(
    path: &Path,
    capacity: usize,
    sink: &mut dyn Sink,
    sync: SpoolSync,
) -> io::Result<(Ring, SpoolHeader, Recovered)> {
    open_with(path, Some(capacity), sink, sync)
}

/// `create`: the capacity of a new spool; `None` only opens an existing one.
///
/// A spool file this call created and then refused (a capacity above the maximum, a
/// disk without room for it) is removed, so that a refusal at start leaves nothing
/// behind. A file that was there before is never removed, even empty: a spool from a
/// previous run holds records to recover.
pub(super) fn open_with(
    path: &Path,
    create: Option<usize>,
    sink: &mut dyn Sink,
    sync: SpoolSync,
) -> io::Result<(Ring, SpoolHeader, Recovered)> {
    let (file, len, created) = open_locked(
        path,
        Access::Write {
            create: create.is_some(),
        },
    )?;
    // Ours to remove if refused: created by this call and still empty once locked (a
    // process that locked it first and made it a spool makes it not ours).
    let ours = match created && len == 0 {
        true => crate::sys::file_id(&file).ok(),
        false => None,
    };
    let opened = open_locked_file(path, file, len, create, sink, sync);
    if let (Err(_), Some(id)) = (&opened, ours) {
        // The file is closed (and unlocked) by now. Removed only if the path still
        // names it: never a file another process put there since.
        if crate::sys::path_id(path).is_ok_and(|now| now == id) {
            let _ = std::fs::remove_file(path);
        }
    }
    opened
}

/// [`open_with`] once the file is open and locked.
fn open_locked_file(
    path: &Path,
    file: std::fs::File,
    len: u64,
    create: Option<usize>,
    sink: &mut dyn Sink,
    sync: SpoolSync,
) -> io::Result<(Ring, SpoolHeader, Recovered)> {
    let fresh = len == 0;
    let capacity = match (fresh, create) {
        (true, Some(capacity)) => {
            let capacity = new_capacity(capacity)?;
            check_ownership(&file, path)?;
            capacity
        }
        (true, None) => return Err(empty_spool(path)),
        (false, _) => existing_capacity(&file, path, len)?,
    };
    // A pipeline allocates every block now: a mapped file that cannot get a block later
    // kills the process with SIGBUS on a full disk. An error here is an ordinary error.
    // Recovery alone does not: it writes only the header and the words of the records
    // it finds, which are in blocks the file already has, so a sparse spool (copied
    // with its holes, or from a file system without fallocate) keeps its holes rather
    // than filling up to its full capacity on disk.
    if create.is_some() {
        allocate(&file, HEADER_BYTES + capacity).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot allocate {} bytes for spool {}: {e}",
                    HEADER_BYTES + capacity,
                    path.display()
                ),
            )
        })?;
    }
    // SAFETY: the spool file is ours (flocked); the header documents that it must not
    // be shared by two live processes.
    let mut map = unsafe { memmap2::MmapMut::map_mut(&file)? };
    let base = NonNull::new(map.as_mut_ptr() as *mut AtomicU64).expect("mapping is non-null");
    let (position, recovered) = {
        // SAFETY: the header and the ring, `HEADER_BYTES + capacity` bytes of the
        // mapping (the file is at least that long), page-aligned; nothing else touches
        // them until the region is dropped.
        let words = unsafe {
            std::slice::from_raw_parts_mut(base.as_ptr(), ((HEADER_BYTES + capacity) / 8) as usize)
        };
        let mut region = SpoolRegion::new(words);
        if fresh {
            region.header().init(capacity);
        }
        resume(&mut region, sink, path)?
    };
    map.flush_async()?;
    // SAFETY: the mapping outlives the header: the `Core` holds both it and the ring
    // that owns the mapping.
    let header = unsafe { SpoolHeader::at(base, sync) };
    // SAFETY: the ring area follows the header inside the mapping.
    let ring_base = unsafe { NonNull::new_unchecked(base.as_ptr().add(HEADER_BYTES as usize / 8)) };
    // SAFETY: the ring area is zeroed (by `resume`) and belongs to this ring only.
    let ring = unsafe { Ring::mapped(ring_base, capacity, position, map, file) };
    Ok((ring, header, recovered))
}

/// The ring capacity of a new spool asked for `requested` bytes: whole 8-byte words,
/// at least one, at most [`MAX_CAPACITY`].
pub(super) fn new_capacity(requested: usize) -> io::Result<u64> {
    let capacity = ((requested as u64) / 8).max(8) * 8;
    if capacity > MAX_CAPACITY {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("spool capacity {capacity} bytes is above the maximum of {MAX_CAPACITY}"),
        ));
    }
    Ok(capacity)
}

/// Refuses what is no regular file. Windows has no owner and mode to check: the file
/// takes its directory's ACL.
#[cfg(windows)]
fn check_ownership(file: &std::fs::File, path: &Path) -> io::Result<()> {
    if !file.metadata()?.is_file() {
        return Err(invalid(
            path,
            SpoolErrorKind::Permissions,
            "a spool must be a regular file",
        ));
    }
    Ok(())
}

/// Refuses a spool owned by someone else or open to other users.
#[cfg(unix)]
fn check_ownership(file: &std::fs::File, path: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(invalid(
            path,
            SpoolErrorKind::Permissions,
            "a spool must be a regular file",
        ));
    }
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(spool_error(
            path,
            SpoolErrorKind::Permissions,
            format!(
                "spool {} is owned by uid {}, not by this user (uid {me}); refusing to trust it. Recover it as its owner, or `chown` it",
                path.display(),
                meta.uid()
            ),
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(spool_error(
            path,
            SpoolErrorKind::Permissions,
            format!(
                "spool {} has mode {mode:04o}: other users can read the queued records. Run `chmod 600 {}`",
                path.display(),
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Reserves the file's blocks (`F_PREALLOCATE`, macOS has no `posix_fallocate`), then
/// grows it to `len`, so a full disk shows here rather than as SIGBUS on a later store.
#[cfg(target_vendor = "apple")]
fn allocate(file: &std::fs::File, len: u64) -> io::Result<()> {
    let have = file.metadata()?.len();
    if have >= len {
        return Ok(());
    }
    let more = libc::off_t::try_from(len - have)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "spool too large"))?;
    let mut store = libc::fstore_t {
        fst_flags: libc::F_ALLOCATEALL,
        fst_posmode: libc::F_PEOFPOSMODE,
        fst_offset: 0,
        fst_length: more,
        fst_bytesalloc: 0,
    };
    // SAFETY: fcntl(F_PREALLOCATE) on a descriptor we own, with a valid fstore_t.
    let rc = unsafe {
        libc::fcntl(
            std::os::fd::AsRawFd::as_raw_fd(file),
            libc::F_PREALLOCATE,
            &mut store,
        )
    };
    if rc == -1 {
        let e = io::Error::last_os_error();
        // A file system without preallocation: a sparse file (and SIGBUS risk).
        if !matches!(e.raw_os_error(), Some(libc::ENOTSUP | libc::EINVAL)) {
            return Err(e);
        }
    }
    file.set_len(len)
}

/// Reserves the file's blocks (`posix_fallocate`), growing it to `len` if shorter.
#[cfg(all(unix, not(target_vendor = "apple")))]
fn allocate(file: &std::fs::File, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "spool too large"))?;
    // SAFETY: fallocate on a descriptor we own.
    let rc = unsafe { libc::posix_fallocate(std::os::fd::AsRawFd::as_raw_fd(file), 0, len) };
    match rc {
        0 => Ok(()),
        // A file system without fallocate: fall back to a sparse file (and SIGBUS risk).
        libc::EOPNOTSUPP | libc::EINVAL => file.set_len(len as u64),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

/// Grows the file to `len` if shorter: NTFS allocates the blocks of what a file
/// grows by (it is not sparse), so a full disk shows here, not at a later store.
#[cfg(windows)]
fn allocate(file: &std::fs::File, len: u64) -> io::Result<()> {
    if file.metadata()?.len() < len {
        file.set_len(len)?;
    }
    Ok(())
}

fn read_capacity(file: &std::fs::File, path: &Path) -> io::Result<u64> {
    let mut head = [0u8; 24];
    crate::sys::read_exact_at(file, &mut head, 0).map_err(|e| {
        invalid(
            path,
            SpoolErrorKind::NotASpool,
            format!("not a loglag spool (cannot read a spool header: {e})"),
        )
    })?;
    let word = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    if word(0) != MAGIC {
        return Err(invalid(
            path,
            SpoolErrorKind::NotASpool,
            "not a loglag spool (bad magic); refusing to overwrite it",
        ));
    }
    if !READS_VERSIONS.contains(&word(1)) {
        return Err(invalid(
            path,
            SpoolErrorKind::Version,
            format!(
                "spool layout version {} is not supported (this build reads {:?})",
                word(1),
                READS_VERSIONS
            ),
        ));
    }
    let capacity = word(2);
    if capacity < 64 || capacity % 8 != 0 || capacity > MAX_CAPACITY {
        return Err(invalid(
            path,
            SpoolErrorKind::Corrupt,
            format!("corrupt spool: implausible capacity {capacity}"),
        ));
    }
    Ok(capacity)
}

/// Checks, read-only, that `path` is a spool no live process holds, whose header
/// and length agree. Returns its identity.
pub(super) fn check(path: &Path) -> io::Result<(u64, u64)> {
    let (file, len, _) = open_locked(path, Access::Look)?;
    if len == 0 {
        return Err(empty_spool(path));
    }
    existing_capacity(&file, path, len)?;
    crate::sys::file_id(&file)
}

/// How a spool file is opened: to write it (one process at a time), or to look.
#[derive(Clone, Copy)]
enum Access {
    Write { create: bool },
    Look,
}

/// Opens the spool (never through a symlink; created `0600`: it holds every queued
/// record, secrets included) and locks it: exclusively to write it, shared to look, so
/// that a live writer makes either fail. The lock goes with the process, however it
/// ends. Returns the file, its length, and whether this call created it.
fn open_locked(path: &Path, access: Access) -> io::Result<(std::fs::File, u64, bool)> {
    let (write, create, exclusive) = match access {
        Access::Write { create } => (true, create, true),
        Access::Look => (false, false, false),
    };
    // What is no regular file is refused before it is opened: opening a FIFO for
    // reading waits for a writer, and opening a device can act on it. A symlink is
    // left to O_NOFOLLOW below, which says so.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.is_file() && !meta.file_type().is_symlink() {
            return Err(not_a_regular_file(path, &meta));
        }
    }
    let (file, created) = open_no_follow(path, write, create)?;
    // A lock this process released a moment ago can still be held by a child another
    // thread forked in between, until that child calls exec (its copy of the
    // descriptor is close-on-exec, and a flock belongs to the shared open file): a
    // multi-threaded program that spawns processes sees this. So a held lock is
    // retried, 1 ms first and doubling to 128 ms, for up to 300 ms before the spool is
    // called in use. (On Windows a killed process's locks go a moment after it does.)
    let mut retry = Retry::for_up_to(
        Backoff::new(Duration::from_millis(1), Duration::from_millis(128)),
        Duration::from_millis(300),
    );
    let mut locked = try_lock(&file, exclusive);
    while !locked && retry.wait() {
        locked = try_lock(&file, exclusive);
    }
    if !locked {
        let e = io::Error::last_os_error();
        return Err(spool_error(
            path,
            SpoolErrorKind::InUse,
            format!(
                "spool {} is in use by another process ({e}); recover it after that process ends",
                path.display()
            ),
        ));
    }
    // The length once locked: another process may have created the spool meanwhile.
    let len = file.metadata()?.len();
    Ok((file, len, created))
}

/// Takes the spool's lock without waiting: exclusive to write it, shared to look
/// (`flock`; on Windows a lock on one byte past the data). `false` when held, or when
/// the file system has no locks: a spool two processes could write is refused.
fn try_lock(file: &std::fs::File, exclusive: bool) -> bool {
    crate::sys::try_lock(file, exclusive).unwrap_or(false)
}

/// `open(true)` creates the file only if there is none (`O_EXCL`), `open(false)`
/// opens what is there: with `create`, the first, then the second if a file was
/// there, a few times over should it come and go in between. Returns the file and
/// whether it was created.
fn create_or_open(
    create: bool,
    open: impl Fn(bool) -> io::Result<std::fs::File>,
) -> io::Result<(std::fs::File, bool)> {
    if !create {
        return open(false).map(|f| (f, false));
    }
    let mut tries = 0;
    loop {
        tries += 1;
        match open(true) {
            Ok(file) => return Ok((file, true)),
            Err(e) if e.kind() != io::ErrorKind::AlreadyExists => return Err(e),
            Err(_) => {}
        }
        match open(false) {
            Ok(file) => return Ok((file, false)),
            Err(e) if e.kind() == io::ErrorKind::NotFound && tries < 4 => {}
            Err(e) => return Err(e),
        }
    }
}

/// Opens the spool without following a symlink, created `0600` (Windows has no mode:
/// the file takes its directory's ACL), and refuses what is no regular file. Also
/// returns whether it created it.
fn open_no_follow(path: &Path, write: bool, create: bool) -> io::Result<(std::fs::File, bool)> {
    // `crate::sys::open_no_follow` opens without waiting: should the path become a
    // FIFO after the caller's look, the open returns at once, and what was opened is
    // checked again below.
    let (file, created) = create_or_open(create, |new| {
        let mut options = OpenOptions::new();
        options
            .read(true)
            .write(write)
            .create_new(new)
            .truncate(false);
        crate::sys::open_no_follow(crate::sys::create_mode(&mut options, 0o600), path)
    })
    .map_err(|e| {
        let hint = if crate::sys::is_link_refusal(&e) {
            " (it is a symlink; a spool must be a regular file)"
        } else {
            ""
        };
        io::Error::new(
            e.kind(),
            format!("cannot open spool {}: {e}{hint}", path.display()),
        )
    })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_a_regular_file(path, &meta));
    }
    Ok((file, created))
}

/// The refusal of a path that is no regular file, saying what it is.
fn not_a_regular_file(path: &Path, meta: &std::fs::Metadata) -> io::Error {
    #[cfg(unix)]
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    #[cfg(windows)]
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "of an unknown kind"
    };
    #[cfg(unix)]
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "of an unknown kind"
    };
    invalid(
        path,
        SpoolErrorKind::Permissions,
        format!("{what}, not a regular file; a spool must be a regular file"),
    )
}

fn empty_spool(path: &Path) -> io::Error {
    invalid(
        path,
        SpoolErrorKind::NotASpool,
        "not a loglag spool (the file is empty); nothing to recover",
    )
}

/// The ring capacity of an existing spool of `len` bytes, once its header, owner and
/// length agree. The header first, so that a file that is no spool at all says so.
fn existing_capacity(file: &std::fs::File, path: &Path, len: u64) -> io::Result<u64> {
    let capacity = read_capacity(file, path)?;
    check_ownership(file, path)?;
    if len < HEADER_BYTES + capacity {
        return Err(invalid(
            path,
            SpoolErrorKind::Corrupt,
            format!(
                "spool is {len} bytes, shorter than its header says ({})",
                HEADER_BYTES + capacity
            ),
        ));
    }
    Ok(capacity)
}

/// Recovers a spool without the application: writes every record it still holds to
/// `sink`, in order, and marks them delivered. What `loglag recover` runs.
///
/// ```no_run
/// let report = loglag::spool::recover("/var/spool/app.loglag", loglag::sink::FdSink::stdout())?;
/// eprintln!("{} records recovered, {} torn regions skipped", report.records, report.torn);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn recover(path: impl AsRef<Path>, sink: impl Sink) -> io::Result<Recovered> {
    recover_opening(path, || Ok(sink))
}

/// [`recover`], with the sink opened only once the spool has been found valid (so that
/// recovering a path that is no spool creates no empty output file), and refused when
/// the sink is the spool file itself.
pub fn recover_opening<S: Sink>(
    path: impl AsRef<Path>,
    open_sink: impl FnOnce() -> io::Result<S>,
) -> io::Result<Recovered> {
    let path = path.as_ref();
    if !path.exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no spool at {}", path.display()),
        ));
    }
    let spool_id = check(path)?;
    let mut sink = open_sink()?;
    if crate::sink::place(&mut sink).1 == Some(spool_id) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the output is the spool {} itself; recover into another file",
                path.display()
            ),
        ));
    }
    let (_ring, _header, recovered) = open_with(path, None, &mut sink, SpoolSync::Never)?;
    Ok(recovered)
}
