//! [`NonBlocking`], the handle that takes records (the drop-in for
//! `tracing_appender::non_blocking::NonBlocking`), and its [`WorkerGuard`]. Published
//! under tracing-appender's module path, `loglag::non_blocking`, by `lib.rs`.

/// tracing-appender's default `buffered_lines_limit`, for code that names it. loglag's
/// own bound is in bytes ([`NonBlockingBuilder::capacity_bytes`](crate::NonBlockingBuilder::capacity_bytes)); a lines limit, when
/// set, applies as well.
pub const DEFAULT_BUFFERED_LINES_LIMIT: usize = 128_000;

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::core::flush::{FlushTimeout, Flushed};
use crate::core::metrics::Metrics;
use crate::core::Core;
use crate::pipeline::hooks::SignalGuard;
use crate::record::level::Level;
use crate::settings::mode::Mode;

/// A cheap-to-clone handle that turns what is written into records.
///
/// It implements [`io::Write`]. One `write` (or `write_all`) is one record, as in
/// tracing-appender and as tracing-subscriber's fmt layer writes each event. `write!`
/// and `writeln!` are gathered into whole lines: a line begun with `write!` becomes one
/// record when its newline arrives (from `writeln!`, another `write!`, or a plain
/// `write` of `"\n"`), so the pieces of one line are never separate records, never split
/// across files and never interleaved with a drop report. Each clone gathers its own
/// line; a line left without its newline is submitted on `flush` or when the clone is
/// dropped, and one that reaches
/// [`max_record_bytes`](crate::NonBlockingBuilder::max_record_bytes) is submitted (cut with a
/// marker). With the `tracing` feature it is also
/// `tracing_subscriber::fmt::MakeWriter`, which also passes each event's level so that
/// [`Overflow::ShedByLevel`](crate::Overflow::ShedByLevel) and the flush level work.
///
/// Writes never fail: a record that cannot be queued is counted as dropped.
///
/// ```
/// let (writer, _guard) = loglag::non_blocking(std::io::stdout());
/// tracing_subscriber::fmt().with_writer(writer.clone()).try_init().ok();
/// tracing::info!(user = "ann", "logged in");
/// assert!(writer.metrics().accepted <= 1);
/// ```
#[derive(Debug)]
pub struct NonBlocking {
    pub(crate) core: Arc<Core>,
    line: PartialLine,
}

impl Clone for NonBlocking {
    /// A new handle on the same pipeline, with a line of its own.
    fn clone(&self) -> NonBlocking {
        NonBlocking::new(self.core.clone())
    }
}

impl Drop for NonBlocking {
    fn drop(&mut self) {
        self.line.submit_rest(&self.core, Level::Info);
    }
}

/// A line begun with `write!` whose newline has not been written yet.
#[derive(Debug, Default)]
struct PartialLine(Vec<u8>);

impl PartialLine {
    /// A plain `write`: one record, as in tracing-appender (tracing-subscriber's fmt
    /// layer writes each event with one `write_all`), unless it continues a line that
    /// `write!` began.
    fn write(&mut self, core: &Core, level: Level, buf: &[u8]) {
        if self.0.is_empty() {
            core.submit(level, buf);
            return;
        }
        self.0.extend_from_slice(buf);
        self.submit_whole_lines(core, level);
    }

    /// `write!` / `writeln!`: formatted into the line, which is submitted once it has
    /// its newline, so the pieces of one line are one record.
    fn write_fmt(
        &mut self,
        core: &Core,
        level: Level,
        args: std::fmt::Arguments<'_>,
    ) -> io::Result<()> {
        std::fmt::write(&mut crate::record::FmtVec(&mut self.0), args)
            .map_err(|_| io::Error::other("a Display implementation returned an error"))?;
        self.submit_whole_lines(core, level);
        Ok(())
    }

    /// Submits everything up to the last newline as one record and keeps the rest; a
    /// rest as long as a record may be is submitted too (and cut with a marker).
    fn submit_whole_lines(&mut self, core: &Core, level: Level) {
        if let Some(end) = self.0.iter().rposition(|&b| b == b'\n') {
            core.submit(level, &self.0[..=end]);
            self.0.drain(..=end);
        }
        if self.0.len() >= core.settings().max_record_bytes {
            self.submit_rest(core, level);
        }
    }

