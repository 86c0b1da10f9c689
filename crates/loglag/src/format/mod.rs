//! Record formats: JSON lines (tracing-subscriber's field names), compact text, logfmt.
//!
//! Every format escapes control characters, so one record is always one line.
//!
//! `escape`, `Value`, `LineBuilder` and `write_field` are public for the lab (which
//! builds lines with them) and the fuzz target, not as an API: `#[doc(hidden)]`, free
//! to change.

#[doc(hidden)]
pub mod escape;
mod number;
mod syslog;
pub(crate) mod time;

use std::fmt;
use std::time::SystemTime;

use crate::level::Level;
use escape::{Escaper, Style};

/// How the tracing [`Layer`](crate::LoglagLayer), the [`log`] front-end and in-band
/// drop reports render a record.
///
/// | format | example |
/// |---|---|
/// | `Json` | `{"timestamp":"…","level":"INFO","fields":{"message":"hi","k":1},"target":"app"}` |
/// | `Compact` | `2026-10-29T12:00:00.000001Z  INFO app: hi k=1` |
/// | `Logfmt` | `ts=2026-10-29T12:00:00.000001Z level=info target=app msg=hi k=1` |
///
/// ```
/// assert_eq!("logfmt".parse::<loglag::Format>()?, loglag::Format::Logfmt);
/// # Ok::<(), loglag::ParseFormatError>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// One JSON object per line, with tracing-subscriber's `json` field names.
    #[default]
    Json,
    /// Human-readable text.
    Compact,
    /// `key=value` pairs.
    Logfmt,
    /// RFC 5424 syslog messages (`<PRI>1 TIMESTAMP HOST APP PID - [loglag@32473 …] MSG`),
    /// one per line: for [`sink::Syslog`](crate::sink::Syslog), which frames each line
    /// for its transport. The level sets the severity (facility `user`), the target and
    /// every field become structured-data parameters, the message is MSG.
    Syslog,
}

impl Format {
    /// A small number for atomics; [`Format::from_index`] reverses it.
    pub(crate) fn index(self) -> u8 {
        match self {
            Format::Json => 0,
            Format::Compact => 1,
            Format::Logfmt => 2,
            Format::Syslog => 3,
        }
    }

    pub(crate) fn from_index(i: u8) -> Format {
        match i {
            0 => Format::Json,
            2 => Format::Logfmt,
            3 => Format::Syslog,
            _ => Format::Compact,
        }
    }
}

/// An unknown format name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseFormatError(String);

impl std::fmt::Display for ParseFormatError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "unknown format {:?}: expected json, compact, logfmt or syslog",
            self.0
        )
    }
}

impl std::error::Error for ParseFormatError {}

impl std::str::FromStr for Format {
    type Err = ParseFormatError;
    fn from_str(s: &str) -> Result<Format, ParseFormatError> {
        match s.trim() {
            "json" => Ok(Format::Json),
            "compact" | "text" => Ok(Format::Compact),
            "logfmt" => Ok(Format::Logfmt),
            "syslog" | "rfc5424" => Ok(Format::Syslog),
            other => Err(ParseFormatError(other.to_owned())),
        }
    }
}

/// RFC 3339 UTC with microseconds, e.g. `2026-10-29T12:00:00.000123Z`.
///
/// ```
/// let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(86_400);
/// assert_eq!(loglag::format::rfc3339(t), "1970-01-02T00:00:00.000000Z");
/// ```
pub fn rfc3339(t: SystemTime) -> String {
    let mut out = Vec::with_capacity(27);
    time::rfc3339_micros(&mut out, t);
    String::from_utf8(out).expect("ASCII")
}

