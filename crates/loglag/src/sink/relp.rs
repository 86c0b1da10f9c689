//! RELP, rsyslog's acknowledged transport (`imrelp`): each record is a `syslog`
//! command the collector answers `200 OK` once it has taken the message, so a batch
//! is written only when every record in it is acknowledged.
//!
//! The protocol (librelp's, used by rsyslog's `omrelp`/`imrelp`) is a small text
//! framing: `TXNR SP COMMAND SP DATALEN [SP DATA] LF`, answered by `TXNR rsp DATALEN
//! SP 200 OK LF`. A session starts with `open` (offering `relp_version=0` and
//! `commands=syslog`) and ends with `close`. Records are sent in windows of up to
//! 128 unacknowledged commands.
//!
//! Delivery:
//! - A connection that breaks, or a collector that restarts, costs a reconnect
//!   (back-off 50 ms doubling to 5 s) and the records not yet acknowledged are sent
//!   again: **at least once**. A record the collector took whose answer was lost comes
//!   twice.
//! - The sink retries a batch for [`Relp::retry_for`] (default 30 s), then reports what
//!   was acknowledged as written and fails the rest (counted as `io_error`).
//! - With a spool (`NonBlockingBuilder::spool`), a batch leaves the spool only once it
//!   is acknowledged: a kill -9 of the application before that leaves it in the spool,
//!   and the next start sends it again. Application crash and collector restart, even
//!   together, lose nothing; duplicates are possible. Give `retry_for` a long time if a
//!   collector may be down for longer than 30 s and the spool has the room.
//!
//! Records are rendered with [`Format::Syslog`](crate::Format::Syslog): each line is
//! one RFC 5424 message.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::Sink;

/// Commands in flight before the sink waits for answers (librelp's default window).
const WINDOW: usize = 128;
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long an answer may take before the connection is given up.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// Transaction numbers run from 1 to 999,999,999, then start at 1 again.
const MAX_TXNR: u64 = 999_999_999;

/// A RELP client sink: windowed, acknowledged, resent after a reconnect.
///
/// ```no_run
/// let sink = loglag::sink::Relp::tcp("127.0.0.1:2514")?;
/// let (writer, guard) = loglag::NonBlockingBuilder::default()
///     .spool("/var/lib/app/log.spool")
///     .finish_sink(sink);
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Relp {
    addrs: Vec<SocketAddr>,
    conn: Option<Conn>,
    txnr: u64,
    retry_for: Duration,
    backoff: Duration,
    /// While set and in the future, batches fail at once: the collector was down.
    down_until: Option<Instant>,
    /// Records sent again after a reconnect (possible duplicates), since the last notice.
    resent: u64,
}

#[derive(Debug)]
struct Conn {
    writer: TcpStream,
    reader: BufReader<TcpStream>,
}

