//! The API under test: HTTP/1.1 on 127.0.0.1 with hyper, one event loop by default.
//! Each request does a small fixed hash computation, logs according to its
//! [`Condition`], and returns a small fixed JSON body.

use std::convert::Infallible;
use std::fs::OpenOptions;
use std::io::{self, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TrySendError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpListener;

use crate::api::condition::{build_json_line, json_payload, short_line, Condition};
use crate::api::control::{self, Produced};
use crate::sys::clock::mono_ns;

/// SHA-256 rounds of fixed work per request in the reference setup.
pub const DEFAULT_HASH_ROUNDS: u32 = 100;

/// How to run the API.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ServeConfig {
    /// 0 picks a free port.
    pub port: u16,
    /// 1 is a single-threaded runtime (the reference); more is multi-threaded.
    pub threads: usize,
    pub condition: Condition,
    /// Where logs go: a FIFO or file path; `None` is standard output.
    pub log_path: Option<PathBuf>,
    /// SHA-256 rounds of fixed work per request (100 by default; 0 is a trivial server).
    pub hash_rounds: u32,
}

/// Where the API ended up listening.
#[derive(Debug, Clone)]
pub struct Listening {
    pub http: SocketAddr,
    pub control: control::ControlEndpoint,
}

/// The single line `serve` prints when ready; the runner parses it.
pub fn ready_line(l: &Listening, condition: Condition) -> String {
    format!(
        "listening http://{} control={} token={} condition={condition} pid={}",
        l.http,
        l.control.addr,
        l.control.token,
        std::process::id()
    )
}

/// Parses [`ready_line`].
pub fn parse_ready_line(line: &str) -> Option<Listening> {
    let http = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("http://"))?
        .parse()
        .ok()?;
    let addr = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("control="))?
        .parse()
        .ok()?;
    let token = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("token="))?
        .to_owned();
    Some(Listening {
        http,
        control: control::ControlEndpoint { addr, token },
    })
}

