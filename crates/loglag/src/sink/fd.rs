use std::fs::{File, OpenOptions};
use std::io;
#[cfg(unix)]
use std::os::fd::AsRawFd;
#[cfg(unix)]
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

use super::{FileSink, RawDescriptor, Sink};

/// A sink that is a file descriptor: each `write` is exactly one `write(2)`.
///
/// On Windows it is a handle: each `write` is one `WriteFile` (standard output and
/// error go through std's `Stdout` and `Stderr`, which write a console in UTF-16), and
/// there are no FIFOs and no file modes (see [`FdSink::fifo`],
/// [`FdSink::append_with_mode`]).
///
/// ```no_run
/// use loglag::sink::FdSink;
/// let file = FdSink::append("/var/log/app.log")?;
/// let fifo = FdSink::fifo("/run/app.fifo", Some(1 << 20))?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct FdSink {
    /// The descriptor; on Windows 1 or 2 for standard output or error, -1 for a file
    /// (which `_owned` holds).
    fd: RawDescriptor,
    /// Keeps the descriptor open for files and FIFOs; `None` for stdout/stderr.
    _owned: Option<File>,
    /// A FIFO to reopen when its reader has gone (EPIPE) and a new one arrives.
    #[cfg_attr(not(unix), allow(dead_code))]
    reopen: Option<(std::path::PathBuf, Option<usize>)>,
    /// What `fd` refers to (device, inode), read once when it was opened.
    #[cfg_attr(not(unix), allow(dead_code))]
    id: (u64, u64),
}

impl FdSink {
    /// Standard output, unbuffered (bypasses Rust's line buffer so one batch is one write).
    pub fn stdout() -> FdSink {
        FdSink::of(1, None)
    }

    /// Standard error, unbuffered.
    pub fn stderr() -> FdSink {
        FdSink::of(2, None)
    }

    /// A file opened for appending, created if missing with mode `0o666` minus the
    /// umask (as `File::create`; the spool, by contrast, is always `0o600`).
    pub fn append(path: impl AsRef<Path>) -> io::Result<FdSink> {
        FdSink::append_with_mode(path, 0o666)
    }

    /// A file opened for appending, created if missing with `mode` minus the umask
    /// (`0o640` to let a log group read it). An existing file keeps its mode.
    ///
    /// Windows has no file modes (a new file takes its directory's ACL): there `0o666`
    /// is [`append`](Self::append) and any other mode is an `Unsupported` error.
    pub fn append_with_mode(path: impl AsRef<Path>, mode: u32) -> io::Result<FdSink> {
        let path = path.as_ref();
        #[cfg(not(unix))]
        if mode & 0o7777 != 0o666 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "cannot create log file {} with mode {:04o}: file modes are unix permissions, \
                     and Windows has none (a new file takes its directory's ACL)",
                    path.display(),
                    mode & 0o7777
                ),
            ));
        }
        let mut options = OpenOptions::new();
        options.append(true).create(true);
        let file = crate::sys::create_mode(&mut options, mode & 0o7777)
            .open(path)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot open log file {}: {e}", path.display()),
                )
            })?;
        Ok(FdSink::from_file(file))
    }

    /// A FIFO or pipe. Opening blocks until a reader opens the other end, as FIFOs do.
    /// `pipe_size` asks the kernel for that capacity with `F_SETPIPE_SZ`.
    ///
    /// Unix only: Windows has no FIFOs, and this is an `Unsupported` error there.
    #[cfg(not(unix))]
    pub fn fifo(path: impl AsRef<Path>, _pipe_size: Option<usize>) -> io::Result<FdSink> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "cannot open FIFO {}: FIFOs (named pipes of the file system) are unix-only; \
                 Windows has none",
                path.as_ref().display()
            ),
        ))
    }

    /// A FIFO or pipe. Opening blocks until a reader opens the other end, as FIFOs do.
    /// `pipe_size` asks the kernel for that capacity with `F_SETPIPE_SZ`.
    ///
    /// Unix only: Windows has no FIFOs, and this is an `Unsupported` error there.
    #[cfg(unix)]
    pub fn fifo(path: impl AsRef<Path>, pipe_size: Option<usize>) -> io::Result<FdSink> {
        let path = path.as_ref();
        let meta = std::fs::metadata(path).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot stat FIFO {}: {e}", path.display()),
            )
        })?;
        if !meta.file_type().is_fifo() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a FIFO", path.display()),
            ));
        }
        let file = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open(path)
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot open FIFO {}: {e}", path.display()),
                )
            })?;
        if let Some(size) = pipe_size {
            set_pipe_size(&file, size)?;
        }
        Ok(FdSink::from_file(file))
    }

    /// Like [`fifo`](Self::fifo), but when the reader goes away (writes fail with
    /// EPIPE, counted as I/O errors) it reopens the FIFO as soon as a new reader has it
    /// open, without ever blocking the writer thread on the open. Unix only, as
    /// [`fifo`](Self::fifo).
    pub fn fifo_reopening(path: impl AsRef<Path>, pipe_size: Option<usize>) -> io::Result<FdSink> {
        let mut sink = FdSink::fifo(&path, pipe_size)?;
        sink.reopen = Some((path.as_ref().to_owned(), pipe_size));
        Ok(sink)
    }

    /// Opens the FIFO again if a reader has it open now (never blocks).
    #[cfg(unix)]
    fn try_reopen(&mut self) -> bool {
        let Some((path, pipe_size)) = &self.reopen else {
            return false;
        };
        let Ok(file) = OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
        else {
            return false; // ENXIO: no reader yet
        };
        // SAFETY: fcntl on a descriptor we own; clears O_NONBLOCK so writes block as usual.
        unsafe {
            let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
            libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
        if let Some(size) = pipe_size {
            let _ = set_pipe_size(&file, *size);
        }
        self.fd = file.as_raw_fd();
        self.id = crate::sys::fork::fd_identity(self.fd).map_or((0, 0), |(id, _)| id);
        self._owned = Some(file);
        true
    }

    /// Wraps an open file (or the write end of a pipe).
    #[cfg(unix)]
    pub fn from_file(file: File) -> FdSink {
        FdSink::of(file.as_raw_fd(), Some(file))
    }

    /// Wraps an open file (or the write end of a pipe).
    #[cfg(windows)]
    pub fn from_file(file: File) -> FdSink {
        let id = crate::sys::file_id(&file).unwrap_or((0, 0));
        FdSink {
            fd: -1,
            _owned: Some(file),
            reopen: None,
            id,
        }
    }

    #[cfg(not(unix))]
    fn of(fd: RawDescriptor, owned: Option<File>) -> FdSink {
        FdSink {
            fd,
            _owned: owned,
            reopen: None,
            id: (0, 0),
        }
    }

    #[cfg(unix)]
    fn of(fd: RawDescriptor, owned: Option<File>) -> FdSink {
        FdSink {
            fd,
            _owned: owned,
            reopen: None,
            id: crate::sys::fork::fd_identity(fd).map_or((0, 0), |(id, _)| id),
        }
    }
}

