//! One test per overflow policy, plus flush level and the shutdown deadline. The writer
//! is held inside a sink write with a gate, so the queue fills deterministically.

use crate::support;

use std::io::Write;
use std::time::{Duration, Instant};

use loglag::{DropReason, Level, NonBlocking, NonBlockingBuilder, Overflow, WorkerGuard};
use support::*;

const CAPACITY: usize = 4096;

fn record(i: usize) -> Vec<u8> {
    format!("record {i:05} {}\n", "x".repeat(82)).into_bytes() // 96 bytes
}

/// Records of `record`'s size that fit in the budget: 32 bytes of ring header each.
const FITS: usize = CAPACITY / (96 + 32);

fn line(i: usize) -> String {
    String::from_utf8(record(i)).unwrap().trim_end().to_owned()
}

/// A pipeline whose writer is parked inside its first write until `gate` opens.
fn stalled(
    overflow: Overflow,
) -> (
    NonBlocking,
    WorkerGuard,
    Gate,
    std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
) {
    let gate = Gate::closed();
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (sink, entered) = sink.gated(gate.clone());
    let (writer, guard) = NonBlockingBuilder::default()
        .capacity_bytes(CAPACITY)
        .overflow(overflow)
        .flush_interval(Duration::from_secs(3600))
        .mode(loglag::Mode::Async)
        .build(sink)
        .unwrap();
    // An ERROR wakes the writer at once; it takes this record and blocks in the sink.
    writer.submit(Level::Error, b"first\n");
    entered.recv().unwrap();
    (writer, guard, gate, out)
}

fn finish(writer: &NonBlocking, guard: WorkerGuard, gate: Gate) -> loglag::Metrics {
    gate.open();
    guard.flush(Duration::from_secs(30)).expect("flush");
    let m = writer.metrics();
    assert_accounted(&m);
    assert_eq!(m.in_flight_records, 0);
    drop(guard);
    m
}

#[test]
fn drop_newest_keeps_the_first_records_and_reports_the_rest() {
    within(
        std::time::Duration::from_secs(300),
        "drop_newest_keeps_the_first_records_and_reports_the_rest",
        || {
            let (writer, guard, gate, out) = stalled(Overflow::DropNewest);
            for i in 0..100 {
                writer.submit(Level::Info, &record(i));
            }
            let m = finish(&writer, guard, gate);
            let fits = FITS;
            assert_eq!(m.dropped_for(DropReason::QueueFull), 100 - fits as u64);
            assert_eq!(
                m.dropped_at(Level::Info),
                m.dropped_for(DropReason::QueueFull)
            );
            let out = out.lock().unwrap();
            let lines = record_lines(&out);
            assert_eq!(lines.len(), 1 + fits);
            assert_eq!(lines[1], line(0));
            assert_eq!(lines[fits], line(fits - 1));
            assert_eq!(reported_drops(&out), m.dropped_records(), "in-band report");
        },
    )
}

#[test]
fn drop_oldest_keeps_the_last_records() {
    within(
        std::time::Duration::from_secs(300),
        "drop_oldest_keeps_the_last_records",
        || {
            let (writer, guard, gate, out) = stalled(Overflow::DropOldest);
            for i in 0..100 {
                writer.submit(Level::Info, &record(i));
            }
            let m = finish(&writer, guard, gate);
            let fits = FITS;
            assert_eq!(m.dropped_for(DropReason::QueueFull), 100 - fits as u64);
            let out = out.lock().unwrap();
            let lines = record_lines(&out);
            assert_eq!(lines.last().unwrap(), &line(99));
            assert_eq!(lines[1], line(100 - fits));
            assert_eq!(reported_drops(&out), m.dropped_records());
        },
    )
}

/// A flush that runs out of time says what is still in flight, and returns the same
/// figures as data.
#[test]
fn a_flush_that_times_out_says_what_is_still_in_flight() {
    within(
        std::time::Duration::from_secs(300),
        "a_flush_that_times_out_says_what_is_still_in_flight",
        || {
            let (writer, guard, gate, _out) = stalled(Overflow::DropNewest);
            writer.submit(Level::Info, &record(1));
            writer.submit(Level::Info, &record(2));
            let e = guard.flush(Duration::ZERO).unwrap_err();
            assert_eq!(
                e.metrics.in_flight_records, 3,
                "the stuck write and two queued"
            );
            let text = e.to_string();
            assert!(
                text.starts_with("log flush timed out after")
                    && text.contains(&format!(
                        "with 3 records ({} bytes) still in flight",
                        e.metrics.in_flight_bytes
                    )),
                "{text}"
            );
            finish(&writer, guard, gate);
        },
    )
}

