//! A [`log::Log`] implementation over the pipeline.

use std::time::{Duration, SystemTime};

use crate::pipeline::handle::NonBlocking;
use crate::record::level::Level;
use crate::record::{with_line_buffer, Format, LineBuilder, Value};
use crate::settings::mode::Mode;

/// Routes the `log` crate's records through the pipeline.
///
/// ```
/// let (writer, _guard) = loglag::non_blocking(std::io::stdout());
/// loglag::Logger::new(writer).max_level(log::LevelFilter::Info).init().ok();
/// log::info!("ready on port {}", 8080);
/// ```
#[derive(Debug, Clone)]
pub struct Logger {
    writer: NonBlocking,
    format: Format,
    max_level: log::LevelFilter,
}

impl Logger {
    /// A JSON logger at `Info` and above.
    pub fn new(writer: NonBlocking) -> Logger {
        writer.core.adopt_report_format(Format::Json);
        Logger {
            writer,
            format: Format::Json,
            max_level: log::LevelFilter::Info,
        }
    }

    /// Sets the format (the pipeline's in-band drop reports follow it, unless
    /// `NonBlockingBuilder::report_format` was set).
    pub fn format(mut self, format: Format) -> Logger {
        self.writer.core.adopt_report_format(format);
        self.format = format;
        self
    }

    /// Sets the most verbose level that is logged.
    pub fn max_level(mut self, level: log::LevelFilter) -> Logger {
        self.max_level = level;
        self
    }

    /// The pipeline's accounting (the same as [`NonBlocking::metrics`]).
    pub fn metrics(&self) -> crate::core::metrics::Metrics {
        self.writer.metrics()
    }

    /// Installs this logger as the global `log` logger.
    pub fn init(self) -> Result<(), log::SetLoggerError> {
        log::set_max_level(self.max_level);
        log::set_boxed_logger(Box::new(self))
    }
}

impl log::Log for Logger {
    fn enabled(&self, metadata: &log::Metadata<'_>) -> bool {
        metadata.level() <= self.max_level
    }

    fn log(&self, record: &log::Record<'_>) {
        let mode = self.writer.mode();
        if !self.enabled(record.metadata()) || mode == Mode::Off {
            return;
        }
        let level = Level::from(record.level());
        let core = &self.writer.core;
        // Marked before the thread-local line buffer is taken: a signal handler that
        // logs there is refused as `reentrant`, never handed a half-taken buffer.
        let Some(entered) = core.enter() else {
            return core.drop_reentrant(level);
        };
        with_line_buffer(|buf| {
            let mut line =
                LineBuilder::begin(buf, self.format, SystemTime::now(), level, record.target());
            {
                // The arguments' `Display` is the caller's code: one that logs is logged.
                let _user = entered.user_code();
                line.field("message", Value::Args(*record.args()));
            }
            line.finish();
            if mode != Mode::FormatOnly {
                core.submit_entered(level, buf);
            } else {
                std::hint::black_box(&buf);
            }
        });
    }

    fn flush(&self) {
        let _ = self.writer.flush(Duration::from_secs(1));
    }
}