    fn submit_rest(&mut self, core: &Core, level: Level) {
        if !self.0.is_empty() {
            core.submit(level, &self.0);
            self.0.clear();
        }
    }
}

/// Counts dropped records, as tracing-appender's `ErrorCounter` does.
#[derive(Clone)]
pub struct ErrorCounter(Arc<Core>);

impl ErrorCounter {
    pub fn dropped_lines(&self) -> usize {
        self.0.metrics().dropped_records() as usize
    }
}

impl std::fmt::Debug for ErrorCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("ErrorCounter")
            .field(&self.dropped_lines())
            .finish()
    }
}

impl NonBlocking {
    pub(crate) fn new(core: Arc<Core>) -> NonBlocking {
        NonBlocking {
            core,
            line: PartialLine::default(),
        }
    }

    /// Hands one complete record to the pipeline. It should end in `\n`.
    pub fn submit(&self, level: Level, record: &[u8]) {
        self.core.submit(level, record);
    }

    /// The accounting right now.
    /// tracing-appender's drop counter: how many records were dropped (for any
    /// reason; [`NonBlocking::metrics`] says which).
    pub fn error_counter(&self) -> ErrorCounter {
        ErrorCounter(self.core.clone())
    }

    pub fn metrics(&self) -> Metrics {
        self.core.metrics()
    }

    /// Per-thread counter slots currently held; for tests of the pipeline itself.
    #[doc(hidden)]
    pub fn debug_counter_slots(&self) -> usize {
        self.core.slot_count()
    }

    /// The mode in force (`LOGLAG_MODE` or the builder's).
    pub fn mode(&self) -> Mode {
        self.core.mode()
    }

    /// Waits until every record accepted before this call is written or dropped.
    pub fn flush(&self, timeout: Duration) -> Result<Flushed, FlushTimeout> {
        self.core.flush(timeout)
    }

    /// [`flush`](Self::flush) for async code: the wait happens on a helper thread, so
    /// no executor thread is blocked.
    ///
    /// ```
    /// # let (writer, _guard) = loglag::non_blocking(std::io::sink());
    /// # let fut = async move {
    /// writer.flush_async(std::time::Duration::from_secs(1)).await?;
    /// # Ok::<(), loglag::FlushTimeout>(()) };
    /// ```
    pub fn flush_async(&self, timeout: Duration) -> FlushFuture {
        let core = self.core.clone();
        let state = Arc::new(Mutex::new(FlushState {
            result: None,
            waker: None,
        }));
        let shared = state.clone();
        let spawned = std::thread::Builder::new()
            .name("loglag-flush".into())
            .spawn(move || {
                crate::sys::fork::block_async_signals();
                let result = core.flush(timeout);
                let mut s = shared.lock().unwrap_or_else(|e| e.into_inner());
                s.result = Some(result);
                if let Some(w) = s.waker.take() {
                    w.wake();
                }
            });
        if spawned.is_err() {
            let result = self.core.flush(timeout);
            state.lock().unwrap_or_else(|e| e.into_inner()).result = Some(result);
        }
        FlushFuture { state }
    }

    /// A `MakeWriter` writer that tags records with `level`.
    pub fn with_level(&self, level: Level) -> RecordWriter<'_> {
        RecordWriter {
            core: &self.core,
            level,
            line: PartialLine::default(),
        }
    }
}

impl io::Write for NonBlocking {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.line.write(&self.core, Level::Info, buf);
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.line.write(&self.core, Level::Info, buf);
        Ok(())
    }

    fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> io::Result<()> {
        self.line.write_fmt(&self.core, Level::Info, args)
    }

    /// Submits a line left without its newline. It does not wait for the sink:
    /// formatters call it after every event (`NonBlocking::flush(timeout)` waits).
    fn flush(&mut self) -> io::Result<()> {
        self.line.submit_rest(&self.core, Level::Info);
        Ok(())
    }
}

