//! Waiting for the writer: `flush` (from a handle, or the panic hook) and shutdown,
//! with what a shutdown that runs out of time counts as lost.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::{inside_any_sink, Core};
use crate::core::handshake::WriterEnd;
use crate::core::metrics::Metrics;
use crate::record::drops::DropReason;
use crate::record::level::Level;
use crate::settings::mode::Mode;

/// What `flush` achieved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flushed {
    /// Records written to the sink while waiting.
    pub written_records: u64,
    /// The accounting after the flush.
    pub metrics: Metrics,
}

/// `flush` ran out of time; `metrics` says what is still in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlushTimeout {
    /// How long the flush waited.
    pub waited: Duration,
    /// The accounting when it gave up (boxed to keep `Result` small).
    pub metrics: Box<Metrics>,
}

impl std::fmt::Display for FlushTimeout {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "log flush timed out after {:?} with {} records ({} bytes) still in flight",
            self.waited, self.metrics.in_flight_records, self.metrics.in_flight_bytes
        )
    }
}

impl std::error::Error for FlushTimeout {}

impl Core {
    /// The panic hook's flush. It runs on the panicking thread, which may hold the
    /// `sync` sink's lock or be inside a sink, so it never waits for that lock.
    pub(crate) fn flush_from_panic_hook(&self) {
        // It may take the `sync` sink's lock: a handler logging meanwhile is refused.
        let _entered = self.enter();
        if inside_any_sink() {
            return;
        }
        if self.config.mode != Mode::Async {
            return self.flush_sync_sink(false);
        }
        let _ = self.flush(self.config.shutdown_timeout);
    }

    /// Flushes the `sync`-mode sink. Without `may_wait` only if its lock is free now:
    /// this thread may hold it already (a panic or a flush from inside the sink).
    fn flush_sync_sink(&self, may_wait: bool) {
        let sink = if may_wait {
            Some(self.sync_sink.lock().unwrap_or_else(|e| e.into_inner()))
        } else {
            match self.sync_sink.try_lock() {
                Ok(sink) => Some(sink),
                Err(std::sync::TryLockError::Poisoned(e)) => Some(e.into_inner()),
                Err(std::sync::TryLockError::WouldBlock) => None,
            }
        };
        if let Some(mut guard) = sink {
            if let Some(sink) = guard.as_mut() {
                let _ = crate::sink::call_sink(|| sink.sink().flush());
            }
        }
    }

    /// Waits until every record accepted before the call is written or dropped.
    pub(crate) fn flush(&self, timeout: Duration) -> Result<Flushed, FlushTimeout> {
        // A signal handler that logs while this thread waits here, or holds the `sync`
        // sink's lock, is refused (`entered.rs`), not made to wait on itself.
        let _entered = self.enter();
        if self.in_forked_child() {
            // Everything this process logged is written already; the parent's queue
            // is the parent's.
            return Ok(Flushed {
                written_records: 0,
                metrics: self.metrics(),
            });
        }
        let started = Instant::now();
        let before = self.counters.written_records.load(Ordering::Acquire);
        if self.config.mode != Mode::Async {
            // A sink that flushes its own pipeline may hold the lock already.
            self.flush_sync_sink(!inside_any_sink());
            return Ok(Flushed {
                written_records: 0,
                metrics: self.metrics(),
            });
        }
        if inside_any_sink() {
            // Called from inside a sink (on the writer thread, or under another
            // pipeline's sink): waiting here could wait for this very thread.
            return Err(FlushTimeout {
                waited: Duration::ZERO,
                metrics: Box::new(self.metrics()),
            });
        }
        let target = self.lanes.head_sum();
        self.wake_writer();
        if self.handshake.wait_done(target, timeout) {
            let written = self.counters.written_records.load(Ordering::Acquire) - before;
            Ok(Flushed {
                written_records: written,
                metrics: self.metrics(),
            })
        } else {
            Err(FlushTimeout {
                waited: started.elapsed(),
                metrics: Box::new(self.metrics()),
            })
        }
    }

