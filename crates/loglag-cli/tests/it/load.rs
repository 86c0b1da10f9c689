//! `loglag load` as a user meets it: the generator's floor, and Ctrl-C keeping what was measured.
//! Short runs; assertions are on mechanisms, not on timing constants.

use crate::support;
use support::*;

#[test]
fn load_calibrate_measures_the_generators_floor_against_a_null_server() {
    within(
        "load_calibrate_measures_the_generators_floor_against_a_null_server",
        || {
            let out = loglag()
                .args([
                    "load",
                    "--calibrate",
                    "--rate",
                    "200",
                    "--duration",
                    "1s",
                    "--connection",
                    "keepalive",
                    "--format",
                    "json",
                ])
                .output()
                .unwrap();
            assert_success(&out);
            let floor: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert!(floor["url"]
                .as_str()
                .unwrap()
                .starts_with("floor: null server"));
            assert_eq!(floor["requests"], 200);
            assert_eq!(floor["ok"], 200);
            assert!(floor["p50_ms"].as_f64().unwrap() > 0.0);
            let late = &floor["send_lateness"];
            assert!(late["mean_us"].as_f64().unwrap() <= late["max_us"].as_f64().unwrap());
            // With a URL, the floor rides along with the URL's own figures.
            let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            let addr = server.local_addr().unwrap();
            std::thread::spawn(move || {
                use std::io::{Read, Write};
                for stream in server.incoming() {
                    let mut stream = stream.unwrap();
                    let mut buf = [0u8; 1024];
                    let _ = stream.read(&mut buf);
                    let _ = stream.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                    );
                }
            });
            let out = loglag()
                .args(["load", &format!("http://{addr}/"), "--calibrate"])
                .args(["--rate", "50", "--duration", "500ms"])
                .output()
                .unwrap();
            assert_success(&out);
            let table = String::from_utf8(out.stdout).unwrap();
            assert!(table.contains("| floor: null server at http://"), "{table}");
            assert!(
                table.contains(&format!("| http://{addr}/ | 25 | 25 |")),
                "{table}"
            );
            assert!(table.contains("send late p99 µs"), "{table}");
            // And without either, a clear error.
            let out = loglag().arg("load").output().unwrap();
            assert!(!out.status.success());
            assert!(String::from_utf8_lossy(&out.stderr).contains("--calibrate"));
        },
    )
}

#[test]
#[cfg(unix)] // SIGINT through kill(2)
fn ctrl_c_during_load_prints_what_was_measured_so_far() {
    within("ctrl_c_during_load_prints_what_was_measured_so_far", || {
        use std::io::{Read, Write};
        let server = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = server.local_addr().unwrap();
        let (served_tx, served) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for stream in server.incoming() {
                let mut stream = stream.unwrap();
                let mut buf = [0u8; 1024];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
                let _ = served_tx.send(());
            }
        });
        let child = loglag()
            .args(["load", &format!("http://{addr}/"), "--rate", "100"])
            .args(["--duration", "60s", "--format", "json"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        for _ in 0..20 {
            served
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the load reached the server");
        }
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(child.wait_with_output());
        });
        let out = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("loglag load exits promptly after Ctrl-C")
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
        let requests = summary["requests"].as_u64().unwrap();
        // Responses still in flight at the signal are not waited for, so fewer than the
        // 20 the server saw may be summarised, but some are, and not the full 6,000.
        assert!(
            (1..6000).contains(&requests),
            "a partial summary: {requests}"
        );
        assert_eq!(summary["ok"], requests);
        assert!(summary["interrupted"]
            .as_str()
            .unwrap()
            .contains("interrupted"));
        assert!(stderr.contains("interrupted"), "{stderr}");
        // The rate is over the time it ran, not the 60 s planned: at 100/s it is near
        // 100, where dividing by 60 s would give a few per second.
        let ran = summary["duration_s"].as_f64().unwrap();
        assert!(ran < 60.0, "the time actually run: {ran}");
        let rps = summary["achieved_rps"].as_f64().unwrap();
        assert!(
            (rps - requests as f64 / ran).abs() < 1e-6 && rps > 20.0,
            "{rps} requests/s over {ran} s"
        );
    })
}
