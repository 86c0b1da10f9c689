//! What a log call does when the byte budget is used up.

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
    /// Wait for room at most this long, then drop the record.
    BlockFor(Duration),
    /// Drop the record being logged.
    DropNewest,
    /// Evict the oldest queued records to make room. If the oldest record is still
    /// being written by another thread, the new record is dropped instead.
    DropOldest,
    /// Never wait. TRACE and DEBUG may fill the budget up to `budget − 2 × reserve`,
    /// INFO up to `budget − reserve`, WARN and ERROR the whole budget.
    #[default]
    ShedByLevel,
}
