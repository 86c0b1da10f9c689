//! `Config`: settings and a sink from TOML, a file, a URL or the environment.

use std::ffi::OsString;

use crate::pipeline::builder::{BuildError, NonBlockingBuilder};
use crate::pipeline::handle::{NonBlocking, WorkerGuard};
use crate::settings::env::{once_per_process, unknown_variable, Warning};
use crate::settings::{SettingError, Settings, FILE_KEYS, SETTINGS};
use crate::sink::{FileOptions, SinkSpec};

/// A pipeline's settings and sink, read from a file, a URL or the environment.
///
/// Every option, and the sink, from a TOML table, from `LOGLAG_*` variables, or from a
/// sink URL's query.
///
/// The keys are [`SETTINGS`](crate::settings::SETTINGS) (the table is in
/// `docs/settings.md`): each is a TOML key, a URL query parameter and, in capitals after
/// `LOGLAG_`, a variable, read by [`Settings::set`] and checked by
/// [`Settings::validate`], the rule the builder's methods meet too. A sink URL carries
/// the sink's own options and may carry any other, so one string can say it all:
///
/// ```text
/// LOGLAG_SINK=file:///var/log/app.log?rotate=daily&max_file_size=64MiB&keep=7&compress=gzip&capacity_bytes=16MiB
/// ```
///
/// A duration is a number (a fraction is fine: `1.5s`) and a unit: `ns`, `us` (`µs`),
/// `ms`, `s`, `m`, `h`, `d`; a size is a whole number of bytes, or of `KiB` (`K`),
/// `MiB` (`M`), `GiB` (`G`), or of decimal `kB`, `MB`, `GB`. The
/// limits are where a value stops being a setting and becomes a typo: a budget the
/// machine cannot hold, a timeout of centuries (to wait for ever, there is
/// `overflow = "block"`), a size of 0.
///
/// A bad key or value in a file or a URL is an error that names the key, the value and
/// what is valid. A bad variable, read by a running service, warns once on stderr and
/// leaves that option as it was (the file's value, or the default): a typo in the
/// environment must not stop a service (as with `LOGLAG_MODE`). So does a `LOGLAG_*`
/// variable that is not one of these (`LOGLAG_CAPACITY=1`): it is ignored, with a
/// warning, once per process, that names the nearest valid variable. The variables
/// loglag reads elsewhere (`LOGLAG_CLOCK`) and those of its tests and lab are not
/// warned about.
///
/// ```
/// let config = loglag::Config::from_toml(r#"
///     sink = "stderr"
///     capacity_bytes = "16MiB"
///     overflow = "drop-newest"
///     flush_interval = "50ms"
/// "#)?;
/// let (writer, guard) = config.build()?;
/// # drop((writer, guard));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
///
/// Rolling files, from a file or a URL, and the settings of a file with the
/// environment on top:
///
/// ```no_run
/// let config = loglag::Config::from_url(
///     "file:///var/log/app.log?rotate=daily&max_file_size=64MiB&keep=7&compress=gzip",
/// )?;
/// let same = loglag::Config::from_toml(r#"
///     sink = "file:///var/log/app.log"
///     rotate = "daily"
///     max_file_size = "64MiB"
///     keep = 7
///     compress = "gzip"
/// "#)?;
/// assert_eq!(config.sink(), same.sink());
/// let (writer, _guard) = loglag::Config::from_file("/etc/app/loglag.toml")?
///     .with_env()
///     .build()?;
/// # drop(writer);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct Config {
    settings: Settings,
    sink: Option<SinkSpec>,
    /// A `file://` sink's own keys given on their own (`rotate = "daily"`), applied to
    /// the sink whatever the order of the keys.
    file: FileOptions,
    /// [`with_env`](Self::with_env) read the environment into these settings.
    env_read: bool,
}

