//! Exporters: one file per format, behind one trait. They write only into the supplied
//! `Write`; opening files is the caller's business.

mod csv;
mod json;
mod markdown;

use std::io::{self, Write};

pub use self::csv::{PairsCsv, RequestsCsv, RunsCsv, TimeseriesCsv};
pub use self::json::Json;
pub use self::markdown::Markdown;

use crate::report::Summary;

/// Renders a lab summary in one format.
pub trait Exporter {
    /// The conventional file name for this output.
    fn file_name(&self) -> &'static str;
    /// Writes the output.
    fn export(&self, summary: &Summary, out: &mut dyn Write) -> io::Result<()>;
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
