//! Pipelines' [`Metrics`] in the Prometheus text exposition format (0.0.4), and a
//! small HTTP endpoint that serves them.
//!
//! | metric | type | labels |
//! |---|---|---|
//! | `loglag_accepted_total`, `loglag_written_records_total`, `loglag_written_bytes_total`, `loglag_write_syscalls_total`, `loglag_io_errors_total`, `loglag_truncated_total`, `loglag_queue_full_events_total` | counter | `pipeline` |
//! | `loglag_records_dropped_total` | counter | `pipeline`, `reason`, `level` |
//! | `loglag_dropped_total`, `loglag_dropped_by_level_total` (the same drops summed one way) | counter | `pipeline`, `reason` or `level` |
//! | `loglag_write_seconds` | histogram (power-of-two buckets, 1 µs to 17 s) | `pipeline` |
//! | `loglag_in_flight_records`, `loglag_in_flight_bytes`, `loglag_max_backlog_bytes`, `loglag_oldest_queued_age_seconds` | gauge | `pipeline` |
//!
//! `loglag_io_errors_total` is [`Metrics::write_errors`] (failed write calls); the
//! records they cost (records_dropped_io) are `loglag_dropped_total{reason="io_error"}`,
//! [`Metrics::dropped_for`]`(DropReason::IoError)`.
//!
//! The endpoint ([`serve`]) accepts on one thread that never waits on a client and
//! serves each connection on a thread of its own, so one slow client does not hold up
//! another's scrape. A client has 5 s from its accept to send its request head, however
//! it paces its bytes (then the connection is closed unanswered), at most 16 KiB of it
//! (else `431`), and 5 s more to take the answer. 32 connections are open at once; a
//! newcomer beyond them is never queued: it takes the slot of the connection accepted
//! longest ago among those waiting on their client (a head still unfinished, or an
//! answer given and the close awaited), which is closed, so that clients that connect
//! and then dribble or say nothing cannot keep a scraper out, however many they are.
//! Only when all 32 are being answered is a newcomer answered `503` and closed at
//! once. [`Limits`] changes the deadline and the cap ([`serve_with`]).
//!
//! ```no_run
//! let (writer, _guard) = loglag::non_blocking(std::io::stdout());
//! let server = loglag::prometheus::serve("127.0.0.1:9464", vec![("app".into(), writer.clone())])?;
//! // curl http://127.0.0.1:9464/metrics
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fmt::Write as _;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::core::metrics::Metrics;
use crate::pipeline::handle::NonBlocking;
use crate::record::drops::DropReason;
use crate::record::level::Level;
use crate::settings::units::{deadline_after, time_left};

/// The histogram's buckets: 2^10 ns (~1 µs) to 2^34 ns (~17 s), then +Inf.
const FIRST_BUCKET: usize = 10;
const LAST_BUCKET: usize = 34;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Counter,
    Gauge,
    Histogram,
}

