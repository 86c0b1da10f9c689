//! The API's untimed side channel: a plain TCP listener on its own OS thread, so it
//! answers even while the API's event loop is blocked in a log write.
//!
//! Protocol: connect, send one line `TOKEN COMMAND` (`stats`, `reset`, `flush` or
//! `outage MS`), read
//! one JSON line back. The token is random per API process and printed only in its ready
//! line, so another local user cannot reset or read the counters; each connection has
//! its own thread, a read timeout and a bounded line, so an idle or hostile client
//! cannot stall `stats` or grow memory.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::sys::clock::mono_ns;

/// What the API has produced and written, shared by handlers, writer threads and the
/// control thread.
#[derive(Default)]
pub struct Produced {
    /// Log bytes handed to the logger (counted when the handler hands them off).
    pub handed_off_bytes: AtomicU64,
    /// Requests served.
    pub requests: AtomicU64,
    /// Records handed to the logger.
    pub records: AtomicU64,
    /// `write` calls on the log sink (what the process's own log writes cost in
    /// syscalls, apart from its socket writes).
    pub write_calls: AtomicU64,
    /// Total nanoseconds spent building records, and how many were built.
    pub gen_ns: AtomicU64,
    pub gen_count: AtomicU64,
    /// Total nanoseconds spent in the logger call, and how many calls.
    pub log_ns: AtomicU64,
    pub log_count: AtomicU64,
    /// Records dropped by the logger, and times its queue was found full.
    pub dropped: AtomicU64,
    pub queue_full: AtomicU64,
    /// Lines a network condition's collector wrote that are the logger's own in-band
    /// reports, not records the API logged.
    pub report_lines: AtomicU64,
    written: Mutex<Written>,
    /// Drops and queue-full events a logger keeps itself (loglag, tracing-appender).
    drop_source: Mutex<Option<DropSource>>,
}

/// What a logger that keeps its own counters reports.
#[derive(Debug, Clone, Copy, Default)]
pub struct LoggerCounts {
    pub dropped: u64,
    pub queue_full: u64,
    /// How long the oldest record still queued has waited, where the logger knows.
    pub oldest_queued_us: Option<u64>,
}

/// Reads a logger's own counters (loglag, tracing-appender).
pub type DropSource = Box<dyn Fn() -> Option<LoggerCounts> + Send + Sync>;

#[derive(Debug, Default)]
struct Written {
    bytes: u64,
    newlines: u64,
    sha: Sha256,
}

impl std::fmt::Debug for Produced {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Produced")
            .field("requests", &self.requests)
            .finish_non_exhaustive()
    }
}

impl Produced {
    /// Installs the logger's own drop counters.
    pub fn set_drop_source(&self, source: DropSource) {
        *self.drop_source.lock().unwrap_or_else(|e| e.into_inner()) = Some(source);
    }

    /// Records bytes that reached the sink, in the order they reached it.
    pub fn wrote(&self, bytes: &[u8]) {
        let mut w = self.written.lock().unwrap_or_else(|e| e.into_inner());
        w.bytes += bytes.len() as u64;
        w.newlines += bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        w.sha.update(bytes);
    }

    /// Zeroes every counter (after the warm-up).
    pub fn reset(&self) {
        for c in [
            &self.handed_off_bytes,
            &self.requests,
            &self.records,
            &self.write_calls,
            &self.gen_ns,
            &self.gen_count,
            &self.log_ns,
            &self.log_count,
            &self.dropped,
            &self.queue_full,
            &self.report_lines,
        ] {
            c.store(0, Ordering::SeqCst);
        }
        *self.written.lock().unwrap_or_else(|e| e.into_inner()) = Written::default();
    }

