//! The logging conditions the built-in API can run, and the records they write.

use std::fmt;
use std::str::FromStr;

use loglag::__named_enum as named_enum;
use serde::{Deserialize, Serialize};

/// Bytes of the short fixed line, newline included.
pub const SHORT_LINE_BYTES: usize = 128;
/// Bytes of the JSON line, newline included.
pub const JSON_LINE_BYTES: usize = 16_384;

/// Where the `loglag-spool` condition keeps its spool: next to the log it writes, so
/// the API and the lab (which recovers it after the stop) agree without a flag.
pub fn spool_path_for(log_path: &std::path::Path) -> std::path::PathBuf {
    let mut name = log_path.file_name().unwrap_or_default().to_owned();
    name.push(".spool");
    log_path.with_file_name(name)
}

/// One way of logging per request. Only this differs between runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Condition {
    /// Nothing.
    None,
    /// One fixed 128-byte line, written synchronously.
    Short1,
    /// That line ten times, synchronously.
    Short10,
    /// Build the 16 KiB JSON line and discard it.
    JsonGen,
    /// Write a JSON line built at startup, synchronously.
    JsonPreSync,
    /// Build the JSON line and write it synchronously.
    JsonSync,
    /// Build it and hand it to a 256-record bounded queue drained by a thread.
    JsonQueue,
    /// Build it and submit it to the loglag pipeline with its default policy.
    Loglag,
    /// The same with the queue in a spool file next to the log (`spool_path_for`): a
    /// SIGKILL loses nothing, the lab delivers the spool after the stop as the next
    /// start would (reference 002's SIGKILL row, answered).
    LoglagSpool,
    /// Build it and write it through `tracing_appender::non_blocking` (defaults).
    TracingAppender,
    /// A 100-record memory buffer the caller flushes synchronously when full or on ERROR.
    #[serde(rename = "memory-buffer-100", alias = "memory-buffer")]
    MemoryBuffer,
    /// The same with 50 records (reference 002).
    #[serde(rename = "memory-buffer-50")]
    MemoryBuffer50,
    /// The same with 200 records (reference 002).
    #[serde(rename = "memory-buffer-200")]
    MemoryBuffer200,
    /// A queue whose writer thread feeds a 100-record memory buffer (QueueHandler in front
    /// of a MemoryHandler, reference 002).
    #[serde(rename = "queue-memory-100")]
    QueueMemory100,
    /// One write(2) of each record to the append-mode file, as it is logged (002's
    /// FileHandler).
    FileSync,
    /// `writeln!` of each record to a shared, unbuffered file under a mutex (003's
    /// synchronous logging): the line and its newline are separate writes.
    SyncWriteln,
    /// An mpsc channel and a writer flushing at 32 KiB or every 100 ms (reference 003).
    ChannelBatch,
    /// One awaited `tokio::fs` write per request.
    TokioFs,
    /// Build it and submit it to the loglag pipeline, which ships it as an RFC 5424
    /// message over TCP to the collector (`api/collector.rs`).
    LoglagSyslog,
    /// The same message written to the collector synchronously, before the response.
    SyslogSync,
    /// Build it and submit it to the loglag pipeline, which ships it over OTLP/HTTP.
    LoglagOtlp,
    /// One OTLP/HTTP request per record, before the response.
    OtlpSync,
}

impl Condition {
    /// The seven conditions of the reference experiment, in its order.
    pub const REFERENCE: [Condition; 7] = [
        Condition::None,
        Condition::Short1,
        Condition::Short10,
        Condition::JsonGen,
        Condition::JsonPreSync,
        Condition::JsonSync,
        Condition::JsonQueue,
    ];

    /// Reference 002's comparison (the `buffers` preset).
    pub const BUFFERS: [Condition; 7] = [
        Condition::FileSync,
        Condition::MemoryBuffer50,
        Condition::MemoryBuffer,
        Condition::MemoryBuffer200,
        Condition::QueueMemory100,
        Condition::Loglag,
        Condition::LoglagSpool,
    ];

