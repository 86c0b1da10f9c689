//! The test program's one global allocator: the system's, with bookkeeping a thread
//! turns on for itself. `alloc.rs` counts allocations on the hot path; `relp_peers.rs`
//! notes the largest single allocation a sink makes. Both are per thread, so tests
//! running beside them in this program do not disturb them.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct Measured;

thread_local! {
    static MEASURING: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<u64> = const { Cell::new(0) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

fn note_allocation(size: usize) {
    // `try_with`: an allocation during a thread's teardown finds no slot, and is not ours.
    let _ = MEASURING.try_with(|on| {
        if on.get() {
            COUNT.with(|c| c.set(c.get() + 1));
            LARGEST.with(|l| l.set(l.get().max(size)));
        }
    });
}

// SAFETY: every call is passed on to `System` unchanged; the bookkeeping neither
// allocates nor touches the memory.
unsafe impl GlobalAlloc for Measured {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_allocation(layout.size());
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note_allocation(new_size);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Measured = Measured;

/// What `f` allocated on the calling thread: how many allocations, and the largest.
pub fn allocations_during<T>(f: impl FnOnce() -> T) -> (T, u64, usize) {
    COUNT.with(|c| c.set(0));
    LARGEST.with(|l| l.set(0));
    MEASURING.with(|on| on.set(true));
    let out = f();
    MEASURING.with(|on| on.set(false));
    (out, COUNT.with(Cell::get), LARGEST.with(Cell::get))
}
