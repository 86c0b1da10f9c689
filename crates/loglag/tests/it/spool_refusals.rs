//! What `spool::recover` (and a pipeline's spool) refuses without waiting, and what
//! recovery leaves alone: a path that is no regular file (a FIFO, a directory, a
//! socket, a device) is refused at once, naming the path and what it is, and
//! recovering a sparse spool allocates none of its holes (issue 32, items 11 and 14).
//! A pipeline whose spool is in use or corrupt is warned about and runs without it
//! (`Metrics::spool_refused`), or, with `spool_required`, does not build.

use crate::support;

use std::io;
#[cfg(unix)]
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use loglag::sink::FdSink;
use loglag::spool::{self, SpoolError, SpoolErrorKind};
#[cfg(unix)]
use loglag::Mode;
use loglag::{BuildError, Level, NonBlockingBuilder};
#[cfg(unix)]
use support::Gate;
use support::{within, Behaviour, TestSink};

/// A refusal takes no time at all; this only bounds a regression that blocks, so that
/// it fails the test instead of hanging the suite.
const DEADLINE: Duration = Duration::from_secs(60);

#[cfg(unix)]
fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o600) };
    assert_eq!(rc, 0, "mkfifo: {}", io::Error::last_os_error());
}

/// Runs `f` on its own thread and returns its result, or `None` if it has not
/// returned by [`DEADLINE`] (the thread is then left behind, blocked).
fn within_deadline<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE).ok()
}

#[cfg(unix)]
/// A blocked `open(2)` of `fifo` for reading returns once a writer opens it.
fn release_a_blocked_reader(fifo: &Path) {
    use std::os::unix::fs::OpenOptionsExt;
    let _ = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(fifo);
}

/// Checks that `e` refuses `path` as no regular file, saying what it is (`what`).
fn assert_refused_as(e: &io::Error, path: &Path, what: &str) {
    let text = e.to_string();
    assert!(text.contains(&path.display().to_string()), "{text}");
    assert!(text.contains(what), "should say it is {what}: {text}");
    assert!(text.contains("not a regular file"), "{text}");
    let typed = SpoolError::of(e).expect("a typed spool error");
    assert_eq!(typed.kind, SpoolErrorKind::Permissions, "{text}");
    assert_eq!(typed.path, path);
    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{text}");
}

/// `spool::recover_opening` on `path`, on its own thread: the result, and whether the
/// sink was opened (it must not be, for a spool refused).
fn recover_in_a_thread(path: &Path) -> Option<(io::Result<spool::Recovered>, bool)> {
    let path = path.to_owned();
    within_deadline(move || {
        let mut opened = false;
        let r = spool::recover_opening(&path, || {
            opened = true;
            Ok(FdSink::stdout())
        });
        (r, opened)
    })
}

// FIFOs are unix's (Windows refuses them: rolling_trust.rs, windows_refuses_what_it_cannot_do_by_name).
#[cfg(unix)]
#[test]
fn recover_refuses_a_fifo_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("app.spool");
    mkfifo(&fifo);
    let Some((result, opened)) = recover_in_a_thread(&fifo) else {
        release_a_blocked_reader(&fifo);
        panic!("recover of a FIFO blocked (no result within {DEADLINE:?})");
    };
    let e = result.expect_err("a FIFO is no spool");
    assert_refused_as(&e, &fifo, "a FIFO");
    assert!(!opened, "the sink was opened for a spool that was refused");
    // Nothing was created or changed: the FIFO is still a FIFO.
    use std::os::unix::fs::FileTypeExt;
    assert!(std::fs::symlink_metadata(&fifo)
        .unwrap()
        .file_type()
        .is_fifo());
}

#[test]
fn recover_refuses_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let sub = dir.path().join("spool.d");
    std::fs::create_dir(&sub).unwrap();
    let (result, opened) = recover_in_a_thread(&sub).expect("a refusal, not a hang");
    let e = result.expect_err("a directory is no spool");
    assert_refused_as(&e, &sub, "a directory");
    assert!(!opened);
}

