//! Each logging thread's own ring (`lanes.rs`): every record arrives once, each
//! thread's records stay in order across spills into the shared ring, records of
//! different threads come out in the order they were logged, a flush waits for every
//! thread's ring, the byte budget holds, and exited threads' rings are reused.
//! Synchronised with channels and barriers only.

use crate::support;

use std::collections::HashMap;
use std::sync::{mpsc, Arc, Barrier};
use std::time::Duration;

use loglag::{Level, Mode, NonBlockingBuilder, Overflow};
use support::{assert_accounted, record_lines, within, Behaviour, Gate, TestSink};

const LIMIT: Duration = Duration::from_secs(120);

/// `thread=T seq=N` lines padded to about 100 bytes.
fn record(thread: usize, seq: usize) -> Vec<u8> {
    format!("thread={thread} seq={seq} {}\n", "x".repeat(80)).into_bytes()
}

fn parse(line: &str) -> (usize, usize) {
    let mut words = line.split_whitespace();
    let t = words
        .next()
        .and_then(|w| w.strip_prefix("thread="))
        .expect(line);
    let s = words
        .next()
        .and_then(|w| w.strip_prefix("seq="))
        .expect(line);
    (t.parse().expect(line), s.parse().expect(line))
}

/// `threads` threads log `per_thread` records each, released together by a barrier,
/// into a small budget so their rings fill and spill into the shared ring. Every record
/// arrives exactly once and each thread's come out in the order it logged them.
fn every_record_once_in_each_threads_order(threads: usize, per_thread: usize) {
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(256 << 10)
        .thread_ring_bytes(8 << 10)
        .overflow(Overflow::Block)
        .build(sink)
        .unwrap();
    support::flood(&writer, threads, per_thread, record);
    drop(guard);
    let m = writer.metrics();
    assert_accounted(&m);
    assert_eq!(m.written_records, (threads * per_thread) as u64, "{m:#?}");
    assert_eq!(m.dropped_records(), 0);
    let out = out.lock().unwrap().clone();
    let mut next: HashMap<usize, usize> = HashMap::new();
    for line in record_lines(&out) {
        let (t, seq) = parse(&line);
        let expected = next.entry(t).or_insert(0);
        assert_eq!(seq, *expected, "thread {t}: out of order or repeated");
        *expected += 1;
    }
    assert_eq!(next.len(), threads);
    assert!(next.values().all(|&n| n == per_thread), "{next:?}");
}

#[test]
fn four_threads_with_rings_of_their_own_keep_their_order_and_lose_nothing() {
    within(LIMIT, "4 threads", || {
        every_record_once_in_each_threads_order(4, 20_000)
    });
}

/// 256 KiB / 4 / 8 KiB = 8 rings: the other 8 threads share the shared ring.
#[test]
fn threads_beyond_the_rings_share_the_shared_ring_and_keep_their_order() {
    within(LIMIT, "16 threads", || {
        every_record_once_in_each_threads_order(16, 5_000)
    });
}

/// Two threads take turns, handing over through a channel: each record was logged
/// after the other thread's previous one, so the log alternates exactly.
#[test]
fn records_of_two_threads_come_out_in_the_order_they_were_logged() {
    within(LIMIT, "ping-pong", || {
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(1 << 20)
            .overflow(Overflow::Block)
            .build(sink)
            .unwrap();
        const TURNS: usize = 2_000;
        let (to_b, from_a) = mpsc::channel::<()>();
        let (to_a, from_b) = mpsc::channel::<()>();
        let b = {
            let writer = writer.clone();
            std::thread::spawn(move || {
                for seq in 0..TURNS {
                    from_a.recv().unwrap();
                    writer.submit(Level::Info, &record(1, seq));
                    to_a.send(()).unwrap();
                }
            })
        };
        for seq in 0..TURNS {
            writer.submit(Level::Info, &record(0, seq));
            to_b.send(()).unwrap();
            from_b.recv().unwrap();
        }
        b.join().unwrap();
        drop(guard);
        let text = format!("{writer:?}");
        assert!(
            text.contains("thread_rings: 2"),
            "both threads had a ring: {text}"
        );
        let lines = record_lines(&out.lock().unwrap());
        assert_eq!(lines.len(), 2 * TURNS);
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(parse(line), (i % 2, i / 2), "line {i}: {line}");
        }
    });
}

