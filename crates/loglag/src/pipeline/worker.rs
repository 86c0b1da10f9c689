//! The `loglag-writer` thread: decides when to drain the rings, drains them in batches
//! into its sink, and ends at shutdown. What it takes and writes is accounted for in
//! `core/drain.rs`, the only part of `Core` it reaches.

use std::io;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Instant;

use crate::core::drain::{DrainState, Until};
use crate::core::{Core, ThreadMark};
use crate::sink::{call_sink, HeldSink, Sink};

pub(crate) fn spawn(core: Arc<Core>, sink: Box<dyn Sink>) -> io::Result<JoinHandle<()>> {
    let for_thread = core.clone();
    let handle = thread::Builder::new()
        .name(core.settings().thread_name.clone())
        .spawn(move || {
            crate::sys::fork::block_async_signals();
            // Everything this thread logs (a sink instrumented with `tracing`) must not
            // wait for room that only this thread can make.
            let _inside = ThreadMark::inside_sink(for_thread.id());
            // Producers only unpark once the handle is published; until then the writer
            // polls at `flush_interval`, so nothing is lost in between.
            let core = for_thread.clone();
            let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                Writer::new(for_thread, sink).run()
            }));
            if run.is_err() {
                core.writer_died();
            }
        })?;
    core.register_writer(handle.thread().clone());
    Ok(handle)
}

struct Writer {
    core: Arc<Core>,
    sink: HeldSink,
    /// The rings as the writer sees them, the batch it took last, and what it has
    /// announced: `Core`'s drain API keeps it.
    state: DrainState,
}

impl Writer {
    fn new(core: Arc<Core>, sink: Box<dyn Sink>) -> Writer {
        Writer {
            state: DrainState::new(&core),
            core,
            sink: HeldSink::new(sink),
        }
    }

    fn run(mut self) {
        let interval = self.core.settings().flush_interval;
        let batch_bytes = self.core.settings().batch_bytes as u64;
        let poll = (interval / 10).min(std::time::Duration::from_millis(10));
        let mut last_full_drain = Instant::now();
        loop {
            let deadline = self.core.shutdown_deadline();
            // Urgent: a record at the flush level, a flush() call, a full queue.
            let urgent = self.core.take_wake_request();
            // The interval runs from the last full drain, not from the last wake, so it
            // still fires when a steady trickle keeps the queue below a batch.
            let since = last_full_drain.elapsed();
            let drain_all = urgent || deadline.is_some() || since >= interval;
            let queued = self.core.queued_seen(&mut self.state);
            if !drain_all && queued < batch_bytes {
                let left = interval - since;
                self.core
                    .wait_for_batch(&mut self.state, queued, left, poll);
                continue;
            }
            // Write what is queued now, not what keeps arriving while we write: bounded
            // work per wake keeps batches large under constant load.
            let until = if drain_all {
                self.core.begin_sweep(&mut self.state);
                Until::Swept
            } else {
                Until::BelowBatch
            };
            if !self.drain(deadline, until) {
                return; // abandoned by the guard
            }
            if drain_all {
                last_full_drain = Instant::now();
            }
            if let Some(deadline) = deadline {
                let empty = self.core.queue_is_empty();
                if empty || Instant::now() >= deadline {
                    self.finish(empty);
                    return;
                }
            }
        }
    }

