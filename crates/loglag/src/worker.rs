//! The `loglag-writer` thread: drains the ring in batches, writes them, and accounts for
//! every record it takes.

use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::Instant;

use crate::clock::WallClock;
use crate::core::{Core, ThreadMark};
use crate::lanes::{Sweep, WriterView};
use crate::level::Level;
use crate::metrics::DropReason;
use crate::sink::{call_sink, write_all_counted, HeldSink, Sink};

pub(crate) fn spawn(core: Arc<Core>, sink: Box<dyn Sink>) -> io::Result<JoinHandle<()>> {
    let for_thread = core.clone();
    let handle = thread::Builder::new()
        .name(core.config.thread_name.clone())
        .spawn(move || {
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
                writer_died(&core);
            }
        })?;
    let _ = core.writer.set(handle.thread().clone());
    Ok(handle)
}

/// The writer thread panicked outside any sink call (sink panics are caught per call):
/// a bug in loglag itself. Nobody may wait for it any more: close the pipeline, count
/// what it held as lost, and wake every waiter.
fn writer_died(core: &Core) {
    core.closed.store(true, Ordering::Release);
    core.handshake.exit(core.lanes.tail_sum(), |batch| {
        if core.spool.is_none() {
            let counters = &core.counters;
            let levels = batch.take();
            for level in Level::ALL {
                counters.count_drop(DropReason::IoError, level, levels[level as usize]);
            }
            core.lanes
                .discard_committed(|p| counters.count_drop(DropReason::IoError, p.level, 1));
        }
    });
    core.space_released();
    eprintln!("loglag: the writer thread panicked; the pipeline is closed and further records are dropped (shutdown)");
}

struct Writer {
    core: Arc<Core>,
    sink: HeldSink,
    batch: Vec<u8>,
    /// (length, level) of each record in `batch`, to account for partial failures.
    records: Vec<(usize, Level)>,
    /// Drops by reason already announced in-band.
    reported: [[u64; 5]; 4],
    /// Whether the last write failed, so a streak of errors is reported on stderr once.
    failing: bool,
    /// When the spool was last synced (`SpoolSync::Every`).
    last_sync: Instant,
    /// Turns captured records' raw timestamps into wall-clock time.
    clock: WallClock,
    /// A captured record, contiguous, and its rendering before truncation.
    captured: Vec<u8>,
    rendered: Vec<u8>,
    /// The thread rings the writer knows of.
    view: WriterView,
    /// The sweep under way (a full drain), whose end is progress a flush can see.
    sweep: Option<Sweep>,
    /// Bytes released to producers since blocked ones were last woken.
    released_unannounced: u64,
}

/// How long a drain goes on.
enum Until {
    /// Until every ring has passed its head at the sweep's start.
    Swept,
    /// While a batch's worth is queued.
    BelowBatch,
}

impl Writer {
    fn new(core: Arc<Core>, sink: Box<dyn Sink>) -> Writer {
        let batch_bytes = core.config.batch_bytes;
        Writer {
            batch: Vec::with_capacity(batch_bytes + core.config.max_record_bytes),
            records: Vec::with_capacity(1024),
            core,
            sink: HeldSink::new(sink),
            reported: [[0; 5]; 4],
            failing: false,
            last_sync: Instant::now(),
            clock: WallClock::new(),
            captured: Vec::new(),
            rendered: Vec::new(),
            view: WriterView::default(),
            sweep: None,
            released_unannounced: 0,
        }
    }

    /// Wakes producers blocked for space (`Overflow::Block`) once a sixteenth of the
    /// budget (at least a batch) has been released since the last wake, or at once
    /// with `now` (the writer is about to stop draining). Waking them after every batch
    /// made them take turns with the writer a few hundred records at a time: the
    /// futex wake-ups and context switches were 13% of `perf record -g` on
    /// `cargo bench -p loglag --bench latency -- --throughput`. A blocked call may
    /// wait longer for it: until the writer has drained a sixteenth of the budget or
    /// finished its drain, and since a drain can stall in a slow sink's write, a waiter
    /// also looks again every 100 ms (`Core::wait_for_space`).
    fn released(&mut self, bytes: u64, now: bool) {
        self.released_unannounced += bytes;
        let config = &self.core.config;
        let enough = (config.capacity_bytes as u64 / 16).max(config.batch_bytes as u64);
        if self.released_unannounced > 0 && (now || self.released_unannounced >= enough) {
            self.released_unannounced = 0;
            self.core.space_released();
        }
    }

