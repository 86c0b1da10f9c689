//! Where records go. A [`Sink`] is a small trait: one `write` is one system call.
//!
//! | sink | constructor |
//! |---|---|
//! | standard output / error | [`FdSink::stdout`], [`FdSink::stderr`] |
//! | a file, appended to | [`FdSink::append`] |
//! | a FIFO or pipe | [`FdSink::fifo`] |
//! | any `io::Write + Send` | [`WriterSink::new`] (or pass the writer to `finish`) |
//!
//! A sink of your own implements [`Sink`]: `write`, and `flush` if it buffers.
//! | rolling files: size/time rotation, retention, gzip | [`crate::rolling::Builder`] |
//! | a chain with a circuit breaker | [`Fallback`] |
//! | a syslog collector: TCP (RFC 6587 framing), UDP, `/dev/log` | [`Syslog`] |
//! | rsyslog's RELP (`imrelp`), acknowledged: at least once, with a spool across a kill -9 | [`Relp`] |
//! | an OTLP/HTTP receiver (feature `otlp`): OpenTelemetry Collector, Vector, Alloy | `Otlp` |

pub(crate) mod backoff;
mod endpoint;
mod fallback;
pub(crate) mod fd;
#[cfg(feature = "otlp")]
mod otlp;
mod relp;
#[cfg(feature = "rolling")]
pub(crate) mod rolling;
pub(crate) mod spec;
mod syslog;

use std::io;

pub use endpoint::Endpoint;
pub use fallback::Fallback;
pub use fd::FdSink;
#[cfg(feature = "otlp")]
pub use otlp::{Otlp, OtlpEncoding};
pub use relp::Relp;
#[cfg(feature = "rolling")]
pub use rolling::RollingFile;
pub use spec::{FileOptions, SinkSpec};
pub use syslog::Syslog;

/// A destination for batches of whole records.
///
/// A sink of your own implements [`write`](Sink::write), and [`flush`](Sink::flush) if
/// it buffers. The other methods have defaults that do nothing; they are for sinks that
/// rotate ([`before_batch`](Sink::before_batch)), that have something to say in the log
/// or refuse records ([`take_report`](Sink::take_report)), or that are one file
/// descriptor ([`as_file`](Sink::as_file), which gives a spool exactly-once delivery and
/// a forked child somewhere to write).
///
/// The writer thread calls `write` until the batch is gone, retrying on
/// `ErrorKind::Interrupted` and continuing after short writes; each call is counted as
/// one write syscall. A panic in any method costs the batch, not the writer thread.
///
/// ```
/// use std::io;
/// struct Lines(Vec<String>);
/// impl loglag::sink::Sink for Lines {
///     fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
///         self.0.extend(String::from_utf8_lossy(buf).lines().map(String::from));
///         Ok(buf.len())
///     }
/// }
/// let (mut writer, guard) = loglag::NonBlockingBuilder::default().build(Lines(Vec::new()))?;
/// io::Write::write_all(&mut writer, b"one record\n")?;
/// assert_eq!(guard.shutdown().written_records, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
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

    /// What the sink has to report since the last call: errors it absorbed, records
    /// its peer refused, something to say in the log. Asked after `before_batch` and
    /// after each batch's writes.
    fn take_report(&mut self) -> SinkReport {
        SinkReport::default()
    }

    /// The sink as one file descriptor, if it is one: see [`FileSink`]. The library's
    /// own file sinks answer; a sink of yours leaves it at `None` (not an API: hidden).
    #[doc(hidden)]
    fn as_file(&mut self) -> Option<&mut dyn FileSink> {
        None
    }
}

/// What a [`Sink`] reports to the writer between batches ([`Sink::take_report`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SinkReport {
    /// Something to say in the log itself, as a WARN record from `loglag` in the
    /// pipeline's report format, before the next batch (a rolling file that found its
    /// file deleted and reopened it).
    pub notice: Option<String>,
    /// Errors the sink absorbed itself (a fallback that succeeded after its primary
    /// failed; a record a collector refused). They are added to
    /// [`Metrics::write_errors`](crate::Metrics::write_errors).
    pub absorbed_errors: u64,
    /// Records the peer refused inside what `write` reported written (a RELP
    /// collector's `500`): where each starts, as a byte offset counted from the first
    /// byte passed to `write` since the last report. The writer counts each as dropped
    /// (`io_error`) instead of written.
    pub refused: Vec<u64>,
}

