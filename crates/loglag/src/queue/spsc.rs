//! A thread ring's one producer, the calling thread: no read-modify-write, `head`
//! stored after the record is published, and the one room check (`claim_owned`) by a
//! cached copy of the writer's `tail`, for a copied record (`try_push_owned`) and one
//! written in place (`try_push_owned_in_place`).

use super::*;

impl Ring {
    /// `try_push` for a ring with one producer, the calling thread (a thread's own
    /// ring; `lanes.rs` guarantees nobody else pushes into it meanwhile). No
    /// read-modify-write: the producer owns `head`, and reads the writer's `tail` only
    /// when its cached copy says the record would not fit.
    pub(crate) fn try_push_owned(
        &self,
        level: Level,
        bytes: &[u8],
        limit: u64,
        now_ns: u64,
        captured: bool,
        key: u64,
    ) -> Result<u64, Full> {
        let need = footprint(bytes.len());
        let head = self.head.head.load(Ordering::Relaxed);
        let used_after = self.claim_owned(head, need, limit).ok_or(Full)?;
        self.prefetch_ahead(head, used_after);
        // SAFETY: only this thread pushes, and `[head, head+need)` lies past `tail`
        // (`claim_owned`), so the writer does not read it until `head` moves.
        unsafe { self.write_record(head, level, bytes, now_ns, captured, key) };
        self.head.head.store(head + need, Ordering::Release);
        Ok(used_after)
    }

    /// The one producer's room check, for both of a thread ring's pushes: the bytes
    /// used with a record of `need` bytes at `head` (the producer's own), when it fits
    /// under `limit`, by the tail this producer cached, and when that says full, by the
    /// writer's `tail`, read and cached again. The writer's `tail` is a line it keeps
    /// writing (a miss from another core): read once per record at most, here, and the
    /// caller's copying path skips this ring when it says full (the hot burst's common
    /// case).
    #[inline(always)]
    fn claim_owned(&self, head: u64, need: u64, limit: u64) -> Option<u64> {
        // The producer owns `head`, so `head - tail` never underflows.
        let mut tail = self.head.cached_tail.load(Ordering::Relaxed);
        if !self.fits(head - tail, need, limit) {
            tail = self.tail.0.load(Ordering::Acquire);
            self.head.cached_tail.store(tail, Ordering::Relaxed);
            if !self.fits(head - tail, need, limit) {
                return None;
            }
        }
        Some(head + need - tail)
    }

    /// `try_push_owned` for a captured record that `fill` writes in place: exactly
    /// `len` bytes, straight into the ring, with no copy in between. `fill` returns
    /// the record's stamps: it reads the clock only once the record has room (one
    /// producer, so its keys follow its calls whenever they are read). Only where the
    /// payload lies before the ring's end (no wrap) and the ring has never evicted
    /// (after an eviction payloads are written as atomic words): otherwise
    /// `Err(CopyInstead)`. `Err(Full)` when the ring has no room, by the writer's
    /// `tail` (read only when the producer's cached copy says full). Either way
    /// nothing is written and `fill` is not called.
    #[cfg_attr(loglag_loom, allow(dead_code))]
    #[inline]
    pub(crate) fn try_push_owned_in_place(
        &self,
        level: Level,
        len: usize,
        limit: u64,
        fill: impl FnOnce(&mut [u8]) -> Stamps,
    ) -> Result<u64, NotInPlace> {
        let need = footprint(len);
        let head = self.head.head.load(Ordering::Relaxed);
        // Where it would wrap, it is copied whether or not the ring has room now.
        if self.offset(head + HEADER) as usize + len > self.capacity as usize {
            return Err(NotInPlace::CopyInstead);
        }
        let used_after = self
            .claim_owned(head, need, limit)
            .ok_or(NotInPlace::Full)?;
        // The `evicted` flag is read after the claim, whose room came from an acquire
        // of `tail` (now, or when the cached copy was taken): space an eviction freed
        // is reached only through that `tail` or a later one, and the flag's store
        // precedes it, as in `try_push_in_place`. Read before the claim, the flag could
        // be older than the room: the loom model
        // `loom_thread_ring_in_place_push_against_an_eviction` wrote in place into
        // space the shutdown cut-off had just evicted.
        if self.head.evicted.load(Ordering::Relaxed) {
            return Err(NotInPlace::CopyInstead);
        }
        self.prefetch_ahead(head, used_after);
        // SAFETY: only this thread pushes, `[head, head+need)` lies past `tail`
        // (`claim_owned`), so the writer does not read it until `head` moves, and the
        // payload lies inside the ring without wrapping (checked above).
        unsafe { self.write_in_place(head, level, len, fill) };
        self.head.head.store(head + need, Ordering::Release);
        Ok(used_after)
    }
}
