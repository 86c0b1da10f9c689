//! `Settings`, the one settings model, and `SETTINGS`, the table of every option.

pub(crate) mod env;
pub(crate) mod mode;
pub(crate) mod overflow;
pub(crate) mod spool_sync;
pub mod units;

use std::path::PathBuf;
use std::time::Duration;

use crate::format::Format;
use crate::level::Level;
use crate::settings::mode::Mode;
use crate::settings::overflow::Overflow;
use crate::settings::spool_sync::SpoolSync;
use crate::settings::units::{
    describe_size, max_capacity_bytes, parse_duration, parse_size, MAX_CONFIGURED_DURATION,
    MIN_CAPACITY_BYTES, MIN_RECORD_BYTES,
};

/// One option in every place it can be set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setting {
    /// The TOML key and the URL query parameter; the variable is `LOGLAG_` and the key
    /// in capitals ([`Setting::variable`]).
    pub key: &'static str,
    /// The builder method that sets it.
    pub builder: &'static str,
    /// What is valid: the text every error for this key ends with.
    pub expected: &'static str,
    /// The default.
    pub default: &'static str,
}

impl Setting {
    /// The environment variable: `LOGLAG_CAPACITY_BYTES`.
    pub fn variable(&self) -> String {
        variable(self.key)
    }
}

pub(crate) fn variable(key: &str) -> String {
    format!("LOGLAG_{}", key.to_ascii_uppercase())
}

const DURATION: &str = "a duration from 0s to 8760h (a year): 500us, 100ms, 5s, 1m, 2h, 1d";

