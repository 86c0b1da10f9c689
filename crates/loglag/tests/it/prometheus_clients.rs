//! The metrics endpoint against clients that misbehave: one dribbling its request a
//! byte at a time, idle connections, more connections than the cap (slowloris), an
//! oversized request head. None of them may hold up another client's scrape, and stopping the
//! server ends every thread it started.
//!
//! No verdict here depends on timing: ordering comes from channels, from the
//! listener's first-come-first-served accept queue, and from the state of sockets;
//! `GUARD` only turns a hang (today's failure) into a failure.

use crate::support;

use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use loglag::prometheus::{self, Limits, MetricsServer};
use loglag::WorkerGuard;

/// How long a client waits before a hang counts as a failure.
const GUARD: Duration = Duration::from_secs(30);

/// A head deadline no test reaches, so that a server-side close can only come from
/// something else than the deadline.
const NEVER: Duration = Duration::from_secs(600);

/// The tests run one at a time: the last one counts the process's endpoint threads.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// An endpoint for one pipeline (its guard must outlive the endpoint's use).
fn endpoint(limits: Option<Limits>) -> (MetricsServer, WorkerGuard) {
    let (writer, guard) = loglag::non_blocking(io::sink());
    let pipelines = vec![("app".to_owned(), writer)];
    let server = match limits {
        None => prometheus::serve("127.0.0.1:0", pipelines),
        Some(limits) => prometheus::serve_with("127.0.0.1:0", pipelines, limits),
    }
    .unwrap();
    (server, guard)
}

/// What a client read: every byte until EOF or the error that ended the read.
struct Response {
    bytes: Vec<u8>,
    error: Option<io::Error>,
}

impl Response {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
    fn status(&self) -> Option<&str> {
        std::str::from_utf8(&self.bytes)
            .ok()?
            .strip_prefix("HTTP/1.1 ")?
            .get(..3)
    }
    /// The client gave up waiting (the server neither answered nor closed).
    fn timed_out(&self) -> bool {
        self.error.as_ref().is_some_and(|e| {
            matches!(
                e.kind(),
                io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
            )
        })
    }
}

/// Sends `request` and reads the answer to EOF, giving up after `GUARD` of silence.
fn exchange(addr: SocketAddr, request: &[u8]) -> Response {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(GUARD)).unwrap();
    if let Err(e) = s.write_all(request) {
        return Response {
            bytes: Vec::new(),
            error: Some(e),
        };
    }
    let mut bytes = Vec::new();
    let error = s.read_to_end(&mut bytes).err();
    Response { bytes, error }
}

fn scrape(addr: SocketAddr) -> Response {
    exchange(
        addr,
        format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
}

/// A full `200` answer carrying the exposition.
fn assert_full_answer(r: &Response) {
    assert!(
        r.error.is_none(),
        "the scrape failed: {:?} after {:?}",
        r.error,
        r.text()
    );
    let text = r.text();
    let (head, body) = text.split_once("\r\n\r\n").expect("a complete answer");
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("Content-Length: "))
        .expect("Content-Length")
        .parse()
        .unwrap();
    assert_eq!(body.len(), length, "the whole body");
    assert!(
        body.contains("loglag_accepted_total{pipeline=\"app\"} 0"),
        "{body}"
    );
}

/// Whether the server still holds `s` open: nothing has arrived on it, not even EOF.
fn held_open_by_server(s: &TcpStream) -> bool {
    s.set_nonblocking(true).unwrap();
    let r = s.peek(&mut [0; 1]);
    s.set_nonblocking(false).unwrap();
    matches!(r, Err(e) if e.kind() == io::ErrorKind::WouldBlock)
}

/// Blocks until the server ends `s` (EOF, an answer, or a reset); false if it has not
/// within `GUARD`.
fn ended_by_server(s: &TcpStream) -> bool {
    s.set_read_timeout(Some(GUARD)).unwrap();
    match (&*s).read(&mut [0; 64]) {
        // EOF, or the first bytes of an answer: the server is done with the head.
        Ok(0 | 1..) => true,
        Err(e) => !matches!(
            e.kind(),
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
        ),
    }
}

