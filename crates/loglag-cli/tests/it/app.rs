//! `loglag lab --app` on real services in other languages: readiness, stdout logs, children that must not outlive the lab, shutdown losses, and `loglag recover`.
//! Short runs; assertions are on mechanisms, not on timing constants.
// The lab and torture run where unix does; elsewhere they say what they need
// (commands/linux_only.rs).
#![cfg(unix)]

use crate::support;
use support::*;

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

/// An app that writes its log to a file of its own choosing (not `{log_path}`) and
/// rotates it by rename every 7 requests: the lab follows the file from its end at the
/// app's start, so what was in it before is not counted, reads each rotated file to
/// its end before the new one, and verifies every line.
#[test]
fn an_app_that_logs_to_its_own_file_is_measured() {
    within("an_app_that_logs_to_its_own_file_is_measured", || {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("file_logger.py");
        std::fs::write(
            &script,
            r#"import os, socket, sys
log = open(sys.argv[2], "a", buffering=1)
served = 0
server = socket.socket()
server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
server.bind(("127.0.0.1", int(sys.argv[1])))
server.listen(64)
print("listening", file=sys.stderr, flush=True)
while True:
    conn, _ = server.accept()
    if conn.recv(65536):
        log.write("served a request\n")
        served += 1
        if served % 7 == 0:
            # Rotation by rename, as logrotate's default does: the line just written
            # is in the old file; the next go to a new one at the same path.
            log.close()
            os.replace(sys.argv[2], sys.argv[2] + "." + str(served))
            log = open(sys.argv[2], "a", buffering=1)
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
    conn.close()
"#,
        )
        .unwrap();
        let log = dir.path().join("own.log");
        // Lines from before the run: not this run's.
        std::fs::write(&log, "an old line\nanother old line\n").unwrap();
        let app = format!("python3 {} {{port}} {}", script.display(), log.display());
        let out_dir = tempfile::tempdir().unwrap();
        let out = loglag()
            .args(["lab", "--app", &app, "--app-log"])
            .arg(&log)
            .args([
                "--conditions",
                "file",
                "--expect-lines",
                "1",
                "--sinks",
                "fast,slow",
            ])
            .args(["--duration", "1s", "--ready", "log:listening", "--out"])
            .arg(out_dir.path())
            .output()
            .unwrap();
        assert_success(&out);
        let s = summary(out_dir.path());
        for sink in ["fast", "slow"] {
            let r = run(&s, "file", sink);
            assert_eq!(r["verified"], true, "{sink}: {r}");
            assert_eq!(r["expected_records"], 22, "20 requests and 2 warm-up: {r}");
        }
        // A keyword typed wrong is not taken for a file the lab would wait for.
        let out = loglag()
            .args([
                "lab",
                "--app",
                &app,
                "--conditions",
                "file",
                "--app-log",
                "stdot",
            ])
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&out.stderr).contains("with a /"));
    })
}

/// Whether this machine lets the lab hold an app in a cgroup with `cgroup.kill`.
fn contained_in_cgroups() -> bool {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .iter()
        .any(|root| {
            let probe = Path::new(root).join(format!("loglag-probe-{}", std::process::id()));
            let ok = std::fs::create_dir(&probe).is_ok() && probe.join("cgroup.kill").exists();
            let _ = std::fs::remove_dir(&probe);
            ok
        })
}

