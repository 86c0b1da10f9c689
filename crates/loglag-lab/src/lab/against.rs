//! `loglag lab --against BASELINE`: this run's costs against a saved run's, condition
//! by condition, judged by the rule the lab's own findings use.
//!
//! A condition's cost is its finding against the run's baseline condition (`none`, or
//! `--baseline`) on the same sink: its latency minus the baseline's at p50 and at p99,
//! both measured in the same run, so a machine slower on one day than the other moves
//! both sides and leaves the cost. The growth is this run's cost minus the saved run's;
//! its 95% interval combines the two findings' bootstrap intervals (the runs are
//! independent: the half-widths add in quadrature, each side taken on its own), and
//! then, as in [`super::findings`], a growth whose interval includes zero is within
//! the noise, and one that the interference measured in either run could explain
//! ([`interference_verdict`]: the CPU wait on a busy machine, the generator's lateness,
//! at the percentile's scale) is inconclusive, with the reason. A growth that holds
//! fails the comparison ([`Comparison::regressed`]).
//!
//! The saved run must have been measured alike: on the same kind of machine (CPU model,
//! cores, OS and architecture; the kernel release is not compared) and with the same
//! settings (everything `summary.json` echoes of the plan but `--rounds`, which only
//! narrows the intervals, and `--lateness-limit`, which only flags). [`check`] names
//! every difference; `--force` compares anyway and the comparison lists them.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::findings::baseline_of;
use super::interference::{interference_verdict, remarks_words, Interference, Wording};
use crate::export::findings::three_figures;
use crate::html::LoadError;
use crate::report::{Finding, Machine, PairSummary, Params, Percentile, PlanEcho, Summary};

/// The file the comparison is written to, in the run's result directory.
pub const AGAINST_MD: &str = "against.md";

/// Settings `summary.json` echoes that a comparison may differ in: more rounds only
/// narrow the intervals, and the lateness limit only flags runs (the findings weigh
/// the lateness itself).
const NOT_COMPARED: [&str; 2] = ["rounds", "lateness_limit_us"];

/// A saved run, read back, and the file it was read from.
#[derive(Debug, Clone)]
pub struct Saved {
    pub path: PathBuf,
    pub summary: Summary,
}

/// Why there is no comparison. Every variant names the baseline's file.
#[derive(Debug)]
pub enum AgainstError {
    /// Missing, unreadable, not JSON, another schema, not a lab result.
    Load(LoadError),
    /// Measured elsewhere or otherwise: each difference, in words.
    Refused {
        path: PathBuf,
        differences: Vec<String>,
    },
    /// Nothing the two runs share can be compared.
    Nothing { path: PathBuf, why: String },
}

impl std::fmt::Display for AgainstError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AgainstError::Load(LoadError::Missing(p)) => write!(
                f,
                "--against: {} not found (give a saved run's summary.json, or its directory)",
                p.display()
            ),
            AgainstError::Load(e) => write!(f, "--against: {e}"),
            AgainstError::Refused { path, differences } => {
                write!(
                    f,
                    "--against {}: the baseline was measured {}, so its costs are not comparable with this run's (--force compares anyway):",
                    path.display(),
                    if differences.len() == 1 {
                        "differently in one way"
                    } else {
                        "differently"
                    }
                )?;
                for d in differences {
                    write!(f, "\n  - {d}")?;
                }
                Ok(())
            }
            AgainstError::Nothing { path, why } => {
                write!(f, "--against {}: nothing to compare: {why}", path.display())
            }
        }
    }
}

impl std::error::Error for AgainstError {}

impl From<LoadError> for AgainstError {
    fn from(e: LoadError) -> AgainstError {
        AgainstError::Load(e)
    }
}

/// Reads a saved run: a `summary.json` (any file name), or a result directory that
/// holds one. A directory, or a file named `summary.json`, is read as `loglag report`
/// reads it (its `requests.csv` too, which gives findings to results written before
/// they were kept); another file alone.
pub fn load(path: &Path) -> Result<Saved, AgainstError> {
    let (file, summary) = if path.is_dir() {
        (path.join("summary.json"), crate::html::load_dir(path)?)
    } else if path.file_name().is_some_and(|n| n == "summary.json") && path.exists() {
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        (path.to_owned(), crate::html::load_dir(dir)?)
    } else {
        (path.to_owned(), load_file(path)?)
    };
    if summary.pairs.is_empty() {
        return Err(AgainstError::Nothing {
            path: file,
            why: "it holds no (condition, sink) pairs: is it a `loglag lab` summary.json (a preset's is in each step's directory)?".into(),
        });
    }
    Ok(Saved {
        path: file,
        summary,
    })
}