// Unix sockets and /dev/null are unix's.
#[cfg(unix)]
#[test]
fn recover_refuses_a_socket_and_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("app.sock");
    let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    let (result, opened) = recover_in_a_thread(&socket).expect("a refusal, not a hang");
    assert_refused_as(&result.expect_err("a socket"), &socket, "a socket");
    assert!(!opened);
    let null = Path::new("/dev/null");
    let (result, opened) = recover_in_a_thread(null).expect("a refusal, not a hang");
    assert_refused_as(
        &result.expect_err("a character device"),
        null,
        "a character device",
    );
    assert!(!opened);
}

// FIFOs are unix's (Windows refuses them: rolling_trust.rs, windows_refuses_what_it_cannot_do_by_name).
#[cfg(unix)]
#[test]
fn a_pipeline_refuses_a_fifo_as_its_spool_without_blocking() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("app.spool");
    mkfifo(&fifo);
    let path = fifo.clone();
    let result = within_deadline(move || {
        NonBlockingBuilder::default()
            .spool(&path)
            .spool_required(true)
            .mode(Mode::Async)
            .build(TestSink::new(Behaviour::Fast).0)
            .map(drop)
    });
    let Some(result) = result else {
        release_a_blocked_reader(&fifo);
        panic!("opening a FIFO as a spool blocked");
    };
    match result {
        Err(loglag::BuildError::Spool(e)) => {
            let e = io::Error::from(e);
            assert_refused_as(&e, &fifo, "a FIFO");
        }
        Err(other) => panic!("not a spool error: {other}"),
        Ok(()) => panic!("a FIFO was accepted as a spool"),
    }
}

#[test]
fn a_spool_in_use_is_warned_about_and_the_pipeline_runs_without_it() {
    within(DEADLINE, "spool in use", || {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("app.spool");
        let (first, _first_guard) = NonBlockingBuilder::default()
            .spool(&spool)
            .build(TestSink::new(Behaviour::Fast).0)
            .unwrap();
        assert!(!first.metrics().spool_refused);
        // A restart while the old instance is still exiting: the second must not panic.
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (second, guard) = NonBlockingBuilder::default()
            .spool(&spool)
            .build(sink)
            .unwrap();
        assert!(second.metrics().spool_refused, "Metrics say so");
        second.submit(Level::Info, b"still logging\n");
        let m = guard.shutdown();
        assert_eq!(m.written_records, 1);
        assert_eq!(out.lock().unwrap().as_slice(), b"still logging\n");
        // With the spool required, build fails instead, with the typed error.
        match NonBlockingBuilder::default()
            .spool(&spool)
            .spool_required(true)
            .build(TestSink::new(Behaviour::Fast).0)
        {
            Err(BuildError::Spool(e)) => assert_eq!(e.kind, SpoolErrorKind::InUse, "{e}"),
            Err(other) => panic!("wrong error: {other}"),
            Ok(_) => panic!("a spool in use was accepted"),
        }
    });
}

#[test]
fn a_corrupt_spool_is_warned_about_and_the_pipeline_runs_without_it() {
    within(DEADLINE, "corrupt spool", || {
        let dir = tempfile::tempdir().unwrap();
        let spool = dir.path().join("app.spool");
        std::fs::write(
            &spool,
            b"this is not a spool at all, just text\n".repeat(200),
        )
        .unwrap();
        let before = std::fs::read(&spool).unwrap();
        let (sink, out) = TestSink::new(Behaviour::Fast);
        let (writer, guard) = NonBlockingBuilder::default()
            .spool(&spool)
            .build(sink)
            .unwrap();
        assert!(writer.metrics().spool_refused);
        writer.submit(Level::Info, b"x\n");
        guard.shutdown();
        assert_eq!(out.lock().unwrap().as_slice(), b"x\n");
        assert_eq!(
            std::fs::read(&spool).unwrap(),
            before,
            "the refused file is left alone"
        );
        let err = NonBlockingBuilder::default()
            .spool(&spool)
            .spool_required(true)
            .build(TestSink::new(Behaviour::Fast).0)
            .expect_err("refused");
        assert!(matches!(err, BuildError::Spool(_)), "{err:?}");
        // And it still converts into an io::Error for `?`.
        let io: std::io::Error = err.into();
        assert!(loglag::spool::SpoolError::of(&io).is_some());
    });
}

#[cfg(unix)]
const RECORDS: usize = 200;

