//! `loglag report`: one self-contained HTML file (inline SVG and CSS, no scripts, no
//! external fetches) from a lab `--out` directory.
//!
//! Adding a chart is local: write a function in `charts.rs` that returns a
//! [`Section`], and list it in [`sections`].

mod charts;
mod heatmap;
mod hops;
pub use hops::render_hops;
pub mod svg;
pub mod tables;
pub mod untrusted;

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

use crate::report::{RequestRow, Summary, TimeseriesRow, SCHEMA};

/// Why a results directory could not be read. Every variant names the file.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoadError {
    Missing(PathBuf),
    Unreadable(PathBuf, io::Error),
    Corrupt(PathBuf, String),
    Schema(PathBuf, u64),
    /// Something the directory names that the report will not follow: a step that is
    /// not a plain directory name, one outside the directory, presets nested too deep
    /// or naming each other. Names the file that holds it, and says why.
    Refused(PathBuf, String),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Missing(p) => write!(
                f,
                "{} not found: is this a `loglag lab --out` directory?",
                p.display()
            ),
            LoadError::Unreadable(p, e) => write!(f, "cannot read {}: {e}", p.display()),
            LoadError::Corrupt(p, e) => write!(f, "{} is not a valid lab result: {e}", p.display()),
            LoadError::Schema(p, v) => write!(
                f,
                "{} has schema {v}; this loglag reads schemas 1 to {SCHEMA}",
                p.display()
            ),
            LoadError::Refused(p, why) => write!(f, "{}: {why}", p.display()),
        }
    }
}

impl std::error::Error for LoadError {}

fn read(path: &Path) -> Result<String, LoadError> {
    std::fs::read_to_string(path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => LoadError::Missing(path.to_owned()),
        _ => LoadError::Unreadable(path.to_owned(), e),
    })
}

/// Reads `summary.json` and, when present, `requests.csv` and `timeseries.csv`.
pub fn load_dir(dir: &Path) -> Result<Summary, LoadError> {
    let path = dir.join("summary.json");
    let text = read(&path)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| LoadError::Corrupt(path.clone(), e.to_string()))?;
    match value.get("schema").and_then(|v| v.as_u64()) {
        Some(v)
            if crate::report::READABLE_SCHEMAS
                .iter()
                .any(|&r| u64::from(r) == v) => {}
        Some(v) => return Err(LoadError::Schema(path, v)),
        None => return Err(LoadError::Corrupt(path, "no \"schema\" field".into())),
    }
    untrusted::check_figures(&path, &value)?;
    let mut summary: Summary = serde_json::from_value(value)
        .map_err(|e| LoadError::Corrupt(path.clone(), e.to_string()))?;
    let requests_path = dir.join("requests.csv");
    if requests_path.exists() {
        summary.requests = parse_requests(&requests_path, &read(&requests_path)?)?;
    }
    let series_path = dir.join("timeseries.csv");
    if series_path.exists() {
        summary.timeseries = parse_timeseries(&series_path, &read(&series_path)?)?;
    }
    // Results written before findings existed get theirs from the requests.
    if summary.findings.is_empty() {
        summary.findings = crate::lab::findings::from_summary(&summary);
    }
    Ok(summary)
}

/// Reads a CSV written by `export/` into its row type, by header name: a column added,
/// moved or quoted does not break it.
fn parse_csv<T: serde::de::DeserializeOwned>(path: &Path, text: &str) -> Result<Vec<T>, LoadError> {
    csv::Reader::from_reader(text.as_bytes())
        .deserialize()
        .map(|row| {
            row.map_err(|e| {
                let at = e
                    .position()
                    .map_or(String::new(), |p| format!("line {}: ", p.line()));
                LoadError::Corrupt(path.to_owned(), format!("{at}{e}"))
            })
        })
        .collect()
}

