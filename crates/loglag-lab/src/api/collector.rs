//! The collector behind the network conditions (`loglag-syslog`, `syslog-sync`,
//! `loglag-otlp`, `otlp-sync`): a syslog-over-TCP listener (RFC 6587 octet counting)
//! or an OTLP/HTTP logs receiver on loopback, which writes each record it receives,
//! as the line the API built, into the run's sink (the FIFO the lab's rate-capped
//! reader reads). So the reader's cap becomes the collector's: when the FIFO is full
//! the collector stops reading its sockets, TCP pushes back, and the API's logger
//! meets a slow collector over a real network hop.
//!
//! It runs as threads of the API's process (the lab's FIFO, reader and verification
//! stay as they are); the hop is real loopback TCP, the framing and encoding real.
//! An OTLP request is answered only once its records are in the sink, so an
//! acknowledged batch is never lost at exit. An outage (`outage`) closes every
//! connection and refuses new ones for a while: what a collector restart looks like.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message;

/// SO_RCVBUF of each connection: 64 KiB, as a pipe holds (see `server.rs`).
const RECEIVE_BUFFER: usize = 64 << 10;

#[cfg(unix)]
fn set_receive_buffer(stream: &TcpStream, bytes: usize) {
    use std::os::fd::AsRawFd;
    let value = bytes as libc::c_int;
    // SAFETY: a valid socket and a pointer to an int of the size given.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// The collector writes into a FIFO, which Windows lacks: it never runs there.
#[cfg(not(unix))]
fn set_receive_buffer(_stream: &TcpStream, _bytes: usize) {}

/// What the collector speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// RFC 5424 messages over TCP with octet-counting framing.
    Syslog,
    /// OTLP/HTTP logs, protobuf.
    Otlp,
}

struct Shared {
    sink: Mutex<Box<dyn Write + Send>>,
    /// Counts the logger's own report lines among those written.
    produced: Arc<crate::api::control::Produced>,
    /// Connections being served; `finish` waits for none.
    open: AtomicUsize,
    /// While `mono` is before this (ns since `started`), connections are refused.
    down_until_ns: AtomicU64,
    started: Instant,
}

impl Shared {
    fn down(&self) -> bool {
        (self.started.elapsed().as_nanos() as u64) < self.down_until_ns.load(Ordering::Acquire)
    }
}

/// A running collector.
pub struct Collector {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Collector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Collector")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

impl Collector {
    /// Listens on a free loopback port and writes what it receives into `sink`.
    pub fn start(
        protocol: Protocol,
        sink: Box<dyn Write + Send>,
        produced: Arc<crate::api::control::Produced>,
    ) -> io::Result<Collector> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            sink: Mutex::new(sink),
            produced,
            open: AtomicUsize::new(0),
            down_until_ns: AtomicU64::new(0),
            started: Instant::now(),
        });
        let for_thread = shared.clone();
        listener.set_nonblocking(true)?;
        std::thread::Builder::new()
            .name("collector".into())
            .spawn(move || {
                // During an outage the port is closed: connections are refused, as
                // with a collector that is restarting.
                let mut listening = Some(listener);
                loop {
                    if for_thread.down() {
                        listening = None;
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                    let Some(listener) = &listening else {
                        match TcpListener::bind(addr).and_then(|l| {
                            l.set_nonblocking(true)?;
                            Ok(l)
                        }) {
                            Ok(l) => listening = Some(l),
                            Err(_) => std::thread::sleep(Duration::from_millis(5)),
                        }
                        continue;
                    };
                    let stream = match listener.accept() {
                        Ok((stream, _)) => stream,
                        Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(1));
                            continue;
                        }
                        Err(_) => continue,
                    };
                    if stream.set_nonblocking(false).is_err() {
                        continue;
                    }
                    set_receive_buffer(&stream, RECEIVE_BUFFER);
                    let shared = for_thread.clone();
                    shared.open.fetch_add(1, Ordering::AcqRel);
                    let _ = std::thread::Builder::new()
                        .name("collector-conn".into())
                        .spawn(move || {
                            let _ = match protocol {
                                Protocol::Syslog => serve_syslog(stream, &shared),
                                Protocol::Otlp => serve_otlp(stream, &shared),
                            };
                            shared.open.fetch_sub(1, Ordering::AcqRel);
                        });
                }
            })?;
        Ok(Collector { addr, shared })
    }

    /// Closes every connection and refuses new ones for `length`.
    pub fn outage(&self, length: Duration) {
        let until = self.shared.started.elapsed() + length;
        self.shared
            .down_until_ns
            .store(until.as_nanos() as u64, Ordering::Release);
    }

    /// Waits (up to `limit`) until every connection has ended, so that what the API's
    /// logger sent before it closed them is in the sink before the process exits.
    pub fn finish(&self, limit: Duration) {
        crate::sys::poll::poll_until(limit, Duration::from_millis(1), || {
            (self.shared.open.load(Ordering::Acquire) == 0).then_some(())
        });
        let _ = self
            .shared
            .sink
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .flush();
    }
}

