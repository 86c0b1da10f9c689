//! The writer ↔ guard handshake: how far the writer has got, the batch it is writing
//! right now, the shutdown deadline, and the one rule that matters at the deadline:
//! **exactly one party counts a stuck batch.** Either the writer accounts for its batch
//! (written, or lost to an I/O error), or the guard gives up on it and counts it as a
//! shutdown drop; both decisions are taken under the same lock, so never both.

use std::time::{Duration, Instant};

use crate::sys::sync::{AtomicU64, Condvar, Mutex, MutexGuard, Ordering};

#[derive(Debug, Default)]
struct Progress {
    /// Ring position up to which every record is written or dropped.
    done_pos: u64,
    /// The writer thread has finished.
    exited: bool,
    /// Threads waiting on `changed`: with none, the writer's progress after each batch
    /// costs no futex call.
    waiters: usize,
    /// The guard gave up on the writer (stuck in a write past the deadline); the writer
    /// must not count anything any more, the guard already counted it.
    abandoned: bool,
}

#[derive(Debug, Default)]
pub(crate) struct Handshake {
    progress: Mutex<Progress>,
    changed: Condvar,
    /// Bytes and per-level counts of the batch the writer is writing right now.
    batch_bytes: AtomicU64,
    batch_levels: [AtomicU64; 5],
    deadline: Mutex<Option<Instant>>,
}

/// The batch the writer holds, handed to whoever counts it.
pub(crate) struct InFlightBatch<'a>(&'a Handshake);

impl InFlightBatch<'_> {
    /// Takes the batch's per-level record counts; the batch is no longer in flight.
    pub(crate) fn take(self) -> [u64; 5] {
        self.0.batch_bytes.store(0, Ordering::Relaxed);
        std::array::from_fn(|l| self.0.batch_levels[l].swap(0, Ordering::AcqRel))
    }
}

/// The guard gave up on the writer: it must stop and count nothing more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Abandoned;

/// How a wait for the writer ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriterEnd {
    Exited,
    /// Still inside a sink call at `give_up`: abandoned, its batch counted by the guard.
    Abandoned,
}

impl Handshake {
    fn lock(&self) -> MutexGuard<'_, Progress> {
        self.progress.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ---- the writer's side

