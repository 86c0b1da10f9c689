//! The `loglag` binary as a user meets it: bad input gets a clear error, and the lab's
//! mechanisms show up in its results. Short runs; assertions are on mechanisms, not on
//! timing constants.

/// A skip is said on stderr past the test harness's capture (which holds only what
/// `eprintln!` prints), so a plain `cargo test` shows what did not run and why.
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

use std::path::Path;
use std::process::Command;

use assert_cmd::prelude::*;
use serde_json::Value;

/// Runs a test body on its own thread and fails it after 15 minutes: a regression
/// that hangs (a lab that never drains, a child that never exits) fails CI in bounded
/// time instead of using up its 90 minutes.
fn within(name: &str, body: impl FnOnce() + Send + 'static) {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(body)));
    });
    match rx.recv_timeout(std::time::Duration::from_secs(15 * 60)) {
        Ok(Ok(())) => {}
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("{name}: did not finish within 15 minutes (hang)"),
    }
}

/// Fails with the command's stderr unless it succeeded.
fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn loglag() -> Command {
    Command::cargo_bin("loglag").unwrap()
}

/// Processes whose command line mentions `dir` (the lab's FIFOs live there).
fn processes_using(dir: &Path) -> String {
    let out = Command::new("pgrep")
        .arg("-af")
        .arg(dir.to_str().unwrap())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// No process mentions `tmp` (the lab's `TMPDIR`) and nothing is left in it.
fn assert_nothing_left(tmp: &Path, when: &str) {
    assert_eq!(processes_using(tmp), "", "{when}: processes left behind");
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "{when}: left behind: {left:?}");
}

fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

fn pair<'a>(s: &'a Value, condition: &str, sink: &str) -> &'a Value {
    s["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["condition"] == condition && p["sink"] == sink)
        .unwrap()
}

