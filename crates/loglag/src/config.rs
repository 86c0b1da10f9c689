//! Every builder option, and the sink, from a TOML table or from `LOGLAG_*` variables.
//!
//! | key (TOML) | variable | value |
//! |---|---|---|
//! | `sink` | `LOGLAG_SINK` | `stdout`, `stderr`, `file:///PATH`, `fifo:///PATH`, `syslog+tcp://HOST:PORT`, `syslog+udp://HOST:PORT`, `syslog+unix:///PATH`, `relp://HOST:PORT`, `otlp+http://HOST:PORT/PATH`, `otlp+http+json://HOST:PORT/PATH`; no NUL bytes |
//! | `capacity_bytes` | `LOGLAG_CAPACITY_BYTES` | a size: `8MiB`, `65536`, `64KiB`; from 256 bytes to 16 GiB or the machine's physical memory, whichever is less |
//! | `max_record_bytes` | `LOGLAG_MAX_RECORD_BYTES` | a size, at least 64 bytes (more than half the budget is cut to fit it) |
//! | `thread_ring_bytes` | `LOGLAG_THREAD_RING_BYTES` | `0`: no thread rings; or a size from 4 KiB to the largest budget (over a quarter of the budget: none) |
//! | `batch_bytes` | `LOGLAG_BATCH_BYTES` | a size, at least 1 byte (more than the budget: only the interval writes) |
//! | `buffered_lines_limit` | `LOGLAG_BUFFERED_LINES_LIMIT` | a count, at least 1 |
//! | `overflow` | `LOGLAG_OVERFLOW` | `block`, `block-for=5ms` (at most `8760h`), `drop-newest`, `drop-oldest`, `shed-by-level` |
//! | `reserve_fraction` | `LOGLAG_RESERVE_FRACTION` | 0 to 0.45 |
//! | `flush_interval` | `LOGLAG_FLUSH_INTERVAL` | a duration: `100ms`, `2s`, `500us`, `1m`, `1h`; at most `8760h` (a year); under 100 µs is raised to 100 µs |
//! | `flush_level` | `LOGLAG_FLUSH_LEVEL` | `trace` … `error` |
//! | `shutdown_timeout` | `LOGLAG_SHUTDOWN_TIMEOUT` | a duration, `0s` to `8760h` (a year) |
//! | `report_format` | `LOGLAG_REPORT_FORMAT` | `json`, `compact`, `logfmt`, `syslog` |
//! | `spool` | `LOGLAG_SPOOL` | a path, not empty, no NUL bytes |
//! | `thread_name` | `LOGLAG_THREAD_NAME` | a name, not empty, no NUL bytes (Linux shows 15 bytes) |
//! | `mode` | `LOGLAG_MODE` | `off`, `format-only`, `sync`, `async` |
//! | `flush_on_panic`, `flush_on_signals` | `LOGLAG_FLUSH_ON_PANIC`, `LOGLAG_FLUSH_ON_SIGNALS` | `true` or `false` |
//!
//! A duration is a number (a fraction is fine: `1.5s`) and a unit: `ns`, `us` (`µs`),
//! `ms`, `s`, `m`, `h`; a size is a whole number of bytes, or of `KiB` (`K`), `MiB`
//! (`M`), `GiB` (`G`). The limits are where a value stops being a setting and
//! becomes a typo: a budget the machine cannot hold, a timeout of centuries (to wait
//! for ever, there is `overflow = "block"`), a size of 0.
//!
//! A bad key or value in a file is an error that names the key, the value and what
//! is valid. A bad variable, read by a running service, warns once on stderr and
//! leaves that option as it was (the file's value, or the default): a typo in the
//! environment must not stop a service (as with `LOGLAG_MODE`). So does a `LOGLAG_*`
//! variable that is not one of these (`LOGLAG_CAPACITY=1`): it is ignored, with a
//! warning, once per process, that names the nearest valid variable. The variables
//! loglag reads elsewhere (`LOGLAG_CLOCK`) and those of its tests and lab are not
//! warned about.
//!
//! ```
//! let config = loglag::Config::from_toml(r#"
//!     sink = "stderr"
//!     capacity_bytes = "16MiB"
//!     overflow = "drop-newest"
//!     flush_interval = "50ms"
//! "#)?;
//! let (writer, guard) = config.build()?;
//! # drop((writer, guard));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeSet;
use std::ffi::OsString;
use std::sync::Mutex;

