//! Records captured as binary on the caller and rendered on the writer: the same bytes
//! as a line built on the caller, every format, escaping, truncation, timestamps, and
//! loglag's own macros (which share one global pipeline, so their tests hold a lock).

use crate::support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use loglag::__lab::{LineBuilder, Value};
use loglag::{Format, Level, LoglagLayer, Mode, NonBlockingBuilder};
use support::{macros_lock as global_lock, record_lines, Behaviour, TestSink};
use tracing_subscriber::prelude::*;

/// A `MakeWriter` target for tracing-subscriber's own `fmt` layer, to compare with.
#[derive(Clone)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

const FORMATS: [Format; 3] = [Format::Json, Format::Compact, Format::Logfmt];

/// A line with its timestamp replaced, so lines built at different instants compare.
fn untimed(line: &str) -> String {
    let Some(at) = line.find(|c: char| c.is_ascii_digit()) else {
        return line.to_owned();
    };
    let end = at + "2026-12-01T00:00:00.000000Z".len();
    format!("{}<ts>{}", &line[..at], &line[end.min(line.len())..])
}

fn lines(out: &Arc<Mutex<Vec<u8>>>) -> Vec<String> {
    record_lines(&out.lock().unwrap())
}

/// The lines `LoglagLayer` writes, in `format` and `mode`, for `events`, timestamps
/// replaced.
fn layer_lines(format: Format, mode: Mode, events: impl FnOnce()) -> Vec<String> {
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(mode)
        .build(sink)
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(LoglagLayer::new(writer).format(format));
    tracing::subscriber::with_default(subscriber, events);
    guard.shutdown();
    lines(&out).iter().map(|l| untimed(l)).collect()
}

/// The lines tracing-subscriber's own `fmt` layer writes for `events`, through the
/// subscriber `make` builds on a shared buffer, timestamps replaced.
fn fmt_lines<S>(make: impl FnOnce(Shared) -> S, events: impl FnOnce()) -> Vec<String>
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    let out = Shared(Arc::new(Mutex::new(Vec::new())));
    tracing::subscriber::with_default(make(out.clone()), events);
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    text.lines().map(untimed).collect()
}

/// The same event rendered on the caller by `LineBuilder` (what the Layer did before
/// it captured) and captured, then rendered by the writer: byte for byte the same,
/// timestamps aside, with values of every type and text that needs escaping.
#[test]
fn a_captured_event_renders_as_the_callers_line_did() {
    #[derive(Debug)]
    #[allow(dead_code)]
    struct Order {
        id: u32,
    }
    for format in FORMATS {
        let got = layer_lines(format, Mode::Async, || {
            tracing::warn!(
                n = -3i64,
                u = 7u64,
                ratio = 0.25,
                nan = f64::NAN,
                ok = true,
                user = "ann \"the\" admin\nFORGED=1",
                order = ?Order { id: 9 },
                peer = %"10.0.0.1",
                "payment {} of {}\u{1b}[31m",
                1,
                2
            );
        });
        let mut expected = Vec::new();
        let mut line = LineBuilder::begin(
            &mut expected,
            format,
            SystemTime::now(),
            Level::Warn,
            module_path!(),
        );
        line.field(
            "message",
            Value::Args(format_args!("payment {} of {}\u{1b}[31m", 1, 2)),
        );
        line.field("n", Value::I64(-3));
        line.field("u", Value::U64(7));
        line.field("ratio", Value::F64(0.25));
        line.field("nan", Value::F64(f64::NAN));
        line.field("ok", Value::Bool(true));
        line.field("user", Value::Str("ann \"the\" admin\nFORGED=1"));
        line.field("order", Value::Debug(&Order { id: 9 }));
        line.field("peer", Value::Debug(&format_args!("10.0.0.1")));
        line.finish();
        let expected = untimed(String::from_utf8(expected).unwrap().trim_end());
        assert_eq!(got, [expected], "{format:?}");
    }
}

/// Inside spans the writer appends the span context the caller copied: the same line
/// whether the record was rendered by the writer (async) or on the caller (sync).
#[test]
fn span_context_is_the_same_rendered_on_either_thread() {
    for format in FORMATS {
        let mut by_mode = Vec::new();
        for mode in [Mode::Async, Mode::Sync] {
            by_mode.push(layer_lines(format, mode, || {
                let outer = tracing::info_span!("request", id = 42u64, path = "/buy");
                let _o = outer.enter();
                let inner = tracing::info_span!("db", table = "orders");
                let _i = inner.enter();
                tracing::info!(rows = 3, "query done");
            }));
        }
        assert_eq!(by_mode[0], by_mode[1], "{format:?}");
        assert_eq!(by_mode[0].len(), 1);
        let line = &by_mode[0][0];
        assert!(
            line.contains("request") && line.contains("orders"),
            "{line}"
        );
    }
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(sink)
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(LoglagLayer::new(writer));
    tracing::subscriber::with_default(subscriber, || {
        let span = tracing::info_span!("request", id = 42u64);
        let _e = span.enter();
        tracing::info!("inside");
    });
    guard.shutdown();
    let v: serde_json::Value = serde_json::from_str(&lines(&out)[0]).unwrap();
    assert_eq!(v["span"]["name"], "request");
    assert_eq!(v["span"]["id"], 42);
    assert_eq!(v["spans"][0]["name"], "request");
}

