//! CPU limits with cgroups, v2 or v1, whichever the machine has; and a cgroup that
//! holds an `--app` and everything it forks, killed at once with `cgroup.kill`.

use std::io;
use std::path::{Path, PathBuf};

// Kept with the registry that a second Ctrl-C tears down, which needs them too.
use super::teardown::{kill_all, remove_dir_when_empty};

const PERIOD_US: u64 = 100_000;

/// A cgroup with a CPU quota. Removed on drop (once its processes have exited).
#[derive(Debug)]
pub struct CpuLimit {
    dir: PathBuf,
    pub cores: f64,
    /// Removed by a second Ctrl-C's teardown, should the lab not get to drop it.
    _held: super::teardown::Held,
}

impl CpuLimit {
    /// Creates a cgroup limited to `cores` CPUs. The error says why it was not possible
    /// (no cgroup filesystem, no permission, ...).
    pub fn create(name: &str, cores: f64) -> io::Result<CpuLimit> {
        let quota = ((cores * PERIOD_US as f64).round() as u64).max(1000);
        let root = Path::new("/sys/fs/cgroup");
        if cpu_limits_are_v2() {
            let dir = root.join(name);
            make_dir(&dir)?;
            let limit = CpuLimit::held(dir, cores);
            write(&limit.dir.join("cpu.max"), &format!("{quota} {PERIOD_US}"))?;
            Ok(limit)
        } else if root.join("cpu").is_dir() {
            let dir = root.join("cpu").join(name);
            make_dir(&dir)?;
            let limit = CpuLimit::held(dir, cores);
            write(&limit.dir.join("cpu.cfs_period_us"), &PERIOD_US.to_string())?;
            write(&limit.dir.join("cpu.cfs_quota_us"), &quota.to_string())?;
            Ok(limit)
        } else {
            Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "no cgroup CPU controller under /sys/fs/cgroup",
            ))
        }
    }

    fn held(dir: PathBuf, cores: f64) -> CpuLimit {
        CpuLimit {
            _held: super::teardown::hold_cpu_limit(&dir),
            dir,
            cores,
        }
    }

    /// Moves a process into the cgroup.
    pub fn add(&self, pid: u32) -> io::Result<()> {
        write(&self.dir.join("cgroup.procs"), &pid.to_string())
    }
}

fn make_dir(dir: &Path) -> io::Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot create cgroup {}: {e}", dir.display()),
        )),
    }
}

fn write(path: &Path, value: &str) -> io::Result<()> {
    std::fs::write(path, value).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot write {value:?} to {}: {e}", path.display()),
        )
    })
}

/// Removes `loglag-PID-*` cgroups (CPU limits and an app's [`KillGroup`]) left by a
/// lab whose process `PID` is gone (one killed with SIGKILL cannot clean up), killing
/// what they still hold (an app's children). Returns how many it removed.
pub fn remove_stale() -> usize {
    let mut removed = 0;
    for root in [
        "/sys/fs/cgroup",
        "/sys/fs/cgroup/cpu",
        "/sys/fs/cgroup/unified",
    ] {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            let Some(pid) = name
                .to_str()
                .and_then(|n| n.strip_prefix("loglag-"))
                .and_then(|rest| rest.split('-').next())
                .and_then(|pid| pid.parse::<u32>().ok())
            else {
                continue;
            };
            if super::procfs::is_running(pid) {
                continue;
            }
            let dir = entry.path();
            if dir.join("cgroup.kill").exists() {
                kill_all(&dir);
            }
            if std::fs::remove_dir(&dir).is_ok() {
                removed += 1;
            }
        }
    }
    removed
}

/// The cgroup v2 hierarchy: `/sys/fs/cgroup` itself, or its `unified` mount on a
/// machine that runs v1 controllers (hybrid).
fn v2_root() -> Option<&'static Path> {
    ["/sys/fs/cgroup", "/sys/fs/cgroup/unified"]
        .into_iter()
        .map(Path::new)
        .find(|root| root.join("cgroup.procs").exists() && root.join("cgroup.max.depth").exists())
}

/// Whether CPU limits live in the v2 hierarchy, where a process is in one cgroup only:
/// a [`KillGroup`] and a [`CpuLimit`] cannot both hold it.
pub fn cpu_limits_are_v2() -> bool {
    Path::new("/sys/fs/cgroup/cgroup.controllers").exists()
}

/// A cgroup (v2) that an `--app` joins before it runs, so everything it forks, `setsid`
/// daemons and processes that clear their environment included, is in it and dies
/// with one write to `cgroup.kill` (Linux 5.14+). Killed and removed on drop.
#[derive(Debug)]
pub struct KillGroup {
    dir: PathBuf,
    /// Killed and removed by a second Ctrl-C's teardown, should the lab not get to
    /// drop it.
    _held: super::teardown::Held,
}

impl KillGroup {
    /// Creates `name` in the v2 hierarchy; the error says why it cannot be used.
    pub fn create(name: &str) -> io::Result<KillGroup> {
        let root = v2_root().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::Unsupported,
                "no cgroup v2 hierarchy is mounted",
            )
        })?;
        let dir = root.join(name);
        make_dir(&dir)?;
        let group = KillGroup {
            _held: super::teardown::hold_kill_group(&dir),
            dir,
        };
        if !group.dir.join("cgroup.kill").exists() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel has no cgroup.kill (Linux 5.14 or later)",
            ));
        }
        Ok(group)
    }

    /// The file a process writes `0` to, to join the group (from `pre_exec`).
    pub fn procs_path(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// The processes in the group now.
    pub fn pids(&self) -> Vec<u32> {
        std::fs::read_to_string(self.procs_path())
            .unwrap_or_default()
            .lines()
            .filter_map(|l| l.trim().parse().ok())
            .collect()
    }

    /// CPU seconds every process that was ever in the group has used (`cpu.stat`'s
    /// `usage_usec`): an app's forked workers included, which `/proc/PID/stat` of
    /// its main process does not count.
    pub fn cpu_seconds(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(self.dir.join("cpu.stat")).ok()?;
        let usec: u64 = stat
            .lines()
            .find_map(|l| l.strip_prefix("usage_usec "))?
            .trim()
            .parse()
            .ok()?;
        Some(usec as f64 / 1e6)
    }

    /// SIGKILLs every process in the group and waits (up to a second) until the group
    /// is empty. Returns the pids it held.
    pub fn kill(&self) -> Vec<u32> {
        let pids = self.pids();
        if !pids.is_empty() {
            kill_all(&self.dir);
        }
        pids
    }
}

impl Drop for KillGroup {
    fn drop(&mut self) {
        self.kill();
        remove_when_empty(&self.dir);
    }
}

fn remove_when_empty(dir: &Path) {
    remove_dir_when_empty(dir);
}

impl Drop for CpuLimit {
    fn drop(&mut self) {
        // The owner kills its children first.
        remove_when_empty(&self.dir);
    }
}
