//! What every test of the `loglag` binary shares: running it, reading its results,
//! bounding a test's time, and finding what it left behind.
#![allow(dead_code)] // each test file uses its own share

pub use std::path::Path;
pub use std::process::Command;

pub use assert_cmd::prelude::*;
pub use serde_json::Value;

/// A skip is said on stderr past the test harness's capture (which holds only what
/// `eprintln!` prints), so a plain `cargo test` shows what did not run and why.
#[allow(unused_macros)] // not every test file skips
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// Runs a test body on its own thread and fails it after 15 minutes: a regression
/// that hangs (a lab that never drains, a child that never exits) fails CI in bounded
/// time instead of using up its 90 minutes.
pub fn within(name: &str, body: impl FnOnce() + Send + 'static) {
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
pub fn assert_success(out: &std::process::Output) {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The binary, run in cargo's scratch directory for integration tests (under
/// `target/`): a `loglag lab` without `--out` keeps its results in
/// `loglag-results/` of the current directory, which is not to be the repository.
pub fn loglag() -> Command {
    let mut cmd = Command::cargo_bin("loglag").unwrap();
    cmd.current_dir(env!("CARGO_TARGET_TMPDIR"));
    cmd
}

/// The directories a lab kept under `cwd`'s `loglag-results/`.
pub fn kept_results(cwd: &Path) -> Vec<std::path::PathBuf> {
    match std::fs::read_dir(cwd.join("loglag-results")) {
        Err(_) => Vec::new(),
        Ok(entries) => entries.map(|e| e.unwrap().path()).collect(),
    }
}

/// Processes whose command line mentions `dir` (the lab's FIFOs live there).
pub fn processes_using(dir: &Path) -> String {
    let out = Command::new("pgrep")
        .arg("-af")
        .arg(dir.to_str().unwrap())
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// No process mentions `tmp` (the lab's `TMPDIR`) and nothing is left in it.
pub fn assert_nothing_left(tmp: &Path, when: &str) {
    assert_eq!(processes_using(tmp), "", "{when}: processes left behind");
    let left: Vec<_> = std::fs::read_dir(tmp)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert!(left.is_empty(), "{when}: left behind: {left:?}");
}

pub fn summary(dir: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap()
}

pub fn pair<'a>(s: &'a Value, condition: &str, sink: &str) -> &'a Value {
    s["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["condition"] == condition && p["sink"] == sink)
        .unwrap()
}

pub fn run<'a>(s: &'a Value, condition: &str, sink: &str) -> &'a Value {
    s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["condition"] == condition && p["sink"] == sink)
        .unwrap()
}

/// Writes into `dir` a Python HTTP app that logs one line per request to its standard
/// output (and "listening" to stderr), and returns its path.
pub fn stdout_logger(dir: &std::path::Path) -> std::path::PathBuf {
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

/// Processes whose command line contains every one of `words`.
pub fn processes_running(words: &[&str]) -> Vec<u32> {
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

/// Runs `examples/python/buffer_api.py` through `--app` with `extra` arguments for the
/// app and for the lab; returns summary.json.
pub fn buffer_app_lab(app_extra: &str, conditions: &str, lab_extra: &[&str]) -> Value {
    app_lab("python3", "buffer_api.py", app_extra, conditions, lab_extra)
}

/// Runs `examples/python/SCRIPT` with `python` through `--app`; returns summary.json.
pub fn app_lab(
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

/// Runs `loglag lab` with `args` into a temporary directory; returns preset.json and
/// the directory.
pub fn preset(args: &[&str]) -> (Value, tempfile::TempDir) {
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
    let p: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.path().join("preset.json")).unwrap())
            .unwrap();
    // The answer first: the preset's headline, within 12 lines of 80 columns, then
    // the table.
    let headline = headline_of(&stdout);
    let name = p["preset"].as_str().unwrap();
    assert!(
        headline
            .first()
            .is_some_and(|l| l.starts_with(&format!("{name}: "))),
        "{stdout}"
    );
    assert!(headline.len() <= 12, "{stdout}");
    for line in &headline {
        assert!(line.chars().count() <= 80, "{line:?} is too wide");
    }
    (p, dir)
}

/// The headline of a stdout: its lines before the first blank one.
pub fn headline_of(stdout: &str) -> Vec<&str> {
    stdout
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .collect()
}

/// The headline's lines as one text, so that a sentence can be found across its
/// wraps.
pub fn headline_text(stdout: &str) -> String {
    headline_of(stdout)
        .iter()
        .map(|l| l.trim())
        .collect::<Vec<_>>()
        .join(" ")
}

pub fn preset_row<'a>(p: &'a Value, step: &str, condition: &str) -> &'a Value {
    p["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["step"] == step && r["pair"]["condition"] == condition)
        .unwrap_or_else(|| panic!("no row {step} / {condition} in {p}"))
}

/// The namespaces of `lab hops --netns` whose name carries `pid`.
pub fn namespaces_of(pid: u32) -> Vec<String> {
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
