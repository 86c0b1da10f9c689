//! The lab's end of the reader's stdio protocol: start the reader child, ask it for
//! `stats`, `reset` its counters, and `exit` with its final report. The other end is
//! [`super::control_stdio`].

use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{ChildStdin, ChildStdout, Stdio};

use super::{FinalReport, ReadConfig, ReaderStats};
use crate::sys::child::ChildGuard;

/// A running reader child.
#[derive(Debug)]
pub struct ReaderProc {
    pub guard: ChildGuard,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The `child` role of the sink reader (`child.rs` runs it).
pub const CHILD_ROLE: &str = "reader";

/// The sink reader's settings as a child: read `fifo`, answer `stats`, `reset` and
/// `exit` on stdin/stdout.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReaderChild {
    pub fifo: PathBuf,
    pub read: ReadConfig,
    /// F_SETPIPE_SZ for the FIFO.
    pub pipe_size: Option<usize>,
}

/// The command that starts `exe` as a sink reader.
pub fn reader_command(exe: &Path, child: &ReaderChild) -> std::process::Command {
    crate::sys::child::role_command(exe, CHILD_ROLE, child)
}

impl ReaderProc {
    /// Starts `exe` as a reader of `fifo` and waits for its `ready`.
    pub fn start(
        exe: &Path,
        fifo: &Path,
        read: ReadConfig,
        pipe_size: Option<usize>,
    ) -> io::Result<ReaderProc> {
        let mut cmd = reader_command(
            exe,
            &ReaderChild {
                fifo: PathBuf::from(fifo),
                read,
                pipe_size,
            },
        );
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut guard = ChildGuard::spawn(cmd, "the sink reader")?;
        let stdin = guard.child.stdin.take().expect("piped");
        let mut stdout = BufReader::new(guard.child.stdout.take().expect("piped"));
        let mut line = String::new();
        stdout.read_line(&mut line)?;
        if line.trim() != "ready" {
            return Err(io::Error::other(format!(
                "the sink reader did not start (said {:?})",
                line.trim()
            )));
        }
        Ok(ReaderProc {
            guard,
            stdin,
            stdout,
        })
    }

    fn call(&mut self, command: &str) -> io::Result<String> {
        writeln!(self.stdin, "{command}")
            .map_err(|e| io::Error::other(format!("the sink reader is gone: {e}")))?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            return Err(io::Error::other("the sink reader exited unexpectedly"));
        }
        Ok(line)
    }

    pub fn stats(&mut self) -> io::Result<ReaderStats> {
        let line = self.call("stats")?;
        serde_json::from_str(&line)
            .map_err(|e| io::Error::other(format!("bad reader reply {line:?}: {e}")))
    }

    pub fn reset(&mut self) -> io::Result<()> {
        self.call("reset").map(drop)
    }

    /// Asks the reader to stop and returns what it read in all.
    pub fn finish(mut self) -> io::Result<FinalReport> {
        let line = self.call("exit")?;
        let report = serde_json::from_str(&line)
            .map_err(|e| io::Error::other(format!("bad reader report: {e}")))?;
        let _ = self.guard.wait();
        Ok(report)
    }
}
