//! The byte ring between producers and the writer thread.
//!
//! This is the one piece that is hand-rolled on purpose: it is the product's hot path.
//! Its layout is this file's, but for what `spool/` (which lends it a mapped file and
//! recovers from one), `core/` and `lanes.rs` read of it: `HEADER`, `footprint`, `Scan`. `lanes.rs` gives each logging thread a ring of its own and merges them.
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

/// Zeroed words on the heap, aligned to a cache line pair: a ring's storage where it
/// is not mapped (mapping failed, or under miri, which cannot call `madvise`).
///
/// A raw allocation rather than a `Box<[AtomicU64]>`: the ring keeps a raw pointer
/// into it, and moving a `Box` asserts it is the only way to the memory (under
/// miri's aliasing model that would invalidate the ring's pointer).
#[cfg(not(loglag_loom))]
pub(crate) struct HeapWords {
    ptr: NonNull<AtomicU64>,
    layout: std::alloc::Layout,
}

/// Under loom the words are loom's objects, each made by its constructor.
#[cfg(loglag_loom)]
pub(crate) struct HeapWords(Box<[AtomicU64]>);

#[cfg(loglag_loom)]
impl HeapWords {
    pub(crate) fn new(words: usize) -> HeapWords {
        HeapWords((0..words.max(1)).map(|_| AtomicU64::new(0)).collect())
    }

    pub(crate) fn ptr(&self) -> NonNull<AtomicU64> {
        NonNull::new(self.0.as_ptr().cast_mut()).expect("a boxed slice")
    }
}

#[cfg(not(loglag_loom))]
impl HeapWords {
    /// `words` zeroed words (at least one).
    pub(crate) fn new(words: usize) -> HeapWords {
        let layout = std::alloc::Layout::from_size_align(words.max(1) * 8, 128)
            .expect("ring size fits a layout");
        // SAFETY: the layout's size is not zero.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw.cast::<AtomicU64>()) else {
            std::alloc::handle_alloc_error(layout)
        };
        HeapWords { ptr, layout }
    }

    /// The first word; zero bits are a valid `AtomicU64`.
    pub(crate) fn ptr(&self) -> NonNull<AtomicU64> {
        self.ptr
    }
}

#[cfg(not(loglag_loom))]
impl Drop for HeapWords {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout, freed once.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), self.layout) }
    }
}

