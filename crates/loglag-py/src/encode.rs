//! One `LogRecord` as one line: JSON (one flat object per line, in the envelope the
//! crate's own lines and its OTLP sink use: `timestamp`, `level`, `message`, then
//! `logger`, `thread`, the `extra` fields, `exc`, `stack`) or text (`time LEVEL logger:
//! message key=value`). Nothing a record holds can break the line: JSON escapes every
//! control character, and text writes newlines, carriage returns and other control
//! characters as `\n`, `\r`, `\u{1b}` (log injection: a message cannot forge a
//! second record).

use std::fmt::Write;
use std::sync::atomic::{AtomicUsize, Ordering};

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyString};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Encoding {
    Json,
    Text,
}

/// What a line is made of, read from the `LogRecord`.
pub(crate) struct Record<'a, 'py> {
    /// Seconds since the Unix epoch (`record.created`).
    pub created: f64,
    /// The level as Python names it (`record.levelname`).
    pub level_name: &'a str,
    pub logger: &'a str,
    pub message: &'a str,
    pub thread: Option<&'a str>,
    pub exc_text: Option<&'a str>,
    pub stack: Option<&'a str>,
    /// The record's `__dict__`: its `extra` fields are the keys a `LogRecord` does not
    /// have of its own.
    pub extra: &'a Bound<'py, PyDict>,
}

/// The attributes every `LogRecord` has (Python 3.8 to 3.13): not `extra` fields.
const RECORD_ATTRIBUTES: [&str; 24] = [
    "args",
    "asctime",
    "created",
    "exc_info",
    "exc_text",
    "filename",
    "funcName",
    "levelname",
    "levelno",
    "lineno",
    "module",
    "msecs",
    "message",
    "msg",
    "name",
    "pathname",
    "process",
    "processName",
    "relativeCreated",
    "stack_info",
    "thread",
    "threadName",
    "taskName",
    "_loglag",
];

/// One `extra` value: JSON's own types where Python's map onto them, else its `str()`.
enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
}

fn value_of(v: &Bound<'_, PyAny>) -> PyResult<Value> {
    Ok(if v.is_none() {
        Value::Null
    } else if v.is_instance_of::<PyBool>() {
        Value::Bool(v.extract()?)
    } else if v.is_instance_of::<PyInt>() {
        match v.extract::<i64>() {
            Ok(i) => Value::Int(i),
            // Past i64: its digits, exactly.
            Err(_) => Value::Text(v.str()?.to_string_lossy().into_owned()),
        }
    } else if v.is_instance_of::<PyFloat>() {
        Value::Float(v.extract()?)
    } else if let Ok(s) = v.downcast::<PyString>() {
        Value::Text(crate::text(s).into_owned())
    } else {
        Value::Text(v.str()?.to_string_lossy().into_owned())
    })
}

/// How many entries a `LogRecord`'s `__dict__` has on this Python when nothing was
/// added to it: a record of that size has no `extra` fields, and its keys need not be
/// looked at (the common case, and the costly part of reading them). 0 (unknown):
/// every key is looked at. Measured once, at import ([`measure_plain_record`]), where
/// no other thread can race it.
static PLAIN_RECORD_LEN: AtomicUsize = AtomicUsize::new(0);

pub(crate) fn measure_plain_record(py: Python<'_>) {
    let made = (|| -> PyResult<usize> {
        let logging = py.import("logging")?;
        let record =
            logging
                .getattr("LogRecord")?
                .call1(("n", 20, "p", 1, "m", py.None(), py.None()))?;
        record.getattr("__dict__")?.len()
    })();
    PLAIN_RECORD_LEN.store(made.unwrap_or(0), Ordering::Relaxed);
}

/// The keys of the line itself: an `extra` field of one of these names is written as
/// `extra.NAME`, so it can neither hide nor forge the record's own.
const LINE_KEYS: [&str; 7] = [
    "timestamp",
    "level",
    "logger",
    "message",
    "thread",
    "exc",
    "stack",
];

fn extras(dict: &Bound<'_, PyDict>) -> PyResult<Vec<(String, Value)>> {
    let mut out = Vec::new();
    if dict.len() == PLAIN_RECORD_LEN.load(Ordering::Relaxed) {
        return Ok(out);
    }
    for (k, v) in dict.iter() {
        let Ok(k) = k.downcast::<PyString>() else {
            continue;
        };
        let k = crate::text(k);
        if RECORD_ATTRIBUTES.contains(&k.as_ref()) {
            continue;
        }
        let k = if LINE_KEYS.contains(&k.as_ref()) {
            format!("extra.{k}")
        } else {
            k.into_owned()
        };
        out.push((k, value_of(&v)?));
    }
    Ok(out)
}

/// The line of `r`, ending in `\n`.
pub(crate) fn line(encoding: Encoding, r: &Record<'_, '_>) -> PyResult<String> {
    let extra = extras(r.extra)?;
    let mut out = String::with_capacity(96 + r.message.len());
    match encoding {
        Encoding::Json => json(&mut out, r, &extra),
        Encoding::Text => text(&mut out, r, &extra),
    }
    out.push('\n');
    Ok(out)
}

