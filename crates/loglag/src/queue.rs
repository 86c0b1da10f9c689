//! The byte ring between producers and the writer thread.
//!
//! This is the one piece that is hand-rolled on purpose: it is the product's hot path.
//! Nothing outside this file knows its layout, so it can later become one ring per thread.
//!
//! Layout: a ring of `capacity` bytes (a multiple of 8), addressed by monotone `u64`
//! positions. Each record occupies `HEADER + round_up_8(len)` bytes:
//!
//! ```text
//! word 0: state  = len << 8 | level << 1 | COMMITTED   (0 while the producer is writing)
//! word 1: enqueue time (coarse monotonic nanoseconds)
//! bytes : payload, possibly wrapping around the end of the ring
//! ```
//!
//! Producers reserve space with one compare-and-swap on `head` (the only shared
//! read-modify-write on the hot path), copy their bytes, then publish the state word
//! with a release store. The writer reads committed records in order from `tail`,
//! copies them out, zeroes the space (so a stale payload word can never look like a
//! committed header) and releases it with a release store to `tail`.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::level::Level;

const HEADER: u64 = 16;
const COMMITTED: u64 = 1;

/// Keeps `head` and `tail` on separate cache lines so producers and the writer do not
/// fight over one line.
#[repr(align(128))]
#[derive(Debug, Default)]
struct Padded(AtomicU64);

/// Why a record could not be reserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Full;

/// A record read out of the ring by the consumer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Popped {
    pub(crate) level: Level,
    pub(crate) len: usize,
    pub(crate) enqueued_ns: u64,
}

pub(crate) struct Ring {
    words: Box<[UnsafeCell<u64>]>,
    capacity: u64,
    head: Padded,
    tail: Padded,
    /// Serialises the consumer with producers that evict the oldest record
    /// (`Overflow::DropOldest`). Producers on the normal path never take it.
    consume: Mutex<()>,
}

// SAFETY: all shared mutation goes through atomics or through regions that one party
// owns exclusively: a producer owns `[h, h+need)` after its CAS until it publishes the
// state word; the consumer owns committed records until it releases `tail`.
unsafe impl Sync for Ring {}
// SAFETY: see above; the ring owns its memory.
unsafe impl Send for Ring {}

impl std::fmt::Debug for Ring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ring")
            .field("capacity", &self.capacity)
            .field("used", &self.used_bytes())
            .finish()
    }
}

/// Bytes a record of `len` payload bytes occupies in the ring.
pub(crate) fn footprint(len: usize) -> u64 {
    HEADER + ((len as u64 + 7) & !7)
}

impl Ring {
    /// A ring of at least 64 bytes, rounded down to a multiple of 8.
    pub(crate) fn new(capacity_bytes: usize) -> Ring {
        let words = (capacity_bytes / 8).max(8);
        let words: Box<[UnsafeCell<u64>]> = (0..words).map(|_| UnsafeCell::new(0)).collect();
        Ring {
            capacity: words.len() as u64 * 8,
            words,
            head: Padded::default(),
            tail: Padded::default(),
            consume: Mutex::new(()),
        }
    }

    pub(crate) fn capacity(&self) -> u64 {
        self.capacity
    }

    /// Bytes reserved and not yet released, headers included.
    pub(crate) fn used_bytes(&self) -> u64 {
        let tail = self.tail.0.load(Ordering::Acquire);
        let head = self.head.0.load(Ordering::Acquire);
        head.saturating_sub(tail)
    }

    /// The position up to which space has been reserved.
    pub(crate) fn head_position(&self) -> u64 {
        self.head.0.load(Ordering::Acquire)
    }

    /// The position up to which the consumer has released space.
    pub(crate) fn tail_position(&self) -> u64 {
        self.tail.0.load(Ordering::Acquire)
    }

    fn word(&self, pos: u64) -> &AtomicU64 {
        let index = ((pos % self.capacity) / 8) as usize;
        // SAFETY: `UnsafeCell<u64>` and `AtomicU64` have the same size; the cell is
        // 8-aligned because the slice is a slice of u64 cells. Every concurrent access to
        // header words goes through this atomic view.
        unsafe { &*(self.words[index].get() as *const AtomicU64) }
    }

