//! Where a ring's bytes live and how much of them is resident: heap words (or loom's
//! objects), anonymous memory made resident ahead of the producers and given back
//! behind them (`madvise`), or a spool's mapped file; and the ring's constructors over
//! each.

use super::*;

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
pub(super) enum Rounding {
    /// Every page the range touches (advice that changes no byte).
    Outward,
    /// Only pages the range holds whole (advice that drops the bytes).
    Inward,
}

/// The system's page size (4 KiB here; 16 or 64 KiB on some aarch64 kernels), which
/// `madvise` needs its start aligned to.
pub(super) fn page_size() -> u64 {
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

    pub(super) fn with_storage(
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
    pub(super) fn page_ranges(
        &self,
        from: u64,
        to: u64,
        rounding: Rounding,
    ) -> Vec<(usize, usize)> {
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

    /// A ring that only `try_push_owned` will push into (a thread's own ring).
    pub(crate) fn single_producer(capacity_bytes: usize) -> Ring {
        let mut ring = Ring::new(capacity_bytes);
        ring.zero_on_release = false;
        ring
    }
}
