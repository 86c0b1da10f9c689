//! `Otlp`: the OTLP/HTTP logs sink (its documentation is on the type).
use std::io;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{
    any_value, AnyValue, ArrayValue, InstrumentationScope, KeyValue, KeyValueList,
};
use opentelemetry_proto::tonic::logs::v1::{LogRecord, ResourceLogs, ScopeLogs};
use opentelemetry_proto::tonic::resource::v1::Resource;
use prost::Message;
use serde_json::{Map, Value};

use super::backoff::{Backoff, Retry};
use super::{Endpoint, Sink, SinkReport};

/// How requests are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpEncoding {
    /// `application/x-protobuf`, what every receiver takes.
    Protobuf,
    /// `application/json`, OTLP's JSON mapping (ids as hex).
    Json,
}

/// An OTLP/HTTP logs sink.
///
/// OTLP/HTTP logs: each batch of JSON records becomes one `ExportLogsServiceRequest`,
/// protobuf (default) or JSON, posted to an OpenTelemetry Collector, Vector, Grafana
/// Alloy or any OTLP receiver.
///
/// The pipeline is the batch processor: the writer hands the sink a batch (up to
/// `batch_bytes`), and the sink turns it into one request. Records are read back from
/// the JSON lines that `LoglagLayer`, `loglag::info!` and `fmt().json()` write:
///
/// | JSON | LogRecord |
/// |---|---|
/// | `timestamp` (RFC 3339) | `time_unix_nano`; `observed_time_unix_nano` is when the batch is sent |
/// | `level` | `severity_number` (TRACE 1, DEBUG 5, INFO 9, WARN 13, ERROR 17), `severity_text` |
/// | `fields.message` | `body` |
/// | other `fields`, and the current `span`'s fields | `attributes` (typed: string, int, double, bool, array, map) |
/// | `trace_id` and `span_id` (32 and 16 hex digits) or `traceparent`, in the fields or any span | `trace_id`, `span_id` |
/// | `target` | the instrumentation scope's name (records are grouped by it) |
///
/// A line that is not a JSON object is sent as its text in `body`. The pipeline's own
/// reports ("dropped N records") are JSON records too, from target `loglag`.
///
/// Delivery: a request is retried on 429, 502, 503, 504 and on connection errors, with
/// back-off from 100 ms doubling to 5 s, honouring `Retry-After` (seconds), for up to
/// [`Otlp::retry_for`] (10 s); then the batch is lost, counted as `io_error`, and
/// until a back-off (50 ms doubling to 5 s) has passed further batches are not tried
/// (also `io_error`), so a collector that is down costs the writer no time. Any other
/// status (400, 401, 404, 413 …) fails the batch at once. A `Retry-After` shorter
/// than the back-off's own pause is raised to it (`Retry-After: 0` would make the retries
/// a busy loop). A collector that accepts a request but rejects some records
/// (`partial_success`) is reported in-band, and those records are dropped as
/// `rejected`, never counted written: all of the batch when it rejects all; else as
/// many as it says, the batch's last ones (OTLP says how many, not which), at their
/// levels. OTLP/HTTP is acknowledged: a 2xx means the collector has the rest.
///
/// TLS is not built in: point the sink at a collector or agent on the host or in the
/// pod (`http://127.0.0.1:4318`), which forwards over TLS.
///
/// ```no_run
/// use loglag::sink::Otlp;
/// let sink = Otlp::http("http://127.0.0.1:4318/v1/logs")?
///     .service_name("checkout")
///     .resource_attribute("deployment.environment", "prod");
/// let (writer, guard) = loglag::NonBlockingBuilder::default().build(sink)?;
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct Otlp {
    agent: ureq::Agent,
    endpoint: Endpoint,
    encoding: OtlpEncoding,
    resource: Vec<KeyValue>,
    retry_for: Duration,
    /// While it waits, batches fail at once: the collector was down.
    down: Backoff,
    notice: Option<String>,
    rejected: u64,
    /// Where the records the collector rejected start, counted from `passed`'s zero
    /// (see [`SinkReport::refused`]).
    refused_at: Vec<u64>,
    /// Bytes `write` took since the last report.
    passed: u64,
}

