//! The hot path does not allocate: a counting global allocator sees zero heap
//! allocations per record in steady state, through the raw writer and through the Layer.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use loglag::{Level, LoglagLayer, Mode, NonBlockingBuilder};
use tracing_subscriber::prelude::*;

struct Counting;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}
static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

// SAFETY: forwards to the system allocator; only adds a counter.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.try_with(Cell::get).unwrap_or(false) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.try_with(Cell::get).unwrap_or(false) {
            ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        }
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations_during(f: impl FnOnce()) -> u64 {
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    COUNTING.with(|c| c.set(true));
    f();
    COUNTING.with(|c| c.set(false));
    ALLOCATIONS.load(Ordering::Relaxed) - before
}

#[test]
fn zero_allocations_per_record_in_steady_state() {
    let (writer, guard) = NonBlockingBuilder::default()
        .mode(Mode::Async)
        .finish(std::io::sink());
    let record = [b'r'; 120];
    let subscriber = tracing_subscriber::registry().with(LoglagLayer::new(writer.clone()));
    tracing::subscriber::with_default(subscriber, || {
        // Warm up: the per-thread buffer and counter slot are allocated once.
        for i in 0..1000 {
            writer.submit(Level::Info, &record);
            tracing::info!(i, user = "ann", latency_ms = 1.5, "request done");
        }
        let n = allocations_during(|| {
            for i in 0..10_000 {
                writer.submit(Level::Info, &record);
                tracing::info!(i, user = "ann", latency_ms = 1.5, "request done");
            }
        });
        assert_eq!(n, 0, "heap allocations on the hot path");
    });
    let m = guard.shutdown();
    assert_eq!(m.accepted, 22_000);
    assert_eq!(m.written_records + m.dropped_records, 22_000);
}