fn run<'a>(s: &'a Value, condition: &str, sink: &str) -> &'a Value {
    s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["condition"] == condition && p["sink"] == sink)
        .unwrap()
}

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
fn lab_reproduces_the_mechanism_on_a_slow_sink() {
    within("lab_reproduces_the_mechanism_on_a_slow_sink", || {
        let dir = tempfile::tempdir().unwrap();
        let out = loglag()
            .args([
                "lab",
                "--conditions",
                "none,json-sync,json-queue",
                "--sinks",
                "slow",
                "--duration",
                "2s",
                "--out",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_success(&out);
        let s = summary(dir.path());
        assert_eq!(s["schema"], 2);
        for c in ["none", "json-sync", "json-queue"] {
            assert_eq!(
                pair(&s, c, "slow")["verified"],
                true,
                "{c}: {}",
                run(&s, c, "slow")["verify_note"]
            );
        }
        // `none` writes nothing.
        assert_eq!(run(&s, "none", "slow")["read_bytes"], 0);
        // Sync: the API waits on the pipe, so what is left after the last response is at
        // most what the pipe held; the drain is bounded by that backlog at the read rate.
        let sync = pair(&s, "json-sync", "slow");
        let backlog_s = sync["max_backlog_kib"].as_f64().unwrap() / 256.0;
        assert!(
            sync["drain_s"].as_f64().unwrap() <= backlog_s + 0.5,
            "{sync}"
        );
        // Queue: the work moves after the response: backlog and drain are left behind.
        let queue = pair(&s, "json-queue", "slow");
        assert!(queue["max_backlog_kib"].as_f64().unwrap() > 64.0, "{queue}");
        assert!(queue["drain_s"].as_f64().unwrap() > 0.0, "{queue}");
        // 16 KiB x 20/s exceeds 256 KiB/s: reading all logs takes longer than the load.
        assert!(queue["rps_logs_read"].as_f64().unwrap() < queue["rps_api"].as_f64().unwrap());
        // The headline: waiting on the slow sink in the request path costs the tail, handing
        // off does not. 20 x 16 KiB/s against 256 KiB/s makes sync requests queue for
        // seconds; the queue's p99 is the API's own work.
        let (sync_p99, queue_p99) = (
            sync["p99_ms"].as_f64().unwrap(),
            queue["p99_ms"].as_f64().unwrap(),
        );
        assert!(
            sync_p99 > 10.0 * queue_p99,
            "sync p99 {sync_p99} ms should exceed 10x queue p99 {queue_p99} ms"
        );
        // The generator's own lateness is reported for every run and pair.
        for c in ["none", "json-sync", "json-queue"] {
            let late = &pair(&s, c, "slow")["send_lateness"];
            assert!(late["p99_us"].as_f64().unwrap() >= 0.0, "{c}: {late}");
            assert!(
                late["max_us"].as_f64() >= late["mean_us"].as_f64(),
                "{c}: {late}"
            );
            assert!(run(&s, c, "slow")["send_lateness"]["p99_us"].is_number());
        }
        assert_eq!(s["params"]["lateness_limit_us"], 100.0);
        // Every file is there, and requests.csv has exact scheduled offsets.
        for f in ["pairs.csv", "runs.csv", "requests.csv", "timeseries.csv"] {
            assert!(dir.path().join(f).exists(), "{f}");
        }
        let requests = std::fs::read_to_string(dir.path().join("requests.csv")).unwrap();
        let first_run: Vec<&str> = requests
            .lines()
            .skip(1)
            .filter(|l| l.starts_with("0,"))
            .collect();
        assert_eq!(first_run.len(), 40);
        for (i, line) in first_run.iter().enumerate() {
            let scheduled: f64 = line.split(',').nth(3).unwrap().parse().unwrap();
            assert_eq!(scheduled, i as f64 * 50.0);
        }
        // The Markdown table went to stdout.
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert!(stdout.contains("| json-queue | slow |"), "{stdout}");
        // The headline is stated as a finding with its interval: sync against the queue
        // at p99, seconds against milliseconds, holds (its saturation is its own doing).
        let headline = s["findings"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| {
                f["condition"] == "json-sync"
                    && f["baseline"] == "json-queue"
                    && f["percentile"] == "p99"
            })
            .unwrap_or_else(|| panic!("no json-sync vs json-queue finding: {}", s["findings"]));
        assert_eq!(
            headline["inconclusive"],
            serde_json::Value::Null,
            "{headline}"
        );
        assert!(
            headline["ratio_interval"][0].as_f64().unwrap() > 10.0,
            "{headline}"
        );
        assert!(
            stdout.contains("| json-sync vs json-queue | slow | p99 |")
                && stdout.contains("**Findings.**"),
            "{stdout}"
        );
        // Every condition is compared with `none`, on p50 and p99.
        assert_eq!(
            s["findings"].as_array().unwrap().len(),
            6,
            "{}",
            s["findings"]
        );
    })
}

/// An app that logs every connection: the default readiness probe (a TCP connect) is
/// one line more than the requests explain; `--ready log:TEXT` probes without a
/// connection, so every line is a request's.
#[test]
fn readiness_from_the_apps_own_log_adds_no_connection() {
    within("readiness_from_the_apps_own_log_adds_no_connection", || {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("conn_logger.py");
        std::fs::write(
            &script,
            r#"import socket, sys
port, log = int(sys.argv[1]), sys.argv[2]
out = open(log, "w", buffering=1)
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", port))
server.listen(64)
print("listening on", port, file=sys.stderr, flush=True)
while True:
    conn, _ = server.accept()
    out.write("connection accepted\n")
    data = conn.recv(65536)
    if data:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    conn.close()
"#,
        )
        .unwrap();
        let app = format!("python3 {} {{port}} {{log_path}}", script.display());
        let lab = |ready: &str| {
            let out_dir = tempfile::tempdir().unwrap();
            let out = loglag()
                .args([
                    "lab",
                    "--app",
                    &app,
                    "--conditions",
                    "conn",
                    "--expect-lines",
                    "1",
                ])
                .args([
                    "--sinks",
                    "fast",
                    "--duration",
                    "1s",
                    "--ready",
                    ready,
                    "--out",
                ])
                .arg(out_dir.path())
                .output()
                .unwrap();
            (out, summary(out_dir.path()))
        };
        let (_, probed) = lab("connect");
        let r = run(&probed, "conn", "fast");
        assert_eq!(
            r["verified"], false,
            "the probe's connection is one line more: {r}"
        );
        assert!(r["verify_note"].as_str().unwrap().contains("extra"), "{r}");
        let (out, quiet) = lab("log:listening on");
        assert_success(&out);
        let r = run(&quiet, "conn", "fast");
        assert_eq!(r["verified"], true, "{r}");
        // A readiness that never comes is a clear error within --ready-timeout.
        let out = loglag()
            .args([
                "lab",
                "--app",
                &app,
                "--conditions",
                "conn",
                "--expect-lines",
                "1",
            ])
            .args([
                "--sinks",
                "fast",
                "--duration",
                "1s",
                "--ready",
                "log:never printed",
            ])
            .args(["--ready-timeout", "1s"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("--ready-timeout") && stderr.contains("never printed"),
            "{stderr}"
        );
    })
}

/// Writes into `dir` a Python HTTP app that logs one line per request to its standard
/// output (and "listening" to stderr), and returns its path.
fn stdout_logger(dir: &std::path::Path) -> std::path::PathBuf {
    let script = dir.join("stdout_logger.py");
    std::fs::write(
        &script,
        r#"import socket, sys
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen(64)
print("listening", file=sys.stderr, flush=True)
while True:
    conn, _ = server.accept()
    if conn.recv(65536):
        print("served a request", flush=True)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    conn.close()
"#,
    )
    .unwrap();
    script
}

/// A service that logs to standard output, as containers do: `--app-log stdout`
/// connects it to the lab's reader, and its log is verified like a file's.
#[test]
fn an_app_that_logs_to_stdout_is_measured() {
    within("an_app_that_logs_to_stdout_is_measured", || {
        let dir = tempfile::tempdir().unwrap();
        let script = stdout_logger(dir.path());
        let app = format!("python3 {} {{port}}", script.display());
        let out_dir = tempfile::tempdir().unwrap();
        let out = loglag()
            .args([
                "lab",
                "--app",
                &app,
                "--app-log",
                "stdout",
                "--conditions",
                "stdout",
            ])
            .args([
                "--expect-lines",
                "1",
                "--sinks",
                "fast,slow",
                "--duration",
                "1s",
            ])
            .args(["--ready", "log:listening", "--out"])
            .arg(out_dir.path())
            .output()
            .unwrap();
        assert_success(&out);
        let s = summary(out_dir.path());
        for sink in ["fast", "slow"] {
            let r = run(&s, "stdout", sink);
            assert_eq!(r["verified"], true, "{sink}: {r}");
            assert_eq!(r["expected_records"], 22, "20 requests and 2 warm-up: {r}");
            assert!(
                r["verify_note"].as_str().unwrap().contains("22 lines"),
                "{r}"
            );
        }
        // Without {log_path}, the default --app-log path is refused with the way out.
        let out = loglag()
            .args(["lab", "--app", &app, "--conditions", "stdout"])
            .output()
            .unwrap();
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("--app-log stdout|stderr"));
    })
}

/// Processes whose command line contains every one of `words`.
fn processes_running(words: &[&str]) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|p| {
            let pid: u32 = p.file_name().to_str()?.parse().ok()?;
            let cmdline = std::fs::read(p.path().join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            words.iter().all(|w| cmdline.contains(w)).then_some(pid)
        })
        .collect()
}

/// An app that forks a worker and a `setsid` daemon: nothing of it outlives the lab,
/// whether the lab ends normally or is SIGKILLed (then the next lab removes it).
#[test]
fn nothing_an_app_starts_outlives_the_lab() {
    within("nothing_an_app_starts_outlives_the_lab", || {
        let dir = tempfile::tempdir().unwrap();
        let script = stdout_logger(dir.path());
        // A worker and a daemon in a session of its own, each marked by a number.
        let app = |mark: u32| {
            format!(
                "sh -c 'sleep {mark} & setsid sleep {} & exec python3 {} \"$0\"' {{port}}",
                mark + 1,
                script.display()
            )
        };
        let lab = |mark: u32, duration: &str| {
            let mut cmd = loglag();
            cmd.args(["lab", "--app", &app(mark), "--app-log", "stdout"])
                .args([
                    "--conditions",
                    "c",
                    "--expect-lines",
                    "1",
                    "--sinks",
                    "fast",
                ])
                .args(["--duration", duration, "--ready", "log:listening"]);
            cmd
        };
        let mark = 30_000 + std::process::id() % 10_000;
        let out = lab(mark, "1s").output().unwrap();
        assert_success(&out);
        let m = mark.to_string();
        let m1 = (mark + 1).to_string();
        assert_eq!(
            processes_running(&["sleep", &m]),
            Vec::<u32>::new(),
            "the worker"
        );
        assert_eq!(
            processes_running(&["sleep", &m1]),
            Vec::<u32>::new(),
            "the setsid daemon"
        );

        // SIGKILL the lab while its app runs: the app's worker and daemon outlive it...
        let mark = mark + 10;
        let (m, m1) = (mark.to_string(), (mark + 1).to_string());
        let mut killed = lab(mark, "60s")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Waiting for another process to start something: polling is all there is.
        while processes_running(&["sleep", &m1]).is_empty() {
            assert!(killed.try_wait().unwrap().is_none(), "the lab ended early");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        killed.kill().unwrap();
        killed.wait().unwrap();
        // The killed lab's app is gone (it dies with the lab), its worker and daemon
        // are not, until a lab with an --app starts: this one, or one of the other
        // tests running at the same time, which removes them just the same.
        let out = lab(mark + 100, "200ms").output().unwrap();
        assert_success(&out);
        assert_eq!(processes_running(&["sleep", &m]), Vec::<u32>::new());
        assert_eq!(processes_running(&["sleep", &m1]), Vec::<u32>::new());
    })
}

#[test]
fn the_python_reference_api_runs_through_app() {
    within("the_python_reference_api_runs_through_app", || {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let script = root.join("examples/python/seed_api.py");
        let dir = tempfile::tempdir().unwrap();
        let app = format!(
            "python3 {} --port {{port}} --log {{log_path}} --condition {{condition}}",
            script.display()
        );
        let out = loglag()
            .args([
                "lab",
                "--conditions",
                "short10,json-sync",
                "--sinks",
                "fast,slow",
                "--duration",
                "1s",
                "--app",
                &app,
                "--out",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_success(&out);
        let s = summary(dir.path());
        for c in ["short10", "json-sync"] {
            for sink in ["fast", "slow"] {
                let r = run(&s, c, sink);
                assert_eq!(r["verified"], true, "{c}/{sink}: {}", r["verify_note"]);
                assert!(
                    r["gen_us"].is_null(),
                    "an external app cannot report in-API timings"
                );
            }
        }
        assert_eq!(run(&s, "short10", "fast")["read_newlines"], 200);
    })
}

#[test]
fn an_app_that_crashes_gives_a_clear_error_and_leaves_nothing_behind() {
    within(
        "an_app_that_crashes_gives_a_clear_error_and_leaves_nothing_behind",
        || {
            let tmp = tempfile::tempdir().unwrap();
            let out = loglag()
                .env("TMPDIR", tmp.path())
                .args([
                    "lab",
                    "--conditions",
                    "none",
                    "--sinks",
                    "fast",
                    "--duration",
                    "1s",
                    "--app",
                    "sh -c 'echo boom >&2; exit 3' {port} {log_path}",
                ])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("exited early") && stderr.contains("boom"),
                "{stderr}"
            );
            // No child survives, and the lab's FIFO directory is gone.
            assert_nothing_left(tmp.path(), "after the crash");
        },
    )
}

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

#[test]
fn ctrl_c_keeps_partial_results_and_cleans_up() {
    within("ctrl_c_keeps_partial_results_and_cleans_up", || {
        use std::io::{BufRead, BufReader};
        let dir = tempfile::tempdir().unwrap();
        let tmp = tempfile::tempdir().unwrap();
        let mut child = loglag()
            .args([
                "lab",
                "--conditions",
                "none,short1,short10",
                "--sinks",
                "fast",
                "--duration",
                "1s",
                "--out",
            ])
            .arg(dir.path())
            .env("TMPDIR", tmp.path())
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut line = String::new();
        // Interrupt once the first run has finished and the second has started.
        while !line.contains("run 2/3") {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "lab ended early");
        }
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
        let mut rest = String::new();
        std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(130), "{rest}");
        assert!(rest.contains("interrupted"), "{rest}");
        let s = summary(dir.path());
        assert_eq!(
            s["runs"].as_array().unwrap().len(),
            1,
            "the finished run is kept"
        );
        assert_nothing_left(tmp.path(), "after Ctrl-C");
    })
}

#[test]
fn cpu_limit_uses_cgroups_when_allowed_and_removes_them() {
    within(
        "cpu_limit_uses_cgroups_when_allowed_and_removes_them",
        || {
            let dir = tempfile::tempdir().unwrap();
            let child = loglag()
                .args([
                    "lab",
                    "--conditions",
                    "json-sync",
                    "--sinks",
                    "fast",
                    "--duration",
                    "1s",
                    "--cpu-limit",
                    "0.25",
                    "--out",
                ])
                .arg(dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            let out = child.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(out.status.success(), "{stderr}");
            let s = summary(dir.path());
            let applied = s["params"]["cpu_limit_applied"].as_bool().unwrap();
            // CI sets LOGLAG_REQUIRE_CGROUP: there, a machine where the limit cannot be applied
            // is a failure, not a warning that makes this test pass vacuously.
            if std::env::var_os("LOGLAG_REQUIRE_CGROUP").is_some() {
                assert!(
                    applied,
                    "LOGLAG_REQUIRE_CGROUP is set but --cpu-limit was not applied: {stderr}"
                );
            } else if !applied {
                skip_note!("SKIPPED the quota check: cgroups are not usable here ({stderr})");
            }
            if applied {
                let cores = run(&s, "json-sync", "fast")["cpu_cores"].as_f64().unwrap();
                assert!(
                    cores <= 0.25 + 0.05,
                    "the API stayed under its quota: {cores}"
                );
            } else {
                assert!(
                    stderr.contains("cgroups are not usable here"),
                    "a clear warning: {stderr}"
                );
            }
            // Nothing is left behind in either hierarchy.
            for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"] {
                for name in [format!("loglag-{pid}-api"), format!("loglag-{pid}-io")] {
                    assert!(
                        !Path::new(root).join(&name).exists(),
                        "{root}/{name} left behind"
                    );
                }
            }
        },
    )
}

#[test]
fn kill_9_during_a_flood_loses_and_duplicates_nothing() {
    within("kill_9_during_a_flood_loses_and_duplicates_nothing", || {
        let trials: usize = std::env::var("LOGLAG_TORTURE_TRIALS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(20);
        let out = loglag()
            .args([
                "torture",
                "--only",
                "kill9",
                "--trials",
                &trials.to_string(),
                "--format",
                "json",
            ])
            .output()
            .unwrap();
        assert_success(&out);
        let all: Value = serde_json::from_slice(&out.stdout).unwrap();
        let r = &all["kill9"];
        assert_eq!(r["trials"], trials);
        assert!(r["expected"].as_u64().unwrap() >= 1000 * trials as u64);
        assert_eq!(r["recovered"], r["expected"]);
        assert_eq!(r["duplicates"], 0);
        assert_eq!(r["out_of_order"], 0);
        assert_eq!(r["corrupt"], 0);
        assert!(
            r["from_spool"].as_u64().unwrap() > 0,
            "recovery delivered records the killed process had queued"
        );
    })
}

/// The default policy drops under the flood: every record whose call returned is in
/// the sink or counted in an in-band report, the one recovery writes for the killed
/// process included. A call in progress at the kill may be dropped and counted without
/// having returned: at most one per producer (two).
#[test]
fn kill_9_with_the_default_policy_announces_every_drop() {
    within(
        "kill_9_with_the_default_policy_announces_every_drop",
        || {
            let trials = 10u64;
            let out = loglag()
                .args([
                    "torture",
                    "--only",
                    "kill9",
                    "--kill9-policy",
                    "default",
                    "--trials",
                    &trials.to_string(),
                    "--format",
                    "json",
                ])
                .output()
                .unwrap();
            assert_success(&out);
            let all: Value = serde_json::from_slice(&out.stdout).unwrap();
            let r = &all["kill9"];
            assert_eq!(r["policy"], "default");
            let (returned, present, announced) = (
                r["expected"].as_u64().unwrap(),
                r["recovered"].as_u64().unwrap(),
                r["announced"].as_u64().unwrap(),
            );
            assert!(announced > 0, "the flood dropped: {r}");
            assert!(
            present + announced >= returned && present + announced <= returned + 2 * trials,
            "returned {returned} = present {present} + announced {announced} (within the calls in flight): {r}"
        );
            assert_eq!(r["duplicates"], 0);
            assert_eq!(r["out_of_order"], 0);
            assert_eq!(r["corrupt"], 0);
            assert_eq!(r["passed"], true);
        },
    )
}

#[test]
fn recover_delivers_a_spool_without_the_app_and_refuses_garbage() {
    within(
        "recover_delivers_a_spool_without_the_app_and_refuses_garbage",
        || {
            let dir = tempfile::tempdir().unwrap();
            let (spool, sink, progress) = (
                dir.path().join("app.spool"),
                dir.path().join("app.log"),
                dir.path().join("progress"),
            );
            std::fs::write(&progress, [0u8; 16]).unwrap();
            // A process flooding a spool-mode pipeline...
            // Started as the torture starts it: through the child contract.
            let spec = loglag_lab::child::ChildSpec::Flood {
                spool: spool.clone(),
                out: sink.clone(),
                progress: progress.clone(),
                rotate_bytes: None,
                policy: loglag_lab::torture::FloodPolicy::Block,
            };
            let mut child = spec
                .command(&assert_cmd::cargo::cargo_bin("loglag"))
                .spawn()
                .unwrap();
            let returned = || {
                let p = std::fs::read(&progress).unwrap();
                u64::from_le_bytes(p[..8].try_into().unwrap())
                    + u64::from_le_bytes(p[8..].try_into().unwrap())
            };
            // Bounded, and the child must stay alive: a flooder that died or stalled fails
            // the test in minutes instead of hanging CI.
            let started = std::time::Instant::now();
            while returned() < 5000 {
                assert!(
                    child.try_wait().unwrap().is_none(),
                    "the flooding child exited early"
                );
                assert!(
                    started.elapsed() < std::time::Duration::from_secs(120),
                    "the flooder returned only {} calls in 120 s",
                    returned()
                );
                std::thread::yield_now();
            }
            // ...cannot be recovered under its feet...
            let busy = loglag().arg("recover").arg(&spool).output().unwrap();
            assert!(!busy.status.success());
            assert!(
                String::from_utf8_lossy(&busy.stderr).contains("in use by another process"),
                "{}",
                String::from_utf8_lossy(&busy.stderr)
            );
            // ...but once it is killed, recover delivers what it had queued, into the same
            // file: exactly once, so every call that returned is there once, in order.
            child.kill().unwrap();
            child.wait().unwrap();
            let p = std::fs::read(&progress).unwrap();
            let returned_by = [
                u64::from_le_bytes(p[..8].try_into().unwrap()),
                u64::from_le_bytes(p[8..].try_into().unwrap()),
            ];
            let out = loglag()
                .arg("recover")
                .arg(&spool)
                .arg("-o")
                .arg(&sink)
                .output()
                .unwrap();
            assert_success(&out);
            let text = std::fs::read_to_string(&sink).unwrap();
            let mut next = [0u64; 2];
            for line in text.lines() {
                let mut words = line.split(' ');
                let producer: usize = words.next().unwrap()[1..].parse().unwrap();
                let seq: u64 = words.next().unwrap()[1..].parse().unwrap();
                assert_eq!(
                    seq, next[producer],
                    "producer {producer}: a record duplicated, lost or out of order"
                );
                next[producer] += 1;
            }
            for producer in 0..2 {
                assert!(
                    next[producer] >= returned_by[producer],
                    "producer {producer}: {} calls returned, {} records delivered",
                    returned_by[producer],
                    next[producer]
                );
            }
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("records"),
                "a summary on stderr"
            );
            // Recovered records are marked delivered: a second recovery finds nothing.
            let again = loglag().arg("recover").arg(&spool).output().unwrap();
            assert!(again.status.success());
            assert!(again.stdout.is_empty());

            let garbage = dir.path().join("garbage");
            std::fs::write(&garbage, vec![0x5a; 10_000]).unwrap();
            let out = loglag().arg("recover").arg(&garbage).output().unwrap();
            assert!(!out.status.success());
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("not a loglag spool"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(
                std::fs::read(&garbage).unwrap(),
                vec![0x5a; 10_000],
                "a file that is not a spool is left alone"
            );
        },
    )
}

#[test]
fn overload_soak_stays_in_budget_and_accounts_for_every_record() {
    within(
        "overload_soak_stays_in_budget_and_accounts_for_every_record",
        || {
            let secs: u64 = std::env::var("LOGLAG_SOAK_SECS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(10);
            let out = loglag()
                .args([
                    "torture",
                    "--only",
                    "soak",
                    "--soak",
                    &format!("{secs}s"),
                    "--format",
                    "json",
                ])
                .output()
                .unwrap();
            assert_success(&out);
            let r: Value = serde_json::from_slice(&out.stdout).unwrap();
            let rows = r["soak"].as_array().unwrap();
            assert_eq!(rows.len(), 5, "every policy");
            for row in rows {
                assert_eq!(row["accounted"], true, "{row}");
                let budget = row["budget_bytes"].as_u64().unwrap();
                // The ring, plus a fixed overhead: the writer's batch buffer, thread stacks,
                // allocator slack.
                assert!(
                    row["max_rss_growth_bytes"].as_u64().unwrap() <= budget + (24 << 20),
                    "{row}"
                );
                assert!(
                    row["dropped_queue_full"].as_u64().unwrap() > 0 || row["policy"] == "Block",
                    "10x overload must shed: {row}"
                );
            }
        },
    )
}

#[test]
fn every_extra_condition_runs_and_verifies() {
    within("every_extra_condition_runs_and_verifies", || {
        let dir = tempfile::tempdir().unwrap();
        let out = loglag()
            .args([
                "lab",
                "--conditions",
                "loglag,tracing-appender,memory-buffer,memory-buffer-50,memory-buffer-200,queue-memory-100,file-sync,sync-writeln,channel-batch,tokio-fs",
                "--sinks",
                "fast",
                "--duration",
                "1s",
                "--out",
            ])
            .arg(dir.path())
            .output()
            .unwrap();
        assert_success(&out);
        let s = summary(dir.path());
        // `memory-buffer` is the old name of `memory-buffer-100`.
        for c in [
            "loglag",
            "tracing-appender",
            "memory-buffer-100",
            "memory-buffer-50",
            "memory-buffer-200",
            "queue-memory-100",
            "file-sync",
            "sync-writeln",
            "channel-batch",
            "tokio-fs",
        ] {
            let r = run(&s, c, "fast");
            assert_eq!(r["verified"], true, "{c}: {}", r["verify_note"]);
            assert_eq!(
                r["read_bytes"],
                20 * 16_384,
                "{c}: every request's 16 KiB line was read"
            );
        }
    })
}

#[test]
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

/// Ctrl-C during `loglag emit`: what was emitted is drained and summarised, and the
/// exit status says it was interrupted.
#[test]
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

/// Ctrl-C at 10 moments spread over a `--cpu-limit` run (start-up, warm-up, load,
/// drain): each time, no cgroup, FIFO, temporary directory or child process remains.
#[test]
fn ctrl_c_at_any_moment_with_a_cpu_limit_leaves_nothing_behind() {
    within(
        "ctrl_c_at_any_moment_with_a_cpu_limit_leaves_nothing_behind",
        || {
            use std::io::{BufRead, BufReader};
            let cgroups_usable = std::path::Path::new("/sys/fs/cgroup/cpu").is_dir()
                || std::path::Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
            // A fixed spread of moments, not random: the same ten every run, from the first
            // instant to the second run's drain.
            for delay_ms in [0u64, 40, 120, 250, 400, 600, 800, 1100, 1500, 2100] {
                let tmp = tempfile::tempdir().unwrap();
                let mut child = loglag()
                    .args(["lab", "--conditions", "json-sync", "--sinks", "fast,slow"])
                    .args(["--duration", "1s", "--cpu-limit", "0.5"])
                    .env("TMPDIR", tmp.path())
                    .stderr(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::null())
                    .spawn()
                    .unwrap();
                let pid = child.id();
                let mut stderr = BufReader::new(child.stderr.take().unwrap());
                let mut line = String::new();
                // Synchronise on the lab having started its first run, then let it go on for
                // `delay_ms`: the moment of the interrupt is what varies, by design.
                while !line.contains("run 1/2") {
                    line.clear();
                    assert!(stderr.read_line(&mut line).unwrap() > 0, "lab ended early");
                }
                std::thread::sleep(std::time::Duration::from_millis(delay_ms));
                // SAFETY: kill(2) on our own child.
                unsafe { libc::kill(pid as i32, libc::SIGINT) };
                let (tx, rx) = std::sync::mpsc::channel();
                std::thread::spawn(move || {
                    let mut rest = String::new();
                    let _ = std::io::Read::read_to_string(&mut stderr, &mut rest);
                    let _ = tx.send((child.wait().unwrap(), rest));
                });
                let (status, rest) = rx
                    .recv_timeout(std::time::Duration::from_secs(60))
                    .expect("the lab exits after Ctrl-C");
                assert!(
                    status.code() == Some(130) || status.success(),
                    "at {delay_ms} ms: {status:?} {rest}"
                );
                for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"] {
                    for name in [format!("loglag-{pid}-api"), format!("loglag-{pid}-io")] {
                        assert!(
                        !Path::new(root).join(&name).exists(),
                        "at {delay_ms} ms: {root}/{name} left behind (cgroups usable: {cgroups_usable}); {rest}"
                    );
                    }
                }
                assert_nothing_left(tmp.path(), &format!("at {delay_ms} ms"));
            }
        },
    )
}

/// Runs `examples/python/buffer_api.py` through `--app` with `extra` arguments for the
/// app and for the lab; returns summary.json.
fn buffer_app_lab(app_extra: &str, conditions: &str, lab_extra: &[&str]) -> Value {
    app_lab("python3", "buffer_api.py", app_extra, conditions, lab_extra)
}

/// Runs `examples/python/SCRIPT` with `python` through `--app`; returns summary.json.
fn app_lab(
    python: &str,
    script: &str,
    app_extra: &str,
    conditions: &str,
    lab_extra: &[&str],
) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("examples/python").join(script);
    let dir = tempfile::tempdir().unwrap();
    let app = format!(
        "{python} {} --port {{port}} --log {{log_path}} --mode {{condition}} {app_extra}",
        script.display()
    );
    let out = loglag()
        .args(["lab", "--app", &app, "--conditions", conditions])
        .args(["--expect-lines", "3", "--sinks", "fast", "--duration", "2s"])
        .args(lab_extra)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    // A loss makes the lab exit 0 still: it measured what it was asked to.
    assert_success(&out);
    summary(dir.path())
}

#[test]
fn an_app_that_loses_its_buffer_at_shutdown_shows_the_exact_loss() {
    within(
        "an_app_that_loses_its_buffer_at_shutdown_shows_the_exact_loss",
        || {
            // 2 warm-up + 40 measured requests x 3 records = 126; a 100-record MemoryHandler
            // flushes once at 100 and holds 26 when the app stops.
            let flushed = buffer_app_lab("", "stream,memory,queue-memory", &[]);
            for c in ["stream", "memory", "queue-memory"] {
                let r = run(&flushed, c, "fast");
                assert_eq!(r["lost_records"], 0, "{c} flushes at SIGTERM: {r}");
                assert_eq!(r["expected_records"], 126, "{c}: {r}");
                assert_eq!(r["verified"], true, "{c}: {r}");
                assert!(
                    r["app_exit"].as_str().unwrap().contains("exit status: 0"),
                    "{r}"
                );
            }
            let unflushed = buffer_app_lab(
                "--no-flush-at-exit",
                "stream,memory",
                &["--match-request-id"],
            );
            let stream = run(&unflushed, "stream", "fast");
            assert_eq!(stream["lost_records"], 0);
            assert_eq!(stream["request_ids"]["placement"], "none", "{stream}");
            let memory = run(&unflushed, "memory", "fast");
            assert_eq!(memory["lost_records"], 26, "{memory}");
            // 26 records: the whole of the last 8 requests, and 2 of the 9th from last.
            let ids = &memory["request_ids"];
            assert_eq!(
                (ids["missing"].as_u64(), ids["incomplete"].as_u64()),
                (Some(8), Some(1)),
                "{ids}"
            );
            assert_eq!(ids["first"][0], 33, "ids 0..=41 were served: {ids}");
            assert_eq!(ids["placement"], "the last 9 requests before the stop");
            assert_eq!(memory["verified"], false);
            let note = memory["verify_note"].as_str().unwrap();
            assert!(note.contains("26 records lost"), "{note}");
            assert_eq!(
                pair(&unflushed, "memory", "fast")["verify_note"],
                memory["verify_note"],
                "the pair says why"
            );
            // SIGKILL loses the buffer in every buffering mode.
            let killed = buffer_app_lab("", "memory,queue-memory", &["--stop-signal", "kill"]);
            for c in ["memory", "queue-memory"] {
                let r = run(&killed, c, "fast");
                assert_eq!(r["lost_records"], 26, "{c}: {r}");
                assert!(r["app_exit"].as_str().unwrap().contains("SIGKILL"), "{r}");
            }
            // Names the built-in API does not know need --app; --expect-lines needs names
            // that are being run.
            let out = loglag()
                .args(["lab", "--conditions", "memory"])
                .output()
                .unwrap();
            assert!(String::from_utf8_lossy(&out.stderr).contains("needs --app"));
            let out = loglag()
                .args([
                    "lab",
                    "--app",
                    "x {port} {log_path}",
                    "--conditions",
                    "memory",
                ])
                .args(["--expect-lines", "stream=3"])
                .output()
                .unwrap();
            assert!(String::from_utf8_lossy(&out.stderr).contains("not in --conditions"));
        },
    )
}

/// The FastAPI example (`examples/python/fastapi_app.py`, uvicorn), as a user would run
/// it: a flushed shutdown loses nothing; no flush at SIGTERM, or SIGKILL, loses exactly
/// what the MemoryHandler held. Needs the venv `.ci/run` builds under target/.
#[test]
fn the_fastapi_example_names_its_losses() {
    within("the_fastapi_example_names_its_losses", || {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let python = root.join("target/fastapi-venv/bin/python");
        if !python.exists() {
            assert!(
                std::env::var_os("LOGLAG_REQUIRE_FASTAPI").is_none(),
                "LOGLAG_REQUIRE_FASTAPI is set but {} is missing",
                python.display()
            );
            skip_note!(
                "SKIPPED: {} is missing (python3 -m venv target/fastapi-venv && target/fastapi-venv/bin/pip install fastapi uvicorn)",
                python.display()
            );
            return;
        }
        let python = python.to_str().unwrap().to_owned();
        let flushed = app_lab(
            &python,
            "fastapi_app.py",
            "",
            "stream,memory,queue-memory",
            &[],
        );
        for c in ["stream", "memory", "queue-memory"] {
            let r = run(&flushed, c, "fast");
            assert_eq!(r["lost_records"], 0, "{c}: {r}");
            assert_eq!(r["verified"], true, "{c}: {r}");
        }
        let unflushed = app_lab(
            &python,
            "fastapi_app.py",
            "--no-flush-at-exit",
            "memory",
            &["--match-request-id"],
        );
        let memory = run(&unflushed, "memory", "fast");
        assert_eq!(memory["lost_records"], 26, "{memory}");
        assert_eq!(
            memory["request_ids"]["placement"], "the last 9 requests before the stop",
            "{memory}"
        );
        // uvicorn re-raises SIGTERM after its lifespan shutdown.
        assert!(
            memory["app_exit"].as_str().unwrap().contains("SIGTERM"),
            "{memory}"
        );
        let killed = app_lab(
            &python,
            "fastapi_app.py",
            "",
            "memory",
            &["--stop-signal", "kill"],
        );
        assert_eq!(run(&killed, "memory", "fast")["lost_records"], 26);
    })
}

/// Runs `loglag lab` with `args` into a temporary directory; returns preset.json and
/// the directory.
fn preset(args: &[&str]) -> (Value, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = loglag()
        .arg("lab")
        .args(args)
        .arg("--out")
        .arg(dir.path())
        .output()
        .unwrap();
    assert_success(&out);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("| condition |") || stdout.contains("| batch"),
        "{stdout}"
    );
    let p = serde_json::from_str(&std::fs::read_to_string(dir.path().join("preset.json")).unwrap())
        .unwrap();
    (p, dir)
}