/// The writer [`NonBlocking`] hands to tracing-subscriber for one event. Borrowing the
/// handle instead of cloning it keeps reference-count traffic off the hot path.
#[derive(Debug)]
pub struct RecordWriter<'a> {
    core: &'a Core,
    level: Level,
    line: PartialLine,
}

impl io::Write for RecordWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.line.write(self.core, self.level, buf);
        Ok(buf.len())
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        self.line.write(self.core, self.level, buf);
        Ok(())
    }

    fn write_fmt(&mut self, args: std::fmt::Arguments<'_>) -> io::Result<()> {
        self.line.write_fmt(self.core, self.level, args)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.line.submit_rest(self.core, self.level);
        Ok(())
    }
}

impl Drop for RecordWriter<'_> {
    fn drop(&mut self) {
        self.line.submit_rest(self.core, self.level);
    }
}

#[cfg(feature = "tracing")]
impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for NonBlocking {
    type Writer = RecordWriter<'a>;

    fn make_writer(&'a self) -> RecordWriter<'a> {
        self.with_level(Level::Info)
    }

    fn make_writer_for(&'a self, meta: &tracing_core::Metadata<'_>) -> RecordWriter<'a> {
        self.with_level(meta.level().into())
    }
}

struct FlushState {
    result: Option<Result<Flushed, FlushTimeout>>,
    waker: Option<Waker>,
}

/// The future returned by [`NonBlocking::flush_async`].
#[must_use = "futures do nothing unless awaited"]
pub struct FlushFuture {
    state: Arc<Mutex<FlushState>>,
}

impl std::fmt::Debug for FlushFuture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FlushFuture")
    }
}

impl Future for FlushFuture {
    type Output = Result<Flushed, FlushTimeout>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match s.result.take() {
            Some(r) => Poll::Ready(r),
            None => {
                s.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

/// Owns the writer thread. Dropping it flushes what is queued within the
/// `shutdown_timeout` and counts anything cut off as `shutdown` drops.
#[must_use = "dropping the guard at once shuts the pipeline down; keep it alive in main"]
#[derive(Debug)]
pub struct WorkerGuard {
    core: Arc<Core>,
    worker: Option<JoinHandle<()>>,
    stopped: bool,
    _signals: Option<SignalGuard>,
}

impl WorkerGuard {
    pub(crate) fn new(
        core: Arc<Core>,
        worker: Option<JoinHandle<()>>,
        signals: Option<SignalGuard>,
    ) -> WorkerGuard {
        WorkerGuard {
            core,
            worker,
            stopped: false,
            _signals: signals,
        }
    }

    /// Waits until every record accepted before this call is written or dropped.
    pub fn flush(&self, timeout: Duration) -> Result<Flushed, FlushTimeout> {
        self.core.flush(timeout)
    }

    /// The accounting right now.
    pub fn metrics(&self) -> Metrics {
        self.core.metrics()
    }

    /// Shuts down now and returns the final accounting.
    pub fn shutdown(mut self) -> Metrics {
        self.stop(self.core.settings().shutdown_timeout)
    }

    /// [`shutdown`](Self::shutdown) within `timeout` instead of the
    /// `shutdown_timeout` setting: what is left of a deadline the application shares
    /// with other work (a deployment's grace period, part of it already spent). What
    /// is not written by then is counted as dropped at shutdown.
    pub fn shutdown_within(mut self, timeout: Duration) -> Metrics {
        self.stop(timeout)
    }

    fn stop(&mut self, timeout: Duration) -> Metrics {
        self.stopped = true;
        let metrics = self.core.shutdown(timeout);
        // The pipeline has ended: the panic hook has nothing more to flush here.
        crate::pipeline::hooks::forget_on_panic(&self.core);
        if let Some(worker) = self.worker.take() {
            if self.core.writer_exited() {
                let _ = worker.join();
            }
            // Otherwise the writer is stuck in a sink write past the deadline; it was
            // abandoned and will exit on its own if the write ever returns.
        }
        metrics
    }
}

impl Drop for WorkerGuard {
    fn drop(&mut self) {
        if !self.stopped {
            self.stop(self.core.settings().shutdown_timeout);
        }
    }
}
