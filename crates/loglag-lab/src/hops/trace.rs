//! Spans for `lab hops`: W3C trace context, a `tracing` layer that hands each closed
//! span to a loglag pipeline as one JSON line (off the request path), and the merge of
//! every process's lines into one OTLP/JSON document.
//!
//! Ids are chosen by the handlers and carried as span fields (`trace_id`, `span_id`,
//! `parent_id`), so propagation needs nothing from the subscriber but the fields.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// A trace id and the id of the span a remote child should name as its parent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceContext {
    pub trace_id: u128,
    pub parent_id: u64,
    pub sampled: bool,
}

impl TraceContext {
    /// The `traceparent` header: `00-<32 hex>-<16 hex>-<01|00>`.
    pub fn header(&self) -> String {
        format!(
            "00-{:032x}-{:016x}-{:02x}",
            self.trace_id,
            self.parent_id,
            u8::from(self.sampled)
        )
    }

    /// Parses a `traceparent` header; `None` for anything malformed or all-zero ids,
    /// as the W3C spec says.
    pub fn parse(header: &str) -> Option<TraceContext> {
        let mut parts = header.trim().split('-');
        let (version, trace, parent, flags) =
            (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
        if version.len() != 2 || version == "ff" || trace.len() != 32 || parent.len() != 16 {
            return None;
        }
        if version == "00" && parts.next().is_some() {
            return None;
        }
        let trace_id = u128::from_str_radix(trace, 16).ok()?;
        let parent_id = u64::from_str_radix(parent, 16).ok()?;
        let flags = u8::from_str_radix(flags.get(..2)?, 16).ok()?;
        (trace_id != 0 && parent_id != 0).then_some(TraceContext {
            trace_id,
            parent_id,
            sampled: flags & 1 == 1,
        })
    }
}

/// Random ids: a per-thread xorshift seeded from the clock, the pid and the thread.
/// Ids need to be unique, not unpredictable.
pub fn random_u64() -> u64 {
    use std::cell::Cell;
    thread_local! {
        static STATE: Cell<u64> = Cell::new({
            let t = SystemTime::now().duration_since(UNIX_EPOCH).map_or(1, |d| d.as_nanos() as u64);
            let here = &t as *const u64 as u64;
            (t ^ (u64::from(std::process::id()) << 32) ^ here.rotate_left(17)) | 1
        });
    }
    STATE.with(|s| {
        // xorshift64*, never zero.
        let mut x = s.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        s.set(x);
        x.wrapping_mul(0x2545_F491_4F6C_DD1D) | 1
    })
}

pub fn random_trace_id() -> u128 {
    (u128::from(random_u64()) << 64) | u128::from(random_u64())
}

fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// One finished span, as each process writes it (one JSON line).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SpanLine {
    pub service: String,
    pub name: String,
    pub trace_id: String,
    pub span_id: String,
    #[serde(default)]
    pub parent_id: Option<String>,
    /// 2 = server, 3 = client, 1 = internal (OTLP's SpanKind).
    pub kind: u8,
    pub start_unix_ns: u64,
    pub end_unix_ns: u64,
    /// The X-Request-Id of the request the trace served.
    #[serde(default)]
    pub request_id: Option<u64>,
    /// (time, name) of what happened inside: `connected`, `response_headers`.
    #[serde(default)]
    pub events: Vec<(u64, String)>,
}

/// What a span carries while open.
struct Open {
    line: SpanLine,
}

#[derive(Default)]
struct Fields {
    trace_id: Option<String>,
    span_id: Option<String>,
    parent_id: Option<String>,
    kind: Option<u64>,
    request_id: Option<u64>,
    message: Option<String>,
    /// The span's display name (`otel.name`, as tracing-opentelemetry spells it).
    name: Option<String>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "trace_id" => self.trace_id = Some(value.to_owned()),
            "span_id" => self.span_id = Some(value.to_owned()),
            "parent_id" => self.parent_id = Some(value.to_owned()),
            "message" => self.message = Some(value.to_owned()),
            "otel.name" => self.name = Some(value.to_owned()),
            _ => {}
        }
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        match field.name() {
            "kind" => self.kind = Some(value),
            "request_id" => self.request_id = Some(value),
            _ => {}
        }
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let text = format!("{value:?}");
        self.record_str(field, text.trim_matches('"'));
    }
}

