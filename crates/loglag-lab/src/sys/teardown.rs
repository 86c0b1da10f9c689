//! What the lab holds that must not outlive it, for the exit a second Ctrl-C asks for.
//!
//! The first SIGINT/SIGTERM cancels the run and the guards clean up on their way out
//! (`ChildGuard`, `KillGroup`, `CpuLimit`, the scratch directory). A second one, while
//! that is under way or while the lab waits on something that does not watch the
//! cancel flag (an app's readiness), must not leave an `--app` daemon, its cgroup or
//! the lab's FIFOs behind: [`now`] kills and removes everything still registered here,
//! from an ordinary thread (not a signal handler), and the caller then exits.
//!
//! Each guard registers what it holds when it takes it and lets go (drops its
//! [`Held`]) before it gives it up: a child's process group is let go of before the
//! child is reaped, under the registry's lock, so [`now`] only ever signals a group
//! whose leader is unreaped (its id still the lab's).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How long teardown waits for the kernel to finish what it does asynchronously.
const A_SECOND: std::time::Duration = std::time::Duration::from_secs(1);
const TEN_MS: std::time::Duration = std::time::Duration::from_millis(10);

/// One thing the lab holds.
#[derive(Debug, Clone)]
enum Item {
    /// A child's process group (the id of its unreaped leader).
    Group(i32),
    /// A cgroup holding an `--app` and what it forks (`cgroup.kill`).
    KillGroup(PathBuf),
    /// A CPU-limit cgroup: removed once the processes in it are killed.
    CpuLimit(PathBuf),
    /// A scratch directory (FIFOs, child stderr, span files).
    Dir(PathBuf),
}

struct Registry {
    next: u64,
    items: Vec<(u64, Item)>,
}

/// The process's registry (a test makes its own, so as not to tear down its
/// neighbours').
type Shared = Mutex<Registry>;

static REGISTRY: Shared = Mutex::new(Registry {
    next: 0,
    items: Vec::new(),
});

fn lock(registry: &'static Shared) -> std::sync::MutexGuard<'static, Registry> {
    registry.lock().unwrap_or_else(|e| e.into_inner())
}

/// A registration: dropping it lets go of the item (its owner cleans it up itself).
#[derive(Debug)]
#[must_use = "dropping it at once unregisters what it holds"]
pub struct Held {
    registry: &'static Shared,
    id: u64,
}

impl Drop for Held {
    fn drop(&mut self) {
        lock(self.registry).items.retain(|(id, _)| *id != self.id);
    }
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} held", self.items.len())
    }
}

fn hold_in(registry: &'static Shared, item: Item) -> Held {
    let mut r = lock(registry);
    let id = r.next;
    r.next += 1;
    r.items.push((id, item));
    Held { registry, id }
}

fn hold(item: Item) -> Held {
    hold_in(&REGISTRY, item)
}

/// Holds the process group led by `pid` (a child in a group of its own). Drop the
/// returned `Held` before reaping the child.
pub(crate) fn hold_group(pid: u32) -> Held {
    hold(Item::Group(pid as i32))
}

/// Holds an `--app`'s kill group at `dir`.
pub(crate) fn hold_kill_group(dir: &Path) -> Held {
    hold(Item::KillGroup(dir.to_owned()))
}

/// Holds a CPU-limit cgroup at `dir`.
pub(crate) fn hold_cpu_limit(dir: &Path) -> Held {
    hold(Item::CpuLimit(dir.to_owned()))
}

/// Holds a scratch directory.
pub(crate) fn hold_dir(dir: &Path) -> Held {
    hold(Item::Dir(dir.to_owned()))
}

/// What [`now`] did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TornDown {
    /// Process groups SIGKILLed.
    pub groups: usize,
    /// Processes killed through an `--app`'s cgroup or its environment tag.
    pub app_processes: usize,
    /// Cgroups removed.
    pub cgroups: usize,
    /// Scratch directories removed.
    pub dirs: usize,
}

impl std::fmt::Display for TornDown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "killed {} process group(s) and {} process(es) of an --app, removed {} cgroup(s) and {} scratch directory(ies)",
            self.groups, self.app_processes, self.cgroups, self.dirs
        )
    }
}

/// Kills every registered process group and `--app` cgroup, and whatever an `--app`
/// of this lab left carrying its tag, then removes the cgroups and the scratch
/// directories. Holds the registry's lock throughout, so no guard reaps its child
/// meanwhile. Waits (up to about a second per group) until the killed processes have
/// exited, so that what the caller says happened has. For the moment before exiting.
pub fn now() -> TornDown {
    // An --app of this lab carries the tag `PID:N`.
    tear_down(&REGISTRY, Some(&format!("{}:", std::process::id())))
}