/// One `summary.json` on its own, checked as `loglag report` checks one.
fn load_file(path: &Path) -> Result<Summary, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => LoadError::Missing(path.to_owned()),
        _ => LoadError::Unreadable(path.to_owned(), e),
    })?;
    let value: Value = serde_json::from_str(&text)
        .map_err(|e| LoadError::Corrupt(path.to_owned(), format!("not JSON: {e}")))?;
    match value.get("schema").and_then(Value::as_u64) {
        Some(v)
            if crate::report::READABLE_SCHEMAS
                .iter()
                .any(|&r| u64::from(r) == v) => {}
        Some(v) => return Err(LoadError::Schema(path.to_owned(), v)),
        None => {
            return Err(LoadError::Corrupt(
                path.to_owned(),
                "no \"schema\" field".into(),
            ))
        }
    }
    crate::html::untrusted::check_figures(path, &value)?;
    serde_json::from_value(value).map_err(|e| LoadError::Corrupt(path.to_owned(), e.to_string()))
}

/// How the saved run was measured differently from the plan about to run here, one
/// sentence each: the machine's kind, then every setting the plan echoes but
/// [`NOT_COMPARED`]. Empty: comparable.
pub fn differences(saved: &Params, plan: &PlanEcho, machine: &Machine) -> Vec<String> {
    let mut out = Vec::new();
    let then = &saved.machine;
    let mut differ = |what: &str, a: String, b: String| {
        if a != b {
            out.push(format!("{what}: {a} in the baseline, {b} here"));
        }
    };
    differ("CPU model", then.cpu.clone(), machine.cpu.clone());
    differ("cores", then.cores.to_string(), machine.cores.to_string());
    // Results written before the OS and architecture were recorded cannot say.
    if !then.os.is_empty() && !machine.os.is_empty() {
        differ("OS", then.os.clone(), machine.os.clone());
    }
    if !then.arch.is_empty() && !machine.arch.is_empty() {
        differ("architecture", then.arch.clone(), machine.arch.clone());
    }
    let as_map = |p: &PlanEcho| match serde_json::to_value(p) {
        Ok(Value::Object(m)) => m,
        _ => serde_json::Map::new(),
    };
    let (a, b) = (as_map(&saved.plan), as_map(plan));
    let mut seen = Vec::new();
    for key in a.keys().chain(b.keys()) {
        if NOT_COMPARED.contains(&key.as_str()) || seen.contains(&key) {
            continue;
        }
        seen.push(key);
        let (x, y) = (
            a.get(key).unwrap_or(&Value::Null),
            b.get(key).unwrap_or(&Value::Null),
        );
        if !same(x, y) {
            differ(&flag(key), shown(x), shown(y));
        }
    }
    out
}

/// Equal as settings: numbers by value (20 and 20.0 are one rate).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

/// The flag a `summary.json` params key echoes, with its unit where the key has one.
fn flag(key: &str) -> String {
    match key {
        "duration_s" => "--duration (s)".into(),
        "slow_rate_bytes_per_s" => "--slow-rate (bytes/s)".into(),
        "warmup_requests" => "--warmup".into(),
        "disk_delay_us" => "--disk-delay (µs)".into(),
        "loglag_batch_bytes" => "--batch-bytes".into(),
        "loglag_flush_interval_ms" => "--flush-interval (ms)".into(),
        "collector_outage_ms" => "--collector-outage (ms)".into(),
        "app" => "--app command".into(),
        k => format!("--{}", k.replace('_', "-")),
    }
}

fn shown(v: &Value) -> String {
    match v {
        Value::Null => "not set".into(),
        Value::String(s) => format!("`{s}`"),
        Value::Array(a) => a
            .iter()
            .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
            .collect::<Vec<_>>()
            .join(","),
        other => other.to_string(),
    }
}