fn preset_row<'a>(p: &'a Value, step: &str, condition: &str) -> &'a Value {
    p["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["step"] == step && r["pair"]["condition"] == condition)
        .unwrap_or_else(|| panic!("no row {step} / {condition} in {p}"))
}

/// Reference 002 on the built-in API: a 100-record buffer writes far less often than a
/// write per record, a SIGTERM loses nothing, and a SIGKILL loses exactly what the
/// buffer held (the warm-up was flushed, so that is the records since, modulo 100).
#[test]
fn the_buffers_preset_counts_writes_and_what_a_kill_loses() {
    within(
        "the_buffers_preset_counts_writes_and_what_a_kill_loses",
        || {
            let (p, dir) = preset(&[
                "--preset",
                "buffers",
                "--conditions",
                "file-sync,memory-buffer-100,loglag,loglag-spool",
                "--closed",
                "20",
                "--duration",
                "1s",
            ]);
            assert_eq!(p["steps"], serde_json::json!(["term", "kill"]));
            for step in ["term", "kill"] {
                let sync = &preset_row(&p, step, "file-sync")["pair"];
                let buffered = &preset_row(&p, step, "memory-buffer-100")["pair"];
                let w = |r: &Value| r["log_writes_per_min"].as_f64().unwrap();
                assert!(
                    w(sync) >= 20.0 * w(buffered),
                    "{step}: file-sync {} writes/min against memory-buffer-100 {}",
                    w(sync),
                    w(buffered)
                );
                assert!(sync["syscw_per_min"].as_f64().unwrap() > 0.0);
                assert_eq!(sync["lost_records"], 0, "{step}: {sync}");
                assert_eq!(sync["out_of_order"], 0);
                assert_eq!(sync["http_errors"], 0);
            }
            for c in ["file-sync", "memory-buffer-100", "loglag"] {
                let r = &preset_row(&p, "term", c)["pair"];
                assert_eq!(r["lost_records"], 0, "SIGTERM flushes {c}: {r}");
                assert_eq!(r["verified"], true, "{r}");
            }
            // What the buffer held at the SIGKILL: the records logged since the warm-up
            // (which was flushed), modulo its capacity.
            let kill = summary(&dir.path().join("kill"));
            let killed = run(&kill, "memory-buffer-100", "fast");
            let logged = killed["expected_records"].as_i64().unwrap();
            assert!(logged > 100, "{killed}");
            assert_eq!(
                killed["lost_records"].as_i64().unwrap(),
                logged % 100,
                "{killed}"
            );
            assert!(
                killed["app_exit"].as_str().unwrap().contains("SIGKILL"),
                "{killed}"
            );
            if logged % 100 > 0 {
                assert!(killed["verify_note"]
                    .as_str()
                    .unwrap()
                    .contains("lost at the stop"));
            }
            assert_eq!(run(&kill, "file-sync", "fast")["lost_records"], 0);
            // 002's SIGKILL row, answered: with a spool the kill loses nothing; the lab
            // delivers the spool into the pipe after the stop, as the next start would.
            for step in ["term", "kill"] {
                let spooled = &preset_row(&p, step, "loglag-spool")["pair"];
                assert_eq!(spooled["lost_records"], 0, "{step}: {spooled}");
                assert_eq!(spooled["verified"], true, "{step}: {spooled}");
                assert!(spooled["duplicate_records"].as_u64().is_some(), "{spooled}");
            }
        },
    )
}

