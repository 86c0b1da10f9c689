//! The shared state behind every front-end: the producer path, accounting, flush and
//! shutdown. The writer thread's loop is in `worker.rs`.

use std::cell::{Cell, RefCell};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::capture::{self, Encoder, Site};
use crate::clock;
use crate::format::{self, time::coarse_monotonic_ns, Format};
use crate::handshake::{Handshake, WriterEnd};
use crate::lanes::Lanes;
use crate::level::Level;
use crate::metrics::{Counters, DropReason, Metrics};
use crate::mode::Mode;
use crate::overflow::Overflow;
use crate::queue::{footprint, Full, Ring};
use crate::sink::Sink;
use crate::spool::{Recovered, SpoolHeader};

/// Everything the builder decided, validated: the pipeline adjusts none of it.
pub(crate) type Config = crate::settings::Settings;

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

pub(crate) struct Core {
    id: u64,
    pub(crate) config: Config,
    /// The rings: the shared one and each logging thread's own.
    pub(crate) lanes: Lanes,
    pub(crate) counters: Counters,
    /// Per-thread `accepted` counters: each has a single writer, so counting costs a
    /// plain store, not a shared read-modify-write.
    accepted_slots: Mutex<Vec<Arc<AtomicU64>>>,
    accepted_retired: AtomicU64,
    /// Slot-list length at which exited threads' slots are next folded away.
    fold_at: std::sync::atomic::AtomicUsize,
    /// The share of a ring kept free for higher levels (`ShedByLevel`), per level.
    level_reserve: [f64; 5],
    /// `limit` for a thread ring, per level, computed once: every thread ring has the
    /// same capacity, and this is the hot path.
    thread_ring_limit: [u64; 5],
    pub(crate) closed: AtomicBool,
    pub(crate) writer: OnceLock<Thread>,
    pub(crate) wake_requested: AtomicBool,
    /// The writer is parked for a short poll because records are queued: a producer
    /// that fills a batch need not wake it. Waking a parked thread is a futex system
    /// call, microseconds on the caller's path (p99.9 7.8 µs before this, 1.3 µs after,
    /// `cargo bench -p loglag --bench latency -- --rounds 1 --only loglag_macro`).
    pub(crate) writer_polling: AtomicBool,
    waiting_producers: AtomicU64,
    /// Records holding a slot under `max_records` (queued, or in a spool batch not yet
    /// written). Only touched when `max_records` is set.
    queued_records: AtomicU64,
    space: (Mutex<()>, Condvar),
    /// Progress, the batch in flight and the shutdown deadline, shared by the writer,
    /// flushers and the guard.
    pub(crate) handshake: Handshake,
    /// The sink itself in `sync` mode (there is no writer thread then).
    pub(crate) sync_sink: Mutex<Option<crate::sink::HeldSink>>,
    /// Spool mode: the mapped file's header, and what recovery delivered at start.
    pub(crate) spool: Option<SpoolHeader>,
    recovered: Recovered,
    /// The format of in-band drop reports, as [`Format::index`].
    report_format: std::sync::atomic::AtomicU8,
    /// The fork generation this pipeline was built in (see `fork.rs`).
    born_in: u64,
    /// The sink's descriptor as of the writer's last batch, or -1: where a forked
    /// child writes.
    sink_fd: std::sync::atomic::AtomicI32,
    /// What `sink_fd` referred to when it was stored (device, inode): a child checks it
    /// before writing, so a descriptor number closed and reused since is never written.
    sink_identity: [AtomicU64; 2],
    /// Whether this (forked child) process has said on stderr how it logs.
    child_warned: AtomicBool,
    /// Whether the report format is settled (set on the builder, or adopted from a
    /// front-end); until then the writer follows the records it writes.
    report_format_settled: AtomicBool,
}

impl std::fmt::Debug for Core {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Core")
            .field("config", &self.config)
            .field("lanes", &self.lanes)
            .finish()
    }
}