/// However long `max_record_bytes` is set, a record is cut to fit half the budget (less
/// its header), so that any policy can always make room for it.
#[test]
fn a_record_longer_than_half_a_small_budget_is_truncated_to_fit() {
    within(
        std::time::Duration::from_secs(300),
        "a_record_longer_than_half_a_small_budget_is_truncated_to_fit",
        || {
            let (sink, out) = TestSink::new(Behaviour::Fast);
            let (writer, guard) = NonBlockingBuilder::default()
                .capacity_bytes(4096)
                .max_record_bytes(1 << 20)
                .overflow(Overflow::Block)
                .mode(loglag::Mode::Async)
                .build(sink)
                .unwrap();
            let mut big = vec![b'x'; 3000];
            big.push(b'\n');
            writer.submit(Level::Info, &big);
            let m = guard.shutdown();
            assert_eq!((m.truncated, m.written_records), (1, 1), "{m:?}");
            let written = out.lock().unwrap().len();
            assert!(written <= 4096 / 2 - 32, "{written} bytes");
            assert!(written > 1000, "{written} bytes");
        },
    )
}

/// TRACE shares DEBUG's limit (budget − 2 × reserve): the same offer into a stalled
/// pipeline keeps exactly as many of each.
#[test]
fn shed_by_level_sheds_trace_where_it_sheds_debug() {
    within(
        std::time::Duration::from_secs(300),
        "shed_by_level_sheds_trace_where_it_sheds_debug",
        || {
            let kept = |level: Level| {
                let (writer, guard, gate, _out) = stalled(Overflow::ShedByLevel);
                for i in 0..100 {
                    writer.submit(level, &record(i));
                }
                let dropped = writer.metrics().dropped_at(level);
                finish(&writer, guard, gate);
                100 - dropped
            };
            let (trace, debug) = (kept(Level::Trace), kept(Level::Debug));
            assert!(debug > 0 && debug < 100, "{debug}");
            assert_eq!(trace, debug);
        },
    )
}

#[test]
fn shed_by_level_keeps_warn_and_error_while_shedding_debug_then_info() {
    within(
        std::time::Duration::from_secs(300),
        "shed_by_level_keeps_warn_and_error_while_shedding_debug_then_info",
        || {
            let (writer, guard, gate, out) = stalled(Overflow::ShedByLevel);
            // DEBUG fills up to budget − 2 × reserve, then is shed...
            for i in 0..100 {
                writer.submit(Level::Debug, &record(i));
            }
            let debug_dropped = writer.metrics().dropped_at(Level::Debug);
            assert!(debug_dropped > 0);
            // ...while INFO still has room...
            writer.submit(Level::Info, &record(1000));
            assert_eq!(
                writer.metrics().dropped_at(Level::Info),
                0,
                "INFO is shed after DEBUG"
            );
            for i in 0..100 {
                writer.submit(Level::Info, &record(2000 + i));
            }
            assert!(writer.metrics().dropped_at(Level::Info) > 0);
            // ...and WARN/ERROR use the reserve (512 bytes: four records).
            for i in 0..2 {
                writer.submit(Level::Warn, &record(3000 + i));
                writer.submit(Level::Error, &record(4000 + i));
            }
            let m = finish(&writer, guard, gate);
            assert_eq!(m.dropped_at(Level::Warn) + m.dropped_at(Level::Error), 0);
            let out = out.lock().unwrap();
            let text = String::from_utf8_lossy(&out);
            for i in 0..2 {
                assert!(text.contains(&format!("record {:05}", 3000 + i)));
                assert!(text.contains(&format!("record {:05}", 4000 + i)));
            }
        },
    )
}

