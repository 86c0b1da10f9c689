//! [`NonBlockingBuilder`]: every knob, with defaults that never block the caller.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::core::{Config, Core};
use crate::format::Format;
use crate::handle::{NonBlocking, WorkerGuard};
use crate::hooks;
use crate::level::Level;
use crate::mode::Mode;
use crate::overflow::Overflow;
use crate::sink::{Sink, WriterSink};
use crate::worker;

/// Builds a [`NonBlocking`] writer and its [`WorkerGuard`].
///
/// | setting | default | meaning |
/// |---|---|---|
/// | [`capacity_bytes`](Self::capacity_bytes) | 8 MiB | the byte budget of queued records |
/// | [`max_record_bytes`](Self::max_record_bytes) | 64 KiB | longer records are truncated with a marker |
/// | [`thread_ring_bytes`](Self::thread_ring_bytes) | 1/32 of the budget, 4 KiB to 1 MiB (none under 64 KiB) | each logging thread's own ring, a share of the budget |
/// | [`overflow`](Self::overflow) | [`Overflow::ShedByLevel`] | never waits; sheds DEBUG, then INFO |
/// | [`reserve_fraction`](Self::reserve_fraction) | 1/8 | budget only WARN/ERROR may use (`ShedByLevel`) |
/// | [`batch_bytes`](Self::batch_bytes) | 64 KiB | write as soon as this much is queued |
/// | [`flush_interval`](Self::flush_interval) | 100 ms | ... or when this much time has passed |
/// | [`flush_level`](Self::flush_level) | ERROR | such a record is written at once, with its context |
/// | [`shutdown_timeout`](Self::shutdown_timeout) | 5 s | how long dropping the guard may take |
/// | [`report_format`](Self::report_format) | the front-end's (`LoglagLayer`, `Logger`), else the records' (JSON when they are JSON objects, compact text otherwise) | format of in-band "dropped N" records |
/// | [`mode`](Self::mode) | `async`, or `LOGLAG_MODE` | see [`Mode`] |
/// | [`flush_on_panic`](Self::flush_on_panic) | on | a panic hook flushes |
/// | [`flush_on_signals`](Self::flush_on_signals) | off | SIGTERM/SIGINT flush, then take their default action |
///
/// Two ways to start it, as in tracing-appender: [`finish`](Self::finish) over any
/// writer (the drop-in, which never fails) and [`build`](Self::build) over a sink.
/// Settings that cannot work are refused by `build` with [`BuildError::Setting`],
/// naming the setting, the value and what is valid, before anything is allocated or
/// spawned; `finish`, which cannot return an error, warns on stderr and uses the
/// default instead. These are a `capacity_bytes` under 256 bytes or above
/// the smaller of 16 GiB and the machine's physical memory, and a `thread_name` with a
/// NUL byte. Other settings are raised or lowered to what works, as each setter says.
///
/// ```
/// use std::time::Duration;
/// use loglag::{NonBlockingBuilder, Overflow};
/// let (writer, guard) = NonBlockingBuilder::default()
///     .capacity_bytes(1 << 20)
///     .overflow(Overflow::DropOldest)
///     .flush_interval(Duration::from_millis(50))
///     .finish(std::io::stdout());
/// tracing_subscriber::fmt().with_writer(writer).try_init().ok();
/// # drop(guard);
/// ```
#[derive(Debug, Clone)]
#[must_use = "call .finish(writer) or .build(sink) to start the pipeline"]
pub struct NonBlockingBuilder {
    config: Config,
    mode_from_env: bool,
    spool_required: bool,
    flush_on_panic: bool,
    flush_on_signals: bool,
}

impl Default for NonBlockingBuilder {
    fn default() -> Self {
        NonBlockingBuilder {
            config: Config {
                capacity_bytes: 8 << 20,
                max_record_bytes: 64 << 10,
                overflow: Overflow::default(),
                reserve_fraction: 1.0 / 8.0,
                batch_bytes: 64 << 10,
                flush_interval: Duration::from_millis(100),
                flush_level: Level::Error,
                shutdown_timeout: Duration::from_secs(5),
                report_format: None,
                mode: Mode::Async,
                spool: None,
                spool_refused: false,
                thread_name: "loglag-writer".into(),
                max_records: None,
                thread_ring_bytes: None,
            },
            mode_from_env: true,
            spool_required: false,
            flush_on_panic: true,
            flush_on_signals: false,
        }
    }
}

