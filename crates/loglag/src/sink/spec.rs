//! A sink named by a URL, as configuration files and `loglag emit` name them.

use std::io;
use std::path::PathBuf;

use super::{Endpoint, FdSink, Relp, Sink, Syslog};

/// Where records go, as a URL: `stdout` (or `-`), `stderr`, `file:///PATH`,
/// `fifo:///PATH`, `syslog+tcp://HOST:PORT`, `syslog+udp://HOST:PORT`,
/// `syslog+unix:///PATH`, `relp://HOST:PORT` (rsyslog's acknowledged protocol),
/// `otlp+http://HOST:PORT[/PATH]` (OTLP/HTTP protobuf; path
/// `/v1/logs` if none) and `otlp+http+json://HOST:PORT[/PATH]` (OTLP/HTTP JSON; also
/// `otlp+json://`); the OTLP
/// sinks need the `otlp` feature.
///
/// `file://`, `fifo://` and `syslog+unix://` URLs name a local file as RFC 8089 says:
/// the host is empty (`file:///var/log/app.log`) or `localhost`
/// (`file://localhost/var/log/app.log`, the same file), any other host is refused, and
/// the path is percent-decoded (`file:///var/log/my%20app.log` is `my app.log`; a
/// malformed escape or a NUL byte is refused). Written back ([`Display`]), the
/// characters a URL path cannot hold as they are (space, `%`, `?`, `#`, control
/// characters) are percent-encoded, so that the text parses back to the same sink. A
/// relative path has no URL: `file://logs/app.log` names the host `logs` and is
/// refused.
///
/// A `file://` URL may carry the options of a rolling file in its query: `rotate`,
/// `max_file_size`, `keep`, `compress` ([`FileOptions`]). In a
/// [`Config`](crate::Config), the query may also hold any other setting.
///
/// ```
/// let spec: loglag::sink::SinkSpec = "file:///var/log/app.log?rotate=daily&keep=7".parse()?;
/// assert_eq!(spec.to_string(), "file:///var/log/app.log?rotate=daily&keep=7");
/// let spec: loglag::sink::SinkSpec = "syslog+tcp://127.0.0.1:514".parse()?;
/// assert_eq!(spec.to_string(), "syslog+tcp://127.0.0.1:514");
/// let spec: loglag::sink::SinkSpec = "file://localhost/var/log/my%20app.log".parse()?;
/// assert_eq!(spec, loglag::sink::SinkSpec::File("/var/log/my app.log".into()));
/// assert_eq!(spec.to_string(), "file:///var/log/my%20app.log");
/// # Ok::<(), String>(())
/// ```
///
/// [`Display`]: std::fmt::Display
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SinkSpec {
    Stdout,
    Stderr,
    File(PathBuf),
    /// A file that rotates (`file:///var/log/app.log?rotate=daily&keep=7`): the live
    /// file keeps the name, rotated ones get a date and counter (`app.log.2026-12-01`,
    /// [`Naming::Fixed`](crate::rolling::Naming::Fixed)). Needs the `rolling` feature.
    RollingFile {
        path: PathBuf,
        options: FileOptions,
    },
    Fifo(PathBuf),
    /// RFC 5424 over TCP with octet counting.
    SyslogTcp(String),
    /// One datagram per record.
    SyslogUdp(String),
    /// A unix datagram socket (`/dev/log`).
    SyslogUnix(PathBuf),
    /// RFC 5424 over RELP, acknowledged.
    Relp(String),
    /// OTLP/HTTP logs to `endpoint` (`HOST:PORT[/PATH]` in the URL), protobuf or
    /// JSON.
    Otlp {
        endpoint: Endpoint,
        json: bool,
    },
}

const SCHEMES: &str = "stdout, stderr, file:///PATH, fifo:///PATH, syslog+tcp://HOST:PORT, syslog+udp://HOST:PORT, syslog+unix:///PATH, relp://HOST:PORT, otlp+http://HOST:PORT[/PATH] or otlp+http+json://HOST:PORT[/PATH]";

impl SinkSpec {
    /// Whether records for it should be RFC 5424 messages.
    pub fn is_syslog(&self) -> bool {
        matches!(
            self,
            SinkSpec::SyslogTcp(_)
                | SinkSpec::SyslogUdp(_)
                | SinkSpec::SyslogUnix(_)
                | SinkSpec::Relp(_)
        )
    }

