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
//! | 7, 8 | the sink file's device and inode (0, 0: not a file) |
//! | 16..36 | drops not yet announced in-band, by reason (4) and level (5) |
//! | 36 | the report format in use, as `Format::index() + 1` (0: not known) |
//! | 40..60 | a live report being written: its counts, by reason and level |
//! | 60 | that report's length in bytes (0: none being written) |
//! | 61 | the sink's length before it (`u64::MAX`: not known) |
//! | 62, 63 | the sink file's device and inode (0, 0: not a file) |
//!
//! Drops survive a crash as a count: every drop is added to words 16..36 as it is
//! counted, and subtracted once the writer's in-band report of it is in the sink. A
//! live report is journaled like a batch (words 40..64) before it is written, so a kill
//! right after its `write(2)` (where SIGKILL is most often delivered) does not announce
//! it twice: recovery subtracts it if the same file holds it. Recovery then writes one
//! report for what is left, in the report format of word 36, after the recovered
//! records, and clears the words. Into a sink that cannot tell its length, a report
//! interrupted by the kill is announced again (at least once, never less).
//!
//! Exactly once: before a batch is written the writer records where it ends, which file
//! it goes to and how long that file was; after the write it advances the tail. If the
//! process dies in between, recovery looks at the sink: if it is the same file (same
//! device and inode) and the whole batch is there, the batch is not written again; if
//! part of it is, the part is cut off and the batch rewritten. Any other sink (a pipe,
//! a socket, a different file) gets the batch again: at least once, with a warning.
//! Recovery journals itself the same way, a chunk at a time, so a recovery that is
//! itself killed resumes exactly once.
//!
//! The header is validated before anything is trusted (magic, version, a capacity of at
//! most [`MAX_CAPACITY`], an aligned tail far from wrapping, a pending batch inside the
//! ring); a spool that fails is refused as corrupt. Spools are created `0600` without
//! following symlinks, and one owned by another user or readable by others is refused,
//! as is, at once and without waiting on it, a path that is no regular file (a FIFO, a
//! directory, a socket, a device).
//!
//! A pipeline allocates its spool's every block when it opens it (a hole written
//! through the mapping on a full disk would be SIGBUS); recovery alone allocates
//! nothing, so recovering a sparse spool leaves its holes.
//!
//! Not covered: power loss or a kernel crash without [`SpoolSync`] (the page cache is
//! lost), and corruption of the disk itself beyond what the per-record checksum detects.

use std::fs::OpenOptions;
use std::io;
use std::path::Path;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crate::ledger::{DropLedger, PENDING_REPORT, REPORT_FORMAT};
use crate::level::Level;
use crate::queue::{self, Ring};
use crate::sink::{call_sink, write_all_counted, Sink};

const MAGIC: u64 = u64::from_le_bytes(*b"LOGLAGSP");
const VERSION: u64 = 1;
const HEADER_BYTES: u64 = 4096;
/// The largest ring a spool may hold (4 GiB). A header claiming more is corrupt.
pub const MAX_CAPACITY: u64 = 4 << 30;
/// Recovery delivers and journals at most this many bytes at a time.
const RECOVERY_CHUNK: usize = 64 << 10;

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
    /// Bytes of a partly written batch cut from the end of the sink file before the
    /// batch was written again.
    pub cut_bytes: u64,
    /// An interrupted batch went to a different sink than the one recovering (or one
    /// that cannot tell its length): it was delivered again, at least once.
    pub at_least_once: bool,
    /// Records the previous process dropped (by its overflow policy, a failing sink…)
    /// and had not yet announced in-band when it ended. Recovery announced them in the
    /// sink, in one report after the recovered records.
    pub unannounced_drops: u64,
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
    /// The header's drop ledger, for the counters of the pipeline that owns the spool.
    pub(crate) fn ledger(&self) -> DropLedger {
        // SAFETY: the header outlives the `Core` that holds both it and the ledger.
        unsafe { DropLedger::new(self.words) }
    }

    fn word(&self, i: usize) -> &AtomicU64 {
        // SAFETY: i < 512 words of the 4096-byte header.
        unsafe { &*self.words.as_ptr().add(i) }
    }

    /// Records the batch about to be written, and the file it goes to.
    pub(crate) fn begin_batch(
        &self,
        end: u64,
        sink_len: Option<u64>,
        sink_identity: Option<(u64, u64)>,
        bytes: u64,
    ) {
        let (dev, ino) = sink_identity.unwrap_or((0, 0));
        self.word(5)
            .store(sink_len.unwrap_or(u64::MAX), Ordering::Relaxed);
        self.word(6).store(bytes, Ordering::Relaxed);
        self.word(7).store(dev, Ordering::Relaxed);
        self.word(8).store(ino, Ordering::Relaxed);
        self.word(4).store(end, Ordering::Release);
    }

    /// The batch reached the sink (or was counted as dropped).
    pub(crate) fn end_batch(&self, end: u64) {
        self.word(3).store(end, Ordering::Release);
        self.word(4).store(0, Ordering::Release);
    }
}

/// Why a spool could not be opened or recovered. It travels inside the `io::Error`
/// that [`recover`] and `NonBlockingBuilder::try_finish_sink` return; get it back with
/// [`SpoolError::of`] to tell the cases apart without matching on text.
/// `NonBlockingBuilder::try_finish_sink` returns it as [`crate::FinishError::Spool`].
#[derive(Debug, Clone)]
pub struct SpoolError {
    pub path: std::path::PathBuf,
    pub kind: SpoolErrorKind,
    message: String,
}

