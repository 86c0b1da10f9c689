//! The writer's side of [`Core`]: the one API the `loglag-writer` thread (`worker.rs`)
//! drains through. The writer decides when to drain and makes the sink calls; the
//! methods here are the only place it reaches the rings, the counters and the
//! handshake, so each keeps one invariant whole: a batch taken is in flight before any
//! sink call, every record of a written batch is accounted for exactly once (written,
//! refused, or lost to a failed write), space goes back to producers only once it may,
//! and drops are announced in-band and journaled in the spool before they leave the
//! ledger. What the writer keeps between calls is a [`DrainState`], opaque to it.

use std::sync::atomic::Ordering;
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use super::Core;
use crate::core::handshake::Abandoned;
use crate::core::metrics::Counters;
use crate::queue::lanes::{Sweep, WriterView};
use crate::record::clock::WallClock;
use crate::record::drops::{DropReason, DROP_REASONS};
use crate::record::level::Level;
use crate::sink::{write_all_counted, HeldSink, Sink};
use crate::spool::SpoolHeader;

/// How long a drain goes on.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Until {
    /// Until every ring has passed its head at the sweep's start.
    Swept,
    /// While a batch's worth is queued.
    BelowBatch,
}

/// What the writer carries from one call to the next: its view of the rings, the
/// sweep under way, the batch it took last, and what it has announced so far.
pub(crate) struct DrainState {
    batch: Vec<u8>,
    /// (length, level) of each record in `batch`, to account for partial failures.
    records: Vec<(usize, Level)>,
    /// Records taken into `batch`, and the shared ring's positions before and after
    /// them: with a spool, what is released once the batch is in the sink.
    taken: usize,
    start: u64,
    end: u64,
    /// Drops by reason already announced in-band.
    reported: [[u64; 5]; DROP_REASONS],
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
    /// Since when the shared ring has been empty at one `head`, and how much of its
    /// memory has been given back since (`Core::give_back_idle_memory`).
    shared_idle: SharedIdle,
}

#[derive(Debug, Clone, Copy)]
struct SharedIdle {
    head: u64,
    since: Instant,
    given_back: u64,
}

/// How long the shared ring stays empty before its memory goes back: well past a
/// flush interval, so a pipeline that logs in bursts a second apart or less does not
/// give memory back between them and make it resident again.
const GIVE_BACK_AFTER: Duration = Duration::from_secs(1);

impl DrainState {
    pub(crate) fn new(core: &Core) -> DrainState {
        let batch_bytes = core.config.batch_bytes;
        DrainState {
            batch: Vec::with_capacity(batch_bytes + core.config.max_record_bytes),
            records: Vec::with_capacity(1024),
            taken: 0,
            start: 0,
            end: 0,
            reported: [[0; 5]; DROP_REASONS],
            failing: false,
            last_sync: Instant::now(),
            clock: WallClock::new(),
            captured: Vec::new(),
            rendered: Vec::new(),
            view: WriterView::default(),
            sweep: None,
            released_unannounced: 0,
            shared_idle: SharedIdle {
                head: u64::MAX,
                since: Instant::now(),
                given_back: 0,
            },
        }
    }

    /// Bytes of the batch taken last.
    pub(crate) fn batch_len(&self) -> usize {
        self.batch.len()
    }
}

impl Core {
    // ---- the writer thread's start

    /// Publishes the writer thread, for producers to unpark. Until then the writer
    /// polls at `flush_interval`, so nothing is lost in between.
    pub(crate) fn register_writer(&self, thread: Thread) {
        let _ = self.writer.set(thread);
    }

    // ---- waiting for work

    /// The deadline set by shutdown, once it has begun.
    pub(crate) fn shutdown_deadline(&self) -> Option<Instant> {
        self.handshake.shutdown_deadline()
    }

    /// Takes the request for an urgent, full drain: a record at the flush level, a
    /// `flush()` call, a full queue.
    pub(crate) fn take_wake_request(&self) -> bool {
        self.wake_requested.swap(false, Ordering::AcqRel)
    }

    /// Refreshes the writer's list of rings (threads may have claimed new ones), keeps
    /// their memory resident ahead of the producers, and returns the bytes queued.
    pub(crate) fn queued_seen(&self, state: &mut DrainState) -> u64 {
        self.lanes.refresh(&mut state.view);
        self.keep_resident_ahead(state);
        self.lanes.used_bytes_seen(&state.view)
    }

    /// Makes ring memory resident ahead of the producers (`Ring::keep_resident_ahead`),
    /// so that their first lap does not fault; between batches.
    pub(crate) fn keep_resident_ahead(&self, state: &DrainState) {
        self.lanes.keep_resident_ahead(&state.view);
    }