/// Octet-counted frames: `LEN SP MSG`; each message's MSG, plus a newline, to the sink.
fn serve_syslog(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut reader = BufReader::with_capacity(64 << 10, stream);
    let mut len = Vec::new();
    let mut message = Vec::new();
    loop {
        if shared.down() {
            return Ok(()); // the connection dies with the "restart"
        }
        // A timeout may leave part of the length read: kept for the next try.
        match reader.read_until(b' ', &mut len) {
            // Without its space the length ended at end of stream.
            Ok(_) if len.last() != Some(&b' ') => return Ok(()),
            Ok(_) => {}
            Err(e) if timed_out(&e) => continue,
            Err(e) => return Err(e),
        }
        let Some(n) = std::str::from_utf8(len.trim_ascii())
            .ok()
            .and_then(|s| s.parse::<usize>().ok())
        else {
            return Ok(()); // not octet counting: nothing more to read here
        };
        len.clear();
        message.resize(n, 0);
        if !read_full(&mut reader, &mut message, shared)? {
            return Ok(());
        }
        // Not an RFC 5424 message: no record line (the reader counts it lost).
        if let Some(msg) = rfc5424_msg(&message) {
            // The pipeline's own drop reports carry its target in the structured data.
            if message.windows(16).any(|w| w == b"target=\"loglag\"") {
                shared.produced.report_lines.fetch_add(1, Ordering::Relaxed);
            }
            let mut sink = shared.sink.lock().unwrap_or_else(|e| e.into_inner());
            sink.write_all(msg)?;
            sink.write_all(b"\n")?;
        }
    }
}

/// A read timed out (the connection's 100 ms timeout, so an outage is noticed).
fn timed_out(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
    )
}

/// Fills `buf` from `reader`. False when the stream ended or an outage began first.
fn read_full(reader: &mut impl Read, buf: &mut [u8], shared: &Shared) -> io::Result<bool> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => return Ok(false),
            Ok(k) => filled += k,
            Err(e) if timed_out(&e) => {
                if shared.down() {
                    return Ok(false);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The MSG part of an RFC 5424 message: after the six header fields and the
/// structured data (`-`, or `[...]` elements in which `\]` does not close one).
pub fn rfc5424_msg(message: &[u8]) -> Option<&[u8]> {
    let mut rest = message;
    for _ in 0..6 {
        let space = rest.iter().position(|&b| b == b' ')?;
        rest = &rest[space + 1..];
    }
    if rest.first() == Some(&b'-') {
        rest = &rest[1..];
    } else {
        while rest.first() == Some(&b'[') {
            let mut i = 1;
            loop {
                match rest.get(i)? {
                    b'\\' => i += 2,
                    b']' => break,
                    _ => i += 1,
                }
            }
            rest = &rest[i + 1..];
        }
    }
    Some(match rest.first() {
        Some(b' ') => &rest[1..],
        _ => rest,
    })
}

/// OTLP/HTTP: each request's LogRecord bodies, one line each, to the sink; the answer
/// (200) only after they are written.
fn serve_otlp(stream: TcpStream, shared: &Shared) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::with_capacity(64 << 10, stream);
    let mut line = String::new();
    loop {
        // The request line and headers.
        let mut length = None;
        let mut first = true;
        loop {
            if shared.down() {
                return Ok(());
            }
            // A timeout may leave part of a line read: kept for the next try.
            match reader.read_line(&mut line) {
                Ok(0) => return Ok(()),
                Ok(_) if !line.ends_with('\n') => return Ok(()), // ended mid-line
                Ok(_) => {}
                Err(e) if timed_out(&e) => continue,
                Err(e) => return Err(e),
            }
            let header = std::mem::take(&mut line);
            let header = header.trim_end();
            if first {
                first = false;
                if !header.starts_with("POST ") {
                    return Ok(());
                }
                continue;
            }
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse::<usize>().ok();
                }
            }
        }
        let Some(length) = length else {
            return Ok(());
        };
        let mut body = vec![0; length];
        if !read_full(&mut reader, &mut body, shared)? {
            return Ok(());
        }
        let status = match ExportLogsServiceRequest::decode(&body[..]) {
            Ok(request) => {
                let mut sink = shared.sink.lock().unwrap_or_else(|e| e.into_inner());
                for scope in request.resource_logs.iter().flat_map(|r| &r.scope_logs) {
                    // The pipeline's own drop reports come from target `loglag`.
                    let reports = scope.scope.as_ref().is_some_and(|s| s.name == "loglag");
                    for record in &scope.log_records {
                        let Some(AnyValue::StringValue(text)) =
                            record.body.as_ref().and_then(|b| b.value.as_ref())
                        else {
                            continue;
                        };
                        if reports {
                            shared.produced.report_lines.fetch_add(1, Ordering::Relaxed);
                        }
                        {
                            sink.write_all(text.as_bytes())?;
                            sink.write_all(b"\n")?;
                        }
                    }
                }
                "200 OK"
            }
            Err(_) => "400 Bad Request",
        };
        if shared.down() {
            return Ok(());
        }
        writer.write_all(
            format!("HTTP/1.1 {status}\r\nContent-Type: application/x-protobuf\r\nContent-Length: 0\r\n\r\n")
                .as_bytes(),
        )?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_msg_of_an_rfc5424_message_is_found_after_its_structured_data() {
        assert_eq!(
            rfc5424_msg(b"<14>1 2026-12-01T00:00:00Z host app 42 - - hello world"),
            Some(&b"hello world"[..])
        );
        assert_eq!(
            rfc5424_msg(br#"<14>1 2026-12-01T00:00:00Z host app 42 - [loglag@32473 a="x\]y" b="2"][x@1 c="3"] {"id":7}"#),
            Some(&br#"{"id":7}"#[..])
        );
        assert_eq!(rfc5424_msg(b"<14>1 too short"), None);
    }
}