    /// Stops accepting, lets the writer drain until `timeout`, and counts whatever is
    /// cut off as `shutdown` drops, reported on stderr. Idempotent.
    pub(crate) fn shutdown(&self, timeout: Duration) -> Metrics {
        // In `sync` mode it holds the sink's lock while it flushes: a handler that logs
        // meanwhile (a SIGTERM handler as the application exits) must be refused, not
        // wait for a lock its own thread holds (it hung, in `write_sync`).
        let _entered = self.enter();
        if self.in_forked_child() {
            // No writer thread here to wait for, and the queue is the parent's.
            self.call.closed.store(true, Ordering::Release);
            return self.metrics();
        }
        if self.call.closed.swap(true, Ordering::AcqRel) {
            if self.config.mode != Mode::Async {
                return self.metrics();
            }
            return self.wait_exit(crate::settings::units::instant_after(
                Instant::now(),
                timeout,
            ));
        }
        if self.config.mode != Mode::Async {
            if let Some(mut sink) = self
                .sync_sink
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .take()
            {
                let _ = crate::sink::call_sink(|| sink.sink().flush());
            }
            return self.metrics();
        }
        let deadline = crate::settings::units::instant_after(Instant::now(), timeout);
        self.handshake.begin_shutdown(deadline);
        self.space_released();
        self.wake_writer();
        self.wait_exit(deadline)
    }

    fn wait_exit(&self, deadline: Instant) -> Metrics {
        // A little grace beyond the writer's own deadline, for its last bookkeeping.
        let give_up = crate::settings::units::instant_after(deadline, Duration::from_millis(100));
        let end = self.handshake.wait_exit_or_abandon(give_up, |batch| {
            // With a spool, the stuck batch and the queue stay in the file for the next
            // start: not lost, so not counted as dropped (they stay in flight).
            if self.spool.is_none() {
                let levels = batch.take();
                for level in Level::ALL {
                    self.counters
                        .count_drop(DropReason::Shutdown, level, levels[level as usize]);
                }
                let counters = &self.counters;
                self.lanes
                    .discard_committed(|p| counters.count_drop(DropReason::Shutdown, p.level, 1));
            }
        });
        let m = self.metrics();
        if end == WriterEnd::Abandoned {
            if self.spool.is_none() {
                eprintln!("loglag: the sink did not finish within the shutdown deadline; {} records lost (shutdown)", m.dropped_for(DropReason::Shutdown));
            } else {
                eprintln!("loglag: the sink did not finish within the shutdown deadline; {} records stay in the spool for the next start", m.in_flight_records);
            }
        }
        m
    }

    /// Whether the writer thread has finished (a guard joins it only then: otherwise it
    /// is stuck in a sink call past the deadline, and abandoned).
    pub(crate) fn writer_exited(&self) -> bool {
        self.handshake.has_exited()
    }

    /// Tests only: closes the pipeline and starts a shutdown whose deadline is
    /// `deadline`, without waiting for the writer.
    #[cfg(test)]
    pub(crate) fn close_with_deadline(&self, deadline: Instant) {
        self.call.closed.store(true, Ordering::Release);
        self.handshake.begin_shutdown(deadline);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::Config;
    use crate::sink::Sink;
    use std::sync::{mpsc, Arc, Mutex};

    /// Holds the writer in its first write until `open` is sent; keeps the bytes.
    struct Gated {
        open: Option<mpsc::Receiver<()>>,
        entered: mpsc::Sender<()>,
        out: Arc<Mutex<Vec<u8>>>,
    }
    impl Sink for Gated {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Some(open) = self.open.take() {
                let _ = self.entered.send(());
                let _ = open.recv();
            }
            self.out.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
    }

    fn config(mode: Mode) -> Config {
        crate::NonBlockingBuilder::default()
            .mode(mode)
            .shutdown_timeout(Duration::from_secs(3600))
            .config()
    }

    /// The scheduler state (`R`, `S`, ...) of this process's thread called `name`.
    #[cfg(target_os = "linux")] // /proc is Linux's
    fn thread_state(name: &str) -> Option<char> {
        for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim() == name {
                let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
                return stat[stat.rfind(')')? + 2..].chars().next();
            }
        }
        None
    }