/// Under a sustained flood of every level at once (a writer that cannot keep up), the
/// levels are shed in order: TRACE and DEBUG first (at budget − 2 × reserve), then INFO
/// (budget − reserve), and WARN and ERROR last, when the whole budget is full. The
/// reserve keeps WARN and ERROR only while they alone come slower than the writer
/// drains; once they fill it, they are dropped too. (13,679 of 100,000 WARN records
/// dropped under a flood read as a broken promise; it is this last step.)
#[test]
fn shed_by_level_sheds_in_order_and_warn_is_shed_only_when_the_reserve_is_full() {
    within(
        std::time::Duration::from_secs(300),
        "shed_by_level_sheds_in_order",
        || {
            let (writer, guard, gate, _out) = stalled(Overflow::ShedByLevel);
            // The round in which each level first lost a record.
            let mut first_drop: [Option<usize>; 5] = [None; 5];
            let mut round = 0;
            while first_drop.iter().any(Option::is_none) {
                for level in Level::ALL {
                    writer.submit(level, &record(round));
                    let m = writer.metrics();
                    if first_drop[level as usize].is_none() && m.dropped_at(level) > 0 {
                        first_drop[level as usize] = Some(round);
                    }
                }
                round += 1;
                assert!(
                    round < 10_000,
                    "every level is shed once the budget is full"
                );
            }
            let m = finish(&writer, guard, gate);
            let at = |level: Level| first_drop[level as usize].unwrap();
            assert_eq!(at(Level::Trace), at(Level::Debug), "{first_drop:?}");
            assert!(at(Level::Debug) < at(Level::Info), "{first_drop:?}");
            assert!(at(Level::Info) < at(Level::Warn), "{first_drop:?}");
            assert!(
                at(Level::Error).abs_diff(at(Level::Warn)) <= 1,
                "WARN and ERROR share the whole budget: {first_drop:?}"
            );
            assert_eq!(
                m.dropped_records(),
                m.dropped_for(loglag::DropReason::QueueFull)
            );
            eprintln!("first drop by round (TRACE..ERROR): {first_drop:?}");
        },
    )
}

#[test]
fn block_waits_for_room_and_loses_nothing() {
    within(
        std::time::Duration::from_secs(300),
        "block_waits_for_room_and_loses_nothing",
        || {
            let (writer, guard, gate, out) = stalled(Overflow::Block);
            let producer = {
                let mut writer = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..200 {
                        writer.write_all(&record(i)).unwrap();
                    }
                })
            };
            // The producer must end up waiting: the budget holds 32 records.
            while writer.metrics().queue_full_events == 0 {
                std::thread::yield_now();
            }
            assert!(!producer.is_finished());
            gate.open();
            producer.join().unwrap();
            let m = finish(&writer, guard, Gate::closed_then_open());
            assert_eq!(m.dropped_records(), 0);
            assert_eq!(m.written_records, 201);
            assert_eq!(record_lines(&out.lock().unwrap()).len(), 201);
        },
    )
}

#[test]
fn block_for_gives_up_after_its_bound_and_counts_the_drop() {
    within(
        std::time::Duration::from_secs(300),
        "block_for_gives_up_after_its_bound_and_counts_the_drop",
        || {
            let (writer, guard, gate, _out) =
                stalled(Overflow::BlockFor(Duration::from_millis(30)));
            let fits = FITS;
            for i in 0..fits {
                writer.submit(Level::Info, &record(i));
            }
            assert_eq!(writer.metrics().dropped_records(), 0);
            let started = Instant::now();
            writer.submit(Level::Info, &record(999));
            assert!(
                started.elapsed() >= Duration::from_millis(30),
                "waited its bound"
            );
            assert_eq!(writer.metrics().dropped_for(DropReason::QueueFull), 1);
            finish(&writer, guard, gate);
        },
    )
}

#[test]
fn an_error_flushes_the_context_before_it_without_waiting_for_the_interval() {
    within(
        std::time::Duration::from_secs(300),
        "an_error_flushes_the_context_before_it_without_waiting_for_the_interval",
        || {
            let (sink, _out) = TestSink::new(Behaviour::Fast);
            let (sink, wrote) = sink.observed();
            let (writer, _guard) = NonBlockingBuilder::default()
                .flush_interval(Duration::from_secs(3600))
                .mode(loglag::Mode::Async)
                .build(sink)
                .unwrap();
            writer.submit(Level::Info, b"context 1\n");
            writer.submit(Level::Warn, b"context 2\n");
            writer.submit(Level::Error, b"the error\n");
            // Nothing may be written before the ERROR (no interval, no full batch): the first
            // write is the context and the error together. A writer that wrote each record at
            // once would deliver "context 1" alone first.
            let first = wrote
                .recv_timeout(Duration::from_secs(30))
                .expect("the ERROR triggered a write");
            assert_eq!(
                String::from_utf8_lossy(&first),
                "context 1\ncontext 2\nthe error\n"
            );
        },
    )
}

