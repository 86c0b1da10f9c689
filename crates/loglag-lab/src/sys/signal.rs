//! The signals the lab sends, as a type down to `kill(2)`: a user's `--stop-signal`
//! stays a `Signal` until the syscall takes its number.

/// A signal the lab sends to a process it started.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Signal {
    /// SIGTERM: how `docker stop`, systemd and Kubernetes ask a service to stop.
    #[default]
    Term,
    /// SIGINT: Ctrl-C.
    Int,
    /// SIGKILL: no chance to flush.
    Kill,
}

impl Signal {
    /// The number `kill(2)` takes.
    #[cfg(unix)]
    pub(crate) fn number(self) -> libc::c_int {
        match self {
            Signal::Term => libc::SIGTERM,
            Signal::Int => libc::SIGINT,
            Signal::Kill => libc::SIGKILL,
        }
    }

    /// The name users type (`term`, `int`, `kill`), as reports show it.
    pub fn as_str(self) -> &'static str {
        match self {
            Signal::Term => "term",
            Signal::Int => "int",
            Signal::Kill => "kill",
        }
    }
}

impl std::str::FromStr for Signal {
    type Err = String;
    /// `term`, `int` or `kill`, in any case, with or without `SIG`.
    fn from_str(s: &str) -> Result<Signal, String> {
        match s.trim().to_ascii_lowercase().trim_start_matches("sig") {
            "term" => Ok(Signal::Term),
            "int" => Ok(Signal::Int),
            "kill" => Ok(Signal::Kill),
            other => Err(format!(
                "unknown stop signal {other:?}: expected term, int or kill"
            )),
        }
    }
}

/// Sends `signal` to `pid` (a negative `pid` is a process group). Returns whether
/// the process (or group) existed.
#[cfg(unix)]
pub(crate) fn send(pid: i32, signal: Signal) -> bool {
    // SAFETY: kill(2) has no memory preconditions; callers own the pid (see `child.rs`).
    unsafe { libc::kill(pid, signal.number()) == 0 }
}

/// Windows has no signals to send: nothing is sent, and no process is said to exist.
#[cfg(not(unix))]
pub(crate) fn send(_pid: i32, _signal: Signal) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back() {
        for s in [Signal::Term, Signal::Int, Signal::Kill] {
            assert_eq!(s.as_str().parse::<Signal>(), Ok(s));
        }
        assert_eq!("SIGKILL".parse::<Signal>(), Ok(Signal::Kill));
        assert!("hup"
            .parse::<Signal>()
            .unwrap_err()
            .contains("term, int or kill"));
    }
}