    /// Writes committed records in batches while `until` says so. Returns false if the
    /// guard abandoned us.
    fn drain(&mut self, deadline: Option<Instant>, until: Until) -> bool {
        let core = self.core.clone();
        let mut spins = 0;
        loop {
            if !core.drain_goes_on(&self.state, until) {
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            let Ok(taken) = core.take_batch(&mut self.state) else {
                core.announce_released(&mut self.state);
                return false;
            };
            if taken == 0 {
                // A producer has reserved space but not yet published it: it is a few
                // instructions away from doing so, unless it was preempted.
                if spins < 1000 {
                    spins += 1;
                    thread::yield_now();
                    continue;
                }
                break;
            }
            spins = 0;
            core.keep_resident_ahead(&self.state);
            // The batch is in flight now (`take_batch`). The sink's one chance to
            // switch files (rotation), before the spool records which file and offset
            // this batch goes to.
            let batch_len = self.state.batch_len();
            if call_sink(|| self.sink.sink().before_batch(batch_len)).is_err() {
                // The batch still goes to the current file; the failure is counted.
                core.count_write_error();
            }
            core.note_sink_fd(self.sink.descriptor());
            core.follow_batch_format(&self.state);
            if let Some(notice) = self.sink.take_notice() {
                core.write_notice(&mut self.sink, &notice);
            }
            if !core.write_batch(&mut self.state, &mut self.sink) {
                core.announce_released(&mut self.state);
                return false;
            }
            // Under sustained load this loop may run for a while; announce drops as
            // they happen rather than when the queue finally empties.
            core.report_drops(&mut self.state, &mut self.sink);
            core.publish_progress(&self.state);
        }
        core.announce_released(&mut self.state);
        core.report_drops(&mut self.state, &mut self.sink);
        let _ = call_sink(|| self.sink.sink().flush());
        core.publish_progress(&self.state);
        true
    }

    /// Ends the thread at shutdown: counts whatever the deadline cut off.
    fn finish(mut self, drained: bool) {
        if !drained && self.core.cut_off_at_deadline() {
            self.core.report_drops(&mut self.state, &mut self.sink);
        }
        let _ = call_sink(|| self.sink.sink().flush());
        // Every batch was accounted for in `write_batch`: nothing is in flight here.
        self.core.writer_finished();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::drops::DropReason;
    use crate::record::level::Level;
    use std::sync::Mutex;

    /// A sink that keeps what it is given.
    #[derive(Clone, Default)]
    struct Keep(Arc<Mutex<Vec<u8>>>);
    impl Sink for Keep {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
    }

    fn config() -> crate::core::Config {
        crate::pipeline::builder::NonBlockingBuilder::default()
            .mode(crate::settings::mode::Mode::Async)
            .config()
    }

    /// Runs a writer on this thread over `core`, whose shutdown deadline has already
    /// passed with `queued` records still in the ring: it must stop at once and deal
    /// with what the deadline cut off.
    fn run_past_the_deadline(core: &Arc<Core>, queued: usize) -> Keep {
        for i in 0..queued {
            core.submit(Level::Info, format!("queued {i}\n").as_bytes());
        }
        core.close_with_deadline(Instant::now() - std::time::Duration::from_secs(1));
        let sink = Keep::default();
        let writer = Writer::new(core.clone(), Box::new(sink.clone()));
        // Bounded: a writer that ignores the passed deadline would loop for ever.
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            writer.run();
            let _ = done.send(());
        });
        finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("the writer stops at a passed deadline");
        assert!(core.writer_exited());
        sink
    }

    #[test]
    fn what_the_deadline_cuts_off_is_counted_and_announced_in_band() {
        let core = Arc::new(Core::new(config(), None));
        let sink = run_past_the_deadline(&core, 7);
        let m = core.metrics();
        assert_eq!(m.dropped_for(DropReason::Shutdown), 7);
        assert_eq!(m.written_records, 0);
        assert_eq!(m.in_flight_records, 0);
        assert!(m.is_accounted());
        let out = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        assert!(
            out.contains("dropped 7 records since last report") && out.contains("shutdown=7"),
            "{out}"
        );
        assert_eq!(out.lines().count(), 1, "only the report: {out}");
    }

    #[test]
    fn with_a_spool_what_the_deadline_cuts_off_stays_for_the_next_start() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("app.spool");
        let log = dir.path().join("app.log");
        let mut file = crate::sink::FdSink::append(&log).unwrap();
        let (ring, header, recovered) =
            crate::spool::open(&path, 1 << 16, &mut file, crate::spool::SpoolSync::Never).unwrap();
        let core = Arc::new(Core::with_ring(
            config(),
            ring,
            None,
            Some(header),
            recovered,
        ));
        let sink = run_past_the_deadline(&core, 5);
        let m = core.metrics();
        assert_eq!(m.dropped_for(DropReason::Shutdown), 0, "not lost: {m:?}");
        assert_eq!(m.in_flight_records, 5);
        assert!(
            sink.0.lock().unwrap().is_empty(),
            "no drop report: nothing dropped"
        );
        drop(core);
        let r = crate::spool::recover(&path, crate::sink::FdSink::append(&log).unwrap()).unwrap();
        assert_eq!(r.records, 5);
        let lines = std::fs::read_to_string(&log).unwrap();
        assert_eq!(lines.lines().next(), Some("queued 0"));
        assert_eq!(lines.lines().count(), 5);
    }

    #[test]
    fn a_writer_whose_queue_is_empty_at_the_deadline_finishes_without_losses() {
        let core = Arc::new(Core::new(config(), None));
        let sink = run_past_the_deadline(&core, 0);
        let m = core.metrics();
        assert_eq!((m.dropped_for(DropReason::Shutdown), m.accepted), (0, 0));
        assert!(sink.0.lock().unwrap().is_empty());
    }
}
