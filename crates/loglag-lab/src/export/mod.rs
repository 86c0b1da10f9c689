//! Exporters: one file per format, behind one trait. They write only into the supplied
//! `Write`; opening files is the caller's business.

mod csv;
pub mod findings;
pub mod hops;
mod json;
mod load;
mod markdown;
pub(crate) mod pairs;
pub mod preset;

use std::io::{self, Write};

pub use self::csv::{PairsCsv, RequestsCsv, RunsCsv, TimeseriesCsv};
pub use self::json::Json;
pub use self::load::{emit_table, requests_csv as load_requests_csv};
pub use self::markdown::Markdown;

use crate::report::{LoadSummary, SinkSummary, Summary, TortureSummary};

/// Renders results in one format: a lab summary, and (for the formats that `--format`
/// offers) the summaries of `loglag load` and `loglag sink`.
pub trait Exporter {
    /// The conventional file name for the lab output.
    fn file_name(&self) -> &'static str;
    /// Writes the lab output.
    fn export(&self, summary: &Summary, out: &mut dyn Write) -> io::Result<()>;
    /// Writes `loglag load`'s summary.
    fn export_load(&self, _summary: &LoadSummary, _out: &mut dyn Write) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{} has no load output", self.file_name()),
        ))
    }
    /// Writes `loglag torture`'s results.
    fn export_torture(&self, _summary: &TortureSummary, _out: &mut dyn Write) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{} has no torture output: use md or json", self.file_name()),
        ))
    }
    /// Writes `loglag sink`'s summary.
    fn export_sink(&self, _summary: &SinkSummary, _out: &mut dyn Write) -> io::Result<()> {
        Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("{} has no sink output", self.file_name()),
        ))
    }
}

/// The exporter behind `--format md|json|csv` on stdout.
pub fn for_stdout(format: StdoutFormat) -> Box<dyn Exporter> {
    match format {
        StdoutFormat::Markdown => Box::new(Markdown),
        StdoutFormat::Json => Box::new(Json),
        StdoutFormat::Csv => Box::new(PairsCsv),
    }
}

/// The formats a command's table can take on stdout (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdoutFormat {
    Markdown,
    Json,
    Csv,
}

/// Every file `--out DIR` writes.
pub fn all() -> Vec<Box<dyn Exporter>> {
    vec![
        Box::new(Json),
        Box::new(PairsCsv),
        Box::new(RunsCsv),
        Box::new(RequestsCsv),
        Box::new(TimeseriesCsv),
        Box::new(Markdown),
    ]
}

/// Formats an optional number with `digits` decimals, or an empty cell.
pub(crate) fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(String::new, |v| format!("{v:.digits$}"))
}