/// `--error-every`: the ERROR makes the memory buffer write what it holds, and what
/// arrives is in the order it was logged, with every ERROR there.
#[test]
fn an_error_flushes_the_buffered_context_in_order() {
    within("an_error_flushes_the_buffered_context_in_order", || {
        let (p, dir) = preset(&[
            "--preset",
            "buffers",
            "--conditions",
            "memory-buffer-200,queue-memory-100",
            "--stop-signal",
            "term",
            "--error-every",
            "7",
            "--closed",
            "4",
            "--duration",
            "1s",
        ]);
        let s = summary(&dir.path().join("term"));
        for c in ["memory-buffer-200", "queue-memory-100"] {
            let r = run(&s, c, "fast");
            // Ids 0..N were served (the warm-up's included); every seventh logged an ERROR.
            let served = r["completed"].as_u64().unwrap() + 2;
            // queue-memory-100's channel drops when full (counted as queue_full, and
            // an ERROR is not spared): on a busy machine every missing ERROR must be
            // one of those counted drops.
            let errors = r["error_lines"].as_u64().unwrap();
            let dropped = r["dropped"].as_u64().unwrap();
            assert!(
                errors <= served / 7 && errors + dropped >= served / 7,
                "{c}: {errors} ERROR lines, {dropped} dropped, {} logged: {r}",
                served / 7
            );
            assert_eq!(r["out_of_order"], 0, "{c}: {r}");
            assert_eq!(r["lost_records"], 0, "{c}: {r}");
            // Each ERROR that reached the buffer made it write: at least one write
            // call per ERROR line written (the channel's drops never reach it).
            let writes = r["log_writes"].as_u64().unwrap();
            assert!(writes >= errors, "{c}: {writes} writes for {errors} ERRORs");
            assert_eq!(preset_row(&p, "term", c)["pair"]["out_of_order"], 0);
        }
    })
}

