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

use crate::api::collector::{Collector, Protocol};
use crate::api::condition::{
    build_json_line, build_text_line, json_payload, shape_records, short_line, Condition,
    RecordLevel, RecordShape,
};
use crate::api::control::{self, LoggerCounts, Produced};
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
    /// What each request logs, for the conditions that build records.
    #[serde(default)]
    pub record: RecordShape,
    /// Every Nth request logs an ERROR (`--error-every`), which flushes memory buffers.
    #[serde(default)]
    pub error_every: Option<u64>,
    /// A delay before every write to the sink, on whichever thread writes: a slow disk.
    #[serde(default)]
    pub write_delay: Option<Duration>,
    /// The `loglag` condition's batch size and flush interval [default: loglag's].
    #[serde(default)]
    pub loglag_batch_bytes: Option<usize>,
    #[serde(default)]
    pub loglag_flush_interval: Option<Duration>,
}

impl ServeConfig {
    /// The built-in API on `condition` with every other setting at its default.
    pub fn new(condition: Condition) -> ServeConfig {
        ServeConfig {
            port: 0,
            threads: 1,
            condition,
            log_path: None,
            hash_rounds: DEFAULT_HASH_ROUNDS,
            record: RecordShape::default(),
            error_every: None,
            write_delay: None,
            loglag_batch_bytes: None,
            loglag_flush_interval: None,
        }
    }
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

/// A writer that records what reached the sink, for verification, and that can be made
/// slow (`--sinks slow-disk`).
struct Counting<W> {
    inner: W,
    produced: Arc<Produced>,
    delay: Option<Duration>,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(delay) = self.delay {
            // The slow disk itself: whoever writes waits, as on a saturated device.
            std::thread::sleep(delay);
        }
        self.produced.write_calls.fetch_add(1, Ordering::Relaxed);
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
    /// A channel to a writer thread, and the thread, joined at shutdown.
    Queue(
        SyncSender<ToWriter>,
        Mutex<Option<std::thread::JoinHandle<()>>>,
    ),
    /// The guards are dropped at shutdown, as `main` returning would drop them: that is
    /// when each library writes (or gives up on) what it still queues.
    Loglag(loglag::NonBlocking, Mutex<Option<loglag::WorkerGuard>>),
    Appender(
        tracing_appender::non_blocking::NonBlocking,
        Mutex<Option<tracing_appender::non_blocking::WorkerGuard>>,
    ),
    MemoryBuffer(Arc<MemoryBuffer>),
    TokioFs(tokio::sync::Mutex<tokio::fs::File>, Option<Duration>),
}

/// What the handlers and the control channel send a writer thread.
enum ToWriter {
    /// A record; `error` makes a memory buffer write what it holds.
    Record { bytes: Vec<u8>, error: bool },
    /// Write everything received so far, then answer.
    Flush(SyncSender<()>),
    /// Write everything and end.
    Stop,
}

/// MemoryHandler semantics: keep up to `capacity` records; the caller that fills it (or
/// logs an ERROR) writes them all, synchronously, in the order they were logged.
struct MemoryBuffer {
    capacity: usize,
    state: Mutex<(Vec<u8>, usize, SinkWriter)>,
}

impl MemoryBuffer {
    fn new(capacity: usize, sink: SinkWriter) -> MemoryBuffer {
        MemoryBuffer {
            capacity,
            state: Mutex::new((Vec::new(), 0, sink)),
        }
    }

    fn push(&self, record: &[u8], error: bool) -> io::Result<()> {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.0.extend_from_slice(record);
        s.1 += 1;
        if s.1 >= self.capacity || error {
            Self::write_out(&mut s)?;
        }
        Ok(())
    }