impl std::fmt::Debug for Otlp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Otlp")
            .field("endpoint", &self.endpoint.to_string())
            .field("encoding", &self.encoding)
            .finish_non_exhaustive()
    }
}

const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The first pause between a batch's retries (doubling to `MAX_BACKOFF`).
const FIRST_RETRY: Duration = Duration::from_millis(100);
/// A `Retry-After` beyond this (seconds) is read as this: it only has to end the
/// retries, and must not overflow the clock.
const MAX_RETRY_AFTER_S: u64 = 24 * 3600;
/// What "no end" means for a `retry_for` too large for the clock.
const FOREVER: Duration = Duration::from_secs(10 * 365 * 86_400);
/// The most of a collector's answer that is read (a partial-success message, an
/// error text): an endless body costs the writer nothing more.
const MAX_ANSWER_BYTES: u64 = 64 * 1024;
/// A request's own time limit, within the batch's `retry_for`.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

impl Otlp {
    /// A sink posting to `endpoint`, e.g. `http://127.0.0.1:4318/v1/logs` (a URL
    /// without a path gets `/v1/logs`). `service.name` defaults to the executable's
    /// name. Fails on a URL that is not `http://HOST:PORT[/PATH]` (see [`Endpoint`]).
    pub fn http(endpoint: &str) -> io::Result<Otlp> {
        let endpoint: Endpoint = endpoint
            .parse()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Ok(Otlp::new(endpoint))
    }

