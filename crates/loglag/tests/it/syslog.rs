//! The syslog sink: RFC 5424 messages (checked with an independent parser) over TCP
//! with octet counting, UDP and a unix datagram socket; a collector that closes
//! between batches; an unreachable one; and a real `rsyslogd`, restarted mid-stream.

use crate::support;

use std::io::{BufRead, BufReader, Read};
use std::net::{TcpListener, TcpStream, UdpSocket};
#[cfg(unix)]
use std::os::unix::net::UnixDatagram;
use std::time::Duration;

use loglag::{DropReason, Format, Level, LoglagLayer, Mode, NonBlockingBuilder};
use syslog_rfc5424::{parse_message, SyslogMessage};
use tracing_subscriber::prelude::*;

const SD_ID: &str = "loglag@32473";

/// Reads one octet-counted frame (`LEN SP MSG`), or `None` at the end of the stream.
fn read_frame(stream: &mut BufReader<TcpStream>) -> Option<String> {
    let mut len = Vec::new();
    stream.read_until(b' ', &mut len).ok()?;
    if len.is_empty() {
        return None;
    }
    let n: usize = std::str::from_utf8(&len[..len.len() - 1])
        .unwrap()
        .parse()
        .unwrap_or_else(|_| panic!("not an octet count: {len:?}"));
    let mut msg = vec![0; n];
    stream.read_exact(&mut msg).ok()?;
    Some(String::from_utf8(msg).unwrap())
}

/// The collector's frames, once the sink's connection ends; bounded, so a sink that
/// keeps its connection open fails the test instead of hanging it.
fn joined_collector(collector: std::thread::JoinHandle<Vec<String>>) -> Vec<String> {
    support::within(Duration::from_secs(60), "the collector", move || {
        collector.join().unwrap()
    })
}

fn parsed(msg: &str) -> SyslogMessage {
    parse_message(msg).unwrap_or_else(|e| panic!("not RFC 5424 ({e}): {msg}"))
}

fn sd<'a>(m: &'a SyslogMessage, param: &str) -> &'a str {
    m.sd.find_tuple(SD_ID, param)
        .unwrap_or_else(|| panic!("no {param} in {m:?}"))
}

/// Logs `n` events (seq = 0..n) through the Layer in the syslog format into `sink`.
fn log_events(sink: loglag::sink::Syslog, n: u64) -> loglag::Metrics {
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(sink)
        .unwrap();
    let subscriber =
        tracing_subscriber::registry().with(LoglagLayer::new(writer).format(Format::Syslog));
    tracing::subscriber::with_default(subscriber, || {
        for seq in 0..n {
            if seq % 10 == 9 {
                tracing::error!(seq, user = "ann \"x\" ]", "payment failed\nFORGED");
            } else {
                tracing::info!(seq, user = "ann \"x\" ]", "paid");
            }
        }
    });
    guard.shutdown()
}

fn check(messages: &[String], n: u64) {
    assert_eq!(messages.len() as u64, n, "every record arrives");
    for (seq, msg) in messages.iter().enumerate() {
        let m = parsed(msg);
        assert_eq!(sd(&m, "seq"), seq.to_string(), "{msg}");
        assert_eq!(
            sd(&m, "user"),
            "ann \"x\" ]",
            "escaped and read back: {msg}"
        );
        assert_eq!(sd(&m, "target"), module_path!());
        assert_eq!(
            m.procid,
            Some(syslog_rfc5424::message::ProcId::PID(
                std::process::id() as i32
            ))
        );
        assert!(m.timestamp.is_some() && m.hostname.is_some() && m.appname.is_some());
        if seq % 10 == 9 {
            assert_eq!(m.severity, syslog_rfc5424::SyslogSeverity::SEV_ERR);
            assert_eq!(m.msg, "payment failed\\nFORGED", "one record, one message");
        } else {
            assert_eq!(m.severity, syslog_rfc5424::SyslogSeverity::SEV_INFO);
            assert_eq!(m.msg, "paid");
        }
        assert_eq!(m.facility, syslog_rfc5424::SyslogFacility::LOG_USER);
    }
}

#[test]
fn records_arrive_as_rfc5424_messages_with_their_fields_over_tcp() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let collector = std::thread::spawn(move || {
        let mut stream = BufReader::new(listener.accept().unwrap().0);
        std::iter::from_fn(|| read_frame(&mut stream)).collect::<Vec<_>>()
    });
    let m = log_events(loglag::sink::Syslog::tcp(addr).unwrap(), 500);
    assert_eq!((m.written_records, m.dropped_records()), (500, 0));
    check(&joined_collector(collector), 500);
}