/// (label, value) pairs of one sample, unescaped.
pub(crate) type Labels = Vec<(&'static str, String)>;

/// One metric family: every name, help text and value lives here once, for the
/// exposition and for the `metrics` facade alike.
pub(crate) struct Family {
    pub(crate) name: &'static str,
    pub(crate) help: &'static str,
    pub(crate) kind: Kind,
    /// (name suffix for histograms, labels, value) of each sample.
    pub(crate) samples: Vec<(&'static str, Labels, f64)>,
}

/// A pipeline's families, every sample labelled `pipeline` when it has a name.
pub(crate) fn families(m: &Metrics, pipeline: Option<&str>) -> Vec<Family> {
    let with = |extra: &[(&'static str, String)]| -> Labels {
        pipeline
            .map(|p| ("pipeline", p.to_owned()))
            .into_iter()
            .chain(extra.iter().cloned())
            .collect()
    };
    let one = |name, help, kind, v: f64| Family {
        name,
        help,
        kind,
        samples: vec![("", with(&[]), v)],
    };
    let mut out = vec![
        one(
            "accepted_total",
            "Records handed to the pipeline.",
            Kind::Counter,
            m.accepted as f64,
        ),
        one(
            "written_records_total",
            "Records written to a sink.",
            Kind::Counter,
            m.written_records as f64,
        ),
        one(
            "written_bytes_total",
            "Bytes written to a sink.",
            Kind::Counter,
            m.written_bytes as f64,
        ),
        one(
            "write_syscalls_total",
            "Write calls made to the sink.",
            Kind::Counter,
            m.write_syscalls as f64,
        ),
        one(
            "io_errors_total",
            "Failed sink writes.",
            Kind::Counter,
            m.write_errors as f64,
        ),
        one(
            "truncated_total",
            "Records truncated to max_record_bytes.",
            Kind::Counter,
            m.truncated as f64,
        ),
        one(
            "queue_full_events_total",
            "Times the byte budget was found full.",
            Kind::Counter,
            m.queue_full_events as f64,
        ),
    ];
    let mut by_both = Family {
        name: "records_dropped_total",
        help: "Records dropped, by reason and level.",
        kind: Kind::Counter,
        samples: Vec::new(),
    };
    for reason in DropReason::ALL {
        for level in Level::ALL {
            by_both.samples.push((
                "",
                with(&[
                    ("reason", reason.as_str().to_owned()),
                    ("level", level.as_lower_str().to_owned()),
                ]),
                m.dropped[reason as usize][level as usize] as f64,
            ));
        }
    }
    out.push(by_both);
    out.push(Family {
        name: "dropped_total",
        help: "Records dropped, by reason.",
        kind: Kind::Counter,
        samples: DropReason::ALL
            .into_iter()
            .map(|r| {
                let labels = with(&[("reason", r.as_str().to_owned())]);
                ("", labels, m.dropped_for(r) as f64)
            })
            .collect(),
    });
    out.push(Family {
        name: "dropped_by_level_total",
        help: "Records dropped, by level.",
        kind: Kind::Counter,
        samples: Level::ALL
            .iter()
            .map(|l| {
                (
                    "",
                    // Upper case, as this family always had it.
                    with(&[("level", l.as_str().to_owned())]),
                    m.dropped_at(*l) as f64,
                )
            })
            .collect(),
    });
    let w = &m.write_latency;
    let mut histogram = Family {
        name: "write_seconds",
        help: "Time one write to the sink took.",
        kind: Kind::Histogram,
        samples: Vec::new(),
    };
    let mut cumulative = w.buckets[..FIRST_BUCKET].iter().sum::<u64>();
    for i in FIRST_BUCKET..=LAST_BUCKET {
        cumulative += w.buckets[i];
        let le = (1u64 << i) as f64 / 1e9;
        histogram.samples.push((
            "_bucket",
            with(&[("le", le.to_string())]),
            cumulative as f64,
        ));
    }
    histogram
        .samples
        .push(("_bucket", with(&[("le", "+Inf".into())]), w.count as f64));
    histogram
        .samples
        .push(("_sum", with(&[]), w.sum.as_secs_f64()));
    histogram
        .samples
        .push(("_count", with(&[]), w.count as f64));
    out.push(histogram);
    out.push(one(
        "in_flight_records",
        "Records accepted but not yet written or dropped.",
        Kind::Gauge,
        m.in_flight_records as f64,
    ));
    out.push(one(
        "in_flight_bytes",
        "Bytes queued or being written.",
        Kind::Gauge,
        m.in_flight_bytes as f64,
    ));
    out.push(one(
        "max_backlog_bytes",
        "Largest backlog seen, in bytes.",
        Kind::Gauge,
        m.max_backlog_bytes as f64,
    ));
    out.push(one(
        "oldest_queued_age_seconds",
        "Age of the oldest queued record.",
        Kind::Gauge,
        m.oldest_queued_age.map_or(0.0, |d| d.as_secs_f64()),
    ));
    out
}

/// A label value, escaped as the exposition format requires.
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Metrics {
    /// The same numbers in the Prometheus text exposition format, metric names
    /// starting with `prefix`. For several pipelines in one exposition, each with a
    /// `pipeline` label, see [`text`].
    ///
    /// ```
    /// let text = loglag::Metrics::default().to_prometheus("loglag");
    /// assert!(text.contains("loglag_accepted_total 0"));
    /// ```
    pub fn to_prometheus(&self, prefix: &str) -> String {
        text(prefix, &[(None, self)])
    }
}

/// The exposition of several pipelines' metrics, each family once with a sample per
/// pipeline (`pipeline="NAME"`; `None` adds no label).
pub fn text(prefix: &str, pipelines: &[(Option<&str>, &Metrics)]) -> String {
    let all: Vec<Vec<Family>> = pipelines
        .iter()
        .map(|(name, m)| families(m, *name))
        .collect();
    let mut s = String::new();
    let Some(first) = all.first() else {
        return s;
    };
    for (i, family) in first.iter().enumerate() {
        let kind = match family.kind {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
            Kind::Histogram => "histogram",
        };
        let _ = writeln!(s, "# HELP {prefix}_{} {}", family.name, family.help);
        let _ = writeln!(s, "# TYPE {prefix}_{} {kind}", family.name);
        for pipeline in &all {
            for (suffix, labels, v) in &pipeline[i].samples {
                let labels = if labels.is_empty() {
                    String::new()
                } else {
                    let pairs: Vec<String> = labels
                        .iter()
                        .map(|(k, v)| format!("{k}=\"{}\"", label(v)))
                        .collect();
                    format!("{{{}}}", pairs.join(","))
                };
                let _ = writeln!(s, "{prefix}_{}{suffix}{labels} {v}", family.name);
            }
        }
    }
    s
}

/// How long a client has to send its request head, from its accept. Bytes do not
/// extend it; the answer then has as long again to be taken.
const HEAD_DEADLINE: Duration = Duration::from_secs(5);
/// Connections open at once; a new one beyond them displaces the oldest waiting on
/// its client, or is answered 503 and closed when all are being answered.
const MAX_CONNECTIONS: usize = 32;
/// The largest request head read (a request line and a few headers): beyond it the
/// answer is 431.
const MAX_HEAD: usize = 16 << 10;
/// What is read and discarded after the answer, so that closing with a client's bytes
/// unread does not reset the connection under the answer.
const MAX_DRAIN: usize = 1 << 20;

const REFUSED: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 21\r\nConnection: close\r\n\r\ntoo many connections\n";

/// What the endpoint allows its clients: [`serve`] uses `Limits::default()` (a 5 s
/// deadline for the request head, 32 connections open at once).
///
/// ```
/// use std::time::Duration;
/// let limits = loglag::prometheus::Limits::default()
///     .head_deadline(Duration::from_secs(2))
///     .max_connections(8);
/// # let _ = limits;
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    head_deadline: Duration,
    max_connections: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            head_deadline: HEAD_DEADLINE,
            max_connections: MAX_CONNECTIONS,
        }
    }
}

