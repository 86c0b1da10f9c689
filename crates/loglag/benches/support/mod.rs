//! Shared pieces of the benches: the event every contender logs, and sinks.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A writer that discards, counting `write` calls (one per syscall a real fd would make).
#[derive(Clone, Default)]
pub struct CountingSink(pub Arc<AtomicU64>);

impl io::Write for CountingSink {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.fetch_add(1, Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The ~120-byte, three-field event.
#[macro_export]
macro_rules! event {
    ($i:expr) => {
        tracing::info!(
            request_id = $i,
            user = "ann",
            latency_ms = 12.5,
            "request completed"
        )
    };
}

/// One 16 KiB string field.
pub fn big_field() -> String {
    "x".repeat(16 * 1024)
}
