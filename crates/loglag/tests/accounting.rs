//! Property tests: random producers, record sizes, policies and sink behaviours. Checks
//! the accounting invariant, per-producer order, and that every record that was not
//! dropped appears byte-exact and never interleaved.

mod support;

use std::collections::HashMap;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use loglag::{Level, NonBlockingBuilder, Overflow};
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
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_record_is_accounted_for_in_order_and_intact(
        producers in 1usize..5,
        per_producer in 1usize..400,
        max_len in 1usize..200, // records stay under max_record_bytes (half the smallest budget)
        capacity in 512usize..16_384,
        batch in 64usize..8192,
        overflow in policy(),
        behaviour in behaviour(),
    ) {
        let (sink, out) = TestSink::new(behaviour);
        let (writer, guard) = NonBlockingBuilder::default()
            .capacity_bytes(capacity)
            .batch_bytes(batch)
            .overflow(overflow)
            .max_record_bytes(1 << 20)
            .flush_interval(Duration::from_millis(1))
            .mode(loglag::Mode::Async)
            .finish_sink(sink);
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
        for t in threads {
            t.join().unwrap();
        }
        let m = guard.shutdown();
        assert_accounted(&m);
        prop_assert_eq!(m.accepted, (producers * per_producer) as u64);
        prop_assert_eq!(m.in_flight_records, 0);
        if matches!(overflow, Overflow::Block) {
            prop_assert_eq!(m.queue_full, 0);
        }
        let out = out.lock().unwrap();
        let lines = record_lines(&out);
        prop_assert_eq!(lines.len() as u64, m.written_records);
        let mut last: HashMap<usize, usize> = HashMap::new();
        for line in &lines {
            let mut parts = line.splitn(3, ' ');
            let p: usize = parts.next().unwrap()[1..].parse().unwrap();
            let seq: usize = parts.next().unwrap()[1..].parse().unwrap();
            prop_assert_eq!(line, &payload(p, seq, (p * 31 + seq * 17) % max_len), "byte-exact, not interleaved");
            if let Some(&prev) = last.get(&p) {
                prop_assert!(seq > prev, "producer {} out of order: {} after {}", p, seq, prev);
            }
            last.insert(p, seq);
        }
        if !matches!(behaviour, Behaviour::FailEvery(_)) {
            prop_assert_eq!(reported_drops(&out), m.dropped_records, "every drop announced in-band");
        }
    }
}