impl NonBlockingBuilder {
    /// What the builder decided, for unit tests that build a `Core` by hand.
    #[cfg(test)]
    pub(crate) fn config(&self) -> Config {
        self.config.clone()
    }

    /// The byte budget for queued records, headers included: at least 256 bytes, at
    /// most 16 GiB or the machine's physical memory, whichever is less (the budget is
    /// mapped and touched when the pipeline starts). Outside that, `build` is an
    /// error and `finish` uses the default (8 MiB) with a warning on stderr.
    pub fn capacity_bytes(mut self, bytes: usize) -> Self {
        self.config.capacity_bytes = bytes;
        self
    }

    /// Each logging thread's own ring, so that threads never contend on the hot path
    /// (no lock, no shared read-modify-write). A ring is a share of the byte budget:
    /// up to ⌊(budget/4) / bytes⌋ threads get one, and while k rings exist the shared
    /// ring may hold the budget less k × `bytes`, so the bytes queued stay within the
    /// budget. A thread spills into the shared ring when its own is full, so one
    /// thread alone can still fill the whole budget; threads beyond the rings there
    /// are use the shared ring (one compare-and-swap per record). The cost is memory:
    /// the rings' mappings total up to 1.25 × the budget. 0 turns thread rings off, as
    /// does a size under 4 KiB or over a quarter of the budget.
    /// Default: 1/32 of the budget, between 4 KiB and 1 MiB (8 rings of 256 KiB for
    /// 8 MiB); none under a budget of 64 KiB. A spool always uses one shared ring.
    pub fn thread_ring_bytes(mut self, bytes: usize) -> Self {
        self.config.thread_ring_bytes = Some(bytes);
        self
    }

