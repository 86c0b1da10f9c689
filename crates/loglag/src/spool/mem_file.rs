//! The model test's destination: an in-memory "file" that knows its length and
//! identity and can be cut back, as a regular file sink does, or a "pipe" that can do
//! none of that. It can be killed: after so many more calls, or so many more bytes,
//! every call that changes it fails, which is what a process killed there leaves.

use std::io;

use crate::sink::{FileSink, Sink};

/// The identity the in-memory file claims (device, inode).
pub(super) const IDENTITY: (u64, u64) = (7, 4242);

#[derive(Debug, Default)]
pub(super) struct MemFile {
    /// Everything written and not cut.
    pub(super) bytes: Vec<u8>,
    /// A file (length, identity, truncation) or a pipe (none of them).
    file: bool,
    /// At most this many bytes per `write` (short writes), 0 for no limit.
    pub(super) max_write: usize,
    /// Calls that change the destination (`before_batch`, `write`, `flush`,
    /// `truncate_to`) left before the process dies; `None`: it does not.
    calls_left: Option<usize>,
    /// Bytes left to write before the process dies mid-`write`; `None`: it does not.
    bytes_left: Option<usize>,
    /// The process died: nothing changes the destination any more.
    pub(super) dead: bool,
}

impl MemFile {
    pub(super) fn file() -> MemFile {
        MemFile {
            file: true,
            ..MemFile::default()
        }
    }

    pub(super) fn pipe() -> MemFile {
        MemFile::default()
    }

    /// Kills the process after `calls` more changing calls, or in the middle of a write
    /// once `bytes` more bytes are written, whichever comes first.
    pub(super) fn die_after(&mut self, calls: Option<usize>, bytes: Option<usize>) {
        self.calls_left = calls;
        self.bytes_left = bytes;
        self.dead = false;
    }

    /// A new process: alive, writing without limit.
    pub(super) fn restart(&mut self) {
        self.die_after(None, None);
    }

    /// One changing call: fails once the process is dead.
    fn call(&mut self) -> io::Result<()> {
        if let Some(left) = &mut self.calls_left {
            if *left == 0 {
                self.dead = true;
            } else {
                *left -= 1;
            }
        }
        if self.dead {
            return Err(io::Error::other("killed"));
        }
        Ok(())
    }
}

impl Sink for MemFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.call()?;
        let mut n = buf.len();
        if self.max_write > 0 {
            n = n.min(self.max_write);
        }
        if let Some(left) = &mut self.bytes_left {
            if *left == 0 {
                self.dead = true;
                return Err(io::Error::other("killed"));
            }
            n = n.min(*left);
            *left -= n;
        }
        self.bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.call()
    }

    fn before_batch(&mut self, _batch_len: usize) -> io::Result<()> {
        self.call()
    }

    fn as_file(&mut self) -> Option<&mut dyn FileSink> {
        Some(self)
    }
}

/// A pipe is a descriptor too, with no length, identity or truncation.
impl crate::sink::sealed::Sealed for MemFile {}

impl FileSink for MemFile {
    fn descriptor(&self) -> Option<(crate::sink::RawDescriptor, (u64, u64))> {
        None
    }

    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    // Reads of the destination: they change nothing, so a kill does not stop them.
    fn position(&mut self) -> Option<u64> {
        self.file.then_some(self.bytes.len() as u64)
    }

    fn identity(&mut self) -> Option<(u64, u64)> {
        self.file.then_some(IDENTITY)
    }

    fn truncate_to(&mut self, len: u64) -> io::Result<()> {
        if !self.file {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "a pipe cannot be truncated",
            ));
        }
        self.call()?;
        self.bytes.truncate(len as usize);
        Ok(())
    }
}