fn protocol_error(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

impl Relp {
    /// A sink for the `imrelp` listener at `addr` (resolved now, connected at the
    /// first batch).
    pub fn tcp(addr: impl ToSocketAddrs) -> io::Result<Relp> {
        let addrs: Vec<SocketAddr> = addr.to_socket_addrs()?.collect();
        if addrs.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the RELP address resolved to nothing",
            ));
        }
        Ok(Relp {
            addrs,
            conn: None,
            txnr: 0,
            retry_for: Duration::from_secs(30),
            backoff: FIRST_BACKOFF,
            down_until: None,
            resent: 0,
        })
    }

    /// How long one batch is retried before its unacknowledged records are counted
    /// lost (default 30 s). The writer waits meanwhile and the queue (or the spool)
    /// absorbs.
    pub fn retry_for(mut self, limit: Duration) -> Relp {
        self.retry_for = limit;
        self
    }

    fn next_txnr(&mut self) -> u64 {
        self.txnr = if self.txnr >= MAX_TXNR {
            1
        } else {
            self.txnr + 1
        };
        self.txnr
    }

    fn connect(&mut self) -> io::Result<()> {
        let mut last = io::Error::new(io::ErrorKind::NotConnected, "no address");
        for addr in &self.addrs {
            match TcpStream::connect_timeout(addr, Duration::from_secs(2)) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    stream.set_read_timeout(Some(ANSWER_TIMEOUT))?;
                    stream.set_write_timeout(Some(ANSWER_TIMEOUT))?;
                    let reader = BufReader::new(stream.try_clone()?);
                    let mut conn = Conn {
                        writer: stream,
                        reader,
                    };
                    // A new session numbers from 1.
                    self.txnr = 0;
                    let txnr = self.next_txnr();
                    let offers = format!(
                        "relp_version=0\nrelp_software=loglag,{},https://crates.io/crates/loglag\ncommands=syslog",
                        env!("CARGO_PKG_VERSION")
                    );
                    let mut frame = Vec::new();
                    encode(&mut frame, txnr, "open", offers.as_bytes());
                    conn.writer.write_all(&frame)?;
                    let (answered, command, data) = read_frame(&mut conn.reader)?;
                    if answered != txnr || command != "rsp" || !data.starts_with(b"200") {
                        return Err(protocol_error(format!(
                            "the RELP collector refused the session: {}",
                            String::from_utf8_lossy(&data)
                        )));
                    }
                    self.conn = Some(conn);
                    return Ok(());
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    /// Sends up to a window of records and reads their answers. Returns how many were
    /// acknowledged, and the error that stopped it, if any.
    fn send_window(&mut self, records: &[&[u8]]) -> (usize, Option<io::Error>) {
        let window = &records[..records.len().min(WINDOW)];
        let mut frames = Vec::new();
        let mut expected = Vec::with_capacity(window.len());
        for record in window {
            let txnr = self.next_txnr();
            encode(&mut frames, txnr, "syslog", record);
            expected.push(txnr);
        }
        let Some(conn) = self.conn.as_mut() else {
            return (0, Some(io::Error::from(io::ErrorKind::NotConnected)));
        };
        if let Err(e) = conn.writer.write_all(&frames) {
            return (0, Some(e));
        }
        for (acked, txnr) in expected.iter().enumerate() {
            if conn.reader.buffer().is_empty() {
                quick_ack(&conn.writer);
            }
            match read_frame(&mut conn.reader) {
                Ok((_, command, _)) if command == "serverclose" => {
                    return (
                        acked,
                        Some(protocol_error("the RELP collector closed the session")),
                    )
                }
                Ok((answered, command, data))
                    if answered == *txnr && command == "rsp" && data.starts_with(b"200") => {}
                Ok((answered, command, data)) => {
                    return (
                        acked,
                        Some(protocol_error(format!(
                            "RELP answer {answered} {command} {:?} to command {txnr}",
                            String::from_utf8_lossy(&data)
                        ))),
                    )
                }
                Err(e) => return (acked, Some(e)),
            }
        }
        (window.len(), None)
    }
}

/// Acknowledges what arrives next at once. rsyslog's `imrelp` writes each answer as
/// its own small segment with Nagle's algorithm on: after the first it waits for our
/// ACK, which Linux delays by up to 40 ms, so a window of 128 answers took 40 ms
/// (2,365 records/s from `loglag emit --sink relp://…` before this). The setting
/// lasts only until the kernel leaves quick-ack mode, so it is set before each read.
fn quick_ack(stream: &TcpStream) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        let on: libc::c_int = 1;
        // SAFETY: a valid socket and a pointer to an int of the size given.
        unsafe {
            libc::setsockopt(
                stream.as_raw_fd(),
                libc::IPPROTO_TCP,
                libc::TCP_QUICKACK,
                &on as *const libc::c_int as *const libc::c_void,
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stream;
}

/// Appends one RELP frame.
fn encode(out: &mut Vec<u8>, txnr: u64, command: &str, data: &[u8]) {
    out.extend_from_slice(format!("{txnr} {command} {}", data.len()).as_bytes());
    if !data.is_empty() {
        out.push(b' ');
        out.extend_from_slice(data);
    }
    out.push(b'\n');
}

/// Reads one frame: (transaction number, command, data).
fn read_frame(reader: &mut impl BufRead) -> io::Result<(u64, String, Vec<u8>)> {
    let mut token = |what: &str, max: usize| -> io::Result<(String, u8)> {
        let mut text = String::new();
        loop {
            let mut byte = [0u8; 1];
            if reader.read(&mut byte)? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "the RELP collector closed the connection",
                ));
            }
            match byte[0] {
                b' ' | b'\n' if !text.is_empty() => return Ok((text, byte[0])),
                b'\n' | b' ' => continue,
                b => text.push(b as char),
            }
            if text.len() > max {
                return Err(protocol_error(format!("RELP {what} too long: {text:?}")));
            }
        }
    };
    let (txnr, _) = token("transaction number", 9)?;
    let (command, _) = token("command", 32)?;
    let (len, after) = token("length", 9)?;
    let txnr = txnr
        .parse()
        .map_err(|_| protocol_error(format!("RELP transaction number {txnr:?}")))?;
    let len: usize = len
        .parse()
        .map_err(|_| protocol_error(format!("RELP length {len:?}")))?;
    let mut data = vec![0; len];
    if len > 0 {
        if after != b' ' {
            return Err(protocol_error("RELP data without a space"));
        }
        reader.read_exact(&mut data)?;
        let mut trailer = [0u8; 1];
        reader.read_exact(&mut trailer)?;
        if trailer[0] != b'\n' {
            return Err(protocol_error("RELP frame without its trailer"));
        }
    }
    Ok((txnr, command, data))
}