impl SinkReport {
    /// A report that says `notice` in the log.
    pub fn notice(notice: impl Into<String>) -> SinkReport {
        SinkReport {
            notice: Some(notice.into()),
            ..SinkReport::default()
        }
    }

    /// Adds `later` to this report: notices joined in order, errors summed, refused
    /// offsets appended as they are (the caller shifts them if they count from
    /// elsewhere).
    pub fn merge(&mut self, later: SinkReport) {
        self.notice = match (self.notice.take(), later.notice) {
            (Some(a), Some(b)) => Some(format!("{a}; {b}")),
            (a, b) => a.or(b),
        };
        self.absorbed_errors += later.absorbed_errors;
        self.refused.extend(later.refused);
    }
}

/// A file descriptor's number, as [`FileSink::descriptor`] gives it: `std::os::fd::RawFd`
/// on unix. Windows has no `fork`, so no child ever writes through one there: its
/// sinks answer `None`.
#[cfg(unix)]
#[doc(hidden)]
pub type RawDescriptor = std::os::fd::RawFd;

/// A file descriptor's number, as [`FileSink::descriptor`] gives it: `std::os::fd::RawFd`
/// on unix. Windows has no `fork`, so no child ever writes through one there: its
/// sinks answer `None`.
#[cfg(not(unix))]
#[doc(hidden)]
pub type RawDescriptor = std::ffi::c_int;

/// The seal of [`FileSink`]: public in a private module, so no other crate can name it
/// (except loglag's own tests, through `__lab::FileSinkSeal` under `unstable-lab`).
pub(crate) mod sealed {
    pub trait Sealed {}
}

/// What a sink that is one file descriptor offers besides writing, through
/// [`Sink::as_file`].
///
/// With a regular file behind it (`position` and `identity` answer), a spool delivers
/// an interrupted batch exactly once after a crash: recovery cuts the file back to
/// where the batch began, in that very file, and writes it again. Any other sink gets
/// the batch again (at least once). `descriptor` is where a forked child writes.
///
/// Not an API: the capability between the library's file sinks (`FdSink`,
/// `RollingFile`) and the spool, hidden from the docs and the public API list, and
/// sealed: only the library implements it (and its own tests, through the seal that
/// the `unstable-lab` feature exports). A sink of yours answers `None` to `as_file`,
/// and a spool delivers its batches at least once.
///
/// ```compile_fail,E0277
/// // Every method is here; what is missing is the seal.
/// struct Mine;
/// impl loglag::sink::FileSink for Mine {
///     fn descriptor(&self) -> Option<(loglag::sink::RawDescriptor, (u64, u64))> { None }
///     fn position(&mut self) -> Option<u64> { None }
///     fn identity(&mut self) -> Option<(u64, u64)> { None }
///     fn truncate_to(&mut self, _: u64) -> std::io::Result<()> { Ok(()) }
///     fn sync(&mut self) -> std::io::Result<()> { Ok(()) }
/// }
/// ```
#[doc(hidden)]
pub trait FileSink: sealed::Sealed {
    /// The descriptor this sink writes to right now and what it refers to (device,
    /// inode). A forked child, which has no writer thread, writes its records to it
    /// directly (see `RELIABILITY.md`, "fork"). Asked after every `before_batch`, on
    /// the writer's thread or the caller's in `sync` mode: it must answer from what the
    /// sink knows, without a system call. On Windows (no `fork`) nothing asks; the
    /// sinks of loglag answer `None` there.
    fn descriptor(&self) -> Option<(RawDescriptor, (u64, u64))>;

    /// The file's current length, if it is a regular file.
    fn position(&mut self) -> Option<u64>;

    /// The identity of the file (device, inode; on Windows volume serial number and
    /// file index), if it is a regular file. Spool
    /// recovery cuts or skips an interrupted batch only in the very file it was being
    /// written to.
    fn identity(&mut self) -> Option<(u64, u64)>;

    /// Cuts the file back to `len` bytes (removes a partially written batch).
    fn truncate_to(&mut self, len: u64) -> io::Result<()>;

    /// Forces written data to stable storage.
    fn sync(&mut self) -> io::Result<()>;

    /// After a write failed with `WouldBlock` (a non-blocking descriptor that is full),
    /// waits up to `timeout` for room. Returns whether a retry makes sense. The default
    /// does not wait.
    fn wait_writable(&mut self, _timeout: std::time::Duration) -> bool {
        false
    }
}