#[cfg(unix)]
fn record(i: usize) -> Vec<u8> {
    format!("record {i:04}\n").into_bytes()
}

#[cfg(unix)]
/// A spool with `RECORDS` records queued and not written, as a copy of a live
/// pipeline's spool (the pipeline's writer is held in its first write). Returns the
/// copy's bytes: its header and its 64 KiB ring.
fn a_spool_with_records_queued(dir: &Path) -> Vec<u8> {
    let live = dir.join("live.spool");
    let gate = Gate::closed();
    let (sink, entered) = TestSink::new(Behaviour::Fast).0.gated(gate.clone());
    let (writer, guard) = NonBlockingBuilder::default()
        .spool(&live)
        .mode(Mode::Async)
        .capacity_bytes(64 << 10)
        .build(sink)
        .unwrap();
    writer.submit(Level::Info, &record(0));
    entered
        .recv_timeout(DEADLINE)
        .expect("the writer reached the sink");
    for i in 1..RECORDS {
        writer.submit(Level::Info, &record(i));
    }
    // Every record whose submit returned is in the mapping, so in the page cache.
    let bytes = std::fs::read(&live).unwrap();
    assert_eq!(bytes.len(), 4096 + (64 << 10));
    gate.open();
    drop(writer);
    guard.shutdown();
    bytes
}

#[cfg(unix)]
/// Writes `bytes` to a new file at `path`, sets header word `word` to `value`, then
/// extends the file (sparsely: a hole) to `len` bytes.
fn sparse_spool(path: &Path, bytes: &[u8], word: Option<(usize, u64)>, len: u64) {
    let mut bytes = bytes.to_vec();
    if let Some((i, v)) = word {
        bytes[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    {
        use std::os::unix::fs::OpenOptionsExt;
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path)
            .unwrap();
        use std::io::Write;
        (&f).write_all(&bytes).unwrap();
        f.set_len(len).unwrap();
        f.sync_all().unwrap();
    }
}

#[cfg(unix)]
/// Allocated bytes (`st_blocks` × 512).
fn allocated(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().blocks() * 512
}

/// Whether `dir` is on tmpfs, whose holes a read through a mapping fills (with memory),
/// so that what this test measures does not apply.
#[cfg(all(unix, not(target_os = "linux")))]
fn on_tmpfs(_dir: &Path) -> bool {
    false
}

/// Whether `dir` is on tmpfs, whose holes a read through a mapping fills (with memory),
/// so that what this test measures does not apply.
#[cfg(target_os = "linux")]
fn on_tmpfs(dir: &Path) -> bool {
    let c = std::ffi::CString::new(dir.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: statfs into a zeroed struct, from a valid path.
    unsafe {
        let mut s: libc::statfs = std::mem::zeroed();
        libc::statfs(c.as_ptr(), &mut s) == 0 && s.f_type as u64 == libc::TMPFS_MAGIC as u64
    }
}

// Holes are counted in st_blocks, which is unix's (NTFS makes no holes unless asked).
#[cfg(unix)]
#[test]
fn recover_never_materialises_a_sparse_spools_holes() {
    const FOUR_GIB: u64 = 4 << 30;
    // On the disk the build is on (the target directory), not a /tmp that may be tmpfs.
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    if on_tmpfs(dir.path()) {
        skip_note!("skipped: {} is on tmpfs", dir.path().display());
        return;
    }
    let original = a_spool_with_records_queued(dir.path());
    let data = original.len() as u64;
    // Two sparse spools of 4 GiB and a page: one whose header claims a 4 GiB ring (the
    // records sit at the same offsets, as they never wrapped), and one whose file was
    // only extended (`truncate -s`) past its 64 KiB ring.
    let cases = [
        ("claims-4GiB.spool", Some((2, FOUR_GIB))),
        ("extended.spool", None),
    ];
    for (name, word) in cases {
        let spool = dir.path().join(name);
        sparse_spool(&spool, &original, word, 4096 + FOUR_GIB);
        let before = allocated(&spool);
        if before >= FOUR_GIB {
            skip_note!("skipped: this file system makes no holes");
            return;
        }
        let out = dir.path().join(format!("{name}.log"));
        let r = spool::recover(&spool, FdSink::append(&out).unwrap()).unwrap();
        let after = allocated(&spool);
        eprintln!("{name}: {before} bytes allocated before recovery, {after} after");
        assert!(
            after <= before.max(data) + (64 << 10),
            "{name}: recovery allocated the holes: {before} bytes allocated before, {after} after, for {data} bytes of spool data"
        );
        assert_eq!(std::fs::metadata(&spool).unwrap().len(), 4096 + FOUR_GIB);
        // ...and still delivered every record, in order.
        assert_eq!(r.records, RECORDS as u64, "{name}: {r:?}");
        let expected: Vec<u8> = (0..RECORDS).flat_map(record).collect();
        assert_eq!(std::fs::read(&out).unwrap(), expected, "{name}");
        std::fs::remove_file(&spool).unwrap();
    }
}

#[test]
fn recover_refuses_the_spool_itself_as_its_output() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("app.spool");
    {
        let (_w, guard) = NonBlockingBuilder::default()
            .spool(&spool)
            .build(TestSink::new(Behaviour::Fast).0)
            .unwrap();
        guard.shutdown();
    }
    let before = std::fs::read(&spool).unwrap();
    let err = loglag::spool::recover_opening(&spool, || loglag::sink::FdSink::append(&spool))
        .expect_err("refused");
    assert!(err.to_string().contains("itself"), "{err}");
    assert_eq!(
        std::fs::read(&spool).unwrap(),
        before,
        "the spool is untouched"
    );
}

#[test]
fn recover_opens_its_output_only_once_the_spool_is_valid() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.log");
    for spool in [dir.path().join("missing.spool"), {
        let p = dir.path().join("garbage.spool");
        std::fs::write(&p, b"garbage").unwrap();
        p
    }] {
        let result = loglag::spool::recover_opening(&spool, || loglag::sink::FdSink::append(&out));
        assert!(result.is_err(), "{spool:?}");
        assert!(!out.exists(), "no output file was created for {spool:?}");
    }
}

