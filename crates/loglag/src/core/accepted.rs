//! The accepted counters: every record is counted accepted once, before it can be
//! written or dropped, on a plain per-thread counter (a load and a store on the
//! caller's path, no shared read-modify-write) that `Core::accepted` sums.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::Core;

thread_local! {
    /// This thread's accepted counters, one per pipeline it has logged to.
    static ACCEPTED: AcceptedSlots = const {
        AcceptedSlots { slots: RefCell::new(Vec::new()), last: Cell::new((0, std::ptr::null())) }
    };
}

/// A thread's accepted counters: each is a plain counter that only this thread
/// increments (a load and a store, no read-modify-write), and that `Core::accepted`
/// sums with the other threads'.
struct AcceptedSlots {
    /// (core id, this thread's accepted counter for that core). Entries are only
    /// added, so a counter lives as long as this thread-local.
    slots: RefCell<Vec<(u64, Arc<AtomicU64>)>>,
    /// The pipeline last counted and its counter: the hot path's answer without the
    /// borrow and the search.
    last: Cell<(u64, *const AtomicU64)>,
}

impl Core {
    #[inline]
    pub(super) fn count_accepted(&self) {
        let counted = ACCEPTED.try_with(|accepted| {
            let (core, slot) = accepted.last.get();
            if core == self.call.id {
                // SAFETY: `slot` points into an `Arc` that `slots` holds for the life
                // of this thread-local (entries are never removed), which is alive.
                let slot = unsafe { &*slot };
                slot.store(slot.load(Ordering::Relaxed) + 1, Ordering::Release);
                return true;
            }
            false
        });
        if counted != Ok(true) {
            self.count_accepted_slow();
        }
    }

    #[cold]
    fn count_accepted_slow(&self) {
        let counted = ACCEPTED.try_with(|accepted| {
            // Busy only if a signal handler logging to another pipeline interrupted
            // this thread here: that one record is counted on the shared atomic.
            let Ok(mut slots) = accepted.slots.try_borrow_mut() else {
                self.accepted_retired.fetch_add(1, Ordering::AcqRel);
                return;
            };
            if let Some((_, slot)) = slots.iter().find(|(id, _)| *id == self.call.id) {
                slot.store(slot.load(Ordering::Relaxed) + 1, Ordering::Release);
                accepted.last.set((self.call.id, Arc::as_ptr(slot)));
                return;
            }
            let slot = Arc::new(AtomicU64::new(1));
            let mut all = self
                .accepted_slots
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            // Threads come and go; fold the slots of exited ones into the total whenever
            // the list doubles, so memory follows the live threads, not all threads ever.
            if all.len() >= self.fold_at.load(Ordering::Relaxed) {
                self.fold_retired(&mut all);
                self.fold_at
                    .store((all.len() * 2).max(64), Ordering::Relaxed);
            }
            all.push(slot.clone());
            drop(all);
            accepted.last.set((self.call.id, Arc::as_ptr(&slot)));
            slots.push((self.call.id, slot));
        });
        if counted.is_err() {
            // Logging from a thread-local destructor: no slot left, use the shared one.
            self.accepted_retired.fetch_add(1, Ordering::AcqRel);
        }
    }

    pub(super) fn accepted(&self) -> u64 {
        let mut slots = self
            .accepted_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.fold_retired(&mut slots);
        self.accepted_retired.load(Ordering::Acquire)
            + slots.iter().map(|s| s.load(Ordering::Acquire)).sum::<u64>()
    }

    /// Moves the counts of threads that have exited (their thread-local reference is
    /// gone) into `accepted_retired` and forgets their slots.
    fn fold_retired(&self, slots: &mut Vec<Arc<AtomicU64>>) {
        let mut retired = 0;
        slots.retain(|s| {
            if Arc::strong_count(s) == 1 {
                retired += s.load(Ordering::Acquire);
                false
            } else {
                true
            }
        });
        if retired > 0 {
            self.accepted_retired.fetch_add(retired, Ordering::AcqRel);
        }
    }
}
