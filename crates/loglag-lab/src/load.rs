//! The load generator. Open loop: request i is due at `t0 + i / rate` and is sent then,
//! whatever happened to earlier requests; its latency runs from that **scheduled** time
//! to the last byte of the body, so a stalled server cannot hide behind a stalled
//! client (coordinated omission). A closed-loop mode with N connections measures
//! throughput.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::net::TcpStream;

use crate::clock::mono_ns;

/// An `http://host:port/path` target.
#[derive(Debug, Clone)]
pub struct Target {
    pub addr: SocketAddr,
    pub host: String,
    pub path: String,
}

impl Target {
    /// Parses an `http://` URL. HTTPS is not supported: the lab measures loopback APIs.
    pub fn parse(url: &str) -> Result<Target, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!(
                "unsupported URL {url:?}: expected http://HOST:PORT/PATH (https is not supported)"
            )
        })?;
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/"),
        };
        let with_port = if host.contains(':') {
            host.to_owned()
        } else {
            format!("{host}:80")
        };
        let addr = with_port
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve {host:?}: {e}"))?
            .next()
            .ok_or_else(|| format!("{host:?} resolves to no address"))?;
        Ok(Target {
            addr,
            host: host.to_owned(),
            path: path.to_owned(),
        })
    }
}

/// Whether each request opens its own connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Connection {
    /// A new connection per request, `Connection: close` (the reference).
    #[default]
    New,
    /// Reuse idle connections; open more when all are busy.
    Keepalive,
}

impl std::str::FromStr for Connection {
    type Err = String;
    fn from_str(s: &str) -> Result<Connection, String> {
        match s {
            "new" | "close" => Ok(Connection::New),
            "keepalive" | "keep-alive" => Ok(Connection::Keepalive),
            other => Err(format!(
                "unknown connection mode {other:?}: expected new or keepalive"
            )),
        }
    }
}

/// Load settings.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    pub target: Target,
    /// Requests per second (open loop).
    pub rate: f64,
    pub duration: Duration,
    pub connection: Connection,
    /// Closed loop with this many connections instead of a schedule.
    pub closed: Option<usize>,
    /// How long unfinished requests may take after the schedule ends.
    pub grace: Duration,
}

/// How a request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// A response with a 2xx status.
    Ok,
    /// A response with another status.
    HttpError,
    /// Could not connect, or the connection failed mid-request.
    IoError,
    /// Not finished within the grace period.
    Timeout,
}

/// One request, as measured.
#[derive(Debug, Clone, Serialize)]
pub struct RequestSample {
    pub index: u64,
    /// Scheduled send time, from the start of the run.
    pub scheduled_ns: u64,
    /// Actual send − scheduled send.
    pub send_lateness_ns: u64,
    /// Time to connect (and handshake), when a connection was opened.
    pub connect_ns: Option<u64>,
    /// Scheduled send → last body byte (`None` for timeouts and I/O errors).
    pub latency_ns: Option<u64>,
    pub status: Option<u16>,
    pub outcome: Outcome,
    /// When the request finished (`CLOCK_MONOTONIC` ns).
    pub done_mono_ns: u64,
}

/// Everything a load run measured.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// The first scheduled send (`CLOCK_MONOTONIC` ns).
    pub t0_mono_ns: u64,
    /// Every request, exactly: percentiles are computed from these, not from buckets.
    pub samples: Vec<RequestSample>,
    pub wall: Duration,
}

impl LoadResult {
    /// When the last successful or failed response finished.
    pub fn last_response_mono_ns(&self) -> Option<u64> {
        self.samples
            .iter()
            .filter(|s| s.outcome != Outcome::Timeout)
            .map(|s| s.done_mono_ns)
            .max()
    }
}

type Pool = Arc<Mutex<Vec<SendRequest<Empty<Bytes>>>>>;

