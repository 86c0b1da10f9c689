//! Real endings in real child processes: a panic, a SIGTERM, a FIFO reader that dies,
//! and a full disk. The test binary re-executes itself as the child.

use crate::support;

#[cfg(unix)]
use std::io::Read;
use std::io::{BufRead, BufReader};
use std::path::Path;
#[cfg(unix)]
use std::process::{Command, Stdio};
use std::time::Duration;

#[cfg(unix)]
use loglag::sink::Fallback;
use loglag::sink::FdSink;
#[cfg(unix)]
use loglag::DropReason;
use loglag::{Level, Mode, NonBlockingBuilder};
use support::*;

const RECORDS: usize = 100;
const PIPELINES_BUILT: usize = 5_000;

/// In a child started by `rerun_as_child`, plays its role (the ending under test) and
/// returns true: the test ends there. In the test itself returns false at once.
fn played_a_child_role() -> bool {
    let Some((role, log)) = child_role() else {
        return false;
    };
    within(
        std::time::Duration::from_secs(300),
        "a child's role",
        move || {
            if role == "many-pipelines-then-panic" {
                // A plugin host or a config reload: thousands of pipelines built on the
                // defaults (each asks the panic hook to flush it), then one ordinary panic.
                for _ in 0..PIPELINES_BUILT {
                    let (writer, guard) = NonBlockingBuilder::default().finish(std::io::sink());
                    drop((writer, guard));
                }
                let caught = std::panic::catch_unwind(|| panic!("an ordinary panic"));
                assert!(caught.is_err());
                println!("survived");
                return;
            }
            let builder = NonBlockingBuilder::default()
                .mode(Mode::Async)
                // Nothing would be written without a flush for an hour: whatever reaches the file
                // got there because of the ending under test.
                .flush_interval(Duration::from_secs(3600))
                .batch_bytes(1 << 20)
                .flush_on_signals(role == "sigterm");
            let (writer, guard) = builder.build(FdSink::append(&log).unwrap()).unwrap();
            for i in 0..RECORDS {
                writer.submit(Level::Info, format!("record {i}\n").as_bytes());
            }
            match role.as_str() {
                "panic" => {
                    std::mem::forget(guard); // only the panic hook can flush now
                    panic!("boom");
                }
                "sigterm" => {
                    println!("ready");
                    loop {
                        std::thread::park();
                    }
                }
                other => panic!("unknown role {other}"),
            }
        },
    );
    true
}

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

#[test]
fn a_panic_flushes() {
    if played_a_child_role() {
        return;
    }
    within(
        std::time::Duration::from_secs(300),
        "a_panic_flushes",
        || {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("out.log");
            let out = rerun_as_child(module_path!(), "a_panic_flushes", "panic", &log)
                .output()
                .unwrap();
            assert!(!out.status.success());
            assert!(String::from_utf8_lossy(&out.stderr).contains("boom"));
            let got = lines(&log);
            assert_eq!(
                got.len(),
                RECORDS,
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            assert_eq!(got[RECORDS - 1], format!("record {}", RECORDS - 1));
        },
    )
}

#[test]
fn a_panic_after_thousands_of_pipelines_unwinds_instead_of_aborting() {
    if played_a_child_role() {
        return;
    }
    within(
        Duration::from_secs(300),
        "a_panic_after_thousands_of_pipelines_unwinds_instead_of_aborting",
        || {
            let dir = tempfile::tempdir().unwrap();
            let out = rerun_as_child(
                module_path!(),
                "a_panic_after_thousands_of_pipelines_unwinds_instead_of_aborting",
                "many-pipelines-then-panic",
                &dir.path().join("unused.log"),
            )
            .output()
            .unwrap();
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                out.status.success() && String::from_utf8_lossy(&out.stdout).contains("survived"),
                "{:?}: {}",
                out.status,
                stderr
            );
        },
    )
}

