//! What `/proc` says about a process: its write syscalls, context switches and memory.
//! Read before and after a run's load, so the difference is the load's.

use std::io;

use serde::{Deserialize, Serialize};

/// Whether process `pid` still exists: what tells the leftovers of a killed lab (named
/// after its pid: cgroups, scratch directories) from a running lab's.
pub fn is_running(pid: u32) -> bool {
    std::path::Path::new(&format!("/proc/{pid}")).exists()
}

/// One reading of a process's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcCounters {
    /// `syscw` of `/proc/PID/io`: write-family system calls by every thread, exited ones
    /// included. Socket writes count too.
    pub syscw: u64,
    /// Context switches summed over the live threads (`/proc/PID/task/*/status`):
    /// voluntary (the thread blocked) and involuntary (it was preempted).
    pub ctx_voluntary: u64,
    pub ctx_involuntary: u64,
    /// Peak and current resident set (`VmHWM`, `VmRSS`), KiB.
    pub rss_peak_kib: u64,
    pub rss_kib: u64,
}

impl ProcCounters {
    /// Reads `pid`'s counters. Fails when the process is gone or `/proc/PID/io` is not
    /// readable (another user's process without CAP_SYS_PTRACE).
    pub fn read(pid: u32) -> io::Result<ProcCounters> {
        let io_text = std::fs::read_to_string(format!("/proc/{pid}/io"))?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
        let mut counters = ProcCounters {
            syscw: field(&io_text, "syscw:").unwrap_or(0),
            rss_peak_kib: field(&status, "VmHWM:").unwrap_or(0),
            rss_kib: field(&status, "VmRSS:").unwrap_or(0),
            ..ProcCounters::default()
        };
        for task in std::fs::read_dir(format!("/proc/{pid}/task"))? {
            // A thread may exit between the listing and the read.
            let Ok(text) = std::fs::read_to_string(task?.path().join("status")) else {
                continue;
            };
            counters.ctx_voluntary += field(&text, "voluntary_ctxt_switches:").unwrap_or(0);
            counters.ctx_involuntary += field(&text, "nonvoluntary_ctxt_switches:").unwrap_or(0);
        }
        Ok(counters)
    }
}

/// How long the threads of some processes waited for a CPU: runnable but not running,
/// the second field of `/proc/PID/task/TID/schedstat` (the run-queue wait, ns), per
/// thread. Read before and after a load: [`CpuWait::ms_since`] is the load's. A
/// thread that exits in between loses its wait, one born in between counts all of its.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuWait {
    /// ((pid, tid), run-queue wait in ns).
    threads: Vec<((u32, u32), u64)>,
}

impl CpuWait {
    /// The threads of `pids` whose name (`comm`) `counted` accepts. `None` when no
    /// thread's schedstat could be read (a kernel without `CONFIG_SCHED_INFO`, or the
    /// processes are gone).
    pub fn read(pids: &[u32], counted: impl Fn(&str) -> bool) -> Option<CpuWait> {
        let mut threads = Vec::new();
        let mut read_any = false;
        for &pid in pids {
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for task in tasks.flatten() {
                let Some(tid) = task.file_name().to_str().and_then(|t| t.parse().ok()) else {
                    continue;
                };
                // A thread may exit between the listing and the reads.
                let Ok(stat) = std::fs::read_to_string(task.path().join("schedstat")) else {
                    continue;
                };
                let Some(wait) = stat.split_whitespace().nth(1).and_then(|w| w.parse().ok()) else {
                    continue;
                };
                read_any = true;
                let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
                if counted(comm.trim_end()) {
                    threads.push(((pid, tid), wait));
                }
            }
        }
        read_any.then_some(CpuWait { threads })
    }

    /// The wait since `earlier`, ms: each thread's growth, from zero for a thread
    /// `earlier` did not see.
    pub fn ms_since(&self, earlier: &CpuWait) -> f64 {
        let ns: u64 = self
            .threads
            .iter()
            .map(|(id, now)| {
                let before = earlier
                    .threads
                    .iter()
                    .find(|(e, _)| e == id)
                    .map_or(0, |(_, w)| *w);
                now.saturating_sub(before)
            })
            .sum();
        ns as f64 / 1e6
    }
}

/// `pid` and every process descended from it, from the parent pids in `/proc`.
pub fn with_descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|p| {
            let child: u32 = p.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(p.path().join("stat")).ok()?;
            // The field after the command name (in parentheses, which may hold spaces)
            // and the state: the parent pid.
            let parent = stat[stat.rfind(')')? + 2..]
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((child, parent))
        })
        .collect();
    let mut family = vec![pid];
    let mut i = 0;
    while i < family.len() {
        let parent = family[i];
        family.extend(
            parents
                .iter()
                .filter(|&&(c, p)| p == parent && !family.contains(&c))
                .map(|&(c, _)| c)
                .collect::<Vec<_>>(),
        );
        i += 1;
    }
    family
}