// Unix datagram sockets are unix's (the Windows test below checks UDP and the refusal).
#[cfg(unix)]
#[test]
fn records_arrive_one_datagram_each_over_udp_and_a_unix_socket() {
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_addr = udp.local_addr().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log.sock");
    let unix = UnixDatagram::bind(&path).unwrap();
    // Enough receive buffer for every datagram before the test reads them.
    for fd in [
        std::os::fd::AsRawFd::as_raw_fd(&udp),
        std::os::fd::AsRawFd::as_raw_fd(&unix),
    ] {
        let size: libc::c_int = 8 << 20;
        // SAFETY: valid descriptor and option value.
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&size as *const libc::c_int).cast(),
                std::mem::size_of::<libc::c_int>() as u32,
            );
        }
    }
    // Read while the pipeline sends, as a collector does: a unix datagram socket
    // holds only a few unread datagrams before the sender waits.
    fn receive(
        n: u64,
        recv: impl Fn(&mut [u8]) -> std::io::Result<usize> + Send + 'static,
    ) -> std::thread::JoinHandle<Vec<String>> {
        std::thread::spawn(move || {
            let mut buf = vec![0; 65536];
            (0..n)
                .map(|_| {
                    let len = recv(&mut buf).unwrap();
                    String::from_utf8(buf[..len].to_vec()).unwrap()
                })
                .collect()
        })
    }
    udp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    unix.set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let received = receive(200, move |b| udp.recv(b));
    let m = log_events(loglag::sink::Syslog::udp(udp_addr).unwrap(), 200);
    assert_eq!(m.written_records, 200, "{m:?}");
    check(&received.join().unwrap(), 200);
    let received = receive(200, move |b| unix.recv(b));
    let m = log_events(loglag::sink::Syslog::unix(&path), 200);
    assert_eq!(m.written_records, 200, "{m:?}");
    check(&received.join().unwrap(), 200);
}

/// Windows: UDP as on unix, one datagram per record; a unix datagram socket, which
/// Windows does not have, fails every write with an error saying so (each record an
/// `io_error` drop), and its sink URL is refused when it is opened.
#[cfg(windows)]
#[test]
fn records_arrive_one_datagram_each_over_udp_and_a_unix_socket_is_refused() {
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let udp_addr = udp.local_addr().unwrap();
    udp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let received = std::thread::spawn(move || {
        let mut buf = vec![0; 65536];
        (0..200)
            .map(|_| {
                let len = udp.recv(&mut buf).unwrap();
                String::from_utf8(buf[..len].to_vec()).unwrap()
            })
            .collect::<Vec<_>>()
    });
    let m = log_events(loglag::sink::Syslog::udp(udp_addr).unwrap(), 200);
    assert_eq!(m.written_records, 200, "{m:?}");
    check(&received.join().unwrap(), 200);

    let m = log_events(loglag::sink::Syslog::unix("nowhere.sock"), 5);
    assert_eq!(m.written_records, 0, "{m:?}");
    assert_eq!(m.dropped_for(DropReason::IoError), 5, "{m:?}");
    let e = "syslog+unix:///dev/log"
        .parse::<loglag::sink::SinkSpec>()
        .unwrap()
        .open()
        .map(|_| ())
        .unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::Unsupported, "{e}");
    assert!(e.to_string().contains("Windows"), "{e}");
}

/// A record over `max_record_bytes` stays one valid RFC 5424 message: a long message
/// is cut with the marker, long structured data is replaced by its length.
#[test]
fn a_syslog_record_over_the_limit_stays_valid() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let collector = std::thread::spawn(move || {
        let mut stream = BufReader::new(listener.accept().unwrap().0);
        std::iter::from_fn(|| read_frame(&mut stream)).collect::<Vec<_>>()
    });
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .max_record_bytes(1024)
        .build(loglag::sink::Syslog::tcp(addr).unwrap())
        .unwrap();
    let subscriber =
        tracing_subscriber::registry().with(LoglagLayer::new(writer).format(Format::Syslog));
    let long = "y".repeat(5000);
    tracing::subscriber::with_default(subscriber, || {
        tracing::info!(seq = 1, "{long}");
        tracing::info!(seq = 2, big = long.as_str(), "short");
    });
    let m = guard.shutdown();
    assert_eq!((m.truncated, m.written_records), (2, 2), "{m:?}");
    let got = joined_collector(collector);
    let first = parsed(&got[0]);
    assert_eq!(sd(&first, "seq"), "1");
    assert!(
        first.msg.ends_with("bytes]") && first.msg.contains("…[truncated "),
        "{}",
        first.msg
    );
    let second = parsed(&got[1]);
    assert!(
        second.sd.find_tuple(SD_ID, "truncated").is_some(),
        "{}",
        got[1]
    );
    assert_eq!(second.msg, "short");
    for msg in &got {
        assert!(msg.len() <= 1024, "{} bytes", msg.len());
    }
}