/// Every option, in the order the docs list them. The first rows are the pipeline's
/// ([`Settings`]); `sink` and the rows after it describe the sink
/// ([`Config`](crate::Config), [`SinkSpec`](crate::sink::SinkSpec)).
pub const SETTINGS: &[Setting] = &[
    Setting {
        key: "capacity_bytes",
        builder: "NonBlockingBuilder::capacity_bytes",
        expected: "a size (8MiB, 65536, 64KiB), at least 256 bytes and at most 16 GiB or the machine's physical memory, whichever is less",
        default: "8MiB",
    },
    Setting {
        key: "max_record_bytes",
        builder: "NonBlockingBuilder::max_record_bytes",
        expected: "a size, at least 64 bytes (a record longer than half of what the ring holds is cut to fit it)",
        default: "64KiB",
    },
    Setting {
        key: "thread_ring_bytes",
        builder: "NonBlockingBuilder::thread_ring_bytes",
        expected: "0 for no thread rings, or a size from 4KiB to the largest budget (over a quarter of the budget: none)",
        default: "1/32 of the budget, 4KiB to 1MiB",
    },
    Setting {
        key: "batch_bytes",
        builder: "NonBlockingBuilder::batch_bytes",
        expected: "a size, at least 1 byte (more than the budget: only the interval writes)",
        default: "64KiB",
    },
    Setting {
        key: "buffered_lines_limit",
        builder: "NonBlockingBuilder::buffered_lines_limit",
        expected: "a number of records, at least 1",
        default: "none (the byte budget alone)",
    },
    Setting {
        key: "overflow",
        builder: "NonBlockingBuilder::overflow",
        expected: "block, block-for=5ms (at most 8760h), drop-newest, drop-oldest (not with a spool) or shed-by-level",
        default: "shed-by-level",
    },
    Setting {
        key: "reserve_fraction",
        builder: "NonBlockingBuilder::reserve_fraction",
        expected: "a fraction from 0 to 0.45",
        default: "0.125",
    },
    Setting {
        key: "flush_interval",
        builder: "NonBlockingBuilder::flush_interval",
        expected: "a duration from 100us to 8760h (a year): 500us, 100ms, 5s, 1m, 2h, 1d",
        default: "100ms",
    },
    Setting {
        key: "flush_level",
        builder: "NonBlockingBuilder::flush_level",
        expected: "trace, debug, info, warn or error",
        default: "error",
    },
    Setting {
        key: "shutdown_timeout",
        builder: "NonBlockingBuilder::shutdown_timeout",
        expected: DURATION,
        default: "5s",
    },
    Setting {
        key: "report_format",
        builder: "NonBlockingBuilder::report_format",
        expected: "json, compact, logfmt or syslog",
        default: "the front end's",
    },
    Setting {
        key: "spool",
        builder: "NonBlockingBuilder::spool",
        expected: "a path, not empty, without NUL bytes",
        default: "none",
    },
    Setting {
        key: "spool_sync",
        builder: "NonBlockingBuilder::spool_sync",
        expected: "never, every-flush, or a duration (at most this often) from 1ms to 8760h",
        default: "never",
    },
    Setting {
        key: "spool_required",
        builder: "NonBlockingBuilder::spool_required",
        expected: "true or false",
        default: "false",
    },
    Setting {
        key: "thread_name",
        builder: "NonBlockingBuilder::thread_name",
        expected: "a thread name, not empty, without NUL bytes (Linux shows 15 bytes)",
        default: "loglag-writer",
    },
    Setting {
        key: "mode",
        builder: "NonBlockingBuilder::mode",
        expected: "off, format-only, sync or async",
        default: "async, or LOGLAG_MODE",
    },
    Setting {
        key: "flush_on_panic",
        builder: "NonBlockingBuilder::flush_on_panic",
        expected: "true or false",
        default: "true",
    },
    Setting {
        key: "flush_on_signals",
        builder: "NonBlockingBuilder::flush_on_signals",
        expected: "true or false",
        default: "false",
    },
    Setting {
        key: "sink",
        builder: "NonBlockingBuilder::build(sink)",
        expected: "stdout, stderr, file:///PATH, fifo:///PATH, syslog+tcp://HOST:PORT, syslog+udp://HOST:PORT, syslog+unix:///PATH, relp://HOST:PORT, otlp+http://HOST:PORT[/PATH] or otlp+http+json://HOST:PORT[/PATH]; no NUL bytes",
        default: "stdout",
    },
    Setting {
        key: "rotate",
        builder: "rolling::Builder::rotation",
        expected: "never, minutely, hourly, daily, weekly, or a period: 15m, 6h, 1d",
        default: "never (a plain file)",
    },
    Setting {
        key: "max_file_size",
        builder: "rolling::Builder::max_file_size",
        expected: "a size, at least 1 byte: 64MiB, 100MB",
        default: "none",
    },
    Setting {
        key: "keep",
        builder: "rolling::Builder::max_log_files(keep + 1)",
        expected: "a number of rotated files kept besides the live one, at least 1",
        default: "every file",
    },
    Setting {
        key: "compress",
        builder: "rolling::Builder::compression",
        expected: "gzip or none",
        default: "none",
    },
];

/// The row of `key`.
pub(crate) fn setting(key: &str) -> Option<&'static Setting> {
    SETTINGS.iter().find(|s| s.key == key)
}

/// The keys of the sink's rows (a `file://` sink's rolling options).
pub(crate) const FILE_KEYS: [&str; 4] = ["rotate", "max_file_size", "keep", "compress"];

/// A setting that is not valid, or a key that is not a setting: it names the key, the
/// value as given, and what is valid.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettingError {
    /// The key (TOML and URL), or the variable (`LOGLAG_*`).
    pub key: String,
    /// The value as given.
    pub value: String,
    /// What is valid, or for an unknown key, the keys there are.
    pub expected: String,
    unknown_key: bool,
}

impl SettingError {
    pub(crate) fn new(key: &str, value: impl Into<String>) -> SettingError {
        SettingError {
            key: key.to_owned(),
            value: value.into(),
            expected: setting(key).map_or("", |s| s.expected).to_owned(),
            unknown_key: false,
        }
    }

    /// An error with its own text of what is valid (TOML's own errors).
    pub(crate) fn with_expected(
        key: &str,
        value: impl Into<String>,
        expected: impl Into<String>,
    ) -> SettingError {
        SettingError {
            key: key.to_owned(),
            value: value.into(),
            expected: expected.into(),
            unknown_key: false,
        }
    }

