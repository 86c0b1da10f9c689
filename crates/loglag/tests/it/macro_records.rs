//! The macros' records through a thread's own ring: records of every size up to three
//! times the ring's room (spilling to the shared ring) arrive whole and in order; a
//! value whose `Display` logs while its record is being captured leaves both records
//! whole; a 16 KiB field arrives byte for byte.

use crate::support;

use std::sync::{Arc, Mutex};

use loglag::{Format, Level, Mode, NonBlockingBuilder};
use support::{macros_lock as global_lock, Behaviour, TestSink};

fn pipeline(thread_ring_bytes: usize) -> (Arc<Mutex<Vec<u8>>>, loglag::WorkerGuard) {
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(4 << 20)
        .overflow(loglag::Overflow::Block)
        .thread_ring_bytes(thread_ring_bytes)
        .build(sink)
        .unwrap();
    loglag::set_global(&writer, Format::Json, Level::Info);
    (out, guard)
}

fn json_lines(out: &Arc<Mutex<Vec<u8>>>) -> Vec<serde_json::Value> {
    String::from_utf8(out.lock().unwrap().clone())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The global pipeline (64 KiB, `policy`) into a sink that holds the writer in its
/// first write, a line of its own, until `gate` opens: everything logged meanwhile
/// stays queued or is refused.
fn held_global_pipeline(
    policy: loglag::Overflow,
) -> (
    loglag::NonBlocking,
    loglag::WorkerGuard,
    support::Gate,
    Arc<Mutex<Vec<u8>>>,
) {
    use std::io::Write as _;
    let gate = support::Gate::closed();
    let (sink, out) = TestSink::new(Behaviour::Fast);
    let (sink, entered) = sink.gated(gate.clone());
    let (mut writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .capacity_bytes(64 << 10)
        .overflow(policy)
        .build(sink)
        .unwrap();
    loglag::set_global(&writer, Format::Json, Level::Info);
    writer.write_all(b"{\"first\":true}\n").unwrap();
    entered.recv().unwrap();
    (writer, guard, gate, out)
}

/// The drops the in-band reports announce, the reports, and the other lines.
fn announced_drops(
    lines: Vec<serde_json::Value>,
) -> (u64, Vec<serde_json::Value>, Vec<serde_json::Value>) {
    let (reports, lines): (Vec<_>, Vec<_>) =
        lines.into_iter().partition(|l| l["target"] == "loglag");
    let announced = reports
        .iter()
        .map(|r| r["fields"]["dropped"].as_u64().unwrap())
        .sum();
    (announced, reports, lines)
}

/// Payloads of every size from empty to three times an 8 KiB ring's room, so records
/// land at every offset before the ring's end and many outgrow the room they began in.
#[test]
fn records_of_every_size_arrive_whole_and_in_order() {
    let _lock = global_lock();
    let (out, guard) = pipeline(8 << 10);
    let payload = |n: usize| -> String {
        (0..(n * 37) % 3000)
            .map(|i| (b'a' + (i % 26) as u8) as char)
            .collect()
    };
    for n in 0..20_000usize {
        let p = payload(n);
        loglag::info!(n, size = p.len() as u64, payload = p.as_str(), "sized");
    }
    let m = guard.shutdown();
    assert_eq!(m.written_records, 20_000, "{m:?}");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 20_000);
    for (n, line) in lines.iter().enumerate() {
        let f = &line["fields"];
        assert_eq!(f["n"], n as u64, "{line}");
        assert_eq!(f["payload"].as_str().unwrap(), payload(n), "record {n}");
        assert_eq!(f["message"], "sized");
    }
}

struct Loud(u64);

impl std::fmt::Display for Loud {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Logs while the outer record is being captured, on the same thread.
        loglag::info!(inner = self.0, "from display");
        write!(f, "loud{}", self.0)
    }
}

#[test]
fn a_display_that_logs_while_its_record_is_captured_leaves_both_whole() {
    let _lock = global_lock();
    let (out, guard) = pipeline(64 << 10);
    for i in 0..2_000u64 {
        loglag::info!(i, v = %Loud(i), "outer");
    }
    let m = guard.shutdown();
    assert_eq!(m.written_records, 4_000, "{m:?}");
    let lines = json_lines(&out);
    let mut outer = Vec::new();
    let mut inner = Vec::new();
    for line in &lines {
        let f = &line["fields"];
        match f["message"].as_str().unwrap() {
            "outer" => {
                let i = f["i"].as_u64().unwrap();
                assert_eq!(f["v"], format!("loud{i}"), "{line}");
                outer.push(i);
            }
            "from display" => inner.push(f["inner"].as_u64().unwrap()),
            other => panic!("unexpected message {other:?}: {line}"),
        }
    }
    // Each thread's records keep their order: the inner one was logged first.
    let expected: Vec<u64> = (0..2_000).collect();
    assert_eq!(outer, expected);
    assert_eq!(inner, expected);
}