/// A collector that restarts between batches: the sink sees the closed connection
/// before writing, connects again, and nothing is lost or counted as dropped.
#[test]
fn a_collector_that_closes_between_batches_loses_nothing() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(loglag::sink::Syslog::tcp(addr).unwrap())
        .unwrap();
    let (closed_tx, closed_rx) = std::sync::mpsc::channel();
    let (got_tx, got_rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut got = Vec::new();
        for _ in 0..2 {
            let (stream, sender) = listener.accept().unwrap();
            let mut stream = BufReader::new(stream);
            while let Some(m) = read_frame(&mut stream) {
                got.push(m);
                if got.len() == 100 {
                    break;
                }
            }
            if got.len() == 100 {
                // The first connection ends here, as a restarting collector's does;
                // the test goes on once it is closed.
                drop(stream);
                closed_tx.send(sender.port()).unwrap();
            }
        }
        let _ = got_tx.send(got);
    });
    let _macros = support::macros_lock();
    loglag::set_global(&writer, Format::Syslog, Level::Info);
    for seq in 0..100u64 {
        loglag::info!(seq, "first");
    }
    writer.flush(Duration::from_secs(60)).unwrap();
    let sender_port = closed_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the collector read the first 100 records");
    // The sink sees the close by the FIN that has reached its socket. On a busy machine
    // the kernel may not have processed it yet (loopback delivers through a softirq),
    // and a batch written before it would go to a closed connection, as TCP syslog's
    // would to any collector that has just died. The promise is about a close the
    // sink can see: wait for the FIN (CLOSE_WAIT), where the kernel tells (Linux, and
    // Linux under Wine).
    #[cfg(windows)]
    let kernel_tells = support::under_wine();
    #[cfg(not(windows))]
    let kernel_tells = cfg!(target_os = "linux");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while kernel_tells && support::procfs::tcp_state(sender_port, addr.port()) != Some(0x08) {
        assert!(
            std::time::Instant::now() < deadline,
            "the sink's socket never saw the collector's FIN: {:?}",
            support::procfs::tcp_state(sender_port, addr.port())
        );
        // A pause, not a spin: the FIN waits for a CPU on a busy machine.
        std::thread::sleep(Duration::from_millis(1));
    }
    for seq in 100..200u64 {
        loglag::info!(seq, "second");
    }
    loglag::set_max_level(None);
    let m = guard.shutdown();
    assert_eq!((m.written_records, m.dropped_records()), (200, 0), "{m:?}");
    // Bounded: records written to the closed connection would leave the collector
    // waiting for a second one, and the test must fail, not hang.
    let got = got_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the collector received the second 100 records on a new connection");
    let seqs: Vec<u64> = got
        .iter()
        .map(|msg| sd(&parsed(msg), "seq").parse().unwrap())
        .collect();
    assert_eq!(seqs, (0..200).collect::<Vec<_>>());
}

/// Nobody listening: every record is counted as dropped (io_error), nothing hangs.
#[test]
fn an_unreachable_collector_drops_and_counts() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let m = log_events(loglag::sink::Syslog::tcp(("127.0.0.1", port)).unwrap(), 50);
    assert_eq!(m.written_records, 0);
    assert_eq!(m.dropped_records(), 50, "{m:?}");
    assert_eq!(m.dropped_for(DropReason::IoError), 50);
}