/// Whether a process of group `pgid` is alive: running, sleeping or stopped, not a
/// zombie (which has exited and waits for its parent to reap it).
pub fn group_has_live_processes(pgid: i32) -> bool {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .any(|p| {
            let Some(stat) = std::fs::read_to_string(p.path().join("stat")).ok() else {
                return false;
            };
            // After the command name (in parentheses, which may hold spaces): the
            // state, the parent pid, the process group.
            let Some(rest) = stat.rfind(')').and_then(|i| stat.get(i + 2..)) else {
                return false;
            };
            let mut fields = rest.split_whitespace();
            let state = fields.next();
            let group = fields.nth(1).and_then(|g| g.parse::<i32>().ok());
            group == Some(pgid) && !matches!(state, Some("Z" | "X" | "x"))
        })
}

/// The first number after `key` at the start of a line.
fn field(text: &str, key: &str) -> Option<u64> {
    text.lines()
        .find_map(|l| l.strip_prefix(key))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Raises the soft limit on open files to at least `needed`, up to the hard limit.
/// A closed loop of N connections needs N descriptors in the lab and N in the API
/// (which inherits the limit).
#[cfg(unix)]
pub fn raise_open_files(needed: u64) -> Result<u64, String> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        return Err(format!(
            "cannot read the open-file limit: {}",
            io::Error::last_os_error()
        ));
    }
    if limit.rlim_cur >= needed {
        return Ok(limit.rlim_cur);
    }
    if limit.rlim_max < needed {
        return Err(format!(
            "needs {needed} open files, but the hard limit is {}: raise it (ulimit -Hn {needed} as root, or LimitNOFILE= in a systemd unit) or use fewer connections",
            limit.rlim_max
        ));
    }
    limit.rlim_cur = needed;
    // SAFETY: setrlimit reads the struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) } != 0 {
        return Err(format!(
            "cannot raise the open-file limit to {needed}: {}",
            io::Error::last_os_error()
        ));
    }
    Ok(needed)
}

/// Windows has no `RLIMIT_NOFILE` to raise: its handle limit is far above any closed
/// loop's, so `needed` is taken as granted.
#[cfg(not(unix))]
pub fn raise_open_files(needed: u64) -> Result<u64, String> {
    Ok(needed)
}