    pub(crate) fn unknown(key: &str, value: &str) -> SettingError {
        SettingError {
            key: key.to_owned(),
            value: value.to_owned(),
            expected: format!(
                "one of {}",
                SETTINGS
                    .iter()
                    .map(|s| s.key)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            unknown_key: true,
        }
    }

    /// The key is not a setting at all (a typo: `capacity`).
    pub fn is_unknown_key(&self) -> bool {
        self.unknown_key
    }

    /// The same error under the variable's name (`LOGLAG_CAPACITY_BYTES`).
    #[cfg(feature = "config")]
    pub(crate) fn into_variable(mut self) -> SettingError {
        self.key = variable(&self.key);
        self
    }
}

impl std::fmt::Display for SettingError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.unknown_key {
            let nearest = SETTINGS
                .iter()
                .min_by_key(|s| edit_distance(&self.key.to_ascii_lowercase(), s.key))
                .map_or("", |s| s.key);
            return write!(
                f,
                "loglag: {:?} is not a setting (did you mean {nearest}?); the settings are {}",
                self.key,
                self.expected.trim_start_matches("one of ")
            );
        }
        write!(
            f,
            "loglag: {} = {:?} is not valid: expected {}",
            self.key, self.value, self.expected
        )
    }
}

impl std::error::Error for SettingError {}