fn json(out: &mut String, r: &Record<'_, '_>, extra: &[(String, Value)]) {
    let s = |v: &str| serde_json::to_string(v).expect("a str is JSON");
    out.push_str("{\"timestamp\":\"");
    rfc3339(out, r.created);
    let _ = write!(
        out,
        "\",\"level\":{},\"logger\":{},\"message\":{}",
        s(r.level_name),
        s(r.logger),
        s(r.message)
    );
    if let Some(t) = r.thread {
        let _ = write!(out, ",\"thread\":{}", s(t));
    }
    for (k, v) in extra {
        let _ = write!(out, ",{}:", s(k));
        match v {
            Value::Null => out.push_str("null"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            // JSON has no NaN or infinity: those are strings.
            Value::Float(f) if f.is_finite() => {
                let _ = write!(out, "{}", serde_json::Number::from_f64(*f).expect("finite"));
            }
            Value::Float(f) => out.push_str(&s(&f.to_string())),
            Value::Text(t) => out.push_str(&s(t)),
        }
    }
    if let Some(e) = r.exc_text {
        let _ = write!(out, ",\"exc\":{}", s(e));
    }
    if let Some(st) = r.stack {
        let _ = write!(out, ",\"stack\":{}", s(st));
    }
    out.push('}');
}

fn text(out: &mut String, r: &Record<'_, '_>, extra: &[(String, Value)]) {
    rfc3339(out, r.created);
    out.push(' ');
    escaped(out, r.level_name);
    out.push(' ');
    escaped(out, r.logger);
    out.push_str(": ");
    // A message that holds `=` or `"` is quoted, so it cannot pass for fields.
    if r.message.contains(['=', '"']) {
        quoted(out, r.message);
    } else {
        escaped(out, r.message);
    }
    for (k, v) in extra {
        out.push(' ');
        // A key cannot hold what separates the pairs.
        let key: String = k
            .chars()
            .map(|c| {
                if c == '=' || c == '"' || c.is_whitespace() {
                    '_'
                } else {
                    c
                }
            })
            .collect();
        escaped(out, &key);
        out.push('=');
        match v {
            Value::Null => out.push_str("None"),
            Value::Bool(b) => out.push_str(if *b { "True" } else { "False" }),
            Value::Int(i) => {
                let _ = write!(out, "{i}");
            }
            Value::Float(f) => {
                let _ = write!(out, "{f}");
            }
            Value::Text(t) => quoted(out, t),
        }
    }
    if let Some(e) = r.exc_text {
        out.push_str(" exc=");
        quoted(out, e);
    }
    if let Some(st) = r.stack {
        out.push_str(" stack=");
        quoted(out, st);
    }
}

/// `s` with control characters (and the backslash that escapes them) escaped.
fn escaped(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
}

/// A value, in double quotes (escaped) when it holds a space, `=`, `"` or is empty,
/// so a reader can split the line into its pairs.
fn quoted(out: &mut String, s: &str) {
    if s.is_empty() || s.contains([' ', '=', '"']) {
        out.push('"');
        for c in s.chars() {
            if c == '"' {
                out.push_str("\\\"");
            } else {
                let mut one = [0u8; 4];
                escaped(out, c.encode_utf8(&mut one));
            }
        }
        out.push('"');
    } else {
        escaped(out, s);
    }
}

/// `created` (seconds since the epoch) as `2026-12-06T23:10:00.123456Z`.
fn rfc3339(out: &mut String, created: f64) {
    let micros = if created.is_finite() && created > 0.0 {
        (created * 1e6).round() as i64
    } else {
        0
    };
    let (secs, us) = (micros.div_euclid(1_000_000), micros.rem_euclid(1_000_000));
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    // Digits by hand: `write!`'s formatting machinery was a tenth of the caller's
    // Rust time per record.
    let mut text = *b"0000-00-00T00:00:00.000000Z";
    let mut put = |at: std::ops::Range<usize>, mut v: u64| {
        for slot in text[at].iter_mut().rev() {
            *slot = b'0' + (v % 10) as u8;
            v /= 10;
        }
    };
    put(0..4, y.clamp(0, 9999) as u64);
    put(5..7, u64::from(m));
    put(8..10, u64::from(d));
    put(11..13, (rem / 3600) as u64);
    put(14..16, (rem / 60 % 60) as u64);
    put(17..19, (rem % 60) as u64);
    put(20..26, us as u64);
    out.push_str(std::str::from_utf8(&text).expect("ASCII digits"));
}

/// Days since 1970-01-01 as (year, month, day) in the proleptic Gregorian calendar
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc_with_microseconds() {
        let mut s = String::new();
        rfc3339(&mut s, 86_400.5);
        assert_eq!(s, "1970-01-02T00:00:00.500000Z");
        let mut s = String::new();
        rfc3339(&mut s, 1_796_598_000.000_123);
        assert_eq!(s, "2026-12-06T23:00:00.000123Z");
    }

    #[test]
    fn text_escapes_what_would_forge_a_line() {
        let mut s = String::new();
        escaped(&mut s, "a\nINFO forged\r\x1b[31m\\");
        assert_eq!(s, "a\\nINFO forged\\r\\u{1b}[31m\\\\");
        let mut s = String::new();
        quoted(&mut s, "x=1 \"y\"");
        assert_eq!(s, "\"x=1 \\\"y\\\"\"");
    }
}