    fn byte_ptr(&self) -> *mut u8 {
        self.words.as_ptr() as *mut u8
    }

    /// Reserves room for `bytes` (which must be at most `limit` bytes of ring, headers
    /// included) and publishes it. `limit` lets a policy keep a reserve for higher levels.
    /// Returns the ring bytes used after this record, for wake-up decisions.
    pub(crate) fn try_push(
        &self,
        level: Level,
        bytes: &[u8],
        limit: u64,
        now_ns: u64,
    ) -> Result<u64, Full> {
        let need = footprint(bytes.len());
        let limit = limit.min(self.capacity);
        let mut head = self.head.0.load(Ordering::Relaxed);
        loop {
            let tail = self.tail.0.load(Ordering::Acquire);
            let used_after = head - tail + need;
            if used_after > limit {
                return Err(Full);
            }
            match self.head.0.compare_exchange_weak(
                head,
                head + need,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => {
                    // SAFETY: `[head, head+need)` is ours until we publish the state word.
                    unsafe { self.write_payload(head + HEADER, bytes) };
                    self.word(head + 8).store(now_ns, Ordering::Relaxed);
                    let state = (bytes.len() as u64) << 8 | (level as u64) << 1 | COMMITTED;
                    self.word(head).store(state, Ordering::Release);
                    return Ok(used_after);
                }
                Err(actual) => head = actual,
            }
        }
    }