    /// The largest record kept whole; clamped to half of what the shared ring may
    /// hold with every thread ring taken (half the budget without thread rings, 3/8
    /// with the default ones), and raised to 64 bytes if less.
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.config.max_record_bytes = bytes;
        self
    }

    /// What to do when the budget is full.
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.config.overflow = overflow;
        self
    }

    /// tracing-appender compatibility: `lossy(false)` is [`Overflow::Block`],
    /// `lossy(true)` is [`Overflow::DropNewest`].
    pub fn lossy(self, lossy: bool) -> Self {
        self.overflow(if lossy {
            Overflow::DropNewest
        } else {
            Overflow::Block
        })
    }

    /// tracing-appender compatibility: at most `lines` records queued, in addition to
    /// the byte budget ([`capacity_bytes`](Self::capacity_bytes), 8 MiB by default);
    /// whichever is reached first makes the queue full, and the overflow policy
    /// decides. A line count alone does not bound memory, which is why the byte budget
    /// stays. 0 is taken as 1 (no record could ever be queued).
    pub fn buffered_lines_limit(mut self, lines: usize) -> Self {
        self.config.max_records = Some(lines.max(1) as u64);
        self
    }

    /// The writer thread's name (default `loglag-writer`), as tracing-appender's
    /// `thread_name`. Linux shows its first 15 bytes. A name with a NUL byte cannot
    /// name a thread: `build` is an error, `finish` uses the default with a
    /// warning on stderr.
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.config.thread_name = name.into();
        self
    }

    /// The share of the budget only WARN and ERROR may use under `ShedByLevel`
    /// (clamped to 0..=0.45; DEBUG and TRACE are kept out of twice this share).
    pub fn reserve_fraction(mut self, fraction: f64) -> Self {
        self.config.reserve_fraction = fraction;
        self
    }

    /// Write as soon as this many bytes are queued (0 is taken as 1: every record at
    /// once). More than the budget is never reached: then only the interval writes
    /// (and the pipeline takes it as the budget + 1, which is the same).
    pub fn batch_bytes(mut self, bytes: usize) -> Self {
        self.config.batch_bytes = bytes.max(1);
        self
    }

    /// Write at least this often while anything is queued (at least every 100 µs: less
    /// is raised to that).
    pub fn flush_interval(mut self, interval: Duration) -> Self {
        self.config.flush_interval = interval.max(Duration::from_micros(100));
        self
    }

    /// Records at or above this level are written at once, together with everything
    /// queued before them. The caller does not wait for that write.
    pub fn flush_level(mut self, level: Level) -> Self {
        self.config.flush_level = level;
        self
    }

    /// How long dropping the guard may spend writing what is queued. Whatever is left
    /// then is counted as `shutdown` drops and reported on stderr. A timeout beyond
    /// what an `Instant` can reach (`Duration::MAX`) means no deadline: the guard
    /// waits until everything queued is written.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.config.shutdown_timeout = timeout;
        self
    }

    /// The format of the in-band "dropped N records" record. Without it, reports take
    /// the front-end's format, or follow the records they sit between.
    pub fn report_format(mut self, format: Format) -> Self {
        self.config.report_format = Some(format);
        self
    }

    /// Keeps the queue in a memory-mapped file at `path` (created if missing), so records
    /// whose log call returned survive SIGKILL; the next start delivers them first. See
    /// [`spool`](crate::spool) for what is and is not covered. `Overflow::DropOldest`
    /// becomes `DropNewest` in spool mode: records the writer is delivering cannot be
    /// evicted.
    ///
    /// ```no_run
    /// let (writer, _guard) = loglag::NonBlockingBuilder::default()
    ///     .spool("/var/spool/app.loglag")
    ///     .build(loglag::sink::FdSink::append("/var/log/app.log")?)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spool(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        let sync = self
            .config
            .spool
            .as_ref()
            .map_or_else(Default::default, |s| s.1);
        self.config.spool = Some((path.into(), sync));
        self
    }

    /// When the spool and the sink are forced to stable storage (default: never, which
    /// survives SIGKILL but not power loss).
    pub fn spool_sync(mut self, sync: crate::spool::SpoolSync) -> Self {
        if let Some(spool) = &mut self.config.spool {
            spool.1 = sync;
        }
        self
    }

    /// Whether [`build`](Self::build) fails when the spool cannot be used (default off:
    /// the pipeline runs without it, warned about on stderr and in
    /// [`Metrics::spool_refused`](crate::Metrics::spool_refused), so that a restart which
    /// overlaps the old process, still holding the spool, logs all the same). Turn it
    /// on where losing crash safety must stop the start.
    pub fn spool_required(mut self, required: bool) -> Self {
        self.spool_required = required;
        self
    }

    /// Fixes the mode and ignores `LOGLAG_MODE`.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.config.mode = mode;
        self.mode_from_env = false;
        self
    }

    /// Whether a panic hook flushes the queue (default on).
    pub fn flush_on_panic(mut self, on: bool) -> Self {
        self.flush_on_panic = on;
        self
    }

    /// Whether SIGTERM and SIGINT flush (within `shutdown_timeout`) and then take their
    /// default action (default off: it installs process-wide signal handlers).
    pub fn flush_on_signals(mut self, on: bool) -> Self {
        self.flush_on_signals = on;
        self
    }

    /// Builds the pipeline over any writer: tracing-appender's `finish`, and like it,
    /// it never fails. An invalid `LOGLAG_MODE` is warned about on stderr (naming the
    /// value and the valid ones) and `async` is used; a setting that cannot work (see
    /// [`NonBlockingBuilder`]) is warned about and its default used; a spool that cannot
    /// be used is warned about and the pipeline runs without it.
    ///
    /// A writer is a plain writer: each batch is one `write_all` to it. A file passed
    /// here is not known to be a file, so a spool delivers into it at least once; pass
    /// it to [`build`](Self::build) instead for exactly-once delivery and one `write(2)`
    /// per batch.
    ///
    /// # Panics
    /// Only if the writer thread cannot be spawned (the system is out of threads or
    /// memory).
    pub fn finish<W: io::Write + Send + 'static>(self, writer: W) -> (NonBlocking, WorkerGuard) {
        match self.start(Box::new(WriterSink::new(writer)), Strictness::CarryOn) {
            Ok(pair) => pair,
            Err(e) => panic!("loglag: {e}"),
        }
    }

    /// Builds the pipeline over a [`Sink`], or anything that becomes one
    /// ([`IntoSink`](crate::sink::IntoSink)): a `std::fs::File` becomes an
    /// [`FdSink`](crate::sink::FdSink), with exactly-once spool recovery into it; a
    /// [`RollingFileAppender`](crate::rolling::RollingFileAppender) its
    /// [`RollingFile`](crate::sink::RollingFile); a sink of yours stays itself.
    ///
    /// Fails, before anything is spawned, with [`BuildError::Setting`] for a setting
    /// that cannot work (see [`NonBlockingBuilder`]), [`BuildError::Mode`] for an
    /// invalid `LOGLAG_MODE`, and [`BuildError::Io`] when the writer thread or a signal
    /// handler cannot be set up. A spool that cannot be used (in use by another process,
    /// corrupt, not ours) is warned about on stderr and the pipeline runs without it
    /// ([`Metrics::spool_refused`](crate::Metrics::spool_refused) says so), so that a
    /// restart which overlaps the old process still logs; with
    /// [`spool_required`](Self::spool_required) it is [`BuildError::Spool`] instead.
    ///
    /// ```
    /// let file = tempfile::tempfile()?;
    /// let (writer, guard) = loglag::NonBlockingBuilder::default().build(file)?;
    /// # drop((writer, guard));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn build(
        self,
        sink: impl crate::sink::IntoSink,
    ) -> Result<(NonBlocking, WorkerGuard), BuildError> {
        self.start(Box::new(sink.into_sink()), Strictness::Fail)
    }

    fn start(
        mut self,
        mut sink: Box<dyn Sink>,
        strictness: Strictness,
    ) -> Result<(NonBlocking, WorkerGuard), BuildError> {
        self.check_settings(strictness)?;
        if self.mode_from_env {
            self.config.mode = match Mode::from_env() {
                Ok(mode) => mode,
                Err(e) if strictness == Strictness::Fail => return Err(BuildError::Mode(e)),
                Err(e) => {
                    eprintln!("loglag: {e}; using async");
                    Mode::Async
                }
            };
        }
        let mode = self.config.mode;
        if let (true, Some((path, _))) = (mode != Mode::Async, &self.config.spool) {
            eprintln!(
                "loglag: mode {mode:?} has no queue, so the spool {} is not used",
                path.display()
            );
        }
        let mut spooled = None;
        if let (Mode::Async, Some((path, sync))) = (mode, self.config.spool.clone()) {
            match crate::spool::open(&path, self.config.capacity_bytes, sink.as_mut(), sync) {
                Ok(opened) => spooled = Some(opened),
                Err(e) if self.spool_required => {
                    return Err(match crate::spool::SpoolError::of(&e) {
                        Some(spool) => BuildError::Spool(spool.clone()),
                        None => BuildError::Io(e),
                    })
                }
                Err(e) => {
                    eprintln!(
                        "loglag: cannot use the spool {}: {e}; logging without it (records do not survive a crash)",
                        path.display()
                    );
                    self.config.spool = None;
                    self.config.spool_refused = true;
                }
            }
        }
        // A batch larger than the budget is never reached (only the interval writes
        // then), and the writer's buffer is sized by it: the budget + 1 means the same
        // without a buffer of any size asked for (`batch_bytes = "8760GiB"`).
        let budget = spooled
            .as_ref()
            .map_or(self.config.capacity_bytes as u64, |(ring, ..)| {
                ring.capacity()
            });
        let never_reached = usize::try_from(budget).map_or(usize::MAX, |b| b.saturating_add(1));
        self.config.batch_bytes = self.config.batch_bytes.min(never_reached);
        let descriptor = crate::sink::call_sink(|| Ok(sink.as_file().and_then(|f| f.descriptor())))
            .unwrap_or(None);
        // The sink goes to the writer thread, or (sync mode) into the core itself.
        let (core, writer_sink) = if let Some((ring, header, recovered)) = spooled {
            if self.config.overflow == Overflow::DropOldest {
                self.config.overflow = Overflow::DropNewest;
            }
            let core = Core::with_ring(self.config, ring, None, Some(header), recovered);
            (core, Some(sink))
        } else if mode == Mode::Async {
            (Core::new(self.config, None), Some(sink))
        } else {
            (Core::new(self.config, Some(sink)), None)
        };
        let core = Arc::new(core);
        core.note_sink_fd(descriptor);
        let worker = writer_sink
            .map(|sink| worker::spawn(core.clone(), sink))
            .transpose()
            .map_err(BuildError::Io)?;
        if self.flush_on_panic {
            hooks::flush_on_panic(&core);
        }
        let signals = if self.flush_on_signals {
            Some(hooks::flush_on_signals(&core).map_err(BuildError::Io)?)
        } else {
            None
        };
        Ok((
            NonBlocking::new(core.clone()),
            WorkerGuard::new(core, worker, signals),
        ))
    }
}