impl Config {
    /// Defaults, then the `[loglag]`-less TOML table `text` (keys: [`SETTINGS`]).
    pub fn from_toml(text: &str) -> Result<Config, SettingError> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
            // TOML's own errors (an integer no i64 holds, a string not closed) name
            // the key of the line they are on, if they are on one.
            match e.span().and_then(|span| key_at(text, span.start)) {
                Some(key) => SettingError::with_expected(
                    &key,
                    e.message(),
                    "a TOML value; sizes and durations may be strings: \"8MiB\", \"100ms\"",
                ),
                None => SettingError::with_expected("(file)", e.message(), "a TOML table"),
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
                    return Err(SettingError::with_expected(
                        key,
                        format!("{value:?}"),
                        "a string, a number or a boolean",
                    ))
                }
            };
            config.set(key, &text)?;
        }
        Ok(config)
    }

    /// Defaults, then the TOML file at `path` ([`from_toml`](Self::from_toml)). A file
    /// that cannot be read is an error naming it, and so is one that is not a regular
    /// file (a FIFO, which would hold the start until a writer came; a device such as
    /// `/dev/zero`, which never ends; a directory; a socket) or is larger than 1 MiB.
    pub fn from_file(
        path: impl AsRef<std::path::Path>,
    ) -> Result<Config, Box<dyn std::error::Error>> {
        let path = path.as_ref();
        let text = read_config_file(path, MAX_CONFIG_FILE_BYTES)?;
        Config::from_toml(&text).map_err(|e| format!("{}: {e}", path.display()).into())
    }

    /// Defaults, then a sink URL and the settings in its query
    /// (`stderr?capacity_bytes=16MiB`, `file:///var/log/app.log?rotate=daily`).
    pub fn from_url(url: &str) -> Result<Config, SettingError> {
        let mut config = Config::default();
        config.set("sink", url)?;
        Ok(config)
    }

    /// Defaults, then every `LOGLAG_*` variable that is set (see [`SETTINGS`]).
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
        let mut values: Vec<Option<OsString>> = vec![None; SETTINGS.len()];
        for (name, value) in vars {
            let name = name.to_string_lossy().into_owned();
            if !name.starts_with("LOGLAG_") {
                continue;
            }
            if let Some(i) = SETTINGS.iter().position(|s| s.variable() == name) {
                values[i] = Some(value);
            } else if let Some(warning) = unknown_variable(name) {
                warnings.push(warning);
            }
        }
        self.env_read = true;
        // In the table's order, whatever the environment's.
        for (setting, value) in SETTINGS.iter().zip(values) {
            let Some(value) = value else { continue };
            let var = setting.variable();
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
            let mut next = self.clone();
            match next.set(setting.key, value) {
                Ok(()) => self = next,
                Err(e) => {
                    let e = e.into_variable();
                    warnings.push(Warning {
                        text: format!(
                            "loglag: {}={:?} is not valid (expected {}); ignored, the option keeps its value (the file's, or the default)",
                            e.key, e.value, e.expected
                        ),
                        unknown: None,
                    })
                }
            }
        }
        (self, warnings)
    }

    /// Sets one key of [`SETTINGS`] from its text. `sink` takes a URL whose query may
    /// hold the sink's options and any other setting; a `file://` sink's options may
    /// also come on their own keys.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        if key == "sink" {
            if value.contains('\0') {
                return Err(SettingError::with_expected(
                    key,
                    crate::sink::spec::redacted(value),
                    "a sink without NUL bytes",
                ));
            }
            let (spec, rest) = SinkSpec::parse_with_query(value)?;
            let mut next = self.clone();
            for (k, v) in rest {
                // A query's `token=...` is no setting: its error keeps no secret.
                next.set(&k, &v).map_err(|mut e| {
                    if crate::sink::spec::looks_secret(&k) {
                        e.value = "***".to_owned();
                    }
                    e
                })?;
            }
            next.sink = Some(spec);
            *self = next;
            return Ok(());
        }
        if FILE_KEYS.contains(&key) {
            return self.file.set(key, value);
        }
        self.settings.set(key, value)
    }

    /// The builder these settings make, to build with a sink of your own.
    pub fn builder(&self) -> NonBlockingBuilder {
        NonBlockingBuilder::from(self.settings.clone()).env_read(self.env_read)
    }

    /// The settings.
    pub fn settings(&self) -> &Settings {
        &self.settings
    }

    /// The configured sink, if `sink` was given, with the file options given on their
    /// own keys applied to it. Those need a `file://` sink.
    pub fn sink(&self) -> Option<SinkSpec> {
        let spec = self.sink.clone()?;
        Some(if self.file.is_empty() {
            spec
        } else {
            spec.with_file_options(&self.file)
                .unwrap_or_else(|spec| spec)
        })
    }

    /// Builds the pipeline into the configured sink (standard output if none was
    /// given). The error says which setting cannot work (file options on a sink that
    /// is not a file among them), or what could not be opened.
    pub fn build(self) -> Result<(NonBlocking, WorkerGuard), BuildError> {
        let spec = self.sink.clone().unwrap_or(SinkSpec::Stdout);
        let spec = if self.file.is_empty() {
            spec
        } else {
            spec.with_file_options(&self.file).map_err(|spec| {
                BuildError::Setting(SettingError::with_expected(
                    "sink",
                    spec.to_string(),
                    format!(
                        "a file:///PATH sink: {} are options of a file sink",
                        self.file.keys().join(", ")
                    ),
                ))
            })?
        };
        let sink = spec.open().map_err(BuildError::Io)?;
        self.builder().build(sink)
    }
}

