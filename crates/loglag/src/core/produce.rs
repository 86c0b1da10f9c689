//! The producer path: a record from a caller's thread into a ring (or, in `sync` mode,
//! into the sink), with truncation, the overflow policies and the wait for space, and
//! a forked child's direct write. The accepted counters are `accepted.rs`'s.

#[cfg(not(loglag_loom))]
use std::cell::Cell;
use std::cell::RefCell;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::entered::{self, EnteredMark};
use super::{inside_any_sink, limit, Core, ThreadMark};
#[cfg(not(loglag_loom))]
use crate::queue::NotInPlace;
use crate::queue::{footprint, Full, Ring, Stamps};
use crate::record::capture::{self, Encoder, Fixed, PlainRecord, Site};
use crate::record::clock;
use crate::record::drops::DropReason;
use crate::record::level::Level;
use crate::record::{self, Format};
use crate::settings::mode::Mode;
use crate::settings::overflow::Overflow;

thread_local! {
    /// Scratch for records that must be truncated.
    static SCRATCH: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

impl Core {
    /// Enters this pipeline on this thread (see `entered.rs`); `None` if this thread is
    /// already in it. That happens only to a signal handler that logs, interrupting
    /// this thread while it was inside the same pipeline (logging, reading its metrics,
    /// flushing): its record cannot take the ring claim lock, the ring, the consumer
    /// lock or the thread-local buffer that the interrupted call may hold, so it is
    /// counted accepted on a shared atomic and dropped as `reentrant`. Another pipeline
    /// is entered as usual (a `sync` sink that logs through a second pipeline), and the
    /// thread-local tables the pipelines share are borrowed with `try_`. A sink that
    /// logs into its own pipeline runs on the writer, or is caught here in `sync` mode.
    #[inline]
    pub(crate) fn enter(&self) -> Option<EnteredMark> {
        entered::enter(self.call.id).ok()
    }

    /// This thread's ring of this pipeline, if it has one: none for a call nested inside
    /// another pipeline's on this thread, which must not touch the thread's caches
    /// (see `entered.rs`), and so pushes into the shared ring.
    #[inline]
    fn with_own_ring<T>(&self, f: impl FnOnce(Option<&Ring>) -> T) -> T {
        if entered::nested() {
            return f(None);
        }
        self.lanes.with_own(f)
    }

    /// A re-entered record (see [`Core::enter`]): accepted and dropped with atomics
    /// only, which a signal handler may use. It never waits, allocates or locks,
    /// whatever the policy.
    #[cold]
    pub(crate) fn drop_reentrant(&self, level: Level) {
        match self.call.mode {
            Mode::Off | Mode::FormatOnly => return,
            Mode::Sync | Mode::Async => {}
        }
        self.accepted_retired.fetch_add(1, Ordering::AcqRel);
        self.counters.count_drop(DropReason::Reentrant, level, 1);
    }

    /// The producer path: hands one formatted record (ending in `\n`) to the pipeline.
    pub(crate) fn submit(&self, level: Level, record: &[u8]) {
        match self.call.mode {
            Mode::Off | Mode::FormatOnly => return,
            Mode::Sync | Mode::Async => {}
        }
        let Some(_entered) = self.enter() else {
            return self.drop_reentrant(level);
        };
        self.submit_entered(level, record);
    }

    /// [`Core::submit`] on a thread that has entered this pipeline already (a
    /// front-end that marked the thread before formatting on it).
    pub(crate) fn submit_entered(&self, level: Level, record: &[u8]) {
        match self.call.mode {
            Mode::Off | Mode::FormatOnly => return,
            Mode::Sync | Mode::Async => {}
        }
        if self.in_forked_child() {
            return self.submit_in_forked_child(level, record);
        }
        self.count_accepted();
        if record.len() > self.call.max_record_bytes {
            self.counters.truncated.fetch_add(1, Ordering::Relaxed);
            let max = self.call.max_record_bytes;
            let done = SCRATCH.try_with(|scratch| {
                // A Debug impl that logs while we format would find the scratch borrowed.
                let Ok(mut scratch) = scratch.try_borrow_mut() else {
                    return false;
                };
                scratch.clear();
                record::truncate_into(&mut scratch, record, max);
                self.submit_accepted(level, &scratch, false, &self.stamps_now());
                true
            });
            if done != Ok(true) {
                let mut own = Vec::new();
                record::truncate_into(&mut own, record, max);
                self.submit_accepted(level, &own, false, &self.stamps_now());
            }
            return;
        }
        self.submit_accepted(level, record, false, &self.stamps_now());
    }

    /// A record's stamps from the caller's clock reading `time`: its merge key where
    /// there are several rings to merge, and its enqueue stamp.
    #[inline]
    fn stamps_of(&self, time: clock::Raw) -> Stamps {
        Stamps {
            merge_key: if self.call.merges {
                clock::merge_key_of(time)
            } else {
                0
            },
            enqueued: clock::stamp_of(time),
        }
    }

    /// The stamps of a record that has no reading of its own (a formatted line).
    #[inline]
    fn stamps_now(&self) -> Stamps {
        Stamps {
            merge_key: if self.call.merges {
                clock::merge_key()
            } else {
                0
            },
            enqueued: clock::stamp_now(),
        }
    }

    /// Bytes of a ring of capacity `cap` a record of `level` may fill (`ShedByLevel`
    /// keeps a reserve for the higher levels).
    #[inline]
    fn limit(&self, cap: u64, level: Level) -> u64 {
        limit(&self.level_reserve, cap, level)
    }

    /// A forked child has no writer thread, and must not touch the ring (in spool mode
    /// it is shared with the parent's writer). Its records are written at once with
    /// `write(2)` to the sink's descriptor, whole, and counted as written; a sink that
    /// is no descriptor drops them, counted as `io_error`. Locks the parent may have
    /// held at the fork are never taken here.
    fn submit_in_forked_child(&self, level: Level, record: &[u8]) {
        self.accepted_retired.fetch_add(1, Ordering::AcqRel);
        let fd = self.sink_fd.load(Ordering::Acquire);
        let truncated;
        let record = if record.len() > self.call.max_record_bytes {
            self.counters.truncated.fetch_add(1, Ordering::Relaxed);
            let mut own = Vec::new();
            record::truncate_into(&mut own, record, self.call.max_record_bytes);
            truncated = own;
            &truncated[..]
        } else {
            record
        };
        let expected = (
            self.sink_identity[0].load(Ordering::Acquire),
            self.sink_identity[1].load(Ordering::Acquire),
        );
        // The same file it was at the fork (not a number since reused), and not deleted
        // by the parent's rotation and retention since.
        let usable = fd >= 0
            && crate::sys::fork::fd_identity(fd).is_some_and(|(id, named)| id == expected && named);
        let written = usable && crate::sys::fork::write_all_fd(fd, record).is_ok();
        if written {
            self.counters
                .written_bytes
                .fetch_add(record.len() as u64, Ordering::Relaxed);
            self.counters.written_records.fetch_add(1, Ordering::AcqRel);
        } else {
            self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
            self.counters.count_drop(DropReason::IoError, level, 1);
        }
        if !self.child_warned.swap(true, Ordering::Relaxed) {
            let how = if fd >= 0 {
                "its records are written directly to the sink's file as of the fork, one write(2) each, while that file has a name (then dropped, io_error)\n"
            } else {
                "the sink is not a file descriptor, so its records are dropped (io_error)\n"
            };
            crate::sys::fork::say(
                "loglag: this process is a fork() of the one that started logging; ",
            );
            crate::sys::fork::say(how);
        }
    }

    /// Whether a captured record can travel as captured: only through a heap ring to
    /// this process's own writer (not `sync`, not a spool, which outlives the process
    /// and its static pointers, and not in a forked child, which writes lines itself).
    fn defers_rendering(&self) -> bool {
        self.call.mode == Mode::Async && self.spool.is_none() && !self.in_forked_child()
    }

    /// The capturing front-ends' producer path: `fill` captures one record, which goes
    /// to the writer to be rendered there, or is rendered here when it cannot (see
    /// [`Core::defers_rendering`]) or is longer than `max_record_bytes` captured.
    #[inline]
    pub(crate) fn submit_captured(
        &self,
        level: Level,
        site: Site,
        format: Format,
        fill: impl FnOnce(&mut Encoder<'_>),
    ) {
        let mode = self.call.mode;
        if mode == Mode::Off {
            return;
        }
        // The mark covers the thread-local buffer's take and give-back too: a handler
        // that lands there must not touch it (see `entered.rs`).
        let Some(entered) = self.enter() else {
            return self.drop_reentrant(level);
        };
        let deferred = self.defers_rendering();
        // `format-only` measures what an async caller pays, so it reads the same clock.
        let time = if deferred || mode == Mode::FormatOnly {
            clock::now()
        } else {
            clock::realtime()
        };
        record::with_capture_buffer(|captured| {
            {
                // The values' `Display`/`Debug` are the caller's code: one that logs is
                // logged.
                let _user = entered.user_code();
                fill(&mut Encoder::begin(captured, site, format, time));
            }
            if mode == Mode::FormatOnly {
                // What the caller pays is the capture; rendering is the writer's.
                std::hint::black_box(&captured);
            } else if deferred && captured.len() <= self.call.max_record_bytes {
                self.count_accepted();
                self.submit_accepted(level, captured, true, &self.stamps_of(time));
            } else {
                record::with_line_buffer(|line| {
                    capture::render_now(captured, level, line);
                    self.submit_entered(level, line);
                });
            }
        });
    }

    /// `submit_captured` for a record whose length is known before it is written (a
    /// macro call with plain values: `record.values_len` bytes after the header), which
    /// `put` writes straight into ring memory, with no copy in between, when the
    /// record goes to the writer and its thread's ring (or, with none or that one
    /// full, the shared ring) has contiguous room now. When neither ring has room under a
    /// policy that drops the newest record, it is counted dropped without being
    /// encoded, or the clock read. Otherwise `encode` captures it as
    /// `submit_captured` does, and it takes the path every record takes. Either way
    /// it is counted accepted once, and `put` and `encode` write the same bytes.
    #[inline]
    pub(crate) fn submit_fixed(
        &self,
        level: Level,
        record: PlainRecord,
        put: impl Fn(&mut Fixed<'_>),
        encode: impl FnOnce(&mut Encoder<'_>),
    ) {
        let len = record.len();
        #[cfg(not(loglag_loom))]
        if self.call.in_place && len <= self.call.max_record_bytes && !self.in_forked_child() {
            let Some(_entered) = self.enter() else {
                return self.drop_reentrant(level);
            };
            self.count_accepted();
            if self.call.closed.load(Ordering::Acquire) {
                self.counters.count_drop(DropReason::Shutdown, level, 1);
                return;
            }
            let limit = self.call.thread_ring_limit[level as usize];
            // Whether the record had exactly its computed length: asserted once it
            // is published, never while it is half written into a ring.
            let exact = Cell::new(true);
            let write = |out: &mut [u8], time: clock::Raw| {
                let mut out = Fixed::new(out);
                out.put(&record.header(time));
                put(&mut out);
                exact.set(out.finish());
            };
            let written = |used_after: u64, shared: bool| {
                debug_assert!(exact.get(), "a plain record's length was wrong");
                self.pushed(level, used_after, footprint(len), shared)
            };
            // One lookup of the thread's ring for both paths: a full ring (the hot
            // burst) must not cost the copying path a second one, nor a second read
            // of the writer's tail.
            return self.with_own_ring(|own| {
                let mut own_full = false;
                if let Some(ring) = own {
                    // The clock is read once the record has room: a record refused
                    // reads none (its `rdtsc` was a third of the hot burst's drops).
                    let pushed = ring.try_push_owned_in_place(level, len, limit, |out| {
                        let time = clock::now();
                        write(out, time);
                        self.stamps_of(time)
                    });
                    match pushed {
                        Ok(used_after) => return written(used_after, false),
                        Err(NotInPlace::Full) => own_full = true,
                        Err(NotInPlace::CopyInstead) => {}
                    }
                }
                let shared = &self.lanes.shared;
                // No ring of its own, or it is full (the hot burst): in place into the
                // shared ring. Where that is full too under a policy that drops the
                // newest record, it is counted as `enqueue` counts it, never encoded,
                // and the clock is not read. (Read, it is read before the
                // reservation: the order across a spill needs it, see `lanes.rs`.)
                let shared_first = own.is_none() || own_full;
                let shared_limit =
                    shared_first.then(|| self.limit(self.lanes.shared_capacity(), level));
                if let Some(limit) = shared_limit {
                    if self.call.drops_newest && !shared.has_room(footprint(len), limit) {
                        return self.refuse_newest(level);
                    }
                }
                let time = clock::now();
                let stamps = self.stamps_of(time);
                if let Some(limit) = shared_limit {
                    let pushed = shared
                        .try_push_in_place(level, len, limit, &stamps, |out| write(out, time));
                    match pushed {
                        Ok(used_after) => return written(used_after, true),
                        Err(NotInPlace::Full) if self.call.drops_newest => {
                            return self.refuse_newest(level)
                        }
                        Err(_) => {}
                    }
                }
                record::with_capture_buffer(|captured| {
                    encode(&mut record.begin(captured, time));
                    self.enqueue(own, own_full, level, captured, true, &stamps);
                });
            });
        }
        #[cfg(loglag_loom)]
        let _ = (len, put);
        self.submit_captured(level, record.site, record.format, |encoder| {
            if record.site_message {
                encoder.site_message();
            }
            encode(encoder);
        });
    }

    /// After a record of `footprint` bytes was pushed and its ring (the shared one,
    /// or the thread's) holds `used_after` bytes: wakes the writer for a record at
    /// the flush level, else as [`wake_after_push`] says.
    #[inline]
    fn pushed(&self, level: Level, used_after: u64, footprint: u64, shared: bool) {
        if level >= self.call.flush_level {
            return self.wake_writer();
        }
        match wake_after_push(used_after, footprint, self.call.batch_bytes, shared) {
            WakeAfterPush::No => {}
            WakeAfterPush::Always => self.unpark_writer(),
            WakeAfterPush::UnlessPolling => {
                // Push, then load the flag (the writer: store it, then look, in
                // `Core::wait_for_batch`).
                std::sync::atomic::fence(Ordering::SeqCst);
                if !self.writer_polling.load(Ordering::SeqCst) {
                    self.unpark_writer();
                }
            }
        }
    }

    fn submit_accepted(&self, level: Level, record: &[u8], captured: bool, stamps: &Stamps) {
        // Before the `sync` sink's lock: a closed pipeline takes no lock at all.
        if self.call.closed.load(Ordering::Acquire) {
            self.counters.count_drop(DropReason::Shutdown, level, 1);
            return;
        }
        if self.call.mode == Mode::Sync {
            return self.write_sync(level, record);
        }
        self.with_own_ring(|own| self.enqueue(own, false, level, record, captured, stamps));
    }

    /// Pushes into the thread's own ring, else into the shared ring (no ring of its
    /// own, or it is full, or the record does not fit it): the bytes that ring holds
    /// after, and whether it was the shared ring. Only when neither takes it does the
    /// overflow policy apply.
    #[inline]
    fn push(
        &self,
        own: Option<&Ring>,
        level: Level,
        record: &[u8],
        captured: bool,
        stamps: &Stamps,
    ) -> Result<(u64, bool), Full> {
        let &Stamps {
            merge_key,
            enqueued,
        } = stamps;
        if let Some(ring) = own {
            let limit = self.call.thread_ring_limit[level as usize];
            let pushed = ring.try_push_owned(level, record, limit, enqueued, captured, merge_key);
            if let Ok(used_after) = pushed {
                return Ok((used_after, false));
            }
        }
        let shared = &self.lanes.shared;
        let limit = self.limit(self.lanes.shared_capacity(), level);
        shared
            .try_push(level, record, limit, enqueued, captured, merge_key)
            .map(|used_after| (used_after, true))
    }

    /// Pushes a record (see [`Core::push`]), applying the overflow policy while no
    /// ring takes it. `own_full`: the thread's own ring was just found full by the
    /// writer's tail, so the first try goes straight to the shared ring.
    #[inline]
    fn enqueue(
        &self,
        own: Option<&Ring>,
        own_full: bool,
        level: Level,
        record: &[u8],
        captured: bool,
        stamps: &Stamps,
    ) {
        // The common case inline, with no record count to keep: a ring takes it.
        let tried = !own_full && self.call.max_records.is_none();
        if tried {
            if let Ok((used_after, shared)) = self.push(own, level, record, captured, stamps) {
                return self.pushed(level, used_after, footprint(record.len()), shared);
            }
        }
        self.enqueue_or_overflow(own, own_full, tried, level, record, captured, stamps);
    }

    /// `enqueue` once no ring took the record at first (`refused`: that push was made
    /// and is not made again before the overflow policy applies), or with a record
    /// count to keep: applies the overflow policy while no ring takes it.
    #[inline(never)]
    #[allow(clippy::too_many_arguments)]
    fn enqueue_or_overflow(
        &self,
        own: Option<&Ring>,
        own_full: bool,
        refused: bool,
        level: Level,
        record: &[u8],
        captured: bool,
        stamps: &Stamps,
    ) {
        let mut deadline = None;
        let mut skip_own = own_full;
        let mut refused = refused;
        loop {
            let pushed = if std::mem::take(&mut refused) {
                Err(Full)
            } else if self.take_record_slot() {
                let pushed = self.push(own.filter(|_| !skip_own), level, record, captured, stamps);
                if pushed.is_err() {
                    self.release_record_slots(1);
                }
                pushed
            } else {
                Err(Full)
            };
            skip_own = false;
            match pushed {
                Ok((used_after, shared)) => {
                    self.pushed(level, used_after, footprint(record.len()), shared);
                    return;
                }
                Err(_) => {
                    // Counted as `submit_fixed` counts a record it can refuse before
                    // encoding it (on this thread's counters, where it can).
                    #[cfg(not(loglag_loom))]
                    if self.call.drops_newest {
                        return self.refuse_newest(level);
                    }
                    self.note_full_event();
                    // A sink that logs (on the writer thread, or inside a sync write):
                    // it must never wait, nor evict under the writer; only this thread
                    // could make the room. Checked here, off the non-full hot path.
                    if inside_any_sink() {
                        self.counters.count_drop(DropReason::Reentrant, level, 1);
                        return;
                    }
                    match self.config.overflow {
                        Overflow::Block => {
                            self.wait_for_space(own, record.len(), level, None);
                        }
                        Overflow::BlockFor(wait) => {
                            // No deadline (`Block`) for a wait beyond any `Instant`.
                            let deadline =
                                *deadline.get_or_insert_with(|| Instant::now().checked_add(wait));
                            if !self.wait_for_space(own, record.len(), level, deadline) {
                                self.counters.count_drop(DropReason::QueueFull, level, 1);
                                return;
                            }
                        }
                        Overflow::DropOldest => {
                            // The older of the two oldest records this thread may
                            // evict: its own ring's (if the record fits that ring at
                            // all) and the shared ring's. Other threads' rings have
                            // one producer each; only they and the writer touch them.
                            let shared = &self.lanes.shared;
                            let fits_own = |r: &&Ring| {
                                footprint(record.len()) <= self.limit(r.capacity(), level)
                                    && r.peek().is_some_and(|mine| {
                                        shared.peek_held().is_none_or(|s| mine.key <= s.key)
                                    })
                            };
                            let (ring, limit) = match own.filter(fits_own) {
                                Some(ring) => (ring, self.limit(ring.capacity(), level)),
                                None => (
                                    &self.lanes.shared,
                                    self.limit(self.lanes.shared_capacity(), level),
                                ),
                            };
                            let mut need = footprint(record.len());
                            if !self.record_slots_free() {
                                // Full by count, not bytes: asking for one byte more
                                // than is free evicts exactly one record.
                                need = need.max(limit.saturating_sub(ring.used_bytes()) + 1);
                            }
                            let counters = &self.counters;
                            if !ring.evict_oldest(need, limit, |p| {
                                counters.count_drop(DropReason::QueueFull, p.level, 1);
                                self.release_record_slots(1);
                            }) {
                                counters.count_drop(DropReason::QueueFull, level, 1);
                                return;
                            }
                        }
                        Overflow::DropNewest | Overflow::ShedByLevel => {
                            self.counters.count_drop(DropReason::QueueFull, level, 1);
                            return;
                        }
                    }
                    if self.call.closed.load(Ordering::Acquire) {
                        self.counters.count_drop(DropReason::Shutdown, level, 1);
                        return;
                    }
                }
            }
        }
    }

    /// A record no ring took: counted as a full event, the backlog noted now and
    /// then, and the writer woken.
    fn note_full_event(&self) {
        let events = self
            .counters
            .queue_full_events
            .fetch_add(1, Ordering::Relaxed);
        // The backlog at its peak, from one full event in 64 (reading it sums every
        // ring's positions); the writer notes it at every batch.
        if events % 64 == 0 {
            self.counters.note_backlog(self.lanes.used_bytes());
        }
        self.wake_writer();
    }

    /// Whether refusals for want of room are counted on the callers' threads
    /// (`refuse_newest`): under a policy that drops the newest, and never with a
    /// spool, whose ledger journals every drop on the shared counters.
    pub(super) fn refuses_on_threads(&self) -> bool {
        self.call.drops_newest && self.counters.ledger.get().is_none()
    }

    /// `enqueue`'s answer to a record no ring takes under `DropNewest` or
    /// `ShedByLevel`, for a caller that knows it before encoding the record.
    #[cfg(not(loglag_loom))]
    fn refuse_newest(&self, level: Level) {
        // On this thread's own counters where it can: no shared read-modify-write on
        // the hot burst's drop path.
        if self.refuses_on_threads() && !inside_any_sink() {
            if let Some(refused) = self.count_refused_on_thread(level) {
                // The backlog at its peak, now and then (see `note_full_event`): at
                // each thread's first refusal at a level, and every 64th after.
                if refused % 64 == 1 {
                    self.counters.note_backlog(self.lanes.used_bytes());
                }
                return self.wake_writer();
            }
        }
        self.note_full_event();
        let reason = if inside_any_sink() {
            DropReason::Reentrant
        } else {
            DropReason::QueueFull
        };
        self.counters.count_drop(reason, level, 1);
    }

    /// With `max_records`: takes a slot for one more record, or says there is none.
    fn take_record_slot(&self) -> bool {
        match self.call.max_records {
            None => true,
            Some(max) => {
                if self.queued_records.fetch_add(1, Ordering::AcqRel) < max {
                    true
                } else {
                    self.queued_records.fetch_sub(1, Ordering::AcqRel);
                    false
                }
            }
        }
    }

    /// Gives back `n` slots (records written, or evicted).
    pub(super) fn release_record_slots(&self, n: u64) {
        if self.call.max_records.is_some() && n > 0 {
            self.queued_records.fetch_sub(n, Ordering::AcqRel);
        }
    }

    fn record_slots_free(&self) -> bool {
        self.config
            .buffered_lines_limit
            .is_none_or(|max| self.queued_records.load(Ordering::Acquire) < max)
    }

    /// Waits until `len` more bytes would fit the thread's own ring or the shared
    /// one, or `deadline`. Returns whether they fit.
    fn wait_for_space(
        &self,
        own: Option<&Ring>,
        len: usize,
        level: Level,
        deadline: Option<Instant>,
    ) -> bool {
        // A waiter also looks again this often: the writer wakes waiters only every
        // sixteenth of the budget (or at the end of a drain), and a drain can be held
        // up by a stalled sink while the ring already has room.
        const LOOK_AGAIN: Duration = Duration::from_millis(100);
        let need = footprint(len);
        let fits_in = |ring: &Ring, cap: u64| ring.used_bytes() + need <= self.limit(cap, level);
        let fits = || {
            (own.is_some_and(|r| fits_in(r, r.capacity()))
                || fits_in(&self.lanes.shared, self.lanes.shared_capacity()))
                && self.record_slots_free()
        };
        self.waiting_producers.fetch_add(1, Ordering::AcqRel);
        let (lock, cv) = &self.space;
        let mut guard = lock.lock().unwrap_or_else(|e| e.into_inner());
        let result = loop {
            // Checked under the lock; the writer notifies under the same lock after
            // releasing space, so no wake-up is lost.
            if fits() || self.call.closed.load(Ordering::Acquire) {
                break true;
            }
            let timeout = match deadline {
                None => LOOK_AGAIN,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => left.min(LOOK_AGAIN),
                    _ => break false,
                },
            };
            guard = cv
                .wait_timeout(guard, timeout)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        };
        drop(guard);
        self.waiting_producers.fetch_sub(1, Ordering::AcqRel);
        result
    }

    /// Called by the writer after it has released ring space.
    pub(super) fn space_released(&self) {
        if self.waiting_producers.load(Ordering::Acquire) > 0 {
            let _guard = self.space.0.lock().unwrap_or_else(|e| e.into_inner());
            self.space.1.notify_all();
        }
    }

    /// Asks the writer to write everything queued now.
    pub(super) fn wake_writer(&self) {
        // A request not yet taken has been, or is being, followed by its own unpark,
        // and the writer takes it before it waits again: nothing to add. In a burst
        // against a full queue every record came here; a load is all they pay now.
        if self.wake_requested.load(Ordering::Relaxed) {
            return;
        }
        self.wake_requested.store(true, Ordering::Release);
        self.unpark_writer();
    }

    fn unpark_writer(&self) {
        if let Some(t) = self.writer.get() {
            t.unpark();
        }
    }

    fn write_sync(&self, level: Level, record: &[u8]) {
        let mut sink = if inside_any_sink() {
            // This thread may already hold this very lock (a sink that logs); waiting
            // for it, or for another pipeline's sink held by a thread waiting on us,
            // could deadlock. Write only if the sink is free now.
            match self.sync_sink.try_lock() {
                Ok(sink) => sink,
                Err(std::sync::TryLockError::Poisoned(e)) => e.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => {
                    self.counters.count_drop(DropReason::Reentrant, level, 1);
                    return;
                }
            }
        } else {
            self.sync_sink.lock().unwrap_or_else(|e| e.into_inner())
        };
        let Some(sink) = sink.as_mut() else {
            self.counters.count_drop(DropReason::Shutdown, level, 1);
            return;
        };
        let _inside = ThreadMark::inside_sink(self.call.id);
        if crate::sink::call_sink(|| sink.sink().before_batch(record.len())).is_err() {
            self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
        }
        self.note_sink_fd(sink.descriptor());
        // Sync mode has no in-band report line; a sink's notice goes to stderr.
        if let Some(notice) = sink.take_notice() {
            eprintln!("loglag: {notice}");
        }
        match super::drain::measured_write(&self.counters, sink, record) {
            Ok(refused) if !refused.is_empty() => {
                // The one record, refused by the peer (RELP's `500`).
                self.counters.count_drop(DropReason::IoError, level, 1);
            }
            Ok(_) => {
                self.counters
                    .written_bytes
                    .fetch_add(record.len() as u64, Ordering::Relaxed);
                self.counters.written_records.fetch_add(1, Ordering::AcqRel);
            }
            Err(_) => {
                self.counters.write_errors.fetch_add(1, Ordering::Relaxed);
                self.counters.count_drop(DropReason::IoError, level, 1);
            }
        }
    }
}

/// What a push that took a ring to `used_after` bytes, with a record of `footprint`
/// bytes, asks of a writer that is not needed at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WakeAfterPush {
    No,
    /// It completed a batch: the writer takes whole batches, and a polling writer
    /// finds it by itself.
    UnlessPolling,
    /// It took the shared ring past [`RESIDENT_AHEAD`](crate::queue::RESIDENT_AHEAD)
    /// bytes queued: a burst. A polling writer looks again only after its poll (10
    /// ms by default), in which a burst filled the 8 MiB shared ring with its
    /// producers faulting in every page the writer had not made resident ahead yet
    /// (a thousand page faults on the caller in the hot burst). Not for a thread
    /// ring: its producer's count of what it holds runs on a cached `tail`, which
    /// would cross the mark once a lap without a burst. (At two batches it woke the
    /// writer of a steady trickle every few milliseconds, a futex call on the caller
    /// each time: per-call p99.9 1.6–1.9 µs against 0.6–0.7.)
    Always,
}

#[inline]
fn wake_after_push(used_after: u64, footprint: u64, batch: u64, shared: bool) -> WakeAfterPush {
    let before = used_after - footprint;
    let crossed = |mark: u64| used_after >= mark && before < mark;
    if shared && crossed(crate::queue::RESIDENT_AHEAD) {
        WakeAfterPush::Always
    } else if crossed(batch) {
        WakeAfterPush::UnlessPolling
    } else {
        WakeAfterPush::No
    }
}

#[cfg(test)]
mod tests;
