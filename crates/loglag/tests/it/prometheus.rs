//! Metrics in the Prometheus text format: the exposition parses back (families whole,
//! types declared, histograms cumulative), the endpoint serves it, and a real
//! Prometheus scrapes it and computes from it.

use crate::support;

use std::collections::BTreeMap;
#[cfg(unix)]
use std::io::{Read, Write};
use std::net::TcpListener;
#[cfg(unix)]
use std::net::TcpStream;
use std::time::Duration;

use loglag::{Level, Mode, NonBlockingBuilder, Overflow};

#[cfg(unix)]
/// `GET path` over plain HTTP/1.1; the body.
fn get(addr: &str, path: &str) -> std::io::Result<String> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    s.read_to_string(&mut response)?;
    let (head, body) = response
        .split_once("\r\n\r\n")
        .ok_or_else(|| std::io::Error::other("no HTTP response"))?;
    if !head.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(head.to_owned()));
    }
    // Prometheus answers in chunks; its JSON is small enough to arrive in one.
    Ok(
        if head
            .to_ascii_lowercase()
            .contains("transfer-encoding: chunked")
        {
            body.split("\r\n").nth(1).unwrap_or("").to_owned()
        } else {
            body.to_owned()
        },
    )
}

/// A sample: (family, suffix-included name, labels, value).
type Sample = (String, BTreeMap<String, String>, f64);

/// Parses an exposition, checking the rules a scraper relies on: every sample's
/// family declared by `# TYPE` before it, each family in one block, label syntax.
fn parse(text: &str) -> (BTreeMap<String, String>, Vec<Sample>) {
    let mut types = BTreeMap::new();
    let mut samples = Vec::new();
    let mut finished: Vec<String> = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').unwrap();
            assert!(!types.contains_key(name), "{name} declared twice");
            assert!(["counter", "gauge", "histogram"].contains(&kind), "{line}");
            if !current.is_empty() {
                finished.push(std::mem::take(&mut current));
            }
            current = name.to_owned();
            types.insert(name.to_owned(), kind.to_owned());
            continue;
        }
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let (series, value) = line.rsplit_once(' ').unwrap();
        let value: f64 = value.parse().unwrap_or_else(|_| panic!("value in {line}"));
        let (name, labels) = match series.split_once('{') {
            Some((n, l)) => (n, l.strip_suffix('}').unwrap_or_else(|| panic!("{line}"))),
            None => (series, ""),
        };
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .find_map(|s| {
                name.strip_suffix(s)
                    .filter(|f| types.get(*f).is_some_and(|k| k == "histogram"))
            })
            .unwrap_or(name);
        assert_eq!(family, current, "{line}: outside its family's block");
        assert!(!finished.contains(&family.to_owned()), "{family} split");
        let mut map = BTreeMap::new();
        for pair in labels.split(',').filter(|p| !p.is_empty()) {
            let (k, v) = pair.split_once('=').unwrap();
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap();
            map.insert(k.to_owned(), v.to_owned());
        }
        samples.push((name.to_owned(), map, value));
    }
    (types, samples)
}

fn value(samples: &[Sample], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .find(|(n, l, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| l.get(*k).map(String::as_str) == Some(*v))
        })
        .unwrap_or_else(|| panic!("no {name} {labels:?}"))
        .2
}

/// Two pipelines in one exposition: each family once, a sample per pipeline, drops
/// by reason and level, and a histogram whose buckets are cumulative up to its count.
#[test]
fn the_exposition_parses_back_with_every_family_whole() {
    let (a, guard_a) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .finish(std::io::sink());
    // A pipeline that drops: its sink fails every write.
    struct Failing;
    impl loglag::sink::Sink for Failing {
        fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
            Err(support::disk_full())
        }
    }
    let (b, guard_b) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .overflow(Overflow::Block)
        .build(Failing)
        .unwrap();
    for _ in 0..100 {
        a.submit(Level::Info, b"ok\n");
    }
    b.submit(Level::Warn, b"lost\n");
    b.submit(Level::Error, b"lost too\n");
    guard_a.flush(Duration::from_secs(60)).unwrap();
    guard_b.flush(Duration::from_secs(60)).unwrap();
    let (ma, mb) = (a.metrics(), b.metrics());
    let text =
        loglag::prometheus::text("loglag", &[(Some("app"), &ma), (Some("audit \"x\""), &mb)]);
    let (types, samples) = parse(&text);
    assert_eq!(types["loglag_write_seconds"], "histogram");
    assert_eq!(types["loglag_records_dropped_total"], "counter");
    assert_eq!(
        value(
            &samples,
            "loglag_written_records_total",
            &[("pipeline", "app")]
        ),
        100.0
    );
    let audit = "audit \\\"x\\\"";
    for (level, n) in [("warn", 1.0), ("error", 1.0), ("info", 0.0)] {
        assert_eq!(
            value(
                &samples,
                "loglag_records_dropped_total",
                &[
                    ("pipeline", audit),
                    ("reason", "io_error"),
                    ("level", level)
                ]
            ),
            n
        );
    }
    for pipeline in ["app", audit] {
        let buckets: Vec<(f64, f64)> = samples
            .iter()
            .filter(|(n, l, _)| n == "loglag_write_seconds_bucket" && l["pipeline"] == pipeline)
            .map(|(_, l, v)| (l["le"].parse::<f64>().unwrap_or(f64::INFINITY), *v))
            .collect();
        assert!(
            buckets
                .windows(2)
                .all(|w| w[0].0 < w[1].0 && w[0].1 <= w[1].1),
            "{buckets:?}"
        );
        let count = value(
            &samples,
            "loglag_write_seconds_count",
            &[("pipeline", pipeline)],
        );
        assert_eq!(buckets.last().unwrap(), &(f64::INFINITY, count));
        assert!(count > 0.0);
    }
    drop(guard_a);
    drop(guard_b);
}