/// A flush returns only when every record logged before it, in any thread's ring, is
/// written.
#[test]
fn a_flush_waits_for_the_records_in_every_threads_ring() {
    within(LIMIT, "flush", || {
        let (sink, out) = TestSink::new(Behaviour::Slow);
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(1 << 20)
            .overflow(Overflow::Block)
            .flush_interval(Duration::from_secs(3600))
            .build(sink)
            .unwrap();
        for round in 1..=20usize {
            support::flood(&writer, 3, round * 10, record);
            guard.flush(Duration::from_secs(60)).unwrap();
            let expected: usize = (1..=round).map(|r| 3 * r * 10).sum();
            let written = record_lines(&out.lock().unwrap()).len();
            assert_eq!(written, expected, "round {round}: flush returned early");
        }
    });
}

/// While the writer is held, one thread alone fills the whole budget: its own ring,
/// then the shared ring.
#[test]
fn one_thread_alone_can_fill_the_whole_budget() {
    within(LIMIT, "budget, one thread", || {
        const BUDGET: usize = 256 << 10;
        let gate = Gate::closed();
        let (sink, _out) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(BUDGET)
            .thread_ring_bytes(8 << 10)
            .overflow(Overflow::DropNewest)
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"hold the writer\n");
        entered.recv().unwrap();
        let mut sent = 0;
        while writer.metrics().dropped_records() == 0 {
            writer.submit(Level::Info, &record(0, sent));
            sent += 1;
        }
        let queued = writer.metrics().in_flight_bytes;
        assert!(
            queued <= BUDGET as u64 + 16 && queued >= BUDGET as u64 * 95 / 100,
            "one thread queued {queued} of {BUDGET} bytes"
        );
        gate.open();
        drop(guard);
        assert_accounted(&writer.metrics());
    });
}

/// Eight threads, each with a ring of its own (256 KiB / 4 / 8 KiB = 8 rings), fill
/// their rings and the shared ring at once while the writer is held: the bytes queued
/// never pass the budget, and everything is accounted for once it is released.
#[test]
fn the_byte_budget_holds_while_every_thread_ring_fills() {
    within(LIMIT, "budget, eight threads", || {
        const BUDGET: usize = 256 << 10;
        let gate = Gate::closed();
        let (sink, _out) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(BUDGET)
            .thread_ring_bytes(8 << 10)
            .overflow(Overflow::DropNewest)
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"hold the writer\n");
        entered.recv().unwrap();
        // Each thread logs once (taking a ring while the budget is empty), then all
        // fill at once.
        let claimed = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (1..=7)
            .map(|t| {
                let (writer, claimed) = (writer.clone(), claimed.clone());
                std::thread::spawn(move || {
                    writer.submit(Level::Info, &record(t, 0));
                    claimed.wait();
                    for seq in 1..2_000 {
                        writer.submit(Level::Info, &record(t, seq));
                        let queued = writer.metrics().in_flight_bytes;
                        assert!(queued <= BUDGET as u64 + 16, "{queued} bytes queued");
                    }
                })
            })
            .collect();
        claimed.wait();
        let debug = format!("{writer:?}");
        assert!(
            debug.contains("thread_rings: 8"),
            "every thread has a ring: {debug}"
        );
        for seq in 1..2_000 {
            writer.submit(Level::Info, &record(0, seq));
        }
        for h in handles {
            h.join().unwrap();
        }
        // In flight: the rings, and the batch the held writer has ("hold the writer").
        const HELD: u64 = 16;
        let m = writer.metrics();
        assert!(m.in_flight_bytes <= BUDGET as u64 + HELD, "{m:#?}");
        assert!(
            m.in_flight_bytes >= BUDGET as u64 * 90 / 100,
            "the budget filled: {m:#?}"
        );
        assert!(m.dropped_records() > 0);
        gate.open();
        drop(guard);
        let m = writer.metrics();
        assert_accounted(&m);
        assert_eq!(m.in_flight_records, 0);
    });
}