use crate::builder::NonBlockingBuilder;
use crate::format::Format;
use crate::handle::{NonBlocking, WorkerGuard};
use crate::level::Level;
use crate::mode::Mode;
use crate::overflow::Overflow;
use crate::sink::SinkSpec;
use crate::units::{
    capacity_expected, max_capacity_bytes, parse_duration, parse_size, MAX_CONFIGURED_DURATION,
    MIN_CAPACITY_BYTES, MIN_RECORD_BYTES,
};

/// A key or value that is not valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The key (TOML) or variable.
    pub key: String,
    /// The value as given.
    pub value: String,
    /// What is valid.
    pub expected: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "loglag configuration: {} = {:?}: {}",
            self.key, self.value, self.expected
        )
    }
}

impl std::error::Error for ConfigError {}

/// A pipeline's settings and sink, read from a file or the environment.
#[derive(Debug, Clone, Default)]
pub struct Config {
    builder: NonBlockingBuilder,
    sink: Option<SinkSpec>,
}

/// Every key, in the table's order (public for the edge-value property test).
#[doc(hidden)]
pub const KEYS: [&str; 17] = [
    "sink",
    "capacity_bytes",
    "max_record_bytes",
    "thread_ring_bytes",
    "batch_bytes",
    "buffered_lines_limit",
    "overflow",
    "reserve_fraction",
    "flush_interval",
    "flush_level",
    "shutdown_timeout",
    "report_format",
    "spool",
    "thread_name",
    "mode",
    "flush_on_panic",
    "flush_on_signals",
];

/// `LOGLAG_*` variables that are not the pipeline's, which [`Config::with_env`] does
/// not warn about: loglag's own elsewhere, and those of its tests, CI and lab.
const OTHER_VARIABLES: [&str; 13] = [
    crate::clock::CLOCK_ENV,
    "LOGLAG_EDGES_CHILD",
    "LOGLAG_EDGES_OUT",
    "LOGLAG_GIT_REVISION",
    "LOGLAG_HARDENING_ARG",
    "LOGLAG_HARDENING_CHILD",
    "LOGLAG_LAB_APP",
    "LOGLAG_RELP_PORT",
    "LOGLAG_RELP_SENDER",
    "LOGLAG_RELP_SPOOL",
    "LOGLAG_SOAK_SECS",
    "LOGLAG_TORTURE_TRIALS",
    "LOGLAG_TEST_CHILD",
];

/// Prefixes of other such variables (`LOGLAG_REQUIRE_MOUNT` and the like, set by CI).
const OTHER_PREFIXES: [&str; 3] = ["LOGLAG_REQUIRE_", "LOGLAG_TEST_", "LOGLAG_LAB_"];

/// The unknown variables warned about so far: each once per process.
static WARNED_UNKNOWN: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

/// The variable of `key`: `LOGLAG_CAPACITY_BYTES`.
fn variable(key: &str) -> String {
    format!("LOGLAG_{}", key.to_ascii_uppercase())
}

/// A warning from reading variables.
struct Warning {
    text: String,
    /// An unknown variable's name: warned about once per process.
    unknown: Option<String>,
}

