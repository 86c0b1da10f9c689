//! Where every command's result goes, and how it is read back: one [`ExportManager`]
//! per kind of result (hyperfine's shape: exporters of one method, the formats each
//! kind offers chosen in one place, its constructor), writing the table on stdout and,
//! into a directory, every file and then `manifest.json`; and [`render_dir`], which
//! reads a directory back by its manifest into report pages. Above `export/` and
//! `html/`, which it owns the use of.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::export::{self, Exporter, StdoutFormat};
use crate::html::{self, LoadError};
use crate::report::{
    EmitSummary, HopsSummary, LoadSummary, Manifest, PresetSummary, ResultKind, SinkSummary,
    Summary, TortureSummary, MANIFEST, SCHEMA,
};

type Boxed<R> = Box<dyn Exporter<R>>;

/// A table of one kind of result, written as a function.
type Table<R> = fn(&R, &mut dyn Write) -> io::Result<()>;

/// The outputs of one kind of result: its table on stdout in the format asked, and its
/// files (the JSON the result is read back from first, the manifest last).
pub struct ExportManager<R: 'static> {
    kind: ResultKind,
    stdout: Boxed<R>,
    files: Vec<(&'static str, Boxed<R>)>,
    /// Subdirectories that are results of their own (a preset's steps).
    parts: fn(&R) -> Vec<String>,
}

impl<R> std::fmt::Debug for ExportManager<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportManager")
            .field("kind", &self.kind)
            .field(
                "files",
                &self.files.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .finish()
    }
}

/// A format a kind of result does not offer on stdout, refused before anything runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported {
    pub kind: ResultKind,
    pub format: StdoutFormat,
    pub offered: &'static str,
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "--format {}: {}'s results offer {}",
            self.format.as_str(),
            self.kind.as_str(),
            self.offered
        )
    }
}

impl std::error::Error for Unsupported {}

fn json<R: Serialize>(r: &R, out: &mut dyn Write) -> io::Result<()> {
    export::Json.export(r, out)
}

fn none<R>(_: &R) -> Vec<String> {
    Vec::new()
}

fn boxed<R: 'static>(e: impl Exporter<R> + 'static) -> Boxed<R> {
    Box::new(e)
}

impl ExportManager<Summary> {
    /// `loglag lab`: the pairs table (md, json or csv); summary.json, the CSVs,
    /// pairs.md, and report.html when asked.
    pub fn lab(format: StdoutFormat, report: bool) -> ExportManager<Summary> {
        let stdout: Boxed<Summary> = match format {
            StdoutFormat::Markdown => boxed(export::Markdown),
            StdoutFormat::Json => boxed(export::Json),
            StdoutFormat::Csv => boxed(export::PairsCsv),
        };
        let mut files: Vec<(&'static str, Boxed<Summary>)> = vec![
            ("summary.json", boxed(export::Json)),
            ("pairs.csv", boxed(export::PairsCsv)),
            ("runs.csv", boxed(export::RunsCsv)),
            ("requests.csv", boxed(export::RequestsCsv)),
            ("timeseries.csv", boxed(export::TimeseriesCsv)),
            ("pairs.md", boxed(export::Markdown)),
        ];
        if report {
            files.push((
                "report.html",
                boxed(|s: &Summary, out: &mut dyn Write| out.write_all(html::render(s).as_bytes())),
            ));
        }
        ExportManager {
            kind: ResultKind::Lab,
            stdout,
            files,
            parts: none,
        }
    }
}

impl ExportManager<PresetSummary> {
    /// `loglag lab --preset`: the preset's table (md or json); preset.json, preset.md
    /// and report.html when asked. Each step is a `lab` result in its subdirectory.
    pub fn preset(
        format: StdoutFormat,
        report: bool,
    ) -> Result<ExportManager<PresetSummary>, Unsupported> {
        let stdout: Boxed<PresetSummary> = match format {
            StdoutFormat::Markdown => boxed(export::preset::markdown),
            StdoutFormat::Json => boxed(export::Json),
            StdoutFormat::Csv => {
                return Err(Unsupported {
                    kind: ResultKind::Preset,
                    format,
                    offered: "md or json (each step's pairs.csv is in its subdirectory)",
                })
            }
        };
        let mut files: Vec<(&'static str, Boxed<PresetSummary>)> = vec![
            ("preset.json", boxed(export::Json)),
            ("preset.md", boxed(export::preset::markdown)),
        ];
        if report {
            files.push((
                "report.html",
                boxed(|s: &PresetSummary, out: &mut dyn Write| {
                    out.write_all(html::render_preset(s).as_bytes())
                }),
            ));
        }
        Ok(ExportManager {
            kind: ResultKind::Preset,
            stdout,
            files,
            parts: |s| s.steps.clone(),
        })
    }
}

