#![cfg(feature = "rolling")]
//! Restarts that overlap: two real processes on one rolling directory (size rotation,
//! gzip), the second started while the first is still logging, as in a rolling deploy.
//! A writer holds its live file's lock: with dated names the second leaves that file to
//! the first and takes the next counter; with a fixed name it waits for the first to
//! finish. Neither's housekeeping touches the other's live file. Every record each
//! process counted written is in the files exactly once. The test binary re-executes
//! itself as the two processes.

use crate::support;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use loglag::rolling::{Builder, Compression, Naming, Rotation};
use loglag::{Level, NonBlockingBuilder, Overflow};
use support::*;

const NAMING: &str = "LOGLAG_TEST_RESTART_NAMING";
const RECORDS: u64 = 100_000;

fn appender(naming: Naming, lock_wait: Duration) -> Builder {
    let prefix = match naming {
        Naming::Dated => "app",
        Naming::Fixed => "app.log",
    };
    Builder::new()
        .naming(naming)
        .rotation(Rotation::NEVER)
        .filename_prefix(prefix)
        .filename_suffix("log")
        .max_file_size(64 << 10)
        .compression(Compression::Gzip)
        .lock_wait(lock_wait)
}

/// Runs this test binary again as one of the two processes: the test `test`, alone,
/// playing `role` (see `played_a_process_role`).
fn process(test: &str, role: &str, dir: &Path, naming: Naming) -> Child {
    rerun_as_child(module_path!(), test, role, dir)
        .env(NAMING, format!("{naming:?}"))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap()
}

/// In a process started by [`process`], plays its role and returns true: the test
/// ends there; in the test itself returns false at once. The role is `TAG` or
/// `TAG:hold`. It logs half its records, says "half", waits for a line on stdin, logs
/// the rest, shuts down and prints what it counted written. With `hold` it also waits
/// for a second line before it ends (and lets go of the names).
fn played_a_process_role() -> bool {
    let Some((role, dir)) = child_role() else {
        return false;
    };
    play(role, &dir);
    true
}

fn play(role: String, dir: &Path) {
    let (tag, hold) = match role.split_once(':') {
        Some((tag, "hold")) => (tag.to_owned(), true),
        _ => (role.clone(), false),
    };
    let stdin = std::io::stdin();
    let mut go = String::new();
    println!("building");
    std::io::stdout().flush().unwrap();
    // Far longer than the other process needs to drain on a busy machine.
    let naming = match std::env::var(NAMING).as_deref() {
        Ok("Fixed") => Naming::Fixed,
        _ => Naming::Dated,
    };
    let appender = match appender(naming, Duration::from_secs(240)).build(dir) {
        Ok(a) => a,
        Err(e) => {
            println!("refused {e}");
            return;
        }
    };
    let (writer, guard) = NonBlockingBuilder::default()
        .overflow(Overflow::Block)
        .build(appender)
        .unwrap();
    for i in 0..RECORDS / 2 {
        writer.submit(Level::Info, format!("{tag} {i:07}\n").as_bytes());
    }
    // Written, not only queued: while it waits, this process holds one file and
    // rotates nothing, so a test that looks at it sees one holder.
    guard.flush(Duration::from_secs(120)).unwrap();
    println!("half");
    std::io::stdout().flush().unwrap();
    stdin.lock().read_line(&mut go).unwrap();
    for i in RECORDS / 2..RECORDS {
        writer.submit(Level::Info, format!("{tag} {i:07}\n").as_bytes());
    }
    if hold {
        stdin.lock().read_line(&mut go).unwrap();
    }
    let m = guard.shutdown();
    assert_accounted(&m);
    println!(
        "written {} dropped {}",
        m.written_records,
        m.dropped_records()
    );
}

/// Reads the child's stdout up to the line `expected` (libtest prints its own lines
/// first); fails if the child ends before saying it.
fn expect_line(child: &mut BufReader<std::process::ChildStdout>, expected: &str) {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if child.read_line(&mut line).unwrap() == 0 {
            panic!("the child ended before saying {expected:?}; it said:\n{seen}");
        }
        if line.trim().ends_with(expected) {
            return;
        }
        seen.push_str(&line);
    }
}

/// Every record line in every file of `dir`, decompressed, counted by content.
fn records_in(dir: &Path) -> HashMap<String, u32> {
    let mut seen = HashMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name.ends_with(".tmp") {
            continue;
        }
        let bytes = std::fs::read(e.path()).unwrap();
        let mut text = Vec::new();
        if name.ends_with(".gz") {
            flate2::read::GzDecoder::new(&bytes[..])
                .read_to_end(&mut text)
                .unwrap();
        } else {
            text = bytes;
        }
        for line in String::from_utf8(text).unwrap().lines() {
            *seen.entry(line.to_owned()).or_default() += 1;
        }
    }
    seen
}

