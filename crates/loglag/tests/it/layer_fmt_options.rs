//! `LoglagLayer` with `fmt().json()`'s options writes what `fmt().json()` writes with
//! the same options, byte for byte: every combination of the eight boolean options
//! (2^8 = 256), the same events through both, compared line by line. Time is left out
//! of that comparison (`without_time()` on both); the timers are compared on their own.
//!
//! Deterministic: a subscriber per run (`with_default`), the pipeline's sink a shared
//! `Vec<u8>`, flushed through the guard before reading; no sleeps.

use std::sync::{mpsc, Arc, Mutex, OnceLock};
use std::time::Duration;

use loglag::Timer;
use loglag::{Format, LoglagLayer, Mode, NonBlockingBuilder};
use tracing_subscriber::prelude::*;

/// A `Vec<u8>` both sides write into: fmt through `MakeWriter`, loglag as its sink.
#[derive(Clone, Default)]
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

impl Shared {
    fn lines(&self) -> Vec<String> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .expect("UTF-8")
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// The eight boolean options, as fmt's method arguments.
#[derive(Debug, Clone, Copy)]
struct Options {
    flatten_event: bool,
    with_current_span: bool,
    with_span_list: bool,
    with_target: bool,
    with_file: bool,
    with_line_number: bool,
    with_thread_ids: bool,
    with_thread_names: bool,
}

impl Options {
    /// Combination `n`: bit i set turns option i away from fmt's default.
    fn nth(n: u32) -> Options {
        let flip = |i: u32| n & (1 << i) != 0;
        Options {
            flatten_event: flip(0),
            with_current_span: !flip(1),
            with_span_list: !flip(2),
            with_target: !flip(3),
            with_file: flip(4),
            with_line_number: flip(5),
            with_thread_ids: flip(6),
            with_thread_names: flip(7),
        }
    }

