//! Child processes that cannot outlive the lab: each gets `PR_SET_PDEATHSIG` and its own
//! process group, and is killed (group and all) when its guard drops.

use std::io;
use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use super::signal::{self, Signal};

/// How a child ended under [`ChildGuard::stop_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It had exited before it was signalled.
    Before(std::process::ExitStatus),
    /// It exited after the signal, within the grace period.
    Exited(std::process::ExitStatus),
    /// It was still running after the grace period and was killed.
    Killed { after: Duration },
}

/// In words, as reports say it: "exited (signal: 15 (SIGTERM))", "had already exited
/// (exit status: 1)", "did not exit within 10s of the signal; killed".
impl std::fmt::Display for Ended {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ended::Before(status) => write!(f, "had already exited ({status})"),
            Ended::Exited(status) => write!(f, "exited ({status})"),
            Ended::Killed { after } => {
                write!(f, "did not exit within {after:?} of the signal; killed")
            }
        }
    }
}

/// The hidden subcommand that starts a child of the lab: `loglag child '<json>'`.
pub const SUBCOMMAND: &str = "child";

/// The command that starts `exe` (the `loglag` binary) as one of the lab's children:
/// `role` says what it is, `settings` (serialised as a JSON object) how. `child.rs`,
/// above every role, parses the two back into its `ChildSpec` and runs the role; each
/// role builds its own command through here, so no role imports the list of them all.
pub fn role_command(exe: &Path, role: &str, settings: &impl serde::Serialize) -> Command {
    let mut spec = serde_json::to_value(settings).expect("a child's settings serialise");
    spec.as_object_mut()
        .expect("a child's settings are a JSON object")
        .insert("role".into(), role.into());
    let mut cmd = Command::new(exe);
    cmd.arg(SUBCOMMAND).arg(spec.to_string());
    cmd
}

/// A running child, killed with its process group on drop.
///
/// The group is only ever signalled while its leader is unreaped (running, or a zombie
/// that still holds the group id): once reaped, the id may belong to someone else. So
/// an exit is first seen without reaping (`waitid` with `WNOWAIT`), the group is killed
/// (taking any grandchildren with it), and only then is the leader reaped.
#[derive(Debug)]
pub struct ChildGuard {
    pub child: Child,
    reaped: Option<std::process::ExitStatus>,
    /// The group, for a second Ctrl-C's teardown: let go of before the leader is reaped.
    held: Option<super::teardown::Held>,
}

impl ChildGuard {
    /// Spawns `command` in its own process group, to die with us.
    pub fn spawn(mut command: Command, what: &str) -> io::Result<ChildGuard> {
        own_group_dying_with_us(&mut command, what)?;
        let child = command
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {what}: {e}")))?;
        Ok(ChildGuard {
            held: Some(super::teardown::hold_group(child.id())),
            child,
            reaped: None,
        })
    }

    /// Reaps the leader (blocking until it exits), after letting go of its group: from
    /// then on its id may be reused, and no teardown may signal it.
    fn reap(&mut self) -> io::Result<std::process::ExitStatus> {
        self.held.take();
        self.child.wait()
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the leader has exited, without reaping it.
    #[cfg(unix)]
    fn has_exited(&self) -> bool {
        if self.reaped.is_some() {
            return true;
        }
        // SAFETY: `info` is a valid out-pointer; WNOWAIT leaves the child waitable.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            let rc = libc::waitid(
                libc::P_PID,
                self.child.id(),
                &mut info,
                libc::WEXITED | libc::WNOHANG | libc::WNOWAIT,
            );
            rc == 0 && info.si_pid() != 0
        }
    }

    /// Kills what is left of the group and reaps the leader, if it has exited.
    fn reap_if_exited(&mut self) -> Option<std::process::ExitStatus> {
        if self.reaped.is_none() && self.has_exited() {
            self.kill_group(Signal::Kill);
            self.reaped = self.reap().ok();
        }
        self.reaped
    }

    /// `Some(status)` if it has exited (then it is reaped, and its group killed).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.reap_if_exited()
    }

    /// SIGTERM to the group, then SIGKILL after `grace`; reaps the child.
    pub fn stop(&mut self, grace: Duration) {
        self.stop_with(Signal::Term, true, grace);
    }

    /// Sends `signal` (to the whole group, or to the child alone as `docker stop` or
    /// systemd would), waits up to `grace` for the child to exit, then SIGKILLs the
    /// group. Reaps the child and says how it ended.
    pub fn stop_with(&mut self, signal: Signal, whole_group: bool, grace: Duration) -> Ended {
        if let Some(status) = self.reap_if_exited() {
            return Ended::Before(status);
        }
        if whole_group {
            self.kill_group(signal);
        } else {
            self.signal(signal);
        }
        // A child's exit has no file descriptor to wait on here.
        let exited =
            super::poll::poll_until(grace, Duration::from_millis(10), || self.reap_if_exited());
        if let Some(status) = exited {
            return Ended::Exited(status);
        }
        self.kill_group(Signal::Kill);
        self.reaped = self.reap().ok();
        Ended::Killed { after: grace }
    }

    /// Waits for the leader to exit on its own, then kills what is left of its group.
    #[cfg(unix)]
    pub fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        if let Some(status) = self.reaped {
            return Ok(status);
        }
        // SAFETY: as in `has_exited`; blocks until the leader exits, without reaping.
        unsafe {
            let mut info: libc::siginfo_t = std::mem::zeroed();
            libc::waitid(
                libc::P_PID,
                self.child.id(),
                &mut info,
                libc::WEXITED | libc::WNOWAIT,
            );
        }
        self.kill_group(Signal::Kill);
        let status = self.reap()?;
        self.reaped = Some(status);
        Ok(status)
    }

    /// Sends `signal` to the child itself (not its group), unless it has been reaped.
    fn signal(&self, signal: Signal) {
        if self.reaped.is_none() {
            // Our unreaped child: the pid is still its own.
            signal::send(self.child.id() as i32, signal);
        }
    }

    fn kill_group(&self, signal: Signal) {
        if self.reaped.is_some() {
            return; // the group id may have been reused
        }
        // The group of our unreaped child, whose id it still holds.
        signal::send(-(self.child.id() as i32), signal);
    }
}