    fn run(mut self) {
        let interval = self.core.config.flush_interval;
        let batch_bytes = self.core.config.batch_bytes as u64;
        let poll = (interval / 10).min(std::time::Duration::from_millis(10));
        let mut last_full_drain = Instant::now();
        loop {
            let deadline = self.core.handshake.shutdown_deadline();
            // Urgent: a record at the flush level, a flush() call, a full queue.
            let urgent = self.core.wake_requested.swap(false, Ordering::AcqRel);
            // The interval runs from the last full drain, not from the last wake, so it
            // still fires when a steady trickle keeps the queue below a batch.
            let since = last_full_drain.elapsed();
            let drain_all = urgent || deadline.is_some() || since >= interval;
            self.core.lanes.refresh(&mut self.view);
            let queued = self.core.lanes.used_bytes_seen(&self.view);
            if !drain_all && queued < batch_bytes {
                let left = interval - since;
                if queued > 0 {
                    // Records are queued: look again soon rather than have the producer
                    // that fills the batch wake us (see `Core::writer_polling`). An idle
                    // pipeline, with nothing queued, does not poll.
                    self.core.writer_polling.store(true, Ordering::SeqCst);
                    thread::park_timeout(left.min(poll));
                } else {
                    self.core.writer_polling.store(false, Ordering::SeqCst);
                    // Store, then load the ring (the producer: push, then load the flag).
                    std::sync::atomic::fence(Ordering::SeqCst);
                    // A producer that filled a batch while we still looked polling did
                    // not wake us: check after the store (a SeqCst fence on each side).
                    if self.core.lanes.used_bytes_seen(&self.view) < batch_bytes {
                        thread::park_timeout(left);
                    }
                }
                continue;
            }
            // Write what is queued now, not what keeps arriving while we write: bounded
            // work per wake keeps batches large under constant load.
            let until = if drain_all {
                self.sweep = Some(self.core.lanes.begin_sweep(&mut self.view));
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
                let empty = self.core.lanes.used_bytes() == 0;
                if empty || Instant::now() >= deadline {
                    self.finish(empty);
                    return;
                }
            }
        }
    }

    /// Writes committed records in batches while `keep_going` says so. Returns false
    /// if the guard abandoned us.
    fn drain(&mut self, deadline: Option<Instant>, until: Until) -> bool {
        let core = self.core.clone();
        let lanes = &core.lanes;
        let batch_bytes = core.config.batch_bytes as u64;
        let mut spins = 0;
        loop {
            let keep_going = match (&until, &self.sweep) {
                (Until::Swept, Some(sweep)) => !lanes.swept(&self.view, sweep),
                _ => lanes.used_bytes_seen(&self.view) >= batch_bytes,
            };
            if !keep_going {
                break;
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                break;
            }
            self.batch.clear();
            self.records.clear();
            let records = &mut self.records;
            let (clock, rendered) = (&mut self.clock, &mut self.rendered);
            let max_record = core.config.max_record_bytes;
            let counters = &core.counters;
            // Captured records are rendered here, off the callers' threads, through
            // the same line builder, and cut like any record over `max_record_bytes`.
            let mut render = |level: Level, captured: &[u8], out: &mut Vec<u8>| {
                rendered.clear();
                crate::capture::render(captured, level, clock, rendered);
                if rendered.len() > max_record {
                    counters.truncated.fetch_add(1, Ordering::Relaxed);
                    crate::format::truncate_into(out, rendered, max_record);
                } else {
                    out.extend_from_slice(rendered);
                }
            };
            let spool = core.spool.as_ref();
            let start = lanes.shared.tail_position();
            // With a spool the space is released only once the batch is in the sink, so
            // a crash in between leaves the records in the file.
            let (taken, end) = lanes.pop_merged(
                &mut self.view,
                &mut self.batch,
                self.core.config.batch_bytes,
                spool.is_none(),
                &mut self.captured,
                &mut render,
                |p| records.push((p.len, p.level)),
            );
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
            if spool.is_none() {
                self.core.release_record_slots(taken as u64);
                self.released(self.batch.len() as u64, false);
            }
            self.core
                .counters
                .note_backlog(lanes.used_bytes_seen(&self.view) + self.batch.len() as u64);
            // Registered before any sink call (rotation, a notice, the write itself):
            // whichever of them hangs past the shutdown deadline, the guard finds the
            // batch in flight and counts it, so no taken record is counted by nobody.
            self.register_batch();
            // The sink's one chance to switch files (rotation), before the spool
            // records which file and offset this batch goes to.
            let batch_len = self.batch.len();
            if call_sink(|| self.sink.sink().before_batch(batch_len)).is_err() {
                // The batch still goes to the current file; the failure is counted.
                self.core
                    .counters
                    .write_errors
                    .fetch_add(1, Ordering::Relaxed);
            }
            self.core.note_sink_fd(self.sink.descriptor());
            if let Some(&(len, _)) = self.records.last() {
                let batch = &self.batch;
                self.core.follow_records_format(&batch[batch.len() - len..]);
            }
            if let Some(ledger) = self.core.counters.ledger.get() {
                // Recovery after a crash announces drops in the format the log had.
                ledger.set_report_format(self.core.report_format());
            }
            if let Some(notice) = self.sink.take_notice() {
                let line = crate::metrics::own_line(self.core.report_format(), &notice, &[]);
                self.write_line(&line);
            }
            if let Some(header) = spool {
                let (position, identity) = crate::sink::place(self.sink.sink());
                header.begin_batch(end, position, identity, self.batch.len() as u64);
            }
            if !self.write_batch() {
                self.released(0, true);
                return false;
            }
            if let Some(header) = spool {
                self.sync_spool(header);
                header.end_batch(end);
                lanes.shared.release(start, end);
                self.core.release_record_slots(taken as u64);
                self.released(end - start, false);
            }
            // Under sustained load this loop may run for a while; announce drops as
            // they happen rather than when the queue finally empties.
            self.report_drops();
            self.publish_progress();
        }
        self.released(0, true);
        self.report_drops();
        let _ = call_sink(|| self.sink.sink().flush());
        self.publish_progress();
        true
    }

