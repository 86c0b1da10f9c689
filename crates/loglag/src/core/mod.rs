//! The shared state behind every front-end: [`Core`], its construction, the thread
//! marks and the metrics snapshot. Its fields are private to this module and its
//! children, each of which does one job with them:
//!
//! - `produce.rs` — the producer path: policies, truncation, waiting for space,
//!   `sync` mode's write and a forked child's.
//! - `accepted.rs` — the per-thread accepted counters and their sum.
//! - `drain.rs` — the API the writer thread (`worker.rs`) drains through, and nothing
//!   else: waiting for work, taking a batch, ending it with the write's result, drop
//!   reports, progress, the writer's end.
//! - `flush.rs` — flush, the panic hook's flush, and shutdown.
//!
//! This file imports nothing from its children: they reach `Core` through `super`, and
//! it reaches them only through method calls.

mod accepted;
pub(crate) mod drain;
pub(crate) mod entered;
pub(crate) mod flush;
pub(crate) mod handshake;
#[cfg(all(test, loglag_loom))]
mod loom_models;
pub(crate) mod metrics;
mod produce;

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::thread::Thread;

use crate::core::handshake::Handshake;
use crate::core::metrics::{Counters, Metrics};
use crate::queue::lanes::Lanes;
use crate::queue::Ring;
use crate::record::clock;
use crate::record::level::Level;
use crate::record::Format;
use crate::settings::mode::Mode;
use crate::settings::overflow::Overflow;
use crate::sink::Sink;
use crate::spool::{Recovered, SpoolHeader};

/// Everything the builder decided, validated, and what its start found.
pub(crate) type Config = crate::settings::Validated;

/// What a logging call reads of its pipeline on its common path, on two adjacent
/// cache lines (which the adjacent-line prefetcher fetches as a pair): a call after a
/// pause or a context switch finds them cold, and spread over `Settings` and `Core`
/// (whose fields Rust orders by alignment) they were several misses on the call's
/// tail. Settings here are copies of `Core::config`'s, which never change after the
/// start. Still outside it: the thread-ring lookup's `Lanes` fields, and what a
/// spill into the shared ring reads (its limits, `level_reserve`).
#[repr(C, align(128))]
struct CallPath {
    /// The pipeline's id (its thread tables' key, as `Lanes`' is).
    id: u64,
    /// `Settings::max_record_bytes`, as clamped to the ring.
    max_record_bytes: usize,
    batch_bytes: u64,
    /// `Settings::buffered_lines_limit`: read by every push, to take a slot.
    max_records: Option<u64>,
    /// The fork generation this pipeline was built in (see `fork.rs`).
    born_in: u64,
    /// `limit` for a thread ring, per level, computed once: every thread ring has the
    /// same capacity.
    thread_ring_limit: [u64; 5],
    mode: Mode,
    flush_level: Level,
    /// `async`, no spool, no `max_records`: a record can be written in place into its
    /// thread's ring or the shared ring (`Core::submit_fixed`) and rendered by the
    /// writer.
    #[cfg_attr(loglag_loom, allow(dead_code))]
    in_place: bool,
    /// Thread rings, so records carry a merge key.
    merges: bool,
    /// The overflow policy drops the newest record (`DropNewest`, `ShedByLevel`).
    #[cfg_attr(loglag_loom, allow(dead_code))]
    drops_newest: bool,
    closed: AtomicBool,
}

