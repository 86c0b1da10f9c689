//! Timestamps for captured records: read raw on the caller's thread, turned into
//! wall-clock time on the writer.
//!
//! Where the CPU's time-stamp counter runs at a constant rate and does not stop in
//! sleep states (`constant_tsc` and `nonstop_tsc` in /proc/cpuinfo, x86-64 only), the
//! caller reads it with one `rdtsc` (no system call, no vDSO seqlock: a macro call is 50 ns
//! at p50 with it and 70 ns with `LOGLAG_CLOCK=realtime`, timer included, measured with
//! `cargo bench -p loglag --bench latency -- --rounds 1 --only loglag_macro`). The
//! writer converts ticks to nanoseconds with a rate it measures itself against
//! `CLOCK_REALTIME` and re-anchors every 500 ms, as Quill and fmtlog do. Elsewhere, or
//! with `LOGLAG_CLOCK=realtime`, the caller reads `CLOCK_REALTIME` directly.
//!
//! Not the coarse clock: its resolution is a scheduler tick (4 ms here), which would
//! print microseconds that are not true.
//!
//! What it costs: two records taken on two cores a few µs apart can come out with
//! their timestamps a few µs out of order after a re-anchoring, as Quill documents.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const UNDECIDED: u8 = 0;
const TSC: u8 = 1;
const REALTIME: u8 = 2;

static SOURCE: AtomicU8 = AtomicU8::new(UNDECIDED);

/// The environment variable that forces `CLOCK_REALTIME` on the caller.
pub const CLOCK_ENV: &str = "LOGLAG_CLOCK";

/// A raw reading: TSC ticks, or Unix nanoseconds (`tsc == false`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Raw {
    pub(crate) value: u64,
    pub(crate) tsc: bool,
}

/// Reads the clock on the caller's path.
#[inline]
pub(crate) fn now() -> Raw {
    match SOURCE.load(Ordering::Relaxed) {
        TSC => Raw {
            value: rdtsc(),
            tsc: true,
        },
        REALTIME => realtime(),
        _ => {
            decide();
            now()
        }
    }
}

/// The key by which the writer merges the records of several rings (`lanes.rs`):
/// TSC ticks where the caller reads the TSC, `CLOCK_MONOTONIC` nanoseconds elsewhere.
/// Never the wall clock, which can step back: on one thread the key never decreases.
#[inline]
pub(crate) fn merge_key() -> u64 {
    match SOURCE.load(Ordering::Relaxed) {
        TSC => rdtsc(),
        REALTIME => monotonic_ns(),
        _ => {
            decide();
            merge_key()
        }
    }
}

/// A caller's reading as a merge key: the reading itself when it is TSC ticks.
#[inline]
pub(crate) fn merge_key_of(raw: Raw) -> u64 {
    if raw.tsc {
        raw.value
    } else {
        merge_key()
    }
}

/// A record's enqueue stamp, from which the metrics tell the age of the oldest queued
/// record: the caller's own reading where that is TSC ticks (no second clock read per
/// record: the coarse clock was 6% of the caller's profile), `CLOCK_MONOTONIC_COARSE`
/// nanoseconds elsewhere. Never the wall clock, which can step.
#[inline]
pub(crate) fn stamp_of(raw: Raw) -> u64 {
    if raw.tsc {
        raw.value
    } else {
        crate::record::time::coarse_monotonic_ns()
    }
}

/// An enqueue stamp for a record that has no reading of its own (a formatted line).
#[inline]
pub(crate) fn stamp_now() -> u64 {
    match SOURCE.load(Ordering::Relaxed) {
        TSC => rdtsc(),
        REALTIME => crate::record::time::coarse_monotonic_ns(),
        _ => {
            decide();
            stamp_now()
        }
    }
}

/// The time since an enqueue stamp was taken.
pub(crate) fn stamp_age(stamp: u64) -> std::time::Duration {
    match (SOURCE.load(Ordering::Relaxed), TSC_ORIGIN.get()) {
        (TSC, Some(origin)) => {
            // Ticks to nanoseconds at the rate since the source was decided (before
            // the first record), so no rate needs to be measured or shared.
            let now = sample();
            let ticks = now.tsc.saturating_sub(stamp) as u128;
            let span_ticks = now.tsc.saturating_sub(origin.tsc).max(1) as u128;
            let span_ns = now.mono.saturating_sub(origin.mono) as u128;
            Duration::from_nanos((ticks * span_ns / span_ticks) as u64)
        }
        _ => Duration::from_nanos(crate::record::time::coarse_monotonic_ns().saturating_sub(stamp)),
    }
}

/// The TSC and the monotonic clock read when the TSC was chosen: `stamp_age`'s rate.
static TSC_ORIGIN: std::sync::OnceLock<Sample> = std::sync::OnceLock::new();

/// Unix nanoseconds from `CLOCK_REALTIME`.
pub(crate) fn realtime() -> Raw {
    let ns = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos() as u64;
    Raw {
        value: ns,
        tsc: false,
    }
}

/// Decides the source once per process (a pipeline's build calls this, so a caller
/// never reads /proc).
#[cold]
pub(crate) fn decide() {
    if SOURCE.load(Ordering::Relaxed) != UNDECIDED {
        return;
    }
    let forced_realtime = std::env::var(CLOCK_ENV).is_ok_and(|v| v.trim() == "realtime");
    let tsc = !forced_realtime && cfg!(target_arch = "x86_64") && invariant_tsc();
    if tsc {
        TSC_ORIGIN.get_or_init(sample);
    }
    SOURCE.store(if tsc { TSC } else { REALTIME }, Ordering::Relaxed);
}