impl Config {
    /// Defaults, then the `[loglag]`-less TOML table `text` (keys in the module's table).
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            // TOML's own errors (an integer no i64 holds, a string not closed) name
            // the key of the line they are on, if they are on one.
            match e.span().and_then(|span| key_at(text, span.start)) {
                Some(key) => ConfigError {
                    key,
                    value: e.message().to_owned(),
                    expected:
                        "a TOML value; sizes and durations may be strings: \"8MiB\", \"100ms\""
                            .into(),
                },
                None => ConfigError {
                    key: "(file)".into(),
                    value: e.message().to_owned(),
                    expected: "a TOML table".into(),
                },
            }
        })?;
        let mut config = Config::default();
        for (key, value) in &table {
            let text = match value {
                toml::Value::String(s) => s.clone(),
                toml::Value::Integer(i) => i.to_string(),
                toml::Value::Float(f) => f.to_string(),
                toml::Value::Boolean(b) => b.to_string(),
                _ => {
                    return Err(ConfigError {
                        key: key.clone(),
                        value: format!("{value:?}"),
                        expected: "a string, a number or a boolean".into(),
                    })
                }
            };
            config = config.set(key, &text)?;
        }
        Ok(config)
    }

    /// Defaults, then every `LOGLAG_*` variable that is set (see the module's table).
    /// A bad value warns once on stderr and leaves its option at the default.
    pub fn from_env() -> Config {
        Config::default().with_env()
    }

    /// These settings, then every `LOGLAG_*` variable that is set on top (a file
    /// first, the environment overriding it). Bad values warn and are skipped; an
    /// unknown `LOGLAG_*` variable warns once per process, naming the nearest valid
    /// one.
    pub fn with_env(self) -> Config {
        let (config, warnings) = self.apply_vars(std::env::vars_os());
        for text in once_per_process(warnings) {
            eprintln!("{text}");
        }
        config
    }

    /// [`with_env`](Self::with_env) over `vars` instead of the process's environment,
    /// returning the warnings it would print (each naming its variable) instead of
    /// printing them: tests read variables without sharing the process's environment.
    #[doc(hidden)]
    pub fn with_vars<K, V>(self, vars: impl IntoIterator<Item = (K, V)>) -> (Config, Vec<String>)
    where
        K: Into<OsString>,
        V: Into<OsString>,
    {
        let (config, warnings) =
            self.apply_vars(vars.into_iter().map(|(k, v)| (k.into(), v.into())));
        (config, warnings.into_iter().map(|w| w.text).collect())
    }

    fn apply_vars(
        mut self,
        vars: impl Iterator<Item = (OsString, OsString)>,
    ) -> (Config, Vec<Warning>) {
        let mut warnings = Vec::new();
        let mut values: [Option<OsString>; KEYS.len()] = Default::default();
        for (name, value) in vars {
            let name = name.to_string_lossy().into_owned();
            if !name.starts_with("LOGLAG_") {
                continue;
            }
            if let Some(i) = KEYS.iter().position(|key| variable(key) == name) {
                values[i] = Some(value);
            } else if !OTHER_VARIABLES.contains(&name.as_str())
                && !OTHER_PREFIXES.iter().any(|p| name.starts_with(p))
            {
                warnings.push(Warning {
                    text: format!(
                        "loglag: {name} is not a loglag variable (did you mean {}?); it is ignored",
                        nearest_variable(&name)
                    ),
                    unknown: Some(name),
                });
            }
        }
        // In the table's order, whatever the environment's.
        for (key, value) in KEYS.iter().zip(values) {
            let Some(value) = value else { continue };
            let var = variable(key);
            let Some(value) = value.to_str() else {
                warnings.push(Warning {
                    text: format!(
                        "loglag: {var}={:?} is not valid UTF-8; ignored, the option keeps its value",
                        value
                    ),
                    unknown: None,
                });
                continue;
            };
            match self.clone().set(key, value) {
                Ok(c) => self = c,
                Err(e) => warnings.push(Warning {
                    text: format!(
                        "loglag: {var}={:?} is not valid ({}); ignored, the option keeps its value (the file's, or the default)",
                        e.value, e.expected
                    ),
                    unknown: None,
                }),
            }
        }
        (self, warnings)
    }

    fn set(mut self, key: &str, value: &str) -> Result<Config, ConfigError> {
        let err = |expected: &str| ConfigError {
            key: key.to_owned(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        // A size within `range`, else `expected`.
        let size = |range: std::ops::RangeInclusive<usize>, expected: &str| {
            parse_size(value)
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| range.contains(n))
                .ok_or_else(|| err(&format!("a size: 65536, 64KiB, 8MiB, 1GiB; {expected}")))
        };
        let duration = || {
            parse_duration(value)
                .ok()
                .filter(|d| *d <= MAX_CONFIGURED_DURATION)
                .ok_or_else(|| {
                    err("a duration from 0s to 8760h (a year): 500us, 100ms, 5s, 1m, 2h")
                })
        };
        let name = |what: &str| {
            let name = value.trim();
            if name.is_empty() || name.contains('\0') {
                Err(err(&format!("{what}, not empty, without NUL bytes")))
            } else {
                Ok(name)
            }
        };
        let boolean = || match value.trim() {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            _ => Err(err("true or false")),
        };
        let b = self.builder;
        self.builder = match key {
            "sink" => {
                if value.contains('\0') {
                    return Err(err("a sink without NUL bytes"));
                }
                self.sink = Some(value.parse().map_err(|e: String| err(&e))?);
                b
            }
            "capacity_bytes" => {
                let max = max_capacity_bytes();
                b.capacity_bytes(size(MIN_CAPACITY_BYTES..=max, &capacity_expected(max))?)
            }
            "max_record_bytes" => b.max_record_bytes(size(
                MIN_RECORD_BYTES..=usize::MAX,
                "at least 64 bytes (more than half the budget is cut to fit it)",
            )?),
            "thread_ring_bytes" => {
                let max = max_capacity_bytes();
                let bytes = match parse_size(value) {
                    Ok(0) => 0,
                    _ => size(
                        4096..=max,
                        &format!(
                            "0 for no thread rings, or at least 4 KiB and at most {}",
                            crate::units::describe_size(max as u64)
                        ),
                    )?,
                };
                b.thread_ring_bytes(bytes)
            }
            "batch_bytes" => b.batch_bytes(size(
                1..=usize::MAX,
                "at least 1 byte (more than the budget: only the interval writes)",
            )?),
            "buffered_lines_limit" => {
                b.buffered_lines_limit(value.trim().parse().ok().filter(|n| *n >= 1).ok_or_else(
                    || {
                        err(&format!(
                            "a number of records, at least 1 and at most {}",
                            usize::MAX
                        ))
                    },
                )?)
            }
            "overflow" => b.overflow(value.parse::<Overflow>().map_err(|e| err(&e.to_string()))?),
            "reserve_fraction" => {
                let f: f64 = value
                    .trim()
                    .parse()
                    .ok()
                    .filter(|f| (0.0..=0.45).contains(f))
                    .ok_or_else(|| err("a fraction from 0 to 0.45"))?;
                b.reserve_fraction(f)
            }
            "flush_interval" => b.flush_interval(duration()?),
            "flush_level" => {
                b.flush_level(value.parse::<Level>().map_err(|e| err(&e.to_string()))?)
            }
            "shutdown_timeout" => b.shutdown_timeout(duration()?),
            "report_format" => {
                b.report_format(value.parse::<Format>().map_err(|e| err(&e.to_string()))?)
            }
            "spool" => b.spool(name("a path")?),
            "thread_name" => b.thread_name(name("a thread name")?),
            "mode" => b.mode(value.parse::<Mode>().map_err(|e| err(&e.to_string()))?),
            "flush_on_panic" => b.flush_on_panic(boolean()?),
            "flush_on_signals" => b.flush_on_signals(boolean()?),
            _ => {
                return Err(ConfigError {
                    key: key.to_owned(),
                    value: value.to_owned(),
                    expected: format!("an unknown key; the keys are {}", KEYS.join(", ")),
                })
            }
        };
        Ok(self)
    }

    /// The builder these settings make, to finish with a sink of your own.
    pub fn builder(&self) -> NonBlockingBuilder {
        self.builder.clone()
    }

    /// The configured sink, if `sink` was given.
    pub fn sink(&self) -> Option<&SinkSpec> {
        self.sink.as_ref()
    }

    /// Builds the pipeline into the configured sink (standard output if none was
    /// given). Errors say what could not be opened, or why the spool was refused.
    pub fn build(self) -> Result<(NonBlocking, WorkerGuard), Box<dyn std::error::Error>> {
        let sink = self.sink.unwrap_or(SinkSpec::Stdout).open()?;
        Ok(self.builder.build(sink)?)
    }
}

