//! Where records go. A [`Sink`] is a small trait: one `write` is one system call.
//!
//! | sink | constructor |
//! |---|---|
//! | standard output / error | [`FdSink::stdout`], [`FdSink::stderr`] |
//! | a file, appended to | [`FdSink::append`] |
//! | a FIFO or pipe | [`FdSink::fifo`] |
//! | any `io::Write + Send` | [`WriterSink::new`] (or pass the writer to `finish`) |
//! | rolling files: size/time rotation, retention, gzip | [`crate::rolling::Builder`] |
//! | a chain with a circuit breaker | [`Fallback`] |
//! | a syslog collector: TCP (RFC 6587 framing), UDP, `/dev/log` | [`Syslog`] |
//! | rsyslog's RELP (`imrelp`), acknowledged: at least once, with a spool across a kill -9 | [`Relp`] |
//! | an OTLP/HTTP receiver (feature `otlp`): OpenTelemetry Collector, Vector, Alloy | `Otlp` |

mod fallback;
mod fd;
#[cfg(feature = "otlp")]
pub mod otlp;
mod relp;
#[cfg(feature = "rolling")]
pub mod rolling;
mod spec;
mod syslog;

use std::io;

pub use fallback::Fallback;
pub use fd::{set_pipe_size, FdSink};
#[cfg(feature = "otlp")]
pub use otlp::{Otlp, OtlpEncoding};
pub use relp::Relp;
#[cfg(feature = "rolling")]
pub use rolling::RollingFile;
pub use spec::SinkSpec;
pub use syslog::Syslog;

/// A destination for batches of whole records.
///
/// The writer thread calls `write` until the batch is gone, retrying on
/// `ErrorKind::Interrupted` and continuing after short writes; each call is counted as
/// one write syscall.
pub trait Sink: Send + 'static {
    /// Writes some prefix of `buf`, like [`io::Write::write`]: one system call.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize>;

    /// Pushes buffered bytes down, if the sink buffers.
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// Called before each batch of `batch_len` bytes, before the writer records (for
    /// the spool) where the batch will land: the one moment a sink may switch files,
    /// so that a batch never straddles two.
    fn before_batch(&mut self, _batch_len: usize) -> io::Result<()> {
        Ok(())
    }

    /// Errors the sink absorbed itself (a fallback that succeeded after its primary
    /// failed) since the last call. They are added to `Metrics::io_errors`.
    fn take_absorbed_errors(&mut self) -> u64 {
        0
    }

    /// Records the peer refused inside what `write` reported written (a RELP
    /// collector's `500`), since the last call: where each starts, as a byte offset
    /// counted from the first byte passed to `write` since the last call. The writer
    /// counts each as dropped (`io_error`) instead of written. Most sinks refuse
    /// nothing record by record.
    fn take_refused(&mut self) -> Vec<u64> {
        Vec::new()
    }

    /// Something the sink wants said in the log itself, as a WARN record from
    /// `loglag` in the pipeline's report format, before the next batch (a rolling file
    /// that found its file deleted and reopened it). Asked after `before_batch`.
    fn take_notice(&mut self) -> Option<String> {
        None
    }

    /// The descriptor this sink writes to right now and what it refers to (device,
    /// inode), for sinks that are one file descriptor. A forked child, which has no
    /// writer thread, writes its records to it directly (see `RELIABILITY.md`,
    /// "fork"). Asked after every `before_batch`, and on the caller's thread in `sync`
    /// mode: it must answer from what the sink knows, without a system call.
    fn descriptor(&self) -> Option<(std::os::fd::RawFd, (u64, u64))> {
        None
    }

    /// The sink's current length, for sinks that have one (regular files). Spool
    /// recovery uses it to deliver an interrupted batch exactly once.
    fn position(&mut self) -> Option<u64> {
        None
    }

    /// Cuts the sink back to `len` bytes (removes a partially written batch).
    fn truncate_to(&mut self, _len: u64) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this sink cannot be truncated",
        ))
    }

    /// Forces written data to stable storage, where that means something.
    fn sync(&mut self) -> io::Result<()> {
        Ok(())
    }

    /// The identity of the file behind the sink (device, inode), for sinks that are
    /// regular files. Spool recovery cuts or skips an interrupted batch only in the very
    /// file it was being written to; any other sink gets the batch again (at least once).
    fn identity(&mut self) -> Option<(u64, u64)> {
        None
    }

    /// After a write failed with `WouldBlock` (a non-blocking descriptor that is full),
    /// waits up to `timeout` for room. Returns whether a retry makes sense. The default
    /// does not wait.
    fn wait_writable(&mut self, _timeout: std::time::Duration) -> bool {
        false
    }
}

