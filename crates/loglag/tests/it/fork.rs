// Unix only: Windows has no fork().
#![cfg(unix)]
//! `fork()`: a parent keeps logging under load while forked children log too, as a
//! pre-fork server's workers do. The parent survives, and every record from every
//! process is written exactly once or counted.
//!
//! The children run only this file's own code between `fork` and `_exit`.

use crate::support;

use std::collections::HashMap;
use std::io::Read;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use loglag::sink::FdSink;
use loglag::{Level, Mode, NonBlockingBuilder, Overflow};
use support::within;

const CHILDREN: usize = 4;
const PER_CHILD: u64 = 5_000;

/// Forks a child that logs `PER_CHILD` records and reports, through a pipe, how many
/// its own metrics counted as written and as dropped. Returns that report.
fn fork_a_logging_child(writer: &loglag::NonBlocking, child: usize) -> (u64, u64) {
    let mut fds = [0i32; 2];
    // SAFETY: a pipe into a two-element array.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
    // SAFETY: the child runs only the code below and leaves with `_exit`.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        // SAFETY: alarm(2) only arms a timer. A child that deadlocks dies of it and
        // lets go of the pipes its parent (and the test harness) read to the end.
        unsafe { libc::alarm(120) };
        let before = writer.metrics();
        for seq in 0..PER_CHILD {
            writer.submit(Level::Info, format!("child={child} seq={seq}\n").as_bytes());
        }
        // A flush in the child returns at once: there is no writer thread to wait for.
        let _ = writer.flush(Duration::from_secs(30));
        let after = writer.metrics();
        let report = format!(
            "{} {}\n",
            after.written_records - before.written_records,
            after.dropped_records() - before.dropped_records()
        );
        // SAFETY: writing to our pipe end, then leaving without running destructors
        // (the parent's threads do not exist here).
        unsafe {
            libc::write(fds[1], report.as_ptr().cast(), report.len());
            libc::_exit(0);
        }
    }
    // SAFETY: closing the child's end, which this process no longer uses.
    unsafe { libc::close(fds[1]) };
    // SAFETY: the read end is ours alone from here on.
    let mut from_child = unsafe { std::fs::File::from_raw_fd(fds[0]) };
    let mut report = String::new();
    from_child.read_to_string(&mut report).unwrap();
    let mut status = 0;
    // SAFETY: waiting for our own child.
    assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "child {child} ended with status {status:#x}"
    );
    let mut parts = report.split_whitespace().map(|n| n.parse::<u64>().unwrap());
    (parts.next().unwrap(), parts.next().unwrap())
}

fn parent_and_children_log(spool: bool, mode: Mode) {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let mut builder = NonBlockingBuilder::default()
        .mode(mode)
        .overflow(Overflow::Block)
        .flush_on_panic(false);
    if spool {
        builder = builder.spool(dir.path().join("app.spool"));
    }
    let (writer, guard) = builder.build(FdSink::append(&log).unwrap()).unwrap();
    // The parent logs under load the whole time.
    let stop = Arc::new(AtomicBool::new(false));
    let (started_tx, started) = mpsc::channel();
    let load = {
        let (writer, stop) = (writer.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut seq = 0u64;
            while !stop.load(Ordering::Relaxed) || seq < 1000 {
                writer.submit(Level::Info, format!("parent seq={seq}\n").as_bytes());
                seq += 1;
                if seq == 100 {
                    started_tx.send(()).unwrap();
                }
            }
            seq
        })
    };
    started.recv().unwrap();
    for child in 0..CHILDREN {
        let (written, dropped) = fork_a_logging_child(&writer, child);
        assert_eq!(
            (written, dropped),
            (PER_CHILD, 0),
            "the child wrote its records to the inherited file and counted them"
        );
    }
    stop.store(true, Ordering::Relaxed);
    let parent_records = load.join().unwrap();
    let m = guard.shutdown();
    assert_eq!(m.written_records, parent_records, "{m:?}");
    assert_eq!((m.dropped_records(), m.torn_records), (0, 0), "{m:?}");

    let text = std::fs::read_to_string(&log).unwrap();
    let mut parent = vec![0u8; parent_records as usize];
    let mut children: HashMap<usize, Vec<u8>> = HashMap::new();
    for line in text.lines() {
        let (who, seq) = line
            .split_once(" seq=")
            .unwrap_or_else(|| panic!("{line:?}"));
        let seq: usize = seq
            .parse()
            .unwrap_or_else(|_| panic!("a whole line: {line:?}"));
        if who == "parent" {
            parent[seq] += 1;
        } else {
            let child: usize = who.strip_prefix("child=").unwrap().parse().unwrap();
            children
                .entry(child)
                .or_insert_with(|| vec![0; PER_CHILD as usize])[seq] += 1;
        }
    }
    assert!(
        parent.iter().all(|&n| n == 1),
        "every parent record exactly once"
    );
    assert_eq!(children.len(), CHILDREN);
    for (child, seen) in children {
        assert!(
            seen.iter().all(|&n| n == 1),
            "child {child}: every record exactly once"
        );
    }
}

