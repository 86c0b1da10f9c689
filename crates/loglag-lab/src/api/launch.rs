//! Starting the API under test for one run: the built-in server as a child (through
//! the [`ChildSpec`] contract), or the user's `--app` command with its placeholders
//! filled in. Either way the API dies with the lab.

use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::api::condition::RunCondition;
use crate::api::control::{ApiStats, ControlClient};
use crate::api::server::{self, ServeConfig};
use crate::sys::child::{ChildGuard, Ended};
use crate::sys::signal::Signal;

/// Which API to start.
#[derive(Debug, Clone)]
pub enum ApiKind<'a> {
    /// `loglag`'s own server, run from this executable with `config` (its condition and
    /// log path are the run's).
    BuiltIn {
        exe: &'a Path,
        config: &'a ServeConfig,
    },
    /// A shell command with `{port}`, `{log_path}` and `{condition}` placeholders, how
    /// to know it is ready, and for how long to wait.
    App {
        command: &'a str,
        ready: &'a Readiness,
        timeout: Duration,
        log: AppLog,
        /// Hold it and everything it forks in a cgroup killed as one (where cgroup v2
        /// allows, and no CPU limit needs the process in another v2 cgroup).
        contain: bool,
    },
}

/// Where an `--app` writes the log the lab reads (`--app-log`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum AppLog {
    /// The path the lab fills in for `{log_path}` (a FIFO the reader reads).
    #[default]
    Path,
    /// Its standard output, as containers log: the lab connects it to the FIFO.
    Stdout,
    /// Its standard error.
    Stderr,
    /// A regular file it writes on its own (a path in its configuration): the lab
    /// follows it from its end at the app's start, as `tail -F` does, into the FIFO.
    File(PathBuf),
}

impl std::str::FromStr for AppLog {
    type Err = String;
    fn from_str(s: &str) -> Result<AppLog, String> {
        match s {
            "path" => Ok(AppLog::Path),
            "stdout" => Ok(AppLog::Stdout),
            "stderr" => Ok(AppLog::Stderr),
            // A file is named as a path, so that a typo of a keyword is not taken for
            // a file the lab would wait for in vain.
            file if file.contains('/') => Ok(AppLog::File(PathBuf::from(file))),
            other => Err(format!(
                "--app-log {other:?}: expected path (the app writes to {{log_path}}), stdout, stderr, or the file it writes (with a /, e.g. ./app.log)"
            )),
        }
    }
}

/// How the lab knows an `--app` is ready for its load (`--ready`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Readiness {
    /// A TCP connection to its port succeeds (the default). The probe is a real
    /// connection: an app that logs every connection logs it.
    #[default]
    Connect,
    /// `GET PATH` answers 2xx. The probe is a real request, logged like any.
    Http(String),
    /// Its stderr has a line containing this text (no connection at all, so nothing
    /// the app logs is the probe's).
    Log(String),
}

impl std::str::FromStr for Readiness {
    type Err = String;
    fn from_str(s: &str) -> Result<Readiness, String> {
        match s.split_once(':') {
            _ if s == "connect" => Ok(Readiness::Connect),
            Some(("http", path)) if path.starts_with('/') => Ok(Readiness::Http(path.to_owned())),
            Some(("log", text)) if !text.is_empty() => Ok(Readiness::Log(text.to_owned())),
            _ => Err(format!(
                "--ready {s:?}: expected connect, http:/PATH (a 2xx answer) or log:TEXT (a line of the app's stderr containing TEXT)"
            )),
        }
    }
}

impl Readiness {
    /// Whether the app at `http`, writing its stderr to `stderr_path`, is ready now.
    fn ready(&self, http: std::net::SocketAddr, stderr_path: &Path) -> bool {
        use std::io::Write;
        let connect = || std::net::TcpStream::connect_timeout(&http, Duration::from_millis(200));
        match self {
            Readiness::Connect => connect().is_ok(),
            Readiness::Http(path) => {
                let Ok(mut stream) = connect() else {
                    return false;
                };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
                let request =
                    format!("GET {path} HTTP/1.1\r\nHost: {http}\r\nConnection: close\r\n\r\n");
                if stream.write_all(request.as_bytes()).is_err() {
                    return false;
                }
                let mut status = [0u8; 12];
                stream.read_exact(&mut status).is_ok()
                    && status.starts_with(b"HTTP/1.")
                    && status[9] == b'2'
            }
            Readiness::Log(text) => std::fs::read(stderr_path)
                .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(text.as_str())),
        }
    }
}

