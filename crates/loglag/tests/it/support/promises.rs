//! What the promise tests (`defaults.rs`, `batching.rs`, `overflow.rs`, `shutdown.rs`,
//! `modes.rs`, `report_format.rs`, `spool_sync.rs`) share: a sink that records each
//! write and sync and fails in scripted ways, one that holds the writer in its first
//! write, and readers of this process's threads' state.
#![allow(dead_code, unused_imports)]

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::*;
use loglag::sink::Sink;
use loglag::{DropReason, Level, Mode, NonBlockingBuilder, Overflow};

pub const LIMIT: Duration = Duration::from_secs(60);

/// Records each write's size; counts `sync` calls; optionally fails in scripted ways.
#[derive(Clone, Default)]
pub struct Recorder {
    pub out: Arc<Mutex<Vec<u8>>>,
    pub writes: Arc<Mutex<Vec<usize>>>,
    pub syncs: Arc<AtomicU64>,
    pub flushes: Arc<AtomicU64>,
    /// Return EINTR on every odd call (before writing anything).
    pub interrupt: bool,
    /// Accept this many bytes of the n-th call, then fail the next call with EIO.
    pub partial_then_fail: Option<(usize, usize)>,
    pub calls: usize,
}

impl Sink for Recorder {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.calls += 1;
        if self.interrupt && self.calls % 2 == 1 {
            return Err(io::ErrorKind::Interrupted.into());
        }
        let mut n = buf.len();
        if let Some((call, bytes)) = self.partial_then_fail {
            if self.calls == call {
                n = bytes.min(buf.len());
            } else if self.calls == call + 1 {
                return Err(super::device_error());
            }
        }
        self.writes.lock().unwrap().push(n);
        self.out.lock().unwrap().extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.flushes.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    fn as_file(&mut self) -> Option<&mut dyn loglag::sink::FileSink> {
        Some(self)
    }
}

impl loglag::__lab::FileSinkSeal for Recorder {}

/// A descriptor-less "file" that counts the syncs asked of it.
impl loglag::sink::FileSink for Recorder {
    fn descriptor(&self) -> Option<(loglag::sink::RawDescriptor, (u64, u64))> {
        None
    }
    fn position(&mut self) -> Option<u64> {
        None
    }
    fn identity(&mut self) -> Option<(u64, u64)> {
        None
    }
    fn truncate_to(&mut self, _len: u64) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }
    fn sync(&mut self) -> io::Result<()> {
        self.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}

/// A sink that holds the writer in its first write until the gate opens.
pub fn gated_recorder() -> (Recorder, Gate, mpsc::Receiver<()>, impl Sink) {
    let recorder = Recorder::default();
    let gate = Gate::closed();
    let (tx, rx) = mpsc::channel();
    struct Held {
        inner: Recorder,
        gate: Gate,
        entered: mpsc::Sender<()>,
    }
    impl Sink for Held {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let _ = self.entered.send(());
            self.gate.wait_open();
            self.inner.write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            self.inner.flush()
        }
    }
    let held = Held {
        inner: recorder.clone(),
        gate: gate.clone(),
        entered: tx,
    };
    (recorder, gate, rx, held)
}

/// A field whose `Debug` counts how often it is formatted.
pub struct Counted(pub Arc<AtomicU64>);

impl std::fmt::Debug for Counted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fetch_add(1, Ordering::Relaxed);
        f.write_str("counted")
    }
}

pub use super::procfs::{thread_cpu_seconds, thread_stat};

/// The scheduler state (`R`, `S`, ...) of one thread of this process, found by name.
pub fn thread_state(name: &str) -> Option<char> {
    thread_stat(name)?.first()?.chars().next()
}