/// Three deploys on one directory: each new process starts while the old one still
/// has half its records to log.
fn overlapping_restarts(test: &'static str, naming: Naming) {
    within(
        Duration::from_secs(600),
        "overlapping restarts",
        move || {
            let dir = tempfile::tempdir().unwrap();
            let mut tags = Vec::new();
            for round in 0..3 {
                let (old, new) = (format!("r{round}-old"), format!("r{round}-new"));
                let mut first = process(test, &old, dir.path(), naming);
                let mut first_out = BufReader::new(first.stdout.take().unwrap());
                expect_line(&mut first_out, "building");
                expect_line(&mut first_out, "half");
                let mut second = process(test, &new, dir.path(), naming);
                let mut second_out = BufReader::new(second.stdout.take().unwrap());
                expect_line(&mut second_out, "building");
                // The new process is starting; the old one logs the rest of its records.
                writeln!(first.stdin.as_mut().unwrap(), "go").unwrap();
                writeln!(second.stdin.as_mut().unwrap(), "go").unwrap();
                for (child, out, tag) in [(first, first_out, &old), (second, second_out, &new)] {
                    let mut rest = String::new();
                    let mut out = out;
                    out.read_to_string(&mut rest).unwrap();
                    let result = wait_child_within(child, Duration::from_secs(300), tag);
                    assert!(
                        result.status.success() && rest.contains(&format!("written {RECORDS} ")),
                        "{tag}: {rest}\n{}",
                        String::from_utf8_lossy(&result.stderr)
                    );
                }
                tags.push(old);
                tags.push(new);
            }
            let seen = records_in(dir.path());
            let mut missing = 0;
            let mut duplicated = 0;
            for tag in &tags {
                for i in 0..RECORDS {
                    match seen.get(&format!("{tag} {i:07}")) {
                        None => missing += 1,
                        Some(1) => {}
                        Some(_) => duplicated += 1,
                    }
                }
            }
            assert_eq!(
                (missing, duplicated),
                (0, 0),
                "records counted written that are missing, and duplicated"
            );
            // The new process's in-band word that it left a file the old one held
            // (its live file, or one its housekeeper was compressing) to it. Dated names
            // may say it once per deploy; a fixed name waits instead.
            let notices: u32 = seen
                .iter()
                .filter(|(line, _)| line.contains("; this writer continues in "))
                .map(|(_, n)| n)
                .sum();
            let most = match naming {
                Naming::Dated => 3,
                Naming::Fixed => 0,
            };
            let said: Vec<&String> = seen.keys().filter(|l| l.contains("loglag")).collect();
            assert!(notices <= most, "notices: {said:?}");
            assert_eq!(
                seen.len() as u64 - u64::from(notices),
                tags.len() as u64 * RECORDS,
                "lines that no process wrote"
            );
        },
    )
}

#[test]
fn a_restart_that_overlaps_the_old_process_loses_and_duplicates_nothing() {
    if played_a_process_role() {
        return;
    }
    overlapping_restarts(
        "a_restart_that_overlaps_the_old_process_loses_and_duplicates_nothing",
        Naming::Dated,
    );
}

#[test]
fn a_restart_on_a_fixed_name_waits_for_the_old_process_and_loses_nothing() {
    if played_a_process_role() {
        return;
    }
    overlapping_restarts(
        "a_restart_on_a_fixed_name_waits_for_the_old_process_and_loses_nothing",
        Naming::Fixed,
    );
}

#[test]
fn a_second_writer_on_a_held_fixed_name_is_refused_naming_the_holder() {
    if played_a_process_role() {
        return;
    }
    within(
        Duration::from_secs(300),
        "a_second_writer_on_a_held_fixed_name_is_refused_naming_the_holder",
        || {
            let dir = tempfile::tempdir().unwrap();
            let mut holder = process(
                "a_second_writer_on_a_held_fixed_name_is_refused_naming_the_holder",
                "holder:hold",
                dir.path(),
                Naming::Fixed,
            );
            let mut out = BufReader::new(holder.stdout.take().unwrap());
            expect_line(&mut out, "building");
            expect_line(&mut out, "half");
            // In this process, while the other holds the names: refused, not shared.
            let e = appender(Naming::Fixed, Duration::ZERO)
                .build(dir.path())
                .unwrap_err();
            let message = e.to_string();
            // The holder is found in /proc/locks, which is Linux's; elsewhere the
            // error says only that the file is held.
            let holder_named = format!("is held by process {}", holder.id());
            let said = if cfg!(target_os = "linux") {
                holder_named.as_str()
            } else {
                "is held"
            };
            assert!(
                message.contains(said),
                "the error names the holder: {message}"
            );
            // A different name in the same directory is someone else's business.
            appender(Naming::Fixed, Duration::ZERO)
                .filename_prefix("other.log")
                .build(dir.path())
                .expect("other names are free");
            let stdin = holder.stdin.as_mut().unwrap();
            writeln!(stdin, "go").unwrap();
            writeln!(stdin, "end").unwrap();
            let mut rest = String::new();
            out.read_to_string(&mut rest).unwrap();
            let result = wait_child_within(holder, Duration::from_secs(300), "holder");
            assert!(result.status.success(), "{rest}");
            // Gone: the name is free again, and the next writer continues it.
            appender(Naming::Fixed, Duration::ZERO)
                .build(dir.path())
                .expect("free after the holder ended");
        },
    )
}