    /// Reference 003's comparison (the `blocking` preset).
    pub const BLOCKING: [Condition; 5] = [
        Condition::SyncWriteln,
        Condition::TokioFs,
        Condition::ChannelBatch,
        Condition::TracingAppender,
        Condition::Loglag,
    ];

    /// The network conditions: a collector the lab runs and rate-caps, through loglag
    /// and synchronously (the `collectors` preset).
    pub const COLLECTORS: [Condition; 4] = [
        Condition::SyslogSync,
        Condition::LoglagSyslog,
        Condition::OtlpSync,
        Condition::LoglagOtlp,
    ];

    /// Every condition.
    pub const ALL: [Condition; 22] = [
        Condition::None,
        Condition::Short1,
        Condition::Short10,
        Condition::JsonGen,
        Condition::JsonPreSync,
        Condition::JsonSync,
        Condition::JsonQueue,
        Condition::Loglag,
        Condition::TracingAppender,
        Condition::MemoryBuffer,
        Condition::ChannelBatch,
        Condition::TokioFs,
        Condition::MemoryBuffer50,
        Condition::MemoryBuffer200,
        Condition::QueueMemory100,
        Condition::FileSync,
        Condition::SyncWriteln,
        Condition::LoglagSpool,
        Condition::LoglagSyslog,
        Condition::SyslogSync,
        Condition::LoglagOtlp,
        Condition::OtlpSync,
    ];

    /// The collector a network condition ships to.
    pub fn collector(self) -> Option<crate::api::collector::Protocol> {
        use crate::api::collector::Protocol;
        match self {
            Condition::LoglagSyslog | Condition::SyslogSync => Some(Protocol::Syslog),
            Condition::LoglagOtlp | Condition::OtlpSync => Some(Protocol::Otlp),
            _ => None,
        }
    }