/// Reference 003: every way of logging completes under 200 concurrent clients on a
/// multi-threaded server, and the figures the article reported are there.
#[test]
fn the_blocking_preset_runs_every_condition_under_200_clients() {
    within(
        "the_blocking_preset_runs_every_condition_under_200_clients",
        || {
            let (p, dir) = preset(&[
                "--preset",
                "blocking",
                "--closed",
                "200",
                "--duration",
                "1s",
                "--report",
            ]);
            // The preset's page links each step's report; `loglag report` renders both.
            let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(page.contains("loglag lab --preset blocking"), "{page}");
            assert!(page.contains("closed-200/report.html"));
            assert!(dir.path().join("closed-200/report.html").exists());
            let out = loglag()
                .arg("report")
                .arg(dir.path())
                .args(["-o", "-"])
                .output()
                .unwrap();
            assert_success(&out);
            assert!(String::from_utf8_lossy(&out.stdout).contains("sync-writeln"));
            assert_eq!(p["steps"], serde_json::json!(["closed-200"]));
            let rows = p["rows"].as_array().unwrap();
            assert_eq!(rows.len(), 5, "{p}");
            for r in rows {
                let pair = &r["pair"];
                assert_eq!(pair["http_errors"], 0, "{pair}");
                assert_eq!(pair["timeouts"], 0, "{pair}");
                assert_eq!(pair["verified"], true, "{pair}");
                assert!(pair["rps_api"].as_f64().unwrap() > 0.0);
                assert!(pair["ctx_voluntary_per_s"].as_f64().is_some(), "{pair}");
                assert!(pair["ctx_involuntary_per_s"].as_f64().is_some(), "{pair}");
                assert!(pair["cpu_cores"].as_f64().is_some(), "{pair}");
            }
        },
    )
}

