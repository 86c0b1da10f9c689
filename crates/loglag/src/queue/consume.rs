//! The writer's side of the ring: peeking at the oldest record (a seqlock read of its
//! header from any thread), popping and rendering records into a batch, releasing
//! their space, and evicting the oldest for `DropOldest`.

use super::*;

impl Ring {
    /// `head`, and the state word and merge key at `tail`, if `tail < head`.
    ///
    /// Read as a seqlock, since the caller may not hold `consume`: an evicting
    /// producer (`DropOldest`) may zero the record meanwhile, move `tail` past it and
    /// reuse its space, so the words read could be zeroes or another record's bytes
    /// (miri saw a writer's `peek` read a length of 150994944 in
    /// `eviction_against_a_concurrent_pop_single_producer_ring`; loom a merge key of
    /// 0 in `loom_drop_oldest_eviction_against_a_concurrent_pop_shared_ring`). Only a
    /// state word and a `tail` that have not changed after the reads vouch for them.
    /// The acquire fence pairs with the release fences of the evictor (after it
    /// zeroes the evicted state words, before the rest) and of a producer about to
    /// write into evicted space (`write_payload`, after its acquire of the moved
    /// `tail`): a read that saw such a write then sees the zeroed state word, or the
    /// moved `tail`.
    pub(super) fn header_at_tail(&self) -> Option<(u64, u64, u64)> {
        loop {
            let head = self.head.head.load(Ordering::Acquire);
            let tail = self.tail.0.load(Ordering::Acquire);
            if tail >= head {
                return None;
            }
            let state = self.word(tail).load(Ordering::Acquire);
            let key = self.word(tail + 16).load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            // The state word again, with acquire: should the slot have been evicted
            // and reused by a record with the same state word, this read pairs with
            // the new producer's release, so the `tail` read after it sees the move.
            if self.word(tail).load(Ordering::Acquire) == state
                && self.tail.0.load(Ordering::Relaxed) == tail
            {
                return Some((head, state, key));
            }
            crate::sys::sync::spin_loop();
        }
    }

    /// Starts evicting the oldest record as `evict_oldest` does, and stops where a
    /// preempted evictor would: its state word zeroed, `tail` not yet moved. Returns
    /// the record's span, for `finish_eviction`.
    /// (It does not hold `consume`, as `evict_oldest` does: a test must not pop in
    /// between.)
    #[cfg(test)]
    pub(crate) fn evict_oldest_unfinished(&self) -> (u64, u64) {
        let tail = self.tail.0.load(Ordering::Acquire);
        assert!(
            tail < self.head.head.load(Ordering::Acquire),
            "a record to evict"
        );
        let state = self.word(tail).load(Ordering::Acquire);
        assert!(state & COMMITTED != 0, "a published record to evict");
        self.word(tail).store(0, Ordering::Relaxed);
        (tail, tail + footprint((state >> 8) as usize))
    }

    /// Ends what `evict_oldest_unfinished` began: `tail` moves past the record.
    #[cfg(test)]
    pub(crate) fn finish_eviction(&self, (from, to): (u64, u64)) {
        self.head.evicted.store(true, Ordering::Relaxed);
        fence(Ordering::Release);
        self.release_held(from, to);
    }

    /// The merge key and length of the oldest record, if it is published, and the
    /// position up to which records were reserved when it was read (the bound of a
    /// `pop_into` that must not take records published after this look).
    pub(crate) fn peek(&self) -> Option<Peeked> {
        match self.look_oldest() {
            Oldest::Published(seen) => Some(seen),
            Oldest::Empty | Oldest::Unknown => None,
        }
    }

    /// `peek` that tells an empty ring from one whose oldest record cannot be read
    /// now, in one look: two looks (an empty `peek`, then a check for an unpublished
    /// record) could straddle an eviction and call a ring with records empty.
    pub(crate) fn look_oldest(&self) -> Oldest {
        match self.header_at_tail() {
            None => Oldest::Empty,
            Some((head, state, key)) if state & COMMITTED != 0 => Oldest::Published(Peeked {
                key,
                head,
                len: (state >> 8) as usize,
            }),
            Some(_) => Oldest::Unknown,
        }
    }