/// A running API.
#[derive(Debug)]
pub struct ApiProc {
    pub guard: ChildGuard,
    pub http: std::net::SocketAddr,
    /// Only the built-in API has a control channel.
    pub control: Option<ControlClient>,
    stderr_path: PathBuf,
    /// An `--app`'s tag (`sys::procfs::APP_TAG`): every process it started carries it.
    tag: Option<String>,
    /// `--app-log FILE`: the thread copying what the app appends into the FIFO.
    follow: Option<FileFollower>,
    /// The cgroup holding an `--app` and everything it forks, where one could be made.
    group: Option<crate::sys::cgroup::KillGroup>,
}

impl Drop for ApiProc {
    /// On every path out of a run, nothing the app started survives it.
    fn drop(&mut self) {
        let _ = self.kill_leftovers();
    }
}

/// The `child` role of the built-in API (`child.rs` runs it).
pub const CHILD_ROLE: &str = "api";

/// The command that starts `exe` as the built-in API with `config`.
pub fn builtin_command(exe: &Path, config: &ServeConfig) -> Command {
    crate::sys::child::role_command(exe, CHILD_ROLE, config)
}

impl ApiProc {
    /// Starts the API logging to `log_path`, its stderr going to `stderr_path`, and
    /// returns once it accepts connections.
    pub fn start(
        kind: ApiKind<'_>,
        condition: &RunCondition,
        log_path: &Path,
        stderr_path: &Path,
    ) -> io::Result<ApiProc> {
        let stderr = std::fs::File::create(stderr_path)?;
        let stderr_path = stderr_path.to_owned();
        match kind {
            ApiKind::BuiltIn { exe, config } => {
                let Some(condition) = condition.built_in() else {
                    return Err(io::Error::other(format!(
                        "{condition:?} is not a condition of the built-in API: give --app"
                    )));
                };
                let mut cmd = builtin_command(
                    exe,
                    &ServeConfig {
                        port: 0,
                        condition,
                        log_path: Some(log_path.to_owned()),
                        ..config.clone()
                    },
                );
                cmd.stdin(Stdio::null())
                    .stdout(Stdio::piped())
                    .stderr(stderr);
                let mut guard = ChildGuard::spawn(cmd, "the API")?;
                let mut line = String::new();
                BufReader::new(guard.child.stdout.take().expect("piped")).read_line(&mut line)?;
                let Some(l) = server::parse_ready_line(&line) else {
                    guard.stop(Duration::from_secs(1));
                    return Err(io::Error::other(format!(
                        "the API did not start: {}",
                        tail(&stderr_path)
                    )));
                };
                Ok(ApiProc {
                    guard,
                    http: l.http,
                    control: Some(ControlClient {
                        endpoint: l.control,
                    }),
                    stderr_path,
                    tag: None,
                    follow: None,
                    group: None,
                })
            }
            ApiKind::App {
                command: template,
                ready,
                timeout,
                log,
                contain,
            } => {
                let port = std::net::TcpListener::bind("127.0.0.1:0")?
                    .local_addr()?
                    .port();
                let command = template
                    .replace("{port}", &port.to_string())
                    .replace("{log_path}", &log_path.display().to_string())
                    .replace("{condition}", condition.name());
                static STARTS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
                let tag = format!(
                    "{}:{}",
                    std::process::id(),
                    STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                );
                let mut cmd = Command::new("sh");
                cmd.arg("-c")
                    .arg(format!("exec {command}"))
                    .env(crate::sys::procfs::APP_TAG, &tag)
                    .stdin(Stdio::null());
                // The app joins its cgroup before it runs, so nothing it forks is ever
                // outside it. Without one (no cgroup v2, no cgroup.kill, no permission)
                // the environment tag still finds what it leaves, unless a process
                // clears its environment.
                let group = contain
                    .then(|| {
                        crate::sys::cgroup::KillGroup::create(&format!(
                            "loglag-{}-app-{}",
                            std::process::id(),
                            tag.rsplit(':').next().unwrap_or("0")
                        ))
                    })
                    .and_then(Result::ok);
                // A group that can be made but not joined (a rule refuses the move)
                // is found out with a throwaway child, not with the app.
                let group = group.filter(|g| {
                    let mut probe = Command::new("true");
                    join_on_exec(&mut probe, g).is_ok() && probe.status().is_ok_and(|s| s.success())
                });
                if let Some(group) = &group {
                    join_on_exec(&mut cmd, group)?;
                }
                // The reader holds the FIFO open for reading already, so this open
                // does not wait.
                let fifo = || {
                    open_fifo_writer(log_path).map_err(|e| {
                        io::Error::new(
                            e.kind(),
                            format!("cannot connect the app's log to the reader's FIFO: {e}"),
                        )
                    })
                };
                let mut follow = None;
                match log {
                    AppLog::Path => {
                        cmd.stdout(Stdio::null()).stderr(stderr);
                    }
                    AppLog::File(file) => {
                        cmd.stdout(Stdio::null()).stderr(stderr);
                        // From its end now: what an earlier run (or an earlier life of
                        // the service) wrote is not this run's.
                        follow = Some(FileFollower::start(file.clone(), fifo()?)?);
                    }
                    AppLog::Stdout => {
                        cmd.stdout(fifo()?).stderr(stderr);
                    }
                    AppLog::Stderr => {
                        cmd.stdout(Stdio::null()).stderr(fifo()?);
                    }
                }
                let mut guard = ChildGuard::spawn(cmd, "the --app command")?;
                let http: std::net::SocketAddr = ([127, 0, 0, 1], port).into();
                // Polling a program the lab does not control: there is nothing to
                // wait on.
                let answer =
                    crate::sys::poll::poll_until(timeout, Duration::from_millis(20), || {
                        if let Some(status) = guard.exited() {
                            return Some(Err(status));
                        }
                        ready.ready(http, &stderr_path).then_some(Ok(()))
                    });
                match answer {
                    Some(Ok(())) => {}
                    Some(Err(status)) => {
                        // A daemonising app exits here and leaves its daemon: not for long.
                        crate::sys::procfs::kill_tagged(|t| t == tag);
                        return Err(io::Error::other(format!(
                            "--app exited early ({status}) before listening on port {port}: {}",
                            tail(&stderr_path)
                        )));
                    }
                    None => {
                        guard.stop(Duration::from_secs(1));
                        crate::sys::procfs::kill_tagged(|t| t == tag);
                        return Err(io::Error::other(format!(
                            "--app was not ready ({}) on 127.0.0.1:{port} within {:?} (--ready-timeout): {}",
                            match ready {
                                Readiness::Connect => "no connection".to_owned(),
                                Readiness::Http(p) => format!("no 2xx answer to GET {p}"),
                                Readiness::Log(t) => format!("no stderr line containing {t:?}"),
                            },
                            timeout,
                            tail(&stderr_path)
                        )));
                    }
                }
                Ok(ApiProc {
                    guard,
                    http,
                    control: None,
                    stderr_path,
                    tag: Some(tag),
                    follow,
                    group,
                })
            }
        }
    }

