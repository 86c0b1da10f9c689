//! Writing a record into room a producer reserved (`mpsc.rs`, the shared ring's
//! compare-and-swap) or claimed (`spsc.rs`, a thread ring's one producer): its payload
//! copied, or written in place by the caller's closure, then its header and the
//! release store of its state word that publishes it.

use super::record::store_words;
use super::*;

impl Ring {
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