#[test]
fn a_16_kib_field_arrives_byte_for_byte() {
    let _lock = global_lock();
    let (out, guard) = pipeline(1 << 20);
    let big: String = (0..16 << 10)
        .map(|i| (b'A' + (i % 23) as u8) as char)
        .collect();
    for i in 0..200u64 {
        loglag::info!(i, payload = big.as_str(), "big");
    }
    assert_eq!(guard.shutdown().written_records, 200);
    for (i, line) in json_lines(&out).iter().enumerate() {
        assert_eq!(line["fields"]["i"], i as u64);
        assert_eq!(line["fields"]["payload"].as_str().unwrap(), big);
    }
}

/// The resolution of `CLOCK_MONOTONIC_COARSE` (a scheduler tick), where there is one.
fn coarse_tick() -> std::time::Duration {
    #[cfg(target_os = "linux")]
    {
        let mut res = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `res` is a valid out-pointer.
        if unsafe { libc::clock_getres(libc::CLOCK_MONOTONIC_COARSE, &mut res) } == 0 {
            return std::time::Duration::new(res.tv_sec as u64, res.tv_nsec as u32);
        }
    }
    std::time::Duration::from_millis(16)
}

/// `oldest_queued_age` is the age of the oldest queued record, whichever path logged
/// it: a macro's record carries the caller's own clock reading (TSC ticks where there
/// is one), a written line a stamp of its own. Either way the age lies between the
/// time since the record was logged and the time since just before it was, as an
/// `Instant` measures them (with 1% and 1 ms for the tick rate, and a tick of the
/// coarse clock where stamps come from it): a unit mixed up
/// (ticks read as nanoseconds) or a stamp taken from the wrong clock falls outside.
#[test]
fn the_oldest_queued_age_is_measured_from_when_the_record_was_logged() {
    use std::io::Write as _;
    use std::time::{Duration, Instant};
    let _lock = global_lock();
    for path in ["macro", "write"] {
        let gate = support::Gate::closed();
        let (sink, _out) = TestSink::new(Behaviour::Fast);
        let (sink, entered) = sink.gated(gate.clone());
        let (mut writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .build(sink)
            .unwrap();
        loglag::set_global(&writer, Format::Json, Level::Info);
        // The writer takes a first record and stays in the sink with it, so the
        // next one stays queued.
        writer.write_all(b"first\n").unwrap();
        entered.recv().unwrap();
        assert_eq!(writer.metrics().oldest_queued_age, None, "nothing queued");

        let before = Instant::now();
        match path {
            "macro" => loglag::info!(n = 1, "queued"),
            _ => writer.write_all(b"queued\n").unwrap(),
        }
        let logged = Instant::now();
        // Time passes, so that a wrong unit shows; the bounds below hold however
        // long this takes.
        std::thread::sleep(Duration::from_millis(60));
        let read_from = Instant::now();
        let age = writer
            .metrics()
            .oldest_queued_age
            .expect("a record is queued");
        let read_to = Instant::now();
        let (least, most) = (read_from - logged, read_to - before);
        // Without an invariant TSC (aarch64, or under qemu) the stamps come from the
        // coarse monotonic clock: one of its ticks either way.
        let slack = 0.001 + coarse_tick().as_secs_f64();
        assert!(
            age.as_secs_f64() >= least.as_secs_f64() * 0.99 - slack
                && age.as_secs_f64() <= most.as_secs_f64() * 1.01 + slack,
            "{path}: age {age:?} outside [{least:?}, {most:?}] ± {slack}s"
        );
        gate.open();
        let m = guard.shutdown();
        assert_eq!(m.written_records, 2, "{path}");
    }
}

/// Plain macro records into a queue that fills (the writer held in its sink): under
/// the dropping policies each record no ring takes is counted once, as `queue_full`
/// at its level and as a full event, and nothing else is lost. Under `ShedByLevel`
/// a WARN record logged after INFO was refused still gets the reserve INFO may not
/// use, through the thread's ring and the shared one alike. Records of the thread
/// that were kept come out in the order they were logged, and the in-band reports
/// announce every drop.
#[test]
fn plain_records_refused_by_every_ring_are_counted_once_at_their_level() {
    let _lock = global_lock();
    for policy in [loglag::Overflow::ShedByLevel, loglag::Overflow::DropNewest] {
        let (writer, guard, gate, out) = held_global_pipeline(policy);

        // About 100 bytes each: 2,000 of them are three times the budget.
        let text = "x".repeat(40);
        for n in 0..2_000u64 {
            loglag::info!(n, text = text.as_str(), "filling");
        }
        let after_info = writer.metrics();
        let info_dropped = after_info.dropped_of(loglag::DropReason::QueueFull, Level::Info);
        assert!(
            info_dropped > 0,
            "{policy:?}: the queue never filled: {after_info:?}"
        );
        assert!(
            after_info.queue_full_events >= info_dropped,
            "{after_info:?}"
        );
        for n in 0..10u64 {
            loglag::warn!(n, text = text.as_str(), "after");
        }
        let warn_dropped = writer
            .metrics()
            .dropped_of(loglag::DropReason::QueueFull, Level::Warn);
        match policy {
            loglag::Overflow::ShedByLevel => {
                assert_eq!(warn_dropped, 0, "WARN has a reserve INFO may not fill")
            }
            _ => assert_eq!(warn_dropped, 10, "no reserve: the queue stays full"),
        }

        gate.open();
        let m = guard.shutdown();
        assert!(m.is_accounted(), "{m:?}");
        assert_eq!(m.accepted, 1 + 2_000 + 10, "{m:?}");
        assert_eq!(m.dropped_records(), info_dropped + warn_dropped, "{m:?}");
        assert_eq!(m.written_records, m.accepted - m.dropped_records(), "{m:?}");
        let lines = json_lines(&out);
        // The in-band reports announce every drop; the rest are the records.
        let (announced, reports, lines) = announced_drops(lines);
        assert_eq!(announced, m.dropped_records(), "{policy:?}: {reports:?}");
        assert_eq!(lines.len() as u64, m.written_records);
        let kept: Vec<u64> = lines
            .iter()
            .filter(|l| l["fields"]["message"] == "filling")
            .map(|l| l["fields"]["n"].as_u64().unwrap())
            .collect();
        assert_eq!(kept.len() as u64, 2_000 - info_dropped, "{policy:?}");
        assert!(
            kept.windows(2).all(|w| w[0] < w[1]),
            "{policy:?}: out of order"
        );
        let warned = lines.iter().filter(|l| l["level"] == "WARN").count() as u64;
        assert_eq!(warned, 10 - warn_dropped, "{policy:?}");
    }
}

/// The refusals a full queue counts on the logging threads' own counters (no shared
/// read-modify-write on the drop path) are part of every total: while the threads
/// live, after they have exited (their counters folded into the pipeline's), in the
/// in-band reports, and in the full events; from the macro's in-place path and from
/// the copying path (a formatted line) alike. Each thread's kept records stay in order.
#[test]
fn refusals_counted_on_exited_threads_are_kept_and_announced() {
    use std::io::Write as _;
    let _lock = global_lock();
    for policy in [loglag::Overflow::DropNewest, loglag::Overflow::ShedByLevel] {
        let (writer, guard, gate, out) = held_global_pipeline(policy);

        const THREADS: u64 = 4;
        const EACH: u64 = 2_000;
        // Threads 0 and 2 log through the macro (in place), 1 and 3 formatted lines
        // (the copying path).
        let log = |thread: u64, mut writer: loglag::NonBlocking| {
            let text = "x".repeat(40);
            for n in 0..EACH {
                if thread % 2 == 0 {
                    loglag::info!(thread, n, text = text.as_str(), "filling");
                } else {
                    let line = format!(
                        "{{\"fields\":{{\"thread\":{thread},\"n\":{n},\"text\":\"{text}\"}}}}\n"
                    );
                    writer.write_all(line.as_bytes()).unwrap();
                }
            }
        };
        // Joined (which waits for their thread-locals to be destroyed, unlike the end
        // of a scope): two threads have exited before the first look at the totals,
        // two after it, so the totals hold refusals of live and folded threads alike.
        let run = |threads: std::ops::Range<u64>| {
            let handles: Vec<_> = threads
                .map(|t| {
                    let writer = writer.clone();
                    std::thread::spawn(move || log(t, writer))
                })
                .collect();
            for handle in handles {
                handle.join().unwrap();
            }
        };
        run(0..2);
        let before = writer.metrics();
        let refused_before = before.dropped_of(loglag::DropReason::QueueFull, Level::Info);
        assert!(
            refused_before > 0,
            "{policy:?}: the queue never filled: {before:?}"
        );
        run(2..4);
        let during = writer.metrics();
        let refused = during.dropped_of(loglag::DropReason::QueueFull, Level::Info);
        assert!(refused > refused_before, "{policy:?}: {during:?}");
        assert_eq!(
            during.accepted,
            1 + THREADS * EACH,
            "{policy:?}: {during:?}"
        );
        assert!(
            during.queue_full_events >= refused,
            "{policy:?}: {during:?}"
        );
        assert!(during.is_accounted(), "{policy:?}: {during:?}");

        gate.open();
        let m = guard.shutdown();
        assert!(m.is_accounted(), "{policy:?}: {m:?}");
        assert_eq!(m.in_flight_records, 0, "{policy:?}: {m:?}");
        assert_eq!(
            m.dropped_records(),
            refused,
            "{policy:?}: only the refusals: {m:?}"
        );
        assert_eq!(
            m.written_records,
            1 + THREADS * EACH - refused,
            "{policy:?}: {m:?}"
        );
        let lines = json_lines(&out);
        let (announced, reports, lines) = announced_drops(lines);
        assert_eq!(announced, refused, "{policy:?}: {reports:?}");
        assert_eq!(lines.len() as u64, m.written_records);
        for thread in 0..THREADS {
            let kept: Vec<u64> = lines
                .iter()
                .filter(|l| l["fields"]["thread"] == thread)
                .map(|l| l["fields"]["n"].as_u64().unwrap())
                .collect();
            assert!(
                kept.windows(2).all(|w| w[0] < w[1]),
                "{policy:?}: thread {thread}: out of order"
            );
        }
    }
}
