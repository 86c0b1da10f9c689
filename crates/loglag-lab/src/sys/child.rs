//! Child processes that cannot outlive the lab: each gets `PR_SET_PDEATHSIG` and its own
//! process group, and is killed (group and all) when its guard drops.

use std::io;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// A running child, killed with its process group on drop.
#[derive(Debug)]
pub struct ChildGuard {
    pub child: Child,
    pub what: String,
}

impl ChildGuard {
    /// Spawns `command` in its own process group, to die with us.
    pub fn spawn(mut command: Command, what: &str) -> io::Result<ChildGuard> {
        // SAFETY: only async-signal-safe calls (prctl, setpgid) between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0
                    || libc::setpgid(0, 0) != 0
                {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {what}: {e}")))?;
        Ok(ChildGuard {
            child,
            what: what.to_owned(),
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// `Some(status)` if it has exited.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// SIGTERM to the group, then SIGKILL after `grace`; reaps the child.
    pub fn stop(&mut self, grace: Duration) {
        if self.exited().is_some() {
            self.kill_group(libc::SIGKILL);
            return;
        }
        self.kill_group(libc::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exited().is_some() {
                self.kill_group(libc::SIGKILL);
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        self.kill_group(libc::SIGKILL);
        let _ = self.child.wait();
    }

    fn kill_group(&self, signal: i32) {
        // SAFETY: kill(2) on the child's own process group.
        unsafe { libc::kill(-(self.child.id() as i32), signal) };
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        self.kill_group(libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// CPU seconds (user + system, all threads) a process has used, from /proc.
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

#[cfg(test)]
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