#[test]
fn shutdown_deadline_counts_what_it_cuts_off() {
    within(
        std::time::Duration::from_secs(300),
        "shutdown_deadline_counts_what_it_cuts_off",
        || {
            let gate = Gate::closed();
            let (sink, _out) = TestSink::new(Behaviour::Fast);
            let (sink, entered) = sink.gated(gate.clone());
            let (writer, guard) = NonBlockingBuilder::default()
                .shutdown_timeout(Duration::from_millis(50))
                .mode(loglag::Mode::Async)
                .build(sink)
                .unwrap();
            writer.submit(Level::Error, b"stuck in the sink\n");
            entered.recv().unwrap();
            for i in 0..10 {
                writer.submit(Level::Info, &record(i));
            }
            let m = guard.shutdown();
            assert_eq!(
                m.dropped_for(DropReason::Shutdown),
                11,
                "the record in the stuck write and the 10 queued ones"
            );
            assert_eq!(m.written_records, 0);
            assert_accounted(&m);
            assert_eq!(m.in_flight_records, 0);
            writer.submit(Level::Info, b"after shutdown\n");
            let m = writer.metrics();
            assert_eq!(
                m.dropped_for(DropReason::Shutdown),
                12,
                "records after shutdown are counted too"
            );
            assert_accounted(&m);
            gate.open();
        },
    )
}

#[test]
fn oversized_records_are_truncated_with_a_marker_and_counted() {
    within(
        std::time::Duration::from_secs(300),
        "oversized_records_are_truncated_with_a_marker_and_counted",
        || {
            let (sink, out) = TestSink::new(Behaviour::Fast);
            let (writer, guard) = NonBlockingBuilder::default()
                .max_record_bytes(1000)
                .mode(loglag::Mode::Async)
                .build(sink)
                .unwrap();
            let mut big = "é".repeat(10_000).into_bytes();
            big.push(b'\n');
            writer.submit(Level::Info, &big);
            let m = guard.shutdown();
            assert_eq!(m.truncated, 1);
            assert_eq!(m.written_records, 1);
            let out = out.lock().unwrap();
            let line = String::from_utf8(out.clone()).expect("cut on a character boundary");
            assert!(line.len() <= 1000);
            assert!(
                line.ends_with(&format!(
                    "…[truncated {} bytes]\n",
                    big.len() - line.find('…').unwrap()
                )),
                "{line}"
            );
        },
    )
}

#[test]
fn the_interval_fires_under_constant_load_below_the_batch_size() {
    within(
        std::time::Duration::from_secs(300),
        "the_interval_fires_under_constant_load_below_the_batch_size",
        || {
            let (sink, _out) = TestSink::new(Behaviour::Fast);
            let (sink, wrote) = sink.observed();
            let (writer, guard) = NonBlockingBuilder::default()
                .batch_bytes(1 << 30) // never reached: only the interval can trigger a write
                // A budget the producer cannot fill before three intervals pass, so no queue-full
                // wake-up can stand in for the interval (asserted below).
                .capacity_bytes(1 << 30)
                .max_record_bytes(1 << 10)
                .flush_interval(Duration::from_millis(5))
                .mode(loglag::Mode::Async)
                .build(sink)
                .unwrap();
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let producer = {
                let writer = writer.clone();
                let stop = stop.clone();
                std::thread::spawn(move || {
                    let mut i = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        writer.submit(Level::Info, &record(i % 1000));
                        i += 1;
                        if i % 64 == 0 {
                            std::thread::yield_now();
                        }
                    }
                })
            };
            // Several writes arrive while the producer never pauses.
            for _ in 0..3 {
                wrote
                    .recv_timeout(Duration::from_secs(30))
                    .expect("the interval wrote a batch under load");
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            producer.join().unwrap();
            let m = guard.shutdown();
            assert_accounted(&m);
            assert!(m.write_syscalls >= 3);
            assert_eq!(m.queue_full_events, 0, "only the interval woke the writer");
        },
    )
}
