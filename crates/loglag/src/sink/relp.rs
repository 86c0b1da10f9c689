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
//!   (back-off 50 ms doubling to 5 s) and the records not yet answered are sent
//!   again: **at least once**. A record the collector took whose answer was lost comes
//!   twice.
//! - The sink retries a batch for [`Relp::retry_for`] (default 30 s), then reports what
//!   was answered as written and fails the rest (counted as `io_error`).
//! - Every batch has a deadline that nothing the collector does can extend: the larger
//!   of `retry_for` and the answer timeout (10 s) from the batch's start. Every read,
//!   write and connect waits at most until then, and each answer frame (the
//!   handshake's too) must also arrive within the answer timeout of the one before it
//!   (the first, of sending) or the connection is given up and opened again; a collector that dribbles a space at a
//!   time, or reads our frames a byte at a time, cannot hold the writer past the
//!   deadline. The `close` at the end waits at most 1 s.
//! - An answer's data is at most 64 KiB (answers are `200 OK`, or an `open` answer's
//!   offers): a frame announcing more, or a transaction number or length of more than 9
//!   digits, is a protocol error, read no further and allocated for nothing. The
//!   connection is dropped and the batch retried like after a broken connection.
//! - A record the collector refuses (`500 …`, or any answer to it other than `200`) is
//!   not sent again and does not hold the batch: the records after it go on in the same
//!   session. It counts as written in the pipeline's metrics (the collector has
//!   answered for it; a sink can fail only a batch's tail, not one record in it), adds
//!   one to `Metrics::write_errors` (the sink's absorbed errors), and the refusal is said
//!   in-band, with the collector's text, as a WARN record from `loglag` before the next
//!   batch: "RELP: the collector refused N records …".
//! - With a spool (`NonBlockingBuilder::spool`), a batch leaves the spool only once it
//!   is answered: a kill -9 of the application before that leaves it in the spool,
//!   and the next start sends it again. Application crash and collector restart, even
//!   together, lose nothing; duplicates are possible. Give `retry_for` a long time if a
//!   collector may be down for longer than 30 s and the spool has the room.
//!
//! Records are rendered with [`Format::Syslog`](crate::Format::Syslog): each line is
//! one RFC 5424 message.

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use super::backoff::{Backoff, Retry};
use super::{Sink, SinkReport};
use crate::settings::units::deadline_after;

/// Commands in flight before the sink waits for answers (librelp's default window).
const WINDOW: usize = 128;
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// How long an answer (or the handshake's) may take before the connection is given
/// up, and the least a batch's deadline allows.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);
/// How long one address's connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long the `close` at the end may take.
const CLOSE_TIMEOUT: Duration = Duration::from_secs(1);
/// Transaction numbers run from 1 to 999,999,999, then start at 1 again.
const MAX_TXNR: u64 = 999_999_999;
/// The most data an answer may announce. Answers are small: `200 OK`, a refusal's
/// text, or an `open` answer's offers.
const MAX_ANSWER_BYTES: usize = 64 * 1024;
/// The most characters of a refusal's text said in the notice.
const MAX_REFUSAL_CHARS: usize = 200;

/// A RELP client sink: windowed, acknowledged, resent after a reconnect.
///
/// A batch never holds the writer past its deadline, the larger of
/// [`retry_for`](Relp::retry_for) and the 10 s answer timeout, whatever the collector
/// sends (or dribbles); an answer announcing more than 64 KiB of data is a protocol
/// error, not an allocation; a record the collector refuses (`500`) is not sent again:
/// it counts as written and as one `Metrics::write_errors`, the records after it go on,
/// and the refusal's text is said in-band before the next batch.
///
/// ```no_run
/// let sink = loglag::sink::Relp::tcp("127.0.0.1:2514")?;
/// let (writer, guard) = loglag::NonBlockingBuilder::default()
///     .spool("/var/lib/app/log.spool")
///     .build(sink)?;
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct Relp {
    addrs: Vec<SocketAddr>,
    conn: Option<Conn>,
    txnr: u64,
    retry_for: Duration,
    /// While it waits, batches fail at once: the collector was down.
    down: Backoff,
    /// Records sent again after a reconnect (possible duplicates), since the last notice.
    resent: u64,
    /// Records the collector refused since the last notice, and the last refusal's text.
    refused: u64,
    last_refusal: String,
    /// Refusals not yet taken as absorbed errors.
    refusals_unabsorbed: u64,
    /// Indices, within the window being sent, of the records refused there.
    refused_in_window: Vec<usize>,
    /// Where refused records start, counted from `passed`'s zero (see
    /// [`SinkReport::refused`]), and the bytes `write` took since the last report.
    refused_at: Vec<u64>,
    passed: u64,
}