/// Reference 003's tuning table: at a fixed rate and a long interval, bigger batches
/// mean fewer writes; and the output says which setting it favours.
#[test]
fn the_sweep_writes_less_as_batches_grow() {
    within("the_sweep_writes_less_as_batches_grow", || {
        let (p, _dir) = preset(&[
            "--preset",
            "sweep",
            "--batch-bytes",
            "4KiB,32KiB,128KiB",
            "--flush-interval",
            "2s",
            "--duration",
            "2s",
        ]);
        let writes: Vec<f64> = p["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["pair"]["log_writes_per_min"].as_f64().unwrap())
            .collect();
        assert_eq!(writes.len(), 3, "{p}");
        assert!(writes[0] > writes[1] && writes[1] > writes[2], "{writes:?}");
        // A clean run names a favourite; a run the machine disturbed (a late generator,
        // failed requests) must say it is inconclusive instead, and why.
        let flagged = p["rows"].as_array().unwrap().iter().any(|r| {
            !r["pair"]["lateness_warning"].is_null()
                || !r["pair"]["saturation_warning"].is_null()
                || r["pair"]["http_errors"].as_u64() != Some(0)
                || r["pair"]["timeouts"].as_u64() != Some(0)
                || r["pair"]["verified"] != true
        });
        let verdict = p["verdict"].as_str().unwrap();
        if flagged {
            assert!(verdict.starts_with("Inconclusive"), "{p}");
        } else {
            assert!(verdict.starts_with("The numbers favour"), "{p}");
        }
        for r in p["rows"].as_array().unwrap() {
            assert!(r["pair"]["oldest_queued_ms"].as_f64().is_some(), "{r}");
            assert!(r["pair"]["rss_peak_kib"].as_u64().unwrap() > 0, "{r}");
        }
    })
}

/// `lab hops` on its defaults is the reference's unsaturated service: an open loop that
/// both topologies keep up with, new connections, no saturation verdict. `--sweep`
/// adds both topologies at each offered rate, their knees, and the chart.
#[test]
fn lab_hops_defaults_are_unsaturated_and_the_sweep_reports_each_topology() {
    within(
        "lab_hops_defaults_are_unsaturated_and_the_sweep_reports_each_topology",
        || {
            let dir = tempfile::tempdir().unwrap();
            let out = loglag()
                .args(["lab", "hops", "--duration", "1s", "--no-overhead"])
                .args([
                    "--sweep",
                    "--sweep-rates",
                    "100,50",
                    "--sweep-duration",
                    "1s",
                ])
                .args(["--report", "--out"])
                .arg(dir.path())
                .output()
                .unwrap();
            assert_success(&out);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("open loop at 200 requests/s (the default"),
                "{stderr}"
            );
            assert!(
                stderr.contains("a new connection per outgoing call"),
                "{stderr}"
            );
            let hops = &summary(dir.path())["hops"];
            assert_eq!(hops["params"]["rate"], 200.0);
            assert_eq!(hops["params"]["connection"], "new");
            for t in hops["topologies"].as_array().unwrap() {
                assert_eq!(t["errors"], 0, "{t}");
                assert!(t["rps"].as_f64().unwrap() > 150.0, "{t}");
            }
            let sweep = &hops["sweep"];
            let points = sweep["points"].as_array().unwrap();
            let offered: Vec<(f64, &str)> = points
                .iter()
                .map(|p| {
                    (
                        p["offered_rps"].as_f64().unwrap(),
                        p["topology"].as_str().unwrap(),
                    )
                })
                .collect();
            assert_eq!(
                offered,
                [
                    (50.0, "monolith"),
                    (50.0, "services"),
                    (100.0, "monolith"),
                    (100.0, "services")
                ],
                "rates in order, both topologies each"
            );
            for p in points {
                assert!(p["rps"].as_f64().unwrap() > 0.0, "{p}");
                assert!(p["p99_ms"].as_f64().unwrap() > 0.0, "{p}");
            }
            assert_eq!(sweep["knees"].as_array().unwrap().len(), 2);
            let md = std::fs::read_to_string(dir.path().join("hops.md")).unwrap();
            assert!(md.contains("**Sweep**") && md.contains("| 100 |"), "{md}");
            let html = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(
                html.contains("Latency against load"),
                "the sweep has its chart"
            );
        },
    )
}