    /// The format its records must have, where it needs one: RFC 5424 messages for
    /// syslog, JSON for OTLP (its fields become the LogRecord's).
    pub fn record_format(&self) -> Option<crate::record::Format> {
        match self {
            _ if self.is_syslog() => Some(crate::record::Format::Syslog),
            SinkSpec::Otlp { .. } => Some(crate::record::Format::Json),
            _ => None,
        }
    }

    /// Opens it: a file is appended to, a FIFO opened for writing, a collector's
    /// address resolved (connected at the first batch).
    pub fn open(&self) -> io::Result<Box<dyn Sink>> {
        Ok(match self {
            SinkSpec::Stdout => Box::new(FdSink::stdout()),
            SinkSpec::Stderr => Box::new(FdSink::stderr()),
            SinkSpec::File(p) => Box::new(FdSink::append(p)?),
            SinkSpec::RollingFile { path, options } => options.open(path)?,
            SinkSpec::Fifo(p) => Box::new(FdSink::fifo(p, None)?),
            SinkSpec::SyslogTcp(a) => Box::new(Syslog::tcp(a.as_str())?),
            SinkSpec::SyslogUdp(a) => Box::new(Syslog::udp(a.as_str())?),
            #[cfg(not(unix))]
            SinkSpec::SyslogUnix(p) => return Err(super::syslog::no_unix_sockets(p)),
            #[cfg(unix)]
            SinkSpec::SyslogUnix(p) => Box::new(Syslog::unix(p)),
            SinkSpec::Relp(a) => Box::new(Relp::tcp(a.as_str())?),
            #[cfg(feature = "otlp")]
            SinkSpec::Otlp { endpoint, json } => {
                let sink = super::Otlp::new(endpoint.clone());
                Box::new(if *json { sink.json() } else { sink })
            }
            #[cfg(not(feature = "otlp"))]
            SinkSpec::Otlp { .. } => {
                return Err(io::Error::new(
                    io::ErrorKind::Unsupported,
                    format!("{self}: loglag was built without its `otlp` feature"),
                ))
            }
        })
    }
}

impl std::str::FromStr for SinkSpec {
    type Err = String;
    /// A sink URL; a query may hold only the sink's own options (a `file://` sink's).
    fn from_str(s: &str) -> Result<SinkSpec, String> {
        let (spec, rest) = SinkSpec::parse_with_query(s).map_err(|e| match e.key.as_str() {
            "sink" => e.expected,
            _ => e.to_string(),
        })?;
        match rest.first() {
            None => Ok(spec),
            Some((key, _)) => Err(format!(
                "{:?}: {key} is not an option of this sink; a pipeline setting in a URL is read by loglag::Config::from_url",
                redacted(s)
            )),
        }
    }
}

impl SinkSpec {
    /// The sink of `url` with its own options taken from the query, and the query's
    /// other `key=value` pairs, in order, for the caller to apply (a
    /// [`Config`](crate::Config)'s settings).
    pub(crate) fn parse_with_query(
        url: &str,
    ) -> Result<(SinkSpec, Vec<(String, String)>), crate::settings::SettingError> {
        let url = url.trim();
        // The URL as errors show it: credentials and secret-looking values masked.
        let shown = redacted(url);
        let sink_error =
            |e: String| crate::settings::SettingError::with_expected("sink", shown.as_str(), e);
        // User information ends at an `@` before the first `/`: checked on the whole URL,
        // before the query is split off at the first `?`, which may lie inside a
        // password (`user:pw?rest@host`) and would show its first part.
        if let Some((scheme, rest)) = url.split_once("://") {
            let authority = &rest[..rest.find('/').unwrap_or(rest.len())];
            if !rest.starts_with('/') && authority.contains('@') {
                return Err(sink_error(no_credentials(&shown, scheme)));
            }
        }
        let (base, query) = match url.split_once('?') {
            Some((base, query)) => (base, Some(query)),
            None => (url, None),
        };
        let mut spec = SinkSpec::parse_base(base).map_err(sink_error)?;
        let mut rest = Vec::new();
        let mut file = FileOptions::default();
        for pair in query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter(|p| !p.is_empty())
        {
            let Some((key, value)) = pair.split_once('=') else {
                let pair = if looks_secret(pair) { "***" } else { pair };
                return Err(sink_error(format!(
                    "{pair:?} in the query is not key=value"
                )));
            };
            if crate::settings::FILE_KEYS.contains(&key) {
                file.set(key, value)?;
            } else {
                rest.push((key.to_owned(), value.to_owned()));
            }
        }
        if !file.is_empty() {
            spec = spec.with_file_options(&file).map_err(|spec| {
                sink_error(format!(
                    "{} are options of a file:// sink, not of {spec}",
                    file.keys().join(", ")
                ))
            })?;
        }
        Ok((spec, rest))
    }