// A real SIGTERM is unix's (Windows' console events: a_real_ctrl_break_flushes_then_terminates).
#[cfg(unix)]
#[test]
fn a_real_sigterm_flushes_then_terminates() {
    if played_a_child_role() {
        return;
    }
    within(
        std::time::Duration::from_secs(300),
        "a_real_sigterm_flushes_then_terminates",
        || {
            use std::os::unix::process::ExitStatusExt;
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("out.log");
            let mut proc = rerun_as_child(
                module_path!(),
                "a_real_sigterm_flushes_then_terminates",
                "sigterm",
                &log,
            )
            .spawn()
            .unwrap();
            let mut stdout = BufReader::new(proc.stdout.take().unwrap());
            let mut line = String::new();
            while !line.contains("ready") {
                line.clear();
                assert!(
                    stdout.read_line(&mut line).unwrap() > 0,
                    "child exited before ready"
                );
            }
            // SAFETY: plain kill(2) on our own child's pid.
            assert_eq!(unsafe { libc::kill(proc.id() as i32, libc::SIGTERM) }, 0);
            let status = proc.wait().unwrap();
            assert_eq!(
                status.signal(),
                Some(libc::SIGTERM),
                "the default action still happens"
            );
            assert_eq!(lines(&log).len(), RECORDS);
        },
    )
}

/// Windows' SIGTERM: a Ctrl+Break sent to the child's console process group. The
/// console handler flushes, then lets the default handler end the process
/// (`STATUS_CONTROL_C_EXIT`).
#[cfg(windows)]
#[test]
fn a_real_ctrl_break_flushes_then_terminates() {
    if played_a_child_role() {
        return;
    }
    if support::wine_cannot(
        "a_real_ctrl_break_flushes_then_terminates",
        "send a console control event without a console",
    ) {
        return;
    }
    within(
        std::time::Duration::from_secs(300),
        "a_real_ctrl_break_flushes_then_terminates",
        || {
            use std::os::windows::process::CommandExt;
            use windows_sys::Win32::System::Console::{GenerateConsoleCtrlEvent, CTRL_BREAK_EVENT};
            use windows_sys::Win32::System::Threading::CREATE_NEW_PROCESS_GROUP;
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("out.log");
            let mut proc = rerun_as_child(
                module_path!(),
                "a_real_ctrl_break_flushes_then_terminates",
                "sigterm",
                &log,
            )
            .creation_flags(CREATE_NEW_PROCESS_GROUP)
            .spawn()
            .unwrap();
            let mut stdout = BufReader::new(proc.stdout.take().unwrap());
            let mut line = String::new();
            while !line.contains("ready") {
                line.clear();
                assert!(
                    stdout.read_line(&mut line).unwrap() > 0,
                    "child exited before ready"
                );
            }
            // SAFETY: sends an event to the process group our child leads.
            let sent = unsafe { GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, proc.id()) };
            assert_ne!(sent, 0, "{}", std::io::Error::last_os_error());
            let status = proc.wait().unwrap();
            assert_eq!(
                status.code().map(|c| c as u32),
                Some(0xC000_013A),
                "the default action still happens"
            );
            assert_eq!(lines(&log).len(), RECORDS);
        },
    )
}

