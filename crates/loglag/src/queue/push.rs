//! The producers' side of the ring: reserving space (the CAS loop of the shared
//! ring, the one claim of a thread's own ring), writing a record's payload (copied,
//! or in place by the caller's closure) and publishing its state word.

use super::record::store_words;
use super::*;

impl Ring {
    /// Reserves room for `bytes` (which must be at most `limit` bytes of ring, headers
    /// included) and publishes it. `limit` lets a policy keep a reserve for higher levels.
    /// Returns the ring bytes used after this record, for wake-up decisions.
    pub(crate) fn try_push(
        &self,
        level: Level,
        bytes: &[u8],
        limit: u64,
        now_ns: u64,
        captured: bool,
        key: u64,
    ) -> Result<u64, Full> {
        let (head, used_after) = self.reserve(footprint(bytes.len()), limit, Full, |_| None)?;
        self.prefetch_ahead(head, used_after);
        // SAFETY: `[head, head+need)` is ours until we publish the state word.
        unsafe { self.write_record(head, level, bytes, now_ns, captured, key) };
        Ok(used_after)
    }

    /// Reserves `need` bytes under `limit` with the producers' compare-and-swap on
    /// `head`: the position reserved and the ring's bytes used after, or `full`.
    /// `refuse` looks at each `head` tried (after the acquire of `tail`, before the
    /// room check) and may refuse it.
    #[inline]
    pub(super) fn reserve<E>(
        &self,
        need: u64,
        limit: u64,
        full: E,
        refuse: impl Fn(u64) -> Option<E>,
    ) -> Result<(u64, u64), E> {
        let mut head = self.head.head.load(Ordering::Relaxed);
        loop {
            let tail = self.tail.0.load(Ordering::Acquire);
            // `head` may be stale: if this thread was preempted after reading it, the
            // writer may since have released past it, so `head < tail` is possible.
            // Wrapping keeps that from panicking (debug) or reading as "full" (release);
            // a result beyond the capacity means exactly that, so re-read and retry.
            let used = head.wrapping_sub(tail);
            if used > self.capacity {
                head = self.head.head.load(Ordering::Relaxed);
                crate::sys::sync::spin_loop();
                continue;
            }
            if let Some(refused) = refuse(head) {
                return Err(refused);
            }
            if !self.fits(used, need, limit) {
                return Err(full);
            }
            let used_after = used + need;
            match self.head.head.compare_exchange_weak(
                head,
                head + need,
                Ordering::AcqRel,
                Ordering::Relaxed,
            ) {
                Ok(_) => return Ok((head, used_after)),
                Err(actual) => head = actual,
            }
        }
    }

    /// Whether `need` more bytes fit under `limit` now: what `try_push` would find
    /// before its compare-and-swap, for a caller that can skip encoding a record the
    /// ring would refuse. Another producer, or the writer, may change the answer the
    /// next instant, as it may `try_push`'s.
    #[cfg(not(loglag_loom))]
    #[inline]
    pub(crate) fn has_room(&self, need: u64, limit: u64) -> bool {
        let head = self.head.head.load(Ordering::Relaxed);
        let tail = self.tail.0.load(Ordering::Acquire);
        let used = head.wrapping_sub(tail);
        // A stale `head` behind `tail` (see `reserve`) says nothing: room, and
        // `try_push` decides.
        used > self.capacity || self.fits(used, need, limit)
    }

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

    /// `try_push` for a captured record that `fill` writes in place, as
    /// [`try_push_owned_in_place`](Ring::try_push_owned_in_place) does for a thread's
    /// own ring: for the shared ring, whose producers reserve with the
    /// compare-and-swap. `Err(CopyInstead)` where its payload would wrap the ring's
    /// end or the ring has evicted, else `Err(Full)` when the record does not fit
    /// under `limit` now. Either way nothing is reserved and `fill` is not called. `stamps`
    /// were read before the reservation, as every shared ring record's are (the
    /// order across a spill, in `lanes.rs`, needs it). `fill` runs between the
    /// reservation and the release store that publishes the record, so it must not
    /// log (the writer waits at an unpublished record): it copies plain values, never
    /// runs a caller's code.
    #[cfg_attr(loglag_loom, allow(dead_code))]
    #[inline]
    pub(crate) fn try_push_in_place(
        &self,
        level: Level,
        len: usize,
        limit: u64,
        stamps: &Stamps,
        fill: impl FnOnce(&mut [u8]),
    ) -> Result<u64, NotInPlace> {
        let wraps = |head: u64| self.offset(head + HEADER) as usize + len > self.capacity as usize;
        let (head, used_after) = self.reserve(footprint(len), limit, NotInPlace::Full, |head| {
            // The `evicted` flag is read after the acquire of `tail`, as
            // `write_payload` reads it: space an eviction freed is reached only
            // through that `tail` (or a later one), which the flag's store precedes.
            // After an eviction payloads are written as atomic words, which a slice
            // cannot be.
            (wraps(head) || self.head.evicted.load(Ordering::Relaxed))
                .then_some(NotInPlace::CopyInstead)
        })?;
        self.prefetch_ahead(head, used_after);
        // SAFETY: `[head, head+need)` is ours until we publish its state word, and its
        // payload lies inside the ring without wrapping (refused otherwise, for this
        // `head`).
        unsafe {
            self.write_in_place(head, level, len, |payload| {
                fill(payload);
                *stamps
            })
        };
        Ok(used_after)
    }