impl Limits {
    /// How long a connection has, from its accept, to send its whole request head;
    /// sending bytes does not extend it. Past it the connection is closed unanswered.
    /// The answer then has as long again to be taken. Default 5 s.
    pub fn head_deadline(mut self, deadline: Duration) -> Limits {
        self.head_deadline = deadline;
        self
    }

    /// How many connections are open at once. A connection beyond them is never
    /// queued: it displaces the open connection accepted longest ago among those
    /// waiting on their client (its request head unfinished, or its answer given and
    /// its close awaited), which is closed unanswered; when every open connection is
    /// being answered, the newcomer is answered `503 Service Unavailable` and closed
    /// at once. So a client whose request arrives is answered however many clients
    /// hold connections without finishing their requests. Default 32.
    pub fn max_connections(mut self, n: usize) -> Limits {
        self.max_connections = n;
        self
    }
}

/// A running metrics endpoint; stops when dropped, closing the connections it has
/// open and joining every thread it started.
#[derive(Debug)]
pub struct MetricsServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl MetricsServer {
    /// Where it listens (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the accept with a connection of our own.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves `GET /metrics` (any path, in fact) on `addr`, one sample per pipeline with
/// its `pipeline` label, metric names prefixed `loglag_`. Nothing on the logging path
/// changes: a scrape reads the counters.
///
/// One thread accepts and never waits on a client; each connection is served on a
/// thread of its own, so a slow or idle client delays no other scrape. With the
/// default [`Limits`]: a client has 5 s from its accept to send its request head
/// (at most 16 KiB, else `431`), however it paces its bytes, and 5 s more to take
/// the answer. 32 connections are open at once; a newcomer beyond them displaces the
/// oldest connection still waiting on its client (a slow or silent one), or, when all
/// 32 are being answered, is answered `503` and closed at once. See [`serve_with`] to
/// change them.
pub fn serve(
    addr: impl ToSocketAddrs,
    pipelines: Vec<(String, NonBlocking)>,
) -> io::Result<MetricsServer> {
    serve_with(addr, pipelines, Limits::default())
}

/// [`serve`] with other [`Limits`].
pub fn serve_with(
    addr: impl ToSocketAddrs,
    pipelines: Vec<(String, NonBlocking)>,
    limits: Limits,
) -> io::Result<MetricsServer> {
    // The address in the error: "address in use" alone does not say which one.
    let wanted: Vec<std::net::SocketAddr> = addr.to_socket_addrs()?.collect();
    let listener = TcpListener::bind(&wanted[..]).map_err(|e| {
        let at: Vec<String> = wanted.iter().map(|a| a.to_string()).collect();
        io::Error::new(
            e.kind(),
            format!("cannot serve metrics on {}: {e}", at.join(", ")),
        )
    })?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let pipelines = Arc::new(pipelines);
    let thread = std::thread::Builder::new()
        .name("loglag-metrics".into())
        .spawn(move || {
            crate::sys::fork::block_async_signals();
            accept(&listener, &stopping, &pipelines, limits)
        })?;
    Ok(MetricsServer {
        addr,
        stop,
        thread: Some(thread),
    })
}

/// What an open connection is doing, for choosing which one makes room for a newcomer.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Phase {
    /// Waiting for the client's request head (accepted, not yet read, or partial).
    Head,
    /// Its whole request arrived: the answer is being rendered and written.
    Answering,
    /// Answered: waiting for the client's EOF (or the deadline) before the close.
    Draining,
}

