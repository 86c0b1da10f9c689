//! Test sinks that let a test hold the writer inside a write, observe every write, and
//! inject short writes and failures. Synchronisation is by channels and condvars only.
#![allow(dead_code)]

/// A skip is said on stderr past the test harness's capture (which holds only what
/// `eprintln!` prints), so a plain `cargo test` shows what did not run and why.
macro_rules! skip_note {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

use std::io;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex};

use loglag::sink::Sink;

#[derive(Clone, Default)]
pub struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    pub fn closed() -> Gate {
        Gate::default()
    }
    pub fn closed_then_open() -> Gate {
        let g = Gate::default();
        g.open();
        g
    }
    pub fn open(&self) {
        *self.0 .0.lock().unwrap() = true;
        self.0 .1.notify_all();
    }
    pub fn wait_open(&self) {
        self.wait()
    }
    fn wait(&self) {
        let mut open = self.0 .0.lock().unwrap();
        while !*open {
            open = self.0 .1.wait(open).unwrap();
        }
    }
}

/// What the test sink does with each write call.
#[derive(Clone, Copy, Debug)]
pub enum Behaviour {
    Fast,
    /// Accept at most this many bytes per call.
    Short(usize),
    /// Fail every n-th call with ENOSPC, writing nothing.
    FailEvery(u32),
    /// Yield the thread before each write.
    Slow,
    /// Return EINTR (writing nothing) on every n-th call.
    Interrupted(u32),
    /// On every n-th call accept half the buffer; fail the call after it with EIO.
    PartialThenFail(u32),
}

impl Behaviour {
    /// Whether the sink ever reports a real error (EINTR is not one).
    pub fn fails(self) -> bool {
        matches!(
            self,
            Behaviour::FailEvery(_) | Behaviour::PartialThenFail(_)
        )
    }
}

pub struct TestSink {
    pub out: Arc<Mutex<Vec<u8>>>,
    gate: Option<Gate>,
    entered: Option<Sender<()>>,
    wrote: Option<Sender<Vec<u8>>>,
    behaviour: Behaviour,
    calls: u32,
}

impl TestSink {
    pub fn new(behaviour: Behaviour) -> (TestSink, Arc<Mutex<Vec<u8>>>) {
        let out = Arc::new(Mutex::new(Vec::new()));
        (
            TestSink {
                out: out.clone(),
                gate: None,
                entered: None,
                wrote: None,
                behaviour,
                calls: 0,
            },
            out,
        )
    }

    /// Writes block on `gate`; `entered` fires each time a write call starts.
    pub fn gated(mut self, gate: Gate) -> (TestSink, Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        self.gate = Some(gate);
        self.entered = Some(tx);
        (self, rx)
    }

    /// Each successful write is also sent on the returned channel.
    pub fn observed(mut self) -> (TestSink, Receiver<Vec<u8>>) {
        let (tx, rx) = mpsc::channel();
        self.wrote = Some(tx);
        (self, rx)
    }
}

impl Sink for TestSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.calls += 1;
        if let Some(tx) = &self.entered {
            let _ = tx.send(());
        }
        if let Some(g) = &self.gate {
            g.wait();
        }
        let n = match self.behaviour {
            Behaviour::Fast => buf.len(),
            Behaviour::Short(max) => buf.len().min(max.max(1)),
            Behaviour::FailEvery(k) if self.calls % k.max(1) == 0 => return Err(disk_full()),
            Behaviour::FailEvery(_) => buf.len(),
            Behaviour::Slow => {
                std::thread::yield_now();
                buf.len()
            }
            Behaviour::Interrupted(k) if self.calls % k.max(1) == 0 => {
                return Err(io::ErrorKind::Interrupted.into())
            }
            Behaviour::Interrupted(_) => buf.len(),
            Behaviour::PartialThenFail(k) if self.calls % k.max(2) == 0 => buf.len().div_ceil(2),
            Behaviour::PartialThenFail(k) if self.calls % k.max(2) == 1 && self.calls > 1 => {
                return Err(device_error())
            }
            Behaviour::PartialThenFail(_) => buf.len(),
        };
        self.out.lock().unwrap().extend_from_slice(&buf[..n]);
        if let Some(tx) = &self.wrote {
            let _ = tx.send(buf[..n].to_vec());
        }
        Ok(n)
    }
}

/// The error a full disk gives: ENOSPC (on Windows, ERROR_DISK_FULL).
pub fn disk_full() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::ENOSPC);
    #[cfg(windows)]
    return io::Error::from_raw_os_error(windows_sys::Win32::Foundation::ERROR_DISK_FULL as i32);
}

