//! An OTLP/HTTP endpoint, parsed once: from a sink URL (`otlp+http://HOST:PORT/PATH`,
//! [`SinkSpec`](super::SinkSpec)) or from `http://HOST:PORT/PATH` (`Otlp::http`), and
//! written one way, `http://HOST:PORT/PATH`, where requests go.

use std::fmt;
use std::net::Ipv6Addr;

/// The path a URL without one gets: OTLP/HTTP's logs path.
const LOGS_PATH: &str = "/v1/logs";

/// Where an OTLP/HTTP sink posts: host, port and path, `http://HOST:PORT/PATH` as
/// its [`Display`](fmt::Display). A URL without a path (or with `/`) gets `/v1/logs`.
/// An IPv6 host is written in brackets (`http://[::1]:4318`). TLS is not built in:
/// `https://` is refused; send to a collector or agent on the host, which forwards
/// over TLS.
///
/// ```
/// let e: loglag::sink::Endpoint = "http://127.0.0.1:4318".parse()?;
/// assert_eq!((e.host(), e.port(), e.path()), ("127.0.0.1", 4318, "/v1/logs"));
/// assert_eq!(e.to_string(), "http://127.0.0.1:4318/v1/logs");
/// # Ok::<(), String>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// A name or address; an IPv6 address without its brackets.
    host: String,
    port: u16,
    /// Starts with `/`.
    path: String,
    /// Whether the path is the one given to a URL without one, so that a sink URL
    /// reads back as it was written.
    default_path: bool,
}

const EXAMPLE: &str = "127.0.0.1:4318/v1/logs";

impl Endpoint {
    /// The host: a name or an address (an IPv6 one without its brackets).
    pub fn host(&self) -> &str {
        &self.host
    }

    /// The port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The path, `/v1/logs` unless another was given.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `HOST:PORT[/PATH]` (what follows a scheme's `://`) as `whole`, the text the
    /// user wrote, names it in an error (redacted: `user:***@`); `scheme`
    /// (`otlp+http`, `http`) is the one the example in an error is given with.
    /// Credentials (`user:password@`) are refused: the sink sends none.
    pub(crate) fn parse_address(
        address: &str,
        scheme: &str,
        whole: &str,
    ) -> Result<Endpoint, String> {
        let whole = super::spec::redacted(whole);
        let before_query = address.split_once('?').map_or(address, |(a, _)| a);
        if before_query.contains('@') {
            return Err(super::spec::no_credentials(&whole, scheme));
        }
        let (hostport, path) = match address.find('/') {
            Some(i) => (&address[..i], &address[i..]),
            None => (address, ""),
        };
        let (host, port) = split_host_port(hostport).map_err(|why| {
            format!("{whole:?}: {scheme}:// needs HOST:PORT ({why}), e.g. {scheme}://{EXAMPLE}")
        })?;
        let default_path = path.is_empty() || path == "/";
        Ok(Endpoint {
            host,
            port,
            path: if default_path { LOGS_PATH } else { path }.to_owned(),
            default_path,
        })
    }

    /// `HOST:PORT[/PATH]` as a sink URL writes it: the path only if one was given.
    pub(crate) fn address(&self) -> Address<'_> {
        Address(self)
    }

    fn host_port(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.host.contains(':') {
            write!(f, "[{}]:{}", self.host, self.port)
        } else {
            write!(f, "{}:{}", self.host, self.port)
        }
    }
}

/// [`Endpoint::address`].
pub(crate) struct Address<'a>(&'a Endpoint);

impl fmt::Display for Address<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.host_port(f)?;
        if !self.0.default_path {
            f.write_str(&self.0.path)?;
        }
        Ok(())
    }
}

/// `HOST:PORT`, or why not.
fn split_host_port(hostport: &str) -> Result<(String, u16), String> {
    let (host, port) = if let Some(bracketed) = hostport.strip_prefix('[') {
        let Some((v6, rest)) = bracketed.split_once(']') else {
            return Err(format!("{hostport:?} has no closing bracket"));
        };
        if v6.parse::<Ipv6Addr>().is_err() {
            return Err(format!("[{v6}] is not an IPv6 address"));
        }
        let Some(port) = rest.strip_prefix(':') else {
            return Err(format!("no port after [{v6}]"));
        };
        (v6, port)
    } else {
        let Some((host, port)) = hostport.rsplit_once(':') else {
            return Err(format!("no port in {hostport:?}"));
        };
        if host.contains(':') {
            return Err(format!(
                "an IPv6 address is written in brackets, [{host}]:{port}"
            ));
        }
        (host, port)
    };
    if host.is_empty() {
        return Err("no host".to_owned());
    }
    if host
        .chars()
        .any(|c| c.is_whitespace() || c.is_control() || matches!(c, '[' | ']'))
    {
        return Err(format!("{host:?} is not a host name or address"));
    }
    // Digits only: no sign, and at most 65535.
    let port = match port.bytes().all(|b| b.is_ascii_digit()) {
        true => port.parse::<u16>().ok(),
        false => None,
    }
    .ok_or_else(|| format!("port {port:?} is not a number from 0 to 65535"))?;
    Ok((host.to_owned(), port))
}

