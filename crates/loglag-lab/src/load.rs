//! The load generator. Open loop: request i is due at `t0 + i / rate` and is sent then,
//! whatever happened to earlier requests; its latency runs from that **scheduled** time
//! to the last byte of the body, so a stalled server cannot hide behind a stalled
//! client (coordinated omission). A closed-loop mode with N connections measures
//! throughput.

use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::Request;
use hyper_util::rt::TokioIo;
use serde::Serialize;
use tokio::net::TcpStream;

use crate::sys::clock::mono_ns;

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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum Connection {
    /// A new connection per request, `Connection: close` (the reference).
    #[default]
    New,
    /// Reuse idle connections; open more when all are busy.
    Keepalive,
}

impl Connection {
    /// Its name, as flags and reports (serde) spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Connection::New => "new",
            Connection::Keepalive => "keepalive",
        }
    }
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
    /// The X-Request-Id of the first request; the i-th carries `first_id + i`.
    pub first_id: u64,
}

impl LoadConfig {
    /// Checks what the load's own values must satisfy, whoever built it.
    pub fn validate(&self) -> Result<(), crate::plan_error::PlanError> {
        LoadConfig::check(self.rate, self.duration, self.closed)
    }

    /// [`LoadConfig::validate`] before there is a target: what a load of `rate` (or
    /// `closed` connections) for `duration` must satisfy.
    pub fn check(
        rate: f64,
        duration: Duration,
        closed: Option<usize>,
    ) -> Result<(), crate::plan_error::PlanError> {
        use crate::plan_error::PlanError;
        match closed {
            Some(0) => return Err(PlanError::AtLeastOne("--closed", " connection")),
            Some(_) => {}
            None if !(rate > 0.0 && rate.is_finite()) => {
                return Err(PlanError::NotPositive(
                    "--rate",
                    "a positive number of requests per second",
                ))
            }
            None => {}
        }
        if duration.is_zero() {
            return Err(PlanError::NotPositive("--duration", "positive"));
        }
        Ok(())
    }

    /// One request with X-Request-Id `id`, sent at once: a warm-up.
    pub fn single(target: Target, connection: Connection, id: u64) -> LoadConfig {
        LoadConfig {
            target,
            rate: 1000.0,
            duration: Duration::from_millis(1),
            connection,
            closed: None,
            grace: Duration::from_secs(10),
            first_id: id,
        }
    }
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

impl Outcome {
    /// Its name in reports, as serde writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Ok => "ok",
            Outcome::HttpError => "http_error",
            Outcome::IoError => "io_error",
            Outcome::Timeout => "timeout",
        }
    }
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

/// `loglag load`'s summary of one run of `config` against `url`: counts by outcome,
/// percentiles from every request, and how late the generator sent (an open loop only:
/// a closed loop has no schedule to be late for).
pub fn summarize(
    url: &str,
    config: &LoadConfig,
    result: &LoadResult,
    lateness_limit_us: f64,
) -> crate::report::LoadSummary {
    use crate::report::{Lateness, LoadSummary};
    let count = |o: Outcome| result.samples.iter().filter(|s| s.outcome == o).count() as u64;
    let mut latencies: Vec<u64> = result.samples.iter().filter_map(|s| s.latency_ns).collect();
    let ms = |v: Option<u64>| v.map(|ns| ns as f64 / 1e6);
    let lateness_ns: Vec<u64> = result.samples.iter().map(|s| s.send_lateness_ns).collect();
    let send_lateness = config
        .closed
        .is_none()
        .then(|| Lateness::of(&lateness_ns))
        .flatten();
    let ok = count(Outcome::Ok);
    // An interrupted run lasted as long as it ran, not as planned.
    let (duration_s, rate_over_s) = if result.interrupted {
        let ran = result.wall.as_secs_f64();
        (ran, ran.max(1e-9))
    } else {
        let planned = config.duration.as_secs_f64();
        (planned, result.wall.as_secs_f64().max(planned))
    };
    LoadSummary {
        schema: crate::report::SCHEMA,
        url: url.to_owned(),
        mode: if config.closed.is_some() { "closed" } else { "open" }.into(),
        rate: config.closed.is_none().then_some(config.rate),
        connections: config.closed,
        duration_s,
        requests: result.samples.len() as u64,
        ok,
        http_errors: count(Outcome::HttpError),
        io_errors: count(Outcome::IoError),
        timeouts: count(Outcome::Timeout),
        achieved_rps: ok as f64 / rate_over_s,
        p50_ms: ms(crate::stats::quantile(&mut latencies, 0.5)),
        p90_ms: ms(crate::stats::quantile(&mut latencies, 0.9)),
        p99_ms: ms(crate::stats::quantile(&mut latencies, 0.99)),
        p999_ms: ms(crate::stats::quantile(&mut latencies, 0.999)),
        max_ms: ms(crate::stats::quantile(&mut latencies, 1.0)),
        send_lateness,
        lateness_warning: send_lateness.and_then(|l| l.warning(lateness_limit_us)),
        interrupted: result.interrupted.then(|| {
            format!(
                "interrupted: {} requests finished before Ctrl-C are summarised; requests still in flight are not",
                result.samples.len()
            )
        }),
        floor: None,
    }
}