/// The JSON of a `lab hops` result, as `summary.json` has held it since it existed:
/// its figures under `hops`.
#[derive(Serialize)]
struct HopsDocument<'a> {
    schema: u32,
    hops: &'a HopsSummary,
}

impl ExportManager<HopsSummary> {
    /// `loglag lab hops`: its tables in Markdown; summary.json, hops.md and
    /// report.html when asked (spans.otlp.json is written beside them by the run).
    pub fn hops(report: bool) -> ExportManager<HopsSummary> {
        let mut files: Vec<(&'static str, Boxed<HopsSummary>)> = vec![
            (
                "summary.json",
                boxed(|s: &HopsSummary, out: &mut dyn Write| {
                    json(
                        &HopsDocument {
                            schema: SCHEMA,
                            hops: s,
                        },
                        out,
                    )
                }),
            ),
            ("hops.md", boxed(export::hops::markdown)),
        ];
        if report {
            files.push((
                "report.html",
                boxed(|s: &HopsSummary, out: &mut dyn Write| {
                    out.write_all(html::render_hops(s).as_bytes())
                }),
            ));
        }
        ExportManager {
            kind: ResultKind::Hops,
            stdout: boxed(export::hops::markdown),
            files,
            parts: none,
        }
    }
}

/// A table-only result: its stdout table in each format offered, and summary.json,
/// NAME.md (and NAME.csv when csv is offered) in a directory.
fn tables<R: Serialize + 'static>(
    kind: ResultKind,
    format: StdoutFormat,
    md: Table<R>,
    csv: Option<Table<R>>,
) -> Result<ExportManager<R>, Unsupported> {
    let stdout: Boxed<R> = match (format, csv) {
        (StdoutFormat::Markdown, _) => boxed(md),
        (StdoutFormat::Json, _) => boxed(export::Json),
        (StdoutFormat::Csv, Some(csv)) => boxed(csv),
        (StdoutFormat::Csv, None) => {
            return Err(Unsupported {
                kind,
                format,
                offered: "md or json (several tables)",
            })
        }
    };
    let (md_name, csv_name) = match kind {
        ResultKind::Load => ("load.md", "load.csv"),
        ResultKind::Sink => ("sink.md", "sink.csv"),
        ResultKind::Emit => ("emit.md", "emit.csv"),
        _ => ("torture.md", "torture.csv"),
    };
    let mut files: Vec<(&'static str, Boxed<R>)> =
        vec![("summary.json", boxed(export::Json)), (md_name, boxed(md))];
    if let Some(csv) = csv {
        files.push((csv_name, boxed(csv)));
    }
    Ok(ExportManager {
        kind,
        stdout,
        files,
        parts: none,
    })
}

impl ExportManager<LoadSummary> {
    /// `loglag load`.
    pub fn load(format: StdoutFormat) -> ExportManager<LoadSummary> {
        tables(
            ResultKind::Load,
            format,
            |s, out| export::Markdown.export(s, out),
            Some(|s, out| export::PairsCsv.export(s, out)),
        )
        .expect("load offers every format")
    }
}

impl ExportManager<SinkSummary> {
    /// `loglag sink`.
    pub fn sink(format: StdoutFormat) -> ExportManager<SinkSummary> {
        tables(
            ResultKind::Sink,
            format,
            |s, out| export::Markdown.export(s, out),
            Some(|s, out| export::PairsCsv.export(s, out)),
        )
        .expect("sink offers every format")
    }
}

impl ExportManager<EmitSummary> {
    /// `loglag emit`.
    pub fn emit(format: StdoutFormat) -> ExportManager<EmitSummary> {
        tables(
            ResultKind::Emit,
            format,
            |s, out| export::emit_table(s, false, out),
            Some(|s, out| export::emit_table(s, true, out)),
        )
        .expect("emit offers every format")
    }
}

impl ExportManager<TortureSummary> {
    /// `loglag torture`: several tables, so no CSV.
    pub fn torture(format: StdoutFormat) -> Result<ExportManager<TortureSummary>, Unsupported> {
        tables(
            ResultKind::Torture,
            format,
            |s, out| export::Markdown.export(s, out),
            None,
        )
    }
}

impl<R: 'static> ExportManager<R> {
    /// The table, on `out`.
    pub fn show(&self, result: &R, out: &mut dyn Write) -> io::Result<()> {
        self.stdout.export(result, out)?;
        out.flush()
    }

    /// Every file into `dir` (created if needed), then `manifest.json` naming them;
    /// returns their paths. An error names the file.
    pub fn write(&self, result: &R, dir: &Path) -> io::Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|e| named(dir, "cannot create", e))?;
        let mut written = Vec::new();
        for (name, exporter) in &self.files {
            let path = dir.join(name);
            write_file(&path, |out| exporter.export(result, out))?;
            written.push(path);
        }
        let manifest = Manifest {
            schema: SCHEMA,
            kind: self.kind,
            summary: self.files[0].0.to_owned(),
            files: self.files.iter().map(|(n, _)| (*n).to_owned()).collect(),
            parts: (self.parts)(result),
            loglag: env!("CARGO_PKG_VERSION").to_owned(),
        };
        let path = dir.join(MANIFEST);
        write_file(&path, |out| json(&manifest, out))?;
        written.push(path);
        Ok(written)
    }
}