/// What can become a [`Sink`]: every sink; a `std::fs::File` (as an [`FdSink`], with
/// exactly-once spool recovery); a [`crate::rolling::RollingFileAppender`] (as its
/// [`RollingFile`]); any type of yours that implements it. Pass it to
/// [`NonBlockingBuilder::build`](crate::NonBlockingBuilder::build).
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
    fn take_report(&mut self) -> SinkReport {
        (**self).take_report()
    }
    fn as_file(&mut self) -> Option<&mut dyn FileSink> {
        (**self).as_file()
    }
}

/// Adapts any [`io::Write`] into a [`Sink`]: each `write` is the writer's `write`.
///
/// ```
/// use loglag::sink::{Sink, WriterSink};
/// let mut sink = WriterSink::new(Vec::new());
/// assert_eq!(sink.write(b"x\n")?, 2);
/// assert_eq!(sink.into_inner(), b"x\n");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct WriterSink<W>(W);

impl<W: io::Write + Send + 'static> WriterSink<W> {
    /// Wraps `writer`.
    pub fn new(writer: W) -> Self {
        WriterSink(writer)
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.0
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

/// The pipeline's sink as the writer holds it: with what the sink reported but no one
/// has asked for yet. The sink reports everything at once ([`Sink::take_report`]); the
/// writer wants the notice before a batch, the refused offsets right after its writes,
/// and the absorbed errors whenever they come, so the rest of a report waits here.
pub(crate) struct HeldSink {
    sink: Box<dyn Sink>,
    pending: SinkReport,
}

impl HeldSink {
    pub(crate) fn new(sink: Box<dyn Sink>) -> HeldSink {
        HeldSink {
            sink,
            pending: SinkReport::default(),
        }
    }

    fn collect(&mut self) {
        if let Ok(report) = call_sink(|| Ok(self.sink.take_report())) {
            self.pending.merge(report);
        }
    }

    /// The notice to write before the next batch.
    pub(crate) fn take_notice(&mut self) -> Option<String> {
        self.collect();
        self.pending.notice.take()
    }

    /// Errors the sink absorbed, to be added to `write_errors`.
    pub(crate) fn take_absorbed_errors(&mut self) -> u64 {
        self.collect();
        std::mem::take(&mut self.pending.absorbed_errors)
    }

    /// Forgets refused offsets that count from writes before this moment: the next
    /// `take_refused` counts from the next write.
    pub(crate) fn start_counting_refusals(&mut self) {
        self.collect();
        self.pending.refused.clear();
    }

    /// Offsets of the records the peer refused since `start_counting_refusals`.
    pub(crate) fn take_refused(&mut self) -> Vec<u64> {
        self.collect();
        std::mem::take(&mut self.pending.refused)
    }

    /// The sink's descriptor, for a forked child (see [`FileSink::descriptor`]).
    pub(crate) fn descriptor(&mut self) -> Option<(RawDescriptor, (u64, u64))> {
        descriptor(self.sink.as_mut())
    }

    pub(crate) fn sink(&mut self) -> &mut dyn Sink {
        self.sink.as_mut()
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
                let waited =
                    call_sink(|| Ok(sink.as_file().is_some_and(|f| f.wait_writable(left))));
                if left.is_zero() || !waited.unwrap_or(false) {
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
    call_sink(|| {
        Ok(sink
            .as_file()
            .map_or((None, None), |f| (f.position(), f.identity())))
    })
    .unwrap_or((None, None))
}

/// The descriptor `sink` writes to and what it refers to, if it is one descriptor.
pub(crate) fn descriptor(sink: &mut dyn Sink) -> Option<(RawDescriptor, (u64, u64))> {
    call_sink(|| Ok(sink.as_file().and_then(|f| f.descriptor()))).unwrap_or(None)
}

/// Forces what `sink` wrote to stable storage, if it is a file.
pub(crate) fn sync(sink: &mut dyn Sink) -> io::Result<()> {
    call_sink(|| sink.as_file().map_or(Ok(()), |f| f.sync()))
}

/// Cuts `sink` back to `len` bytes, if it is a file that can be.
pub(crate) fn truncate_to(sink: &mut dyn Sink, len: u64) -> io::Result<()> {
    call_sink(|| match sink.as_file() {
        Some(f) => f.truncate_to(len),
        None => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "this sink cannot be truncated",
        )),
    })
}
