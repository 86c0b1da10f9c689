//! `loglag lab --against`: the saved run read and held to this run's plan and machine
//! before any run starts, and this run's costs compared with its own after the runs
//! (`loglag_lab::lab::against` has the rule and the words).

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{bail, Context};
use loglag_lab::lab::against::{self, Saved, AGAINST_MD};
use loglag_lab::lab::preset::Step;
use loglag_lab::report::Summary;

use super::stdout_outcome;

use crate::args::LabArgs;

/// A baseline that passed its checks, and the differences `--force` accepted.
pub(crate) struct Against {
    saved: Saved,
    forced: Vec<String>,
}

/// Before any run: reads `--against` and refuses it, naming each difference, when it
/// was measured on another kind of machine or with other settings (unless `--force`).
pub(crate) fn prepare(a: &LabArgs, steps: &[Step]) -> anyhow::Result<Option<Against>> {
    let Some(path) = &a.against else {
        return Ok(None);
    };
    if let Some(preset) = a.request.preset {
        bail!(
            "--against compares a `loglag lab` run (with or without --app), not --preset {preset}"
        );
    }
    let saved = against::load(path)?;
    let plan = steps[0].plan.echo();
    let forced = against::check(&saved, &plan, &loglag_lab::sys::procfs::machine(), a.force)?;
    for d in &forced {
        say!("loglag lab: --against with --force although {d}");
    }
    Ok(Some(Against { saved, forced }))
}

/// After the runs: the comparison's summary on stdout, the Markdown in `dir`, and the
/// exit code (1 when a cost grew and the growth holds).
pub(crate) fn finish(
    against: Against,
    summary: &Summary,
    dir: Option<&Path>,
    stdout: &mut dyn Write,
) -> anyhow::Result<ExitCode> {
    let c = against::compare(&against.saved, summary, against.forced)?;
    let mut lines = vec![String::new()];
    lines.extend(c.summary_lines());
    match dir {
        Some(dir) => {
            let path = dir.join(AGAINST_MD);
            std::fs::write(&path, c.markdown())
                .with_context(|| format!("cannot write {}", path.display()))?;
            lines.push(format!("comparison for a pull request: {}", path.display()));
        }
        None => say!(
            "loglag lab: --against: no result directory, so {AGAINST_MD} was not written (--out DIR keeps it)"
        ),
    }
    // The verdict is the exit status, whether or not anyone reads the lines.
    stdout_outcome(lines.iter().try_for_each(|l| writeln!(stdout, "{l}")))?;
    Ok(if c.regressed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