/// Writes `path` through a new file beside it, renamed over it once complete: a
/// symbolic link at `path` is replaced, never followed (a result directory from
/// elsewhere may hold one pointing outside it), and a reader never sees half a file.
fn write_file(path: &Path, fill: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> io::Result<()> {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let name = path.file_name().map_or_else(
        || std::ffi::OsString::from("file"),
        std::ffi::OsStr::to_os_string,
    );
    let mut prefix = std::ffi::OsString::from(".");
    prefix.push(&name);
    // Created exclusively (O_EXCL): an existing name, a link included, is never opened.
    let temp = tempfile::Builder::new()
        .prefix(&prefix)
        .suffix(".tmp")
        .tempfile_in(dir)
        .map_err(|e| named(path, "cannot create", e))?;
    // A page or a table is for reading, as a plain `File::create` would leave it (a
    // temporary file is made private).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        temp.as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644))
            .map_err(|e| named(path, "cannot create", e))?;
    }
    let mut out = io::BufWriter::new(temp);
    fill(&mut out)
        .and_then(|()| out.flush())
        .map_err(|e| named(path, "cannot write", e))?;
    let temp = out
        .into_inner()
        .map_err(|e| named(path, "cannot write", e.into_error()))?;
    temp.persist(path)
        .map_err(|e| named(path, "cannot write", e.error))?;
    Ok(())
}

/// Writes a report page to `path` (inside a result directory) as every file of one is
/// written: through a new file renamed over `path`, so a symbolic link there is
/// replaced, not followed.
pub fn write_page(path: &Path, page: &str) -> io::Result<()> {
    write_file(path, |out| out.write_all(page.as_bytes()))
}

fn named(path: &Path, what: &str, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("{what} {}: {e}", path.display()))
}

/// A result directory's manifest; `None` for a directory written before manifests
/// existed (then [`guess_kind`] reads it as those versions wrote it).
pub fn read_manifest(dir: &Path) -> Result<Option<Manifest>, LoadError> {
    let path = dir.join(MANIFEST);
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(LoadError::Unreadable(path, e)),
    };
    let manifest: Manifest =
        serde_json::from_str(&text).map_err(|e| LoadError::Corrupt(path.clone(), e.to_string()))?;
    if !crate::report::READABLE_SCHEMAS.contains(&manifest.schema) {
        return Err(LoadError::Schema(path, u64::from(manifest.schema)));
    }
    Ok(Some(manifest))
}

/// The kind of a directory without a manifest, as the versions before manifests left
/// it: a `hops` section in summary.json, a preset.json, else a lab run.
fn guess_kind(dir: &Path) -> ResultKind {
    let hops = std::fs::read_to_string(dir.join("summary.json"))
        .ok()
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .is_some_and(|v| v.get("hops").is_some());
    if hops {
        ResultKind::Hops
    } else if dir.join("preset.json").exists() {
        ResultKind::Preset
    } else {
        ResultKind::Lab
    }
}

/// A result's JSON, every figure in it checked (`html::untrusted::check_figures`).
fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => LoadError::Missing(path.to_owned()),
        _ => LoadError::Unreadable(path.to_owned(), e),
    })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| LoadError::Corrupt(path.to_owned(), e.to_string()))?;
    html::untrusted::check_figures(path, &value)?;
    serde_json::from_value(value).map_err(|e| LoadError::Corrupt(path.to_owned(), e.to_string()))
}

/// A table-only result's page: its Markdown table, as its manager shows it, drawn.
fn table_page<R: serde::de::DeserializeOwned>(
    path: &Path,
    title: &str,
    outputs: &ExportManager<R>,
) -> Result<String, LoadError> {
    let result: R = read_json(path)?;
    let mut text = Vec::new();
    outputs
        .show(&result, &mut text)
        .map_err(|e| LoadError::Unreadable(path.to_owned(), e))?;
    Ok(html::tables::render_tables(
        title,
        &String::from_utf8_lossy(&text),
    ))
}

/// How deep presets may nest (a preset's step that is a preset, ...): the presets
/// loglag writes nest one deep.
pub const MAX_NESTING: usize = 4;

