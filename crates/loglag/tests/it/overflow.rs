//! Overflow: `BlockFor` waits its bound, a waiting producer is woken by room,
//! `buffered_lines_limit` bounds records, `DropOldest` is refused with a spool, and
//! every policy's name parses back to it.
//! Every wait is bounded by `support::within`.
#![allow(unused_imports)] // one import list for the promise files

use crate::support;

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use loglag::sink::Sink;
use loglag::{DropReason, Level, Mode, NonBlockingBuilder, Overflow};
use support::promises::*;
use support::*;

#[test]
fn block_for_waits_its_bound_and_not_much_longer() {
    within(LIMIT, "BlockFor", || {
        let (_recorder, gate, entered, sink) = gated_recorder();
        let (writer, guard) = NonBlockingBuilder::default()
            .capacity_bytes(4096)
            .overflow(Overflow::BlockFor(Duration::from_millis(200)))
            .flush_interval(Duration::from_secs(3600))
            .mode(Mode::Async)
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"hold\n");
        entered.recv().unwrap();
        while writer.metrics().queue_full_events == 0 {
            let started = Instant::now();
            writer.submit(Level::Info, &[b'x'; 95]);
            let waited = started.elapsed();
            if writer.metrics().queue_full_events > 0 {
                assert!(
                    waited >= Duration::from_millis(200),
                    "gave up early: {waited:?}"
                );
                // Generous: the bound is a promise to the caller, so a wait of many
                // times it is a bug, not noise.
                assert!(waited < Duration::from_secs(10), "waited {waited:?}");
            }
        }
        assert_eq!(writer.metrics().dropped_for(DropReason::QueueFull), 1);
        gate.open();
        guard.flush(Duration::from_secs(30)).unwrap();
    });
}

/// A spool cannot evict records the writer is delivering from it: `DropOldest` with a
/// spool is refused by `build`, naming the setting, and `finish` (which cannot fail)
/// says so and uses the default policy, never another one silently.
#[test]
fn drop_oldest_with_a_spool_is_refused_not_changed() {
    let dir = tempfile::tempdir().unwrap();
    let builder = || {
        NonBlockingBuilder::default()
            .overflow(Overflow::DropOldest)
            .spool(dir.path().join("app.spool"))
            .mode(Mode::Async)
    };
    match builder().build(loglag::sink::WriterSink::new(std::io::sink())) {
        Err(loglag::BuildError::Setting(e)) => {
            assert_eq!(e.key, "overflow");
            assert!(e.expected.contains("not with a spool"), "{e}");
        }
        Err(other) => panic!("wrong error: {other}"),
        Ok(_) => panic!("DropOldest with a spool was accepted"),
    }
    let (writer, guard) = builder().finish(std::io::sink());
    writer.submit(Level::Info, b"kept\n");
    assert_eq!(guard.shutdown().written_records, 1);
}

/// A producer waiting for room under `BlockFor` is woken when the writer frees it, not
/// when its (here: hour-long) wait runs out.
#[test]
fn a_producer_waiting_for_room_is_woken_when_room_is_made() {
    within(LIMIT, "block-for wake", || {
        let (_recorder, gate, entered, sink) = gated_recorder();
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(4096)
            .overflow(Overflow::BlockFor(Duration::from_secs(3600)))
            .flush_interval(Duration::from_secs(3600))
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"hold the writer\n");
        entered.recv().unwrap();
        let record = [b'k'; 1023]
            .iter()
            .chain(b"\n")
            .copied()
            .collect::<Vec<u8>>();
        // Three records of 1 KiB fill most of the 4 KiB; a fourth does not fit.
        for _ in 0..3 {
            writer.submit(Level::Info, &record);
        }
        let waiting = {
            let (writer, record) = (writer.clone(), record.clone());
            std::thread::spawn(move || writer.submit(Level::Info, &record))
        };
        gate.open();
        waiting.join().unwrap();
        let m = guard.shutdown();
        assert_eq!((m.written_records, m.dropped_records()), (5, 0), "{m:?}");
    });
}