fn tear_down(registry: &'static Shared, app_tag_prefix: Option<&str>) -> TornDown {
    let r = lock(registry);
    let mut done = TornDown::default();
    let items: Vec<Item> = r.items.iter().map(|(_, i)| i.clone()).collect();
    for item in &items {
        if let Item::Group(pgid) = item {
            // An unreaped leader's group (see the module's doc): still the lab's.
            if super::signal::send(-pgid, super::signal::Signal::Kill) {
                done.groups += 1;
            }
        }
    }
    for item in &items {
        if let Item::KillGroup(dir) = item {
            done.app_processes += kill_dir(dir);
        }
    }
    // Without a cgroup (or for a process that left it), the environment tag.
    if let Some(prefix) = app_tag_prefix {
        done.app_processes += super::procfs::kill_tagged(|t| t.starts_with(prefix)).len();
    }
    for item in &items {
        if let Item::Group(pgid) = item {
            wait_for_group(*pgid);
        }
    }
    for item in &items {
        if let Item::KillGroup(dir) | Item::CpuLimit(dir) = item {
            if remove_dir_when_empty(dir) {
                done.cgroups += 1;
            }
        }
    }
    for item in &items {
        if let Item::Dir(dir) = item {
            if remove_dir(dir) {
                done.dirs += 1;
            }
        }
    }
    drop(r);
    done
}

// The cgroup steps teardown and `cgroup.rs`'s guards share.

/// SIGKILLs what the kill group at `dir` holds and waits (up to a second) until it is
/// empty; returns how many processes it held.
pub(crate) fn kill_dir(dir: &Path) -> usize {
    let held = std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .count();
    if held > 0 {
        kill_all(dir);
    }
    held
}

/// SIGKILLs every process in the cgroup at `dir` (`cgroup.kill`) and waits up to a
/// second for them to be gone.
pub(crate) fn kill_all(dir: &Path) {
    let _ = std::fs::write(dir.join("cgroup.kill"), "1");
    // The kernel tears the processes down asynchronously; nothing to wait on.
    super::poll::poll_until(A_SECOND, TEN_MS, || {
        let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap_or_default();
        procs.trim().is_empty().then_some(())
    });
}

/// Removes the cgroup at `dir` once its processes have left it; returns whether this
/// call removed it.
pub(crate) fn remove_dir_when_empty(dir: &Path) -> bool {
    // A killed process leaves the cgroup only once the kernel has finished tearing
    // it down: retry EBUSY briefly.
    super::poll::poll_until(A_SECOND, TEN_MS, || match std::fs::remove_dir(dir) {
        Err(e) if e.raw_os_error() == Some(libc::EBUSY) => None,
        r => Some(r.is_ok()),
    })
    .unwrap_or(false)
}

/// Removes `dir` and what it holds; a second try for a file the lab's own cleanup,
/// racing on its way out, removed or created meanwhile.
fn remove_dir(dir: &Path) -> bool {
    for _ in 0..2 {
        match std::fs::remove_dir_all(dir) {
            Ok(()) => return true,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return !dir.exists(),
            Err(_) => {}
        }
    }
    !dir.exists()
}

/// Waits up to a second until no process of group `pgid` is alive (a zombie is not:
/// it has exited, and its parent reaps it).
fn wait_for_group(pgid: i32) {
    // SIGKILL is delivered asynchronously; a group has nothing to wait on.
    super::poll::poll_until(A_SECOND, TEN_MS, || {
        (!super::procfs::group_has_live_processes(pgid)).then_some(())
    });
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    /// A registered child's group, cgroup-less, and a scratch directory: `now` kills
    /// the group (the grandchild in it too) and removes the directory; what was let go
    /// of (dropped) is left to its owner.
    #[test]
    fn now_kills_held_groups_and_removes_held_dirs_but_not_released_ones() {
        use std::os::unix::process::CommandExt;
        let mut cmd = std::process::Command::new("sh");
        // A grandchild in the same group, then the shell waits.
        cmd.args(["-c", "sleep 600 & echo $!; wait"])
            .stdout(std::process::Stdio::piped())
            .process_group(0);
        let mut child = cmd.spawn().unwrap();
        let mut line = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut line,
        )
        .unwrap();
        let grandchild: i32 = line.trim().parse().unwrap();
        // A registry of its own: the process's holds other tests' children.
        let registry: &'static Shared = Box::leak(Box::new(Mutex::new(Registry {
            next: 0,
            items: Vec::new(),
        })));
        let group = hold_in(registry, Item::Group(child.id() as i32));

        let scratch = tempfile::tempdir().unwrap();
        let held_dir = scratch.path().join("held");
        std::fs::create_dir(&held_dir).unwrap();
        std::fs::write(held_dir.join("api.fifo"), b"").unwrap();
        let dir = hold_in(registry, Item::Dir(held_dir.clone()));
        let released_dir = scratch.path().join("released");
        std::fs::create_dir(&released_dir).unwrap();
        drop(hold_in(registry, Item::Dir(released_dir.clone())));

        let done = tear_down(registry, None);
        assert_eq!((done.groups, done.dirs), (1, 1), "{done:?}");
        assert!(!held_dir.exists(), "the held directory is removed");
        assert!(released_dir.exists(), "a released directory is its owner's");
        // The shell and its grandchild are dead (the shell, unreaped, a zombie).
        let alive = crate::sys::procfs::group_has_live_processes(child.id() as i32);
        if alive {
            // SAFETY: kill(2) on the group of our unreaped child.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
        }
        assert!(
            !alive,
            "the shell's group (grandchild {grandchild}) still runs"
        );
        let status = child.wait().unwrap();
        assert_eq!(
            std::os::unix::process::ExitStatusExt::signal(&status),
            Some(libc::SIGKILL)
        );
        drop((group, dir));
    }
}