    /// The built-in API's counters; `None` for an `--app`.
    pub fn stats(&self) -> io::Result<Option<ApiStats>> {
        match &self.control {
            None => Ok(None),
            Some(c) => c.stats().map(Some).map_err(|e| {
                io::Error::other(format!(
                    "the API's control channel failed: {e}; {}",
                    tail(&self.stderr_path)
                ))
            }),
        }
    }

    /// Stops the API as a deployment does: `signal` to the process, then up to
    /// `timeout` for it to exit, then SIGKILL. Then kills whatever an `--app` started
    /// that outlived it (workers, a `setsid` daemon). Returns how it ended, typed.
    pub fn stop(&mut self, signal: Signal, timeout: Duration) -> AppExit {
        let ended = self.guard.stop_with(signal, false, timeout);
        AppExit {
            ended,
            leftovers: self.kill_leftovers(),
        }
    }

    /// Kills whatever the `--app` started that outlived it and returns their pids.
    fn kill_leftovers(&mut self) -> Vec<u32> {
        let app = self.guard.pid();
        // The cgroup first: it holds even processes that cleared their environment.
        let mut killed: Vec<u32> = self.group.take().map(|g| g.kill()).unwrap_or_default();
        // Once is enough: after the app's stop nothing of it is left to start more.
        if let Some(tag) = self.tag.take() {
            for pid in crate::sys::procfs::kill_tagged(|t| t == tag) {
                if !killed.contains(&pid) {
                    killed.push(pid);
                }
            }
        }
        killed.retain(|&pid| pid != app);
        killed
    }

