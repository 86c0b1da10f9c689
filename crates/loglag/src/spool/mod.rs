//! Spool mode: the queue lives in a memory-mapped file, so a record whose log call has
//! returned is in the page cache and survives SIGKILL. The next start (or
//! `loglag recover`) delivers what was not yet written, in order, exactly once for file
//! sinks.
//!
//! File layout: a 4096-byte header, then the ring (see `queue/mod.rs`).
//!
//! | header word | meaning |
//! |---|---|
//! | 0 | magic `LOGLAGSP` |
//! | 1 | layout version |
//! | 2 | ring capacity in bytes |
//! | 3 | tail: every record before this position reached the sink |
//! | 4 | pending end: a batch up to here was being written (0: none) |
//! | 5 | the sink's length before that batch (files only) |
//! | 6 | that batch's length in bytes |
//! | 7, 8 | the sink file's device and inode (0, 0: not a file) |
//! | 16..36 | drops not yet announced in-band, by reason (4) and level (5) |
//! | 36 | the report format in use, as `Format::index() + 1` (0: not known) |
//! | 40..60 | a live report being written: its counts, by reason and level |
//! | 60 | that report's length in bytes (0: none being written) |
//! | 61 | the sink's length before it (`u64::MAX`: not known) |
//! | 62, 63 | the sink file's device and inode (0, 0: not a file) |
//!
//! Drops survive a crash as a count: every drop is added to words 16..36 as it is
//! counted, and subtracted once the writer's in-band report of it is in the sink. A
//! live report is journaled like a batch (words 40..64) before it is written, so a kill
//! right after its `write(2)` (where SIGKILL is most often delivered) does not announce
//! it twice: recovery subtracts it if the same file holds it. Recovery then writes one
//! report for what is left, in the report format of word 36, after the recovered
//! records, and clears the words. Into a sink that cannot tell its length, a report
//! interrupted by the kill is announced again (at least once, never less).
//!
//! Exactly once: before a batch is written the writer records where it ends, which file
//! it goes to and how long that file was; after the write it advances the tail. If the
//! process dies in between, recovery looks at the sink: if it is the same file (same
//! device and inode) and the whole batch is there, the batch is not written again; if
//! part of it is, the part is cut off and the batch rewritten. Any other sink (a pipe,
//! a socket, a different file) gets the batch again: at least once, with a warning.
//! Recovery journals itself the same way, a chunk at a time, so a recovery that is
//! itself killed resumes exactly once.
//!
//! The header is validated before anything is trusted (magic, version, a capacity of at
//! most [`MAX_CAPACITY`], an aligned tail far from wrapping, a pending batch inside the
//! ring); a spool that fails is refused as corrupt. Spools are created `0600` without
//! following symlinks, and one owned by another user or readable by others is refused,
//! as is, at once and without waiting on it, a path that is no regular file (a FIFO, a
//! directory, a socket, a device).
//!
//! A pipeline allocates its spool's every block when it opens it (a hole written
//! through the mapping on a full disk would be SIGBUS); recovery alone allocates
//! nothing, so recovering a sparse spool leaves its holes.
//!
//! Not covered: power loss or a kernel crash without [`SpoolSync`] (the page cache is
//! lost), and corruption of the disk itself beyond what the per-record checksum detects.
//!
//! The code: `header.rs` (the layout and its check), `journal.rs` (what is recorded
//! around a batch), `recovery.rs` (delivering what a spool holds, over memory and a
//! sink), `open.rs` (the file: locking, ownership, allocation, mapping); the tests in
//! `tests.rs` (real spool files) and `model.rs` (every crash point, in memory, over the
//! sink in `mem_file.rs`).

use std::io;
use std::path::Path;

mod header;
mod journal;
pub(crate) mod ledger;
#[cfg(test)]
mod mem_file;
#[cfg(test)]
mod model;
mod open;
mod recovery;
#[cfg(test)]
mod tests;

pub(crate) use header::SpoolHeader;
pub(crate) use open::open;
pub use open::{recover, recover_opening};
pub use recovery::Recovered;

/// The largest ring a spool may hold (4 GiB). A header claiming more is corrupt.
pub const MAX_CAPACITY: u64 = 4 << 30;

pub use crate::settings::spool_sync::SpoolSync;

/// Why a spool could not be opened or recovered. It travels inside the `io::Error`
/// that [`recover`] returns; get it back with [`SpoolError::of`] to tell the cases
/// apart without matching on text. `NonBlockingBuilder::build` returns it as
/// [`crate::BuildError::Spool`] when the spool is required.
#[derive(Debug, Clone)]
pub struct SpoolError {
    pub path: std::path::PathBuf,
    pub kind: SpoolErrorKind,
    message: String,
}

/// The kinds of [`SpoolError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpoolErrorKind {
    /// Another live process holds the spool (it is `flock`ed).
    InUse,
    /// The file is empty, or is not a loglag spool at all.
    NotASpool,
    /// A spool from a loglag with another layout version.
    Version,
    /// A spool whose header or records contradict themselves.
    Corrupt,
    /// Owned by another user, readable by others, or not a regular file.
    Permissions,
}

impl SpoolError {
    /// The `SpoolError` inside an `io::Error`, if that is what it carries.
    pub fn of(e: &io::Error) -> Option<&SpoolError> {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<SpoolError>())
    }
}

impl std::fmt::Display for SpoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SpoolError {}

impl From<SpoolError> for io::Error {
    fn from(e: SpoolError) -> io::Error {
        let io_kind = match e.kind {
            SpoolErrorKind::InUse => io::ErrorKind::WouldBlock,
            SpoolErrorKind::Permissions => io::ErrorKind::PermissionDenied,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(io_kind, e)
    }
}

pub(super) fn spool_error(path: &Path, kind: SpoolErrorKind, message: String) -> io::Error {
    SpoolError {
        path: path.to_owned(),
        kind,
        message,
    }
    .into()
}

pub(super) fn invalid(path: &Path, kind: SpoolErrorKind, why: impl std::fmt::Display) -> io::Error {
    spool_error(path, kind, format!("{}: {why}", path.display()))
}