    /// Has `fill` write the payload of the record at `pos` (`len` bytes) straight into
    /// the ring, then publishes it with the stamps `fill` returns.
    ///
    /// # Safety
    /// The caller owns `[pos, pos + footprint(len))` exclusively, and its payload does
    /// not wrap the ring's end.
    #[cfg(not(loglag_loom))]
    #[inline]
    pub(super) unsafe fn write_in_place(
        &self,
        pos: u64,
        level: Level,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Stamps,
    ) {
        let start = self.offset(pos + HEADER) as usize;
        // SAFETY: forwarded from the caller: the payload and its padding word lie in
        // the record's span, inside the ring.
        let payload = unsafe {
            self.zero_padding_word(start + len);
            std::slice::from_raw_parts_mut(self.byte_ptr().add(start), len)
        };
        let stamps = fill(payload);
        self.publish(pos, level, payload, stamps.enqueued, true, stamps.merge_key);
    }

    /// `write_in_place` under loom, whose ring words are objects, never bytes: `fill`
    /// writes a scratch buffer, which goes into the record's words as the copying
    /// path's payload does (relaxed stores standing for the plain writes), before the
    /// same release store publishes it. The reservation, the room checks and the
    /// publication, what the in-place pushes add to the ring's protocol, are the
    /// real ones.
    ///
    /// # Safety
    /// As for the real one.
    #[cfg_attr(loglag_loom, allow(dead_code))]
    #[cfg(loglag_loom)]
    pub(super) unsafe fn write_in_place(
        &self,
        pos: u64,
        level: Level,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> Stamps,
    ) {
        let mut payload = vec![0u8; len];
        let stamps = fill(&mut payload);
        // SAFETY: forwarded from the caller.
        unsafe { self.write_payload(pos + HEADER, &payload) };
        self.publish(
            pos,
            level,
            &payload,
            stamps.enqueued,
            true,
            stamps.merge_key,
        );
    }

