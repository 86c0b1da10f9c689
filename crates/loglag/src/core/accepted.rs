//! The per-thread counters: every record is counted accepted once, before it can be
//! written or dropped, on a plain per-thread counter (a load and a store on the
//! caller's path, no shared read-modify-write) that `Core::thread_counts` sums. So is
//! a record refused because no ring had room under a policy that drops the newest
//! (`QueueFull`): the hot burst's drop path, where two shared read-modify-writes (the
//! drop and the full event) were 10–11 ns of its 22 (BENCHMARKS.md, seventeenth
//! session).

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::Core;
use crate::core::metrics::ThreadTotals;
#[cfg(not(loglag_loom))]
use crate::record::level::Level;

thread_local! {
    /// This thread's counters, one set per pipeline it has logged to.
    static ACCEPTED: ThreadSlots = const {
        ThreadSlots { slots: RefCell::new(Vec::new()), last: Cell::new((0, std::ptr::null())) }
    };
}

/// A thread's counters for one pipeline. Only that thread increments them (a load and
/// a store, no read-modify-write); `Core::thread_counts` sums them with the other
/// threads'.
#[derive(Default)]
pub(super) struct ThreadCounts {
    accepted: AtomicU64,
    /// Records refused for want of room under `DropNewest` or `ShedByLevel`
    /// (`QueueFull`), by level. Each is also a full event.
    refused: [AtomicU64; 5],
}

/// One thread's counters, for every pipeline it has logged to.
struct ThreadSlots {
    /// (core id, this thread's counters for that core). Entries are only added, so
    /// a counter lives as long as this thread-local.
    slots: RefCell<Vec<(u64, Arc<ThreadCounts>)>>,
    /// The pipeline last counted and its counters: the hot path's answer without the
    /// borrow and the search.
    last: Cell<(u64, *const ThreadCounts)>,
}

/// Adds one to a counter that only this thread writes.
#[inline]
fn bump(counter: &AtomicU64) -> u64 {
    let n = counter.load(Ordering::Relaxed) + 1;
    counter.store(n, Ordering::Release);
    n
}