/// One open connection: its accept order, a clone of its socket (so that a stop, or a
/// newcomer needing its slot, can end it) and its phase.
struct Conn {
    id: u64,
    stream: TcpStream,
    phase: Phase,
}

/// The open connections, in no particular order.
type Open = Arc<Mutex<Vec<Conn>>>;

fn lock_open(open: &Open) -> std::sync::MutexGuard<'_, Vec<Conn>> {
    open.lock().unwrap_or_else(|e| e.into_inner())
}

/// Makes room for a newcomer in a full registry: the connection accepted longest ago
/// among those waiting on their client (a head still unfinished, or an answer given and
/// the client's EOF awaited) is shut and forgotten; its thread sees its read end and
/// returns. False when every connection is being answered: the newcomer is refused.
///
/// So however many clients connect and then dribble or say nothing, a client whose
/// request arrives is answered: each newcomer displaces the oldest of them, and a
/// connection is displaced only once `max_connections` others arrived after it while
/// it was still waiting on its client.
fn make_room(open: &mut Vec<Conn>) -> bool {
    let oldest = open
        .iter()
        .enumerate()
        .filter(|(_, c)| c.phase != Phase::Answering)
        .min_by_key(|(_, c)| c.id)
        .map(|(i, _)| i);
    let Some(i) = oldest else {
        return false;
    };
    let displaced = open.swap_remove(i);
    let _ = displaced.stream.shutdown(Shutdown::Both);
    true
}

/// Moves connection `id` to `phase`; false if it is no longer open (displaced by a
/// newcomer: its socket is shut, and it must not be answered).
fn enter(open: &Open, id: u64, phase: Phase) -> bool {
    let mut open = lock_open(open);
    match open.iter_mut().find(|c| c.id == id) {
        Some(c) => {
            c.phase = phase;
            true
        }
        None => false,
    }
}