/// Each row's figures checked by [`untrusted::figure`]; the error names the line (the
/// header is line 1) and the column.
fn check_rows<T>(
    path: &Path,
    rows: Vec<T>,
    figures: impl Fn(&T) -> Vec<(&'static str, Option<f64>)>,
) -> Result<Vec<T>, LoadError> {
    for (i, row) in rows.iter().enumerate() {
        for (column, value) in figures(row) {
            if let Some(v) = value {
                untrusted::figure(column, v).map_err(|why| {
                    LoadError::Corrupt(path.to_owned(), format!("line {}: {why}", i + 2))
                })?;
            }
        }
    }
    Ok(rows)
}

fn parse_requests(path: &Path, text: &str) -> Result<Vec<RequestRow>, LoadError> {
    check_rows(path, parse_csv(path, text)?, |r: &RequestRow| {
        vec![
            ("scheduled_ms", Some(r.scheduled_ms)),
            ("send_lateness_ms", Some(r.send_lateness_ms)),
            ("latency_ms", r.latency_ms),
        ]
    })
}

fn parse_timeseries(path: &Path, text: &str) -> Result<Vec<TimeseriesRow>, LoadError> {
    check_rows(path, parse_csv(path, text)?, |r: &TimeseriesRow| {
        vec![("t_s", Some(r.t_s))]
    })
}

/// One part of the report: a heading, a sentence on how to read it, and SVG charts
/// (or a note saying why there are none).
#[derive(Debug)]
pub struct Section {
    pub id: &'static str,
    pub title: String,
    pub caption: String,
    pub charts: Vec<String>,
}

/// The charts, in page order.
fn sections(s: &Summary) -> Vec<Section> {
    vec![
        charts::latency_percentiles(s),
        charts::request_timeline(s),
        charts::backlog(s),
        charts::gen_vs_log_call(s),
        charts::throughput(s),
    ]
}

/// A table of `rows` with the columns a reader is shown (see `export/pairs.rs`): the
/// same list as the Markdown's, so the page and the text cannot drift apart.
pub(crate) fn column_table<'a, T: 'a>(
    columns: &[crate::export::pairs::Column<T>],
    rows: impl IntoIterator<Item = &'a T>,
) -> String {
    marked_column_table(columns, rows, |_, _| false)
}

/// A number as a reader takes it in: its whole part in groups of three
/// ("288,603.5"). Anything that is not a plain decimal number is left as it is.
pub(crate) fn grouped(cell: &str) -> String {
    let (sign, unsigned) = match cell.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", cell),
    };
    let (whole, fraction) = match unsigned.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (unsigned, None),
    };
    let plain = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !plain(whole) || fraction.is_some_and(|f| !plain(f)) || whole.len() < 5 {
        return cell.to_owned();
    }
    let mut out = String::from(sign);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(digit);
    }
    if let Some(f) = fraction {
        out.push('.');
        out.push_str(f);
    }
    out
}