    /// What the condition writes per request, and when: for `--help` and the README.
    pub fn describe(self) -> &'static str {
        match self {
            Condition::None => "writes nothing (the baseline)",
            Condition::Short1 => "one fixed 128-byte line, written before the response",
            Condition::Short10 => "that line ten times, written before the response",
            Condition::JsonGen => "builds the 16 KiB JSON record, then discards it",
            Condition::JsonPreSync => {
                "writes a 16 KiB JSON line built at startup, before the response"
            }
            Condition::JsonSync => "builds and writes the 16 KiB JSON line before the response",
            Condition::JsonQueue => {
                "builds it and hands it to a 256-record queue; a thread writes it later"
            }
            Condition::Loglag => "builds it and submits it to this crate's pipeline (defaults)",
            Condition::LoglagSpool => {
                "the same, with the queue in a spool file: a SIGKILL loses nothing, the lab delivers the spool after the stop (at least once into the pipe)"
            }
            Condition::TracingAppender => {
                "builds it and writes it through tracing-appender's non_blocking (defaults)"
            }
            Condition::MemoryBuffer => {
                "buffers 100 records in memory; the request that fills it (or logs an ERROR) writes them all"
            }
            Condition::MemoryBuffer50 => "the same with 50 records",
            Condition::MemoryBuffer200 => "the same with 200 records",
            Condition::QueueMemory100 => {
                "a queue; its thread fills a 100-record buffer and writes it when full"
            }
            Condition::FileSync => "one write(2) per record to the append-mode log",
            Condition::SyncWriteln => {
                "writeln! per record to a shared unbuffered file under a mutex"
            }
            Condition::ChannelBatch => {
                "sends it on a channel; a writer flushes at 32 KiB or every 100 ms"
            }
            Condition::TokioFs => "builds it and awaits one tokio::fs write per request",
            Condition::LoglagSyslog => {
                "builds it and submits it to loglag, which ships it as RFC 5424 over TCP to a collector the lab caps"
            }
            Condition::SyslogSync => {
                "writes it as RFC 5424 over TCP to that collector before the response"
            }
            Condition::LoglagOtlp => {
                "builds it and submits it to loglag, which ships it over OTLP/HTTP to a collector the lab caps"
            }
            Condition::OtlpSync => "posts it over OTLP/HTTP to that collector before the response",
        }
    }

    /// The name used on the command line and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::None => "none",
            Condition::Short1 => "short1",
            Condition::Short10 => "short10",
            Condition::JsonGen => "json-gen",
            Condition::JsonPreSync => "json-pre-sync",
            Condition::JsonSync => "json-sync",
            Condition::JsonQueue => "json-queue",
            Condition::Loglag => "loglag",
            Condition::LoglagSpool => "loglag-spool",
            Condition::TracingAppender => "tracing-appender",
            Condition::MemoryBuffer => "memory-buffer-100",
            Condition::MemoryBuffer50 => "memory-buffer-50",
            Condition::MemoryBuffer200 => "memory-buffer-200",
            Condition::QueueMemory100 => "queue-memory-100",
            Condition::FileSync => "file-sync",
            Condition::SyncWriteln => "sync-writeln",
            Condition::ChannelBatch => "channel-batch",
            Condition::TokioFs => "tokio-fs",
            Condition::LoglagSyslog => "loglag-syslog",
            Condition::SyslogSync => "syslog-sync",
            Condition::LoglagOtlp => "loglag-otlp",
            Condition::OtlpSync => "otlp-sync",
        }
    }

    /// Log bytes each request produces with records of `shape`.
    pub fn bytes_per_request(self, shape: RecordShape) -> usize {
        self.records_per_request(shape) * self.record_bytes(shape)
    }

    /// Records each request logs with records of `shape`.
    pub fn records_per_request(self, shape: RecordShape) -> usize {
        match self {
            Condition::None | Condition::JsonGen => 0,
            Condition::Short1 | Condition::JsonPreSync => 1,
            Condition::Short10 => 10,
            _ => shape.records_per_request(),
        }
    }

    /// Bytes of each record (all records of a run have the same length).
    pub fn record_bytes(self, shape: RecordShape) -> usize {
        match self {
            Condition::None => 0,
            Condition::Short1 | Condition::Short10 => SHORT_LINE_BYTES,
            Condition::JsonPreSync => JSON_LINE_BYTES,
            _ => shape.record_bytes(),
        }
    }

    /// Whether the request builds its records (the reference's fixed lines are built
    /// once, at startup).
    pub fn builds_records(self) -> bool {
        !matches!(
            self,
            Condition::None | Condition::Short1 | Condition::Short10 | Condition::JsonPreSync
        )
    }

    /// The capacity of the caller-side memory buffer, for the conditions that have one.
    pub fn memory_buffer(self) -> Option<usize> {
        match self {
            Condition::MemoryBuffer50 => Some(50),
            Condition::MemoryBuffer | Condition::QueueMemory100 => Some(100),
            Condition::MemoryBuffer200 => Some(200),
            _ => None,
        }
    }
}

named_enum! {
    /// What each request logs, for the conditions that build records.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
    #[serde(rename_all = "kebab-case")]
    pub enum RecordShape: "unknown record shape" {
        /// One 16 KiB JSON record (the reference experiment).
        #[default]
        Json16k = "json16k",
        /// Three 128-byte text lines, INFO, DEBUG, INFO (reference 002's endpoint).
        Three = "three",
        /// One 120-byte INFO line (reference 003).
        Line120 = "line120",
    }
}

impl RecordShape {
    pub fn records_per_request(self) -> usize {
        match self {
            RecordShape::Json16k | RecordShape::Line120 => 1,
            RecordShape::Three => 3,
        }
    }

    pub fn record_bytes(self) -> usize {
        match self {
            RecordShape::Json16k => JSON_LINE_BYTES,
            RecordShape::Three => SHORT_LINE_BYTES,
            RecordShape::Line120 => 120,
        }
    }
}

