//! [`NonBlockingBuilder`]: every knob, with defaults that never block the caller.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::core::Core;
use crate::pipeline::handle::{NonBlocking, WorkerGuard};
use crate::pipeline::hooks;
use crate::pipeline::worker;
use crate::record::level::Level;
use crate::record::Format;
use crate::settings::mode::Mode;
use crate::settings::overflow::Overflow;
use crate::settings::Settings;
use crate::sink::{Sink, WriterSink};

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
/// default of each such setting instead. What is valid is [`Settings::validate`]'s one
/// rule, the same for a TOML file, a `LOGLAG_*` variable and a sink URL
/// ([`SETTINGS`](crate::SETTINGS) lists them all); nothing is raised or
/// lowered behind your back.
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
#[derive(Clone, Default)]
#[must_use = "call .finish(writer) or .build(sink) to start the pipeline"]
pub struct NonBlockingBuilder {
    settings: Settings,
    /// Its settings came through [`Config::with_env`](crate::Config::with_env), which
    /// read every `LOGLAG_*` variable; otherwise the start warns about those it ignores.
    env_read: bool,
}

/// Its settings (where they came from is no setting).
impl std::fmt::Debug for NonBlockingBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NonBlockingBuilder")
            .field("settings", &self.settings)
            .finish()
    }
}

/// A builder that starts from `settings` (from a [`Config`](crate::Config), or
/// [`Settings::set`] key by key).
impl From<Settings> for NonBlockingBuilder {
    fn from(settings: Settings) -> Self {
        NonBlockingBuilder {
            settings,
            env_read: false,
        }
    }
}

impl NonBlockingBuilder {
    /// What the builder holds so far (not yet validated: see [`Settings::validate`]).
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// What the builder decided, validated, for unit tests that build a `Core` by hand.
    #[cfg(test)]
    pub(crate) fn config(&self) -> crate::settings::Validated {
        self.settings
            .clone()
            .validated()
            .expect("a test's settings are valid")
    }

    /// The byte budget for queued records, headers included: at least 256 bytes, at
    /// most 16 GiB or the machine's physical memory, whichever is less (the budget is
    /// mapped when the pipeline starts; on Linux 256 KiB of it is resident then, the
    /// rest becomes resident ahead of the producers as they reach it, and after a
    /// second of idling it is given back: an idle pipeline with the defaults holds
    /// about 0.7 MiB, and about 1 MiB a few seconds after a burst). Outside that, `build`
    /// is an error and `finish` uses the default (8 MiB) with a warning on stderr.
    pub fn capacity_bytes(mut self, bytes: usize) -> Self {
        self.settings.capacity_bytes = bytes;
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
        self.settings.thread_ring_bytes = Some(bytes);
        self
    }

    /// The largest record kept whole, at least 64 bytes (less is an error). A longer
    /// record is cut with a marker. A record must also fit half of what the shared
    /// ring holds with every thread ring taken (half the budget without thread rings,
    /// 3/8 with the default ones): records are cut there too.
    pub fn max_record_bytes(mut self, bytes: usize) -> Self {
        self.settings.max_record_bytes = bytes;
        self
    }

    /// What to do when the budget is full.
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.settings.overflow = overflow;
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
    /// stays. At least 1 (0 is an error: no record could ever be queued).
    pub fn buffered_lines_limit(mut self, lines: usize) -> Self {
        self.settings.buffered_lines_limit = Some(lines as u64);
        self
    }

    /// The writer thread's name (default `loglag-writer`), as tracing-appender's
    /// `thread_name`. Linux shows its first 15 bytes. A name with a NUL byte cannot
    /// name a thread: `build` is an error, `finish` uses the default with a
    /// warning on stderr.
    pub fn thread_name(mut self, name: impl Into<String>) -> Self {
        self.settings.thread_name = name.into();
        self
    }

    /// The share of the budget only WARN and ERROR may use under `ShedByLevel`, from 0
    /// to 0.45 (outside that is an error); DEBUG and TRACE are kept out of twice this
    /// share.
    pub fn reserve_fraction(mut self, fraction: f64) -> Self {
        self.settings.reserve_fraction = fraction;
        self
    }

    /// Write as soon as this many bytes are queued, at least 1 (every record at once;
    /// 0 is an error). More than the budget is never reached: then only the interval
    /// writes.
    pub fn batch_bytes(mut self, bytes: usize) -> Self {
        self.settings.batch_bytes = bytes;
        self
    }

    /// Write at least this often while anything is queued: from 100 µs to a year
    /// (outside that is an error).
    pub fn flush_interval(mut self, interval: Duration) -> Self {
        self.settings.flush_interval = interval;
        self
    }

    /// Records at or above this level are written at once, together with everything
    /// queued before them. The caller does not wait for that write.
    pub fn flush_level(mut self, level: Level) -> Self {
        self.settings.flush_level = level;
        self
    }

