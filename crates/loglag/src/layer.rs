//! A tracing [`Layer`] that formats events itself and hands them to the pipeline.

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::{LookupSpan, SpanRef};

use crate::capture::{Encoder, Site};
use crate::format::{escape, write_field, Format, Value};
use crate::handle::NonBlocking;
use crate::level::Level;
use crate::mode::Mode;

/// A tracing layer that captures each event's values as binary on the calling thread
/// and renders it in a [`Format`] (JSON by default) on the writer thread, without
/// allocating per event. (In `sync` mode, with a spool, or in a forked child it
/// renders on the calling thread: see the crate's notes on the hot path.)
///
/// Events inside spans carry them, as tracing-subscriber's JSON does: `"span"` (the
/// innermost, with its fields) and `"spans"` (root first). Text formats add
/// `span=root>leaf` and the spans' fields. A span's fields are rendered once, when the
/// span is created or recorded, not per event.
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
        writer.core.adopt_report_format(Format::Json);
        LoglagLayer {
            writer,
            format: Format::Json,
        }
    }

    /// Sets the format (the pipeline's in-band drop reports follow it, unless
    /// `NonBlockingBuilder::report_format` was set).
    pub fn format(mut self, format: Format) -> LoglagLayer {
        self.writer.core.adopt_report_format(format);
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

/// A span's fields, each rendered once in the layer's format (`,"k":v` for JSON,
/// ` k=v` otherwise), and their concatenation, which events copy. A field recorded
/// again replaces its old value, so the buffer is bounded by the span's field set.
#[derive(Default)]
struct SpanFields {
    entries: Vec<(&'static str, Vec<u8>)>,
    rendered: Vec<u8>,
}

impl SpanFields {
    fn rebuild(&mut self) {
        self.rendered.clear();
        for (_, bytes) in &self.entries {
            self.rendered.extend_from_slice(bytes);
        }
    }
}

struct SpanVisitor<'a> {
    fields: &'a mut SpanFields,
    format: Format,
}

impl SpanVisitor<'_> {
    fn put(&mut self, field: &Field, value: Value<'_>) {
        let name = field.name();
        let index = match self.fields.entries.iter().position(|(n, _)| *n == name) {
            Some(i) => i,
            None => {
                self.fields.entries.push((name, Vec::new()));
                self.fields.entries.len() - 1
            }
        };
        let out = &mut self.fields.entries[index].1;
        out.clear();
        write_field(out, self.format, true, name, value);
    }
}

impl Visit for SpanVisitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.put(field, Value::Debug(value));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::Str(value));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::I64(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::U64(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::F64(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::Bool(value));
    }
}

/// A span as tracing-subscriber's JSON writes it: its fields, then its name.
fn span_json<S: for<'a> LookupSpan<'a>>(out: &mut Vec<u8>, span: &SpanRef<'_, S>) {
    out.push(b'{');
    if let Some(fields) = span.extensions().get::<SpanFields>() {
        // Rendered as `,"k":v` each: drop the first comma, keep one before the name.
        if let Some(rest) = fields.rendered.strip_prefix(b",") {
            out.extend_from_slice(rest);
            out.push(b',');
        }
    }
    out.extend_from_slice(b"\"name\":\"");
    escape::json_str(out, span.name());
    out.extend_from_slice(b"\"}");
}

impl LoglagLayer {
    /// Appends the event's span context: `leaf` and its ancestors, looked up once.
    fn write_spans<S>(&self, out: &mut Vec<u8>, leaf: &SpanRef<'_, S>)
    where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        match self.format {
            Format::Json => {
                out.extend_from_slice(b",\"span\":");
                span_json(out, leaf);
                out.extend_from_slice(b",\"spans\":[");
                for (i, span) in leaf.scope().from_root().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    span_json(out, &span);
                }
                out.push(b']');
            }
            // Syslog: the span context follows the message text.
            Format::Compact | Format::Logfmt | Format::Syslog => {
                out.extend_from_slice(b" span=");
                for (i, span) in leaf.scope().from_root().enumerate() {
                    if i > 0 {
                        out.push(b'>');
                    }
                    escape::text_str(out, span.name(), true);
                }
                for span in leaf.scope().from_root() {
                    if let Some(fields) = span.extensions().get::<SpanFields>() {
                        out.extend_from_slice(&fields.rendered);
                    }
                }
            }
        }
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for LoglagLayer {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        if self.writer.mode() == Mode::Off {
            return;
        }
        let Some(span) = ctx.span(id) else { return };
        let mut fields = SpanFields::default();
        attrs.record(&mut SpanVisitor {
            fields: &mut fields,
            format: self.format,
        });
        fields.rebuild();
        span.extensions_mut().insert(fields);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let mut extensions = span.extensions_mut();
        if let Some(fields) = extensions.get_mut::<SpanFields>() {
            values.record(&mut SpanVisitor {
                fields,
                format: self.format,
            });
            fields.rebuild();
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let meta = event.metadata();
        let level = Level::from(meta.level());
        let site = Site::Tracing(meta);
        // Only the values are copied here; the writer renders the line. The spans'
        // fields were rendered once, when recorded, and are copied as they are.
        self.writer
            .core
            .submit_captured(level, site, self.format, |captured| {
                event.record(&mut CaptureVisitor(captured));
                if let Some(leaf) = ctx.event_span(event) {
                    captured.extra(|out| self.write_spans(out, &leaf));
                }
            });
    }
}

/// Copies an event's values into its captured form, by field index.
struct CaptureVisitor<'a, 'b>(&'a mut Encoder<'b>);

impl Visit for CaptureVisitor<'_, '_> {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.debug(field.index() as u8, value);
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.str(field.index() as u8, value);
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.i64(field.index() as u8, value);
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.u64(field.index() as u8, value);
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.f64(field.index() as u8, value);
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.bool(field.index() as u8, value);
    }
}
