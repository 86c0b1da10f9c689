//! The OTLP/HTTP logs sink against a receiver on loopback that decodes every request
//! with the official message definitions (`opentelemetry-proto`), and that also plays
//! a slow collector, a failing one (503/429 with `Retry-After`, 400) and a down one.
//! Synchronised with channels only.

use crate::support;

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loglag::sink::Otlp;
use loglag::{DropReason, Level, LoglagLayer, Mode, NonBlockingBuilder, Overflow};
use opentelemetry_proto::tonic::collector::logs::v1::{
    ExportLogsPartialSuccess, ExportLogsServiceRequest, ExportLogsServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_proto::tonic::logs::v1::LogRecord;
use prost::Message;
use support::{assert_accounted, within};
use tracing_subscriber::prelude::*;

const LIMIT: Duration = Duration::from_secs(120);

/// How the receiver answers the next request.
#[derive(Clone)]
enum Answer {
    Ok,
    /// 200 with `partial_success` rejecting this many records.
    Rejects(i64),
    /// A status, with a `Retry-After` in seconds.
    Status(u16, Option<u64>),
    /// Waits for a message on the channel, then answers 200.
    Hold(Arc<Mutex<Receiver<()>>>),
}

/// One request as the receiver saw it.
struct Request {
    status: u16,
    content_type: String,
    export: ExportLogsServiceRequest,
}

impl Request {
    fn records(&self) -> Vec<&LogRecord> {
        self.export
            .resource_logs
            .iter()
            .flat_map(|r| &r.scope_logs)
            .flat_map(|s| &s.log_records)
            .collect()
    }
}

struct Collector {
    port: u16,
    requests: Receiver<Request>,
    script: Arc<Mutex<VecDeque<Answer>>>,
}

impl Collector {
    fn start() -> Collector {
        Collector::on(TcpListener::bind("127.0.0.1:0").unwrap())
    }

    fn on(listener: TcpListener) -> Collector {
        let port = listener.local_addr().unwrap().port();
        let (tx, requests) = mpsc::channel();
        let script = Arc::new(Mutex::new(VecDeque::new()));
        let for_thread = script.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let (tx, script) = (tx.clone(), for_thread.clone());
                std::thread::spawn(move || serve(stream, tx, script));
            }
        });
        Collector {
            port,
            requests,
            script,
        }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/v1/logs", self.port)
    }

    fn then(&self, answer: Answer) -> &Collector {
        self.script.lock().unwrap().push_back(answer);
        self
    }

    /// Every request received so far (the pipeline has been flushed or shut down).
    fn drain(&self) -> Vec<Request> {
        self.requests.try_iter().collect()
    }
}