/// The kinds of [`SpoolError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SpoolErrorKind {
    /// Another live process holds the spool (it is `flock`ed).
    InUse,
    /// The file is empty, or is not a loglag spool at all.
    NotASpool,
    /// A spool from a loglag with another layout version.
    Version,
    /// A spool whose header or records contradict themselves.
    Corrupt,
    /// Owned by another user, readable by others, or not a regular file.
    Permissions,
}

impl SpoolError {
    /// The `SpoolError` inside an `io::Error`, if that is what it carries.
    pub fn of(e: &io::Error) -> Option<&SpoolError> {
        e.get_ref()
            .and_then(|inner| inner.downcast_ref::<SpoolError>())
    }
}

impl std::fmt::Display for SpoolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for SpoolError {}

impl From<SpoolError> for io::Error {
    fn from(e: SpoolError) -> io::Error {
        let io_kind = match e.kind {
            SpoolErrorKind::InUse => io::ErrorKind::WouldBlock,
            SpoolErrorKind::Permissions => io::ErrorKind::PermissionDenied,
            _ => io::ErrorKind::InvalidData,
        };
        io::Error::new(io_kind, e)
    }
}

fn spool_error(path: &Path, kind: SpoolErrorKind, message: String) -> io::Error {
    SpoolError {
        path: path.to_owned(),
        kind,
        message,
    }
    .into()
}

fn invalid(path: &Path, kind: SpoolErrorKind, why: impl std::fmt::Display) -> io::Error {
    spool_error(path, kind, format!("{}: {why}", path.display()))
}

/// Opens (or creates) the spool at `path`, delivers whatever a previous process left in
/// it to `sink`, and returns a ring over it, ready for new records.
pub(crate) fn open(
    path: &Path,
    capacity: usize,
    sink: &mut dyn Sink,
    sync: SpoolSync,
) -> io::Result<(Ring, SpoolHeader, Recovered)> {
    open_with(path, Some(capacity), sink, sync)
}

/// `create`: the capacity of a new spool; `None` only opens an existing one.
fn open_with(
    path: &Path,
    create: Option<usize>,
    sink: &mut dyn Sink,
    sync: SpoolSync,
) -> io::Result<(Ring, SpoolHeader, Recovered)> {
    let (file, len) = open_locked(
        path,
        Access::Write {
            create: create.is_some(),
        },
    )?;
    let fresh = len == 0;
    let capacity = match (fresh, create) {
        (true, Some(capacity)) => {
            let capacity = new_capacity(capacity)?;
            check_ownership(&file, path)?;
            capacity
        }
        (true, None) => return Err(empty_spool(path)),
        (false, _) => existing_capacity(&file, path, len)?,
    };
    // A pipeline allocates every block now: a mapped file that cannot get a block later
    // kills the process with SIGBUS on a full disk. An error here is an ordinary error.
    // Recovery alone does not: it writes only the header and the words of the records
    // it finds, which are in blocks the file already has, so a sparse spool (copied
    // with its holes, or from a file system without fallocate) keeps its holes rather
    // than filling up to its full capacity on disk.
    if create.is_some() {
        allocate(&file, HEADER_BYTES + capacity).map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "cannot allocate {} bytes for spool {}: {e}",
                    HEADER_BYTES + capacity,
                    path.display()
                ),
            )
        })?;
    }
    // SAFETY: the spool file is ours (flocked); the header documents that it must not
    // be shared by two live processes.
    let mut map = unsafe { memmap2::MmapMut::map_mut(&file)? };
    let words = NonNull::new(map.as_mut_ptr() as *mut AtomicU64).expect("mapping is non-null");
    let header = SpoolHeader { words, sync };
    if fresh {
        header.word(0).store(MAGIC, Ordering::Relaxed);
        header.word(1).store(VERSION, Ordering::Relaxed);
        header.word(2).store(capacity, Ordering::Relaxed);
    }
    validate_positions(&header, capacity)
        .map_err(|why| invalid(path, SpoolErrorKind::Corrupt, why))?;
    // SAFETY: the ring area follows the header inside the mapping.
    let ring_base = unsafe { map.as_mut_ptr().add(HEADER_BYTES as usize) };
    let recovered = recover_into(&header, ring_base, capacity, sink, path)?;
    let position = header.word(3).load(Ordering::Acquire);
    // Start clean: a zeroed ring, so no stale word can look like a committed record.
    // Only words that are not zero are written: a fresh or already clean spool costs
    // reads, not a write of the whole file.
    // SAFETY: `capacity` bytes of the mapping after the header, 8-aligned (page + 4096).
    let ring_words =
        unsafe { std::slice::from_raw_parts_mut(ring_base as *mut u64, (capacity / 8) as usize) };
    for w in ring_words.iter_mut().filter(|w| **w != 0) {
        *w = 0;
    }
    map.flush_async()?;
    let base = NonNull::new(ring_base as *mut AtomicU64).expect("non-null");
    // SAFETY: the ring area is zeroed and belongs to this ring only.
    let ring = unsafe { Ring::mapped(base, capacity, position, map, file) };
    Ok((ring, header, recovered))
}

/// The ring capacity of a new spool asked for `requested` bytes: whole 8-byte words,
/// at least one, at most [`MAX_CAPACITY`].
fn new_capacity(requested: usize) -> io::Result<u64> {
    let capacity = ((requested as u64) / 8).max(8) * 8;
    if capacity > MAX_CAPACITY {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("spool capacity {capacity} bytes is above the maximum of {MAX_CAPACITY}"),
        ));
    }
    Ok(capacity)
}

