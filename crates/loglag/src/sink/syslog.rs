//! Syslog to a collector: RFC 5424 lines (render them with [`Format::Syslog`]) sent
//! over TCP with RFC 6587 octet counting, over UDP (RFC 5426, one datagram per record),
//! or to a unix datagram socket such as `/dev/log` (unix only: on Windows every
//! write to one fails with an `Unsupported` error saying so).
//!
//! | transport | guarantee |
//! |---|---|
//! | UDP, unix datagram | best effort: a datagram the network or a full collector drops is not seen |
//! | TCP | at most once: a collector that closes the connection between batches is noticed before the next one, and a batch that fails is counted (`io_error`); what sat in the kernel's buffers when the collector died is lost unseen |
//!
//! While the collector is unreachable, each batch is dropped and counted as `io_error`
//! until the next connection attempt, which waits 50 ms after the first failure,
//! doubling to 5 s.
//!
//! [`Format::Syslog`]: crate::Format::Syslog

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
#[cfg(unix)]
use std::os::fd::AsRawFd;
#[cfg(unix)]
use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::backoff::Backoff;
use super::Sink;

const FIRST_RETRY: Duration = Duration::from_millis(50);
const LAST_RETRY: Duration = Duration::from_secs(5);
/// A collector that stops reading holds the writer no longer than this per write.
const WRITE_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, Clone)]
enum Transport {
    Tcp(SocketAddr),
    Udp(SocketAddr),
    Unix(PathBuf),
}

#[derive(Debug)]
enum Connection {
    Tcp(TcpStream),
    Udp(UdpSocket),
    #[cfg(unix)]
    Unix(UnixDatagram),
}

/// A [`Sink`] that sends each record to a syslog collector.
///
/// ```no_run
/// use tracing_subscriber::prelude::*;
/// let sink = loglag::sink::Syslog::tcp("127.0.0.1:514")?;
/// let (writer, _guard) = loglag::NonBlockingBuilder::default().build(sink)?;
/// let layer = loglag::LoglagLayer::new(writer).format(loglag::Format::Syslog);
/// tracing_subscriber::registry().with(layer).try_init().ok();
/// tracing::warn!(disk = "sda", "low space");
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Syslog {
    transport: Transport,
    connection: Option<Connection>,
    /// Connection attempts wait after a failure.
    backoff: Backoff,
    /// The TCP batch, framed.
    framed: Vec<u8>,
    /// SO_SNDBUF for TCP connections, when set.
    send_buffer: Option<usize>,
}

impl Syslog {
    fn new(transport: Transport) -> Syslog {
        Syslog {
            transport,
            connection: None,
            backoff: Backoff::new(FIRST_RETRY, LAST_RETRY),
            framed: Vec::new(),
            send_buffer: None,
        }
    }