/// A forked child (a `fork` without `exec`, as a daemonizing helper does) that the test
/// process adopts when its parent exits, so that it can reap it; killed and reaped on
/// drop, whatever the test's outcome.
#[cfg(target_os = "linux")]
struct Orphan(i32);

#[cfg(target_os = "linux")]
impl Drop for Orphan {
    fn drop(&mut self) {
        // SAFETY: signalling and reaping a child of this process by its pid.
        unsafe {
            libc::kill(self.0, libc::SIGKILL);
            libc::waitpid(self.0, std::ptr::null_mut(), 0);
        }
    }
}

/// The finding: a process holding a fixed name forks a child without `exec` and exits;
/// the child, sharing the open file (and so its `flock`), keeps the name held. A new
/// writer was refused naming the dead parent (`/proc/locks` gives the lock's creator);
/// now it names the child, which is alive. Linux (`/proc`).
#[cfg(target_os = "linux")]
#[test]
fn a_fixed_name_held_by_a_forked_child_names_the_living_child_not_its_dead_parent() {
    if crate::support::alone(
        module_path!(),
        "a_fixed_name_held_by_a_forked_child_names_the_living_child_not_its_dead_parent",
        &[],
    ) {
        return;
    }
    const TEST: &str =
        "a_fixed_name_held_by_a_forked_child_names_the_living_child_not_its_dead_parent";
    if let Some((_, dir)) = child_role() {
        // The parent: holds the name, logs, forks a child that outlives it, says the
        // child's pid, and ends.
        let appender = appender(Naming::Fixed, Duration::ZERO).build(&dir).unwrap();
        let (writer, guard) = NonBlockingBuilder::default().build(appender).unwrap();
        writer.submit(Level::Info, b"parent 1\n");
        guard.flush(Duration::from_secs(120)).unwrap();
        // SAFETY: the child only closes descriptors and pauses (async-signal-safe)
        // until it is killed.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: see above. Its stdio closed, the test's pipes end with the parent.
            unsafe {
                libc::close(0);
                libc::close(1);
                libc::close(2);
                loop {
                    libc::pause();
                }
            }
        }
        println!("child {pid}");
        std::io::stdout().flush().unwrap();
        return;
    }
    within(Duration::from_secs(300), TEST, || {
        // Orphans of this process's children come to it, so the test can reap the
        // forked child once its parent is gone.
        // SAFETY: a process attribute, set with its documented arguments.
        let adopted = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        if adopted != 0 && std::env::var("LOGLAG_EMULATOR").as_deref() == Ok("qemu-user") {
            // qemu-user does not emulate the subreaper (scripts/test-aarch64 says it
            // runs there); without it the orphan could not be reaped by this test.
            eprintln!("not run: qemu-user does not emulate PR_SET_CHILD_SUBREAPER");
            return;
        }
        assert_eq!(adopted, 0, "PR_SET_CHILD_SUBREAPER");
        let dir = tempfile::tempdir().unwrap();
        let mut parent = rerun_as_child(module_path!(), TEST, "parent", dir.path())
            .spawn()
            .unwrap();
        let parent_pid = parent.id();
        let mut out = BufReader::new(parent.stdout.take().unwrap());
        let mut seen = String::new();
        let child: i32 = loop {
            let mut line = String::new();
            if out.read_line(&mut line).unwrap() == 0 {
                panic!("the parent ended without forking; it said:\n{seen}");
            }
            // After libtest's "test … ... " on the same line.
            if let Some((_, pid)) = line.trim().rsplit_once("child ") {
                break pid.parse().unwrap();
            }
            seen.push_str(&line);
        };
        let child = Orphan(child);
        parent.stdout = Some(out.into_inner());
        let result = wait_child_within(parent, Duration::from_secs(300), "parent");
        assert!(
            result.status.success(),
            "{}",
            String::from_utf8_lossy(&result.stderr)
        );

        let e = appender(Naming::Fixed, Duration::ZERO)
            .build(dir.path())
            .unwrap_err();
        let message = e.to_string();
        assert!(
            message.contains(&format!("is held by process {}", child.0)),
            "the error names the living child {}: {message}",
            child.0
        );
        assert!(
            !message.contains(&format!("is held by process {parent_pid}")),
            "the error names the dead parent {parent_pid}: {message}"
        );
        drop(child);
        // SAFETY: as above.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
        // The child gone, the name is free again.
        appender(Naming::Fixed, Duration::ZERO)
            .build(dir.path())
            .expect("free once the child is gone");
    })
}