    /// Waits, up to `left`, for a batch's worth: `queued` bytes (less than a batch) are
    /// queued now. With some queued it polls every `poll` and producers need not wake
    /// it; with none it parks until woken, or `left`.
    pub(crate) fn wait_for_batch(
        &self,
        state: &mut DrainState,
        queued: u64,
        left: Duration,
        poll: Duration,
    ) {
        if queued > 0 {
            // Records are queued: look again soon rather than have the producer
            // that fills the batch wake us (see `Core::writer_polling`). An idle
            // pipeline, with nothing queued, does not poll.
            self.writer_polling.store(true, Ordering::SeqCst);
            thread::park_timeout(left.min(poll));
        } else {
            self.give_back_idle_memory(state);
            self.writer_polling.store(false, Ordering::SeqCst);
            // Store, then load the ring (the producer: push, then load the flag, in
            // `Core::enqueue`).
            std::sync::atomic::fence(Ordering::SeqCst);
            // A producer that filled a batch while we still looked polling did
            // not wake us: check after the store (a SeqCst fence on each side).
            if self.lanes.used_bytes_seen(&state.view) < self.config.batch_bytes as u64 {
                thread::park_timeout(left);
            }
        }
    }

    /// While the writer waits with nothing queued: once the shared ring has been empty
    /// at one `head` for `GIVE_BACK_AFTER`, gives its memory back a chunk (an eighth
    /// of the room a TRACE record has in it) per wait, all but `RESIDENT_AHEAD` bytes
    /// past `head` (what it held at start). A record logged into it starts over.
    fn give_back_idle_memory(&self, state: &mut DrainState) {
        let ring = &self.lanes.shared;
        let head = ring.head_position();
        let idle = &mut state.shared_idle;
        if idle.head != head || ring.used_bytes() != 0 {
            *idle = SharedIdle {
                head,
                since: Instant::now(),
                given_back: 0,
            };
            return;
        }
        let keep = crate::queue::RESIDENT_AHEAD;
        let left = ring.capacity().saturating_sub(keep + idle.given_back);
        if left == 0 || idle.since.elapsed() < GIVE_BACK_AFTER {
            return;
        }
        // While a chunk is reserved it counts as queued: small enough that a record
        // of any level still finds room beside it, in the smallest the shared ring
        // can be (all thread rings made).
        let room = super::limit(
            &self.level_reserve,
            self.lanes.min_shared_capacity(),
            Level::Trace,
        );
        let chunk = (ring.capacity() / 8).min(room / 8).min(left);
        match ring.give_back(head, chunk) {
            Some(end) => {
                idle.given_back += end - head;
                idle.head = end;
                // A producer that arrived while the chunk was reserved may wait.
                self.space_released();
            }
            // Nothing more to do (a ring that is not ours to give back, or a
            // producer got there first: then `head` moves and this starts over).
            None => idle.given_back = ring.capacity(),
        }
    }

    // ---- a drain

    /// Starts a sweep (a full drain): it ends when every ring has passed its head as
    /// of now, and its end is progress a flush can see.
    pub(crate) fn begin_sweep(&self, state: &mut DrainState) {
        state.sweep = Some(self.lanes.begin_sweep(&mut state.view));
    }

    /// Whether a drain that goes on `until` takes another batch.
    pub(crate) fn drain_goes_on(&self, state: &DrainState, until: Until) -> bool {
        match (until, &state.sweep) {
            (Until::Swept, Some(sweep)) => !self.lanes.swept(&state.view, sweep),
            _ => self.lanes.used_bytes_seen(&state.view) >= self.config.batch_bytes as u64,
        }
    }

    /// Takes up to a batch of committed records from the rings, merged by merge key,
    /// into `state`; returns how many. With none taken nothing else happens (a producer
    /// may be a few instructions from publishing). Otherwise, without a spool, their
    /// slots and space go back to producers now (with one, once the batch is in the
    /// sink: [`Core::write_batch`]); the backlog is noted; and the batch is in flight
    /// with the handshake before the writer makes any sink call. The pop and the
    /// registration are one step under the handshake's lock, so a guard abandoning
    /// the writer never finds records in neither place. `Err(Abandoned)` if the guard
    /// has abandoned the writer already: it must stop, and counts nothing more.
    pub(crate) fn take_batch(&self, state: &mut DrainState) -> Result<usize, Abandoned> {
        self.handshake
            .take_into_flight(|| match self.pop_batch(state) {
                0 => (0, None),
                taken => {
                    let mut per_level = [0u64; 5];
                    for &(_, level) in &state.records {
                        per_level[level as usize] += 1;
                    }
                    (taken, Some((state.batch.len(), per_level)))
                }
            })
    }