/// Threads that log once and exit, one after another: each hands its ring to the
/// next, so a thousand threads leave one ring, not a thousand.
#[test]
fn an_exited_threads_ring_goes_to_the_next_thread() {
    within(LIMIT, "reuse", || {
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(1 << 20)
            .overflow(Overflow::Block)
            .build(sink)
            .unwrap();
        for t in 0..1_000 {
            let writer = writer.clone();
            std::thread::spawn(move || writer.submit(Level::Info, &record(t, 0)))
                .join()
                .unwrap();
        }
        let text = format!("{writer:?}");
        assert!(text.contains("thread_rings: 1,"), "{text}");
        drop(guard);
        assert_eq!(record_lines(&out.lock().unwrap()).len(), 1_000);
    });
}

/// `DropOldest` with a thread ring and the shared ring both full keeps the newest
/// records, in order: what is written is one unbroken run ending at the last record.
#[test]
fn drop_oldest_across_a_thread_ring_and_the_shared_ring_keeps_the_newest_in_order() {
    within(LIMIT, "drop oldest", || {
        let gate = Gate::closed();
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .capacity_bytes(128 << 10)
            .thread_ring_bytes(8 << 10)
            .overflow(Overflow::DropOldest)
            .build(sink)
            .unwrap();
        writer.submit(Level::Error, b"hold the writer\n");
        entered.recv().unwrap();
        const SENT: usize = 5_000;
        for seq in 0..SENT {
            writer.submit(Level::Info, &record(0, seq));
        }
        gate.open();
        drop(guard);
        let m = writer.metrics();
        assert_accounted(&m);
        assert!(m.dropped_records() > 0, "the budget filled");
        let seqs: Vec<usize> = record_lines(&out.lock().unwrap())
            .iter()
            .filter(|l| l.starts_with("thread="))
            .map(|l| parse(l).1)
            .collect();
        assert_eq!(seqs.last(), Some(&(SENT - 1)));
        let first = seqs[0];
        if let Some(gap) = seqs.windows(2).position(|w| w[1] != w[0] + 1) {
            panic!("not an unbroken run: {} then {}", seqs[gap], seqs[gap + 1]);
        }
        assert_eq!(m.dropped_records() as usize, first);
    });
}

/// `DropOldest` under a small budget and a slow sink: threads evict from their own
/// ring or the shared ring and spill between them all the time. Whatever is dropped,
/// each thread's records that are written come out in the order it logged them
/// (`S14828 after S14829` was seen in 2 of 6 runs with 8 threads).
#[test]
fn drop_oldest_keeps_each_threads_order_across_its_ring_and_the_shared_ring() {
    within(LIMIT, "drop-oldest order", || {
        const THREADS: usize = 8;
        const PER_THREAD: usize = 20_000;
        for _run in 0..3 {
            let (sink, out) = TestSink::new(Behaviour::Slow);
            let (writer, guard) = NonBlockingBuilder::default()
                .mode(Mode::Async)
                .capacity_bytes(64 << 10)
                .overflow(Overflow::DropOldest)
                .build(sink)
                .unwrap();
            support::flood(&writer, THREADS, PER_THREAD, record);
            let m = guard.shutdown();
            assert_accounted(&m);
            let out = out.lock().unwrap().clone();
            let mut last: HashMap<usize, usize> = HashMap::new();
            let mut written = 0u64;
            for line in record_lines(&out) {
                if line.contains("loglag: dropped") {
                    continue;
                }
                let (t, seq) = parse(&line);
                if let Some(&before) = last.get(&t) {
                    assert!(
                        seq > before,
                        "thread {t}: seq {seq} written after seq {before}"
                    );
                }
                last.insert(t, seq);
                written += 1;
            }
            assert_eq!(written, m.written_records, "{m:#?}");
        }
    });
}
