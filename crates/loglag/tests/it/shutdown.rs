//! Shutdown: the 5 s deadline for a hung sink, and what a slow sink leaves at the
//! deadline counted, never in flight.
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
fn the_default_shutdown_waits_5_s_for_a_hung_sink_then_counts_the_loss() {
    let (_recorder, _gate, entered, sink) = gated_recorder();
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .build(sink)
        .unwrap();
    writer.submit(Level::Error, b"stuck in the sink\n");
    entered.recv().unwrap();
    writer.submit(Level::Info, b"queued behind it\n");
    let started = Instant::now();
    let metrics = within(LIMIT, "guard drop", move || guard.shutdown());
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(5), "gave up after {waited:?}");
    assert!(waited < Duration::from_secs(30), "waited {waited:?}");
    assert_eq!(metrics.dropped_for(DropReason::Shutdown), 2, "{metrics:#?}");
    assert_accounted(&metrics);
}

/// A sink that is slow but alive when the shutdown deadline passes: the writer itself
/// stops at the deadline, counts what is still queued as `shutdown`, and leaves nothing
/// in flight. (The hung-sink test covers the guard's side; `cargo mutants` showed the
/// writer's side was untested.)
#[test]
fn the_writer_counts_what_a_slow_sink_leaves_at_the_deadline() {
    struct Slow;
    impl Sink for Slow {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            // Slowness is the behaviour under test: 20 ms per write.
            std::thread::sleep(Duration::from_millis(20));
            Ok(buf.len())
        }
    }
    within(LIMIT, "slow sink at the deadline", || {
        let (writer, guard) = NonBlockingBuilder::default()
            .batch_bytes(1024)
            .overflow(Overflow::Block)
            .shutdown_timeout(Duration::from_millis(200))
            .mode(Mode::Async)
            .build(Slow)
            .unwrap();
        // 100 batches of 1 KiB at 20 ms each: 2 s of writing, 10 times the deadline.
        for i in 0..1000 {
            writer.submit(Level::Info, format!("{i:099}\n").as_bytes());
        }
        let m = guard.shutdown();
        assert!(m.is_accounted(), "{m:#?}");
        assert_eq!(m.in_flight_records, 0, "nothing left uncounted: {m:#?}");
        assert!(
            m.dropped_for(DropReason::Shutdown) > 0,
            "the deadline cut the queue off: {m:#?}"
        );
        assert!(m.written_records > 0, "{m:#?}");
        assert_eq!(
            m.written_records + m.dropped_for(DropReason::Shutdown),
            1000,
            "{m:#?}"
        );
    });
}