impl NonBlockingBuilder {
    /// The settings that would break the pipeline rather than merely be clamped by
    /// it: refused (`Fail`), or replaced by their defaults with a warning (`CarryOn`),
    /// before anything is allocated, mapped or spawned.
    fn check_settings(&mut self, strictness: Strictness) -> Result<(), BuildError> {
        use crate::units::{capacity_expected, describe_size, max_capacity_bytes};
        let defaults = NonBlockingBuilder::default().config;
        let max = max_capacity_bytes();
        let capacity = self.config.capacity_bytes;
        if !(crate::units::MIN_CAPACITY_BYTES..=max).contains(&capacity) {
            let problem = format!(
                "capacity_bytes = {}: expected {}",
                describe_size(capacity as u64),
                capacity_expected(max)
            );
            let default = defaults.capacity_bytes.min(max);
            strictness.refuse(problem, &describe_size(default as u64))?;
            self.config.capacity_bytes = default;
        }
        if self.config.thread_name.contains('\0') {
            let problem = format!(
                "thread_name = {:?}: expected a name without NUL bytes",
                self.config.thread_name
            );
            strictness.refuse(problem, &defaults.thread_name)?;
            self.config.thread_name = defaults.thread_name;
        }
        Ok(())
    }
}

/// Whether `finish` carries on past a bad `LOGLAG_MODE` or a setting that cannot work
/// (with a warning) or `build` fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strictness {
    CarryOn,
    Fail,
}