/// The level of a built record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordLevel {
    Debug,
    Info,
    Error,
}

impl RecordLevel {
    fn label(self) -> &'static str {
        match self {
            RecordLevel::Debug => "DEBUG",
            RecordLevel::Info => "INFO ",
            RecordLevel::Error => "ERROR",
        }
    }
}

/// Builds one text record of exactly `len` bytes, newline included: a timestamp, the
/// level, the request id and a sequence number (so the reader can check order), and
/// `message` padded with dots.
pub fn build_text_line(
    out: &mut Vec<u8>,
    len: usize,
    now_ns: u64,
    level: RecordLevel,
    request_id: u64,
    seq: u64,
    message: &str,
) {
    use std::io::Write as _;
    out.clear();
    let _ = write!(
        out,
        "{now_ns:020} {} api: id={request_id:012} seq={seq:012} {message} ",
        level.label()
    );
    out.resize(len - 1, b'.');
    out.push(b'\n');
}

/// The records a request of `shape` logs: (level, message). With `error`, the last
/// record is an ERROR (`--error-every`).
pub fn shape_records(shape: RecordShape, error: bool) -> &'static [(RecordLevel, &'static str)] {
    match (shape, error) {
        (RecordShape::Three, false) => &[
            (
                RecordLevel::Info,
                "request received path=/ user_agent=loglag",
            ),
            (RecordLevel::Debug, "handler state cache=hit items=3"),
            (RecordLevel::Info, "request done status=200"),
        ],
        (RecordShape::Three, true) => &[
            (
                RecordLevel::Info,
                "request received path=/ user_agent=loglag",
            ),
            (RecordLevel::Debug, "handler state cache=hit items=3"),
            (RecordLevel::Error, "request failed downstream=timeout"),
        ],
        (_, false) => &[(RecordLevel::Info, "request handled path=/ status=200")],
        (_, true) => &[(RecordLevel::Error, "request failed downstream=timeout")],
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Condition {
    type Err = String;
    fn from_str(s: &str) -> Result<Condition, String> {
        // The name it had before the 50 and 200 variants existed.
        if s.trim() == "memory-buffer" {
            return Ok(Condition::MemoryBuffer);
        }
        Condition::ALL
            .into_iter()
            .find(|c| c.as_str() == s.trim())
            .ok_or_else(|| {
                let names: Vec<_> = Condition::ALL.iter().map(|c| c.as_str()).collect();
                format!(
                    "unknown condition {s:?}; expected one of: {}",
                    names.join(", ")
                )
            })
    }
}

/// The fixed 128-byte line.
pub fn short_line() -> Vec<u8> {
    let mut line =
        b"2026-10-29T00:00:00.000Z INFO api: request handled path=/ status=200 note=".to_vec();
    line.resize(SHORT_LINE_BYTES - 1, b'.');
    line.push(b'\n');
    line
}

#[derive(Serialize)]
struct JsonRecord<'a> {
    ts_ns: &'a str,
    level: &'static str,
    msg: &'static str,
    request_id: &'a str,
    payload: &'a str,
}

/// Builds the 16 KiB JSON line for request `request_id` into `out`: a JSON object whose
/// bulk is one long ASCII string, serialised with serde_json. Fixed-width numbers keep
/// every line exactly [`JSON_LINE_BYTES`] long.
pub fn build_json_line(out: &mut Vec<u8>, request_id: u64, now_ns: u64, payload: &str) {
    out.clear();
    let ts = format!("{now_ns:020}");
    let id = format!("{request_id:012}");
    let record = JsonRecord {
        ts_ns: &ts,
        level: "INFO",
        msg: "request handled",
        request_id: &id,
        payload,
    };
    serde_json::to_writer(&mut *out, &record).expect("serialising to a Vec cannot fail");
    out.push(b'\n');
}

/// The payload that makes [`build_json_line`] produce exactly [`JSON_LINE_BYTES`].
pub fn json_payload() -> String {
    let mut probe = Vec::new();
    build_json_line(&mut probe, 0, 0, "");
    let len = JSON_LINE_BYTES - probe.len();
    (0..len).map(|i| (b'a' + (i % 26) as u8) as char).collect()
}

/// One run's condition: the built-in API's, or any name an `--app` understands (passed
/// to it through `{condition}`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum RunCondition {
    BuiltIn(Condition),
    /// A name only the `--app` knows; verified against `--expect-lines`.
    Named(String),
}

