//! `loglag recover` refuses at once a spool path that is no regular file (issue 32,
//! item 11): it says what the path is, exits non-zero, and creates no output.

use crate::support;
use support::*;

use std::time::{Duration, Instant};

/// A refusal takes no time; this only bounds a regression that blocks.
const DEADLINE: Duration = Duration::from_secs(60);

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", std::io::Error::last_os_error());
}

/// Runs `loglag recover <spool> -o <out>`, killing it if it is still running at the
/// deadline. Returns its output, or `None` if it had to be killed.
fn recover_within_deadline(spool: &Path, out: &Path) -> Option<std::process::Output> {
    let mut child = loglag()
        .arg("recover")
        .arg(spool)
        .arg("-o")
        .arg(out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > DEADLINE {
            child.kill().unwrap();
            child.wait().unwrap();
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(child.wait_with_output().unwrap())
}

#[test]
#[cfg(unix)] // FIFOs are unix's
fn recover_refuses_a_fifo_without_blocking_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("app.spool");
    let out = dir.path().join("out.log");
    mkfifo(&fifo);
    let output = recover_within_deadline(&fifo, &out)
        .unwrap_or_else(|| panic!("loglag recover of a FIFO still running after {DEADLINE:?}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("loglag: error:"), "{stderr}");
    assert!(stderr.contains(&fifo.display().to_string()), "{stderr}");
    assert!(stderr.contains("a FIFO"), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    assert!(!out.exists(), "the output was created for a refused spool");
}

#[test]
fn recover_refuses_a_directory_and_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("spool.d");
    std::fs::create_dir(&sub).unwrap();
    let out = dir.path().join("out.log");
    let output = recover_within_deadline(&sub, &out).expect("a refusal, not a hang");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains(&sub.display().to_string()), "{stderr}");
    assert!(stderr.contains("a directory"), "{stderr}");
    assert!(stderr.contains("not a regular file"), "{stderr}");
    assert!(!out.exists());
}