    /// [`Core::take_batch`]'s pop, called under the handshake's lock.
    fn pop_batch(&self, state: &mut DrainState) -> usize {
        state.batch.clear();
        state.records.clear();
        let records = &mut state.records;
        let (clock, rendered) = (&mut state.clock, &mut state.rendered);
        let max_record = self.config.max_record_bytes;
        let counters = &self.counters;
        // Captured records are rendered here, off the callers' threads, through
        // the same line builder, and cut like any record over `max_record_bytes`.
        let mut render = |level: Level, captured: &[u8], out: &mut Vec<u8>| {
            rendered.clear();
            crate::record::capture::render(captured, level, clock, rendered);
            if rendered.len() > max_record {
                counters.truncated.fetch_add(1, Ordering::Relaxed);
                crate::record::truncate_into(out, rendered, max_record);
            } else {
                out.extend_from_slice(rendered);
            }
        };
        let spool = self.spool.as_ref();
        let start = self.lanes.shared.tail_position();
        // With a spool the space is released only once the batch is in the sink, so
        // a crash in between leaves the records in the file.
        let (taken, end) = self.lanes.pop_merged(
            &mut state.view,
            &mut state.batch,
            self.config.batch_bytes,
            spool.is_none(),
            &mut state.captured,
            &mut render,
            |p| records.push((p.len, p.level)),
        );
        (state.taken, state.start, state.end) = (taken, start, end);
        if taken == 0 {
            return 0;
        }
        if spool.is_none() {
            self.release_record_slots(taken as u64);
            self.released(state, state.batch.len() as u64, false);
        }
        self.counters
            .note_backlog(self.lanes.used_bytes_seen(&state.view) + state.batch.len() as u64);
        taken
    }

    /// A sink call failed outside a write (`before_batch`): counted as a write error.
    pub(crate) fn count_write_error(&self) {
        self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
    }

    /// In-band reports follow the format of the batch's last record (unless the format
    /// is settled), and a spool's ledger keeps the format for recovery.
    pub(crate) fn follow_batch_format(&self, state: &DrainState) {
        if let Some(&(len, _)) = state.records.last() {
            let batch = &state.batch;
            self.follow_records_format(&batch[batch.len() - len..]);
        }
        if let Some(ledger) = self.counters.ledger.get() {
            // Recovery after a crash announces drops in the format the log had.
            ledger.set_report_format(self.report_format());
        }
    }

    /// Writes a sink's notice in-band, as one of loglag's own lines between records.
    pub(crate) fn write_notice(&self, sink: &mut HeldSink, notice: &str) {
        let line = crate::record::drops::own_line(self.report_format(), notice, &[]);
        self.write_own_line(sink, &line);
    }

    /// Writes the batch taken last to `sink` and accounts for each record in it. With
    /// a spool the batch is journaled first (after `before_batch`, so the journal names
    /// the file it goes to), and once it is written the spool is synced by its policy,
    /// the batch ended and its space given back. Returns false if the guard abandoned
    /// the writer meanwhile: it must stop, and counts nothing more.
    pub(crate) fn write_batch(&self, state: &mut DrainState, sink: &mut HeldSink) -> bool {
        // A guard that abandoned the writer while it was in `before_batch` or a notice
        // has counted this batch as lost: writing it now would put records counted as
        // dropped into the log.
        if self.handshake.is_abandoned() {
            return false;
        }
        let spool = self.spool.as_ref();
        if let Some(header) = spool {
            let (position, identity) = crate::sink::place(sink.sink());
            header.begin_batch(state.end, position, identity, state.batch.len() as u64);
        }
        if !self.write_and_account(state, sink) {
            return false;
        }
        if let Some(header) = spool {
            self.sync_spool(state, header, sink);
            header.end_batch(state.end);
            self.lanes.shared.release(state.start, state.end);
            self.release_record_slots(state.taken as u64);
            self.released(state, state.end - state.start, false);
        }
        true
    }

