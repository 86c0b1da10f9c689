//! `loglag sink`: the reader on its own, as a user points it at a FIFO or a TCP stream.
//! Its flags derive here, beside the fields they set.

use std::path::PathBuf;
use std::time::Instant;

use super::{ensure_fifo, open_fifo, read_to_end, spawn_sampler, ReadConfig, SharedState};
use crate::report::{SinkSummary, SCHEMA};
use crate::sys::units::{parse_bytes, parse_rate};

/// Every flag of `loglag sink` that shapes the read.
#[derive(Debug, Clone, clap::Args)]
#[command(after_help = "EXAMPLES:
    loglag sink --fifo /tmp/app.fifo --rate 256KiB
    loglag sink --listen 127.0.0.1:9000")]
pub struct SinkRequest {
    /// Read this FIFO (created if missing, and then removed; an existing non-FIFO is
    /// refused).
    #[arg(long, conflicts_with = "listen", required_unless_present = "listen")]
    pub fifo: Option<PathBuf>,
    /// Listen on this TCP address and read the first connection.
    #[arg(long)]
    pub listen: Option<String>,
    /// Cap the read rate (bytes per second; units B, KiB, MiB).
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<u64>,
    /// Bytes per read.
    #[arg(long, default_value_t = 4096)]
    pub read_size: usize,
    /// Set the FIFO's capacity with F_SETPIPE_SZ.
    #[arg(long, value_parser = parse_bytes)]
    pub pipe_size: Option<u64>,
    /// Write (seconds, bytes read) samples, 20 a second, as CSV to this file.
    #[arg(long)]
    pub samples: Option<PathBuf>,
}

impl SinkRequest {
    /// Reads to the end of the stream; `say` hears where it reads from.
    pub fn run(&self, say: impl Fn(&str)) -> std::io::Result<SinkSummary> {
        let config = ReadConfig {
            read_size: self.read_size,
            rate: self.rate,
            inspect: Default::default(),
        };
        let state = SharedState::default();
        let started = Instant::now();
        let started_mono = crate::sys::clock::mono_ns();
        spawn_sampler(&state)?;
        let source = match (&self.fifo, &self.listen) {
            (Some(fifo), _) => {
                let created = ensure_fifo(fifo)?;
                say(&format!(
                    "reading {} (waiting for a writer)",
                    fifo.display()
                ));
                let read = open_fifo(fifo, false).and_then(|file| {
                    if let Some(size) = self.pipe_size {
                        loglag::__lab::set_pipe_size(&file, size as usize)?;
                    }
                    read_to_end(file, &config, &state)
                });
                if created {
                    let _ = std::fs::remove_file(fifo);
                }
                read?;
                fifo.display().to_string()
            }
            (None, Some(addr)) => {
                let listener = std::net::TcpListener::bind(addr).map_err(|e| {
                    std::io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}"))
                })?;
                say(&format!("listening on {}", listener.local_addr()?));
                let (stream, peer) = listener.accept()?;
                say(&format!("reading from {peer}"));
                read_to_end(stream, &config, &state)?;
                format!("tcp://{addr}")
            }
            (None, None) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "give --fifo PATH or --listen ADDR",
                ))
            }
        };
        let (stats, samples) = {
            let s = state.lock().unwrap_or_else(|e| e.into_inner());
            (s.stats(), s.samples.clone())
        };
        if let Some(path) = &self.samples {
            let mut csv = String::from("t_s,bytes\n");
            for (t, bytes) in samples {
                let t_s = t.saturating_sub(started_mono) as f64 / 1e9;
                csv.push_str(&format!("{t_s:.3},{bytes}\n"));
            }
            std::fs::write(path, csv).map_err(|e| {
                std::io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
            })?;
        }
        Ok(SinkSummary {
            schema: SCHEMA,
            source,
            bytes: stats.bytes,
            newlines: stats.newlines,
            reads: stats.reads,
            sha256: stats.sha256,
            seconds: started.elapsed().as_secs_f64(),
            last_byte_s: stats
                .last_byte_mono_ns
                .map(|t| t.saturating_sub(started_mono) as f64 / 1e9),
            rate_cap_bytes_per_s: config.rate,
        })
    }
}