/// Sets a pipe's capacity with `F_SETPIPE_SZ`; returns the capacity the kernel chose.
/// Linux only: elsewhere a pipe's capacity is fixed, and this says so.
#[cfg(not(target_os = "linux"))]
pub fn set_pipe_size(_file: &File, size: usize) -> io::Result<usize> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("cannot set a pipe's size to {size} bytes: only Linux can (F_SETPIPE_SZ)"),
    ))
}

/// Sets a pipe's capacity with `F_SETPIPE_SZ`; returns the capacity the kernel chose.
#[cfg(target_os = "linux")]
pub fn set_pipe_size(file: &File, size: usize) -> io::Result<usize> {
    // A size past c_int is one the kernel would refuse anyway; say so rather than wrap.
    let size = libc::c_int::try_from(size).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("pipe size {size} is larger than a pipe can be"),
        )
    })?;
    // SAFETY: fcntl on a valid descriptor with an integer argument.
    let got = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETPIPE_SZ, size) };
    if got < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(got as usize)
}

impl FdSink {
    fn regular_file(&self) -> Option<&File> {
        self._owned
            .as_ref()
            .filter(|f| f.metadata().is_ok_and(|m| m.is_file()))
    }
}

impl super::sealed::Sealed for FdSink {}

impl FileSink for FdSink {
    #[cfg(unix)]
    fn descriptor(&self) -> Option<(RawDescriptor, (u64, u64))> {
        Some((self.fd, self.id))
    }

    /// No `fork` on Windows: no child ever writes to a descriptor.
    #[cfg(not(unix))]
    fn descriptor(&self) -> Option<(RawDescriptor, (u64, u64))> {
        None
    }

    fn identity(&mut self) -> Option<(u64, u64)> {
        crate::sys::file_id(self.regular_file()?).ok()
    }

    /// Windows' handles here are never non-blocking: the default, which does not wait.
    #[cfg(unix)]
    fn wait_writable(&mut self, timeout: std::time::Duration) -> bool {
        let mut pfd = libc::pollfd {
            fd: self.fd,
            events: libc::POLLOUT,
            revents: 0,
        };
        let ms = timeout.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd for the duration of the call.
        let n = unsafe { libc::poll(&mut pfd, 1, ms) };
        // EINTR (n < 0) is worth a retry too; the caller's deadline still bounds it.
        n != 0 && pfd.revents & libc::POLLNVAL == 0
    }

    fn position(&mut self) -> Option<u64> {
        let meta = self._owned.as_ref()?.metadata().ok()?;
        meta.is_file().then_some(meta.len())
    }

    fn truncate_to(&mut self, len: u64) -> io::Result<()> {
        match self.regular_file() {
            Some(f) => f.set_len(len),
            None => Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "only a regular file can be truncated",
            )),
        }
    }

    fn sync(&mut self) -> io::Result<()> {
        match self.regular_file() {
            Some(f) => f.sync_data(),
            None => Ok(()),
        }
    }
}

impl Sink for FdSink {
    fn as_file(&mut self) -> Option<&mut dyn FileSink> {
        Some(self)
    }

    #[cfg(not(unix))]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        use std::io::Write;
        match (&self._owned, self.fd) {
            (Some(file), _) => (&*file).write(buf),
            // Line-buffered by std: a batch of whole lines goes out in one call.
            (None, 1) => io::stdout().lock().write(buf),
            (None, _) => io::stderr().lock().write(buf),
        }
    }

    /// Standard output is line-buffered by std on Windows: a batch that does not end
    /// in a newline waits there until this.
    #[cfg(not(unix))]
    fn flush(&mut self) -> io::Result<()> {
        use std::io::Write;
        match (&self._owned, self.fd) {
            (None, 1) => io::stdout().lock().flush(),
            _ => Ok(()),
        }
    }

    #[cfg(unix)]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut reopened = false;
        loop {
            // SAFETY: `buf` is valid for reads of its length; the descriptor is open.
            let n = unsafe { libc::write(self.fd, buf.as_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(n as usize);
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() == Some(libc::EPIPE) && !reopened && self.try_reopen() {
                reopened = true;
                continue;
            }
            return Err(e);
        }
    }
}