    /// CPU seconds the API has used: an `--app` held in a cgroup with everything it
    /// forked (pre-fork workers included), else its main process.
    pub fn cpu_seconds(&self) -> Option<f64> {
        self.group
            .as_ref()
            .and_then(|g| g.cpu_seconds())
            .or_else(|| crate::sys::child::cpu_seconds(self.guard.pid()))
    }

    /// The API's processes now: an `--app`'s cgroup members (everything it forked),
    /// else its main process and what descends from it.
    pub fn processes(&self) -> Vec<u32> {
        match self.group.as_ref().map(|g| g.pids()) {
            Some(pids) if !pids.is_empty() => pids,
            _ => crate::sys::procfs::with_descendants(self.guard.pid()),
        }
    }

    /// Stops following an `--app-log FILE` after a last look, closing the FIFO so
    /// that the reader sees its end. Nothing for the other logs.
    pub fn stop_following(&mut self) -> io::Result<()> {
        match self.follow.take() {
            Some(f) => f.stop(),
            None => Ok(()),
        }
    }

    /// Runs an `--app-recover` command (placeholders filled) after the app's stop, as
    /// its next start would run: its stderr goes to the app's stderr file, it must exit
    /// 0 within `timeout` (else it is killed with what it started), and what it writes
    /// into the log counts like the app's own lines. Returns N when the last line of
    /// its stdout is `recovered N`: the records it says it delivered.
    pub fn recover(&mut self, command: &str, timeout: Duration) -> io::Result<Option<u64>> {
        let out = std::fs::OpenOptions::new()
            .append(true)
            .create(true)
            .open(&self.stderr_path)?;
        let mut cmd = Command::new("sh");
        cmd.arg("-c")
            .arg(format!("exec {command}"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(out);
        let mut guard = ChildGuard::spawn(cmd, "the --app-recover command")?;
        // Read on a thread: a command that writes more than a pipe holds must not
        // stall until the timeout. Its end comes with the command's (its group is
        // killed once it exits).
        let stdout = guard.child.stdout.take().expect("piped");
        let (said_tx, said) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut text = String::new();
            let _ = io::Read::read_to_string(&mut io::Read::take(stdout, 1 << 20), &mut text);
            let _ = said_tx.send(text);
        });
        // A child's exit has no file descriptor to wait on here.
        let Some(status) =
            crate::sys::poll::poll_until(timeout, Duration::from_millis(10), || guard.exited())
        else {
            guard.stop(Duration::from_secs(1));
            return Err(io::Error::other(format!(
                "--app-recover did not finish within {timeout:?} (--drain-timeout): {}",
                tail(&self.stderr_path)
            )));
        };
        // A daemon it left (`setsid`, out of its group) may hold its stdout open: what
        // was said by then, without waiting for that end.
        let said = said
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_default();
        if status.success() {
            Ok(recovered_count(&said))
        } else {
            Err(io::Error::other(format!(
                "--app-recover failed ({status}): {}",
                tail(&self.stderr_path)
            )))
        }
    }

    /// An error naming the exit status and the API's last stderr lines if it exited.
    pub fn check_alive(&mut self) -> io::Result<()> {
        match self.guard.exited() {
            Some(status) => Err(io::Error::other(format!(
                "the API exited during the run ({status}): {}",
                tail(&self.stderr_path)
            ))),
            None => Ok(()),
        }
    }
}

/// N from the last line of what an `--app-recover` printed, when it is `recovered N`.
fn recovered_count(stdout: &str) -> Option<u64> {
    stdout
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())?
        .trim()
        .strip_prefix("recovered ")?
        .parse()
        .ok()
}