/// A captured record's timestamp is the caller's moment, converted on the writer:
/// between clock readings taken just before and just after the call (the line has
/// microseconds; one millisecond of slack covers the conversion).
#[test]
fn a_captured_timestamp_is_the_moment_of_the_call() {
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(sink)
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(LoglagLayer::new(writer));
    let mut windows = Vec::new();
    tracing::subscriber::with_default(subscriber, || {
        for i in 0..50 {
            let before = SystemTime::now();
            tracing::info!(i, "tick");
            windows.push((before, SystemTime::now()));
        }
    });
    guard.shutdown();
    let lines = lines(&out);
    assert_eq!(lines.len(), 50);
    for (line, (before, after)) in lines.iter().zip(windows) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let ts = parse_rfc3339_micros(v["timestamp"].as_str().unwrap());
        let slack = Duration::from_millis(1);
        assert!(
            ts + slack >= before && ts <= after + slack,
            "{line}: not between {before:?} and {after:?}"
        );
    }
}

fn parse_rfc3339_micros(s: &str) -> SystemTime {
    // YYYY-MM-DDTHH:MM:SS.ffffffZ
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let (y, m, d) = (n(0..4), n(5..7), n(8..10));
    let (y2, m2) = if m <= 2 { (y - 1, m + 9) } else { (y, m - 3) };
    let era = y2.div_euclid(400);
    let yoe = y2 - era * 400;
    let doy = (153 * m2 + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19);
    UNIX_EPOCH + Duration::from_secs(secs as u64) + Duration::from_micros(n(20..26) as u64)
}

/// Over `max_record_bytes` either way: a record whose captured form is too long is
/// rendered and cut on the caller; one that grows past the limit when rendered
/// (escaping) is cut on the writer. Both are counted and stay valid JSON lines.
#[test]
fn captured_records_over_the_limit_are_cut_and_counted() {
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .max_record_bytes(1024)
        .build(sink)
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(LoglagLayer::new(writer));
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(big = "x".repeat(10_000).as_str(), "captured too long");
        // 600 bytes captured, 3,600 rendered (each control byte becomes \u0001).
        tracing::info!(ctl = "\u{1}".repeat(600).as_str(), "rendered too long");
    });
    let m = guard.shutdown();
    assert_eq!((m.truncated, m.written_records), (2, 2), "{m:?}");
    for line in lines(&out) {
        assert!(line.len() <= 1024, "{} bytes", line.len());
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert!(line.contains("truncated"), "{v}");
    }
}

/// Where a captured record cannot travel as one (a spool outlives the process's
/// static pointers; `sync` has no writer), it is rendered on the caller: the same
/// line, and a spool's recovery after a crash still has plain lines to deliver.
#[test]
fn a_spool_gets_lines_rendered_on_the_caller() {
    let dir = tempfile::tempdir().unwrap();
    let mut outputs = Vec::new();
    for spool in [false, true] {
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let mut builder = NonBlockingBuilder::default().mode(Mode::Async);
        if spool {
            builder = builder.spool(dir.path().join("app.spool"));
        }
        let (writer, guard) = builder.build(sink).unwrap();
        let subscriber = tracing_subscriber::registry().with(LoglagLayer::new(writer));
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(order = 7, user = "ann", "paid");
        });
        guard.shutdown();
        outputs.push(lines(&out).iter().map(|l| untimed(l)).collect::<Vec<_>>());
    }
    assert_eq!(outputs[0], outputs[1]);
    assert_eq!(outputs[0].len(), 1);
}

/// `loglag::info!` and `tracing::info!` with the same fields and message give the
/// same line, in every format.
#[test]
fn the_macros_write_what_the_layer_writes_for_the_same_event() {
    let _global = global_lock();
    for format in FORMATS {
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(sink)
            .unwrap();
        loglag::set_global(&writer, format, Level::Trace);
        let subscriber =
            tracing_subscriber::registry().with(LoglagLayer::new(writer).format(format));
        let user = "ann\n\"x\"";
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(port = 8080u16, user, ratio = 1.5, tls = true, "listening");
            loglag::info!(port = 8080u16, user, ratio = 1.5, tls = true, "listening");
            tracing::warn!(peer = %"10.0.0.1", list = ?[1, 2], "conn {} of {}", 3, 4);
            loglag::warn!(peer = %"10.0.0.1", list = ?[1, 2], "conn {} of {}", 3, 4);
            tracing::error!(target: "billing", amount = -5i32);
            loglag::error!(target: "billing", amount = -5i32);
            tracing::debug!("{{literal}} braces");
            loglag::debug!("{{literal}} braces");
            // A literal its call site holds, with what needs escaping in every format.
            tracing::info!(n = 1, "quote \" back\\slash\ttab\nline \u{7f}");
            loglag::info!(n = 1, "quote \" back\\slash\ttab\nline \u{7f}");
        });
        guard.shutdown();
        let lines: Vec<String> = lines(&out).iter().map(|l| untimed(l)).collect();
        assert_eq!(lines.len(), 10, "{lines:#?}");
        for pair in lines.chunks(2) {
            assert_eq!(pair[0], pair[1], "{format:?}");
        }
    }
    loglag::set_max_level(None);
}