    /// A snapshot for the runner.
    pub fn stats(&self) -> ApiStats {
        let external = self
            .drop_source
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .and_then(|f| f());
        let counts = external.unwrap_or(LoggerCounts {
            dropped: self.dropped.load(Ordering::SeqCst),
            queue_full: self.queue_full.load(Ordering::SeqCst),
            oldest_queued_us: None,
        });
        let w = self.written.lock().unwrap_or_else(|e| e.into_inner());
        ApiStats {
            mono_ns: mono_ns(),
            requests: self.requests.load(Ordering::SeqCst),
            records: self.records.load(Ordering::SeqCst),
            write_calls: self.write_calls.load(Ordering::SeqCst),
            oldest_queued_us: counts.oldest_queued_us,
            handed_off_bytes: self.handed_off_bytes.load(Ordering::SeqCst),
            written_bytes: w.bytes,
            written_newlines: w.newlines,
            sha256: format!("{:x}", w.sha.clone().finalize()),
            gen_ns: self.gen_ns.load(Ordering::SeqCst),
            gen_count: self.gen_count.load(Ordering::SeqCst),
            log_ns: self.log_ns.load(Ordering::SeqCst),
            log_count: self.log_count.load(Ordering::SeqCst),
            dropped: counts.dropped,
            queue_full: counts.queue_full,
            report_lines: self.report_lines.load(Ordering::SeqCst),
        }
    }
}

/// The API's counters as the control channel reports them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct ApiStats {
    pub mono_ns: u64,
    pub requests: u64,
    #[serde(default)]
    pub records: u64,
    #[serde(default)]
    pub write_calls: u64,
    #[serde(default)]
    pub oldest_queued_us: Option<u64>,
    pub handed_off_bytes: u64,
    pub written_bytes: u64,
    pub written_newlines: u64,
    pub sha256: String,
    pub gen_ns: u64,
    pub gen_count: u64,
    pub log_ns: u64,
    pub log_count: u64,
    pub dropped: u64,
    pub queue_full: u64,
    /// The logger's own report lines among those written (network conditions).
    #[serde(default)]
    pub report_lines: u64,
}

/// What the control channel can ask of the API besides its counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Write buffered records (as the application would at exit).
    Flush,
    /// The network conditions' collector goes down for this long (`--collector-outage`).
    Outage(Duration),
}

/// Carries out an [`Action`] in the API.
pub type FlushHook = Box<dyn Fn(Action) + Send + Sync>;

/// The longest command line accepted (token, space, command, newline).
const MAX_LINE: u64 = 256;
/// How long a connection may take to send its command.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Where the control channel listens, and the token every command must carry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControlEndpoint {
    pub addr: SocketAddr,
    pub token: String,
}

/// 128 random bits from the kernel, as hex.
fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Serves the control channel on a new thread; returns its address and token.
pub fn serve(produced: Arc<Produced>, flush: FlushHook) -> std::io::Result<ControlEndpoint> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    let token = random_token()?;
    let expected = Arc::new(token.clone());
    let flush = Arc::new(flush);
    std::thread::Builder::new()
        .name("control".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let (produced, flush, expected) =
                    (produced.clone(), flush.clone(), expected.clone());
                // One thread per connection: a client that never sends cannot block
                // the next one.
                let _ = std::thread::Builder::new()
                    .name("control-conn".into())
                    .spawn(move || answer(stream, &produced, &flush, &expected));
            }
        })?;
    Ok(ControlEndpoint { addr, token })
}