/// The layer: spans with a `span_id` field are timed and, when closed, submitted to a
/// loglag pipeline as one JSON line. Events inside them become span events.
pub struct SpanExporter {
    service: String,
    sink: loglag::NonBlocking,
}

impl std::fmt::Debug for SpanExporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanExporter")
            .field("service", &self.service)
            .finish_non_exhaustive()
    }
}

impl SpanExporter {
    pub fn new(service: &str, sink: loglag::NonBlocking) -> SpanExporter {
        SpanExporter {
            service: service.to_owned(),
            sink,
        }
    }
}

impl<S> Layer<S> for SpanExporter
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        attrs.record(&mut f);
        let (Some(trace_id), Some(span_id)) = (f.trace_id, f.span_id) else {
            return;
        };
        let Some(span) = ctx.span(id) else { return };
        span.extensions_mut().insert(Open {
            line: SpanLine {
                service: self.service.clone(),
                name: f.name.unwrap_or_else(|| attrs.metadata().name().to_owned()),
                trace_id,
                span_id,
                parent_id: f.parent_id.filter(|p| !p.is_empty()),
                kind: f.kind.unwrap_or(1) as u8,
                start_unix_ns: unix_ns(),
                end_unix_ns: 0,
                request_id: f.request_id,
                events: Vec::new(),
            },
        });
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let Some(span) = ctx.event_span(event) else {
            return;
        };
        let mut f = Fields::default();
        event.record(&mut f);
        let mut extensions = span.extensions_mut();
        if let Some(open) = extensions.get_mut::<Open>() {
            open.line
                .events
                .push((unix_ns(), f.message.unwrap_or_else(|| "event".into())));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(mut open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        open.line.end_unix_ns = unix_ns();
        if let Ok(mut json) = serde_json::to_vec(&open.line) {
            json.push(b'\n');
            self.sink.submit(loglag::Level::Info, &json);
        }
    }
}

