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
//! ```no_run
//! let (writer, _guard) = loglag::non_blocking(std::io::stdout());
//! let server = loglag::prometheus::serve("127.0.0.1:9464", vec![("app".into(), writer.clone())])?;
//! // curl http://127.0.0.1:9464/metrics
//! # Ok::<(), std::io::Error>(())
//! ```

use std::fmt::Write as _;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::handle::NonBlocking;
use crate::level::Level;
use crate::metrics::{DropReason, Metrics};

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
            m.io_errors as f64,
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
                m.dropped_by_reason_and_level[reason as usize][level as usize] as f64,
            ));
        }
    }
    out.push(by_both);
    out.push(Family {
        name: "dropped_total",
        help: "Records dropped, by reason.",
        kind: Kind::Counter,
        samples: [
            ("queue_full", m.queue_full),
            ("io_error", m.io_error),
            ("shutdown", m.shutdown),
            ("reentrant", m.reentrant),
        ]
        .into_iter()
        .map(|(r, v)| ("", with(&[("reason", r.to_owned())]), v as f64))
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
                    m.dropped_by_level[*l as usize] as f64,
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

/// A running metrics endpoint; stops when dropped.
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

/// Serves `GET /metrics` (any path, in fact) on `addr` from its own thread, one
/// sample per pipeline with its `pipeline` label, metric names prefixed `loglag_`.
/// Nothing on the logging path changes: a scrape reads the counters.
pub fn serve(
    addr: impl ToSocketAddrs,
    pipelines: Vec<(String, NonBlocking)>,
) -> io::Result<MetricsServer> {
    let listener = TcpListener::bind(addr)?;
    let addr = listener.local_addr()?;
    let stop = Arc::new(AtomicBool::new(false));
    let stopping = stop.clone();
    let thread = std::thread::Builder::new()
        .name("loglag-metrics".into())
        .spawn(move || {
            for stream in listener.incoming() {
                if stopping.load(Ordering::Acquire) {
                    return;
                }
                if let Ok(stream) = stream {
                    let _ = answer(stream, &pipelines);
                }
            }
        })?;
    Ok(MetricsServer {
        addr,
        stop,
        thread: Some(thread),
    })
}

fn answer(stream: TcpStream, pipelines: &[(String, NonBlocking)]) -> io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    // A request is a line and a few headers: 16 KiB bounds what a client can make
    // this thread read.
    let mut reader = BufReader::new(io::Read::take(&stream, 16 << 10));
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // Read the headers to the blank line, so the client sees a complete exchange.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
    }
    let metrics: Vec<Metrics> = pipelines.iter().map(|(_, w)| w.metrics()).collect();
    let labelled: Vec<(Option<&str>, &Metrics)> = pipelines
        .iter()
        .zip(&metrics)
        .map(|((name, _), m)| (Some(name.as_str()), m))
        .collect();
    let (status, body) = if request.starts_with("GET ") {
        ("200 OK", text("loglag", &labelled))
    } else {
        ("405 Method Not Allowed", "only GET\n".to_owned())
    };
    let mut out = &stream;
    write!(
        out,
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    out.flush()
}