/// A client that sends a plausible request head one byte per `period`, never
/// finishing it, until it is dropped or a write fails.
struct Dribbler {
    /// The same socket, for looking at it from the test.
    stream: TcpStream,
    /// Bytes sent so far, one message per byte.
    sent: Receiver<usize>,
    stop: Option<Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Dribbler {
    fn start(addr: SocketAddr, period: Duration) -> Dribbler {
        let stream = TcpStream::connect(addr).unwrap();
        let mine = stream.try_clone().unwrap();
        let (sent_tx, sent) = mpsc::channel();
        let (stop, stop_rx) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let head = b"GET /metrics HTTP/1.1\r\nX-Slow: ";
            for n in 1.. {
                let byte = head.get(n - 1).copied().unwrap_or(b'a');
                if (&mine).write_all(&[byte]).is_err() {
                    return;
                }
                let _ = sent_tx.send(n);
                match stop_rx.recv_timeout(period) {
                    Err(RecvTimeoutError::Timeout) => {}
                    _ => return,
                }
            }
        });
        Dribbler {
            stream,
            sent,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    /// Waits until it has sent `n` bytes.
    fn wait_sent(&self, n: usize) {
        loop {
            match self.sent.recv_timeout(GUARD) {
                Ok(sent) if sent >= n => return,
                Ok(_) => {}
                Err(e) => panic!("the dribbler stopped before sending {n} bytes: {e:?}"),
            }
        }
    }

    /// Still sending: not stopped, and no write of its has failed.
    fn dribbling(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }
}

impl Drop for Dribbler {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// A client connects and sends its request a byte a second, forever; meanwhile a
/// second client's scrape gets its whole answer, and gets it while the dribbler is
/// still dribbling and the server still holds its connection open (so the answer did
/// not wait for the dribbler to be cut off).
#[test]
fn a_client_dribbling_bytes_does_not_block_a_scrape() {
    let _serial = serial();
    let (server, _guard) = endpoint(Some(Limits::default().head_deadline(NEVER)));
    let addr = server.local_addr();
    // Declared after the server, so dropped before it.
    let dribbler = Dribbler::start(addr, Duration::from_secs(1));
    // Two bytes sent: the server has accepted the dribbler (first in its queue) and
    // is reading its head.
    dribbler.wait_sent(2);

    let r = scrape(addr);
    assert!(
        !r.timed_out(),
        "the scrape got no answer within {GUARD:?} while a client dribbled its request"
    );
    assert_full_answer(&r);
    assert!(
        dribbler.dribbling(),
        "the dribbler stopped before the answer"
    );
    assert!(
        held_open_by_server(&dribbler.stream),
        "the server let the dribbler go before it answered the scrape"
    );
}

/// Eight connections that send nothing are held open (the finding: they delayed a
/// scrape by 40.9 s, five seconds each, one after another); the scrape behind them
/// gets its whole answer. The server's default limits.
#[test]
fn idle_connections_do_not_delay_a_scrape() {
    let _serial = serial();
    let (server, _guard) = endpoint(None);
    let addr = server.local_addr();
    let idle: Vec<TcpStream> = (0..8).map(|_| TcpStream::connect(addr).unwrap()).collect();

    let r = scrape(addr);
    assert!(
        !r.timed_out(),
        "the scrape got no answer within {GUARD:?} behind {} idle connections",
        idle.len()
    );
    assert_full_answer(&r);
    drop(idle);
}

/// With 32 connections open (the default cap), none of them finished, the 33rd is
/// served at once, not queued and not refused: the oldest of the 32 (the first
/// accepted) is closed to make room, and only it; the other 31 are still open.
#[test]
fn a_full_endpoint_closes_its_oldest_unfinished_connection_for_a_newcomer() {
    let _serial = serial();
    let (server, _guard) = endpoint(Some(Limits::default().head_deadline(NEVER)));
    let addr = server.local_addr();
    let held: Vec<TcpStream> = (0..32).map(|_| TcpStream::connect(addr).unwrap()).collect();

    // Accepted after the 32 (the accept queue is first come, first served).
    let r = scrape(addr);
    assert!(
        !r.timed_out(),
        "the 33rd connection was queued: no answer within {GUARD:?}"
    );
    assert_full_answer(&r);
    assert!(
        ended_by_server(&held[0]),
        "the oldest unfinished connection was not closed to make room"
    );
    for (i, s) in held.iter().enumerate().skip(1) {
        assert!(
            held_open_by_server(s),
            "held connection {i}, not the oldest, was closed"
        );
    }
    drop(held);
}

/// The finding: 40 slowloris clients (more than the 32-connection cap), each having
/// sent part of a request line and then nothing, kept every slot: 0 of 48 scrapes
/// were answered (each got 503). Now each of 48 scrapes, one after another, gets its
/// whole answer while they hold on, and every slowloris connection is ended by the
/// server (displaced by a newcomer, or at its head deadline). The default limits.
#[test]
fn slowloris_connections_beyond_the_cap_never_keep_a_scrape_out() {
    let _serial = serial();
    let (server, _guard) = endpoint(None);
    let addr = server.local_addr();
    let slow: Vec<TcpStream> = (0..40)
        .map(|_| {
            let mut s = TcpStream::connect(addr).unwrap();
            s.write_all(b"GET /metrics HTT").unwrap();
            s
        })
        .collect();

    for i in 0..48 {
        let r = scrape(addr);
        assert!(
            !r.timed_out(),
            "scrape {i} got no answer within {GUARD:?} behind 40 slowloris connections"
        );
        assert!(
            r.status() == Some("200"),
            "scrape {i} behind 40 slowloris connections was not served: {:?}",
            r.text()
        );
        assert_full_answer(&r);
    }
    for (i, s) in slow.iter().enumerate() {
        assert!(
            ended_by_server(s),
            "slowloris connection {i} was still held open after {GUARD:?}"
        );
    }
}

/// A client that keeps sending bytes does not keep its connection: the head's
/// deadline (5 s by default) counts from the accept, and bytes do not extend it.
#[test]
fn a_dribbling_client_is_cut_off_at_the_head_deadline() {
    let _serial = serial();
    let (server, _guard) = endpoint(None);
    let dribbler = Dribbler::start(server.local_addr(), Duration::from_millis(200));
    dribbler.wait_sent(1);
    assert!(
        ended_by_server(&dribbler.stream),
        "a client sending a byte every 200 ms still held its connection after {GUARD:?}"
    );
}

/// A request head larger than the bound (16 KiB) is answered 431, not read on.
#[test]
fn an_oversized_request_head_is_refused() {
    let _serial = serial();
    let (server, _guard) = endpoint(None);
    let mut request = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
    request.resize(request.len() + (64 << 10), b'a');
    request.extend_from_slice(b"\r\n\r\n");
    let r = exchange(server.local_addr(), &request);
    assert!(!r.timed_out(), "no answer within {GUARD:?}");
    let text = r.text();
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    assert_eq!(r.status(), Some("431"), "{head:?} {:?}", r.error);
}

/// The endpoint's threads (`loglag-metrics…`) in this process.
fn endpoint_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
        .filter(|comm| comm.starts_with("loglag-metrics"))
        .count()
}

/// Stopping the server with a dribbler, idle connections and a finished scrape on it
/// returns, closes every connection it held, and leaves none of its threads behind.
#[test]
fn stopping_the_server_ends_every_connection_thread() {
    if crate::support::alone(
        module_path!(),
        "stopping_the_server_ends_every_connection_thread",
        &[],
    ) {
        return;
    }
    let _serial = serial();
    let (server, _guard) = endpoint(Some(Limits::default().head_deadline(NEVER)));
    let addr = server.local_addr();
    let dribbler = Dribbler::start(addr, Duration::from_millis(200));
    dribbler.wait_sent(1);
    let idle: Vec<TcpStream> = (0..4).map(|_| TcpStream::connect(addr).unwrap()).collect();
    // Accepted after the others, so all of them have been accepted when it is answered.
    let r = scrape(addr);
    assert!(!r.timed_out(), "no answer within {GUARD:?}");
    assert_full_answer(&r);
    // Threads are counted in /proc: Linux's.
    let threads_counted = cfg!(target_os = "linux");
    assert!(!threads_counted || endpoint_threads() >= 1 + 1 + idle.len());

    support::within(GUARD, "stopping the metrics server", move || drop(server));
    assert!(
        ended_by_server(&dribbler.stream),
        "the dribbler's connection"
    );
    for s in &idle {
        assert!(ended_by_server(s), "an idle connection");
    }
    // A joined thread's /proc entry can outlast the join by a moment.
    let deadline = Instant::now() + GUARD;
    while threads_counted && endpoint_threads() > 0 {
        assert!(
            Instant::now() < deadline,
            "{} endpoint threads left after the stop",
            endpoint_threads()
        );
        std::thread::yield_now();
    }
    let _ = dribbler.stream.shutdown(Shutdown::Both);
}