/// `buffered_lines_limit(n)` bounds the queue to n records on top of the byte budget,
/// as tracing-appender's does: with the writer held inside a write, the (n + 1)-th
/// record is full whatever its size; DropNewest drops the newest, DropOldest keeps the
/// newest n.
#[test]
fn buffered_lines_limit_bounds_queued_records() {
    for (overflow, first_kept) in [(Overflow::DropNewest, 1u64), (Overflow::DropOldest, 91)] {
        within(LIMIT, "lines limit", move || {
            let gate = Gate::closed();
            let (sink, lines) = TestSink::new(Behaviour::Fast);
            let (sink, entered) = sink.gated(gate.clone());
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .overflow(overflow)
                .buffered_lines_limit(10)
                .build(sink)
                .unwrap();
            // Record 0, an ERROR, is written at once: the writer is now held in write.
            writer.submit(Level::Error, b"seq=0\n");
            entered.recv().unwrap();
            for seq in 1..=100u64 {
                writer.submit(Level::Error, format!("seq={seq}\n").as_bytes());
            }
            let m = writer.metrics();
            assert_eq!(m.dropped_records(), 90, "{overflow:?}: {m:?}");
            assert_eq!(m.dropped_for(DropReason::QueueFull), 90);
            // Let every write through.
            gate.open();
            let m = guard.shutdown();
            assert_eq!(m.written_records, 11, "{overflow:?}: {m:?}");
            let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
            let seqs: Vec<u64> = text
                .lines()
                .filter_map(|l| l.strip_prefix("seq=")?.parse().ok())
                .collect();
            let expected: Vec<u64> = std::iter::once(0)
                .chain(first_kept..first_kept + 10)
                .collect();
            assert_eq!(seqs, expected, "{overflow:?}");
        });
    }
}

/// `lossy(false)` with `buffered_lines_limit(n)`: the (n + 1)-th record waits for a
/// free slot instead of being dropped, and goes in once the writer frees one.
#[test]
fn a_blocking_lines_limit_waits_for_a_slot_and_loses_nothing() {
    within(LIMIT, "blocking lines limit", || {
        let gate = Gate::closed();
        let (sink, lines) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .lossy(false)
            .buffered_lines_limit(10)
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"seq=0\n");
        entered.recv().unwrap();
        for seq in 1..=10u64 {
            writer.submit(Level::Info, format!("seq={seq}\n").as_bytes());
        }
        // Every slot is taken: the next record waits on its own thread.
        let waiting = {
            let writer = writer.clone();
            std::thread::spawn(move || writer.submit(Level::Info, b"seq=11\n"))
        };
        gate.open();
        waiting.join().unwrap();
        let m = guard.shutdown();
        assert_eq!((m.written_records, m.dropped_records()), (12, 0), "{m:?}");
        let text = String::from_utf8(lines.lock().unwrap().clone()).unwrap();
        assert!(text.ends_with("seq=11\n"), "{text}");
    });
}

/// Overflow policies have names that read back, for configuration files and flags.
#[test]
fn overflow_policies_parse_from_their_names() {
    for policy in [
        Overflow::Block,
        Overflow::BlockFor(Duration::from_millis(5)),
        Overflow::DropNewest,
        Overflow::DropOldest,
        Overflow::ShedByLevel,
    ] {
        assert_eq!(
            policy.name().parse::<Overflow>().unwrap(),
            policy,
            "{policy}"
        );
    }
    assert_eq!(
        "Drop_Newest".parse::<Overflow>().unwrap(),
        Overflow::DropNewest
    );
    for bad in [
        "fast",
        "block-for=",
        "block-for=5",
        "block-for=-1ms",
        "block-for=5parsecs",
    ] {
        let e = bad.parse::<Overflow>().unwrap_err().to_string();
        assert!(e.contains("shed-by-level"), "{bad}: {e}");
    }
}
