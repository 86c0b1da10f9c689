//! Every builder option, and the sink, from a TOML table or from `LOGLAG_*` variables.
//!
//! | key (TOML) | variable | value |
//! |---|---|---|
//! | `sink` | `LOGLAG_SINK` | `stdout`, `stderr`, `file:///PATH`, `fifo:///PATH`, `syslog+tcp://HOST:PORT`, `syslog+udp://HOST:PORT`, `syslog+unix:///PATH` |
//! | `capacity_bytes` | `LOGLAG_CAPACITY_BYTES` | a size: `8MiB`, `65536`, `64KiB` |
//! | `max_record_bytes` | `LOGLAG_MAX_RECORD_BYTES` | a size |
//! | `thread_ring_bytes` | `LOGLAG_THREAD_RING_BYTES` | a size; `0`: no thread rings |
//! | `batch_bytes` | `LOGLAG_BATCH_BYTES` | a size |
//! | `buffered_lines_limit` | `LOGLAG_BUFFERED_LINES_LIMIT` | a count |
//! | `overflow` | `LOGLAG_OVERFLOW` | `block`, `block-for=5ms`, `drop-newest`, `drop-oldest`, `shed-by-level` |
//! | `reserve_fraction` | `LOGLAG_RESERVE_FRACTION` | 0 to 0.45 |
//! | `flush_interval` | `LOGLAG_FLUSH_INTERVAL` | a duration: `100ms`, `2s`, `500us`, `1m` |
//! | `flush_level` | `LOGLAG_FLUSH_LEVEL` | `trace` … `error` |
//! | `shutdown_timeout` | `LOGLAG_SHUTDOWN_TIMEOUT` | a duration |
//! | `report_format` | `LOGLAG_REPORT_FORMAT` | `json`, `compact`, `logfmt`, `syslog` |
//! | `spool` | `LOGLAG_SPOOL` | a path |
//! | `thread_name` | `LOGLAG_THREAD_NAME` | a name |
//! | `mode` | `LOGLAG_MODE` | `off`, `format-only`, `sync`, `async` |
//! | `flush_on_panic`, `flush_on_signals` | `LOGLAG_FLUSH_ON_PANIC`, `LOGLAG_FLUSH_ON_SIGNALS` | `true` or `false` |
//!
//! A bad key or value in a file is an error that names the key, the value and what
//! is valid. A bad variable, read by a running service, warns once on stderr and
//! leaves that option at its default: a typo in the environment must not stop a
//! service (as with `LOGLAG_MODE`).
//!
//! ```
//! let config = loglag::Config::from_toml(r#"
//!     sink = "stderr"
//!     capacity_bytes = "16MiB"
//!     overflow = "drop-newest"
//!     flush_interval = "50ms"
//! "#)?;
//! let (writer, guard) = config.finish()?;
//! # drop((writer, guard));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::builder::NonBlockingBuilder;
use crate::format::Format;
use crate::handle::{NonBlocking, WorkerGuard};
use crate::level::Level;
use crate::mode::Mode;
use crate::overflow::Overflow;
use crate::sink::SinkSpec;
use crate::units::{parse_duration, parse_size};

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

/// Every key, in the table's order.
const KEYS: [&str; 17] = [
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

impl Config {
    /// Defaults, then the `[loglag]`-less TOML table `text` (keys in the module's table).
    pub fn from_toml(text: &str) -> Result<Config, ConfigError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| ConfigError {
            key: "(file)".into(),
            value: e.message().to_owned(),
            expected: "a TOML table".into(),
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
    /// first, the environment overriding it). Bad values warn and are skipped.
    pub fn with_env(mut self) -> Config {
        for key in KEYS {
            let var = format!("LOGLAG_{}", key.to_ascii_uppercase());
            let Ok(value) = std::env::var(&var) else {
                continue;
            };
            match self.clone().set(key, &value) {
                Ok(c) => self = c,
                Err(e) => eprintln!(
                    "loglag: {var}={:?} is not valid ({}); using the default",
                    e.value, e.expected
                ),
            }
        }
        self
    }

    fn set(mut self, key: &str, value: &str) -> Result<Config, ConfigError> {
        let err = |expected: &str| ConfigError {
            key: key.to_owned(),
            value: value.to_owned(),
            expected: expected.to_owned(),
        };
        let size = || parse_size(value).ok_or_else(|| err("a size: 65536, 64KiB, 8MiB, 1GiB"));
        let duration =
            || parse_duration(value).ok_or_else(|| err("a duration: 500us, 100ms, 5s, 1m"));
        let boolean = || match value.trim() {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            _ => Err(err("true or false")),
        };
        let b = self.builder;
        self.builder = match key {
            "sink" => {
                self.sink = Some(value.parse().map_err(|e: String| err(&e))?);
                b
            }
            "capacity_bytes" => b.capacity_bytes(size()?),
            "max_record_bytes" => b.max_record_bytes(size()?),
            "thread_ring_bytes" => b.thread_ring_bytes(size()?),
            "batch_bytes" => b.batch_bytes(size()?),
            "buffered_lines_limit" => b.buffered_lines_limit(
                value
                    .trim()
                    .parse()
                    .map_err(|_| err("a number of records"))?,
            ),
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
            "spool" => b.spool(value.trim()),
            "thread_name" => b.thread_name(value.trim()),
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
    pub fn finish(self) -> Result<(NonBlocking, WorkerGuard), Box<dyn std::error::Error>> {
        let sink = self.sink.unwrap_or(SinkSpec::Stdout).open()?;
        Ok(self.builder.try_finish_sink(sink)?)
    }
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