    /// A sink posting to `endpoint`, parsed already (a [`SinkSpec`](super::SinkSpec)'s).
    pub(crate) fn new(endpoint: Endpoint) -> Otlp {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            // A redirect followed as a bodiless GET would answer 200 for a batch the
            // collector never saw: a 3xx is the answer, and fails the batch.
            .max_redirects(0)
            .timeout_global(Some(REQUEST_TIMEOUT))
            .timeout_connect(Some(Duration::from_secs(2)))
            .build()
            .into();
        let service = std::env::current_exe()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "unknown_service".to_owned());
        Otlp {
            agent,
            endpoint,
            encoding: OtlpEncoding::Protobuf,
            resource: vec![string_attribute("service.name", &service)],
            retry_for: Duration::from_secs(10),
            down: Backoff::new(FIRST_BACKOFF, MAX_BACKOFF),
            notice: None,
            rejected: 0,
            refused_at: Vec::new(),
            passed: 0,
        }
    }

    /// Sends OTLP's JSON encoding instead of protobuf.
    pub fn json(mut self) -> Otlp {
        self.encoding = OtlpEncoding::Json;
        self
    }

    /// The resource's `service.name`.
    pub fn service_name(self, name: &str) -> Otlp {
        self.resource_attribute("service.name", name)
    }

    /// A resource attribute (replacing one of the same key).
    pub fn resource_attribute(mut self, key: &str, value: &str) -> Otlp {
        self.resource.retain(|kv| kv.key != key);
        self.resource.push(string_attribute(key, value));
        self
    }

    /// How long one batch is retried before it is counted lost (default 10 s). The
    /// writer waits meanwhile and the queue absorbs; keep it under the pipeline's
    /// shutdown timeout if the last batch must get its chance at exit.
    pub fn retry_for(mut self, limit: Duration) -> Otlp {
        self.retry_for = limit;
        self
    }

    /// Builds the request for a batch of lines.
    fn request(&self, lines: &[u8]) -> ExportLogsServiceRequest {
        let observed = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos() as u64;
        let mut scopes: Vec<ScopeLogs> = Vec::new();
        for line in lines.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
            let (target, record) = log_record(line, observed);
            match scopes
                .iter_mut()
                .find(|s| s.scope.as_ref().is_some_and(|scope| scope.name == target))
            {
                Some(scope) => scope.log_records.push(record),
                None => scopes.push(ScopeLogs {
                    scope: Some(InstrumentationScope {
                        name: target,
                        ..Default::default()
                    }),
                    log_records: vec![record],
                    ..Default::default()
                }),
            }
        }
        ExportLogsServiceRequest {
            resource_logs: vec![ResourceLogs {
                resource: Some(Resource {
                    attributes: self.resource.clone(),
                    ..Default::default()
                }),
                scope_logs: scopes,
                ..Default::default()
            }],
        }
    }

    fn encode(&self, request: &ExportLogsServiceRequest) -> io::Result<Vec<u8>> {
        match self.encoding {
            OtlpEncoding::Protobuf => Ok(request.encode_to_vec()),
            OtlpEncoding::Json => serde_json::to_vec(request).map_err(io::Error::other),
        }
    }

    /// Posts `body`, retrying what may succeed later, until `retry_for` has passed.
    /// Returns how many of its `records` the collector rejected (`partial_success`).
    fn export(&mut self, body: &[u8], records: usize) -> io::Result<usize> {
        if self.down.waiting(Instant::now()) {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                format!("OTLP collector at {} is down", self.endpoint),
            ));
        }
        let content_type = match self.encoding {
            OtlpEncoding::Protobuf => "application/x-protobuf",
            OtlpEncoding::Json => "application/json",
        };
        let started = Instant::now();
        // `retry_for` is the user's: a value too large for the clock means "for ever".
        let give_up = started
            .checked_add(self.retry_for)
            .or_else(|| started.checked_add(FOREVER))
            .unwrap_or(started);
        let url = self.endpoint.to_string();
        let mut retry = Retry::new(Backoff::new(FIRST_RETRY, MAX_BACKOFF), Some(give_up));
        loop {
            // No peer can stretch a batch past `retry_for`: each request gets what
            // is left of it (and at least a moment, to be tried at all).
            let left = give_up
                .saturating_duration_since(Instant::now())
                .clamp(Duration::from_millis(100), REQUEST_TIMEOUT);
            let failure = match self
                .agent
                .post(&url)
                .header("Content-Type", content_type)
                .config()
                .timeout_global(Some(left))
                .build()
                .send(body)
            {
                Ok(mut response) => {
                    let status = response.status().as_u16();
                    let header = |name: &str| {
                        response
                            .headers()
                            .get(name)
                            .and_then(|v| v.to_str().ok())
                            .map(|v| v.trim().to_owned())
                    };
                    // A peer's number: any value, however large, only ends the retries.
                    let retry_after = header("retry-after")
                        .and_then(|v| v.parse::<u64>().ok())
                        .map(|s| Duration::from_secs(s.min(MAX_RETRY_AFTER_S)));
                    let location = header("location");
                    let answer = response
                        .body_mut()
                        .with_config()
                        .limit(MAX_ANSWER_BYTES)
                        .read_to_vec()
                        .unwrap_or_default();
                    if (200..300).contains(&status) {
                        self.down.reset();
                        return Ok(self.note_partial_success(&answer, records));
                    }
                    if (300..400).contains(&status) {
                        // Never followed: a redirect is a misconfigured endpoint (http
                        // to https, a missing slash), and no retry will change it.
                        return Err(io::Error::other(format!(
                            "OTLP collector at {} answered {status}, a redirect to {}; \
                             not followed (a redirected POST is resent as a GET without \
                             its body): configure the final endpoint",
                            self.endpoint,
                            location.as_deref().unwrap_or("(no Location)")
                        )));
                    }
                    let error = io::Error::other(format!(
                        "OTLP collector at {} answered {status}: {}",
                        self.endpoint,
                        String::from_utf8_lossy(&answer[..answer.len().min(200)]).trim()
                    ));
                    if !matches!(status, 429 | 502 | 503 | 504) {
                        return Err(error);
                    }
                    // The back-off doubles on every retry, Retry-After or not, and is
                    // the floor of any Retry-After: a peer may ask for a longer pause,
                    // never a shorter one (`0` was 9,089 requests a second).
                    (error, retry_after)
                }
                Err(e) => (
                    io::Error::other(format!("OTLP collector at {}: {e}", self.endpoint)),
                    None,
                ),
            };
            let (error, asked) = failure;
            if !retry.wait_at_least(asked) {
                self.down.failed(Instant::now());
                return Err(error);
            }
        }
    }

    /// A 2xx may still say that the collector dropped some records: how many of the
    /// request's `records` (a peer's number: never more than the request held).
    fn note_partial_success(&mut self, answer: &[u8], records: usize) -> usize {
        let response = match self.encoding {
            OtlpEncoding::Protobuf => ExportLogsServiceResponse::decode(answer).ok(),
            OtlpEncoding::Json => serde_json::from_slice::<ExportLogsServiceResponse>(answer).ok(),
        };
        let Some(partial) = response.and_then(|r| r.partial_success) else {
            return 0;
        };
        if partial.rejected_log_records <= 0 {
            return 0;
        }
        self.rejected += 1;
        let said = partial.rejected_log_records;
        let rejected = usize::try_from(said).unwrap_or(usize::MAX).min(records);
        // The peer's text, bounded (the in-band line escapes it).
        let message: String = partial.error_message.chars().take(200).collect();
        self.notice = Some(if said as u64 > records as u64 {
            format!(
                "the OTLP collector rejected {said} of {records} records (counted as {rejected}): {message}"
            )
        } else {
            format!("the OTLP collector rejected {said} of {records} records: {message}")
        });
        rejected
    }
}