/// Everything a load run measured.
#[derive(Debug, Clone)]
pub struct LoadResult {
    /// The first scheduled send (`CLOCK_MONOTONIC` ns).
    pub t0_mono_ns: u64,
    /// Every request, exactly: percentiles are computed from these, not from buckets.
    pub samples: Vec<RequestSample>,
    pub wall: Duration,
    /// Stopped early through [`LoadProgress::stop`]: `samples` holds the requests that
    /// had finished by then.
    pub interrupted: bool,
}

/// Live counters of a load run, and a way to stop it early (Ctrl-C). Shared with
/// whoever shows progress.
#[derive(Debug, Default)]
pub struct LoadProgress {
    /// Set to stop: no further request is sent, and the result is returned at once
    /// with the requests finished so far.
    pub stop: Arc<std::sync::atomic::AtomicBool>,
    /// Requests sent (or, in the open loop, scheduled and handed to a connection).
    pub sent: AtomicU64,
    /// Requests finished, whatever their outcome.
    pub finished: AtomicU64,
}

impl LoadProgress {
    /// Progress that stops when `stop` is set.
    pub fn stopped_by(stop: Arc<std::sync::atomic::AtomicBool>) -> Arc<LoadProgress> {
        Arc::new(LoadProgress {
            stop,
            ..LoadProgress::default()
        })
    }

