//! A ring per logging thread, and the writer's merge of them.
//!
//! A thread's first record gives it a ring of its own (`queue::Ring` with one
//! producer: no compare-and-swap, no shared read-modify-write, the writer's `tail`
//! cached on the producer's cache line). The ring goes back to the pipeline when the
//! thread exits, and the next thread that logs takes it over, so thread churn reuses
//! rings instead of allocating them.
//!
//! **The byte budget still holds: each thread ring is a share of it.** With a budget
//! of B bytes and thread rings of R bytes (at most ⌊(B/4)/R⌋ of them), the shared ring
//! may hold B − k·R bytes while k thread rings exist, so queued bytes never exceed B,
//! and no counter is shared on the producer path: a thread's own ring is bounded by
//! its capacity, and the shared ring's producers read k with one relaxed load of a
//! line that changes only when a ring is created. A thread spills into the shared
//! ring when its own is full or a record does not fit it, and only when the shared
//! ring is full too does the overflow policy (block, drop, shed) apply, so one thread
//! alone can still fill the whole budget. What it costs, in the worst case:
//! - memory: the shared ring is mapped at B bytes (its limit moves, its mapping
//!   cannot), so the rings' memory is at most B + k·R, 1.25 × B with the defaults,
//!   while the bytes queued stay within B;
//! - a ring is created only while the shared ring holds at most B − (k+1)·R, so the
//!   bound holds then too, give or take a record per thread that pushed into the
//!   shared ring in the same instant; a thread refused tries again 1,024 records later;
//! - threads beyond the rings there are (8 with the defaults) share the shared ring,
//!   with one compare-and-swap per record, as every thread did before there were
//!   thread rings.
//!
//! **Order.** Within a thread, records are written in the order it logged them, also
//! across a spill into the shared ring. The shared ring is in reservation order, and a
//! record's key is read before its reservation, so every record ahead of a thread's
//! spilled record A has a key older than anything the thread logs after A: the merge
//! takes them, then A, before the thread's next record. What it needs: a ring whose
//! oldest end cannot be read (`queue::Oldest::Unknown`: the shared ring's oldest
//! record reserved but not yet published, or any ring's oldest records being evicted
//! under `DropOldest`) stops the merge until it can (the key there is not known), and
//! a clock that agrees across cores to within the time of a compare-and-swap (an invariant TSC, or `CLOCK_MONOTONIC`). Between threads, the writer merges by the records' merge keys
//! (`clock::merge_key`: the TSC, or `CLOCK_MONOTONIC`, read when the record is logged):
//! records of different threads come out in timestamp order, except that a record
//! published after the writer has already written a later-stamped record of another
//! thread comes after it (the two were logged within the time between taking a
//! timestamp and publishing the record, one logging call: 40–60 ns at p50 and up to
//! ~400 ns at p99.9 with the timer's 20 ns in it, `cargo bench -p loglag --bench
//! latency -- --only loglag_macro,loglag_macro_2_threads`; or the logging thread was
//! preempted in between).
//!
//! A spool keeps one shared ring (`Lanes::single`): its file is the ring, and
//! delivery is made exactly-once by one ring's positions.

use std::cell::{Cell, RefCell};
use std::sync::OnceLock;

use super::{Oldest, Peeked, PopBound, Popped, Render, Ring};
use crate::sys::sync::{Arc, AtomicBool, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};

/// The default size of a thread's ring: a 32nd of the budget, between 4 KiB and
/// 1 MiB (8 rings of 256 KiB with the default 8 MiB: a ring that stays in the cache),
/// and none under a budget of 64 KiB.
pub(crate) fn default_thread_ring_bytes(budget: usize) -> usize {
    if budget < 64 << 10 {
        0
    } else {
        (budget / 32).clamp(4 << 10, 1 << 20)
    }
}