/// Whether the plan about to run may be compared with `saved`: `Ok` with the
/// differences `force` accepts (empty when there are none), else why not. Checked
/// before any run, so a wrong baseline costs seconds.
pub fn check(
    saved: &Saved,
    plan: &PlanEcho,
    machine: &Machine,
    force: bool,
) -> Result<Vec<String>, AgainstError> {
    if baseline_of(plan.baseline.as_deref(), &plan.conditions).is_none() {
        return Err(AgainstError::Nothing {
            path: saved.path.clone(),
            why: "this run has no baseline condition to measure costs against: add `none` to --conditions or name one with --baseline".into(),
        });
    }
    let differences = differences(&saved.summary.params, plan, machine);
    if differences.is_empty() || force {
        Ok(differences)
    } else {
        Err(AgainstError::Refused {
            path: saved.path.clone(),
            differences,
        })
    }
}

/// What a growth is, by the lab's rule.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// The cost grew: the interval is above zero and no interference measured could
    /// account for it. With what a reader must know (a busy machine's inflation).
    Grew(Option<String>),
    /// The cost shrank, as surely.
    Shrank(Option<String>),
    /// The growth's interval includes zero.
    WithinNoise,
    /// The runs cannot carry the growth: why.
    Inconclusive(String),
}

impl Verdict {
    pub fn words(&self) -> String {
        let with = |w: &str, note: &Option<String>| match note {
            Some(n) => format!("{w}; {n}"),
            None => w.to_owned(),
        };
        match self {
            Verdict::Grew(n) => with("grew, holds", n),
            Verdict::Shrank(n) => with("shrank, holds", n),
            Verdict::WithinNoise => "within noise".to_owned(),
            Verdict::Inconclusive(why) => format!("inconclusive: {why}"),
        }
    }

    /// The short word for one percentile on stdout.
    fn short(&self) -> &'static str {
        match self {
            Verdict::Grew(_) => "grew",
            Verdict::Shrank(_) => "shrank",
            Verdict::WithinNoise => "within noise",
            Verdict::Inconclusive(_) => "inconclusive",
        }
    }
}

/// One condition's cost at one percentile on one sink, then and now.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub condition: String,
    /// The condition the cost is measured against (the run's baseline).
    pub baseline: String,
    pub sink: String,
    pub percentile: Percentile,
    /// The condition's latency at the percentile, ms, in the saved run and in this one.
    pub latency_then_ms: f64,
    pub latency_now_ms: f64,
    /// Its cost (latency minus the baseline condition's), ms.
    pub cost_then_ms: f64,
    pub cost_now_ms: f64,
    /// `cost_now_ms − cost_then_ms`, and its 95% interval.
    pub growth_ms: f64,
    pub growth_interval_ms: (f64, f64),
    pub verdict: Verdict,
}

/// This run against a saved one.
#[derive(Debug, Clone)]
pub struct Comparison {
    /// The saved run's file.
    pub path: PathBuf,
    pub baseline: String,
    pub rows: Vec<Row>,
    /// Costs one run has and the other has not.
    pub uncompared: Vec<String>,
    /// The differences `--force` accepted.
    pub forced: Vec<String>,
    /// Who measured what: (the saved run's loglag, this run's), version and revision.
    pub versions: (String, String),
}

/// Compares `now` with `saved`, cost by cost. `forced`: the differences [`check`]
/// accepted, listed in the Markdown.
pub fn compare(
    saved: &Saved,
    now: &Summary,
    forced: Vec<String>,
) -> Result<Comparison, AgainstError> {
    let then = &saved.summary;
    let nothing = |why: String| AgainstError::Nothing {
        path: saved.path.clone(),
        why,
    };
    let base = baseline_of(
        now.params.plan.baseline.as_deref(),
        &now.params.plan.conditions,
    )
    .ok_or_else(|| nothing("this run has no baseline condition".into()))?;
    let costs = |s: &Summary| -> Vec<Finding> {
        s.findings
            .iter()
            .filter(|f| f.baseline == base)
            .cloned()
            .collect()
    };
    let (costs_then, costs_now) = (costs(then), costs(now));
    let key = |f: &Finding| (f.condition.clone(), f.sink.clone(), f.percentile.as_str());
    let mut rows = Vec::new();
    let mut uncompared = Vec::new();
    for n in &costs_now {
        let Some(t) = costs_then.iter().find(|t| key(t) == key(n)) else {
            uncompared.push(format!(
                "{} / {} {}: not in the baseline",
                n.condition,
                n.sink,
                n.percentile.as_str()
            ));
            continue;
        };
        rows.push(row(t, n, then, now));
    }
    for t in &costs_then {
        if !costs_now.iter().any(|n| key(n) == key(t)) {
            uncompared.push(format!(
                "{} / {} {}: not in this run",
                t.condition,
                t.sink,
                t.percentile.as_str()
            ));
        }
    }
    if rows.is_empty() {
        return Err(nothing(format!(
            "no cost against `{base}` is in both runs (the baseline's findings: {}; this run's: {})",
            costs_then.len(),
            costs_now.len()
        )));
    }
    let version = |p: &Params| match &p.git_revision {
        Some(r) => format!("loglag {} ({r})", p.loglag_version),
        None => format!("loglag {}", p.loglag_version),
    };
    Ok(Comparison {
        path: saved.path.clone(),
        baseline: base,
        rows,
        uncompared,
        forced,
        versions: (version(&then.params), version(&now.params)),
    })
}