fn answer(
    stream: TcpStream,
    produced: &Produced,
    flush: &FlushHook,
    token: &str,
) -> std::io::Result<()> {
    stream.set_read_timeout(Some(READ_TIMEOUT))?;
    let mut line = String::new();
    BufReader::new((&stream).take(MAX_LINE)).read_line(&mut line)?;
    if !line.ends_with('\n') {
        (&stream).write_all(b"{\"error\":\"command line too long or incomplete\"}\n")?;
        return Ok(());
    }
    let (given, command) = line.trim().split_once(' ').unwrap_or(("", line.trim()));
    if given != token {
        (&stream).write_all(b"{\"error\":\"bad or missing token\"}\n")?;
        return Ok(());
    }
    let reply = match command {
        "stats" => serde_json::to_string(&produced.stats())?,
        "reset" => {
            produced.reset();
            "{\"ok\":true}".to_owned()
        }
        "flush" => {
            flush(Action::Flush);
            "{\"ok\":true}".to_owned()
        }
        outage if outage.starts_with("outage ") => {
            match outage["outage ".len()..].trim().parse::<u64>() {
                Ok(ms) => {
                    flush(Action::Outage(Duration::from_millis(ms)));
                    "{\"ok\":true}".to_owned()
                }
                Err(_) => {
                    serde_json::json!({ "error": format!("bad outage {outage:?}") }).to_string()
                }
            }
        }
        other => serde_json::json!({ "error": format!("unknown command {other:?}") }).to_string(),
    };
    (&stream).write_all(reply.as_bytes())?;
    (&stream).write_all(b"\n")
}

/// A client of the control channel.
#[derive(Debug, Clone)]
pub struct ControlClient {
    pub endpoint: ControlEndpoint,
}

impl ControlClient {
    fn call(&self, command: &str) -> std::io::Result<String> {
        let stream = TcpStream::connect_timeout(&self.endpoint.addr, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        (&stream).write_all(format!("{} {command}\n", self.endpoint.token).as_bytes())?;
        let mut reply = String::new();
        BufReader::new((&stream).take(64 << 10)).read_line(&mut reply)?;
        if reply.starts_with("{\"error\"") {
            return Err(std::io::Error::other(format!(
                "the API's control channel refused {command:?}: {}",
                reply.trim()
            )));
        }
        Ok(reply)
    }

    /// The API's counters.
    pub fn stats(&self) -> std::io::Result<ApiStats> {
        let reply = self.call("stats")?;
        serde_json::from_str(&reply)
            .map_err(|e| std::io::Error::other(format!("bad stats reply {reply:?}: {e}")))
    }

    /// Zeroes the API's counters.
    pub fn reset(&self) -> std::io::Result<()> {
        self.call("reset").map(drop)
    }

    /// Asks the API to write what it buffers.
    pub fn flush(&self) -> std::io::Result<()> {
        self.call("flush").map(drop)
    }

    /// Takes the API's collector down for `length` (network conditions only).
    pub fn outage(&self, length: Duration) -> std::io::Result<()> {
        self.call(&format!("outage {}", length.as_millis()))
            .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint() -> ControlEndpoint {
        serve(Arc::new(Produced::default()), Box::new(|_| {})).unwrap()
    }

    fn raw(addr: SocketAddr, line: &[u8]) -> String {
        let stream = TcpStream::connect(addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let _ = (&stream).write_all(line);
        let mut reply = String::new();
        let _ = BufReader::new(&stream).read_line(&mut reply);
        reply
    }

    #[test]
    fn commands_need_the_token() {
        let e = endpoint();
        assert_eq!(e.token.len(), 32);
        assert!(raw(e.addr, b"reset\n").contains("bad or missing token"));
        assert!(raw(e.addr, b"0000 stats\n").contains("bad or missing token"));
        let client = ControlClient {
            endpoint: e.clone(),
        };
        assert_eq!(client.stats().unwrap().requests, 0);
        client.reset().unwrap();
    }

    #[test]
    fn an_idle_connection_does_not_block_stats() {
        let e = endpoint();
        // Connected, sending nothing, held open for the rest of the test.
        let _idle = TcpStream::connect(e.addr).unwrap();
        let client = ControlClient { endpoint: e };
        assert_eq!(client.stats().unwrap().requests, 0);
    }

    #[test]
    fn an_endless_line_is_cut_off() {
        let e = endpoint();
        let long = vec![b'a'; 1 << 20];
        let reply = raw(e.addr, &long);
        assert!(reply.contains("too long"), "{reply}");
    }
}
