//! A tracing [`Layer`] that formats events itself and hands them to the pipeline.

use std::time::SystemTime;

use tracing_core::field::{Field, Visit};
use tracing_core::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use crate::format::{with_line_buffer, Format, LineBuilder, Value};
use crate::level::Level;
use crate::mode::Mode;
use crate::non_blocking::NonBlocking;

/// A tracing layer that renders each event in a [`Format`] (JSON by default) into a
/// per-thread buffer and submits it, without allocating per event.
///
/// ```
/// use tracing_subscriber::prelude::*;
/// let (writer, _guard) = loglag::non_blocking(std::io::stdout());
/// let layer = loglag::LoglagLayer::new(writer).format(loglag::Format::Logfmt);
/// tracing_subscriber::registry().with(layer).try_init().ok();
/// tracing::warn!(disk = "sda", free_mb = 12, "low space");
/// ```
#[derive(Debug, Clone)]
pub struct LoglagLayer {
    writer: NonBlocking,
    format: Format,
}

impl LoglagLayer {
    /// A JSON layer over `writer`.
    pub fn new(writer: NonBlocking) -> LoglagLayer {
        LoglagLayer {
            writer,
            format: Format::Json,
        }
    }

    /// Sets the format.
    pub fn format(mut self, format: Format) -> LoglagLayer {
        self.format = format;
        self
    }

    /// The pipeline's accounting (the same as [`NonBlocking::metrics`]).
    pub fn metrics(&self) -> crate::Metrics {
        self.writer.metrics()
    }

    /// Waits until every record accepted before this call is written or dropped.
    pub fn flush(
        &self,
        timeout: std::time::Duration,
    ) -> Result<crate::Flushed, crate::FlushTimeout> {
        self.writer.flush(timeout)
    }
}

struct FieldVisitor<'a, 'b>(&'a mut LineBuilder<'b>);

impl Visit for FieldVisitor<'_, '_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.field(field.name(), Value::Debug(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.field(field.name(), Value::Str(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.field(field.name(), Value::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.field(field.name(), Value::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.field(field.name(), Value::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.field(field.name(), Value::Bool(value));
    }
}

impl<S: Subscriber> Layer<S> for LoglagLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mode = self.writer.mode();
        if mode == Mode::Off {
            return;
        }
        let meta = event.metadata();
        let level = Level::from(meta.level());
        with_line_buffer(|buf| {
            let mut line =
                LineBuilder::begin(buf, self.format, SystemTime::now(), level, meta.target());
            event.record(&mut FieldVisitor(&mut line));
            line.finish();
            if mode != Mode::FormatOnly {
                self.writer.submit(level, buf);
            } else {
                std::hint::black_box(&buf);
            }
        });
    }
}