impl Strictness {
    /// `problem` (a setting that cannot work) as an error, or warned about on stderr
    /// with the `default` used instead.
    fn refuse(self, problem: String, default: &str) -> Result<(), BuildError> {
        match self {
            Strictness::Fail => Err(BuildError::Setting(problem)),
            Strictness::CarryOn => {
                eprintln!("loglag: {problem}; using the default, {default}");
                Ok(())
            }
        }
    }
}

/// Why [`NonBlockingBuilder::build`] could not build the pipeline. Converts into
/// `io::Error` for `?` in functions that return one.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// A setting cannot work: the message names it, its value and what is valid
    /// (`capacity_bytes = 100 B: expected 256 B to 16 GiB`).
    Setting(String),
    /// `LOGLAG_MODE` holds something other than off, format-only, sync or async.
    Mode(crate::mode::ParseModeError),
    /// The spool cannot be used ([`spool_required`](NonBlockingBuilder::spool_required)):
    /// in use by another process, corrupt, another version, or not ours.
    Spool(crate::spool::SpoolError),
    /// The writer thread or a signal handler could not be set up.
    Io(io::Error),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Setting(problem) => write!(f, "loglag: {problem}"),
            BuildError::Mode(e) => e.fmt(f),
            BuildError::Spool(e) => e.fmt(f),
            BuildError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Setting(_) => None,
            BuildError::Mode(e) => Some(e),
            BuildError::Spool(e) => Some(e),
            BuildError::Io(e) => Some(e),
        }
    }
}

impl From<BuildError> for io::Error {
    fn from(e: BuildError) -> io::Error {
        match e {
            BuildError::Io(e) => e,
            BuildError::Setting(_) => io::Error::new(io::ErrorKind::InvalidInput, e.to_string()),
            BuildError::Mode(e) => io::Error::new(io::ErrorKind::InvalidInput, e),
            BuildError::Spool(spool) => spool.into(),
        }
    }
}