// rsyslogd is a unix daemon.
#[cfg(unix)]
/// A real `rsyslogd` on loopback (the config is `tests/rsyslog/loglag.conf`): every
/// record arrives with its fields; then rsyslog is restarted mid-stream, and every
/// record sent is either in its file or counted as dropped by the pipeline.
#[test]
fn a_real_rsyslog_receives_every_record_and_a_restart_loses_only_what_is_counted() {
    let Some(rsyslogd) = ["/usr/sbin/rsyslogd", "/sbin/rsyslogd"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
    else {
        assert!(
            std::env::var_os("LOGLAG_REQUIRE_RSYSLOG").is_none(),
            "LOGLAG_REQUIRE_RSYSLOG is set and rsyslogd is not installed"
        );
        skip_note!("skipped: rsyslogd is not installed (apt-get install rsyslog)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let out = dir.path().join("received.log");
    let conf = dir.path().join("rsyslog.conf");
    let template = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/rsyslog/loglag.conf"),
    )
    .unwrap();
    std::fs::write(
        &conf,
        template
            .replace("@DIR@", &dir.path().display().to_string())
            .replace("@PORT@", &port.to_string())
            .replace("@OUT@", &out.display().to_string()),
    )
    .unwrap();
    let start = || {
        let child = std::process::Command::new(rsyslogd)
            .args(["-n", "-f"])
            .arg(&conf)
            .arg("-i")
            .arg(dir.path().join("rsyslogd.pid"))
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Ready when it accepts connections.
        support::within(Duration::from_secs(60), "rsyslogd listening", move || {
            while TcpStream::connect(("127.0.0.1", port)).is_err() {
                std::thread::yield_now();
            }
        });
        Killed(child)
    };
    struct Killed(std::process::Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            // SIGTERM: rsyslogd writes what it has queued, then exits.
            // SAFETY: kill(2) on our own child.
            unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
            let _ = self.0.wait();
        }
    }
    let lines = || -> Vec<String> {
        std::fs::read_to_string(&out)
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    };
    let wait_for = |n: usize| {
        let out = out.clone();
        support::within(
            Duration::from_secs(60),
            "rsyslog wrote the records",
            move || {
                while std::fs::read_to_string(&out)
                    .unwrap_or_default()
                    .lines()
                    .count()
                    < n
                {
                    std::thread::yield_now();
                }
            },
        )
    };

    let rsyslog = start();
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(loglag::sink::Syslog::tcp(("127.0.0.1", port)).unwrap())
        .unwrap();
    let subscriber = tracing_subscriber::registry()
        .with(LoglagLayer::new(writer.clone()).format(Format::Syslog));
    let _default = tracing::subscriber::set_default(subscriber);
    for seq in 0..1000u64 {
        tracing::warn!(seq, user = "ann", "phase one");
    }
    writer.flush(Duration::from_secs(60)).unwrap();
    wait_for(1000);
    // rsyslog parsed each message: severity, app and the structured data, as sent.
    for (seq, line) in lines().iter().enumerate() {
        assert!(line.starts_with("warning|"), "{line}");
        assert!(
            line.contains(&format!(
                "[loglag@32473 target=\"it::syslog\" seq=\"{seq}\" user=\"ann\"]"
            )),
            "{line}"
        );
        assert!(line.ends_with("|phase one"), "{line}");
    }

    // The collector goes away (everything sent so far is in its file), records are
    // logged while it is down, and it comes back on the same port.
    drop(rsyslog);
    for seq in 1000..1500u64 {
        tracing::warn!(seq, user = "ann", "while down");
    }
    writer.flush(Duration::from_secs(60)).unwrap();
    let rsyslog = start();
    // The sink's back-off ends within 5 s; records logged until then are dropped and
    // counted, after it they arrive. Log until one arrives.
    let mut seq = 1500u64;
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while lines().len() == 1000 {
        assert!(
            std::time::Instant::now() < deadline,
            "nothing reached the restarted rsyslogd in 120 s"
        );
        tracing::warn!(seq, user = "ann", "after");
        seq += 1;
        writer.flush(Duration::from_secs(60)).unwrap();
        std::thread::yield_now();
    }
    for _ in 0..1000 {
        tracing::warn!(seq, user = "ann", "after");
        seq += 1;
    }
    let m = guard.shutdown();
    let sent = seq;
    wait_for((sent - m.dropped_records()) as usize + 1);
    drop(rsyslog);
    // The pipeline announced its drops in-band, as a syslog message of its own.
    let (reports, received): (Vec<String>, Vec<String>) = lines()
        .into_iter()
        .partition(|l| l.contains("target=\"loglag\" dropped="));
    let announced: u64 = reports
        .iter()
        .map(|l| {
            l.split("dropped=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse::<u64>()
                .unwrap()
        })
        .sum();
    assert_eq!(
        announced,
        m.dropped_records(),
        "every drop is announced: {reports:?}"
    );
    let mut seen = std::collections::HashSet::new();
    for line in &received {
        let seq = line
            .split("seq=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap_or_else(|| panic!("not one of ours: {line}"));
        assert!(seen.insert(seq.to_owned()), "seq {seq} twice");
    }
    assert_eq!(
        received.len() as u64 + m.dropped_records(),
        sent,
        "received + counted drops = sent: {m:?}"
    );
    assert_eq!(
        m.dropped_records(),
        m.dropped_for(DropReason::IoError),
        "{m:?}"
    );
    assert!(
        m.dropped_records() >= 500,
        "the records logged while it was down: {m:?}"
    );
}
