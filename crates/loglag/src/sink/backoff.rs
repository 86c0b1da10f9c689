//! The one back-off of the network sinks and the fallback chain: a delay that
//! doubles from `initial` up to `max` with every failure and starts again after a
//! success.
//!
//! Two uses, the same sequence:
//! - a pause between retries inside one call ([`Backoff::next`]: OTLP's and RELP's
//!   retries of a batch);
//! - a circuit ([`Backoff::failed`], [`Backoff::waiting`], [`Backoff::reset`]): after a
//!   failure, attempts are skipped until the delay has passed (a collector that is
//!   down costs the writer no time: OTLP, RELP, syslog, each link of a `Fallback`).
//!
//! [`Retry`] is a back-off with a deadline: every retry loop's "pause, or give up"
//! (OTLP's and RELP's retries of a batch, the spool's and the rolling file's waits for
//! a lock).
//!
//! Nothing here panics or overflows for any `Duration`: the doubling saturates, and an
//! `Instant` that a delay would carry past what the clock holds is "far in the future"
//! ([`instant_after`](crate::settings::units::instant_after)).

use std::time::{Duration, Instant};

#[derive(Debug, Clone)]
pub(crate) struct Backoff {
    initial: Duration,
    max: Duration,
    /// The delay last handed out since the last reset; zero if none.
    delay: Duration,
    /// Until when attempts are skipped, after a failure.
    retry_at: Option<Instant>,
}

impl Backoff {
    /// Delays `initial`, `2 × initial`, … up to `max` (a `max` below `initial` is
    /// `initial`).
    pub(crate) fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max: max.max(initial),
            delay: Duration::ZERO,
            retry_at: None,
        }
    }

    /// The next delay: `initial` first, then twice the one before, at most `max`.
    pub(crate) fn next(&mut self) -> Duration {
        self.delay = self.delay.saturating_mul(2).clamp(self.initial, self.max);
        self.delay
    }

    /// A failure at `now`: attempts wait for the [next](Backoff::next) delay, which is
    /// returned.
    pub(crate) fn failed(&mut self, now: Instant) -> Duration {
        let delay = self.next();
        self.retry_at = Some(crate::settings::units::instant_after(now, delay));
        delay
    }

    /// A success: no wait, and the next failure waits `initial` again.
    pub(crate) fn reset(&mut self) {
        self.delay = Duration::ZERO;
        self.retry_at = None;
    }

    /// Whether attempts are still skipped at `now` (a failure's delay has not passed).
    pub(crate) fn waiting(&self, now: Instant) -> bool {
        self.retry_at.is_some_and(|at| now < at)
    }

    /// The delay last handed out since the last reset (zero if none).
    #[cfg(test)]
    pub(crate) fn delay(&self) -> Duration {
        self.delay
    }

    /// When attempts may start again, after a failure.
    #[cfg(test)]
    pub(crate) fn retry_at(&self) -> Option<Instant> {
        self.retry_at
    }

    /// Lets the wait end now, as time passing would.
    #[cfg(test)]
    pub(crate) fn expire(&mut self) {
        self.retry_at = None;
    }
}

/// A back-off's pauses until a deadline: between two attempts, either the next pause
/// (and the attempt after it starts by the deadline) or none (give up now, without
/// waiting for an attempt that could not start in time).
#[derive(Debug, Clone)]
pub(crate) struct Retry {
    backoff: Backoff,
    /// No attempt starts after it; `None`: no bound (a duration past what an `Instant`
    /// holds).
    deadline: Option<Instant>,
}

impl Retry {
    pub(crate) fn new(backoff: Backoff, deadline: Option<Instant>) -> Retry {
        Retry { backoff, deadline }
    }

    /// Pauses from `backoff` for up to `patience` from now.
    pub(crate) fn for_up_to(backoff: Backoff, patience: Duration) -> Retry {
        Retry::new(backoff, Instant::now().checked_add(patience))
    }

    /// The pause before the next attempt, at `now`: the back-off's next delay, or
    /// `floor` if longer (a peer's Retry-After may ask for more, never for less).
    /// `None` when the attempt after it would start past the deadline.
    pub(crate) fn next_pause(&mut self, now: Instant, floor: Option<Duration>) -> Option<Duration> {
        let pause = self.backoff.next().max(floor.unwrap_or(Duration::ZERO));
        match self.deadline {
            None => Some(pause),
            Some(deadline) => now
                .checked_add(pause)
                .is_some_and(|next| next <= deadline)
                .then_some(pause),
        }
    }

    /// Waits out the next pause and says `true`, or says `false` at once when the next
    /// attempt would start past the deadline.
    pub(crate) fn wait(&mut self) -> bool {
        self.wait_at_least(None)
    }