/// A thread's own ring.
#[derive(Debug)]
pub(crate) struct ThreadRing {
    pub(crate) ring: Ring,
    /// A live thread pushes into it; cleared when that thread exits.
    owned: AtomicBool,
}

/// A thread's entry for one pipeline it logs to.
struct OwnRing {
    pipeline: u64,
    /// `None`: no ring was free, or the budget had no room for one.
    ring: Option<Arc<ThreadRing>>,
    /// Records until a thread without a ring asks again.
    retry_in: Cell<u32>,
}

/// A thread's rings, one per pipeline it has logged to.
struct OwnRings {
    entries: RefCell<Vec<OwnRing>>,
    /// `DROPPED` as of the last sweep of entries whose pipeline is gone.
    seen_dropped: Cell<u64>,
    /// The pipeline this thread last pushed into through its own ring, and that ring:
    /// the hot path's answer without the table's borrow and search (most threads log
    /// to one pipeline). Valid while `seen_dropped` equals `DROPPED`: the entry that
    /// holds the ring leaves the table only in `forget_dropped`, which clears this,
    /// in `with_own_slow`, which sets it again, or with the whole `OwnRings`, after
    /// which the thread-local cannot be reached.
    last: Cell<(u64, *const Ring)>,
}

impl ThreadRing {
    /// Gives the ring back (its thread exits, or cannot keep it): hands it, and the
    /// last `head` this thread stored, to the next thread that claims it, whose
    /// compare-and-swap on `owned` acquires this store.
    pub(crate) fn hand_back(&self) {
        self.owned.store(false, Ordering::Release);
    }
}

impl Drop for OwnRings {
    fn drop(&mut self) {
        for ring in self.entries.get_mut().drain(..).filter_map(|own| own.ring) {
            ring.hand_back();
        }
    }
}

thread_local! {
    static OWN: OwnRings = const {
        OwnRings {
            entries: RefCell::new(Vec::new()),
            seen_dropped: Cell::new(0),
            last: Cell::new((0, std::ptr::null())),
        }
    };
}

/// Pipelines with thread rings dropped so far: a thread's table forgets their entries
/// (and frees their rings) when it sees this move.
static DROPPED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Ids of the pipelines alive with thread rings, to tell which entries to forget.
static ALIVE: std::sync::Mutex<Vec<u64>> = std::sync::Mutex::new(Vec::new());

/// The rings of one pipeline.
pub(crate) struct Lanes {
    pub(crate) shared: Ring,
    /// The pipeline's id, the key of a thread's table.
    id: u64,
    budget: u64,
    /// Bytes of the budget the thread rings take: k·R.
    thread_share: AtomicU64,
    thread_ring_bytes: usize,
    max_thread_rings: usize,
    /// Thread rings, append-only: read without a lock (a forked child may read them
    /// while the parent held a lock at the fork).
    rings: Box<[OnceLock<Arc<ThreadRing>>]>,
    /// How many of `rings` are set; the writer refreshes its list when it moves.
    count: AtomicUsize,
    /// Serialises creating rings.
    claim_lock: Mutex<()>,
    /// Serialises the head sums of flushes and of the writer's sweeps.
    snapshot_lock: Mutex<()>,
}

/// The writer's copy of the list of thread rings.
#[derive(Debug, Default)]
pub(crate) struct WriterView {
    rings: Vec<Arc<ThreadRing>>,
}

/// Every ring's `head` at the start of a writer's sweep; once every ring's `tail` has
/// passed its head here, everything logged before the sweep is written or dropped.
#[derive(Debug, Default)]
pub(crate) struct Sweep {
    /// The shared ring's head, then each thread ring's, in the view's order.
    heads: Vec<u64>,
    sum: u64,
}

