//! Spool mode: the queue lives in a memory-mapped file, so a record whose log call has
//! returned is in the page cache and survives SIGKILL. The next start (or
//! `loglag recover`) delivers what was not yet written, in order, exactly once for file
//! sinks.
//!
//! File layout: a 4096-byte header, then the ring (see `queue.rs`).
//!
//! | header word | meaning |
//! |---|---|
//! | 0 | magic `LOGLAGSP` |
//! | 1 | layout version |
//! | 2 | ring capacity in bytes |
//! | 3 | tail: every record before this position reached the sink |
//! | 4 | pending end: a batch up to here was being written (0: none) |
//! | 5 | the sink's length before that batch (files only) |
//! | 6 | that batch's length in bytes |
//!
//! Exactly once: before a batch is written the writer records where it ends and how long
//! the sink file was; after the write it advances the tail. If the process dies in
//! between, recovery looks at the sink file: if the whole batch is there it is not
//! written again; if part of it is, the part is cut off and the batch rewritten. Sinks
//! that cannot report a length (pipes, sockets) get the batch again: at least once.
//!
//! Not covered: power loss or a kernel crash without [`SpoolSync`] (the page cache is
//! lost), and corruption of the disk itself beyond what the per-record checksum detects.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::level::Level;
use crate::queue::{self, Ring};
use crate::sink::{write_all_counted, Sink};

const MAGIC: u64 = u64::from_le_bytes(*b"LOGLAGSP");
const VERSION: u64 = 1;
const HEADER_BYTES: u64 = 4096;

/// When the spool (and the sink) are forced to stable storage.
///
/// Without syncing, the spool survives the process being killed (the page cache stays)
/// but not power loss.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum SpoolSync {
    /// Never call msync/fdatasync: survives SIGKILL, not power loss.
    #[default]
    Never,
    /// At most this often, after a batch.
    Every(Duration),
    /// After every batch written.
    EveryFlush,
}

/// What recovery found in a spool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Recovered {
    /// Records written to the sink by recovery.
    pub records: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Regions holding no valid record (torn or partial writes), skipped.
    pub torn: u64,
    /// Records of an interrupted batch that the sink already had, not written again.
    pub already_delivered: u64,
}

/// The header words of an open spool. Points into the mapping the ring owns.
#[derive(Debug)]
pub(crate) struct SpoolHeader {
    words: NonNull<AtomicU64>,
    pub(crate) sync: SpoolSync,
}

// SAFETY: the words are atomics inside a mapping that lives as long as the ring, which
// the same `Core` owns.
unsafe impl Send for SpoolHeader {}
// SAFETY: as above.
unsafe impl Sync for SpoolHeader {}

impl SpoolHeader {
    fn word(&self, i: usize) -> &AtomicU64 {
        // SAFETY: i < 512 words of the 4096-byte header.
        unsafe { &*self.words.as_ptr().add(i) }
    }

    /// Records the batch about to be written.
    pub(crate) fn begin_batch(&self, end: u64, sink_len: Option<u64>, bytes: u64) {
        self.word(5)
            .store(sink_len.unwrap_or(u64::MAX), Ordering::Relaxed);
        self.word(6).store(bytes, Ordering::Relaxed);
        self.word(4).store(end, Ordering::Release);
    }

    /// The batch reached the sink (or was counted as dropped).
    pub(crate) fn end_batch(&self, end: u64) {
        self.word(3).store(end, Ordering::Release);
        self.word(4).store(0, Ordering::Release);
    }
}

fn invalid(path: &Path, why: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {why}", path.display()),
    )
}

