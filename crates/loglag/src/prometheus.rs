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

enum Kind {
    Counter,
    Gauge,
    Histogram,
}

struct Family {
    name: &'static str,
    help: &'static str,
    kind: Kind,
    /// (labels without braces, value) for each sample, names suffixed for histograms.
    samples: Vec<(String, String, f64)>,
}

fn families(m: &Metrics, pipeline: Option<&str>) -> Vec<Family> {
    let base = pipeline.map_or(String::new(), |p| format!("pipeline=\"{}\"", label(p)));
    let with = |extra: &str| match (base.is_empty(), extra.is_empty()) {
        (true, _) => extra.to_owned(),
        (false, true) => base.clone(),
        (false, false) => format!("{base},{extra}"),
    };
    let one = |name, help, kind, v: u64| Family {
        name,
        help,
        kind,
        samples: vec![(String::new(), with(""), v as f64)],
    };
    let mut out = vec![
        one(
            "accepted_total",
            "Records handed to the pipeline.",
            Kind::Counter,
            m.accepted,
        ),
        one(
            "written_records_total",
            "Records written to a sink.",
            Kind::Counter,
            m.written_records,
        ),
        one(
            "written_bytes_total",
            "Bytes written to a sink.",
            Kind::Counter,
            m.written_bytes,
        ),
        one(
            "write_syscalls_total",
            "Write calls made to the sink.",
            Kind::Counter,
            m.write_syscalls,
        ),
        one(
            "io_errors_total",
            "Failed sink writes.",
            Kind::Counter,
            m.io_errors,
        ),
        one(
            "truncated_total",
            "Records truncated to max_record_bytes.",
            Kind::Counter,
            m.truncated,
        ),
        one(
            "queue_full_events_total",
            "Times the byte budget was found full.",
            Kind::Counter,
            m.queue_full_events,
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
                String::new(),
                with(&format!(
                    "reason=\"{}\",level=\"{}\"",
                    reason.as_str(),
                    level.as_lower_str()
                )),
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
        .map(|(r, v)| (String::new(), with(&format!("reason=\"{r}\"")), v as f64))
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
                    String::new(),
                    // Upper case, as this family always had it.
                    with(&format!("level=\"{}\"", l.as_str())),
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
            "_bucket".into(),
            with(&format!("le=\"{le}\"")),
            cumulative as f64,
        ));
    }
    histogram
        .samples
        .push(("_bucket".into(), with("le=\"+Inf\""), w.count as f64));
    histogram
        .samples
        .push(("_sum".into(), with(""), w.sum.as_secs_f64()));
    histogram
        .samples
        .push(("_count".into(), with(""), w.count as f64));
    out.push(histogram);
    let gauge = |name, help, v: f64| Family {
        name,
        help,
        kind: Kind::Gauge,
        samples: vec![(String::new(), with(""), v)],
    };
    out.push(gauge(
        "in_flight_records",
        "Records accepted but not yet written or dropped.",
        m.in_flight_records as f64,
    ));
    out.push(gauge(
        "in_flight_bytes",
        "Bytes queued or being written.",
        m.in_flight_bytes as f64,
    ));
    out.push(gauge(
        "max_backlog_bytes",
        "Largest backlog seen, in bytes.",
        m.max_backlog_bytes as f64,
    ));
    out.push(gauge(
        "oldest_queued_age_seconds",
        "Age of the oldest queued record.",
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
                    format!("{{{labels}}}")
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