/// The largest file [`Config::from_file`] reads: a configuration file is a few
/// hundred bytes; anything near this is not one.
pub(crate) const MAX_CONFIG_FILE_BYTES: u64 = 1 << 20;

/// The text of the regular file at `path`, at most `limit` bytes. The file is opened
/// first and the opened descriptor is checked (not the path, which could be swapped in
/// between), without blocking on a FIFO (unix: `O_NONBLOCK`; a FIFO is then refused as
/// not a regular file). At most `limit + 1` bytes are read, so a file that grows while
/// it is read is refused too. Every error names the path.
fn read_config_file(path: &std::path::Path, limit: u64) -> std::io::Result<String> {
    use std::io::{Error, ErrorKind, Read};
    let named = |e: Error| Error::new(e.kind(), format!("cannot read {}: {e}", path.display()));
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = options.open(path).map_err(named)?;
    let kind = file.metadata().map_err(named)?.file_type();
    if !kind.is_file() {
        return Err(Error::new(
            ErrorKind::InvalidInput,
            format!(
                "cannot read {}: it is {}, not a regular file",
                path.display(),
                file_kind(&kind)
            ),
        ));
    }
    let too_large = || {
        Error::new(
            ErrorKind::InvalidData,
            format!(
                "cannot read {}: a configuration file is at most {} bytes ({}), and this one is larger",
                path.display(),
                limit,
                crate::settings::units::format_size(limit)
            ),
        )
    };
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(named)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| {
        Error::new(
            ErrorKind::InvalidData,
            format!("cannot read {}: not UTF-8 text ({e})", path.display()),
        )
    })
}

/// What a file that is not a regular one is, for an error.
fn file_kind(kind: &std::fs::FileType) -> &'static str {
    if kind.is_dir() {
        return "a directory";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a FIFO";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_char_device() {
            return "a character device";
        }
        if kind.is_block_device() {
            return "a block device";
        }
    }
    "a special file"
}