fn pair<'a>(s: &'a Summary, condition: &str, sink: &str) -> Option<&'a PairSummary> {
    s.pairs
        .iter()
        .find(|p| p.condition == condition && p.sink == sink)
}

/// The growth's 95% interval: the two findings' intervals, each side's half-width
/// taken on its own, combined in quadrature (independent runs).
fn growth_interval(then: &Finding, now: &Finding) -> (f64, f64) {
    let below = |f: &Finding| (f.difference_ms - f.difference_interval_ms.0).max(0.0);
    let above = |f: &Finding| (f.difference_interval_ms.1 - f.difference_ms).max(0.0);
    let g = now.difference_ms - then.difference_ms;
    (
        g - below(now).hypot(above(then)),
        g + above(now).hypot(below(then)),
    )
}

fn row(t: &Finding, n: &Finding, then: &Summary, now: &Summary) -> Row {
    let growth_ms = n.difference_ms - t.difference_ms;
    let growth_interval_ms = growth_interval(t, n);
    let verdict = judge(t, n, then, now, growth_ms, growth_interval_ms);
    Row {
        condition: n.condition.clone(),
        baseline: n.baseline.clone(),
        sink: n.sink.clone(),
        percentile: n.percentile,
        latency_then_ms: t.value_ms,
        latency_now_ms: n.value_ms,
        cost_then_ms: t.difference_ms,
        cost_now_ms: n.difference_ms,
        growth_ms,
        growth_interval_ms,
        verdict,
    }
}

/// The lab's rule (`findings::judge`), applied to a growth: a baseline condition that
/// was saturated or failed requests in either run cannot carry a cost; failed
/// requests can make a cost look smaller; an interval with zero in it is noise; the
/// interference measured in either run's condition or baseline runs, at the
/// percentile's scale, half the growth or more, makes it inconclusive.
fn judge(
    t: &Finding,
    n: &Finding,
    then: &Summary,
    now: &Summary,
    growth_ms: f64,
    (lo, hi): (f64, f64),
) -> Verdict {
    let sides = (
        pair(then, &t.condition, &t.sink),
        pair(then, &t.baseline, &t.sink),
        pair(now, &n.condition, &n.sink),
        pair(now, &n.baseline, &n.sink),
    );
    let (Some(tc), Some(tb), Some(nc), Some(nb)) = sides else {
        return Verdict::Inconclusive(
            "a pair behind the findings is missing from its summary.json".into(),
        );
    };
    let failed = |p: &PairSummary| p.metrics.http_errors + p.metrics.timeouts;
    for (run, b) in [("the baseline run", tb), ("this run", nb)] {
        if b.metrics.saturation_warning.is_some() {
            return Verdict::Inconclusive(format!(
                "in {run}, {} / {} was saturated, so its latency is queueing",
                b.condition, b.sink
            ));
        }
        if failed(b) > 0 {
            return Verdict::Inconclusive(format!(
                "in {run}, {} of {} / {}'s requests failed or timed out",
                failed(b),
                b.condition,
                b.sink
            ));
        }
    }
    if failed(nc) > 0 && growth_ms <= 0.0 {
        return Verdict::Inconclusive(format!(
            "{} of this run's {} requests failed or timed out and are not in its percentiles: it may look cheaper only for their absence",
            failed(nc),
            nc.condition
        ));
    }
    if lo <= 0.0 && hi >= 0.0 {
        return Verdict::WithinNoise;
    }
    let at = n.percentile;
    let mut notes: Vec<String> = Vec::new();
    let sides =
        [(tc, tb), (nc, nb)].map(|(c, b)| most(Interference::of(c, at), Interference::of(b, at)));
    let wording = Wording::lab(at);
    match interference_verdict(growth_ms, at, sides) {
        Err(why) => return Verdict::Inconclusive(why.words(&wording)),
        Ok(remarks) => notes.extend(remarks_words(&remarks, &wording)),
    }
    if failed(nc) > 0 {
        notes.push(format!(
            "{} of this run's requests failed or timed out and are not in its percentiles: the growth is a lower bound",
            failed(nc)
        ));
    }
    let note = (!notes.is_empty()).then(|| notes.join("; "));
    if growth_ms > 0.0 {
        Verdict::Grew(note)
    } else {
        Verdict::Shrank(note)
    }
}