fn lock(m: &Mutex<()>) -> MutexGuard<'_, ()> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Lanes {
    /// A shared ring and, with `thread_ring_bytes > 0`, thread rings of that size within
    /// `budget` (see the module docs for the split).
    pub(crate) fn new(id: u64, budget: usize, thread_ring_bytes: usize) -> Lanes {
        let ring_bytes = thread_ring_bytes / 8 * 8;
        let max_thread_rings = if ring_bytes >= 4096 {
            budget / 4 / ring_bytes
        } else {
            0
        };
        Lanes::with_rings(id, budget, ring_bytes, max_thread_rings)
    }

    /// `new` with rings of any size and number (the loom models' tiny ones).
    pub(crate) fn with_rings(
        id: u64,
        budget: usize,
        ring_bytes: usize,
        max_thread_rings: usize,
    ) -> Lanes {
        if max_thread_rings > 0 {
            ALIVE.lock().unwrap_or_else(|e| e.into_inner()).push(id);
        }
        Lanes {
            shared: Ring::new(budget),
            id,
            budget: budget as u64,
            thread_share: AtomicU64::new(0),
            thread_ring_bytes: ring_bytes,
            max_thread_rings,
            rings: (0..max_thread_rings).map(|_| OnceLock::new()).collect(),
            count: AtomicUsize::new(0),
            claim_lock: Mutex::new(()),
            snapshot_lock: Mutex::new(()),
        }
    }

    /// One shared ring and nothing else (a spool's).
    pub(crate) fn single(id: u64, ring: Ring) -> Lanes {
        Lanes {
            budget: ring.capacity(),
            thread_share: AtomicU64::new(0),
            shared: ring,
            id,
            thread_ring_bytes: 0,
            max_thread_rings: 0,
            rings: Box::new([]),
            count: AtomicUsize::new(0),
            claim_lock: Mutex::new(()),
            snapshot_lock: Mutex::new(()),
        }
    }

    /// Whether records need merge keys (several rings can hold records).
    #[inline]
    pub(crate) fn merges(&self) -> bool {
        self.max_thread_rings > 0
    }

    /// The capacity of every thread ring (0 without them).
    pub(crate) fn thread_ring_capacity(&self) -> u64 {
        self.thread_ring_bytes as u64
    }

    /// What the shared ring may hold now: the budget less the thread rings' share.
    #[inline]
    pub(crate) fn shared_capacity(&self) -> u64 {
        self.budget - self.thread_share.load(Ordering::Relaxed)
    }

    /// The least the shared ring may ever hold (all thread rings created).
    pub(crate) fn min_shared_capacity(&self) -> u64 {
        self.budget - (self.max_thread_rings * self.thread_ring_bytes) as u64
    }

    /// The thread rings created so far, without a lock.
    fn thread_rings(&self) -> impl Iterator<Item = &Arc<ThreadRing>> {
        let count = self.count.load(Ordering::Acquire);
        self.rings[..count].iter().filter_map(OnceLock::get)
    }

    /// Runs `f` with the calling thread's own ring, claiming one on its first record;
    /// `None` where it has none (no thread rings, none free, or logging from a
    /// thread-local destructor).
    #[inline]
    pub(crate) fn with_own<T>(&self, f: impl FnOnce(Option<&Ring>) -> T) -> T {
        if self.max_thread_rings == 0 {
            return f(None);
        }
        let last = OWN
            .try_with(|own| {
                let (pipeline, ring) = own.last.get();
                (pipeline == self.id && own.seen_dropped.get() == DROPPED.load(Ordering::Relaxed))
                    .then_some(ring)
            })
            .ok()
            .flatten();
        match last {
            // SAFETY: `last` points into a ring this thread's table holds (see
            // `OwnRings::last`), and the table keeps it while this call runs: a signal
            // handler that logs meanwhile may change other pipelines' entries, never
            // this one's (this pipeline is alive, and its entered mark keeps the handler out
            // of it).
            Some(ring) => f(Some(unsafe { &*ring })),
            None => self.with_own_slow(f),
        }
    }

    /// `with_own` through the thread's table: the first record, another pipeline than
    /// the last, a thread without a ring, or a pipeline dropped since.
    #[cold]
    fn with_own_slow<T>(&self, f: impl FnOnce(Option<&Ring>) -> T) -> T {
        let mut f = Some(f);
        let result = OWN.try_with(|own| {
            let dropped = DROPPED.load(Ordering::Relaxed);
            if own.seen_dropped.get() != dropped {
                forget_dropped(own, dropped);
            }
            if let Ok(table) = own.entries.try_borrow() {
                if let Some(entry) = table.iter().find(|e| e.pipeline == self.id) {
                    let retry_in = entry.retry_in.get();
                    if entry.ring.is_some() || retry_in > 0 {
                        if entry.ring.is_none() {
                            entry.retry_in.set(retry_in - 1);
                        }
                        let ring = entry.ring.as_deref().map(|r| &r.ring);
                        if let Some(ring) = ring {
                            own.last.set((self.id, ring));
                        }
                        let f = f.take().expect("called once");
                        return Some(f(ring));
                    }
                }
            }
            let claimed = self.claim();
            let Ok(mut table) = own.entries.try_borrow_mut() else {
                // Re-entered while this thread's table is in use: push into the
                // shared ring this once, and give the ring back.
                if let Some(ring) = claimed {
                    ring.hand_back();
                }
                return None;
            };
            if own.last.get().0 == self.id {
                own.last.set((0, std::ptr::null()));
            }
            table.retain(|e| e.pipeline != self.id);
            table.push(OwnRing {
                pipeline: self.id,
                ring: claimed,
                retry_in: Cell::new(1024),
            });
            drop(table);
            let table = own.entries.borrow();
            let ring = table
                .last()
                .and_then(|e| e.ring.as_deref())
                .map(|r| &r.ring);
            if let Some(ring) = ring {
                own.last.set((self.id, ring));
            }
            let f = f.take().expect("called once");
            Some(f(ring))
        });
        match result {
            Ok(Some(value)) => value,
            _ => (f.take().expect("not yet called"))(None),
        }
    }

    /// A ring for the calling thread: a free one, or a new one while the budget has
    /// room for it.
    #[cold]
    pub(crate) fn claim(&self) -> Option<Arc<ThreadRing>> {
        let _claiming = lock(&self.claim_lock);
        for ring in self.thread_rings() {
            if ring
                .owned
                .compare_exchange(false, true, Ordering::AcqRel, Ordering::Relaxed)
                .is_ok()
            {
                return Some(ring.clone());
            }
        }
        let count = self.count.load(Ordering::Acquire);
        if count >= self.max_thread_rings {
            return None;
        }
        let share = self.thread_share.load(Ordering::Relaxed) + self.thread_ring_bytes as u64;
        if self.shared.used_bytes() + share > self.budget {
            // The shared ring holds more than it could once this ring exists.
            return None;
        }
        let ring = Arc::new(ThreadRing {
            ring: Ring::single_producer(self.thread_ring_bytes),
            owned: AtomicBool::new(true),
        });
        let _ = self.rings[count].set(ring.clone());
        // Producers of the shared ring see the smaller limit from here on; the check
        // above and this store are under the claim lock, so two claims cannot both
        // pass it.
        self.thread_share.store(share, Ordering::Relaxed);
        self.count.store(count + 1, Ordering::Release);
        Some(ring)
    }

    /// Calls `f` for the shared ring and every thread ring.
    fn each_ring(&self, mut f: impl FnMut(&Ring)) {
        f(&self.shared);
        for ring in self.thread_rings() {
            f(&ring.ring);
        }
    }

    /// Bytes queued in all rings, headers included.
    pub(crate) fn used_bytes(&self) -> u64 {
        let mut used = 0;
        self.each_ring(|r| used += r.used_bytes());
        used
    }

    /// The sum of every ring's `head`: what a flush waits for the writer to pass
    /// (see [`Lanes::progress`]). Read under the snapshot lock, so it never interleaves
    /// with the writer's own reading at the start of a sweep.
    pub(crate) fn head_sum(&self) -> u64 {
        let _snapshot = lock(&self.snapshot_lock);
        let mut sum = 0;
        self.each_ring(|r| sum += r.head_position());
        sum
    }

    /// The sum of every ring's `tail`.
    pub(crate) fn tail_sum(&self) -> u64 {
        let mut sum = 0;
        self.each_ring(|r| sum += r.tail_position());
        sum
    }

    /// The enqueue time of the oldest record in any ring.
    pub(crate) fn oldest_enqueued_ns(&self) -> Option<u64> {
        let mut oldest: Option<u64> = None;
        self.each_ring(|r| {
            if let Some(t) = r.oldest_enqueued_ns() {
                oldest = Some(oldest.map_or(t, |o| o.min(t)));
            }
        });
        oldest
    }

    /// Discards every committed record of every ring (shutdown cut-off).
    pub(crate) fn discard_committed(&self, mut each: impl FnMut(Popped)) {
        self.each_ring(|r| r.discard_committed(&mut each));
    }

    /// Thread rings created so far.
    pub(crate) fn thread_ring_count(&self) -> usize {
        self.count.load(Ordering::Acquire)
    }

    // ---- the writer's side

    /// Refreshes the writer's list of rings if threads created new ones.
    pub(crate) fn refresh(&self, view: &mut WriterView) {
        if self.count.load(Ordering::Acquire) != view.rings.len() {
            view.rings = self.thread_rings().cloned().collect();
        }
    }

    /// Bytes queued in the rings the writer knows of.
    pub(crate) fn used_bytes_seen(&self, view: &WriterView) -> u64 {
        self.shared.used_bytes() + view.rings.iter().map(|r| r.ring.used_bytes()).sum::<u64>()
    }

    /// Keeps every ring's memory resident ahead of its producers
    /// ([`Ring::keep_resident_ahead`]); the writer's, between batches.
    pub(crate) fn keep_resident_ahead(&self, view: &WriterView) {
        self.shared.keep_resident_ahead();
        for ring in &view.rings {
            ring.ring.keep_resident_ahead();
        }
    }

    /// Starts a sweep: refreshes the view and reads every ring's head, under the
    /// snapshot lock (see [`Lanes::head_sum`]).
    pub(crate) fn begin_sweep(&self, view: &mut WriterView) -> Sweep {
        let _snapshot = lock(&self.snapshot_lock);
        self.refresh(view);
        let mut heads = Vec::with_capacity(1 + view.rings.len());
        heads.push(self.shared.head_position());
        heads.extend(view.rings.iter().map(|r| r.ring.head_position()));
        // Rings created between the refresh and here hold records logged after it,
        // and have heads of their own in a flush's sum: they are part of no sweep
        // until the next, so a sum without them cannot pass a target that has them.
        let sum = heads.iter().sum();
        Sweep { heads, sum }
    }

    /// Whether every ring's tail has reached its head at the sweep's start.
    pub(crate) fn swept(&self, view: &WriterView, sweep: &Sweep) -> bool {
        self.shared.tail_position() >= sweep.heads[0]
            && view
                .rings
                .iter()
                .zip(&sweep.heads[1..])
                .all(|(r, &head)| r.ring.tail_position() >= head)
    }

    /// The progress the writer may publish: with one ring its `tail`; with thread
    /// rings the sum of heads at the start of a finished sweep. A flush's target
    /// (`head_sum`) read before the sweep began is at most that sum, and equal only if
    /// no ring moved in between; one read after it is at least it, so either way
    /// `progress >= target` means every record before the flush is written or dropped.
    /// A sum of tails would not do: one busy ring could pass a target while another
    /// still holds records logged before the flush.
    pub(crate) fn progress(&self, view: &WriterView, sweep: Option<&Sweep>) -> Option<u64> {
        if self.max_thread_rings == 0 {
            return Some(self.shared.tail_position());
        }
        sweep
            .filter(|sweep| self.swept(view, sweep))
            .map(|sweep| sweep.sum)
    }

    /// The ring whose oldest published record has the smallest key, and the next
    /// smallest key among the others. Thread rings are looked at first, then the
    /// shared ring. `Unreadable` when any ring's oldest end is `Oldest::Unknown` (the
    /// shared ring's oldest record reserved but not yet published, or a producer
    /// evicting from a ring): the key there is unknown, and may be older than any
    /// other. (A thread ring mid-eviction taken for empty let the shared ring's
    /// records of its thread pass the older ones it still held: `thread 4: seq 19749
    /// written after seq 19978`, under qemu, about one run in 30.)
    fn oldest(&self, view: &WriterView) -> Result<(Option<Choice>, u64), Unreadable> {
        let mut best: Option<Choice> = None;
        let mut second = u64::MAX;
        let mut consider = |which: Option<usize>, seen: Peeked| match best {
            Some((_, b)) if b.key <= seen.key => second = second.min(seen.key),
            _ => {
                if let Some((_, b)) = best {
                    second = second.min(b.key);
                }
                best = Some((which, seen));
            }
        };
        for (i, r) in view.rings.iter().enumerate() {
            if let Some(seen) = published(&r.ring)? {
                consider(Some(i), seen);
            }
        }
        if let Some(seen) = published(&self.shared)? {
            consider(None, seen);
        }
        Ok((best, second))
    }

    /// The smallest oldest key among the rings other than `which`, `u64::MAX` if they
    /// are empty, or `Unreadable` if one of them cannot be read now.
    fn next_elsewhere(&self, view: &WriterView, which: Option<usize>) -> Result<u64, Unreadable> {
        let others = view
            .rings
            .iter()
            .enumerate()
            .filter(|&(i, _)| which != Some(i))
            .map(|(_, r)| &r.ring)
            .chain(which.is_some().then_some(&self.shared));
        let mut next = u64::MAX;
        for ring in others {
            if let Some(seen) = published(ring)? {
                next = next.min(seen.key);
            }
        }
        Ok(next)
    }

    /// Copies committed records of every ring into `out`, merged by merge key, until
    /// about `max_bytes` (see `Ring::pop_into`). Returns (records taken, the shared
    /// ring's position after them, which is what a spool's single ring needs).
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn pop_merged(
        &self,
        view: &mut WriterView,
        out: &mut Vec<u8>,
        max_bytes: usize,
        release: bool,
        scratch: &mut Vec<u8>,
        render: &mut Render<'_>,
        mut each: impl FnMut(Popped),
    ) -> (usize, u64) {
        if self.max_thread_rings == 0 {
            return self.shared.pop_into(
                out,
                max_bytes,
                release,
                scratch,
                render,
                PopBound::NONE,
                each,
            );
        }
        let start_len = out.len();
        let mut count = 0;
        let mut empty_pops = 0;
        let mut unreadable_looks = 0;
        loop {
            let taken = out.len() - start_len;
            if count > 0 && taken >= max_bytes {
                break;
            }
            let Ok((best, second)) = self.oldest(view) else {
                if look_again(&mut unreadable_looks) {
                    continue;
                }
                break;
            };
            let Some((which, seen)) = best else {
                break;
            };
            if count > 0 && taken + seen.len > max_bytes {
                break;
            }
            // Look again at every other ring: a record published after the first look,
            // with a smaller key, goes first. (A spilled record of a thread is the
            // case that matters within a thread; between threads this keeps the order
            // of records published before the writer chose.)
            if self.count.load(Ordering::Acquire) != view.rings.len() {
                self.refresh(view);
                continue;
            }
            #[cfg(test)]
            tests::between_the_looks();
            let Ok(next_elsewhere) = self.next_elsewhere(view, which) else {
                if look_again(&mut unreadable_looks) {
                    continue;
                }
                break;
            };
            if next_elsewhere < seen.key {
                continue;
            }
            let ring = match which {
                Some(i) => &view.rings[i].ring,
                None => &self.shared,
            };
            // Bounded by this second look too, not only by the first: a thread ring
            // that looked empty at first may have been given a record since, and the
            // same thread may then have spilled its next one into the shared ring,
            // within the records this pop would take. Taking the shared ring up to the
            // first look's bound then wrote `seq 5078` before `seq 5077`.
            let bound = PopBound {
                until_pos: seen.head,
                max_key: second.min(next_elsewhere),
            };
            let (n, _) = ring.pop_into(
                out,
                max_bytes.saturating_sub(taken).max(1),
                release,
                scratch,
                render,
                bound,
                &mut each,
            );
            if n == 0 {
                // A producer evicting (`DropOldest`) moved the tail under us: look
                // again, a bounded number of times.
                empty_pops += 1;
                if empty_pops > 64 {
                    break;
                }
                continue;
            }
            count += n;
        }
        (count, self.shared.tail_position())
    }
}

