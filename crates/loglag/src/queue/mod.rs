//! The byte ring between producers and the writer thread.
//!
//! This is the one piece that is hand-rolled on purpose: it is the product's hot path.
//! Its layout is this module's (privacy by module: the children see `Ring`'s private
//! fields), but for what `spool/` (which lends it a mapped file and recovers from
//! one), `core/` and `lanes.rs` read of it: `HEADER`, `footprint`, `Scan`. The storage
//! is `storage.rs`'s, the shared ring's producers `mpsc.rs`'s, a thread ring's
//! `spsc.rs`'s, the write and publication of a record `push.rs`'s, the writer's side
//! `consume.rs`'s. `lanes.rs` gives each logging thread a ring of its own and merges
//! them.
//!
//! Layout: a ring of `capacity` bytes (a multiple of 8), addressed by monotone `u64`
//! positions. Each record occupies `HEADER + round_up_8(len)` bytes:
//!
//! ```text
//! word 0: state    = len << 8 | CAPTURED | level << 1 | COMMITTED   (0 while the producer
//!                    is writing; CAPTURED: the payload is `capture.rs`'s binary form)
//! word 1: enqueue stamp (`clock::stamp_of`: the caller's TSC reading, or coarse
//!         monotonic nanoseconds where there is none)
//! word 2: the record's own position   (spool mode: tells this lap from an older one),
//!         or its merge key (otherwise: `clock::merge_key`, by which `lanes.rs` orders
//!         the records of several rings)
//! word 3: checksum of position, state and payload   (spool mode: detects torn records)
//! bytes : payload, possibly wrapping around the end of the ring
//! ```
//!
//! A shared ring's producers reserve space with one compare-and-swap on `head` (the
//! only shared read-modify-write on that path), copy or write their bytes in place
//! (`try_push_in_place`), then publish the
//! state word with a release store. A thread's own ring has one producer
//! (`try_push_owned`): no compare-and-swap, a cached copy of `tail` on the producer's
//! cache line, and `head` stored after the record is published. The writer reads committed records in order from `tail`,
//! copies them out, zeroes the space (so a stale payload word can never look like a
//! committed header) and releases it with a release store to `tail`. With a spool the
//! release waits until the records are in the sink. A `DropOldest` producer evicts
//! from the oldest end under the consumer's lock; the writer's `peek` reads headers
//! without it, as a seqlock (`header_at_tail`), and a ring that has evicted writes its
//! payloads with atomic stores (`write_payload`).

use std::ptr::NonNull;

use crate::sys::sync::{fence, AtomicBool, AtomicU64, Mutex, Ordering};

use crate::record::level::Level;

pub(crate) const HEADER: u64 = 32;
const COMMITTED: u64 = 1;
const CAPTURED: u64 = 1 << 4;
/// How far ahead of a record being written its producer asks for the ring's line: the
/// writer's release zeroed that line on its core a lap ago, so a store into it waits
/// for the line to come back; asked for early, it has come by then. (x86-64 only:
/// elsewhere it is not measured.)
#[cfg_attr(any(not(target_arch = "x86_64"), loglag_loom, miri), allow(dead_code))]
const PREFETCH_AHEAD: u64 = 1024;

/// Keeps `head` and `tail` on separate cache lines so producers and the writer do not
/// fight over one line.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded(AtomicU64);

/// The producer's cache line: `head`, (single producer only) the last `tail` it
/// read, so a push that fits touches no line the writer writes, and whether a record
/// was ever evicted (read on every push, written once).
#[repr(align(128))]
#[derive(Debug, Default)]
struct ProducerLine {
    head: AtomicU64,
    cached_tail: AtomicU64,
    /// Set by `evict_oldest` before it first moves `tail`: from then on producers
    /// write payloads with atomic stores (see `write_payload`).
    evicted: AtomicBool,
}

/// The oldest record of a ring, as `Ring::peek` saw it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Peeked {
    pub(crate) key: u64,
    pub(crate) head: u64,
    pub(crate) len: usize,
}

/// What one look at a ring's oldest end found ([`Ring::look_oldest`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Oldest {
    /// Nothing was reserved past `tail`.
    Empty,
    /// The oldest record, published.
    Published(Peeked),
    /// Something lies past `tail` whose key cannot be read now: a record reserved but
    /// not yet published (the shared ring's producers), or records whose state words
    /// an evicting producer (`DropOldest`) has zeroed and whose `tail` it has yet to
    /// move. Either may hide records older than any other ring's, so a merge must
    /// wait, not pass it as empty.
    Unknown,
}

