//! What a log call does when the byte budget is used up.

use crate::record::parse::ParseError;
use std::time::Duration;

/// The overflow policy: what happens to a record when the queue's byte budget is full.
///
/// Every record a policy refuses is counted in [`Metrics`](crate::Metrics) as a
/// `queue_full` drop, by level, and announced in-band in the sink.
///
/// The default is [`Overflow::ShedByLevel`]: it never makes the caller wait, and under
/// overload it gives up DEBUG first, then INFO, while keeping a reserve of the budget
/// (1/8 by default) that only WARN and ERROR may use, so the records that explain an
/// incident survive it.
///
/// ```
/// use std::time::Duration;
/// use loglag::{NonBlockingBuilder, Overflow};
/// let (writer, _guard) = NonBlockingBuilder::default()
///     .overflow(Overflow::BlockFor(Duration::from_millis(5)))
///     .finish(std::io::sink());
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Overflow {
    /// Wait for room as long as it takes. The only policy that can stall the caller
    /// indefinitely on a hung sink.
    Block,
    /// Wait for room at most this long, then drop the record. A wait beyond what an
    /// `Instant` can reach waits as long as [`Block`](Overflow::Block) does; parsed
    /// from text (`block-for=5ms`), it is at most a year (`8760h`).
    BlockFor(Duration),
    /// Drop the record being logged.
    DropNewest,
    /// Evict the oldest queued records to make room. If the oldest record is still
    /// being written by another thread, the new record is dropped instead.
    DropOldest,
    /// Never wait. TRACE and DEBUG may fill the budget up to `budget − 2 × reserve`,
    /// INFO up to `budget − reserve`, WARN and ERROR the whole budget. So under a
    /// flood the levels are shed in that order, and WARN and ERROR are shed only once
    /// the whole budget is full: when they alone arrive faster than the sink drains,
    /// the reserve runs out and they are dropped (counted, at their level) like the
    /// rest.
    #[default]
    ShedByLevel,
}

impl Overflow {
    /// The name [`FromStr`](std::str::FromStr) reads back (`block`, `block-for=5ms`,
    /// `drop-newest`, `drop-oldest`, `shed-by-level`).
    pub fn name(self) -> String {
        match self {
            Overflow::Block => "block".into(),
            Overflow::BlockFor(d) => format!("block-for={}us", d.as_micros()),
            Overflow::DropNewest => "drop-newest".into(),
            Overflow::DropOldest => "drop-oldest".into(),
            Overflow::ShedByLevel => "shed-by-level".into(),
        }
    }
}

impl std::fmt::Display for Overflow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name())
    }
}

impl std::str::FromStr for Overflow {
    type Err = ParseError;

    /// Case-insensitive; `_` may stand for `-`. A `block-for=` wait longer than a
    /// year (`8760h`) is an error.
    ///
    /// ```
    /// use loglag::Overflow;
    /// assert_eq!("shed-by-level".parse::<Overflow>()?, Overflow::ShedByLevel);
    /// assert_eq!(
    ///     "block-for=5ms".parse::<Overflow>()?,
    ///     Overflow::BlockFor(std::time::Duration::from_millis(5))
    /// );
    /// # Ok::<(), loglag::ParseError>(())
    /// ```
    fn from_str(s: &str) -> Result<Overflow, ParseError> {
        let err = || {
            ParseError::new(
                "invalid overflow policy",
                s.trim(),
                "block, block-for=DURATION (e.g. 5ms, at most 8760h: a year), drop-newest, drop-oldest or shed-by-level",
            )
        };
        let name = s.trim().to_ascii_lowercase().replace('_', "-");
        Ok(match name.as_str() {
            "block" => Overflow::Block,
            "drop-newest" => Overflow::DropNewest,
            "drop-oldest" => Overflow::DropOldest,
            "shed-by-level" => Overflow::ShedByLevel,
            other => {
                let wait = other.strip_prefix("block-for=").ok_or_else(err)?;
                let wait = crate::settings::units::parse_duration(wait)
                    .ok()
                    .filter(|d| *d <= crate::settings::units::MAX_CONFIGURED_DURATION)
                    .ok_or_else(err)?;
                Overflow::BlockFor(wait)
            }
        })
    }
}
