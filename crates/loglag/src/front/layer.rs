//! A tracing [`Layer`] that formats events itself and hands them to the pipeline.

use tracing_core::field::{Field, Visit};
use tracing_core::span::{Attributes, Id, Record};
use tracing_core::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};
use tracing_subscriber::registry::{LookupSpan, SpanRef};

use crate::pipeline::handle::NonBlocking;
use crate::record::capture::{Encoder, Site};
use crate::record::level::Level;
use crate::record::{escape, write_field, Format, Shape, Timer, TimerKind, Value};
use crate::settings::mode::Mode;

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
///
/// # tracing-subscriber's JSON options
///
/// The layer takes the options of `tracing_subscriber::fmt().json()` under the same
/// names, and writes what `fmt().json()` writes with the same options, byte for byte
/// (`crates/loglag/tests/it/layer_fmt_options.rs` compares every combination):
/// [`flatten_event`](LoglagLayer::flatten_event),
/// [`with_current_span`](LoglagLayer::with_current_span),
/// [`with_span_list`](LoglagLayer::with_span_list),
/// [`with_target`](LoglagLayer::with_target), [`with_file`](LoglagLayer::with_file),
/// [`with_line_number`](LoglagLayer::with_line_number),
/// [`with_thread_ids`](LoglagLayer::with_thread_ids),
/// [`with_thread_names`](LoglagLayer::with_thread_names),
/// [`with_timer`](LoglagLayer::with_timer) (a [`Timer`]) and
/// [`without_time`](LoglagLayer::without_time). An option that is off costs nothing.
///
/// ```
/// use tracing_subscriber::prelude::*;
/// let (writer, guard) = loglag::non_blocking(Vec::<u8>::new());
/// // was: tracing_subscriber::fmt().json().flatten_event(true).with_line_number(true)
/// let layer = loglag::LoglagLayer::new(writer)
///     .flatten_event(true)
///     .with_line_number(true);
/// let subscriber = tracing_subscriber::registry().with(layer);
/// tracing::subscriber::with_default(subscriber, || {
///     // {"timestamp":"…","level":"INFO","message":"listening","port":8080,"target":"…","line_number":…}
///     tracing::info!(port = 8080, "listening");
/// });
/// assert_eq!(guard.shutdown().written_records, 1);
/// ```
#[derive(Debug, Clone)]
pub struct LoglagLayer {
    writer: NonBlocking,
    format: Format,
    /// The options the writer needs (a captured record carries them).
    shape: Shape,
    /// The timer `with_timer` set; `without_time` hides it as fmt does, without
    /// forgetting it.
    timer: Timer,
    display_timestamp: bool,
    current_span: bool,
    span_list: bool,
    thread_ids: bool,
    thread_names: bool,
}

impl LoglagLayer {
    /// A JSON layer over `writer`.
    pub fn new(writer: NonBlocking) -> LoglagLayer {
        writer.core.adopt_report_format(Format::Json);
        LoglagLayer {
            writer,
            format: Format::Json,
            shape: Shape::default(),
            timer: Timer::system_time(),
            display_timestamp: true,
            current_span: true,
            span_list: true,
            thread_ids: false,
            thread_names: false,
        }
    }

    /// Sets the format (the pipeline's in-band drop reports follow it, unless
    /// `NonBlockingBuilder::report_format` was set).
    pub fn format(mut self, format: Format) -> LoglagLayer {
        self.writer.core.adopt_report_format(format);
        self.format = format;
        self
    }

    fn set_bit(mut self, bit: u8, on: bool) -> LoglagLayer {
        if on {
            self.shape.bits |= bit;
        } else {
            self.shape.bits &= !bit;
        }
        self
    }

    /// Writes the event's fields at the top level of the JSON object, after `"level"`,
    /// instead of under `"fields"` (`fmt().json().flatten_event(true)`). Off by
    /// default. Other formats are flat already: no effect.
    pub fn flatten_event(self, flatten_event: bool) -> LoglagLayer {
        self.set_bit(Shape::FLATTEN, flatten_event)
    }

    /// Whether JSON records carry `"span"`, the event's span with its fields
    /// (`fmt().json().with_current_span(false)`). On by default. Other formats write
    /// their `span=root>leaf` context unless this and
    /// [`with_span_list`](LoglagLayer::with_span_list) are both off.
    pub fn with_current_span(mut self, display_current_span: bool) -> LoglagLayer {
        self.current_span = display_current_span;
        self
    }