/// A writer that records what reached the sink, for verification.
struct Counting<W> {
    inner: W,
    produced: Arc<Produced>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.produced.wrote(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

type SinkWriter = Counting<Box<dyn Write + Send>>;

enum Logger {
    Nothing,
    Sync(Mutex<SinkWriter>),
    Queue(SyncSender<Vec<u8>>),
    Loglag(loglag::NonBlocking, #[allow(dead_code)] loglag::WorkerGuard),
    Appender(
        tracing_appender::non_blocking::NonBlocking,
        #[allow(dead_code)] tracing_appender::non_blocking::WorkerGuard,
    ),
    MemoryBuffer(Arc<MemoryBuffer>),
    TokioFs(tokio::sync::Mutex<tokio::fs::File>),
}

/// MemoryHandler semantics: keep up to `capacity` records; the caller that fills it (or
/// logs an ERROR) writes them all, synchronously.
struct MemoryBuffer {
    capacity: usize,
    state: Mutex<(Vec<u8>, usize, SinkWriter)>,
}

impl MemoryBuffer {
    fn push(&self, record: &[u8]) -> io::Result<()> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0.extend_from_slice(record);
        s.1 += 1;
        if s.1 >= self.capacity {
            Self::write_out(&mut s)?;
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        Self::write_out(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn write_out(s: &mut (Vec<u8>, usize, SinkWriter)) -> io::Result<()> {
        let (buf, count, writer) = s;
        writer.write_all(buf)?;
        writer.flush()?;
        buf.clear();
        *count = 0;
        Ok(())
    }
}

struct App {
    condition: Condition,
    hash_rounds: u32,
    logger: Logger,
    produced: Arc<Produced>,
    payload: String,
    prebuilt: Vec<u8>,
    short: Vec<u8>,
}

fn open_sink(path: &Option<PathBuf>, produced: &Arc<Produced>) -> io::Result<SinkWriter> {
    let inner: Box<dyn Write + Send> = match path {
        None => Box::new(io::stdout()),
        Some(p) => Box::new(
            OpenOptions::new()
                .append(true)
                .create(true)
                .open(p)
                .map_err(|e| {
                    io::Error::new(
                        e.kind(),
                        format!("cannot open log sink {}: {e}", p.display()),
                    )
                })?,
        ),
    };
    Ok(Counting {
        inner,
        produced: produced.clone(),
    })
}

/// A thread that writes each record it receives, as Python's QueueListener does.
fn queue_writer(rx: Receiver<Vec<u8>>, mut sink: SinkWriter) {
    for record in rx {
        if sink.write_all(&record).and_then(|()| sink.flush()).is_err() {
            sink.produced.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// Reference 003's design: batch records and write at 32 KiB or every 100 ms.
fn batch_writer(rx: Receiver<Vec<u8>>, mut sink: SinkWriter) {
    const BATCH: usize = 32 << 10;
    const INTERVAL: Duration = Duration::from_millis(100);
    let mut batch = Vec::with_capacity(2 * BATCH);
    let mut last = Instant::now();
    loop {
        let wait = INTERVAL.saturating_sub(last.elapsed());
        let closed = match rx.recv_timeout(wait) {
            Ok(record) => {
                batch.extend_from_slice(&record);
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        if batch.len() >= BATCH || last.elapsed() >= INTERVAL || closed {
            if !batch.is_empty() && sink.write_all(&batch).and_then(|()| sink.flush()).is_err() {
                sink.produced.dropped.fetch_add(1, Ordering::Relaxed);
            }
            batch.clear();
            last = Instant::now();
        }
        if closed {
            return;
        }
    }
}

impl App {
    fn new(config: &ServeConfig, produced: Arc<Produced>) -> io::Result<App> {
        let payload = json_payload();
        let mut prebuilt = Vec::new();
        build_json_line(&mut prebuilt, 0, mono_ns(), &payload);
        let sink = || open_sink(&config.log_path, &produced);
        let logger = match config.condition {
            Condition::None | Condition::JsonGen => Logger::Nothing,
            Condition::Short1
            | Condition::Short10
            | Condition::JsonPreSync
            | Condition::JsonSync => Logger::Sync(Mutex::new(sink()?)),
            Condition::JsonQueue | Condition::ChannelBatch => {
                let (tx, rx) = mpsc::sync_channel(if config.condition == Condition::JsonQueue {
                    256
                } else {
                    1024
                });
                let sink = sink()?;
                let batch = config.condition == Condition::ChannelBatch;
                std::thread::Builder::new()
                    .name("log-writer".into())
                    .spawn(move || {
                        if batch {
                            batch_writer(rx, sink)
                        } else {
                            queue_writer(rx, sink)
                        }
                    })?;
                Logger::Queue(tx)
            }
            Condition::Loglag => {
                let (nb, guard) = loglag::NonBlockingBuilder::default()
                    .try_finish_sink(loglag::sink::WriterSink::new(sink()?))?;
                Logger::Loglag(nb, guard)
            }
            Condition::TracingAppender => {
                let (nb, guard) = tracing_appender::non_blocking(sink()?);
                Logger::Appender(nb, guard)
            }
            Condition::MemoryBuffer => Logger::MemoryBuffer(Arc::new(MemoryBuffer {
                capacity: 100,
                state: Mutex::new((Vec::new(), 0, sink()?)),
            })),
            Condition::TokioFs => {
                let path = config
                    .log_path
                    .clone()
                    .ok_or_else(|| io::Error::other("tokio-fs needs --log PATH"))?;
                let file = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&path)?;
                Logger::TokioFs(tokio::sync::Mutex::new(tokio::fs::File::from_std(file)))
            }
        };
        Ok(App {
            condition: config.condition,
            hash_rounds: config.hash_rounds,
            logger,
            produced,
            payload,
            prebuilt,
            short: short_line(),
        })
    }

    /// Drops and queue-full events, where the logger keeps them itself.
    fn logger_drops(&self) -> Option<(u64, u64)> {
        match &self.logger {
            Logger::Loglag(nb, _) => {
                let m = nb.metrics();
                Some((m.dropped_records, m.queue_full_events))
            }
            Logger::Appender(nb, _) => {
                let dropped = nb.error_counter().dropped_lines() as u64;
                Some((dropped, dropped))
            }
            _ => None,
        }
    }

    fn flush(&self) {
        match &self.logger {
            Logger::MemoryBuffer(m) => {
                let _ = m.flush();
            }
            Logger::Loglag(nb, _) => {
                let _ = nb.flush(Duration::from_secs(30));
            }
            _ => {}
        }
    }

    async fn handle(&self, id: u64) -> io::Result<()> {
        let p = &self.produced;
        let timed = |counter: &std::sync::atomic::AtomicU64,
                     count: &std::sync::atomic::AtomicU64,
                     since: Instant| {
            counter.fetch_add(since.elapsed().as_nanos() as u64, Ordering::Relaxed);
            count.fetch_add(1, Ordering::Relaxed);
        };
        let mut line = Vec::new();
        if self.condition.builds_json() {
            let started = Instant::now();
            build_json_line(&mut line, id, mono_ns(), &self.payload);
            timed(&p.gen_ns, &p.gen_count, started);
            std::hint::black_box(&line);
        }
        let started = Instant::now();
        let bytes = self.condition.bytes_per_request() as u64;
        p.handed_off_bytes.fetch_add(bytes, Ordering::Relaxed);
        match (&self.logger, self.condition) {
            (Logger::Nothing, _) => return Ok(()),
            (Logger::Sync(w), c) => {
                let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
                match c {
                    Condition::Short1 => write_flush(&mut w, &self.short)?,
                    Condition::Short10 => {
                        for _ in 0..10 {
                            write_flush(&mut w, &self.short)?;
                        }
                    }
                    Condition::JsonPreSync => write_flush(&mut w, &self.prebuilt)?,
                    _ => write_flush(&mut w, &line)?,
                }
            }
            (Logger::Queue(tx), _) => match tx.try_send(line) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    p.queue_full.fetch_add(1, Ordering::Relaxed);
                    p.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Err(TrySendError::Disconnected(_)) => {
                    return Err(io::Error::other("log writer thread died"))
                }
            },
            (Logger::Loglag(nb, _), _) => nb.submit(loglag::Level::Info, &line),
            (Logger::Appender(nb, _), _) => nb.clone().write_all(&line)?,
            (Logger::MemoryBuffer(m), _) => m.push(&line)?,
            (Logger::TokioFs(f), _) => {
                let mut f = f.lock().await;
                f.write_all(&line).await?;
                f.flush().await?;
                p.wrote(&line);
            }
        }
        timed(&p.log_ns, &p.log_count, started);
        Ok(())
    }
}

fn write_flush(w: &mut SinkWriter, bytes: &[u8]) -> io::Result<()> {
    w.write_all(bytes)?;
    w.flush()
}

/// The fixed per-request work: a small hash chain.
fn work(id: u64, rounds: u32) -> String {
    let mut digest = Sha256::digest(b"loglag fixed work input 0123456789");
    for _ in 0..rounds {
        digest = Sha256::digest(digest);
    }
    format!("{{\"ok\":true,\"id\":{id},\"digest\":\"{:x}\"}}", digest)
}

/// Runs the API until the process is killed. `ready` is called once it listens.
pub fn serve(config: ServeConfig, ready: impl FnOnce(Listening)) -> io::Result<()> {
    let runtime = if config.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(config.threads)
            .enable_all()
            .build()?
    };
    runtime.block_on(async move {
        let produced = Arc::new(Produced::default());
        let app = Arc::new(App::new(&config, produced.clone())?);
        let listener = TcpListener::bind(("127.0.0.1", config.port))
            .await
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("cannot listen on 127.0.0.1:{}: {e}", config.port),
                )
            })?;
        let for_control = app.clone();
        let for_drops = app.clone();
        produced.set_drop_source(Box::new(move || for_drops.logger_drops()));
        let control = control::serve(produced, Box::new(move || for_control.flush()))?;
        ready(Listening {
            http: listener.local_addr()?,
            control,
        });
        let next_id = Arc::new(std::sync::atomic::AtomicU64::new(0));
        loop {
            let (stream, _) = listener.accept().await?;
            let _ = stream.set_nodelay(true);
            let app = app.clone();
            let next_id = next_id.clone();
            tokio::spawn(async move {
                let service = service_fn(move |_req: Request<Incoming>| {
                    let app = app.clone();
                    let id = next_id.fetch_add(1, Ordering::Relaxed);
                    async move {
                        app.produced.requests.fetch_add(1, Ordering::Relaxed);
                        let body = work(id, app.hash_rounds);
                        let response = match app.handle(id).await {
                            Ok(()) => Response::new(Full::new(Bytes::from(body))),
                            Err(e) => {
                                let mut r = Response::new(Full::new(Bytes::from(format!(
                                    "{{\"error\":\"log write failed: {e}\"}}"
                                ))));
                                *r.status_mut() = hyper::StatusCode::INTERNAL_SERVER_ERROR;
                                r
                            }
                        };
                        Ok::<_, Infallible>(response)
                    }
                });
                let _ = http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_line_round_trips() {
        let l = Listening {
            http: "127.0.0.1:8080".parse().unwrap(),
            control: control::ControlEndpoint {
                addr: "127.0.0.1:9090".parse().unwrap(),
                token: "00ff".into(),
            },
        };
        let parsed = parse_ready_line(&ready_line(&l, Condition::JsonSync)).unwrap();
        assert_eq!(parsed.http, l.http);
        assert_eq!(parsed.control, l.control);
    }
}
