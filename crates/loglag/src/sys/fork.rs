//! Knowing that this process is a `fork()` of the one that built a pipeline.
//!
//! A forked child has a copy of the parent's memory but none of its threads: no writer
//! thread drains the ring, and in spool mode the ring is a *shared* mapping that the
//! parent's writer is reading. So a child must never push into the ring. A
//! `pthread_atfork` handler bumps a generation counter in every child; a pipeline built
//! in another generation knows it runs in a forked child with one relaxed load.
//!
//! Windows has no `fork`: there the generation never changes, and the descriptor
//! functions, which only a forked child calls, say so.

use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(unix)]
use std::sync::Once;

static GENERATION: AtomicU64 = AtomicU64::new(0);
#[cfg(unix)]
static WATCHING: Once = Once::new();

#[cfg(unix)]
extern "C" fn in_child() {
    // Async-signal-safe: one atomic add.
    GENERATION.fetch_add(1, Ordering::Relaxed);
}

/// Starts counting forks (once per process) and returns the current generation.
pub(crate) fn watch() -> u64 {
    #[cfg(unix)]
    WATCHING.call_once(|| {
        // SAFETY: registers a handler that only does an atomic add. A failure (ENOMEM)
        // leaves forks undetected, as before this module existed.
        unsafe {
            libc::pthread_atfork(None, None, Some(in_child));
        }
    });
    generation()
}

/// How many forks separate this process from the first one that watched.
pub(crate) fn generation() -> u64 {
    GENERATION.load(Ordering::Relaxed)
}

/// Writes all of `buf` to `fd` with `write(2)`, retrying on EINTR and short writes.
#[cfg(unix)]
pub(crate) fn write_all_fd(fd: i32, mut buf: &[u8]) -> std::io::Result<()> {
    while !buf.is_empty() {
        // SAFETY: writes from a live slice to a descriptor the sink owns.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        buf = &buf[n as usize..];
    }
    Ok(())
}

/// The (device, inode) of what `fd` refers to, and whether it still has a name (a
/// regular file with no links left has been deleted).
#[cfg(unix)]
pub(crate) fn fd_identity(fd: i32) -> Option<((u64, u64), bool)> {
    // SAFETY: fstat into a stat we own; a closed descriptor just fails.
    unsafe {
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) != 0 {
            return None;
        }
        let regular = st.st_mode & libc::S_IFMT == libc::S_IFREG;
        // `st_dev` is signed on some platforms (macOS): the bits are the identity.
        Some((
            (st.st_dev as u64, st.st_ino as u64),
            !regular || st.st_nlink > 0,
        ))
    }
}

/// Writes `message` to standard error with one `write(2)`: no lock that a thread of
/// the parent may have held at the fork.
#[cfg(unix)]
pub(crate) fn say(message: &str) {
    let _ = write_all_fd(2, message.as_bytes());
}

/// No `fork` on Windows: nothing is ever written to a descriptor from here.
#[cfg(not(unix))]
pub(crate) fn write_all_fd(_fd: i32, _buf: &[u8]) -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no fork() on this platform: a forked child's direct writes are unix-only",
    ))
}

/// No `fork` on Windows, so no descriptor to look at.
#[cfg(not(unix))]
pub(crate) fn fd_identity(_fd: i32) -> Option<((u64, u64), bool)> {
    None
}

/// Writes `message` to standard error.
#[cfg(not(unix))]
pub(crate) fn say(message: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(message.as_bytes());
}

/// Called first on every thread loglag starts (the writer, rolling housekeeping, the
/// Prometheus endpoint and its connections, the flush and metrics helpers): blocks the
/// asynchronous signals there, so that a process-directed signal (`kill -USR1 PID`) is
/// delivered to one of the application's threads, never to one of loglag's. A handler
/// that logs would otherwise run on a thread that never logged (its first record
/// allocates) or that is inside the writer's own code. The synchronous signals a fault
/// raises (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS) and SIGABRT stay
/// unblocked: blocked, they would kill the process without its handlers.
#[cfg(unix)]
pub(crate) fn block_async_signals() {
    // SAFETY: sigset operations on a local set, then this thread's own mask.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut set);
        for fault in [
            libc::SIGSEGV,
            libc::SIGBUS,
            libc::SIGILL,
            libc::SIGFPE,
            libc::SIGTRAP,
            libc::SIGSYS,
            libc::SIGABRT,
        ] {
            libc::sigdelset(&mut set, fault);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

/// Windows has no signals to steer.
#[cfg(not(unix))]
pub(crate) fn block_async_signals() {}
