//! The shared ring's producers, any number of them: the compare-and-swap on `head`
//! that reserves a record's room (`reserve`), then a copied record (`try_push`) or one
//! written in place (`try_push_in_place`); `push.rs` writes and publishes it.

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
}
