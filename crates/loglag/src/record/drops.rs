//! Why a record was dropped ([`DropReason`]), and the lines in which loglag reports
//! drops in-band. Below the counters (`metrics.rs`), the spool's ledger and its
//! recovery, which all speak of drops and none of which imports another for it.

use crate::record::level::Level;
use crate::record::Format;

/// Why a record was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DropReason {
    /// The byte budget was full and the overflow policy refused the record.
    QueueFull = 0,
    /// The sink (and every fallback) failed to take it.
    IoError = 1,
    /// The shutdown deadline passed before it was written.
    Shutdown = 2,
    /// Logged from inside the pipeline's own sink (a sink that logs, on the writer
    /// thread or while a `sync`-mode write holds the sink) when it could not be queued
    /// without waiting: waiting there would deadlock.
    Reentrant = 3,
    /// The peer received it and refused it: a RELP collector's `500`, or an OTLP
    /// collector's `partial_success` (which says how many, not which: the batch's last
    /// records are counted, at their levels).
    Rejected = 4,
}

/// How many drop reasons there are: the rows of `Metrics::dropped` and of the spool's
/// ledger.
pub(crate) const DROP_REASONS: usize = DropReason::ALL.len();

impl DropReason {
    /// Every reason, in the order of the counters.
    pub const ALL: [DropReason; 5] = [
        DropReason::QueueFull,
        DropReason::IoError,
        DropReason::Shutdown,
        DropReason::Reentrant,
        DropReason::Rejected,
    ];

    /// The snake_case name used in reports and in Prometheus labels.
    pub fn as_str(self) -> &'static str {
        match self {
            DropReason::QueueFull => "queue_full",
            DropReason::IoError => "io_error",
            DropReason::Shutdown => "shutdown",
            DropReason::Reentrant => "reentrant",
            DropReason::Rejected => "rejected",
        }
    }
}

/// One WARN line from `loglag` itself in `format`: `message`, and in structured
/// formats `fields` too (text carries the numbers in the message already).
pub(crate) fn own_line(format: Format, message: &str, fields: &[(&str, u64)]) -> Vec<u8> {
    use crate::record::{LineBuilder, Value};
    let mut line = Vec::with_capacity(256);
    let mut builder = LineBuilder::begin(
        &mut line,
        format,
        std::time::SystemTime::now(),
        Level::Warn,
        "loglag",
    );
    builder.field("message", Value::Str(message));
    if format != Format::Compact {
        for &(name, n) in fields {
            builder.field(name, Value::U64(n));
        }
    }
    builder.finish();
    line
}

/// The in-band report of drops, by reason and by level: "dropped N records {when}
/// (queue_full=…, io_error=…, shutdown=…, reentrant=…, rejected=…; WARN=…, INFO=…)",
/// the levels that lost any, most severe first. Structured formats carry every reason
/// and every level (`dropped_warn`, …) as fields. The writer's live reports and spool
/// recovery's both say it so.
pub(crate) fn drop_report_line(
    format: Format,
    dropped: &[[u64; 5]; DROP_REASONS],
    when: &str,
) -> Vec<u8> {
    use std::fmt::Write as _;
    let by_reason: [u64; DROP_REASONS] = dropped.map(|levels| levels.iter().sum());
    let by_level: [u64; 5] = std::array::from_fn(|l| dropped.iter().map(|r| r[l]).sum());
    let total: u64 = by_reason.iter().sum();
    let mut message = format!(
        "dropped {total} records {when} (queue_full={}, io_error={}, shutdown={}, reentrant={}, rejected={}",
        by_reason[0], by_reason[1], by_reason[2], by_reason[3], by_reason[4]
    );
    let mut separator = "; ";
    for level in Level::ALL.into_iter().rev() {
        let n = by_level[level as usize];
        if n > 0 {
            let _ = write!(message, "{separator}{}={n}", level.as_str());
            separator = ", ";
        }
    }
    message.push(')');
    const AT_LEVEL: [&str; 5] = [
        "dropped_trace",
        "dropped_debug",
        "dropped_info",
        "dropped_warn",
        "dropped_error",
    ];
    let mut fields: Vec<(&str, u64)> = vec![("dropped", total)];
    fields.extend(DropReason::ALL.iter().map(|r| r.as_str()).zip(by_reason));
    fields.extend(
        Level::ALL
            .iter()
            .map(|l| AT_LEVEL[*l as usize])
            .zip(by_level),
    );
    own_line(format, &message, &fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The in-band drop line names the levels that lost records, most severe first, in
    /// its text, and every level as a field.
    #[test]
    fn a_drop_line_names_the_levels_that_lost_records() {
        let mut dropped = [[0; 5]; DROP_REASONS];
        dropped[DropReason::QueueFull as usize][Level::Info as usize] = 37;
        dropped[DropReason::QueueFull as usize][Level::Warn as usize] = 13_679;
        let text = String::from_utf8(drop_report_line(
            Format::Compact,
            &dropped,
            "since last report",
        ))
        .unwrap();
        assert!(
            text.contains("dropped 13716 records since last report (queue_full=13716, io_error=0, shutdown=0, reentrant=0, rejected=0; WARN=13679, INFO=37)"),
            "{text}"
        );
        let json = String::from_utf8(drop_report_line(Format::Json, &dropped, "now")).unwrap();
        let v: serde_json::Value = serde_json::from_str(json.trim()).unwrap();
        assert_eq!(v["fields"]["dropped_warn"], 13_679, "{json}");
        assert_eq!(v["fields"]["dropped_info"], 37, "{json}");
        assert_eq!(v["fields"]["dropped_error"], 0, "{json}");
    }
}
