//! The sink reader: reads a FIFO (or a TCP stream) in fixed-size reads, optionally
//! capped in rate, and counts bytes, newlines and a SHA-256 of everything it read.

pub mod client;
pub mod inspect;
pub mod standalone;

use std::fs::File;
use std::io::{self, Read};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::sys::clock::mono_ns;

/// How often `loglag sink --samples` records (time, bytes read): 20 times a second.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(50);

/// What the reader has read so far.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq, Default)]
pub struct ReaderStats {
    /// When this snapshot was taken (`CLOCK_MONOTONIC` ns).
    pub mono_ns: u64,
    pub bytes: u64,
    pub newlines: u64,
    pub reads: u64,
    pub sha256: String,
    /// When the last byte arrived, if any did since the last reset.
    pub last_byte_mono_ns: Option<u64>,
    /// The writer closed its end.
    pub eof: bool,
}

/// The reader's state, shared with the sampler and whoever controls it.
#[derive(Debug, Default)]
pub struct ReaderState {
    bytes: u64,
    newlines: u64,
    reads: u64,
    sha: Sha256,
    last_byte_mono_ns: Option<u64>,
    eof: bool,
    /// (mono_ns, bytes) samples since the last reset.
    pub samples: Vec<(u64, u64)>,
    /// Reads the lines when the run asks to; kept across a reset, so the warm-up's
    /// request ids count.
    inspector: Option<inspect::LineInspector>,
}

impl ReaderState {
    /// A snapshot.
    pub fn stats(&self) -> ReaderStats {
        ReaderStats {
            mono_ns: mono_ns(),
            bytes: self.bytes,
            newlines: self.newlines,
            reads: self.reads,
            sha256: format!("{:x}", self.sha.clone().finalize()),
            last_byte_mono_ns: self.last_byte_mono_ns,
            eof: self.eof,
        }
    }

    /// Zeroes the counters and samples (after the warm-up).
    pub fn reset(&mut self) {
        *self = ReaderState {
            eof: self.eof,
            inspector: self.inspector.take(),
            ..ReaderState::default()
        };
    }
}

/// Shared handle to a reader's state.
pub type SharedState = Arc<Mutex<ReaderState>>;

/// Creates the FIFO at `path` if it does not exist; refuses anything that is not a FIFO.
/// Returns whether it was created.
#[cfg(unix)]
pub fn ensure_fifo(path: &Path) -> io::Result<bool> {
    use std::os::unix::fs::FileTypeExt;
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_fifo() => Ok(false),
        Ok(_) => Err(io::Error::new(
            io::ErrorKind::AlreadyExists,
            format!(
                "{} exists and is not a FIFO; remove it or choose another path",
                path.display()
            ),
        )),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "FIFO path contains a NUL byte")
            })?;
            // SAFETY: mkfifo with a valid NUL-terminated path.
            if unsafe { libc::mkfifo(c.as_ptr(), 0o600) } != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(
                    e.kind(),
                    format!("cannot create FIFO {}: {e}", path.display()),
                ));
            }
            Ok(true)
        }
        Err(e) => Err(io::Error::new(
            e.kind(),
            format!("cannot stat {}: {e}", path.display()),
        )),
    }
}

/// Opens a FIFO for reading. With `hold_open` it is opened read-write, so the reader
/// never sees end-of-file between writers (the lab restarts the API while the reader
/// stays) and opening never blocks.
#[cfg(unix)]
pub fn open_fifo(path: &Path, hold_open: bool) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.read(true).custom_flags(libc::O_CLOEXEC);
    if hold_open {
        options.write(true);
    }
    options.open(path).map_err(|e| {
        io::Error::new(
            e.kind(),
            format!("cannot open FIFO {}: {e}", path.display()),
        )
    })
}

/// Windows' named pipes are not files a logger opens by path: no FIFO.
#[cfg(not(unix))]
pub fn ensure_fifo(path: &Path) -> io::Result<bool> {
    Err(no_fifo(path))
}

/// Windows' named pipes are not files a logger opens by path: no FIFO.
#[cfg(not(unix))]
pub fn open_fifo(path: &Path, _hold_open: bool) -> io::Result<File> {
    Err(no_fifo(path))
}

#[cfg(not(unix))]
fn no_fifo(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        format!(
            "cannot use FIFO {}: FIFOs need unix; this build is for {}",
            path.display(),
            std::env::consts::OS
        ),
    )
}

/// The reader's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadConfig {
    /// Bytes per `read` call (4096 in the reference).
    pub read_size: usize,
    /// Cap in bytes per second: after each read of n bytes, wait n / rate.
    pub rate: Option<u64>,
    /// What to look for in the lines, beyond bytes and a hash.
    #[serde(default)]
    pub inspect: inspect::InspectConfig,
}

