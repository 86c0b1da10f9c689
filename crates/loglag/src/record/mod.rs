//! Record formats: JSON lines (tracing-subscriber's field names), compact text, logfmt,
//! RFC 5424 syslog.
//!
//! Every format escapes control characters, so one record is always one line.
//!
//! Public: [`Format`] and [`Timer`]. The line builder itself
//! (`line.rs`) is crate-private; the lab and the fuzz target reach it through
//! `loglag::__lab`, which is not an API.

pub(crate) mod capture;
pub(crate) mod clock;
pub(crate) mod drops;
pub(crate) mod escape;
pub(crate) mod level;
pub(crate) mod line;
mod number;
pub(crate) mod parse;
mod syslog;
pub(crate) mod time;

use crate::record::parse::named_enum;
use std::time::SystemTime;

#[cfg(feature = "tracing")]
pub(crate) use line::write_field;
pub(crate) use line::{LineBuilder, Shape, Value};

named_enum! {
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
    /// # Ok::<(), loglag::ParseError>(())
    /// ```
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
    pub enum Format: "unknown format" {
        /// One JSON object per line, with tracing-subscriber's `json` field names.
        #[default]
        Json = "json",
        /// Human-readable text.
        Compact = "compact" | "text",
        /// `key=value` pairs.
        Logfmt = "logfmt",
        /// RFC 5424 syslog messages (`<PRI>1 TIMESTAMP HOST APP PID - [loglag@32473 …] MSG`),
        /// one per line: for [`sink::Syslog`](crate::sink::Syslog), which frames each line
        /// for its transport. The level sets the severity (facility `user`), the target and
        /// every field become structured-data parameters, the message is MSG.
        Syslog = "syslog" | "rfc5424",
    }
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

/// How [`LoglagLayer`](crate::LoglagLayer) writes a record's timestamp: the
/// counterparts of the `tracing_subscriber::fmt::time` timers that can be computed from
/// the instant alone, each byte for byte. Set with
/// [`LoglagLayer::with_timer`](crate::LoglagLayer::with_timer);
/// [`LoglagLayer::without_time`](crate::LoglagLayer::without_time) leaves it out.
///
/// | `Timer` | tracing-subscriber | example |
/// |---|---|---|
/// | [`Timer::system_time`] (the default) | `fmt::time::SystemTime` (its default) | `2026-10-29T12:00:00.000123Z` |
/// | [`Timer::rfc3339_offset`]`(2, 0)` | `OffsetTime::new(UtcOffset::from_hms(2, 0, 0)?, Rfc3339)` | `2026-10-29T14:00:00.000123456+02:00` |
/// | [`Timer::rfc3339_offset`]`(0, 0)` | `UtcTime::rfc_3339()` | `2026-10-29T12:00:00.000123456Z` |
///
/// The RFC 3339 timers are the `time` crate's `well_known::Rfc3339`: nanoseconds with
/// trailing zeros cut (none at all on a whole second), `Z` at offset zero. A local time
/// (`OffsetTime::local_rfc_3339()`) is a fixed offset read once; read it yourself
/// and pass it. In [`Format::Syslog`] the header keeps RFC 5424's UTC microseconds
/// whatever the timer (`-`, the NILVALUE, without time).
///
/// ```
/// let timer = loglag::Timer::rfc3339_offset(-3, -30).expect("a valid offset");
/// assert_eq!(loglag::Timer::rfc3339_offset(24, 0), None);
/// # let _ = timer;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timer(pub(crate) TimerKind);

/// What a [`Timer`] writes; `None` is `without_time`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum TimerKind {
    #[default]
    SystemTime,
    None,
    /// RFC 3339 at an offset of this many minutes east of UTC.
    Rfc3339 {
        offset_minutes: i16,
    },
}

impl Timer {
    /// RFC 3339 UTC with microseconds, as tracing-subscriber's default
    /// `fmt::time::SystemTime` writes it: `2026-10-29T12:00:00.000123Z`.
    pub const fn system_time() -> Timer {
        Timer(TimerKind::SystemTime)
    }

