//! Self-telemetry: live counters and the [`Metrics`] snapshot built from them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::record::drops::{DropReason, DROP_REASONS};
use crate::record::level::Level;

/// Write latencies in power-of-two nanosecond buckets: cheap to record from the writer
/// thread, precise to a factor of two, which is what a tail percentile needs.
#[derive(Debug)]
pub(crate) struct LatencyBuckets {
    buckets: [AtomicU64; 64],
    /// Total nanoseconds, for a Prometheus histogram's `_sum`.
    sum_ns: AtomicU64,
}

impl Default for LatencyBuckets {
    fn default() -> Self {
        LatencyBuckets {
            buckets: std::array::from_fn(|_| AtomicU64::new(0)),
            sum_ns: AtomicU64::new(0),
        }
    }
}

impl LatencyBuckets {
    pub(crate) fn record(&self, d: Duration) {
        let ns = d.as_nanos().min(u64::MAX as u128) as u64;
        let bucket = 64 - ns.leading_zeros() as usize;
        self.buckets[bucket.min(63)].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
    }

    /// The upper bound of the bucket holding the q-quantile, or zero with no samples.
    fn quantile(&self, counts: &[u64; 64], q: f64) -> Duration {
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return Duration::ZERO;
        }
        let rank = ((total as f64 * q).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &c) in counts.iter().enumerate() {
            seen += c;
            if seen >= rank {
                return Duration::from_nanos(if i == 0 { 0 } else { 1u64 << i.min(63) });
            }
        }
        Duration::MAX
    }

    fn snapshot(&self) -> WriteLatency {
        let counts: [u64; 64] = std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed));
        WriteLatency {
            count: counts.iter().sum(),
            p50: self.quantile(&counts, 0.50),
            p99: self.quantile(&counts, 0.99),
            max: self.quantile(&counts, 1.0),
            buckets: counts,
            sum: Duration::from_nanos(self.sum_ns.load(Ordering::Relaxed)),
        }
    }
}

/// What the callers' threads counted on their own counters (`core/accepted.rs`),
/// exited threads included: `accepted`, and the records refused for want of room
/// (`QueueFull`), by level, which are part of `dropped` and of the full events.
#[derive(Clone, Copy)]
pub(crate) struct ThreadTotals {
    pub(crate) accepted: u64,
    pub(crate) refused: [u64; 5],
}

/// The live counters shared by producers and the writer. Those a logging call
/// counts (drops, full events, truncations) come first, and the writer's start on
/// cache lines of their own: the writer updates them on every batch, and a full
/// queue's drop path otherwise missed on them for every record it counted. Each side
/// writes one field of the other's now and then: producers `max_backlog_bytes` (one
/// full event in 64), the writer `truncated` (a record cut when it renders).
#[repr(C)]
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub(crate) dropped: [[AtomicU64; 5]; DROP_REASONS],
    pub(crate) queue_full_events: AtomicU64,
    pub(crate) truncated: AtomicU64,
    /// Spool mode: the header's count of drops not yet announced, which survives a
    /// crash.
    pub(crate) ledger: std::sync::OnceLock<crate::spool::ledger::DropLedger>,
    _writer_lines: LineBreak,
    pub(crate) written_records: AtomicU64,
    pub(crate) written_bytes: AtomicU64,
    pub(crate) write_syscalls: AtomicU64,
    pub(crate) write_errors: AtomicU64,
    pub(crate) max_backlog_bytes: AtomicU64,
    pub(crate) write_latency: LatencyBuckets,
    /// A write failed part-way through a line: the sink holds a fragment with no
    /// newline, which would glue itself to the next record.
    pub(crate) torn_line: std::sync::atomic::AtomicBool,
}

/// A field that starts the next field of a `repr(C)` struct on a new pair of cache
/// lines (the adjacent-line prefetcher fetches lines in pairs).
#[repr(align(128))]
#[derive(Debug, Default)]
struct LineBreak;

impl Counters {
    /// Remembers whether a write that failed after `partial` bytes of `bytes` left an
    /// unterminated line behind.
    pub(crate) fn note_partial(&self, bytes: &[u8], partial: usize) {
        if partial > 0 && bytes[partial - 1] != b'\n' {
            self.torn_line.store(true, Ordering::Relaxed);
        }
    }

