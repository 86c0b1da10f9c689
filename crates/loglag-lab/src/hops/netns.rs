//! `lab hops --netns`: each service in its own network namespace, joined to the
//! caller by veth pairs, so every hop crosses a real network stack rather than
//! loopback. Namespaces are named `llh<lab pid>-<n>` and veth ends
//! `lh<lab pid>r<run><end>`; [`Namespaces`] removes its own on drop (every exit path that
//! unwinds), and [`remove_stale`] the namespaces and the root-side veth pairs of a lab
//! that was killed (between creating a pair and moving it into its namespace, one stays
//! in the root namespace).
//!
//! Addresses: each lab claims a `10.<octet>.0.0/16` of its own by `flock`ing
//! `/run/loglag/netns-<octet>.lock` for its lifetime, so two labs running at once never
//! share a subnet (the lock goes with the process, however it ends).

use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;

/// Runs `ip` with `args`; an error says what failed and what `ip` said.
fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip").args(args).output().map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("--netns needs the `ip` command (iproute2): {e}"),
        )
    })?;
    if out.status.success() {
        Ok(())
    } else {
        Err(io::Error::other(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// The namespaces of one topology, removed on drop.
#[derive(Debug)]
pub struct Namespaces {
    names: Vec<String>,
    /// Veth ends created in the root namespace: one that failed to move stays there.
    links: Vec<String>,
}

/// Where a namespace's process listens, and how to enter the namespace.
#[derive(Debug, Clone)]
pub struct Place {
    pub name: String,
    pub addr: IpAddr,
}

impl Place {
    /// Network namespaces are Linux-only: say so.
    #[cfg(not(target_os = "linux"))]
    pub fn enter(&self, _command: &mut Command) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!(
                "cannot enter network namespace {}: network namespaces are Linux-only",
                self.name
            ),
        ))
    }

    /// Makes `command` start inside this namespace.
    #[cfg(target_os = "linux")]
    pub fn enter(&self, command: &mut Command) -> io::Result<()> {
        use std::os::fd::AsRawFd;
        use std::os::unix::process::CommandExt;
        let file = std::fs::File::open(format!("/var/run/netns/{}", self.name))?;
        // SAFETY: setns is async-signal-safe; `file` is moved into the closure and
        // stays open until exec.
        unsafe {
            command.pre_exec(move || {
                if libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) != 0 {
                    return Err(io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(())
    }
}

/// Claims a second octet no other running lab holds: the first of 128..192 whose lock
/// file this process can `flock`. The returned file holds the claim.
#[cfg(unix)]
fn claim_octet() -> io::Result<(u8, std::fs::File)> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let dir = std::path::Path::new("/run/loglag");
    std::fs::create_dir_all(dir)?;
    for octet in 128u8..192 {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .open(dir.join(format!("netns-{octet}.lock")))?;
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
            return Ok((octet, file));
        }
    }
    Err(io::Error::other(
        "--netns: 64 labs already hold every 10.128-191 subnet; wait for one to finish",
    ))
}

/// Network namespaces are Linux-only: no subnet to claim.
#[cfg(not(unix))]
fn claim_octet() -> io::Result<(u8, std::fs::File)> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "--netns: network namespaces are Linux-only",
    ))
}

/// Whether the lab runs as root, which namespaces and veth pairs need.
#[cfg(unix)]
fn is_root() -> io::Result<bool> {
    // SAFETY: geteuid has no preconditions.
    Ok(unsafe { libc::geteuid() } == 0)
}

/// Network namespaces are Linux-only: refused before root is asked about.
#[cfg(not(unix))]
fn is_root() -> io::Result<bool> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "--netns: network namespaces are Linux-only",
    ))
}

/// This lab's second octet, claimed once for the life of the process.
fn lab_octet() -> io::Result<u8> {
    static CLAIM: std::sync::OnceLock<(u8, std::fs::File)> = std::sync::OnceLock::new();
    if let Some((octet, _)) = CLAIM.get() {
        return Ok(*octet);
    }
    let claim = claim_octet()?;
    Ok(CLAIM.get_or_init(|| claim).0)
}

/// A /30 per link inside this lab's /16.
fn subnet(lab: u8, run: u8, link: u8, host: u8) -> Ipv4Addr {
    Ipv4Addr::new(10, lab, run.wrapping_mul(4).wrapping_add(link), host)
}