impl Sink for Otlp {
    /// Sends the whole lines of `buf` as one request.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let whole = match buf.iter().rposition(|&b| b == b'\n') {
            Some(last) => last + 1,
            None => buf.len(),
        };
        let lines = &buf[..whole];
        let request = self.request(lines);
        let records = request.resource_logs[0]
            .scope_logs
            .iter()
            .map(|s| s.log_records.len())
            .sum();
        let body = self.encode(&request)?;
        let rejected = self.export(&body, records)?;
        if rejected > 0 {
            // The last `rejected` records of those sent (the lines `request` read).
            let starts: Vec<usize> = line_starts(lines).collect();
            let first = starts.len().saturating_sub(rejected);
            self.refused_at
                .extend(starts[first..].iter().map(|&s| self.passed + s as u64));
        }
        self.passed += whole as u64;
        Ok(whole)
    }

    fn take_report(&mut self) -> SinkReport {
        self.passed = 0;
        SinkReport {
            notice: self.notice.take(),
            absorbed_errors: std::mem::take(&mut self.rejected),
            refused: std::mem::take(&mut self.refused_at),
        }
    }
}

/// Where each non-empty line of `lines` starts: the records `Otlp::request` sends.
fn line_starts(lines: &[u8]) -> impl Iterator<Item = usize> + '_ {
    let mut start = 0;
    lines.split(|&b| b == b'\n').filter_map(move |line| {
        let at = start;
        start += line.len() + 1;
        (!line.is_empty()).then_some(at)
    })
}

fn string_attribute(key: &str, value: &str) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: Some(AnyValue {
            value: Some(any_value::Value::StringValue(value.to_owned())),
        }),
        ..Default::default()
    }
}