/// Levenshtein distance, for "did you mean".
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb))
                .min(row[j] + 1)
                .min(row[j + 1] + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// One settings model: every option of a pipeline, whether it comes from a
/// [`NonBlockingBuilder`](crate::NonBlockingBuilder) method, a TOML key, a `LOGLAG_*`
/// variable or a sink URL's query (`file:///var/log/app.log?rotate=daily&capacity_bytes=16MiB`),
/// is read by one parser ([`Settings::set`]) and checked by one rule
/// ([`Settings::validate`]), so a bad value is the same error, naming the same key,
/// whichever way it was said. [`SETTINGS`] is the table of them all; the docs' table is
/// drawn from it (`docs/settings.md`, tested).
///
/// ```
/// let mut settings = loglag::Settings::default();
/// settings.set("capacity_bytes", "16MiB")?;
/// settings.set("flush_interval", "1h")?;
/// let e = settings.set("reserve_fraction", "0.9").unwrap_err();
/// assert_eq!(e.key, "reserve_fraction");
/// let (writer, guard) = loglag::NonBlockingBuilder::from(settings)
///     .build(loglag::sink::WriterSink::new(std::io::sink()))?;
/// # drop((writer, guard));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// A pipeline's settings: what the builder, a TOML file, the environment and a sink
/// URL's query all set, and what the pipeline starts from once [`validate`](Self::validate)
/// accepts it. The pipeline never adjusts a value it was given: one that cannot work is
/// an error naming it.
#[derive(Debug, Clone)]
pub struct Settings {
    pub(crate) capacity_bytes: usize,
    pub(crate) max_record_bytes: usize,
    pub(crate) overflow: Overflow,
    pub(crate) reserve_fraction: f64,
    pub(crate) batch_bytes: usize,
    pub(crate) flush_interval: Duration,
    pub(crate) flush_level: Level,
    pub(crate) shutdown_timeout: Duration,
    /// `None`: the in-band reports follow the front-end's format (compact text until
    /// a `LoglagLayer` or `Logger` says otherwise).
    pub(crate) report_format: Option<Format>,
    pub(crate) mode: Mode,
    /// Whether `LOGLAG_MODE` decides the mode at start (no `mode` was set).
    pub(crate) mode_from_env: bool,
    pub(crate) spool: Option<PathBuf>,
    pub(crate) spool_sync: SpoolSync,
    pub(crate) spool_required: bool,
    /// A spool was asked for and refused (in use, corrupt, not ours): the pipeline
    /// runs without it. Not a setting: what the start found.
    pub(crate) spool_refused: bool,
    /// The writer thread's name.
    pub(crate) thread_name: String,
    /// tracing-appender's `buffered_lines_limit`: at most this many records queued, on
    /// top of the byte budget. `None` (the default) costs the producer path nothing.
    pub(crate) max_records: Option<u64>,
    /// Each logging thread's own ring (`lanes.rs`); `None`: the default for the
    /// budget, 0: none, every thread uses the shared ring.
    pub(crate) thread_ring_bytes: Option<usize>,
    pub(crate) flush_on_panic: bool,
    pub(crate) flush_on_signals: bool,
}

impl Default for Settings {
    fn default() -> Settings {
        Settings {
            capacity_bytes: 8 << 20,
            max_record_bytes: 64 << 10,
            overflow: Overflow::default(),
            reserve_fraction: 1.0 / 8.0,
            batch_bytes: 64 << 10,
            flush_interval: Duration::from_millis(100),
            flush_level: Level::Error,
            shutdown_timeout: Duration::from_secs(5),
            report_format: None,
            mode: Mode::Async,
            mode_from_env: true,
            spool: None,
            spool_sync: SpoolSync::Never,
            spool_required: false,
            spool_refused: false,
            thread_name: "loglag-writer".into(),
            max_records: None,
            thread_ring_bytes: None,
            flush_on_panic: true,
            flush_on_signals: false,
        }
    }
}

/// The shortest interval the writer honours: below it, waking costs more than it
/// saves, and a zero would spin.
const MIN_FLUSH_INTERVAL: Duration = Duration::from_micros(100);

/// A duration within the configured range, or `Duration::MAX` (no limit, from the
/// builder).
fn duration_ok(d: Duration) -> bool {
    d <= MAX_CONFIGURED_DURATION || d == Duration::MAX
}

impl Settings {
    /// Sets `key` (a pipeline key of [`SETTINGS`]) from its text, as a TOML file, a
    /// variable or a URL query gives it, and checks it as [`validate`](Self::validate)
    /// would. On error nothing changes.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let bad = || SettingError::new(key, value);
        let text = value.trim();
        let size = || {
            parse_size(text)
                .ok()
                .and_then(|n| usize::try_from(n).ok())
                .ok_or_else(bad)
        };
        let duration = || parse_duration(text).map_err(|_| bad());
        let boolean = || match text {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            _ => Err(bad()),
        };
        let mut next = self.clone();
        match key {
            "capacity_bytes" => next.capacity_bytes = size()?,
            "max_record_bytes" => next.max_record_bytes = size()?,
            "thread_ring_bytes" => next.thread_ring_bytes = Some(size()?),
            "batch_bytes" => next.batch_bytes = size()?,
            "buffered_lines_limit" => {
                next.max_records = Some(text.parse().map_err(|_| bad())?);
            }
            "overflow" => next.overflow = text.parse().map_err(|_| bad())?,
            "reserve_fraction" => next.reserve_fraction = text.parse().map_err(|_| bad())?,
            "flush_interval" => next.flush_interval = duration()?,
            "flush_level" => next.flush_level = text.parse().map_err(|_| bad())?,
            "shutdown_timeout" => next.shutdown_timeout = duration()?,
            "report_format" => next.report_format = Some(text.parse().map_err(|_| bad())?),
            "spool" => next.spool = Some(PathBuf::from(text)),
            "spool_sync" => {
                let sync = match text.to_ascii_lowercase().replace('_', "-").as_str() {
                    "never" => SpoolSync::Never,
                    "every-flush" => SpoolSync::EveryFlush,
                    _ => SpoolSync::Every(duration()?),
                };
                next.spool_sync = sync;
            }
            "spool_required" => next.spool_required = boolean()?,
            "thread_name" => next.thread_name = text.to_owned(),
            "mode" => {
                next.mode = text.parse().map_err(|_| bad())?;
                next.mode_from_env = false;
            }
            "flush_on_panic" => next.flush_on_panic = boolean()?,
            "flush_on_signals" => next.flush_on_signals = boolean()?,
            _ if setting(key).is_some() => {
                return Err(SettingError::with_expected(
                    key,
                    value,
                    "a sink's setting: give it with the sink (sink = \"file:///var/log/app.log?rotate=daily\") or on its own key in a Config",
                ))
            }
            _ => return Err(SettingError::unknown(key, value)),
        }
        if let Some(e) = next.problems().into_iter().find(|e| e.key == key) {
            return Err(SettingError {
                value: value.to_owned(),
                ..e
            });
        }
        *self = next;
        Ok(())
    }

    /// The overflow policy: whether a caller may wait ([`Overflow::Block`]) is what a
    /// front end that holds a lock of its own (Python's GIL) must know before it logs.
    pub fn overflow(&self) -> Overflow {
        self.overflow
    }

    /// The spool file, if the queue is kept in one: a front end that forks (Python's
    /// pre-fork servers) must know that a child cannot take the parent's.
    pub fn spool(&self) -> Option<&std::path::Path> {
        self.spool.as_deref()
    }

    /// How long a shutdown may take to write what is queued: a front end whose
    /// application flushes and then closes (Python's `logging.shutdown`) spends one
    /// such budget on both, not one each.
    pub fn shutdown_timeout(&self) -> Duration {
        self.shutdown_timeout
    }

    /// The first setting that cannot work, as an error naming it, its value and what is
    /// valid. A pipeline starts only from settings this accepts.
    pub fn validate(&self) -> Result<(), SettingError> {
        match self.problems().into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Every setting that cannot work, in the table's order.
    pub(crate) fn problems(&self) -> Vec<SettingError> {
        let mut out = Vec::new();
        let mut check = |ok: bool, key: &str, value: String| {
            if !ok {
                out.push(SettingError::new(key, value));
            }
        };
        let max = max_capacity_bytes();
        check(
            (MIN_CAPACITY_BYTES..=max).contains(&self.capacity_bytes),
            "capacity_bytes",
            describe_size(self.capacity_bytes as u64),
        );
        check(
            self.max_record_bytes >= MIN_RECORD_BYTES,
            "max_record_bytes",
            describe_size(self.max_record_bytes as u64),
        );
        if let Some(bytes) = self.thread_ring_bytes {
            check(
                bytes == 0 || (4096..=max).contains(&bytes),
                "thread_ring_bytes",
                describe_size(bytes as u64),
            );
        }
        check(
            self.batch_bytes >= 1,
            "batch_bytes",
            describe_size(self.batch_bytes as u64),
        );
        if let Some(n) = self.max_records {
            check(n >= 1, "buffered_lines_limit", n.to_string());
        }
        let overflow_ok = match self.overflow {
            Overflow::BlockFor(d) => duration_ok(d),
            Overflow::DropOldest => self.spool.is_none(),
            _ => true,
        };
        check(overflow_ok, "overflow", self.overflow.to_string());
        check(
            (0.0..=0.45).contains(&self.reserve_fraction),
            "reserve_fraction",
            self.reserve_fraction.to_string(),
        );
        check(
            self.flush_interval >= MIN_FLUSH_INTERVAL && duration_ok(self.flush_interval),
            "flush_interval",
            format!("{:?}", self.flush_interval),
        );
        check(
            duration_ok(self.shutdown_timeout),
            "shutdown_timeout",
            format!("{:?}", self.shutdown_timeout),
        );
        if let Some(path) = &self.spool {
            let text = path.to_string_lossy();
            check(
                !text.trim().is_empty() && !text.contains('\0'),
                "spool",
                text.into_owned(),
            );
        }
        if let SpoolSync::Every(d) = self.spool_sync {
            check(
                d >= Duration::from_millis(1) && duration_ok(d),
                "spool_sync",
                format!("{d:?}"),
            );
        }
        check(
            !self.thread_name.trim().is_empty() && !self.thread_name.contains('\0'),
            "thread_name",
            self.thread_name.clone(),
        );
        out
    }

    /// Replaces each setting that cannot work by its default, returning what was
    /// replaced: `finish`, which cannot fail, warns about each and carries on.
    pub(crate) fn repair(&mut self) -> Vec<SettingError> {
        let problems = self.problems();
        let defaults = Settings::default();
        for e in &problems {
            match e.key.as_str() {
                "capacity_bytes" => {
                    self.capacity_bytes = defaults.capacity_bytes.min(max_capacity_bytes())
                }
                "max_record_bytes" => self.max_record_bytes = defaults.max_record_bytes,
                "thread_ring_bytes" => self.thread_ring_bytes = None,
                "batch_bytes" => self.batch_bytes = defaults.batch_bytes,
                "buffered_lines_limit" => self.max_records = None,
                "overflow" => self.overflow = defaults.overflow,
                "reserve_fraction" => self.reserve_fraction = defaults.reserve_fraction,
                "flush_interval" => self.flush_interval = defaults.flush_interval,
                "shutdown_timeout" => self.shutdown_timeout = defaults.shutdown_timeout,
                "spool" => self.spool = None,
                "spool_sync" => self.spool_sync = SpoolSync::Never,
                "thread_name" => self.thread_name = defaults.thread_name.clone(),
                _ => {}
            }
        }
        problems
    }

    /// The default of `key`, as its row says, for a warning.
    pub(crate) fn default_text(key: &str) -> &'static str {
        setting(key).map_or("", |s| s.default)
    }
}