    /// Applies the spool's sync policy after a batch.
    fn sync_spool(&mut self, header: &crate::spool::SpoolHeader) {
        use crate::spool::SpoolSync;
        let due = match header.sync {
            SpoolSync::Never => false,
            SpoolSync::EveryFlush => true,
            SpoolSync::Every(d) => self.last_sync.elapsed() >= d,
        };
        if due {
            let _ = crate::sink::sync(self.sink.sink());
            self.core.lanes.shared.sync_storage();
            self.last_sync = Instant::now();
        }
    }

    fn publish_progress(&self) {
        if let Some(done) = self.core.lanes.progress(&self.view, self.sweep.as_ref()) {
            self.core.handshake.advance(done);
        }
    }

    /// Tells the handshake which records the writer now holds.
    fn register_batch(&self) {
        let mut per_level = [0u64; 5];
        for &(_, level) in &self.records {
            per_level[level as usize] += 1;
        }
        self.core.handshake.begin_batch(self.batch.len(), per_level);
    }

    /// Writes `batch` (registered by `register_batch`) and accounts for each record in
    /// it. Returns false if abandoned.
    fn write_batch(&mut self) -> bool {
        let core = &self.core;
        let counters = &core.counters;
        let result = counters.measured_write(&mut self.sink, &self.batch);

        // Accounting happens inside the handshake so it cannot race with a guard that
        // gives up on us at the deadline and counts the batch as lost.
        let batch = &self.batch;
        let records = &self.records;
        let failing = &mut self.failing;
        core.handshake.end_batch(|| match result {
            Ok(refused) => {
                // Records the peer refused inside the batch (RELP's `500`): each is
                // dropped (`io_error`) with its level, not written.
                let mut refused_bytes = 0u64;
                let mut refused_records = 0u64;
                if !refused.is_empty() {
                    let mut start = 0u64;
                    for &(len, level) in records {
                        if refused.contains(&start) {
                            counters.count_drop(DropReason::IoError, level, 1);
                            refused_bytes += len as u64;
                            refused_records += 1;
                        }
                        start += len as u64;
                    }
                }
                counters
                    .written_bytes
                    .fetch_add(batch.len() as u64 - refused_bytes, Ordering::Relaxed);
                counters
                    .written_records
                    .fetch_add(records.len() as u64 - refused_records, Ordering::AcqRel);
                *failing = false;
            }
            Err((error, partial)) => {
                counters.write_errors.fetch_add(1, Ordering::Relaxed);
                let mut end = 0;
                let mut written = 0;
                let mut lost = [0u64; 5];
                for &(len, level) in records {
                    end += len;
                    if end <= partial {
                        written += 1;
                    } else {
                        lost[level as usize] += 1;
                    }
                }
                counters
                    .written_bytes
                    .fetch_add(partial as u64, Ordering::Relaxed);
                counters
                    .written_records
                    .fetch_add(written, Ordering::AcqRel);
                for level in Level::ALL {
                    counters.count_drop(DropReason::IoError, level, lost[level as usize]);
                }
                if !*failing {
                    eprintln!(
                        "loglag: write to the log sink failed: {error}; {} records dropped (io_error), counting further failures silently until a write succeeds",
                        lost.iter().sum::<u64>()
                    );
                }
                *failing = true;
            }
        })
    }