    /// Whether JSON records carry `"spans"`, the entered spans from the root
    /// (`fmt().json().with_span_list(false)`). On by default. Other formats: see
    /// [`with_current_span`](LoglagLayer::with_current_span).
    pub fn with_span_list(mut self, display_span_list: bool) -> LoglagLayer {
        self.span_list = display_span_list;
        self
    }

    /// Whether records carry the event's target (`"target"`, `target=`, `app:`). On
    /// by default, in every format.
    pub fn with_target(self, display_target: bool) -> LoglagLayer {
        self.set_bit(Shape::NO_TARGET, !display_target)
    }

    /// Whether records carry the source file of the event's call site (`"filename"`,
    /// after `"target"`), read from its static metadata on the writer. Off by default.
    /// Other formats write a field `filename=` at the end (in syslog, a parameter).
    pub fn with_file(self, display_filename: bool) -> LoglagLayer {
        self.set_bit(Shape::FILE, display_filename)
    }

    /// Whether records carry the line of the event's call site (`"line_number"`, after
    /// `"filename"`). Off by default. Other formats: a field `line_number=` at the end.
    pub fn with_line_number(self, display_line_number: bool) -> LoglagLayer {
        self.set_bit(Shape::LINE, display_line_number)
    }

    /// Whether records carry the logging thread's id, `"threadId":"ThreadId(7)"`, last
    /// (`fmt().json().with_thread_ids(true)`). Off by default. Read once per thread.
    /// Other formats: a field `threadId=` at the end.
    pub fn with_thread_ids(mut self, display_thread_id: bool) -> LoglagLayer {
        self.thread_ids = display_thread_id;
        self
    }

    /// Whether records carry the logging thread's name, `"threadName":"main"`, before
    /// its id (an unnamed thread: its id, unless ids are on, as fmt does)
    /// (`fmt().json().with_thread_names(true)`). Off by default. Read once per thread.
    /// Other formats: a field `threadName=` at the end.
    pub fn with_thread_names(mut self, display_thread_name: bool) -> LoglagLayer {
        self.thread_names = display_thread_name;
        self
    }

    /// How the timestamp is written (`fmt().with_timer(…)`'s counterparts: see
    /// [`Timer`]). Like fmt's, it does not bring back a timestamp that
    /// [`without_time`](LoglagLayer::without_time) took away.
    pub fn with_timer(mut self, timer: Timer) -> LoglagLayer {
        self.timer = timer;
        self.shape.timer = self.timer_kind();
        self
    }

    /// No timestamp (`fmt().without_time()`): JSON leaves out `"timestamp"`, compact
    /// text and logfmt their time; syslog writes RFC 5424's NILVALUE `-`.
    pub fn without_time(mut self) -> LoglagLayer {
        self.display_timestamp = false;
        self.shape.timer = self.timer_kind();
        self
    }

    fn timer_kind(&self) -> TimerKind {
        if self.display_timestamp {
            self.timer.0
        } else {
            TimerKind::None
        }
    }

    /// The pipeline's accounting (the same as [`NonBlocking::metrics`]).
    pub fn metrics(&self) -> crate::core::metrics::Metrics {
        self.writer.metrics()
    }

    /// Waits until every record accepted before this call is written or dropped.
    pub fn flush(
        &self,
        timeout: std::time::Duration,
    ) -> Result<crate::core::flush::Flushed, crate::core::flush::FlushTimeout> {
        self.writer.flush(timeout)
    }
}

/// A span's fields, each rendered once in the layer's format (`,"k":v` for JSON,
/// ` k=v` otherwise), and their concatenation, which events copy. A field recorded
/// again replaces its old value, so the buffer is bounded by the span's field set.
/// In JSON they are in name order, as tracing-subscriber keeps them (a map).
#[derive(Default)]
struct SpanFields {
    entries: Vec<(&'static str, Vec<u8>)>,
    rendered: Vec<u8>,
}

impl SpanFields {
    fn rebuild(&mut self, format: Format) {
        if format == Format::Json {
            self.entries.sort_by(|a, b| a.0.cmp(b.0));
        }
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
        self.put_named(field.name(), value);
    }