/// Where the ring's bytes live.
pub(crate) enum Storage {
    Heap(#[allow(dead_code)] HeapWords),
    /// Anonymous memory, with huge pages where the kernel gives them.
    #[cfg_attr(any(miri, loglag_loom), allow(dead_code))]
    Anonymous(#[allow(dead_code)] memmap2::MmapMut),
    /// A memory-mapped spool file, and the file itself, whose lock says the spool is in
    /// use.
    #[cfg_attr(loglag_loom, allow(dead_code))]
    Mapped(memmap2::MmapMut, #[allow(dead_code)] std::fs::File),
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

/// Bytes of an anonymous ring made resident when it is created (Linux): a thread
/// ring of the default size whole, the first part of the shared ring.
#[cfg_attr(any(miri, loglag_loom), allow(dead_code))]
pub(crate) const RESIDENT_AT_START: usize = 256 << 10;

/// How far ahead of the producers the writer keeps a ring's memory resident.
pub(crate) const RESIDENT_AHEAD: u64 = 256 << 10;

/// The most the writer makes resident ahead of the producers at one look, however
/// often they outran it: one `madvise` on the writer's thread, which a ring of a
/// gigabyte must not make its whole lap.
pub(crate) const MOST_RESIDENT_AHEAD: u64 = 16 * RESIDENT_AHEAD;

/// How `Ring::page_ranges` rounds a byte range to pages.
#[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
#[derive(Clone, Copy)]
enum Rounding {
    /// Every page the range touches (advice that changes no byte).
    Outward,
    /// Only pages the range holds whole (advice that drops the bytes).
    Inward,
}

/// The system's page size (4 KiB here; 16 or 64 KiB on some aarch64 kernels), which
/// `madvise` needs its start aligned to.
fn page_size() -> u64 {
    static PAGE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *PAGE.get_or_init(|| {
        #[cfg(all(unix, not(any(miri, loglag_loom))))]
        {
            // SAFETY: `sysconf` has no preconditions.
            let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
            if size > 0 {
                return size as u64;
            }
        }
        4096
    })
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

    /// A ring of at least 64 bytes, rounded down to a multiple of 8, in anonymous
    /// memory (on the heap if mapping fails).
    ///
    /// Memory follows use (Linux): only the first [`RESIDENT_AT_START`] bytes are
    /// touched here, and the writer makes the rest resident ahead of the producers
    /// ([`Ring::keep_resident_ahead`]), so an idle pipeline does not hold its whole
    /// budget (it held 8.4 MiB when the ring was touched whole at start) and a
    /// producer does not meet a page fault on its first lap unless it runs more than
    /// [`RESIDENT_AHEAD`] bytes ahead of a writer that is not running. No huge pages:
    /// one fault would make 2 MiB resident. The tail this once bought (an 8 MiB ring
    /// swept lap after lap made one call in a thousand wait 1.4 µs for a page-table
    /// walk with 4 KiB pages) now comes from the thread rings, 256 KiB each by
    /// default, which stay in the cache and the TLB; the shared ring takes only their
    /// overflow. Elsewhere the ring is touched whole at start, as before.
    ///
    /// Under miri the ring is plain heap memory: miri runs no `mmap`/`madvise`, and
    /// what it checks (the ring's accesses) does not depend on where the bytes live.
    pub(crate) fn new(capacity_bytes: usize) -> Ring {
        let words = (capacity_bytes / 8).max(8);
        let bytes = words * 8;
        #[cfg(not(any(miri, loglag_loom)))]
        if let Ok(mut map) = memmap2::MmapMut::map_anon(bytes) {
            let resident = if cfg!(target_os = "linux") {
                bytes.min(RESIDENT_AT_START)
            } else {
                bytes
            };
            // Also where the system gives huge pages unasked (THP `always`): one
            // first touch would otherwise make 2 MiB resident.
            #[cfg(target_os = "linux")]
            if resident < bytes {
                let _ = map.advise(memmap2::Advice::NoHugePage);
            }
            for page in (0..resident).step_by(4096) {
                map[page] = 0;
            }
            let base = NonNull::new(map.as_mut_ptr() as *mut AtomicU64).expect("mapped");
            let ring = Ring::with_storage(base, bytes as u64, false, 0, Storage::Anonymous(map));
            ring.resident_lo.store(0, Ordering::Relaxed);
            ring.resident_hi.store(
                (resident as u64).next_multiple_of(page_size()),
                Ordering::Relaxed,
            );
            return ring;
        }
        let storage = HeapWords::new(words);
        Ring::with_storage(
            storage.ptr(),
            bytes as u64,
            false,
            0,
            Storage::Heap(storage),
        )
    }

    /// A ring over `capacity` bytes at `base` inside a mapped spool, resuming at `position`.
    ///
    /// # Safety
    /// `base` points to `capacity` bytes (a multiple of 8, 8-aligned) inside `map`, which
    /// nobody else writes while the ring lives; every committed word in it lies before
    /// `position` or is zero.
    pub(crate) unsafe fn mapped(
        base: NonNull<std::sync::atomic::AtomicU64>,
        capacity: u64,
        position: u64,
        map: memmap2::MmapMut,
        file: std::fs::File,
    ) -> Ring {
        #[cfg(loglag_loom)]
        {
            let _ = (base, capacity, position, map, file);
            unreachable!("the loom models use heap rings: a mapping's words are not loom's");
        }
        #[cfg(not(loglag_loom))]
        Ring::with_storage(base, capacity, true, position, Storage::Mapped(map, file))
    }

    fn with_storage(
        base: NonNull<AtomicU64>,
        capacity: u64,
        checksums: bool,
        position: u64,
        storage: Storage,
    ) -> Ring {
        Ring {
            base,
            capacity,
            offset_mask: if capacity.is_power_of_two() {
                capacity - 1
            } else {
                0
            },
            checksums,
            zero_on_release: true,
            head: ProducerLine {
                head: AtomicU64::new(position),
                cached_tail: AtomicU64::new(position),
                evicted: AtomicBool::new(false),
            },
            tail: Padded(AtomicU64::new(position)),
            consume: Mutex::new(()),
            torn: AtomicU64::new(0),
            // Heap words are zeroed by the allocator, a mapped spool is the file's:
            // nothing for the writer to do.
            resident_lo: AtomicU64::new(0),
            resident_hi: AtomicU64::new(u64::MAX),
            resident_ahead: AtomicU64::new(RESIDENT_AHEAD),
            _storage: storage,
        }
    }

    /// Makes the ring's memory resident up to `resident_ahead` bytes past `head` (and
    /// as much again, so that this runs once per that many bytes), on the writer,
    /// with `MADV_POPULATE_WRITE`, which faults the pages in without writing to
    /// them: a producer may be writing there. Once a lap is resident, this is three
    /// loads. Where the kernel lacks the advice (before Linux 5.14), the producers take
    /// the faults, as any first touch.
    ///
    /// Producers found past what was resident (a burst faster than the writer's
    /// looks: in the hot burst the caller took a thousand page faults, a microsecond
    /// each, one call in forty) double the distance ([`RESIDENT_AHEAD`] at first), up
    /// to half a lap or [`MOST_RESIDENT_AHEAD`]: a burst that outruns the writer fills
    /// the ring anyway. A give-back starts it afresh.
    pub(crate) fn keep_resident_ahead(&self) {
        let (lo, hi) = (
            self.resident_lo.load(Ordering::Relaxed),
            self.resident_hi.load(Ordering::Relaxed),
        );
        if hi == u64::MAX || hi - lo >= self.capacity {
            return;
        }
        let head = self.head.head.load(Ordering::Relaxed);
        let mut ahead = self.resident_ahead.load(Ordering::Relaxed);
        if head > hi {
            // (Half a small ring may be less than where the distance starts.)
            let most = (self.capacity / 2).clamp(RESIDENT_AHEAD, MOST_RESIDENT_AHEAD);
            ahead = (ahead * 2).min(most);
            self.resident_ahead.store(ahead, Ordering::Relaxed);
        }
        if head.saturating_add(ahead) <= hi {
            return;
        }
        let to = (head + 2 * ahead).next_multiple_of(page_size());
        // Never more than a lap: past it, every page is resident.
        let lap_start = to.saturating_sub(self.capacity);
        #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
        for (start, end) in self.page_ranges(hi.max(lap_start), to, Rounding::Outward) {
            // SAFETY: `[start, end)` lies in this ring's mapping (whose last page covers
            // a capacity that is no multiple of the page), and the advice changes no
            // byte.
            let populated = unsafe {
                libc::madvise(
                    self.byte_ptr().add(start).cast(),
                    end - start,
                    libc::MADV_POPULATE_WRITE,
                )
            } == 0;
            if !populated {
                // No such advice here: the producers fault pages in themselves.
                self.resident_hi.store(u64::MAX, Ordering::Relaxed);
                return;
            }
        }
        self.resident_lo.store(lo.max(lap_start), Ordering::Relaxed);
        self.resident_hi.store(to, Ordering::Relaxed);
    }

    /// Gives back to the system the memory of about `len` bytes of free space just past
    /// `head`, if the ring is empty with its `head` at `from`; returns the new `head`,
    /// or `None` with nothing done. For the writer of an idle pipeline (when, and how
    /// much: `Core::give_back_idle_memory`), so that a pipeline a burst once filled
    /// holds, idle, what it held at start.
    ///
    /// How it stays out of the producers' way: the chunk is the free space just past
    /// `head`, which the writer reserves with the producers' own compare-and-swap (so
    /// no producer writes there), drops with `MADV_DONTNEED` (whole pages, which read
    /// as zero again: free space in a shared ring is zero already), and releases at
    /// once by moving `tail` past it, as if it were a record popped. Producers that
    /// arrive meanwhile find the budget that much smaller, and no record of theirs is
    /// touched. Only the shared ring of an anonymous mapping (zeroed free space,
    /// producers that reserve by compare-and-swap) whose capacity is whole pages.
    pub(crate) fn give_back(&self, from: u64, len: u64) -> Option<u64> {
        #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
        {
            let page = page_size();
            // (Whether the kernel can populate ahead, `resident_hi`, is another matter:
            // pages dropped here are faulted in by producers there, as any first touch.)
            let anonymous = matches!(self._storage, Storage::Anonymous(_));
            if !self.zero_on_release || !anonymous || self.capacity % page != 0 {
                return None;
            }
            let _consumer = self.consume.lock().unwrap_or_else(|e| e.into_inner());
            let tail = self.tail.0.load(Ordering::Acquire);
            let head = self.head.head.load(Ordering::Acquire);
            if head != tail || head != from {
                return None; // records queued, or reserved, or logged since
            }
            // Chunks end on a page, so that a run of them leaves only its first page
            // cut in two (positions and offsets agree on pages: whole-page capacity).
            let end = (head + len.min(self.capacity)) / page * page;
            if end <= head {
                return None;
            }
            if self
                .head
                .head
                .compare_exchange(head, end, Ordering::AcqRel, Ordering::Relaxed)
                .is_err()
            {
                return None; // a producer got there first
            }
            for (start, stop) in self.page_ranges(head, end, Rounding::Inward) {
                // SAFETY: `[start, stop)` holds whole pages of the reserved chunk, which
                // no producer writes (the CAS above) and no reader reads (it is past
                // every published record); they read back as zero, as free space is.
                unsafe {
                    libc::madvise(
                        self.byte_ptr().add(start).cast(),
                        stop - start,
                        libc::MADV_DONTNEED,
                    );
                }
            }
            // What is still resident past `end`: up to a lap from `head` if every page
            // was, else what was known ahead of `head` (at least nothing). Exact, so
            // that `keep_resident_ahead` does not make the pages about to be given
            // back resident again.
            let (lo, hi) = (
                self.resident_lo.load(Ordering::Relaxed),
                self.resident_hi.load(Ordering::Relaxed),
            );
            if hi != u64::MAX {
                let still = if hi - lo >= self.capacity {
                    head + self.capacity
                } else {
                    hi.min(head + self.capacity)
                };
                self.resident_lo.store(end, Ordering::Relaxed);
                self.resident_hi
                    .store((still / page * page).max(end), Ordering::Relaxed);
            }
            self.resident_ahead.store(RESIDENT_AHEAD, Ordering::Relaxed);
            // Released: producers may reach the chunk again (acquiring this store).
            self.tail.0.store(end, Ordering::Release);
            Some(end)
        }
        #[cfg(not(all(target_os = "linux", not(any(miri, loglag_loom)))))]
        {
            let _ = (from, len);
            None
        }
    }

    /// The byte ranges of the ring that hold positions `[from, to)` (at most a lap),
    /// as one or two ranges (split at the ring's end), rounded to pages: outward
    /// (every page they touch) or inward (only pages they hold whole).
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    fn page_ranges(&self, from: u64, to: u64, rounding: Rounding) -> Vec<(usize, usize)> {
        let page = page_size();
        let len = (to - from).min(self.capacity);
        let start = self.offset(from);
        let first_end = (start + len).min(self.capacity);
        let mut ranges = vec![(start, first_end)];
        if start + len > self.capacity {
            ranges.push((0, start + len - self.capacity));
        }
        let mapped = self.capacity.next_multiple_of(page);
        ranges
            .into_iter()
            .map(|(a, b)| match rounding {
                Rounding::Outward => (a / page * page, b.next_multiple_of(page).min(mapped)),
                Rounding::Inward => (a.next_multiple_of(page), b / page * page),
            })
            .filter(|(a, b)| a < b)
            .map(|(a, b)| (a as usize, b as usize))
            .collect()
    }

    /// Forces a mapped ring to stable storage (msync); nothing for a heap ring.
    pub(crate) fn sync_storage(&self) {
        if let Storage::Mapped(map, _) = &self._storage {
            let _ = map.flush();
        }
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

    /// A ring that only `try_push_owned` will push into (a thread's own ring).
    pub(crate) fn single_producer(capacity_bytes: usize) -> Ring {
        let mut ring = Ring::new(capacity_bytes);
        ring.zero_on_release = false;
        ring
    }
}

mod consume;
pub(crate) mod lanes;
mod push;
mod record;

pub(crate) use record::{checksum, footprint, scan, Scan};

#[cfg(test)]
pub(crate) mod tests;