    /// Announces drops since the last report, in-band, in the sink's format. If the
    /// announcement cannot be written it is retried after the next batch, so the count
    /// is never lost.
    fn report_drops(&mut self) {
        let counters = &self.core.counters;
        let now: [[u64; 5]; 4] = std::array::from_fn(|r| {
            std::array::from_fn(|l| counters.dropped[r][l].load(Ordering::Acquire))
        });
        let delta: [[u64; 5]; 4] =
            std::array::from_fn(|r| std::array::from_fn(|l| now[r][l] - self.reported[r][l]));
        let by_reason: [u64; 4] = delta.map(|levels| levels.iter().sum());
        let total: u64 = by_reason.iter().sum();
        if total == 0 {
            return;
        }
        let line = crate::metrics::drop_report_line(
            self.core.report_format(),
            by_reason,
            "since last report",
        );
        // Journaled in the spool first: a kill right after the write (where SIGKILL
        // lands, on the way out of the system call) must not announce it twice.
        let ledger = self.core.counters.ledger.get().copied();
        if let Some(ledger) = ledger {
            let (position, identity) = crate::sink::place(self.sink.sink());
            ledger.begin_report(&delta, line.len() as u64, position, identity);
        }
        let written = self.write_line(&line);
        if let Some(ledger) = ledger {
            ledger.end_report(written);
        }
        if written {
            self.reported = now;
        }
    }

    /// Writes one of `loglag`'s own lines between whole records. Returns whether it was
    /// written.
    fn write_line(&mut self, line: &[u8]) -> bool {
        let counters = &self.core.counters;
        if counters.end_torn_line(self.sink.sink()).is_err() {
            return false;
        }
        let (calls, result) = write_all_counted(self.sink.sink(), line);
        counters.write_syscalls.fetch_add(calls, Ordering::Relaxed);
        if let Err((_, partial)) = &result {
            counters.note_partial(line, *partial);
        }
        if result.is_ok() {
            counters
                .written_bytes
                .fetch_add(line.len() as u64, Ordering::Relaxed);
        }
        result.is_ok()
    }

    /// Ends the thread at shutdown: counts whatever the deadline cut off.
    fn finish(mut self, drained: bool) {
        if !drained && self.core.spool.is_some() {
            eprintln!(
                "loglag: shutdown deadline of {:?} passed; {} queued bytes stay in the spool for the next start",
                self.core.config.shutdown_timeout,
                self.core.lanes.used_bytes()
            );
        } else if !drained {
            let counters = &self.core.counters;
            let mut cut = 0u64;
            self.core.lanes.discard_committed(|p| {
                counters.count_drop(DropReason::Shutdown, p.level, 1);
                cut += 1;
            });
            eprintln!(
                "loglag: shutdown deadline of {:?} passed; {cut} queued records lost (shutdown)",
                self.core.config.shutdown_timeout
            );
            self.report_drops();
        }
        let _ = call_sink(|| self.sink.sink().flush());
        // Every batch was accounted for in `write_batch`: nothing is in flight here.
        self.core.handshake.exit(self.core.lanes.tail_sum(), |_| {});
    }
}

#[cfg(test)]
mod tests {
    use super::*;
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
        crate::NonBlockingBuilder::default()
            .mode(crate::Mode::Async)
            .config()
    }

    /// Runs a writer on this thread over `core`, whose shutdown deadline has already
    /// passed with `queued` records still in the ring: it must stop at once and deal
    /// with what the deadline cut off.
    fn run_past_the_deadline(core: &Arc<Core>, queued: usize) -> Keep {
        for i in 0..queued {
            core.submit(Level::Info, format!("queued {i}\n").as_bytes());
        }
        core.closed.store(true, Ordering::Release);
        core.handshake
            .begin_shutdown(Instant::now() - std::time::Duration::from_secs(1));
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
        assert!(core.handshake.has_exited());
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
