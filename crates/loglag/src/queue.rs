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

use crate::sync::{fence, AtomicBool, AtomicU64, Mutex, Ordering};

use crate::level::Level;

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
#[cfg(not(loglag_loom))]
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

/// Bytes a record of `len` payload bytes occupies in the ring.
pub(crate) fn footprint(len: usize) -> u64 {
    HEADER + ((len as u64 + 7) & !7)
}

/// A fast, non-cryptographic checksum (word-at-a-time multiply-xor) of a record's
/// position, state word and payload: enough to tell a complete record from a torn one.
pub(crate) fn checksum(pos: u64, state: u64, payload: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut h = (pos ^ K).wrapping_mul(K) ^ state;
    let mut mix = |w: u64| h = (h.rotate_left(23) ^ w).wrapping_mul(K);
    let mut chunks = payload.chunks_exact(8);
    for c in &mut chunks {
        mix(u64::from_le_bytes(c.try_into().expect("8 bytes")));
    }
    let mut last = [0u8; 8];
    last[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
    mix(u64::from_le_bytes(last) ^ payload.len() as u64);
    h
}

impl Ring {
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
    fn reserve<E>(
        &self,
        need: u64,
        limit: u64,
        full: E,
        refuse: impl Fn(u64) -> Option<E>,
    ) -> Result<(u64, u64), E> {
        let limit = limit.min(self.capacity);
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
                crate::sync::spin_loop();
                continue;
            }
            if let Some(refused) = refuse(head) {
                return Err(refused);
            }
            let used_after = used + need;
            if used_after > limit {
                return Err(full);
            }
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
        used > self.capacity || used.saturating_add(need) <= limit.min(self.capacity)
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
        let limit = limit.min(self.capacity);
        let head = self.head.head.load(Ordering::Relaxed);
        let mut tail = self.head.cached_tail.load(Ordering::Relaxed);
        if head + need - tail > limit {
            tail = self.tail.0.load(Ordering::Acquire);
            self.head.cached_tail.store(tail, Ordering::Relaxed);
            if head + need - tail > limit {
                return Err(Full);
            }
        }
        self.prefetch_ahead(head, head + need - tail);
        // SAFETY: only this thread pushes, and `[head, head+need)` lies past `tail`
        // (checked above), so the writer does not read it until `head` moves.
        unsafe { self.write_record(head, level, bytes, now_ns, captured, key) };
        self.head.head.store(head + need, Ordering::Release);
        Ok(head + need - tail)
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
    #[cfg(not(loglag_loom))]
    #[inline]
    pub(crate) fn try_push_owned_in_place(
        &self,
        level: Level,
        len: usize,
        limit: u64,
        fill: impl FnOnce(&mut [u8]) -> Stamps,
    ) -> Result<u64, NotInPlace> {
        if self.head.evicted.load(Ordering::Relaxed) {
            return Err(NotInPlace::CopyInstead);
        }
        let need = footprint(len);
        let limit = limit.min(self.capacity);
        let head = self.head.head.load(Ordering::Relaxed);
        let start = self.offset(head + HEADER) as usize;
        if start + len > self.capacity as usize {
            return Err(NotInPlace::CopyInstead);
        }
        let mut tail = self.head.cached_tail.load(Ordering::Relaxed);
        if head + need - tail > limit {
            // The writer's `tail` is a line it keeps writing (a miss from another
            // core): read once per record, here, and the caller's copying path
            // skips this ring when it says full (the hot burst's common case).
            tail = self.tail.0.load(Ordering::Acquire);
            self.head.cached_tail.store(tail, Ordering::Relaxed);
            if head + need - tail > limit {
                return Err(NotInPlace::Full);
            }
        }
        self.prefetch_ahead(head, head + need - tail);
        // SAFETY: only this thread pushes, `[head, head+need)` lies past `tail`
        // (checked above), so the writer does not read it until `head` moves, and the
        // payload lies inside the ring without wrapping (checked above).
        unsafe { self.write_in_place(head, level, len, fill) };
        self.head.head.store(head + need, Ordering::Release);
        Ok(head + need - tail)
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
    #[cfg(not(loglag_loom))]
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
    unsafe fn write_in_place(
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

    /// Asks for the ring's line `PREFETCH_AHEAD` bytes past the record at `pos`, where
    /// the ring (holding `used_after` bytes with it) has room that far: nearer full,
    /// that line holds the oldest records, which the writer is about to read. The hint
    /// asks for the line to write (`prefetchw`) where the build targets a CPU that has
    /// it (`-C target-cpu=native` here); the default x86-64 target compiles it to a
    /// read prefetch (`prefetcht0`), which measured 0.3 ns slower at p50 and is on
    /// every x86-64.
    #[inline(always)]
    fn prefetch_ahead(&self, pos: u64, used_after: u64) {
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
    unsafe fn write_record(
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
    fn publish(&self, pos: u64, level: Level, bytes: &[u8], now_ns: u64, captured: bool, key: u64) {
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
    fn header_at_tail(&self) -> Option<(u64, u64, u64)> {
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
            crate::sync::spin_loop();
        }
    }

    /// Reserves room for a record of `len` bytes without publishing it: a producer
    /// caught between its compare-and-swap and its release store.
    #[cfg(test)]
    pub(crate) fn reserve_unpublished(&self, len: usize) -> u64 {
        self.head.head.fetch_add(footprint(len), Ordering::AcqRel)
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

    /// Publishes what `reserve_unpublished` reserved at `pos`.
    #[cfg(test)]
    pub(crate) fn publish_reserved(&self, pos: u64, level: Level, bytes: &[u8], key: u64) {
        // SAFETY: `[pos, pos + footprint(len))` was reserved for this record.
        unsafe { self.write_record(pos, level, bytes, 0, false, key) };
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
    unsafe fn write_payload(&self, pos: u64, bytes: &[u8]) {
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
    unsafe fn write_payload_bytes(&self, pos: u64, bytes: &[u8]) {
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
    unsafe fn zero_padding_word(&self, end: usize) {
        if end % 8 != 0 {
            // SAFETY: forwarded from the caller; the word is 8-aligned in the ring.
            unsafe { self.byte_ptr().add(end & !7).cast::<u64>().write(0) };
        }
    }

    /// Zeroes `[from, to)` and releases it to producers (spool mode: records
    /// `pop_into` took without releasing them).
    pub(crate) fn release(&self, from: u64, to: u64) {
        let _guard = self.consume.lock().unwrap_or_else(|e| e.into_inner());
        self.release_held(from, to);
    }

    /// `release` with `consume` held.
    fn release_held(&self, from: u64, to: u64) {
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

    /// A ring that only `try_push_owned` will push into (a thread's own ring).
    pub(crate) fn single_producer(capacity_bytes: usize) -> Ring {
        let mut ring = Ring::new(capacity_bytes);
        ring.zero_on_release = false;
        ring
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
        let fits = |pos: u64| self.head.head.load(Ordering::Acquire) - pos + need <= limit;
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
                    crate::sync::yield_now();
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

/// Stores `bytes` into the first words of `slots` (which has room for them) with
/// relaxed atomic stores, the last word padded with zeroes.
fn store_words(slots: &[AtomicU64], bytes: &[u8]) {
    let mut chunks = bytes.chunks_exact(8);
    for (slot, chunk) in slots.iter().zip(&mut chunks) {
        slot.store(
            u64::from_ne_bytes(chunk.try_into().expect("8 bytes")),
            Ordering::Relaxed,
        );
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut last = [0u8; 8];
        last[..rest.len()].copy_from_slice(rest);
        slots[bytes.len() / 8].store(u64::from_ne_bytes(last), Ordering::Relaxed);
    }
}

/// Scans ring memory left by a previous process: valid records from `from` on, in
/// order, skipping torn ones. Used by spool recovery, on memory nobody else touches.
pub(crate) struct Scan {
    /// Each valid record: (position, level, payload).
    pub(crate) records: Vec<(u64, Level, Vec<u8>)>,
    /// Regions that held no valid record (torn or partial writes), skipped.
    pub(crate) torn: u64,
    /// The position after the last valid record.
    pub(crate) end: u64,
}

/// # Safety
/// `base` points to `capacity` readable, 8-aligned bytes that nobody writes during the
/// scan.
pub(crate) unsafe fn scan(base: *const u8, capacity: u64, from: u64) -> Scan {
    let word = |pos: u64| {
        let index = ((pos % capacity) / 8) as usize;
        // SAFETY: in bounds per the caller's contract.
        unsafe { std::ptr::read_volatile((base as *const u64).add(index)) }
    };
    let payload = |pos: u64, len: usize| {
        let start = (pos % capacity) as usize;
        let first = len.min(capacity as usize - start);
        // SAFETY: in bounds per the caller's contract.
        unsafe {
            let mut v = std::slice::from_raw_parts(base.add(start), first).to_vec();
            v.extend_from_slice(std::slice::from_raw_parts(base, len - first));
            v
        }
    };
    // Bound the work on a corrupt file: checksumming many huge fake records could
    // otherwise take quadratic time.
    let budget = std::cell::Cell::new(4 * capacity + 4096);
    // A record is valid where it says it is, fits in the ring, and checks out.
    let valid_at = |pos: u64| -> Option<(u64, Level, Vec<u8>)> {
        let state = word(pos);
        if state & COMMITTED == 0 || word(pos + 16) != pos {
            return None;
        }
        let len = (state >> 8) as usize;
        if (len as u64) > capacity - HEADER || (len as u64) > budget.get() {
            return None;
        }
        budget.set(budget.get() - len as u64);
        let bytes = payload(pos + HEADER, len);
        (word(pos + 24) == checksum(pos, state, &bytes)).then(|| {
            (
                footprint(len),
                Level::from_index(((state >> 1) & 7) as u8),
                bytes,
            )
        })
    };
    let mut records = Vec::new();
    let mut torn = 0;
    let mut pos = from;
    let mut end = from;
    let limit = from + capacity;
    while pos < limit {
        match valid_at(pos) {
            Some((size, level, bytes)) => {
                records.push((pos, level, bytes));
                pos += size;
                end = pos;
            }
            None => {
                // Resynchronise: the next valid record names its own position, so stale
                // bytes from an older lap (smaller positions) never match.
                match (pos + 8..limit).step_by(8).find(|&q| valid_at(q).is_some()) {
                    Some(q) => {
                        torn += 1;
                        pos = q;
                    }
                    None => break,
                }
            }
        }
    }
    Scan { records, torn, end }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    thread_local! {
        /// What a test does while this thread holds a ring's consumer lock in
        /// `oldest_enqueued_ns` (a signal handler landing there).
        static WHILE_CONSUMING: std::cell::RefCell<Option<Box<dyn FnOnce()>>> =
            const { std::cell::RefCell::new(None) };
    }

    /// Runs `f` (once) the next time this thread holds a ring's consumer lock for a peek.
    pub(crate) fn on_next_consume(f: impl FnOnce() + 'static) {
        WHILE_CONSUMING.with(|w| *w.borrow_mut() = Some(Box::new(f)));
    }

    pub(super) fn while_consuming() {
        if let Some(f) = WHILE_CONSUMING.with(|w| w.borrow_mut().take()) {
            f();
        }
    }

    /// `pop_into` for rings that hold no captured records.
    fn pop(ring: &Ring, out: &mut Vec<u8>, max: usize, each: impl FnMut(Popped)) -> (usize, u64) {
        ring.pop_into(
            out,
            max,
            true,
            &mut Vec::new(),
            &mut |_, _, _| {},
            PopBound::NONE,
            each,
        )
    }

    /// A header that no producer of this process wrote (a forked child writing into a
    /// shared spool mapping with its own copy of the positions) is skipped and counted,
    /// never trusted: its length once made the writer allocate 27 PB and abort.
    #[test]
    fn a_header_no_producer_wrote_is_skipped_not_trusted() {
        let ring = Ring::new(1024);
        ring.try_push(Level::Info, b"good\n", u64::MAX, 0, false, 0)
            .unwrap();
        ring.try_push(Level::Info, b"overwritten\n", u64::MAX, 0, false, 0)
            .unwrap();
        let second = footprint(5);
        ring.word(second)
            .store((0x6363_6363_6363u64 << 8) | COMMITTED, Ordering::Release);
        let mut out = Vec::new();
        let mut seen = Vec::new();
        let (count, end) = pop(&ring, &mut out, 1 << 20, |p| seen.push(p.len));
        assert_eq!((count, out.as_slice()), (1, &b"good\n"[..]));
        assert_eq!(end, ring.head_position(), "the rest is skipped");
        assert_eq!(ring.torn.load(Ordering::Relaxed), 1);
        ring.try_push(Level::Info, b"after\n", u64::MAX, 0, false, 0)
            .unwrap();
        out.clear();
        pop(&ring, &mut out, 1 << 20, |_| {});
        assert_eq!(out, b"after\n", "the ring goes on");
    }

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
            ring.try_push(Level::Info, a.as_bytes(), u64::MAX, 0, false, 0)
                .unwrap();
            ring.try_push(Level::Warn, b.as_bytes(), u64::MAX, 0, false, 0)
                .unwrap();
            out.clear();
            let mut levels = Vec::new();
            assert_eq!(
                pop(&ring, &mut out, usize::MAX, |p| levels.push(p.level)).0,
                2
            );
            assert_eq!(out, [a.as_bytes(), b.as_bytes()].concat());
            assert_eq!(levels, [Level::Info, Level::Warn]);
            assert_eq!(ring.used_bytes(), 0);
        }
    }

    /// The age read from another thread is always the enqueue time of a record that was
    /// pushed, never bytes of a payload that reused the slot. Payloads of 0x01 bytes
    /// read as a committed header with an impossible timestamp.
    #[test]
    fn oldest_age_read_while_the_slot_is_reused_is_a_real_timestamp() {
        use std::sync::atomic::AtomicBool;
        let ring = std::sync::Arc::new(Ring::new(512));
        let done = std::sync::Arc::new(AtomicBool::new(false));
        let sampler = {
            let (ring, done) = (ring.clone(), done.clone());
            std::thread::spawn(move || {
                let mut seen = 0u64;
                while !done.load(Ordering::Relaxed) {
                    if let Some(t) = ring.oldest_enqueued_ns() {
                        assert!((1..=1_000_000).contains(&t), "read a timestamp of {t:#x}");
                        seen += 1;
                    }
                }
                seen
            })
        };
        let payload = [0x01u8; 100];
        let mut out = Vec::new();
        let rounds = if cfg!(miri) { 300 } else { 200_000u64 };
        for i in 0..rounds {
            ring.try_push(Level::Info, &payload, u64::MAX, 1 + i % 1_000_000, false, 0)
                .unwrap();
            out.clear();
            pop(&ring, &mut out, usize::MAX, |_| {});
        }
        done.store(true, Ordering::Relaxed);
        sampler.join().expect("no impossible timestamp");
    }

    #[test]
    fn the_oldest_enqueue_time_is_the_oldest_queued_records() {
        let ring = Ring::new(4096);
        assert_eq!(ring.oldest_enqueued_ns(), None, "empty");
        ring.try_push(Level::Info, b"first\n", u64::MAX, 1_000, false, 0)
            .unwrap();
        ring.try_push(Level::Info, b"second\n", u64::MAX, 2_000, false, 0)
            .unwrap();
        assert_eq!(ring.oldest_enqueued_ns(), Some(1_000));
        let mut out = Vec::new();
        // One record out: the next one is now the oldest.
        pop(&ring, &mut out, 1, |_| {});
        assert_eq!(out, b"first\n");
        assert_eq!(ring.oldest_enqueued_ns(), Some(2_000));
        pop(&ring, &mut out, usize::MAX, |_| {});
        assert_eq!(ring.oldest_enqueued_ns(), None, "drained");
    }

    /// Recovery tells a complete record from a torn one only if any change to what was
    /// checksummed changes the checksum: every single-bit flip in the position, the
    /// state word and each payload byte, and the payload's length. (An `|` or `&` in
    /// place of an `^` keeps the checksum deterministic but blind to some bits: cargo
    /// mutants found no test that noticed.)
    #[test]
    fn every_bit_of_a_record_reaches_its_checksum() {
        let payload: Vec<u8> = (0..21u8).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        let (pos, state) = (0x0123_4567_89ab_cdef_u64, 0x0000_0015_0000_0a05_u64);
        let base = checksum(pos, state, &payload);
        for bit in 0..64 {
            assert_ne!(
                checksum(pos ^ (1 << bit), state, &payload),
                base,
                "pos bit {bit}"
            );
            assert_ne!(
                checksum(pos, state ^ (1 << bit), &payload),
                base,
                "state bit {bit}"
            );
        }
        for byte in 0..payload.len() {
            for bit in 0..8 {
                let mut p = payload.clone();
                p[byte] ^= 1 << bit;
                assert_ne!(
                    checksum(pos, state, &p),
                    base,
                    "payload byte {byte} bit {bit}"
                );
            }
        }
        // A trailing zero byte is still a different record.
        let mut longer = payload.clone();
        longer.push(0);
        assert_ne!(checksum(pos, state, &longer), base);
        assert_ne!(checksum(pos, state, &payload[..20]), base);
    }

    #[test]
    fn full_ring_refuses_and_limit_is_respected() {
        let ring = Ring::new(256);
        let rec = [b'x'; 40]; // 72 bytes of ring each
        assert!(ring.try_push(Level::Info, &rec, 256, 0, false, 0).is_ok());
        assert!(
            ring.try_push(Level::Info, &rec, 100, 0, false, 0).is_err(),
            "limit below capacity"
        );
        assert!(ring.try_push(Level::Info, &rec, 256, 0, false, 0).is_ok());
        assert!(ring.try_push(Level::Info, &rec, 256, 0, false, 0).is_ok());
        assert_eq!(
            ring.try_push(Level::Info, &rec, 256, 0, false, 0),
            Err(Full)
        );
    }

    #[test]
    fn evict_oldest_makes_room_and_reports_victims() {
        let ring = Ring::new(160);
        ring.try_push(Level::Debug, &[1; 40], 160, 0, false, 0)
            .unwrap();
        ring.try_push(Level::Info, &[2; 40], 160, 0, false, 0)
            .unwrap();
        let mut victims = Vec::new();
        assert!(ring.evict_oldest(footprint(40), 160, |p| victims.push(p.level)));
        assert_eq!(victims, [Level::Debug]);
        ring.try_push(Level::Error, &[3; 40], 160, 0, false, 0)
            .unwrap();
        let mut out = Vec::new();
        pop(&ring, &mut out, usize::MAX, |_| {});
        assert_eq!(out, [[2u8; 40], [3u8; 40]].concat());
    }

    /// A producer that evicts (`DropOldest`) moves `tail` under the writer, which
    /// peeks at headers without the lock; the space it frees is then reused. Records
    /// come out whole and in order, and (under miri) no payload write races with the
    /// writer's reads.
    fn evict_against_a_concurrent_pop(single_producer: bool) {
        let ring = std::sync::Arc::new(if single_producer {
            Ring::single_producer(256)
        } else {
            Ring::new(256)
        });
        let records: u32 = if cfg!(miri) { 60 } else { 5_000 };
        let producer = {
            let ring = ring.clone();
            std::thread::spawn(move || {
                for seq in 0..records {
                    let payload = seq.to_le_bytes().repeat(5);
                    let need = footprint(payload.len());
                    loop {
                        let pushed = if single_producer {
                            ring.try_push_owned(Level::Info, &payload, 256, 0, false, seq as u64)
                        } else {
                            ring.try_push(Level::Info, &payload, 256, 0, false, seq as u64)
                        };
                        if pushed.is_ok() {
                            break;
                        }
                        ring.evict_oldest(need, 256, |_| {});
                    }
                }
            })
        };
        let mut last: Option<u32> = None;
        let mut out = Vec::new();
        loop {
            let finished = producer.is_finished();
            if let Oldest::Published(seen) = ring.look_oldest() {
                assert_eq!(seen.len, 20, "a header read as {seen:?}");
            }
            out.clear();
            ring.pop_into(
                &mut out,
                usize::MAX,
                true,
                &mut Vec::new(),
                &mut |_, _, _| {},
                PopBound::NONE,
                |_| {},
            );
            for record in out.chunks(20) {
                let seq = u32::from_le_bytes(record[..4].try_into().unwrap());
                assert_eq!(record, seq.to_le_bytes().repeat(5), "a torn record");
                assert!(last.is_none_or(|last| seq > last), "{seq} after {last:?}");
                last = Some(seq);
            }
            if finished && ring.used_bytes() == 0 {
                break;
            }
            std::thread::yield_now();
        }
        producer.join().unwrap();
    }

    #[test]
    fn eviction_against_a_concurrent_pop_shared_ring() {
        evict_against_a_concurrent_pop(false);
    }

    #[test]
    fn eviction_against_a_concurrent_pop_single_producer_ring() {
        evict_against_a_concurrent_pop(true);
    }

    #[test]
    fn scan_finds_valid_records_and_skips_torn_ones() {
        let storage = HeapWords::new(64);
        let base = storage.ptr();
        let ring = Ring::with_storage(base, 512, true, 0, Storage::Heap(storage));
        for i in 0..5u8 {
            ring.try_push(Level::Info, &[b'a' + i; 20], u64::MAX, 0, false, 0)
                .unwrap();
        }
        // Tear the second record's payload.
        let second = footprint(20);
        ring.word(second + HEADER).store(0xdead, Ordering::Relaxed);
        // SAFETY: the ring is not used concurrently.
        let s = unsafe { scan(base.as_ptr() as *const u8, 512, 0) };
        let firsts: Vec<u8> = s.records.iter().map(|r| r.2[0]).collect();
        assert_eq!(firsts, [b'a', b'c', b'd', b'e']);
        assert_eq!(s.torn, 1);
        assert_eq!(s.end, 5 * footprint(20));
        drop(ring);
    }

    /// Resident pages of a ring's first `bytes`, as the kernel reports them.
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    fn resident_pages(ring: &Ring, bytes: u64) -> Vec<bool> {
        let page = page_size();
        let pages = bytes.div_ceil(page) as usize;
        let mut map = vec![0u8; pages];
        // SAFETY: `[base, base + bytes)` lies in the ring's mapping, which is page
        // aligned; `map` has a byte per page.
        let done =
            unsafe { libc::mincore(ring.byte_ptr().cast(), bytes as usize, map.as_mut_ptr()) };
        assert_eq!(done, 0, "mincore: {}", std::io::Error::last_os_error());
        map.iter().map(|b| b & 1 == 1).collect()
    }

    /// How many of the ring's first `bytes` bytes' pages are resident.
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    fn resident_count(ring: &Ring, bytes: u64) -> u64 {
        resident_pages(ring, bytes).iter().filter(|&&r| r).count() as u64
    }

    /// Under qemu-user (`scripts/test-aarch64` says so), whose `madvise` answers
    /// success and does nothing for residency advice: there only bytes are checked.
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    fn under_qemu_user() -> bool {
        std::env::var("LOGLAG_EMULATOR").is_ok_and(|e| e == "qemu-user")
    }

    /// An 8 MiB ring holds 256 KiB resident when made (an idle pipeline held its whole
    /// budget before), and the writer's `keep_resident_ahead` makes the pages ahead of
    /// the producers resident without changing a byte, and none far beyond them.
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    #[test]
    fn ring_memory_becomes_resident_ahead_of_the_producers() {
        let capacity = 8u64 << 20;
        let page = page_size();
        let ring = Ring::new(capacity as usize);
        let resident = resident_pages(&ring, capacity);
        assert_eq!(
            resident_count(&ring, capacity),
            RESIDENT_AT_START as u64 / page,
            "resident when made"
        );
        assert!(resident[..(RESIDENT_AT_START as u64 / page) as usize]
            .iter()
            .all(|&r| r));

        // Nothing to do while the producers are further than RESIDENT_AHEAD from the
        // end of what is resident.
        ring.keep_resident_ahead();
        assert_eq!(
            resident_count(&ring, capacity),
            RESIDENT_AT_START as u64 / page,
            "not yet needed"
        );

        // Producers 200 KiB in: the writer makes [head, head + 2 × ahead) resident.
        let record = [b'x'; 1000];
        let mut pushed = 0u64;
        while ring.head_position() < 200 << 10 {
            ring.try_push(Level::Info, &record, u64::MAX, 1, false, pushed)
                .unwrap();
            pushed += 1;
        }
        let head = ring.head_position();
        ring.keep_resident_ahead();
        let resident = resident_pages(&ring, capacity);
        let through = (head + 2 * RESIDENT_AHEAD).div_ceil(page);
        if under_qemu_user() {
            eprintln!(
                "SKIPPED under qemu-user: residency ahead of head (madvise is a no-op there)"
            );
        } else {
            assert!(
                resident[..through as usize].iter().all(|&r| r),
                "ahead of head"
            );
        }
        assert!(
            resident[through as usize..].iter().all(|&r| !r),
            "not beyond"
        );

        // The advice changed no byte: every record pops as it was pushed.
        let mut out = Vec::new();
        let mut popped = 0;
        pop(&ring, &mut out, usize::MAX, |p| {
            assert_eq!(p.len, record.len());
            popped += 1;
        });
        assert_eq!(popped, pushed);
        assert!(out.chunks(record.len()).all(|c| c == record));
    }

    /// Producers that ran past what the writer made resident (a burst between two of
    /// its looks) double how far ahead it looks, up to half a lap; producers it kept
    /// ahead of do not.
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    #[test]
    fn a_burst_that_outruns_the_writer_doubles_its_look_ahead() {
        let capacity = 8u64 << 20;
        let page = page_size();
        let ring = Ring::new(capacity as usize);
        let record = [b'y'; 1000];
        let push_to = |ring: &Ring, to: u64| {
            while ring.head_position() < to {
                ring.try_push(Level::Info, &record, u64::MAX, 1, false, 0)
                    .unwrap();
            }
        };
        let resident_hi = |ring: &Ring| ring.resident_hi.load(Ordering::Relaxed);
        let ahead = |ring: &Ring| ring.resident_ahead.load(Ordering::Relaxed);

        // Kept ahead of: the distance stays.
        push_to(&ring, 200 << 10);
        ring.keep_resident_ahead();
        assert_eq!(ahead(&ring), RESIDENT_AHEAD);
        let head = ring.head_position();
        assert_eq!(
            resident_hi(&ring),
            (head + 2 * RESIDENT_AHEAD).next_multiple_of(page)
        );

        // Past what is resident before the writer looked: twice as far, each time.
        let mut expected = RESIDENT_AHEAD;
        for _ in 0..6 {
            push_to(&ring, resident_hi(&ring) + 1);
            ring.keep_resident_ahead();
            expected = (expected * 2).min(capacity / 2).min(MOST_RESIDENT_AHEAD);
            assert_eq!(ahead(&ring), expected, "doubled, up to a cap");
            if resident_hi(&ring) - ring.resident_lo.load(Ordering::Relaxed) >= capacity {
                break; // a lap is resident: nothing is tracked any more
            }
            let head = ring.head_position();
            assert_eq!(
                resident_hi(&ring),
                (head + 2 * expected).next_multiple_of(page),
                "resident through twice the distance past head"
            );
            if !under_qemu_user() {
                let through = (head + 2 * expected).min(capacity).div_ceil(page) as usize;
                assert!(resident_pages(&ring, capacity)[..through]
                    .iter()
                    .all(|&r| r));
            }
            // The writer pops as it goes, so the ring never fills.
            let mut out = Vec::new();
            pop(&ring, &mut out, usize::MAX, |_| {});
        }
        assert!(expected > RESIDENT_AHEAD);
    }

    /// After a burst has made a whole 8 MiB shared ring resident, the writer gives its
    /// memory back a chunk at a time, down to `RESIDENT_AHEAD` past `head`; never
    /// while a record is queued or a producer holds a reservation, nor from a `head`
    /// that has moved. Every record logged after (another lap and a half, over the
    /// pages given back) pops byte for byte, and the writer makes the pages ahead of
    /// the producers resident again.
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    #[test]
    fn an_idle_ring_gives_its_memory_back_and_logs_on_unchanged() {
        let capacity = 8u64 << 20;
        let page = page_size();
        let ring = Ring::new(capacity as usize);
        // A lap and a half, the writer popping and keeping memory resident ahead.
        let lap = |ring: &Ring, laps: f64, seed: u8| {
            let mut sent = Vec::new();
            let mut out = Vec::new();
            let until = ring.head_position() + (capacity as f64 * laps) as u64;
            let mut n = 0u64;
            while ring.head_position() < until {
                let record: Vec<u8> = (0..1 + (n * 37) % 1500)
                    .map(|i| seed.wrapping_add((n + i) as u8))
                    .collect();
                ring.try_push(Level::Info, &record, u64::MAX, 1, false, n)
                    .expect("the writer keeps up");
                sent.extend_from_slice(&record);
                n += 1;
                if n % 64 == 0 {
                    pop(ring, &mut out, usize::MAX, |_| {});
                    ring.keep_resident_ahead();
                }
            }
            pop(ring, &mut out, usize::MAX, |_| {});
            assert_eq!(out, sent, "every record as it was pushed");
        };
        lap(&ring, 1.5, 0);
        let emulated = under_qemu_user();
        if !emulated {
            assert_eq!(
                resident_count(&ring, capacity),
                capacity / page,
                "a lap made it all resident"
            );
        }

        // Not while a record is queued, nor a producer holds a reservation, nor from a
        // `head` that has moved on.
        let chunk = capacity / 8;
        ring.try_push(Level::Info, b"queued", u64::MAX, 1, false, 0)
            .unwrap();
        assert_eq!(ring.give_back(ring.head_position(), chunk), None, "queued");
        pop(&ring, &mut Vec::new(), usize::MAX, |_| {});
        let reserved = ring.reserve_unpublished(8);
        assert_eq!(
            ring.give_back(ring.head_position(), chunk),
            None,
            "reserved"
        );
        ring.publish_reserved(reserved, Level::Info, b"reserved", 1);
        pop(&ring, &mut Vec::new(), usize::MAX, |_| {});
        assert_eq!(
            ring.give_back(ring.head_position() - 8, chunk),
            None,
            "moved on"
        );

        // Idle: chunks go back until all but RESIDENT_AHEAD has.
        let head = ring.head_position();
        let mut at = head;
        while at - head + chunk <= capacity - RESIDENT_AHEAD {
            at = ring.give_back(at, chunk).expect("given back");
        }
        at = ring
            .give_back(at, capacity - RESIDENT_AHEAD - (at - head))
            .expect("the rest");
        assert_eq!(ring.head_position(), at);
        assert_eq!(ring.used_bytes(), 0, "nothing left reserved");
        assert!(
            at - head >= capacity - RESIDENT_AHEAD - page,
            "{}",
            at - head
        );
        // The writer's next look ahead finds the pages past `head` resident already:
        // it makes none of those just given back resident again.
        ring.keep_resident_ahead();
        if !emulated {
            let left = resident_count(&ring, capacity) * page;
            assert!(
                left <= RESIDENT_AHEAD + 2 * page,
                "{left} bytes still resident"
            );
        }

        // Logging on: another lap and a half over the pages given back.
        lap(&ring, 1.5, 100);
        if !emulated {
            let head = ring.head_position();
            let resident = resident_pages(&ring, capacity);
            for pos in (head..head + RESIDENT_AHEAD).step_by(page as usize) {
                assert!(
                    resident[(ring.offset(pos) / page) as usize],
                    "ahead of head"
                );
            }
        }
    }

    /// Producers logging in bursts while the writer pops, keeps memory resident ahead
    /// and gives it back at every idle moment: every record arrives once, whole, and
    /// in its producer's order, whoever wins the race for `head`.
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    #[test]
    fn giving_memory_back_never_touches_a_record() {
        use std::sync::atomic::AtomicUsize;
        let ring = Ring::new(1 << 20);
        let done = AtomicUsize::new(0);
        const PRODUCERS: usize = 2;
        const RECORDS: u64 = 40_000;
        let given_back = std::thread::scope(|scope| {
            for producer in 0..PRODUCERS as u64 {
                let ring = &ring;
                let done = &done;
                scope.spawn(move || {
                    for n in 0..RECORDS {
                        let len = 16 + (n * 13 % 600) as usize;
                        let mut record = vec![(n % 251) as u8; len];
                        record[..8].copy_from_slice(&(producer << 56 | n).to_le_bytes());
                        while ring
                            .try_push(Level::Info, &record, u64::MAX, 1, false, n)
                            .is_err()
                        {
                            std::thread::yield_now();
                        }
                        // Now and then, a pause for the ring to drain.
                        if n % 500 == 499 {
                            while ring.used_bytes() > 0 {
                                std::thread::yield_now();
                            }
                        }
                    }
                    done.fetch_add(1, Ordering::Release);
                });
            }
            let mut next = [0u64; PRODUCERS];
            let mut given_back = 0;
            let mut out = Vec::new();
            let mut lens = Vec::new();
            loop {
                let finished = done.load(Ordering::Acquire) == PRODUCERS;
                out.clear();
                lens.clear();
                pop(&ring, &mut out, usize::MAX, |p| lens.push(p.len));
                let mut at = 0;
                for &len in &lens {
                    let record = &out[at..at + len];
                    at += len;
                    let id = u64::from_le_bytes(record[..8].try_into().unwrap());
                    let (producer, n) = ((id >> 56) as usize, id & ((1 << 56) - 1));
                    assert_eq!(n, next[producer], "producer {producer}: order or loss");
                    assert_eq!(len, 16 + (n * 13 % 600) as usize);
                    assert!(record[8..].iter().all(|&b| b == (n % 251) as u8), "bytes");
                    next[producer] += 1;
                }
                ring.keep_resident_ahead();
                given_back += ring.give_back(ring.head_position(), 256 << 10).is_some() as u32;
                if finished && ring.used_bytes() == 0 {
                    break;
                }
                if lens.is_empty() {
                    std::thread::yield_now();
                }
            }
            assert_eq!(next, [RECORDS; PRODUCERS], "every record");
            given_back
        });
        // How many idle moments came in the middle is up to the scheduler; the last
        // look, with every record popped, always finds one.
        eprintln!("chunks given back while logging: {given_back}");
        assert!(given_back > 0, "memory was given back");
        assert_eq!(ring.used_bytes(), 0);
    }

    /// `page_ranges` splits a run of positions at the ring's end and rounds each part
    /// to pages: outward (every page touched, never past the mapping) or inward (only
    /// whole pages), also for a capacity that is no multiple of the page.
    #[cfg(all(target_os = "linux", not(any(miri, loglag_loom))))]
    #[test]
    fn page_ranges_split_at_the_end_and_round_to_pages() {
        let page = page_size() as usize;
        let ring = Ring::new(16 * page);
        let cap = 16 * page as u64;
        let p = page as u64;
        // Inside, unaligned: outward covers pages 1..=3, inward only page 2.
        assert_eq!(
            ring.page_ranges(p + 5, 3 * p + 5, Rounding::Outward),
            vec![(page, 4 * page)]
        );
        assert_eq!(
            ring.page_ranges(p + 5, 3 * p + 5, Rounding::Inward),
            vec![(2 * page, 3 * page)]
        );
        // Across the end, a lap later: two parts.
        let from = cap + 14 * p + 7;
        assert_eq!(
            ring.page_ranges(from, from + 4 * p, Rounding::Outward),
            vec![(14 * page, 16 * page), (0, 3 * page)]
        );
        assert_eq!(
            ring.page_ranges(from, from + 4 * p, Rounding::Inward),
            vec![(15 * page, 16 * page), (0, 2 * page)]
        );
        // More than a lap is a lap.
        assert_eq!(
            ring.page_ranges(0, 3 * cap, Rounding::Inward),
            vec![(0, 16 * page)]
        );
        // A capacity of 10.5 pages: outward ends at the mapping's last page.
        let odd = Ring::new(10 * page + page / 2);
        let odd_cap = odd.capacity();
        assert_eq!(
            odd.page_ranges(9 * p, odd_cap, Rounding::Outward),
            vec![(9 * page, 11 * page)]
        );
        assert_eq!(
            odd.page_ranges(9 * p, odd_cap, Rounding::Inward),
            vec![(9 * page, 10 * page)]
        );
    }

    /// `has_room` answers what `try_push` would: a record that exactly fits the limit
    /// has room, one byte more has none, and the answer follows `tail` as the writer
    /// releases space; the ring's capacity caps any limit.
    #[cfg(not(loglag_loom))]
    #[test]
    fn has_room_agrees_with_try_push_to_the_byte() {
        let record = [b'r'; 100];
        let need = footprint(record.len());
        for limit in [need, 3 * need, 3 * need + 7, 4096, u64::MAX] {
            let ring = Ring::new(4096);
            loop {
                let room = ring.has_room(need, limit);
                let pushed = ring
                    .try_push(Level::Info, &record, limit, 1, false, 0)
                    .is_ok();
                assert_eq!(room, pushed, "limit {limit}, used {}", ring.used_bytes());
                if !pushed {
                    break;
                }
            }
            let used = ring.used_bytes();
            assert!(used + need > limit.min(4096) && used <= limit.min(4096));
            // One byte short of room, and exactly room (the capacity caps a limit).
            assert!(!ring.has_room(need, used + need - 1));
            assert_eq!(ring.has_room(need, used + need), used + need <= 4096);
            let mut out = Vec::new();
            ring.pop_into(
                &mut out,
                1,
                true,
                &mut Vec::new(),
                &mut |_, _: &[u8], _: &mut Vec<u8>| {},
                PopBound::NONE,
                |_| {},
            );
            assert!(ring.has_room(need, limit), "room after a release");
        }
    }

    /// Records written in place pop as written, around the ring's end too, in a
    /// thread's own ring (`try_push_owned_in_place`) and in the shared ring
    /// (`try_push_in_place`): a payload that would wrap is refused with nothing
    /// written (the caller copies it in instead), and so is one into a ring that
    /// evicted. A ring is said full only when the writer's tail says so, and a try
    /// after the writer made room writes in place though the producer's cached tail
    /// is stale.
    #[cfg(not(loglag_loom))]
    fn records_written_in_place_pop_as_written_and_never_wrap(ring: Ring, shared: bool) {
        // Captured records are "rendered" as their bytes.
        let drain = |ring: &Ring, out: &mut Vec<u8>| {
            ring.pop_into(
                out,
                usize::MAX,
                true,
                &mut Vec::new(),
                &mut |_, captured: &[u8], out: &mut Vec<u8>| out.extend_from_slice(captured),
                PopBound::NONE,
                |_| {},
            );
        };
        let stamps = Stamps {
            merge_key: 0,
            enqueued: 1,
        };
        let in_place = |ring: &Ring, len: usize, fill: &dyn Fn(&mut [u8])| {
            if shared {
                ring.try_push_in_place(Level::Info, len, u64::MAX, &stamps, fill)
            } else {
                ring.try_push_owned_in_place(Level::Info, len, u64::MAX, |dst| {
                    fill(dst);
                    stamps
                })
            }
        };
        let capacity = ring.capacity();
        let (mut out, mut written) = (Vec::new(), Vec::new());
        let (mut refused_at_the_end, mut refused_full) = (0, 0);
        for i in 0..200u32 {
            let len = 1 + (i as usize * 7) % 90;
            let record = vec![b'a' + (i % 26) as u8; len];
            let fill = |dst: &mut [u8]| {
                assert_eq!(dst.len(), len);
                dst.copy_from_slice(&record);
            };
            match in_place(&ring, len, &fill) {
                Ok(_) => {}
                Err(NotInPlace::CopyInstead) => {
                    assert!(
                        ring.offset(ring.head_position() + HEADER) + len as u64 > capacity,
                        "refused only at the ring's end"
                    );
                    refused_at_the_end += 1;
                    // Would wrap: refused even with room, so drain and copy it in.
                    drain(&ring, &mut out);
                    ring.try_push(Level::Info, &record, u64::MAX, 1, true, 0)
                        .expect("fits an empty ring");
                }
                Err(NotInPlace::Full) => {
                    // Full by the writer's tail too: really no room.
                    let need = footprint(len);
                    assert!(ring.used_bytes() + need > capacity, "refused with room");
                    refused_full += 1;
                    // Once the writer has made room, the next try reads its tail
                    // (the cached one still says full) and writes in place.
                    drain(&ring, &mut out);
                    in_place(&ring, len, &fill).expect("in place once drained");
                }
            }
            written.extend_from_slice(&record);
        }
        drain(&ring, &mut out);
        assert!(refused_at_the_end > 0, "the ring's end was reached");
        assert!(refused_full > 0, "the ring was full");
        assert_eq!(out, written);
        assert_eq!(ring.used_bytes(), 0, "nothing left reserved");

        // After an eviction, payloads are atomic words: in place is refused, with
        // room and nowhere near the ring's end.
        let fresh = if shared {
            Ring::new(capacity as usize)
        } else {
            Ring::single_producer(capacity as usize)
        };
        fresh.head.evicted.store(true, Ordering::Relaxed);
        assert_eq!(
            in_place(&fresh, 8, &|_| unreachable!()),
            Err(NotInPlace::CopyInstead)
        );
        assert_eq!(fresh.used_bytes(), 0, "nothing reserved");
    }

    #[cfg(not(loglag_loom))]
    #[test]
    fn records_written_in_place_into_a_thread_ring_pop_as_written() {
        records_written_in_place_pop_as_written_and_never_wrap(Ring::single_producer(1024), false);
    }

    #[cfg(not(loglag_loom))]
    #[test]
    fn records_written_in_place_into_the_shared_ring_pop_as_written() {
        records_written_in_place_pop_as_written_and_never_wrap(Ring::new(1024), true);
    }

    /// Producers writing in place into the shared ring while others copy into it and
    /// the writer pops: every record comes out whole, each producer's in its order,
    /// none lost or written twice (the compare-and-swap reserves for both kinds).
    #[cfg(not(loglag_loom))]
    #[test]
    fn producers_in_place_and_copying_share_a_ring() {
        const PER_PRODUCER: u32 = if cfg!(miri) { 200 } else { 20_000 };
        let ring = Ring::new(4096);
        let record = |producer: u32, i: u32| {
            let len = 8 + (i as usize * 13 + producer as usize) % 60;
            let mut bytes = vec![producer as u8; len];
            bytes[..4].copy_from_slice(&i.to_le_bytes());
            bytes
        };
        std::thread::scope(|s| {
            for producer in 0..3u32 {
                let ring = &ring;
                s.spawn(move || {
                    let stamps = Stamps {
                        merge_key: 0,
                        enqueued: 1,
                    };
                    for i in 0..PER_PRODUCER {
                        let bytes = record(producer, i);
                        loop {
                            let pushed = if producer == 2 {
                                ring.try_push(Level::Info, &bytes, u64::MAX, 1, true, 0)
                                    .map_err(|_| NotInPlace::Full)
                            } else {
                                ring.try_push_in_place(
                                    Level::Info,
                                    bytes.len(),
                                    u64::MAX,
                                    &stamps,
                                    |dst| dst.copy_from_slice(&bytes),
                                )
                            };
                            match pushed {
                                Ok(_) => break,
                                Err(NotInPlace::CopyInstead) => {
                                    if ring
                                        .try_push(Level::Info, &bytes, u64::MAX, 1, true, 0)
                                        .is_ok()
                                    {
                                        break;
                                    }
                                }
                                Err(NotInPlace::Full) => {}
                            }
                            std::thread::yield_now();
                        }
                    }
                });
            }
            let mut next = [0u32; 3];
            let mut out = Vec::new();
            let mut looks_without_a_record = 0u64;
            while next.iter().any(|&n| n < PER_PRODUCER) {
                // A producer that died, or a reservation never published, would
                // otherwise keep this loop looking for good.
                assert!(
                    looks_without_a_record < 10_000_000,
                    "no record in ten million looks: {next:?} of {PER_PRODUCER} each"
                );
                out.clear();
                let mut lens = Vec::new();
                ring.pop_into(
                    &mut out,
                    usize::MAX,
                    true,
                    &mut Vec::new(),
                    &mut |_, captured: &[u8], out: &mut Vec<u8>| {
                        lens.push(captured.len());
                        out.extend_from_slice(captured)
                    },
                    PopBound::NONE,
                    |_| {},
                );
                if lens.is_empty() {
                    looks_without_a_record += 1;
                } else {
                    looks_without_a_record = 0;
                }
                let mut at = 0;
                for len in lens {
                    let bytes = &out[at..at + len];
                    at += len;
                    let producer = bytes[len - 1] as u32;
                    let i = u32::from_le_bytes(bytes[..4].try_into().unwrap());
                    assert_eq!(i, next[producer as usize], "producer {producer}'s order");
                    assert_eq!(bytes, record(producer, i), "record {i} of {producer}");
                    next[producer as usize] += 1;
                }
                std::thread::yield_now();
            }
        });
        assert_eq!(ring.used_bytes(), 0);
    }
}