    /// This sink with `options` applied: a file becomes a rolling file, a rolling file
    /// takes the options given on top of its own. Any other sink comes back as the
    /// error: it has no such options.
    pub(crate) fn with_file_options(self, options: &FileOptions) -> Result<SinkSpec, SinkSpec> {
        match self {
            SinkSpec::File(path) => Ok(SinkSpec::RollingFile {
                path,
                options: options.clone(),
            }),
            SinkSpec::RollingFile {
                path,
                options: mut own,
            } => {
                own.merge(options);
                Ok(SinkSpec::RollingFile { path, options: own })
            }
            other => Err(other),
        }
    }

    /// `s` is the URL without its query. Its errors show it [`redacted`].
    fn parse_base(s: &str) -> Result<SinkSpec, String> {
        let s = s.trim();
        let shown = redacted(s);
        match s {
            "stdout" | "-" => Ok(SinkSpec::Stdout),
            "stderr" => Ok(SinkSpec::Stderr),
            _ => match s.split_once("://") {
                Some(("file", p)) => local_path("file", p, &shown).map(SinkSpec::File),
                Some(("fifo", p)) => local_path("fifo", p, &shown).map(SinkSpec::Fifo),
                Some(("syslog+unix", p)) => {
                    local_path("syslog+unix", p, &shown).map(SinkSpec::SyslogUnix)
                }
                Some((scheme @ ("syslog+tcp" | "syslog+udp" | "relp"), hostport)) => {
                    if hostport.contains('@') {
                        return Err(no_credentials(&shown, scheme));
                    }
                    if hostport
                        .rsplit_once(':')
                        .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
                    {
                        return Err(format!(
                            "{shown:?}: {scheme}:// needs HOST:PORT, e.g. {scheme}://127.0.0.1:514"
                        ));
                    }
                    Ok(match scheme {
                        "syslog+tcp" => SinkSpec::SyslogTcp(hostport.to_owned()),
                        "relp" => SinkSpec::Relp(hostport.to_owned()),
                        _ => SinkSpec::SyslogUdp(hostport.to_owned()),
                    })
                }
                Some((scheme @ ("otlp+http" | "otlp+http+json" | "otlp+json"), address)) => {
                    Ok(SinkSpec::Otlp {
                        endpoint: Endpoint::parse_address(address, scheme, &shown)?,
                        json: scheme != "otlp+http",
                    })
                }
                Some((scheme, _)) => Err(format!(
                    "unknown sink scheme {scheme:?}: expected {SCHEMES}"
                )),
                None => Err(format!("{shown:?} is not a sink URL: expected {SCHEMES}")),
            },
        }
    }
}