/// One keep-alive connection: requests until the client closes it.
fn serve(stream: TcpStream, tx: Sender<Request>, script: Arc<Mutex<VecDeque<Answer>>>) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut stream = stream;
    loop {
        let mut length = 0usize;
        let mut content_type = String::new();
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        assert!(line.starts_with("POST /v1/logs "), "request line {line:?}");
        loop {
            line.clear();
            reader.read_line(&mut line).unwrap();
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap();
            match name.to_ascii_lowercase().as_str() {
                "content-length" => length = value.trim().parse().unwrap(),
                "content-type" => content_type = value.trim().to_owned(),
                _ => {}
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let export = if content_type == "application/json" {
            serde_json::from_slice(&body).expect("OTLP JSON")
        } else {
            assert_eq!(content_type, "application/x-protobuf");
            ExportLogsServiceRequest::decode(&body[..]).expect("OTLP protobuf")
        };
        let answer = script.lock().unwrap().pop_front().unwrap_or(Answer::Ok);
        let (status, retry_after, reply) = match answer {
            Answer::Ok => (200, None, Vec::new()),
            Answer::Rejects(n) => (
                200,
                None,
                ExportLogsServiceResponse {
                    partial_success: Some(ExportLogsPartialSuccess {
                        rejected_log_records: n,
                        error_message: "attribute too long".into(),
                    }),
                }
                .encode_to_vec(),
            ),
            Answer::Status(code, after) => (code, after, b"try later".to_vec()),
            Answer::Hold(gate) => {
                // Seen before it is answered: a test can wait for the writer to be
                // held here.
                let _ = tx.send(Request {
                    status: 200,
                    content_type: content_type.clone(),
                    export,
                });
                let _ = gate.lock().unwrap().recv();
                write_answer(&mut stream, 200, None, &[]);
                continue;
            }
        };
        let _ = tx.send(Request {
            status,
            content_type: content_type.clone(),
            export,
        });
        if !write_answer(&mut stream, status, retry_after, &reply) {
            return;
        }
    }
}

/// Writes one HTTP answer; false if the client has gone.
fn write_answer(
    stream: &mut TcpStream,
    status: u16,
    retry_after: Option<u64>,
    reply: &[u8],
) -> bool {
    let mut head = format!(
        "HTTP/1.1 {status} X\r\nContent-Type: application/x-protobuf\r\nContent-Length: {}\r\n",
        reply.len()
    );
    if let Some(after) = retry_after {
        head.push_str(&format!("Retry-After: {after}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).is_ok() && stream.write_all(reply).is_ok()
}

/// The bodies of the records the collector took (answered 2xx), from `target`s
/// other than `loglag` (`own`: only loglag's in-band reports).
fn taken(requests: &[Request], own: bool) -> Vec<String> {
    requests
        .iter()
        .filter(|r| r.status == 200)
        .flat_map(|r| &r.export.resource_logs)
        .flat_map(|r| &r.scope_logs)
        .filter(|s| (s.scope.as_ref().unwrap().name == "loglag") == own)
        .flat_map(|s| &s.log_records)
        .filter_map(|r| match r.body.as_ref()?.value.as_ref()? {
            Any::StringValue(s) => Some(s.clone()),
            _ => None,
        })
        .collect()
}

fn bodies(requests: &[Request]) -> Vec<String> {
    taken(requests, false)
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Events through `LoglagLayer` arrive as LogRecords with their severity, body,
/// typed attributes, timestamps, the resource, the target as scope, and the trace
/// and span ids of the span they were logged in; in protobuf and in JSON.
#[test]
fn events_arrive_as_log_records_with_fields_resource_and_trace_ids() {
    within(LIMIT, "records", || {
        for json in [false, true] {
            let collector = Collector::start();
            let mut sink = Otlp::http(&collector.endpoint())
                .unwrap()
                .service_name("checkout")
                .resource_attribute("deployment.environment", "test");
            if json {
                sink = sink.json();
            }
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .build(sink)
                .unwrap();
            let subscriber = tracing_subscriber::registry().with(LoglagLayer::new(writer.clone()));
            tracing::subscriber::with_default(subscriber, || {
                let span = tracing::info_span!(
                    "buy",
                    trace_id = "4bf92f3577b34da6a3ce929d0e0e4736",
                    span_id = "00f067aa0ba902b7",
                    order = 7
                );
                let _entered = span.enter();
                tracing::warn!(
                    latency_ms = 12.5,
                    user = "ann",
                    retries = 3u64,
                    "slow payment"
                );
                tracing::error!(target: "checkout::db", ok = false, "timeout");
            });
            tracing::subscriber::with_default(
                tracing_subscriber::registry().with(LoglagLayer::new(writer.clone())),
                || tracing::info!("outside any span"),
            );
            let m = guard.shutdown();
            assert_eq!(m.written_records, 3, "{m:#?}");
            let requests = collector.drain();
            let expected_type = if json {
                "application/json"
            } else {
                "application/x-protobuf"
            };
            assert!(requests.iter().all(|r| r.content_type == expected_type));
            let resource = &requests[0].export.resource_logs[0]
                .resource
                .as_ref()
                .unwrap();
            let resource_attr = |k: &str| {
                resource
                    .attributes
                    .iter()
                    .find(|kv| kv.key == k)
                    .and_then(|kv| kv.value.clone()?.value)
            };
            assert_eq!(
                resource_attr("service.name"),
                Some(Any::StringValue("checkout".into()))
            );
            assert_eq!(
                resource_attr("deployment.environment"),
                Some(Any::StringValue("test".into()))
            );
            let records: Vec<LogRecord> =
                requests.iter().flat_map(|r| r.records()).cloned().collect();
            assert_eq!(records.len(), 3);
            let by_body = |b: &str| {
                records
                    .iter()
                    .find(|r| {
                        r.body.clone().and_then(|v| v.value) == Some(Any::StringValue(b.into()))
                    })
                    .unwrap_or_else(|| panic!("no record {b:?}"))
            };
            let slow = by_body("slow payment");
            assert_eq!(
                (slow.severity_number, slow.severity_text.as_str()),
                (13, "WARN")
            );
            assert_eq!(
                slow.body.clone().unwrap().value,
                Some(Any::StringValue("slow payment".into()))
            );
            assert_eq!(hex(&slow.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
            assert_eq!(hex(&slow.span_id), "00f067aa0ba902b7");
            assert!(
                slow.time_unix_nano > 1_700_000_000_000_000_000,
                "a real time"
            );
            assert!(slow.observed_time_unix_nano >= slow.time_unix_nano);
            let attr = |r: &LogRecord, k: &str| {
                r.attributes
                    .iter()
                    .find(|kv| kv.key == k)
                    .and_then(|kv| kv.value.clone()?.value)
            };
            assert_eq!(attr(slow, "latency_ms"), Some(Any::DoubleValue(12.5)));
            assert_eq!(attr(slow, "user"), Some(Any::StringValue("ann".into())));
            assert_eq!(attr(slow, "retries"), Some(Any::IntValue(3)));
            assert_eq!(attr(slow, "order"), Some(Any::IntValue(7)));
            assert_eq!(
                attr(slow, "span.name"),
                Some(Any::StringValue("buy".into()))
            );
            let timeout = by_body("timeout");
            assert_eq!(timeout.severity_number, 17);
            assert_eq!(attr(timeout, "ok"), Some(Any::BoolValue(false)));
            assert_eq!(hex(&timeout.trace_id), "4bf92f3577b34da6a3ce929d0e0e4736");
            assert!(
                by_body("outside any span").trace_id.is_empty(),
                "outside a span: no ids"
            );
            let scopes: Vec<String> = requests
                .iter()
                .flat_map(|r| &r.export.resource_logs[0].scope_logs)
                .map(|s| s.scope.as_ref().unwrap().name.clone())
                .collect();
            assert!(scopes.contains(&"checkout::db".to_owned()), "{scopes:?}");
        }
    });
}

/// 503 and 429 with `Retry-After` are retried; every record arrives exactly once.
#[test]
fn a_collector_answering_503_then_429_gets_every_record_once() {
    within(LIMIT, "retries", || {
        let collector = Collector::start();
        collector
            .then(Answer::Status(503, Some(1)))
            .then(Answer::Status(429, None))
            .then(Answer::Ok);
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(Otlp::http(&collector.endpoint()).unwrap())
            .unwrap();
        for i in 0..50 {
            writer.submit(
                Level::Info,
                format!("{{\"fields\":{{\"message\":\"r{i}\"}}}}\n").as_bytes(),
            );
        }
        let m = guard.shutdown();
        assert_eq!((m.written_records, m.dropped_records()), (50, 0), "{m:#?}");
        let requests = collector.drain();
        let statuses: Vec<u16> = requests.iter().map(|r| r.status).collect();
        assert_eq!(&statuses[..3], [503, 429, 200], "retried after each");
        let got = bodies(&requests);
        assert_eq!(got, (0..50).map(|i| format!("r{i}")).collect::<Vec<_>>());
    });
}

/// A 400 is not retried: the batch is lost at once, counted as `io_error`.
#[test]
fn a_bad_request_is_not_retried_and_its_batch_is_counted() {
    within(LIMIT, "400", || {
        let collector = Collector::start();
        collector.then(Answer::Status(400, None));
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(Otlp::http(&collector.endpoint()).unwrap())
            .unwrap();
        writer.submit(Level::Info, b"{\"fields\":{\"message\":\"refused\"}}\n");
        guard.flush(Duration::from_secs(30)).unwrap();
        writer.submit(Level::Info, b"{\"fields\":{\"message\":\"taken\"}}\n");
        let m = guard.shutdown();
        assert_accounted(&m);
        assert_eq!(
            (m.written_records, m.dropped_for(DropReason::IoError)),
            (1, 1),
            "{m:#?}"
        );
        let requests = collector.drain();
        let statuses: Vec<u16> = requests.iter().map(|r| r.status).collect();
        assert_eq!(&statuses[..2], [400, 200], "not retried");
        assert_eq!(bodies(&requests), ["taken"]);
    });
}

/// Nobody listening: batches are dropped and counted, the caller never waits, and
/// once a collector listens on the port delivery resumes. Received + counted drops =
/// sent, exactly.
#[test]
fn a_down_collector_costs_counted_drops_and_delivery_resumes() {
    within(LIMIT, "down", || {
        // A port that nothing listens on, then a collector on the same port.
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let sink = Otlp::http(&format!("http://127.0.0.1:{port}"))
            .unwrap()
            .retry_for(Duration::from_millis(300));
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(sink)
            .unwrap();
        let mut sent = 0;
        for _ in 0..20 {
            writer.submit(
                Level::Info,
                format!("{{\"fields\":{{\"message\":\"r{sent}\"}}}}\n").as_bytes(),
            );
            sent += 1;
        }
        guard.flush(Duration::from_secs(30)).unwrap();
        let m = writer.metrics();
        assert_eq!(
            (m.written_records, m.dropped_for(DropReason::IoError)),
            (0, 20),
            "{m:#?}"
        );
        let collector = Collector::on(TcpListener::bind(("127.0.0.1", port)).unwrap());
        // Until a record gets through (the sink skips batches for its back-off).
        loop {
            writer.submit(
                Level::Info,
                format!("{{\"fields\":{{\"message\":\"r{sent}\"}}}}\n").as_bytes(),
            );
            sent += 1;
            guard.flush(Duration::from_secs(30)).unwrap();
            if writer.metrics().written_records > 0 {
                break;
            }
            assert!(sent < 100_000, "delivery never resumed");
        }
        let m = guard.shutdown();
        assert_accounted(&m);
        let requests = collector.drain();
        let received = bodies(&requests).len() as u64;
        assert_eq!(m.accepted, sent as u64);
        assert_eq!(received, m.written_records);
        assert_eq!(
            received + m.dropped_for(DropReason::IoError),
            sent as u64,
            "{m:#?}"
        );
        // The drops are announced in the log itself once it gets through.
        let reports = taken(&requests, true);
        assert!(
            reports.iter().any(|r| r.contains("io_error")),
            "{reports:?}"
        );
    });
}

/// A collector that holds its answer holds the writer, never the caller: the queue
/// fills, records beyond the budget are dropped and counted, and when the collector
/// answers everything is accounted for.
#[test]
fn a_slow_collector_never_blocks_the_caller() {
    within(LIMIT, "slow", || {
        let collector = Collector::start();
        let (open, gate) = mpsc::channel();
        collector.then(Answer::Hold(Arc::new(Mutex::new(gate))));
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(64 << 10)
            .overflow(Overflow::DropNewest)
            .build(Otlp::http(&collector.endpoint()).unwrap())
            .unwrap();
        writer.submit(Level::Error, b"{\"fields\":{\"message\":\"first\"}}\n");
        // 5,000 records of ~60 bytes: more than the 64 KiB budget holds.
        for i in 0..5_000 {
            writer.submit(
                Level::Info,
                format!("{{\"fields\":{{\"message\":\"r{i:05}\"}}}}\n").as_bytes(),
            );
        }
        let m = writer.metrics();
        assert!(
            m.dropped_for(DropReason::QueueFull) > 0,
            "the budget filled while the collector held: {m:#?}"
        );
        open.send(()).unwrap();
        let m = guard.shutdown();
        assert_accounted(&m);
        assert_eq!(m.in_flight_records, 0);
        let records = bodies(&collector.drain()).len() as u64;
        assert_eq!(records, m.written_records);
        assert_eq!(records + m.dropped_records(), 5_001, "{m:#?}");
    });
}

/// A collector that answers 200 but rejects every record of every request
/// (`partial_success.rejected_log_records` equal to the batch): nothing it was sent is
/// counted written. Each record is dropped as `rejected`, at its level. (It was
/// `written=2000 dropped=0`.)
#[test]
fn a_collector_that_rejects_every_record_has_none_counted_written() {
    within(LIMIT, "rejects all", || {
        let collector = Collector::start();
        for _ in 0..10_000 {
            // More than the batch can hold: "all of them", whatever the batch.
            collector.then(Answer::Rejects(i64::MAX));
        }
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(Otlp::http(&collector.endpoint()).unwrap())
            .unwrap();
        for i in 0..2_000 {
            let level = if i % 4 == 0 { Level::Warn } else { Level::Info };
            writer.submit(
                level,
                format!("{{\"fields\":{{\"message\":\"r{i}\"}}}}\n").as_bytes(),
            );
        }
        let m = guard.shutdown();
        assert_accounted(&m);
        let sent = bodies(&collector.drain()).len() as u64;
        assert_eq!(m.written_records, 0, "{m:#?}");
        assert_eq!(m.dropped_for(DropReason::Rejected), 2_000, "{m:#?}");
        assert_eq!(
            m.dropped_of(DropReason::Rejected, Level::Warn),
            500,
            "{m:#?}"
        );
        assert_eq!(sent, 2_000, "every record was sent, and refused");
    });
}

/// A collector that rejects 2 of a request's 5 records: those 2 are dropped as
/// `rejected` (the batch's last two, at their levels), the other 3 are written.
#[test]
fn a_collector_that_rejects_some_records_has_that_many_dropped_not_written() {
    within(LIMIT, "rejects some", || {
        let collector = Collector::start();
        let (open, gate) = mpsc::channel();
        collector
            .then(Answer::Hold(Arc::new(Mutex::new(gate))))
            .then(Answer::Rejects(2));
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(Otlp::http(&collector.endpoint()).unwrap())
            .unwrap();
        // The first request holds the writer while the next five queue up as one batch.
        writer.submit(Level::Error, b"{\"fields\":{\"message\":\"first\"}}\n");
        let held = collector.requests.recv().unwrap();
        assert_eq!(held.records().len(), 1);
        for (i, level) in [
            Level::Info,
            Level::Info,
            Level::Info,
            Level::Warn,
            Level::Error,
        ]
        .into_iter()
        .enumerate()
        {
            writer.submit(
                level,
                format!("{{\"fields\":{{\"message\":\"r{i}\"}}}}\n").as_bytes(),
            );
        }
        open.send(()).unwrap();
        let m = guard.shutdown();
        assert_accounted(&m);
        let second = collector.requests.recv().unwrap();
        assert_eq!(
            second.records().len(),
            5,
            "the five queued records in one request"
        );
        assert_eq!(m.written_records, 1 + 3, "{m:#?}");
        assert_eq!(m.dropped_for(DropReason::Rejected), 2, "{m:#?}");
        assert_eq!(
            (
                m.dropped_of(DropReason::Rejected, Level::Warn),
                m.dropped_of(DropReason::Rejected, Level::Error)
            ),
            (1, 1),
            "the batch's last two, at their levels: {m:#?}"
        );
    });
}

/// `Retry-After: 0` on every 429 made the retries a busy loop (9,089 requests a second
/// for the batch's whole `retry_for`). The back-off's own pause is its floor: over a
/// one-second `retry_for` it allows at most a handful of requests (100, 200, 400 ms...).
#[test]
fn retry_after_zero_never_turns_the_back_off_into_a_busy_loop() {
    within(LIMIT, "retry-after 0", || {
        let collector = Collector::start();
        for _ in 0..100_000 {
            collector.then(Answer::Status(429, Some(0)));
        }
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(
                Otlp::http(&collector.endpoint())
                    .unwrap()
                    .retry_for(Duration::from_secs(1)),
            )
            .unwrap();
        writer.submit(Level::Error, b"{\"fields\":{\"message\":\"once\"}}\n");
        let m = guard.shutdown();
        assert_accounted(&m);
        assert_eq!(m.dropped_for(DropReason::IoError), 1, "{m:#?}");
        let requests = collector.drain().len();
        // 1 s of pauses of 100, 200, 400 ms... allows 4 retries after the first try;
        // a slow machine sends fewer, never more. A loop would send thousands.
        assert!(
            (1..=5).contains(&requests),
            "{requests} requests in a one-second retry_for"
        );
    });
}

/// A 2xx with `partial_success` is said in-band, as a WARN record from `loglag`.
#[test]
fn records_the_collector_rejects_are_reported_in_band() {
    within(LIMIT, "partial", || {
        let collector = Collector::start();
        collector.then(Answer::Rejects(2));
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .report_format(loglag::Format::Json)
            .build(Otlp::http(&collector.endpoint()).unwrap())
            .unwrap();
        writer.submit(Level::Info, b"{\"fields\":{\"message\":\"a\"}}\n");
        guard.flush(Duration::from_secs(30)).unwrap();
        writer.submit(Level::Info, b"{\"fields\":{\"message\":\"b\"}}\n");
        let m = guard.shutdown();
        let got = taken(&collector.drain(), true);
        assert!(
            got.iter()
                .any(|b| b.contains("rejected 2 of 1 records (counted as 1): attribute too long")),
            "{got:?}"
        );
        assert_eq!(m.write_errors, 1, "counted as an error the sink absorbed");
        assert_eq!(
            (m.written_records, m.dropped_for(DropReason::Rejected)),
            (1, 1),
            "a peer's count is never more than the request held: {m:#?}"
        );
    });
}

/// The sink's HTTP client logs through `log`; with loglag as the `log` logger of the
/// same pipeline, those records come from the writer thread itself. Nothing
/// deadlocks: they are queued or dropped as `reentrant`, and flush and shutdown return.
#[test]
fn a_sink_that_logs_into_its_own_pipeline_does_not_deadlock() {
    if crate::support::alone(
        module_path!(),
        "a_sink_that_logs_into_its_own_pipeline_does_not_deadlock",
        &[],
    ) {
        return;
    }
    within(LIMIT, "reentrant", || {
        let collector = Collector::start();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(Otlp::http(&collector.endpoint()).unwrap())
            .unwrap();
        loglag::Logger::new(writer.clone())
            .max_level(log::LevelFilter::Trace)
            .init()
            .expect("the only test that installs a logger");
        for i in 0..100 {
            log::info!("record {i}");
            if i % 10 == 0 {
                guard.flush(Duration::from_secs(30)).unwrap();
            }
        }
        let m = guard.shutdown();
        assert_accounted(&m);
        let got = bodies(&collector.drain());
        for i in 0..100 {
            assert!(got.contains(&format!("record {i}")), "record {i} missing");
        }
    });
}

/// A collector behind a proxy that redirects (`302 Location: /sink`, as http→https or
/// a missing trailing slash do). Following it would resend the batch as a GET without
/// its body and count the 200 that comes back as delivery. The sink never follows: the
/// batch fails, counted as `io_error`, and the server sees no second request.
#[test]
fn a_redirecting_collector_is_a_failed_batch_not_a_delivery() {
    within(LIMIT, "redirect", || {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let (seen_tx, seen) = mpsc::channel::<String>();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(stream) = stream else { break };
                let seen_tx = seen_tx.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut stream = stream;
                    loop {
                        let mut request = String::new();
                        if reader.read_line(&mut request).unwrap_or(0) == 0 {
                            return;
                        }
                        let mut length = 0usize;
                        loop {
                            let mut line = String::new();
                            reader.read_line(&mut line).unwrap();
                            let header = line.trim_end().to_ascii_lowercase();
                            if header.is_empty() {
                                break;
                            }
                            if let Some(v) = header.strip_prefix("content-length:") {
                                length = v.trim().parse().unwrap();
                            }
                        }
                        let mut body = vec![0; length];
                        reader.read_exact(&mut body).unwrap();
                        let method = request.split_whitespace().next().unwrap().to_owned();
                        let answer = if method == "POST" {
                            "HTTP/1.1 302 Found\r\nLocation: /sink\r\nContent-Length: 0\r\n\r\n"
                        } else {
                            "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
                        };
                        let _ = seen_tx.send(method);
                        if stream.write_all(answer.as_bytes()).is_err() {
                            return;
                        }
                    }
                });
            }
        });
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(Otlp::http(&format!("http://127.0.0.1:{port}/v1/logs")).unwrap())
            .unwrap();
        for i in 0..200 {
            writer.submit(
                Level::Info,
                format!("{{\"fields\":{{\"message\":\"r{i}\"}}}}\n").as_bytes(),
            );
        }
        let m = guard.shutdown();
        assert_accounted(&m);
        assert_eq!(m.written_records, 0, "nothing reached a collector: {m:#?}");
        assert_eq!(
            m.dropped_for(DropReason::IoError),
            200,
            "every record counted lost to the redirect: {m:#?}"
        );
        let methods: Vec<String> = seen.try_iter().collect();
        assert!(
            !methods.is_empty() && methods.iter().all(|m| m == "POST"),
            "the redirect is never followed: {methods:?}"
        );
    });
}

/// A `Retry-After` at the end of u64 (a peer's number, which overflowed `Instant +
/// Duration` and panicked the writer) only ends the retries: the batch is counted as
/// `io_error` and the writer lives on to deliver the next one.
#[test]
fn a_retry_after_at_the_end_of_its_type_ends_the_retries_without_a_panic() {
    within(LIMIT, "retry-after", || {
        let collector = Collector::start();
        collector.then(Answer::Status(503, Some(u64::MAX)));
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(Otlp::http(&collector.endpoint()).unwrap())
            .unwrap();
        writer.submit(Level::Info, b"{\"fields\":{\"message\":\"refused\"}}\n");
        guard.flush(Duration::from_secs(30)).unwrap();
        let m = guard.metrics();
        assert_eq!(
            (
                m.written_records,
                m.dropped_for(DropReason::IoError),
                m.dropped_for(DropReason::Shutdown)
            ),
            (0, 1, 0),
            "counted by the writer, which did not panic: {m:#?}"
        );
        // The writer is alive: once its back-off has passed, the next batch is sent.
        let mut delivered = false;
        for attempt in 0..200 {
            writer.submit(
                Level::Info,
                format!("{{\"fields\":{{\"message\":\"taken{attempt}\"}}}}\n").as_bytes(),
            );
            guard.flush(Duration::from_secs(30)).unwrap();
            if guard.metrics().written_records > 0 {
                delivered = true;
                break;
            }
            // Not a verdict: the back-off (50 ms) has to pass before the next try.
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(delivered, "{:#?}", guard.metrics());
        let m = guard.shutdown();
        assert_accounted(&m);
    });
}
