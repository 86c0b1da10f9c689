//! One settings model: every row of `loglag::SETTINGS` is set the same way by
//! a TOML key, a `LOGLAG_*` variable, a sink URL's query and the builder, and a bad
//! value is the same error (key and what is valid) whichever way it came. The table in
//! `docs/settings.md` is the one the code has.

use std::time::Duration;

use loglag::sink::WriterSink;
use loglag::{BuildError, Config, NonBlockingBuilder, Overflow, SettingError};
use loglag::{Setting, SETTINGS};

/// A value each key takes, and one it refuses. Every row needs one: a new setting
/// without them fails `every_row_has_values_here`.
fn values(key: &str) -> Option<(&'static str, &'static str)> {
    Some(match key {
        "capacity_bytes" => ("16MiB", "100"),
        "max_record_bytes" => ("4KiB", "10"),
        "thread_ring_bytes" => ("64KiB", "100"),
        "batch_bytes" => ("32KiB", "0"),
        "buffered_lines_limit" => ("1000", "0"),
        "overflow" => ("block-for=5ms", "block-for=9000h"),
        "reserve_fraction" => ("0.25", "0.9"),
        "flush_interval" => ("1h", "10us"),
        "flush_level" => ("warn", "loud"),
        "shutdown_timeout" => ("2s", "9000h"),
        "report_format" => ("logfmt", "xml"),
        "spool" => ("/tmp/loglag-settings-table.spool", " "),
        "spool_sync" => ("every-flush", "0s"),
        "spool_required" => ("true", "maybe"),
        "thread_name" => ("app-log", " "),
        "mode" => ("sync", "fast"),
        "flush_on_panic" => ("false", "maybe"),
        "flush_on_signals" => ("true", "maybe"),
        "sink" => ("stderr", "gopher://x"),
        "rotate" => ("daily", "0s"),
        "max_file_size" => ("64MiB", "0"),
        "keep" => ("7", "0"),
        "compress" => ("gzip", "zip"),
        _ => return None,
    })
}

/// The builder given a bad value of `key`'s type, where the type can hold one.
fn builder_with_bad(key: &str) -> Option<NonBlockingBuilder> {
    let b = NonBlockingBuilder::default();
    let year = Duration::from_secs(9000 * 3600);
    Some(match key {
        "capacity_bytes" => b.capacity_bytes(100),
        "max_record_bytes" => b.max_record_bytes(10),
        "thread_ring_bytes" => b.thread_ring_bytes(100),
        "batch_bytes" => b.batch_bytes(0),
        "buffered_lines_limit" => b.buffered_lines_limit(0),
        "overflow" => b.overflow(Overflow::BlockFor(year)),
        "reserve_fraction" => b.reserve_fraction(0.9),
        "flush_interval" => b.flush_interval(Duration::from_micros(10)),
        "shutdown_timeout" => b.shutdown_timeout(year),
        "spool" => b.spool(" "),
        "spool_sync" => b.spool_sync(loglag::spool::SpoolSync::Every(Duration::ZERO)),
        "thread_name" => b.thread_name(" "),
        _ => return None,
    })
}

fn is_file_key(key: &str) -> bool {
    matches!(key, "rotate" | "max_file_size" | "keep" | "compress")
}

/// `key=value` in a URL's query: on a file sink for the file's own keys, else on stderr.
fn url(key: &str, value: &str) -> String {
    if key == "sink" {
        return value.to_owned();
    }
    let base = if is_file_key(key) {
        "file:///tmp/loglag-settings-table.log"
    } else {
        "stderr"
    };
    format!("{base}?{key}={value}")
}

#[test]
fn every_row_has_values_here() {
    for s in SETTINGS {
        assert!(values(s.key).is_some(), "no test values for {}", s.key);
        assert_eq!(s.variable(), format!("LOGLAG_{}", s.key.to_uppercase()));
    }
}

#[test]
fn every_key_is_set_by_toml_by_variable_and_by_url() {
    for s in SETTINGS {
        let (good, _) = values(s.key).unwrap();
        let toml = Config::from_toml(&format!("{} = {:?}", s.key, good))
            .unwrap_or_else(|e| panic!("TOML {}: {e}", s.key));
        let from_url =
            Config::from_url(&url(s.key, good)).unwrap_or_else(|e| panic!("URL {}: {e}", s.key));
        let (from_env, warnings) = Config::default().with_vars([(s.variable(), good)]);
        assert!(warnings.is_empty(), "{}: {warnings:?}", s.key);
        // The three say the same thing: the same settings (and sink, where one was set).
        let shape = |c: &Config| format!("{:?}", c.settings());
        assert_eq!(
            shape(&toml),
            shape(&from_env),
            "{}: TOML and variable differ",
            s.key
        );
        if s.key != "sink" && !is_file_key(s.key) {
            assert_eq!(
                shape(&toml),
                shape(&from_url),
                "{}: TOML and URL differ",
                s.key
            );
            assert_ne!(
                shape(&toml),
                shape(&Config::default()),
                "{}: the good value changed nothing",
                s.key
            );
        }
        if is_file_key(s.key) {
            let with_file = Config::from_toml(&format!(
                "sink = \"file:///tmp/loglag-settings-table.log\"\n{} = {:?}",
                s.key, good
            ))
            .unwrap();
            assert_eq!(
                with_file.sink(),
                from_url.sink(),
                "{}: TOML key and URL query",
                s.key
            );
        }
    }
}