// /dev/full is a Linux device.
#[cfg(unix)]
#[test]
fn a_full_disk_counts_io_errors_and_the_fallback_gets_the_records() {
    within(
        std::time::Duration::from_secs(300),
        "a_full_disk_counts_io_errors_and_the_fallback_gets_the_records",
        || {
            // Without a fallback: every record is an io_error drop, and the writer reports it.
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .build(FdSink::append("/dev/full").unwrap())
                .unwrap();
            for i in 0..50 {
                writer.submit(Level::Info, format!("record {i}\n").as_bytes());
            }
            let m = guard.shutdown();
            assert_accounted(&m);
            assert_eq!(m.dropped_for(DropReason::IoError), 50);
            assert!(m.write_errors >= 1);

            // With a fallback: nothing is lost, the primary's errors are still counted.
            let (capture, out) = TestSink::new(Behaviour::Fast);
            let chain = Fallback::new(FdSink::append("/dev/full").unwrap()).then(capture);
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .build(chain)
                .unwrap();
            for i in 0..50 {
                writer.submit(Level::Info, format!("record {i}\n").as_bytes());
            }
            let m = guard.shutdown();
            assert_accounted(&m);
            assert_eq!(m.dropped_records(), 0);
            assert_eq!(m.written_records, 50);
            assert!(
                m.write_errors >= 1,
                "the primary's failures are counted: {m:?}"
            );
            assert_eq!(record_lines(&out.lock().unwrap()).len(), 50);
        },
    )
}

// FIFOs are unix's.
#[cfg(unix)]
#[test]
fn a_fifo_reader_that_exits_is_counted_as_io_errors_and_nothing_hangs() {
    within(
        std::time::Duration::from_secs(300),
        "a_fifo_reader_that_exits_is_counted_as_io_errors_and_nothing_hangs",
        || {
            let dir = tempfile::tempdir().unwrap();
            let fifo = dir.path().join("sink.fifo");
            mkfifo(&fifo);
            // A real reader process that takes 100 bytes and exits.
            let mut reader = Command::new("head")
                .arg("-c")
                .arg("100")
                .arg(&fifo)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .flush_interval(Duration::from_millis(1))
                .build(FdSink::fifo(&fifo, None).unwrap())
                .unwrap();
            writer.submit(Level::Info, &[b'x'; 99]);
            writer.submit(Level::Info, b"\n");
            let mut got = Vec::new();
            reader.stdout.take().unwrap().read_to_end(&mut got).unwrap();
            reader.wait().unwrap();
            assert_eq!(got.len(), 100);
            // The reader is gone: these writes hit EPIPE.
            for i in 0..20 {
                writer.submit(Level::Info, format!("after {i}\n").as_bytes());
            }
            let m = guard.shutdown();
            assert_accounted(&m);
            assert_eq!(m.in_flight_records, 0);
            assert_eq!(m.dropped_for(DropReason::IoError), 20, "{m:?}");
            assert!(m.write_errors >= 1);
        },
    )
}

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo with a valid C string.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

// FIFOs are unix's.
#[cfg(unix)]
#[test]
fn a_fifo_is_reopened_when_a_new_reader_arrives() {
    within(
        std::time::Duration::from_secs(300),
        "a_fifo_is_reopened_when_a_new_reader_arrives",
        || {
            let dir = tempfile::tempdir().unwrap();
            let fifo = dir.path().join("sink.fifo");
            mkfifo(&fifo);
            let mut first = Command::new("head")
                .arg("-c")
                .arg("6")
                .arg(&fifo)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .build(FdSink::fifo_reopening(&fifo, None).unwrap())
                .unwrap();
            writer.submit(Level::Info, b"hello\n");
            writer.flush(Duration::from_secs(30)).unwrap();
            first.wait().unwrap();
            // The first reader is gone: writes fail with EPIPE until a new reader opens.
            while writer.metrics().write_errors == 0 {
                writer.submit(Level::Info, b"nobody reads this\n");
                writer.flush(Duration::from_secs(30)).unwrap();
            }
            let mut second = Command::new("cat")
                .arg(&fifo)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let mut out = BufReader::new(second.stdout.take().unwrap());
            // Keep logging until the new reader gets a record: the sink reopened the FIFO.
            let (tx, rx) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let mut line = String::new();
                while out.read_line(&mut line).unwrap_or(0) > 0 {
                    let _ = tx.send(std::mem::take(&mut line));
                }
            });
            // The first thing the new reader sees may be the in-band report of the EPIPE drops
            // (it is retried until written); then the records.
            let mut report_seen = false;
            loop {
                writer.submit(Level::Info, b"after reopen\n");
                writer.flush(Duration::from_secs(30)).unwrap();
                match rx.try_recv() {
                    Ok(line) if line == "after reopen\n" => break,
                    Ok(line) => {
                        assert!(
                            line.contains("loglag: dropped") && line.contains("io_error="),
                            "unexpected line {line:?}"
                        );
                        report_seen = true;
                    }
                    Err(_) => std::thread::yield_now(),
                }
            }
            let m = guard.shutdown();
            assert_accounted(&m);
            assert!(
                m.dropped_for(DropReason::IoError) >= 1,
                "EPIPE drops are counted: {m:?}"
            );
            second.wait().unwrap();
            // The EPIPE drops were announced to the new reader, before or after its records.
            let rest: Vec<String> = rx.iter().collect();
            assert!(
                report_seen
                    || rest
                        .iter()
                        .any(|l| l.contains("loglag: dropped") && l.contains("io_error=")),
                "no in-band report: {rest:?}"
            );
        },
    )
}