/// The file a `scheme://` URL names, `rest` being what follows `://` and `whole` the
/// URL as errors show it ([`redacted`]), as RFC 8089 reads it: an empty host or `localhost` (any case),
/// then an absolute path, percent-decoded. On Windows, `file://C:/logs/app.log` (a
/// drive where the host would be) names that drive too.
fn local_path(scheme: &str, rest: &str, whole: &str) -> Result<PathBuf, String> {
    let no_path = || format!("{whole:?} has no path: write {scheme}:///var/log/app.log");
    if rest.is_empty() {
        return Err(no_path());
    }
    #[cfg(windows)]
    if has_drive(rest) {
        return decoded_path(rest, whole).map(|p| url_path(&p));
    }
    let (host, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    if !host.is_empty() && !host.eq_ignore_ascii_case("localhost") {
        let host = redacted(host);
        return Err(format!(
            "{scheme}:// URLs name a local file: host {host:?} is not supported; write {scheme}:///PATH (an absolute path), e.g. {scheme}:///var/log/app.log"
        ));
    }
    if path.is_empty() {
        return Err(no_path());
    }
    decoded_path(path, whole).map(|p| url_path(&p))
}

/// The refusal of credentials (`user:password@`) in `scheme`'s URL, shown as `whole`
/// ([`redacted`]): no sink sends any, and an `@` is taken for them.
pub(crate) fn no_credentials(whole: &str, scheme: &str) -> String {
    format!(
        "{whole:?}: credentials (user:password@) are not supported in a {scheme}:// URL: this sink sends none; give the collector's HOST:PORT alone (an @ elsewhere is written %40)"
    )
}

/// `url` as an error or a message may show it: the password of its userinfo masked
/// (`user:***@host`), a userinfo without one masked whole (`***@host`: a token is
/// often given as the user), and the value of every query key that looks secret
/// (`token`, `password`, `secret`, `key`, `auth`, ...) masked (`token=***`). What
/// follows `://` up to the last `@` before the query is taken as userinfo, so that a
/// password holding a `/` is masked too; a URL whose path starts at once
/// (`file:///...`) has none.
pub(crate) fn redacted(url: &str) -> String {
    let (scheme, rest) = match url.find("://") {
        Some(i) => url.split_at(i + 3),
        None => ("", url),
    };
    let mut out = String::with_capacity(url.len());
    out.push_str(scheme);
    // The user information ends at the last `@` of the whole URL, not of the part
    // before the first `?`: a password may hold an unescaped `?` or `/`. A query value
    // holding an `@` hides the host too, which an error can afford.
    let rest = match rest.rfind('@') {
        Some(at) if !rest.starts_with('/') => {
            match rest[..at].split_once(':') {
                Some((user, _)) if !user.contains(['/', '?']) => {
                    out.push_str(user);
                    out.push_str(":***");
                }
                _ => out.push_str("***"),
            }
            &rest[at..]
        }
        _ => rest,
    };
    let (base, query) = match rest.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (rest, None),
    };
    out.push_str(base);
    if let Some(query) = query {
        out.push('?');
        let pairs: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) if looks_secret(key) => format!("{key}=***"),
                None if looks_secret(pair) => "***".to_owned(),
                _ => pair.to_owned(),
            })
            .collect();
        out.push_str(&pairs.join("&"));
    }
    out
}

/// Whether a query key (or a bare query word) names a secret: no setting's key does.
pub(crate) fn looks_secret(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    [
        "token",
        "pass",
        "pwd",
        "secret",
        "key",
        "auth",
        "credential",
        "signature",
        "session",
        "cookie",
    ]
    .iter()
    .any(|word| key.contains(word))
}

/// Whether `p` starts with a drive letter (`C:`).
#[cfg(windows)]
fn has_drive(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

/// A URL path percent-decoded into a file path. A `%` not followed by two hex digits,
/// and a NUL byte (no file name holds one), are refused. Bytes that are not UTF-8 are
/// a unix file name's right; Windows names are UTF-16, so there they are refused.
fn decoded_path(p: &str, whole: &str) -> Result<PathBuf, String> {
    let mut bytes = Vec::with_capacity(p.len());
    let mut rest = p.as_bytes();
    while let Some((&b, tail)) = rest.split_first() {
        if b != b'%' {
            bytes.push(b);
            rest = tail;
            continue;
        }
        let hex = |i: usize| tail.get(i).and_then(|d| (*d as char).to_digit(16));
        let (Some(hi), Some(lo)) = (hex(0), hex(1)) else {
            let escape: String = String::from_utf8_lossy(&tail[..tail.len().min(2)]).into();
            return Err(format!(
                "{whole:?}: %{escape} is not a percent escape (% and two hex digits; write %25 for a %)"
            ));
        };
        bytes.push((hi * 16 + lo) as u8);
        rest = &tail[2..];
    }
    if bytes.contains(&0) {
        return Err(format!(
            "{whole:?}: a file path cannot hold a NUL byte (%00)"
        ));
    }
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStringExt;
        Ok(PathBuf::from(std::ffi::OsString::from_vec(bytes)))
    }
    #[cfg(not(unix))]
    {
        String::from_utf8(bytes).map(PathBuf::from).map_err(|_| {
            format!("{whole:?}: the path decodes to bytes that are not UTF-8, which no file name here holds")
        })
    }
}

/// A URL's path as a file path. On Windows `file:///C:/logs/app.log` has the path
/// `/C:/logs/app.log`, which is `C:/logs/app.log` (`file://C:/logs/app.log` is too).
fn url_path(p: &std::path::Path) -> PathBuf {
    #[cfg(windows)]
    if let Some(rest) = p.to_str().and_then(|p| p.strip_prefix('/')) {
        if has_drive(rest) {
            return PathBuf::from(rest);
        }
    }
    p.to_owned()
}