#[cfg(test)]
impl Lanes {
    /// Everything the merge takes now, in one call (the tests' and loom models' writer).
    pub(crate) fn merge_all(&self, view: &mut WriterView, out: &mut Vec<u8>) {
        self.pop_merged(
            view,
            out,
            usize::MAX,
            true,
            &mut Vec::new(),
            &mut |_, _, _| {},
            |_| {},
        );
    }
}

/// The ring the merge takes from next (its index in the view, `None` for the shared
/// ring) and its oldest record as seen.
type Choice = (Option<usize>, Peeked);

/// A ring's oldest end could not be read now (`Oldest::Unknown`): the merge waits.
struct Unreadable;

/// A ring's oldest published record, `None` if it is empty, `Unreadable` if its oldest
/// end cannot be read now.
fn published(ring: &Ring) -> Result<Option<Peeked>, Unreadable> {
    match ring.look_oldest() {
        Oldest::Published(seen) => Ok(Some(seen)),
        Oldest::Empty => Ok(None),
        Oldest::Unknown => Err(Unreadable),
    }
}

/// How often one merge looks again at a ring it could not read before it stops: an
/// eviction or a publication ends within a few instructions unless its thread was
/// preempted, and stopping at each would cut the writer's batches short while
/// producers evict under `DropOldest`. (Loom explores one look again.)
const UNREADABLE_LOOKS: u32 = if cfg!(loglag_loom) { 1 } else { 64 };

/// Counts one more look at an unreadable ring: whether to look again (after a pause).
fn look_again(looks: &mut u32) -> bool {
    *looks += 1;
    if *looks > UNREADABLE_LOOKS {
        return false;
    }
    crate::sys::sync::spin_loop();
    true
}

/// Forgets the entries of pipelines that are gone, freeing their rings.
#[cold]
fn forget_dropped(own: &OwnRings, dropped: u64) {
    let Ok(mut table) = own.entries.try_borrow_mut() else {
        return;
    };
    let alive = ALIVE.lock().unwrap_or_else(|e| e.into_inner());
    table.retain(|e| alive.contains(&e.pipeline));
    own.last.set((0, std::ptr::null()));
    own.seen_dropped.set(dropped);
}

impl std::fmt::Debug for Lanes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lanes")
            .field("capacity", &self.budget)
            .field("used", &self.used_bytes())
            .field("shared", &self.shared)
            .field("thread_rings", &self.thread_ring_count())
            .field("thread_ring_bytes", &self.thread_ring_bytes)
            .finish()
    }
}

impl Drop for Lanes {
    fn drop(&mut self) {
        if self.max_thread_rings > 0 {
            ALIVE
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|&id| id != self.id);
            DROPPED.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests;