/// An OTLP/JSON traces document (`ExportTraceServiceRequest` in its JSON mapping):
/// `resourceSpans` (one per service, with `service.name`) → `scopeSpans` → `spans`,
/// ids in hex, times as strings of Unix nanoseconds. This is the shape Jaeger's UI
/// imports (JSON Lines does not).
#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OtlpDocument {
    pub resource_spans: Vec<ResourceSpans>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ResourceSpans {
    pub resource: Resource,
    pub scope_spans: Vec<ScopeSpans>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Resource {
    pub attributes: Vec<KeyValue>,
}

/// An attribute; OTLP wraps every value in its type (`{"stringValue": …}`).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct KeyValue {
    pub key: String,
    pub value: StringValue,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StringValue {
    pub string_value: String,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ScopeSpans {
    pub scope: Scope,
    pub spans: Vec<OtlpSpan>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Scope {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OtlpSpan {
    pub trace_id: String,
    pub span_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_span_id: Option<String>,
    pub name: String,
    /// `SpanKind` by number (2 server, 3 client).
    pub kind: u8,
    /// Unix nanoseconds as a decimal string (OTLP/JSON's 64-bit integers).
    pub start_time_unix_nano: String,
    pub end_time_unix_nano: String,
    pub attributes: Vec<KeyValue>,
    pub events: Vec<SpanEvent>,
    /// Unset: an empty object.
    pub status: Status,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SpanEvent {
    pub time_unix_nano: String,
    pub name: String,
}

#[derive(Debug, Clone, Default, Serialize, PartialEq)]
pub struct Status {}

fn attribute(key: &str, value: String) -> KeyValue {
    KeyValue {
        key: key.to_owned(),
        value: StringValue {
            string_value: value,
        },
    }
}

/// Reads every process's span lines and builds one OTLP/JSON document.
pub fn otlp_document(spans: &[SpanLine]) -> OtlpDocument {
    let mut by_service: BTreeMap<&str, Vec<OtlpSpan>> = BTreeMap::new();
    for s in spans {
        by_service.entry(&s.service).or_default().push(OtlpSpan {
            trace_id: s.trace_id.clone(),
            span_id: s.span_id.clone(),
            parent_span_id: s.parent_id.clone(),
            name: s.name.clone(),
            kind: s.kind,
            start_time_unix_nano: s.start_unix_ns.to_string(),
            end_time_unix_nano: s.end_unix_ns.to_string(),
            attributes: s
                .request_id
                .map(|id| attribute("http.request.header.x-request-id", id.to_string()))
                .into_iter()
                .collect(),
            events: s
                .events
                .iter()
                .map(|(t, name)| SpanEvent {
                    time_unix_nano: t.to_string(),
                    name: name.clone(),
                })
                .collect(),
            status: Status::default(),
        });
    }
    OtlpDocument {
        resource_spans: by_service
            .into_iter()
            .map(|(service, spans)| ResourceSpans {
                resource: Resource {
                    attributes: vec![attribute("service.name", service.to_owned())],
                },
                scope_spans: vec![ScopeSpans {
                    scope: Scope {
                        name: "loglag-lab-hops",
                        version: env!("CARGO_PKG_VERSION"),
                    },
                    spans,
                }],
            })
            .collect(),
    }
}

/// Formats an id the way OTLP/JSON wants it (lower-case hex, fixed width).
pub fn hex64(id: u64) -> String {
    let mut s = String::with_capacity(16);
    let _ = write!(s, "{id:016x}");
    s
}

pub fn hex128(id: u128) -> String {
    format!("{id:032x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document has OTLP/JSON's names and shapes: a root span has no
    /// `parentSpanId`, values are wrapped in their type, times are strings.
    #[test]
    fn the_otlp_document_is_grouped_by_service_in_otlp_json_names() {
        let line = |service: &str, span: &str, parent: Option<&str>| SpanLine {
            service: service.into(),
            name: "GET /buy".into(),
            trace_id: "4bf92f3577b34da6a3ce929d0e0e4736".into(),
            span_id: span.into(),
            parent_id: parent.map(str::to_owned),
            kind: 2,
            start_unix_ns: 1_000,
            end_unix_ns: 2_500,
            request_id: Some(7),
            events: vec![(1_200, "charged".into())],
        };
        let doc = otlp_document(&[
            line("order", "00f067aa0ba902b7", None),
            line("payment", "00f067aa0ba902b8", Some("00f067aa0ba902b7")),
        ]);
        let v = serde_json::to_value(&doc).unwrap();
        let services: Vec<&str> = v["resourceSpans"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                r["resource"]["attributes"][0]["value"]["stringValue"]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(services, ["order", "payment"]);
        let root = &v["resourceSpans"][0]["scopeSpans"][0]["spans"][0];
        assert!(root.get("parentSpanId").is_none(), "{root}");
        assert_eq!(root["startTimeUnixNano"], "1000");
        assert_eq!(root["events"][0]["timeUnixNano"], "1200");
        assert_eq!(
            root["attributes"][0]["key"],
            "http.request.header.x-request-id"
        );
        assert_eq!(root["attributes"][0]["value"]["stringValue"], "7");
        assert_eq!(root["status"], serde_json::json!({}));
        let child = &v["resourceSpans"][1]["scopeSpans"][0]["spans"][0];
        assert_eq!(child["parentSpanId"], "00f067aa0ba902b7");
    }

    #[test]
    fn traceparent_round_trips_and_refuses_garbage() {
        let c = TraceContext {
            trace_id: 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736,
            parent_id: 0x00f0_67aa_0ba9_02b7,
            sampled: true,
        };
        assert_eq!(
            c.header(),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
        );
        assert_eq!(TraceContext::parse(&c.header()), Some(c));
        for bad in [
            "",
            "00-0000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-xyz92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        ] {
            assert_eq!(TraceContext::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn ids_are_never_zero_and_rarely_repeat() {
        let ids: std::collections::HashSet<u64> = (0..10_000).map(|_| random_u64()).collect();
        assert_eq!(ids.len(), 10_000);
        assert!(!ids.contains(&0));
    }
}