    /// Asks for the ring's line `PREFETCH_AHEAD` bytes past the record at `pos`, where
    /// the ring (holding `used_after` bytes with it) has room that far: nearer full,
    /// that line holds the oldest records, which the writer is about to read. The hint
    /// asks for the line to write (`prefetchw`) where the build targets a CPU that has
    /// it (`-C target-cpu=native` here); the default x86-64 target compiles it to a
    /// read prefetch (`prefetcht0`), which measured 0.3 ns slower at p50 and is on
    /// every x86-64.
    #[inline(always)]
    pub(super) fn prefetch_ahead(&self, pos: u64, used_after: u64) {
        #[cfg(all(target_arch = "x86_64", not(loglag_loom), not(miri)))]
        if used_after + PREFETCH_AHEAD <= self.capacity {
            // SAFETY: a prefetch reads nothing and cannot fault; the address is in
            // the ring.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_ET0};
                let at = self.offset(pos + PREFETCH_AHEAD) as usize;
                _mm_prefetch::<_MM_HINT_ET0>(self.byte_ptr().add(at) as *const i8);
            }
        }
        let _ = (pos, used_after);
    }

    /// Writes a record's payload and header at `pos` and publishes its state word.
    ///
    /// # Safety
    /// The caller owns `[pos, pos + footprint(bytes.len()))` exclusively.
    #[inline]
    pub(super) unsafe fn write_record(
        &self,
        pos: u64,
        level: Level,
        bytes: &[u8],
        now_ns: u64,
        captured: bool,
        key: u64,
    ) {
        // SAFETY: forwarded from the caller.
        unsafe { self.write_payload(pos + HEADER, bytes) };
        self.publish(pos, level, bytes, now_ns, captured, key);
    }

    /// Writes the header of the record at `pos` whose payload `bytes` is in place,
    /// its state word last, with release: from that store on it is the writer's.
    #[inline]
    pub(super) fn publish(
        &self,
        pos: u64,
        level: Level,
        bytes: &[u8],
        now_ns: u64,
        captured: bool,
        key: u64,
    ) {
        let kind = if captured { CAPTURED } else { 0 };
        let state = (bytes.len() as u64) << 8 | kind | (level as u64) << 1 | COMMITTED;
        self.word(pos + 8).store(now_ns, Ordering::Relaxed);
        if self.checksums {
            self.word(pos + 16).store(pos, Ordering::Relaxed);
            self.word(pos + 24)
                .store(checksum(pos, state, bytes), Ordering::Relaxed);
        } else {
            self.word(pos + 16).store(key, Ordering::Relaxed);
        }
        self.word(pos).store(state, Ordering::Release);
    }

    /// Reserves room for a record of `len` bytes without publishing it: a producer
    /// caught between its compare-and-swap and its release store.
    #[cfg(test)]
    pub(crate) fn reserve_unpublished(&self, len: usize) -> u64 {
        self.head.head.fetch_add(footprint(len), Ordering::AcqRel)
    }

    /// Publishes what `reserve_unpublished` reserved at `pos`.
    #[cfg(test)]
    pub(crate) fn publish_reserved(&self, pos: u64, level: Level, bytes: &[u8], key: u64) {
        // SAFETY: `[pos, pos + footprint(len))` was reserved for this record.
        unsafe { self.write_record(pos, level, bytes, 0, false, key) };
    }

    /// Writes `bytes` at `pos` (8-aligned).
    ///
    /// A thread that reads a header word without holding `consume` (the writer's
    /// `look_oldest`) reads it at a `tail` it loaded; if someone else
    /// moves `tail` past that record meanwhile and a producer reuses the space, the
    /// producer's payload write races with that load. A plain `memcpy` racing with
    /// an atomic load is a data race, undefined behaviour even though the reader
    /// throws the value away (miri found it, with `oldest_enqueued_ns` reading
    /// without the lock then: `oldest_age_read_while_the_slot_is_reused_is_a_real_timestamp`).
    /// Only an eviction (`DropOldest`, the shutdown cut-off) moves `tail` under the
    /// writer's feet, so once a ring has evicted, its payloads are written a word at a
    /// time with relaxed atomic stores (slower than `memcpy` for long records: a
    /// 16 KiB record took 3× as long), and until then with `memcpy`. The flag is
    /// stored before the evicting `tail` release, and a producer reaches the evicted
    /// space only through an acquire of that `tail` (or a later one), so it sees it.
    /// Those stores follow a release fence, for `header_at_tail`'s seqlock: the
    /// record's header stores come after the payload's, so all of them do.
    ///
    /// # Safety
    /// The caller owns `[pos, pos + bytes.len())` exclusively (rounded up to 8).
    pub(super) unsafe fn write_payload(&self, pos: u64, bytes: &[u8]) {
        let evicted = self.head.evicted.load(Ordering::Relaxed);
        // Under loom the words are objects, never bytes: relaxed stores stand for the
        // `memcpy` too.
        if evicted || cfg!(loglag_loom) {
            if evicted {
                fence(Ordering::Release);
            }
            let words = self.words();
            let index = (self.offset(pos) / 8) as usize;
            // Up to the end of the ring, then the rest from its start.
            let first = bytes.len().min((words.len() - index) * 8);
            let (before_wrap, after_wrap) = bytes.split_at(first);
            store_words(&words[index..], before_wrap);
            store_words(words, after_wrap);
        } else {
            // SAFETY: forwarded from the caller.
            #[cfg(not(loglag_loom))]
            unsafe {
                self.write_payload_bytes(pos, bytes)
            };
        }
    }

    /// `write_payload` with `memcpy`.
    ///
    /// # Safety
    /// As for `write_payload`.
    #[cfg(not(loglag_loom))]
    pub(super) unsafe fn write_payload_bytes(&self, pos: u64, bytes: &[u8]) {
        let start = self.offset(pos) as usize;
        let first = bytes.len().min(self.capacity as usize - start);
        let base = self.byte_ptr();
        // The record's padding up to its next word (which never wraps: the capacity
        // is a multiple of 8).
        let end = self.offset(pos + bytes.len() as u64) as usize;
        // SAFETY: the padding word and both copies lie inside the record's span,
        // which the caller owns, and no one reads it racily (above).
        unsafe {
            self.zero_padding_word(end);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(start), first);
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(first), base, bytes.len() - first);
        }
    }

    /// Zeroes the word holding ring offset `end` when `end` is not on a word boundary:
    /// the padding after a payload ending there. Called before the payload is
    /// written, which then covers the word's start: one store instead of a `memset`
    /// call (1% of the caller's profile for up to 7 bytes).
    ///
    /// # Safety
    /// The caller owns that word (it lies in its record's span).
    #[cfg(not(loglag_loom))]
    #[inline]
    pub(super) unsafe fn zero_padding_word(&self, end: usize) {
        if end % 8 != 0 {
            // SAFETY: forwarded from the caller; the word is 8-aligned in the ring.
            unsafe { self.byte_ptr().add(end & !7).cast::<u64>().write(0) };
        }
    }
}