thread_local! {
    static LINE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    static CAPTURE: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` with this thread's reusable record buffer, cleared. Falls back to a fresh
/// buffer when re-entered (a `Debug` impl that logs) or during thread teardown.
pub(crate) fn with_line_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    with_buffer(&LINE, f)
}

/// The same for a record's captured form, which may be rendered into the line buffer.
pub(crate) fn with_capture_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    with_buffer(&CAPTURE, f)
}

#[inline]
fn with_buffer<R>(
    key: &'static std::thread::LocalKey<std::cell::RefCell<Vec<u8>>>,
    f: impl FnOnce(&mut Vec<u8>) -> R,
) -> R {
    let mut f = Some(f);
    let result = key.try_with(|cell| {
        cell.try_borrow_mut().ok().map(|mut buf| {
            buf.clear();
            let r = (f.take().expect("called once"))(&mut buf);
            // Do not let one huge record pin a huge buffer for the thread's lifetime.
            if buf.capacity() > 256 << 10 {
                *buf = Vec::new();
            }
            r
        })
    });
    match result {
        Ok(Some(r)) => r,
        _ => (f.take().expect("not yet called"))(&mut Vec::new()),
    }
}

#[doc(hidden)]
/// A field value.
#[derive(Debug, Clone, Copy)]
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

/// Builds one record, in place, into a caller-supplied buffer.
///
/// ```
/// use loglag::format::{LineBuilder, Value};
/// use loglag::{Format, Level};
/// let mut buf = Vec::new();
/// let mut line = LineBuilder::begin(&mut buf, Format::Logfmt, std::time::SystemTime::UNIX_EPOCH, Level::Warn, "app");
/// line.field("message", Value::Str("disk \"almost\" full\nFORGED"));
/// line.field("free_mb", Value::U64(12));
/// line.finish();
/// assert_eq!(buf, b"ts=1970-01-01T00:00:00.000000Z level=warn target=app msg=\"disk \\\"almost\\\" full\\nFORGED\" free_mb=12\n");
/// ```
#[doc(hidden)]
#[derive(Debug)]
pub struct LineBuilder<'a> {
    out: &'a mut Vec<u8>,
    format: Format,
    target: &'a str,
    first_field: bool,
    /// Syslog: where the message was written, to be moved after the structured data.
    message: Option<(usize, usize)>,
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
        match format {
            Format::Json => {
                out.extend_from_slice(b"{\"timestamp\":\"");
                time::rfc3339_micros(out, time);
                out.extend_from_slice(b"\",\"level\":\"");
                out.extend_from_slice(level.as_str().as_bytes());
                out.extend_from_slice(b"\",\"fields\":{");
            }
            Format::Compact => {
                time::rfc3339_micros(out, time);
                out.extend_from_slice(if level.as_str().len() == 4 {
                    b"  "
                } else {
                    b" "
                });
                out.extend_from_slice(level.as_str().as_bytes());
                out.push(b' ');
                escape::text_str(out, target, false);
                out.push(b':');
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
                time::rfc3339_micros(out, time);
                out.push(b' ');
                out.extend_from_slice(syslog::host_and_app().as_bytes());
                // SAFETY: getpid has no preconditions; read per record, since a forked
                // child renders its own records.
                let pid = unsafe { libc::getpid() };
                let _ = std::io::Write::write_fmt(
                    out,
                    format_args!(" {pid} - [{} target=\"", syslog::SD_ID),
                );
                escape::sd_value(out, target);
                out.push(b'"');
            }
            Format::Logfmt => {
                out.extend_from_slice(b"ts=");
                time::rfc3339_micros(out, time);
                out.extend_from_slice(b" level=");
                out.extend_from_slice(level.as_lower_str().as_bytes());
                out.extend_from_slice(b" target=");
                logfmt_value(
                    out,
                    |e| escape::text_str(e.out, target, true),
                    target.is_empty() || target.contains([' ', '=', '"']),
                );
            }
        }
        LineBuilder {
            out,
            format,
            target,
            first_field: true,
            message: None,
        }
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

    /// Ends the record, letting `extra` append top-level content first: after
    /// `"target"` in JSON (as `,"key":value`), before the newline in text formats.
    pub fn finish_with(self, extra: impl FnOnce(&mut Vec<u8>)) {
        match self.format {
            Format::Json => {
                self.out.extend_from_slice(b"},\"target\":\"");
                escape::json_str(self.out, self.target);
                self.out.push(b'"');
                extra(self.out);
                self.out.extend_from_slice(b"}\n");
            }
            Format::Compact | Format::Logfmt => {
                extra(self.out);
                self.out.push(b'\n');
            }
            Format::Syslog => {
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

/// Appends one field in `format`'s syntax; `separated` puts a comma first in JSON. A
/// field named `message` is the record's message. Also used for span fields.
#[doc(hidden)]
pub fn write_field(
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

/// Writes into `out` a copy of `record` cut to at most `max` bytes (on a character
/// boundary) and ended with a visible `…[truncated N bytes]` marker and a newline.
pub(crate) fn truncate_into(out: &mut Vec<u8>, record: &[u8], max: usize) {
    if truncate_json_into(out, record, max) || truncate_syslog_into(out, record, max) {
        return;
    }
    // The marker's length depends on the number it carries; size it for the worst case.
    let reserve = "…[truncated  bytes]\n".len() + 20;
    let mut cut = max.saturating_sub(reserve).min(record.len());
    while cut > 0 && cut < record.len() && (record[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    out.extend_from_slice(&record[..cut]);
    let _ = std::io::Write::write_fmt(
        out,
        format_args!("…[truncated {} bytes]\n", record.len() - cut),
    );
}

/// An RFC 5424 record stays one valid message: MSG is cut, with the marker; if the
/// structured data alone is too long, it is replaced by `[loglag@32473 truncated="N"]`
/// (N its length). Returns false (and writes nothing) for any other record.
fn truncate_syslog_into(out: &mut Vec<u8>, record: &[u8], max: usize) -> bool {
    let body = record.strip_suffix(b"\n").unwrap_or(record);
    if body.first() != Some(&b'<') {
        return false;
    }
    // PRI+VERSION TIMESTAMP HOSTNAME APP-NAME PROCID MSGID, then the structured data.
    let Some(sd_start) = body
        .iter()
        .enumerate()
        .filter(|(_, &b)| b == b' ')
        .nth(5)
        .map(|(i, _)| i + 1)
    else {
        return false;
    };
    if body.get(sd_start) != Some(&b'[') {
        return false;
    }
    let (mut quoted, mut escaped, mut sd_end) = (false, false, None);
    for (i, &b) in body.iter().enumerate().skip(sd_start) {
        match b {
            _ if escaped => escaped = false,
            b'\\' => escaped = true,
            b'"' => quoted = !quoted,
            b']' if !quoted && body.get(i + 1) != Some(&b'[') => {
                sd_end = Some(i + 1);
                break;
            }
            _ => {}
        }
    }
    let Some(sd_end) = sd_end else {
        return false;
    };
    let (header, sd, msg) = (&body[..sd_start], &body[sd_start..sd_end], &body[sd_end..]);
    const MARKER_MAX: usize = "…[truncated  bytes]".len() + 20;
    let replaced;
    let sd: &[u8] = if header.len() + sd.len() + MARKER_MAX < max {
        sd
    } else {
        replaced = format!("[{} truncated=\"{}\"]", syslog::SD_ID, sd.len()).into_bytes();
        &replaced
    };
    let room = max.saturating_sub(header.len() + sd.len() + MARKER_MAX + 1);
    if header.len() + sd.len() + 1 > max {
        return false;
    }
    let mut cut = room.min(msg.len());
    while cut > 0 && cut < msg.len() && (msg[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    out.extend_from_slice(header);
    out.extend_from_slice(sd);
    out.extend_from_slice(&msg[..cut]);
    // The marker counts MSG's bytes; replaced structured data says its own length.
    let removed = msg.len() - cut;
    if removed > 0 {
        let _ = std::io::Write::write_fmt(out, format_args!("…[truncated {removed} bytes]"));
    }
    out.push(b'\n');
    true
}

/// A JSON record stays valid JSON: its longest string values are shortened (at an
/// escape and character boundary) and each ends in the marker, everything else is kept.
/// Returns false (and writes nothing) if `record` is not one JSON object per line or
/// its string values are too short to make it fit.
fn truncate_json_into(out: &mut Vec<u8>, record: &[u8], max: usize) -> bool {
    let body = record.strip_suffix(b"\n").unwrap_or(record);
    if body.first() != Some(&b'{') || body.last() != Some(&b'}') {
        return false;
    }
    let Some(mut values) = json_string_values(body) else {
        return false;
    };
    // Worst case per shortened value: the marker with a 20-digit count.
    const MARKER_MAX: usize = "…[truncated  bytes]".len() + 20;
    let mut excess = record.len().saturating_sub(max);
    values.sort_by_key(|&(a, b)| std::cmp::Reverse(b - a));
    // (content start, kept end, content end) of each value to shorten.
    let mut cuts: Vec<(usize, usize, usize)> = Vec::new();
    for &(start, end) in &values {
        if excess == 0 {
            break;
        }
        let len = end - start;
        if len <= MARKER_MAX {
            break;
        }
        let remove = (excess + MARKER_MAX).min(len);
        let kept = escape_boundary_at_most(&body[start..end], len - remove);
        let removed = len - kept;
        cuts.push((start, start + kept, end));
        excess = excess.saturating_sub(removed.saturating_sub(MARKER_MAX));
    }
    if excess > 0 {
        return false;
    }
    cuts.sort_unstable();
    let mut at = 0;
    for (_, kept_end, end) in cuts {
        out.extend_from_slice(&body[at..kept_end]);
        let _ =
            std::io::Write::write_fmt(out, format_args!("…[truncated {} bytes]", end - kept_end));
        at = end;
    }
    out.extend_from_slice(&body[at..]);
    out.push(b'\n');
    true
}

/// The largest prefix length of escaped JSON string content `s` that is at most `at`
/// and ends neither inside an escape sequence nor inside a UTF-8 character.
fn escape_boundary_at_most(s: &[u8], at: usize) -> usize {
    let mut i = 0;
    let mut last = 0;
    while i < s.len() {
        let step = match s[i] {
            b'\\' if s.get(i + 1) == Some(&b'u') => 6,
            b'\\' => 2,
            b if b < 0x80 => 1,
            b if b >= 0xF0 => 4,
            b if b >= 0xE0 => 3,
            _ => 2,
        };
        if i + step > at {
            break;
        }
        i += step;
        last = i;
    }
    last.min(s.len())
}

/// The content ranges (between the quotes) of every string *value* in a JSON object,
/// keys excluded. `None` if the text is not a complete, balanced object.
fn json_string_values(body: &[u8]) -> Option<Vec<(usize, usize)>> {
    let mut values = Vec::new();
    let mut stack: Vec<u8> = Vec::new();
    let mut expect_key = false;
    let mut i = 0;
    while i < body.len() {
        match body[i] {
            b'{' => {
                stack.push(b'{');
                expect_key = true;
            }
            b'[' => {
                stack.push(b'[');
                expect_key = false;
            }
            b'}' | b']' => {
                stack.pop()?;
                expect_key = false;
                if stack.is_empty() && i + 1 != body.len() {
                    return None;
                }
            }
            b',' => expect_key = stack.last() == Some(&b'{'),
            b':' => expect_key = false,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                loop {
                    match body.get(j)? {
                        b'\\' => j += 2,
                        b'"' => break,
                        _ => j += 1,
                    }
                }
                if !expect_key {
                    values.push((start, j));
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    stack.is_empty().then_some(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truncated_json_stays_valid_json() {
        let long = "x\\\"é".repeat(5000);
        let mut record = Vec::new();
        let mut line = LineBuilder::begin(
            &mut record,
            Format::Json,
            SystemTime::UNIX_EPOCH,
            Level::Info,
            "app",
        );
        line.field("message", Value::Str(&long));
        line.field("n", Value::U64(7));
        line.field("short", Value::Str("keep me"));
        line.finish();
        for max in [200, 1000, 4096, 20_000] {
            let mut out = Vec::new();
            truncate_into(&mut out, &record, max);
            assert!(out.len() <= max, "{} > {max}", out.len());
            assert!(out.ends_with(b"}\n"));
            let v: serde_json::Value = serde_json::from_slice(&out).unwrap();
            let message = v["fields"]["message"].as_str().unwrap();
            assert!(message.contains("…[truncated "), "{message}");
            assert_eq!(v["fields"]["n"], 7);
            assert_eq!(v["fields"]["short"], "keep me");
        }
    }

    #[test]
    fn text_truncation_keeps_the_marker() {
        let record = format!("{}\n", "y".repeat(500));
        let mut out = Vec::new();
        truncate_into(&mut out, record.as_bytes(), 100);
        assert!(out.len() <= 100);
        assert!(String::from_utf8(out).unwrap().ends_with("bytes]\n"));
    }

    fn render(format: Format) -> String {
        let mut buf = Vec::new();
        let mut line =
            LineBuilder::begin(&mut buf, format, SystemTime::UNIX_EPOCH, Level::Info, "app");
        line.field("message", Value::Str("hello\nINFO forged"));
        line.field("n", Value::I64(-3));
        line.field("raw", Value::Bytes(b"\xffok"));
        line.field("dbg", Value::Debug(&Some("x\ty")));
        line.finish();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn json_matches_tracing_subscriber_names() {
        assert_eq!(
            render(Format::Json),
            "{\"timestamp\":\"1970-01-01T00:00:00.000000Z\",\"level\":\"INFO\",\"fields\":{\"message\":\"hello\\nINFO forged\",\"n\":-3,\"raw\":\"\u{FFFD}ok\",\"dbg\":\"Some(\\\"x\\\\ty\\\")\"},\"target\":\"app\"}\n"
        );
    }

    #[test]
    fn text_formats_stay_on_one_line() {
        assert_eq!(render(Format::Compact), "1970-01-01T00:00:00.000000Z  INFO app: hello\\nINFO forged n=-3 raw=\u{FFFD}ok dbg=Some(\"x\\\\ty\")\n");
        assert_eq!(
            render(Format::Logfmt),
            "ts=1970-01-01T00:00:00.000000Z level=info target=app msg=\"hello\\nINFO forged\" n=-3 raw=\"\u{FFFD}ok\" dbg=\"Some(\\\"x\\\\ty\\\")\"\n"
        );
    }

    #[test]
    fn truncation_marks_and_keeps_the_budget() {
        let mut original = "é".repeat(1000).into_bytes();
        original.push(b'\n');
        let mut rec = Vec::new();
        truncate_into(&mut rec, &original, 300);
        assert!(rec.len() <= 300);
        let s = String::from_utf8(rec).unwrap();
        assert!(
            s.ends_with(" bytes]\n") && s.contains("…[truncated "),
            "{s}"
        );
        assert_eq!(s.matches('\n').count(), 1);
    }
}
