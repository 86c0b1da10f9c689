//! `lab hops --netns`: each service in its own network namespace, joined to the
//! caller by veth pairs, so every hop crosses a real network stack rather than
//! loopback. Namespaces are named `llh<lab pid>-<n>`; [`Namespaces`] removes its own on
//! drop (every exit path that unwinds), and [`remove_stale`] those of a lab that was
//! killed.

use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::AsRawFd;
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
}

/// Where a namespace's process listens, and how to enter the namespace.
#[derive(Debug, Clone)]
pub struct Place {
    pub name: String,
    pub addr: IpAddr,
}

impl Place {
    /// Makes `command` start inside this namespace.
    pub fn enter(&self, command: &mut Command) -> io::Result<()> {
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

/// A /30 per link: the lab's pid picks the second octet, so two labs running at once
/// (or one and the leftovers of a killed one) rarely share addresses.
fn subnet(run: u8, link: u8, host: u8) -> Ipv4Addr {
    let lab = 128 + (std::process::id() % 64) as u8;
    Ipv4Addr::new(10, lab, run.wrapping_mul(4).wrapping_add(link), host)
}

impl Namespaces {
    /// Creates `1 + downstream` namespaces: the front service's, linked to the caller
    /// (the root namespace), and one per downstream service, linked to the front.
    /// Returns the front's place and each downstream's.
    pub fn create(run: u8, downstream: usize) -> io::Result<(Namespaces, Place, Vec<Place>)> {
        // SAFETY: geteuid has no preconditions.
        let euid = unsafe { libc::geteuid() };
        if euid != 0 {
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "--netns creates network namespaces and veth pairs, which needs root",
            ));
        }
        let tag = format!("llh{}-{run}", std::process::id() % 100_000);
        let mut ns = Namespaces { names: Vec::new() };
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
            let (ia, ib) = (subnet(run, net, 1), subnet(run, net, 2));
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
        let short = format!("lh{}{run}", std::process::id() % 100_000);
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
    }
}

/// Removes namespaces left by a lab that was killed (its pid no longer runs).
/// Returns how many.
pub fn remove_stale() -> usize {
    let Ok(entries) = std::fs::read_dir("/var/run/netns") else {
        return 0;
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix("llh")
            .and_then(|r| r.split('-').next())
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = std::fs::read_dir("/proc").is_ok_and(|procs| {
            procs.flatten().any(|p| {
                p.file_name()
                    .to_str()
                    .and_then(|s| s.parse::<u32>().ok())
                    .is_some_and(|n| n % 100_000 == pid)
            })
        });
        if !alive && ip(&["netns", "del", &name]).is_ok() {
            removed += 1;
        }
    }
    removed
}