/// A pre-fork app's workers use the CPU, not its main process: held in its cgroup, the
/// run's CPU counts them (the main process alone reads near zero here).
#[test]
fn an_apps_forked_workers_count_in_its_cpu() {
    within("an_apps_forked_workers_count_in_its_cpu", || {
        if !contained_in_cgroups() {
            skip_note!(
                "no writable cgroup v2 with cgroup.kill: the app's CPU is its main process's"
            );
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let script = stdout_logger(dir.path());
        // A worker that spins for the whole run, beside an idle server.
        let app = format!(
            "sh -c 'python3 -c \"while True: pass\" & exec python3 {} \"$0\"' {{port}}",
            script.display()
        );
        let out_dir = tempfile::tempdir().unwrap();
        let out = loglag()
            .args([
                "lab",
                "--app",
                &app,
                "--app-log",
                "stdout",
                "--conditions",
                "busy",
            ])
            .args(["--expect-lines", "1", "--sinks", "fast", "--duration", "2s"])
            .args(["--ready", "log:listening", "--out"])
            .arg(out_dir.path())
            .output()
            .unwrap();
        assert_success(&out);
        let r = run(&summary(out_dir.path()), "busy", "fast").clone();
        // A spinning worker on a shared 2-core machine gets well over a fifth of a core.
        assert!(r["cpu_cores"].as_f64().unwrap() > 0.2, "{r}");
    })
}

/// An app that forks a worker and a `setsid` daemon: nothing of it outlives the lab,
/// whether the lab ends normally or is SIGKILLed (then the next lab removes it).
#[test]
fn nothing_an_app_starts_outlives_the_lab() {
    within("nothing_an_app_starts_outlives_the_lab", || {
        let dir = tempfile::tempdir().unwrap();
        let script = stdout_logger(dir.path());
        // A worker, a daemon in a session of its own and, where the lab can hold the
        // app in a cgroup, one more that clears its environment (nothing else finds
        // it), each marked by a number.
        let contained = contained_in_cgroups();
        if !contained {
            skip_note!("no writable cgroup v2 with cgroup.kill: not testing a process that clears its environment");
        }
        let app = |mark: u32| {
            format!(
                "sh -c 'sleep {mark} & setsid sleep {} & {} exec python3 {} \"$0\"' {{port}}",
                mark + 1,
                if contained {
                    format!("env -i sleep {} &", mark + 2)
                } else {
                    String::new()
                },
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
        let m2 = (mark + 2).to_string();
        assert_eq!(
            processes_running(&["sleep", &m2]),
            Vec::<u32>::new(),
            "the process without the lab's tag"
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
        let m2 = (mark + 2).to_string();
        assert_eq!(processes_running(&["sleep", &m2]), Vec::<u32>::new());
        // And no cgroup of a lab is left.
        for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
            let left: Vec<String> = std::fs::read_dir(root)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("loglag-") && n.contains("-app-"))
                // Other tests' labs run meanwhile: only a dead lab's group is left over.
                .filter(|n| {
                    let pid = n.split('-').nth(1).unwrap_or("0");
                    !Path::new("/proc").join(pid).exists()
                })
                .collect();
            assert!(
                left.is_empty() || !contained,
                "a dead lab's app cgroups left in {root}: {left:?}"
            );
        }
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

/// An app that fails after writing terminal escapes on stderr (a window title, a
/// cleared screen): the lab's error shows its last lines with the escapes made
/// visible, and not one raw ESC or BEL reaches the user's terminal.
#[test]
fn an_apps_terminal_escapes_are_shown_escaped_when_it_fails() {
    within(
        "an_apps_terminal_escapes_are_shown_escaped_when_it_fails",
        || {
            let tmp = tempfile::tempdir().unwrap();
            let out = loglag()
                .env("TMPDIR", tmp.path())
                .args(["lab", "--conditions", "none", "--sinks", "fast"])
                .args(["--duration", "1s", "--app"])
                .arg(r#"sh -c 'printf "\033]0;pwned\007\033[2Jboom\n" >&2; exit 3' {port} {log_path}"#)
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(1));
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains(r"stderr: \x1b]0;pwned\x07\x1b[2Jboom"),
                "{stderr}"
            );
            assert!(
                !out.stderr.iter().any(|&b| b == 0x1b || b == 0x07),
                "a raw escape reached the terminal: {stderr:?}"
            );
        },
    )
}

/// Whether process `pid` has exited: gone from /proc, or a zombie waiting to be reaped.
fn has_exited(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rfind(')')
            .and_then(|i| stat.get(i + 2..i + 3))
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

/// Whether SIGINT is pending for `pid` (sent, not yet delivered to a handler).
fn sigint_pending(pid: u32) -> bool {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .filter_map(|l| {
            l.strip_prefix("SigPnd:")
                .or_else(|| l.strip_prefix("ShdPnd:"))
        })
        .filter_map(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        .any(|mask| mask & (1 << (libc::SIGINT - 1)) != 0)
}

/// Reads the pid a process wrote (whole: written to a temporary name, then renamed).
fn read_pid(path: &Path) -> Option<u32> {
    std::fs::read_to_string(path).ok()?.trim().parse().ok()
}

/// A second SIGINT (GNU `timeout -s INT` sends two; an impatient Ctrl-C) while the lab
/// is busy (here: waiting for an app that never gets ready, which does not watch the
/// first): the lab still kills the app, the `setsid` daemon it started and its cgroup,
/// and removes its scratch directory (FIFOs, the app's stderr), before it exits 130.
/// It used to exit at once, leaving the daemon, the cgroup and the directory behind.
#[test]
fn a_second_sigint_still_kills_the_app_and_removes_the_labs_files() {
    within(
        "a_second_sigint_still_kills_the_app_and_removes_the_labs_files",
        || {
            let tmp = tempfile::tempdir().unwrap();
            let marks = tempfile::tempdir().unwrap();
            let script = marks.path().join("daemonizing_app.sh");
            // Writes its pid, starts a daemon in a session of its own that writes its
            // pid, and never listens.
            std::fs::write(
                &script,
                r#"echo $$ > "$1/app.tmp" && mv "$1/app.tmp" "$1/app.pid"
setsid sh -c 'echo $$ > "$1/daemon.tmp" && mv "$1/daemon.tmp" "$1/daemon.pid"; exec sleep 600' sh "$1" &
exec sleep 600
"#,
            )
            .unwrap();
            let app = format!(
                "sh {} {} {{port}} {{log_path}}",
                script.display(),
                marks.path().display()
            );
            let lab = loglag()
                .env("TMPDIR", tmp.path())
                .args(["lab", "--app", &app, "--conditions", "c"])
                .args(["--expect-lines", "1", "--sinks", "fast", "--duration", "1s"])
                .args(["--ready-timeout", "600s"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            let lab_pid = lab.id();
            let (app_pid, daemon_pid) = loop {
                if let (Some(a), Some(d)) = (
                    read_pid(&marks.path().join("app.pid")),
                    read_pid(&marks.path().join("daemon.pid")),
                ) {
                    break (a, d);
                }
                assert!(!has_exited(lab_pid), "the lab ended before its app started");
                // Waiting for another process to write a file: polling is all there is.
                std::thread::sleep(std::time::Duration::from_millis(20));
            };
            let interrupt = || {
                // SAFETY: kill(2) on our own unreaped child.
                assert_eq!(unsafe { libc::kill(lab_pid as i32, libc::SIGINT) }, 0);
            };
            interrupt();
            // Two signals still pending at once are one: the second is sent once the
            // first has reached the lab's handler.
            while sigint_pending(lab_pid) {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            assert!(
                !has_exited(lab_pid),
                "one SIGINT does not end the readiness wait"
            );
            interrupt();
            let out = lab.wait_with_output().unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            let app_gone = has_exited(app_pid);
            let daemon_gone = has_exited(daemon_pid);
            // Whatever the outcome, nothing of this test outlives it.
            for pid in [app_pid, daemon_pid] {
                // SAFETY: kill(2); the pids are this test's app's, checked just above.
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
            assert_eq!(out.status.code(), Some(130), "{stderr}");
            assert!(app_gone, "the app {app_pid} still runs: {stderr}");
            assert!(
                daemon_gone,
                "its setsid daemon {daemon_pid} still runs: {stderr}"
            );
            for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"] {
                let group = Path::new(root).join(format!("loglag-{lab_pid}-app-0"));
                assert!(!group.exists(), "{} left behind: {stderr}", group.display());
            }
            assert_nothing_left(tmp.path(), "after two SIGINTs");
            // The second SIGINT's teardown did it, not the first's way out.
            assert!(stderr.contains("interrupted again"), "{stderr}");
        },
    )
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