    pub(crate) fn count_drop(&self, reason: DropReason, level: Level, n: u64) {
        // The spool's ledger first: the writer announces what it sees in the counters
        // and then takes it off the ledger. Counted the other way round, a drop the
        // writer announced between the two steps was taken off a ledger that did not
        // hold it yet (the subtraction saturates at zero), then added: after a kill -9,
        // recovery announced it a second time (`torture --only kill9 --kill9-policy
        // default` saw 3 drops announced more than were missing, once in 50 trials).
        if let Some(ledger) = self.ledger.get() {
            ledger.dropped(reason as usize, level as usize, n);
        }
        self.dropped[reason as usize][level as usize].fetch_add(n, Ordering::AcqRel);
    }

    pub(crate) fn note_backlog(&self, bytes: u64) {
        self.max_backlog_bytes.fetch_max(bytes, Ordering::Relaxed);
    }

    /// A consistent snapshot. Written and dropped are read before `accepted`, and every
    /// record is counted as accepted before it can be written or dropped, so
    /// `in_flight = accepted − written − dropped` is never negative. `threads` gives
    /// what the callers' threads counted (`Core::thread_counts`): `accepted`, and the
    /// refusals for want of room that are part of `dropped` and of the full events.
    pub(crate) fn snapshot(
        &self,
        threads: impl FnOnce() -> ThreadTotals,
        in_flight_bytes: u64,
        oldest_age: Option<Duration>,
    ) -> Metrics {
        let written_records = self.written_records.load(Ordering::Acquire);
        let queue_full_events = self.queue_full_events.load(Ordering::Relaxed);
        let mut dropped: [[u64; 5]; DROP_REASONS] = std::array::from_fn(|r| {
            std::array::from_fn(|l| self.dropped[r][l].load(Ordering::Acquire))
        });
        let threads = threads();
        for (total, refused) in dropped[DropReason::QueueFull as usize]
            .iter_mut()
            .zip(threads.refused)
        {
            *total += refused;
        }
        let accepted = threads.accepted;
        let dropped_records: u64 = dropped.iter().flatten().sum();
        Metrics {
            accepted,
            written_records,
            written_bytes: self.written_bytes.load(Ordering::Relaxed),
            dropped,
            in_flight_records: accepted.saturating_sub(written_records + dropped_records),
            in_flight_bytes,
            max_backlog_bytes: self.max_backlog_bytes.load(Ordering::Relaxed),
            write_syscalls: self.write_syscalls.load(Ordering::Relaxed),
            write_errors: self.write_errors.load(Ordering::Relaxed),
            truncated: self.truncated.load(Ordering::Relaxed),
            queue_full_events: queue_full_events + threads.refused.iter().sum::<u64>(),
            oldest_queued_age: oldest_age,
            write_latency: self.write_latency.snapshot(),
            recovered_records: 0,
            spool_refused: false,
            torn_records: 0,
        }
    }
}

/// The time one write to the sink took: percentiles, and the histogram behind them
/// (power-of-two buckets), which Prometheus can aggregate across instances.
#[derive(Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct WriteLatency {
    /// Number of writes measured.
    pub count: u64,
    /// Median.
    pub p50: Duration,
    /// 99th percentile.
    pub p99: Duration,
    /// Slowest write.
    pub max: Duration,
    /// Writes per bucket: bucket `i` holds writes of at most 2^i ns (and more than
    /// 2^(i−1)); bucket 0 those that took no measurable time.
    pub buckets: [u64; 64],
    /// Time spent in all writes together.
    pub sum: Duration,
}

impl Default for WriteLatency {
    fn default() -> Self {
        WriteLatency {
            count: 0,
            p50: Duration::ZERO,
            p99: Duration::ZERO,
            max: Duration::ZERO,
            buckets: [0; 64],
            sum: Duration::ZERO,
        }
    }
}

