//! CPU limits with cgroups, v2 or v1, whichever the machine has.

use std::io;
use std::path::{Path, PathBuf};

const PERIOD_US: u64 = 100_000;

/// A cgroup with a CPU quota. Removed on drop (once its processes have exited).
#[derive(Debug)]
pub struct CpuLimit {
    dir: PathBuf,
    pub cores: f64,
}

impl CpuLimit {
    /// Creates a cgroup limited to `cores` CPUs. The error says why it was not possible
    /// (no cgroup filesystem, no permission, ...).
    pub fn create(name: &str, cores: f64) -> io::Result<CpuLimit> {
        let quota = ((cores * PERIOD_US as f64).round() as u64).max(1000);
        let root = Path::new("/sys/fs/cgroup");
        if root.join("cgroup.controllers").exists() {
            let dir = root.join(name);
            make_dir(&dir)?;
            let limit = CpuLimit { dir, cores };
            write(&limit.dir.join("cpu.max"), &format!("{quota} {PERIOD_US}"))?;
            Ok(limit)
        } else if root.join("cpu").is_dir() {
            let dir = root.join("cpu").join(name);
            make_dir(&dir)?;
            let limit = CpuLimit { dir, cores };
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

impl CpuLimit {
    /// Removes `loglag-PID-*` cgroups left by a lab whose process `PID` is gone (one
    /// killed with SIGKILL cannot clean up). Returns how many it removed.
    pub fn remove_stale() -> usize {
        let mut removed = 0;
        for root in ["/sys/fs/cgroup", "/sys/fs/cgroup/cpu"] {
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
                if !super::procfs::is_running(pid) && std::fs::remove_dir(entry.path()).is_ok() {
                    removed += 1;
                }
            }
        }
        removed
    }
}

impl Drop for CpuLimit {
    fn drop(&mut self) {
        // The owner kills its children first, but a killed process leaves the cgroup
        // only once the kernel has finished tearing it down: retry EBUSY briefly.
        for _ in 0..100 {
            match std::fs::remove_dir(&self.dir) {
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) => {
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                _ => return,
            }
        }
    }
}
