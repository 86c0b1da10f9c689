//! The lab's one wait for what has nothing to wait on: a child's exit, a cgroup the
//! kernel empties asynchronously, a program's readiness, a count another thread
//! lowers. Ask, pause, ask again, until an answer or the deadline.

use std::time::{Duration, Instant};

/// Asks `check` until it answers `Some`, pausing `every` between asks, for at most
/// `limit`: the answer, or `None` once the deadline has passed. It asks once more at
/// the deadline, so an answer that came during the last pause is not missed.
pub fn poll_until<T>(
    limit: Duration,
    every: Duration,
    mut check: impl FnMut() -> Option<T>,
) -> Option<T> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(answer) = check() {
            return Some(answer);
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::sleep(every.min(left));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    #[test]
    fn answers_as_soon_as_the_check_does() {
        let asks = Cell::new(0);
        let answer = poll_until(Duration::from_secs(60), Duration::ZERO, || {
            asks.set(asks.get() + 1);
            (asks.get() == 3).then_some("third")
        });
        assert_eq!(answer, Some("third"));
        assert_eq!(asks.get(), 3);
    }

    #[test]
    fn gives_up_at_the_deadline_after_a_last_ask() {
        let asks = Cell::new(0);
        let answer: Option<()> = poll_until(Duration::ZERO, Duration::from_secs(60), || {
            asks.set(asks.get() + 1);
            None
        });
        assert_eq!(answer, None);
        assert_eq!(asks.get(), 1, "asked once, and never paused a minute");
    }
}