    fn stopping(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
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
    id: u64,
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
    // The request's index, so an app can log it and a loss can be placed in time.
    let mut request = Request::get(target.path.as_str())
        .header(hyper::header::HOST, target.host.as_str())
        .header("x-request-id", id);
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
    // A server that answers `Connection: close` is about to close the connection; hyper
    // may not have noticed yet when the next request picks it from the pool, and that
    // request would fail as an I/O error that is the generator's doing, not the API's.
    let server_closes = response
        .headers()
        .get(hyper::header::CONNECTION)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"close"));
    response
        .into_body()
        .collect()
        .await
        .map_err(std::io::Error::other)?;
    if mode == Connection::Keepalive && !server_closes && !sender.is_closed() {
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

/// The runtime a load runs on, its threads named `thread_name`.
///
/// An open loop runs on one worker: the schedule, each request and its connection stay
/// on that thread, and no second worker is woken to look for a task it cannot take. On
/// 2 cores at 500 requests/s (keep-alive) two workers put `loglag load`'s p50 at 1.30×
/// oha's latency-corrected p50 and one worker at 0.89× (median of 7 interleaved runs,
/// `scripts/oha-compare`): the woken worker is a third runnable thread beside the
/// generator and the server. One worker kept 20,000 and 40,000 requests/s as two did.
/// A closed loop is bound by throughput: a worker per core, at least two.
pub fn runtime(closed: bool, thread_name: &str) -> std::io::Result<tokio::runtime::Runtime> {
    let workers = if closed {
        std::thread::available_parallelism().map_or(2, |n| n.get().max(2))
    } else {
        1
    };
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(thread_name)
        .enable_all()
        .build()
}

/// Runs the load. Must be called inside a tokio runtime with I/O and time enabled;
/// [`runtime`] makes the one it runs best on.
pub async fn run(config: &LoadConfig) -> LoadResult {
    run_observed(config, Arc::default()).await
}

/// [`run`], counting into `progress` and stopping early when it says so.
pub async fn run_observed(config: &LoadConfig, progress: Arc<LoadProgress>) -> LoadResult {
    match config.closed {
        Some(n) => run_closed(config, n.max(1), progress).await,
        None => {
            // The schedule runs as a task on a worker thread, not on the thread that
            // called `block_on`: a task spawned from a worker starts on that worker
            // at its next yield, while one spawned from outside must wake a parked
            // worker first (measured: +25 to 45 µs per request on this VM).
            let config = config.clone();
            let mut task = AbortOnDrop(tokio::spawn(
                async move { run_open(&config, progress).await },
            ));
            match (&mut task.0).await {
                Ok(result) => result,
                Err(e) => std::panic::resume_unwind(e.into_panic()),
            }
        }
    }
}

/// Cancelling the load (dropping its future) stops the schedule too.
struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

async fn run_open(config: &LoadConfig, progress: Arc<LoadProgress>) -> LoadResult {
    let count = (config.rate * config.duration.as_secs_f64()).round() as u64;
    let interval_ns = 1e9 / config.rate.max(1e-9);
    let pool: Pool = Arc::default();
    let started = Instant::now();
    // A short lead so the first request is not already late.
    let t0_mono = mono_ns() + 5_000_000;
    let give_up = Instant::now()
        + Duration::from_nanos(t0_mono.saturating_sub(mono_ns()))
        + config.duration
        + config.grace;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    // Shared, so nothing is copied between a request's due time and its send.
    let target = Arc::new(config.target.clone());
    let pacer = Pacer::new()
        .ok()
        .map(|p| p.for_interval(Duration::from_nanos(interval_ns as u64)));
    for i in 0..count {
        if progress.stopping() {
            break;
        }
        let offset = (i as f64 * interval_ns).round() as u64;
        let due = t0_mono + offset;
        match &pacer {
            Some(pacer) if pacer.until(due).await.is_ok() => {}
            // No timerfd (not Linux, or out of descriptors): tokio's timer, coarser.
            _ => {
                let wait = due.saturating_sub(mono_ns());
                tokio::time::sleep(Duration::from_nanos(wait)).await;
            }
        }
        let target = target.clone();
        let pool = pool.clone();
        let tx = tx.clone();
        let mode = config.connection;
        let first_id = config.first_id;
        let progress_of_one = progress.clone();
        progress.sent.fetch_add(1, Ordering::Relaxed);
        tokio::spawn(async move {
            // Lateness and latency are both taken from the due time: a request the
            // generator sent late is still timed from when it should have gone.
            let sent = mono_ns();
            let result = tokio::time::timeout_at(
                give_up.into(),
                one_request(&target, mode, &pool, first_id + i),
            )
            .await;
            let done = mono_ns();
            let (connect_ns, latency_ns, status, outcome) =
                classify(result, Some(done.saturating_sub(due)));
            progress_of_one.finished.fetch_add(1, Ordering::Relaxed);
            let _ = tx.send(RequestSample {
                index: i,
                scheduled_ns: offset,
                send_lateness_ns: sent.saturating_sub(due),
                connect_ns,
                latency_ns,
                status,
                outcome,
                done_mono_ns: done,
            });
        });
    }
    drop(tx);
    collect(&mut rx, t0_mono, started, &progress).await
}

async fn run_closed(
    config: &LoadConfig,
    connections: usize,
    progress: Arc<LoadProgress>,
) -> LoadResult {
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
        let first_id = config.first_id;
        let progress = progress.clone();
        tokio::spawn(async move {
            let pool: Pool = Arc::default();
            while Instant::now() < end && !progress.stopping() {
                let sent = Instant::now();
                progress.sent.fetch_add(1, Ordering::Relaxed);
                let id = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let result = tokio::time::timeout_at(
                    give_up.into(),
                    one_request(&target, mode, &pool, first_id + id),
                )
                .await;
                let latency = Some(sent.elapsed().as_nanos() as u64);
                let (connect_ns, latency_ns, status, outcome) = classify(result, latency);
                progress.finished.fetch_add(1, Ordering::Relaxed);
                let _ = tx.send(RequestSample {
                    index: id,
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
    collect(&mut rx, t0_mono, started, &progress).await
}

async fn collect(
    rx: &mut tokio::sync::mpsc::UnboundedReceiver<RequestSample>,
    t0_mono_ns: u64,
    started: Instant,
    progress: &LoadProgress,
) -> LoadResult {
    let mut samples = Vec::new();
    let mut interrupted = false;
    // One interval for the whole loop: a sleep made per iteration would restart with
    // every sample and never fire under a steady stream of responses.
    let mut check = tokio::time::interval(Duration::from_millis(50));
    loop {
        tokio::select! {
            sample = rx.recv() => match sample {
                Some(s) => samples.push(s),
                None => break,
            },
            // Polled, not notified: the flag is set from a signal handler.
            _ = check.tick() => {
                if progress.stopping() {
                    interrupted = true;
                    // What has finished is in the channel; what is in flight is not
                    // waited for.
                    while let Ok(s) = rx.try_recv() {
                        samples.push(s);
                    }
                    break;
                }
            }
        }
    }
    samples.sort_by_key(|s| s.index);
    LoadResult {
        t0_mono_ns,
        samples,
        wall: started.elapsed(),
        // The schedule may have stopped and its last requests finished before a check.
        interrupted: interrupted || progress.stopping(),
    }
}

/// Waits for absolute `CLOCK_MONOTONIC` deadlines to within a few microseconds.
///
/// tokio's timer has a 1 ms granularity and rounds deadlines up, which made every
/// request about 1.5 ms late (measured: mean 1.53 ms at 500/s). A `timerfd` armed on an
/// absolute deadline is an hrtimer with no slack; its expiry wakes the runtime's
/// reactor like any socket. The timer is armed early and the rest is spun: waking a
/// parked worker takes tens of µs on bare metal and over 200 µs on an idle VM, so the
/// spin window follows the wake-up delays this machine shows, as TCP's retransmission
/// timer follows round trips: smoothed mean plus four mean deviations, between
/// [`Pacer::MIN_SPIN`] and [`Pacer::MAX_SPIN`].
#[derive(Debug)]
pub struct Pacer {
    timer: Timer,
    /// Smoothed wake-up delay (ns).
    smoothed_ns: AtomicU64,
    /// Smoothed mean deviation of the wake-up delay (ns).
    deviation_ns: AtomicU64,
    /// Upper bound on the spin window, set from the request interval.
    cap_ns: AtomicU64,
}

/// A timerfd, registered with tokio's reactor.
#[cfg(target_os = "linux")]
type Timer = tokio::io::unix::AsyncFd<std::os::fd::OwnedFd>;
/// No timerfd outside Linux: no `Pacer` can be made, and the load uses tokio's timer.
#[cfg(not(target_os = "linux"))]
type Timer = std::convert::Infallible;

impl Pacer {
    pub const MIN_SPIN: Duration = Duration::from_micros(30);
    /// At 20 requests/s this is at most 2% of a core.
    pub const MAX_SPIN: Duration = Duration::from_millis(1);

    /// Outside Linux there is no timerfd: the load falls back to tokio's timer.
    #[cfg(not(target_os = "linux"))]
    pub fn new() -> std::io::Result<Pacer> {
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "no timerfd outside Linux",
        ))
    }

    /// A pacer on the current tokio runtime (which must have I/O enabled).
    #[cfg(target_os = "linux")]
    pub fn new() -> std::io::Result<Pacer> {
        use std::os::fd::FromRawFd;
        // SAFETY: plain syscall; the result is checked before use.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        // SAFETY: `fd` was just created and is owned by nothing else.
        let owned = unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) };
        Ok(Pacer {
            // SAFETY: the `OwnedFd` keeps the descriptor open for the `AsyncFd`'s life.
            timer: unsafe {
                tokio::io::unix::AsyncFd::register_with_interest(
                    owned,
                    tokio::io::Interest::READABLE,
                )
            }
            .map_err(std::io::Error::from)?,
            smoothed_ns: AtomicU64::new(100_000),
            deviation_ns: AtomicU64::new(50_000),
            cap_ns: AtomicU64::new(Self::MAX_SPIN.as_nanos() as u64),
        })
    }

    /// Spins at most a quarter of `interval`: at high rates a spinning generator would
    /// take the core its own requests need (measured: 40,000/s fell 200 ms behind with
    /// an uncapped spin on 2 cores), and the workers are awake anyway.
    pub fn for_interval(self, interval: Duration) -> Pacer {
        self.cap_ns
            .store((interval / 4).as_nanos() as u64, Ordering::Relaxed);
        self
    }

    /// How long before a deadline the timer is set to fire.
    pub fn spin(&self) -> Duration {
        let window = self.smoothed_ns.load(Ordering::Relaxed)
            + 4 * self.deviation_ns.load(Ordering::Relaxed);
        let cap = Duration::from_nanos(self.cap_ns.load(Ordering::Relaxed));
        Duration::from_nanos(window)
            .clamp(Self::MIN_SPIN, Self::MAX_SPIN)
            .min(cap)
    }

    #[cfg(target_os = "linux")]
    fn observe_wake_delay(&self, delay_ns: u64) {
        let smoothed = self.smoothed_ns.load(Ordering::Relaxed) as i64;
        let deviation = self.deviation_ns.load(Ordering::Relaxed) as i64;
        let error = delay_ns as i64 - smoothed;
        self.deviation_ns.store(
            (deviation + (error.abs() - deviation) / 4) as u64,
            Ordering::Relaxed,
        );
        self.smoothed_ns
            .store((smoothed + error / 8) as u64, Ordering::Relaxed);
    }

    /// Never called: outside Linux no `Pacer` exists.
    #[cfg(not(target_os = "linux"))]
    pub async fn until(&self, _due_mono_ns: u64) -> std::io::Result<()> {
        match self.timer {}
    }

    /// Returns at `due_mono_ns` or just after; at once if it has passed.
    #[cfg(target_os = "linux")]
    pub async fn until(&self, due_mono_ns: u64) -> std::io::Result<()> {
        use std::os::fd::AsRawFd;
        let wake = due_mono_ns.saturating_sub(self.spin().as_nanos() as u64);
        if mono_ns() < wake {
            let spec = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: (wake / 1_000_000_000) as libc::time_t,
                    tv_nsec: (wake % 1_000_000_000) as libc::c_long,
                },
            };
            let fd = self.timer.get_ref().as_raw_fd();
            // SAFETY: `fd` is a timerfd we own; `spec` is a valid itimerspec.
            let rc = unsafe {
                libc::timerfd_settime(fd, libc::TFD_TIMER_ABSTIME, &spec, std::ptr::null_mut())
            };
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
            loop {
                let mut guard = self.timer.readable().await?;
                let mut expirations = [0u8; 8];
                // SAFETY: reads 8 bytes into an 8-byte buffer.
                let n = unsafe { libc::read(fd, expirations.as_mut_ptr().cast(), 8) };
                // Drained either way: the timer is one-shot, and EAGAIN means the
                // readiness was stale.
                guard.clear_ready();
                if n == 8 {
                    break;
                }
            }
            self.observe_wake_delay(mono_ns().saturating_sub(wake));
        }
        if mono_ns() < due_mono_ns {
            // One yield lets tasks that are ready run first (the request just
            // spawned, responses that arrived) instead of waiting behind the spin.
            // Behind schedule there is no yield at all, so a generator that fell
            // behind catches up in a burst rather than one request per yield.
            tokio::task::yield_now().await;
        }
        while mono_ns() < due_mono_ns {
            std::hint::spin_loop();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A load refuses, by its flag, what it cannot run: a rate that is not a positive
    /// number (unless a closed loop sets the pace), no connections, no duration.
    #[test]
    fn a_load_names_what_it_cannot_run_with() {
        let second = Duration::from_secs(1);
        assert_eq!(LoadConfig::check(20.0, second, None), Ok(()));
        assert_eq!(
            LoadConfig::check(0.0, second, Some(8)),
            Ok(()),
            "closed: no rate"
        );
        for rate in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = LoadConfig::check(rate, second, None)
                .unwrap_err()
                .to_string();
            assert!(err.starts_with("--rate must be"), "{rate}: {err}");
        }
        assert_eq!(
            LoadConfig::check(20.0, second, Some(0))
                .unwrap_err()
                .to_string(),
            "--closed must be at least 1 connection"
        );
        assert_eq!(
            LoadConfig::check(20.0, Duration::ZERO, None)
                .unwrap_err()
                .to_string(),
            "--duration must be positive"
        );
    }

    /// A connection mode's name is its serde name, which reports carry.
    #[test]
    fn connection_names_are_their_serde_names() {
        for c in [Connection::New, Connection::Keepalive] {
            assert_eq!(serde_json::to_value(c).unwrap(), c.as_str());
            assert_eq!(c.as_str().parse::<Connection>(), Ok(c));
        }
    }

    #[test]
    #[cfg(target_os = "linux")] // the pacer is a timerfd
    fn the_pacer_never_returns_before_the_deadline() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let pacer = Pacer::new().unwrap();
            // Deadlines inside the spin window, beyond it, and already past.
            for ahead_ns in [0u64, 10_000, 100_000, 3_000_000] {
                let due = mono_ns() + ahead_ns;
                pacer.until(due).await.unwrap();
                assert!(mono_ns() >= due, "returned early for +{ahead_ns} ns");
            }
            let past = mono_ns() - 1_000_000;
            pacer.until(past).await.unwrap();
            let spin = pacer.spin();
            assert!(spin >= Pacer::MIN_SPIN && spin <= Pacer::MAX_SPIN);
        });
    }

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
