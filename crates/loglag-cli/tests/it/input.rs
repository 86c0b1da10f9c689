//! Bad flags and bad values: a clear error, exit 2 or 1, before anything starts.
//! Short runs; assertions are on mechanisms, not on timing constants.

use crate::support;
use support::*;

#[test]
fn bad_flags_exit_2_with_a_message() {
    within("bad_flags_exit_2_with_a_message", || {
        let out = loglag().args(["lab", "--no-such-flag"]).output().unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("--no-such-flag"));
        let out = loglag()
            .args(["lab", "--conditions", "json"])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert!(String::from_utf8_lossy(&out.stderr).contains("unknown condition \"json\""));
    })
}

#[test]
fn bad_input_is_refused_clearly() {
    within("bad_input_is_refused_clearly", || {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("regular");
        std::fs::write(&file, b"x").unwrap();
        let out = loglag()
            .args(["sink", "--fifo"])
            .arg(&file)
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("is not a FIFO"));

        let out = loglag()
            .args(["load", "http://127.0.0.1:1/", "--duration", "1s"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("cannot connect"));

        // Values that would make a run meaningless are refused before anything starts.
        for (args, expect) in [
            (
                &["load", "http://127.0.0.1:1/", "--closed", "0"][..],
                "--closed",
            ),
            (&["lab", "--read-size", "0"][..], "--read-size"),
            (&["lab", "--conditions", "none,json-sync,none"][..], "twice"),
            (&["lab", "--sinks", "slow,slow"][..], "twice"),
            (&["lab", "--threads", "0"][..], "--threads"),
            (
                &[
                    "lab",
                    "--conditions",
                    "none,json-sync",
                    "--baseline",
                    "json-queue",
                ][..],
                "--baseline \"json-queue\" is not one of the conditions run",
            ),
            // An --app is asked only for conditions it was told about.
            (
                &[
                    "lab",
                    "--app",
                    "python3 app.py --port {port} --log {log_path}",
                ][..],
                "--app needs --conditions",
            ),
        ] {
            let out = loglag().args(args).output().unwrap();
            assert!(!out.status.success(), "{args:?} was accepted");
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains(expect), "{args:?}: {stderr}");
        }
        // An --out that cannot be written fails before the first run, not after it.
        let blocked = dir.path().join("a-file");
        std::fs::write(&blocked, b"x").unwrap();
        let started = std::time::Instant::now();
        let out = loglag()
            .args(["lab", "--out"])
            .arg(blocked.join("results"))
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("cannot create --out directory"), "{stderr}");
        assert!(!stderr.contains("run 1/"), "no run started: {stderr}");
        assert!(started.elapsed() < std::time::Duration::from_secs(10));

        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = busy.local_addr().unwrap().port().to_string();
        let out = loglag().args(["serve", "--port", &port]).output().unwrap();
        assert!(!out.status.success());
        assert!(
            String::from_utf8_lossy(&out.stderr).contains("cannot listen"),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    })
}