/// How far one `pop_into` may go: up to a position, and no record whose merge key is
/// above `max_key` (the next record of another ring comes first).
#[derive(Debug, Clone, Copy)]
pub(crate) struct PopBound {
    pub(crate) until_pos: u64,
    pub(crate) max_key: u64,
}

impl PopBound {
    pub(crate) const NONE: PopBound = PopBound {
        until_pos: u64::MAX,
        max_key: u64::MAX,
    };
}

/// Why a record could not be reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full;

/// Why a record was not written in place ([`Ring::try_push_owned_in_place`],
/// [`Ring::try_push_in_place`]).
// Under loom only the models push in place (`core/produce.rs`'s path is left out).
#[cfg_attr(loglag_loom, allow(dead_code))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NotInPlace {
    /// The ring has no room for it now, by the writer's own `tail`: for a thread's
    /// ring, the copying path need not try it again.
    Full,
    /// It would wrap the ring's end, or the ring has evicted: the copying path may
    /// still put it into this ring.
    CopyInstead,
}

/// What a record carries besides its bytes: the writer's merge key (0 without
/// thread rings) and its enqueue stamp (`clock::stamp_of`). Passed by reference
/// through the copying path: a copy of it through the ring lookup's closure was
/// stored as two words and loaded as one, a store-forwarding stall that was half of
/// `submit_accepted`'s samples. (A record written in place into its thread's ring
/// returns it from its `fill`, once its clock is read.)
#[derive(Debug, Clone, Copy)]
pub(crate) struct Stamps {
    pub(crate) merge_key: u64,
    pub(crate) enqueued: u64,
}

/// Renders a captured record (level, captured bytes) onto the end of a batch.
pub(crate) type Render<'a> = dyn FnMut(Level, &[u8], &mut Vec<u8>) + 'a;

/// A record read out of the ring by the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Popped {
    pub(crate) level: Level,
    pub(crate) len: usize,
}

pub(crate) struct Ring {
    base: NonNull<AtomicU64>,
    capacity: u64,
    /// `capacity - 1` where the capacity is a power of two (the default budgets and
    /// thread rings), else 0: a position's offset is then a mask, not a division,
    /// which `perf annotate` showed at 10% of `write_record` (four per record).
    offset_mask: u64,
    /// Compute positions and checksums (spool mode).
    checksums: bool,
    /// Zero released space. A shared ring needs it: a reserved, unpublished record
    /// lies below `head`, so a stale state word there could look committed. A ring
    /// with one producer publishes before it moves `head`, so everything below `head`
    /// is published and nothing reads above it: no zeroing, fewer stores per record.
    zero_on_release: bool,
    head: ProducerLine,
    tail: Padded,
    /// Serialises the consumer with producers that evict the oldest record
    /// (`Overflow::DropOldest`). Producers on the normal path never take it.
    consume: Mutex<()>,
    /// Regions skipped because their header could not have been written by a
    /// producer of this process.
    pub(crate) torn: AtomicU64,
    /// The positions `[lo, hi)` whose memory is known resident in an anonymous ring
    /// (page-aligned, at most a lap: every page once `hi - lo` is the capacity); `hi`
    /// is `u64::MAX` for memory nobody manages (heap words, a mapped spool). Only the
    /// writer moves them (`keep_resident_ahead`, `give_back`).
    resident_lo: AtomicU64,
    resident_hi: AtomicU64,
    /// How far ahead of `head` the writer keeps memory resident: [`RESIDENT_AHEAD`],
    /// doubled each time the producers are found past `resident_hi` (a burst that
    /// outran the writer's last look). Only the writer moves it.
    resident_ahead: AtomicU64,
    _storage: Storage,
}

// SAFETY: all shared mutation goes through atomics or through regions that one party
// owns exclusively: a producer owns `[h, h+need)` after its CAS until it publishes the
// state word; the consumer owns committed records until it releases `tail`. Under
// `DropOldest` a producer may also take the oldest records and move `tail`, but only
// holding `consume`, the consumer's own lock; readers of a header without that lock
// (`header_at_tail`) read atomically and re-check, and once a ring has evicted its
// payloads are written as atomic words, so such a read never races a plain write.
unsafe impl Sync for Ring {}
// SAFETY: see above; the ring owns its memory through `_storage`.
unsafe impl Send for Ring {}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.capacity)
            .field("used", &self.used_bytes())
            .finish()
    }
}