#[derive(Debug)]
struct Conn {
    writer: TcpStream,
    reader: BufReader<Timed>,
}

/// The read half of a connection: each read waits at most until `deadline`, however
/// little the peer sends at a time (a per-read timeout alone restarts with every byte).
#[derive(Debug)]
struct Timed {
    stream: TcpStream,
    deadline: Option<Instant>,
    /// The socket's read timeout as last set (`None`: none).
    timeout: Option<Duration>,
}

/// Read timeouts are set in steps of this, rounded down, so that a timeout already set
/// still fits the next read's time left and is not set again (a system call per read
/// doubled the sink's system calls besides the reads themselves).
const TIMEOUT_STEP: Duration = Duration::from_millis(100);

impl Read for Timed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let left = time_left(self.deadline)?;
            let fits = match (self.timeout, left) {
                (Some(set), Some(left)) => set <= left,
                (None, None) => true,
                _ => false,
            };
            if !fits {
                // Whole steps (at least one) below the time left; less than a step,
                // exactly.
                let timeout = left.map(|left| {
                    let over = left.as_nanos() % TIMEOUT_STEP.as_nanos();
                    match left >= TIMEOUT_STEP {
                        true => left.saturating_sub(Duration::from_nanos(over as u64)),
                        false => left,
                    }
                });
                self.stream.set_read_timeout(timeout)?;
                self.timeout = timeout;
            }
            match self.stream.read(buf) {
                Err(e) if is_transient(&e) => {}
                result => return result,
            }
        }
    }
}

fn protocol_error(what: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, what.into())
}

/// The earlier of two deadlines (`None` is no bound).
fn earliest(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, None) => a,
        (None, b) => b,
    }
}

/// [`time_left`](crate::settings::units::time_left), saying whose deadline passed.
fn time_left(deadline: Option<Instant>) -> io::Result<Option<Duration>> {
    crate::settings::units::time_left(deadline).map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            "the RELP collector did not answer in time (the answer timeout of 10 s or the batch's deadline passed)",
        )
    })
}

