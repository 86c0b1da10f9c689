//! Tests of the spool against its contract: crashes mid-batch and mid-recovery, and
//! corrupt, foreign or unusable spool files.

use super::header::HEADER_BYTES;
use super::open::{new_capacity, open_with};
use super::recovery::RECOVERY_CHUNK;
use super::*;
use crate::queue;
use crate::record::level::Level;
use crate::sink::{FdSink, FileSink, Sink};
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
    let (position, identity) = crate::sink::place(&mut sink);
    header.begin_batch(end, position, identity, batch.len() as u64);
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
fn after_recovery_the_ring_is_zeroed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let spool = crashed_spool(dir.path(), &log, 0, 0);
    let ring_area = |path: &Path| std::fs::read(path).unwrap()[HEADER_BYTES as usize..].to_vec();
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
    fn as_file(&mut self) -> Option<&mut dyn FileSink> {
        Some(self)
    }
}
impl crate::sink::sealed::Sealed for DiesAfter {}

impl FileSink for DiesAfter {
    fn descriptor(&self) -> Option<(crate::sink::RawDescriptor, (u64, u64))> {
        None
    }
    fn sync(&mut self) -> io::Result<()> {
        self.inner.sync()
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
    fn as_file(&mut self) -> Option<&mut dyn FileSink> {
        Some(self)
    }
}
impl crate::sink::sealed::Sealed for DiesAtFlush {}

impl FileSink for DiesAtFlush {
    fn descriptor(&self) -> Option<(crate::sink::RawDescriptor, (u64, u64))> {
        None
    }
    fn position(&mut self) -> Option<u64> {
        self.0.position()
    }
    fn identity(&mut self) -> Option<(u64, u64)> {
        self.0.identity()
    }
    fn truncate_to(&mut self, len: u64) -> io::Result<()> {
        self.0.truncate_to(len)
    }
    fn sync(&mut self) -> io::Result<()> {
        self.0.sync()
    }
}

#[test]
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
    use std::io::{Seek, SeekFrom, Write};
    let mut f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.seek(SeekFrom::Start(i * 8)).unwrap();
    f.write_all(&v.to_le_bytes()).unwrap();
}

/// Found by `model.rs`: `end_batch` advances the tail, then clears the pending end; a
/// kill between the two stores left a spool refused as corrupt.
#[test]
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
fn a_kill_between_the_two_stores_of_a_commit_leaves_a_valid_spool() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let batch_len = (0..10).map(|i| record(i).len()).sum();
    let spool = crashed_spool(dir.path(), &log, 10, batch_len);
    let end: u64 = (0..10).map(|i| queue::footprint(record(i).len())).sum();
    set_word(&spool, 3, end);
    let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
    assert_eq!((r.records, r.already_delivered), ((RECORDS - 10) as u64, 0));
    assert!(!r.at_least_once);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), expected(""));
}

#[test]
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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

// Unix's promise: mode 0600, an owner, a symlink that fails the open (Windows has no
// mode or owner to check; its symlink refusal is `windows_refuses_a_symlinked_spool`).
#[cfg(unix)]
#[test]
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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

/// Windows: a symlinked spool is refused (the link is opened, never followed). A
/// symlink needs Developer Mode or SeCreateSymbolicLinkPrivilege there: without them
/// there is nothing to refuse, and the test says it skipped.
#[cfg(windows)]
#[test]
fn windows_refuses_a_symlinked_spool() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let spool = crashed_spool(dir.path(), &log, 0, 0);
    let link = dir.path().join("link.spool");
    if crate::sys::windows::under_wine() {
        eprintln!("skipped windows_refuses_a_symlinked_spool: Wine 8 makes no symlink");
        return;
    }
    if let Err(e) = std::os::windows::fs::symlink_file(&spool, &link) {
        eprintln!("skipped windows_refuses_a_symlinked_spool: cannot make a symlink: {e}");
        return;
    }
    let mut sink = FdSink::append(&log).unwrap();
    let e = open(&link, 4096, &mut sink, SpoolSync::Never).unwrap_err();
    assert!(e.to_string().contains("symlink"), "{e}");
}

#[test]
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
fn a_clean_shutdown_leaves_no_batch_pending() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    let spool = dir.path().join("app.spool");
    let (writer, guard) = crate::pipeline::builder::NonBlockingBuilder::default()
        .spool(&spool)
        .mode(crate::settings::mode::Mode::Async)
        .build(FdSink::append(&log).unwrap())
        .unwrap();
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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

// `st_blocks` is unix's; on Windows the spool grows by `set_len`, which NTFS
// allocates.
#[cfg(unix)]
#[test]
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
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

/// Layout version 2 added the `rejected` row of the unannounced-drop ledger (words
/// 64..69). A version 1 spool (zeroes there) is still recovered with its unannounced
/// drops; a version 2 one announces its rejections; a version from the future is
/// refused untouched.
#[test]
#[cfg_attr(miri, ignore = "a spool file and its mapping: miri maps no files")]
fn a_version_1_spool_is_recovered_and_a_version_2_one_announces_rejections() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("app.log");
    // Version 1: 3 io_error drops (reason 1, level 0) not yet announced.
    let spool = crashed_spool(dir.path(), &log, 0, 0);
    set_word(&spool, 1, 1);
    set_word(&spool, 16 + 5, 3);
    let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
    assert_eq!((r.records, r.unannounced_drops), (RECORDS as u64, 3));
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("io_error=3"), "{text}");
    assert!(text.contains("rejected=0"), "{text}");
    std::fs::remove_file(&spool).unwrap();
    std::fs::remove_file(&log).unwrap();
    // Version 2: 2 rejected drops (reason 4, level 0).
    let spool = crashed_spool(dir.path(), &log, 0, 0);
    set_word(&spool, 1, 2);
    set_word(&spool, 64, 2);
    let r = recover(&spool, FdSink::append(&log).unwrap()).unwrap();
    assert_eq!(r.unannounced_drops, 2);
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains("rejected=2"), "{text}");
    std::fs::remove_file(&spool).unwrap();
    std::fs::remove_file(&log).unwrap();
    // Version 3 is not one this build reads.
    let spool = crashed_spool(dir.path(), &log, 0, 0);
    set_word(&spool, 1, 3);
    let before = std::fs::read(&spool).unwrap();
    let e = recover(&spool, FdSink::append(&log).unwrap()).unwrap_err();
    assert!(e.to_string().contains("version 3"), "{e}");
    assert_eq!(std::fs::read(&spool).unwrap(), before, "left as it was");
}
