//! The logging conditions the built-in API can run, and the records they write.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Bytes of the short fixed line, newline included.
pub const SHORT_LINE_BYTES: usize = 128;
/// Bytes of the JSON line, newline included.
pub const JSON_LINE_BYTES: usize = 16_384;

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
    /// Build it and write it through `tracing_appender::non_blocking` (defaults).
    TracingAppender,
    /// A 100-record memory buffer the caller flushes synchronously when full.
    MemoryBuffer,
    /// An mpsc channel and a writer flushing at 32 KiB or every 100 ms (reference 003).
    ChannelBatch,
    /// One awaited `tokio::fs` write per request.
    TokioFs,
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

    /// Every condition.
    pub const ALL: [Condition; 12] = [
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
    ];

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
            Condition::TracingAppender => {
                "builds it and writes it through tracing-appender's non_blocking (defaults)"
            }
            Condition::MemoryBuffer => {
                "buffers 100 records in memory; the request that fills it writes them all"
            }
            Condition::ChannelBatch => {
                "sends it on a channel; a writer flushes at 32 KiB or every 100 ms (ref. 003)"
            }
            Condition::TokioFs => "builds it and awaits one tokio::fs write per request",
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
            Condition::TracingAppender => "tracing-appender",
            Condition::MemoryBuffer => "memory-buffer",
            Condition::ChannelBatch => "channel-batch",
            Condition::TokioFs => "tokio-fs",
        }
    }

    /// Log bytes each request produces.
    pub fn bytes_per_request(self) -> usize {
        match self {
            Condition::None | Condition::JsonGen => 0,
            Condition::Short1 => SHORT_LINE_BYTES,
            Condition::Short10 => 10 * SHORT_LINE_BYTES,
            _ => JSON_LINE_BYTES,
        }
    }

    /// Whether the request builds the JSON line.
    pub fn builds_json(self) -> bool {
        !matches!(
            self,
            Condition::None | Condition::Short1 | Condition::Short10 | Condition::JsonPreSync
        )
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