pub(crate) struct Core {
    call: CallPath,
    config: Config,
    /// The rings: the shared one and each logging thread's own.
    lanes: Lanes,
    counters: Counters,
    /// Per-thread counters (`accepted`, and refusals for want of room): each has a
    /// single writer, so counting costs a plain store, not a shared read-modify-write.
    accepted_slots: Mutex<Vec<Arc<accepted::ThreadCounts>>>,
    accepted_retired: AtomicU64,
    /// Exited threads' refusals (`QueueFull`), by level, folded from their slots.
    refused_retired: [AtomicU64; 5],
    /// Slot-list length at which exited threads' slots are next folded away.
    fold_at: std::sync::atomic::AtomicUsize,
    /// The share of a ring kept free for higher levels (`ShedByLevel`), per level.
    level_reserve: [u64; 5],
    writer: OnceLock<Thread>,
    wake_requested: AtomicBool,
    /// The writer is parked for a short poll because records are queued: a producer
    /// that fills a batch need not wake it (one that takes the shared ring past
    /// `RESIDENT_AHEAD` does: `WakeAfterPush::Always`). Waking a parked thread is a
    /// futex system call, microseconds on the caller's path (p99.9 7.8 µs before
    /// this, 1.3 µs after,
    /// `cargo bench -p loglag --bench latency -- --rounds 1 --only loglag_macro`).
    writer_polling: AtomicBool,
    waiting_producers: AtomicU64,
    /// Records holding a slot under `max_records` (queued, or in a spool batch not yet
    /// written). Only touched when `max_records` is set.
    queued_records: AtomicU64,
    space: (Mutex<()>, Condvar),
    /// Progress, the batch in flight and the shutdown deadline, shared by the writer,
    /// flushers and the guard.
    handshake: Handshake,
    /// The sink itself in `sync` mode (there is no writer thread then).
    sync_sink: Mutex<Option<crate::sink::HeldSink>>,
    /// Spool mode: the mapped file's header, and what recovery delivered at start.
    spool: Option<SpoolHeader>,
    recovered: Recovered,
    /// The format of in-band drop reports, as [`Format::index`].
    report_format: std::sync::atomic::AtomicU8,
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
    /// The id of the pipeline whose sink this thread is inside right now: the writer
    /// thread (for its whole life) or a `sync`-mode write. 0 outside any sink. A record
    /// logged here must never wait: only this thread can make the room it would wait for.
    static INSIDE_SINK: Cell<u64> = const { Cell::new(0) };
}

/// Marks this thread as inside one pipeline's sink (`INSIDE_SINK`) or producer path
/// (`entered.rs` keeps which pipelines a thread is inside) until dropped, then gives back the mark it replaced. (Nothing to give
/// back from a thread-local destructor, where the mark is gone.)
pub(crate) struct ThreadMark {
    mark: &'static std::thread::LocalKey<Cell<u64>>,
    previous: Option<u64>,
}

impl ThreadMark {
    #[inline]
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
    #[inline]
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
/// reserve (`ShedByLevel`) as a fraction of the capacity in 32-bit fixed point. A
/// shared ring's capacity moves with the thread rings, so this runs per record that
/// reaches it: integer arithmetic, where `u64`↔`f64` conversions were a third of the
/// hot burst's samples in `submit_fixed`.
#[inline]
fn limit(level_reserve: &[u64; 5], cap: u64, level: Level) -> u64 {
    let reserve = level_reserve[level as usize];
    cap - ((u128::from(cap) * u128::from(reserve)) >> 32) as u64
}

/// A reserve fraction (0 to 1) in `limit`'s fixed point.
fn fixed_point(fraction: f64) -> u64 {
    (fraction.clamp(0.0, 1.0) * (1u64 << 32) as f64).round() as u64
}

impl Core {
    pub(crate) fn new(config: Config, sync_sink: Option<Box<dyn Sink>>) -> Core {
        let id = NEXT_CORE_ID.fetch_add(1, Ordering::Relaxed);
        let thread_ring_bytes = match config.mode {
            // No writer thread, no rings to give threads.
            Mode::Sync | Mode::Off | Mode::FormatOnly => 0,
            Mode::Async => config.thread_ring_bytes.unwrap_or_else(|| {
                crate::queue::lanes::default_thread_ring_bytes(config.capacity_bytes)
            }),
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
        config.fit_records_to((cap / 2).saturating_sub(crate::queue::HEADER) as usize);
        let reserve = config.reserve_fraction;
        let level_reserve = match config.overflow {
            Overflow::ShedByLevel => [2.0 * reserve, 2.0 * reserve, reserve, 0.0, 0.0],
            _ => [0.0; 5],
        }
        .map(fixed_point);
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
            call: CallPath {
                id,
                max_record_bytes: config.max_record_bytes,
                batch_bytes: config.batch_bytes as u64,
                max_records: config.buffered_lines_limit,
                born_in: crate::sys::fork::watch(),
                thread_ring_limit,
                mode: config.mode,
                flush_level: config.flush_level,
                in_place: config.mode == Mode::Async
                    && spool.is_none()
                    && config.buffered_lines_limit.is_none(),
                merges: lanes.merges(),
                drops_newest: matches!(
                    config.overflow,
                    Overflow::DropNewest | Overflow::ShedByLevel
                ),
                closed: AtomicBool::new(false),
            },
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
            refused_retired: Default::default(),
            fold_at: std::sync::atomic::AtomicUsize::new(64),
            level_reserve,
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
            sink_fd: std::sync::atomic::AtomicI32::new(-1),
            sink_identity: [AtomicU64::new(0), AtomicU64::new(0)],
            child_warned: AtomicBool::new(false),
            spool,
            recovered,
        }
    }