/// Refuses a spool owned by someone else or open to other users.
fn check_ownership(file: &std::fs::File, path: &Path) -> io::Result<()> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(invalid(
            path,
            SpoolErrorKind::Permissions,
            "a spool must be a regular file",
        ));
    }
    // SAFETY: geteuid cannot fail.
    let me = unsafe { libc::geteuid() };
    if meta.uid() != me {
        return Err(spool_error(
            path,
            SpoolErrorKind::Permissions,
            format!(
                "spool {} is owned by uid {}, not by this user (uid {me}); refusing to trust it. Recover it as its owner, or `chown` it",
                path.display(),
                meta.uid()
            ),
        ));
    }
    let mode = meta.mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(spool_error(
            path,
            SpoolErrorKind::Permissions,
            format!(
                "spool {} has mode {mode:04o}: other users can read the queued records. Run `chmod 600 {}`",
                path.display(),
                path.display()
            ),
        ));
    }
    Ok(())
}

/// Reserves the file's blocks (`posix_fallocate`), growing it to `len` if shorter.
fn allocate(file: &std::fs::File, len: u64) -> io::Result<()> {
    let len = libc::off_t::try_from(len)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "spool too large"))?;
    // SAFETY: fallocate on a descriptor we own.
    let rc = unsafe { libc::posix_fallocate(std::os::fd::AsRawFd::as_raw_fd(file), 0, len) };
    match rc {
        0 => Ok(()),
        // A file system without fallocate: fall back to a sparse file (and SIGBUS risk).
        libc::EOPNOTSUPP | libc::EINVAL => file.set_len(len as u64),
        e => Err(io::Error::from_raw_os_error(e)),
    }
}

fn read_capacity(file: &std::fs::File, path: &Path) -> io::Result<u64> {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 24];
    file.read_exact_at(&mut head, 0).map_err(|e| {
        invalid(
            path,
            SpoolErrorKind::NotASpool,
            format!("not a loglag spool (cannot read a spool header: {e})"),
        )
    })?;
    let word = |i: usize| u64::from_le_bytes(head[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    if word(0) != MAGIC {
        return Err(invalid(
            path,
            SpoolErrorKind::NotASpool,
            "not a loglag spool (bad magic); refusing to overwrite it",
        ));
    }
    if word(1) != VERSION {
        return Err(invalid(
            path,
            SpoolErrorKind::Version,
            format!(
                "spool layout version {} is not supported (expected {VERSION})",
                word(1)
            ),
        ));
    }
    let capacity = word(2);
    if capacity < 64 || capacity % 8 != 0 || capacity > MAX_CAPACITY {
        return Err(invalid(
            path,
            SpoolErrorKind::Corrupt,
            format!("corrupt spool: implausible capacity {capacity}"),
        ));
    }
    Ok(capacity)
}

/// Checks the header's positions before anything trusts them. Returns why not.
fn validate_positions(header: &SpoolHeader, capacity: u64) -> Result<(), String> {
    let tail = header.word(3).load(Ordering::Acquire);
    let pending_end = header.word(4).load(Ordering::Acquire);
    let batch_bytes = header.word(6).load(Ordering::Acquire);
    if tail % 8 != 0 {
        return Err(format!("corrupt spool: unaligned tail {tail}"));
    }
    // Positions only grow; leave room for many laps before u64 could wrap.
    if tail > u64::MAX - 16 * capacity {
        return Err(format!(
            "corrupt spool: tail {tail} is too close to wrapping around"
        ));
    }
    if pending_end != 0 {
        if pending_end % 8 != 0 || pending_end <= tail || pending_end - tail > capacity {
            return Err(format!(
                "corrupt spool: a pending batch ends at {pending_end}, outside the ring after tail {tail}"
            ));
        }
        if batch_bytes > capacity {
            return Err(format!(
                "corrupt spool: a pending batch of {batch_bytes} bytes is larger than the ring"
            ));
        }
    }
    Ok(())
}

/// Delivers the records after the persisted tail to `sink`, then advances the tail.
/// Journals its own progress chunk by chunk, with the writer's protocol, so being killed
/// part-way loses and repeats nothing for the same file.
fn recover_into(
    header: &SpoolHeader,
    ring_base: *mut u8,
    capacity: u64,
    sink: &mut dyn Sink,
    path: &Path,
) -> io::Result<Recovered> {
    settle_pending_report(header, sink);
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
        let recorded = (
            header.word(7).load(Ordering::Acquire),
            header.word(8).load(Ordering::Acquire),
        );
        let in_batch = records.iter().take_while(|r| r.0 < pending_end).count();
        let (position, identity) = crate::sink::place(sink);
        let same_file = recorded != (0, 0) && identity == Some(recorded);
        match (
            same_file,
            position,
            sink_len_before.checked_add(batch_bytes),
        ) {
            (true, Some(now), Some(batch_end)) if sink_len_before != u64::MAX => {
                if now >= batch_end {
                    recovered.already_delivered = in_batch as u64;
                    records = &records[in_batch..];
                    header.end_batch(pending_end);
                } else if now > sink_len_before {
                    call_sink(|| sink.truncate_to(sink_len_before))?;
                    recovered.cut_bytes = now - sink_len_before;
                }
            }
            _ => {
                recovered.at_least_once = true;
                eprintln!(
                    "loglag: spool {}: a batch of {in_batch} records was being written when the process ended, to a sink other than this one (or one that cannot tell its length); delivering it again (at least once)",
                    path.display()
                );
            }
        }
    }
    let mut delivered_to = tail;
    while !records.is_empty() {
        let mut bytes = 0;
        let take = records
            .iter()
            .take_while(|r| {
                let fits = bytes == 0 || bytes + r.2.len() <= RECOVERY_CHUNK;
                bytes += r.2.len();
                fits
            })
            .count()
            .max(1);
        let (chunk, rest) = records.split_at(take);
        let last = chunk.last().expect("a chunk has a record");
        let end = last.0 + queue::footprint(last.2.len());
        let chunk_bytes: u64 = chunk.iter().map(|r| r.2.len() as u64).sum();
        call_sink(|| sink.before_batch(chunk_bytes as usize))?;
        let (position, identity) = crate::sink::place(sink);
        header.begin_batch(end, position, identity, chunk_bytes);
        for (_, _, bytes) in chunk {
            if let (_, Err((e, _))) = write_all_counted(sink, bytes) {
                return Err(io::Error::new(
                    e.kind(),
                    format!(
                        "cannot deliver recovered records from {}: {e}; run recovery again to resume",
                        path.display()
                    ),
                ));
            }
            recovered.records += 1;
            recovered.bytes += bytes.len() as u64;
        }
        call_sink(|| sink.flush())?;
        header.end_batch(end);
        delivered_to = end;
        records = rest;
    }
    announce_unannounced(header, sink, &mut recovered)?;
    call_sink(|| sink.flush())?;
    let _ = call_sink(|| sink.sync());
    header.end_batch(scan.end.max(tail).max(delivered_to));
    Ok(recovered)
}