    /// RFC 3339 at a fixed offset from UTC, as tracing-subscriber's
    /// `OffsetTime::new(offset, time::format_description::well_known::Rfc3339)` writes
    /// it: `2026-10-29T14:00:00.000123456+02:00` (`…Z` at offset zero, as `UtcTime::rfc_3339()`).
    ///
    /// `None` unless the offset is one `time::UtcOffset::from_hms(hours, minutes, 0)`
    /// accepts and RFC 3339 can write: `hours` in -23..=23, `minutes` in -59..=59, both
    /// of the same sign (or zero).
    pub const fn rfc3339_offset(hours: i8, minutes: i8) -> Option<Timer> {
        if hours < -23 || hours > 23 || minutes < -59 || minutes > 59 {
            return None;
        }
        if (hours > 0 && minutes < 0) || (hours < 0 && minutes > 0) {
            return None;
        }
        Some(Timer(TimerKind::Rfc3339 {
            offset_minutes: hours as i16 * 60 + minutes as i16,
        }))
    }
}

/// Appends `t` as `timer` writes it (nothing for `TimerKind::None`).
pub(crate) fn write_time(out: &mut Vec<u8>, timer: TimerKind, t: SystemTime) {
    match timer {
        TimerKind::SystemTime => time::rfc3339_micros(out, t),
        TimerKind::None => {}
        TimerKind::Rfc3339 { offset_minutes } => time::rfc3339_offset(out, t, offset_minutes),
    }
}

/// A reusable per-thread buffer. The `Vec` is taken out of its cell while in use; the
/// flag says so first, in one byte's store, because moving a `Vec` in or out of a
/// `Cell` is three words: a signal handler landing half-way through must never take
/// the half-moved one (it was `free(0x1)`). A caller that finds the flag up (a `Debug`
/// that logs, a handler) grows a buffer of its own.
struct ThreadBuffer {
    in_use: std::cell::Cell<bool>,
    buffer: std::cell::Cell<Vec<u8>>,
}

thread_local! {
    static LINE: ThreadBuffer = const {
        ThreadBuffer { in_use: std::cell::Cell::new(false), buffer: std::cell::Cell::new(Vec::new()) }
    };
    static CAPTURE: ThreadBuffer = const {
        ThreadBuffer { in_use: std::cell::Cell::new(false), buffer: std::cell::Cell::new(Vec::new()) }
    };
}

/// Runs `f` with this thread's reusable record buffer, cleared. Falls back to a fresh
/// buffer when re-entered (a `Debug` impl that logs) or during thread teardown.
pub(crate) fn with_line_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    with_buffer(&LINE, f)
}

/// A byte buffer as a `fmt::Write` target: formatted text appended as it is.
pub(crate) struct FmtVec<'a>(pub(crate) &'a mut Vec<u8>);

impl std::fmt::Write for FmtVec<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// The same for a record's captured form, which may be rendered into the line buffer.
#[inline]
pub(crate) fn with_capture_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    with_buffer(&CAPTURE, f)
}

/// The buffer is taken out of the thread-local and put back, not borrowed, and `f` is
/// called directly, not moved through an `Option` (whose copy stalled on store
/// forwarding). Every step is undone by a handler before the code it interrupted
/// resumes, so the flag's load and store need not be one instruction.
#[inline]
fn with_buffer<R>(
    key: &'static std::thread::LocalKey<ThreadBuffer>,
    f: impl FnOnce(&mut Vec<u8>) -> R,
) -> R {
    let taken = key.try_with(|b| {
        if b.in_use.get() {
            return None;
        }
        b.in_use.set(true);
        // The flag is up before the buffer moves, in that order for a signal handler
        // too (the compiler may otherwise reorder plain stores).
        std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
        Some(b.buffer.take())
    });
    let Ok(Some(buf)) = taken else {
        return f(&mut Vec::new());
    };
    let mut lent = Lent { key, buf };
    lent.buf.clear();
    f(&mut lent.buf)
}

/// A thread's buffer while lent out: given back when dropped, also when `f` panics (a
/// `Display` that panics), which would otherwise leave the flag up for good.
struct Lent {
    key: &'static std::thread::LocalKey<ThreadBuffer>,
    buf: Vec<u8>,
}

impl Drop for Lent {
    #[inline]
    fn drop(&mut self) {
        let buf = std::mem::take(&mut self.buf);
        let _ = self.key.try_with(|b| {
            // Do not let one huge record pin a huge buffer for the thread's lifetime.
            if buf.capacity() <= 256 << 10 {
                b.buffer.set(buf);
            }
            std::sync::atomic::compiler_fence(std::sync::atomic::Ordering::SeqCst);
            b.in_use.set(false);
        });
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
    use crate::record::level::Level;

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
