//! The batch journal: what the writer records in the header before a batch goes to the
//! sink and once it is there, and what recovery reads back of a batch, or of a live
//! drop report (journaled by `ledger.rs`), that a kill interrupted: whether it is in
//! the sink it was going to, whole, in part or not at all.

use std::sync::atomic::Ordering;

use super::header::{
    SpoolHeader, BATCH_BYTES, PENDING_END, SINK_DEV, SINK_INO, SINK_LEN_BEFORE, TAIL,
};
use crate::spool::ledger::PENDING_REPORT;

impl SpoolHeader {
    /// Records the batch about to be written, and the file it goes to.
    pub(crate) fn begin_batch(
        &self,
        end: u64,
        sink_len: Option<u64>,
        sink_identity: Option<(u64, u64)>,
        bytes: u64,
    ) {
        let (dev, ino) = sink_identity.unwrap_or((0, 0));
        self.word(SINK_LEN_BEFORE)
            .store(sink_len.unwrap_or(u64::MAX), Ordering::Relaxed);
        self.word(BATCH_BYTES).store(bytes, Ordering::Relaxed);
        self.word(SINK_DEV).store(dev, Ordering::Relaxed);
        self.word(SINK_INO).store(ino, Ordering::Relaxed);
        // Last, with release: a pending end makes the words above count.
        self.word(PENDING_END).store(end, Ordering::Release);
    }

    /// The batch reached the sink (or was counted as dropped).
    pub(crate) fn end_batch(&self, end: u64) {
        // The tail first: killed between the two, the batch is delivered, not pending.
        self.word(TAIL).store(end, Ordering::Release);
        self.word(PENDING_END).store(0, Ordering::Release);
    }

    /// The batch a kill interrupted between `begin_batch` and `end_batch`, if any. One
    /// that ends at the tail is none: `end_batch` had advanced the tail over it when
    /// the kill came, before it could clear it.
    pub(super) fn pending_batch(&self) -> Option<PendingBatch> {
        let end = self.word(PENDING_END).load(Ordering::Acquire);
        (end != 0 && end > self.tail()).then(|| PendingBatch {
            end,
            sink_len_before: self.word(SINK_LEN_BEFORE).load(Ordering::Acquire),
            bytes: self.word(BATCH_BYTES).load(Ordering::Acquire),
            identity: (
                self.word(SINK_DEV).load(Ordering::Acquire),
                self.word(SINK_INO).load(Ordering::Acquire),
            ),
        })
    }

    /// The live report a kill interrupted (`DropLedger::begin_report`), if any.
    pub(super) fn pending_report(&self) -> Option<PendingReport> {
        let ledger = self.ledger();
        let len = ledger.at(PENDING_REPORT + 20).load(Ordering::Acquire);
        (len != 0).then(|| PendingReport {
            len,
            sink_len_before: ledger.at(PENDING_REPORT + 21).load(Ordering::Acquire),
            identity: (
                ledger.at(PENDING_REPORT + 22).load(Ordering::Acquire),
                ledger.at(PENDING_REPORT + 23).load(Ordering::Acquire),
            ),
        })
    }
}

/// A batch journaled as being written when the process ended.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingBatch {
    /// The ring position after its last record.
    pub(super) end: u64,
    /// The sink's length before it (`u64::MAX`: not known).
    sink_len_before: u64,
    bytes: u64,
    /// The sink file's (device, inode); (0, 0): not a file.
    identity: (u64, u64),
}

/// How much of an interrupted batch a sink holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Landed {
    /// All of it: it is not written again.
    Whole,
    /// The first `cut` bytes: the sink is cut back to `keep` bytes, then the batch is
    /// written again.
    Part { keep: u64, cut: u64 },
    /// None of it.
    Nothing,
    /// Not known: another sink than the batch's, or one that cannot tell its length.
    /// The batch is written again (at least once).
    Unknown,
}

impl PendingBatch {
    /// Where the batch is in a sink that is now `position` bytes long and is the file
    /// `identity`. Only the very file the batch went to is trusted: the bytes of any
    /// other are not the batch's to skip or cut.
    pub(super) fn landed(&self, position: Option<u64>, identity: Option<(u64, u64)>) -> Landed {
        let same_file = self.identity != (0, 0) && identity == Some(self.identity);
        match (
            same_file,
            position,
            self.sink_len_before.checked_add(self.bytes),
        ) {
            (true, Some(now), Some(batch_end)) if self.sink_len_before != u64::MAX => {
                if now >= batch_end {
                    Landed::Whole
                } else if now > self.sink_len_before {
                    Landed::Part {
                        keep: self.sink_len_before,
                        cut: now - self.sink_len_before,
                    }
                } else {
                    Landed::Nothing
                }
            }
            _ => Landed::Unknown,
        }
    }
}

/// A live drop report journaled as being written when the process ended.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingReport {
    len: u64,
    /// The sink's length before it (`u64::MAX`: not known).
    sink_len_before: u64,
    identity: (u64, u64),
}

impl PendingReport {
    /// Whether the report is whole in the sink: the very file it went to, at least as
    /// long as the report made it. Asked before recovery writes anything, so that only
    /// the report itself can account for the file's length past where it began.
    pub(super) fn landed(&self, position: Option<u64>, identity: Option<(u64, u64)>) -> bool {
        self.sink_len_before != u64::MAX
            && self.identity != (0, 0)
            && identity == Some(self.identity)
            && position.is_some_and(|now| now >= self.sink_len_before.saturating_add(self.len))
    }
}