/// Reads `input` to end-of-file, updating `state`.
pub fn read_to_end(
    mut input: impl Read,
    config: &ReadConfig,
    state: &SharedState,
) -> io::Result<()> {
    let mut buf = vec![0u8; config.read_size.max(1)];
    if config.inspect.any() {
        state.lock().unwrap_or_else(|e| e.into_inner()).inspector =
            Some(inspect::LineInspector::new(config.inspect));
    }
    loop {
        let n = match input.read(&mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let now = mono_ns();
        let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
        if n == 0 {
            s.eof = true;
            return Ok(());
        }
        let chunk = &buf[..n];
        s.bytes += n as u64;
        s.newlines += chunk.iter().filter(|&&b| b == b'\n').count() as u64;
        s.reads += 1;
        s.sha.update(chunk);
        s.last_byte_mono_ns = Some(now);
        if let Some(inspector) = &mut s.inspector {
            inspector.feed(chunk);
        }
        drop(s);
        if let Some(rate) = config.rate.filter(|&r| r > 0) {
            // Waiting after each read caps the average rate without letting idle time
            // turn into a burst.
            std::thread::sleep(Duration::from_secs_f64(n as f64 / rate as f64));
        }
    }
}

/// Samples (time, bytes read) every [`SAMPLE_EVERY`] until `state` is dropped elsewhere.
pub fn spawn_sampler(state: &SharedState) -> io::Result<()> {
    let weak = Arc::downgrade(state);
    std::thread::Builder::new()
        .name("sampler".into())
        .spawn(move || {
            while let Some(state) = weak.upgrade() {
                {
                    let mut s = state.lock().unwrap_or_else(|e| e.into_inner());
                    let sample = (mono_ns(), s.bytes);
                    s.samples.push(sample);
                }
                drop(state);
                std::thread::sleep(SAMPLE_EVERY);
            }
        })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_hashes_what_it_reads() {
        let state = SharedState::default();
        let data = b"one\ntwo\nthree\n".repeat(1000);
        read_to_end(
            &data[..],
            &ReadConfig {
                read_size: 4096,
                rate: None,
                inspect: Default::default(),
            },
            &state,
        )
        .unwrap();
        let s = state.lock().unwrap().stats();
        assert_eq!(s.bytes, data.len() as u64);
        assert_eq!(s.newlines, 3000);
        assert_eq!(s.reads, (data.len() as u64).div_ceil(4096));
        assert_eq!(s.sha256, format!("{:x}", Sha256::digest(&data)));
        assert!(s.eof);
    }

    #[test]
    fn refuses_a_regular_file_as_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("file");
        std::fs::write(&path, b"x").unwrap();
        let err = ensure_fifo(&path).unwrap_err();
        assert!(err.to_string().contains("is not a FIFO"), "{err}");
        assert!(ensure_fifo(&dir.path().join("new.fifo")).unwrap());
    }
}

/// The reader's final report in control mode.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FinalReport {
    pub stats: ReaderStats,
    /// What the lines said, when the run asked.
    #[serde(default)]
    pub findings: Option<inspect::LineFindings>,
}

/// Runs the reader under the lab's control: commands on stdin (`stats`, `reset`,
/// `exit`), one JSON line per command on stdout. Ends on `exit` or when stdin closes
/// (the lab is gone), so it cannot be orphaned.
pub fn control_stdio(fifo: &Path, config: ReadConfig, pipe_size: Option<usize>) -> io::Result<()> {
    use std::io::{BufRead, Write};
    ensure_fifo(fifo)?;
    let file = open_fifo(fifo, true)?;
    if let Some(size) = pipe_size {
        loglag::__lab::set_pipe_size(&file, size)?;
    }
    // No sampler here: the lab samples the reader's stats itself, on the same clock
    // as the API's backlog (`lab::mod`'s `Sampler`).
    let state = SharedState::default();
    let for_reader = state.clone();
    std::thread::Builder::new()
        .name("reader".into())
        .spawn(move || {
            let _ = read_to_end(file, &config, &for_reader);
        })?;
    let stdout = io::stdout();
    println!("ready");
    for line in io::stdin().lock().lines() {
        let line = line?;
        let mut out = stdout.lock();
        match line.trim() {
            "stats" => {
                let stats = state.lock().unwrap_or_else(|e| e.into_inner()).stats();
                serde_json::to_writer(&mut out, &stats)?;
            }
            "reset" => {
                state.lock().unwrap_or_else(|e| e.into_inner()).reset();
                out.write_all(b"{\"ok\":true}")?;
            }
            "exit" => {
                let s = state.lock().unwrap_or_else(|e| e.into_inner());
                serde_json::to_writer(
                    &mut out,
                    &FinalReport {
                        stats: s.stats(),
                        findings: s.inspector.as_ref().map(|i| i.findings.clone()),
                    },
                )?;
                out.write_all(b"\n")?;
                out.flush()?;
                return Ok(());
            }
            other => write!(out, "{{\"error\":\"unknown command {other:?}\"}}")?,
        }
        out.write_all(b"\n")?;
        out.flush()?;
    }
    Ok(())
}