impl std::str::FromStr for Endpoint {
    type Err = String;

    /// `http://HOST:PORT[/PATH]`; `https://` is refused (TLS is not built in).
    fn from_str(s: &str) -> Result<Endpoint, String> {
        let url = s.trim();
        let shown = super::spec::redacted(url);
        if url.starts_with("https://") {
            return Err(format!(
                "{shown:?}: TLS is not built in; send to a collector or agent on this host (http://127.0.0.1:4318), which forwards over TLS"
            ));
        }
        let Some(address) = url.strip_prefix("http://") else {
            return Err(format!(
                "{shown:?} is not an OTLP/HTTP endpoint: write http://HOST:PORT/v1/logs"
            ));
        };
        Endpoint::parse_address(address, "http", url)
    }
}

impl fmt::Display for Endpoint {
    /// `http://HOST:PORT/PATH`, where requests go.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("http://")?;
        self.host_port(f)?;
        f.write_str(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(s: &str) -> Result<String, String> {
        s.parse::<Endpoint>().map(|e| e.to_string())
    }

    #[test]
    fn endpoints_are_checked_and_get_the_logs_path() {
        assert_eq!(
            url("http://127.0.0.1:4318").unwrap(),
            "http://127.0.0.1:4318/v1/logs"
        );
        assert_eq!(
            url(" http://127.0.0.1:4318/ ").unwrap(),
            "http://127.0.0.1:4318/v1/logs"
        );
        assert_eq!(
            url("http://collector:4318/custom/logs").unwrap(),
            "http://collector:4318/custom/logs"
        );
        let e: Endpoint = "http://collector:04318/custom/logs".parse().unwrap();
        assert_eq!(
            (e.host(), e.port(), e.path()),
            ("collector", 4318, "/custom/logs")
        );
        let tls = url("https://x:4318").unwrap_err();
        assert!(tls.contains("TLS is not built in"), "{tls}");
        assert!(tls.contains("\"https://x:4318\""), "names the value: {tls}");
        let scheme = url("127.0.0.1:4318").unwrap_err();
        assert!(scheme.contains("http://HOST:PORT"), "{scheme}");
        for bad in [
            "http://host/v1/logs",
            "http://:4318",
            "http://host:",
            "http://host:x",
            "http://host:+1",
            "http://host:65536",
            "http://::1:4318",
            "http://[::1]",
            "http://[::1:4318",
            "http://[nope]:4318",
            "http://a b:4318",
        ] {
            let e = url(bad).unwrap_err();
            assert!(e.contains("HOST:PORT"), "{bad}: {e}");
            assert!(e.contains(&format!("{bad:?}")), "names the value: {e}");
            assert!(e.contains("http://127.0.0.1:4318/v1/logs"), "{e}");
        }
    }

    #[test]
    fn ipv6_hosts_are_bracketed() {
        let e: Endpoint = "http://[::1]:4318".parse().unwrap();
        assert_eq!((e.host(), e.port(), e.path()), ("::1", 4318, "/v1/logs"));
        assert_eq!(e.to_string(), "http://[::1]:4318/v1/logs");
        assert_eq!(e.address().to_string(), "[::1]:4318");
    }

    #[test]
    fn a_sink_address_reads_back_as_written() {
        for (address, written) in [
            ("h:1", "h:1"),
            ("h:1/", "h:1"),
            ("h:1/v1/logs", "h:1/v1/logs"),
            ("[fe80::1]:4318/x?y=z", "[fe80::1]:4318/x?y=z"),
        ] {
            let e = Endpoint::parse_address(address, "otlp+http", address).unwrap();
            assert_eq!(e.address().to_string(), written);
            let again = Endpoint::parse_address(written, "otlp+http", written).unwrap();
            assert_eq!(again, e, "{address}");
        }
        let e = Endpoint::parse_address("h", "otlp+http", "otlp+http://h").unwrap_err();
        assert!(
            e.starts_with("\"otlp+http://h\": otlp+http:// needs HOST:PORT"),
            "{e}"
        );
        assert!(e.contains("otlp+http://127.0.0.1:4318/v1/logs"), "{e}");
    }
}