thread_local! {
    /// The pipeline whose producer path (counting, claiming a ring, pushing) this
    /// thread is inside; 0 for none.
    static PRODUCING: Cell<u64> = const { Cell::new(0) };
    /// (core id, this thread's accepted counter for that core).
    static ACCEPTED: RefCell<Vec<(u64, Arc<AtomicU64>)>> = const { RefCell::new(Vec::new()) };
    /// Scratch for records that must be truncated.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    /// The id of the pipeline whose sink this thread is inside right now: the writer
    /// thread (for its whole life) or a `sync`-mode write. 0 outside any sink. A record
    /// logged here must never wait: only this thread can make the room it would wait for.
    static INSIDE_SINK: Cell<u64> = const { Cell::new(0) };
}

/// Marks this thread as inside one pipeline's sink (`INSIDE_SINK`) or producer path
/// (`PRODUCING`) until dropped, then gives back the mark it replaced. (Nothing to give
/// back from a thread-local destructor, where the mark is gone.)
pub(crate) struct ThreadMark {
    mark: &'static std::thread::LocalKey<Cell<u64>>,
    previous: Option<u64>,
}

impl ThreadMark {
    fn set(mark: &'static std::thread::LocalKey<Cell<u64>>, core_id: u64) -> ThreadMark {
        let previous = mark.try_with(|c| c.replace(core_id)).ok();
        ThreadMark { mark, previous }
    }

    /// This thread is inside `core_id`'s sink.
    pub(crate) fn inside_sink(core_id: u64) -> ThreadMark {
        ThreadMark::set(&INSIDE_SINK, core_id)
    }
}

impl Drop for ThreadMark {
    fn drop(&mut self) {
        if let Some(previous) = self.previous {
            let _ = self.mark.try_with(|c| c.set(previous));
        }
    }
}

/// Whether this thread is inside some loglag sink (any pipeline's).
pub(crate) fn inside_any_sink() -> bool {
    INSIDE_SINK.try_with(|c| c.get() != 0).unwrap_or(false)
}

static NEXT_CORE_ID: AtomicU64 = AtomicU64::new(1);

/// Bytes of a ring of capacity `cap` a record of `level` may fill, given each level's
/// reserve (`ShedByLevel`).
fn limit(level_reserve: &[f64; 5], cap: u64, level: Level) -> u64 {
    let reserve = level_reserve[level as usize];
    if reserve == 0.0 {
        cap
    } else {
        cap - (cap as f64 * reserve) as u64
    }
}

impl Core {
    pub(crate) fn new(config: Config, sync_sink: Option<Box<dyn Sink>>) -> Core {
        let id = NEXT_CORE_ID.fetch_add(1, Ordering::Relaxed);
        let thread_ring_bytes = match config.mode {
            // No writer thread, no rings to give threads.
            Mode::Sync | Mode::Off | Mode::FormatOnly => 0,
            Mode::Async => config
                .thread_ring_bytes
                .unwrap_or_else(|| crate::lanes::default_thread_ring_bytes(config.capacity_bytes)),
        };
        let lanes = Lanes::new(id, config.capacity_bytes, thread_ring_bytes);
        Core::with_lanes(id, config, lanes, sync_sink, None, Recovered::default())
    }

    /// A pipeline over one given ring (a spool's).
    pub(crate) fn with_ring(
        config: Config,
        ring: Ring,
        sync_sink: Option<Box<dyn Sink>>,
        spool: Option<SpoolHeader>,
        recovered: Recovered,
    ) -> Core {
        let id = NEXT_CORE_ID.fetch_add(1, Ordering::Relaxed);
        Core::with_lanes(
            id,
            config,
            Lanes::single(id, ring),
            sync_sink,
            spool,
            recovered,
        )
    }