/// The error a failing device gives: EIO (on Windows, ERROR_IO_DEVICE).
pub fn device_error() -> io::Error {
    #[cfg(unix)]
    return io::Error::from_raw_os_error(libc::EIO);
    #[cfg(windows)]
    return io::Error::from_raw_os_error(windows_sys::Win32::Foundation::ERROR_IO_DEVICE as i32);
}

/// Whether this test runs under Wine rather than Windows: Wine 8 cannot do some of what
/// Windows does (make a symbolic link, delete an open file's name, send a console
/// control event), and the tests that need it skip there, saying so.
#[cfg(windows)]
pub fn under_wine() -> bool {
    use windows_sys::Win32::System::LibraryLoader::{GetModuleHandleA, GetProcAddress};
    // SAFETY: NUL-terminated names; ntdll is loaded in every process.
    unsafe {
        let ntdll = GetModuleHandleA(c"ntdll.dll".as_ptr().cast());
        !ntdll.is_null() && GetProcAddress(ntdll, c"wine_get_version".as_ptr().cast()).is_some()
    }
}

/// Under Wine, says on stderr that `test` skips because Wine cannot `what`, and returns
/// true; on Windows (and unix) false.
pub fn wine_cannot(test: &str, what: &str) -> bool {
    #[cfg(windows)]
    if under_wine() {
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr().lock(),
            "SKIPPED {test} under Wine: Wine cannot {what} (it runs on Windows)"
        );
        return true;
    }
    let _ = (test, what);
    false
}

/// loglag's own macros write through one process-wide pipeline (`set_global`): the
/// tests that use them take this lock, one at a time.
pub fn macros_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Lines of the output that are records (not loglag's own drop reports).
pub fn record_lines(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| !l.contains("loglag: dropped "))
        .map(str::to_owned)
        .collect()
}

/// Sum of one reason's figures (`queue_full=N`, ...) over the in-band reports.
pub fn reported_for_reason(out: &[u8], reason: &str) -> u64 {
    let key = format!("{reason}=");
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| is_whole_report(l))
        .filter_map(|l| {
            let at = l.find(&key)? + key.len();
            l[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse::<u64>()
                .ok()
        })
        .sum()
}

/// An in-band report line that was written whole (a sink failing mid-line can leave a
/// fragment of one, which the pipeline then writes again in full).
fn is_whole_report(line: &str) -> bool {
    line.contains("loglag: dropped ") && line.contains("reentrant=")
}

/// Sum of the counts in in-band "loglag: dropped N records" reports.
pub fn reported_drops(out: &[u8]) -> u64 {
    String::from_utf8_lossy(out)
        .lines()
        .filter(|l| is_whole_report(l))
        .filter_map(|l| l.split_once("loglag: dropped ").map(|(_, rest)| rest))
        .filter_map(|rest| rest.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

pub fn assert_accounted(m: &loglag::Metrics) {
    assert_eq!(
        m.written_records + m.dropped_records() + m.in_flight_records,
        m.accepted,
        "{m:#?}"
    );
    assert!(
        m.is_accounted(),
        "drops do not add up to their reasons: {m:#?}"
    );
}

/// Runs `f` on its own thread and fails the test if it has not finished within `limit`:
/// a regression that hangs fails in bounded time instead of stalling CI. (The stuck
/// thread is left behind; the test binary still exits.)
pub fn within<T: Send + 'static>(
    limit: std::time::Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => v,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("{what}: did not finish within {limit:?} (hang)"),
    }
}

/// The flood-and-join harness: `threads` threads, released together by a barrier,
/// each submit `per_thread` records `record(thread, seq)` to `writer` at `Info`; this
/// returns once every one has finished, and fails the test after two minutes (a
/// producer parked for good, or a panic in one, fails it; neither hangs it).
pub fn flood<R: AsRef<[u8]>>(
    writer: &loglag::NonBlocking,
    threads: usize,
    per_thread: usize,
    record: impl Fn(usize, usize) -> R + Send + Sync + 'static,
) {
    let record = std::sync::Arc::new(record);
    let start = std::sync::Arc::new(std::sync::Barrier::new(threads));
    let producers: Vec<_> = (0..threads)
        .map(|t| {
            let (writer, start, record) = (writer.clone(), start.clone(), record.clone());
            std::thread::spawn(move || {
                start.wait();
                for seq in 0..per_thread {
                    writer.submit(loglag::Level::Info, record(t, seq).as_ref());
                }
            })
        })
        .collect();
    within(
        std::time::Duration::from_secs(120),
        "the flood's producers",
        move || {
            for p in producers {
                p.join().unwrap();
            }
        },
    );
}