/// Where no child is ever started (`own_group_dying_with_us` refuses), the guard's
/// plain std equivalents.
#[cfg(not(unix))]
impl ChildGuard {
    fn has_exited(&mut self) -> bool {
        self.reaped.is_some() || self.child.try_wait().is_ok_and(|s| s.is_some())
    }

    pub fn wait(&mut self) -> io::Result<std::process::ExitStatus> {
        self.child.wait()
    }
}

/// Makes `command`'s process the leader of its own group, so the guard can kill the
/// group (and on Linux, `PR_SET_PDEATHSIG`: dies when the lab does).
#[cfg(unix)]
fn own_group_dying_with_us(command: &mut Command, _what: &str) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    // SAFETY: only async-signal-safe calls (prctl, setpgid) between fork and exec.
    unsafe {
        command.pre_exec(|| {
            // Linux kills the child when the lab dies; elsewhere the guard's
            // process-group kill is the only net.
            #[cfg(target_os = "linux")]
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::setpgid(0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    Ok(())
}

/// Without process groups and a parent-death signal nothing guarantees that a child
/// dies with the lab, so none is started.
#[cfg(not(unix))]
fn own_group_dying_with_us(_command: &mut Command, what: &str) -> io::Result<()> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "cannot start {what}: the lab's children need unix (process groups, and PR_SET_PDEATHSIG on Linux); this build is for {}",
            std::env::consts::OS
        ),
    ))
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if self.reaped.is_none() {
            self.kill_group(Signal::Kill);
            let _ = self.reap();
        }
    }
}

/// CPU seconds (user + system, all threads) a process has used, from /proc.
#[cfg(unix)]
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // Fields after the command name, which is in parentheses and may contain spaces.
    let rest = &stat[stat.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    Some((utime + stime) / ticks)
}

/// No /proc: unknown.
#[cfg(not(unix))]
pub fn cpu_seconds(_pid: u32) -> Option<f64> {
    None
}

// /proc and kill(2).
#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn reads_own_cpu_time() {
        let pid = std::process::id();
        let before = cpu_seconds(pid).expect("parsable /proc/self/stat");
        // Burn CPU until the kernel's tick accounting moves (it has 10 ms resolution).
        let mut x = 0u64;
        let mut rounds = 0;
        while cpu_seconds(pid).unwrap() <= before && rounds < 100_000 {
            for i in 0..100_000u64 {
                x = std::hint::black_box(x.wrapping_add(i * i));
            }
            rounds += 1;
        }
        assert!(cpu_seconds(pid).unwrap() > before);
    }

    #[test]
    fn a_dropped_guard_leaves_no_process() {
        let mut cmd = Command::new("sleep");
        cmd.arg("60");
        let guard = ChildGuard::spawn(cmd, "sleep").unwrap();
        let pid = guard.pid();
        drop(guard);
        // SAFETY: signal 0 only checks existence.
        let alive = unsafe { libc::kill(pid as i32, 0) } == 0;
        assert!(!alive, "child {pid} still exists");
    }
}
