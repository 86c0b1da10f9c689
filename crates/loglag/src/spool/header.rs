//! The spool file's header: its layout (the table in `mod.rs`), the header words of an
//! open spool, the memory recovery works on, and the check of the positions before
//! anything trusts them.

use std::marker::PhantomData;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};

use super::SpoolSync;
use crate::queue;
use crate::spool::ledger::DropLedger;

pub(super) const MAGIC: u64 = u64::from_le_bytes(*b"LOGLAGSP");
/// The version a new spool is written with. Version 2 added the `rejected` drop
/// reason's ledger words (64..74, see `ledger.rs`), which a version 1 header holds as
/// zeroes: so a new spool starts as version 1, readable by builds before the reason,
/// and becomes version 2 at its first rejection (`DropLedger::dropped`).
pub(super) const VERSION: u64 = 1;
/// The layouts this build reads.
pub(super) const READS_VERSIONS: [u64; 2] = [1, crate::spool::ledger::LAYOUT_WITH_REJECTED];
pub(super) const HEADER_BYTES: u64 = 4096;
const HEADER_WORDS: usize = HEADER_BYTES as usize / 8;

// The words of the layout table, by name.
const MAGIC_WORD: usize = 0;
const VERSION_WORD: usize = 1;
const CAPACITY_WORD: usize = 2;
pub(super) const TAIL: usize = 3;
pub(super) const PENDING_END: usize = 4;
pub(super) const SINK_LEN_BEFORE: usize = 5;
pub(super) const BATCH_BYTES: usize = 6;
pub(super) const SINK_DEV: usize = 7;
pub(super) const SINK_INO: usize = 8;

/// The header words of an open spool. Points into the mapping the ring owns.
#[derive(Debug)]
pub(crate) struct SpoolHeader {
    words: NonNull<AtomicU64>,
    pub(crate) sync: SpoolSync,
}

// SAFETY: the words are atomics inside a mapping that lives as long as the ring, which
// the same `Core` owns.
unsafe impl Send for SpoolHeader {}
// SAFETY: as above.
unsafe impl Sync for SpoolHeader {}

impl SpoolHeader {
    /// The header whose 512 words start at `words`.
    ///
    /// # Safety
    /// `words` points at a 4096-byte, 8-aligned header that outlives the returned value
    /// and is accessed only atomically meanwhile.
    pub(super) unsafe fn at(words: NonNull<AtomicU64>, sync: SpoolSync) -> SpoolHeader {
        SpoolHeader { words, sync }
    }

    /// The header's drop ledger, for the counters of the pipeline that owns the spool.
    pub(crate) fn ledger(&self) -> DropLedger {
        // SAFETY: the header outlives the `Core` that holds both it and the ledger.
        unsafe { DropLedger::new(self.words) }
    }

    pub(super) fn word(&self, i: usize) -> &AtomicU64 {
        debug_assert!(i < HEADER_WORDS);
        // SAFETY: i < 512 words of the 4096-byte header.
        unsafe { &*self.words.as_ptr().add(i) }
    }

    /// Writes the header of a new spool.
    pub(super) fn init(&self, capacity: u64) {
        self.word(MAGIC_WORD).store(MAGIC, Ordering::Relaxed);
        self.word(VERSION_WORD).store(VERSION, Ordering::Relaxed);
        self.word(CAPACITY_WORD).store(capacity, Ordering::Relaxed);
    }

    /// Every record before this position reached the sink.
    pub(super) fn tail(&self) -> u64 {
        self.word(TAIL).load(Ordering::Acquire)
    }
}

/// A spool's memory, the header then the ring, as recovery sees it: in the mapped file
/// (`open.rs`) or, for the model test, on the heap. Recovery needs nothing else of the
/// spool, so its crash points can be tested without a file.
pub(super) struct SpoolRegion<'a> {
    header: SpoolHeader,
    ring: NonNull<AtomicU64>,
    capacity: u64,
    // The words are borrowed exclusively: nobody else reads or writes them meanwhile.
    _words: PhantomData<&'a mut [AtomicU64]>,
}

impl<'a> SpoolRegion<'a> {
    /// `words`: the header's 512 words, then the ring's (at least 8).
    pub(super) fn new(words: &'a mut [AtomicU64]) -> SpoolRegion<'a> {
        assert!(
            words.len() >= HEADER_WORDS + 8,
            "a spool region holds a header and a ring"
        );
        let capacity = ((words.len() - HEADER_WORDS) * 8) as u64;
        let base = NonNull::new(words.as_mut_ptr()).expect("a slice is non-null");
        // SAFETY: inside the slice, checked above.
        let ring = unsafe { NonNull::new_unchecked(base.as_ptr().add(HEADER_WORDS)) };
        SpoolRegion {
            // SAFETY: the first 512 words, borrowed for 'a like the region.
            header: unsafe { SpoolHeader::at(base, SpoolSync::Never) },
            ring,
            capacity,
            _words: PhantomData,
        }
    }

    pub(super) fn header(&self) -> &SpoolHeader {
        &self.header
    }

    /// The ring's size in bytes.
    pub(super) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// The valid records from position `from` on (see `queue::scan`).
    pub(super) fn scan(&self, from: u64) -> queue::Scan {
        // SAFETY: `capacity` bytes of 8-aligned words, borrowed exclusively.
        unsafe { queue::scan(self.ring.as_ptr() as *const u8, self.capacity, from) }
    }

    /// Zeroes the ring, so that no stale word can look like a committed record. Only
    /// words that are not zero are written: a fresh or already clean spool costs reads,
    /// not a write of the whole file.
    pub(super) fn zero_ring(&mut self) {
        // SAFETY: the ring's words, borrowed exclusively for 'a.
        let words =
            unsafe { std::slice::from_raw_parts(self.ring.as_ptr(), (self.capacity / 8) as usize) };
        for w in words {
            if w.load(Ordering::Relaxed) != 0 {
                w.store(0, Ordering::Relaxed);
            }
        }
    }
}

/// Checks the header's positions before anything trusts them. Returns why not.
pub(super) fn validate_positions(header: &SpoolHeader, capacity: u64) -> Result<(), String> {
    let tail = header.word(TAIL).load(Ordering::Acquire);
    let pending_end = header.word(PENDING_END).load(Ordering::Acquire);
    let batch_bytes = header.word(BATCH_BYTES).load(Ordering::Acquire);
    if tail % 8 != 0 {
        return Err(format!("corrupt spool: unaligned tail {tail}"));
    }
    // Positions only grow; leave room for many laps before u64 could wrap.
    if tail > u64::MAX - 16 * capacity {
        return Err(format!(
            "corrupt spool: tail {tail} is too close to wrapping around"
        ));
    }
    if pending_end != 0 {
        // A pending end at the tail itself is a batch whose `end_batch` was killed
        // between its two stores: delivered, and no contradiction.
        if pending_end % 8 != 0 || pending_end < tail || pending_end - tail > capacity {
            return Err(format!(
                "corrupt spool: a pending batch ends at {pending_end}, outside the ring after tail {tail}"
            ));
        }
        if batch_bytes > capacity {
            return Err(format!(
                "corrupt spool: a pending batch of {batch_bytes} bytes is larger than the ring"
            ));
        }
    }
    Ok(())
}