/// Copies what an app appends to its own log file into the reader's FIFO, every
/// 10 ms, from the file's end when it started, as `tail -F` does: the file stays open,
/// so what the app wrote before a rotation by rename is read to its end before the new
/// file at the path is followed from its start; a file truncated in place is read again
/// from its start; a path that names no file for a while is looked up again. (A file
/// truncated and refilled past the old length within 10 ms is taken for a grown one.)
#[derive(Debug)]
struct FileFollower {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<io::Result<()>>>,
}

impl FileFollower {
    fn start(path: PathBuf, mut fifo: std::fs::File) -> io::Result<FileFollower> {
        use std::io::{Seek, Write};
        /// The file being read, positioned after what was copied, and its identity.
        struct Open {
            file: std::fs::File,
            id: (u64, u64),
        }
        fn open_at(path: &Path, at_end: bool) -> io::Result<Option<Open>> {
            use std::io::Seek;
            let mut file = match std::fs::File::open(path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            };
            if at_end {
                file.seek(io::SeekFrom::End(0))?;
            }
            let meta = file.metadata()?;
            Ok(Some(Open {
                file,
                id: identity(&meta),
            }))
        }
        // Before the app starts: what is in the file now is not this run's.
        let mut open = open_at(&path, true)?;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("app-log-follow".into())
                .spawn(move || -> io::Result<()> {
                    let mut buf = vec![0u8; 64 << 10];
                    let mut copy_to_end = |file: &mut std::fs::File| -> io::Result<()> {
                        loop {
                            let n = file.read(&mut buf)?;
                            if n == 0 {
                                return Ok(());
                            }
                            fifo.write_all(&buf[..n])?;
                        }
                    };
                    loop {
                        // Read after the flag, so the last look sees every byte the
                        // app wrote before it was stopped.
                        let last = stop.load(std::sync::atomic::Ordering::Acquire);
                        if let Some(o) = &mut open {
                            copy_to_end(&mut o.file)?;
                        }
                        match std::fs::metadata(&path) {
                            Ok(meta) => match &mut open {
                                Some(o) if o.id == identity(&meta) => {
                                    if meta.len() < o.file.stream_position()? {
                                        o.file.seek(io::SeekFrom::Start(0))?;
                                        copy_to_end(&mut o.file)?;
                                    }
                                }
                                // Replaced (or created): the old one was read to its end.
                                _ => {
                                    open = open_at(&path, false)?;
                                    if let Some(o) = &mut open {
                                        copy_to_end(&mut o.file)?;
                                    }
                                }
                            },
                            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                            Err(e) => return Err(e),
                        }
                        if last {
                            return Ok(());
                        }
                        // A file has nothing to wait on portably; inotify would be
                        // one more moving part for a 10 ms poll.
                        std::thread::sleep(Duration::from_millis(10));
                    }
                })?
        };
        Ok(FileFollower {
            stop,
            thread: Some(thread),
        })
    }

    /// A last look, then the FIFO's write end is closed.
    fn stop(mut self) -> io::Result<()> {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
        self.thread
            .take()
            .expect("joined once")
            .join()
            .map_err(|_| io::Error::other("the --app-log follower panicked"))?
            .map_err(|e| io::Error::new(e.kind(), format!("following --app-log: {e}")))
    }
}

impl Drop for FileFollower {
    /// A run that ended early (the app did not start, a run failed): the follower ends
    /// at its next look. Not joined: a write into a FIFO nobody drains would hold the
    /// drop.
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Release);
    }
}

/// Opens the reader's FIFO for writing. Non-blocking, so a reader that died is an
/// error (ENXIO), not a wait; then blocking again, as the app's stdout expects.
#[cfg(unix)]
fn open_fifo_writer(path: &Path) -> io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    // SAFETY: fcntl on a descriptor we own.
    unsafe {
        let flags = libc::fcntl(file.as_raw_fd(), libc::F_GETFL);
        libc::fcntl(file.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
    }
    Ok(file)
}

/// No FIFOs on Windows (the reader refuses first: see `reader::ensure_fifo`).
#[cfg(not(unix))]
fn open_fifo_writer(path: &Path) -> io::Result<std::fs::File> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!("{}: FIFOs need unix", path.display()),
    ))
}

/// A file's identity (device, inode): what tells a file replaced at the path from the
/// one being read.
#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

/// std has no stable file index on Windows; the follower never runs there (it writes
/// into a FIFO), so every file is the same one.
#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> (u64, u64) {
    (0, 0)
}