/// Two pipelines in one process on the same dated names at once: the second leaves
/// the first's live file to it, writes the next counter, and says so in-band.
#[test]
fn a_second_sink_on_held_dated_names_writes_its_own_file_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let first = appender(Naming::Dated, Duration::ZERO)
        .build(dir.path())
        .unwrap();
    let first_path = first.current_path();
    let second = appender(Naming::Dated, Duration::ZERO)
        .build(dir.path())
        .unwrap();
    let second_path = second.current_path();
    assert_ne!(first_path, second_path, "never one file for two writers");
    let (first_writer, first_guard) = NonBlockingBuilder::default().build(first).unwrap();
    let (second_writer, second_guard) = NonBlockingBuilder::default().build(second).unwrap();
    first_writer.submit(Level::Info, b"first 1\n");
    second_writer.submit(Level::Info, b"second 1\n");
    drop((first_writer, second_writer));
    assert_accounted(&first_guard.shutdown());
    assert_accounted(&second_guard.shutdown());
    let seen = records_in(dir.path());
    assert_eq!(seen.get("first 1"), Some(&1));
    assert_eq!(seen.get("second 1"), Some(&1));
    let second_text = std::fs::read_to_string(&second_path).unwrap();
    // The holder is found in /proc/locks, which is Linux's.
    let said = if cfg!(target_os = "linux") {
        "is held by another rolling sink in this process"
    } else {
        "is held"
    };
    assert!(
        second_text.contains(said),
        "the in-band notice names the other writer: {second_text}"
    );
}

/// A fixed name moved away under its writer (logrotate before its SIGHUP, a `mv`)
/// while a new writer starts: the new one waits `lock_wait` for the name, then makes
/// it; the old one finds the name held and keeps writing the file it has open, which
/// still has a name. Neither loses a record, neither renames the other's file, even
/// when the old one's period ends meanwhile.
#[test]
fn a_fixed_name_taken_while_its_writer_was_moved_away_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Arc::new(AtomicI64::new(1_800_000_000));
    let builder = || {
        let clock = clock.clone();
        Builder::new()
            .naming(Naming::Fixed)
            .rotation(Rotation::HOURLY)
            .filename_prefix("app.log")
            .lock_wait(Duration::from_millis(200))
            .time_source(move || {
                std::time::UNIX_EPOCH + Duration::from_secs(clock.load(Ordering::SeqCst) as u64)
            })
    };
    let (old, old_guard) = NonBlockingBuilder::default()
        .build(builder().build(dir.path()).unwrap())
        .unwrap();
    old.submit(Level::Info, b"old 1\n");
    old_guard.flush(Duration::from_secs(30)).unwrap();
    std::fs::rename(dir.path().join("app.log"), dir.path().join("app.log.moved")).unwrap();
    let (new, new_guard) = NonBlockingBuilder::default()
        .build(builder().build(dir.path()).unwrap())
        .unwrap();
    new.submit(Level::Info, b"new 1\n");
    new_guard.flush(Duration::from_secs(30)).unwrap();
    old.submit(Level::Info, b"old 2\n");
    old_guard.flush(Duration::from_secs(30)).unwrap();
    // The hour ends: the old writer must not rotate the new one's file away.
    clock.fetch_add(3600, Ordering::SeqCst);
    old.submit(Level::Info, b"old 3\n");
    old_guard.flush(Duration::from_secs(30)).unwrap();
    new.submit(Level::Info, b"new 2\n");
    let (old_m, new_m) = (old_guard.shutdown(), new_guard.shutdown());
    for m in [&old_m, &new_m] {
        assert_accounted(m);
        assert_eq!(m.dropped_records(), 0, "{m:#?}");
    }
    let seen = records_in(dir.path());
    for line in ["old 1", "old 2", "old 3", "new 1", "new 2"] {
        assert_eq!(seen.get(line), Some(&1), "{line}: {seen:?}");
    }
    let held = seen
        .keys()
        .filter(|l| l.contains("this writer keeps writing the file it has open"))
        .count();
    assert_eq!(
        held, 1,
        "the old writer says once that the name is held: {seen:?}"
    );
}