impl Namespaces {
    /// Creates `1 + downstream` namespaces: the front service's, linked to the caller
    /// (the root namespace), and one per downstream service, linked to the front.
    /// Returns the front's place and each downstream's.
    pub fn create(run: u8, downstream: usize) -> io::Result<(Namespaces, Place, Vec<Place>)> {
        if !is_root()? {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "--netns creates network namespaces and veth pairs, which needs root",
            ));
        }
        let tag = format!("llh{}-{run}", std::process::id() % 100_000);
        let lab = lab_octet()?;
        let mut ns = Namespaces {
            names: Vec::new(),
            links: Vec::new(),
        };
        let make = |ns: &mut Namespaces, name: String| -> io::Result<String> {
            ip(&["netns", "add", &name])?;
            ns.names.push(name.clone());
            ip(&["-n", &name, "link", "set", "lo", "up"])?;
            Ok(name)
        };
        // Interface names are at most 15 bytes.
        let link = |a: &str,
                    a_ns: Option<&str>,
                    b: &str,
                    b_ns: &str,
                    net: u8|
         -> io::Result<(Ipv4Addr, Ipv4Addr)> {
            ip(&["link", "add", a, "type", "veth", "peer", "name", b])?;
            ip(&["link", "set", b, "netns", b_ns])?;
            let (ia, ib) = (subnet(lab, run, net, 1), subnet(lab, run, net, 2));
            match a_ns {
                Some(n) => {
                    ip(&["link", "set", a, "netns", n])?;
                    ip(&["-n", n, "addr", "add", &format!("{ia}/30"), "dev", a])?;
                    ip(&["-n", n, "link", "set", a, "up"])?;
                }
                None => {
                    ip(&["addr", "add", &format!("{ia}/30"), "dev", a])?;
                    ip(&["link", "set", a, "up"])?;
                }
            }
            ip(&["-n", b_ns, "addr", "add", &format!("{ib}/30"), "dev", b])?;
            ip(&["-n", b_ns, "link", "set", b, "up"])?;
            Ok((ia, ib))
        };
        let front = make(&mut ns, format!("{tag}-0"))?;
        // `lh<pid>r<run>`: the pid can be read back from a leftover (at most 14 bytes
        // with its end's letter and index).
        let short = format!("lh{}r{run}", std::process::id() % 100_000);
        ns.links.push(format!("{short}a"));
        ns.links
            .extend((0..downstream).map(|i| format!("{short}c{i}")));
        let (_, front_addr) = link(&format!("{short}a"), None, &format!("{short}b"), &front, 0)?;
        let mut places = Vec::new();
        for i in 0..downstream {
            let name = make(&mut ns, format!("{tag}-{}", i + 1))?;
            let (_, addr) = link(
                &format!("{short}c{i}"),
                Some(&front),
                &format!("{short}d{i}"),
                &name,
                1 + i as u8,
            )?;
            places.push(Place {
                name,
                addr: IpAddr::V4(addr),
            });
        }
        Ok((
            ns,
            Place {
                name: front,
                addr: IpAddr::V4(front_addr),
            },
            places,
        ))
    }

    pub fn names(&self) -> &[String] {
        &self.names
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        // Deleting a namespace destroys its interfaces, and a veth pair dies with
        // either end, so the root side goes too.
        for name in self.names.drain(..).rev() {
            let _ = ip(&["netns", "del", &name]);
        }
        // A pair whose end never moved into its namespace (a failed `ip link set`) is
        // still in the root namespace; one that did is gone already, and this fails.
        for link in self.links.drain(..) {
            let _ = Command::new("ip")
                .args(["link", "del", &link])
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// Whether a process whose pid is `pid` modulo 100,000 runs (names carry it so).
fn lab_alive(pid: u32) -> bool {
    std::fs::read_dir("/proc").is_ok_and(|procs| {
        procs.flatten().any(|p| {
            p.file_name()
                .to_str()
                .and_then(|s| s.parse::<u32>().ok())
                .is_some_and(|n| n % 100_000 == pid)
        })
    })
}

/// The lab pid in a root-side veth name of ours (`lh<pid>r<run><end>`).
fn veth_owner(name: &str) -> Option<u32> {
    let rest = name.strip_prefix("lh")?;
    let (pid, tail) = rest.split_once('r')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    // `<run><end>[<index>]`: the run's digits, an end letter, the downstream index.
    let run_len = tail.bytes().take_while(u8::is_ascii_digit).count();
    let (run, end) = tail.split_at(run_len);
    let end_ok = match end.as_bytes().first() {
        Some(b'a' | b'b') => end.len() == 1,
        Some(b'c' | b'd') => digits(&end[1..]),
        _ => false,
    };
    (pid.len() <= 5 && digits(pid) && digits(run) && end_ok)
        .then(|| pid.parse().ok())
        .flatten()
}

/// What [`remove_stale`] removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Removed {
    pub namespaces: usize,
    pub veths: usize,
}

/// Removes the namespaces and the root-side veth pairs left by a lab that was killed
/// (its pid no longer runs).
pub fn remove_stale() -> Removed {
    let mut removed = Removed::default();
    if let Ok(entries) = std::fs::read_dir("/var/run/netns") {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let Some(pid) = name
                .strip_prefix("llh")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<u32>().ok())
            else {
                continue;
            };
            if !lab_alive(pid) && ip(&["netns", "del", &name]).is_ok() {
                removed.namespaces += 1;
            }
        }
    }
    // Links in the root namespace: `N: NAME@PEER: <...>` per line.
    let links = Command::new("ip")
        .args(["-o", "link", "show"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
        .unwrap_or_default();
    for line in links.lines() {
        let Some(name) = line
            .split(": ")
            .nth(1)
            .map(|n| n.split('@').next().unwrap_or(n).trim())
        else {
            continue;
        };
        if let Some(pid) = veth_owner(name) {
            // Deleting one end removes the pair.
            if !lab_alive(pid) && ip(&["link", "del", name]).is_ok() {
                removed.veths += 1;
            }
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn veth_names_give_back_their_lab() {
        assert_eq!(veth_owner("lh12345r0a"), Some(12345));
        assert_eq!(veth_owner("lh7r12c3"), Some(7));
        for other in [
            "lo",
            "eth0",
            "lhx",
            "lh12a",
            "lhr0a",
            "lh12rX",
            "lh12r0",
            "lh12r0z",
            "lh123456r0a",
        ] {
            assert_eq!(veth_owner(other), None, "{other}");
        }
    }

    #[test]
    fn two_claims_never_share_a_subnet() {
        if std::fs::create_dir_all("/run/loglag").is_err() {
            return; // not root: --netns is refused before this anyway
        }
        // Two open file descriptions conflict like two processes would.
        let (a, _hold_a) = claim_octet().unwrap();
        let (b, _hold_b) = claim_octet().unwrap();
        assert_ne!(a, b);
    }
}
