//! Where a lab result goes: its table on stdout in the format asked, and in a
//! directory every exporter's file, with the HTML page drawn from the summary in memory
//! when asked (`loglag report DIR` draws the same page back from the files). Above
//! `export/` and `html/`, which it owns the use of.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::export::{all, for_stdout, StdoutFormat};
use crate::report::Summary;

/// The outputs of one lab result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Outputs {
    /// The table's format on stdout.
    pub stdout: StdoutFormat,
    /// Also `report.html` in the directory.
    pub report: bool,
}

impl Outputs {
    /// The table, on `out`.
    pub fn show(&self, summary: &Summary, out: &mut dyn Write) -> io::Result<()> {
        for_stdout(self.stdout).export(summary, out)
    }

    /// Every file into `dir` (created if needed); returns their paths. An error names
    /// the file.
    pub fn write(&self, summary: &Summary, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|e| named(dir, "cannot create", e))?;
        let mut written = Vec::new();
        for exporter in all() {
            let path = dir.join(exporter.file_name());
            let file =
                std::fs::File::create(&path).map_err(|e| named(&path, "cannot create", e))?;
            let mut file = io::BufWriter::new(file);
            exporter
                .export(summary, &mut file)
                .and_then(|()| file.flush())
                .map_err(|e| named(&path, "cannot write", e))?;
            written.push(path);
        }
        if self.report {
            let path = dir.join("report.html");
            std::fs::write(&path, crate::html::render(summary))
                .map_err(|e| named(&path, "cannot write", e))?;
            written.push(path);
        }
        Ok(written)
    }
}

fn named(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}