    /// Writes the batch (registered by `take_batch`) and accounts for each record in
    /// it. Returns false if abandoned.
    fn write_and_account(&self, state: &mut DrainState, sink: &mut HeldSink) -> bool {
        let counters = &self.counters;
        let result = measured_write(counters, sink, &state.batch);

        // Accounting happens inside the handshake so it cannot race with a guard that
        // gives up on us at the deadline and counts the batch as lost.
        let batch = &state.batch;
        let records = &state.records;
        let failing = &mut state.failing;
        // What to say on stderr, said after the handshake's lock is let go: a blocked
        // stderr must not hold the lock the guard abandons the writer under.
        let mut first_failure: Option<String> = None;
        let accounted = self.handshake.end_batch(|| match result {
            Ok(refused) => {
                // Records the peer refused inside the batch (RELP's `500`, OTLP's
                // `partial_success`): each is dropped (`rejected`) with its level, not
                // written.
                let mut refused_bytes = 0u64;
                let mut refused_records = 0u64;
                if !refused.is_empty() {
                    // A collector that rejects everything refuses every record: look
                    // each up in O(log n), not O(n).
                    let mut refused = refused;
                    refused.sort_unstable();
                    let mut start = 0u64;
                    for &(len, level) in records {
                        if refused.binary_search(&start).is_ok() {
                            counters.count_drop(DropReason::Rejected, level, 1);
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
                    first_failure = Some(format!(
                        "loglag: write to the log sink failed: {error}; {} records dropped (io_error), counting further failures silently until a write succeeds",
                        lost.iter().sum::<u64>()
                    ));
                }
                *failing = true;
            }
        });
        if let Some(message) = first_failure {
            eprintln!("{message}");
        }
        accounted
    }

    /// Applies the spool's sync policy after a batch.
    fn sync_spool(&self, state: &mut DrainState, header: &SpoolHeader, sink: &mut HeldSink) {
        use crate::spool::SpoolSync;
        let due = match header.sync {
            SpoolSync::Never => false,
            SpoolSync::EveryFlush => true,
            SpoolSync::Every(d) => state.last_sync.elapsed() >= d,
        };
        if due {
            let _ = crate::sink::sync(sink.sink());
            self.lanes.shared.sync_storage();
            state.last_sync = Instant::now();
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
    fn released(&self, state: &mut DrainState, bytes: u64, now: bool) {
        state.released_unannounced += bytes;
        let config = &self.config;
        let enough = (config.capacity_bytes as u64 / 16).max(config.batch_bytes as u64);
        if state.released_unannounced > 0 && (now || state.released_unannounced >= enough) {
            state.released_unannounced = 0;
            self.space_released();
        }
    }

    /// The writer stops draining (the drain is over, or it was abandoned): producers
    /// blocked for space are woken for whatever it released and has not announced.
    pub(crate) fn announce_released(&self, state: &mut DrainState) {
        self.released(state, 0, true);
    }

    /// Announces drops since the last report, in-band, in the reports' format. If the
    /// announcement cannot be written it is retried after the next batch, so the count
    /// is never lost.
    pub(crate) fn report_drops(&self, state: &mut DrainState, sink: &mut HeldSink) {
        let counters = &self.counters;
        let mut now: [[u64; 5]; DROP_REASONS] = std::array::from_fn(|r| {
            std::array::from_fn(|l| counters.dropped[r][l].load(Ordering::Acquire))
        });
        // With the refusals counted on the callers' threads. Not asked where there
        // are none: it takes the lock the threads' first records take.
        if self.refuses_on_threads() {
            let refused = self.thread_counts().refused;
            for (total, refused) in now[DropReason::QueueFull as usize].iter_mut().zip(refused) {
                *total += refused;
            }
        }
        let delta: [[u64; 5]; DROP_REASONS] =
            std::array::from_fn(|r| std::array::from_fn(|l| now[r][l] - state.reported[r][l]));
        let by_reason: [u64; DROP_REASONS] = delta.map(|levels| levels.iter().sum());
        let total: u64 = by_reason.iter().sum();
        if total == 0 {
            return;
        }
        let line = crate::record::drops::drop_report_line(
            self.report_format(),
            &delta,
            "since last report",
        );
        // Journaled in the spool first: a kill right after the write (where SIGKILL
        // lands, on the way out of the system call) must not announce it twice.
        let ledger = self.counters.ledger.get().copied();
        if let Some(ledger) = ledger {
            let (position, identity) = crate::sink::place(sink.sink());
            ledger.begin_report(&delta, line.len() as u64, position, identity);
        }
        let written = self.write_own_line(sink, &line);
        if let Some(ledger) = ledger {
            ledger.end_report(written);
        }
        if written {
            state.reported = now;
        }
    }

    /// Writes one of `loglag`'s own lines between whole records. Returns whether it was
    /// written.
    fn write_own_line(&self, sink: &mut HeldSink, line: &[u8]) -> bool {
        let counters = &self.counters;
        if end_torn_line(counters, sink.sink()).is_err() {
            return false;
        }
        let (calls, result) = write_all_counted(sink.sink(), line);
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

    /// Publishes how far the writer has got, for flushes waiting on it: with one ring
    /// its tail, with thread rings the end of the last finished sweep.
    pub(crate) fn publish_progress(&self, state: &DrainState) {
        if let Some(done) = self.lanes.progress(&state.view, state.sweep.as_ref()) {
            self.handshake.advance(done);
        }
    }

    // ---- the writer thread's end

    /// Whether every ring is empty.
    pub(crate) fn queue_is_empty(&self) -> bool {
        self.lanes.used_bytes() == 0
    }

    /// The shutdown deadline passed with records still queued: without a spool they
    /// are lost, counted as `shutdown` drops; with one they stay in the file for the
    /// next start. Says which on stderr; returns whether drops were counted (for the
    /// writer to announce in-band).
    pub(crate) fn cut_off_at_deadline(&self) -> bool {
        if self.spool.is_some() {
            eprintln!(
                "loglag: shutdown deadline of {:?} passed; {} queued bytes stay in the spool for the next start",
                self.config.shutdown_timeout,
                self.lanes.used_bytes()
            );
            false
        } else {
            let counters = &self.counters;
            let mut cut = 0u64;
            self.lanes.discard_committed(|p| {
                counters.count_drop(DropReason::Shutdown, p.level, 1);
                cut += 1;
            });
            eprintln!(
                "loglag: shutdown deadline of {:?} passed; {cut} queued records lost (shutdown)",
                self.config.shutdown_timeout
            );
            true
        }
    }

    /// The writer's last act at shutdown: every batch was accounted for in
    /// `write_batch`, so nothing is in flight here.
    pub(crate) fn writer_finished(&self) {
        self.handshake.exit(self.lanes.tail_sum(), |_| {});
    }

    /// The writer thread panicked outside any sink call (sink panics are caught per
    /// call): a bug in loglag itself. Nobody may wait for it any more: close the
    /// pipeline, count what it held as lost, and wake every waiter.
    pub(crate) fn writer_died(&self) {
        self.call.closed.store(true, Ordering::Release);
        self.handshake.exit(self.lanes.tail_sum(), |batch| {
            if self.spool.is_none() {
                let counters = &self.counters;
                let levels = batch.take();
                for level in Level::ALL {
                    counters.count_drop(DropReason::IoError, level, levels[level as usize]);
                }
                self.lanes
                    .discard_committed(|p| counters.count_drop(DropReason::IoError, p.level, 1));
            }
        });
        self.space_released();
        eprintln!("loglag: the writer thread panicked; the pipeline is closed and further records are dropped (shutdown)");
    }
}

/// Writes all of `bytes` to `sink`, recording in `counters` the write's latency, its
/// system calls and any errors a fallback absorbed. Used by the writer thread and by
/// `sync` mode.
pub(super) fn measured_write(
    counters: &Counters,
    sink: &mut HeldSink,
    bytes: &[u8],
) -> Result<Vec<u64>, (std::io::Error, usize)> {
    let started = Instant::now();
    if let Err(e) = end_torn_line(counters, sink.sink()) {
        return Err((e, 0));
    }
    // Offsets of refused records count from the first byte of `bytes`.
    sink.start_counting_refusals();
    let (calls, result) = write_all_counted(sink.sink(), bytes);
    let refused = sink.take_refused();
    counters.write_latency.record(started.elapsed());
    counters.write_syscalls.fetch_add(calls, Ordering::Relaxed);
    let absorbed = sink.take_absorbed_errors();
    counters.write_errors.fetch_add(absorbed, Ordering::Relaxed);
    if let Err((_, partial)) = &result {
        counters.note_partial(bytes, *partial);
    }
    result.map(|()| refused)
}

/// If a failed write left a fragment, ends its line first, so that the next record
/// starts on a line of its own (the fragment's record is already counted as lost).
/// An error if the sink refused even that.
fn end_torn_line(counters: &Counters, sink: &mut dyn Sink) -> Result<(), std::io::Error> {
    if !counters.torn_line.load(Ordering::Relaxed) {
        return Ok(());
    }
    let (calls, result) = write_all_counted(sink, b"\n");
    counters.write_syscalls.fetch_add(calls, Ordering::Relaxed);
    match result {
        Ok(()) => {
            counters.written_bytes.fetch_add(1, Ordering::Relaxed);
            counters.torn_line.store(false, Ordering::Relaxed);
            Ok(())
        }
        Err((e, _)) => Err(e),
    }
}