// A prometheus binary in /usr/bin: a unix install.
#[cfg(unix)]
/// A real Prometheus (config in `tests/prometheus/`) scrapes the endpoint: a counter
/// that rose reads back through its query API, and so does a quantile it computes
/// from `loglag_write_seconds`.
#[test]
fn a_real_prometheus_scrapes_the_endpoint_and_computes_from_it() {
    let Some(prometheus) = ["/usr/bin/prometheus", "/usr/local/bin/prometheus"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        assert!(
            std::env::var_os("LOGLAG_REQUIRE_PROMETHEUS").is_none(),
            "LOGLAG_REQUIRE_PROMETHEUS is set and prometheus is not installed"
        );
        skip_note!("skipped: prometheus is not installed (apt-get install prometheus)");
        return;
    };
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .finish(std::io::sink());
    let server =
        loglag::prometheus::serve("127.0.0.1:0", vec![("app".into(), writer.clone())]).unwrap();
    let target = server.local_addr().to_string();
    // The endpoint itself first.
    let body = get(&target, "/metrics").unwrap();
    assert!(
        body.contains("loglag_accepted_total{pipeline=\"app\"} 0"),
        "{body}"
    );

    let dir = tempfile::tempdir().unwrap();
    let web = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().to_string()
    };
    let config = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/prometheus/prometheus.yml"),
    )
    .unwrap()
    .replace("@TARGET@", &target);
    std::fs::write(dir.path().join("prometheus.yml"), config).unwrap();
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _prometheus = Killed(
        std::process::Command::new(prometheus)
            .arg(format!(
                "--config.file={}",
                dir.path().join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("data").display()
            ))
            .arg(format!("--web.listen-address={web}"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    for i in 0..5_000u64 {
        writer.submit(Level::Info, format!("record {i}\n").as_bytes());
    }
    guard.flush(Duration::from_secs(60)).unwrap();
    // Ask Prometheus until its scrapes show the records (it scrapes every second).
    let query = move |q: &str| -> Option<f64> {
        let path = format!("/api/v1/query?query={}", url_encode(q));
        let body = get(&web, &path).ok()?;
        let v: serde_json::Value = serde_json::from_str(&body).ok()?;
        v["data"]["result"][0]["value"][1].as_str()?.parse().ok()
    };
    let written = support::within(
        Duration::from_secs(120),
        "prometheus scraped the counter",
        {
            let query = query.clone();
            move || loop {
                match query("loglag_written_records_total{pipeline=\"app\"}") {
                    Some(v) if v >= 5000.0 => return v,
                    _ => std::thread::yield_now(),
                }
            }
        },
    );
    assert_eq!(written, 5000.0);
    let p99 = support::within(
        Duration::from_secs(120),
        "prometheus computed a quantile",
        move || loop {
            match query("histogram_quantile(0.99, sum by (le) (loglag_write_seconds_bucket{pipeline=\"app\"}))") {
            Some(v) if v.is_finite() => return v,
            _ => std::thread::yield_now(),
        }
        },
    );
    assert!(
        p99 > 0.0 && p99 < 20.0,
        "p99 of a write to io::sink: {p99} s"
    );
    drop(server);
}

#[cfg(unix)]
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A port in use is an error that says which address, not only `AddrInUse`.
#[test]
fn a_port_in_use_names_the_address() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap();
    let (writer, _guard) = NonBlockingBuilder::default().finish(std::io::sink());
    let Err(e) = loglag::prometheus::serve(addr, vec![("app".into(), writer)]) else {
        panic!("served on a port that is taken");
    };
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse);
    let text = e.to_string();
    assert!(text.contains(&addr.to_string()), "{text}");
}
