//! `loglag lab`: its flags into the plan of a run or the steps of a preset, the runs, the outputs.

use super::*;

/// Validates the flags into the plan of a plain run, or into the steps of a preset.
pub(crate) fn lab_steps(a: &LabArgs) -> anyhow::Result<Vec<Step>> {
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
    if a.rate.is_some() && a.closed.is_some() {
        bail!("--rate is an open loop and --closed a closed one: give one of them");
    }
    if a.app.is_none() && a.app_log != loglag_lab::api::launch::AppLog::Path {
        bail!("--app-log says where an --app writes its log; the built-in API writes to the lab's sink");
    }
    if !app && a.ready != loglag_lab::api::launch::Readiness::Connect {
        bail!("--ready says how an --app shows it is ready; the built-in API says so itself");
    }
    let exe = std::env::current_exe().context("cannot find the loglag executable")?;
    let mut base = LabSettings::reference(
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
    base.app_log = a.app_log.clone();
    base.drain_timeout = a.drain_timeout;
    base.warmup_timeout = a.warmup_timeout;
    base.lateness_limit_us = a.lateness_limit.as_secs_f64() * 1e6;
    base.expect_lines = a.expect_lines.clone().unwrap_or_default();
    base.stop_signal = a.stop_signal.unwrap_or_default();
    base.stop_builtin = a.stop_signal.is_some();
    base.stop_timeout = a.stop_timeout;
    base.record = a.record.unwrap_or_default();
    base.error_every = a.error_every;
    base.match_request_id = a.match_request_id;
    base.baseline = a.baseline.clone();
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
    base.collector_outage = a.collector_outage;
    // What the plan's own values must satisfy is the plan's to check (a preset's, step
    // by step, once it has set its conditions).
    let steps = match a.preset {
        None => vec![Step {
            label: String::new(),
            plan: LabPlan::new(base)?,
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
        )?,
    };
    // A closed loop of N connections holds N sockets here and N in the API, which
    // inherits this limit.
    if let Some(most) = steps.iter().filter_map(|s| s.plan.closed).max() {
        loglag_lab::sys::procfs::raise_open_files(2 * most as u64 + 256)
            .map_err(|e| anyhow::anyhow!("--closed {most}: {e}"))?;
    }
    Ok(steps)
}

/// Shows a preset's steps as one progress bar.
struct StepObserver<'a> {
    inner: &'a Progress,
    offset: usize,
    total: usize,
    step: &'a str,
}

impl loglag_lab::lab::Observer for StepObserver<'_> {
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

pub(crate) fn lab(a: LabArgs) -> anyhow::Result<ExitCode> {
    if let Some(LabCommand::Hops(h)) = a.sub {
        return super::hops::hops(h);
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
        let (mut summary, e) = loglag_lab::lab::run_lab(&step.plan, &observer, &cancel);
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
    let outputs = loglag_lab::outputs::Outputs {
        stdout: a.format.into(),
        report: a.report,
    };
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
                    outputs.show(summary, stdout)?;
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
                outputs.write(summary, &out.join(&step.label))?;
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