/// A socket's timeout (rounded down) or a signal: the caller's deadline says whether
/// to go on.
fn is_transient(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Writes all of `bytes`, each write waiting at most until `deadline`: a peer that
/// reads a byte at a time cannot stretch it.
fn write_all_by(
    stream: &mut TcpStream,
    mut bytes: &[u8],
    deadline: Option<Instant>,
) -> io::Result<()> {
    while !bytes.is_empty() {
        stream.set_write_timeout(time_left(deadline)?)?;
        match stream.write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if is_transient(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Whether an answer's data says `200` (librelp: `200 OK`, maybe followed by a line
/// of data).
fn is_ok(data: &[u8]) -> bool {
    data.strip_prefix(b"200")
        .is_some_and(|rest| matches!(rest.first(), None | Some(b' ' | b'\n')))
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
            down: Backoff::new(FIRST_BACKOFF, MAX_BACKOFF),
            resent: 0,
            refused: 0,
            last_refusal: String::new(),
            refusals_unabsorbed: 0,
            refused_in_window: Vec::new(),
            refused_at: Vec::new(),
            passed: 0,
        })
    }

    /// How long one batch is retried before its unacknowledged records are counted
    /// lost (default 30 s). The writer waits meanwhile and the queue (or the spool)
    /// absorbs. A batch holds the writer at most this long, or the answer timeout
    /// (10 s) if that is longer, whatever the collector does.
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

    /// Connects and opens a session, by `deadline` at the latest.
    fn connect(&mut self, deadline: Option<Instant>) -> io::Result<()> {
        let mut last = io::Error::new(io::ErrorKind::NotConnected, "no address");
        for addr in &self.addrs {
            let wait =
                time_left(deadline)?.map_or(CONNECT_TIMEOUT, |left| left.min(CONNECT_TIMEOUT));
            match TcpStream::connect_timeout(addr, wait) {
                Ok(stream) => {
                    stream.set_nodelay(true)?;
                    let reader = BufReader::new(Timed {
                        stream: stream.try_clone()?,
                        deadline: None,
                        timeout: None,
                    });
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
                    let by = earliest(deadline_after(ANSWER_TIMEOUT), deadline);
                    write_all_by(&mut conn.writer, &frame, by)?;
                    conn.reader.get_mut().deadline = by;
                    let (answered, command, data) = read_frame(&mut conn.reader)?;
                    if answered != txnr || command != "rsp" || !is_ok(&data) {
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

    /// Sends up to a window of records and reads their answers, by `deadline` at the
    /// latest. Returns how many were answered (taken, or refused: see
    /// [`Relp::refuse`]), and the error that stopped it, if any.
    fn send_window(
        &mut self,
        records: &[&[u8]],
        deadline: Option<Instant>,
    ) -> (usize, Option<io::Error>) {
        let window = &records[..records.len().min(WINDOW)];
        let mut frames = Vec::new();
        let mut expected = Vec::with_capacity(window.len());
        for record in window {
            let txnr = self.next_txnr();
            encode(&mut frames, txnr, "syslog", record);
            expected.push(txnr);
        }
        let Some(mut conn) = self.conn.take() else {
            return (0, Some(io::Error::from(io::ErrorKind::NotConnected)));
        };
        let by = earliest(deadline_after(ANSWER_TIMEOUT), deadline);
        if let Err(e) = write_all_by(&mut conn.writer, &frames, by) {
            return (0, Some(e));
        }
        for (answered, txnr) in expected.iter().enumerate() {
            if conn.reader.buffer().is_empty() {
                quick_ack(&conn.writer);
            }
            // Each answer within the answer timeout of the one before, and all by the
            // batch's deadline.
            conn.reader.get_mut().deadline = earliest(deadline_after(ANSWER_TIMEOUT), deadline);
            match read_frame(&mut conn.reader) {
                Ok((_, command, _)) if command == "serverclose" => {
                    return (
                        answered,
                        Some(protocol_error("the RELP collector closed the session")),
                    )
                }
                Ok((n, command, data)) if n == *txnr && command == "rsp" => {
                    if !is_ok(&data) {
                        self.refuse(&data);
                        self.refused_in_window.push(answered);
                    }
                }
                Ok((n, command, data)) => {
                    return (
                        answered,
                        Some(protocol_error(format!(
                            "RELP answer {n} {command} {:?} to command {txnr}",
                            String::from_utf8_lossy(&data[..data.len().min(MAX_REFUSAL_CHARS)])
                        ))),
                    )
                }
                Err(e) => return (answered, Some(e)),
            }
        }
        self.conn = Some(conn);
        (window.len(), None)
    }

    /// The collector answered a record with something other than `200`: that record
    /// is refused (not sent again), counted and said in the next notice.
    fn refuse(&mut self, data: &[u8]) {
        self.refused += 1;
        self.refusals_unabsorbed += 1;
        let text = String::from_utf8_lossy(data);
        let text = text.trim();
        self.last_refusal = if text.is_empty() {
            "(no text)".to_owned()
        } else {
            text.chars()
                .take(MAX_REFUSAL_CHARS)
                .map(|c| if c.is_control() { ' ' } else { c })
                .collect()
        };
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

/// Reads one frame: (transaction number, command, data). The numbers are at most 9
/// digits and the data at most [`MAX_ANSWER_BYTES`]; anything longer is a protocol
/// error, found before anything is allocated for it.
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
                return Err(protocol_error(format!("RELP {what} too long: {text:?}…")));
            }
        }
    };
    let number = |text: &str, what: &str| -> io::Result<u64> {
        // At most 9 digits (the token's bound): no overflow, and no sign.
        match text.bytes().all(|b| b.is_ascii_digit()) {
            true => text
                .parse()
                .map_err(|_| protocol_error(format!("RELP {what} {text:?}"))),
            false => Err(protocol_error(format!("RELP {what} {text:?}"))),
        }
    };
    let (txnr, _) = token("transaction number", 9)?;
    let (command, _) = token("command", 32)?;
    let (len, after) = token("length", 9)?;
    let txnr = number(&txnr, "transaction number")?;
    let len = number(&len, "length")?;
    if len > MAX_ANSWER_BYTES as u64 {
        return Err(protocol_error(format!(
            "RELP {command} frame {txnr} announces {len} bytes of data; answers are at most {MAX_ANSWER_BYTES}"
        )));
    }
    let mut data = vec![0; len as usize];
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
    /// Sends every record (line) of `buf` and returns once all are answered, or the
    /// prefix that was, once `retry_for` has passed; never after the batch's deadline
    /// (see [`Relp`]).
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let written = self.write_records(buf);
        if let Ok(n) = &written {
            self.passed += *n as u64;
        }
        written
    }

    /// Refused records (see [`Relp`]): where each starts, one absorbed error each,
    /// and what the collector said.
    fn take_report(&mut self) -> SinkReport {
        self.passed = 0;
        SinkReport {
            refused: std::mem::take(&mut self.refused_at),
            absorbed_errors: std::mem::take(&mut self.refusals_unabsorbed),
            notice: self.notice(),
        }
    }
}

impl Relp {
    /// [`Sink::write`]: every record (line) of `buf` sent and answered, or the prefix
    /// that was.
    fn write_records(&mut self, buf: &[u8]) -> io::Result<usize> {
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
        if self.down.waiting(Instant::now()) {
            return Err(io::Error::new(
                io::ErrorKind::NotConnected,
                "the RELP collector is down",
            ));
        }
        // No new attempt starts after `give_up`; nothing at all goes on after
        // `deadline`. `None`: a `retry_for` past what an `Instant` holds, no bound.
        let give_up = deadline_after(self.retry_for);
        let deadline = deadline_after(self.retry_for.max(ANSWER_TIMEOUT));
        let mut answered = 0;
        let mut retry = Retry::new(Backoff::new(FIRST_BACKOFF, MAX_BACKOFF), give_up);
        let mut reconnected = false;
        loop {
            let failure = if self.conn.is_none() {
                self.connect(deadline).err()
            } else {
                None
            };
            let failure = match failure {
                Some(e) => Some(e),
                None => {
                    if reconnected {
                        // What was in flight when the connection broke goes again.
                        self.resent +=
                            records.len().min(answered + WINDOW) as u64 - answered as u64;
                        reconnected = false;
                    }
                    self.refused_in_window.clear();
                    let (n, error) = self.send_window(&records[answered..], deadline);
                    for i in std::mem::take(&mut self.refused_in_window) {
                        let start = match answered + i {
                            0 => 0,
                            k => ends[k - 1],
                        };
                        self.refused_at.push(self.passed + start as u64);
                    }
                    answered += n;
                    if answered == records.len() {
                        self.down.reset();
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
            if !retry.wait() {
                self.down.failed(Instant::now());
                return match answered {
                    0 => Err(failure),
                    n => Ok(ends[n - 1]),
                };
            }
        }
    }

    fn notice(&mut self) -> Option<String> {
        let mut notices = Vec::new();
        if self.refused > 0 {
            let n = std::mem::take(&mut self.refused);
            let last = std::mem::take(&mut self.last_refusal);
            let (records, which) = match n {
                1 => ("1 record".to_owned(), "its answer"),
                n => (format!("{n} records"), "the last answer"),
            };
            notices.push(format!("RELP: the collector refused {records} (not sent again; counted as dropped, rejected); {which}: {last}"));
        }
        if self.resent > 0 {
            let n = std::mem::take(&mut self.resent);
            notices.push(format!("RELP: the connection broke with records unacknowledged; up to {n} records sent again (at least once: the collector may have some twice)"));
        }
        (!notices.is_empty()).then(|| notices.join("; "))
    }
}

impl Drop for Relp {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            let txnr = self.next_txnr();
            let mut frame = Vec::new();
            encode(&mut frame, txnr, "close", b"");
            let by = deadline_after(CLOSE_TIMEOUT);
            if write_all_by(&mut conn.writer, &frame, by).is_ok() {
                conn.reader.get_mut().deadline = by;
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

    #[test]
    fn an_answer_longer_than_the_bound_is_refused_before_its_data_is_read() {
        let at_bound = format!(
            "1 rsp {MAX_ANSWER_BYTES} {}\n",
            "x".repeat(MAX_ANSWER_BYTES)
        );
        assert_eq!(
            read_frame(&mut at_bound.as_bytes()).unwrap().2.len(),
            MAX_ANSWER_BYTES
        );
        let over = format!("1 rsp {} x\n", MAX_ANSWER_BYTES + 1);
        let e = read_frame(&mut over.as_bytes()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        // Ten digits are too many for a length or a transaction number, and a sign is
        // not a digit.
        for frame in [
            &b"1 rsp 1000000000 x\n"[..],
            b"9999999999 rsp 2 OK\n",
            b"+1 rsp 2 OK\n",
            b"1 rsp +2 OK\n",
            b"1 rsp -2 OK\n",
        ] {
            let e = read_frame(&mut &frame[..]).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidData, "{e}");
        }
        let long_command = format!("1 {} 0\n", "r".repeat(33));
        assert!(read_frame(&mut long_command.as_bytes()).is_err());
    }

    #[test]
    fn only_200_is_taken() {
        assert!(is_ok(b"200 OK"));
        assert!(is_ok(b"200"));
        assert!(is_ok(b"200\nrelp_version=0"));
        for refusal in [&b"500 no"[..], b"2000", b"", b"OK", b"20"] {
            assert!(!is_ok(refusal), "{:?}", String::from_utf8_lossy(refusal));
        }
    }

    #[test]
    fn deadlines_never_overflow_and_a_passed_one_is_a_timeout() {
        assert!(deadline_after(Duration::MAX).is_none());
        assert!(time_left(None).unwrap().is_none());
        let e = time_left(Some(Instant::now())).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut);
        let soon = deadline_after(Duration::from_secs(1));
        assert_eq!(earliest(soon, None), soon);
        assert_eq!(earliest(None, soon), soon);
        assert_eq!(earliest(None, None), None);
    }

    #[test]
    fn a_timed_read_waits_until_its_deadline_and_no_longer_counts_what_the_peer_sends() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut peer, _) = listener.accept().unwrap();
        let deadline = deadline_after(Duration::from_millis(250));
        let mut timed = BufReader::new(Timed {
            stream: client,
            deadline,
            timeout: None,
        });
        peer.write_all(b"1 rsp 6 200 OK\n ").unwrap();
        assert_eq!(read_frame(&mut timed).unwrap().0, 1);
        // A space is not an answer: the read goes on to the deadline, not past it.
        let e = read_frame(&mut timed).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::TimedOut, "{e}");
        assert!(
            Instant::now() >= deadline.unwrap(),
            "not before the deadline"
        );
        let set = timed.get_ref().timeout.unwrap();
        assert!(
            set > Duration::ZERO && set <= Duration::from_millis(250),
            "{set:?}"
        );
    }

    #[test]
    fn refusals_are_counted_once_and_said_once() {
        let mut sink = Relp::tcp("127.0.0.1:9").unwrap().retry_for(Duration::MAX);
        sink.refuse(b"500 first");
        sink.refuse(b"500 second\r\nline");
        sink.resent = 3;
        let report = sink.take_report();
        let notice = report.notice.unwrap();
        assert!(notice.contains("refused 2 records"), "{notice}");
        assert!(notice.contains("500 second  line"), "{notice}");
        assert!(notice.contains("up to 3 records sent again"), "{notice}");
        assert_eq!(report.absorbed_errors, 2);
        assert_eq!(sink.take_report(), SinkReport::default(), "said once");
    }
}