/// A file path as a URL path writes it: what a URL path cannot hold as it is (space,
/// `%`, `?`, `#`, control characters, bytes that are not UTF-8) percent-encoded, the
/// rest as it is, so that [`decoded_path`] gives the same path back.
struct UrlPath<'a>(&'a std::path::Path);

impl std::fmt::Display for UrlPath<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        #[cfg(unix)]
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(self.0.as_os_str());
        #[cfg(not(unix))]
        let lossy = self.0.to_string_lossy();
        #[cfg(not(unix))]
        let bytes = lossy.as_bytes();
        for chunk in bytes.utf8_chunks() {
            for c in chunk.valid().chars() {
                if c.is_control() || matches!(c, ' ' | '%' | '?' | '#') {
                    let mut buf = [0; 4];
                    for b in c.encode_utf8(&mut buf).bytes() {
                        write!(f, "%{b:02X}")?;
                    }
                } else {
                    write!(f, "{c}")?;
                }
            }
            for b in chunk.invalid() {
                write!(f, "%{b:02X}")?;
            }
        }
        Ok(())
    }
}

impl std::fmt::Display for SinkSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SinkSpec::Stdout => f.write_str("stdout"),
            SinkSpec::Stderr => f.write_str("stderr"),
            SinkSpec::File(p) => write!(f, "file://{}", UrlPath(p)),
            SinkSpec::RollingFile { path, options } => {
                write!(f, "file://{}?{}", UrlPath(path), options.query())
            }
            SinkSpec::Fifo(p) => write!(f, "fifo://{}", UrlPath(p)),
            SinkSpec::SyslogTcp(a) => write!(f, "syslog+tcp://{a}"),
            SinkSpec::SyslogUdp(a) => write!(f, "syslog+udp://{a}"),
            SinkSpec::SyslogUnix(p) => write!(f, "syslog+unix://{}", UrlPath(p)),
            SinkSpec::Relp(a) => write!(f, "relp://{a}"),
            SinkSpec::Otlp { endpoint, json } => {
                let scheme = if *json { "otlp+http+json" } else { "otlp+http" };
                write!(f, "{scheme}://{}", endpoint.address())
            }
        }
    }
}

/// The rotations with names, and their periods in seconds. A named one rotates as
/// tracing-appender's does (its date format); any other period is `Rotation::every`.
const NAMED_PERIODS: [(&str, u64); 4] = [
    ("minutely", 60),
    ("hourly", 3600),
    ("daily", 86_400),
    ("weekly", 7 * 86_400),
];

/// A rolling file's options as a URL query or `Config` keys give them. Each is a row
/// of [`SETTINGS`](crate::SETTINGS).
///
/// | key | means | builder |
/// |---|---|---|
/// | `rotate` | `never`, `minutely`, `hourly`, `daily`, `weekly`, or any period (`15m`, `6h`) | [`Builder::rotation`](crate::rolling::Builder::rotation) |
/// | `max_file_size` | also rotate before a batch would take the file past this size | [`Builder::max_file_size`](crate::rolling::Builder::max_file_size) |
/// | `keep` | rotated files kept besides the live one (logrotate's `rotate N`) | [`Builder::max_log_files`](crate::rolling::Builder::max_log_files)`(keep + 1)` |
/// | `compress` | `gzip` or `none` | [`Builder::compression`](crate::rolling::Builder::compression) |
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FileOptions {
    /// `None`: not given; `Some(None)`: `never`; else the period.
    rotate: Option<Option<std::time::Duration>>,
    max_file_size: Option<u64>,
    keep: Option<usize>,
    gzip: Option<bool>,
}