    /// [`wait`](Self::wait), pausing at least `floor`.
    pub(crate) fn wait_at_least(&mut self, floor: Option<Duration>) -> bool {
        match self.next_pause(Instant::now(), floor) {
            Some(pause) => {
                std::thread::sleep(pause);
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const MS: Duration = Duration::from_millis(1);

    /// The spool's lock wait: 1, 2, 4, … 128 ms fit a 300 ms deadline (255 ms in all),
    /// and the next (128 ms more) would start past it.
    #[test]
    fn a_retry_pauses_by_its_backoff_until_the_next_attempt_would_pass_the_deadline() {
        let start = Instant::now();
        let mut retry = Retry::new(Backoff::new(MS, 128 * MS), Some(start + 300 * MS));
        let mut now = start;
        let mut pauses = Vec::new();
        while let Some(pause) = retry.next_pause(now, None) {
            pauses.push(pause.as_millis());
            now += pause;
        }
        assert_eq!(pauses, [1, 2, 4, 8, 16, 32, 64, 128]);
        assert_eq!(now - start, 255 * MS);
    }

    /// A peer's floor lengthens a pause, and the doubling goes on underneath it; a
    /// floor past the deadline ends the retries; no deadline never does.
    #[test]
    fn a_floor_lengthens_a_pause_and_no_deadline_never_gives_up() {
        let start = Instant::now();
        let mut retry = Retry::new(Backoff::new(50 * MS, 5000 * MS), Some(start + 10_000 * MS));
        assert_eq!(retry.next_pause(start, Some(2000 * MS)), Some(2000 * MS));
        assert_eq!(
            retry.next_pause(start, None),
            Some(100 * MS),
            "still doubling"
        );
        assert_eq!(retry.next_pause(start, Some(20_000 * MS)), None);
        let mut forever = Retry::new(Backoff::new(MS, Duration::MAX), None);
        for _ in 0..200 {
            assert!(forever.next_pause(start, Some(Duration::MAX)).is_some());
        }
        let mut none_left = Retry::for_up_to(Backoff::new(MS, MS), Duration::ZERO);
        assert!(
            !none_left.wait(),
            "a zero patience gives up without waiting"
        );
    }

    #[test]
    fn the_delay_doubles_from_initial_to_the_cap() {
        let mut b = Backoff::new(50 * MS, Duration::from_secs(5));
        let ms: Vec<u128> = (0..10).map(|_| b.next().as_millis()).collect();
        assert_eq!(ms, [50, 100, 200, 400, 800, 1600, 3200, 5000, 5000, 5000]);
        b.reset();
        assert_eq!(b.delay(), Duration::ZERO);
        assert_eq!(b.next(), 50 * MS, "a reset starts again from initial");
    }

    #[test]
    fn a_failure_skips_attempts_until_its_delay_has_passed() {
        let mut b = Backoff::new(100 * MS, Duration::from_secs(1));
        let now = Instant::now();
        assert!(!b.waiting(now), "no failure yet");
        assert_eq!(b.failed(now), 100 * MS);
        assert_eq!(b.retry_at(), Some(now + 100 * MS));
        assert!(b.waiting(now));
        assert!(b.waiting(now + 99 * MS));
        assert!(!b.waiting(now + 100 * MS));
        assert_eq!(b.failed(now), 200 * MS);
        b.reset();
        assert!(!b.waiting(now));
        assert_eq!(b.retry_at(), None);
        assert_eq!(b.failed(now), 100 * MS);
        b.expire();
        assert!(!b.waiting(now));
        assert_eq!(b.delay(), 100 * MS, "expiring keeps the delay");
    }

    #[test]
    fn a_max_below_initial_is_initial_and_zero_stays_zero() {
        let mut b = Backoff::new(Duration::from_secs(2), MS);
        assert_eq!(b.next(), Duration::from_secs(2));
        assert_eq!(b.next(), Duration::from_secs(2));
        let mut z = Backoff::new(Duration::ZERO, Duration::ZERO);
        let now = Instant::now();
        assert_eq!(z.failed(now), Duration::ZERO);
        assert!(!z.waiting(now), "a zero delay skips nothing");
    }

    #[test]
    fn edge_durations_neither_panic_nor_overflow() {
        let huge = Duration::from_nanos(u64::MAX);
        for (initial, max) in [
            (Duration::ZERO, Duration::MAX),
            (Duration::MAX, Duration::MAX),
            (huge, Duration::MAX),
            (Duration::MAX, Duration::ZERO),
            (MS, Duration::MAX),
            (Duration::from_nanos(1), huge),
        ] {
            let mut b = Backoff::new(initial, max);
            let now = Instant::now();
            for _ in 0..200 {
                let d = b.failed(now);
                assert!(d >= initial && d <= max.max(initial));
                let at = b.retry_at().unwrap();
                assert!(at >= now);
                if !d.is_zero() {
                    assert!(b.waiting(now), "{initial:?} {max:?}: far in the future");
                }
            }
        }
        let mut b = Backoff::new(Duration::MAX, Duration::MAX);
        let now = Instant::now();
        b.failed(now);
        assert!(
            b.waiting(now + Duration::from_secs(100 * 365 * 86_400)),
            "an overflowing delay is far in the future, not now"
        );
    }

    proptest! {
        #[test]
        fn any_durations_give_a_monotone_capped_sequence(
            initial_s in any::<u64>(), initial_n in 0u32..1_000_000_000,
            max_s in any::<u64>(), max_n in 0u32..1_000_000_000,
            steps in 1usize..100,
        ) {
            let initial = Duration::new(initial_s, initial_n);
            let max = Duration::new(max_s, max_n);
            let mut b = Backoff::new(initial, max);
            let now = Instant::now();
            let mut last = Duration::ZERO;
            for _ in 0..steps {
                let d = b.failed(now);
                prop_assert!(d >= last);
                prop_assert!(d >= initial && d <= max.max(initial));
                prop_assert!(b.retry_at().unwrap() >= now);
                last = d;
            }
            b.reset();
            prop_assert_eq!(b.next(), initial);
        }
    }
}