    /// `peek` from a thread other than the consumer (a `DropOldest` producer looking
    /// at the shared ring): with `consume` held, so that `tail` cannot move and the
    /// slot be reused for another record's payload while it reads the header.
    pub(crate) fn peek_held(&self) -> Option<Peeked> {
        let _guard = self.consume.lock().unwrap_or_else(|e| e.into_inner());
        self.peek()
    }

    /// Zeroes `[from, to)` and releases it to producers (spool mode: records
    /// `pop_into` took without releasing them).
    pub(crate) fn release(&self, from: u64, to: u64) {
        let _guard = self.consume.lock().unwrap_or_else(|e| e.into_inner());
        self.release_held(from, to);
    }

    /// `release` with `consume` held.
    pub(super) fn release_held(&self, from: u64, to: u64) {
        if self.zero_on_release && to > from {
            // Word by word through `word()` cost a division per word: 70% of
            // `pop_into` in `perf annotate` on the throughput bench. The region is at
            // most two runs of the ring's words (before and after the wrap), and the
            // stores may be relaxed: producers reach this space only after they
            // acquire the `tail` stored below with release.
            let all = self.words();
            let words = all.len();
            let mut index = (self.offset(from) / 8) as usize;
            let mut left = ((to - from) / 8) as usize;
            while left > 0 {
                let run = left.min(words - index);
                for word in &all[index..index + run] {
                    word.store(0, Ordering::Relaxed);
                }
                left -= run;
                index = 0;
            }
        }
        self.tail.0.store(to, Ordering::Release);
    }