async fn connect(target: &Target) -> std::io::Result<SendRequest<Empty<Bytes>>> {
    let stream = TcpStream::connect(target.addr).await?;
    let _ = stream.set_nodelay(true);
    let (sender, conn) = http1::handshake(TokioIo::new(stream))
        .await
        .map_err(std::io::Error::other)?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// Sends one GET and reads the whole body. Returns (connect time, status).
async fn one_request(
    target: &Target,
    mode: Connection,
    pool: &Pool,
) -> std::io::Result<(Option<u64>, u16)> {
    let pooled = if mode == Connection::Keepalive {
        pool.lock().unwrap_or_else(|e| e.into_inner()).pop()
    } else {
        None
    };
    let (mut sender, connect_ns) = match pooled {
        Some(s) => (s, None),
        None => {
            let started = Instant::now();
            let s = connect(target).await?;
            (s, Some(started.elapsed().as_nanos() as u64))
        }
    };
    let mut request =
        Request::get(target.path.as_str()).header(hyper::header::HOST, target.host.as_str());
    if mode == Connection::New {
        request = request.header(hyper::header::CONNECTION, "close");
    }
    let request = request
        .body(Empty::<Bytes>::new())
        .map_err(std::io::Error::other)?;
    sender.ready().await.map_err(std::io::Error::other)?;
    let response = sender
        .send_request(request)
        .await
        .map_err(std::io::Error::other)?;
    let status = response.status().as_u16();
    response
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?;
    if mode == Connection::Keepalive && !sender.is_closed() {
        pool.lock().unwrap_or_else(|e| e.into_inner()).push(sender);
    }
    Ok((connect_ns, status))
}

type Attempt = Result<std::io::Result<(Option<u64>, u16)>, tokio::time::error::Elapsed>;

/// (connect time, latency, status, outcome) of one attempt. Only a response has a
/// latency: I/O errors and timeouts are counted, not timed.
fn classify(
    result: Attempt,
    latency: Option<u64>,
) -> (Option<u64>, Option<u64>, Option<u16>, Outcome) {
    match result {
        Ok(Ok((c, status))) if (200..300).contains(&status) => {
            (c, latency, Some(status), Outcome::Ok)
        }
        Ok(Ok((c, status))) => (c, latency, Some(status), Outcome::HttpError),
        Ok(Err(_)) => (None, None, None, Outcome::IoError),
        Err(_) => (None, None, None, Outcome::Timeout),
    }
}

/// Runs the load. Must be called inside a tokio runtime.
pub async fn run(config: &LoadConfig) -> LoadResult {
    match config.closed {
        Some(n) => run_closed(config, n.max(1)).await,
        None => run_open(config).await,
    }
}

async fn run_open(config: &LoadConfig) -> LoadResult {
    let count = (config.rate * config.duration.as_secs_f64()).round() as u64;
    let interval_ns = 1e9 / config.rate.max(1e-9);
    let pool: Pool = Arc::default();
    let started = Instant::now();
    // A short lead so the first request is not already late.
    let t0 = Instant::now() + Duration::from_millis(5);
    let t0_mono = mono_ns() + 5_000_000;
    let give_up = t0 + config.duration + config.grace;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // Shared, so nothing is copied between a request's due time and its send.
    let target = Arc::new(config.target.clone());
    for i in 0..count {
        let offset = Duration::from_nanos((i as f64 * interval_ns).round() as u64);
        let due = t0 + offset;
        tokio::time::sleep_until(due.into()).await;
        let target = target.clone();
        let pool = pool.clone();
        let tx = tx.clone();
        let mode = config.connection;
        tokio::spawn(async move {
            let sent = Instant::now();
            let result =
                tokio::time::timeout_at(give_up.into(), one_request(&target, mode, &pool)).await;
            let done = Instant::now();
            let latency = Some(done.duration_since(due).as_nanos() as u64);
            let (connect_ns, latency_ns, status, outcome) = classify(result, latency);
            let _ = tx.send(RequestSample {
                index: i,
                scheduled_ns: offset.as_nanos() as u64,
                send_lateness_ns: sent.saturating_duration_since(due).as_nanos() as u64,
                connect_ns,
                latency_ns,
                status,
                outcome,
                done_mono_ns: mono_ns(),
            });
        });
    }
    drop(tx);
    collect(&mut rx, t0_mono, started).await
}

async fn run_closed(config: &LoadConfig, connections: usize) -> LoadResult {
    let started = Instant::now();
    let t0 = Instant::now();
    let t0_mono = mono_ns();
    let end = t0 + config.duration;
    let give_up = end + config.grace;
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    for _ in 0..connections {
        let target = config.target.clone();
        let tx = tx.clone();
        let next = next.clone();
        let mode = config.connection;
        tokio::spawn(async move {
            let pool: Pool = Arc::default();
            while Instant::now() < end {
                let sent = Instant::now();
                let result =
                    tokio::time::timeout_at(give_up.into(), one_request(&target, mode, &pool))
                        .await;
                let latency = Some(sent.elapsed().as_nanos() as u64);
                let (connect_ns, latency_ns, status, outcome) = classify(result, latency);
                let _ = tx.send(RequestSample {
                    index: next.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    scheduled_ns: sent.duration_since(t0).as_nanos() as u64,
                    send_lateness_ns: 0,
                    connect_ns,
                    latency_ns,
                    status,
                    outcome,
                    done_mono_ns: mono_ns(),
                });
                if outcome == Outcome::Timeout {
                    break;
                }
            }
        });
    }
    drop(tx);
    collect(&mut rx, t0_mono, started).await
}

async fn collect(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<RequestSample>,
    t0_mono_ns: u64,
    started: Instant,
) -> LoadResult {
    let mut samples = Vec::new();
    while let Some(s) = rx.recv().await {
        samples.push(s);
    }
    samples.sort_by_key(|s| s.index);
    LoadResult {
        t0_mono_ns,
        samples,
        wall: started.elapsed(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse() {
        let t = Target::parse("http://127.0.0.1:8080/buy?x=1").unwrap();
        assert_eq!(t.addr.port(), 8080);
        assert_eq!(t.path, "/buy?x=1");
        assert_eq!(Target::parse("http://127.0.0.1:9").unwrap().path, "/");
        assert!(Target::parse("https://x").unwrap_err().contains("https"));
        assert!(Target::parse("127.0.0.1:80").is_err());
    }
}