/// Reference 004 on loopback: a short run completes, the service boundary costs
/// latency, the bodies match, and the spans form correct traces in one OTLP/JSON file.
#[test]
fn lab_hops_measures_the_boundary_and_writes_connected_traces() {
    within(
        "lab_hops_measures_the_boundary_and_writes_connected_traces",
        || {
            let dir = tempfile::tempdir().unwrap();
            let out = loglag()
                .args(["lab", "hops", "--users", "20", "--duration", "2s"])
                .args(["--trace-every", "5", "--no-overhead", "--report", "--out"])
                .arg(dir.path())
                .output()
                .unwrap();
            assert_success(&out);
            let s = summary(dir.path());
            let hops = &s["hops"];
            let topology = |name: &str| {
                hops["topologies"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|t| t["topology"] == name && t["traced"] == true)
                    .unwrap_or_else(|| panic!("no {name} in {hops}"))
                    .clone()
            };
            let (m, sv) = (topology("monolith"), topology("services"));
            for t in [&m, &sv] {
                assert_eq!(t["errors"], 0, "{t}");
                for f in ["p50_ms", "p95_ms", "p99_ms", "mean_ms"] {
                    assert!(t[f].as_f64().unwrap() > 0.0, "{f}: {t}");
                }
            }
            assert!(
                sv["p50_ms"].as_f64().unwrap() > m["p50_ms"].as_f64().unwrap(),
                "the boundary costs latency: services {sv} against monolith {m}"
            );
            assert!(hops["identical_body_bytes"].as_u64().unwrap() > 3 * 256);
            assert_eq!(hops["tax"][1]["at"], "p50");
            assert_eq!(hops["spans_file"], "spans.otlp.json");

            // The spans: one OTLP/JSON document, a resource per service.
            let doc: Value = serde_json::from_str(
                &std::fs::read_to_string(dir.path().join("spans.otlp.json")).unwrap(),
            )
            .unwrap();
            let mut spans = Vec::new();
            let mut services = Vec::new();
            for rs in doc["resourceSpans"].as_array().unwrap() {
                let attr = &rs["resource"]["attributes"][0];
                assert_eq!(attr["key"], "service.name");
                let service = attr["value"]["stringValue"].as_str().unwrap().to_owned();
                services.push(service.clone());
                for ss in rs["scopeSpans"].as_array().unwrap() {
                    for span in ss["spans"].as_array().unwrap() {
                        spans.push((service.clone(), span.clone()));
                    }
                }
            }
            services.sort();
            assert_eq!(services, ["inventory", "monolith", "order", "payment"]);
            let hex = |v: &Value, len: usize| {
                let s = v.as_str().unwrap();
                s.len() == len
                    && s.chars()
                        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
            };
            let by_id: std::collections::HashMap<String, &Value> = spans
                .iter()
                .map(|(_, s)| (s["spanId"].as_str().unwrap().to_owned(), s))
                .collect();
            let mut remote_children = 0;
            for (service, span) in &spans {
                assert!(
                    hex(&span["traceId"], 32) && hex(&span["spanId"], 16),
                    "{span}"
                );
                let start: u64 = span["startTimeUnixNano"].as_str().unwrap().parse().unwrap();
                let end: u64 = span["endTimeUnixNano"].as_str().unwrap().parse().unwrap();
                assert!(start > 1_600_000_000_000_000_000 && end >= start, "{span}");
                if let Some(parent) = span.get("parentSpanId") {
                    let parent = by_id
                        .get(parent.as_str().unwrap())
                        .unwrap_or_else(|| panic!("{service}'s parent is missing: {span}"));
                    assert_eq!(
                        parent["traceId"], span["traceId"],
                        "a child shares its trace"
                    );
                    if service == "payment" || service == "inventory" {
                        // The callee's server span hangs under order's client span.
                        assert_eq!(parent["kind"], 3, "{parent}");
                        assert_eq!(span["kind"], 2);
                        remote_children += 1;
                    }
                } else {
                    assert!(service == "order" || service == "monolith", "{span}");
                }
            }
            assert!(
                remote_children > 0,
                "traceparent crossed the process boundary"
            );
            let breakdown = hops["breakdown"].as_array().unwrap();
            assert_eq!(breakdown.len(), 2, "{hops}");
            assert_eq!(hops["waterfalls"].as_array().unwrap().len(), 4);
            let page = std::fs::read_to_string(dir.path().join("report.html")).unwrap();
            assert!(page.contains("Waterfalls") && page.contains("<svg"));
        },
    )
}

/// The namespaces of `lab hops --netns` whose name carries `pid`.
fn namespaces_of(pid: u32) -> Vec<String> {
    let out = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|n| n.starts_with(&format!("llh{}-", pid % 100_000)))
        .map(str::to_owned)
        .collect()
}