impl FileOptions {
    /// Sets one option from its text, checked: the error names the key and what is
    /// valid, as every setting's does.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), crate::settings::SettingError> {
        let bad = || crate::settings::SettingError::new(key, value);
        let text = value.trim();
        match key {
            "rotate" => {
                let name = text.to_ascii_lowercase();
                let named = NAMED_PERIODS.iter().find(|(n, _)| *n == name);
                let period = match (name.as_str(), named) {
                    ("never", _) => None,
                    (_, Some(&(_, secs))) => Some(secs),
                    _ => {
                        let d = crate::settings::units::parse_duration(text).map_err(|_| bad())?;
                        // A rotation is at least a second and at most a year: names
                        // carry seconds at the finest.
                        if d < std::time::Duration::from_secs(1)
                            || d > crate::settings::units::MAX_CONFIGURED_DURATION
                        {
                            return Err(bad());
                        }
                        Some(d.as_secs())
                    }
                };
                self.rotate = Some(period.map(std::time::Duration::from_secs));
            }
            "max_file_size" => {
                let n = crate::settings::units::parse_size(text).map_err(|_| bad())?;
                if n == 0 {
                    return Err(bad());
                }
                self.max_file_size = Some(n);
            }
            "keep" => {
                let n: usize = text.parse().map_err(|_| bad())?;
                if n == 0 || n == usize::MAX {
                    return Err(bad());
                }
                self.keep = Some(n);
            }
            "compress" => {
                self.gzip = Some(match text.to_ascii_lowercase().as_str() {
                    "gzip" | "gz" => true,
                    "none" | "no" | "false" => false,
                    _ => return Err(bad()),
                })
            }
            _ => return Err(crate::settings::SettingError::unknown(key, value)),
        }
        Ok(())
    }

    /// Whether no option was given.
    pub fn is_empty(&self) -> bool {
        self == &FileOptions::default()
    }

    /// The keys given.
    pub(crate) fn keys(&self) -> Vec<&'static str> {
        let given = [
            self.rotate.is_some(),
            self.max_file_size.is_some(),
            self.keep.is_some(),
            self.gzip.is_some(),
        ];
        crate::settings::FILE_KEYS
            .iter()
            .zip(given)
            .filter_map(|(k, g)| g.then_some(*k))
            .collect()
    }

    /// `other`'s options over these.
    fn merge(&mut self, other: &FileOptions) {
        self.rotate = other.rotate.or(self.rotate);
        self.max_file_size = other.max_file_size.or(self.max_file_size);
        self.keep = other.keep.or(self.keep);
        self.gzip = other.gzip.or(self.gzip);
    }

    /// The options as a URL query, in the table's order.
    fn query(&self) -> String {
        let mut out = Vec::new();
        if let Some(rotate) = self.rotate {
            out.push(format!(
                "rotate={}",
                match rotate.map(|d| d.as_secs()) {
                    None => "never".to_owned(),
                    Some(s) => match NAMED_PERIODS.iter().find(|(_, secs)| *secs == s) {
                        Some((name, _)) => (*name).to_owned(),
                        None => format!("{s}s"),
                    },
                }
            ));
        }
        if let Some(n) = self.max_file_size {
            out.push(format!(
                "max_file_size={}",
                crate::settings::units::format_size(n)
            ));
        }
        if let Some(n) = self.keep {
            out.push(format!("keep={n}"));
        }
        if let Some(gzip) = self.gzip {
            out.push(format!("compress={}", if gzip { "gzip" } else { "none" }));
        }
        out.join("&")
    }

    /// Opens the rolling file at `path`.
    #[cfg(feature = "rolling")]
    fn open(&self, path: &std::path::Path) -> io::Result<Box<dyn Sink>> {
        use crate::sink::rolling::{Compression, Naming, Period, RollingFile, RollingSpec};
        let name = path
            .file_name()
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{}: a rolling file needs a file name", path.display()),
                )
            })?
            .to_string_lossy()
            .into_owned();
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
            _ => PathBuf::from("."),
        };
        let named = [
            Period::Minutely,
            Period::Hourly,
            Period::Daily,
            Period::Weekly,
        ];
        let period = self.rotate.flatten().map(|d| {
            match NAMED_PERIODS
                .iter()
                .position(|(_, secs)| *secs == d.as_secs())
            {
                Some(i) => named[i],
                None => Period::Every(std::time::Duration::from_secs(d.as_secs())),
            }
        });
        let spec = RollingSpec {
            prefix: name,
            naming: Naming::Fixed,
            period,
            max_bytes: self.max_file_size,
            // `keep` counts rotated files, as `RollingSpec` does (tracing-appender's
            // `max_log_files` counts the live one too).
            keep_files: self.keep,
            compression: (self.gzip == Some(true)).then_some(Compression::Gzip),
            ..RollingSpec::new(dir)
        };
        Ok(Box::new(RollingFile::open(spec)?))
    }

    #[cfg(not(feature = "rolling"))]
    fn open(&self, path: &std::path::Path) -> io::Result<Box<dyn Sink>> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "file://{}?{}: loglag was built without its `rolling` feature",
                path.display(),
                self.query()
            ),
        ))
    }
}

#[cfg(test)]
mod tests;
