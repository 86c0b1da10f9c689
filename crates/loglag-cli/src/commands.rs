//! Stage two: validate arguments into plans, run them, write outputs.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use loglag_lab::api::condition::Condition;
use loglag_lab::api::server::{self, ServeConfig};
use loglag_lab::export::{self, Exporter};
use loglag_lab::lab::preset::{Overrides, Step};
use loglag_lab::lab::{self, LabError, LabPlan, RunCondition, SinkKind};
use loglag_lab::load::{self, LoadConfig, Outcome, Target};
use loglag_lab::reader::{self, ReadConfig, SharedState};
use loglag_lab::report::{Lateness, LoadSummary, SinkSummary, Summary, TortureSummary, SCHEMA};
use loglag_lab::stats::quantile;

use loglag_lab::child::ChildSpec;

use crate::args::{
    ChildArgs, EmitArgs, HopsArgs, LabArgs, LabCommand, LoadArgs, OutputFormat, RecoverArgs,
    ReportArgs, ServeArgs, SinkArgs, TortureArgs,
};
use crate::progress::Progress;

/// Exit code after Ctrl-C, as shells expect.
const INTERRUPTED: u8 = 130;

/// SIGINT/SIGTERM set the flag so the lab can clean up; a second one exits at once.
fn cancel_flag() -> anyhow::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register_conditional_shutdown(signal, INTERRUPTED as i32, flag.clone())?;
        signal_hook::flag::register(signal, flag.clone())?;
    }
    Ok(flag)
}

