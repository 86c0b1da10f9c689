use std::io::{self, Write};

use serde::Serialize;

use super::Exporter;

/// Any result as pretty JSON: `summary.json` (`{"schema": 2, …}`), `--format json`.
#[derive(Debug, Clone, Copy)]
pub struct Json;

impl<R: Serialize> Exporter<R> for Json {
    fn export(&self, result: &R, out: &mut dyn Write) -> io::Result<()> {
        serde_json::to_writer_pretty(&mut *out, result)?;
        out.write_all(b"\n")
    }
}
