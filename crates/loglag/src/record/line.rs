//! One record, built in place in any [`Format`]: [`LineBuilder`], its field values
//! ([`Value`]) and the options that change a record's shape ([`Shape`]). Crate-private;
//! the lab and the fuzz target reach `LineBuilder` and `Value` through `loglag::__lab`.

use std::fmt;
use std::time::SystemTime;

use super::escape::{self, Escaper, Style};
use super::{number, syslog, write_time, Format, TimerKind};
use crate::record::level::Level;

/// A field value.
#[derive(Debug, Clone, Copy)]
// Without a front-end that records `Debug` values or `log`'s arguments, nothing
// makes those variants.
#[cfg_attr(
    not(any(feature = "tracing", feature = "log", feature = "unstable-lab")),
    allow(dead_code)
)]
pub enum Value<'a> {
    /// Text, escaped for the format.
    Str(&'a str),
    /// Bytes that may not be UTF-8: invalid sequences become U+FFFD.
    Bytes(&'a [u8]),
    /// A signed integer.
    I64(i64),
    /// An unsigned integer.
    U64(u64),
    /// A float.
    F64(f64),
    /// A boolean.
    Bool(bool),
    /// Anything with `Debug`, escaped as text.
    Debug(&'a dyn fmt::Debug),
    /// Preformatted arguments (the `log` crate's message).
    Args(fmt::Arguments<'a>),
}

/// The options that change what a record holds besides its fields (the
/// [`LoglagLayer`](crate::LoglagLayer)'s `flatten_event`, `with_target`, `with_file`,
/// `with_line_number` and timer). The default, all bits clear, is the plain record,
/// and a captured record carries a `Shape` in its header's spare bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Shape {
    pub(crate) bits: u8,
    pub(crate) timer: TimerKind,
}

impl Shape {
    /// JSON: the event's fields at the top level instead of under `"fields"`.
    pub(crate) const FLATTEN: u8 = 1;
    /// No target.
    pub(crate) const NO_TARGET: u8 = 2;
    /// The call site's file (`"filename"`).
    pub(crate) const FILE: u8 = 4;
    /// The call site's line (`"line_number"`).
    pub(crate) const LINE: u8 = 8;

    #[inline]
    pub(crate) fn has(self, bit: u8) -> bool {
        self.bits & bit != 0
    }

    /// The six bytes a captured record's header keeps for it: bits, timer tag, offset.
    pub(crate) fn encode(self) -> [u8; 6] {
        let (tag, offset) = match self.timer {
            TimerKind::SystemTime => (0u8, 0i16),
            TimerKind::None => (1, 0),
            TimerKind::Rfc3339 { offset_minutes } => (2, offset_minutes),
        };
        let o = offset.to_ne_bytes();
        [self.bits, tag, o[0], o[1], 0, 0]
    }

    /// Reverses [`Shape::encode`].
    pub(crate) fn decode(b: &[u8]) -> Shape {
        let timer = match b[1] {
            1 => TimerKind::None,
            2 => TimerKind::Rfc3339 {
                offset_minutes: i16::from_ne_bytes([b[2], b[3]]),
            },
            _ => TimerKind::SystemTime,
        };
        Shape { bits: b[0], timer }
    }
}

/// Builds one record, in place, into a caller-supplied buffer.
///
/// ```
/// use loglag::__lab::{LineBuilder, Value};
/// use loglag::{Format, Level};
/// let mut buf = Vec::new();
/// let mut line = LineBuilder::begin(&mut buf, Format::Logfmt, std::time::SystemTime::UNIX_EPOCH, Level::Warn, "app");
/// line.field("message", Value::Str("disk \"almost\" full\nFORGED"));
/// line.field("free_mb", Value::U64(12));
/// line.finish();
/// assert_eq!(buf, b"ts=1970-01-01T00:00:00.000000Z level=warn target=app msg=\"disk \\\"almost\\\" full\\nFORGED\" free_mb=12\n");
/// ```
#[derive(Debug)]
pub struct LineBuilder<'a> {
    out: &'a mut Vec<u8>,
    format: Format,
    target: &'a str,
    first_field: bool,
    /// Syslog: where the message was written, to be moved after the structured data.
    message: Option<(usize, usize)>,
    shape: Shape,
    /// The call site's file and line, written when the shape asks for them.
    file: Option<&'a str>,
    line: Option<u32>,
}

impl<'a> LineBuilder<'a> {
    /// Starts a record: appends the timestamp, level and (for text formats) target.
    pub fn begin(
        out: &'a mut Vec<u8>,
        format: Format,
        time: SystemTime,
        level: Level,
        target: &'a str,
    ) -> Self {
        Self::begin_shaped(out, format, Shape::default(), time, level, target)
    }

    /// [`LineBuilder::begin`] with the options of `shape`.
    pub(crate) fn begin_shaped(
        out: &'a mut Vec<u8>,
        format: Format,
        shape: Shape,
        time: SystemTime,
        level: Level,
        target: &'a str,
    ) -> Self {
        let timed = shape.timer != TimerKind::None;
        let targeted = !shape.has(Shape::NO_TARGET);
        match format {
            Format::Json => {
                if timed {
                    out.extend_from_slice(b"{\"timestamp\":\"");
                    write_time(out, shape.timer, time);
                    out.extend_from_slice(b"\",\"level\":\"");
                } else {
                    out.extend_from_slice(b"{\"level\":\"");
                }
                out.extend_from_slice(level.as_str().as_bytes());
                if shape.has(Shape::FLATTEN) {
                    out.push(b'"');
                } else {
                    out.extend_from_slice(b"\",\"fields\":{");
                }
            }
            Format::Compact => {
                // The level right-aligned in five columns, as tracing-subscriber's text.
                let pad: &[u8] = if level.as_str().len() == 4 { b" " } else { b"" };
                if timed {
                    write_time(out, shape.timer, time);
                    out.push(b' ');
                }
                out.extend_from_slice(pad);
                out.extend_from_slice(level.as_str().as_bytes());
                if targeted {
                    out.push(b' ');
                    escape::text_str(out, target, false);
                    out.push(b':');
                }
            }
            Format::Syslog => {
                // <PRI>1 TIMESTAMP HOSTNAME APP-NAME PROCID MSGID [SD-ID target="…"
                let severity = match level {
                    Level::Error => 3,
                    Level::Warn => 4,
                    Level::Info => 6,
                    Level::Debug | Level::Trace => 7,
                };
                let _ = std::io::Write::write_fmt(out, format_args!("<{}>1 ", 8 + severity));
                if timed {
                    super::time::rfc3339_micros(out, time);
                } else {
                    out.push(b'-');
                }
                out.push(b' ');
                out.extend_from_slice(syslog::host_and_app().as_bytes());
                // SAFETY: getpid has no preconditions; read per record, since a forked
                // child renders its own records.
                #[cfg(unix)]
                let pid = unsafe { libc::getpid() };
                #[cfg(not(unix))]
                let pid = std::process::id();
                let _ = std::io::Write::write_fmt(out, format_args!(" {pid} - [{}", syslog::SD_ID));
                if targeted {
                    out.extend_from_slice(b" target=\"");
                    escape::sd_value(out, target);
                    out.push(b'"');
                }
            }
            Format::Logfmt => {
                if timed {
                    out.extend_from_slice(b"ts=");
                    write_time(out, shape.timer, time);
                    out.push(b' ');
                }
                out.extend_from_slice(b"level=");
                out.extend_from_slice(level.as_lower_str().as_bytes());
                if targeted {
                    out.extend_from_slice(b" target=");
                    logfmt_value(
                        out,
                        |e| escape::text_str(e.out, target, true),
                        target.is_empty() || target.contains([' ', '=', '"']),
                    );
                }
            }
        }
        LineBuilder {
            out,
            format,
            target,
            // Flattened, the fields follow the level: each takes a comma.
            first_field: !(format == Format::Json && shape.has(Shape::FLATTEN)),
            message: None,
            shape,
            file: None,
            line: None,
        }
    }

    /// The call site's file and line, written (after the target) if the shape asks.
    pub(crate) fn source(&mut self, file: Option<&'a str>, line: Option<u32>) {
        self.file = file;
        self.line = line;
    }

    /// Appends a field. A field named `message` is the record's message.
    pub fn field(&mut self, name: &str, value: Value<'_>) {
        let start = self.out.len();
        if self.format == Format::Syslog && name == "message" && self.message.is_some() {
            // Syslog has one MSG: a second message is a parameter like any field.
            self.out.extend_from_slice(b" message=\"");
            write_escaped(self.out, value, Style::SdValue);
            self.out.push(b'"');
        } else {
            write_field(self.out, self.format, !self.first_field, name, value);
            if self.format == Format::Syslog && name == "message" {
                self.message = Some((start, self.out.len()));
            }
        }
        self.first_field = false;
    }

    /// Ends the record with a newline.
    pub fn finish(self) {
        self.finish_with(|_| {});
    }

    /// The call site's file and line, as the shape asks: `,"filename":"…","line_number":N`
    /// in JSON (tracing-subscriber's names and order), fields of those names elsewhere.
    fn write_source(&mut self) {
        if self.shape.bits & (Shape::FILE | Shape::LINE) == 0 {
            return;
        }
        if let (true, Some(file)) = (self.shape.has(Shape::FILE), self.file) {
            write_field(self.out, self.format, true, "filename", Value::Str(file));
        }
        if let (true, Some(line)) = (self.shape.has(Shape::LINE), self.line) {
            write_field(
                self.out,
                self.format,
                true,
                "line_number",
                Value::U64(line.into()),
            );
        }
    }

    /// Ends the record, letting `extra` append top-level content first: after
    /// `"target"` (and the source) in JSON (as `,"key":value`), before the newline in
    /// text formats.
    pub fn finish_with(mut self, extra: impl FnOnce(&mut Vec<u8>)) {
        match self.format {
            Format::Json => {
                if !self.shape.has(Shape::FLATTEN) {
                    self.out.push(b'}');
                }
                if !self.shape.has(Shape::NO_TARGET) {
                    self.out.extend_from_slice(b",\"target\":\"");
                    escape::json_str(self.out, self.target);
                    self.out.push(b'"');
                }
                self.write_source();
                extra(self.out);
                self.out.extend_from_slice(b"}\n");
            }
            Format::Compact | Format::Logfmt => {
                self.write_source();
                extra(self.out);
                self.out.push(b'\n');
            }
            Format::Syslog => {
                self.write_source();
                self.out.push(b']');
                // MSG comes after the structured data, wherever the message field was.
                if let Some((start, end)) = self.message {
                    self.out[start..].rotate_left(end - start);
                }
                extra(self.out);
                self.out.push(b'\n');
            }
        }
    }
}

/// field named `message` is the record's message. Also used for span fields.
pub(crate) fn write_field(
    out: &mut Vec<u8>,
    format: Format,
    separated: bool,
    name: &str,
    value: Value<'_>,
) {
    let is_message = name == "message";
    match format {
        Format::Json => {
            if separated {
                out.push(b',');
            }
            out.push(b'"');
            escape::json_str(out, name);
            out.extend_from_slice(b"\":");
            json_value(out, value);
        }
        Format::Compact => {
            out.push(b' ');
            if !is_message {
                escape::text_str(out, name, false);
                out.push(b'=');
            }
            write_escaped(out, value, Style::Text);
        }
        Format::Syslog => {
            out.push(b' ');
            if is_message {
                write_escaped(out, value, Style::Text);
            } else {
                syslog::param_name(out, name);
                out.extend_from_slice(b"=\"");
                write_escaped(out, value, Style::SdValue);
                out.push(b'"');
            }
        }
        Format::Logfmt => {
            out.push(b' ');
            if is_message {
                out.extend_from_slice(b"msg");
            } else {
                key(out, name);
            }
            out.push(b'=');
            let quoted = !matches!(
                value,
                Value::I64(_) | Value::U64(_) | Value::F64(_) | Value::Bool(_)
            );
            logfmt_value(out, |e| write_escaped(e.out, value, Style::Quoted), quoted);
        }
    }
}

fn key(out: &mut Vec<u8>, name: &str) {
    for c in name.chars() {
        out.extend_from_slice(
            if c.is_alphanumeric() || "_.-".contains(c) {
                c
            } else {
                '_'
            }
            .encode_utf8(&mut [0; 4])
            .as_bytes(),
        );
    }
}

fn logfmt_value(out: &mut Vec<u8>, write: impl FnOnce(&mut Escaper<'_>), quoted: bool) {
    if quoted {
        out.push(b'"');
    }
    write(&mut Escaper {
        out,
        style: Style::Quoted,
    });
    if quoted {
        out.push(b'"');
    }
}

/// Writes `value` if it is a number JSON can hold (integers, finite floats), as
/// `Display` would, and says whether it did: numbers have nothing to escape.
#[inline]
fn push_number(out: &mut Vec<u8>, value: &Value<'_>) -> bool {
    match *value {
        Value::I64(v) => number::push_i64(out, v),
        Value::U64(v) => number::push_u64(out, v),
        Value::F64(v) if v.is_finite() => number::push_f64(out, v),
        _ => return false,
    }
    true
}

fn write_escaped(out: &mut Vec<u8>, value: Value<'_>, style: Style) {
    use fmt::Write as _;
    if push_number(out, &value) {
        return;
    }
    let mut e = Escaper { out, style };
    let _ = match value {
        Value::Str(s) => e.write_str(s),
        Value::Bytes(b) => {
            escape::lossy(b, |s| {
                let _ = e.write_str(s);
            });
            Ok(())
        }
        // Written by `push_number` above.
        Value::I64(_) | Value::U64(_) => Ok(()),
        // Infinite or NaN.
        Value::F64(v) => write!(e, "{v}"),
        Value::Bool(v) => write!(e, "{v}"),
        Value::Debug(v) => write!(e, "{v:?}"),
        Value::Args(a) => e.write_fmt(a),
    };
}

fn json_value(out: &mut Vec<u8>, value: Value<'_>) {
    if push_number(out, &value) {
        return;
    }
    match value {
        Value::Bool(v) => out.extend_from_slice(if v { b"true" } else { b"false" }),
        other => {
            out.push(b'"');
            write_escaped(out, other, Style::Json);
            out.push(b'"');
        }
    }
}
