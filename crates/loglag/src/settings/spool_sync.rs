//! `spool_sync`: a setting's value type, beside `mode.rs` and `overflow.rs`, so that
//! the settings model does not import the spool it configures.

use std::time::Duration;

/// When the spool (and the sink) are forced to stable storage.
///
/// Without syncing, the spool survives the process being killed (the page cache stays)
/// but not power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SpoolSync {
    /// Never call msync/fdatasync: survives SIGKILL, not power loss.
    #[default]
    Never,
    /// At most this often, after a batch.
    Every(Duration),
    /// After every batch written.
    EveryFlush,
}