    /// # Safety
    /// The caller owns `[pos, pos + bytes.len())` exclusively.
    unsafe fn write_payload(&self, pos: u64, bytes: &[u8]) {
        let start = (pos % self.capacity) as usize;
        let first = bytes.len().min(self.capacity as usize - start);
        let base = self.byte_ptr();
        // SAFETY: both ranges lie inside the ring, which the caller owns for this span.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(start), first);
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(first), base, bytes.len() - first);
        }
    }

    /// # Safety
    /// `[pos, pos + len)` holds a committed record the caller may read.
    unsafe fn read_payload(&self, pos: u64, len: usize, out: &mut Vec<u8>) {
        let start = (pos % self.capacity) as usize;
        let first = len.min(self.capacity as usize - start);
        let base = self.byte_ptr();
        // SAFETY: the range is committed and not yet released.
        unsafe {
            out.extend_from_slice(std::slice::from_raw_parts(base.add(start), first));
            out.extend_from_slice(std::slice::from_raw_parts(base, len - first));
        }
    }

    /// Zeroes `[from, to)` and releases it to producers.
    fn release(&self, from: u64, to: u64) {
        let mut pos = from;
        while pos < to {
            self.word(pos).store(0, Ordering::Relaxed);
            pos += 8;
        }
        self.tail.0.store(to, Ordering::Release);
    }

    /// Copies committed records, in order, into `out` until about `max_bytes` have been
    /// taken (at least one record if any is ready), calling `each` per record.
    /// Stops early at a record whose producer has not yet published it.
    pub(crate) fn pop_into(
        &self,
        out: &mut Vec<u8>,
        max_bytes: usize,
        mut each: impl FnMut(Popped),
    ) -> usize {
        let _guard = self.consume.lock().unwrap_or_else(|e| e.into_inner());
        let start = self.tail.0.load(Ordering::Acquire);
        let head = self.head.0.load(Ordering::Acquire);
        let mut pos = start;
        let mut taken = 0usize;
        let mut count = 0;
        while pos < head {
            let state = self.word(pos).load(Ordering::Acquire);
            if state & COMMITTED == 0 {
                break;
            }
            let len = (state >> 8) as usize;
            if taken > 0 && taken + len > max_bytes {
                break;
            }
            let level = Level::from_index(((state >> 1) & 0x7) as u8);
            let enqueued_ns = self.word(pos + 8).load(Ordering::Relaxed);
            // SAFETY: the record is committed (acquire above) and we hold `consume`.
            unsafe { self.read_payload(pos + HEADER, len, out) };
            each(Popped {
                level,
                len,
                enqueued_ns,
            });
            taken += len;
            count += 1;
            pos += footprint(len);
        }
        if pos != start {
            self.release(start, pos);
        }
        count
    }

    /// Evicts committed records from the oldest end until `need` more bytes fit under
    /// `limit`. Stops at a record still being written. Returns whether room was made.
    pub(crate) fn evict_oldest(&self, need: u64, limit: u64, mut each: impl FnMut(Popped)) -> bool {
        let _guard = self.consume.lock().unwrap_or_else(|e| e.into_inner());
        let start = self.tail.0.load(Ordering::Acquire);
        let mut pos = start;
        let fits = |pos: u64| self.head.0.load(Ordering::Acquire) - pos + need <= limit;
        while !fits(pos) && pos < self.head.0.load(Ordering::Acquire) {
            let state = self.word(pos).load(Ordering::Acquire);
            if state & COMMITTED == 0 {
                break;
            }
            let len = (state >> 8) as usize;
            each(Popped {
                level: Level::from_index(((state >> 1) & 0x7) as u8),
                len,
                enqueued_ns: self.word(pos + 8).load(Ordering::Relaxed),
            });
            pos += footprint(len);
        }
        if pos != start {
            self.release(start, pos);
        }
        fits(pos)
    }

    /// Discards every committed record from the oldest end (shutdown cut-off).
    pub(crate) fn discard_committed(&self, each: impl FnMut(Popped)) {
        self.evict_oldest(0, 0, each);
    }

    /// Enqueue time of the oldest record still in the ring, if it is committed.
    pub(crate) fn oldest_enqueued_ns(&self) -> Option<u64> {
        let tail = self.tail.0.load(Ordering::Acquire);
        if tail >= self.head.0.load(Ordering::Acquire) {
            return None;
        }
        let state = self.word(tail).load(Ordering::Acquire);
        (state & COMMITTED != 0).then(|| self.word(tail + 8).load(Ordering::Relaxed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_come_out_in_order_and_wrap() {
        let ring = Ring::new(256);
        let mut out = Vec::new();
        for round in 0..50u32 {
            let a = format!("record-{round}-a");
            let b = format!(
                "record-{round}-b-longer-payload-{}",
                "x".repeat(round as usize % 40)
            );
            ring.try_push(Level::Info, a.as_bytes(), u64::MAX, 0)
                .unwrap();
            ring.try_push(Level::Warn, b.as_bytes(), u64::MAX, 0)
                .unwrap();
            out.clear();
            let mut levels = Vec::new();
            assert_eq!(
                ring.pop_into(&mut out, usize::MAX, |p| levels.push(p.level)),
                2
            );
            assert_eq!(out, [a.as_bytes(), b.as_bytes()].concat());
            assert_eq!(levels, [Level::Info, Level::Warn]);
            assert_eq!(ring.used_bytes(), 0);
        }
    }

    #[test]
    fn full_ring_refuses_and_limit_is_respected() {
        let ring = Ring::new(128);
        let rec = [b'x'; 40]; // 56 bytes of ring each
        assert!(ring.try_push(Level::Info, &rec, 128, 0).is_ok());
        assert!(
            ring.try_push(Level::Info, &rec, 100, 0).is_err(),
            "limit below capacity"
        );
        assert!(ring.try_push(Level::Info, &rec, 128, 0).is_ok());
        assert_eq!(ring.try_push(Level::Info, &rec, 128, 0), Err(Full));
    }

    #[test]
    fn evict_oldest_makes_room_and_reports_victims() {
        let ring = Ring::new(128);
        ring.try_push(Level::Debug, &[1; 40], 128, 0).unwrap();
        ring.try_push(Level::Info, &[2; 40], 128, 0).unwrap();
        let mut victims = Vec::new();
        assert!(ring.evict_oldest(footprint(40), 128, |p| victims.push(p.level)));
        assert_eq!(victims, [Level::Debug]);
        ring.try_push(Level::Error, &[3; 40], 128, 0).unwrap();
        let mut out = Vec::new();
        ring.pop_into(&mut out, usize::MAX, |_| {});
        assert_eq!(out, [[2u8; 40], [3u8; 40]].concat());
    }
}