/// Settles a live report the killed process was writing: in this very file, whole, it
/// announced its counts already. Before recovery writes anything, so that only the
/// report itself can account for the file's length past where it began.
fn settle_pending_report(header: &SpoolHeader, sink: &mut dyn Sink) {
    let ledger = header.ledger();
    let pending_len = ledger.at(PENDING_REPORT + 20).load(Ordering::Acquire);
    if pending_len == 0 {
        return;
    }
    let before = ledger.at(PENDING_REPORT + 21).load(Ordering::Acquire);
    let recorded = (
        ledger.at(PENDING_REPORT + 22).load(Ordering::Acquire),
        ledger.at(PENDING_REPORT + 23).load(Ordering::Acquire),
    );
    let (position, identity) = crate::sink::place(sink);
    let landed = before != u64::MAX
        && recorded != (0, 0)
        && identity == Some(recorded)
        && position.is_some_and(|now| now >= before.saturating_add(pending_len));
    ledger.end_report(landed);
}

/// Writes one in-band report of the drops the previous process had not announced, in
/// its report format, then clears them.
fn announce_unannounced(
    header: &SpoolHeader,
    sink: &mut dyn Sink,
    recovered: &mut Recovered,
) -> io::Result<()> {
    use crate::format::Format;
    let ledger = header.ledger();
    let by_reason: [u64; 4] = std::array::from_fn(|r| {
        (0..5)
            .map(|l| ledger.word(r, l).load(Ordering::Acquire))
            .sum()
    });
    let total: u64 = by_reason.iter().sum();
    if total == 0 {
        return Ok(());
    }
    let format = match header.word(REPORT_FORMAT).load(Ordering::Acquire) {
        0 => Format::Compact,
        n => Format::from_index((n - 1) as u8),
    };
    let line = crate::metrics::drop_report_line(
        format,
        by_reason,
        "before the previous process ended, announced at recovery",
    );
    call_sink(|| sink.before_batch(line.len()))?;
    if let (_, Err((e, _))) = write_all_counted(sink, &line) {
        return Err(e);
    }
    for r in 0..4 {
        for l in 0..5 {
            ledger.word(r, l).store(0, Ordering::Release);
        }
    }
    recovered.unannounced_drops = total;
    Ok(())
}

/// Recovers a spool without the application: writes every record it still holds to
/// `sink`, in order, and marks them delivered. What `loglag recover` runs.
///
/// ```no_run
/// let report = loglag::spool::recover("/var/spool/app.loglag", loglag::sink::FdSink::stdout())?;
/// eprintln!("{} records recovered, {} torn regions skipped", report.records, report.torn);
/// # Ok::<(), std::io::Error>(())
/// ```
pub fn recover(path: impl AsRef<Path>, sink: impl Sink) -> io::Result<Recovered> {
    recover_opening(path, || Ok(sink))
}

/// [`recover`], with the sink opened only once the spool has been found valid (so that
/// recovering a path that is no spool creates no empty output file), and refused when
/// the sink is the spool file itself.
pub fn recover_opening<S: Sink>(
    path: impl AsRef<Path>,
    open_sink: impl FnOnce() -> io::Result<S>,
) -> io::Result<Recovered> {
    use std::os::unix::fs::MetadataExt;
    let path = path.as_ref();
    if !path.exists() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("no spool at {}", path.display()),
        ));
    }
    let spool = check(path)?;
    let mut sink = open_sink()?;
    if sink.identity() == Some((spool.dev(), spool.ino())) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "the output is the spool {} itself; recover into another file",
                path.display()
            ),
        ));
    }
    let (_ring, _header, recovered) = open_with(path, None, &mut sink, SpoolSync::Never)?;
    Ok(recovered)
}

/// Checks, read-only, that `path` is a spool no live process holds, whose header
/// and length agree. Returns its metadata.
fn check(path: &Path) -> io::Result<std::fs::Metadata> {
    let (file, len) = open_locked(path, Access::Look)?;
    if len == 0 {
        return Err(empty_spool(path));
    }
    existing_capacity(&file, path, len)?;
    file.metadata()
}

/// How a spool file is opened: to write it (one process at a time), or to look.
#[derive(Clone, Copy)]
enum Access {
    Write { create: bool },
    Look,
}