/// The acceptor: hands each connection to a thread of its own, makes room for it when
/// the cap is reached (see [`make_room`]), refuses it when no connection can give up its
/// slot, and on a stop shuts every open connection and joins its thread.
fn accept(
    listener: &TcpListener,
    stopping: &AtomicBool,
    pipelines: &Arc<Vec<(String, NonBlocking)>>,
    limits: Limits,
) {
    let open: Open = Arc::default();
    let mut threads: Vec<JoinHandle<()>> = Vec::new();
    let mut next_id = 0u64;
    for stream in listener.incoming() {
        if stopping.load(Ordering::Acquire) {
            break;
        }
        let stream = match stream {
            Ok(s) => s,
            Err(_) => {
                // Out of descriptors, say: do not spin on it.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            }
        };
        // Finished threads are joined as they go, so the list stays near the cap.
        threads.retain(|t| !t.is_finished());
        // Ids grow with the accept order: the smallest is the oldest connection.
        let id = next_id;
        next_id += 1;
        {
            let mut registry = lock_open(&open);
            if registry.len() >= limits.max_connections && !make_room(&mut registry) {
                drop(registry);
                refuse(stream);
                continue;
            }
            match stream.try_clone() {
                Ok(clone) => registry.push(Conn {
                    id,
                    stream: clone,
                    phase: Phase::Head,
                }),
                Err(_) => continue,
            }
        }
        let (registry, pipelines) = (open.clone(), pipelines.clone());
        let spawned = std::thread::Builder::new()
            .name("loglag-metrics-conn".into())
            .spawn(move || {
                crate::sys::fork::block_async_signals();
                serve_connection(&stream, &pipelines, limits, |phase| {
                    enter(&registry, id, phase)
                });
                // Out of the registry first: then the socket's last descriptor is
                // this one, and dropping it closes the connection.
                lock_open(&registry).retain(|c| c.id != id);
                drop(stream);
            });
        match spawned {
            Ok(t) => threads.push(t),
            Err(_) => {
                let mut registry = lock_open(&open);
                if let Some(i) = registry.iter().position(|c| c.id == id) {
                    let c = registry.swap_remove(i);
                    let _ = c.stream.shutdown(Shutdown::Both);
                }
            }
        }
    }
    // Stopping: every connection's reads and writes end now, so its thread does too.
    for c in lock_open(&open).iter() {
        let _ = c.stream.shutdown(Shutdown::Both);
    }
    for t in threads {
        let _ = t.join();
    }
}

/// A connection beyond the cap while every open one is being answered: a 503 if the
/// socket takes it at once, then closed.
/// Nothing here waits on the client.
fn refuse(stream: TcpStream) {
    if stream.set_nonblocking(true).is_ok() {
        // Read what has already arrived, so the close does not reset the connection
        // under the answer.
        let mut buf = [0u8; 4096];
        for _ in 0..4 {
            match (&stream).read(&mut buf) {
                Ok(n) if n > 0 => {}
                _ => break,
            }
        }
        let _ = (&stream).write(REFUSED);
    }
    let _ = stream.shutdown(Shutdown::Write);
}

/// What a client sent before its head ended, its deadline passed or it went away.
enum Head {
    /// The request line (the head complete, or ended by EOF after that line).
    Request(Vec<u8>),
    /// More than `MAX_HEAD` bytes without the blank line that ends a head.
    TooLarge,
    /// Nothing to answer: the deadline passed, an error, or EOF before a request line.
    Nothing,
}

/// Reads a request head by `by`: the read timeout is the time left before each read,
/// so a client cannot extend the deadline by sending bytes.
fn read_head(stream: &TcpStream, by: Option<Instant>) -> Head {
    let mut buf = vec![0u8; MAX_HEAD];
    let mut len = 0;
    let request = |buf: &[u8]| {
        buf.iter()
            .position(|&b| b == b'\n')
            .map(|end| Head::Request(buf[..end].to_vec()))
    };
    loop {
        match read_by(stream, &mut buf[len..], by) {
            Ok(0) => return request(&buf[..len]).unwrap_or(Head::Nothing),
            Ok(n) => {
                // A head ends with an empty line: "\n\n" or "\n\r\n", looked for in
                // what arrived and the two bytes before it.
                let from = len.saturating_sub(2);
                len += n;
                let seen = &buf[from..len];
                if seen.windows(2).any(|w| w == b"\n\n") || seen.windows(3).any(|w| w == b"\n\r\n")
                {
                    return request(&buf[..len]).unwrap_or(Head::Nothing);
                }
                if len == buf.len() {
                    return Head::TooLarge;
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => return Head::Nothing,
        }
    }
}

/// One read by `by`: the read timeout is the time left before it (`TimedOut` once
/// none is).
#[cfg(not(windows))]
fn read_by(stream: &TcpStream, buf: &mut [u8], by: Option<Instant>) -> io::Result<usize> {
    stream.set_read_timeout(time_left(by)?)?;
    (&*stream).read(buf)
}

/// One read by `by` (`TimedOut` once no time is left). Windows does not wake a read
/// that is blocked when the socket is shut down through another handle
/// (rust-lang/rust#121594), which is how a stopping endpoint ends its connections,
/// and its poll does not report that shutdown either. So the read does not block: it
/// is tried, and while there is nothing yet, the socket is polled for at most 100 ms
/// before it is tried again; a try after the shutdown returns at once.
#[cfg(windows)]
fn read_by(stream: &TcpStream, buf: &mut [u8], by: Option<Instant>) -> io::Result<usize> {
    const SLICE: Duration = Duration::from_millis(100);
    stream.set_nonblocking(true)?;
    let read = loop {
        match (&*stream).read(buf) {
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                let slice = match time_left(by) {
                    Ok(left) => left.map_or(SLICE, |left| left.min(SLICE)),
                    Err(e) => break Err(e),
                };
                if let Err(e) = crate::sys::windows::wait_readable(stream, slice) {
                    break Err(e);
                }
            }
            other => break other,
        }
    };
    // Writes block again (with their own timeout).
    stream.set_nonblocking(false)?;
    read
}

/// Writes all of `bytes` by `by`, the write timeout the time left before each write.
fn write_by(stream: &TcpStream, mut bytes: &[u8], by: Option<Instant>) -> io::Result<()> {
    while !bytes.is_empty() {
        stream.set_write_timeout(time_left(by)?)?;
        match (&*stream).write(bytes) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(n) => bytes = &bytes[n..],
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// One connection, from its accept to its close: every step bounded by a deadline.
/// `enter` records each phase it moves to, and says false once the connection was
/// displaced to make room for a newer one (its socket is shut: nothing more is done).
fn serve_connection(
    stream: &TcpStream,
    pipelines: &[(String, NonBlocking)],
    limits: Limits,
    enter: impl Fn(Phase) -> bool,
) {
    let request = match read_head(stream, deadline_after(limits.head_deadline)) {
        Head::Request(line) => Some(line),
        Head::TooLarge => None,
        Head::Nothing => return,
    };
    if !enter(Phase::Answering) {
        return;
    }
    let (status, body) = match request {
        None => (
            "431 Request Header Fields Too Large",
            "request head too large\n".to_owned(),
        ),
        Some(line) if line.starts_with(b"GET ") => {
            let metrics: Vec<Metrics> = pipelines.iter().map(|(_, w)| w.metrics()).collect();
            let labelled: Vec<(Option<&str>, &Metrics)> = pipelines
                .iter()
                .zip(&metrics)
                .map(|((name, _), m)| (Some(name.as_str()), m))
                .collect();
            ("200 OK", text("loglag", &labelled))
        }
        Some(_) => ("405 Method Not Allowed", "only GET\n".to_owned()),
    };
    let answer = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let by = deadline_after(limits.head_deadline);
    if write_by(stream, answer.as_bytes(), by).is_err() || !enter(Phase::Draining) {
        return;
    }
    // The answer is whole; the client's EOF (or the deadline) ends the exchange. What
    // it still sends is read and dropped, so that the close does not reset the
    // connection before the client has read the answer.
    let _ = stream.shutdown(Shutdown::Write);
    let mut buf = [0u8; 4096];
    let mut drained = 0;
    while drained < MAX_DRAIN {
        match read_by(stream, &mut buf, by) {
            Ok(0) => break,
            Ok(n) => drained += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
}