fn invariant_tsc() -> bool {
    let Ok(info) = std::fs::read_to_string("/proc/cpuinfo") else {
        return false;
    };
    let flags: Vec<&str> = info.lines().filter(|l| l.starts_with("flags")).collect();
    !flags.is_empty()
        && flags.iter().all(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            words.contains(&"constant_tsc") && words.contains(&"nonstop_tsc")
        })
}

#[inline]
fn rdtsc() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` has no preconditions on x86-64.
        unsafe { core::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        realtime().value
    }
}

/// Monotonic nanoseconds (`CLOCK_MONOTONIC`): the rate is measured against it, so a
/// step of the wall clock (NTP, an operator) cannot stall or skew the measurement.
fn monotonic_ns() -> u64 {
    crate::record::time::monotonic_ns()
}

/// Ticks, monotonic ns and Unix ns read as close together as the machine allows.
#[derive(Debug, Clone, Copy)]
struct Sample {
    tsc: u64,
    mono: u64,
    real: u64,
}

fn sample() -> Sample {
    let mut best: Option<(u64, Sample)> = None;
    for _ in 0..5 {
        let before = rdtsc();
        let mono = monotonic_ns();
        let real = realtime().value;
        let after = rdtsc();
        let gap = after.wrapping_sub(before);
        if best.is_none_or(|(g, _)| gap < g) {
            best = Some((
                gap,
                Sample {
                    tsc: before + gap / 2,
                    mono,
                    real,
                },
            ));
        }
    }
    best.expect("five samples").1
}

/// The writer's converter from raw readings to wall-clock time.
#[derive(Debug)]
pub(crate) struct WallClock {
    /// The sample the rate is measured from.
    origin: Sample,
    /// The latest sample: conversions count ticks from its TSC and add to its wall time.
    base: Sample,
    ns_per_tick: f64,
    next_resync_tick: u64,
}

/// The first rate is measured over at least a millisecond of monotonic time, so a
/// 50 ns reading error is 5e-5 of it; re-anchoring narrows it to 1e-7.
const FIRST_SPAN_NS: u64 = 1_000_000;
const RESYNC_NS: f64 = 500e6;

impl WallClock {
    pub(crate) fn new() -> WallClock {
        let origin = sample();
        WallClock {
            origin,
            base: origin,
            ns_per_tick: 0.0,
            next_resync_tick: 0,
        }
    }

    /// The wall-clock time of a raw reading.
    pub(crate) fn system_time_of(&mut self, raw: Raw) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.unix_ns_of(raw))
    }

    pub(crate) fn unix_ns_of(&mut self, raw: Raw) -> u64 {
        if !raw.tsc {
            return raw.value;
        }
        // The record's own reading stands in for "now": records reach the writer
        // within milliseconds, and reading the TSC per record cost the writer 2%
        // (`perf record -g` on `cargo bench -p loglag --bench latency -- --throughput`).
        if self.ns_per_tick == 0.0 || raw.value >= self.next_resync_tick {
            self.resync();
        }
        // In i64, not i128: i128 to and from f64 are software routines (`__floattidf`,
        // `__fixdfti`), 1.6% of the writer's profile. Tick differences of a running
        // process and Unix nanoseconds until 2262 fit an i64.
        let ticks = raw.value.wrapping_sub(self.base.tsc) as i64;
        let ns = (self.base.real as i64).saturating_add((ticks as f64 * self.ns_per_tick) as i64);
        ns.max(0) as u64
    }

    /// Re-anchors to `CLOCK_REALTIME` (a wall-clock step shows from here on) and
    /// refines the rate against `CLOCK_MONOTONIC`. Runs on the writer only; the first
    /// call may spin up to a millisecond of monotonic time to measure a first rate.
    fn resync(&mut self) {
        let mut now = sample();
        while now.mono.saturating_sub(self.origin.mono) < FIRST_SPAN_NS {
            std::hint::spin_loop();
            now = sample();
        }
        let ticks = now.tsc.saturating_sub(self.origin.tsc).max(1);
        self.ns_per_tick = (now.mono - self.origin.mono) as f64 / ticks as f64;
        // Measure the next rate over the last interval, not since start.
        if now.mono - self.origin.mono >= 1_000_000_000 {
            self.origin = self.base;
        }
        self.base = now;
        self.next_resync_tick = now.tsc + (RESYNC_NS / self.ns_per_tick) as u64;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reading converts to within a millisecond of `CLOCK_REALTIME` read next to it,
    /// before and after a re-anchoring.
    #[test]
    fn raw_readings_convert_to_the_wall_clock() {
        let mut clock = WallClock::new();
        for _ in 0..3 {
            let before = realtime().value;
            let raw = now();
            let after = realtime().value;
            let ns = clock.unix_ns_of(raw);
            assert!(
                ns + 1_000_000 >= before && ns <= after + 1_000_000,
                "{before} <= {ns} <= {after} (tsc: {})",
                raw.tsc
            );
            clock.next_resync_tick = 0;
        }
        let plain = realtime();
        assert_eq!(clock.unix_ns_of(plain), plain.value);
    }
}