/// [`column_table`], with the cells `bad` picks marked (a failed verification, say),
/// and numbers grouped by thousands.
pub(crate) fn marked_column_table<'a, T: 'a>(
    columns: &[crate::export::pairs::Column<T>],
    rows: impl IntoIterator<Item = &'a T>,
    bad: impl Fn(&crate::export::pairs::Column<T>, &T) -> bool,
) -> String {
    let shown: Vec<_> = columns.iter().filter(|c| !c.csv_only).collect();
    let class = |text: bool, bad: bool| match (text, bad) {
        (true, true) => " class=\"l bad\"",
        (true, false) => " class=\"l\"",
        (false, true) => " class=\"bad\"",
        (false, false) => "",
    };
    let mut h = String::from("<table><thead><tr>");
    for c in &shown {
        let _ = write!(h, "<th{}>{}</th>", class(c.text, false), esc(c.title));
    }
    h.push_str("</tr></thead><tbody>");
    for row in rows {
        h.push_str("<tr>");
        for c in &shown {
            let class = class(c.text, bad(c, row));
            let cell = crate::export::pairs::shown_cell(c, row);
            let cell = if c.text { cell } else { grouped(&cell) };
            let _ = write!(h, "<td{class}>{}</td>", esc(&cell));
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    h
}

/// The definitions of a table's `titles`, folded under it (the glossary in
/// `export/glossary.rs`, which docs/lab.md and `--help` print too).
fn glossary<'a>(titles: impl IntoIterator<Item = &'a str>) -> String {
    let mut h =
        String::from("<details class=\"glossary\"><summary>What the columns mean</summary><dl>");
    for t in crate::export::glossary::terms_for(titles) {
        let _ = write!(
            h,
            "<dt>{}</dt><dd>{}</dd>",
            esc(&t.titles.join(", ")),
            // `name` as code.
            esc(t.definition)
                .split('`')
                .enumerate()
                .map(|(i, part)| match i % 2 {
                    1 => format!("<code>{part}</code>"),
                    _ => part.to_owned(),
                })
                .collect::<String>()
        );
    }
    h.push_str("</dl></details>");
    h
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const CSS: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1400px;color:#222;padding:0 16px}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:12px;display:block;max-width:100%;overflow-x:auto}td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}
th{background:#f3f3f3}td.l,th.l{text-align:left}.bad{color:#b00;font-weight:bold}tr.faded td{color:#777;background:#fafafa}
dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px}dt{font-weight:bold}
.charts{display:flex;flex-wrap:wrap;gap:12px}svg.chart{flex:1 1 600px;max-width:960px;height:auto;background:#fff;border:1px solid #eee}
.title{font-size:13px;font-weight:bold;text-anchor:middle}.tick{font-size:10px;fill:#444}.axis{font-size:11px;fill:#222}
.headline pre{font:15px/1.5 ui-monospace,monospace;background:#f4f7f4;border-left:4px solid #2b7a4b;padding:10px 16px;white-space:pre-wrap;max-width:900px}
.legend{font-size:11px}.marker{font-size:10px}.grid{stroke:#eee}.plot{fill:none;stroke:#888}.caption{color:#555;max-width:900px}
.inconclusive{border-left:4px solid #b60;padding:4px 10px;background:#fff6e8;max-width:900px}
details.glossary{max-width:900px;margin:6px 0 12px;font-size:12px}details.glossary summary{cursor:pointer;color:#555}";

/// Renders the report.
/// A preset's page: its table, what it favours, and a link to each step's report.
pub fn render_preset(s: &crate::report::PresetSummary) -> String {
    let mut h = String::new();
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>loglag lab --preset {p}</title><style>{CSS}</style></head><body><h1>loglag lab --preset {p}</h1>",
        p = esc(&s.preset),
    );
    h.push_str(&headline_section(
        &crate::export::headline::preset_headline(s),
        None,
    ));
    let _ = write!(h, "<p>{}</p>", esc(&s.description));
    let (titles, rows) = crate::export::preset::table(s);
    h.push_str("<table><thead><tr>");
    for (title, number) in &titles {
        let class = if *number { "" } else { " class=\"l\"" };
        let _ = write!(h, "<th{class}>{}</th>", esc(title));
    }
    h.push_str("</tr></thead><tbody>");
    for row in rows {
        h.push_str("<tr>");
        for (cell, (_, number)) in row.iter().zip(&titles) {
            let _ = write!(
                h,
                "<td{}>{}</td>",
                if *number { "" } else { " class=\"l\"" },
                esc(cell)
            );
        }
        h.push_str("</tr>");
    }
    h.push_str("</tbody></table>");
    for note in crate::export::preset::footnotes(s) {
        let _ = write!(h, "<p class=\"caption\">{}</p>", esc(&note));
    }
    h.push_str(&glossary(titles.iter().map(|t| t.0)));
    for (label, who, text) in crate::export::preset::notes(s) {
        let _ = write!(
            h,
            "<p><strong>{label}</strong> ({}): {}.</p>",
            esc(&who),
            esc(&text)
        );
    }
    if let Some(v) = &s.verdict {
        // An inconclusive verdict is not a finding: it is not set in bold.
        if v.starts_with("Inconclusive") {
            let _ = write!(h, "<p class=\"inconclusive\">{}</p>", esc(v));
        } else {
            let _ = write!(h, "<p><strong>{}</strong></p>", esc(v));
        }
    }
    h.push_str(&sweep_heatmaps(s));
    h.push_str(&step_bars(s));
    h.push_str("<h2>Steps</h2><ul>");
    for step in &s.steps {
        // A step that is not a plain directory name gets no link (`loglag report`
        // refuses it too); its name is shown as text.
        let _ = match untrusted::href(&[step, "report.html"]) {
            Some(href) => write!(
                h,
                "<li><a href=\"{href}\">{}</a>: charts and per-run figures</li>",
                esc(step)
            ),
            None => write!(
                h,
                "<li>{} (not a directory name inside this one: no link)</li>",
                esc(step)
            ),
        };
    }
    h.push_str("</ul></body></html>\n");
    h
}

/// The sweep's grid (batch size × flush interval) as two heatmaps: p99 latency and
/// log writes per second, the two sides of the trade. Empty for other presets.
fn sweep_heatmaps(s: &crate::report::PresetSummary) -> String {
    let points: Vec<(usize, u64, &crate::report::PresetRow)> = s
        .rows
        .iter()
        .filter_map(|r| Some((r.batch_bytes?, r.flush_interval_ms?, r)))
        .collect();
    if points.is_empty() {
        return String::new();
    }
    let mut batches: Vec<usize> = points.iter().map(|p| p.0).collect();
    batches.sort_unstable();
    batches.dedup();
    let mut intervals: Vec<u64> = points.iter().map(|p| p.1).collect();
    intervals.sort_unstable();
    intervals.dedup();
    let size = |b: usize| {
        if b >= 1 << 20 && b % (1 << 20) == 0 {
            format!("{} MiB", b >> 20)
        } else {
            format!("{} KiB", b >> 10)
        }
    };
    let rows: Vec<String> = batches.iter().map(|&b| size(b)).collect();
    let columns: Vec<String> = intervals.iter().map(|i| format!("{i} ms")).collect();
    let grid =
        |value: &dyn Fn(&crate::report::PairSummary) -> Option<f64>| -> Vec<Vec<Option<f64>>> {
            batches
                .iter()
                .map(|&b| {
                    intervals
                        .iter()
                        .map(|&i| {
                            points
                                .iter()
                                .find(|p| p.0 == b && p.1 == i)
                                .and_then(|p| value(&p.2.pair))
                        })
                        .collect()
                })
                .collect()
        };
    let flagged: Vec<Vec<bool>> = batches
        .iter()
        .map(|&b| {
            intervals
                .iter()
                .map(|&i| {
                    points
                        .iter()
                        .any(|p| p.0 == b && p.1 == i && p.2.pair.metrics.flagged())
                })
                .collect()
        })
        .collect();
    let mut h = String::from("<h2>The grid</h2><p class=\"caption\">Each cell is one point of the sweep: darker is larger, on a log scale. Latency and writes pull in opposite directions; a point with a hollow ring was measured under conditions that cannot carry a comparison.</p><div class=\"charts\">");
    h.push_str(&heatmap::heatmap(
        "p99 latency (ms)",
        "batch",
        "flush interval",
        &rows,
        &columns,
        &grid(&|p| p.metrics.p99_ms),
        &flagged,
    ));
    h.push_str(&heatmap::heatmap(
        "log writes per second",
        "batch",
        "flush interval",
        &rows,
        &columns,
        &grid(&|p| p.metrics.process.log_writes_per_min.map(|m| m / 60.0)),
        &flagged,
    ));
    h.push_str("</div>");
    h
}

/// The buffers and blocking presets: each condition's p99 and records lost, one bar
/// per step (SIGTERM and SIGKILL, or 500 and 2000 connections), so a step's effect
/// reads across the conditions. Empty for the sweep, which has its grid.
fn step_bars(s: &crate::report::PresetSummary) -> String {
    if s.rows.is_empty() || s.rows.iter().any(|r| r.batch_bytes.is_some()) {
        return String::new();
    }
    let mut conditions: Vec<&str> = Vec::new();
    for r in &s.rows {
        if !conditions.contains(&r.pair.condition.as_str()) {
            conditions.push(&r.pair.condition);
        }
    }
    type Interval = Option<(f64, f64)>;
    // `flag`: draw a row measured under a warning hollow (latencies; not counts).
    let groups = |value: &dyn Fn(&crate::report::PresetRow) -> Option<f64>,
                  interval: &dyn Fn(&crate::report::PresetRow) -> Interval,
                  flag: bool|
     -> Vec<svg::BarGroup> {
        conditions
            .iter()
            .map(|&c| svg::BarGroup {
                label: c.to_owned(),
                bars: s
                    .steps
                    .iter()
                    .enumerate()
                    .filter_map(|(i, step)| {
                        let row = s
                            .rows
                            .iter()
                            .find(|r| r.step == *step && r.pair.condition == c)?;
                        Some(svg::Bar {
                            interval: interval(row),
                            flagged: flag && row.pair.metrics.flagged(),
                            ..svg::Bar::new(
                                step.clone(),
                                svg::PALETTE[i % svg::PALETTE.len()],
                                value(row)?,
                            )
                        })
                    })
                    .collect(),
            })
            .collect()
    };
    let p99 = groups(
        &|r| r.pair.metrics.p99_ms.map(|ms| ms * 1e3),
        &|r| r.pair.p99_ms_interval.map(|(lo, hi)| (lo * 1e3, hi * 1e3)),
        true,
    );
    let scale = charts::duration_scale(p99.iter().flat_map(|g| &g.bars).map(|b| b.value));
    let mut h = format!("<h2>Conditions by step</h2><p class=\"caption\">One mark per step for each condition, its value beside it (a static page has no hover); the whisker is the p99's 95% bootstrap interval over the requests. {} Records lost at the stop are bars on a linear axis (a spool's duplicates are not losses). {}</p><div class=\"charts\">", charts::DURATION_SCALE_CAPTION, charts::FLAGGED_CAPTION);
    h.push_str(&svg::bars(
        "p99 latency by step",
        if scale.is_log() {
            "p99 (log scale)"
        } else {
            "p99"
        },
        scale,
        &p99,
    ));
    // Counts, not estimates: no interval.
    let lost = groups(
        &|r| r.pair.metrics.lost_records.map(|n| n.max(0) as f64),
        &|_| None,
        false,
    );
    if lost.iter().flat_map(|g| &g.bars).any(|b| b.value > 0.0) {
        h.push_str(&svg::bars(
            "records lost at the stop, by step",
            "records",
            svg::Scale::Linear,
            &lost,
        ));
    }
    h.push_str("</div>");
    h
}

/// Reads a preset's `preset.json`, if `dir` holds one.
pub fn load_preset(dir: &Path) -> Result<Option<crate::report::PresetSummary>, LoadError> {
    let path = dir.join("preset.json");
    if !path.exists() {
        return Ok(None);
    }
    let text = read(&path)?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| LoadError::Corrupt(path.clone(), e.to_string()))?;
    untrusted::check_figures(&path, &value)?;
    serde_json::from_value(value)
        .map(Some)
        .map_err(|e| LoadError::Corrupt(path, e.to_string()))
}

/// The answer first: the headline's lines as stdout shows them (each within 80
/// columns, never wrapped), and the chart that shows them. Empty without lines.
pub(crate) fn headline_section(lines: &[String], chart: Option<&str>) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut h = String::from("<section id=\"answer\" class=\"headline\"><pre>");
    for line in lines {
        h.push_str(&esc(line));
        h.push('\n');
    }
    h.push_str("</pre>");
    h.push_str(chart.unwrap_or_default());
    h.push_str("</section>");
    h
}

pub fn render(s: &Summary) -> String {
    let mut h = String::new();
    let p = &s.params;
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width\"><title>loglag lab report</title><style>{CSS}</style></head><body><h1>loglag lab report</h1>"
    );
    // The answer first: the same sentences as the top of `loglag lab`'s stdout.
    let chart = charts::headline(s).map(|chart| {
        format!(
            "<figure class=\"headline-chart\">{chart}<figcaption class=\"caption\">The conditions the sentences above speak of, per sink: the p99 with its 95% interval and the p50. {} {}</figcaption></figure>",
            charts::DURATION_SCALE_CAPTION,
            charts::flagged_caption(s)
        )
    });
    h.push_str(&headline_section(
        &crate::export::headline::headline(s),
        chart.as_deref(),
    ));
    // One notation for the time zone, to the second: "2026-11-29 23:09:46 UTC".
    // A start past what the clock can hold comes from a hand-edited file: say so
    // rather than overflow.
    let started = std::time::UNIX_EPOCH
        .checked_add(std::time::Duration::from_secs(p.started_unix_s))
        .and_then(|t| {
            loglag::__lab::rfc3339(t)
                .get(..19)
                .map(|t| format!("{} UTC", t.replacen('T', " ", 1)))
        })
        .unwrap_or_else(|| format!("{} s after 1970 (out of range)", p.started_unix_s));
    let _ = write!(
        h,
        "<dl><dt>machine</dt><dd>{cpu}, {cores} cores, Linux {kernel}</dd><dt>loglag</dt><dd>{ver} ({rev})</dd><dt>started</dt><dd>{started}</dd><dt>load</dt><dd>{rate} for {dur} s, connection: {conn}, {warm} warm-up requests</dd><dt>runs</dt><dd>{nruns} runs: {nc} conditions × {ns} sinks × {rounds} rounds</dd><dt>sinks</dt><dd>FIFO read in {rs}-byte reads; slow = {slow} B/s; pipe size {pipe}</dd><dt>API</dt><dd>{app}, {threads} thread(s)</dd><dt>CPU limit</dt><dd>{cpu_limit}</dd></dl>",
        cpu = esc(&p.machine.cpu),
        cores = p.machine.cores,
        kernel = esc(&p.machine.kernel),
        ver = esc(&p.loglag_version),
        rev = esc(p.git_revision.as_deref().unwrap_or("unknown revision")),
        rate = p.plan.closed.map_or_else(|| format!("{} requests/s (open loop)", p.plan.rate), |n| format!("closed loop, {n} connections")),
        dur = p.plan.duration_s,
        conn = esc(&p.plan.connection),
        warm = p.plan.warmup_requests,
        nruns = s.runs.len(),
        nc = p.plan.conditions.len(),
        ns = p.plan.sinks.len(),
        rounds = p.plan.rounds,
        rs = p.plan.read_size,
        slow = p.plan.slow_rate_bytes_per_s,
        pipe = p.plan.pipe_size.map_or("64 KiB (kernel default)".to_owned(), |b| format!("{b} B")),
        app = p.plan.app.as_deref().map_or("built-in (hyper)".to_owned(), |a| format!("--app <code>{}</code>", esc(a))),
        threads = p.plan.threads,
        cpu_limit = match (p.plan.cpu_limit, p.cpu_limit_applied) {
            (None, _) => "none".to_owned(),
            (Some(c), true) => format!("{c} cores each for the API and the reader (cgroups)"),
            (Some(c), false) => format!("{c} cores requested, but cgroups were not usable: ran unlimited"),
        },
    );
    h.push_str("<h2 id=\"pairs\">Pairs</h2><p class=\"caption\">One row per (condition, sink), pooled over rounds. Latency runs from each request's scheduled send to the last byte of its body; – marks a figure that does not apply.</p>");
    let pair_columns = crate::export::pairs::PAIR_COLUMNS;
    // A late generator is marked where it tells a pair apart; when every pair's was
    // late, the footnotes say so once instead of a column of red.
    let some_on_time = s.pairs.iter().any(|p| p.metrics.lateness_warning.is_none());
    h.push_str(&marked_column_table(pair_columns, &s.pairs, |c, r| {
        (c.key == "verified" && !r.metrics.verified)
            || (c.key == "send_late_p99_us" && r.metrics.lateness_warning.is_some() && some_on_time)
            || (c.key == "lost_records" && r.metrics.lost_records.is_some_and(|l| l != 0))
    }));
    for note in crate::export::pairs::footnotes(s) {
        let _ = write!(h, "<p class=\"caption\">{}</p>", esc(note));
    }
    h.push_str(&glossary(
        pair_columns.iter().filter(|c| !c.csv_only).map(|c| c.title),
    ));
    for r in &s.pairs {
        if let (false, Some(note)) = (r.metrics.verified, &r.verify_note) {
            let _ = write!(
                h,
                "<p class=\"bad\"><b>Not verified</b> ({} / {}): {}.</p>",
                esc(&r.condition),
                esc(&r.sink),
                esc(note)
            );
        }
    }
    for (who, w) in crate::report::lateness_warnings(&s.pairs, s.params.plan.lateness_limit_us) {
        let _ = write!(
            h,
            "<p class=\"bad\"><b>Warning</b> ({}): {}.</p>",
            esc(&who),
            esc(&w)
        );
    }
    for (who, w) in crate::report::saturation_warnings(&s.pairs) {
        let _ = write!(
            h,
            "<p class=\"bad\"><b>Saturated</b> ({}): {}.</p>",
            esc(&who),
            esc(&w)
        );
    }
    if let Some(w) = crate::report::busy_machine_warning(s) {
        let _ = write!(h, "<p class=\"bad\"><b>Busy machine</b>: {}.</p>", esc(&w));
    }
    if !s.findings.is_empty() {
        use crate::export::findings::{finding_cells, findings_caption, FINDING_COLUMNS};
        let _ = write!(
            h,
            "<h2 id=\"findings\">Findings</h2><p class=\"caption\">{}</p><table><thead><tr>",
            esc(&findings_caption())
        );
        for (title, numeric) in FINDING_COLUMNS {
            let class = if numeric { "" } else { " class=\"l\"" };
            let _ = write!(h, "<th{class}>{}</th>", esc(title));
        }
        h.push_str("</tr></thead><tbody>");
        for f in &s.findings {
            // An inconclusive row is not a finding: greyed, its reason in the last cell.
            h.push_str(if f.inconclusive.is_some() {
                "<tr class=\"faded\">"
            } else {
                "<tr>"
            });
            for ((title, numeric), cell) in FINDING_COLUMNS.iter().zip(finding_cells(f)) {
                let class = match (numeric, *title == "verdict" && f.inconclusive.is_some()) {
                    (true, _) => "",
                    (false, true) => " class=\"l bad\"",
                    (false, false) => " class=\"l\"",
                };
                let _ = write!(h, "<td{class}>{}</td>", esc(&cell));
            }
            h.push_str("</tr>");
        }
        h.push_str("</tbody></table>");
        h.push_str(&glossary(FINDING_COLUMNS.iter().map(|c| c.0)));
    }
    for section in sections(s) {
        let _ = write!(
            h,
            "<h2 id=\"{}\">{}</h2><p class=\"caption\">{}</p><div class=\"charts\">",
            section.id,
            esc(&section.title),
            section.caption
        );
        for chart in &section.charts {
            h.push_str(chart);
        }
        h.push_str("</div>");
    }
    h.push_str("</body></html>\n");
    h
}

#[cfg(test)]
mod tests {
    #[test]
    fn numbers_in_tables_are_grouped_by_thousands_and_nothing_else_is() {
        use super::grouped;
        assert_eq!(grouped("288603"), "288,603");
        assert_eq!(grouped("1874000.25"), "1,874,000.25");
        assert_eq!(grouped("-13679"), "-13,679");
        // Four digits read at a glance; a year-like 2026 stays as it is.
        assert_eq!(grouped("2026"), "2026");
        for other in ["", "–", "yes", "1e308", "12:00", "1,234", "NaN", "12345x"] {
            assert_eq!(grouped(other), other);
        }
    }

    use super::*;

    fn fixture(name: &str) -> serde_json::Value {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name);
        serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
    }

    /// A step that is not a plain directory name (a `javascript:` URL, `..`, an
    /// absolute path) is shown as text, never put in an `href`; a plain one is linked,
    /// percent-encoded.
    #[test]
    fn a_preset_step_that_is_no_plain_name_is_shown_without_a_link() {
        let mut preset: crate::report::PresetSummary =
            serde_json::from_value(fixture("buffers-preset.json")).unwrap();
        preset.steps = vec![
            "javascript:document.title='pwned'//".into(),
            "../outside".into(),
            "/etc".into(),
            "\" onclick=\"x".into(),
            "term #2".into(),
        ];
        let page = render_preset(&preset);
        assert_eq!(
            untrusted::links_outside(&page),
            Vec::<String>::new(),
            "{page}"
        );
        assert!(!page.contains("href=\"javascript"), "{page}");
        assert!(
            page.contains("<li>javascript:document.title='pwned'// (not a directory name inside this one: no link)</li>"),
            "the name is still shown: {page}"
        );
        // A plain name that is no URL's is linked, its quotes percent-encoded.
        assert!(
            page.contains(
                "<a href=\"%22%20onclick%3D%22x/report.html\">&quot; onclick=&quot;x</a>"
            ),
            "{page}"
        );
        assert!(
            page.contains("<a href=\"term%20%232/report.html\">term #2</a>"),
            "{page}"
        );
    }

    /// `spans_file` is linked only as a relative path inside the directory.
    #[test]
    fn a_spans_file_outside_the_directory_is_shown_without_a_link() {
        let doc = fixture("hops/summary.json");
        let mut hops: crate::report::HopsSummary =
            serde_json::from_value(doc["hops"].clone()).unwrap();
        for hostile in [
            "javascript:document.title='pwned'",
            "../../etc/passwd",
            "/etc/passwd",
            "data:text/html,<script>alert(1)</script>",
            "spans//x.json",
        ] {
            hops.spans_file = Some(hostile.into());
            let page = render_hops(&hops);
            assert_eq!(
                untrusted::links_outside(&page),
                Vec::<String>::new(),
                "{hostile}"
            );
            assert!(
                page.contains(&format!("Every span: <code>{}</code>", esc(hostile))),
                "{hostile}: shown as text"
            );
            assert!(!page.to_ascii_lowercase().contains("<script"));
        }
        hops.spans_file = Some("out/spans otlp.json".into());
        assert!(render_hops(&hops).contains("<a href=\"out/spans%20otlp.json\">"));
    }
}