/// Opens the spool (never through a symlink; created `0600`: it holds every queued
/// record, secrets included) and locks it: exclusively to write it, shared to look, so
/// that a live writer makes either fail. The lock goes with the process, however it
/// ends. Returns the file and its length.
fn open_locked(path: &Path, access: Access) -> io::Result<(std::fs::File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let (write, create, lock) = match access {
        Access::Write { create } => (true, create, libc::LOCK_EX),
        Access::Look => (false, false, libc::LOCK_SH),
    };
    // What is no regular file is refused before it is opened: opening a FIFO for
    // reading waits for a writer, and opening a device can act on it. A symlink is
    // left to O_NOFOLLOW below, which says so.
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.is_file() && !meta.file_type().is_symlink() {
            return Err(not_a_regular_file(path, &meta));
        }
    }
    // O_NONBLOCK: should the path become a FIFO after that look, the open returns at
    // once rather than waiting for a writer, and what was opened is checked again.
    let file = OpenOptions::new()
        .read(true)
        .write(write)
        .create(create)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| {
            let hint = if e.raw_os_error() == Some(libc::ELOOP) {
                " (it is a symlink; a spool must be a regular file)"
            } else {
                ""
            };
            io::Error::new(
                e.kind(),
                format!("cannot open spool {}: {e}{hint}", path.display()),
            )
        })?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(not_a_regular_file(path, &meta));
    }
    // A regular file, so O_NONBLOCK changes nothing; cleared all the same, so that the
    // descriptor is the ordinary one the rest of the code expects.
    let fd = std::os::fd::AsRawFd::as_raw_fd(&file);
    // SAFETY: fcntl on a descriptor we own.
    let cleared = unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        flags != -1 && libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) != -1
    };
    if !cleared {
        return Err(io::Error::last_os_error());
    }
    // A lock this process released a moment ago can still be held by a child another
    // thread forked in between, until that child calls exec (its copy of the
    // descriptor is close-on-exec, and a flock belongs to the shared open file): a
    // multi-threaded program that spawns processes sees this. So a held lock is
    // retried for up to ~250 ms before the spool is called in use.
    let try_lock = || {
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), lock | libc::LOCK_NB) }
    };
    let mut pause = Duration::from_millis(1);
    let mut locked = try_lock() == 0;
    while !locked && pause <= Duration::from_millis(128) {
        std::thread::sleep(pause);
        pause *= 2;
        locked = try_lock() == 0;
    }
    if !locked {
        let e = io::Error::last_os_error();
        return Err(spool_error(
            path,
            SpoolErrorKind::InUse,
            format!(
                "spool {} is in use by another process ({e}); recover it after that process ends",
                path.display()
            ),
        ));
    }
    // The length once locked: another process may have created the spool meanwhile.
    let len = file.metadata()?.len();
    Ok((file, len))
}

/// The refusal of a path that is no regular file, saying what it is.
fn not_a_regular_file(path: &Path, meta: &std::fs::Metadata) -> io::Error {
    use std::os::unix::fs::FileTypeExt;
    let t = meta.file_type();
    let what = if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO (named pipe)"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else if t.is_symlink() {
        "a symlink"
    } else {
        "of an unknown kind"
    };
    invalid(
        path,
        SpoolErrorKind::Permissions,
        format!("{what}, not a regular file; a spool must be a regular file"),
    )
}

fn empty_spool(path: &Path) -> io::Error {
    invalid(
        path,
        SpoolErrorKind::NotASpool,
        "not a loglag spool (the file is empty); nothing to recover",
    )
}

