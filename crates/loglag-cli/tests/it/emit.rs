//! `loglag emit`: numbered records through rotation, drops reported, and a summary on Ctrl-C.
//! Short runs; assertions are on mechanisms, not on timing constants.

use crate::support;
use support::*;

/// Ctrl-C during `loglag emit`: what was emitted is drained and summarised, and the
/// exit status says it was interrupted.
#[test]
#[cfg(unix)] // a FIFO, and SIGINT through kill(2)
fn ctrl_c_during_emit_prints_its_summary() {
    within("ctrl_c_during_emit_prints_its_summary", || {
        use std::io::{BufRead, Read};
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("emit.fifo");
        let c_path = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: mkfifo on a path in our own temporary directory.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let mut child = loglag()
            .args(["emit", "--sink", &format!("fifo://{}", fifo.display())])
            .args(["--count", "100000000", "--format", "json", "--allow-drops"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // The first records through the FIFO say it is emitting; then interrupt, and
        // keep reading so that the writer can drain.
        let mut reader = std::fs::File::open(&fifo).unwrap();
        let mut first = [0u8; 4096];
        reader.read_exact(&mut first).unwrap();
        let drain = std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let stdout = child.stdout.take().unwrap();
        let json: String = std::io::BufReader::new(stdout)
            .lines()
            .map(Result::unwrap)
            .collect::<Vec<_>>()
            .join("\n");
        let out = child.wait_with_output().unwrap();
        drain.join().unwrap().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        let summary: Value = serde_json::from_str(&json).unwrap();
        assert_eq!(summary["interrupted"], true);
        let records = summary["records"].as_u64().unwrap();
        assert!((1..100_000_000).contains(&records), "{records}");
        assert_eq!(
            summary["metrics"]["written_records"].as_u64().unwrap()
                + summary["metrics"]["dropped_records"].as_u64().unwrap(),
            records,
            "every emitted record accounted for: {summary}"
        );
        assert!(stderr.contains("interrupted"), "{stderr}");
    })
}

/// `loglag emit` into rotating, compressed files: every seq exactly once across the
/// files, the metrics printed, a non-zero exit on drops, clear errors on bad URLs.
#[test]
fn emit_pumps_numbered_records_through_rotation_and_reports_drops() {
    within(
        "emit_pumps_numbered_records_through_rotation_and_reports_drops",
        || {
            use std::io::Read;
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("app.log");
            let out = loglag()
                .args(["emit", "--sink", &format!("file://{}", log.display())])
                .args(["--count", "200000", "--size", "100", "--threads", "3"])
                .args(["--overflow", "block", "--rotate-bytes", "1MiB"])
                .args(["--compress", "gzip", "--format", "json"])
                .output()
                .unwrap();
            assert_success(&out);
            let s: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(s["metrics"]["written_records"], 200_000, "{s}");
            assert_eq!(s["metrics"]["dropped_records"], 0);
            let mut seen = vec![false; 200_000];
            let mut files = 0;
            for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
                let bytes = std::fs::read(e.path()).unwrap();
                let text = if e.file_name().to_string_lossy().ends_with(".gz") {
                    let mut t = Vec::new();
                    flate2::read::GzDecoder::new(&bytes[..])
                        .read_to_end(&mut t)
                        .unwrap();
                    t
                } else {
                    bytes
                };
                files += 1;
                for line in String::from_utf8(text).unwrap().lines() {
                    let seq: usize = line
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("seq="))
                        .unwrap()
                        .parse()
                        .unwrap();
                    assert!(!seen[seq], "seq {seq} twice");
                    seen[seq] = true;
                    assert_eq!(line.len(), 99, "{line}");
                }
            }
            assert!(files >= 15, "{files} files");
            assert!(seen.iter().all(|&s| s), "every seq from 0 is there");

            // Drops make the exit status 1, and say how to avoid them.
            let out = loglag()
                .args(["emit", "--sink", "file:///dev/full", "--count", "100"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1));
            assert!(String::from_utf8_lossy(&out.stderr).contains("100 of 100 records dropped"));
            let out = loglag()
                .args(["emit", "--sink", "file:///dev/full", "--count", "100"])
                .arg("--allow-drops")
                .output()
                .unwrap();
            assert_success(&out);
            let out = loglag()
                .args(["emit", "--sink", "tcp://127.0.0.1:9", "--count", "1"])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(2));
            assert!(String::from_utf8_lossy(&out.stderr).contains("unknown sink scheme"));
            let out = loglag()
                .args([
                    "emit",
                    "--sink",
                    "stdout",
                    "--count",
                    "1",
                    "--rotate-bytes",
                    "1KiB",
                ])
                .output()
                .unwrap();
            assert!(!out.status.success());
            assert!(String::from_utf8_lossy(&out.stderr).contains("need a file:// sink"));
        },
    )
}

/// `loglag emit --sink` with a URL that carries credentials is refused without the
/// password in the error (issue 47, 15): clap's own error repeated the value as given.
#[test]
fn emit_refuses_a_sink_url_with_credentials_without_showing_the_password() {
    within(
        "emit_refuses_a_sink_url_with_credentials_without_showing_the_password",
        || {
            for url in [
                "otlp+http://user:s3cr3t@127.0.0.1:9/v1/logs",
                "otlp+http://collector:x/v1/logs?token=s3cr3t",
                "syslog+tcp://user:s3cr3t@127.0.0.1:9",
            ] {
                let out = loglag()
                    .args(["emit", "--sink", url, "--count", "1"])
                    .output()
                    .unwrap();
                assert_eq!(out.status.code(), Some(2), "{url}");
                let stderr = String::from_utf8_lossy(&out.stderr);
                let stdout = String::from_utf8_lossy(&out.stdout);
                assert!(
                    !stderr.contains("s3cr3t") && !stdout.contains("s3cr3t"),
                    "{url}: {stderr}{stdout}"
                );
                assert!(stderr.contains("--sink"), "names the flag: {stderr}");
            }
        },
    )
}