// A tmpfs mount is unix's.
#[cfg(unix)]
/// A real full filesystem: a 64 KiB tmpfs mounted for the test (needs root; skipped,
/// with a message, where mounting is not allowed).
#[test]
fn enospc_uses_the_fallback_and_the_primary_comes_back_when_space_returns() {
    within(
        std::time::Duration::from_secs(300),
        "enospc_uses_the_fallback_and_the_primary_comes_back_when_space_returns",
        || {
            let Some(tmpfs) = mount_tmpfs("64k", "enospc_uses_the_fallback") else {
                return;
            };
            let mnt = tmpfs.path.clone();
            // Leave ~8 KiB free.
            std::fs::write(mnt.join("filler"), vec![0u8; 56 << 10]).unwrap();
            let log = mnt.join("app.log");
            let (capture, fallback_out) = TestSink::new(Behaviour::Fast);
            let chain = Fallback::new(FdSink::append(&log).unwrap())
                .then(capture)
                .backoff(Duration::from_millis(1), Duration::from_millis(5));
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .build(chain)
                .unwrap();
            let record = [b'z'; 999]; // 1000-byte records: not a divisor of the page size
            let mut i = 0;
            while writer.metrics().write_errors == 0 {
                // Batches of 6 KiB against ~8 KiB free: the failing write is a short one first.
                for _ in 0..6 {
                    writer.submit(Level::Info, &[&record[..], b"\n"].concat());
                }
                writer.flush(Duration::from_secs(30)).unwrap();
                i += 1;
                assert!(i < 10_000, "the tmpfs never filled");
            }
            assert!(
                !fallback_out.lock().unwrap().is_empty(),
                "the fallback took the records"
            );
            let full_size = std::fs::metadata(&log).unwrap().len();
            // Space returns; the primary is re-probed and used again.
            std::fs::remove_file(mnt.join("filler")).unwrap();
            let mut tries = 0;
            while std::fs::metadata(&log).unwrap().len() == full_size {
                writer.submit(Level::Info, b"space is back\n");
                writer.flush(Duration::from_secs(30)).unwrap();
                tries += 1;
                assert!(tries < 1_000_000, "the primary never came back");
            }
            let m = guard.shutdown();
            assert_accounted(&m);
            assert_eq!(
                m.dropped_records(),
                0,
                "nothing lost: the fallback took what the primary could not"
            );
            let primary = std::fs::read_to_string(&log).unwrap();
            assert!(primary.contains("space is back"));
            // A batch cut short by ENOSPC was cut back out of the file (the fallback took it
            // whole), so the primary holds whole records only.
            let whole = "z".repeat(999);
            for line in primary.lines() {
                assert!(
                    line == whole || line == "space is back",
                    "torn record in the primary: {} bytes",
                    line.len()
                );
            }
            assert!(primary.ends_with('\n'));
        },
    )
}