    fn resolve(addr: impl ToSocketAddrs) -> io::Result<SocketAddr> {
        addr.to_socket_addrs()?.next().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "the address resolves to nothing",
            )
        })
    }

    /// TCP with octet-counting framing (RFC 6587). Connects at the first batch.
    pub fn tcp(addr: impl ToSocketAddrs) -> io::Result<Syslog> {
        Ok(Syslog::new(Transport::Tcp(Syslog::resolve(addr)?)))
    }

    /// Bounds the kernel's send buffer of a TCP connection (SO_SNDBUF; Linux doubles
    /// the value for its bookkeeping). Unset, Linux grows it up to `net.ipv4.tcp_wmem`'s
    /// maximum (4 MiB by default, `sysctl net.ipv4.tcp_wmem`): what sits
    /// there when a collector dies is lost unseen, and a writer only meets a slow
    /// collector once it is full. A small buffer bounds both.
    pub fn send_buffer(mut self, bytes: usize) -> Syslog {
        self.send_buffer = Some(bytes);
        self
    }

    /// UDP, one datagram per record (RFC 5426). Keep records under the collector's
    /// limit (rsyslog: 8 KiB by default) with `max_record_bytes`.
    pub fn udp(addr: impl ToSocketAddrs) -> io::Result<Syslog> {
        Ok(Syslog::new(Transport::Udp(Syslog::resolve(addr)?)))
    }

    /// A unix datagram socket, one datagram per record: `/dev/log` for the local
    /// syslog daemon. Unix only: Windows has no unix datagram sockets, so there every
    /// write fails with an `Unsupported` error that says so (and a `syslog+unix://`
    /// sink URL is refused when it is opened).
    pub fn unix(path: impl Into<PathBuf>) -> Syslog {
        Syslog::new(Transport::Unix(path.into()))
    }

    fn connect(&self) -> io::Result<Connection> {
        Ok(match &self.transport {
            Transport::Tcp(addr) => {
                let stream = TcpStream::connect_timeout(addr, WRITE_TIMEOUT)?;
                stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
                stream.set_nodelay(true)?;
                if let Some(bytes) = self.send_buffer {
                    set_send_buffer(&stream, bytes)?;
                }
                Connection::Tcp(stream)
            }
            Transport::Udp(addr) => {
                let local: SocketAddr = if addr.is_ipv4() {
                    ([0, 0, 0, 0], 0).into()
                } else {
                    (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
                };
                let socket = UdpSocket::bind(local)?;
                socket.connect(addr)?;
                socket.set_write_timeout(Some(WRITE_TIMEOUT))?;
                Connection::Udp(socket)
            }
            #[cfg(not(unix))]
            Transport::Unix(path) => return Err(no_unix_sockets(path)),
            #[cfg(unix)]
            Transport::Unix(path) => {
                let socket = UnixDatagram::unbound()?;
                socket.connect(path)?;
                // A reader that stopped reading holds the writer this long, not forever.
                socket.set_write_timeout(Some(WRITE_TIMEOUT))?;
                Connection::Unix(socket)
            }
        })
    }

    /// The connection, made (or remade) if the back-off allows. A TCP connection the
    /// collector has closed (it restarted) is replaced before it is written to, so the
    /// batch goes to the new collector instead of into a dead socket.
    fn connection(&mut self) -> io::Result<&mut Connection> {
        if let Some(Connection::Tcp(stream)) = &self.connection {
            if peer_closed(stream) {
                self.connection = None;
            }
        }
        if self.connection.is_none() {
            if self.backoff.waiting(Instant::now()) {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    format!(
                        "syslog collector {:?} unreachable; retrying",
                        self.transport
                    ),
                ));
            }
            match self.connect() {
                Ok(c) => self.connection = Some(c),
                Err(e) => {
                    self.failed();
                    return Err(e);
                }
            }
        }
        Ok(self.connection.as_mut().expect("connected above"))
    }

    fn failed(&mut self) {
        self.connection = None;
        self.backoff.failed(Instant::now());
    }

    fn succeeded(&mut self) {
        self.backoff.reset();
    }
}

/// The error for a unix datagram socket where there are none.
#[cfg(not(unix))]
pub(super) fn no_unix_sockets(path: &std::path::Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "syslog to the unix datagram socket {}: Windows has no unix datagram sockets; \
             use syslog+tcp:// or syslog+udp://",
            path.display()
        ),
    )
}

/// Whether the collector has closed its end: it never sends, so a readable socket
/// with nothing to read is its FIN (or a reset). (Windows has no `MSG_DONTWAIT`: the
/// socket is made non-blocking for the peek.)
#[cfg(not(unix))]
fn peer_closed(stream: &TcpStream) -> bool {
    if stream.set_nonblocking(true).is_err() {
        return false;
    }
    let peeked = stream.peek(&mut [0u8]);
    let _ = stream.set_nonblocking(false);
    match peeked {
        Ok(n) => n == 0,
        Err(e) => e.kind() != io::ErrorKind::WouldBlock,
    }
}