impl Ring {
    /// The ring's one room check: whether a record of `need` bytes fits when `used`
    /// bytes are in the ring, under `limit` (a policy's share of the budget) and never
    /// past the capacity. Every push path and the eviction ask it.
    #[inline(always)]
    pub(super) fn fits(&self, used: u64, need: u64, limit: u64) -> bool {
        used.saturating_add(need) <= limit.min(self.capacity)
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes reserved and not yet released, headers included.
    pub(crate) fn used_bytes(&self) -> u64 {
        let tail = self.tail.0.load(Ordering::Acquire);
        let head = self.head.head.load(Ordering::Acquire);
        head.saturating_sub(tail)
    }

    /// The position up to which space has been reserved.
    pub(crate) fn head_position(&self) -> u64 {
        self.head.head.load(Ordering::Acquire)
    }

    /// The position up to which the consumer has released space.
    pub(crate) fn tail_position(&self) -> u64 {
        self.tail.0.load(Ordering::Acquire)
    }

    /// Where position `pos` lies in the ring's bytes.
    #[inline(always)]
    fn offset(&self, pos: u64) -> u64 {
        if self.offset_mask != 0 {
            pos & self.offset_mask
        } else {
            pos % self.capacity
        }
    }

    #[inline(always)]
    fn word(&self, pos: u64) -> &AtomicU64 {
        let index = (self.offset(pos) / 8) as usize;
        // SAFETY: `index` < capacity / 8 and the storage holds that many 8-aligned words;
        // every concurrent access to header words goes through this atomic view.
        unsafe { &*self.base.as_ptr().add(index) }
    }

    #[cfg(not(loglag_loom))]
    fn byte_ptr(&self) -> *mut u8 {
        self.base.as_ptr() as *mut u8
    }

    /// The payload at `pos` as (first part, wrapped part).
    ///
    /// # Safety
    /// `[pos, pos + len)` holds bytes nobody writes concurrently.
    #[cfg(not(loglag_loom))]
    unsafe fn payload(&self, pos: u64, len: usize) -> (&[u8], &[u8]) {
        let start = self.offset(pos) as usize;
        let first = len.min(self.capacity as usize - start);
        // SAFETY: both ranges lie inside the ring; the caller excludes writers.
        unsafe {
            (
                std::slice::from_raw_parts(self.byte_ptr().add(start), first),
                std::slice::from_raw_parts(self.byte_ptr(), len - first),
            )
        }
    }

    /// `payload` under loom, whose words are objects rather than bytes: copied into
    /// `into` a word at a time, each read standing for the consumer's plain read (loom
    /// checks that every write to the word happened before it).
    #[cfg(loglag_loom)]
    fn payload_copy(&self, pos: u64, len: usize, into: &mut Vec<u8>) {
        into.clear();
        let words = self.words();
        let mut index = (self.offset(pos) / 8) as usize;
        while into.len() < len {
            // SAFETY: a committed record's words, which no one writes until the
            // consumer releases them (loom checks it).
            into.extend_from_slice(&unsafe { words[index].unsync_load() }.to_ne_bytes());
            index = (index + 1) % words.len();
        }
        into.truncate(len);
    }

    /// The ring's storage as words.
    fn words(&self) -> &[AtomicU64] {
        // SAFETY: the storage holds `capacity / 8` 8-aligned words. Through this slice
        // they are accessed only atomically; payload bytes are also copied with plain
        // `memcpy` by the producer that owns the region and read as bytes by the
        // consumer that owns the committed record, never both at once (see `Sync`).
        unsafe {
            std::slice::from_raw_parts(
                self.base.as_ptr().cast_const(),
                (self.capacity / 8) as usize,
            )
        }
    }
}

mod consume;
pub(crate) mod lanes;
mod mpsc;
mod push;
mod record;
mod spsc;
mod storage;

pub(crate) use record::{checksum, footprint, scan, Scan};
use storage::Storage;
pub(crate) use storage::RESIDENT_AHEAD;
// The ring's tests reach the storage through `super::*`.
#[cfg(test)]
use storage::HeapWords;
#[cfg(all(test, target_os = "linux", not(any(miri, loglag_loom))))]
use storage::{page_size, Rounding, MOST_RESIDENT_AHEAD, RESIDENT_AT_START};

#[cfg(test)]
pub(crate) mod tests;