/// The ring capacity of an existing spool of `len` bytes, once its header, owner and
/// length agree. The header first, so that a file that is no spool at all says so.
fn existing_capacity(file: &std::fs::File, path: &Path, len: u64) -> io::Result<u64> {
    let capacity = read_capacity(file, path)?;
    check_ownership(file, path)?;
    if len < HEADER_BYTES + capacity {
        return Err(invalid(
            path,
            SpoolErrorKind::Corrupt,
            format!(
                "spool is {len} bytes, shorter than its header says ({})",
                HEADER_BYTES + capacity
            ),
        ));
    }
    Ok(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::FdSink;
    use std::io::Write;
    use std::path::PathBuf;

    const RECORDS: usize = 40;
    const CAPACITY: usize = 1 << 16;

    fn record(i: usize) -> Vec<u8> {
        format!("record {i:03}\n").into_bytes()
    }

    /// Leaves a spool as a process killed mid-batch would: `RECORDS` queued records, the
    /// first `in_batch` of them in a batch to `sink_path` that had written `written` of
    /// its bytes when the process died. Returns the spool's path.
    fn crashed_spool(dir: &Path, sink_path: &Path, in_batch: usize, written: usize) -> PathBuf {
        crashed_spool_at(dir, sink_path, 0, in_batch, written)
    }

    /// [`crashed_spool`] whose ring had already carried `start` bytes (laps) before.
    fn crashed_spool_at(
        dir: &Path,
        sink_path: &Path,
        start: u64,
        in_batch: usize,
        written: usize,
    ) -> PathBuf {
        let spool = dir.join("app.spool");
        let mut sink = FdSink::append(sink_path).unwrap();
        if start > 0 {
            drop(open(&spool, CAPACITY, &mut sink, SpoolSync::Never).unwrap());
            set_word(&spool, 3, start);
        }
        let (ring, header, _) = open(&spool, CAPACITY, &mut sink, SpoolSync::Never).unwrap();
        assert_eq!(ring.tail_position(), start);
        for i in 0..RECORDS {
            ring.try_push(Level::Info, &record(i), u64::MAX, 0, false, 0)
                .unwrap();
        }
        let batch: Vec<u8> = (0..in_batch).flat_map(record).collect();
        let end = start
            + (0..in_batch)
                .map(|i| queue::footprint(record(i).len()))
                .sum::<u64>();
        header.begin_batch(end, sink.position(), sink.identity(), batch.len() as u64);
        std::fs::OpenOptions::new()
            .append(true)
            .open(sink_path)
            .unwrap()
            .write_all(&batch[..written])
            .unwrap();
        spool
    }

    fn expected(prefix: &str) -> String {
        let all: String = (0..RECORDS)
            .map(|i| String::from_utf8(record(i)).unwrap())
            .collect();
        format!("{prefix}{all}")
    }

    #[test]
    fn a_whole_interrupted_batch_is_not_written_again() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        std::fs::write(&log, "before\n").unwrap();
        let batch_len = (0..10).map(|i| record(i).len()).sum();
        let spool = crashed_spool(dir.path(), &log, 10, batch_len);
        let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
        assert_eq!(r.already_delivered, 10);
        assert_eq!(r.records, (RECORDS - 10) as u64);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), expected("before\n"));
    }

    #[test]
    fn after_recovery_the_ring_is_zeroed() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let spool = crashed_spool(dir.path(), &log, 0, 0);
        let ring_area =
            |path: &Path| std::fs::read(path).unwrap()[HEADER_BYTES as usize..].to_vec();
        assert!(
            ring_area(&spool).iter().any(|&b| b != 0),
            "the crash left records"
        );
        let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
        assert_eq!(r.records, RECORDS as u64);
        // No stale word of an earlier lap can be mistaken for a record after the next
        // crash: every byte of the ring is zero again.
        assert!(ring_area(&spool).iter().all(|&b| b == 0));
    }

    #[test]
    fn a_torn_batch_is_cut_and_written_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        std::fs::write(&log, "before\n").unwrap();
        let spool = crashed_spool(dir.path(), &log, 10, 25);
        let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
        assert_eq!(r.cut_bytes, 25);
        assert_eq!(r.records, RECORDS as u64);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), expected("before\n"));
    }

    #[test]
    fn recovering_into_another_file_never_cuts_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        std::fs::write(&log, "before\n").unwrap();
        let spool = crashed_spool(dir.path(), &log, 10, 25);
        // An unrelated, longer file: its bytes are not the batch's to cut.
        let other = dir.path().join("other.log");
        let unrelated = "unrelated content that must survive\n".repeat(50);
        std::fs::write(&other, &unrelated).unwrap();
        let r = recover(&spool, FdSink::append(&other).unwrap()).unwrap();
        assert!(r.at_least_once);
        assert_eq!(r.cut_bytes, 0);
        assert_eq!(r.records, RECORDS as u64);
        assert_eq!(
            std::fs::read_to_string(&other).unwrap(),
            expected(&unrelated)
        );
    }

    /// Writes `left` records, then half of one, then fails: what a recovery killed
    /// part-way leaves behind.
    struct DiesAfter {
        inner: FdSink,
        left: usize,
    }
    impl Sink for DiesAfter {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if self.left == 0 {
                let half = buf.len() / 2;
                self.inner.write(&buf[..half])?;
                return Err(io::Error::other("killed"));
            }
            self.left -= 1;
            self.inner.write(buf)
        }
        fn position(&mut self) -> Option<u64> {
            self.inner.position()
        }
        fn identity(&mut self) -> Option<(u64, u64)> {
            self.inner.identity()
        }
        fn truncate_to(&mut self, len: u64) -> io::Result<()> {
            self.inner.truncate_to(len)
        }
    }

    #[test]
    fn a_recovery_killed_part_way_resumes_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let spool = crashed_spool(dir.path(), &log, 10, 25);
        for dies_after in [3, 17] {
            let sink = DiesAfter {
                inner: FdSink::append(&log).unwrap(),
                left: dies_after,
            };
            assert!(recover(&spool, sink).is_err());
        }
        recover(&spool, FdSink::append(&log).unwrap()).unwrap();
        assert_eq!(std::fs::read_to_string(&log).unwrap(), expected(""));
        // A recovery of the now empty spool delivers nothing more.
        assert_eq!(
            recover(&spool, FdSink::append(&log).unwrap())
                .unwrap()
                .records,
            0
        );
        assert_eq!(std::fs::read_to_string(&log).unwrap(), expected(""));
    }

    /// Writes everything, then fails to flush: a recovery killed after its chunk
    /// reached the file but before the spool recorded it.
    struct DiesAtFlush(FdSink);
    impl Sink for DiesAtFlush {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Err(io::Error::other("killed"))
        }
        fn position(&mut self) -> Option<u64> {
            self.0.position()
        }
        fn identity(&mut self) -> Option<(u64, u64)> {
            self.0.identity()
        }
    }

    #[test]
    fn a_recovery_killed_after_writing_its_chunk_does_not_write_it_again() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let spool = crashed_spool(dir.path(), &log, 0, 0);
        assert!(recover(&spool, DiesAtFlush(FdSink::append(&log).unwrap())).is_err());
        assert_eq!(std::fs::read_to_string(&log).unwrap(), expected(""));
        let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
        assert_eq!((r.already_delivered, r.records), (RECORDS as u64, 0));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), expected(""));
    }

    fn set_word(path: &Path, i: u64, v: u64) {
        use std::os::unix::fs::FileExt;
        let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
        f.write_all_at(&v.to_le_bytes(), i * 8).unwrap();
    }

    #[test]
    fn a_spool_many_laps_on_recovers_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        std::fs::write(&log, "before\n").unwrap();
        // Three laps and a bit: positions far above the capacity.
        let start = 3 * CAPACITY as u64 + 4096;
        let spool = crashed_spool_at(dir.path(), &log, start, 10, 25);
        let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
        assert_eq!((r.cut_bytes, r.records), (25, RECORDS as u64));
        assert_eq!(std::fs::read_to_string(&log).unwrap(), expected("before\n"));
    }

    #[test]
    fn header_bounds_are_inclusive_where_a_real_spool_can_reach_them() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        // A pending batch may end exactly one capacity after the tail.
        let spool = crashed_spool(dir.path(), &log, 10, 0);
        set_word(&spool, 4, CAPACITY as u64);
        let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
        assert_eq!(r.records, RECORDS as u64);
        std::fs::remove_file(&spool).unwrap();
        // The largest capacity passes the header check (this file is then too short).
        let spool = crashed_spool(dir.path(), &log, 0, 0);
        set_word(&spool, 2, MAX_CAPACITY);
        let e = recover(&spool, FdSink::append(&log).unwrap()).unwrap_err();
        assert!(
            e.to_string().contains("shorter than its header says"),
            "{e}"
        );
        for implausible in [MAX_CAPACITY + 8, 56, 1004] {
            set_word(&spool, 2, implausible);
            let e = recover(&spool, FdSink::append(&log).unwrap()).unwrap_err();
            assert!(
                e.to_string().contains("implausible capacity"),
                "{implausible}: {e}"
            );
        }
        // The smallest capacity is a (tiny) spool.
        set_word(&spool, 2, 64);
        recover(&spool, FdSink::append(&log).unwrap()).unwrap();
    }

    #[test]
    fn a_record_damaged_in_the_spool_is_skipped_and_counted_as_torn() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let spool = crashed_spool(dir.path(), &log, 0, 0);
        // Flip a byte of record 20's payload: its checksum no longer matches.
        let mut bytes = std::fs::read(&spool).unwrap();
        let needle = record(20);
        let at = bytes
            .windows(needle.len())
            .position(|w| w == needle.as_slice())
            .unwrap();
        bytes[at + 3] ^= 0x20;
        std::fs::write(&spool, &bytes).unwrap();
        let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
        assert_eq!((r.torn, r.records), (1, RECORDS as u64 - 1));
        let got = std::fs::read_to_string(&log).unwrap();
        assert!(!got.contains("record 020"), "{got}");
        assert!(got.contains("record 019\nrecord 021\n"), "{got}");
    }

    #[test]
    fn a_corrupt_header_is_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let cases: [(u64, u64, &str); 7] = [
            (3, 3, "unaligned tail"),
            (3, u64::MAX - 15, "wrapping"),
            (4, 1 << 40, "pending batch"),
            // Unaligned, though inside the ring.
            (4, 12, "pending batch"),
            // Not after the tail (position 0 means "none pending", so 8 is the first).
            (3, 1 << 20, "pending batch"),
            (6, 1 << 40, "larger than the ring"),
            (2, 1 << 50, "implausible capacity"),
        ];
        for (word, value, why) in cases {
            let spool = crashed_spool(dir.path(), &log, 10, 0);
            std::fs::write(&log, "keep\n").unwrap();
            set_word(&spool, word, value);
            let e = recover(&spool, FdSink::append(&log).unwrap()).unwrap_err();
            assert!(e.to_string().contains(why), "{why}: {e}");
            assert_eq!(std::fs::read_to_string(&log).unwrap(), "keep\n");
            std::fs::remove_file(&spool).unwrap();
        }
    }

    #[test]
    fn spools_are_private_and_foreign_ones_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let spool = crashed_spool(dir.path(), &log, 0, 0);
        // Created with an explicit 0600, whatever the umask allows.
        let mode = std::fs::metadata(&spool).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        std::fs::set_permissions(&spool, std::fs::Permissions::from_mode(0o644)).unwrap();
        let e = recover(&spool, FdSink::append(&log).unwrap()).unwrap_err();
        assert!(e.to_string().contains("chmod 600"), "{e}");
        let typed = SpoolError::of(&e).expect("a typed spool error");
        assert_eq!(typed.kind, SpoolErrorKind::Permissions);
        assert_eq!(typed.path, spool);
        std::fs::set_permissions(&spool, std::fs::Permissions::from_mode(0o600)).unwrap();
        // A symlink is not followed.
        let link = dir.path().join("link.spool");
        std::os::unix::fs::symlink(&spool, &link).unwrap();
        let mut sink = FdSink::append(&log).unwrap();
        let e = open(&link, 4096, &mut sink, SpoolSync::Never).unwrap_err();
        assert!(e.to_string().contains("symlink"), "{e}");
        // Another owner is refused (chown needs root, which CI has).
        // SAFETY: geteuid cannot fail.
        if unsafe { libc::geteuid() } == 0 {
            std::os::unix::fs::chown(&spool, Some(65534), None).unwrap();
            let e = recover(&spool, FdSink::append(&log).unwrap()).unwrap_err();
            assert!(e.to_string().contains("owned by uid 65534"), "{e}");
        }
    }

    #[test]
    fn an_empty_or_foreign_file_is_not_a_spool() {
        let dir = tempfile::tempdir().unwrap();
        let empty = dir.path().join("empty");
        std::fs::File::create(&empty).unwrap();
        let e = recover(&empty, FdSink::stdout()).unwrap_err();
        assert!(e.to_string().contains("empty"), "{e}");
        assert_eq!(
            std::fs::metadata(&empty).unwrap().len(),
            0,
            "left untouched"
        );
        let text = dir.path().join("text");
        std::fs::write(&text, "hello, this is a log file, not a spool").unwrap();
        let e = recover(&text, FdSink::stdout()).unwrap_err();
        assert!(e.to_string().contains("not a loglag spool"), "{e}");
        assert_eq!(
            SpoolError::of(&e).map(|s| s.kind),
            Some(SpoolErrorKind::NotASpool)
        );
        // A spool held by a live pipeline is in use.
        let held = dir.path().join("held.spool");
        let log = dir.path().join("held.log");
        let mut sink = FdSink::append(&log).unwrap();
        let _open = open(&held, 4096, &mut sink, SpoolSync::Never).unwrap();
        let e = recover(&held, FdSink::stdout()).unwrap_err();
        assert_eq!(
            SpoolError::of(&e).map(|s| s.kind),
            Some(SpoolErrorKind::InUse)
        );
        assert_eq!(e.kind(), io::ErrorKind::WouldBlock);
    }

    #[test]
    fn a_clean_shutdown_leaves_no_batch_pending() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let spool = dir.path().join("app.spool");
        let (writer, guard) = crate::NonBlockingBuilder::default()
            .spool(&spool)
            .mode(crate::Mode::Async)
            .finish_sink(FdSink::append(&log).unwrap());
        for i in 0..RECORDS {
            writer.submit(Level::Info, &record(i));
        }
        let m = guard.shutdown();
        // The spool stays locked while any handle to the pipeline lives.
        drop(writer);
        assert_eq!(m.written_records, RECORDS as u64);
        assert_eq!(std::fs::read_to_string(&log).unwrap(), expected(""));
        // A batch still marked pending would be delivered again into another file.
        let other = dir.path().join("other.log");
        let r = recover(&spool, FdSink::append(&other).unwrap()).unwrap();
        assert_eq!(r, Recovered::default());
        assert_eq!(std::fs::read(&other).unwrap(), b"");
    }

    /// Counts what recovery hands the sink per chunk.
    #[derive(Default)]
    struct ChunkRecorder {
        chunks: Vec<usize>,
        bytes: Vec<u8>,
    }
    impl Sink for ChunkRecorder {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.bytes.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn before_batch(&mut self, bytes: usize) -> io::Result<()> {
            self.chunks.push(bytes);
            Ok(())
        }
    }

    #[test]
    fn recovery_delivers_in_full_chunks_of_at_most_64_kib() {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("big.spool");
        let mut sink = FdSink::stdout();
        let records: Vec<Vec<u8>> = (0..3000)
            .map(|i| format!("record {i:05} {}\n", "x".repeat(i % 90)).into_bytes())
            .collect();
        {
            let (ring, _header, _) = open(&spool, 1 << 20, &mut sink, SpoolSync::Never).unwrap();
            for r in &records {
                ring.try_push(Level::Info, r, u64::MAX, 0, false, 0)
                    .unwrap();
            }
        }
        let mut recorder = ChunkRecorder::default();
        let r = open_with(&spool, None, &mut recorder, SpoolSync::Never)
            .unwrap()
            .2;
        assert_eq!(r.records, 3000);
        assert_eq!(recorder.bytes, records.concat());
        let total: usize = records.iter().map(Vec::len).sum();
        assert_eq!(r.bytes, total as u64);
        assert_eq!(recorder.chunks.iter().sum::<usize>(), total);
        assert!(total > 2 * RECOVERY_CHUNK, "the test needs several chunks");
        assert!(
            recorder.chunks.iter().all(|&c| c <= RECOVERY_CHUNK),
            "{:?}",
            recorder.chunks
        );
        for pair in recorder.chunks.windows(2) {
            // Greedy: a chunk ends only when the next record would not fit.
            assert!(
                pair[0] + 200 > RECOVERY_CHUNK,
                "a chunk cut short: {pair:?}"
            );
        }
    }

    #[test]
    fn a_new_spools_capacity_is_whole_words_up_to_the_maximum() {
        assert_eq!(new_capacity(1001).unwrap(), 1000);
        assert_eq!(new_capacity(0).unwrap(), 64);
        assert_eq!(new_capacity(MAX_CAPACITY as usize).unwrap(), MAX_CAPACITY);
        let e = new_capacity(MAX_CAPACITY as usize + 8).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(e.to_string().contains("above the maximum"), "{e}");
    }

    #[test]
    fn each_kind_of_spool_error_has_its_io_kind() {
        let p = Path::new("/x.spool");
        for (kind, io_kind) in [
            (SpoolErrorKind::InUse, io::ErrorKind::WouldBlock),
            (SpoolErrorKind::Permissions, io::ErrorKind::PermissionDenied),
            (SpoolErrorKind::NotASpool, io::ErrorKind::InvalidData),
            (SpoolErrorKind::Version, io::ErrorKind::InvalidData),
            (SpoolErrorKind::Corrupt, io::ErrorKind::InvalidData),
        ] {
            let e = spool_error(p, kind, "why".into());
            assert_eq!(e.kind(), io_kind, "{kind:?}");
            assert_eq!(SpoolError::of(&e).map(|s| s.kind), Some(kind));
        }
    }

    #[test]
    fn a_spool_shorter_than_its_header_says_is_refused_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("app.log");
        let spool = crashed_spool(dir.path(), &log, 0, 0);
        let cut = HEADER_BYTES + 1000;
        std::fs::OpenOptions::new()
            .write(true)
            .open(&spool)
            .unwrap()
            .set_len(cut)
            .unwrap();
        let e = recover(&spool, FdSink::append(&log).unwrap()).unwrap_err();
        assert!(
            e.to_string().contains("shorter than its header says"),
            "{e}"
        );
        assert_eq!(
            SpoolError::of(&e).map(|s| s.kind),
            Some(SpoolErrorKind::Corrupt)
        );
        assert_eq!(std::fs::metadata(&spool).unwrap().len(), cut, "not grown");
    }

    #[test]
    fn a_new_spool_has_all_its_blocks() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new.spool");
        let mut sink = FdSink::stdout();
        drop(open(&path, 8 << 20, &mut sink, SpoolSync::Never).unwrap());
        let meta = std::fs::metadata(&path).unwrap();
        assert_eq!(
            meta.len(),
            HEADER_BYTES + (8 << 20),
            "header + ring, no more"
        );
        assert!(
            meta.blocks() * 512 >= meta.len(),
            "fallocated, not sparse: {} blocks for {} bytes",
            meta.blocks(),
            meta.len()
        );
    }
}