/// Waits for a child process with a bound; kills it and fails if it does not exit.
pub fn wait_child_within(
    mut child: std::process::Child,
    limit: std::time::Duration,
    what: &str,
) -> std::process::Output {
    let pid = child.id() as i32;
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    std::thread::spawn(move || {
        let read = |p: Option<Box<dyn io::Read + Send>>| {
            let mut v = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut v);
            }
            v
        };
        let err_reader = std::thread::spawn(move || read(stderr.map(|s| Box::new(s) as _)));
        let out = read(stdout.map(|s| Box::new(s) as _));
        let err = err_reader.join().unwrap();
        let status = child.wait().unwrap();
        let _ = tx.send(std::process::Output {
            status,
            stdout: out,
            stderr: err,
        });
    });
    match rx.recv_timeout(limit) {
        Ok(out) => out,
        Err(_) => {
            kill(pid);
            panic!("{what}: child did not exit within {limit:?} (hang)");
        }
    }
}

/// A child process killed and reaped when this is dropped, also when the test fails
/// first: no test leaves a process behind.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The first line of `stdout` that `pick` picks, read within two minutes: a child that
/// never says it fails the test instead of hanging it.
pub fn first_line_within<T: Send + 'static>(
    stdout: impl io::Read + Send + 'static,
    what: &str,
    pick: impl Fn(&str) -> Option<T> + Send + 'static,
) -> T {
    use io::BufRead;
    within(std::time::Duration::from_secs(120), what, move || {
        io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .find_map(|l| pick(&l))
    })
    .unwrap_or_else(|| panic!("{what}: the child ended without saying it"))
}

/// Kills our own child `pid`, which has not been reaped (a waiter thread is still
/// blocked on it), and its process group if it leads one (an unreaped child's pid
/// names no other group).
#[cfg(unix)]
fn kill(pid: i32) {
    // SAFETY: kill(2) on our own child and the group it may lead.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
        libc::kill(pid, libc::SIGKILL);
    }
}

/// Kills our own child `pid` (`TerminateProcess`), still unreaped.
#[cfg(windows)]
fn kill(pid: i32) {
    use windows_sys::Win32::Foundation::CloseHandle;
    use windows_sys::Win32::System::Threading::{OpenProcess, TerminateProcess, PROCESS_TERMINATE};
    // SAFETY: OpenProcess gives null or a handle we close; TerminateProcess on it.
    unsafe {
        let process = OpenProcess(PROCESS_TERMINATE, 0, pid as u32);
        if !process.is_null() {
            TerminateProcess(process, 1);
            CloseHandle(process);
        }
    }
}

/// The variables through which [`rerun_as_child`] hands a child its role and its path.
const CHILD_ROLE: &str = "LOGLAG_TEST_ROLE";
const CHILD_PATH: &str = "LOGLAG_TEST_ROLE_PATH";

/// A command that runs the test `test` of this binary again, alone, as a child process
/// in which [`child_role`] returns `role` and `path`. A test that needs a real process
/// (its own environment, a SIGKILL) begins by asking `child_role()`: with a role it
/// plays the child's part; without one it is the parent, and starts the child with
/// this. So no test exists only as a child's entry point. Stdout and stderr are piped.
/// `module` is the caller's `module_path!()`: this program names a test by its module.
pub fn rerun_as_child(
    module: &str,
    test: &str,
    role: &str,
    path: &std::path::Path,
) -> std::process::Command {
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args([
        "--exact",
        &qualified(module, test),
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ROLE, role)
    .env(CHILD_PATH, path)
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped());
    cmd
}

/// In a child started by [`rerun_as_child`], its role and path; `None` in the test
/// itself.
pub fn child_role() -> Option<(String, std::path::PathBuf)> {
    let role = std::env::var(CHILD_ROLE).ok()?;
    let path = std::env::var_os(CHILD_PATH).expect("a role comes with its path");
    Some((role, path.into()))
}

/// The name this program's harness gives the test `test` of the module whose
/// `module_path!()` is `module` (`it::process` and `a_panic_flushes` give
/// `process::a_panic_flushes`).
pub fn qualified(module: &str, test: &str) -> String {
    let module = module.split_once("::").map_or("", |(_crate, path)| path);
    if module.is_empty() {
        test.to_owned()
    } else {
        format!("{module}::{test}")
    }
}