/// The warnings to print: all, but an unknown variable's only the first time.
fn once_per_process(warnings: Vec<Warning>) -> Vec<String> {
    let mut warned = WARNED_UNKNOWN.lock().unwrap_or_else(|e| e.into_inner());
    warnings
        .into_iter()
        .filter(|w| {
            w.unknown
                .as_ref()
                .is_none_or(|name| warned.insert(name.clone()))
        })
        .map(|w| w.text)
        .collect()
}

/// The key of the `key = value` line of `text` holding byte `at` (where TOML found
/// an error), if that line is one.
fn key_at(text: &str, at: usize) -> Option<String> {
    let at = at.min(text.len());
    let start = text.get(..at)?.rfind('\n').map_or(0, |i| i + 1);
    let line = text[start..].lines().next()?;
    let (key, _) = line.split_once('=')?;
    let key = key.trim().trim_matches(|c| c == '"' || c == '\'').trim();
    (!key.is_empty() && !key.starts_with('#') && !key.starts_with('[')).then(|| key.to_owned())
}

/// The valid variable nearest `name` by edit distance (case aside).
fn nearest_variable(name: &str) -> String {
    let name = name.to_ascii_uppercase();
    KEYS.iter()
        .map(|key| variable(key))
        .chain(std::iter::once(crate::clock::CLOCK_ENV.to_owned()))
        .min_by_key(|valid| edit_distance(&name, valid))
        .unwrap_or_default()
}