/// This machine, as reports describe it: the CPU model and kernel from /proc, and the
/// cores available to this process.
pub fn machine() -> crate::report::Machine {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let cpu = cpuinfo
        .lines()
        .find_map(|l| {
            l.strip_prefix("model name")
                .and_then(|r| r.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".into());
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned();
    crate::report::Machine {
        cpu,
        cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
        kernel,
        os: std::env::consts::OS.to_owned(),
        arch: std::env::consts::ARCH.to_owned(),
    }
}

/// The machine's CPU time from the first line of `/proc/stat`, in ticks: (busy, all),
/// where busy is everything but idle and iowait, and includes other tenants' work.
pub fn machine_cpu_ticks() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?.strip_prefix("cpu ")?;
    let ticks: Vec<u64> = line
        .split_whitespace()
        .filter_map(|t| t.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user).
    let all: u64 = ticks.iter().take(8).sum();
    let idle = ticks.get(3)? + ticks.get(4).unwrap_or(&0);
    Some((all - idle, all))
}

/// The environment variable the lab sets for an `--app`, `<lab pid>:<start>`. Every
/// process the app starts inherits it, `setsid` or not, so the lab can find all of
/// them: at the app's stop, and, for a lab that was killed, at the next lab's start.
pub const APP_TAG: &str = "LOGLAG_LAB_APP";

/// Live processes whose environment holds `APP_TAG`, with its value. (A process
/// that clears its environment escapes; one of another user is not readable.)
pub fn tagged_processes() -> Vec<(u32, String)> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let prefix = format!("{APP_TAG}=");
    // A tag holds a pid of this pid namespace: a process in another one (a container)
    // is never this lab's business.
    let own_ns = std::fs::read_link("/proc/self/ns/pid").ok();
    procs
        .flatten()
        .filter_map(|p| {
            let pid: u32 = p.file_name().to_str()?.parse().ok()?;
            if std::fs::read_link(p.path().join("ns/pid")).ok() != own_ns {
                return None;
            }
            let environ = std::fs::read(p.path().join("environ")).ok()?;
            environ.split(|&b| b == 0).find_map(|var| {
                let var = std::str::from_utf8(var).ok()?;
                Some((pid, var.strip_prefix(&prefix)?.to_owned()))
            })
        })
        .collect()
}

/// SIGKILLs every live tagged process whose tag `doomed` accepts, until none is left (a few passes, for ones forked meanwhile).
/// Returns the pids killed.
pub fn kill_tagged(doomed: impl Fn(&str) -> bool) -> Vec<u32> {
    let mut killed = Vec::new();
    for _ in 0..5 {
        let now: Vec<u32> = tagged_processes()
            .into_iter()
            .filter(|(_, tag)| doomed(tag))
            .map(|(pid, _)| pid)
            .filter(|pid| *pid != std::process::id())
            .collect();
        if now.is_empty() {
            break;
        }
        for pid in now {
            // A process this lab's app started.
            if super::signal::send(pid as i32, super::signal::Signal::Kill)
                && !killed.contains(&pid)
            {
                killed.push(pid);
            }
        }
        // A killed process leaves /proc once reaped; give init (or us) a moment.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    killed
}

/// Kills what the apps of labs that are no longer running left behind (a killed lab
/// cannot). Returns how many processes.
pub fn kill_stale_app_processes() -> usize {
    kill_tagged(|tag| {
        tag.split(':')
            .next()
            .and_then(|pid| pid.parse::<u32>().ok())
            .is_some_and(|pid| !is_running(pid))
    })
    .len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_s_cpu_time_only_grows_and_busy_is_part_of_it() {
        let (busy0, all0) = machine_cpu_ticks().expect("/proc/stat");
        assert!(busy0 <= all0 && all0 > 0);
        let spin = std::time::Instant::now();
        while machine_cpu_ticks().unwrap().1 == all0 {
            assert!(
                spin.elapsed() < std::time::Duration::from_secs(10),
                "ticks never moved"
            );
            std::hint::spin_loop();
        }
        let (busy1, all1) = machine_cpu_ticks().unwrap();
        assert!(busy1 >= busy0 && all1 > all0);
    }

    #[test]
    fn reads_this_process_and_sees_its_writes() {
        let pid = std::process::id();
        let before = ProcCounters::read(pid).unwrap();
        let mut file = tempfile::tempfile().unwrap();
        for _ in 0..100 {
            std::io::Write::write_all(&mut file, b"x").unwrap();
        }
        let after = ProcCounters::read(pid).unwrap();
        assert!(after.syscw >= before.syscw + 100, "{before:?} -> {after:?}");
        assert!(after.rss_peak_kib >= after.rss_kib && after.rss_kib > 0);
        assert!(after.ctx_voluntary + after.ctx_involuntary > 0);
    }

    /// More spinning threads than cores: some of them wait for a CPU, and the wait
    /// is counted only for the threads asked for.
    #[test]
    fn threads_that_outnumber_the_cores_wait_for_a_cpu() {
        let pid = std::process::id();
        let before = CpuWait::read(&[pid], |name| name == "spin-wait").expect("schedstat");
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let spinners: Vec<_> = (0..cores + 1)
            .map(|_| {
                let stop = stop.clone();
                std::thread::Builder::new()
                    .name("spin-wait".into())
                    .spawn(move || {
                        while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                            std::hint::spin_loop();
                        }
                    })
                    .unwrap()
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(200));
        let during = CpuWait::read(&[pid], |name| name == "spin-wait").unwrap();
        let others = CpuWait::read(&[pid], |name| name == "no-such-thread").unwrap();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for s in spinners {
            s.join().unwrap();
        }
        assert_eq!(during.threads.len(), cores + 1);
        // cores + 1 threads on `cores` cores for 200 ms: together they waited at least
        // a few ms (ideally 200 ms); a lost tick is not enough to fail.
        assert!(during.ms_since(&before) > 5.0, "{during:?}");
        assert_eq!(others.ms_since(&before), 0.0);
        assert!(with_descendants(pid).contains(&pid));
        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        assert!(with_descendants(pid).contains(&child.id()));
        let mut child = child;
        child.kill().unwrap();
        child.wait().unwrap();
    }

    #[test]
    #[cfg(unix)]
    fn the_open_file_limit_is_raised_or_refused_clearly() {
        let now = raise_open_files(64).unwrap();
        assert!(now >= 64);
        let mut limit = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        // SAFETY: getrlimit writes into the struct we own.
        let read = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) };
        assert_eq!(read, 0);
        if limit.rlim_max != libc::RLIM_INFINITY {
            let err = raise_open_files(limit.rlim_max + 1).unwrap_err();
            assert!(err.contains("hard limit"), "{err}");
        }
    }
}
