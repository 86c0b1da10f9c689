//! A server that stalls for 500 ms must show up in every latency measured from the
//! schedule: a request due during the stall waits at least until the stall ends.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use loglag_lab::load::{self, Connection, LoadConfig, Outcome, Target};
use loglag_lab::sys::clock::mono_ns;

const STALL: Duration = Duration::from_millis(500);

/// A one-thread HTTP server on `listener`: one connection at a time, "ok" to each
/// request; `before_reply(n)` runs before the n-th reply (0-based), so whatever it does
/// holds up the server.
fn serve_one_at_a_time(
    listener: TcpListener,
    mut before_reply: impl FnMut(usize) + Send + 'static,
) {
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let mut stream = stream.unwrap();
            let mut buf = [0u8; 1024];
            let mut got = Vec::new();
            while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                let k = stream.read(&mut buf).unwrap();
                if k == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..k]);
            }
            before_reply(n);
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
}

/// A load of 100 requests/s for 1 s, a new connection each, against `addr`.
fn hundred_per_second(addr: std::net::SocketAddr) -> LoadConfig {
    LoadConfig {
        target: Target::parse(&format!("http://{addr}/")).unwrap(),
        rate: 100.0,
        duration: Duration::from_secs(1),
        connection: Connection::New,
        closed: None,
        grace: Duration::from_secs(10),
        first_id: 0,
    }
}

#[test]
fn latency_from_the_schedule_includes_a_server_stall() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (stall_tx, stall_rx) = std::sync::mpsc::channel();
    // One thread, one connection at a time: while it stalls, nothing else is served.
    serve_one_at_a_time(listener, move |n| {
        if n == 10 {
            let start = mono_ns();
            std::thread::sleep(STALL); // the behaviour under test, not synchronisation
            stall_tx.send((start, mono_ns())).unwrap();
        }
    });
    let config = hundred_per_second(addr);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(load::run(&config));
    let (stall_start, stall_end) = stall_rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the server stalled its tenth request");
    assert_eq!(result.samples.len(), 100);
    assert!(result.samples.iter().all(|s| s.outcome == Outcome::Ok));
    // Scheduled offsets are exact: i / rate.
    for s in &result.samples {
        assert_eq!(s.scheduled_ns, s.index * 10_000_000);
    }
    let mut during = 0;
    for s in &result.samples {
        let due = result.t0_mono_ns + s.scheduled_ns;
        if due >= stall_start && due < stall_end {
            during += 1;
            let latency = s.latency_ns.unwrap();
            assert!(
                latency >= stall_end - due,
                "request {} due during the stall: {} ns < {} ns",
                s.index,
                latency,
                stall_end - due
            );
        }
    }
    assert!(
        during >= 40,
        "about 50 requests were due during the stall, saw {during}"
    );
    let worst = result
        .samples
        .iter()
        .filter_map(|s| s.latency_ns)
        .max()
        .unwrap();
    assert!(
        worst >= STALL.as_nanos() as u64 - 20_000_000,
        "the stalled request itself: {worst} ns"
    );
}

/// The generator itself falls behind: a task hogs the load's only thread for 200 ms.
/// Requests due meanwhile go out late, and each one's latency still runs from its due
/// time, so it is at least its lateness. Timing from the actual send would report
/// sub-millisecond latencies for them.
#[test]
fn a_late_generator_reports_its_lateness_and_times_from_the_due_time() {
    const HOG: Duration = Duration::from_millis(200);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (hog_tx, hog_rx) = tokio::sync::oneshot::channel::<()>();
    let mut hog_tx = Some(hog_tx);
    serve_one_at_a_time(listener, move |n| {
        if n == 10 {
            if let Some(tx) = hog_tx.take() {
                let _ = tx.send(());
            }
        }
    });
    let config = hundred_per_second(addr);
    // One thread: while the hog spins, the generator cannot send.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(async {
        tokio::spawn(async move {
            if hog_rx.await.is_ok() {
                let until = std::time::Instant::now() + HOG;
                while std::time::Instant::now() < until {
                    std::hint::spin_loop();
                }
            }
        });
        load::run(&config).await
    });
    assert_eq!(result.samples.len(), 100);
    assert!(result.samples.iter().all(|s| s.outcome == Outcome::Ok));
    for s in &result.samples {
        assert_eq!(s.scheduled_ns, s.index * 10_000_000);
        let latency = s.latency_ns.unwrap();
        assert!(
            latency >= s.send_lateness_ns,
            "request {}: latency {latency} ns < its send lateness {} ns",
            s.index,
            s.send_lateness_ns
        );
        // The finish time agrees with due + latency: both are on the same clock.
        assert_eq!(
            s.done_mono_ns,
            result.t0_mono_ns + s.scheduled_ns + latency,
            "request {}",
            s.index
        );
    }
    let late: Vec<_> = result
        .samples
        .iter()
        .filter(|s| s.send_lateness_ns >= 50_000_000)
        .collect();
    assert!(
        late.len() >= 10,
        "about 20 requests were due during the 200 ms hog; {} were sent ≥ 50 ms late",
        late.len()
    );
    let worst = result
        .samples
        .iter()
        .map(|s| s.send_lateness_ns)
        .max()
        .unwrap();
    assert!(
        worst >= HOG.as_nanos() as u64 / 2,
        "the first request due during the hog waited most of it: {worst} ns"
    );
    let lateness = loglag_lab::report::Lateness::of(
        &result
            .samples
            .iter()
            .map(|s| s.send_lateness_ns)
            .collect::<Vec<_>>(),
    )
    .unwrap();
    assert!(lateness.max_us * 1e3 >= worst as f64 - 1.0);
    assert!(
        lateness.warning(100.0).is_some(),
        "a p99 lateness of {} µs must be flagged",
        lateness.p99_us
    );
}