/// Levenshtein distance in characters.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Every key of the table lands in the builder, sizes and durations with units.
    #[test]
    fn every_key_sets_its_option() {
        let c = Config::from_toml(
            r#"
            sink = "syslog+tcp://127.0.0.1:514"
            capacity_bytes = "16MiB"
            max_record_bytes = 4096
            thread_ring_bytes = "256KiB"
            batch_bytes = "32KiB"
            buffered_lines_limit = 1000
            overflow = "block-for=5ms"
            reserve_fraction = 0.25
            flush_interval = "50ms"
            flush_level = "warn"
            shutdown_timeout = "2s"
            report_format = "logfmt"
            spool = "/var/lib/app/app.spool"
            thread_name = "app-log"
            mode = "sync"
            flush_on_panic = false
            flush_on_signals = true
            "#,
        )
        .unwrap();
        assert_eq!(c.sink(), Some(&SinkSpec::SyslogTcp("127.0.0.1:514".into())));
        let k = c.builder().config();
        assert_eq!(
            (k.capacity_bytes, k.max_record_bytes, k.batch_bytes),
            (16 << 20, 4096, 32 << 10)
        );
        assert_eq!(k.max_records, Some(1000));
        assert_eq!(k.thread_ring_bytes, Some(256 << 10));
        assert_eq!(k.overflow, Overflow::BlockFor(Duration::from_millis(5)));
        assert_eq!(k.reserve_fraction, 0.25);
        assert_eq!(k.flush_interval, Duration::from_millis(50));
        assert_eq!(k.flush_level, Level::Warn);
        assert_eq!(k.shutdown_timeout, Duration::from_secs(2));
        assert_eq!(k.report_format, Some(Format::Logfmt));
        assert_eq!(
            k.spool.as_ref().map(|s| s.0.clone()),
            Some("/var/lib/app/app.spool".into())
        );
        assert_eq!(k.thread_name, "app-log");
        assert_eq!(k.mode, Mode::Sync);
    }

    /// A bad key or value names the key, the value and what is valid.
    #[test]
    fn errors_name_the_key_the_value_and_the_choices() {
        let e = Config::from_toml("capasity_bytes = 5").unwrap_err();
        assert_eq!((e.key.as_str(), e.value.as_str()), ("capasity_bytes", "5"));
        assert!(e.expected.contains("capacity_bytes"), "{e}");
        let e = Config::from_toml("capacity_bytes = \"8 lots\"").unwrap_err();
        assert!(
            e.to_string()
                .contains("capacity_bytes = \"8 lots\": a size"),
            "{e}"
        );
        let e = Config::from_toml("overflow = \"dorp\"").unwrap_err();
        assert!(e.expected.contains("drop-newest"), "{e}");
        let e = Config::from_toml("flush_interval = \"soon\"").unwrap_err();
        assert!(e.expected.contains("100ms"), "{e}");
        let e = Config::from_toml("sink = \"syslog+tcp://nohost\"").unwrap_err();
        assert!(e.expected.contains("HOST:PORT"), "{e}");
        let e = Config::from_toml("reserve_fraction = 0.9").unwrap_err();
        assert!(e.expected.contains("0.45"), "{e}");
        let e = Config::from_toml("[table]\nx = 1").unwrap_err();
        assert_eq!(e.key, "table");
        assert!(Config::from_toml("capacity_bytes = ").is_err());
    }

    /// An unknown `LOGLAG_*` variable is warned about the first time only, naming the
    /// nearest valid one; a bad value of a known one each time it is read.
    #[test]
    fn an_unknown_variable_is_warned_about_once_per_process() {
        let vars = || {
            [
                ("LOGLAG_UNIT_TEST_BATCH_BYTE", "1"),
                ("LOGLAG_BATCH_BYTES", "0"),
            ]
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .into_iter()
        };
        let (_, first) = Config::default().apply_vars(vars());
        let first = once_per_process(first);
        assert_eq!(first.len(), 2, "{first:?}");
        assert!(
            first[0].contains("LOGLAG_UNIT_TEST_BATCH_BYTE is not a loglag variable (did you mean LOGLAG_BATCH_BYTES?)"),
            "{first:?}"
        );
        assert!(
            first[1].contains("LOGLAG_BATCH_BYTES=\"0\" is not valid (a size"),
            "{first:?}"
        );
        let (_, again) = Config::default().apply_vars(vars());
        let again = once_per_process(again);
        assert_eq!(again.len(), 1, "{again:?}");
        assert!(again[0].contains("LOGLAG_BATCH_BYTES"), "{again:?}");
    }

    /// TOML's own errors (an integer no i64 holds) name the key of their line.
    #[test]
    fn a_toml_error_names_the_key_of_its_line() {
        let e =
            Config::from_toml("flush_level = \"warn\"\ncapacity_bytes = 99999999999999999999999")
                .unwrap_err();
        assert_eq!(e.key, "capacity_bytes", "{e}");
        let e = Config::from_toml("thread_name = \"unterminated").unwrap_err();
        assert_eq!(e.key, "thread_name", "{e}");
        let e = Config::from_toml("[[[").unwrap_err();
        assert_eq!(e.key, "(file)", "{e}");
        assert_eq!(edit_distance("LOGLAG_CAPACITY", "LOGLAG_CAPACITY_BYTES"), 6);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
    }

    /// From the environment: valid variables apply, a bad one is skipped (with a
    /// warning on stderr) and its option keeps the default, a file's value included.
    #[test]
    fn the_environment_overrides_and_a_bad_variable_keeps_the_default() {
        // Only this test in this binary sets these variables.
        std::env::set_var("LOGLAG_CAPACITY_BYTES", "1MiB");
        std::env::set_var("LOGLAG_OVERFLOW", "dorp");
        std::env::set_var("LOGLAG_FLUSH_INTERVAL", "10ms");
        let c = Config::from_toml("flush_interval = \"50ms\"\noverflow = \"block\"")
            .unwrap()
            .with_env();
        for var in [
            "LOGLAG_CAPACITY_BYTES",
            "LOGLAG_OVERFLOW",
            "LOGLAG_FLUSH_INTERVAL",
        ] {
            std::env::remove_var(var);
        }
        let k = c.builder().config();
        assert_eq!(k.capacity_bytes, 1 << 20);
        assert_eq!(
            k.flush_interval,
            Duration::from_millis(10),
            "the variable wins"
        );
        assert_eq!(k.overflow, Overflow::Block, "the bad variable is skipped");
    }
}
