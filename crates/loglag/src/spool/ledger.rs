//! The spool header's ledger of drops not yet announced in-band (words 16..64 of the
//! layout in `spool.rs`). Its own module so that the counters, which add every drop to
//! it, and the spool, which owns the header and announces what is left after a crash,
//! both depend on it and not on each other.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::record::drops::DROP_REASONS;

/// The first of the header words counting drops not yet announced.
pub(crate) const UNANNOUNCED: usize = 16;
/// The header word holding the report format.
pub(crate) const REPORT_FORMAT: usize = 36;
/// The first of the words journaling a live report (counts, then length, sink length,
/// device, inode).
pub(crate) const PENDING_REPORT: usize = 40;
/// The fifth reason (`rejected`, layout version 2) did not fit between the words
/// above: its unannounced drops, then its live report's, by level. A version 1 spool
/// has zeroes here (a new header is zeroed), so it is read as it was.
const REJECTED_UNANNOUNCED: usize = 64;
const REJECTED_PENDING: usize = 69;
/// The header word holding the layout version (see `spool/header.rs`).
const VERSION_WORD: usize = 1;
/// The spool layout that has the `rejected` row. A spool is marked with it only once
/// it counts a rejection: until then a version 1 build can still read it (a rollback
/// keeps its spool).
pub(crate) const LAYOUT_WITH_REJECTED: u64 = 2;

/// The header word counting `reason`'s drops at `level` (`pending`: in the live report).
fn ledger_word(pending: bool, reason: usize, level: usize) -> usize {
    debug_assert!(reason < DROP_REASONS && level < 5);
    match (pending, reason) {
        (false, 4) => REJECTED_UNANNOUNCED + level,
        (true, 4) => REJECTED_PENDING + level,
        (false, r) => UNANNOUNCED + r * 5 + level,
        (true, r) => PENDING_REPORT + r * 5 + level,
    }
}

/// The unannounced-drop words of a spool's header (see the layout above).
#[derive(Debug, Clone, Copy)]
pub(crate) struct DropLedger {
    words: NonNull<AtomicU64>,
}

impl DropLedger {
    /// The ledger inside a spool header that starts at `words`.
    ///
    /// # Safety
    /// `words` points at a 4096-byte header that outlives every copy of the ledger.
    pub(crate) unsafe fn new(words: NonNull<AtomicU64>) -> DropLedger {
        DropLedger { words }
    }
}

// SAFETY: atomics inside the mapping, which lives as long as the `Core` that holds both.
unsafe impl Send for DropLedger {}
// SAFETY: as above.
unsafe impl Sync for DropLedger {}

impl DropLedger {
    pub(crate) fn word(&self, reason: usize, level: usize) -> &AtomicU64 {
        self.at(ledger_word(false, reason, level))
    }

    pub(crate) fn dropped(&self, reason: usize, level: usize, n: u64) {
        if reason == 4 {
            self.at(VERSION_WORD)
                .fetch_max(LAYOUT_WITH_REJECTED, Ordering::AcqRel);
        }
        self.word(reason, level).fetch_add(n, Ordering::AcqRel);
    }

    /// `n` of these drops are now announced in the sink.
    pub(crate) fn announced(&self, reason: usize, level: usize, n: u64) {
        let w = self.word(reason, level);
        let _ = w.fetch_update(Ordering::AcqRel, Ordering::Acquire, |v| {
            Some(v.saturating_sub(n))
        });
    }

    pub(crate) fn at(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < 512);
        // SAFETY: every index used is below 74, inside the 4096-byte (512-word) header.
        unsafe { &*self.words.as_ptr().add(i) }
    }

    /// Journals a live report of `counts` about to be written into a sink of length
    /// `position` and identity `identity`.
    pub(crate) fn begin_report(
        &self,
        counts: &[[u64; 5]; DROP_REASONS],
        len: u64,
        position: Option<u64>,
        identity: Option<(u64, u64)>,
    ) {
        for (r, levels) in counts.iter().enumerate() {
            for (l, &n) in levels.iter().enumerate() {
                self.at(ledger_word(true, r, l)).store(n, Ordering::Release);
            }
        }
        let (dev, ino) = identity.unwrap_or((0, 0));
        self.at(PENDING_REPORT + 21)
            .store(position.unwrap_or(u64::MAX), Ordering::Release);
        self.at(PENDING_REPORT + 22).store(dev, Ordering::Release);
        self.at(PENDING_REPORT + 23).store(ino, Ordering::Release);
        self.at(PENDING_REPORT + 20).store(len, Ordering::Release);
    }

    /// The journaled report is in the sink (`written`) or is not: its counts leave the
    /// ledger only if it is.
    pub(crate) fn end_report(&self, written: bool) {
        if written {
            for r in 0..DROP_REASONS {
                for l in 0..5 {
                    let n = self.at(ledger_word(true, r, l)).load(Ordering::Acquire);
                    self.announced(r, l, n);
                }
            }
        }
        self.at(PENDING_REPORT + 20).store(0, Ordering::Release);
    }

    pub(crate) fn set_report_format(&self, format: crate::record::Format) {
        // SAFETY: word 36 lies inside the header.
        let w = unsafe { &*self.words.as_ptr().add(REPORT_FORMAT) };
        w.store(u64::from(format.index()) + 1, Ordering::Relaxed);
    }
}
