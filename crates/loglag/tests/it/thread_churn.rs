// Linux only: resident memory is read from /proc/self/status.
#![cfg(target_os = "linux")]
//! Thread churn: a service that runs each task on a short-lived thread, each of which
//! logs, must not grow memory with the number of threads it ever had.

use crate::support;

use std::time::Duration;

use loglag::{Level, Mode, NonBlockingBuilder, Overflow};
use support::within;

/// Resident memory of this process, in KiB.
fn rss_kib() -> u64 {
    support::procfs::vm_rss_kib().expect("VmRSS in /proc/self/status")
}

/// Runs `threads` short-lived threads, `at_once` at a time, each logging one line and
/// one captured record (loglag's macro: a per-thread capture buffer to reclaim too).
fn churn(writer: &loglag::NonBlocking, threads: usize, at_once: usize) {
    for _ in 0..threads / at_once {
        let handles: Vec<_> = (0..at_once)
            .map(|_| {
                let w = writer.clone();
                std::thread::spawn(move || {
                    w.submit(Level::Info, b"one record from a short-lived thread\n");
                    loglag::info!(task = 7u64, "one captured record from a short-lived thread");
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
    }
}

/// The finding behind the bound: the growth the issue measured (5.7 MB per 100,000
/// threads, 8.4 MB at 150,000) was the queue's own pages becoming resident as the ring
/// was written through for the first time. It stops at `capacity_bytes` (8 MiB by
/// default), the budget the pipeline promises, whatever the number of threads. Here
/// the ring is written through once before measuring, so what remains is what threads
/// cost.
#[test]
fn two_hundred_thousand_short_lived_logging_threads_keep_memory_flat() {
    if crate::support::alone(
        module_path!(),
        "two_hundred_thousand_short_lived_logging_threads_keep_memory_flat",
        &[],
    ) {
        return;
    }
    within(Duration::from_secs(600), "thread churn", || {
        let capacity = 1 << 20;
        let (writer, guard) = NonBlockingBuilder::default()
            .mode(Mode::Async)
            .overflow(Overflow::Block)
            .capacity_bytes(capacity)
            .finish(std::io::sink());
        loglag::set_global(&writer, loglag::Format::Json, Level::Info);
        // Warm up: the allocator's arenas reach their working size, and every page of
        // the ring has been written once.
        let threads: usize = std::env::var("CHURN_THREADS")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(200_000);
        let warm_threads = threads.min(20_000);
        churn(&writer, warm_threads, 8);
        let record = [b'w'; 1000];
        for _ in 0..2 * capacity / record.len() {
            writer.submit(Level::Info, &record);
        }
        let warm = 2 * warm_threads + 2 * capacity / record.len();
        let before = rss_kib();
        churn(&writer, threads, 8);
        let after = rss_kib();
        let grown = after.saturating_sub(before);
        eprintln!(
            "RSS {before} KiB -> {after} KiB over {threads} threads ({grown} KiB); {} counter slots",
            writer.debug_counter_slots()
        );
        // The bound: 1 MiB for 200,000 threads, about 5 bytes a thread. Under
        // qemu-user (scripts/test-aarch64 says so in LOGLAG_EMULATOR) VmRSS is the
        // emulator's too, and it keeps memory for every guest thread it ever ran (5.5
        // GB over 20,000 threads, seen): the count of rings and slots below still holds.
        if std::env::var("LOGLAG_EMULATOR").as_deref() == Ok("qemu-user") {
            eprintln!(
                "RSS not checked: under qemu-user VmRSS holds the emulator's own per-thread memory"
            );
        } else {
            assert!(
                grown <= 1024,
                "RSS grew {grown} KiB over {threads} logging threads"
            );
        }
        assert!(
            writer.debug_counter_slots() <= 64,
            "counter slots follow the live threads: {}",
            writer.debug_counter_slots()
        );
        // Rings of exited threads went to the next threads: no more rings than the
        // budget allows (⌊(1 MiB / 4) / 32 KiB⌋ = 8), whatever the number of threads.
        let debug = format!("{writer:?}");
        let rings: usize = debug
            .split("thread_rings: ")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no ring count in {debug}"));
        assert!((1..=8).contains(&rings), "{rings} thread rings: {debug}");
        let m = guard.shutdown();
        assert_eq!(m.written_records, (warm + 2 * threads) as u64);
    });
}