/// A JSON value as an OTLP value.
fn any_value(v: &Value) -> Option<AnyValue> {
    let value = match v {
        Value::Null => return None,
        Value::Bool(b) => any_value::Value::BoolValue(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => any_value::Value::IntValue(i),
            None => any_value::Value::DoubleValue(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => any_value::Value::StringValue(s.clone()),
        Value::Array(items) => any_value::Value::ArrayValue(ArrayValue {
            values: items.iter().filter_map(any_value).collect(),
        }),
        Value::Object(map) => any_value::Value::KvlistValue(KeyValueList {
            values: attributes(map.iter()),
        }),
    };
    Some(AnyValue { value: Some(value) })
}

fn attributes<'a>(fields: impl Iterator<Item = (&'a String, &'a Value)>) -> Vec<KeyValue> {
    fields
        .filter_map(|(k, v)| {
            any_value(v).map(|value| KeyValue {
                key: k.clone(),
                value: Some(value),
                ..Default::default()
            })
        })
        .collect()
}

fn severity(level: &str) -> i32 {
    match level.trim().to_ascii_uppercase().as_str() {
        "TRACE" => 1,
        "DEBUG" => 5,
        "INFO" => 9,
        "WARN" | "WARNING" => 13,
        "ERROR" => 17,
        _ => 0,
    }
}

/// One line as (instrumentation scope name, LogRecord).
fn log_record(line: &[u8], observed: u64) -> (String, LogRecord) {
    let mut record = LogRecord {
        observed_time_unix_nano: observed,
        ..Default::default()
    };
    let object = match serde_json::from_slice::<Value>(line) {
        Ok(Value::Object(object)) => object,
        _ => {
            let text = String::from_utf8_lossy(line).into_owned();
            record.body = Some(AnyValue {
                value: Some(any_value::Value::StringValue(text)),
            });
            return (String::new(), record);
        }
    };
    const ENVELOPE: [&str; 6] = ["timestamp", "level", "target", "fields", "span", "spans"];
    let text = |key: &str| object.get(key).and_then(Value::as_str);
    if let Some(level) = text("level") {
        record.severity_number = severity(level);
        record.severity_text = level.to_owned();
    }
    record.time_unix_nano = text("timestamp").and_then(unix_nanos).unwrap_or(0);
    let target = text("target").unwrap_or_default().to_owned();
    // `fields` as tracing-subscriber's JSON nests them; flattened events have them at
    // the top level.
    let mut fields: Map<String, Value> = match object.get("fields") {
        Some(Value::Object(fields)) => fields.clone(),
        _ => object
            .iter()
            .filter(|(k, _)| !ENVELOPE.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    };
    if let Some(message) = fields.remove("message") {
        record.body = any_value(&message);
    }
    let span = object.get("span").and_then(Value::as_object);
    let spans: Vec<&Map<String, Value>> = object
        .get("spans")
        .and_then(Value::as_array)
        .map(|s| s.iter().filter_map(Value::as_object).collect())
        .unwrap_or_default();
    // The ids: the event's own fields first, then the innermost span outwards.
    let scopes = std::iter::once(&fields)
        .chain(span)
        .chain(spans.iter().rev().copied());
    for scope in scopes {
        if let Some((trace, span)) = ids(scope) {
            record.trace_id = trace;
            if let Some(span) = span {
                record.span_id = span;
            }
            break;
        }
    }
    for key in ["trace_id", "span_id", "traceparent"] {
        fields.remove(key);
    }
    let mut attrs = attributes(fields.iter());
    if let Some(span) = span {
        for (k, v) in span {
            if k == "name" {
                if let Some(value) = any_value(v) {
                    attrs.push(KeyValue {
                        key: "span.name".into(),
                        value: Some(value),
                        ..Default::default()
                    });
                }
            } else if !["trace_id", "span_id", "traceparent"].contains(&k.as_str())
                && !fields.contains_key(k)
            {
                attrs.extend(attributes(std::iter::once((k, v))));
            }
        }
    }
    record.attributes = attrs;
    (target, record)
}

/// Trace id and span id from `trace_id`/`span_id` or a W3C `traceparent`.
fn ids(scope: &Map<String, Value>) -> Option<(Vec<u8>, Option<Vec<u8>>)> {
    let hex_field = |key: &str, len: usize| {
        scope
            .get(key)
            .and_then(Value::as_str)
            .and_then(|s| hex(s, len))
    };
    if let Some(trace) = hex_field("trace_id", 16) {
        return Some((trace, hex_field("span_id", 8)));
    }
    let parent = scope.get("traceparent")?.as_str()?;
    let mut parts = parent.split('-');
    let (_version, trace, span) = (parts.next()?, parts.next()?, parts.next()?);
    Some((hex(trace, 16)?, hex(span, 8)))
}

/// `len` bytes from exactly `2 * len` hex digits, not all zero (an invalid id).
fn hex(s: &str, len: usize) -> Option<Vec<u8>> {
    let s = s.trim();
    if s.len() != 2 * len || !s.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..len)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok())
        .collect();
    bytes.filter(|b| b.iter().any(|&x| x != 0))
}

