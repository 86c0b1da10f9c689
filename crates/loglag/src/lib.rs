//! Logging that never holds a request hostage to a slow sink.
//!
//! `loglag` moves log writes to a writer thread through a queue bounded in **bytes**,
//! with an explicit [`Overflow`] policy, so the caller's wait is bounded by a number you
//! choose. Every record is accounted for: it is written, or it is dropped and counted
//! with a reason (queue full, I/O error, shutdown deadline, reentrant) and its level, and the drop
//! is announced in-band in the sink. At any snapshot
//! `written + dropped + in_flight == accepted` ([`Metrics`]).
//!
//! Writes are batched (up to `batch_bytes`, at least every `flush_interval`); an ERROR
//! record is written at once together with the context queued before it. The guard
//! flushes on drop within a deadline; a panic hook flushes; SIGTERM/SIGINT can too.
//!
//! # Example
//!
//! A drop-in replacement for `tracing_appender::non_blocking`:
//!
//! ```
//! let (writer, guard) = loglag::non_blocking(std::io::stdout());
//! tracing_subscriber::fmt().with_writer(writer.clone()).try_init().ok();
//! tracing::info!(port = 8080, "listening");
//! let flushed = guard.flush(std::time::Duration::from_secs(5))?;
//! assert_eq!(flushed.metrics.in_flight_records, 0);
//! # Ok::<(), loglag::FlushTimeout>(())
//! ```
//!
//! Or format with loglag itself, as JSON lines, compact text or logfmt:
//!
//! ```
//! use tracing_subscriber::prelude::*;
//! let (writer, _guard) = loglag::NonBlockingBuilder::default()
//!     .capacity_bytes(4 << 20)
//!     .overflow(loglag::Overflow::ShedByLevel)
//!     .build(loglag::sink::FdSink::stderr())?;
//! tracing_subscriber::registry().with(loglag::LoglagLayer::new(writer)).try_init().ok();
//! # Ok::<(), loglag::BuildError>(())
//! ```
//!
//! # Two ways to build
//!
//! As in tracing-appender: one [`NonBlockingBuilder`], finished over a writer or built
//! over a sink.
//!
//! | you want | call | on a bad setting or `LOGLAG_MODE` |
//! |---|---|---|
//! | tracing-appender's drop-in: any `io::Write` | [`non_blocking(writer)`](non_blocking()), or [`NonBlockingBuilder`]`::default()…`[`finish`](NonBlockingBuilder::finish)`(writer)` | warns on stderr, carries on |
//! | a sink: a `File` (exactly-once with a spool), rolling files, syslog, RELP, OTLP, a FIFO, a sink of yours | [`NonBlockingBuilder`]`::default()…`[`build`](NonBlockingBuilder::build)`(sink)` | [`BuildError`] |
//!
//! Every option is one row of [`SETTINGS`]: a builder method, a TOML key, a
//! `LOGLAG_*` variable and a URL query parameter, read by one parser
//! ([`Settings::set`]) and checked by one rule ([`Settings::validate`]). [`Config`]
//! (a TOML file, the environment, a sink URL such as
//! `file:///var/log/app.log?rotate=daily&keep=7`) gives you the builder and the sink:
//! [`Config::build`] is `config.builder().build(sink)`.
//!
//! Then a front end: `tracing_subscriber::fmt().with_writer(writer)` (the drop-in),
//! [`LoglagLayer`] (formats on the writer thread), [`Logger`] for `log`, or
//! [`set_global`] for loglag's own macros. A front end changes one setting only: the
//! format of loglag's own lines in the sink (drop announcements), which follows the
//! front end's format unless [`NonBlockingBuilder::report_format`] was set, so that a
//! JSON log stays all JSON.
//!
//! # Endings
//!
//! | ending | what happens to queued records |
//! |---|---|
//! | the [`WorkerGuard`] drops (end of `main`, unwinding) | written within `shutdown_timeout` (5 s); the rest counted as `shutdown` drops and reported on stderr |
//! | a panic | the panic hook flushes within `shutdown_timeout` (on by default) |
//! | SIGTERM / SIGINT (Windows: the console's Ctrl+C, Ctrl+Break, close, logoff, shutdown) | with [`NonBlockingBuilder::flush_on_signals`]: written within the deadline, then the signal's default action |
//! | `std::process::exit` | **nothing runs**: exit skips destructors. Call [`WorkerGuard::shutdown`] first |
//! | SIGKILL | lost, unless [`NonBlockingBuilder::spool`] keeps the queue in a mapped file: then the next start delivers them |
//! | power loss | lost, unless the spool is synced ([`spool::SpoolSync`]) |
//!
//! # The hot path
//!
//! [`LoglagLayer`] and loglag's own macros ([`info!`] and the other levels, after
//! [`set_global`]) do not format on the calling thread: they copy the event's values as
//! binary, with a raw timestamp (the TSC where it is invariant; `LOGLAG_CLOCK=realtime`
//! reads `CLOCK_REALTIME` instead) and a pointer to the static call site, and the
//! writer thread renders the line, byte for byte what the caller would have built. A
//! message with arguments (`"retry {}"`) is still formatted on the caller; values in
//! fields are not. With a spool, in `sync` mode and in a forked child, records are
//! rendered on the caller, since a captured record points into this process's memory.
//!
//! Queues: each logging thread gets a ring of its own, a share of the byte budget
//! (no lock and no shared read-modify-write when it logs), up to
//! ⌊(budget/4) / `thread_ring_bytes`⌋ threads; the others, and a thread whose ring is
//! full, use a shared ring that holds the rest of the budget. The writer merges them.
//! See [`NonBlockingBuilder::thread_ring_bytes`].
//!
//! Order: one thread's records are written in the order of its calls. Between threads
//! the writer merges by a timestamp read when each record is logged (the TSC, or
//! `CLOCK_MONOTONIC`), so records of different threads come out in the order they were
//! logged, except that one published after the writer has already written a
//! later-stamped record of another thread comes after it: the two were logged within
//! one logging call of each other (up to ~400 ns at p99.9 in `cargo bench -p loglag
//! --bench latency`), or the thread was preempted in between. Sort by timestamp where that
//! matters.
//!
//! ```
//! let (writer, guard) = loglag::non_blocking(Vec::<u8>::new());
//! loglag::set_global(&writer, loglag::Format::Json, loglag::Level::Info);
//! loglag::info!(port = 8080, tls = true, "listening");
//! assert_eq!(guard.shutdown().written_records, 1);
//! ```
//!
//! Set `LOGLAG_MODE=off|format-only|sync|async` to compare building records with
//! writing them, on your own service, without recompiling ([`Mode`]).
//!
//! # Feature flags
//!
//! | feature | default | enables |
//! |---|---|---|
//! | `tracing` | yes | [`LoglagLayer`] and `MakeWriter` for [`NonBlocking`] |
//! | `log` | yes | [`Logger`] |
//! | `signals` | yes | [`NonBlockingBuilder::flush_on_signals`] (signal-hook; on Windows a console control handler) |
//! | `rolling` | yes | [`rolling`]: rotation, retention, gzip (flate2) |
//! | `config` | yes | [`Config`]: every option from TOML or `LOGLAG_*` variables (toml) |
//! | `prometheus` | no | `prometheus`: the Prometheus text exposition and a scrape endpoint |
//! | `metrics` | no | `metrics_facade`: the pipelines' metrics through the `metrics` crate (turns `prometheus` on) |
//! | `unstable-lab` | no | what loglag's own lab and CLI use (`units`, the hidden `__lab` and `__named_enum!`): not an API, free to change |