impl Sink for Relp {
    /// Sends every record (line) of `buf` and returns once all are acknowledged, or
    /// the prefix that was, once `retry_for` has passed.
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut records: Vec<&[u8]> = Vec::new();
        let mut ends: Vec<usize> = Vec::new();
        let mut start = 0;
        for (i, &b) in buf.iter().enumerate() {
            if b == b'\n' {
                records.push(&buf[start..i]);
                ends.push(i + 1);
                start = i + 1;
            }
        }
        if start < buf.len() {
            records.push(&buf[start..]);
            ends.push(buf.len());
        }
        if records.is_empty() {
            return Ok(buf.len());
        }
        if let Some(until) = self.down_until {
            if Instant::now() < until {
                return Err(io::Error::new(
                    io::ErrorKind::NotConnected,
                    "the RELP collector is down",
                ));
            }
        }
        let give_up = Instant::now() + self.retry_for;
        let mut acked = 0;
        let mut pause = FIRST_BACKOFF;
        let mut reconnected = false;
        loop {
            let failure = if self.conn.is_none() {
                self.connect().err()
            } else {
                None
            };
            let failure = match failure {
                Some(e) => Some(e),
                None => {
                    if reconnected {
                        // What was in flight when the connection broke goes again.
                        self.resent += records.len().min(acked + WINDOW) as u64 - acked as u64;
                        reconnected = false;
                    }
                    let (n, error) = self.send_window(&records[acked..]);
                    acked += n;
                    if acked == records.len() {
                        self.down_until = None;
                        self.backoff = FIRST_BACKOFF;
                        return Ok(buf.len());
                    }
                    error
                }
            };
            let Some(failure) = failure else {
                continue; // the next window
            };
            self.conn = None;
            reconnected = true;
            if Instant::now() + pause > give_up {
                self.down_until = Some(Instant::now() + self.backoff);
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
                return match acked {
                    0 => Err(failure),
                    n => Ok(ends[n - 1]),
                };
            }
            std::thread::sleep(pause);
            pause = (pause * 2).min(MAX_BACKOFF);
        }
    }

    fn take_notice(&mut self) -> Option<String> {
        (self.resent > 0).then(|| {
            let n = std::mem::take(&mut self.resent);
            format!("RELP: the connection broke with records unacknowledged; up to {n} records sent again (at least once: the collector may have some twice)")
        })
    }
}

impl Drop for Relp {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            let txnr = self.next_txnr();
            let mut frame = Vec::new();
            encode(&mut frame, txnr, "close", b"");
            let _ = conn.writer.set_read_timeout(Some(Duration::from_secs(1)));
            if conn.writer.write_all(&frame).is_ok() {
                let _ = read_frame(&mut conn.reader);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_encode_and_decode() {
        let mut out = Vec::new();
        encode(&mut out, 7, "syslog", b"<14>1 - - - - - - hi");
        encode(&mut out, 8, "close", b"");
        assert_eq!(out, b"7 syslog 20 <14>1 - - - - - - hi\n8 close 0\n");
        let mut reader = &b"7 rsp 6 200 OK\n8 rsp 0\n0 serverclose 0\n"[..];
        assert_eq!(
            read_frame(&mut reader).unwrap(),
            (7, "rsp".into(), b"200 OK".to_vec())
        );
        assert_eq!(
            read_frame(&mut reader).unwrap(),
            (8, "rsp".into(), Vec::new())
        );
        assert_eq!(read_frame(&mut reader).unwrap().1, "serverclose");
        assert_eq!(
            read_frame(&mut reader).unwrap_err().kind(),
            io::ErrorKind::UnexpectedEof
        );
        let mut bad = &b"x rsp 6 200 OK\n"[..];
        assert!(read_frame(&mut bad).is_err());
        let mut truncated = &b"9 rsp 6 200"[..];
        assert!(read_frame(&mut truncated).is_err());
    }
}