impl Core {
    #[inline]
    pub(super) fn count_accepted(&self) {
        if super::entered::nested() {
            // Inside another pipeline's call on this thread: not the thread's caches.
            self.accepted_retired.fetch_add(1, Ordering::AcqRel);
            return;
        }
        let counted = ACCEPTED.try_with(|slots| {
            let (core, counts) = slots.last.get();
            if core == self.call.id {
                // SAFETY: `counts` points into an `Arc` that `slots` holds for the
                // life of this thread-local (entries are never removed), which is
                // alive.
                bump(&unsafe { &*counts }.accepted);
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
        let counted = ACCEPTED.try_with(|thread| {
            // Busy only if a signal handler logging to another pipeline interrupted
            // this thread here: that one record is counted on the shared atomic.
            let Ok(mut slots) = thread.slots.try_borrow_mut() else {
                self.accepted_retired.fetch_add(1, Ordering::AcqRel);
                return;
            };
            if let Some((_, counts)) = slots.iter().find(|(id, _)| *id == self.call.id) {
                bump(&counts.accepted);
                thread.last.set((self.call.id, Arc::as_ptr(counts)));
                return;
            }
            let mut all = match self.accepted_slots.try_lock() {
                Ok(all) => all,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                // Held by a reader (`thread_counts`: a metrics read, the writer's drop
                // report) or, should a signal handler have interrupted this very thread
                // inside one, by this thread, whose wait would never end: this record
                // is counted on the shared total, and the slot made at a later one.
                Err(std::sync::TryLockError::WouldBlock) => {
                    self.accepted_retired.fetch_add(1, Ordering::AcqRel);
                    return;
                }
            };
            let counts = Arc::new(ThreadCounts::default());
            counts.accepted.store(1, Ordering::Release);
            // Threads come and go; fold the slots of exited ones into the total whenever
            // the list doubles, so memory follows the live threads, not all threads ever.
            if all.len() >= self.fold_at.load(Ordering::Relaxed) {
                self.fold_retired(&mut all);
                self.fold_at
                    .store((all.len() * 2).max(64), Ordering::Relaxed);
            }
            all.push(counts.clone());
            drop(all);
            thread.last.set((self.call.id, Arc::as_ptr(&counts)));
            slots.push((self.call.id, counts));
        });
        if counted.is_err() {
            // Logging from a thread-local destructor: no slot left, use the shared one.
            self.accepted_retired.fetch_add(1, Ordering::AcqRel);
        }
    }

    /// Counts a record refused for want of room (`QueueFull`) on this thread's
    /// counters, where the record was just counted accepted on them: this thread's
    /// count of such refusals at `level`, or `None` (counted nowhere) where they are
    /// not this pipeline's (a signal handler logged to another one in between).
    #[cfg(not(loglag_loom))]
    #[inline]
    pub(super) fn count_refused_on_thread(&self, level: Level) -> Option<u64> {
        if super::entered::nested() {
            return None;
        }
        ACCEPTED
            .try_with(|slots| {
                let (core, counts) = slots.last.get();
                // SAFETY: as in `count_accepted`.
                (core == self.call.id).then(|| bump(&unsafe { &*counts }.refused[level as usize]))
            })
            .ok()
            .flatten()
    }

    /// The threads' counts, read under the slots' lock after folding away exited
    /// threads' slots, so that each total only grows from one call to the next. The
    /// refusals are read before `accepted`: a thread counts a record accepted before
    /// it refuses it, so the sum never holds a refusal without its acceptance.
    pub(super) fn thread_counts(&self) -> ThreadTotals {
        let mut slots = self
            .accepted_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        self.fold_retired(&mut slots);
        let mut totals = ThreadTotals {
            accepted: 0,
            refused: std::array::from_fn(|l| self.refused_retired[l].load(Ordering::Acquire)),
        };
        for counts in slots.iter() {
            for (total, refused) in totals.refused.iter_mut().zip(&counts.refused) {
                *total += refused.load(Ordering::Acquire);
            }
        }
        totals.accepted = self.accepted_retired.load(Ordering::Acquire)
            + slots
                .iter()
                .map(|s| s.accepted.load(Ordering::Acquire))
                .sum::<u64>();
        totals
    }

    /// Moves the counts of threads that have exited (their thread-local reference is
    /// gone) into the retired totals and forgets their slots. The slots' lock is held.
    fn fold_retired(&self, slots: &mut Vec<Arc<ThreadCounts>>) {
        slots.retain(|counts| {
            if Arc::strong_count(counts) > 1 {
                return true;
            }
            // `strong_count` reads relaxed: this pairs with the exited thread's release
            // as it dropped its `Arc` (as `Arc::drop` does), so its last counts are seen.
            std::sync::atomic::fence(Ordering::Acquire);
            // Refusals first, as `thread_counts` reads them.
            for (retired, refused) in self.refused_retired.iter().zip(&counts.refused) {
                retired.fetch_add(refused.load(Ordering::Acquire), Ordering::AcqRel);
            }
            self.accepted_retired
                .fetch_add(counts.accepted.load(Ordering::Acquire), Ordering::AcqRel);
            false
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// A thread's first record to a pipeline while that thread holds the counters' lock
    /// itself (a signal handler that logs from inside a metrics read on that thread)
    /// is counted, on the shared total, without waiting for the lock; its next record
    /// makes the thread's slot.
    #[test]
    fn a_first_record_under_its_threads_own_lock_is_counted_without_waiting() {
        let config = crate::NonBlockingBuilder::default()
            .mode(crate::Mode::Async)
            .config();
        let core = Arc::new(Core::new(config, None));
        let (done, finished) = std::sync::mpsc::channel();
        let on_thread = core.clone();
        std::thread::spawn(move || {
            let held = on_thread.accepted_slots.lock().unwrap();
            on_thread.count_accepted();
            drop(held);
            on_thread.count_accepted();
            let _ = done.send(on_thread.slot_count());
        });
        // A bound on a hang, not a synchronisation: the answer comes at once or never.
        let slots = finished
            .recv_timeout(Duration::from_secs(60))
            .expect("a first record waited for the lock its own thread holds");
        assert_eq!(slots, 1, "the second record made the thread's slot");
        assert_eq!(core.thread_counts().accepted, 2);
    }
}