/// What either of a run's two pairs (the condition's, the baseline's) may have added
/// to its cost: each figure the larger of the two, as the lab's rule takes the larger
/// of its two sides.
fn most<'a>(a: Interference<'a>, b: Interference<'a>) -> Interference<'a> {
    let max = |x: Option<f64>, y: Option<f64>| match (x, y) {
        (Some(x), Some(y)) => Some(x.max(y)),
        (x, y) => x.or(y),
    };
    let weighed = |s: &Interference<'_>| max(s.late_tail.map(|t| t.at_scale_ms), s.late_ms);
    // The later generator's figures, whole, so the words name its runs.
    let (late, other) = if weighed(&a) >= weighed(&b) {
        (a, b)
    } else {
        (b, a)
    };
    Interference {
        wait_ms: max(a.wait_ms, b.wait_ms),
        api_wait_ms: max(a.api_wait_ms, b.api_wait_ms),
        late_ms: late.late_ms.or(other.late_ms),
        late_tail: late.late_tail.or(other.late_tail),
        busy: a.busy || b.busy,
        who: late.who,
    }
}

/// `+1.23` / `-0.456`: a signed figure.
fn signed(v: f64) -> String {
    if v > 0.0 {
        format!("+{}", three_figures(v))
    } else {
        three_figures(v)
    }
}

impl Comparison {
    /// A cost grew beyond its interval and the growth holds: the run fails.
    pub fn regressed(&self) -> bool {
        self.rows
            .iter()
            .any(|r| matches!(r.verdict, Verdict::Grew(_)))
    }

    fn count(&self, f: fn(&Verdict) -> bool) -> usize {
        self.rows.iter().filter(|r| f(&r.verdict)).count()
    }

    /// The verdict in one sentence.
    pub fn headline(&self) -> String {
        let grew = self.count(|v| matches!(v, Verdict::Grew(_)));
        let noise = self.count(|v| matches!(v, Verdict::WithinNoise));
        let unsure = self.count(|v| matches!(v, Verdict::Inconclusive(_)));
        let shrank = self.count(|v| matches!(v, Verdict::Shrank(_)));
        let total = self.rows.len();
        let rest = format!(
            "{noise} within noise, {unsure} inconclusive, {shrank} shrank (of {total} costs against {})",
            self.baseline
        );
        if grew > 0 {
            format!(
                "{grew} cost{} grew beyond {} interval and the growth holds; {rest}",
                if grew == 1 { "" } else { "s" },
                if grew == 1 { "its" } else { "their" }
            )
        } else {
            format!("no cost grew: {rest}")
        }
    }

    /// (condition / sink, its rows), in the run's order.
    fn by_pair(&self) -> Vec<(String, Vec<&Row>)> {
        let mut out: Vec<(String, Vec<&Row>)> = Vec::new();
        for r in &self.rows {
            let who = format!("{} / {}", r.condition, r.sink);
            match out.iter_mut().find(|(w, _)| *w == who) {
                Some((_, rows)) => rows.push(r),
                None => out.push((who, vec![r])),
            }
        }
        out
    }