    /// The deadline set by [`Handshake::begin_shutdown`], if shutdown has begun.
    pub(crate) fn shutdown_deadline(&self) -> Option<Instant> {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes a batch out of the rings and puts it in flight in one step, under the
    /// progress lock that the guard's decision to abandon is taken under: `take` pops
    /// the records and returns their bytes and per-level counts (`None`: nothing
    /// taken). A guard that abandons the writer therefore finds every record either
    /// still in the rings or in flight, never in between where nobody counts it (the
    /// loom model `loom_handshake_abandon_between_pop_and_begin_batch` found that
    /// window when the two were separate steps). Returns `Err(Abandoned)` without
    /// calling `take` if the guard has already abandoned the writer: it must stop.
    pub(crate) fn take_into_flight<T>(
        &self,
        take: impl FnOnce() -> (T, Option<(usize, [u64; 5])>),
    ) -> Result<T, Abandoned> {
        let progress = self.lock();
        if progress.abandoned {
            return Err(Abandoned);
        }
        let (taken, batch) = take();
        if let Some((bytes, levels)) = batch {
            self.begin_batch(bytes, levels);
        }
        drop(progress);
        Ok(taken)
    }

    /// The writer is about to hand a batch of `bytes` with `levels` records to the
    /// sink. The writer registers its batches through [`Handshake::take_into_flight`].
    pub(crate) fn begin_batch(&self, bytes: usize, levels: [u64; 5]) {
        self.batch_bytes.store(bytes as u64, Ordering::Relaxed);
        for (slot, n) in self.batch_levels.iter().zip(levels) {
            slot.store(n, Ordering::Release);
        }
    }

    /// The sink returned: runs `account` for the batch unless the guard abandoned the
    /// writer meanwhile. Returns false if abandoned: the writer must stop and count
    /// nothing more.
    pub(crate) fn end_batch(&self, account: impl FnOnce()) -> bool {
        let progress = self.lock();
        if progress.abandoned {
            return false;
        }
        InFlightBatch(self).take();
        account();
        true
    }

    /// Whether the guard has given up on the writer.
    pub(crate) fn is_abandoned(&self) -> bool {
        self.lock().abandoned
    }

    /// Every record before ring position `done_pos` is written or dropped.
    pub(crate) fn advance(&self, done_pos: u64) {
        let mut progress = self.lock();
        progress.done_pos = progress.done_pos.max(done_pos);
        if progress.waiters > 0 {
            self.changed.notify_all();
        }
    }

    /// The writer's last act. Unless the guard abandoned it, `count_in_flight` may
    /// account for the batch the writer held (it holds none after a normal finish).
    pub(crate) fn exit(&self, done_pos: u64, count_in_flight: impl FnOnce(InFlightBatch<'_>)) {
        let mut progress = self.lock();
        if !progress.abandoned {
            count_in_flight(InFlightBatch(self));
        }
        progress.done_pos = progress.done_pos.max(done_pos);
        progress.exited = true;
        self.changed.notify_all();
    }

    // ---- the guard's and flushers' side

    pub(crate) fn begin_shutdown(&self, deadline: Instant) {
        *self.deadline.lock().unwrap_or_else(|e| e.into_inner()) = Some(deadline);
    }

    pub(crate) fn in_flight_bytes(&self) -> u64 {
        self.batch_bytes.load(Ordering::Relaxed)
    }

    pub(crate) fn has_exited(&self) -> bool {
        self.lock().exited
    }

    /// Waits until the writer is done up to ring position `target`. False if `timeout`
    /// passed first or the writer exited short of it.
    pub(crate) fn wait_done(&self, target: u64, timeout: Duration) -> bool {
        let started = Instant::now();
        let mut progress = self.lock();
        loop {
            if progress.done_pos >= target {
                return true;
            }
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() || progress.exited {
                return false;
            }
            progress.waiters += 1;
            progress = self
                .changed
                .wait_timeout(progress, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            progress.waiters -= 1;
        }
    }

    /// Waits for the writer to exit until `give_up`. If it is still inside the sink
    /// then, abandons it and hands its batch to `count_lost`: from here on the writer
    /// counts nothing.
    pub(crate) fn wait_exit_or_abandon(
        &self,
        give_up: Instant,
        count_lost: impl FnOnce(InFlightBatch<'_>),
    ) -> WriterEnd {
        let mut progress = self.lock();
        while !progress.exited {
            let now = Instant::now();
            if now >= give_up {
                progress.abandoned = true;
                count_lost(InFlightBatch(self));
                return WriterEnd::Abandoned;
            }
            progress.waiters += 1;
            progress = self
                .changed
                .wait_timeout(progress, give_up - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            progress.waiters -= 1;
        }
        WriterEnd::Exited
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_writer_that_returns_after_being_abandoned_counts_nothing() {
        let handshake = Handshake::default();
        handshake.begin_batch(100, [0, 0, 3, 0, 0]);
        assert_eq!(
            handshake.in_flight_bytes(),
            100,
            "a batch in the sink is in flight"
        );
        let mut guard_counted = [0; 5];
        let end = handshake.wait_exit_or_abandon(Instant::now(), |batch| {
            guard_counted = batch.take();
        });
        assert_eq!(end, WriterEnd::Abandoned);
        assert_eq!(guard_counted, [0, 0, 3, 0, 0]);
        assert_eq!(handshake.in_flight_bytes(), 0);
        let mut writer_counted = false;
        assert!(!handshake.end_batch(|| writer_counted = true));
        assert!(!writer_counted);
        let mut exit_counted = false;
        handshake.exit(10, |_| exit_counted = true);
        assert!(
            !exit_counted,
            "an abandoned writer must not count its batch again"
        );
    }

    #[test]
    fn a_writer_that_returns_first_counts_and_the_guard_finds_nothing() {
        let handshake = Arc::new(Handshake::default());
        handshake.begin_batch(100, [1, 0, 0, 0, 2]);
        let mut writer_counted = false;
        assert!(handshake.end_batch(|| writer_counted = true));
        assert!(writer_counted);
        assert_eq!(handshake.in_flight_bytes(), 0);
        let (tx, rx) = std::sync::mpsc::channel();
        let writer = {
            let handshake = handshake.clone();
            std::thread::spawn(move || {
                rx.recv().unwrap();
                handshake.exit(7, |batch| assert_eq!(batch.take(), [0; 5]));
            })
        };
        tx.send(()).unwrap();
        let end = handshake.wait_exit_or_abandon(Instant::now() + Duration::from_secs(60), |_| {
            panic!("the writer exited; nothing to abandon")
        });
        writer.join().unwrap();
        assert_eq!(end, WriterEnd::Exited);
        assert!(handshake.has_exited());
        assert!(handshake.wait_done(7, Duration::ZERO));
        assert!(
            !handshake.wait_done(8, Duration::from_secs(60)),
            "exited short of 8"
        );
    }

    #[test]
    fn waiting_for_progress_wakes_when_the_writer_advances() {
        let handshake = Arc::new(Handshake::default());
        let waiter = {
            let handshake = handshake.clone();
            std::thread::spawn(move || handshake.wait_done(5, Duration::from_secs(60)))
        };
        handshake.advance(3);
        handshake.advance(5);
        assert!(waiter.join().unwrap());
        handshake.advance(1);
        assert!(
            handshake.wait_done(5, Duration::ZERO),
            "progress never goes back"
        );
        assert!(!handshake.wait_done(6, Duration::ZERO));
    }
}