/// The report pages of a result directory, read by its manifest: (path, page), the
/// directory's own `report.html` first (the caller may write that one elsewhere),
/// then a page per part (a preset's steps).
///
/// The directory is untrusted input (see `html/untrusted.rs`): a step must be a plain
/// directory name whose directory is inside `dir` (a symbolic link out of it is
/// refused), presets nest at most [`MAX_NESTING`] deep and no directory is read twice;
/// every page path returned is inside `dir`.
pub fn render_dir(dir: &Path) -> Result<Vec<(PathBuf, String)>, LoadError> {
    let root = dir.canonicalize().map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => LoadError::Missing(dir.to_owned()),
        _ => LoadError::Unreadable(dir.to_owned(), e),
    })?;
    let mut seen = vec![root.clone()];
    render_nested(dir, &root, 0, &mut seen)
}

/// A preset's step: `dir/step`, after checking it is a plain name, inside `root` and
/// not read before.
fn step_dir(
    dir: &Path,
    file: &Path,
    step: &str,
    root: &Path,
    seen: &mut Vec<PathBuf>,
) -> Result<PathBuf, LoadError> {
    html::untrusted::component(step).map_err(|why| {
        LoadError::Refused(
            file.to_owned(),
            format!(
                "step {step:?} is not a directory name inside {}: {why}",
                dir.display()
            ),
        )
    })?;
    let path = dir.join(step);
    let real = match path.canonicalize() {
        Ok(real) => real,
        // Read as a directory without a result: the error says what is missing.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path),
        Err(e) => return Err(LoadError::Unreadable(path, e)),
    };
    if !real.starts_with(root) {
        return Err(LoadError::Refused(
            file.to_owned(),
            format!(
                "step {step:?} leads outside {} (to {}, through a symbolic link)",
                root.display(),
                real.display()
            ),
        ));
    }
    if seen.contains(&real) {
        return Err(LoadError::Refused(
            file.to_owned(),
            format!(
                "step {step:?} is {}, which is read already (presets that name each other)",
                real.display()
            ),
        ));
    }
    seen.push(real);
    Ok(path)
}

fn render_nested(
    dir: &Path,
    root: &Path,
    depth: usize,
    seen: &mut Vec<PathBuf>,
) -> Result<Vec<(PathBuf, String)>, LoadError> {
    let manifest = read_manifest(dir)?;
    if let Some(m) = &manifest {
        html::untrusted::component(&m.summary).map_err(|why| {
            LoadError::Corrupt(
                dir.join(MANIFEST),
                format!(
                    "summary {:?} is not a file name inside the directory: {why}",
                    m.summary
                ),
            )
        })?;
    }
    let kind = manifest
        .as_ref()
        .map_or_else(|| guess_kind(dir), |m| m.kind);
    let summary = dir.join(manifest.as_ref().map_or(
        if kind == ResultKind::Preset {
            "preset.json"
        } else {
            "summary.json"
        },
        |m| m.summary.as_str(),
    ));
    let own = dir.join("report.html");
    Ok(match kind {
        ResultKind::Lab => vec![(own, html::render(&html::load_dir(dir)?))],
        ResultKind::Preset => {
            let preset: PresetSummary = read_json(&summary)?;
            if depth >= MAX_NESTING && !preset.steps.is_empty() {
                return Err(LoadError::Refused(
                    summary,
                    format!("presets nest more than {MAX_NESTING} deep"),
                ));
            }
            let mut pages = vec![(own, html::render_preset(&preset))];
            for step in &preset.steps {
                let step = step_dir(dir, &summary, step, root, seen)?;
                pages.extend(render_nested(&step, root, depth + 1, seen)?);
            }
            pages
        }
        ResultKind::Hops => {
            let doc: serde_json::Value = read_json(&summary)?;
            let hops = doc.get("hops").cloned().unwrap_or(doc);
            let hops: HopsSummary = serde_json::from_value(hops)
                .map_err(|e| LoadError::Corrupt(summary.clone(), e.to_string()))?;
            vec![(own, html::render_hops(&hops))]
        }
        ResultKind::Load => vec![(
            own,
            table_page(
                &summary,
                "loglag load",
                &ExportManager::load(StdoutFormat::Markdown),
            )?,
        )],
        ResultKind::Sink => vec![(
            own,
            table_page(
                &summary,
                "loglag sink",
                &ExportManager::sink(StdoutFormat::Markdown),
            )?,
        )],
        ResultKind::Emit => vec![(
            own,
            table_page(
                &summary,
                "loglag emit",
                &ExportManager::emit(StdoutFormat::Markdown),
            )?,
        )],
        ResultKind::Torture => vec![(
            own,
            table_page(
                &summary,
                "loglag torture",
                &ExportManager::torture(StdoutFormat::Markdown).expect("md is offered"),
            )?,
        )],
    })
}
