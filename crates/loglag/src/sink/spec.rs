//! A sink named by a URL, as configuration files and `loglag emit` name them.

use std::io;
use std::path::PathBuf;

use super::{FdSink, Relp, Sink, Syslog};

/// Where records go, as a URL: `stdout` (or `-`), `stderr`, `file:///PATH`,
/// `fifo:///PATH`, `syslog+tcp://HOST:PORT`, `syslog+udp://HOST:PORT`,
/// `syslog+unix:///PATH`, `relp://HOST:PORT` (rsyslog's acknowledged protocol),
/// `otlp+http://HOST:PORT[/PATH]` (OTLP/HTTP protobuf; path
/// `/v1/logs` if none) and `otlp+http+json://HOST:PORT[/PATH]` (OTLP/HTTP JSON; also
/// `otlp+json://`); the OTLP
/// sinks need the `otlp` feature.
///
/// ```
/// let spec: loglag::SinkSpec = "syslog+tcp://127.0.0.1:514".parse()?;
/// assert_eq!(spec.to_string(), "syslog+tcp://127.0.0.1:514");
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SinkSpec {
    Stdout,
    Stderr,
    File(PathBuf),
    Fifo(PathBuf),
    /// RFC 5424 over TCP with octet counting.
    SyslogTcp(String),
    /// One datagram per record.
    SyslogUdp(String),
    /// A unix datagram socket (`/dev/log`).
    SyslogUnix(PathBuf),
    /// RFC 5424 over RELP, acknowledged.
    Relp(String),
    /// OTLP/HTTP logs to `http://{address}` (`HOST:PORT[/PATH]`), protobuf or JSON.
    Otlp {
        address: String,
        json: bool,
    },
}

const SCHEMES: &str = "stdout, stderr, file://PATH, fifo://PATH, syslog+tcp://HOST:PORT, syslog+udp://HOST:PORT, syslog+unix://PATH, relp://HOST:PORT, otlp+http://HOST:PORT[/PATH] or otlp+http+json://HOST:PORT[/PATH]";

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
    pub fn record_format(&self) -> Option<crate::Format> {
        match self {
            _ if self.is_syslog() => Some(crate::Format::Syslog),
            SinkSpec::Otlp { .. } => Some(crate::Format::Json),
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
            SinkSpec::Fifo(p) => Box::new(FdSink::fifo(p, None)?),
            SinkSpec::SyslogTcp(a) => Box::new(Syslog::tcp(a.as_str())?),
            SinkSpec::SyslogUdp(a) => Box::new(Syslog::udp(a.as_str())?),
            SinkSpec::SyslogUnix(p) => Box::new(Syslog::unix(p)),
            SinkSpec::Relp(a) => Box::new(Relp::tcp(a.as_str())?),
            #[cfg(feature = "otlp")]
            SinkSpec::Otlp { address, json } => {
                let sink = super::Otlp::http(&format!("http://{address}"))?;
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
    fn from_str(s: &str) -> Result<SinkSpec, String> {
        let s = s.trim();
        let path = |p: &str| {
            if p.is_empty() {
                Err(format!("{s:?} has no path: write file:///var/log/app.log"))
            } else {
                Ok(PathBuf::from(p))
            }
        };
        match s {
            "stdout" | "-" => Ok(SinkSpec::Stdout),
            "stderr" => Ok(SinkSpec::Stderr),
            _ => match s.split_once("://") {
                Some(("file", p)) => path(p).map(SinkSpec::File),
                Some(("fifo", p)) => path(p).map(SinkSpec::Fifo),
                Some(("syslog+unix", p)) => path(p).map(SinkSpec::SyslogUnix),
                Some((scheme @ ("syslog+tcp" | "syslog+udp" | "relp"), hostport)) => {
                    if hostport
                        .rsplit_once(':')
                        .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
                    {
                        return Err(format!(
                            "{s:?}: {scheme}:// needs HOST:PORT, e.g. {scheme}://127.0.0.1:514"
                        ));
                    }
                    Ok(match scheme {
                        "syslog+tcp" => SinkSpec::SyslogTcp(hostport.to_owned()),
                        "relp" => SinkSpec::Relp(hostport.to_owned()),
                        _ => SinkSpec::SyslogUdp(hostport.to_owned()),
                    })
                }
                Some((scheme @ ("otlp+http" | "otlp+http+json" | "otlp+json"), address)) => {
                    let hostport = address.split('/').next().unwrap_or("");
                    if hostport
                        .rsplit_once(':')
                        .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
                    {
                        return Err(format!(
                            "{s:?}: {scheme}:// needs HOST:PORT, e.g. {scheme}://127.0.0.1:4318/v1/logs"
                        ));
                    }
                    Ok(SinkSpec::Otlp {
                        address: address.to_owned(),
                        json: scheme != "otlp+http",
                    })
                }
                Some((scheme, _)) => Err(format!(
                    "unknown sink scheme {scheme:?}: expected {SCHEMES}"
                )),
                None => Err(format!("{s:?} is not a sink URL: expected {SCHEMES}")),
            },
        }
    }
}

impl std::fmt::Display for SinkSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SinkSpec::Stdout => f.write_str("stdout"),
            SinkSpec::Stderr => f.write_str("stderr"),
            SinkSpec::File(p) => write!(f, "file://{}", p.display()),
            SinkSpec::Fifo(p) => write!(f, "fifo://{}", p.display()),
            SinkSpec::SyslogTcp(a) => write!(f, "syslog+tcp://{a}"),
            SinkSpec::SyslogUdp(a) => write!(f, "syslog+udp://{a}"),
            SinkSpec::SyslogUnix(p) => write!(f, "syslog+unix://{}", p.display()),
            SinkSpec::Relp(a) => write!(f, "relp://{a}"),
            SinkSpec::Otlp { address, json } => {
                let scheme = if *json { "otlp+http+json" } else { "otlp+http" };
                write!(f, "{scheme}://{address}")
            }
        }
    }
}