    /// Copies committed records, in order from `tail`, into `out` until about
    /// `max_bytes` have been taken (at least one record if any is ready), calling `each`
    /// per record. A captured record is copied into `scratch` and `render`ed into `out`
    /// instead; its `Popped::len` is the rendered length. Stops early at a record whose
    /// producer has not yet published it.
    /// With `release` the space is released at once; otherwise the caller releases
    /// `[tail, returned position)` once the records are safely written (spool mode).
    /// Returns (records taken, position after the last one).
    // One call per run of records on the writer's hot loop: a struct for the
    // arguments would only be rebuilt on every call.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn pop_into(
        &self,
        out: &mut Vec<u8>,
        max_bytes: usize,
        release: bool,
        scratch: &mut Vec<u8>,
        render: &mut Render<'_>,
        bound: PopBound,
        mut each: impl FnMut(Popped),
    ) -> (usize, u64) {
        let _guard = self.consume.lock().unwrap_or_else(|e| e.into_inner());
        let start = self.tail.0.load(Ordering::Acquire);
        let head = self
            .head
            .head
            .load(Ordering::Acquire)
            .min(bound.until_pos.max(start));
        let mut pos = start;
        let mut taken = 0usize;
        let mut count = 0;
        while pos < head {
            let state = self.word(pos).load(Ordering::Acquire);
            if state & COMMITTED == 0 {
                break;
            }
            let len = (state >> 8) as usize;
            if pos + footprint(len) > head || len as u64 > self.capacity {
                // No producer of this process writes such a header: the memory was
                // written by someone else (a forked child in the shared spool mapping)
                // or corrupted. Trusting its length would read past the ring or
                // allocate without bound, so what is left is skipped and counted.
                self.torn.fetch_add(1, Ordering::Relaxed);
                pos = head;
                break;
            }
            if taken > 0 && taken + len > max_bytes {
                break;
            }
            // The first record too: the caller chose this ring by the record it peeked
            // at the tail, but a producer evicting (`DropOldest`) may have moved the
            // tail since, and the record there now may belong after another ring's.
            // (Exempting it wrote a thread's `seq 13982` after its `seq 19999`.) The
            // peeked record itself always passes: its key is at most `max_key`.
            if !self.checksums && self.word(pos + 16).load(Ordering::Relaxed) > bound.max_key {
                break;
            }
            let level = Level::from_index(((state >> 1) & 0x7) as u8);
            // SAFETY: the record is committed (acquire above), lies within the reserved
            // region (checked above) and we hold `consume`.
            #[cfg(not(loglag_loom))]
            let (a, b) = unsafe { self.payload(pos + HEADER, len) };
            #[cfg(loglag_loom)]
            let copied = {
                let mut copied = Vec::new();
                self.payload_copy(pos + HEADER, len, &mut copied);
                copied
            };
            #[cfg(loglag_loom)]
            let (a, b): (&[u8], &[u8]) = (&copied, &[]);
            let before = out.len();
            if state & CAPTURED != 0 {
                if b.is_empty() {
                    render(level, a, out);
                } else {
                    // Wrapped around the end of the ring: made contiguous first.
                    scratch.clear();
                    scratch.extend_from_slice(a);
                    scratch.extend_from_slice(b);
                    render(level, scratch, out);
                }
            } else {
                out.extend_from_slice(a);
                out.extend_from_slice(b);
            }
            let written = out.len() - before;
            each(Popped {
                level,
                len: written,
            });
            taken += written;
            count += 1;
            pos += footprint(len);
        }
        if release && pos != start {
            self.release_held(start, pos);
        }
        (count, pos)
    }

    /// Evicts committed records from the oldest end until `need` more bytes fit under
    /// `limit`. Stops at a record still being written. Returns whether room was made.
    pub(crate) fn evict_oldest(&self, need: u64, limit: u64, mut each: impl FnMut(Popped)) -> bool {
        let _guard = self.consume.lock().unwrap_or_else(|e| e.into_inner());
        let start = self.tail.0.load(Ordering::Acquire);
        let mut pos = start;
        let fits = |pos: u64| self.fits(self.head.head.load(Ordering::Acquire) - pos, need, limit);
        while !fits(pos) && pos < self.head.head.load(Ordering::Acquire) {
            let state = self.word(pos).load(Ordering::Acquire);
            if state & COMMITTED == 0 {
                break;
            }
            let len = (state >> 8) as usize;
            each(Popped {
                level: Level::from_index(((state >> 1) & 0x7) as u8),
                len,
            });
            // Evicted: its state word first (see below).
            self.word(pos).store(0, Ordering::Relaxed);
            pos += footprint(len);
        }
        if pos != start {
            // Before the `tail` release below (see `write_payload`).
            if !self.head.evicted.load(Ordering::Relaxed) {
                self.head.evicted.store(true, Ordering::Relaxed);
            }
            // The writer may be reading these records' headers (`header_at_tail`)
            // while `release` zeroes them. Their state words are zeroed above, before
            // this fence and the rest: a read that sees any zero of `release` then
            // sees the zeroed state word on its second look (loom found a `peek`
            // that read a record's state, then its merge key zeroed, and passed with
            // the tail alone: key 0 for key 1).
            fence(Ordering::Release);
            self.release_held(start, pos);
        }
        fits(pos)
    }

    /// Discards every committed record from the oldest end (shutdown cut-off).
    pub(crate) fn discard_committed(&self, each: impl FnMut(Popped)) {
        self.evict_oldest(0, 0, each);
    }

    /// Enqueue time of the oldest record still in the ring, if it is committed.
    ///
    /// Called from any thread while the writer consumes. It reads the header at
    /// `tail` with `consume` held, so `tail` cannot move meanwhile: read without it,
    /// the writer could release that slot and a producer reuse it, so the "header"
    /// read could be another record's payload (an age of days was seen), and the read
    /// would race with the producer's payload write (undefined behaviour: miri). The
    /// lock is only tried, a bounded number of times: `None` if it stays busy (this
    /// thread may be the one holding it, in a panic hook's flush).
    pub(crate) fn oldest_enqueued_ns(&self) -> Option<u64> {
        let mut tries = 0;
        let _guard = loop {
            match self.consume.try_lock() {
                Ok(guard) => break guard,
                Err(std::sync::TryLockError::Poisoned(e)) => break e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) if tries < 1000 => {
                    tries += 1;
                    crate::sys::sync::yield_now();
                }
                Err(std::sync::TryLockError::WouldBlock) => return None,
            }
        };
        #[cfg(test)]
        tests::while_consuming();
        let tail = self.tail.0.load(Ordering::Acquire);
        if tail >= self.head.head.load(Ordering::Acquire) {
            return None;
        }
        // The acquire of the state word pairs with the producer's release of it, so
        // the timestamp stored before it is there.
        let state = self.word(tail).load(Ordering::Acquire);
        if state & COMMITTED == 0 {
            return None;
        }
        Some(self.word(tail + 8).load(Ordering::Relaxed))
    }
}
