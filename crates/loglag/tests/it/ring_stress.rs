//! Many threads on tiny rings under every policy. `.ci/run` also runs this file in the
//! debug profile, where integer overflow panics: a `head - tail` underflow in the
//! producer path (a thread preempted between its two reads) fails it there.

use crate::support;

use std::collections::HashMap;
use std::time::Duration;

use loglag::{Level, Mode, NonBlockingBuilder, Overflow};
use support::*;

const THREADS: usize = 16;
const PER_THREAD: usize = 20_000;

fn stress(overflow: Overflow) {
    let (sink, out) = TestSink::new(Behaviour::Slow);
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .overflow(overflow)
        .capacity_bytes(4096)
        .batch_bytes(512)
        .build(sink)
        .unwrap();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|t| {
            let w = writer.clone();
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                for i in 0..PER_THREAD {
                    let level = [Level::Debug, Level::Info, Level::Warn][i % 3];
                    w.submit(
                        level,
                        format!("t{t:02} {i:05} {}\n", "x".repeat(i % 40)).as_bytes(),
                    );
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    guard.flush(Duration::from_secs(60)).expect("flush");
    let m = writer.metrics();
    assert_accounted(&m);
    assert_eq!(m.accepted, (THREADS * PER_THREAD) as u64);
    assert_eq!(m.in_flight_records, 0);
    let out = out.lock().unwrap();
    let lines = record_lines(&out);
    assert_eq!(lines.len() as u64, m.written_records, "{overflow:?}");
    // Every line intact, and each producer's records in order.
    let mut last: HashMap<String, i64> = HashMap::new();
    for line in &lines {
        let mut parts = line.split(' ');
        let (t, i, pad) = (
            parts.next().unwrap(),
            parts.next().unwrap(),
            parts.next().unwrap_or(""),
        );
        let i: i64 = i.parse().unwrap_or_else(|_| panic!("torn line {line:?}"));
        assert_eq!(pad.len() as i64, i % 40, "torn line {line:?}");
        let prev = last.insert(t.to_owned(), i).unwrap_or(-1);
        assert!(i > prev, "{t}: {i} after {prev} ({overflow:?})");
    }
    if matches!(overflow, Overflow::Block) {
        assert_eq!(m.dropped_records(), 0);
    }
    guard.shutdown();
}

#[test]
fn shed_by_level() {
    within(Duration::from_secs(300), "stress ShedByLevel", || {
        stress(Overflow::ShedByLevel)
    });
}

#[test]
fn drop_newest() {
    within(Duration::from_secs(300), "stress DropNewest", || {
        stress(Overflow::DropNewest)
    });
}

#[test]
fn drop_oldest() {
    within(Duration::from_secs(300), "stress DropOldest", || {
        stress(Overflow::DropOldest)
    });
}

#[test]
fn block() {
    within(Duration::from_secs(300), "stress Block", || {
        stress(Overflow::Block)
    });
}

#[test]
fn block_for() {
    within(Duration::from_secs(300), "stress BlockFor", || {
        stress(Overflow::BlockFor(Duration::from_micros(200)))
    });
}
