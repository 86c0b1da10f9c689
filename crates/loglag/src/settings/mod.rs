//! `Settings`, the one settings model, and `SETTINGS`, the table of every option.

#[macro_use]
mod declare;
pub(crate) mod env;
pub(crate) mod mode;
pub(crate) mod overflow;
pub(crate) mod spool_sync;
pub mod units;

use std::path::PathBuf;
use std::time::Duration;

use crate::record::level::Level;
use crate::record::Format;
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

declare_settings! {
    capacity_bytes: usize = 8 << 20,
        parse: size,
        check: |s| rule(
            (MIN_CAPACITY_BYTES..=max_capacity_bytes()).contains(&s.capacity_bytes),
            || describe_size(s.capacity_bytes as u64),
        ),
        row: (
            "NonBlockingBuilder::capacity_bytes",
            "a size (8MiB, 65536, 64KiB), at least 256 bytes and at most 16 GiB or the machine's physical memory, whichever is less",
            "8MiB",
        );
    max_record_bytes: usize = 64 << 10,
        parse: size,
        check: |s| rule(s.max_record_bytes >= MIN_RECORD_BYTES, || {
            describe_size(s.max_record_bytes as u64)
        }),
        row: (
            "NonBlockingBuilder::max_record_bytes",
            "a size, at least 64 bytes (a record longer than half of what the ring holds is cut to fit it)",
            "64KiB",
        );
    /// Each logging thread's own ring (`queue/lanes.rs`); `None`: the default for the
    /// budget, 0: none, every thread uses the shared ring.
    thread_ring_bytes: Option<usize> = None,
        parse: |t| size(t).map(Some),
        check: |s| match s.thread_ring_bytes {
            Some(b) => rule(b == 0 || (4096..=max_capacity_bytes()).contains(&b), || {
                describe_size(b as u64)
            }),
            None => Ok(()),
        },
        row: (
            "NonBlockingBuilder::thread_ring_bytes",
            "0 for no thread rings, or a size from 4KiB to the largest budget (over a quarter of the budget: none)",
            "1/32 of the budget, 4KiB to 1MiB",
        );
    batch_bytes: usize = 64 << 10,
        parse: size,
        check: |s| rule(s.batch_bytes >= 1, || describe_size(s.batch_bytes as u64)),
        row: (
            "NonBlockingBuilder::batch_bytes",
            "a size, at least 1 byte (more than the budget: only the interval writes)",
            "64KiB",
        );
    /// tracing-appender's `buffered_lines_limit`: at most this many records queued, on
    /// top of the byte budget. `None` (the default) costs the producer path nothing.
    buffered_lines_limit: Option<u64> = None,
        parse: |t| parsed(t).map(Some),
        check: |s| match s.buffered_lines_limit {
            Some(n) => rule(n >= 1, || n.to_string()),
            None => Ok(()),
        },
        row: (
            "NonBlockingBuilder::buffered_lines_limit",
            "a number of records, at least 1",
            "none (the byte budget alone)",
        );
    overflow: Overflow = Overflow::default(),
        parse: parsed,
        check: |s| {
            let ok = match s.overflow {
                Overflow::BlockFor(d) => duration_ok(d),
                Overflow::DropOldest => s.spool.is_none(),
                _ => true,
            };
            rule(ok, || s.overflow.to_string())
        },
        row: (
            "NonBlockingBuilder::overflow",
            "block, block-for=5ms (at most 8760h), drop-newest, drop-oldest (not with a spool) or shed-by-level",
            "shed-by-level",
        );
    reserve_fraction: f64 = 1.0 / 8.0,
        parse: parsed,
        check: |s| rule((0.0..=0.45).contains(&s.reserve_fraction), || {
            s.reserve_fraction.to_string()
        }),
        row: (
            "NonBlockingBuilder::reserve_fraction",
            "a fraction from 0 to 0.45",
            "0.125",
        );
    flush_interval: Duration = Duration::from_millis(100),
        parse: duration,
        check: |s| {
            let d = s.flush_interval;
            rule(d >= MIN_FLUSH_INTERVAL && duration_ok(d), || format!("{d:?}"))
        },
        row: (
            "NonBlockingBuilder::flush_interval",
            "a duration from 100us to 8760h (a year): 500us, 100ms, 5s, 1m, 2h, 1d",
            "100ms",
        );
    flush_level: Level = Level::Error,
        parse: parsed,
        row: (
            "NonBlockingBuilder::flush_level",
            "trace, debug, info, warn or error",
            "error",
        );
    shutdown_timeout: Duration = Duration::from_secs(5),
        parse: duration,
        check: |s| rule(duration_ok(s.shutdown_timeout), || {
            format!("{:?}", s.shutdown_timeout)
        }),
        row: ("NonBlockingBuilder::shutdown_timeout", DURATION, "5s");
    /// `None`: the in-band reports follow the front-end's format (compact text until
    /// a `LoglagLayer` or `Logger` says otherwise).
    report_format: Option<Format> = None,
        parse: |t| parsed(t).map(Some),
        row: (
            "NonBlockingBuilder::report_format",
            "json, compact, logfmt or syslog",
            "the front end's",
        );
    spool: Option<PathBuf> = None,
        parse: |t: &str| Some(Some(PathBuf::from(t))),
        check: |s| match &s.spool {
            Some(path) => {
                let text = path.to_string_lossy();
                rule(!text.trim().is_empty() && !text.contains('\0'), || {
                    text.clone().into_owned()
                })
            }
            None => Ok(()),
        },
        row: (
            "NonBlockingBuilder::spool",
            "a path, not empty, without NUL bytes",
            "none",
        );
    spool_sync: SpoolSync = SpoolSync::Never,
        parse: spool_sync,
        check: |s| match s.spool_sync {
            SpoolSync::Every(d) => rule(d >= Duration::from_millis(1) && duration_ok(d), || {
                format!("{d:?}")
            }),
            _ => Ok(()),
        },
        row: (
            "NonBlockingBuilder::spool_sync",
            "never, every-flush, or a duration (at most this often) from 1ms to 8760h",
            "never",
        );
    spool_required: bool = false,
        parse: boolean,
        row: ("NonBlockingBuilder::spool_required", "true or false", "false");
    /// The writer thread's name.
    thread_name: String = "loglag-writer".into(),
        parse: |t: &str| Some(t.to_owned()),
        check: |s| rule(
            !s.thread_name.trim().is_empty() && !s.thread_name.contains('\0'),
            || s.thread_name.clone(),
        ),
        row: (
            "NonBlockingBuilder::thread_name",
            "a thread name, not empty, without NUL bytes (Linux shows 15 bytes)",
            "loglag-writer",
        );
    /// `None`: `LOGLAG_MODE` decides at the start (async when it is not set).
    mode: Option<Mode> = None,
        parse: |t| parsed(t).map(Some),
        row: (
            "NonBlockingBuilder::mode",
            "off, format-only, sync or async",
            "async, or LOGLAG_MODE",
        );
    flush_on_panic: bool = true,
        parse: boolean,
        row: ("NonBlockingBuilder::flush_on_panic", "true or false", "true");
    flush_on_signals: bool = false,
        parse: boolean,
        row: ("NonBlockingBuilder::flush_on_signals", "true or false", "false");
    @sink_rows:
    (
        "sink",
        "NonBlockingBuilder::build(sink)",
        "stdout, stderr, file:///PATH, fifo:///PATH, syslog+tcp://HOST:PORT, syslog+udp://HOST:PORT, syslog+unix:///PATH, relp://HOST:PORT, otlp+http://HOST:PORT[/PATH] or otlp+http+json://HOST:PORT[/PATH]; no NUL bytes",
        "stdout",
    );
    (
        "rotate",
        "rolling::Builder::rotation",
        "never, minutely, hourly, daily, weekly, or a period: 15m, 6h, 1d",
        "never (a plain file)",
    );
    (
        "max_file_size",
        "rolling::Builder::max_file_size",
        "a size, at least 1 byte: 64MiB, 100MB",
        "none",
    );
    (
        "keep",
        "rolling::Builder::max_log_files(keep + 1)",
        "a number of rotated files kept besides the live one, at least 1",
        "every file",
    );
    (
        "compress",
        "rolling::Builder::compression",
        "gzip or none",
        "none",
    );
}

