//! Values at the edges of their type (issue 32, items 7 and 14): every one is accepted
//! or refused with an error naming the key, the value and what is valid, and none
//! panics, aborts or allocates what the machine does not have — not while the
//! configuration is read, not while the pipeline runs, not when it shuts down.

use std::io;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use loglag::{Config, Level, Mode, NonBlockingBuilder, Overflow};
use proptest::prelude::*;

/// A writer that keeps what it is given, and whose first write waits until the test
/// opens it (a sink that is stuck, then recovers).
struct Held {
    open: Option<mpsc::Receiver<()>>,
    out: Arc<Mutex<Vec<u8>>>,
}

impl io::Write for Held {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(open) = self.open.take() {
            let _ = open.recv();
        }
        self.out.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A writer that keeps what it is given.
fn kept() -> (Held, Arc<Mutex<Vec<u8>>>) {
    let out = Arc::new(Mutex::new(Vec::new()));
    (
        Held {
            open: None,
            out: out.clone(),
        },
        out,
    )
}

fn toml_error(text: &str) -> loglag::SettingError {
    match Config::from_toml(text) {
        Ok(c) => panic!("{text:?} was accepted: {:?}", c.builder()),
        Err(e) => e,
    }
}

// ---- LOGLAG_FLUSH_INTERVAL=99999999999999999999999h panicked at start

/// `Duration::from_secs_f64` panicked on a number of hours no `Duration` holds.
#[test]
fn a_flush_interval_beyond_any_duration_is_an_error_not_a_panic() {
    for unit in ["ns", "us", "µs", "ms", "s", "m", "h"] {
        let e = toml_error(&format!(
            "flush_interval = \"99999999999999999999999{unit}\""
        ));
        assert_eq!(e.key, "flush_interval");
        assert!(e.expected.contains("8760h"), "{e}");
    }
}

// ---- shutdown_timeout = "5000000000000000h" panicked at shutdown

/// The file's value is refused: durations are limited to a year.
#[test]
fn a_shutdown_timeout_beyond_a_year_is_an_error() {
    let e = toml_error(r#"shutdown_timeout = "5000000000000000h""#);
    assert_eq!(e.key, "shutdown_timeout");
    assert_eq!(e.value, "5000000000000000h");
    assert!(e.expected.contains("8760h"), "{e}");
    assert!(Config::from_toml(r#"shutdown_timeout = "8760h""#).is_ok());
}

/// The builder's own setter takes any `Duration`: shutting down with one beyond what
/// an `Instant` can reach waits as long as it takes (here: not long) instead of
/// panicking on `Instant + Duration`.
#[test]
fn shutting_down_with_a_timeout_beyond_any_instant_does_not_panic() {
    let (sink, out) = kept();
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .shutdown_timeout(Duration::MAX)
        .build(loglag::sink::WriterSink::new(sink))
        .unwrap();
    writer.submit(Level::Info, b"kept\n");
    let m = guard.shutdown();
    assert_eq!((m.written_records, m.dropped_records()), (1, 0));
    assert_eq!(*out.lock().unwrap(), b"kept\n");
}

// ---- overflow = "block-for=5000000000000000h" panicked on producers when full

#[test]
fn block_for_beyond_a_year_is_an_error() {
    let e = toml_error(r#"overflow = "block-for=5000000000000000h""#);
    assert_eq!(e.key, "overflow");
    assert!(e.expected.contains("8760h"), "{e}");
    assert!("block-for=5000000000000000h".parse::<Overflow>().is_err());
    assert!("block-for=99999999999999999999999h"
        .parse::<Overflow>()
        .is_err());
}

/// `Overflow::BlockFor` with a wait beyond any `Instant` waits like `Block` when the
/// queue is full, instead of panicking on the producer's thread.
#[test]
fn a_producer_blocking_for_longer_than_any_instant_waits_instead_of_panicking() {
    let (open, held) = mpsc::channel();
    let out = Arc::new(Mutex::new(Vec::new()));
    let sink = Held {
        open: Some(held),
        out: out.clone(),
    };
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(4096)
        .overflow(Overflow::BlockFor(Duration::MAX))
        .flush_on_panic(false)
        .build(loglag::sink::WriterSink::new(sink))
        .unwrap();
    const RECORDS: usize = 200;
    let producer = {
        let writer = writer.clone();
        std::thread::spawn(move || {
            for i in 0..RECORDS {
                let record = format!("{i:03} {}\n", "x".repeat(90));
                writer.submit(Level::Info, record.as_bytes());
            }
        })
    };
    // 200 records of 95 bytes do not fit 4 KiB while the sink is held: the producer
    // finds the queue full (or, before the fix, has panicked).
    while writer.metrics().queue_full_events == 0 && !producer.is_finished() {
        std::thread::yield_now();
    }
    open.send(()).unwrap();
    let joined = crate::support::within(Duration::from_secs(120), "the producer", move || {
        producer.join().is_ok()
    });
    assert!(joined, "the producer panicked");
    let m = guard.shutdown();
    assert_eq!(
        (m.written_records, m.dropped_records()),
        (RECORDS as u64, 0)
    );
    assert_eq!(out.lock().unwrap().len(), RECORDS * 95);
}

// ---- capacity_bytes = "64GiB" tried to allocate it

#[test]
fn a_capacity_above_the_limit_is_an_error_naming_the_value_and_the_limit() {
    let e = toml_error(r#"capacity_bytes = "64GiB""#);
    assert_eq!(
        (e.key.as_str(), e.value.as_str()),
        ("capacity_bytes", "64GiB")
    );
    assert!(e.expected.contains("at most"), "{e}");
    assert!(Config::from_toml(r#"capacity_bytes = "1GiB""#).is_ok());
}

/// The builder's setter: `build` refuses it (before allocating anything).
#[test]
fn build_refuses_a_capacity_above_the_limit() {
    let e = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(64 << 30)
        .build(loglag::sink::WriterSink::new(io::sink()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("capacity_bytes") && e.contains("68719476736"),
        "{e}"
    );
}

// ---- a NUL in thread_name panicked inside a function that returns Result

#[test]
fn a_nul_in_the_thread_name_is_an_error_not_a_panic() {
    let e = toml_error("thread_name = \"log\\u0000writer\"");
    assert_eq!(e.key, "thread_name");
    assert!(e.expected.contains("NUL"), "{e}");
}

#[test]
fn build_with_a_nul_in_the_thread_name_is_an_error_not_a_panic() {
    let e = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .thread_name("log\0writer")
        .build(loglag::sink::WriterSink::new(io::sink()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("thread_name") && e.contains("NUL"), "{e}");
}

/// `finish` cannot return an error: it names the writer thread `loglag-writer`
/// instead (and says so on stderr).
#[test]
fn finish_with_a_nul_in_the_thread_name_uses_the_default_name() {
    let (sink, out) = kept();
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .thread_name("log\0writer")
        .finish(sink);
    writer.submit(Level::Info, b"kept\n");
    assert_eq!(guard.shutdown().written_records, 1);
    assert_eq!(*out.lock().unwrap(), b"kept\n");
}

// ---- capacity_bytes = 0 was accepted and dropped everything

#[test]
fn a_zero_capacity_and_other_sizes_that_cannot_work_are_errors() {
    for (key, value) in [
        ("capacity_bytes", "0"),
        ("capacity_bytes", "\"0KiB\""),
        ("capacity_bytes", "1"),
        ("max_record_bytes", "0"),
        ("batch_bytes", "0"),
        ("buffered_lines_limit", "0"),
    ] {
        let e = toml_error(&format!("{key} = {value}"));
        assert_eq!(e.key, key, "{e}");
        assert!(e.expected.contains("at least"), "{e}");
    }
    assert!(
        Config::from_toml("thread_ring_bytes = 0").is_ok(),
        "0: none"
    );
}

#[test]
fn build_refuses_a_zero_capacity() {
    let e = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(0)
        .build(loglag::sink::WriterSink::new(io::sink()))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("capacity_bytes") && e.contains("at least"),
        "{e}"
    );
}

/// `finish` cannot return an error: a capacity that cannot work is replaced by the
/// default (with a warning on stderr), so records are kept whole, not cut to nothing.
#[test]
fn finish_with_a_zero_capacity_uses_the_default_and_keeps_records_whole() {
    let (sink, out) = kept();
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(0)
        .finish(sink);
    let record = format!("{}\n", "a record of a hundred bytes ".repeat(4));
    writer.submit(Level::Info, record.as_bytes());
    let m = guard.shutdown();
    assert_eq!((m.written_records, m.truncated), (1, 0));
    assert_eq!(*out.lock().unwrap(), record.as_bytes());
}

// ---- found by the property test: batch_bytes = "8760GiB" sized the writer's buffer

/// The writer's buffer was `batch_bytes` + `max_record_bytes`: 8760 GiB aborted the
/// process (memory allocation failed), `usize::MAX` overflowed. A batch larger than
/// the budget is never reached, so only the interval (or shutdown) writes.
#[test]
fn a_batch_larger_than_the_budget_allocates_nothing_of_its_size() {
    for batch in [8760 << 30, 1 << 50, usize::MAX] {
        let (sink, out) = kept();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .batch_bytes(batch)
            .build(loglag::sink::WriterSink::new(sink))
            .unwrap();
        writer.submit(Level::Info, b"kept\n");
        assert_eq!(guard.shutdown().written_records, 1);
        assert_eq!(*out.lock().unwrap(), b"kept\n");
    }
    assert!(Config::from_toml(r#"batch_bytes = "8760GiB""#).is_ok());
}

// ---- the environment: a bad variable warns (naming it) and keeps the default

/// `LOGLAG_FLUSH_INTERVAL=99999999999999999999999h` panicked at start.
#[test]
fn a_flush_interval_variable_beyond_any_duration_warns_and_keeps_the_file_value() {
    let (config, warnings) = Config::from_toml(r#"flush_interval = "50ms""#)
        .unwrap()
        .with_vars([("LOGLAG_FLUSH_INTERVAL", "99999999999999999999999h")]);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(
        warnings[0].contains("LOGLAG_FLUSH_INTERVAL") && warnings[0].contains("8760h"),
        "{warnings:?}"
    );
    let settings = format!("{:?}", config.builder());
    assert!(settings.contains("flush_interval: 50ms"), "{settings}");
}

#[test]
fn variables_at_the_edges_warn_naming_the_variable_and_keep_the_default() {
    for (var, value) in [
        ("LOGLAG_SHUTDOWN_TIMEOUT", "5000000000000000h"),
        ("LOGLAG_OVERFLOW", "block-for=5000000000000000h"),
        ("LOGLAG_CAPACITY_BYTES", "64GiB"),
        ("LOGLAG_CAPACITY_BYTES", "0"),
        ("LOGLAG_MAX_RECORD_BYTES", "0"),
        ("LOGLAG_BATCH_BYTES", "0"),
        ("LOGLAG_BUFFERED_LINES_LIMIT", "0"),
        ("LOGLAG_THREAD_NAME", "log\0writer"),
        ("LOGLAG_SPOOL", ""),
    ] {
        let (config, warnings) = Config::default().with_vars([(var, value)]);
        assert_eq!(warnings.len(), 1, "{var}={value:?}: {warnings:?}");
        assert!(warnings[0].contains(var), "{warnings:?}");
        assert_eq!(
            format!("{:?}", config.builder()),
            format!("{:?}", NonBlockingBuilder::default()),
            "{var}={value:?} keeps the default"
        );
    }
}

// ---- LOGLAG_CAPACITY=1 (not a variable) was ignored without a word

#[test]
fn a_mistyped_variable_warns_naming_the_real_one() {
    for (typo, meant) in [
        ("LOGLAG_CAPACITY", "LOGLAG_CAPACITY_BYTES"),
        ("LOGLAG_FLUSH_INTERVALL", "LOGLAG_FLUSH_INTERVAL"),
        ("LOGLAG_SHUTDOWN_TIMOUT", "LOGLAG_SHUTDOWN_TIMEOUT"),
        ("LOGLAG_capacity_bytes", "LOGLAG_CAPACITY_BYTES"),
        ("LOGLAG_MOD", "LOGLAG_MODE"),
        ("LOGLAG_CLOK", "LOGLAG_CLOCK"),
    ] {
        let (config, warnings) = Config::default().with_vars([(typo, "1")]);
        assert_eq!(warnings.len(), 1, "{typo}: {warnings:?}");
        assert!(
            warnings[0].contains(&format!("{typo} is not a loglag variable"))
                && warnings[0].contains(&format!("did you mean {meant}?")),
            "{warnings:?}"
        );
        assert_eq!(
            format!("{:?}", config.builder()),
            format!("{:?}", NonBlockingBuilder::default())
        );
    }
}

/// Variables read elsewhere in loglag, and by its tests, CI and lab, are not the
/// pipeline's, and not typos either; other programs' variables are not loglag's.
#[test]
fn variables_that_are_not_the_pipelines_are_not_warned_about() {
    let (_, warnings) = Config::default().with_vars([
        ("LOGLAG_MODE", "sync"),
        ("LOGLAG_CLOCK", "realtime"),
        ("LOGLAG_LAB_APP", "x"),
        ("LOGLAG_REQUIRE_MOUNT", "1"),
        ("LOGLAG_REQUIRE_SOMETHING_NEW", "1"),
        ("LOGLAG_EDGES_OUT", "x"),
        ("LOGLAG_EDGES_CHILD", "x"),
        ("LOGLAG_TORTURE_TRIALS", "3"),
        ("LOGLAG_TEST_LOG", "x"),
        ("LOGLAG_TEST_CHILD", "x"),
        ("LOGLAG_SOAK_SECS", "1"),
        ("LOGLAG_RELP_PORT", "1"),
        ("LOGLAG_RELP_SPOOL", "x"),
        ("LOGLAG_RELP_SENDER", "x"),
        ("LOGLAG_HARDENING_ARG", "x"),
        ("LOGLAG_HARDENING_CHILD", "x"),
        ("LOGLAG_GIT_REVISION", "x"),
        ("PATH", "/bin"),
        ("RUST_LOG", "info"),
        ("LOGLAGX", "1"),
    ]);
    assert!(warnings.is_empty(), "{warnings:?}");
}

// ---- every key and variable at the edges of its type

/// Every key of the settings table.
fn keys() -> Vec<&'static str> {
    loglag::SETTINGS.iter().map(|s| s.key).collect()
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::sample::select(vec![
            "0", "1", "-1", "-0", "+1", "007", "63", "64", "255", "256", "4095", "4096",
            "4294967295", "4294967296", "9223372036854775807", "9223372036854775808",
            "-9223372036854775808", "18446744073709551615", "18446744073709551616",
            "99999999999999999999999", "5000000000000000", "17179869184", "17179869185",
            "8760", "8760.000001", "525600", "31536000", "0.5", "1.5", ".5", "5.", ".",
            "0.45", "0.4500001", "1e3", "1e308", "1e-400", "NaN", "nan", "inf", "-inf",
            "1_000", "١٢", "",
        ])
        .prop_map(String::from),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| f.to_string()),
        1 => (0usize..45).prop_map(|zeros| format!("1{}", "0".repeat(zeros))),
    ]
}

fn unit() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "", "B", "K", "KiB", "k", "kib", "M", "MiB", "mib", "G", "GiB", "gib", "T", "TiB", "ns",
        "us", "µs", "ms", "s", "m", "h", "d", "y", " ", " ms", "MS", "\0", "h\0",
    ])
}

fn word() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "",
        " ",
        "\0",
        "a\0b",
        "\0\0",
        "ünïcødé",
        "🦀",
        "\u{202e}rtl",
        "\u{feff}",
        "\t\n",
        "true",
        "false",
        "yes",
        "no",
        "TRUE",
        "block",
        "BLOCK",
        "drop_newest",
        "drop-oldest",
        "shed-by-level",
        "block-for=",
        "block-for=ms",
        "block-for==1s",
        "off",
        "format-only",
        "format_only",
        "sync",
        "async",
        "trace",
        "debug",
        "info",
        "warn",
        "error",
        "fatal",
        "json",
        "compact",
        "logfmt",
        "syslog",
        "stdout",
        "stderr",
        "-",
        "file://",
        "file:///dev/null",
        "fifo://",
        "syslog+tcp://:0",
        "syslog+tcp://h:65536",
        "syslog+udp://h:1",
        "relp://h:1",
        "otlp+http://h:1/v1/logs",
        "unknown://x",
        "loglag-writer",
        "a-name-longer-than-15",
    ])
    .prop_map(String::from)
}

fn edge_value() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (number(), unit()).prop_map(|(n, u)| format!("{n}{u}")),
        2 => (number(), unit()).prop_map(|(n, u)| format!("block-for={n}{u}")),
        3 => word(),
        1 => "\\PC{0,16}",
        1 => any::<String>(),
        1 => (1usize..20_000).prop_map(|n| "x".repeat(n)),
    ]
}

/// `value` as a TOML basic string.
fn toml_string(value: &str) -> String {
    let mut s = String::from("\"");
    for c in value.chars() {
        match c {
            '"' => s.push_str("\\\""),
            '\\' => s.push_str("\\\\"),
            c if c.is_control() => s.push_str(&format!("\\u{:04X}", c as u32)),
            c => s.push(c),
        }
    }
    s.push('"');
    s
}

/// `value` as TOML: bare when it reads as a TOML number or boolean (and `bare`),
/// else a string.
fn toml_value(value: &str, bare: bool) -> String {
    let is_integer = |v: &str| {
        let digits = v.strip_prefix(['+', '-']).unwrap_or(v);
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    };
    let is_float =
        |v: &str| v.parse::<f64>().is_ok() && v.bytes().all(|b| b"0123456789.+-e".contains(&b));
    if bare
        && (is_integer(value)
            || is_float(value)
            || ["true", "false", "nan", "inf", "-inf"].contains(&value))
    {
        value.to_owned()
    } else {
        toml_string(value)
    }
}

/// The byte budget `config` asks for (as its builder's `Debug` says).
fn configured_capacity(config: &Config) -> usize {
    let settings = format!("{:?}", config.builder());
    let at = settings.find("capacity_bytes: ").expect("a capacity") + "capacity_bytes: ".len();
    let digits: String = settings[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().unwrap()
}

/// Cases: 64 by default, more with `PROPTEST_CASES` (CI sets 512).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    /// One to three keys with values at the edges of their type, from a file and from
    /// the environment: each is accepted or refused naming its key (its variable), the
    /// file and the environment agree on which, and a pipeline built from what is
    /// accepted starts, takes a record and shuts down, none of it panicking.
    #[test]
    fn every_config_key_and_variable_at_the_edges_is_ok_or_a_clear_error(
        entries in prop::collection::btree_map(prop::sample::select(keys()), edge_value(), 1..=3),
        bare in any::<bool>(),
        stray in proptest::option::of("[A-Z_]{0,24}"),
    ) {
        let dir = tempfile::tempdir().unwrap();
        // A spool is a file created where it says: under the test's directory.
        let entries: Vec<(&str, String)> = entries
            .into_iter()
            .map(|(key, value)| match key {
                "spool" => (key, format!("{}/{value}", dir.path().display())),
                _ => (key, value),
            })
            .collect();

        // Each entry alone, from a file and from a variable: the same verdict.
        for (key, value) in &entries {
            let var = format!("LOGLAG_{}", key.to_ascii_uppercase());
            let from_file = Config::from_toml(&format!("{key} = {}", toml_string(value)));
            if let Err(e) = &from_file {
                prop_assert_eq!(&e.key, key);
                prop_assert!(!e.expected.is_empty());
                prop_assert!(e.to_string().contains(key));
            }
            let (_, warnings) = Config::default().with_vars([(var.as_str(), value.as_str())]);
            prop_assert_eq!(warnings.is_empty(), from_file.is_ok(), "{} = {:?}: {:?}", key, value, warnings);
            for warning in &warnings {
                prop_assert!(warning.contains(&var), "{}", warning);
            }
        }

        // All of them in one file, numbers bare or as strings.
        let text: String = entries
            .iter()
            .map(|(key, value)| format!("{key} = {}\n", toml_value(value, bare)))
            .collect();
        match Config::from_toml(&text) {
            Ok(_) => {}
            Err(e) => {
                prop_assert!(entries.iter().any(|(key, _)| e.key == *key), "{:?} for\n{}", e, text);
                prop_assert!(!e.expected.is_empty());
            }
        }

        // All of them as variables, and a stray `LOGLAG_*` variable.
        let mut vars: Vec<(String, String)> = entries
            .iter()
            .map(|(key, value)| (format!("LOGLAG_{}", key.to_ascii_uppercase()), value.clone()))
            .collect();
        if let Some(stray) = &stray {
            vars.push((format!("LOGLAG_{stray}"), "1".into()));
        }
        let (config, warnings) = Config::default().with_vars(vars.clone());
        for warning in &warnings {
            prop_assert!(vars.iter().any(|(var, _)| warning.contains(var.as_str())), "{}", warning);
        }

        // What was accepted builds, runs and shuts down. A budget the limit accepts is
        // memory taken at once: above 64 MiB the test does not build it.
        if configured_capacity(&config) > 64 << 20 {
            return Ok(());
        }
        let sink = std::fs::File::create(dir.path().join("sink.log")).unwrap();
        match config.builder().spool_required(true).build(sink) {
            Ok((writer, guard)) => {
                writer.submit(Level::Warn, b"at the edges\n");
                let m = guard.shutdown();
                prop_assert!(m.written_records <= 1);
            }
            Err(e) => {
                // Only a spool can fail: its path may be a directory, or hold a NUL.
                prop_assert!(entries.iter().any(|(key, _)| *key == "spool"), "{}", e);
            }
        }
    }
}

/// `Config::build` says why in a type: file options on a sink that is not a file are a
/// setting error naming `sink` and the options, a sink that cannot be opened is an I/O
/// error naming its path, and a setting that cannot work is the setting's error.
#[test]
fn config_build_returns_a_typed_error_for_each_cause() {
    let options_on_stdout = Config::from_toml("sink = \"stdout\"\nkeep = 3\n").unwrap();
    match options_on_stdout.build() {
        Err(loglag::BuildError::Setting(e)) => {
            assert_eq!(e.key, "sink", "{e}");
            let text = e.to_string();
            assert!(
                text.contains("keep") && text.contains("file:///PATH"),
                "{text}"
            );
        }
        other => panic!("expected a setting error, got {:?}", other.err()),
    }
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-dir").join("app.log");
    let unopenable = Config::from_url(&format!("file://{}", missing.display())).unwrap();
    match unopenable.build() {
        Err(loglag::BuildError::Io(e)) => {
            assert!(e.to_string().contains("no-such-dir"), "{e}");
        }
        other => panic!("expected an I/O error, got {:?}", other.err()),
    }
    let spool_with_drop_oldest = Config::from_toml(&format!(
        "spool = {:?}\noverflow = \"drop-oldest\"\n",
        dir.path().join("app.spool").display().to_string()
    ))
    .unwrap();
    match spool_with_drop_oldest.build() {
        Err(loglag::BuildError::Setting(e)) => assert_eq!(e.key, "overflow", "{e}"),
        other => panic!(
            "expected the overflow setting's error, got {:?}",
            other.err()
        ),
    }
}