/// A snapshot of a pipeline's accounting.
///
/// At every snapshot `written_records + dropped_records() + in_flight_records == accepted`.
///
/// Drops are kept once, in [`dropped`](Metrics::dropped), by reason and level; the
/// totals overall, by reason and by level are methods that sum it
/// ([`dropped_records`](Metrics::dropped_records), [`dropped_for`](Metrics::dropped_for),
/// [`dropped_at`](Metrics::dropped_at), [`dropped_of`](Metrics::dropped_of)), so they
/// always agree. The records dropped because a write failed (records_dropped_io,
/// `dropped_for(DropReason::IoError)`) are not [`write_errors`](Metrics::write_errors),
/// the failed write calls: one failed write can cost a batch of records, and an error
/// a fallback absorbed costs none.
///
/// ```
/// use loglag::{DropReason, Level};
/// let (mut writer, guard) = loglag::non_blocking(std::io::sink());
/// std::io::Write::write_all(&mut writer, b"hello\n")?;
/// guard.flush(std::time::Duration::from_secs(5))?;
/// let m = writer.metrics();
/// assert_eq!(m.accepted, 1);
/// assert_eq!(m.written_records + m.dropped_records() + m.in_flight_records, m.accepted);
/// assert_eq!(m.dropped_for(DropReason::QueueFull), 0);
/// assert_eq!(m.dropped_at(Level::Info), 0);
/// assert_eq!(m.dropped_of(DropReason::IoError, Level::Error), 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Metrics {
    /// Records handed to the pipeline.
    pub accepted: u64,
    /// Records written to a sink.
    pub written_records: u64,
    /// Bytes written to a sink, in-band drop reports included.
    pub written_bytes: u64,
    /// Records dropped, by reason and level: `dropped[DropReason as usize][Level as usize]`.
    /// The one record of drops; the methods below sum it.
    pub dropped: [[u64; 5]; DROP_REASONS],
    /// Records accepted but neither written nor dropped yet.
    pub in_flight_records: u64,
    /// Bytes queued or being written, ring headers included.
    pub in_flight_bytes: u64,
    /// The largest `in_flight_bytes` seen by the writer.
    pub max_backlog_bytes: u64,
    /// `write(2)` calls (or `Sink::write` calls) made.
    pub write_syscalls: u64,
    /// Failed write calls, including errors a sink absorbed (a fallback that took over,
    /// a record a collector refused). A count of writes, not of records: the records lost
    /// to failed writes are `dropped_for(DropReason::IoError)` (records_dropped_io).
    pub write_errors: u64,
    /// Records cut to `max_record_bytes` (they are still written, with a marker).
    pub truncated: u64,
    /// Times a producer found the budget full (including waits that later succeeded).
    pub queue_full_events: u64,
    /// How long the oldest queued record has waited, if any is queued.
    pub oldest_queued_age: Option<Duration>,
    /// Sink write latency.
    pub write_latency: WriteLatency,
    /// Spool mode: records a previous process left in the spool, delivered at start.
    /// They are not part of this process's `accepted`.
    pub recovered_records: u64,
    /// Torn regions skipped: at spool recovery, or by the live writer when a record
    /// header could not have been written by this process (see RELIABILITY.md, "fork").
    pub torn_records: u64,
    /// A spool was configured but refused at start (in use by another process,
    /// corrupt, or not ours), so this pipeline runs without one: records survive a
    /// crash only as far as a pipeline without a spool does. It was warned about on stderr.
    pub spool_refused: bool,
}

/// Labelled, for a reader: drops as `{reason: {LEVEL: n}}` with the zeroes left out,
/// and the histogram's non-empty buckets by their upper bound.
impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Dropped<'a>(&'a [[u64; 5]; DROP_REASONS]);
        impl std::fmt::Debug for Dropped<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut map = f.debug_map();
                for reason in DropReason::ALL {
                    let levels = &self.0[reason as usize];
                    if levels.iter().any(|&n| n > 0) {
                        map.entry(&reason.as_str(), &ByLevel(levels));
                    }
                }
                map.finish()
            }
        }
        struct ByLevel<'a>(&'a [u64; 5]);
        impl std::fmt::Debug for ByLevel<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut map = f.debug_map();
                for level in Level::ALL {
                    let n = self.0[level as usize];
                    if n > 0 {
                        map.entry(&level.as_str(), &n);
                    }
                }
                map.finish()
            }
        }
        f.debug_struct("Metrics")
            .field("accepted", &self.accepted)
            .field("written_records", &self.written_records)
            .field("written_bytes", &self.written_bytes)
            .field("dropped_records", &self.dropped_records())
            .field("dropped", &Dropped(&self.dropped))
            .field("in_flight_records", &self.in_flight_records)
            .field("in_flight_bytes", &self.in_flight_bytes)
            .field("max_backlog_bytes", &self.max_backlog_bytes)
            .field("write_syscalls", &self.write_syscalls)
            .field("write_errors", &self.write_errors)
            .field("truncated", &self.truncated)
            .field("queue_full_events", &self.queue_full_events)
            .field("oldest_queued_age", &self.oldest_queued_age)
            .field("write_latency", &self.write_latency)
            .field("recovered_records", &self.recovered_records)
            .field("torn_records", &self.torn_records)
            .field("spool_refused", &self.spool_refused)
            .finish()
    }
}