/// A spool above the maximum capacity (`capacity_bytes = 16GiB`) is refused, and the
/// spool file the refused start created is gone (issue 47, 12): it used to be left
/// behind, empty.
#[test]
fn a_spool_refused_for_its_size_leaves_no_file_behind() {
    let dir = tempfile::tempdir().unwrap();
    let spool = dir.path().join("app.spool");
    let err = NonBlockingBuilder::default()
        .spool(&spool)
        .spool_required(true)
        .capacity_bytes(16 << 30)
        .build(TestSink::new(Behaviour::Fast).0)
        .expect_err("a 16 GiB spool is above the maximum");
    assert!(err.to_string().contains("above the maximum"), "{err}");
    assert!(!spool.exists(), "the refused spool file was left behind");
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A refused open never removes a file that was there before: an empty file someone
/// put at the path stays, and a spool of a previous run that is refused (open to other
/// users) stays byte for byte, its records still there to recover.
#[cfg(unix)]
#[test]
fn a_refused_open_of_an_existing_spool_leaves_it_byte_for_byte() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("empty.spool");
    std::fs::File::create(&empty).unwrap();
    NonBlockingBuilder::default()
        .spool(&empty)
        .spool_required(true)
        .capacity_bytes(16 << 30)
        .build(TestSink::new(Behaviour::Fast).0)
        .expect_err("a 16 GiB spool is above the maximum");
    assert_eq!(std::fs::read(&empty).unwrap(), b"", "an empty file stays");

    let queued = a_spool_with_records_queued(dir.path());
    let spool = dir.path().join("previous.spool");
    sparse_spool(&spool, &queued, None, queued.len() as u64);
    std::fs::set_permissions(&spool, std::fs::Permissions::from_mode(0o644)).unwrap();
    let err = NonBlockingBuilder::default()
        .spool(&spool)
        .spool_required(true)
        .capacity_bytes(16 << 30)
        .build(TestSink::new(Behaviour::Fast).0)
        .expect_err("a spool other users can read is refused");
    match err {
        BuildError::Spool(e) => assert_eq!(e.kind, SpoolErrorKind::Permissions, "{e}"),
        other => panic!("wrong error: {other}"),
    }
    assert_eq!(
        std::fs::read(&spool).unwrap(),
        queued,
        "the previous run's spool is left byte for byte"
    );
}
