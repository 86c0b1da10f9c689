//! Exporters: one file per format, behind one trait. They write only into the supplied
//! `Write`; opening files is the caller's business.

mod csv;
pub mod findings;
pub mod glossary;
pub mod headline;
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
pub use self::markdown::{LabStdout, Markdown};

/// Renders one kind of result (`R`) in one format, into the supplied `Write`. Which
/// exporter writes which file, and which formats each kind offers on stdout, is
/// chosen in one place: `outputs::ExportManager`'s constructors.
pub trait Exporter<R: ?Sized> {
    fn export(&self, result: &R, out: &mut dyn Write) -> io::Result<()>;
}

/// A function of the right shape is an exporter (emit's and the presets' tables).
impl<R: ?Sized, F: Fn(&R, &mut dyn Write) -> io::Result<()>> Exporter<R> for F {
    fn export(&self, result: &R, out: &mut dyn Write) -> io::Result<()> {
        self(result, out)
    }
}

/// Which columns the lab's tables show a reader (`--columns`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Columns {
    /// Those the headline speaks of (and what a reader needs to trust them).
    #[default]
    Headline,
    /// Every column.
    All,
}

/// The formats a command's table can take on stdout (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StdoutFormat {
    Markdown,
    Json,
    Csv,
}

impl StdoutFormat {
    /// As `--format` spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            StdoutFormat::Markdown => "md",
            StdoutFormat::Json => "json",
            StdoutFormat::Csv => "csv",
        }
    }
}

/// Formats an optional number with `digits` decimals, or an empty cell.
pub(crate) fn cell(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(String::new, |v| format!("{v:.digits$}"))
}