    fn with_lanes(
        id: u64,
        mut config: Config,
        lanes: Lanes,
        sync_sink: Option<Box<dyn Sink>>,
        spool: Option<SpoolHeader>,
        recovered: Recovered,
    ) -> Core {
        // A record must always fit the shared ring (where a record too long for a
        // thread's ring goes) with room to spare, or a policy could wait forever.
        let cap = lanes.min_shared_capacity();
        let max_fit = (cap / 2).saturating_sub(crate::queue::HEADER) as usize;
        config.max_record_bytes = config.max_record_bytes.clamp(64.min(max_fit), max_fit);
        let reserve = config.reserve_fraction;
        let level_reserve = match config.overflow {
            Overflow::ShedByLevel => [2.0 * reserve, 2.0 * reserve, reserve, 0.0, 0.0],
            _ => [0.0; 5],
        };
        let thread_ring_limit = std::array::from_fn(|l| {
            limit(
                &level_reserve,
                lanes.thread_ring_capacity(),
                Level::from_index(l as u8),
            )
        });
        let config_report = config.report_format;
        // Read /proc/cpuinfo here, once, never on a caller's path.
        clock::decide();
        Core {
            id,
            config,
            lanes,
            counters: {
                let counters = Counters::default();
                if let Some(header) = &spool {
                    let _ = counters.ledger.set(header.ledger());
                }
                counters
            },
            accepted_slots: Mutex::new(Vec::new()),
            accepted_retired: AtomicU64::new(0),
            fold_at: std::sync::atomic::AtomicUsize::new(64),
            level_reserve,
            thread_ring_limit,
            closed: AtomicBool::new(false),
            writer: OnceLock::new(),
            wake_requested: AtomicBool::new(false),
            writer_polling: AtomicBool::new(false),
            waiting_producers: AtomicU64::new(0),
            queued_records: AtomicU64::new(0),
            space: (Mutex::new(()), Condvar::new()),
            handshake: Handshake::default(),
            sync_sink: Mutex::new(sync_sink.map(crate::sink::HeldSink::new)),
            report_format: std::sync::atomic::AtomicU8::new(
                config_report.unwrap_or(Format::Compact).index(),
            ),
            report_format_settled: AtomicBool::new(config_report.is_some()),
            born_in: crate::fork::watch(),
            sink_fd: std::sync::atomic::AtomicI32::new(-1),
            sink_identity: [AtomicU64::new(0), AtomicU64::new(0)],
            child_warned: AtomicBool::new(false),
            spool,
            recovered,
        }
    }

    /// The format the writer uses for in-band drop reports.
    pub(crate) fn report_format(&self) -> Format {
        Format::from_index(self.report_format.load(Ordering::Relaxed))
    }

    /// A front-end writing `format` asks for reports in the same format, so that a JSON
    /// log stays all JSON. An explicit `NonBlockingBuilder::report_format` wins.
    pub(crate) fn adopt_report_format(&self, format: Format) {
        if self.config.report_format.is_none() {
            self.report_format.store(format.index(), Ordering::Relaxed);
            self.report_format_settled.store(true, Ordering::Relaxed);
        }
    }

    /// With no format set or adopted, reports follow the records around them: JSON
    /// when the latest record is a JSON object (`fmt().json()` through the
    /// `MakeWriter`), syslog when it is an RFC 5424 message, compact text otherwise.
    pub(crate) fn follow_records_format(&self, latest_record: &[u8]) {
        if self.report_format_settled.load(Ordering::Relaxed) {
            return;
        }
        let format = match latest_record.first() {
            Some(b'{') => Format::Json,
            // `<PRI>1 …`: an RFC 5424 message, for a syslog collector.
            Some(b'<') => Format::Syslog,
            _ => Format::Compact,
        };
        self.report_format.store(format.index(), Ordering::Relaxed);
    }

    pub(crate) fn mode(&self) -> Mode {
        self.config.mode
    }

    /// Enters this pipeline's producer path on this thread; `None` if this thread is
    /// already in it. That happens only to a signal handler that logs, interrupting
    /// this thread while it logged to the same pipeline: its record cannot take the
    /// ring claim lock, or the ring, that the interrupted call holds, so it is counted
    /// accepted on a shared atomic and dropped as `reentrant`. Another pipeline is
    /// entered as usual (a `sync` sink that logs through a second pipeline), and the
    /// thread-local tables the pipelines share are borrowed with `try_`. A sink that
    /// logs into its own pipeline runs on the writer, or is caught here in `sync` mode.
    #[inline]
    fn enter_producing(&self) -> Option<ThreadMark> {
        let reentered = PRODUCING.try_with(|p| p.get() == self.id).unwrap_or(false);
        (!reentered).then(|| ThreadMark::set(&PRODUCING, self.id))
    }