    fn layer(self, layer: LoglagLayer) -> LoglagLayer {
        layer
            .flatten_event(self.flatten_event)
            .with_current_span(self.with_current_span)
            .with_span_list(self.with_span_list)
            .with_target(self.with_target)
            .with_file(self.with_file)
            .with_line_number(self.with_line_number)
            .with_thread_ids(self.with_thread_ids)
            .with_thread_names(self.with_thread_names)
    }
}

/// The same events for both: fields of every kind, with and without a message, every
/// level, outside spans, inside nested spans with fields (one recorded late, one a raw
/// identifier, not in name order), with an explicit parent, an explicit root, and on an
/// unnamed thread.
fn events() {
    tracing::info!(
        port = 8080u16,
        user = "ann \"x\"\n",
        ratio = 1.5,
        ok = true,
        "listening"
    );
    tracing::warn!(peer = %"10.0.0.1", list = ?[1, 2], "conn {} of {}", 3, 4);
    tracing::error!(target: "billing", amount = -5i32);
    tracing::debug!(cache = "warm");
    tracing::trace!("a message alone");
    let outer = tracing::info_span!("request", path = "/buy", id = 42u64, method = "POST");
    let _o = outer.enter();
    tracing::info!(rows = 3, "in one span");
    let inner = tracing::debug_span!("db", table = tracing::field::Empty, r#type = ?"select");
    inner.record("table", "orders");
    let _i = inner.enter();
    tracing::warn!(elapsed_ms = 12.5, "slow query");
    tracing::error!(code = 7u64, r#type = "timeout");
    tracing::trace!("deepest");
    tracing::info!(parent: &outer, "to the outer span only");
    tracing::info!(parent: None, "an explicit root");
    let empty = tracing::info_span!("empty");
    tracing::debug!(parent: &empty, n = 1, "a span without fields");
    // An unnamed thread: fmt names it by its id unless ids are on anyway. The same
    // thread for every run, so that its id is the same in both.
    let dispatch = tracing::dispatcher::get_default(|d| d.clone());
    let outer_there = outer.clone();
    on_unnamed_thread(Box::new(move || {
        tracing::dispatcher::with_default(&dispatch, || {
            tracing::info!(thread = "unnamed", "outside spans");
            let _o = outer_there.enter();
            tracing::warn!("inside the outer span");
        })
    }));
    tracing::info!("after the thread");
}

type Job = Box<dyn FnOnce() + Send>;
/// A job and where to say it is done.
type Request = (Job, mpsc::Sender<()>);

/// Runs `job` on one unnamed thread, the same for the whole test binary, and waits.
fn on_unnamed_thread(job: Job) {
    static HELPER: OnceLock<Mutex<mpsc::Sender<Request>>> = OnceLock::new();
    let helper = HELPER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<Request>();
        std::thread::spawn(move || {
            for (job, done) in rx {
                job();
                let _ = done.send(());
            }
        });
        Mutex::new(tx)
    });
    let (done, finished) = mpsc::channel();
    helper.lock().unwrap().send((job, done)).unwrap();
    finished.recv().unwrap();
}

/// What `fmt().json()` writes for [`events`] with `options`, without time.
fn fmt_lines(options: Options) -> Vec<String> {
    let out = Shared::default();
    let sink = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .without_time()
        .with_max_level(tracing::Level::TRACE)
        .flatten_event(options.flatten_event)
        .with_current_span(options.with_current_span)
        .with_span_list(options.with_span_list)
        .with_target(options.with_target)
        .with_file(options.with_file)
        .with_line_number(options.with_line_number)
        .with_thread_ids(options.with_thread_ids)
        .with_thread_names(options.with_thread_names)
        .with_writer(move || sink.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, events);
    out.lines()
}

/// What `LoglagLayer` writes for `run` with the layer `configure` makes, read after a
/// flush through the guard.
fn loglag_lines(configure: impl FnOnce(LoglagLayer) -> LoglagLayer, run: fn()) -> Vec<String> {
    let out = Shared::default();
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .finish(out.clone());
    let layer = configure(LoglagLayer::new(writer));
    tracing::subscriber::with_default(tracing_subscriber::registry().with(layer), run);
    let flushed = guard.flush(Duration::from_secs(60)).expect("flushed");
    assert_eq!(
        flushed.metrics.dropped_records(),
        0,
        "{:?}",
        flushed.metrics
    );
    out.lines()
}

/// Line by line, naming the combination and the first line that differs.
fn assert_same_lines(ours: &[String], theirs: &[String], what: &str) {
    for (i, (o, t)) in ours.iter().zip(theirs).enumerate() {
        assert_eq!(o, t, "{what}: line {i} differs\n loglag: {o}\n    fmt: {t}");
    }
    assert_eq!(
        ours.len(),
        theirs.len(),
        "{what}: {} lines from loglag, {} from fmt",
        ours.len(),
        theirs.len()
    );
}

#[test]
fn every_combination_of_the_options_writes_what_fmt_json_writes() {
    for n in 0..256 {
        let options = Options::nth(n);
        let theirs = fmt_lines(options);
        let ours = loglag_lines(|l| options.layer(l).without_time(), events);
        assert_eq!(theirs.len(), 15, "every event was written");
        assert_same_lines(&ours, &theirs, &format!("combination {n}: {options:?}"));
    }
}

/// Replaces the `"timestamp"` value with `<ts>` and returns it.
fn split_timestamp(line: &str) -> (String, String) {
    let key = "{\"timestamp\":\"";
    let rest = line
        .strip_prefix(key)
        .unwrap_or_else(|| panic!("no timestamp: {line}"));
    let end = rest.find('"').unwrap();
    (rest[..end].to_owned(), format!("{key}<ts>{}", &rest[end..]))
}

fn timed_events() {
    tracing::info!(n = 1, "one");
    let span = tracing::info_span!("s", k = "v");
    let _s = span.enter();
    tracing::warn!("two");
}

/// With `OffsetTime::new(offset, Rfc3339)` (and `UtcTime::rfc_3339()`), fmt and
/// `Timer::rfc3339_offset` write the same lines around their timestamps, and each of
/// loglag's timestamps is what the `time` crate writes for the instant it names. (The
/// two read the clock at different instants; `format::time`'s unit test compares the
/// digits at fixed instants.)
#[test]
fn an_offset_timer_writes_what_fmt_offset_time_writes() {
    use time::format_description::well_known::Rfc3339;
    for (h, m) in [(0, 0), (2, 0), (-5, 0), (5, 30), (-3, -30)] {
        let offset = time::UtcOffset::from_hms(h, m, 0).unwrap();
        let out = Shared::default();
        let sink = out.clone();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .with_timer(tracing_subscriber::fmt::time::OffsetTime::new(
                offset, Rfc3339,
            ))
            .with_writer(move || sink.clone())
            .finish();
        let before = time::OffsetDateTime::now_utc();
        tracing::subscriber::with_default(subscriber, timed_events);
        let theirs = out.lines();
        let timer = Timer::rfc3339_offset(h, m).unwrap();
        let ours = loglag_lines(|l| l.with_timer(timer), timed_events);
        let after = time::OffsetDateTime::now_utc();
        assert_eq!(ours.len(), 2);
        assert_eq!(theirs.len(), 2);
        for (o, t) in ours.iter().zip(&theirs) {
            let (ours_ts, ours_rest) = split_timestamp(o);
            let (theirs_ts, theirs_rest) = split_timestamp(t);
            assert_eq!(ours_rest, theirs_rest);
            let at = time::OffsetDateTime::parse(&ours_ts, &Rfc3339).unwrap();
            assert_eq!(at.offset(), offset, "{ours_ts}");
            assert_eq!(at.format(&Rfc3339).unwrap(), ours_ts);
            assert!(
                before <= at && at <= after,
                "{ours_ts} not in {before}..{after}"
            );
            let theirs_at = time::OffsetDateTime::parse(&theirs_ts, &Rfc3339).unwrap();
            assert_eq!(theirs_at.offset(), offset, "{theirs_ts}");
        }
    }
}

/// The default timer is fmt's default (`SystemTime`): the same 27-byte shape; and,
/// as in fmt, `with_timer` after `without_time` brings no timestamp back.
#[test]
fn the_default_timer_and_without_time_as_fmt() {
    let out = Shared::default();
    let sink = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .with_writer(move || sink.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, timed_events);
    let theirs = out.lines();
    let ours = loglag_lines(|l| l.with_timer(Timer::system_time()), timed_events);
    for (o, t) in ours.iter().zip(&theirs) {
        let (ours_ts, ours_rest) = split_timestamp(o);
        let (theirs_ts, theirs_rest) = split_timestamp(t);
        assert_eq!(ours_rest, theirs_rest);
        assert_eq!(ours_ts.len(), theirs_ts.len());
        assert!(
            ours_ts.ends_with('Z') && ours_ts.as_bytes()[19] == b'.',
            "{ours_ts}"
        );
    }

    let out = Shared::default();
    let sink = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .json()
        .without_time()
        .with_timer(tracing_subscriber::fmt::time::SystemTime)
        .with_writer(move || sink.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, timed_events);
    let theirs = out.lines();
    let timer = Timer::rfc3339_offset(1, 0).unwrap();
    let ours = loglag_lines(|l| l.without_time().with_timer(timer), timed_events);
    assert!(theirs[0].starts_with("{\"level\""), "{}", theirs[0]);
    assert_same_lines(&ours, &theirs, "without_time().with_timer(…)");
}

/// The options in the text formats (where fmt's JSON has no counterpart): what each
/// doc says, still one line per record.
#[test]
fn the_options_in_text_formats() {
    let run = |format: Format| {
        loglag_lines(
            |l| {
                l.format(format)
                    .without_time()
                    .with_target(false)
                    .with_file(true)
                    .with_line_number(true)
                    .with_thread_ids(true)
                    .with_thread_names(true)
                    .flatten_event(true)
            },
            timed_events,
        )
    };
    let id = format!("{:?}", std::thread::current().id());
    let name = std::thread::current().name().unwrap_or("").to_owned();
    let file = file!();

    let logfmt = run(Format::Logfmt);
    assert_eq!(logfmt.len(), 2);
    assert!(
        logfmt[0].starts_with("level=info msg=\"one\" n=1 "),
        "{}",
        logfmt[0]
    );
    assert!(!logfmt[0].contains("target="), "{}", logfmt[0]);
    assert!(
        logfmt[1].contains(&format!("filename=\"{file}\" line_number=")),
        "{}",
        logfmt[1]
    );
    assert!(
        logfmt[1].ends_with(&format!(
            " span=s k=\"v\" threadName=\"{name}\" threadId=\"{id}\""
        )),
        "{}",
        logfmt[1]
    );

    let compact = run(Format::Compact);
    assert!(
        compact[0].starts_with(" INFO one n=1 filename="),
        "{}",
        compact[0]
    );
    assert!(
        compact[1].starts_with(" WARN two filename="),
        "{}",
        compact[1]
    );

    let syslog = run(Format::Syslog);
    assert!(syslog[0].starts_with("<14>1 - "), "{}", syslog[0]);
    assert!(!syslog[0].contains("target="), "{}", syslog[0]);
    assert!(
        syslog[0].contains(&format!(" n=\"1\" filename=\"{file}\" line_number=\"")),
        "{}",
        syslog[0]
    );
    assert!(syslog[0].contains("\"] one threadName="), "{}", syslog[0]);

    // Without the span options, text formats leave the span context out.
    let bare = loglag_lines(
        |l| {
            l.format(Format::Logfmt)
                .with_current_span(false)
                .with_span_list(false)
        },
        timed_events,
    );
    assert!(bare[1].ends_with("msg=\"two\""), "{}", bare[1]);
}