#[test]
fn a_bad_value_is_the_same_error_by_toml_by_url_by_variable_and_by_builder() {
    for s in SETTINGS {
        let (_, bad) = values(s.key).unwrap();
        let toml: SettingError = Config::from_toml(&format!("{} = {:?}", s.key, bad))
            .err()
            .unwrap_or_else(|| panic!("TOML accepted {} = {bad:?}", s.key));
        assert_eq!(toml.key, s.key, "{toml}");
        assert!(!toml.is_unknown_key(), "{toml}");
        let text = toml.to_string();
        assert!(text.contains(s.key) && text.contains(bad.trim()), "{text}");
        if s.key != "sink" {
            assert_eq!(
                toml.expected, s.expected,
                "{}: TOML's error is the table's",
                s.key
            );
        }
        let from_url = Config::from_url(&url(s.key, bad))
            .err()
            .unwrap_or_else(|| panic!("URL accepted {}", url(s.key, bad)));
        if s.key != "sink" {
            assert_eq!(
                (&from_url.key, &from_url.expected),
                (&toml.key, &toml.expected)
            );
        }
        let (config, warnings) = Config::default().with_vars([(s.variable(), bad)]);
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].contains(&s.variable()), "{warnings:?}");
        if s.key != "sink" {
            assert!(warnings[0].contains(s.expected), "{warnings:?}");
        }
        assert_eq!(
            format!("{:?}", config.settings()),
            format!("{:?}", Config::default().settings()),
            "{}: a bad variable keeps the default",
            s.key
        );
        if let Some(builder) = builder_with_bad(s.key) {
            match builder.build(WriterSink::new(std::io::sink())) {
                Err(BuildError::Setting(e)) => {
                    assert_eq!((&e.key, &e.expected), (&toml.key, &toml.expected));
                }
                Err(other) => panic!("{}: not a setting error: {other}", s.key),
                Ok(_) => panic!("the builder accepted a bad {}", s.key),
            }
        }
    }
}

#[test]
fn a_rolling_builder_refuses_a_zero_max_file_size_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let e = loglag::rolling::Builder::new()
        .filename_prefix("app.log")
        .max_file_size(0)
        .build(dir.path())
        .unwrap_err()
        .to_string();
    assert!(e.contains("max_file_size"), "{e}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        0,
        "nothing created"
    );
}

#[test]
fn a_url_configures_a_rolling_file_that_rotates_and_keeps_what_it_says() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let config = Config::from_url(&format!(
        "file://{}?rotate=never&max_file_size=1KiB&keep=2&capacity_bytes=1MiB",
        log.display()
    ))
    .unwrap();
    assert!(format!("{:?}", config.settings()).contains("capacity_bytes: 1048576"));
    let (writer, guard) = config.build().unwrap();
    for i in 0..200 {
        // One batch per record (ERROR writes at once), so the files rotate by size.
        writer.submit(
            loglag::Level::Error,
            format!("record {i:04} {}\n", "x".repeat(40)).as_bytes(),
        );
        guard.flush(Duration::from_secs(30)).unwrap();
    }
    let m = guard.shutdown();
    assert_eq!(m.written_records, 200);
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert!(
        names.contains(&"app.log".to_owned()),
        "the live file keeps its name: {names:?}"
    );
    let rotated = names.iter().filter(|n| n.starts_with("app.log.")).count();
    assert!(rotated >= 1, "{names:?}");
    assert!(
        rotated <= 2,
        "keep=2 keeps two rotated files besides the live one: {names:?}"
    );
}

#[test]
fn a_sink_option_on_a_sink_that_has_none_is_an_error_naming_both() {
    let e = Config::from_url("stderr?rotate=daily")
        .unwrap_err()
        .to_string();
    assert!(e.contains("rotate") && e.contains("stderr"), "{e}");
    let e = Config::from_toml("sink = \"stderr\"\nkeep = 3")
        .unwrap()
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("keep") && e.contains("stderr"), "{e}");
}

#[test]
fn docs_settings_md_is_the_table_in_the_code() {
    let doc = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/settings.md"
    ))
    .unwrap();
    let table = Setting::markdown_table();
    assert!(
        doc.contains(&table),
        "docs/settings.md differs from loglag::SETTINGS; replace its table with:\n{table}"
    );
}