    /// A re-entered record (see [`Core::enter_producing`]): accepted and dropped with
    /// atomics only, which a signal handler may use.
    #[cold]
    fn drop_reentrant(&self, level: Level) {
        self.accepted_retired.fetch_add(1, Ordering::AcqRel);
        self.counters.count_drop(DropReason::Reentrant, level, 1);
    }

    fn count_accepted(&self) {
        let counted = ACCEPTED.try_with(|slots| {
            // Busy only if a signal handler logging to another pipeline interrupted
            // this thread here: that one record is counted on the shared atomic.
            let Ok(mut slots) = slots.try_borrow_mut() else {
                self.accepted_retired.fetch_add(1, Ordering::AcqRel);
                return;
            };
            if let Some((_, slot)) = slots.iter().find(|(id, _)| *id == self.id) {
                slot.store(slot.load(Ordering::Relaxed) + 1, Ordering::Release);
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
            slots.push((self.id, slot));
        });
        if counted.is_err() {
            // Logging from a thread-local destructor: no slot left, use the shared one.
            self.accepted_retired.fetch_add(1, Ordering::AcqRel);
        }
    }

    fn accepted(&self) -> u64 {
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

    /// This pipeline's id, for [`ThreadMark`].
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Per-thread counter slots held (for the test that exited threads do not leak them).
    pub(crate) fn slot_count(&self) -> usize {
        self.accepted_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    pub(crate) fn metrics(&self) -> Metrics {
        let in_flight_bytes = self.lanes.used_bytes() + self.handshake.in_flight_bytes();
        let age = self
            .lanes
            .oldest_enqueued_ns()
            .map(|t| Duration::from_nanos(coarse_monotonic_ns().saturating_sub(t)));
        let mut m = self
            .counters
            .snapshot(|| self.accepted(), in_flight_bytes, age);
        m.recovered_records = self.recovered.records;
        m.spool_refused = self.config.spool_refused;
        m.torn_records = self.recovered.torn + self.lanes.shared.torn.load(Ordering::Relaxed);
        m
    }

    /// The producer path: hands one formatted record (ending in `\n`) to the pipeline.
    pub(crate) fn submit(&self, level: Level, record: &[u8]) {
        match self.config.mode {
            Mode::Off | Mode::FormatOnly => return,
            Mode::Sync | Mode::Async => {}
        }
        if self.in_forked_child() {
            return self.submit_in_forked_child(level, record);
        }
        let Some(_producing) = self.enter_producing() else {
            return self.drop_reentrant(level);
        };
        self.count_accepted();
        if record.len() > self.config.max_record_bytes {
            self.counters.truncated.fetch_add(1, Ordering::Relaxed);
            let max = self.config.max_record_bytes;
            let done = SCRATCH.try_with(|scratch| {
                // A Debug impl that logs while we format would find the scratch borrowed.
                let Ok(mut scratch) = scratch.try_borrow_mut() else {
                    return false;
                };
                scratch.clear();
                format::truncate_into(&mut scratch, record, max);
                self.submit_accepted(level, &scratch, false, self.merge_key());
                true
            });
            if done != Ok(true) {
                let mut own = Vec::new();
                format::truncate_into(&mut own, record, max);
                self.submit_accepted(level, &own, false, self.merge_key());
            }
            return;
        }
        self.submit_accepted(level, record, false, self.merge_key());
    }

    /// The key by which the writer merges rings, where there are several.
    #[inline]
    fn merge_key(&self) -> u64 {
        if self.lanes.merges() {
            clock::merge_key()
        } else {
            0
        }
    }

    /// Bytes of a ring of capacity `cap` a record of `level` may fill (`ShedByLevel`
    /// keeps a reserve for the higher levels).
    #[inline]
    fn limit(&self, cap: u64, level: Level) -> u64 {
        limit(&self.level_reserve, cap, level)
    }

    /// Records where a forked child would write: the sink's descriptor now, and what it
    /// refers to (as the sink knows it: no system call). Called after each
    /// `before_batch`.
    pub(crate) fn note_sink_fd(&self, descriptor: Option<(i32, (u64, u64))>) {
        let (fd, (dev, ino)) = descriptor.unwrap_or((-1, (0, 0)));
        // A fork between these stores sees a pair that does not match: it drops.
        self.sink_identity[0].store(dev, Ordering::Release);
        self.sink_identity[1].store(ino, Ordering::Release);
        self.sink_fd.store(fd, Ordering::Release);
    }

    /// Whether this process is a `fork()` of the one that built the pipeline.
    pub(crate) fn in_forked_child(&self) -> bool {
        crate::fork::generation() != self.born_in
    }

    /// A forked child has no writer thread, and must not touch the ring (in spool mode
    /// it is shared with the parent's writer). Its records are written at once with
    /// `write(2)` to the sink's descriptor, whole, and counted as written; a sink that
    /// is no descriptor drops them, counted as `io_error`. Locks the parent may have
    /// held at the fork are never taken here.
    fn submit_in_forked_child(&self, level: Level, record: &[u8]) {
        self.accepted_retired.fetch_add(1, Ordering::AcqRel);
        let fd = self.sink_fd.load(Ordering::Acquire);
        let truncated;
        let record = if record.len() > self.config.max_record_bytes {
            self.counters.truncated.fetch_add(1, Ordering::Relaxed);
            let mut own = Vec::new();
            format::truncate_into(&mut own, record, self.config.max_record_bytes);
            truncated = own;
            &truncated[..]
        } else {
            record
        };
        let expected = (
            self.sink_identity[0].load(Ordering::Acquire),
            self.sink_identity[1].load(Ordering::Acquire),
        );
        // The same file it was at the fork (not a number since reused), and not deleted
        // by the parent's rotation and retention since.
        let usable = fd >= 0
            && crate::fork::fd_identity(fd).is_some_and(|(id, named)| id == expected && named);
        let written = usable && crate::fork::write_all_fd(fd, record).is_ok();
        if written {
            self.counters
                .written_bytes
                .fetch_add(record.len() as u64, Ordering::Relaxed);
            self.counters.written_records.fetch_add(1, Ordering::AcqRel);
        } else {
            self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
            self.counters.count_drop(DropReason::IoError, level, 1);
        }
        if !self.child_warned.swap(true, Ordering::Relaxed) {
            let how = if fd >= 0 {
                "its records are written directly to the sink's file as of the fork, one write(2) each, while that file has a name (then dropped, io_error)\n"
            } else {
                "the sink is not a file descriptor, so its records are dropped (io_error)\n"
            };
            crate::fork::say("loglag: this process is a fork() of the one that started logging; ");
            crate::fork::say(how);
        }
    }

    /// Whether a captured record can travel as captured: only through a heap ring to
    /// this process's own writer (not `sync`, not a spool, which outlives the process
    /// and its static pointers, and not in a forked child, which writes lines itself).
    pub(crate) fn defers_rendering(&self) -> bool {
        self.config.mode == Mode::Async && self.spool.is_none() && !self.in_forked_child()
    }

    /// The capturing front-ends' producer path: `fill` captures one record, which goes
    /// to the writer to be rendered there, or is rendered here when it cannot (see
    /// [`Core::defers_rendering`]) or is longer than `max_record_bytes` captured.
    #[inline]
    pub(crate) fn submit_captured(
        &self,
        level: Level,
        site: Site,
        format: Format,
        fill: impl FnOnce(&mut Encoder<'_>),
    ) {
        let mode = self.config.mode;
        if mode == Mode::Off {
            return;
        }
        let deferred = self.defers_rendering();
        // `format-only` measures what an async caller pays, so it reads the same clock.
        let time = if deferred || mode == Mode::FormatOnly {
            clock::now()
        } else {
            clock::realtime()
        };
        format::with_capture_buffer(|captured| {
            fill(&mut Encoder::begin(captured, site, format, time));
            if mode == Mode::FormatOnly {
                // What the caller pays is the capture; rendering is the writer's.
                std::hint::black_box(&captured);
            } else if deferred && captured.len() <= self.config.max_record_bytes {
                let Some(_producing) = self.enter_producing() else {
                    return self.drop_reentrant(level);
                };
                self.count_accepted();
                let key = if self.lanes.merges() {
                    clock::merge_key_of(time)
                } else {
                    0
                };
                self.submit_accepted(level, captured, true, key);
            } else {
                format::with_line_buffer(|line| {
                    capture::render_now(captured, level, line);
                    self.submit(level, line);
                });
            }
        });
    }

    fn submit_accepted(&self, level: Level, record: &[u8], captured: bool, key: u64) {
        if self.config.mode == Mode::Sync {
            return self.write_sync(level, record);
        }
        if self.closed.load(Ordering::Acquire) {
            self.counters.count_drop(DropReason::Shutdown, level, 1);
            return;
        }
        self.lanes
            .with_own(|own| self.enqueue(own, level, record, captured, key));
    }

    /// Pushes into the thread's own ring, else into the shared ring (no ring of its
    /// own, or it is full, or the record does not fit it). Only when neither takes it
    /// does the overflow policy apply.
    #[inline]
    fn push(
        &self,
        own: Option<&Ring>,
        level: Level,
        record: &[u8],
        captured: bool,
        key: u64,
    ) -> Result<u64, Full> {
        let now = coarse_monotonic_ns();
        if let Some(ring) = own {
            let limit = self.thread_ring_limit[level as usize];
            let pushed = ring.try_push_owned(level, record, limit, now, captured, key);
            if pushed.is_ok() {
                return pushed;
            }
        }
        let shared = &self.lanes.shared;
        let limit = self.limit(self.lanes.shared_capacity(), level);
        shared.try_push(level, record, limit, now, captured, key)
    }

    fn enqueue(&self, own: Option<&Ring>, level: Level, record: &[u8], captured: bool, key: u64) {
        let mut deadline = None;
        loop {
            let pushed = if self.take_record_slot() {
                let pushed = self.push(own, level, record, captured, key);
                if pushed.is_err() {
                    self.release_record_slots(1);
                }
                pushed
            } else {
                Err(Full)
            };
            match pushed {
                Ok(used_after) => {
                    let batch = self.config.batch_bytes as u64;
                    let crossed =
                        used_after >= batch && used_after - footprint(record.len()) < batch;
                    if level >= self.config.flush_level {
                        self.wake_writer();
                    } else if crossed && {
                        // Push, then load the flag (the writer: store it, then look).
                        std::sync::atomic::fence(Ordering::SeqCst);
                        !self.writer_polling.load(Ordering::SeqCst)
                    } {
                        // A full batch is ready: not urgent, the writer takes whole
                        // batches. A polling writer finds it by itself.
                        self.unpark_writer();
                    }
                    return;
                }
                Err(_) => {
                    self.counters
                        .queue_full_events
                        .fetch_add(1, Ordering::Relaxed);
                    self.counters.note_backlog(self.lanes.used_bytes());
                    self.wake_writer();
                    // A sink that logs (on the writer thread, or inside a sync write):
                    // it must never wait, nor evict under the writer; only this thread
                    // could make the room. Checked here, off the non-full hot path.
                    if inside_any_sink() {
                        self.counters.count_drop(DropReason::Reentrant, level, 1);
                        return;
                    }
                    match self.config.overflow {
                        Overflow::Block => {
                            self.wait_for_space(own, record.len(), level, None);
                        }
                        Overflow::BlockFor(wait) => {
                            // No deadline (`Block`) for a wait beyond any `Instant`.
                            let deadline =
                                *deadline.get_or_insert_with(|| Instant::now().checked_add(wait));
                            if !self.wait_for_space(own, record.len(), level, deadline) {
                                self.counters.count_drop(DropReason::QueueFull, level, 1);
                                return;
                            }
                        }
                        Overflow::DropOldest => {
                            // The older of the two oldest records this thread may
                            // evict: its own ring's (if the record fits that ring at
                            // all) and the shared ring's. Other threads' rings have
                            // one producer each; only they and the writer touch them.
                            let shared = &self.lanes.shared;
                            let fits_own = |r: &&Ring| {
                                footprint(record.len()) <= self.limit(r.capacity(), level)
                                    && r.peek().is_some_and(|mine| {
                                        shared.peek().is_none_or(|s| mine.key <= s.key)
                                    })
                            };
                            let (ring, limit) = match own.filter(fits_own) {
                                Some(ring) => (ring, self.limit(ring.capacity(), level)),
                                None => (
                                    &self.lanes.shared,
                                    self.limit(self.lanes.shared_capacity(), level),
                                ),
                            };
                            let mut need = footprint(record.len());
                            if !self.record_slots_free() {
                                // Full by count, not bytes: asking for one byte more
                                // than is free evicts exactly one record.
                                need = need.max(limit.saturating_sub(ring.used_bytes()) + 1);
                            }
                            let counters = &self.counters;
                            if !ring.evict_oldest(need, limit, |p| {
                                counters.count_drop(DropReason::QueueFull, p.level, 1);
                                self.release_record_slots(1);
                            }) {
                                counters.count_drop(DropReason::QueueFull, level, 1);
                                return;
                            }
                        }
                        Overflow::DropNewest | Overflow::ShedByLevel => {
                            self.counters.count_drop(DropReason::QueueFull, level, 1);
                            return;
                        }
                    }
                    if self.closed.load(Ordering::Acquire) {
                        self.counters.count_drop(DropReason::Shutdown, level, 1);
                        return;
                    }
                }
            }
        }
    }

    /// With `max_records`: takes a slot for one more record, or says there is none.
    fn take_record_slot(&self) -> bool {
        match self.config.max_records {
            None => true,
            Some(max) => {
                if self.queued_records.fetch_add(1, Ordering::AcqRel) < max {
                    true
                } else {
                    self.queued_records.fetch_sub(1, Ordering::AcqRel);
                    false
                }
            }
        }
    }

    /// Gives back `n` slots (records written, or evicted).
    pub(crate) fn release_record_slots(&self, n: u64) {
        if self.config.max_records.is_some() && n > 0 {
            self.queued_records.fetch_sub(n, Ordering::AcqRel);
        }
    }

    fn record_slots_free(&self) -> bool {
        self.config
            .max_records
            .is_none_or(|max| self.queued_records.load(Ordering::Acquire) < max)
    }

    /// Waits until `len` more bytes would fit the thread's own ring or the shared
    /// one, or `deadline`. Returns whether they fit.
    fn wait_for_space(
        &self,
        own: Option<&Ring>,
        len: usize,
        level: Level,
        deadline: Option<Instant>,
    ) -> bool {
        // A waiter also looks again this often: the writer wakes waiters only every
        // sixteenth of the budget (or at the end of a drain), and a drain can be held
        // up by a stalled sink while the ring already has room.
        const LOOK_AGAIN: Duration = Duration::from_millis(100);
        let need = footprint(len);
        let fits_in = |ring: &Ring, cap: u64| ring.used_bytes() + need <= self.limit(cap, level);
        let fits = || {
            (own.is_some_and(|r| fits_in(r, r.capacity()))
                || fits_in(&self.lanes.shared, self.lanes.shared_capacity()))
                && self.record_slots_free()
        };
        self.waiting_producers.fetch_add(1, Ordering::AcqRel);
        let (lock, cv) = &self.space;
        let mut guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let result = loop {
            // Checked under the lock; the writer notifies under the same lock after
            // releasing space, so no wake-up is lost.
            if fits() || self.closed.load(Ordering::Acquire) {
                break true;
            }
            let timeout = match deadline {
                None => LOOK_AGAIN,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left.min(LOOK_AGAIN),
                    _ => break false,
                },
            };
            guard = cv
                .wait_timeout(guard, timeout)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(guard);
        self.waiting_producers.fetch_sub(1, Ordering::AcqRel);
        result
    }

    /// Called by the writer after it has released ring space.
    pub(crate) fn space_released(&self) {
        if self.waiting_producers.load(Ordering::Acquire) > 0 {
            let _guard = self.space.0.lock().unwrap_or_else(|e| e.into_inner());
            self.space.1.notify_all();
        }
    }

    /// Asks the writer to write everything queued now.
    pub(crate) fn wake_writer(&self) {
        self.wake_requested.store(true, Ordering::Release);
        self.unpark_writer();
    }

    fn unpark_writer(&self) {
        if let Some(t) = self.writer.get() {
            t.unpark();
        }
    }

    fn write_sync(&self, level: Level, record: &[u8]) {
        let mut sink = if inside_any_sink() {
            // This thread may already hold this very lock (a sink that logs); waiting
            // for it, or for another pipeline's sink held by a thread waiting on us,
            // could deadlock. Write only if the sink is free now.
            match self.sync_sink.try_lock() {
                Ok(sink) => sink,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {
                    self.counters.count_drop(DropReason::Reentrant, level, 1);
                    return;
                }
            }
        } else {
            self.sync_sink.lock().unwrap_or_else(|e| e.into_inner())
        };
        let Some(sink) = sink.as_mut() else {
            self.counters.count_drop(DropReason::Shutdown, level, 1);
            return;
        };
        let _inside = ThreadMark::inside_sink(self.id);
        if crate::sink::call_sink(|| sink.sink().before_batch(record.len())).is_err() {
            self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.note_sink_fd(sink.descriptor());
        // Sync mode has no in-band report line; a sink's notice goes to stderr.
        if let Some(notice) = sink.take_notice() {
            eprintln!("loglag: {notice}");
        }
        match self.counters.measured_write(sink, record) {
            Ok(refused) if !refused.is_empty() => {
                // The one record, refused by the peer (RELP's `500`).
                self.counters.count_drop(DropReason::IoError, level, 1);
            }
            Ok(_) => {
                self.counters
                    .written_bytes
                    .fetch_add(record.len() as u64, Ordering::Relaxed);
                self.counters.written_records.fetch_add(1, Ordering::AcqRel);
            }
            Err(_) => {
                self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
                self.counters.count_drop(DropReason::IoError, level, 1);
            }
        }
    }

    /// The panic hook's flush. It runs on the panicking thread, which may hold the
    /// `sync` sink's lock or be inside a sink, so it never waits for that lock.
    pub(crate) fn flush_from_panic_hook(&self) {
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
        if self.in_forked_child() {
            // No writer thread here to wait for, and the queue is the parent's.
            self.closed.store(true, Ordering::Release);
            return self.metrics();
        }
        if self.closed.swap(true, Ordering::AcqRel) {
            if self.config.mode != Mode::Async {
                return self.metrics();
            }
            return self.wait_exit(crate::units::instant_after(Instant::now(), timeout));
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
        let deadline = crate::units::instant_after(Instant::now(), timeout);
        self.handshake.begin_shutdown(deadline);
        self.space_released();
        self.wake_writer();
        self.wait_exit(deadline)
    }

    fn wait_exit(&self, deadline: Instant) -> Metrics {
        // A little grace beyond the writer's own deadline, for its last bookkeeping.
        let give_up = crate::units::instant_after(deadline, Duration::from_millis(100));
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

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
            let writer = crate::worker::spawn(core.clone(), Box::new(sink)).unwrap();
            core.submit(Level::Error, b"held\n");
            entered.recv().unwrap();
            core.submit(Level::Info, b"queued\n");
            let first = {
                let core = core.clone();
                std::thread::spawn(move || core.shutdown(core.config.shutdown_timeout))
            };
            while !core.closed.load(Ordering::Acquire) {
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