/// Whether the collector has closed its end: it never sends, so a readable socket
/// with nothing to read is its FIN (or a reset).
#[cfg(unix)]
fn peer_closed(stream: &TcpStream) -> bool {
    let mut byte = 0u8;
    // SAFETY: a valid descriptor and a one-byte buffer; MSG_PEEK leaves the data.
    let n = unsafe {
        libc::recv(
            stream.as_raw_fd(),
            (&mut byte as *mut u8).cast(),
            1,
            libc::MSG_PEEK | libc::MSG_DONTWAIT,
        )
    };
    n == 0 || (n < 0 && io::Error::last_os_error().kind() != io::ErrorKind::WouldBlock)
}

/// The first line of `buf` without its newline, and the bytes it occupies.
fn first_record(buf: &[u8]) -> (&[u8], usize) {
    match buf.iter().position(|&b| b == b'\n') {
        Some(i) => (&buf[..i], i + 1),
        None => (buf, buf.len()),
    }
}

impl Sink for Syslog {
    /// TCP: every whole record of `buf`, framed, in one write; UDP and unix: the first
    /// record, as one datagram. Returns the bytes of `buf` consumed.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        let mut framed = std::mem::take(&mut self.framed);
        let result = match self.connection() {
            Err(e) => Err(e),
            Ok(Connection::Tcp(stream)) => {
                framed.clear();
                // (end in `framed`, end in `buf`) of each record, to say how much of
                // `buf` went out if the stream fails part-way.
                let mut ends = Vec::new();
                let mut rest = buf;
                while !rest.is_empty() {
                    let (record, used) = first_record(rest);
                    let _ = write!(framed, "{} ", record.len());
                    framed.extend_from_slice(record);
                    rest = &rest[used..];
                    ends.push((framed.len(), buf.len() - rest.len()));
                }
                let mut sent = 0;
                let mut failure = None;
                while sent < framed.len() {
                    match stream.write(&framed[sent..]) {
                        Ok(0) => {
                            failure = Some(io::Error::from(io::ErrorKind::WriteZero));
                            break;
                        }
                        Ok(n) => sent += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => {
                            failure = Some(e);
                            break;
                        }
                    }
                }
                match failure {
                    None => Ok(buf.len()),
                    Some(e) => {
                        // Records wholly sent are written; the rest of `buf` comes back
                        // on the next call, which finds the connection gone.
                        let whole = ends
                            .iter()
                            .take_while(|(framed_end, _)| *framed_end <= sent)
                            .last()
                            .map_or(0, |&(_, buf_end)| buf_end);
                        self.connection = None;
                        self.backoff.failed(Instant::now());
                        if whole > 0 {
                            self.framed = framed;
                            return Ok(whole);
                        }
                        Err(e)
                    }
                }
            }
            Ok(Connection::Udp(socket)) => {
                let (record, used) = first_record(buf);
                socket.send(record).map(|_| used)
            }
            #[cfg(unix)]
            Ok(Connection::Unix(socket)) => {
                let (record, used) = first_record(buf);
                socket.send(record).map(|_| used)
            }
        };
        self.framed = framed;
        match result {
            Ok(n) => {
                self.succeeded();
                Ok(n)
            }
            // One datagram too large for the transport is that record's failure, not
            // the collector's: no back-off (keep records under 64 KiB for UDP).
            Err(e) if e.raw_os_error() == Some(EMSGSIZE) => Err(e),
            Err(e) => {
                // A record cut short on a TCP stream is never completed: the connection
                // is dropped, and the batch is counted as lost by the writer.
                if self.connection.is_some() {
                    self.failed();
                }
                Err(e)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// A datagram larger than the transport takes.
#[cfg(unix)]
const EMSGSIZE: i32 = libc::EMSGSIZE;
#[cfg(windows)]
const EMSGSIZE: i32 = windows_sys::Win32::Networking::WinSock::WSAEMSGSIZE;

/// SO_SNDBUF on a connected socket.
#[cfg(windows)]
fn set_send_buffer(stream: &TcpStream, bytes: usize) -> io::Result<()> {
    crate::sys::windows::set_send_buffer(stream, bytes)
}

/// SO_SNDBUF on a connected socket.
#[cfg(unix)]
fn set_send_buffer(stream: &TcpStream, bytes: usize) -> io::Result<()> {
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: a valid socket and a pointer to an int of the size given.
    let rc = unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            &value as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