/// Unix nanoseconds of an RFC 3339 time: `2026-12-01T19:51:41.123456Z` or with an
/// offset (`+09:00`).
fn unix_nanos(t: &str) -> Option<u64> {
    let b = t.trim().as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        std::str::from_utf8(b.get(r)?).ok()?.parse().ok()
    };
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut i = 19;
    let mut nanos = 0i64;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let digits = &t.trim()[start..i];
        let scale = 9usize.checked_sub(digits.len().min(9))?;
        nanos = digits[..digits.len().min(9)].parse::<i64>().ok()? * 10i64.pow(scale as u32);
    }
    let offset = match b.get(i)? {
        b'Z' | b'z' => 0,
        sign @ (b'+' | b'-') => {
            let (oh, om) = (num(i + 1..i + 3)?, num(i + 4..i + 6)?);
            let minutes = oh * 60 + om;
            if *sign == b'+' {
                minutes
            } else {
                -minutes
            }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + s - offset * 60;
    u64::try_from(secs * 1_000_000_000 + nanos).ok()
}

/// Howard Hinnant's civil-to-days (the inverse of `format::time::civil_from_days`).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let mp = (i64::from(m) + 9) % 12;
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_times_read_back_to_unix_nanoseconds() {
        assert_eq!(unix_nanos("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_nanos("2026-12-01T19:51:41.123456Z"),
            Some(1_796_154_701_123_456_000)
        );
        assert_eq!(
            unix_nanos("2026-12-02T04:51:41.123456+09:00"),
            Some(1_796_154_701_123_456_000)
        );
        assert_eq!(
            unix_nanos("2000-02-29T12:00:00.5Z"),
            Some(951_825_600_500_000_000)
        );
        assert_eq!(unix_nanos("yesterday"), None);
        assert_eq!(unix_nanos("2026-12-01T19:51:41"), None, "no zone");
    }

    #[test]
    fn a_tracing_json_line_becomes_a_log_record() {
        let line = br#"{"timestamp":"2026-12-01T19:51:41.000001Z","level":"WARN","fields":{"message":"slow","latency_ms":12.5,"user":"ann","retries":3,"ok":false},"target":"checkout::db","span":{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","order":7,"name":"buy"},"spans":[{"trace_id":"4bf92f3577b34da6a3ce929d0e0e4736","span_id":"00f067aa0ba902b7","order":7,"name":"buy"}]}"#;
        let (target, r) = log_record(line, 5);
        assert_eq!(target, "checkout::db");
        assert_eq!((r.severity_number, r.severity_text.as_str()), (13, "WARN"));
        assert_eq!(r.time_unix_nano, 1_796_154_701_000_001_000);
        assert_eq!(r.observed_time_unix_nano, 5);
        assert_eq!(
            r.body.unwrap().value,
            Some(any_value::Value::StringValue("slow".into()))
        );
        assert_eq!(hex_string(&r.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(hex_string(&r.span_id), "00f067aa0ba902b7");
        let attr = |k: &str| {
            r.attributes
                .iter()
                .find(|kv| kv.key == k)
                .and_then(|kv| kv.value.clone())
                .and_then(|v| v.value)
        };
        assert_eq!(
            attr("latency_ms"),
            Some(any_value::Value::DoubleValue(12.5))
        );
        assert_eq!(attr("retries"), Some(any_value::Value::IntValue(3)));
        assert_eq!(attr("ok"), Some(any_value::Value::BoolValue(false)));
        assert_eq!(
            attr("order"),
            Some(any_value::Value::IntValue(7)),
            "span field"
        );
        assert_eq!(
            attr("span.name"),
            Some(any_value::Value::StringValue("buy".into()))
        );
        assert_eq!(attr("trace_id"), None, "ids are not attributes");
    }

    #[test]
    fn a_traceparent_gives_the_ids_and_a_text_line_becomes_a_body() {
        let line = br#"{"level":"INFO","fields":{"message":"x","traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},"target":"t"}"#;
        let (_, r) = log_record(line, 0);
        assert_eq!(hex_string(&r.trace_id), "0af7651916cd43dd8448eb211c80319c");
        assert_eq!(hex_string(&r.span_id), "b7ad6b7169203331");
        let (target, r) = log_record(b"plain text INFO line", 0);
        assert_eq!(target, "");
        assert_eq!(
            r.body.unwrap().value,
            Some(any_value::Value::StringValue("plain text INFO line".into()))
        );
    }

    fn hex_string(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }
}