/// Opens (or creates) the spool at `path`, delivers whatever a previous process left in
/// it to `sink`, and returns a ring over it, ready for new records.
pub(crate) fn open(
    path: &Path,
    capacity: usize,
    sink: &mut dyn Sink,
    sync: SpoolSync,
) -> io::Result<(Ring, SpoolHeader, Recovered)> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("cannot open spool {}: {e}", path.display()),
            )
        })?;
    // One process per spool: two writers would corrupt each other. The lock goes away
    // with the process, however it ends.
    // SAFETY: flock on a descriptor we own.
    if unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    } != 0
    {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "spool {} is in use by another process ({e}); recover it after that process ends",
                path.display()
            ),
        ));
    }
    let len = file.metadata()?.len();
    let fresh = len == 0;
    let capacity = if fresh {
        ((capacity as u64) / 8).max(8) * 8
    } else {
        read_capacity(&file, path)?
    };
    if fresh {
        file.set_len(HEADER_BYTES + capacity)?;
    } else if len < HEADER_BYTES + capacity {
        return Err(invalid(
            path,
            format!(
                "spool is {len} bytes, shorter than its header says ({})",
                HEADER_BYTES + capacity
            ),
        ));
    }
    // SAFETY: the spool file is ours; the header documents that it must not be shared
    // by two live processes.
    let mut map = unsafe { memmap2::MmapMut::map_mut(&file)? };
    let words = NonNull::new(map.as_mut_ptr() as *mut AtomicU64).expect("mapping is non-null");
    let header = SpoolHeader { words, sync };
    if fresh {
        header.word(0).store(MAGIC, Ordering::Relaxed);
        header.word(1).store(VERSION, Ordering::Relaxed);
        header.word(2).store(capacity, Ordering::Relaxed);
    }
    // SAFETY: the ring area follows the header inside the mapping.
    let ring_base = unsafe { map.as_mut_ptr().add(HEADER_BYTES as usize) };
    let recovered = recover_into(&header, ring_base, capacity, sink)?;
    let position = header.word(3).load(Ordering::Acquire);
    // Start clean: a zeroed ring, so no stale word can look like a committed record.
    // SAFETY: `capacity` bytes of the mapping after the header.
    unsafe { std::ptr::write_bytes(ring_base, 0, capacity as usize) };
    map.flush_async()?;
    let base = NonNull::new(ring_base as *mut AtomicU64).expect("non-null");
    // SAFETY: the ring area is zeroed and belongs to this ring only.
    let ring = unsafe { Ring::mapped(base, capacity, position, map, file) };
    Ok((ring, header, recovered))
}

fn read_capacity(file: &std::fs::File, path: &Path) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 24];
    file.read_exact_at(&mut head, 0)
        .map_err(|e| invalid(path, format!("cannot read spool header: {e}")))?;
    let word = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    if word(0) != MAGIC {
        return Err(invalid(
            path,
            "not a loglag spool (bad magic); refusing to overwrite it",
        ));
    }
    if word(1) != VERSION {
        return Err(invalid(
            path,
            format!(
                "spool layout version {} is not supported (expected {VERSION})",
                word(1)
            ),
        ));
    }
    let capacity = word(2);
    if capacity < 64 || capacity % 8 != 0 || capacity > 1 << 40 {
        return Err(invalid(
            path,
            format!("implausible spool capacity {capacity}"),
        ));
    }
    Ok(capacity)
}

/// Delivers the records after the persisted tail to `sink`, then advances the tail.
fn recover_into(
    header: &SpoolHeader,
    ring_base: *mut u8,
    capacity: u64,
    sink: &mut dyn Sink,
) -> io::Result<Recovered> {
    let tail = header.word(3).load(Ordering::Acquire);
    // SAFETY: nobody else uses the mapping yet.
    let scan = unsafe { queue::scan(ring_base, capacity, tail) };
    let mut recovered = Recovered {
        torn: scan.torn,
        ..Recovered::default()
    };
    let mut records: &[(u64, Level, Vec<u8>)] = &scan.records;
    let pending_end = header.word(4).load(Ordering::Acquire);
    if pending_end != 0 {
        let sink_len_before = header.word(5).load(Ordering::Acquire);
        let batch_bytes = header.word(6).load(Ordering::Acquire);
        let in_batch = records.iter().take_while(|r| r.0 < pending_end).count();
        if let (Some(now), true) = (sink.position(), sink_len_before != u64::MAX) {
            if now >= sink_len_before + batch_bytes {
                recovered.already_delivered = in_batch as u64;
                records = &records[in_batch..];
            } else if now > sink_len_before {
                sink.truncate_to(sink_len_before)?;
            }
        }
    }
    for (_, _, bytes) in records {
        if let (_, Err((e, _))) = write_all_counted(sink, bytes) {
            return Err(io::Error::new(
                e.kind(),
                format!("cannot deliver recovered records: {e}"),
            ));
        }
        recovered.records += 1;
        recovered.bytes += bytes.len() as u64;
    }
    sink.flush()?;
    let _ = sink.sync();
    header.end_batch(scan.end.max(tail));
    Ok(recovered)
}

/// Recovers a spool without the application: writes every record it still holds to
/// `sink`, in order, and marks them delivered. What `loglag recover` runs.
///
/// ```no_run
/// let report = loglag::spool::recover("/var/spool/app.loglag", loglag::sink::FdSink::stdout())?;
/// eprintln!("{} records recovered, {} torn regions skipped", report.records, report.torn);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn recover(path: impl AsRef<Path>, mut sink: impl Sink) -> io::Result<Recovered> {
    let path = path.as_ref();
    if !path.exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no spool at {}", path.display()),
        ));
    }
    let (_ring, _header, recovered) = open(path, 0, &mut sink, SpoolSync::Never)?;
    Ok(recovered)
}