/// Set in a child started by [`alone`].
const ALONE: &str = "LOGLAG_TEST_ALONE";

/// Runs the calling test again, alone in a child process of this program with `env`
/// set, and asserts that it ran and passed there. All the library's tests share one
/// process; a test whose subject is process-wide (the time zone, resident memory, a
/// `fork`, a global subscriber, the process's thread list) begins with
/// `if support::alone(module_path!(), "its_name", &[]) { return; }`: `true` in the
/// parent, whose part is then done; `false` in the child, which runs the body.
pub fn alone(module: &str, test: &str, env: &[(&str, &str)]) -> bool {
    if std::env::var_os(ALONE).is_some() {
        return false;
    }
    let name = qualified(module, test);
    let mut cmd = std::process::Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(ALONE, "1")
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::inherit());
    // Its own process group, so that a hang kills what it forked too: a child of it
    // that holds the pipe would otherwise keep the read below waiting.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let out = wait_child_within(
        cmd.spawn().unwrap(),
        std::time::Duration::from_secs(20 * 60),
        &name,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("test result: ok. 1 passed"),
        "{name}, alone in a child process: {}\n{stdout}",
        out.status
    );
    true
}

/// A small tmpfs mounted for one test, unmounted (and its directory removed) on drop.
pub struct Tmpfs {
    pub path: std::path::PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg(&self.path)
            .status();
    }
}

/// Mounts a tmpfs of `size` (e.g. "64k"). Needs root. Where mounting is not allowed the
/// test is skipped with a message naming it, unless `LOGLAG_REQUIRE_MOUNT=1` (set by
/// `.ci/run`), where it fails instead.
pub fn mount_tmpfs(size: &str, test: &str) -> Option<Tmpfs> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("small");
    std::fs::create_dir(&path).unwrap();
    let mounted = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(&path)
        .status()
        .is_ok_and(|s| s.success());
    if !mounted {
        assert!(
            std::env::var_os("LOGLAG_REQUIRE_MOUNT").is_none(),
            "{test}: cannot mount a tmpfs, and LOGLAG_REQUIRE_MOUNT is set"
        );
        skip_note!("SKIPPED {test}: cannot mount a tmpfs here (needs root); set LOGLAG_REQUIRE_MOUNT=1 to make this a failure");
        return None;
    }
    Some(Tmpfs { path, _dir: dir })
}

/// A wall clock a test moves by hand, for `rolling::Builder::time_source`: rotation
/// happens exactly when the test moves it.
#[derive(Clone)]
pub struct TestClock(Arc<std::sync::atomic::AtomicI64>);

impl TestClock {
    /// At `secs` since the Unix epoch.
    pub fn at(secs: i64) -> TestClock {
        TestClock(Arc::new(std::sync::atomic::AtomicI64::new(secs)))
    }
    pub fn set(&self, secs: i64) {
        self.0.store(secs, std::sync::atomic::Ordering::SeqCst);
    }
    pub fn get(&self) -> i64 {
        self.0.load(std::sync::atomic::Ordering::SeqCst)
    }
    pub fn advance(&self, secs: i64) {
        self.0.fetch_add(secs, std::sync::atomic::Ordering::SeqCst);
    }
    /// What `time_source` takes.
    pub fn source(&self) -> impl Fn() -> std::time::SystemTime + Send + Sync + 'static {
        let now = self.0.clone();
        move || {
            std::time::UNIX_EPOCH
                + std::time::Duration::from_secs(
                    now.load(std::sync::atomic::Ordering::SeqCst) as u64
                )
        }
    }
    #[cfg(feature = "rolling")]
    pub fn install(&self, builder: loglag::rolling::Builder) -> loglag::rolling::Builder {
        builder.time_source(self.source())
    }
}

/// A file's bytes, gunzipped when its name ends in `.gz`.
#[cfg(feature = "rolling")]
pub fn decompressed(path: &std::path::Path) -> Vec<u8> {
    use std::io::Read;
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    if !path.to_string_lossy().ends_with(".gz") {
        return bytes;
    }
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&bytes[..])
        .read_to_end(&mut out)
        .unwrap_or_else(|e| panic!("{} does not decompress: {e}", path.display()));
    out
}

/// The promise tests' shared sinks and thread readers.
pub mod alloc;
pub mod procfs;
pub mod promises;