impl Setting {
    /// [`SETTINGS`] as a Markdown table: the one in `docs/settings.md` (a test keeps the
    /// two the same).
    pub fn markdown_table() -> String {
        let mut out = String::from(
        "| TOML key / URL parameter | variable | builder | valid values | default |\n|---|---|---|---|---|\n",
    );
        for s in SETTINGS {
            out.push_str(&format!(
                "| `{}` | `{}` | `{}` | {} | {} |\n",
                s.key,
                s.variable(),
                s.builder,
                s.expected,
                s.default
            ));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_the_parser_takes_but_the_rule_refuses_is_the_same_error_as_from_the_builder() {
        let mut settings = Settings::default();
        let from_text = settings.set("reserve_fraction", "0.9").unwrap_err();
        let from_builder = Settings {
            reserve_fraction: 0.9,
            ..Settings::default()
        }
        .validate()
        .unwrap_err();
        assert_eq!(from_text.key, from_builder.key);
        assert_eq!(from_text.expected, from_builder.expected);
        assert_eq!(settings.reserve_fraction, 0.125, "nothing changed");
    }

    #[test]
    fn an_unknown_key_names_the_nearest() {
        let e = Settings::default().set("capacity", "1MiB").unwrap_err();
        assert!(e.is_unknown_key());
        let text = e.to_string();
        assert!(text.contains("did you mean capacity_bytes"), "{text}");
        assert!(!text.contains("expected"), "{text}");
    }

    #[test]
    fn drop_oldest_with_a_spool_is_refused_not_changed() {
        let mut settings = Settings::default();
        settings.set("spool", "/tmp/x.spool").unwrap();
        let e = settings.set("overflow", "drop-oldest").unwrap_err();
        assert_eq!(e.key, "overflow");
        assert!(e.expected.contains("not with a spool"), "{e}");
    }

    #[test]
    fn repair_puts_back_the_default_of_each_bad_setting_only() {
        let mut settings = Settings {
            batch_bytes: 0,
            reserve_fraction: -1.0,
            capacity_bytes: 1 << 20,
            ..Settings::default()
        };
        let replaced: Vec<String> = settings.repair().into_iter().map(|e| e.key).collect();
        assert_eq!(replaced, ["batch_bytes", "reserve_fraction"]);
        assert_eq!(settings.batch_bytes, 64 << 10);
        assert_eq!(settings.capacity_bytes, 1 << 20, "a good one is kept");
        settings.validate().unwrap();
    }
}