#[test]
fn forked_children_logging_in_spool_mode_leave_the_parent_intact() {
    if crate::support::alone(
        module_path!(),
        "forked_children_logging_in_spool_mode_leave_the_parent_intact",
        &[],
    ) {
        return;
    }
    within(Duration::from_secs(120), "fork with a spool", || {
        parent_and_children_log(true, Mode::Async)
    });
}

#[test]
fn forked_children_logging_without_a_spool_lose_nothing() {
    if crate::support::alone(
        module_path!(),
        "forked_children_logging_without_a_spool_lose_nothing",
        &[],
    ) {
        return;
    }
    within(Duration::from_secs(120), "fork without a spool", || {
        parent_and_children_log(false, Mode::Async)
    });
}

#[test]
fn forked_children_in_sync_mode_never_wait_for_the_parents_lock() {
    if crate::support::alone(
        module_path!(),
        "forked_children_in_sync_mode_never_wait_for_the_parents_lock",
        &[],
    ) {
        return;
    }
    within(Duration::from_secs(120), "fork in sync mode", || {
        parent_and_children_log(false, Mode::Sync)
    });
}

/// loglag's macros in a forked child: a captured record is never handed to the
/// parent's writer (its pointers would be read by another process's ring); the child
/// renders it itself and writes the line, whole, to the sink's file.
#[test]
fn a_forked_child_logging_through_the_macros_writes_whole_rendered_lines() {
    if crate::support::alone(
        module_path!(),
        "a_forked_child_logging_through_the_macros_writes_whole_rendered_lines",
        &[],
    ) {
        return;
    }
    within(Duration::from_secs(120), "macros in a forked child", || {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.log");
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(FdSink::append(&path).unwrap())
            .unwrap();
        loglag::set_global(&writer, loglag::Format::Json, Level::Info);
        loglag::info!(who = "parent", "before the fork");
        // The child writes to the descriptor the writer last used.
        writer.flush(Duration::from_secs(30)).unwrap();
        let mut fds = [0i32; 2];
        // SAFETY: a pipe into a two-element array.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: the child runs only the code below and leaves with `_exit`.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            // SAFETY: as above: a deadlocked child dies of the alarm.
            unsafe { libc::alarm(120) };
            let before = writer.metrics().written_records;
            for seq in 0..100u64 {
                loglag::info!(who = "child", seq, "from the child");
            }
            let report = format!("{}\n", writer.metrics().written_records - before);
            // SAFETY: our pipe end; then leave without the parent's destructors.
            unsafe {
                libc::write(fds[1], report.as_ptr().cast(), report.len());
                libc::_exit(0);
            }
        }
        // SAFETY: the child's end is not ours; the read end is ours alone.
        unsafe { libc::close(fds[1]) };
        let mut report = String::new();
        // SAFETY: as above.
        unsafe { std::fs::File::from_raw_fd(fds[0]) }
            .read_to_string(&mut report)
            .unwrap();
        let mut status = 0;
        // SAFETY: waiting for our own child.
        assert_eq!(unsafe { libc::waitpid(pid, &mut status, 0) }, pid);
        assert_eq!(
            report.trim(),
            "100",
            "the child counted its records written"
        );
        loglag::info!(who = "parent", "after the fork");
        loglag::set_max_level(None);
        let m = guard.shutdown();
        assert_eq!(m.written_records, 2, "the parent's own records: {m:?}");
        let text = std::fs::read_to_string(&path).unwrap();
        let mut from_child = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.contains("\"target\":\"loglag\""))
        {
            let v: serde_json::Value =
                serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            if v["fields"]["who"] == "child" {
                assert_eq!(v["fields"]["message"], "from the child", "{line}");
                from_child.push(v["fields"]["seq"].as_u64().unwrap());
            }
        }
        assert_eq!(from_child, (0..100).collect::<Vec<_>>());
    })
}
