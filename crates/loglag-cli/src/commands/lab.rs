//! `loglag lab`: its flags into the plan of a run or the steps of a preset, the runs, the outputs.

use super::*;
use loglag_lab::export::Exporter;

/// The request's steps, once the process can hold what they need open.
pub(crate) fn lab_steps(a: &LabArgs) -> anyhow::Result<Vec<Step>> {
    let exe = std::env::current_exe().context("cannot find the loglag executable")?;
    let steps = a.request.steps(exe)?;
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
    let against = super::against::prepare(&a, &steps)?;
    // The formats are checked before any run, so a typo costs seconds.
    let lab_outputs = ExportManager::lab(a.format.into(), a.report);
    let preset_outputs = a
        .request
        .preset
        .map(|_| ExportManager::preset(a.format.into(), a.report))
        .transpose()?;
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
    match a.request.preset {
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
        if let Some(preset) = a.request.preset {
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
    let preset_summary = a.request.preset.map(|p| p.summarise(&done));
    let stdout = &mut std::io::stdout().lock();
    match (&preset_outputs, &preset_summary) {
        (Some(outputs), Some(ps)) => outputs.show(ps, stdout)?,
        _ => {
            for (_, summary) in &done {
                if a.format == OutputFormat::Md {
                    // The headline, then the tables narrowed to what it speaks of.
                    let md = export::LabStdout {
                        columns: a.columns.into(),
                    };
                    md.export(summary, stdout)?;
                    stdout.flush()?;
                } else {
                    lab_outputs.show(summary, stdout)?;
                }
            }
        }
    }
    if let Some(out) = &a.out {
        if done.is_empty() {
            eprintln!(
                "loglag lab: no run completed; nothing written to {}",
                out.display()
            );
        } else {
            for (step, summary) in &done {
                lab_outputs.write(summary, &out.join(&step.label))?;
            }
            if let (Some(outputs), Some(ps)) = (&preset_outputs, &preset_summary) {
                outputs.write(ps, out)?;
            }
            eprintln!("loglag lab: results in {}", out.display());
        }
    }
    match error {
        None => match (against, done.first()) {
            (Some(b), Some((step, summary))) => {
                let dir = a.out.as_ref().map(|o| o.join(&step.label));
                super::against::finish(b, summary, dir.as_deref(), stdout)
            }
            _ => Ok(ExitCode::SUCCESS),
        },
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
