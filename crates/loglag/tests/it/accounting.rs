//! Property tests: random producers, record sizes, policies and sink behaviours. Checks
//! the accounting invariant, per-producer order, and that every record that was not
//! dropped appears byte-exact and never interleaved.

use crate::support;

use std::collections::HashMap;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use loglag::{DropReason, Level, NonBlockingBuilder, Overflow};
use proptest::prelude::*;
use support::*;

fn payload(producer: usize, seq: usize, len: usize) -> String {
    let fill: String = (0..len)
        .map(|k| (b'a' + ((producer * 7 + seq + k) % 26) as u8) as char)
        .collect();
    format!("p{producer} s{seq} {fill}")
}

fn policy() -> impl Strategy<Value = Overflow> {
    prop_oneof![
        Just(Overflow::Block),
        (0u64..3).prop_map(|ms| Overflow::BlockFor(Duration::from_millis(ms))),
        Just(Overflow::DropNewest),
        Just(Overflow::DropOldest),
        Just(Overflow::ShedByLevel),
    ]
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        Just(Behaviour::Fast),
        (1usize..300).prop_map(Behaviour::Short),
        (2u32..6).prop_map(Behaviour::FailEvery),
        Just(Behaviour::Slow),
        (2u32..4).prop_map(Behaviour::Interrupted),
        (2u32..6).prop_map(Behaviour::PartialThenFail),
    ]
}

fn mode() -> impl Strategy<Value = loglag::Mode> {
    prop_oneof![
        3 => Just(loglag::Mode::Async),
        1 => Just(loglag::Mode::Sync),
    ]
}

/// Cases: 48 by default, more with `PROPTEST_CASES` (CI raises it).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(48)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn every_record_is_accounted_for_in_order_and_intact(
        producers in 1usize..5,
        per_producer in 1usize..400,
        max_len in 1usize..200, // records stay under max_record_bytes (half the smallest budget)
        capacity in 512usize..16_384,
        batch in 64usize..8192,
        overflow in policy(),
        behaviour in behaviour(),
        mode in mode(),
        spool in any::<bool>(),
        cut_off in prop_oneof![4 => Just(None), 1 => (0u64..20).prop_map(Some)],
    ) {
        let (sink, out) = TestSink::new(behaviour);
        let dir = tempfile::tempdir().unwrap();
        let mut builder = NonBlockingBuilder::default()
            .capacity_bytes(capacity)
            .batch_bytes(batch)
            .overflow(overflow)
            .max_record_bytes(1 << 20)
            .flush_interval(Duration::from_millis(1))
            .mode(mode);
        // A spool cannot evict what the writer is delivering: DropOldest with one is
        // refused (overflow.rs), so a spooled case drops the newest instead.
        if spool && mode == loglag::Mode::Async && overflow != Overflow::DropOldest {
            builder = builder.spool(dir.path().join("spool"));
        }
        if let Some(ms) = cut_off {
            // A shutdown deadline that may cut the queue off: those records are
            // counted as `shutdown` drops, never lost silently.
            builder = builder.shutdown_timeout(Duration::from_millis(ms));
        }
        let (writer, guard) = builder.build(sink).unwrap();
        let start = Arc::new(Barrier::new(producers));
        let threads: Vec<_> = (0..producers).map(|p| {
            let writer = writer.clone();
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                for seq in 0..per_producer {
                    let level = Level::ALL[(p + seq) % 5];
                    let line = format!("{}\n", payload(p, seq, (p * 31 + seq * 17) % max_len));
                    writer.submit(level, line.as_bytes());
                    // Snapshots taken mid-flight must balance too.
                    if seq % 97 == 0 {
                        assert_accounted(&writer.metrics());
                    }
                }
            })
        }).collect();
        // Bounded: a producer parked for good under Block fails the case, not CI.
        support::within(Duration::from_secs(120), "the producers", move || {
            for t in threads {
                t.join().unwrap();
            }
        });
        let m = guard.shutdown();
        assert_accounted(&m);
        prop_assert_eq!(m.accepted, (producers * per_producer) as u64);
        let spooled = spool && mode == loglag::Mode::Async;
        if !spooled {
            prop_assert_eq!(m.in_flight_records, 0);
        }
        // With a spool, what the shutdown deadline cuts off stays in the spool file for
        // the next start instead of being dropped; `in_flight` counts it.
        if matches!(overflow, Overflow::Block) {
            prop_assert_eq!(m.dropped_for(DropReason::QueueFull), 0);
        }
        if !behaviour.fails() {
            prop_assert_eq!(m.dropped_for(DropReason::IoError), 0, "EINTR and short writes are not errors");
        }
        let out = out.lock().unwrap();
        let lines = record_lines(&out);
        // A sink that fails part-way through a line keeps the fragment; it sits on a
        // line of its own (the pipeline ends it before writing on), so every record
        // that was written is whole.
        let mut whole = 0u64;
        let mut last: HashMap<usize, usize> = HashMap::new();
        for line in &lines {
            let mut parts = line.splitn(3, ' ');
            let parsed = parts
                .next()
                .and_then(|p| p.strip_prefix('p')?.parse::<usize>().ok())
                .zip(parts.next().and_then(|s| s.strip_prefix('s')?.parse::<usize>().ok()));
            let exact = parsed.filter(|&(p, seq)| *line == payload(p, seq, (p * 31 + seq * 17) % max_len));
            let Some((p, seq)) = exact else {
                prop_assert!(
                    matches!(behaviour, Behaviour::PartialThenFail(_)),
                    "a line that is not a whole record: {:?}", line
                );
                continue;
            };
            whole += 1;
            if let Some(&prev) = last.get(&p) {
                prop_assert!(seq > prev, "producer {} out of order: {} after {}", p, seq, prev);
            }
            last.insert(p, seq);
        }
        if matches!(behaviour, Behaviour::PartialThenFail(_)) {
            // A write cut just before a record's newline leaves all of the record but
            // its end: it is counted lost (conservatively), yet reads whole once the
            // pipeline ends the line. At most one such record per failed write.
            prop_assert!(whole >= m.written_records && whole <= m.written_records + m.write_errors,
                "whole lines {} against {} written, {} failed writes", whole, m.written_records, m.write_errors);
        } else {
            prop_assert_eq!(whole, m.written_records);
        }
        // Every drop is announced in-band, with its reason, except what cannot be: a
        // report that a failing sink refused at the very end, or drops counted when the
        // shutdown deadline had already stopped the writer.
        let reported = reported_drops(&out);
        prop_assert!(reported <= m.dropped_records(), "announced {} > dropped {}", reported, m.dropped_records());
        for reason in ["queue_full", "io_error", "shutdown", "reentrant"] {
            let figure = reported_for_reason(&out, reason);
            let counted = match reason {
                "queue_full" => m.dropped_for(DropReason::QueueFull),
                "io_error" => m.dropped_for(DropReason::IoError),
                "shutdown" => m.dropped_for(DropReason::Shutdown),
                _ => m.dropped_for(DropReason::Reentrant),
            };
            prop_assert!(figure <= counted, "{}: announced {} > counted {}", reason, figure, counted);
        }
        if !behaviour.fails() && m.dropped_for(DropReason::Shutdown) == 0 {
            prop_assert_eq!(reported, m.dropped_records(), "every drop announced in-band");
            prop_assert_eq!(reported_for_reason(&out, "queue_full"), m.dropped_for(DropReason::QueueFull));
        }
    }
}