    /// The settings the pipeline runs with, read-only (`max_record_bytes` as clamped
    /// to the ring above).
    pub(crate) fn settings(&self) -> &crate::settings::Settings {
        self.config.settings()
    }

    /// The format the writer uses for in-band drop reports.
    fn report_format(&self) -> Format {
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
    fn follow_records_format(&self, latest_record: &[u8]) {
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

    /// This pipeline's id, for [`ThreadMark`].
    pub(crate) fn id(&self) -> u64 {
        self.call.id
    }

    /// Per-thread counter slots held (for the test that exited threads do not leak them).
    pub(crate) fn slot_count(&self) -> usize {
        self.accepted_slots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .len()
    }

    pub(crate) fn metrics(&self) -> Metrics {
        // It takes a ring's consumer lock: a signal handler that logs meanwhile must
        // not wait for room only the writer, waiting for that lock, can make.
        let _entered = self.enter();
        let in_flight_bytes = self.lanes.used_bytes() + self.handshake.in_flight_bytes();
        let age = self
            .lanes
            .oldest_enqueued_ns()
            .map(crate::record::clock::stamp_age);
        let mut m = self
            .counters
            .snapshot(|| self.thread_counts(), in_flight_bytes, age);
        m.recovered_records = self.recovered.records;
        m.spool_refused = self.config.spool_refused;
        m.torn_records = self.recovered.torn + self.lanes.shared.torn.load(Ordering::Relaxed);
        m
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
    fn in_forked_child(&self) -> bool {
        crate::sys::fork::generation() != self.call.born_in
    }
}

#[cfg(test)]
mod tests {
    use super::{fixed_point, limit};
    use crate::record::level::Level;

    /// The per-level limit is the capacity less its reserve, within a byte (plus the
    /// fixed point's 2^-33 of the capacity) of the exact fraction, for capacities from
    /// 0 to `u64::MAX` (no overflow, no panic), never above the capacity, and the
    /// whole capacity for WARN.
    #[test]
    fn a_levels_limit_is_its_capacity_less_its_reserve_at_every_size() {
        for fraction in [0.0, 1.0 / 8.0, 0.25, 0.3, 0.5, 1.0] {
            let reserve = [2.0 * fraction, 2.0 * fraction, fraction, 0.0, 0.0].map(fixed_point);
            for cap in [
                0,
                1,
                7,
                4096,
                8 << 20,
                (1 << 40) + 3,
                u64::MAX / 3,
                u64::MAX,
            ] {
                for level in [Level::Trace, Level::Info, Level::Warn] {
                    let got = limit(&reserve, cap, level);
                    let share = match level {
                        Level::Warn => 0.0,
                        Level::Info => fraction,
                        _ => (2.0 * fraction).min(1.0),
                    };
                    let exact = cap as f64 - cap as f64 * share;
                    assert!(got <= cap, "{fraction} {cap} {level:?}: {got}");
                    assert!(
                        (got as f64 - exact).abs() <= 1.0 + cap as f64 * 2f64.powi(-32),
                        "{fraction} {cap} {level:?}: {got} against {exact}"
                    );
                    if level == Level::Warn {
                        assert_eq!(got, cap, "WARN may fill the whole ring");
                    }
                }
            }
        }
    }
}
