//! `loglag lab`: its flags into the plan of a run or the steps of a preset, the runs, the outputs.

use super::*;
use loglag_lab::export::Exporter;
use std::path::PathBuf;

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
    // Caught before anything is made: a SIGINT from here on ends the lab through its
    // way out (what finished kept, what it made removed), never by the default action
    // half-way through creating a directory.
    let cancel = cancel_flag()?;
    let steps = lab_steps(&a)?;
    let against = super::against::prepare(&a, &steps)?;
    // Results are kept, with their report, unless --no-keep: in --out, or in a
    // fresh directory under loglag-results/.
    let keep = !a.no_keep;
    // The formats are checked before any run, so a typo costs seconds.
    let lab_outputs = ExportManager::lab(a.format.into(), keep);
    let preset_outputs = a
        .request
        .preset
        .map(|_| ExportManager::preset(a.format.into(), keep))
        .transpose()?;
    // Created (and proven writable) before any run; removed again if nothing was
    // written into it.
    let kept = match (&a.out, keep) {
        (_, false) => None,
        (Some(out), true) => {
            let existed = out.exists();
            check_out_dir(out)?;
            Some(Kept {
                dir: out.clone(),
                created: if existed {
                    Vec::new()
                } else {
                    vec![out.clone()]
                },
            })
        }
        (None, true) => Some(fresh_results_dir(
            Path::new(RESULTS_ROOT),
            std::time::SystemTime::now(),
        )?),
    };
    let total: usize = steps.iter().map(|s| s.plan.schedule().len()).sum();
    let expected: f64 = steps
        .iter()
        .map(|s| s.plan.duration.as_secs_f64() * s.plan.schedule().len() as f64)
        .sum();
    let first = &steps[0].plan;
    match a.request.preset {
        None => say!(
            "loglag lab: {total} runs ({} conditions x {} sinks x {} rounds), about {:.0} s of load plus drain",
            first.conditions.len(),
            first.sinks.len(),
            first.rounds,
            expected
        ),
        Some(preset) => say!(
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
    // A stdout that fails (a reader gone, a full disk) stops the tables, not the files.
    let shown = (|| -> anyhow::Result<()> {
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
        Ok(())
    })();
    if let Some(kept) = &kept {
        let out = &kept.dir;
        if done.is_empty() {
            let removed = kept.remove_created();
            say!(
                "loglag lab: no run completed; nothing kept in {}{}",
                out.display(),
                if removed { " (removed)" } else { "" }
            );
        } else {
            for (step, summary) in &done {
                lab_outputs.write(summary, &out.join(&step.label))?;
            }
            if let (Some(outputs), Some(ps)) = (&preset_outputs, &preset_summary) {
                outputs.write(ps, out)?;
            }
            say!("loglag lab: results in {}", out.display());
            say!("report: {}", out.join("report.html").display());
        }
    }
    stdout_outcome(shown)?;
    match error {
        None => match (against, done.first()) {
            (Some(b), Some((step, summary))) => {
                let dir = kept.as_ref().map(|k| k.dir.join(&step.label));
                super::against::finish(b, summary, dir.as_deref(), stdout)
            }
            _ => Ok(ExitCode::SUCCESS),
        },
        Some(LabError::Cancelled) => {
            say!("loglag lab: interrupted; {completed} completed runs reported");
            Ok(ExitCode::from(INTERRUPTED))
        }
        Some(e) => {
            Err(anyhow::Error::new(e)
                .context(format!("lab stopped after {completed} completed runs")))
        }
    }
}

/// Where `loglag lab` keeps its results when no `--out` says: relative to the current
/// directory, as criterion keeps `target/criterion`.
pub(crate) const RESULTS_ROOT: &str = "loglag-results";

/// The directory a run's results are kept in, and the directories the lab created for
/// it (deepest first), which it removes again when nothing was written.
#[derive(Debug)]
pub(crate) struct Kept {
    pub dir: PathBuf,
    created: Vec<PathBuf>,
}

impl Kept {
    /// Removes the directories the lab created, while empty; whether `dir` went.
    pub(crate) fn remove_created(&self) -> bool {
        for d in &self.created {
            // remove_dir refuses a directory that is not empty: nothing of anyone's goes.
            let _ = std::fs::remove_dir(d);
        }
        !self.dir.exists()
    }
}

/// A fresh directory under `root` named for `now` in UTC, `2026-12-06T07-55-12Z`
/// (no colons, which some file systems refuse), with `-2`, `-3`, … when another run
/// took the name in the same second: `create_dir` claims it atomically.
pub(crate) fn fresh_results_dir(root: &Path, now: std::time::SystemTime) -> anyhow::Result<Kept> {
    let mut created = Vec::new();
    if !root.exists() {
        std::fs::create_dir_all(root)
            .with_context(|| format!("cannot create {}", root.display()))?;
        created.push(root.to_owned());
    }
    let utc = loglag::__lab::rfc3339(now);
    let stamp = format!("{}Z", utc[..19].replace(':', "-"));
    for n in 1.. {
        let name = if n == 1 {
            stamp.clone()
        } else {
            format!("{stamp}-{n}")
        };
        let dir = root.join(name);
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                created.insert(0, dir.clone());
                return Ok(Kept { dir, created });
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(e).with_context(|| {
                    format!(
                    "cannot create {} (--out DIR keeps the results elsewhere, --no-keep nowhere)",
                    dir.display()
                )
                })
            }
        }
    }
    unreachable!("a free name is found")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_that_start_in_the_same_second_get_directories_of_their_own() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(RESULTS_ROOT);
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_796_543_712_250);
        let first = fresh_results_dir(&root, now).unwrap();
        let second = fresh_results_dir(&root, now).unwrap();
        assert_eq!(first.dir, root.join("2026-12-06T07-55-12Z"));
        assert_eq!(second.dir, root.join("2026-12-06T07-55-12Z-2"));
        // The second found the root there: it removes only its own directory.
        assert!(second.remove_created());
        assert!(root.exists());
        assert!(first.remove_created());
        assert!(
            !root.exists(),
            "the first created the root, and it was left empty"
        );
    }

    #[test]
    fn a_directory_that_holds_something_is_never_removed() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(RESULTS_ROOT);
        let kept = fresh_results_dir(&root, std::time::SystemTime::now()).unwrap();
        std::fs::write(kept.dir.join("summary.json"), b"{}").unwrap();
        assert!(!kept.remove_created());
        assert!(kept.dir.join("summary.json").exists());
    }
}