/// The level filter: below the maximum nothing is captured or counted; `None` turns
/// the macros off; a level given as a value works through `event!`.
#[test]
fn the_macros_log_only_at_and_above_the_maximum_level() {
    let _global = global_lock();
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(sink)
        .unwrap();
    loglag::set_global(&writer, Format::Logfmt, Level::Warn);
    let evaluated = std::cell::Cell::new(0);
    let count = || {
        evaluated.set(evaluated.get() + 1);
        1
    };
    loglag::info!(n = count(), "filtered");
    loglag::warn!(n = count(), "kept");
    loglag::event!(Level::Error, n = count());
    loglag::set_max_level(None);
    loglag::error!(n = count(), "off");
    let m = guard.shutdown();
    assert_eq!(m.accepted, 2);
    assert_eq!(
        evaluated.get(),
        2,
        "arguments of a filtered call are not evaluated"
    );
    let lines = lines(&out);
    assert!(
        lines[0].ends_with("level=warn target=it::capture msg=\"kept\" n=1"),
        "{lines:?}"
    );
    assert!(
        lines[1].ends_with("level=error target=it::capture n=1"),
        "{lines:?}"
    );
}

/// With no global pipeline the macros do nothing: no output anywhere, no crash. Run in
/// a child process, where no test has set a global pipeline before.
#[test]
fn the_macros_before_any_pipeline_do_nothing() {
    if std::env::var_os("LOGLAG_TEST_CHILD_NO_PIPELINE").is_some() {
        loglag::set_max_level(Some(Level::Trace));
        loglag::info!(x = 1, "nowhere to go");
        loglag::error!(x = 2, "nowhere either");
        println!("survived");
        return;
    }
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            &support::qualified(module_path!(), "the_macros_before_any_pipeline_do_nothing"),
            "--nocapture",
        ])
        .env("LOGLAG_TEST_CHILD_NO_PIPELINE", "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    assert!(stdout.contains("survived"), "{stdout}");
    for text in [&stdout, &stderr] {
        assert!(!text.contains("nowhere"), "a record went somewhere: {text}");
    }
}

/// The migrating user's one-line change: `LoglagLayer` (JSON) writes what
/// `tracing_subscriber::fmt().json()` writes for the same events, timestamps aside.
#[test]
fn the_json_layer_writes_what_fmt_json_writes() {
    let events = || {
        tracing::info!(
            port = 8080u16,
            user = "ann \"x\"\n",
            ratio = 1.5,
            ok = true,
            "listening"
        );
        tracing::warn!(peer = %"10.0.0.1", list = ?[1, 2], "conn {} of {}", 3, 4);
        tracing::error!(target: "billing", amount = -5i32);
        let span = tracing::info_span!("request", id = 42u64, path = "/buy");
        let _e = span.enter();
        tracing::info!(rows = 3, "in a span");
    };
    let theirs = fmt_lines(
        |out| {
            tracing_subscriber::fmt()
                .json()
                .with_writer(move || out.clone())
                .finish()
        },
        events,
    );
    let ours = layer_lines(Format::Json, Mode::Async, events);
    assert_eq!(ours, theirs);
}

/// Outside spans, the `Compact` layer writes what tracing-subscriber's default text
/// format writes (without colours), timestamps aside, except that a `&str` value is
/// not quoted (`user=ann`, tracing-subscriber `user="ann"`). Inside spans they differ:
/// tracing-subscriber writes `span{k=v}:` before the target, loglag `span=` after.
#[test]
fn the_text_layer_writes_what_fmt_writes_outside_spans() {
    let events = || {
        tracing::info!(
            port = 8080u16,
            user = "ann",
            ratio = 1.5,
            ok = true,
            "listening"
        );
        tracing::warn!(peer = %"10.0.0.1", list = ?[1, 2], "conn {} of {}", 3, 4);
        tracing::error!(target: "billing", amount = -5i32);
    };
    let theirs = fmt_lines(
        |out| {
            tracing_subscriber::fmt()
                .with_ansi(false)
                .with_writer(move || out.clone())
                .finish()
        },
        events,
    );
    let ours = layer_lines(Format::Compact, Mode::Async, events);
    assert_eq!(ours[1..], theirs[1..]);
    assert_eq!(ours[0].replace("user=ann", "user=\"ann\""), theirs[0]);
}