    fn flush(&self) -> io::Result<()> {
        Self::write_out(&mut self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn write_out(s: &mut (Vec<u8>, usize, SinkWriter)) -> io::Result<()> {
        let (buf, count, writer) = s;
        if buf.is_empty() {
            return Ok(());
        }
        writer.write_all(buf)?;
        writer.flush()?;
        buf.clear();
        *count = 0;
        Ok(())
    }
}

/// Kernel buffer per side of a network condition's connection (see `App::new`).
const COLLECTOR_BUFFER: usize = 64 << 10;

struct App {
    condition: Condition,
    /// The network conditions' collector, and the format records are wrapped in for it.
    collector: Option<Collector>,
    wrap: Option<loglag::Format>,
    hash_rounds: u32,
    record: RecordShape,
    error_every: Option<u64>,
    logger: Logger,
    produced: Arc<Produced>,
    payload: String,
    prebuilt: Vec<u8>,
    short: Vec<u8>,
    /// Numbers records in the order they are logged, so the reader can check that a
    /// buffer writes them in that order.
    next_seq: std::sync::atomic::AtomicU64,
}

fn open_sink(
    path: &Option<PathBuf>,
    produced: &Arc<Produced>,
    delay: Option<Duration>,
) -> io::Result<SinkWriter> {
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
        delay,
    })
}

/// A thread that writes each record it receives, as Python's QueueListener does.
fn queue_writer(rx: Receiver<ToWriter>, mut sink: SinkWriter) {
    for message in rx {
        match message {
            ToWriter::Record { bytes, .. } => {
                if sink.write_all(&bytes).and_then(|()| sink.flush()).is_err() {
                    sink.produced.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            ToWriter::Flush(ack) => {
                let _ = ack.send(());
            }
            ToWriter::Stop => return,
        }
    }
}

/// A QueueListener whose target is a MemoryHandler: the thread buffers what it receives
/// and writes when the buffer is full or an ERROR arrives.
fn queue_memory_writer(rx: Receiver<ToWriter>, buffer: MemoryBuffer) {
    for message in rx {
        match message {
            ToWriter::Record { bytes, error } => {
                if buffer.push(&bytes, error).is_err() {
                    let state = buffer.state.lock().unwrap_or_else(|e| e.into_inner());
                    state.2.produced.dropped.fetch_add(1, Ordering::Relaxed);
                }
            }
            ToWriter::Flush(ack) => {
                let _ = buffer.flush();
                let _ = ack.send(());
            }
            ToWriter::Stop => break,
        }
    }
    let _ = buffer.flush();
}

/// Reference 003's design: batch records and write at 32 KiB or every 100 ms.
fn batch_writer(rx: Receiver<ToWriter>, mut sink: SinkWriter) {
    const BATCH: usize = 32 << 10;
    const INTERVAL: Duration = Duration::from_millis(100);
    let mut batch = Vec::with_capacity(2 * BATCH);
    let mut last = Instant::now();
    loop {
        let wait = INTERVAL.saturating_sub(last.elapsed());
        let (write_now, ack, stop) = match rx.recv_timeout(wait) {
            Ok(ToWriter::Record { bytes, .. }) => {
                batch.extend_from_slice(&bytes);
                (false, None, false)
            }
            Ok(ToWriter::Flush(ack)) => (true, Some(ack), false),
            Ok(ToWriter::Stop) | Err(RecvTimeoutError::Disconnected) => (true, None, true),
            Err(RecvTimeoutError::Timeout) => (false, None, false),
        };
        if write_now || batch.len() >= BATCH || last.elapsed() >= INTERVAL {
            if !batch.is_empty() && sink.write_all(&batch).and_then(|()| sink.flush()).is_err() {
                sink.produced.dropped.fetch_add(1, Ordering::Relaxed);
            }
            batch.clear();
            last = Instant::now();
        }
        if let Some(ack) = ack {
            let _ = ack.send(());
        }
        if stop {
            return;
        }
    }
}

impl App {
    fn new(config: &ServeConfig, produced: Arc<Produced>) -> io::Result<App> {
        let payload = json_payload();
        let mut prebuilt = Vec::new();
        build_json_line(&mut prebuilt, 0, mono_ns(), &payload);
        let sink = || open_sink(&config.log_path, &produced, config.write_delay);
        let writer_thread = |body: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name("log-writer".into())
                .spawn(body)
        };
        let mut collector = None;
        let logger = match config.condition {
            Condition::None | Condition::JsonGen => Logger::Nothing,
            Condition::Short1
            | Condition::Short10
            | Condition::JsonPreSync
            | Condition::JsonSync
            | Condition::FileSync
            | Condition::SyncWriteln => Logger::Sync(Mutex::new(sink()?)),
            Condition::JsonQueue | Condition::ChannelBatch | Condition::QueueMemory100 => {
                let (tx, rx) = mpsc::sync_channel(if config.condition == Condition::JsonQueue {
                    256
                } else {
                    1024
                });
                let sink = sink()?;
                let thread = match config.condition {
                    Condition::ChannelBatch => {
                        writer_thread(Box::new(move || batch_writer(rx, sink)))?
                    }
                    Condition::QueueMemory100 => writer_thread(Box::new(move || {
                        queue_memory_writer(rx, MemoryBuffer::new(100, sink))
                    }))?,
                    _ => writer_thread(Box::new(move || queue_writer(rx, sink)))?,
                };
                Logger::Queue(tx, Mutex::new(Some(thread)))
            }
            Condition::Loglag | Condition::LoglagSpool => {
                let mut builder = loglag::NonBlockingBuilder::default();
                if config.condition == Condition::LoglagSpool {
                    let log = config.log_path.as_deref().ok_or_else(|| {
                        io::Error::other(
                            "loglag-spool needs --log PATH: its spool lives next to it",
                        )
                    })?;
                    builder = builder.spool(crate::api::condition::spool_path_for(log));
                }
                if let Some(bytes) = config.loglag_batch_bytes {
                    builder = builder.batch_bytes(bytes);
                }
                if let Some(interval) = config.loglag_flush_interval {
                    builder = builder.flush_interval(interval);
                }
                let (nb, guard) = builder.build(loglag::sink::WriterSink::new(sink()?))?;
                Logger::Loglag(nb, Mutex::new(Some(guard)))
            }
            Condition::TracingAppender => {
                let (nb, guard) = tracing_appender::non_blocking(sink()?);
                Logger::Appender(nb, Mutex::new(Some(guard)))
            }
            Condition::MemoryBuffer | Condition::MemoryBuffer50 | Condition::MemoryBuffer200 => {
                let capacity = config
                    .condition
                    .memory_buffer()
                    .expect("a buffering condition");
                Logger::MemoryBuffer(Arc::new(MemoryBuffer::new(capacity, sink()?)))
            }
            c @ (Condition::LoglagSyslog
            | Condition::SyslogSync
            | Condition::LoglagOtlp
            | Condition::OtlpSync) => {
                let protocol = c.collector().expect("a network condition");
                let started = Collector::start(protocol, Box::new(sink()?), produced.clone())?;
                let net: Box<dyn loglag::sink::Sink> = match protocol {
                    // 64 KiB of kernel buffer on each side, as a pipe has: without a
                    // bound the kernel's buffers (up to `net.ipv4.tcp_wmem`'s 4 MiB
                    // here) absorbed a whole 2 s run and syslog-sync never met the
                    // slow collector (README, "A slow collector").
                    Protocol::Syslog => Box::new(
                        loglag::sink::Syslog::tcp(started.addr)?.send_buffer(COLLECTOR_BUFFER),
                    ),
                    Protocol::Otlp => Box::new(
                        loglag::sink::Otlp::http(&format!("http://{}/v1/logs", started.addr))?
                            .service_name("loglag-lab-api")
                            // A second of retries: an outage longer than that costs
                            // counted drops, a shorter one only waits (and may repeat a
                            // batch the collector took but could not answer).
                            .retry_for(Duration::from_secs(1)),
                    ),
                };
                let mut builder = loglag::NonBlockingBuilder::default();
                if matches!(c, Condition::SyslogSync | Condition::OtlpSync) {
                    builder = builder.mode(loglag::Mode::Sync);
                }
                if let Some(bytes) = config.loglag_batch_bytes {
                    builder = builder.batch_bytes(bytes);
                }
                if let Some(interval) = config.loglag_flush_interval {
                    builder = builder.flush_interval(interval);
                }
                let (nb, guard) = builder.build(net)?;
                collector = Some(started);
                Logger::Loglag(nb, Mutex::new(Some(guard)))
            }
            Condition::TokioFs => {
                let path = config
                    .log_path
                    .clone()
                    .ok_or_else(|| io::Error::other("tokio-fs needs --log PATH"))?;
                let file = std::fs::OpenOptions::new()
                    .append(true)
                    .create(true)
                    .open(&path)?;
                Logger::TokioFs(
                    tokio::sync::Mutex::new(tokio::fs::File::from_std(file)),
                    config.write_delay,
                )
            }
        };
        let wrap = config.condition.collector().map(|protocol| match protocol {
            Protocol::Syslog => loglag::Format::Syslog,
            Protocol::Otlp => loglag::Format::Json,
        });
        Ok(App {
            condition: config.condition,
            collector,
            wrap,
            hash_rounds: config.hash_rounds,
            record: config.record,
            error_every: config.error_every.filter(|&n| n > 0),
            logger,
            produced,
            payload,
            prebuilt,
            short: short_line(),
            next_seq: Default::default(),
        })
    }

    /// Drops and queue-full events, where the logger keeps them itself.
    fn logger_drops(&self) -> Option<LoggerCounts> {
        match &self.logger {
            Logger::Loglag(nb, _) => {
                let m = nb.metrics();
                Some(LoggerCounts {
                    dropped: m.dropped_records(),
                    queue_full: m.queue_full_events,
                    oldest_queued_us: m.oldest_queued_age.map(|a| a.as_micros() as u64),
                })
            }
            Logger::Appender(nb, _) => {
                let dropped = nb.error_counter().dropped_lines() as u64;
                Some(LoggerCounts {
                    dropped,
                    queue_full: dropped,
                    oldest_queued_us: None,
                })
            }
            _ => None,
        }
    }

    /// Writes what the logger still holds (the control channel's `flush`).
    fn flush(&self) {
        match &self.logger {
            Logger::MemoryBuffer(m) => {
                let _ = m.flush();
            }
            Logger::Loglag(nb, _) => {
                let _ = nb.flush(Duration::from_secs(30));
            }
            Logger::Queue(tx, _) => {
                // Blocks only the control thread (or the shutdown), never a handler.
                let (ack, acked) = mpsc::sync_channel(1);
                if tx.send(ToWriter::Flush(ack)).is_ok() {
                    let _ = acked.recv_timeout(Duration::from_secs(30));
                }
            }
            _ => {}
        }
    }

    /// What a well-behaved service does at SIGTERM: write everything it holds,
    /// writer threads included, before it exits.
    fn shutdown(&self) {
        self.flush();
        match &self.logger {
            Logger::Queue(tx, thread) if tx.send(ToWriter::Stop).is_ok() => {
                if let Some(t) = thread.lock().unwrap_or_else(|e| e.into_inner()).take() {
                    let _ = t.join();
                }
            }
            Logger::Loglag(_, guard) => {
                drop(guard.lock().unwrap_or_else(|e| e.into_inner()).take());
                // The logger closed its connections: what it sent is read into the
                // sink before the process exits.
                if let Some(collector) = &self.collector {
                    collector.finish(Duration::from_secs(10));
                }
            }
            Logger::Appender(_, guard) => {
                // tracing-appender's guard waits up to a second for its worker; what
                // is still queued after that is lost, and the lab counts it.
                drop(guard.lock().unwrap_or_else(|e| e.into_inner()).take());
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
        let error = self.error_every.is_some_and(|n| id % n == n - 1);
        // (is an ERROR, bytes) of each record this request logs.
        let mut built: Vec<(bool, Vec<u8>)> = Vec::new();
        if self.condition.builds_records() {
            let started = Instant::now();
            match self.record {
                RecordShape::Json16k => {
                    let mut line = Vec::new();
                    build_json_line(&mut line, id, mono_ns(), &self.payload);
                    built.push((error, line));
                }
                shape => {
                    for &(level, message) in shape_records(shape, error) {
                        let mut line = Vec::with_capacity(shape.record_bytes());
                        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                        build_text_line(
                            &mut line,
                            shape.record_bytes(),
                            mono_ns(),
                            level,
                            id,
                            seq,
                            message,
                        );
                        built.push((level == RecordLevel::Error, line));
                    }
                }
            }
            timed(&p.gen_ns, &p.gen_count, started);
            std::hint::black_box(&built);
            if self.condition == Condition::JsonGen {
                // Built to be thrown away: the cost of building alone.
                built.clear();
            }
        } else {
            match self.condition {
                Condition::None => {}
                Condition::Short1 => built.push((false, self.short.clone())),
                Condition::Short10 => built.extend((0..10).map(|_| (false, self.short.clone()))),
                _ => built.push((false, self.prebuilt.clone())),
            }
        }
        let started = Instant::now();
        for (error, record) in built {
            p.handed_off_bytes
                .fetch_add(record.len() as u64, Ordering::Relaxed);
            p.records.fetch_add(1, Ordering::Relaxed);
            self.log(error, record).await?;
        }
        if !matches!(self.logger, Logger::Nothing) {
            timed(&p.log_ns, &p.log_count, started);
        }
        Ok(())
    }

    async fn log(&self, error: bool, record: Vec<u8>) -> io::Result<()> {
        let p = &self.produced;
        match &self.logger {
            Logger::Nothing => {}
            Logger::Sync(w) => {
                let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
                if self.condition == Condition::SyncWriteln {
                    // What `writeln!` does on an unbuffered file: the formatted text,
                    // then the newline, each its own write(2).
                    let text = String::from_utf8_lossy(&record[..record.len() - 1]);
                    writeln!(w, "{text}")?;
                } else {
                    write_flush(&mut w, &record)?;
                }
            }
            Logger::Queue(tx, _) => match tx.try_send(ToWriter::Record {
                bytes: record,
                error,
            }) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    p.queue_full.fetch_add(1, Ordering::Relaxed);
                    p.dropped.fetch_add(1, Ordering::Relaxed);
                }
                Err(TrySendError::Disconnected(_)) => {
                    return Err(io::Error::other("log writer thread died"))
                }
            },
            Logger::Loglag(nb, _) => {
                let level = if error {
                    loglag::Level::Error
                } else {
                    loglag::Level::Info
                };
                match self.wrap {
                    // A collector takes RFC 5424 messages or OTLP records: the line the
                    // reader checks is their message.
                    Some(format) => {
                        use loglag::__lab::{LineBuilder, Value};
                        let text =
                            std::str::from_utf8(record.strip_suffix(b"\n").unwrap_or(&record))
                                .unwrap_or("");
                        let mut message = Vec::with_capacity(record.len() + 256);
                        let mut b = LineBuilder::begin(
                            &mut message,
                            format,
                            std::time::SystemTime::now(),
                            level,
                            "api",
                        );
                        b.field("message", Value::Str(text));
                        b.finish();
                        nb.submit(level, &message);
                    }
                    None => nb.submit(level, &record),
                }
            }
            Logger::Appender(nb, _) => nb.clone().write_all(&record)?,
            Logger::MemoryBuffer(m) => m.push(&record, error)?,
            Logger::TokioFs(f, delay) => {
                let mut f = f.lock().await;
                if let Some(delay) = *delay {
                    // A slow disk holds one of tokio's blocking threads, as a slow
                    // write would.
                    let _ = tokio::task::spawn_blocking(move || std::thread::sleep(delay)).await;
                }
                p.write_calls.fetch_add(1, Ordering::Relaxed);
                f.write_all(&record).await?;
                f.flush().await?;
                p.wrote(&record);
            }
        }
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
    let result = runtime.block_on(async move {
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
        let control = control::serve(
            produced,
            Box::new(move |action| match action {
                control::Action::Flush => for_control.flush(),
                control::Action::Outage(length) => {
                    if let Some(collector) = &for_control.collector {
                        collector.outage(length);
                    }
                }
            }),
        )?;
        ready(Listening {
            http: listener.local_addr()?,
            control,
        });
        let next_id = Arc::new(std::sync::atomic::AtomicU64::new(0));
        let accept = async {
            loop {
                let (stream, _) = listener.accept().await?;
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                let next_id = next_id.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req: Request<Incoming>| {
                        let app = app.clone();
                        // The load generator's X-Request-Id, so the log can be matched
                        // against the requests sent; a counter otherwise.
                        let id = req
                            .headers()
                            .get("x-request-id")
                            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                            .unwrap_or_else(|| next_id.fetch_add(1, Ordering::Relaxed));
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
            #[allow(unreachable_code)]
            Ok::<(), io::Error>(())
        };
        // A clean stop, as a deployment asks for one: what the logger holds is written
        // before the process exits. SIGKILL, of course, skips this.
        if crate::sys::stop::serve_until_stopped(accept).await? {
            app.shutdown();
        }
        Ok(())
    });
    // Connections still open must not hold the exit.
    runtime.shutdown_background();
    result
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