/// Makes the process `cmd` starts join `group` before it runs its program, so that
/// nothing it forks is ever outside the group.
#[cfg(unix)]
fn join_on_exec(cmd: &mut Command, group: &crate::sys::cgroup::KillGroup) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let procs = std::ffi::CString::new(group.procs_path().into_os_string().into_encoded_bytes())
        .map_err(io::Error::other)?;
    // SAFETY: only async-signal-safe calls (open, write, close) between fork and exec;
    // the path was built before the fork.
    unsafe {
        cmd.pre_exec(move || {
            let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
            if fd < 0 {
                return Err(io::Error::last_os_error());
            }
            let joined = libc::write(fd, b"0".as_ptr().cast(), 1) == 1;
            let error = io::Error::last_os_error();
            libc::close(fd);
            if !joined {
                return Err(error);
            }
            Ok(())
        });
    }
    Ok(())
}

/// No cgroups: nothing to join (`KillGroup::create` fails first).
#[cfg(not(unix))]
fn join_on_exec(_cmd: &mut Command, _group: &crate::sys::cgroup::KillGroup) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "a kill group is a Linux cgroup",
    ))
}

/// How a stopped API ended, kept typed until a report renders it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AppExit {
    pub ended: Ended,
    /// Processes it started that were still running after it, killed by the lab.
    pub leftovers: Vec<u32>,
}

impl std::fmt::Display for AppExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.ended)?;
        if !self.leftovers.is_empty() {
            write!(
                f,
                ", leaving {} process(es) running (pids {:?}), which the lab killed",
                self.leftovers.len(),
                self.leftovers
            )?;
        }
        Ok(())
    }
}

/// The last lines of a child's stderr, for error messages: what an `--app` wrote, shown
/// [`visible`], so that its escapes (a window title, a cleared screen, colours) do not
/// reach the user's terminal.
fn tail(path: &Path) -> String {
    let mut bytes = Vec::new();
    let _ = std::fs::File::open(path).and_then(|mut f| f.read_to_end(&mut bytes));
    let text = String::from_utf8_lossy(&bytes);
    // Split first, so that a line's `\r\n` ending is not shown as an escape.
    let lines: Vec<String> = text
        .lines()
        .rev()
        .take(5)
        .map(|l| visible(l.as_bytes()))
        .collect();
    if lines.is_empty() {
        "(no output on stderr)".into()
    } else {
        format!(
            "stderr: {}",
            lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
        )
    }
}

/// `bytes` as text that is safe on a terminal: invalid UTF-8 shown lossily (U+FFFD),
/// and every control character but `\n` and `\t` (C0, DEL, and C1 U+0080-U+009F, which
/// some terminals take as CSI, OSC, ...) as a visible escape: `\x1b`, `\x7f`, `\u{9b}`.
pub(crate) fn visible(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let text = String::from_utf8_lossy(bytes);
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        match c as u32 {
            0x0a | 0x09 => shown.push(c),
            n @ (0x00..=0x1f | 0x7f) => {
                let _ = write!(shown, "\\x{n:02x}");
            }
            n @ 0x80..=0x9f => {
                let _ = write!(shown, "\\u{{{n:x}}}");
            }
            _ => shown.push(c),
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::{recovered_count, visible};

    #[test]
    fn a_recovery_says_what_it_delivered_on_its_last_line_or_nothing_is_claimed() {
        assert_eq!(recovered_count("opening spool\nrecovered 42\n\n"), Some(42));
        assert_eq!(recovered_count("recovered 42\ndone\n"), None);
        assert_eq!(recovered_count("recovered many\n"), None);
        assert_eq!(recovered_count(""), None);
    }

    #[test]
    fn control_characters_are_shown_escaped_and_invalid_utf8_lossily() {
        let shown = visible(b"a\x1b]0;pwned\x07\x1b[2Jb\tc\r\n\xc2\x9b\x7f \xff \xc3\xa9");
        assert_eq!(
            shown,
            "a\\x1b]0;pwned\\x07\\x1b[2Jb\tc\\x0d\n\\u{9b}\\x7f \u{fffd} \u{e9}"
        );
        assert!(
            !shown
                .chars()
                .any(|c| c.is_control() && c != '\n' && c != '\t'),
            "{shown:?}"
        );
    }
}