/// The shortest interval the writer honours: below it, waking costs more than it
/// saves, and a zero would spin.
const MIN_FLUSH_INTERVAL: Duration = Duration::from_micros(100);

/// A duration within the configured range, or `Duration::MAX` (no limit, from the
/// builder).
fn duration_ok(d: Duration) -> bool {
    d <= MAX_CONFIGURED_DURATION || d == Duration::MAX
}

/// A check's answer: `Err` carries the value as an error shows it.
fn rule(ok: bool, shown: impl FnOnce() -> String) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(shown())
    }
}

fn size(text: &str) -> Option<usize> {
    parse_size(text).ok().and_then(|n| usize::try_from(n).ok())
}

fn duration(text: &str) -> Option<Duration> {
    parse_duration(text).ok()
}

fn boolean(text: &str) -> Option<bool> {
    match text {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

fn parsed<T: std::str::FromStr>(text: &str) -> Option<T> {
    text.parse().ok()
}

fn spool_sync(text: &str) -> Option<SpoolSync> {
    match text.to_ascii_lowercase().replace('_', "-").as_str() {
        "never" => Some(SpoolSync::Never),
        "every-flush" => Some(SpoolSync::EveryFlush),
        _ => duration(text).map(SpoolSync::Every),
    }
}

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

impl Settings {
    /// Sets `key` (a pipeline key of [`SETTINGS`]) from its text, as a TOML file, a
    /// variable or a URL query gives it, and checks it as [`validate`](Self::validate)
    /// would. On error nothing changes.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let mut next = self.clone();
        match next.assign(key, value.trim()) {
            Some(true) => {}
            Some(false) => return Err(SettingError::new(key, value)),
            None if setting(key).is_some() => {
                return Err(SettingError::with_expected(
                    key,
                    value,
                    "a sink's setting: give it with the sink (sink = \"file:///var/log/app.log?rotate=daily\") or on its own key in a Config",
                ))
            }
            None => return Err(SettingError::unknown(key, value)),
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

    /// These settings, checked: the way into a pipeline for `build`, which fails on
    /// the first that cannot work.
    pub(crate) fn validated(self) -> Result<Validated, SettingError> {
        self.validate()?;
        Ok(Validated::new(self))
    }

    /// These settings with each that cannot work replaced by its default, and what was
    /// replaced: the way into a pipeline for `finish` only, which cannot fail and warns
    /// about each (tracing-appender's `non_blocking` takes any writer and starts).
    pub(crate) fn repaired(mut self) -> (Validated, Vec<SettingError>) {
        let problems = self.problems();
        for e in &problems {
            self.reset(&e.key);
        }
        debug_assert!(self.problems().is_empty(), "every default is valid");
        (Validated::new(self), problems)
    }

    /// The default of `key`, as its row says, for a warning.
    pub(crate) fn default_text(key: &str) -> &'static str {
        setting(key).map_or("", |s| s.default)
    }
}

/// Settings [`Settings::validate`] accepted, and what the start found: the only way
/// into a `Core`. The facts are not settings (no key sets them) and live here, apart.
#[derive(Debug, Clone)]
pub(crate) struct Validated {
    settings: Settings,
    /// The mode the pipeline runs in: `Settings::mode`, or what `LOGLAG_MODE` said
    /// when that is `None` (the builder reads it at the start).
    pub(crate) mode: Mode,
    /// A spool was asked for and refused (in use, corrupt, not ours): the pipeline
    /// runs without it.
    pub(crate) spool_refused: bool,
}

impl Validated {
    fn new(settings: Settings) -> Validated {
        Validated {
            mode: settings.mode.unwrap_or(Mode::Async),
            settings,
            spool_refused: false,
        }
    }

    /// The settings, read-only: nothing after `validate` changes one except through
    /// the narrow methods below, each of which keeps it valid.
    pub(crate) fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The spool was refused: run without it, and say so in the metrics.
    pub(crate) fn refuse_spool(&mut self) {
        self.settings.spool = None;
        self.spool_refused = true;
    }

    /// A batch larger than the budget is never reached (only the interval writes then),
    /// and the writer's buffer is sized by it: the budget + 1 means the same without a
    /// buffer of any size asked for (`batch_bytes = "8760GiB"`). Still at least 1.
    pub(crate) fn cap_batch_to(&mut self, budget: u64) {
        let never_reached = usize::try_from(budget).map_or(usize::MAX, |b| b.saturating_add(1));
        self.settings.batch_bytes = self.settings.batch_bytes.min(never_reached);
    }

    /// A record must always fit the shared ring (where a record too long for a
    /// thread's ring goes) with room to spare, or a policy could wait forever.
    pub(crate) fn fit_records_to(&mut self, max_fit: usize) {
        self.settings.max_record_bytes = self
            .settings
            .max_record_bytes
            .clamp(64.min(max_fit), max_fit);
    }
}

impl std::ops::Deref for Validated {
    type Target = Settings;

    fn deref(&self) -> &Settings {
        &self.settings
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
        let settings = Settings {
            batch_bytes: 0,
            reserve_fraction: -1.0,
            capacity_bytes: 1 << 20,
            ..Settings::default()
        };
        let (repaired, replaced) = settings.repaired();
        let replaced: Vec<String> = replaced.into_iter().map(|e| e.key).collect();
        assert_eq!(replaced, ["batch_bytes", "reserve_fraction"]);
        assert_eq!(repaired.batch_bytes, 64 << 10);
        assert_eq!(repaired.capacity_bytes, 1 << 20, "a good one is kept");
        repaired.settings().validate().unwrap();
    }
}