/// Validates the flags into the plan of a plain run, or into the steps of a preset.
fn lab_steps(a: &LabArgs) -> anyhow::Result<Vec<Step>> {
    let app = a.app.is_some();
    let conditions: Option<Vec<RunCondition>> = (!a.conditions.is_empty())
        .then(|| {
            a.conditions
                .iter()
                .map(|c| {
                    RunCondition::parse(c, app).map_err(|e| anyhow::anyhow!("--conditions: {e}"))
                })
                .collect::<anyhow::Result<_>>()
        })
        .transpose()?;
    let sinks = (!a.sinks.is_empty()).then(|| a.sinks.clone());
    if let Some(conditions) = &conditions {
        if let Some(twice) = conditions
            .iter()
            .enumerate()
            .find(|(i, c)| conditions[..*i].contains(c))
        {
            bail!(
                "--conditions lists {} twice: each pair is run once per round (use --rounds for repeats)",
                twice.1
            );
        }
    }
    if let Some(sinks) = &sinks {
        if let Some(twice) = sinks
            .iter()
            .enumerate()
            .find(|(i, s)| sinks[..*i].contains(s))
        {
            bail!("--sinks lists {} twice", twice.1.as_str());
        }
        if app && sinks.contains(&SinkKind::SlowDisk) {
            bail!("--sinks slow-disk delays the built-in API's writes; an --app writes on its own");
        }
    }
    if let Some(expect) = &a.expect_lines {
        if !app {
            bail!("--expect-lines verifies an --app; the built-in API reports what it wrote");
        }
        for name in expect.names() {
            if !conditions.iter().flatten().any(|c| c.name() == name) {
                bail!("--expect-lines names {name:?}, which is not in --conditions");
            }
        }
    }
    if app && (a.record.is_some() || a.error_every.is_some()) {
        bail!(
            "--record and --error-every shape what the built-in API logs; an --app logs on its own"
        );
    }
    if app && a.conditions.is_empty() {
        bail!(
            "--app needs --conditions: name the conditions your app understands; each is passed to it as {{condition}}, one run per name (the reference API's are {})",
            Condition::REFERENCE
                .iter()
                .map(|c| c.as_str())
                .collect::<Vec<_>>()
                .join(",")
        );
    }
    if a.preset.is_some() && app {
        bail!("--preset runs the built-in API's conditions; with --app, give --conditions and --expect-lines instead");
    }
    if a.read_size == 0 {
        bail!("--read-size must be at least 1 byte");
    }
    if a.threads == Some(0) {
        bail!("--threads must be at least 1");
    }
    if a.rounds == 0 {
        bail!("--rounds must be at least 1");
    }
    if let Some(rate) = a.rate {
        if !(rate > 0.0 && rate.is_finite()) {
            bail!("--rate must be a positive number of requests per second");
        }
        if a.closed.is_some() {
            bail!("--rate is an open loop and --closed a closed one: give one of them");
        }
    }
    if a.duration.is_some_and(|d| d.is_zero()) {
        bail!("--duration must be positive");
    }
    if let Some(c) = a.cpu_limit {
        if !(c > 0.0 && c.is_finite()) {
            bail!("--cpu-limit must be a positive number of cores, e.g. 0.25");
        }
    }
    if let Some(app) = &a.app {
        use loglag_lab::api::launch::{AppLog, Readiness};
        if !app.contains("{port}") {
            bail!("--app must contain {{port}} so the lab can reach it: {app:?}");
        }
        if a.app_log == AppLog::Path && !app.contains("{log_path}") {
            bail!("--app must contain {{log_path}} so the lab can read its log, or say --app-log stdout|stderr: {app:?}");
        }
        if a.app_log == AppLog::Stderr && matches!(a.ready, Readiness::Log(_)) {
            bail!("--ready log: watches the app's stderr, which --app-log stderr makes its log; use --ready connect or http:/PATH");
        }
    } else if a.app_log != loglag_lab::api::launch::AppLog::Path {
        bail!("--app-log says where an --app writes its log; the built-in API writes to the lab's sink");
    }
    if !app && a.ready != loglag_lab::api::launch::Readiness::Connect {
        bail!("--ready says how an --app shows it is ready; the built-in API says so itself");
    }
    if a.ready_timeout.is_zero() {
        bail!("--ready-timeout must be positive");
    }
    if a.slow_rate == 0 {
        bail!("--slow-rate must be positive");
    }
    let exe = std::env::current_exe().context("cannot find the loglag executable")?;
    let mut base = LabPlan::reference(
        conditions.clone().unwrap_or_else(|| {
            Condition::REFERENCE
                .iter()
                .map(|&c| RunCondition::BuiltIn(c))
                .collect()
        }),
        sinks
            .clone()
            .unwrap_or_else(|| vec![SinkKind::Fast, SinkKind::Slow]),
        exe,
    );
    base.rounds = a.rounds;
    base.rate = a.rate.unwrap_or(base.rate);
    base.closed = a.closed.map(|n| n as usize);
    base.duration = a.duration.unwrap_or(base.duration);
    base.connection = a.connection.unwrap_or(base.connection);
    base.slow_rate = a.slow_rate;
    base.disk_delay = a.disk_delay;
    base.read_size = a.read_size;
    base.pipe_size = a.pipe_size.map(|v| v as usize);
    base.threads = a.threads.unwrap_or(1);
    base.warmup = a.warmup;
    base.cpu_limit = a.cpu_limit;
    base.app = a.app.clone();
    base.ready = a.ready.clone();
    base.ready_timeout = a.ready_timeout;
    base.app_log = a.app_log;
    base.drain_timeout = a.drain_timeout;
    base.lateness_limit_us = a.lateness_limit.as_secs_f64() * 1e6;
    base.expect_lines = a.expect_lines.clone().unwrap_or_default();
    base.stop_signal = a.stop_signal.unwrap_or_default();
    base.stop_builtin = a.stop_signal.is_some();
    base.stop_timeout = a.stop_timeout;
    base.record = a.record.unwrap_or_default();
    base.error_every = a.error_every;
    base.match_request_id = a.match_request_id;
    if a.preset != Some(loglag_lab::lab::preset::Preset::Sweep)
        && (a.batch_bytes.len() > 1 || a.flush_interval.len() > 1)
    {
        bail!("--batch-bytes and --flush-interval take a list only with --preset sweep");
    }
    if a.batch_bytes.contains(&0) || a.flush_interval.iter().any(|d| d.is_zero()) {
        bail!("--batch-bytes and --flush-interval must be positive");
    }
    base.loglag_batch_bytes = a.batch_bytes.first().map(|&b| b as usize);
    base.loglag_flush_interval = a.flush_interval.first().copied();
    let steps = match a.preset {
        None => vec![Step {
            label: String::new(),
            plan: base,
        }],
        Some(preset) => preset.steps(
            &base,
            &Overrides {
                conditions,
                sinks,
                duration: a.duration,
                rate: a.rate,
                closed: a.closed.map(|n| n as usize),
                connection: a.connection,
                threads: a.threads,
                stop_signal: a.stop_signal,
                record: a.record,
                batch_bytes: (!a.batch_bytes.is_empty())
                    .then(|| a.batch_bytes.iter().map(|&b| b as usize).collect()),
                flush_intervals: (!a.flush_interval.is_empty()).then(|| a.flush_interval.clone()),
            },
        ),
    };
    // A closed loop of N connections holds N sockets here and N in the API, which
    // inherits this limit.
    if let Some(most) = steps.iter().filter_map(|s| s.plan.closed).max() {
        loglag_lab::sys::procfs::raise_open_files(2 * most as u64 + 256)
            .map_err(|e| anyhow::anyhow!("--closed {most}: {e}"))?;
    }
    Ok(steps)
}