    /// Runs `f` on its own thread and fails if it takes more than a minute.
    fn bounded<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("{what}: still waiting after 60 s"))
    }

    /// Two parties shut down at once (the guard, and SIGTERM's flush): the second waits
    /// for the writer like the first, and both see everything written.
    #[cfg(target_os = "linux")] // waits on thread_state, from /proc
    #[test]
    fn a_second_shutdown_waits_for_the_writer_like_the_first() {
        bounded("two shutdowns", || {
            let core = Arc::new(Core::new(config(Mode::Async), None));
            let (open, open_rx) = mpsc::channel();
            let (entered_tx, entered) = mpsc::channel();
            let out = Arc::new(Mutex::new(Vec::new()));
            let sink = Gated {
                open: Some(open_rx),
                entered: entered_tx,
                out: out.clone(),
            };
            let writer = crate::pipeline::worker::spawn(core.clone(), Box::new(sink)).unwrap();
            core.submit(Level::Error, b"held\n");
            entered.recv().unwrap();
            core.submit(Level::Info, b"queued\n");
            let first = {
                let core = core.clone();
                std::thread::spawn(move || core.shutdown(core.config.shutdown_timeout))
            };
            while !core.call.closed.load(Ordering::Acquire) {
                std::thread::yield_now();
            }
            let second = {
                let core = core.clone();
                std::thread::Builder::new()
                    .name("second-shutdown".into())
                    .spawn(move || core.shutdown(core.config.shutdown_timeout))
                    .unwrap()
            };
            // The writer is still held: open it only once the second shutdown waits
            // (or has returned, which is the bug this test is for).
            while !second.is_finished() && thread_state("second-shutdown") != Some('S') {
                std::thread::yield_now();
            }
            open.send(()).unwrap();
            for m in [first.join().unwrap(), second.join().unwrap()] {
                assert_eq!(
                    (
                        m.written_records,
                        m.in_flight_records,
                        m.dropped_for(DropReason::Shutdown)
                    ),
                    (2, 0, 0),
                    "{m:?}"
                );
            }
            writer.join().unwrap();
            assert_eq!(out.lock().unwrap().as_slice(), b"held\nqueued\n");
        });
    }

    /// A signal handler that logs while its thread is inside `metrics()` holding a
    /// ring's consumer lock: under `Block` with a full ring it waited for room the
    /// writer could not make (the writer waits for that lock), and every producer then
    /// blocked (6 of 6 runs). Its record is now refused as `reentrant` at once, with
    /// nothing enqueued, whatever the ring holds; the same in `flush`.
    #[test]
    fn a_record_logged_while_metrics_holds_a_consumer_lock_is_dropped_as_reentrant() {
        bounded("metrics under a handler", || {
            let config = crate::NonBlockingBuilder::default()
                .mode(Mode::Async)
                .overflow(crate::Overflow::Block)
                .config();
            let core = Arc::new(Core::new(config, None));
            core.submit(Level::Info, b"queued\n");
            let handler = core.clone();
            crate::queue::tests::on_next_consume(move || {
                handler.submit(Level::Warn, b"from a handler\n");
            });
            let m = core.metrics();
            assert_eq!(m.accepted, 2, "{m:?}");
            assert_eq!(m.dropped_of(DropReason::Reentrant, Level::Warn), 1, "{m:?}");
            assert_eq!(
                m.in_flight_records, 1,
                "only the thread's own record is queued"
            );
        });
    }

    /// In `sync` mode there is no writer to wait for: a second shutdown returns at once.
    #[test]
    fn a_second_sync_shutdown_returns_at_once() {
        let out = Arc::new(Mutex::new(Vec::new()));
        let (_open, open_rx) = mpsc::channel();
        drop(_open);
        let (entered, _) = mpsc::channel();
        let sink = Gated {
            open: Some(open_rx),
            entered,
            out: out.clone(),
        };
        let core = Arc::new(Core::new(config(Mode::Sync), Some(Box::new(sink))));
        core.submit(Level::Info, b"one\n");
        let m = bounded("sync shutdowns", move || {
            core.shutdown(core.config.shutdown_timeout);
            core.shutdown(core.config.shutdown_timeout)
        });
        assert_eq!(m.written_records, 1);
    }
}