mod core;
/// The line builder, for the lab and the fuzz target: not an API, free to change.
#[cfg(feature = "unstable-lab")]
#[doc(hidden)]
pub mod __lab {
    pub use crate::record::line::{LineBuilder, Value};
    pub use crate::record::time::rfc3339;
    pub use crate::sink::fd::set_pipe_size;
    /// The seal of `sink::FileSink`, for loglag's own tests' recording sinks.
    pub use crate::sink::sealed::Sealed as FileSinkSeal;
}
mod export;
mod front;
mod pipeline;
/// tracing-appender's module path: `loglag::non_blocking::{NonBlocking, WorkerGuard,
/// NonBlockingBuilder}` as `tracing_appender::non_blocking::...`.
pub mod non_blocking {
    pub use crate::pipeline::builder::NonBlockingBuilder;
    pub use crate::pipeline::handle::{
        ErrorCounter, NonBlocking, WorkerGuard, DEFAULT_BUFFERED_LINES_LIMIT,
    };
}
mod queue;
mod record;
#[cfg(feature = "rolling")]
// tracing-appender's `rolling` API, at its path; the file lives beside the sink it
// fronts (`sink/rolling/`).
#[path = "sink/rolling/appender.rs"]
pub mod rolling;
mod settings;
pub mod sink;
pub mod spool;
mod sys;