    fn put_named(&mut self, name: &'static str, value: Value<'_>) {
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
        // tracing-subscriber's JSON drops a raw identifier's `r#` from a `Debug`
        // value's name (only there).
        match field.name().strip_prefix("r#") {
            Some(name) if self.format == Format::Json => self.put_named(name, Value::Debug(value)),
            _ => self.put(field, Value::Debug(value)),
        }
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
    /// Appends the event's span context as tracing-subscriber's JSON finds it: `"span"`
    /// is the event's explicit parent, else the current span (`current`); `"spans"`
    /// lists the current span's scope (`list`, the same span unless the parent is
    /// explicit). Text formats write `current`'s scope.
    fn write_spans<S>(
        &self,
        out: &mut Vec<u8>,
        current: &SpanRef<'_, S>,
        list: Option<&SpanRef<'_, S>>,
    ) where
        S: Subscriber + for<'a> LookupSpan<'a>,
    {
        match self.format {
            Format::Json => {
                if self.current_span {
                    out.extend_from_slice(b",\"span\":");
                    span_json(out, current);
                }
                if self.span_list {
                    out.extend_from_slice(b",\"spans\":[");
                    if let Some(leaf) = list {
                        for (i, span) in leaf.scope().from_root().enumerate() {
                            if i > 0 {
                                out.push(b',');
                            }
                            span_json(out, &span);
                        }
                    }
                    out.push(b']');
                }
            }
            // Syslog: the span context follows the message text.
            Format::Compact | Format::Logfmt | Format::Syslog => {
                out.extend_from_slice(b" span=");
                for (i, span) in current.scope().from_root().enumerate() {
                    if i > 0 {
                        out.push(b'>');
                    }
                    escape::text_str(out, span.name(), true);
                }
                for span in current.scope().from_root() {
                    if let Some(fields) = span.extensions().get::<SpanFields>() {
                        out.extend_from_slice(&fields.rendered);
                    }
                }
            }
        }
    }

    /// Appends the calling thread's name and id, as the options ask, in fmt's order.
    fn write_thread(&self, out: &mut Vec<u8>) {
        with_thread(|name, id| {
            if self.thread_names {
                // An unnamed thread is named by its id, unless the id follows anyway.
                match name {
                    Some(name) => {
                        write_field(out, self.format, true, "threadName", Value::Str(name))
                    }
                    None if !self.thread_ids => {
                        write_field(out, self.format, true, "threadName", Value::Str(id))
                    }
                    None => {}
                }
            }
            if self.thread_ids {
                write_field(out, self.format, true, "threadId", Value::Str(id));
            }
        });
    }
}

/// The calling thread's name and `ThreadId(N)`, read once per thread.
struct ThreadLabel {
    name: Option<Box<str>>,
    id: Box<str>,
}

impl ThreadLabel {
    fn current() -> ThreadLabel {
        let thread = std::thread::current();
        ThreadLabel {
            name: thread.name().map(Into::into),
            id: format!("{:?}", thread.id()).into(),
        }
    }
}

thread_local! {
    static THREAD_LABEL: std::cell::OnceCell<ThreadLabel> = const { std::cell::OnceCell::new() };
}

/// Runs `f` with the calling thread's name and id (from the per-thread cache; read
/// afresh during thread teardown, when the cache is gone).
fn with_thread<R>(f: impl FnOnce(Option<&str>, &str) -> R) -> R {
    let mut f = Some(f);
    let cached = THREAD_LABEL.try_with(|cell| {
        let label = cell.get_or_init(ThreadLabel::current);
        (f.take().expect("called once"))(label.name.as_deref(), &label.id)
    });
    match cached {
        Ok(r) => r,
        Err(_) => {
            let label = ThreadLabel::current();
            (f.take().expect("not yet called"))(label.name.as_deref(), &label.id)
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
        fields.rebuild(self.format);
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
            fields.rebuild(self.format);
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
                if self.shape != Shape::default() {
                    captured.shape(self.shape);
                }
                event.record(&mut CaptureVisitor(captured));
                let spans = self.current_span || self.span_list;
                let threads = self.thread_ids || self.thread_names;
                // Outside any span (the common case) nothing else is looked up: the
                // span references below are returned through memory and copied, and
                // that copy stalled on store forwarding (a quarter of this closure's
                // samples in `perf annotate`) even when both were `None`.
                let in_span =
                    spans && (event.parent().is_some() || ctx.current_span().id().is_some());
                if !in_span && !threads {
                    return;
                }
                // As tracing-subscriber's JSON: the explicit parent, else the current
                // span; the list is always the current span's.
                let (current, list) = if in_span {
                    match event.parent().and_then(|id| ctx.span(id)) {
                        Some(parent) => (Some(parent), Some(ctx.lookup_current())),
                        None => (ctx.lookup_current(), None),
                    }
                } else {
                    (None, None)
                };
                if current.is_some() || threads {
                    captured.extra(|out| {
                        if let Some(span) = &current {
                            // `None`: the list is the current span's scope.
                            let list = match &list {
                                Some(other) => other.as_ref(),
                                None => Some(span),
                            };
                            self.write_spans(out, span, list);
                        }
                        if threads {
                            self.write_thread(out);
                        }
                    });
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