/// Creates `--out` and proves it writable before any run, so a typo costs seconds,
/// not a whole lab run.
fn check_out_dir(out: &Path) -> anyhow::Result<()> {
    if out.is_file() {
        bail!("--out {} is a file; give a directory", out.display());
    }
    std::fs::create_dir_all(out)
        .with_context(|| format!("cannot create --out directory {}", out.display()))?;
    let probe = out.join(format!(".loglag-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"")
        .with_context(|| format!("--out directory {} is not writable", out.display()))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

fn write_outputs(dir: &Path, summary: &Summary) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir)
        .with_context(|| format!("cannot create --out directory {}", dir.display()))?;
    for exporter in export::all() {
        let path = dir.join(exporter.file_name());
        let mut file = std::io::BufWriter::new(
            std::fs::File::create(&path)
                .with_context(|| format!("cannot create {}", path.display()))?,
        );
        exporter
            .export(summary, &mut file)
            .and_then(|()| file.flush())
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

/// Shows a preset's steps as one progress bar.
struct StepObserver<'a> {
    inner: &'a Progress,
    offset: usize,
    total: usize,
    step: &'a str,
}

impl lab::Observer for StepObserver<'_> {
    fn run_started(&self, index: usize, _total: usize, label: &str) {
        let label = if self.step.is_empty() {
            label.to_owned()
        } else {
            format!("[{}] {label}", self.step)
        };
        self.inner
            .run_started(self.offset + index, self.total, &label);
    }
    fn run_finished(&self, run: &loglag_lab::report::RunSummary) {
        self.inner.run_finished(run);
    }
    fn warn(&self, message: &str) {
        self.inner.warn(message);
    }
    fn progress(&self, message: &str) {
        self.inner.progress(message);
    }
}

pub fn lab(a: LabArgs) -> anyhow::Result<ExitCode> {
    if let Some(LabCommand::Hops(h)) = a.sub {
        return hops(h);
    }
    let steps = lab_steps(&a)?;
    if let Some(out) = &a.out {
        check_out_dir(out)?;
    }
    let cancel = cancel_flag()?;
    let total: usize = steps.iter().map(|s| s.plan.schedule().len()).sum();
    let expected: f64 = steps
        .iter()
        .map(|s| s.plan.duration.as_secs_f64() * s.plan.schedule().len() as f64)
        .sum();
    let first = &steps[0].plan;
    match a.preset {
        None => eprintln!(
            "loglag lab: {total} runs ({} conditions x {} sinks x {} rounds), about {:.0} s of load plus drain",
            first.conditions.len(),
            first.sinks.len(),
            first.rounds,
            expected
        ),
        Some(preset) => eprintln!(
            "loglag lab --preset {preset}: {} steps ({}), {total} runs, about {:.0} s of load plus drain",
            steps.len(),
            steps.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(", "),
            expected
        ),
    }
    let progress = Progress::new(total);
    let mut done: Vec<(Step, Summary)> = Vec::new();
    let mut offset = 0;
    let mut error = None;
    for step in &steps {
        let observer = StepObserver {
            inner: &progress,
            offset,
            total,
            step: &step.label,
        };
        let (mut summary, e) = lab::run_lab(&step.plan, &observer, &cancel);
        offset += step.plan.schedule().len();
        if let Some(preset) = a.preset {
            summary.params.preset = Some(preset.to_string());
            summary.params.step = Some(step.label.clone());
        }
        if !summary.runs.is_empty() {
            done.push((step.clone(), summary));
        }
        if e.is_some() {
            error = e;
            break;
        }
    }
    progress.finish();
    let completed: usize = done.iter().map(|(_, s)| s.runs.len()).sum();
    // The table first: if writing the files fails, the measurements are still shown.
    let preset_summary = a.preset.map(|p| p.summarise(&done));
    {
        let stdout = &mut std::io::stdout().lock();
        match &preset_summary {
            Some(ps) if a.format == OutputFormat::Md => export::preset::markdown(ps, stdout)?,
            Some(ps) if a.format == OutputFormat::Json => {
                serde_json::to_writer_pretty(&mut *stdout, ps)?;
                writeln!(stdout)?;
            }
            _ => {
                for (_, summary) in &done {
                    stdout_exporter(a.format).export(summary, stdout)?;
                }
            }
        }
        stdout.flush()?;
    }
    if let Some(out) = &a.out {
        if done.is_empty() {
            eprintln!(
                "loglag lab: no run completed; nothing written to {}",
                out.display()
            );
        } else {
            for (step, summary) in &done {
                let dir = out.join(&step.label);
                write_outputs(&dir, summary)?;
                if a.report {
                    let html = loglag_lab::html::render(&loglag_lab::html::load_dir(&dir)?);
                    write_to(&dir.join("report.html"), html.as_bytes())?;
                }
            }
            if let Some(ps) = &preset_summary {
                let mut md = Vec::new();
                export::preset::markdown(ps, &mut md)?;
                write_to(&out.join("preset.md"), &md)?;
                write_to(
                    &out.join("preset.json"),
                    (serde_json::to_string_pretty(ps)? + "\n").as_bytes(),
                )?;
                if a.report {
                    let html = loglag_lab::html::render_preset(ps);
                    write_to(&out.join("report.html"), html.as_bytes())?;
                }
            }
            eprintln!("loglag lab: results in {}", out.display());
        }
    }
    match error {
        None => Ok(ExitCode::SUCCESS),
        Some(LabError::Cancelled) => {
            eprintln!("loglag lab: interrupted; {completed} completed runs reported");
            Ok(ExitCode::from(INTERRUPTED))
        }
        Some(e) => {
            Err(anyhow::Error::new(e)
                .context(format!("lab stopped after {completed} completed runs")))
        }
    }
}

/// `lab hops`'s open-loop rate when neither --rate nor --users is given.
const DEFAULT_HOPS_RATE: f64 = 200.0;

fn hops(a: HopsArgs) -> anyhow::Result<ExitCode> {
    use loglag_lab::hops::{self, HopsPlan};
    if let Some(rate) = a.rate {
        if !(rate > 0.0 && rate.is_finite()) {
            bail!("--rate must be a positive number of requests per second");
        }
    }
    if a.duration.is_zero() {
        bail!("--duration must be positive");
    }
    if a.threads == Some(0) {
        bail!("--threads must be at least 1");
    }
    if a.body_bytes < 64 {
        bail!("--body-bytes must be at least 64 (the JSON around the padding)");
    }
    if let Some(out) = &a.out {
        check_out_dir(out)?;
    }
    if a.sweep {
        if let Some(bad) = a.sweep_rates.iter().find(|r| !(r.is_finite() && **r > 0.0)) {
            bail!("--sweep-rates: {bad} is not a positive number of requests per second");
        }
        if a.sweep_duration.is_zero() {
            bail!("--sweep-duration must be positive");
        }
        // An open loop past a topology's capacity opens connections as fast as it sends.
        let top = a.sweep_rates.iter().copied().fold(0.0, f64::max);
        loglag_lab::sys::procfs::raise_open_files((top as u64).clamp(1024, 65_536))
            .map_err(|e| anyhow::anyhow!("--sweep: {e}"))?;
    }
    let users = a.users.map(|n| n as usize);
    // The reference measured an unsaturated service: an open loop well below both
    // topologies' capacity unless the user asks for something else.
    let rate = users.is_none().then(|| a.rate.unwrap_or(DEFAULT_HOPS_RATE));
    if let Some(n) = users {
        // The generator's sockets, order's accepted ones and its pooled calls.
        loglag_lab::sys::procfs::raise_open_files(4 * n as u64 + 256)
            .map_err(|e| anyhow::anyhow!("--users {n}: {e}"))?;
    }
    let plan = HopsPlan {
        users,
        rate,
        duration: a.duration,
        calls: a.calls,
        connection: a.connection,
        work: a.work,
        work_time: a.work_time,
        body_bytes: a.body_bytes,
        threads: a
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
        trace_every: a.trace_every,
        overhead: !a.no_overhead,
        warmup: 5,
        exe: std::env::current_exe().context("cannot find the loglag executable")?,
        netns: a.netns,
        sweep: a.sweep.then(|| {
            let mut rates = a.sweep_rates.clone();
            rates.sort_by(f64::total_cmp);
            rates.dedup();
            (rates, a.sweep_duration)
        }),
    };
    let runs = if plan.overhead { 4 } else { 2 };
    eprintln!(
        "loglag lab hops: {runs} runs (monolith, services{}), about {:.0} s of load; {}, {} connection per outgoing call",
        if plan.overhead {
            ", each traced and untraced"
        } else {
            ", traced"
        },
        runs as f64 * plan.duration.as_secs_f64(),
        match (plan.users, plan.rate) {
            (Some(n), _) => format!("closed loop of {n} users"),
            (None, Some(r)) if a.rate.is_none() => format!(
                "open loop at {r} requests/s (the default: below both topologies' capacity, as the reference's service was)"
            ),
            (None, Some(r)) => format!("open loop at {r} requests/s"),
            (None, None) => String::new(),
        },
        match plan.connection {
            loglag_lab::load::Connection::New => "a new",
            _ => "a pooled",
        }
    );
    let cancel = cancel_flag()?;
    let progress = Progress::new(runs);
    let result = hops::run_hops(&plan, &progress, &cancel);
    progress.finish();
    let mut output = match result {
        Ok(o) => o,
        Err(LabError::Cancelled) => {
            eprintln!("loglag lab hops: interrupted; nothing written");
            return Ok(ExitCode::from(INTERRUPTED));
        }
        Err(e) => return Err(anyhow::Error::new(e).context("lab hops failed")),
    };
    if let Some(out) = &a.out {
        let spans = hops::trace::otlp_document(&output.spans);
        write_to(
            &out.join("spans.otlp.json"),
            serde_json::to_string(&spans)?.as_bytes(),
        )?;
        output.summary.spans_file = Some("spans.otlp.json".into());
    }
    {
        let stdout = &mut std::io::stdout().lock();
        export::hops::markdown(&output.summary, stdout)?;
        stdout.flush()?;
    }
    if let Some(out) = &a.out {
        let doc = serde_json::json!({ "schema": SCHEMA, "hops": output.summary });
        write_to(
            &out.join("summary.json"),
            (serde_json::to_string_pretty(&doc)? + "\n").as_bytes(),
        )?;
        let mut md = Vec::new();
        export::hops::markdown(&output.summary, &mut md)?;
        write_to(&out.join("hops.md"), &md)?;
        if a.report {
            let html = loglag_lab::html::render_hops(&output.summary);
            write_to(&out.join("report.html"), html.as_bytes())?;
        }
        eprintln!("loglag lab hops: results in {}", out.display());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn emit(a: EmitArgs) -> anyhow::Result<ExitCode> {
    use crate::args::CompressName;
    use loglag_lab::emit::{self, EmitPlan, Rotation, SinkUrl};
    if a.count == 0 {
        bail!("--count must be at least 1");
    }
    if a.threads == 0 {
        bail!("--threads must be at least 1");
    }
    if !(16..=(64 << 10)).contains(&a.size) {
        bail!("--size must be between 16 bytes and 64 KiB (the pipeline's record limit)");
    }
    if let Some(rate) = a.rate {
        if !(rate > 0.0 && rate.is_finite()) {
            bail!("--rate must be a positive number of records per second");
        }
    }
    if a.rotate_every.is_some_and(|d| d.as_secs() == 0) {
        bail!("--rotate-every must be at least 1s");
    }
    let plan = EmitPlan {
        sink: a.sink.clone(),
        count: a.count,
        size: a.size as usize,
        rate: a.rate,
        level: a.level,
        threads: a.threads,
        spool: a.spool.clone(),
        overflow: a.overflow,
        rotation: Rotation {
            max_bytes: a.rotate_bytes,
            every: a.rotate_every,
            keep: a.keep,
            gzip: a.compress == Some(CompressName::Gzip),
        },
        via_tracing_appender: a.via == "tracing-appender",
    };
    let progress = std::sync::atomic::AtomicU64::new(0);
    // Ctrl-C stops emitting; what was emitted is drained and summarised. A second exits.
    let stop = cancel_flag()?;
    let summary = emit::emit(&plan, &progress, &stop)
        .with_context(|| format!("loglag emit into {}", a.sink))?;
    // The summary must not mix into the records.
    let mut out: Box<dyn Write> = if a.sink == SinkUrl::Stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let m = &summary.metrics;
    match a.format {
        OutputFormat::Json => {
            serde_json::to_writer_pretty(&mut out, &summary)?;
            writeln!(out)?;
        }
        OutputFormat::Csv => {
            writeln!(
                out,
                "sink,records,written,dropped,write_syscalls,elapsed_s,records_per_s,mib_per_s"
            )?;
            writeln!(
                out,
                "{},{},{},{},{},{:.3},{:.0},{:.1}",
                summary.sink,
                summary.records,
                m.written_records,
                m.dropped_records,
                m.write_syscalls,
                summary.elapsed_s,
                summary.records_per_s,
                summary.mib_per_s
            )?;
        }
        OutputFormat::Md => {
            writeln!(out, "| sink | records | written | dropped (queue full / io / shutdown) | write calls | write p99 µs | elapsed s | records/s | MiB/s |")?;
            writeln!(out, "|---|--:|--:|--:|--:|--:|--:|--:|--:|")?;
            writeln!(
                out,
                "| {} | {} | {} | {} ({} / {} / {}) | {} | {:.0} | {:.3} | {:.0} | {:.1} |",
                summary.sink,
                summary.records,
                m.written_records,
                m.dropped_records,
                m.dropped_queue_full,
                m.dropped_io_error,
                m.dropped_shutdown,
                m.write_syscalls,
                m.write_p99_us,
                summary.elapsed_s,
                summary.records_per_s,
                summary.mib_per_s
            )?;
        }
    }
    out.flush()?;
    if summary.interrupted {
        eprintln!(
            "loglag emit: interrupted after {} of {} records; those are drained and summarised above",
            summary.records, a.count
        );
        return Ok(ExitCode::from(INTERRUPTED));
    }
    if m.dropped_records > 0 && !a.allow_drops {
        eprintln!(
            "loglag emit: {} of {} records dropped (use --overflow block to wait instead, or --allow-drops)",
            m.dropped_records, summary.records
        );
        return Ok(ExitCode::FAILURE);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn load(a: LoadArgs) -> anyhow::Result<ExitCode> {
    if a.closed.is_none() && !(a.rate > 0.0 && a.rate.is_finite()) {
        bail!("--rate must be a positive number of requests per second");
    }
    let Some(url) = a.url.as_deref().or(a.calibrate.then_some("")) else {
        bail!("give a URL to load, or --calibrate to measure only the generator's floor");
    };
    let connection = a.connection;
    let lateness_limit_us = a.lateness_limit.as_secs_f64() * 1e6;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    // Ctrl-C stops the load and prints what was measured so far; a second one exits.
    let stop = cancel_flag()?;
    let run = |target: Target| {
        let progress = load::LoadProgress::stopped_by(stop.clone());
        let expected = a
            .closed
            .is_none()
            .then(|| (a.rate * a.duration.as_secs_f64()).round() as u64);
        let display = crate::progress::LoadDisplay::start(progress.clone(), expected);
        let result = runtime.block_on(load::run_observed(
            &LoadConfig {
                target,
                rate: a.rate,
                duration: a.duration,
                connection,
                closed: a.closed.map(|n| n as usize),
                grace: a.grace,
                first_id: 0,
            },
            progress,
        ));
        display.finish();
        result
    };
    let floor = if a.calibrate {
        let exe = std::env::current_exe().context("cannot find the loglag executable")?;
        let server = loglag_lab::child::NullServer::start(&exe).context("--calibrate")?;
        let label = format!("floor: null server at http://{}/", server.addr);
        eprintln!("calibrating: the same load against a null server ({label})");
        let result = run(server.target());
        Some(summarize(&a, &label, &result, lateness_limit_us))
    } else {
        None
    };
    let floor = match floor {
        // Interrupted while calibrating: report the floor alone.
        Some(f) if f.interrupted.is_some() => {
            stdout_exporter(a.format).export_load(&f, &mut std::io::stdout().lock())?;
            eprintln!(
                "loglag load: {}",
                f.interrupted.as_deref().unwrap_or_default()
            );
            return Ok(ExitCode::from(INTERRUPTED));
        }
        other => other,
    };
    let mut summary = if url.is_empty() {
        floor.expect("--calibrate without a URL")
    } else {
        let target = Target::parse(url).map_err(anyhow::Error::msg)?;
        // Fail fast with a clear message if nothing listens there.
        std::net::TcpStream::connect_timeout(&target.addr, Duration::from_secs(5))
            .with_context(|| format!("cannot connect to {url} ({})", target.addr))?;
        let result = run(target);
        if let Some(path) = &a.requests_csv {
            write_to(path, requests_csv(&result).as_bytes())?;
        }
        let mut summary = summarize(&a, url, &result, lateness_limit_us);
        summary.floor = floor.map(Box::new);
        summary
    };
    summary.schema = SCHEMA;
    stdout_exporter(a.format).export_load(&summary, &mut std::io::stdout().lock())?;
    if let Some(note) = &summary.interrupted {
        eprintln!("loglag load: {note}");
        return Ok(ExitCode::from(INTERRUPTED));
    }
    for s in summary.with_floor() {
        if let Some(w) = &s.lateness_warning {
            eprintln!("warning: {}: {w}", s.url);
        }
    }
    let all_ok = summary.with_floor().all(|s| s.ok == s.requests);
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn summarize(a: &LoadArgs, url: &str, result: &load::LoadResult, limit_us: f64) -> LoadSummary {
    let count = |o: Outcome| result.samples.iter().filter(|s| s.outcome == o).count() as u64;
    let mut latencies: Vec<u64> = result.samples.iter().filter_map(|s| s.latency_ns).collect();
    let ms = |v: Option<u64>| v.map(|ns| ns as f64 / 1e6);
    let lateness_ns: Vec<u64> = result.samples.iter().map(|s| s.send_lateness_ns).collect();
    // A closed loop has no schedule, so nothing can be late.
    let send_lateness = a
        .closed
        .is_none()
        .then(|| Lateness::of(&lateness_ns))
        .flatten();
    let ok = count(Outcome::Ok);
    LoadSummary {
        schema: SCHEMA,
        url: url.to_owned(),
        mode: if a.closed.is_some() {
            "closed".into()
        } else {
            "open".into()
        },
        rate: a.closed.is_none().then_some(a.rate),
        connections: a.closed.map(|n| n as usize),
        // An interrupted run lasted as long as it ran, not as planned.
        duration_s: if result.interrupted {
            result.wall.as_secs_f64()
        } else {
            a.duration.as_secs_f64()
        },
        requests: result.samples.len() as u64,
        ok,
        http_errors: count(Outcome::HttpError),
        io_errors: count(Outcome::IoError),
        timeouts: count(Outcome::Timeout),
        achieved_rps: ok as f64
            / if result.interrupted {
                result.wall.as_secs_f64().max(1e-9)
            } else {
                result.wall.as_secs_f64().max(a.duration.as_secs_f64())
            },
        p50_ms: ms(quantile(&mut latencies, 0.5)),
        p90_ms: ms(quantile(&mut latencies, 0.9)),
        p99_ms: ms(quantile(&mut latencies, 0.99)),
        p999_ms: ms(quantile(&mut latencies, 0.999)),
        max_ms: ms(quantile(&mut latencies, 1.0)),
        send_lateness,
        lateness_warning: send_lateness.and_then(|l| l.warning(limit_us)),
        interrupted: result.interrupted.then(|| {
            format!(
                "interrupted: {} requests finished before Ctrl-C are summarised; requests still in flight are not",
                result.samples.len()
            )
        }),
        floor: None,
    }
}

fn requests_csv(result: &load::LoadResult) -> String {
    let mut rows =
        String::from("index,scheduled_ms,send_lateness_ms,connect_ms,latency_ms,status,outcome\n");
    for s in &result.samples {
        let opt = |v: Option<u64>| v.map_or(String::new(), |v| format!("{:.3}", v as f64 / 1e6));
        let outcome = serde_json::to_value(s.outcome)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        rows.push_str(&format!(
            "{},{:.3},{:.3},{},{},{},{}\n",
            s.index,
            s.scheduled_ns as f64 / 1e6,
            s.send_lateness_ns as f64 / 1e6,
            opt(s.connect_ns),
            opt(s.latency_ns),
            s.status.map_or(String::new(), |s| s.to_string()),
            outcome
        ));
    }
    rows
}

fn stdout_exporter(format: OutputFormat) -> Box<dyn Exporter> {
    let name = match format {
        OutputFormat::Md => "md",
        OutputFormat::Json => "json",
        OutputFormat::Csv => "csv",
    };
    export::for_stdout(name).expect("every --format has an exporter")
}

fn write_to(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        std::io::stdout().lock().write_all(bytes)?;
    } else {
        std::fs::write(path, bytes).with_context(|| format!("cannot write {}", path.display()))?;
    }
    Ok(())
}

pub fn sink(a: SinkArgs) -> anyhow::Result<ExitCode> {
    let config = ReadConfig {
        read_size: a.read_size,
        rate: a.rate,
        inspect: Default::default(),
    };
    let pipe_size = a.pipe_size.map(|v| v as usize);
    let state = SharedState::default();
    let started = Instant::now();
    let started_mono = loglag_lab::sys::clock::mono_ns();
    reader::spawn_sampler(&state)?;
    let source = match (&a.fifo, &a.listen) {
        (Some(fifo), _) => {
            let created = reader::ensure_fifo(fifo)?;
            eprintln!(
                "loglag sink: reading {} (waiting for a writer)",
                fifo.display()
            );
            let file = reader::open_fifo(fifo, false)?;
            if let Some(size) = pipe_size {
                loglag::sink::set_pipe_size(&file, size)?;
            }
            let result = reader::read_to_end(file, &config, &state);
            if created {
                let _ = std::fs::remove_file(fifo);
            }
            result?;
            fifo.display().to_string()
        }
        (None, Some(addr)) => {
            let listener = std::net::TcpListener::bind(addr)
                .with_context(|| format!("cannot listen on {addr}"))?;
            eprintln!("loglag sink: listening on {}", listener.local_addr()?);
            let (stream, peer) = listener.accept()?;
            eprintln!("loglag sink: reading from {peer}");
            reader::read_to_end(stream, &config, &state)?;
            format!("tcp://{addr}")
        }
        (None, None) => bail!("give --fifo PATH or --listen ADDR"),
    };
    let (stats, samples) = {
        let s = state.lock().unwrap_or_else(|e| e.into_inner());
        (s.stats(), s.samples.clone())
    };
    if let Some(path) = &a.samples {
        let mut csv = String::from("t_s,bytes\n");
        for (t, bytes) in samples {
            csv.push_str(&format!(
                "{:.3},{bytes}\n",
                t.saturating_sub(started_mono) as f64 / 1e9
            ));
        }
        write_to(path, csv.as_bytes())?;
    }
    let summary = SinkSummary {
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
    };
    stdout_exporter(a.format).export_sink(&summary, &mut std::io::stdout().lock())?;
    Ok(ExitCode::SUCCESS)
}

pub fn serve(a: ServeArgs) -> anyhow::Result<ExitCode> {
    let condition: Condition = a.condition.parse().map_err(anyhow::Error::msg)?;
    let config = ServeConfig {
        port: a.port,
        threads: a.threads,
        log_path: a.log,
        hash_rounds: a.hash_rounds,
        record: a.record,
        ..ServeConfig::new(condition)
    };
    server::serve(config, |listening| {
        println!("{}", server::ready_line(&listening, condition));
        let _ = std::io::stdout().flush();
    })?;
    Ok(ExitCode::SUCCESS)
}

/// A child the lab started: becomes what its spec says.
pub fn child(a: ChildArgs) -> anyhow::Result<ExitCode> {
    ChildSpec::parse(&a.spec)
        .map_err(anyhow::Error::msg)?
        .run()?;
    Ok(ExitCode::SUCCESS)
}

pub fn report(a: ReportArgs) -> anyhow::Result<ExitCode> {
    let output = a
        .output
        .clone()
        .unwrap_or_else(|| a.dir.join("report.html"));
    // `lab hops` writes its own summary.json, with a `hops` section.
    if let Ok(text) = std::fs::read_to_string(a.dir.join("summary.json")) {
        if let Ok(doc) = serde_json::from_str::<serde_json::Value>(&text) {
            if let Some(hops) = doc.get("hops") {
                let summary: loglag_lab::report::HopsSummary = serde_json::from_value(hops.clone())
                    .with_context(|| {
                        format!("{} has a hops section that does not parse", a.dir.display())
                    })?;
                write_to(&output, loglag_lab::html::render_hops(&summary).as_bytes())?;
                if output.as_os_str() != "-" {
                    eprintln!("loglag report: wrote {}", output.display());
                }
                return Ok(ExitCode::SUCCESS);
            }
        }
    }
    match loglag_lab::html::load_preset(&a.dir)? {
        // A preset's directory: its table here, each step's charts in its own.
        Some(preset) => {
            for step in &preset.steps {
                let dir = a.dir.join(step);
                let summary = loglag_lab::html::load_dir(&dir)?;
                write_to(
                    &dir.join("report.html"),
                    loglag_lab::html::render(&summary).as_bytes(),
                )?;
            }
            write_to(&output, loglag_lab::html::render_preset(&preset).as_bytes())?;
        }
        None => {
            let summary = loglag_lab::html::load_dir(&a.dir)?;
            write_to(&output, loglag_lab::html::render(&summary).as_bytes())?;
        }
    }
    if output.as_os_str() != "-" {
        eprintln!("loglag report: wrote {}", output.display());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn torture(a: TortureArgs) -> anyhow::Result<ExitCode> {
    use loglag::Overflow;
    use loglag_lab::torture;
    let only = a.only.as_deref();
    if let Some(o) = only {
        if !["kill9", "soak", "hung", "faults"].contains(&o) {
            bail!("--only {o:?}: expected kill9, soak, hung or faults");
        }
    }
    if a.format == OutputFormat::Csv {
        bail!("--format csv: torture's results are several tables; use md or json");
    }
    let wants = |part: &str| only.is_none_or(|o| o == part);
    let mut summary = TortureSummary {
        schema: SCHEMA,
        ..TortureSummary::default()
    };
    if wants("kill9") {
        let exe = std::env::current_exe().context("cannot find the loglag executable")?;
        let seed = a.seed.unwrap_or_else(loglag_lab::sys::clock::mono_ns);
        let policy = match a.kill9_policy {
            crate::args::Kill9Policy::Block => torture::FloodPolicy::Block,
            crate::args::Kill9Policy::Default => torture::FloodPolicy::Default,
        };
        eprintln!(
            "loglag torture: {} kill -9 trials (seed {seed}, policy {policy:?})",
            a.trials
        );
        summary.kill9 = Some(torture::kill9(
            a.trials,
            seed,
            a.rotate_bytes,
            policy,
            |spool, out, progress| {
                ChildSpec::Flood {
                    spool: spool.to_owned(),
                    out: out.to_owned(),
                    progress: progress.to_owned(),
                    rotate_bytes: a.rotate_bytes,
                    policy,
                }
                .command(&exe)
            },
            |i, t| {
                eprintln!(
                    "  trial {}: returned {}, present {}, announced dropped {}, difference {}, duplicates {}, from spool {}, torn {}, files {}",
                    i + 1,
                    t.expected,
                    t.recovered,
                    t.announced,
                    t.expected as i64 - t.recovered as i64 - t.announced as i64,
                    t.duplicates,
                    t.from_spool,
                    t.torn,
                    t.files
                )
            },
        )?);
    }
    let policies = [
        Overflow::Block,
        Overflow::BlockFor(Duration::from_millis(1)),
        Overflow::DropNewest,
        Overflow::DropOldest,
        Overflow::ShedByLevel,
    ];
    if wants("soak") {
        let rate = a.sink_rate.max(1024);
        let baseline = torture::rss_bytes();
        for policy in policies {
            eprintln!("loglag torture: soak {policy:?} for {:?}", a.soak);
            summary
                .soak
                .push(torture::soak(policy, a.soak, rate, baseline));
        }
        eprintln!("loglag torture: soak tracing-appender for {:?}", a.soak);
        summary.soak_tracing_appender =
            Some(torture::soak_tracing_appender(a.soak, rate, baseline));
    }
    if wants("hung") {
        for policy in &policies[1..] {
            summary.hung.push(torture::hung_sink(*policy, 10_000));
        }
    }
    if wants("faults") {
        summary.faults = torture::sink_faults(100_000)?;
    }
    stdout_exporter(a.format).export_torture(&summary, &mut std::io::stdout().lock())?;
    Ok(if summary.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

pub fn recover(a: RecoverArgs) -> anyhow::Result<ExitCode> {
    let report = match a.output.as_deref() {
        // The output is opened only once the spool is known to be one.
        Some(path) if path.as_os_str() != "-" => {
            loglag::spool::recover_opening(&a.spool, || loglag::sink::FdSink::append(path))?
        }
        _ => loglag::spool::recover(&a.spool, loglag::sink::FdSink::stdout())?,
    };
    eprintln!(
        "loglag recover: {} records ({} bytes) delivered, {} torn regions skipped, {} already delivered, {} drops announced that the process had not reported",
        report.records, report.bytes, report.torn, report.already_delivered, report.unannounced_drops
    );
    Ok(ExitCode::SUCCESS)
}