    /// How long dropping the guard may spend writing what is queued. Whatever is left
    /// then is counted as `shutdown` drops and reported on stderr. A timeout beyond
    /// what an `Instant` can reach (`Duration::MAX`) means no deadline: the guard
    /// waits until everything queued is written.
    pub fn shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.settings.shutdown_timeout = timeout;
        self
    }

    /// The format of the in-band "dropped N records" record. Without it, reports take
    /// the front-end's format, or follow the records they sit between.
    pub fn report_format(mut self, format: Format) -> Self {
        self.settings.report_format = Some(format);
        self
    }

    /// Keeps the queue in a memory-mapped file at `path` (created if missing), so records
    /// whose log call returned survive SIGKILL; the next start delivers them first. See
    /// [`spool`](crate::spool) for what is and is not covered. Not with
    /// `Overflow::DropOldest` (an error: records the writer is delivering from the
    /// spool cannot be evicted); use `DropNewest` or `ShedByLevel`.
    ///
    /// ```no_run
    /// let (writer, _guard) = loglag::NonBlockingBuilder::default()
    ///     .spool("/var/spool/app.loglag")
    ///     .build(loglag::sink::FdSink::append("/var/log/app.log")?)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn spool(mut self, path: impl Into<std::path::PathBuf>) -> Self {
        self.settings.spool = Some(path.into());
        self
    }

    /// When the spool and the sink are forced to stable storage (default: never, which
    /// survives SIGKILL but not power loss).
    pub fn spool_sync(mut self, sync: crate::spool::SpoolSync) -> Self {
        self.settings.spool_sync = sync;
        self
    }

    /// Whether [`build`](Self::build) fails when the spool cannot be used (default off:
    /// the pipeline runs without it, warned about on stderr and in
    /// [`Metrics::spool_refused`](crate::Metrics::spool_refused), so that a restart which
    /// overlaps the old process, still holding the spool, logs all the same). Turn it
    /// on where losing crash safety must stop the start.
    pub fn spool_required(mut self, required: bool) -> Self {
        self.settings.spool_required = required;
        self
    }

    /// Fixes the mode and ignores `LOGLAG_MODE`.
    pub fn mode(mut self, mode: Mode) -> Self {
        self.settings.mode = Some(mode);
        self
    }

    /// Whether a panic hook flushes the queue (default on).
    pub fn flush_on_panic(mut self, on: bool) -> Self {
        self.settings.flush_on_panic = on;
        self
    }

    /// Whether SIGTERM and SIGINT flush (within `shutdown_timeout`) and then take their
    /// default action (default off: it installs process-wide signal handlers). On
    /// Windows the console's Ctrl+C, Ctrl+Break, close, logoff and shutdown events do,
    /// through a console control handler, and then the next handler (by default, the
    /// process ends).
    pub fn flush_on_signals(mut self, on: bool) -> Self {
        self.settings.flush_on_signals = on;
        self
    }

    /// Builds the pipeline over any writer: tracing-appender's `finish`, and like it,
    /// it never fails. An invalid `LOGLAG_MODE` is warned about on stderr (naming the
    /// value and the valid ones) and `async` is used; a setting that cannot work (see
    /// [`NonBlockingBuilder`]) is warned about and its default used; a spool that cannot
    /// be used is warned about and the pipeline runs without it.
    ///
    /// A writer is a plain writer: each batch is one `write_all` to it, and a spool
    /// delivers into it at least once (said on stderr, once). A `std::fs::File` and a
    /// [`RollingFileAppender`](crate::rolling::RollingFileAppender) are the exceptions:
    /// they become file sinks, as with [`build`](Self::build), so that a spool recovers
    /// into them exactly once whichever of the two they were given to.
    ///
    /// # Panics
    /// Only if the writer thread cannot be spawned (the system is out of threads or
    /// memory).
    pub fn finish<W: io::Write + Send + 'static>(self, writer: W) -> (NonBlocking, WorkerGuard) {
        // A file is a file whichever door it comes through: as a plain writer its
        // spool would deliver a batch the file had taken again after a kill -9.
        use crate::sink::IntoSink;
        let writer: Box<dyn std::any::Any> = Box::new(writer);
        let writer = match writer.downcast::<std::fs::File>() {
            Ok(file) => return self.start_carrying_on(Box::new(file.into_sink())),
            Err(writer) => writer,
        };
        #[cfg(feature = "rolling")]
        let writer = match writer.downcast::<crate::rolling::RollingFileAppender>() {
            Ok(appender) => return self.start_carrying_on(Box::new(appender.into_sink())),
            Err(writer) => writer,
        };
        if let Some(spool) = &self.settings.spool {
            warn_at_least_once(spool);
        }
        let writer = *writer.downcast::<W>().expect("the writer given");
        self.start_carrying_on(Box::new(WriterSink::new(writer)))
    }

    /// `finish`'s start: it cannot fail, so a setting that cannot work is warned about
    /// and replaced by its default.
    fn start_carrying_on(self, sink: Box<dyn Sink>) -> (NonBlocking, WorkerGuard) {
        match self.start(sink, Strictness::CarryOn) {
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
        self,
        mut sink: Box<dyn Sink>,
        strictness: Strictness,
    ) -> Result<(NonBlocking, WorkerGuard), BuildError> {
        let mut config = self.check_settings(strictness)?;
        if !self.env_read {
            crate::settings::env::warn_unread_variables();
        }
        if config.settings().mode.is_none() {
            config.mode = match Mode::from_env() {
                Ok(mode) => mode,
                Err(e) if strictness == Strictness::Fail => return Err(BuildError::Mode(e)),
                Err(e) => {
                    eprintln!("loglag: {e}; using async");
                    Mode::Async
                }
            };
        }
        let mode = config.mode;
        if let (true, Some(path)) = (mode != Mode::Async, &config.spool) {
            eprintln!(
                "loglag: mode {mode:?} has no queue, so the spool {} is not used",
                path.display()
            );
        }
        let mut spooled = None;
        if let (Mode::Async, Some(path)) = (mode, config.spool.clone()) {
            match crate::spool::open(
                &path,
                config.capacity_bytes,
                sink.as_mut(),
                config.spool_sync,
            ) {
                Ok(opened) => spooled = Some(opened),
                Err(e) if config.spool_required => {
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
                    config.refuse_spool();
                }
            }
        }
        let budget = spooled
            .as_ref()
            .map_or(config.capacity_bytes as u64, |(ring, ..)| ring.capacity());
        config.cap_batch_to(budget);
        let descriptor = crate::sink::descriptor(sink.as_mut());
        let (flush_on_panic, flush_on_signals) = (config.flush_on_panic, config.flush_on_signals);
        // The sink goes to the writer thread, or (sync mode) into the core itself.
        let (core, writer_sink) = if let Some((ring, header, recovered)) = spooled {
            let core = Core::with_ring(config, ring, None, Some(header), recovered);
            (core, Some(sink))
        } else if mode == Mode::Async {
            (Core::new(config, None), Some(sink))
        } else {
            (Core::new(config, Some(sink)), None)
        };
        let core = Arc::new(core);
        core.note_sink_fd(descriptor);
        let worker = writer_sink
            .map(|sink| worker::spawn(core.clone(), sink))
            .transpose()
            .map_err(BuildError::Io)?;
        if flush_on_panic {
            hooks::flush_on_panic(&core);
        }
        let signals = if flush_on_signals {
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
    /// Marks settings that came through `Config::with_env`: the start then has no
    /// variable left unread to warn about.
    #[cfg(feature = "config")]
    pub(crate) fn env_read(mut self, read: bool) -> Self {
        self.env_read = read;
        self
    }

    /// The settings, checked before anything is allocated, mapped or spawned: those
    /// that cannot work are refused (`Fail`), or each replaced by its default with a
    /// warning (`CarryOn`, `finish` only: it cannot fail).
    fn check_settings(
        &self,
        strictness: Strictness,
    ) -> Result<crate::settings::Validated, BuildError> {
        let settings = self.settings.clone();
        if strictness == Strictness::Fail {
            return settings.validated().map_err(BuildError::Setting);
        }
        let (config, replaced) = settings.repaired();
        for problem in replaced {
            eprintln!(
                "{problem}; using the default, {}",
                Settings::default_text(&problem.key)
            );
        }
        Ok(config)
    }
}

/// Whether `finish` carries on past a bad `LOGLAG_MODE` or a setting that cannot work
/// (with a warning) or `build` fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Strictness {
    CarryOn,
    Fail,
}

/// Why [`NonBlockingBuilder::build`] could not build the pipeline. Converts into
/// `io::Error` for `?` in functions that return one.
#[derive(Debug)]
#[non_exhaustive]
pub enum BuildError {
    /// A setting cannot work: the error names it, its value and what is valid, as
    /// [`Settings::validate`] does (and as a TOML file or a URL with that value would).
    Setting(crate::settings::SettingError),
    /// `LOGLAG_MODE` holds something other than off, format-only, sync or async.
    Mode(crate::record::parse::ParseError),
    /// The spool cannot be used ([`spool_required`](NonBlockingBuilder::spool_required)):
    /// in use by another process, corrupt, another version, or not ours.
    Spool(crate::spool::SpoolError),
    /// The writer thread or a signal handler could not be set up.
    Io(io::Error),
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Setting(e) => e.fmt(f),
            BuildError::Mode(e) => e.fmt(f),
            BuildError::Spool(e) => e.fmt(f),
            BuildError::Io(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for BuildError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            BuildError::Setting(e) => Some(e),
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
            BuildError::Setting(e) => io::Error::new(io::ErrorKind::InvalidInput, e),
            BuildError::Mode(e) => io::Error::new(io::ErrorKind::InvalidInput, e),
            BuildError::Spool(spool) => spool.into(),
        }
    }
}

/// Says once per process that a spool over a plain writer delivers at least once: the
/// spool cannot see how far a writer got, so after a kill -9 the batch it was writing
/// comes again. `build` with a file or an `FdSink` knows, and delivers exactly once.
fn warn_at_least_once(spool: &std::path::Path) {
    static WARNED: std::sync::Once = std::sync::Once::new();
    WARNED.call_once(|| {
        eprintln!(
            "loglag: the spool {} delivers into this writer at least once (after a kill -9 the batch being written comes again); give build() a file or an FdSink for exactly once",
            spool.display()
        );
    });
}