/// What can become a [`Sink`]: every sink, a `std::fs::File` (as an [`FdSink`], with
/// exactly-once spool recovery), a [`crate::rolling::RollingFileAppender`] (as its
/// [`RollingFile`]), and any type of yours that implements it (a file type of your
/// own that knows its length and identity, say). Pass it to
/// [`NonBlockingBuilder::finish_sink`](crate::NonBlockingBuilder::finish_sink).
pub trait IntoSink {
    type Sink: Sink;
    fn into_sink(self) -> Self::Sink;
}

impl<S: Sink> IntoSink for S {
    type Sink = S;
    fn into_sink(self) -> S {
        self
    }
}

impl IntoSink for std::fs::File {
    type Sink = FdSink;
    fn into_sink(self) -> FdSink {
        FdSink::from_file(self)
    }
}

impl Sink for Box<dyn Sink> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        (**self).write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        (**self).flush()
    }
    fn before_batch(&mut self, batch_len: usize) -> io::Result<()> {
        (**self).before_batch(batch_len)
    }
    fn take_absorbed_errors(&mut self) -> u64 {
        (**self).take_absorbed_errors()
    }
    fn take_notice(&mut self) -> Option<String> {
        (**self).take_notice()
    }
    fn take_refused(&mut self) -> Vec<u64> {
        (**self).take_refused()
    }
    fn descriptor(&self) -> Option<(std::os::fd::RawFd, (u64, u64))> {
        (**self).descriptor()
    }
    fn position(&mut self) -> Option<u64> {
        (**self).position()
    }
    fn truncate_to(&mut self, len: u64) -> io::Result<()> {
        (**self).truncate_to(len)
    }
    fn sync(&mut self) -> io::Result<()> {
        (**self).sync()
    }
    fn identity(&mut self) -> Option<(u64, u64)> {
        (**self).identity()
    }
    fn wait_writable(&mut self, timeout: std::time::Duration) -> bool {
        (**self).wait_writable(timeout)
    }
}

/// Adapts any [`io::Write`] into a [`Sink`].
///
/// ```
/// use loglag::sink::{Sink, WriterSink};
/// let mut sink = WriterSink::new(Vec::new());
/// assert_eq!(sink.write(b"x\n")?, 2);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct WriterSink<W>(pub W);

impl<W: io::Write + Send + 'static> WriterSink<W> {
    /// Wraps `writer`.
    pub fn new(writer: W) -> Self {
        WriterSink(writer)
    }
}

impl<W: io::Write + Send + 'static> Sink for WriterSink<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

/// Calls into a sink, turning a panic into an error: a sink is user code, and a panic
/// in it must cost the batch, not the writer thread (which every producer and every
/// flush depends on).
pub(crate) fn call_sink<T>(f: impl FnOnce() -> io::Result<T>) -> io::Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(result) => result,
        Err(payload) => {
            let what = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-string payload".into());
            Err(io::Error::other(format!("the sink panicked: {what}")))
        }
    }
}

/// How long a write to a non-blocking descriptor that is full (`WouldBlock`) waits for
/// room before it counts as failed. The writer thread is the only caller that waits, so
/// producers are never held by it; the bound keeps a stuck reader from stalling the
/// writer forever.
pub(crate) const WOULD_BLOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Writes all of `buf`, retrying on EINTR, continuing after short writes and waiting
/// (bounded by [`WOULD_BLOCK_WAIT`]) for room when a non-blocking sink is full.
/// Returns the number of `write` calls made, or the error with the bytes written so far.
pub(crate) fn write_all_counted(
    sink: &mut dyn Sink,
    mut buf: &[u8],
) -> (u64, Result<(), (io::Error, usize)>) {
    let mut calls = 0;
    let total = buf.len();
    let mut blocked_since: Option<std::time::Instant> = None;
    while !buf.is_empty() {
        calls += 1;
        let written = total - buf.len();
        match call_sink(|| sink.write(buf)) {
            Ok(0) => return (calls, Err((io::ErrorKind::WriteZero.into(), written))),
            Ok(n) if n > buf.len() => {
                let e = io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!(
                        "the sink reported writing {n} bytes of a {}-byte buffer",
                        buf.len()
                    ),
                );
                return (calls, Err((e, written)));
            }
            Ok(n) => {
                buf = &buf[n..];
                blocked_since = None;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let since = *blocked_since.get_or_insert_with(std::time::Instant::now);
                let left = WOULD_BLOCK_WAIT.saturating_sub(since.elapsed());
                if left.is_zero() || !call_sink(|| Ok(sink.wait_writable(left))).unwrap_or(false) {
                    return (calls, Err((e, written)));
                }
            }
            Err(e) => return (calls, Err((e, written))),
        }
    }
    (calls, Ok(()))
}

/// Where the next byte written to `sink` lands: its length and file identity, for the
/// spool's exactly-once record of a batch. Both are `None` for sinks that are not files.
pub(crate) fn place(sink: &mut dyn Sink) -> (Option<u64>, Option<(u64, u64)>) {
    let position = call_sink(|| Ok(sink.position())).unwrap_or(None);
    let identity = call_sink(|| Ok(sink.identity())).unwrap_or(None);
    (position, identity)
}