#[cfg(feature = "metrics")]
pub use crate::export::metrics_facade;
#[cfg(feature = "prometheus")]
pub use crate::export::prometheus;
#[doc(hidden)]
pub use crate::front::macros;
/// Sizes and durations as loglag writes them, for the lab and the CLI (feature
/// `unstable-lab`): not an API, free to change.
#[cfg(feature = "unstable-lab")]
pub use crate::settings::units;

pub use crate::core::flush::{FlushTimeout, Flushed};
pub use crate::core::metrics::{Metrics, WriteLatency};
#[cfg(feature = "config")]
pub use crate::front::config::Config;
#[cfg(feature = "tracing")]
pub use crate::front::layer::LoglagLayer;
#[cfg(feature = "log")]
pub use crate::front::logger::Logger;
pub use crate::front::macros::{set_global, set_max_level};
pub use crate::pipeline::builder::{BuildError, NonBlockingBuilder};
pub use crate::pipeline::handle::{
    ErrorCounter, FlushFuture, NonBlocking, RecordWriter, WorkerGuard,
};
pub use crate::record::drops::DropReason;
pub use crate::record::level::Level;
pub use crate::record::parse::ParseError;
pub use crate::record::{Format, Timer};
pub use crate::settings::mode::{Mode, MODE_ENV};
pub use crate::settings::overflow::Overflow;
pub use crate::settings::{Setting, SettingError, Settings, SETTINGS};

/// Builds a pipeline over `writer` with the defaults of [`NonBlockingBuilder`].
///
/// ```
/// let (mut writer, guard) = loglag::non_blocking(Vec::<u8>::new());
/// std::io::Write::write_all(&mut writer, b"one record\n")?;
/// let metrics = guard.shutdown();
/// assert_eq!(metrics.written_records, 1);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn non_blocking<W: std::io::Write + Send + 'static>(writer: W) -> (NonBlocking, WorkerGuard) {
    NonBlockingBuilder::default().finish(writer)
}

/// README.md's examples, compiled (and run, unless `no_run`) as doctests.
#[cfg(all(doctest, feature = "rolling", feature = "tracing"))]
#[doc = include_str!("../../../README.md")]
pub struct ReadmeDoctests;

/// docs/library.md's examples, compiled (and run, unless `no_run`) as doctests.
#[cfg(all(doctest, feature = "rolling", feature = "tracing"))]
#[doc = include_str!("../../../docs/library.md")]
pub struct LibraryDoctests;

/// MIGRATING.md's examples, compiled and run as doctests.
#[cfg(all(doctest, feature = "rolling", feature = "tracing"))]
#[doc = include_str!("../../../MIGRATING.md")]
pub struct MigratingDoctests;