    /// What stdout shows: the headline, then one line per condition and sink, each
    /// percentile's verdict with its costs then and now, and an inconclusive one's
    /// reason.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut lines = vec![format!(
            "against {}: {}",
            self.path.display(),
            self.headline()
        )];
        for (who, rows) in self.by_pair() {
            let parts: Vec<String> = rows
                .iter()
                .map(|r| {
                    let mut s = format!(
                        "{} {} (cost {} → {} ms)",
                        r.percentile.as_str(),
                        r.verdict.short(),
                        three_figures(r.cost_then_ms),
                        three_figures(r.cost_now_ms)
                    );
                    if let Verdict::Inconclusive(why) = &r.verdict {
                        let _ = write!(s, ": {why}");
                    }
                    s
                })
                .collect();
            lines.push(format!("  {who}: {}", parts.join("; ")));
        }
        if !self.forced.is_empty() {
            lines.push(format!(
                "  compared with --force despite: {}",
                self.forced.join("; ")
            ));
        }
        lines
    }

    /// The comparison as Markdown for a pull-request comment: the verdict first, then
    /// one row per cost, then how it was judged and against what.
    pub fn markdown(&self) -> String {
        let mut md = String::new();
        let mark = if self.regressed() { "❌" } else { "✅" };
        let _ = writeln!(md, "### loglag lab: logging costs against the baseline\n");
        let _ = writeln!(md, "{mark} **{}.**\n", capitalised(&self.headline()));
        for r in self
            .rows
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Grew(_)))
        {
            let _ = writeln!(
                md,
                "- **{} / {}, {}**: cost over {} {} → {} ms ({}{}), latency {} → {} ms",
                r.condition,
                r.sink,
                r.percentile.as_str(),
                r.baseline,
                three_figures(r.cost_then_ms),
                three_figures(r.cost_now_ms),
                signed(r.growth_ms),
                ratio(r).map_or(String::new(), |x| format!(", {x}")),
                three_figures(r.latency_then_ms),
                three_figures(r.latency_now_ms),
            );
        }
        if self.regressed() {
            md.push('\n');
        }
        let _ = writeln!(
            md,
            "| condition | sink | percentile | cost then ms | cost now ms | growth ms [95% interval] | latency then → now ms | verdict |"
        );
        let _ = writeln!(md, "|---|---|---|--:|--:|--:|--:|---|");
        for r in &self.rows {
            let verdict = match &r.verdict {
                Verdict::Grew(Some(note)) => format!("**grew, holds**; {note}"),
                Verdict::Grew(None) => "**grew, holds**".to_owned(),
                v => v.words(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} | {} [{}, {}] | {} → {} | {} |",
                r.condition,
                r.sink,
                r.percentile.as_str(),
                three_figures(r.cost_then_ms),
                three_figures(r.cost_now_ms),
                signed(r.growth_ms),
                signed(r.growth_interval_ms.0),
                signed(r.growth_interval_ms.1),
                three_figures(r.latency_then_ms),
                three_figures(r.latency_now_ms),
                verdict.replace('|', "\\|"),
            );
        }
        let _ = writeln!(
            md,
            "\nA cost is the condition's latency minus `{}`'s on the same sink in the same run. \
             The growth's interval combines both runs' 95% bootstrap intervals; it is within noise \
             when the interval includes zero, and inconclusive when the CPU wait of a busy machine \
             or the load generator's lateness, measured in either run, could account for it. \
             A growth that holds fails the check (exit 1).",
            self.baseline
        );
        let _ = writeln!(
            md,
            "\nBaseline: `{}`, {}; this run: {}.",
            self.path.display(),
            self.versions.0,
            self.versions.1
        );
        if !self.forced.is_empty() {
            let _ = writeln!(md, "\n**Compared with `--force` although:**\n");
            for d in &self.forced {
                let _ = writeln!(md, "- {d}");
            }
        }
        if !self.uncompared.is_empty() {
            let _ = writeln!(md, "\nNot compared: {}.", self.uncompared.join("; "));
        }
        md
    }
}

/// `12.3×` when both costs are positive: how many times the old cost the new one is.
fn ratio(r: &Row) -> Option<String> {
    (r.cost_then_ms > 0.0 && r.cost_now_ms > 0.0).then(|| {
        format!(
            "{}× the baseline's",
            three_figures(r.cost_now_ms / r.cost_then_ms)
        )
    })
}

fn capitalised(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or(String::new(), |f| f.to_uppercase().chain(c).collect())
}

#[cfg(test)]
mod tests;