/// The non-empty buckets only, each by its upper bound (`"<=1.024µs": 3`).
impl std::fmt::Debug for WriteLatency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        struct Buckets<'a>(&'a [u64; 64]);
        impl std::fmt::Debug for Buckets<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                let mut map = f.debug_map();
                for (i, &n) in self.0.iter().enumerate().filter(|(_, &n)| n > 0) {
                    let bound = if i == 0 { 0 } else { 1u64 << i.min(63) };
                    map.entry(&format_args!("<={:?}", Duration::from_nanos(bound)), &n);
                }
                map.finish()
            }
        }
        f.debug_struct("WriteLatency")
            .field("count", &self.count)
            .field("p50", &self.p50)
            .field("p99", &self.p99)
            .field("max", &self.max)
            .field("sum", &self.sum)
            .field("buckets", &Buckets(&self.buckets))
            .finish()
    }
}

impl Metrics {
    /// Records dropped, for any reason and at any level.
    pub fn dropped_records(&self) -> u64 {
        self.dropped.iter().flatten().sum()
    }

    /// Records dropped for `reason`, at any level (`DropReason::IoError`: records_dropped_io).
    pub fn dropped_for(&self, reason: DropReason) -> u64 {
        self.dropped[reason as usize].iter().sum()
    }

    /// Records at `level` dropped, for any reason.
    pub fn dropped_at(&self, level: Level) -> u64 {
        self.dropped
            .iter()
            .map(|by_level| by_level[level as usize])
            .sum()
    }

    /// Records at `level` dropped for `reason`.
    pub fn dropped_of(&self, reason: DropReason, level: Level) -> u64 {
        self.dropped[reason as usize][level as usize]
    }