impl std::fmt::Display for RunCondition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl RunCondition {
    /// A built-in name is always the built-in condition (with its expectations); any
    /// other name is accepted only for an `--app`.
    pub fn parse(name: &str, app: bool) -> Result<RunCondition, String> {
        let name = name.trim();
        match name.parse::<Condition>() {
            Ok(c) => Ok(RunCondition::BuiltIn(c)),
            // The name goes into a shell command line: only characters a shell leaves
            // alone.
            Err(_)
                if app
                    && name.starts_with(|c: char| c.is_ascii_alphanumeric())
                    && name
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || "._+=:-".contains(c)) =>
            {
                Ok(RunCondition::Named(name.to_owned()))
            }
            Err(_) if app => Err(format!(
                "invalid condition name {name:?}: with --app, a name is passed to a shell, so it may hold only letters, digits and . _ + = : -"
            )),
            Err(e) => Err(format!("{e} (any other name needs --app)")),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            RunCondition::BuiltIn(c) => c.as_str(),
            RunCondition::Named(n) => n,
        }
    }

    pub fn built_in(&self) -> Option<Condition> {
        match self {
            RunCondition::BuiltIn(c) => Some(*c),
            RunCondition::Named(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_serialise_the_same_way() {
        for c in Condition::ALL {
            assert_eq!(c.as_str().parse::<Condition>().unwrap(), c);
            assert_eq!(
                serde_json::to_value(c).unwrap(),
                serde_json::Value::String(c.as_str().into())
            );
            assert!(!c.describe().is_empty());
        }
        assert!("json_sync"
            .parse::<Condition>()
            .unwrap_err()
            .contains("json-sync"));
    }

    #[test]
    fn lines_have_the_reference_sizes() {
        assert_eq!(short_line().len(), 128);
        let payload = json_payload();
        let mut line = Vec::new();
        for id in [0, 7, 123_456_789] {
            build_json_line(&mut line, id, crate::sys::clock::mono_ns(), &payload);
            assert_eq!(line.len(), JSON_LINE_BYTES);
            assert_eq!(line.iter().filter(|&&b| b == b'\n').count(), 1);
        }
    }

    #[test]
    fn text_lines_have_their_shape_and_fields() {
        let mut line = Vec::new();
        for shape in [RecordShape::Three, RecordShape::Line120] {
            for &(level, message) in shape_records(shape, true) {
                build_text_line(&mut line, shape.record_bytes(), 12, level, 7, 3, message);
                assert_eq!(line.len(), shape.record_bytes());
                let text = std::str::from_utf8(&line).unwrap();
                assert!(
                    text.contains(" id=000000000007 seq=000000000003 "),
                    "{text}"
                );
                assert!(text.ends_with(".\n"), "{text}");
            }
        }
        assert_eq!(
            shape_records(RecordShape::Three, true)[2].0,
            RecordLevel::Error
        );
        assert_eq!(
            "memory-buffer".parse::<Condition>().unwrap(),
            Condition::MemoryBuffer
        );
        assert_eq!(
            Condition::FileSync.bytes_per_request(RecordShape::Three),
            384
        );
        assert_eq!(
            Condition::Short10.bytes_per_request(RecordShape::Three),
            1280
        );
    }

    #[test]
    fn names_round_trip() {
        for c in Condition::ALL {
            assert_eq!(c.as_str().parse::<Condition>().unwrap(), c);
        }
        assert!("json"
            .parse::<Condition>()
            .unwrap_err()
            .contains("json-sync"));
    }
}