/// The warnings to print: all, but an unknown variable's only the first time.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::edit_distance;
    use crate::settings::env::unread_variables;
    use crate::{Format, Level, Mode, Overflow};
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
        assert_eq!(c.sink(), Some(SinkSpec::SyslogTcp("127.0.0.1:514".into())));
        let k = c.builder().config();
        assert_eq!(
            (k.capacity_bytes, k.max_record_bytes, k.batch_bytes),
            (16 << 20, 4096, 32 << 10)
        );
        assert_eq!(k.buffered_lines_limit, Some(1000));
        assert_eq!(k.thread_ring_bytes, Some(256 << 10));
        assert_eq!(k.overflow, Overflow::BlockFor(Duration::from_millis(5)));
        assert_eq!(k.reserve_fraction, 0.25);
        assert_eq!(k.flush_interval, Duration::from_millis(50));
        assert_eq!(k.flush_level, Level::Warn);
        assert_eq!(k.shutdown_timeout, Duration::from_secs(2));
        assert_eq!(k.report_format, Some(Format::Logfmt));
        assert_eq!(k.spool.clone(), Some("/var/lib/app/app.spool".into()));
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
                .contains("capacity_bytes = \"8 lots\" is not valid: expected a size"),
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

    /// An entry point that does not read the environment names every `LOGLAG_*`
    /// setting it ignores and every misspelt variable, in `with_env`'s words, and
    /// leaves alone `LOGLAG_MODE` (which it reads) and the variables of loglag's
    /// tests, lab and clock.
    #[test]
    fn an_entry_point_without_the_environment_names_what_it_ignores() {
        let vars = [
            ("LOGLAG_CAPACITY_BYTES", "100"),
            ("LOGLAG_UNIT_TEST_MDOE", "off"),
            ("LOGLAG_MODE", "sync"),
            ("LOGLAG_REQUIRE_LAB", "1"),
            ("LOGLAG_CLOCK", "realtime"),
            ("PATH", "/bin"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let texts: Vec<String> = unread_variables(vars.clone().into_iter())
            .into_iter()
            .map(|w| w.text)
            .collect();
        assert_eq!(texts.len(), 2, "{texts:?}");
        assert!(
            texts[0].starts_with("loglag: LOGLAG_CAPACITY_BYTES is set, but this pipeline was built without reading the environment, so it is ignored"),
            "{texts:?}"
        );
        // A typo reads the same whichever entry point meets it.
        let (_, with_env) = Config::default().apply_vars(vars.into_iter());
        let typo = |ws: &[String]| {
            ws.iter()
                .find(|t| t.contains("LOGLAG_UNIT_TEST_MDOE"))
                .cloned()
                .unwrap()
        };
        let with_env: Vec<String> = with_env.into_iter().map(|w| w.text).collect();
        assert_eq!(typo(&texts), typo(&with_env));
        assert!(typo(&texts).contains("is not a loglag variable (did you mean"));
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
            first[1].contains("LOGLAG_BATCH_BYTES=\"0\" is not valid (expected a size"),
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

    /// `from_file`'s error, as text.
    fn from_file_error(path: &std::path::Path) -> String {
        match Config::from_file(path) {
            Ok(_) => panic!("{} was read as a configuration file", path.display()),
            Err(e) => e.to_string(),
        }
    }

    /// A FIFO is refused at once, naming it, instead of holding the start until a
    /// writer opens it. Run on a thread the test bounds: a hang fails it (and the FIFO
    /// is then opened for writing, to let the blocked open go).
    #[cfg(unix)]
    #[test]
    fn from_file_refuses_a_fifo_without_waiting_for_a_writer() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("loglag.toml");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let path = fifo.clone();
        std::thread::spawn(move || {
            let _ = tx.send(
                Config::from_file(&path)
                    .map(|_| ())
                    .map_err(|e| e.to_string()),
            );
        });
        let result = match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(result) => result,
            Err(_) => {
                let _writer = std::fs::OpenOptions::new().write(true).open(&fifo);
                panic!("from_file on a FIFO was still blocked after 30 s");
            }
        };
        let e = result.expect_err("a FIFO is not a configuration file");
        assert!(
            e.contains(&fifo.display().to_string()),
            "names the path: {e}"
        );
        assert!(e.contains("a FIFO, not a regular file"), "{e}");
    }

    /// `/dev/zero` never ends: it is refused as a device, not read until memory runs
    /// out.
    #[cfg(unix)]
    #[test]
    fn from_file_refuses_a_device_instead_of_reading_it_forever() {
        let e = from_file_error("/dev/zero".as_ref());
        assert!(e.contains("/dev/zero"), "names the path: {e}");
        assert!(e.contains("a character device, not a regular file"), "{e}");
    }

    #[test]
    fn from_file_refuses_a_directory_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let e = from_file_error(dir.path());
        assert!(
            e.contains(&dir.path().display().to_string()),
            "names the path: {e}"
        );
        #[cfg(unix)]
        assert!(e.contains("a directory, not a regular file"), "{e}");
    }

    /// A file over 1 MiB is refused naming the path and the limit; one of exactly
    /// 1 MiB (a comment) is read.
    #[test]
    fn from_file_refuses_a_file_over_one_mebibyte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("loglag.toml");
        let limit = MAX_CONFIG_FILE_BYTES as usize;
        let mut text = format!("flush_level = \"warn\"\n#{}\n", "x".repeat(limit));
        text.truncate(limit);
        std::fs::write(&path, &text).unwrap();
        let c = Config::from_file(&path).expect("a file of exactly the limit is read");
        assert_eq!(c.builder().config().flush_level, Level::Warn);
        text.push('x');
        std::fs::write(&path, &text).unwrap();
        let e = from_file_error(&path);
        assert!(
            e.contains(&path.display().to_string()),
            "names the path: {e}"
        );
        assert!(
            e.contains("at most 1048576 bytes (1MiB)"),
            "names the limit: {e}"
        );
    }
}
