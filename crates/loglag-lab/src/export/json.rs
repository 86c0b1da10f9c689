use std::io::{self, Write};

use super::Exporter;
use crate::report::{LoadSummary, SinkSummary, Summary, TortureSummary};

/// `summary.json`: `{"schema": 1, "params": …, "runs": […], "pairs": […]}`.
#[derive(Debug, Clone, Copy)]
pub struct Json;

impl Exporter for Json {
    fn file_name(&self) -> &'static str {
        "summary.json"
    }

    fn export(&self, summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, summary)?;
        out.write_all(b"\n")
    }

    fn export_load(&self, summary: &LoadSummary, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, summary)?;
        out.write_all(b"\n")
    }

    fn export_torture(&self, summary: &TortureSummary, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, summary)?;
        out.write_all(b"\n")
    }

    fn export_sink(&self, summary: &SinkSummary, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, summary)?;
        out.write_all(b"\n")
    }
}