    /// Whether every accepted record is accounted for: written, dropped (each drop has
    /// its reason and level), or still in flight. True of every snapshot the pipeline
    /// hands out.
    ///
    /// ```
    /// assert!(loglag::Metrics::default().is_accounted());
    /// ```
    pub fn is_accounted(&self) -> bool {
        self.written_records + self.dropped_records() + self.in_flight_records == self.accepted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn is_accounted_rejects_each_kind_of_imbalance() {
        let mut dropped = [[0; 5]; DROP_REASONS];
        dropped[DropReason::QueueFull as usize][Level::Info as usize] = 1;
        dropped[DropReason::IoError as usize][Level::Info as usize] = 1;
        dropped[DropReason::Reentrant as usize][Level::Debug as usize] = 1;
        let good = Metrics {
            accepted: 10,
            written_records: 6,
            dropped,
            in_flight_records: 1,
            ..Metrics::default()
        };
        assert!(good.is_accounted());
        let lost_one = Metrics {
            written_records: 5,
            ..good.clone()
        };
        assert!(
            !lost_one.is_accounted(),
            "a record neither written nor dropped"
        );
        let mut dropped_twice = good.clone();
        dropped_twice.dropped[DropReason::Shutdown as usize][Level::Warn as usize] = 1;
        assert!(!dropped_twice.is_accounted(), "more drops than records");
        let in_flight_short = Metrics {
            in_flight_records: 0,
            ..good
        };
        assert!(!in_flight_short.is_accounted(), "a record not in flight");
    }

    #[test]
    fn drop_totals_sum_the_one_map() {
        let mut m = Metrics::default();
        for (r, reason) in DropReason::ALL.into_iter().enumerate() {
            for (l, level) in Level::ALL.into_iter().enumerate() {
                m.dropped[reason as usize][level as usize] = (10 * r + l) as u64;
            }
        }
        assert_eq!(m.dropped_of(DropReason::Shutdown, Level::Warn), 23);
        assert_eq!(m.dropped_for(DropReason::IoError), 10 + 11 + 12 + 13 + 14);
        assert_eq!(m.dropped_at(Level::Debug), 1 + 11 + 21 + 31 + 41);
        let by_reason: u64 = DropReason::ALL.into_iter().map(|r| m.dropped_for(r)).sum();
        let by_level: u64 = Level::ALL.into_iter().map(|l| m.dropped_at(l)).sum();
        assert_eq!(m.dropped_records(), by_reason);
        assert_eq!(m.dropped_records(), by_level);
        assert_eq!(
            m.dropped_records(),
            (0..DROP_REASONS as u64).map(|r| 50 * r + 10).sum::<u64>()
        );
    }

    /// `{:?}` names each drop by reason and level and leaves zeroes out, and shows the
    /// histogram's non-empty buckets by their bound (it printed `[[0, 553159, …]]` and
    /// 64 bare numbers).
    #[test]
    fn debug_labels_drops_by_reason_and_level_and_skips_empty_buckets() {
        let mut m = Metrics::default();
        m.dropped[DropReason::QueueFull as usize][Level::Info as usize] = 553_159;
        m.dropped[DropReason::QueueFull as usize][Level::Warn as usize] = 13_679;
        m.write_latency.buckets[10] = 7;
        let text = format!("{m:?}");
        assert!(
            text.contains(r#"dropped: {"queue_full": {"INFO": 553159, "WARN": 13679}}"#),
            "{text}"
        );
        assert!(text.contains("dropped_records: 566838"), "{text}");
        assert!(text.contains(r#"buckets: {<=1.024µs: 7}"#), "{text}");
        assert!(!text.contains("[[0"), "{text}");
        assert!(!text.contains("0, 0, 0"), "{text}");
    }

    /// The reason names are an interface: Prometheus labels, in-band fields, the docs.
    #[test]
    fn drop_reasons_have_stable_names_in_prometheus_text() {
        let names: Vec<&str> = DropReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(
            names,
            [
                "queue_full",
                "io_error",
                "shutdown",
                "reentrant",
                "rejected"
            ]
        );
        let mut m = Metrics::default();
        for (reason, n) in DropReason::ALL.into_iter().zip([3, 2, 1, 4, 5]) {
            m.dropped[reason as usize][Level::Info as usize] = n;
        }
        let text = m.to_prometheus("loglag");
        for (name, n) in names.iter().zip([3, 2, 1, 4, 5]) {
            let line = format!("loglag_dropped_total{{reason=\"{name}\"}} {n}");
            assert!(text.contains(&line), "{line} not in:\n{text}");
        }
    }

    /// Found by `cargo mutants`: nothing checked the write-latency figures.
    #[test]
    fn write_latency_percentiles_are_bucket_upper_bounds() {
        let buckets = LatencyBuckets::default();
        assert_eq!(buckets.snapshot(), WriteLatency::default(), "no samples");
        for _ in 0..98 {
            buckets.record(Duration::from_nanos(1_000));
        }
        buckets.record(Duration::from_millis(1));
        buckets.record(Duration::from_secs(1));
        let w = buckets.snapshot();
        assert_eq!(w.count, 100);
        // Each figure is the power of two just above the true value: within 2x.
        assert_eq!(w.p50, Duration::from_nanos(1 << 10));
        assert_eq!(w.p99, Duration::from_nanos(1 << 20));
        assert_eq!(w.max, Duration::from_nanos(1 << 30));
        for (true_ns, bound) in [
            (1_000u64, w.p50),
            (1_000_000, w.p99),
            (1_000_000_000, w.max),
        ] {
            let b = bound.as_nanos() as u64;
            assert!(b >= true_ns && b < 2 * true_ns, "{true_ns} ns -> {b} ns");
        }
    }
}