/// `--netns`: each service in its own namespace, hops over veth pairs; the namespaces
/// are gone after a run, and those of a lab killed with SIGKILL are removed by the next.
#[test]
fn lab_hops_netns_runs_across_namespaces_and_leaves_none_behind() {
    within(
        "lab_hops_netns_runs_across_namespaces_and_leaves_none_behind",
        || {
            // SAFETY: geteuid has no preconditions.
            let root = unsafe { libc::geteuid() } == 0;
            let has_ip = std::process::Command::new("ip").arg("-V").output().is_ok();
            if !(root && has_ip) {
                assert!(
                    std::env::var_os("LOGLAG_REQUIRE_NETNS").is_none(),
                    "LOGLAG_REQUIRE_NETNS is set but this is not root with iproute2"
                );
                skip_note!("SKIPPED: --netns needs root and iproute2");
                return;
            }
            let dir = tempfile::tempdir().unwrap();
            let child = loglag()
                .args(["lab", "hops", "--netns", "--users", "5", "--duration", "1s"])
                .args(["--no-overhead", "--out"])
                .arg(dir.path())
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            let out = child.wait_with_output().unwrap();
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let s = summary(dir.path());
            assert_eq!(s["hops"]["params"]["netns"], true);
            assert_eq!(s["hops"]["topologies"][1]["errors"], 0, "{s}");
            assert!(s["hops"]["breakdown"].as_array().unwrap().len() == 2);
            assert_eq!(namespaces_of(pid), Vec::<String>::new());

            // Killed mid-run: its namespaces and scratch directory stay until the next
            // lab removes them.
            let tmp = tempfile::tempdir().unwrap();
            let mut killed = loglag()
                .env("TMPDIR", tmp.path())
                .args([
                    "lab",
                    "hops",
                    "--netns",
                    "--users",
                    "5",
                    "--duration",
                    "60s",
                ])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            let killed_pid = killed.id();
            // Waiting for another process to create something: polling is all there is.
            while namespaces_of(killed_pid).is_empty() {
                assert!(killed.try_wait().unwrap().is_none(), "the lab ended early");
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
            killed.kill().unwrap();
            killed.wait().unwrap();
            assert!(!namespaces_of(killed_pid).is_empty());
            // A kill between `ip link add` and moving an end into its namespace leaves
            // a veth pair in the root namespace: plant one for a lab pid that is not
            // running.
            let running = |n: u32| {
                std::fs::read_dir("/proc").unwrap().flatten().any(|p| {
                    p.file_name()
                        .to_str()
                        .and_then(|s| s.parse::<u32>().ok())
                        .is_some_and(|pid| pid % 100_000 == n)
                })
            };
            let dead = (90_000..100_000).find(|&n| !running(n)).unwrap();
            let veth = format!("lh{dead}r0a");
            let planted = std::process::Command::new("ip")
                .args(["link", "add", &veth, "type", "veth", "peer", "name"])
                .arg(format!("lh{dead}r0b"))
                .status()
                .unwrap();
            assert!(planted.success());
            let out = loglag()
                .env("TMPDIR", tmp.path())
                .args([
                    "lab",
                    "hops",
                    "--netns",
                    "--users",
                    "2",
                    "--duration",
                    "200ms",
                ])
                .arg("--no-overhead")
                .output()
                .unwrap();
            assert_success(&out);
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("left by an earlier lab"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(namespaces_of(killed_pid), Vec::<String>::new());
            let left = std::process::Command::new("ip")
                .args(["link", "show", &veth])
                .output()
                .unwrap();
            assert!(!left.status.success(), "the stale veth pair {veth} is gone");
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("veth pair(s)"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                String::from_utf8_lossy(&out.stderr).contains("1 scratch directory(ies)"),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_nothing_left(tmp.path(), "after the lab that followed a killed one");
        },
    )
}

/// kill -9 during a flood through `.spool()` into rolling files that rotate every
/// 300 KiB, then recovery: every record whose call returned is there exactly once,
/// in order, across all the files, rotations included.
#[test]
fn kill_9_with_rotating_files_loses_and_duplicates_nothing() {
    within(
        "kill_9_with_rotating_files_loses_and_duplicates_nothing",
        || {
            let out = loglag()
                .args(["torture", "--only", "kill9", "--trials", "20"])
                .args(["--rotate-bytes", "300KiB", "--format", "json"])
                .output()
                .unwrap();
            assert_success(&out);
            let all: Value = serde_json::from_slice(&out.stdout).unwrap();
            let r = &all["kill9"];
            assert_eq!(r["trials"], 20);
            assert_eq!(r["recovered"], r["expected"], "{r}");
            assert_eq!(r["duplicates"], 0, "{r}");
            assert_eq!(r["out_of_order"], 0, "{r}");
            assert_eq!(r["corrupt"], 0, "{r}");
            assert_eq!(r["rotate_bytes"], 300 << 10);
            assert!(
                r["max_files"].as_u64().unwrap() >= 3,
                "the records really spread over rotated files: {r}"
            );
        },
    )
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

/// The network conditions: each request's record goes to a collector on loopback
/// (syslog over TCP, OTLP/HTTP) that writes into the rate-capped sink. Written
/// synchronously, the slow collector is in every request's latency; through loglag it
/// is not. Every run verifies: what the collector wrote, the reader read.
#[test]
fn collector_conditions_show_the_mechanism_over_a_network_sink() {
    within(
        "collector_conditions_show_the_mechanism_over_a_network_sink",
        || {
            let dir = tempfile::tempdir().unwrap();
            let out = loglag()
                .args([
                    "lab",
                    "--conditions",
                    "syslog-sync,loglag-syslog,loglag-otlp",
                    "--sinks",
                    "slow",
                    "--duration",
                    "6s",
                    "--out",
                ])
                .arg(dir.path())
                .output()
                .unwrap();
            assert_success(&out);
            let s = summary(dir.path());
            for c in ["syslog-sync", "loglag-syslog", "loglag-otlp"] {
                let r = run(&s, c, "slow");
                assert_eq!(r["verified"], true, "{c}: {}", r["verify_note"]);
                assert_eq!(r["lost_records"], 0, "{c}");
            }
            let p99 = |c: &str| pair(&s, c, "slow")["p99_ms"].as_f64().unwrap();
            assert!(
                p99("syslog-sync") > 10.0 * p99("loglag-syslog"),
                "sync p99 {} ms against loglag's {} ms",
                p99("syslog-sync"),
                p99("loglag-syslog")
            );
            assert!(p99("loglag-otlp") < p99("syslog-sync"));
        },
    )
}

/// `--collector-outage`: the collector closes its port halfway through. OTLP is
/// acknowledged: every record is read or counted as dropped, and the run verifies.
/// Syslog over TCP is not: what sat in the connection's buffers is lost unseen, and
/// the run says so instead of verifying.
#[test]
fn a_collector_outage_is_counted_and_unseen_losses_are_named() {
    within(
        "a_collector_outage_is_counted_and_unseen_losses_are_named",
        || {
            let dir = tempfile::tempdir().unwrap();
            let out = loglag()
                .args([
                    "lab",
                    "--conditions",
                    "loglag-otlp,loglag-syslog",
                    "--sinks",
                    "slow",
                    "--duration",
                    "4s",
                    "--collector-outage",
                    "2s",
                    "--out",
                ])
                .arg(dir.path())
                .output()
                .unwrap();
            assert_success(&out);
            let s = summary(dir.path());
            assert_eq!(s["params"]["collector_outage_ms"], 2000.0);
            let otlp = run(&s, "loglag-otlp", "slow");
            assert_eq!(otlp["verified"], true, "{}", otlp["verify_note"]);
            // Longer than the sink's second of retries: counted drops.
            let dropped = otlp["dropped"].as_u64().unwrap();
            assert!(dropped > 0, "the outage cost counted drops: {otlp}");
            // A batch the collector wrote but could not answer is counted and
            // delivered: what is missing is at most what was counted; a batch sent
            // again is a duplicate, not a loss.
            let lost = otlp["lost_records"].as_i64().unwrap();
            assert!((0..=dropped as i64).contains(&lost), "{otlp}");
            let syslog = run(&s, "loglag-syslog", "slow");
            let lost = syslog["lost_records"].as_u64().unwrap();
            let dropped = syslog["dropped"].as_u64().unwrap();
            assert!(lost >= dropped, "{syslog}");
            if lost > dropped {
                assert_eq!(syslog["verified"], false);
                assert!(
                    syslog["verify_note"]
                        .as_str()
                        .unwrap()
                        .contains("lost unseen"),
                    "{syslog}"
                );
            }
            let bad = loglag()
                .args([
                    "lab",
                    "--conditions",
                    "loglag-otlp",
                    "--collector-outage",
                    "0s",
                ])
                .output()
                .unwrap();
            assert!(!bad.status.success());
            assert!(String::from_utf8_lossy(&bad.stderr)
                .contains("--collector-outage must be positive"));
        },
    )
}
