//! A server that stalls for 500 ms must show up in every latency measured from the
//! schedule: a request due during the stall waits at least until the stall ends.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::time::Duration;

use loglag_lab::clock::mono_ns;
use loglag_lab::load::{self, Connection, LoadConfig, Outcome, Target};

const STALL: Duration = Duration::from_millis(500);

#[test]
fn latency_from_the_schedule_includes_a_server_stall() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (stall_tx, stall_rx) = std::sync::mpsc::channel();
    // One thread, one connection at a time: while it stalls, nothing else is served.
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
            if n == 10 {
                let start = mono_ns();
                std::thread::sleep(STALL); // the behaviour under test, not synchronisation
                stall_tx.send((start, mono_ns())).unwrap();
            }
            let _ = stream
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
        }
    });
    let config = LoadConfig {
        target: Target::parse(&format!("http://{addr}/")).unwrap(),
        rate: 100.0,
        duration: Duration::from_secs(1),
        connection: Connection::New,
        closed: None,
        grace: Duration::from_secs(10),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let result = runtime.block_on(load::run(&config));
    let (stall_start, stall_end) = stall_rx.recv().unwrap();
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
